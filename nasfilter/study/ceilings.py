"""The studies' yardsticks: how high any run's HV ratio could go at the compared budgets.

For each table and hardware signal of the sss and tss studies, on the scale their runs are
scored on (:func:`nasfilter.runs.inputs.inputs`), :mod:`nasfilter.runs.ceiling`'s
clairvoyant ceiling (the best set of evaluations that fits the budget, knowing every scored
accuracy), the seconds it needs for an HV ratio of 0.99, and the figure of the set a run
would evaluate if it knew every architecture's observed accuracy and took it for the scored
one (:func:`nasfilter.runs.ceiling.signal_ceiling`).
``python scripts/update_ceiling_docs.py`` writes the tables into docs/tss-results.md and
docs/cheap-signals.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from nasfilter.bench.table import BenchmarkTable
from nasfilter.runs.ceiling import Ceiling, clairvoyant_ceiling, signal_ceiling
from nasfilter.runs.inputs import inputs
from nasfilter.runs.metrics import FrontReference
from nasfilter.runs.records import RunSpec
from nasfilter.runs.rescore import Accuracies, rescored_inputs
from nasfilter.study.tss import DATASETS, DEVICES, HP12, TIMES

TARGET = 0.99  # the HV ratio the issues' goals ask for at 20,000 s


@dataclass(frozen=True)
class CeilingRow:
    """One table and hardware signal's yardsticks at :data:`TIMES`.

    Attributes:
        dataset: the dataset's name.
        hardware: what the throughput is (``"RTX 2080 Ti, measured, batch 256"``, ...).
        front_size: architectures on the true front.
        front_cost: seconds to evaluate all of them once.
        lower, upper: the clairvoyant ceiling's bracket at each of :data:`TIMES`.
        to_target: (at least, at most) seconds any set needs for an HV ratio of :data:`TARGET`.
        trusted: the HV ratio at each of :data:`TIMES` of the best set by the observed
            accuracy, known for every architecture.
        trusted_size: that set's architectures at each of :data:`TIMES`.
    """

    dataset: str
    hardware: str
    front_size: int
    front_cost: float
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    to_target: tuple[float, float]
    trusted: tuple[float, ...]
    trusted_size: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        """Strict JSON (an open end of ``to_target`` as None)."""
        return asdict(self) | {"to_target": [t if np.isfinite(t) else None for t in self.to_target]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CeilingRow:
        """A row read back from :meth:`to_json`'s object."""
        at_least, at_most = (math.inf if t is None else float(t) for t in data["to_target"])
        return cls(
            dataset=str(data["dataset"]),
            hardware=str(data["hardware"]),
            front_size=int(data["front_size"]),
            front_cost=float(data["front_cost"]),
            lower=tuple(float(v) for v in data["lower"]),
            upper=tuple(float(v) for v in data["upper"]),
            to_target=(at_least, at_most),
            trusted=tuple(float(v) for v in data["trusted"]),
            trusted_size=tuple(int(v) for v in data["trusted_size"]),
        )


@dataclass(frozen=True)
class Yardsticks:
    """A table's clairvoyant ceiling and the best sets by its observed accuracy.

    Attributes:
        ceiling: :func:`nasfilter.runs.ceiling.clairvoyant_ceiling` at the budgets.
        trusted: HV ratio of the best set by the observed accuracy at each budget (k,).
        trusted_sets: those sets' architecture indices.
    """

    ceiling: Ceiling
    trusted: np.ndarray
    trusted_sets: tuple[np.ndarray, ...]


def yardsticks(
    table: BenchmarkTable,
    reference: FrontReference,
    budgets: Sequence[float],
    resolution: float = 1.0,
    last_may_overrun: bool = False,
) -> Yardsticks:
    """The :class:`Yardsticks` of ``table`` scored on ``reference`` at ``budgets`` (s). The
    observed accuracy is the table's validation accuracy, seed mean (hp 12 on tss-real):
    what a search observes, on average over the training seeds it may draw.
    ``last_may_overrun``: as :func:`~nasfilter.runs.ceiling.clairvoyant_ceiling`'s."""
    cost = table.eval_cost
    ceiling = clairvoyant_ceiling(reference, cost, budgets, resolution, last_may_overrun)
    observed = np.nanmean(table.valid_acc, axis=1)
    trusted, sets = signal_ceiling(
        reference, observed, cost, budgets, resolution, last_may_overrun
    )
    return Yardsticks(ceiling, trusted, sets)


def ceiling_row(spec: RunSpec, hardware: str, accuracies: Accuracies | None = None) -> CeilingRow:
    """The yardsticks of the table and proxy ``spec`` resolves into (a few seconds), scored
    on ``accuracies`` (None: the table's scored column)."""
    resolved = inputs(spec)
    table, _, ref = resolved if accuracies is None else rescored_inputs(resolved, accuracies)
    return row_of(table, ref, spec.dataset, hardware)


def row_of(
    table: BenchmarkTable, ref: FrontReference, dataset: str, hardware: str
) -> CeilingRow:
    """The yardsticks at :data:`TIMES` of ``table`` scored on ``ref`` (its proxy's front
    reference), labelled ``dataset`` and ``hardware``."""
    found = yardsticks(table, ref, TIMES)
    return CeilingRow(
        dataset=dataset,
        hardware=hardware,
        front_size=len(ref.true_front),
        front_cost=float(table.eval_cost[ref.true_front].sum()),
        lower=tuple(found.ceiling.lower.tolist()),
        upper=tuple(found.ceiling.upper.tolist()),
        to_target=found.ceiling.seconds_to_reach(TARGET),
        trusted=tuple(found.trusted.tolist()),
        trusted_size=tuple(len(s) for s in found.trusted_sets),
    )


TSS_HARDWARE = {"2080ti": "RTX 2080 Ti", "titanxp": "Titan Xp"}


def tss_rows(
    datasets: Sequence[str] = DATASETS,
    devices: Sequence[str] = DEVICES,
    batch: int = 256,
    score_with: Mapping[str, Accuracies] | None = None,
) -> list[CeilingRow]:
    """The tss study's tables (real hp-12 rung, HELP's latency measured at ``batch``), scored
    on ``score_with`` ({dataset: accuracies}; None: the tables' scored column)."""
    return [
        ceiling_row(
            RunSpec(
                searcher="random",
                dataset=ds,
                table=HP12,
                oracle=f"measured[batch={batch}]",
                device=dev,
            ),
            f"{TSS_HARDWARE.get(dev, dev)}, measured, batch {batch}",
            None if score_with is None else score_with[ds],
        )
        for ds in datasets
        for dev in devices
    ]


def json_rows(rows: Sequence[CeilingRow]) -> list[dict[str, object]]:
    """``rows`` as strict-JSON objects (:meth:`CeilingRow.to_json`)."""
    return [r.to_json() for r in rows]


def sss_rows() -> list[CeilingRow]:
    """The sss study's tables (real hp-90 table, the calibrated GPU model of a V100)."""
    return [
        ceiling_row(RunSpec(searcher="random", dataset=ds), "V100, calibrated model")
        for ds in DATASETS
    ]


def _ratio(lower: float, upper: float) -> str:
    low, high = f"{lower:.4f}", f"{upper:.4f}"
    return low if low == high else f"{low}–{high}"


def _seconds(at_least: float, at_most: float) -> str:
    if not np.isfinite(at_least):
        return f"> {TIMES[-1]:,.0f}"
    if at_least == at_most:
        return f"{at_least:,.0f}"
    return f"{at_least:,.0f}–{at_most:,.0f}" if np.isfinite(at_most) else f">= {at_least:,.0f}"


def ceiling_cells(
    rows: Sequence[CeilingRow], observed: str
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """(header, one row of cells per row); ``observed`` names the accuracy a search
    observes."""
    times = [f"{t:,.0f} s" for t in TIMES]
    header = (
        "dataset", "hardware", "true front (architectures, s to evaluate all)",
        *(f"clairvoyant ceiling, {t}" for t in times), f"s needed for {TARGET}",
        *(f"best set by {observed}, {t} (size)" for t in times),
    )  # fmt: skip
    body = tuple(
        (
            r.dataset,
            r.hardware,
            f"{r.front_size}, {r.front_cost:,.0f}",
            *(_ratio(lo, hi) for lo, hi in zip(r.lower, r.upper, strict=True)),
            _seconds(*r.to_target),
            *(f"{k:.4f} ({n})" for k, n in zip(r.trusted, r.trusted_size, strict=True)),
        )
        for r in rows
    )
    return header, body


def ceiling_table(rows: Sequence[CeilingRow], observed: str) -> str:
    """Markdown of :func:`ceiling_cells`: one line per row."""
    header, body = ceiling_cells(rows, observed)
    out = "| " + " | ".join(header) + " |\n" + "|" + "---|" * len(header) + "\n"
    return out + "".join("| " + " | ".join(cells) + " |\n" for cells in body)


#: Where each space's table goes: (file under the repository, its markers, the rows, the
#: accuracy a search observes on that space).
DOC_SECTIONS = (
    ("docs/tss-results.md", ("<!-- tss-ceilings:begin -->", "<!-- tss-ceilings:end -->"),
     tss_rows, "hp-12"),
    ("docs/cheap-signals.md", ("<!-- sss-ceilings:begin -->", "<!-- sss-ceilings:end -->"),
     sss_rows, "hp-90 validation"),
)  # fmt: skip
