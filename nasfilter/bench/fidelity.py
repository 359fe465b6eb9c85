"""Learning curves for evaluations at a chosen epoch and training setting (multi-fidelity).

A :class:`LearningCurves` answers one evaluation as NATS-Bench's ``simulate_train_eval``
charges it: a retrain from scratch for ``iepoch + 1`` epochs of setting ``hp``, then one
validation, costing the training time summed over epochs ``0..iepoch`` plus the validation
time per epoch averaged over those epochs (``train-all-time + valid-per-time``; with constant
per-epoch times, that epoch's validation time). Two sources:

- :class:`nasfilter.bench.nats_api.curves.BenchmarkCurves`: a full-fidelity benchmark folder
  (``nasfilter convert ARCHIVE -o OUT``, no ``--dataset``), bit for bit as ``nats_bench``
  computes it from the archive; a table loaded from that folder (``load_table(OUT)``,
  ``--table OUT``) brings them along;
- :class:`SyntheticCurves`: the embedded surrogate's SYNTHETIC curves
  (:mod:`nasfilter.bench.surrogate_curves`).

A compact table (``--dataset``) has no curves: :func:`curves_for` raises
:class:`NoCurvesError` naming the conversion that adds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.fullbench.layout import INDEX_FILE
from nasfilter.bench.nats_api.curves import BenchmarkCurves
from nasfilter.bench.surrogate import SOURCE as SURROGATE_SOURCE
from nasfilter.bench.surrogate import embedded_table
from nasfilter.bench.surrogate_curves import CURVE_SEEDS, EPOCHS, HPS, valid_curves
from nasfilter.bench.table import BenchmarkTable

HOW_TO_ADD_CURVES = (
    "convert the NATS-Bench archive with full fidelity: nasfilter convert "
    "NATS-sss-v1_0-50262-simple -o NATS-full (no --dataset), then use that folder as the "
    "table (--table NATS-full, load_table('NATS-full', dataset)), or pass "
    "curves=nasfilter.bench.nats_api.curves.BenchmarkCurves('NATS-full', dataset) to Problem"
)


class NoCurvesError(ValueError):
    """An evaluation at a chosen epoch on a table without learning curves."""


class Fidelity(NamedTuple):
    """What one evaluation trains: ``epochs`` epochs (1 .. ``curves.epochs(hp)``) of
    training setting ``hp``, from scratch, then one validation. nats_bench's ``iepoch`` is
    ``epochs - 1``."""

    epochs: int
    hp: str = "12"


# How evaluations at a fidelity are charged (Problem(charging=...)): NATS-Bench's retrain
# from scratch, or resume from the last epoch this run trained (a simulator with checkpoints)
CHARGINGS = ("retrain", "resume")
# The problem's full evaluation: hp 12 trained for all of its 12 epochs (Problem.evaluate).
FULL_FIDELITY = Fidelity(12, "12")


def is_full(fidelity: Fidelity | None) -> bool:
    """True for None or :data:`FULL_FIDELITY` (the problem's full evaluation)."""
    return fidelity is None or (fidelity.epochs == 12 and fidelity.hp == "12")


def check_fidelity(curves: LearningCurves, fidelity: object) -> Fidelity:
    """``fidelity`` as a :class:`Fidelity` of ``curves``' settings, else ValueError naming
    the valid settings and epochs."""
    if not isinstance(fidelity, tuple) or len(fidelity) != 2:
        raise ValueError(
            f"a fidelity is Fidelity(epochs, hp), such as Fidelity(4, '12'); got {fidelity!r}"
        )
    epochs, hp = fidelity
    if not isinstance(hp, str) or hp not in curves.hps():
        raise ValueError(
            f"fidelity {fidelity!r}: hp {hp!r} is not a training setting; the settings are "
            f"{curves.hps()}"
        )
    top = curves.epochs(hp)
    whole = isinstance(epochs, (int, np.integer)) and not isinstance(epochs, bool)
    if not whole or not 1 <= epochs <= top:
        raise ValueError(
            f"fidelity {fidelity!r}: epochs must be an integer in 1..{top} (hp {hp} trains "
            f"{top} epochs)"
        )
    return Fidelity(int(epochs), hp)


def hp_code(hp: str) -> int:
    """The integer an event's ``hp`` column stores for setting ``hp`` ("12" -> 12)."""
    return int(hp)


def hp_name(code: int) -> str:
    """The setting an event's ``hp`` column names (12 -> "12", 1 -> "01")."""
    return f"{int(code):02d}"


class FidelityEvaluation(NamedTuple):
    """One evaluation at a chosen epoch (units: percent, simulated seconds)."""

    trial: int
    arch: int  # NATS index
    hp: str  # training setting, such as "12"
    iepoch: int  # 0-based epoch: iepoch + 1 epochs were trained
    seed: int  # training seed drawn
    accuracy: float  # validation accuracy at that epoch (percent)
    cost: float  # seconds charged (a retrain from scratch)
    worker_seconds: float  # worker-seconds charged in the run after it
    start: float  # wall clock when it began
    end: float  # wall clock when its result was available
    worker: int


class LearningCurves(Protocol):
    """Per-epoch validation accuracy and charged time of one dataset's search record."""

    dataset: str
    synthetic: bool

    def hps(self) -> list[str]:
        """The training settings, such as ``['01', '12', '90']``."""
        ...

    def epochs(self, hp: str) -> int:
        """Epochs of setting ``hp`` (valid ``iepoch``: 0 .. epochs - 1)."""
        ...

    def seeds(self, index: int, hp: str) -> list[int]:
        """The sorted training seeds of architecture ``index`` at ``hp``."""
        ...

    def evaluation(self, index: int, hp: str, seed: int, iepoch: int) -> tuple[float, float]:
        """(validation accuracy in percent, charged seconds) of one seed's run."""
        ...


def check_iepoch(curves: LearningCurves, hp: str, iepoch: object) -> int:
    """``iepoch`` as an int, or ValueError naming the setting and the valid range."""
    if hp not in curves.hps():
        raise ValueError(f"hp {hp!r} is not a training setting; the settings are {curves.hps()}")
    epochs = curves.epochs(hp)
    whole = isinstance(iepoch, (int, np.integer)) and not isinstance(iepoch, bool)
    epoch = int(iepoch) if whole else -1  # type: ignore[call-overload]
    if not 0 <= epoch < epochs:
        raise ValueError(
            f"iepoch={iepoch!r} is out of range: hp {hp} trains {epochs} epochs, so iepoch "
            f"must be an integer in 0..{epochs - 1} (0-based, as nats_bench)"
        )
    return epoch


def resume_seconds(
    curves: LearningCurves,
    index: int,
    hp: str,
    seed: int,
    last: int,
    iepoch: int,
    valid_time: float,
) -> float:
    """Seconds to continue one run (``seed``) from its checkpoint after 0-based epoch
    ``last`` to epoch ``iepoch``: the training seconds of epochs ``last + 1 .. iepoch`` plus
    epoch ``iepoch``'s validation; only that validation when ``iepoch <= last``. From the
    curves' per-epoch times (``epoch_times``) when they have them, else from their
    from-scratch charges (exact for constant per-epoch times) and ``valid_time``."""
    times = getattr(curves, "epoch_times", None)
    if times is not None:
        train, valid = times(index, hp, seed)
        return float(sum(train[last + 1 : iepoch + 1]) + valid[iepoch])
    if iepoch <= last:
        return valid_time
    return (
        curves.evaluation(index, hp, seed, iepoch)[1]
        - curves.evaluation(index, hp, seed, last)[1]
        + valid_time
    )


class SyntheticCurves:
    """The embedded surrogate's SYNTHETIC curves for one dataset (not NATS-Bench data)."""

    synthetic = True

    def __init__(self, dataset: str) -> None:
        self.dataset = get_dataset(dataset).name
        self._table = embedded_table(self.dataset)

    def hps(self) -> list[str]:
        return list(HPS)

    def epochs(self, hp: str) -> int:
        return EPOCHS[hp]

    def seeds(self, index: int, hp: str) -> list[int]:
        return list(CURVE_SEEDS[hp])

    def epoch_times(self, index: int, hp: str, seed: int) -> tuple[list[float], list[float]]:
        """Seconds of training and of validation of each epoch (the table's, constant)."""
        epochs = EPOCHS[hp]
        return [float(self._table.train_time[index])] * epochs, [
            float(self._table.valid_time[index])
        ] * epochs

    def evaluation(self, index: int, hp: str, seed: int, iepoch: int) -> tuple[float, float]:
        total = iepoch + 1
        acc = valid_curves(self.dataset, hp)[index, CURVE_SEEDS[hp].index(seed), iepoch]
        # the facade's arithmetic: train-all-time + valid-all-time / epochs
        train = float(self._table.train_time[index]) * total
        valid = float(self._table.valid_time[index]) * total
        return float(acc), train + valid / total


def curves_for(table: BenchmarkTable) -> LearningCurves:
    """The curves that come with ``table``: the surrogate's own, or those of the full
    benchmark folder it was derived from (``load_table(FOLDER)``); else NoCurvesError naming
    the conversion, or the full benchmark a compact table was derived from if it is gone."""
    prov = table.provenance
    if prov.synthetic and prov.source == SURROGATE_SOURCE:
        return SyntheticCurves(table.dataset.name)
    folder = (prov.extra or {}).get("full_benchmark")
    if isinstance(folder, str) and Path(folder, INDEX_FILE).is_file():
        return BenchmarkCurves(folder, table.dataset.name)
    if isinstance(folder, str):
        raise NoCurvesError(
            f"table {table.label!r} keeps the last epoch of hp 12 only; its curves were in the "
            f"full benchmark it was derived from, {folder!r}, which is no longer there: "
            f"convert the archive there again, or pass curves=nasfilter.bench.nats_api.curves."
            f"BenchmarkCurves(FOLDER, {table.dataset.name!r}) to Problem"
        )
    raise NoCurvesError(
        f"table {table.label!r} has no learning curves (a compact table keeps the last "
        f"epoch of hp 12 only); {HOW_TO_ADD_CURVES}"
    )
