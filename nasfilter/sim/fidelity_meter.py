"""Evaluations at a chosen fidelity: learning curves, the two charging rules, their trace.

:class:`FidelityMeter` is the part of :class:`~nasfilter.sim.problem.Problem` that answers an
evaluation after ``epochs`` epochs of a training setting ``hp``
(:class:`~nasfilter.bench.fidelity.Fidelity`), as NATS-Bench's ``simulate_train_eval(arch,
dataset, iepoch, hp)``. Two charging rules (:data:`~nasfilter.bench.fidelity.CHARGINGS`):

- ``"retrain"`` (NATS-Bench's, the default): every evaluation trains from scratch, costing
  the training seconds summed over epochs ``0..iepoch`` plus the validation seconds; the
  full fidelity (hp 12, 12 epochs) is the problem's ordinary evaluation.
- ``"resume"``: the first evaluation of (architecture, hp) in a run draws a seed and trains
  from scratch; a later one continues that seed (another seed is impossible by
  construction) and pays the epochs beyond the last one trained plus one validation
  (:func:`~nasfilter.bench.fidelity.resume_seconds`).

Evaluations below the full fidelity are ``partial`` events of the trace (with their ``hp``
and ``epochs``); they are charged to both clocks but not counted as evaluations, so a run's
front holds only what it evaluated at full fidelity.
"""

from __future__ import annotations

import numpy as np

from nasfilter.bench.fidelity import (
    CHARGINGS,
    Fidelity,
    FidelityEvaluation,
    LearningCurves,
    check_fidelity,
    check_iepoch,
    curves_for,
    hp_code,
    resume_seconds,
)
from nasfilter.bench.spaces import TSS
from nasfilter.bench.table import BenchmarkTable
from nasfilter.bench.tss_curves import TssCurves, full_fidelity
from nasfilter.sim.clock import SimClock
from nasfilter.sim.meter import Meter
from nasfilter.sim.trace import Trace


def check_curves(curves: object, table: BenchmarkTable) -> None:
    """ValueError unless ``curves`` is None or learning curves of the table's dataset."""
    if curves is None:
        return
    if not callable(getattr(curves, "evaluation", None)):
        raise ValueError(
            "curves must be learning curves (nasfilter.bench.fidelity.BenchmarkCurves or "
            f"SyntheticCurves) or None, got {type(curves).__name__}"
        )
    dataset = getattr(curves, "dataset", None)
    if dataset != table.dataset.name:
        raise ValueError(
            f"curves are of dataset {dataset!r} but the table is of "
            f"{table.dataset.name!r}; pass the curves of the same dataset"
        )


def check_charging(charging: object) -> str:
    """``charging`` if it is one of :data:`~nasfilter.bench.fidelity.CHARGINGS`, else ValueError."""
    if charging not in CHARGINGS:
        raise ValueError(
            f"charging must be one of {list(CHARGINGS)} ('retrain': every evaluation "
            f"trains from scratch, as NATS-Bench; 'resume': a promotion pays only the "
            f"epochs beyond the last one trained), got {charging!r}"
        )
    return str(charging)


class FidelityMeter:
    """Answers, charges and traces evaluations at a fidelity for one run.

    Args:
        table: the benchmark records; ``rng``: the run's generator (draws the seeds);
        clock, trace, meter: the run's (full evaluations go through ``meter``);
        curves: the learning curves, or None for the table's own (looked up when first
            needed; at once with ``charging="resume"``, so a table without curves fails
            before the run);
        charging: ``"retrain"`` or ``"resume"`` (see the module).
    """

    def __init__(
        self,
        table: BenchmarkTable,
        rng: np.random.Generator,
        clock: SimClock,
        trace: Trace,
        meter: Meter,
        curves: LearningCurves | None,
        charging: str,
    ) -> None:
        check_curves(curves, table)
        self.charging = check_charging(charging)
        self.table, self._rng, self.clock, self.trace, self.meter = (
            table, rng, clock, trace, meter
        )  # fmt: skip
        self._curves = curves
        self.full = full_fidelity(table)  # sss and tss-real: hp 12, 12 epochs
        if self.charging == "resume" and curves is None:
            self._curves = self.curves  # NoCurvesError now, not mid-run
        self.log: list[FidelityEvaluation] = []
        self.seconds = 0.0  # simulated seconds charged by partial evaluations
        # resume: (index, hp) -> (seed, last 0-based epoch trained) in this run
        self._trained: dict[tuple[int, str], tuple[int, int]] = {}

    @property
    def curves(self) -> LearningCurves:
        """The curves given, else the table's own (NoCurvesError naming the conversion)."""
        if self._curves is None:
            table = self.table
            tss = table.space is TSS
            self._curves = TssCurves(table.dataset.name) if tss else curves_for(table)
        return self._curves

    def start_at_epoch(
        self, index: int, iepoch: object, hp: str, trial: int, worker: int
    ) -> tuple[float, float]:
        """Retrain row ``index`` from scratch for ``iepoch + 1`` epochs of ``hp`` with a
        seed drawn now; charge it and log a partial event; return (accuracy, end)."""
        curves = self.curves
        epoch = check_iepoch(curves, hp, iepoch)
        self.clock.check_open("evaluate")
        if not self.table.present[index]:
            self.table.require(index)  # raises MissingArchitectureError naming the row
        seeds = curves.seeds(index, hp)
        seed = seeds[int(self._rng.integers(len(seeds)))]
        accuracy, cost = curves.evaluation(index, hp, seed, epoch)
        return accuracy, self._charge_partial(index, hp, epoch, seed, accuracy, cost, trial, worker)

    def start(
        self, index: int, fidelity: Fidelity | None, trial: int, worker: int
    ) -> tuple[float, float]:
        """Start evaluating row ``index`` at ``fidelity`` (None: the full one) under the
        charging rule; return (accuracy in percent, wall-clock second it completes)."""
        if self.charging == "retrain":
            if fidelity is None or (type(fidelity) is Fidelity and fidelity == self.full):
                return self.meter.evaluate(index, trial, worker)
            fid = check_fidelity(self.curves, fidelity)
            if fid == self.full:  # given as a plain tuple
                return self.meter.evaluate(index, trial, worker)
            return self.start_at_epoch(index, fid.epochs - 1, fid.hp, trial, worker)
        return self._start_resumed(index, self.full if fidelity is None else fidelity,
                                   trial, worker)  # fmt: skip

    def _start_resumed(
        self, index: int, fidelity: Fidelity, trial: int, worker: int
    ) -> tuple[float, float]:
        curves = self.curves
        fid = check_fidelity(curves, fidelity)
        hp, iepoch, full = fid.hp, fid.epochs - 1, fid == self.full
        if full:
            self.meter.check_evaluation(index)
        else:
            self.clock.check_open("evaluate")
            if not self.table.present[index]:
                self.table.require(index)
        done = self._trained.get((index, hp))
        if done is None:
            seeds = curves.seeds(index, hp)
            seed, last = seeds[int(self._rng.integers(len(seeds)))], -1
            accuracy, cost = curves.evaluation(index, hp, seed, iepoch)
        else:
            seed, last = done
            accuracy = curves.evaluation(index, hp, seed, iepoch)[0]
            valid = float(self.table.valid_time[index])
            cost = resume_seconds(curves, index, hp, seed, last, iepoch, valid)
        self._trained[index, hp] = (seed, max(last, iepoch))
        if full:
            self.meter.note_first(index, accuracy)
            return accuracy, self.meter.charge_evaluation(
                index, accuracy, cost, seed, trial, worker
            )
        return accuracy, self._charge_partial(index, hp, iepoch, seed, accuracy, cost, trial,
                                              worker)  # fmt: skip

    def _charge_partial(
        self,
        index: int,
        hp: str,
        iepoch: int,
        seed: int,
        accuracy: float,
        cost: float,
        trial: int,
        worker: int,
    ) -> float:
        """Charge and log one partial evaluation starting now; return its end."""
        clock = self.clock
        start = clock.now
        clock.spent += cost
        self.seconds += cost
        end = start + cost
        self.log.append(FidelityEvaluation(
            trial, index, hp, iepoch, seed, accuracy, cost, clock.spent, start, end, worker
        ))  # fmt: skip
        self.trace.partial(trial, index, accuracy, seed, cost, clock.spent, start, worker,
                           hp_code(hp), iepoch + 1)  # fmt: skip
        return end
