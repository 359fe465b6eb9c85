"""Stored runs scored against other accuracies than their table's.

A run is scored on its table's scored column (on tss, the real hp-200 validation accuracy,
seed mean). A user who holds other accuracies of the same architectures (the real test
accuracies of a full NATS-Bench archive, another training setting's, a later benchmark's)
can score the same runs on them: the run's evaluations stay what they were, and the true
front, every metric and every curve are recomputed from its events against (the accuracies
given, the throughput of the run's own oracle). What the accuracies are is the user's to
say: nasfilter names them by their file, never as real, test or validation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.spaces import SPACES
from nasfilter.bench.table import USER_SCORED
from nasfilter.runs.inputs import RunInputs, inputs
from nasfilter.runs.metrics import FrontReference, accuracy_words
from nasfilter.runs.records import RunSpec, ScoredRun
from nasfilter.runs.results import UntrustedPluginError, oracle_plugin, score_record


@dataclasses.dataclass(frozen=True, eq=False)
class Accuracies:
    """Accuracies in percent of every architecture of one space, for one dataset.

    Attributes:
        values: float64 (space size,), read-only; NaN where the file holds none (such an
            architecture is left out of the true front and of every run's front).
        dataset: the dataset the accuracies are of.
        source: the file they were read from.
    """

    values: np.ndarray
    dataset: Dataset
    source: str

    @property
    def space_name(self) -> str:
        return next(s.name for s in SPACES.values() if s.size == len(self.values))

    @property
    def missing(self) -> int:
        """Architectures the file holds no accuracy for."""
        return int(np.isnan(self.values).sum())

    @property
    def scored(self) -> str:
        """The scored-column name of these accuracies (``user:<file name>``)."""
        return f"{USER_SCORED}{Path(self.source).name}"

    @property
    def words(self) -> str:
        """What scores the runs, in words: the file, said to be the user's."""
        return accuracy_words(self.scored)


def read_accuracies(path: str | Path, dataset: str | Dataset) -> Accuracies:
    """The accuracies of ``path``: a ``.npy`` array of one float per architecture of a search
    space (15625 for tss, 32768 for sss), in percent, NaN where unknown. ValueError naming
    the file for anything else: not a .npy array, another length, a value outside
    [0, 100], no value at all, or one value for every architecture."""
    where = f"accuracy file {str(path)!r}"
    try:
        raw = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{where} is not a .npy array (numpy.save writes one): {exc}") from exc
    if not isinstance(raw, np.ndarray) or raw.dtype.kind not in "fiu":
        raise ValueError(f"{where} must hold numbers, got {getattr(raw, 'dtype', type(raw))}")
    sizes = {s.size: s.name for s in SPACES.values()}
    if raw.ndim != 1 or len(raw) not in sizes:
        expected = ", ".join(f"({n},) for {name}" for n, name in sorted(sizes.items()))
        raise ValueError(f"{where} has shape {raw.shape}; give one accuracy per architecture, "
                         f"{expected}")  # fmt: skip
    values = raw.astype(np.float64)
    known = ~np.isnan(values)
    bad = np.flatnonzero(known & ~((values >= 0.0) & (values <= 100.0)))
    if len(bad):
        raise ValueError(f"{where}: accuracies are percent in [0, 100] (NaN where unknown); "
                         f"architecture {int(bad[0])} holds {float(values[bad[0]])!r}"
                         f"{f' ({len(bad)} such)' if len(bad) > 1 else ''}")  # fmt: skip
    if not known.any():
        raise ValueError(f"{where} holds no accuracy (every value is NaN)")
    if np.ptp(values[known]) == 0:
        raise ValueError(f"{where} holds one accuracy, {float(values[known][0])!r}, for every "
                         "architecture it knows; a front needs accuracies that differ")
    values.setflags(write=False)
    return Accuracies(values, get_dataset(dataset), str(path))


def rescored_inputs(resolved: RunInputs, accuracies: Accuracies) -> RunInputs:
    """``resolved`` (a run's table, proxy and front reference) with ``accuracies`` as the
    table's scored column and the front reference of those accuracies against the proxy's
    throughput. ValueError when the accuracies are of another space or dataset than the
    table, naming both."""
    table, proxy, _ = resolved
    if len(accuracies.values) != table.space.size:
        raise ValueError(
            f"accuracy file {accuracies.source!r} holds the {accuracies.space_name} space "
            f"({len(accuracies.values)} architectures), but the runs' table is of the "
            f"{table.space.name} space ({table.space.size}); score the runs of one space at a "
            "time (compare --space)"
        )
    if accuracies.dataset.name != table.dataset.name:
        raise ValueError(f"accuracy file {accuracies.source!r} is given for "
                         f"{accuracies.dataset.name}, but the runs' table is of "
                         f"{table.dataset.name}")  # fmt: skip
    provenance = dataclasses.replace(table.provenance, scored=accuracies.scored)
    scored = dataclasses.replace(table, test_acc=accuracies.values, provenance=provenance)
    with np.errstate(divide="ignore", invalid="ignore"):
        points = np.stack([accuracies.values, np.log10(proxy.throughput)], axis=1)
    usable = np.isfinite(points).all(axis=1) & table.present
    if not usable.any():
        raise ValueError(f"accuracy file {accuracies.source!r} and the runs' oracle share no "
                         "architecture with both an accuracy and a throughput")  # fmt: skip
    return RunInputs(scored, proxy, FrontReference.from_points(points, usable))


class Rescoring:
    """Runs scored on ``accuracies`` ({dataset name: :class:`Accuracies`}) in place of their
    tables' scored columns: :meth:`inputs` resolves a spec as
    :func:`~nasfilter.runs.inputs.inputs` does, with the accuracies swapped in (once per
    table, oracle and dataset), and :meth:`score` scores a run loaded with its events.

    A spec whose oracle is a plugin is resolved by importing it, which only
    ``trust_plugins`` allows (else :class:`~nasfilter.runs.results.UntrustedPluginError`,
    naming it): as :func:`~nasfilter.runs.results.load_results`, rescoring never runs code
    that a database names unless told to."""

    def __init__(self, accuracies: Mapping[str, Accuracies], trust_plugins: bool = False) -> None:
        self.accuracies = {get_dataset(name).name: a for name, a in accuracies.items()}
        self.trust_plugins = trust_plugins
        self._resolved: dict[tuple[int, int, str], RunInputs] = {}

    def inputs(self, spec: RunSpec) -> RunInputs:
        """The table, proxy and front reference that score runs of ``spec``. ValueError
        naming the dataset when no accuracies are given for it."""
        dataset = get_dataset(spec.dataset).name
        if dataset not in self.accuracies:
            given = ", ".join(sorted(self.accuracies)) or "none"
            raise ValueError(f"no accuracies are given for {dataset}, which the runs are on "
                             f"(given: {given})")  # fmt: skip
        plugin = oracle_plugin(spec)
        if plugin is not None and not self.trust_plugins:
            raise UntrustedPluginError(
                f"scoring runs on other accuracies needs the throughput of the oracle plugin "
                f"{plugin!r} that their spec names, which would import and run it; pass "
                "--trust-plugins (trust_plugins=True) if you trust it"
            )
        resolved = inputs(spec)
        key = (id(resolved.table), id(resolved.proxy), dataset)
        if key not in self._resolved:
            self._resolved[key] = rescored_inputs(resolved, self.accuracies[dataset])
        return self._resolved[key]

    def score(self, run: ScoredRun) -> ScoredRun:
        """``run`` (loaded with its events) scored on the accuracies of its dataset."""
        return score_record(run.record, self.inputs(run.spec))


__all__ = ["Accuracies", "Rescoring", "read_accuracies", "rescored_inputs"]
