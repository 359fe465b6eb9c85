"""How good is a run? Its returned front against the true front, over simulated time.

Objectives (both maximized): the accuracy that scores runs (percent, the table's
``test_acc`` column: the hp-90 test accuracy of a converted archive, the hp-90 validation
accuracy, seed 777, of the real table; :func:`accuracy_words` names it; read from the table
by this reporting code only) and throughput (images/s, from the proxy).

- **The front a run returns**: the non-dominated architectures among those it evaluated.
- **The true front**: the non-dominated architectures of the whole table.

Both are compared in a fixed normalized space (:class:`nasfilter.pareto.Normalization`):
the scored accuracy and ``log10(throughput)`` (each doubling of throughput counts the same
wherever it happens), each mapped linearly so that the best value over all architectures
of the table is 1 and the worst value minus 1 % of the range is 0. The hypervolume
reference point is the origin of that space, so the extreme points of a front still add
area. The same normalization serves every run on the same table and proxy.

Metrics: ``hv_ratio`` (HV of the run's front / HV of the true front), ``igd_plus``,
``epsilon`` (additive), ``recall`` (fraction of true-front architectures evaluated),
``best_acc`` (highest scored accuracy among evaluated architectures) and ``selected_acc``
(scored accuracy of the architecture the search returns: the searcher's recommendation when
it makes one, else the one with the highest *observed* accuracy seen, the NATS-Bench
convention). Neither name claims a split: what the accuracy is comes from the table
(:func:`accuracy_words`). Results written before these names hold ``best_test_acc`` and
``selected_test_acc``; :func:`current_names` maps them, the one place that reads them.

This module holds the arithmetic (the reference, the indicators, :func:`score`); every
metric of a run, over time and over seeds, is computed from its stored events by
:mod:`nasfilter.runs.results`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TypeVar

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import USER_SCORED, BenchmarkTable
from nasfilter.pareto import (
    Normalization,
    finite_front_mask,
    finite_indicators,
    hypervolume_2d,
    nondominated_mask,
)

METRICS = (
    "hv_ratio",
    "igd_plus",
    "epsilon",
    "recall",
    "best_acc",
    "selected_acc",
)
#: The accuracy metrics' names in results written before they were renamed (their values
#: were the table's scored accuracy, never necessarily a test accuracy) -> today's names.
LEGACY_NAMES = {"best_test_acc": "best_acc", "selected_test_acc": "selected_acc"}
# What a scored column short name means: (split, hp).
_SCORED = {"test@90": ("test", "90"), "valid@90": ("validation", "90"),
           "valid@12": ("validation", "12"), "valid@200": ("validation", "200")}
# Scored columns that hold a mean over training seeds (the tss hp-200 validation accuracy).
_SEED_MEAN = {"valid@200"}

V = TypeVar("V")


def current_names(values: Mapping[str, V], where: str = "results") -> dict[str, V]:
    """``values`` (metrics, curves or statistics keyed by metric name) with the old names of
    :data:`LEGACY_NAMES` replaced by today's, order kept: the one place where results
    written before the rename (stored scores, reproduce summaries) are read. ValueError,
    naming ``where``, when an old name and its new name are both present."""
    out: dict[str, V] = {}
    for key, value in values.items():
        name = LEGACY_NAMES.get(key, key)
        if name in out:
            raise ValueError(f"{where} hold both {key!r} and {name!r}, the same metric under "
                             "its old and its new name; they are damaged")
        out[name] = value
    return out


def accuracy_words(scored: str, seeds: Sequence[int] = ()) -> str:
    """What the scored accuracy is, for a column or axis: ``"hp-90 test acc"``,
    ``"hp-90 validation acc, seed 777"`` (a validation column of one seed names it),
    ``"hp-200 validation acc, seed mean"``; a short name it does not know is shown as it is
    (``"valid@30 acc"``); a user's (``user:<file>``) is named by its file, ``"acc from
    <file> (user-supplied)"``."""
    if scored.startswith(USER_SCORED):
        return f"acc from {scored.removeprefix(USER_SCORED)} (user-supplied)"
    if scored not in _SCORED:
        return f"{scored} acc"
    split, hp = _SCORED[scored]
    words = f"hp-{hp} {split} acc"
    if scored in _SEED_MEAN:
        words += ", seed mean"
    elif split == "validation" and len(seeds) == 1:
        words += f", seed {seeds[0]}"
    return words


@dataclass(frozen=True, eq=False)
class FrontReference:
    """Everything needed to score runs on one table and proxy.

    Attributes:
        points: objectives of every architecture, (32768, 2): test accuracy (percent),
            log10 throughput; NaN rows for architectures absent from either source.
        usable: bool (32768,), rows with both objectives.
        true_front: indices of the true front, int64 (t,).
        norm: the fixed normalization (see the module docstring).
        true_scaled: the distinct true-front points, normalized, (t', 2).
        true_hv: hypervolume of ``true_scaled`` above the origin.
    """

    points: np.ndarray
    usable: np.ndarray
    true_front: np.ndarray
    norm: Normalization
    true_scaled: np.ndarray
    true_hv: float

    @classmethod
    def build(cls, table: BenchmarkTable, proxy: ProxyTable) -> FrontReference:
        """The reference of ``table`` and ``proxy``; about 10 ms for 32768 architectures."""
        with np.errstate(invalid="ignore", divide="ignore"):
            points = np.stack([table.test_acc, np.log10(proxy.throughput)], axis=1)
        usable = np.isfinite(points).all(axis=1) & table.present
        if not usable.any():
            raise ValueError(
                f"table {table.label!r} and proxy {proxy.label!r} share no architecture "
                "with both a test accuracy and a throughput"
            )
        return cls.from_points(points, usable)

    @classmethod
    def from_points(cls, points: np.ndarray, usable: np.ndarray) -> FrontReference:
        """The reference of objectives ``points`` (n, 2: scored accuracy, log10 throughput)
        over the rows ``usable`` (bool (n,), finite there, at least one); both are copied."""
        points = np.array(points, dtype=np.float64)
        usable = np.array(usable, dtype=bool)
        idx = np.flatnonzero(usable)
        front = idx[nondominated_mask(points[idx])]
        norm = Normalization.from_points(points[idx])
        true_scaled = np.unique(norm.transform(points[front]), axis=0)
        points.setflags(write=False)
        return cls(
            points=points,
            usable=usable,
            true_front=front,
            norm=norm,
            true_scaled=true_scaled,
            true_hv=hypervolume_2d(true_scaled, norm.reference),
        )

    def indicators(self, front: np.ndarray) -> tuple[float, float, float]:
        """(hv_ratio, igd_plus, epsilon) of the architectures ``front`` (f,) against the
        true front, as :func:`nasfilter.pareto.compare_fronts` computes them."""
        if len(front) == 0:
            return 0.0, math.inf, math.inf
        run = self.norm.transform(self.points[front])
        # The points of usable architectures are finite, the true front checked when built.
        hv, igd, eps = finite_indicators(run, self.true_scaled, self.norm.reference)
        return hv / self.true_hv, igd, eps

    def true_points(self) -> np.ndarray:
        """Objectives of the true front, (t, 2)."""
        return np.asarray(self.points[self.true_front])


@dataclass(frozen=True)
class RunMetrics:
    """The metrics of one run (or of a run's first ``clock`` seconds); see the module doc."""

    hv_ratio: float
    igd_plus: float
    epsilon: float
    recall: float
    best_acc: float
    selected_acc: float
    front_size: int
    n_evaluated: int  # distinct architectures evaluated

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def front_of(reference: FrontReference, indices: np.ndarray) -> np.ndarray:
    """The non-dominated subset of ``indices`` (distinct, sorted), int64 (f,)."""
    unique = np.unique(np.asarray(indices, dtype=np.int64))
    unique = unique[reference.usable[unique]]
    if len(unique) == 0:
        return unique
    return unique[finite_front_mask(reference.points[unique])]  # usable rows are finite


def front_steps(
    reference: FrontReference, indices: np.ndarray
) -> tuple[list[int], list[np.ndarray]]:
    """Where the front of a run's evaluations changes: ``(counts, fronts)``, ``counts``
    ascending, such that the front of ``indices[:k]`` (:func:`front_of`) is ``fronts[j]``
    for the last ``counts[j] <= k`` (empty before ``counts[0]``). One pass in plain Python
    (a front holds tens of points): an evaluation changes the front when its architecture
    is usable, not on the front yet and dominated by no front member; it then joins and
    drops the members it dominates. Each front is :func:`front_of`'s array (sorted
    distinct indices, int64)."""
    idx = np.asarray(indices, dtype=np.int64)
    points = reference.points[idx]
    rows = zip(
        idx.tolist(),
        points[:, 0].tolist(),
        points[:, 1].tolist(),
        reference.usable[idx].tolist(),
        strict=True,
    )
    front: dict[int, tuple[float, float]] = {}
    counts: list[int] = []
    fronts: list[np.ndarray] = []
    for k, (i, x, y, usable) in enumerate(rows, start=1):
        if not usable or i in front:
            continue
        if any(qx >= x and qy >= y and (qx > x or qy > y) for qx, qy in front.values()):
            continue
        front = {
            j: (qx, qy)
            for j, (qx, qy) in front.items()
            if not (x >= qx and y >= qy and (x > qx or y > qy))
        }
        front[i] = (x, y)
        counts.append(k)
        fronts.append(np.array(sorted(front), dtype=np.int64))
    return counts, fronts


def score(
    reference: FrontReference,
    evaluated: np.ndarray,
    valid_acc: np.ndarray,
    table: BenchmarkTable,
    selected: int | None = None,
) -> RunMetrics:
    """Metrics of a run that evaluated ``evaluated`` (k,) and saw ``valid_acc`` (k,).

    ``selected``: the architecture the searcher recommended, or None for the rule (the
    highest validation accuracy, the first on ties)."""
    evaluated = np.asarray(evaluated, dtype=np.int64)
    front = front_of(reference, evaluated)
    hv_ratio, igd, eps = reference.indicators(front)
    if len(evaluated):
        best_test = float(np.nanmax(table.test_acc[evaluated]))
        if selected is None:
            selected = int(evaluated[int(np.argmax(valid_acc))])
        selected_test = float(table.test_acc[selected])
    else:
        best_test = selected_test = math.nan
    found = np.isin(reference.true_front, evaluated)
    return RunMetrics(
        hv_ratio=hv_ratio,
        igd_plus=igd,
        epsilon=eps,
        recall=float(found.mean()),
        best_acc=best_test,
        selected_acc=selected_test,
        front_size=len(front),
        n_evaluated=len(np.unique(evaluated)),
    )
