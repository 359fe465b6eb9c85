"""The typed answer to "which cheap signal pays" of one reproduction: per method its
condition and hypervolume ratio at a few budgets, the goal verdict and the ablation, with
``to_json``/``from_json`` for ``summary.json`` (:mod:`nasfilter.study.cheap_signals` computes it).

Units: times are simulated worker-seconds; hypervolume ratios are in [0, 1]; correlations
are Spearman's rho over architectures. NaN (undefined) is written as null in JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nasfilter.study.json_values import Stat, finite_or_none, json_float, json_floats, plain_json

# What a method reads besides full evaluations (nasfilter.study.cheap_signals.condition), at
# index hardware + 2 x low fidelity + 4 x zero-cost ("both": hardware and low fidelity).
CONDITIONS = (
    "none", "hardware", "low fidelity", "both",
    "zero-cost", "hardware + zero-cost", "low fidelity + zero-cost", "all three",
)  # fmt: skip


@dataclass(frozen=True)
class SignalRow:
    """One method: its condition and its hypervolume ratio (mean ± SE over seeds) after
    each of :attr:`CheapSignals.times`."""

    method: str  # the method's label
    searcher: str
    filter: str
    condition: str  # one of CONDITIONS
    runs: int
    hv: tuple[Stat, ...]

    def to_json(self) -> dict[str, Any]:
        fields = ("method", "searcher", "filter", "condition", "runs")
        return {**{k: getattr(self, k) for k in fields}, "hv": [s.to_json() for s in self.hv]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SignalRow:
        return cls(
            str(data["method"]), str(data["searcher"]), str(data["filter"]),
            str(data["condition"]), int(data["runs"]),
            tuple(Stat.from_json(s) for s in data["hv"]),
        )  # fmt: skip


@dataclass(frozen=True)
class Goal:
    """The goal verdict at ``at`` seconds: a cheap signal pays when the best method's mean
    reaches ``level``, is above each peer that was run (``peers``: label -> its mean there;
    the best itself is no peer of its own) and the best reads a cheap signal (its condition
    is not "none")."""

    level: float
    at: float
    best: str  # label of the method with the highest mean at ``at`` ("" if none ran)
    best_condition: str
    best_mean: float
    peers: tuple[tuple[str, float], ...]

    @property
    def reaches_level(self) -> bool:
        return self.best_mean >= self.level

    @property
    def beats_peers(self) -> bool:
        return all(self.best_mean > mean for label, mean in self.peers if label != self.best)

    @property
    def reads_a_signal(self) -> bool:
        return self.best_condition not in ("", "none")

    @property
    def met(self) -> bool:
        return bool(self.best) and self.reaches_level and self.beats_peers and self.reads_a_signal

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level, "at": self.at, "best": self.best,
            "best_condition": self.best_condition, "best_mean": finite_or_none(self.best_mean),
            "peers": {label: finite_or_none(mean) for label, mean in self.peers},
            "reaches_level": self.reaches_level, "beats_peers": self.beats_peers,
            "met": self.met,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Goal:
        peers = tuple((str(k), json_float(v)) for k, v in data["peers"].items())
        return cls(
            float(data["level"]), float(data["at"]), str(data["best"]),
            str(data["best_condition"]), json_float(data["best_mean"]), peers,
        )  # fmt: skip


@dataclass(frozen=True)
class Ablation:
    """How far low-fidelity accuracy ranks: Spearman over ``n_architectures`` of the
    validation accuracy after each of ``epochs`` (seed ``early_seed``) with the final one
    (seed ``final_seed``) and with the test accuracy; ``beyond_features`` the share of the
    final accuracy's variance beyond the free features that the partial one explains, and
    ``features_r2_final`` the share the free features explain. Each tuple is (E,)."""

    epochs: tuple[int, ...]
    vs_final: tuple[float, ...]
    vs_test: tuple[float, ...]
    beyond_features: tuple[float, ...]
    features_r2_final: float
    early_seed: int
    final_seed: int
    n_architectures: int

    def to_json(self) -> dict[str, Any]:
        return plain_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Ablation:
        def floats(key: str) -> tuple[float, ...]:
            return tuple(json_floats(data[key]).tolist())

        return cls(
            tuple(int(e) for e in data["epochs"]), floats("vs_final"), floats("vs_test"),
            floats("beyond_features"), json_float(data["features_r2_final"]),
            int(data["early_seed"]), int(data["final_seed"]), int(data["n_architectures"]),
        )  # fmt: skip


@dataclass(frozen=True)
class CheapSignals:
    """The section "Which cheap signal pays": ``rows`` at ``times`` (T,) worker-seconds
    with ``workers`` simulated workers, the goal verdict and the ablation."""

    times: tuple[float, ...]
    workers: int
    rows: tuple[SignalRow, ...]
    goal: Goal
    ablation: Ablation

    def to_json(self) -> dict[str, Any]:
        return {
            "times": list(self.times), "workers": self.workers,
            "rows": [r.to_json() for r in self.rows],
            "goal": self.goal.to_json(), "ablation": self.ablation.to_json(),
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> CheapSignals | None:
        """The section read back; None for a summary without it (no learning curves, or
        written before reproduce computed it)."""
        if not data:
            return None
        return cls(
            tuple(float(t) for t in data["times"]), int(data["workers"]),
            tuple(SignalRow.from_json(r) for r in data["rows"]),
            Goal.from_json(data["goal"]), Ablation.from_json(data["ablation"]),
        )  # fmt: skip
