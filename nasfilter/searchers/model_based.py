"""Model-based multi-objective search: a learned accuracy model on a measured throughput axis.

The two objectives are the study's: validation accuracy (learned) and throughput (asked of
the proxy, each query charged). Each round:

1. **Fit** a Bayesian ridge model of validation accuracy over the free features of every
   architecture (:func:`~nasfilter.searchers.features.space_features`: on sss channel
   one-hots and logs, log MACs, log parameters; on tss each edge's operation, with
   ``encoding="paths"`` the cell's path encoding too), its penalty chosen by generalized
   cross-validation; with ``hardware=True`` the (measured or predicted) log throughput and
   log utilization and their squares join the features. A second ridge model predicts log
   throughput and log utilization from the proxy readings so far, for architectures not
   measured yet.
2. **Score** every unevaluated architecture (``acquisition="hypervolume"``, the default)
   by the hypervolume its point (predicted throughput, predicted accuracy + ``beta`` x
   posterior sd; ``beta=0`` by default) would add to the front of the evaluated ones'
   predictions, in a space normalized like :mod:`nasfilter.runs.metrics` (accuracy and log
   throughput, each scaled to [0, 1] over the predictions); where nothing would add any,
   the one least far behind the front (additive epsilon) comes first. The best
   ``pool x batch`` are measured with the proxy (charged). ``acquisition="layers"``
   instead takes whole predicted non-dominated layers, spread over throughput.
3. **Choose** a batch greedily from them, by improvement (per predicted evaluation second
   ** ``cost_power``, 0 by default), adding each choice's predicted point to the front
   before the next, so a batch spreads over the throughput range instead of piling onto
   one gap. The batch is an eighth of the evaluations so far, between 2 and ``batch``.

With ``zerocost="synflow"`` (any zero-cost proxy with scores for the whole space of the run:
:func:`~nasfilter.zerocost.scorefile.shipped` lists the shipped files) the proxy's score joins
the accuracy features (:func:`~nasfilter.searchers.features.zerocost_columns`: the standardized
score, its square and an undefined flag). The searcher reads the score of every architecture at
its start through the metered problem (``ProxyHandle.query_zerocost``), each query charged like
any zero-cost query (docs/cheap-signals.md), in a seeded random order, so that a budget that
ends first leaves a uniform sample read. With ``zerocost_share`` below 1 it reads only that
share of the space at the start (the same seeded order), predicts each unread score from the
free features (:func:`~nasfilter.searchers.features.imputed_zerocost_columns`), and reads the
score of each architecture it proposes when it proposes it (charged), so every evaluated
architecture carries its own score.

The first ``init`` evaluations (and ``init_proxy`` proxy queries, at most a tenth of the
budget) are spread evenly over log MACs: a stratified random design. Whenever a fit is
impossible (fewer than 3 evaluations) or fails numerically, the searcher falls back to the
same exploratory rule: a random unevaluated architecture from the log-MACs stratum with
the fewest evaluations.

The three steps are separate pieces (as BoTorch separates model, acquisition function and
candidate generation): :mod:`~nasfilter.searchers.accuracy_model` fits,
:mod:`~nasfilter.searchers.acquisition` scores and ranks the pool,
:mod:`~nasfilter.searchers.batch_selection` chooses; this class holds the run's state and
the order of the steps. MACs (the strata, the cost model) are those of the problem's dataset.

Repeat rule: each architecture is proposed at most once (a repeated evaluation adds nothing
to the returned front and is charged again); a proposal dropped by a filter is not proposed
again. The searcher returns None when every architecture has been proposed.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from nasfilter.bench.spaces import MAX_SIZE, SSS
from nasfilter.bench.spaces.sss import Arch, arch_from_index, index_of
from nasfilter.checks import check_positive_int, check_real
from nasfilter.pareto import nondominated_mask
from nasfilter.searchers.accuracy_model import AccuracyFit, ProxyReadings, fit_accuracy
from nasfilter.searchers.acquisition import (
    ObjectiveSpace,
    behind,
    front_height,
    hypervolume_gain,
    hypervolume_pool,
    layer_order,
    prefilter,
)
from nasfilter.searchers.base import Searcher, check_fits_space
from nasfilter.searchers.batch_selection import batch_size, greedy_batch, layer_batch
from nasfilter.searchers.features import (
    ENCODINGS,
    imputed_zerocost_columns,
    space_features,
    space_macs,
    zerocost_columns,
)
from nasfilter.sim.trial import Trial
from nasfilter.zerocost import get_proxy

ACQUISITIONS = ("hypervolume", "layers")


def _strata(n: int, macs: np.ndarray) -> np.ndarray:
    """Stratum (0..n-1) of every architecture by its MACs (size,), equal counts, int64."""
    size = len(macs)
    order = np.argsort(macs, kind="stable")
    strata = np.empty(size, dtype=np.int64)
    strata[order] = np.arange(size) * n // size
    return strata


class ModelBased(Searcher):
    """Model-based multi-objective search (module docstring).

    Args:
        hardware: use the proxy's log throughput and log utilization as accuracy features.
        beta: optimism, posterior sds added to the predicted accuracy (>= 0).
        batch: largest number of proposals chosen per model fit, in [1, 32768]; early rounds choose
            fewer (an eighth of the evaluations so far, at least 2).
        init: evaluations of the initial stratified design, in [3, the space's size].
        init_proxy: proxy queries of the initial design, in [0, the space's size], for the
            throughput model.
        strata: log-MACs strata of the exploratory rule, in [1, the space's size].
        cost_power: the greedy choice maximizes gain / predicted seconds ** cost_power
            (0: ignore cost; 1: gain per second).
        pool: candidates measured with the proxy per round, as a multiple of the batch
            (>= 1); the batch is chosen among them.
        calibrate: pass the linear prediction through a cubic fitted to the evaluations
            (a single-index model), once 20 architectures are evaluated.
        zerocost: a zero-cost proxy whose score is an accuracy feature (read and charged
            through the metered problem at the start), or None.
        zerocost_share: share of the space whose scores are read at the start, in
            [0.001, 1]; below 1 the rest are predicted and read when proposed.
        encoding: the cell's free features on tss, ``"ops"`` (each edge's operation) or
            ``"paths"`` (also the path encoding,
            :func:`~nasfilter.searchers.features.tss_path_encoding`); sss has only
            ``"ops"`` (its channel features).
    """

    name: ClassVar[str] = "model-based"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")
    needs_proxy = True

    def __init__(
        self,
        hardware: bool = False,
        beta: float = 0.0,
        batch: int = 16,
        init: int = 20,
        init_proxy: int = 400,
        strata: int = 16,
        cost_power: float = 0.0,
        pool: float = 1.5,
        calibrate: bool = False,
        acquisition: str = "hypervolume",
        explore: float = 0.0,
        zerocost: str | None = None,
        zerocost_share: float = 1.0,
        encoding: str = "ops",
    ) -> None:
        # ValueError listing the known proxies for an unknown one
        self.zerocost = None if zerocost is None else get_proxy(zerocost).name
        if not isinstance(hardware, bool):
            raise ValueError(f"hardware must be True or False, got {hardware!r}")
        self.hardware = hardware
        self.uses_utilization = hardware  # utilization is an accuracy feature
        self.uses_zerocost = self.zerocost is not None
        self.beta = check_real(beta, "beta (valid range: [0, 10])", low=0.0, high=10.0)
        top = MAX_SIZE  # no setting needs more than the (largest) space holds
        self.batch = check_positive_int(batch, f"batch (valid range: [1, {top}])", maximum=top)
        self.init = check_positive_int(
            init, f"init (valid range: [3, {top}])", minimum=3, maximum=top
        )
        self.init_proxy = check_positive_int(
            init_proxy, f"init_proxy (valid range: [0, {top}])", minimum=0, maximum=top
        )
        self.strata = check_positive_int(strata, f"strata (valid range: [1, {top}])", maximum=top)
        if not isinstance(calibrate, bool):
            raise ValueError(f"calibrate must be True or False, got {calibrate!r}")
        self.calibrate = calibrate
        if acquisition not in ACQUISITIONS:
            raise ValueError(f"acquisition must be one of {ACQUISITIONS}, got {acquisition!r}")
        self.acquisition = acquisition
        self.explore = check_real(explore, "explore (valid range: [0, 1])", 0.0, 1.0)
        self.pool = check_real(pool, "pool (valid range: [1, 10])", 1.0, 10.0)
        self.cost_power = check_real(cost_power, "cost_power (valid range: [0, 2])", 0.0, 2.0)
        self.zerocost_share = check_real(
            zerocost_share, "zerocost_share (valid range: [0.001, 1])", 0.001, 1.0
        )
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
        self.encoding = encoding

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        check_fits_space(self, "init", "init_proxy", "strata")
        space = self.space
        self._x = space_features(space, self.proxy.dataset, self.encoding)
        self._macs = space_macs(space, self.proxy.dataset)  # free: exact counts, per dataset
        self._stratum = _strata(self.strata, self._macs)
        self._used = np.zeros(space.size, dtype=bool)  # proposed (evaluated, dropped or pending)
        # Index -> simulated clock when proposed: each architecture is proposed at most once,
        # so its index names its pending trial.
        self._pending: dict[int, float] = {}
        self._obs_index: list[int] = []
        self._obs_acc: list[float] = []
        self._obs_cost: list[float] = []
        self._readings = ProxyReadings(self._x, with_utilization=self.hardware)
        self._design_buffer: np.ndarray | None = None  # see _design
        self._queue: list[int] = []
        self._started = False
        self.fallbacks = 0  # rounds that used the exploratory rule (for tests and reports)
        self.zerocost_read = 0  # zero-cost scores read (and charged)
        self._free = self._x  # the free features, before any zero-cost columns
        self._zc_scores = np.full(space.size, np.nan)
        self._zc_done = np.zeros(space.size, dtype=bool)
        self._zc_stale = False  # a score was read on proposal since the columns were built

    def _measure(self, indices: np.ndarray) -> None:
        """Query the proxy for those of ``indices`` not measured yet (charged)."""
        self._readings.measure(self.proxy, indices)

    def _read_zerocost(self, proxy: str) -> None:
        """Read ``proxy``'s score of every architecture (charged; a seeded random order) and
        append its columns to the free features; ValueError naming the coverage when the
        scores do not cover the space."""
        covered = self.proxy.zerocost_coverage(proxy)
        if not covered.all():
            raise ValueError(
                f"zero-cost proxy {proxy!r} covers {int(covered.sum())} of the "
                f"{covered.size} architectures; {self.name}[zerocost=...] needs the whole space"
            )
        order = self.rng.permutation(self.space.size).astype(np.int64)
        if self.zerocost_share < 1.0:
            order = order[: math.ceil(self.zerocost_share * self.space.size)]
        answered, values = self.proxy.query_zerocost(proxy, order)
        self._zc_scores[answered] = values
        self._zc_done[answered] = True
        self.zerocost_read = int(self._zc_done.sum())
        self._build_zerocost()

    def _build_zerocost(self) -> None:
        """The free features and the zero-cost columns of the scores read so far."""
        if self.zerocost_share < 1.0:
            cols = imputed_zerocost_columns(self._zc_scores, self._zc_done, self._free)
        else:
            cols = zerocost_columns(self._zc_scores, self._zc_done)
        self._x = np.concatenate([self._free, cols], axis=1)
        self._design_buffer = None
        self._zc_stale = False

    def _read_proposed(self, index: int) -> None:
        """Read the zero-cost score of a proposed architecture not read yet (charged)."""
        if self.zerocost is None or self.zerocost_share >= 1.0 or self._zc_done[index]:
            return
        answered, values = self.proxy.query_zerocost(self.zerocost, np.array([index]))
        if len(answered):
            self._zc_scores[index] = values[0]
            self._zc_done[index] = True
            self.zerocost_read += 1
            self._zc_stale = True

    def _start(self) -> None:
        self._started = True
        if self.zerocost is not None:
            self._read_zerocost(self.zerocost)
        n = max(self.init, self.init_proxy)
        strata = _strata(n, self._macs)
        picks = np.array(
            [self.rng.choice(np.flatnonzero(strata == s)) for s in range(n)], dtype=np.int64
        )
        # Budget-aware: the initial proxy design takes at most a tenth of the budget.
        # A worker-seconds budget as a whole; under a wall-clock budget, what is left of it.
        cost, budget = self.proxy.cost, self.proxy.budget_seconds
        budget = self.proxy.remaining if budget is None else budget
        affordable = self.init_proxy if cost <= 0 else int(0.1 * budget / cost)
        self._measure(picks[self.rng.permutation(n)][: min(self.init_proxy, affordable)])
        evals = picks[np.linspace(0, n - 1, self.init).round().astype(np.int64)]
        self._queue = evals[self.rng.permutation(len(evals))][::-1].tolist()

    # ------------------------------------------------------------- the rounds
    def _explore(self) -> list[int]:
        """The exploratory rule: one unevaluated architecture from the least-used stratum."""
        self.fallbacks += 1
        free = ~self._used
        if not free.any():
            return []
        counts = np.bincount(self._stratum[self._used], minlength=self.strata).astype(float)
        counts[np.bincount(self._stratum[free], minlength=self.strata) == 0] = np.inf
        stratum = int(np.argmin(counts))
        return [int(self.rng.choice(np.flatnonzero(free & (self._stratum == stratum))))]

    def _plan(self) -> list[int]:
        if self._zc_stale:
            self._build_zerocost()
        n_obs = len(self._obs_index)
        if n_obs < 3 or self._readings.measured.sum() < 3:
            return self._explore()
        try:
            return self._plan_model(n_obs)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            return self._explore()

    def _fit(self) -> tuple[AccuracyFit, np.ndarray]:
        """The round's accuracy model and log throughput (measured, else predicted)."""
        fit = fit_accuracy(self._design(), self._obs_index, self._obs_acc, self.calibrate)
        log_thr = self._readings.log_throughput()
        if not (np.isfinite(fit.mean).all() and np.isfinite(log_thr).all()):
            raise FloatingPointError("non-finite predictions")
        return fit, log_thr

    def _design(self) -> np.ndarray:
        """The accuracy model's design, (32768, d): the free features, then with ``hardware``
        the proxy's columns, written into one buffer kept for the run (the numbers that
        concatenating them gives, without a new 16 MB array each round; a round's fit is
        used within its round only)."""
        if not self.hardware:
            return self._x
        d = self._x.shape[1]
        if self._design_buffer is None:
            self._design_buffer = np.empty((len(self._x), d + 4))
            self._design_buffer[:, :d] = self._x
        self._readings.hardware_columns(out=self._design_buffer[:, d:])
        return self._design_buffer

    def _plan_model(self, n_obs: int) -> list[int]:
        """One round: fit, score the free architectures, measure a pool, choose a batch."""
        fit, log_thr = self._fit()
        mu = fit.mean
        space = ObjectiveSpace.over(mu, log_thr)
        ev = space.points(mu[fit.evaluated], log_thr[fit.evaluated])
        front = ev[nondominated_mask(ev)]
        free = np.flatnonzero(~self._used)
        if len(free) == 0:
            return []
        # Prefilter by the mean's distance below the front, then add optimism.
        p_mean = space.points(mu[free], log_thr[free])
        keep, gap = prefilter(front, p_mean)
        free, p_mean = free[keep], p_mean[keep]
        size = batch_size(self.batch, n_obs)
        k = min(len(free), math.ceil(self.pool * size))
        if self.acquisition == "layers":
            pool = self._measured_pool(free[layer_order(p_mean)[:k]])
            if len(pool) == 0:
                return self._explore()
            pts = space.points(mu[pool], self._readings.log_thr[pool])
            return layer_batch(pool, pts, size, self.explore, np.flatnonzero(~self._used), self.rng)
        sd = fit.sd(free) / space.span_a if self.beta else np.zeros(len(free))
        pool = self._measured_pool(free[hypervolume_pool(front, p_mean, gap, self.beta * sd, k)])
        if len(pool) == 0:
            return self._explore()
        # Recompute the pool's points with measured throughput; choose greedily.
        pts_mean = space.points(mu[pool], self._readings.log_thr[pool])
        pts_opt = pts_mean.copy()
        if self.beta:
            pts_opt[:, 1] += self.beta * fit.sd(pool) / space.span_a
        # x ** 0 is 1 for every x: without cost_power, no cost model is fitted.
        cost = (
            self._predicted_cost(pool) ** self.cost_power if self.cost_power else np.ones(len(pool))
        )
        return [int(pool[j]) for j in greedy_batch(front, pts_mean, pts_opt, cost, size)]

    def _measured_pool(self, pool: np.ndarray) -> np.ndarray:
        """Measure ``pool`` with the proxy (charged; the budget may end here) and keep the
        measured ones, in order."""
        self._measure(pool)
        return pool[self._readings.measured[pool]]

    def _predicted_cost(self, indices: np.ndarray) -> np.ndarray:
        """Evaluation seconds of ``indices`` predicted from those observed: a least-squares
        line of log seconds on log MACs (>= 1e-3 s each), (k,)."""
        logm = np.log(self._macs)
        seen = np.asarray(self._obs_cost)
        ok = seen > 0
        if ok.sum() < 3:
            return np.ones(len(indices))
        xs = logm[np.asarray(self._obs_index)[ok]]
        slope, icpt = np.polyfit(xs, np.log(seen[ok]), 1) if np.ptp(xs) > 0 else (0.0, 0.0)
        return np.maximum(np.exp(icpt + slope * logm[indices]), 1e-3)

    # ------------------------------------------------------- propose and observe
    def propose(self) -> Arch | None:
        if not self._started:
            self._start()
        while True:
            while self._queue:
                index = self._queue.pop()
                if not self._used[index]:
                    self._used[index] = True
                    self._measure(np.array([index]))
                    self._read_proposed(index)
                    self._pending[index] = self.proxy.clock
                    return arch_from_index(index) if self.space is SSS else self.space.arch(index)
            planned = self._plan()
            if not planned:
                return None
            self._queue = planned[::-1]

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        arch = trial.arch
        index = index_of(arch) if type(arch) is Arch else self.space.index_of(arch)
        asked_at = self._pending.pop(index, None)
        if accuracy is None or asked_at is None:
            return
        self._obs_index.append(index)
        self._obs_acc.append(float(accuracy))
        # Simulated wall-clock seconds from proposal to outcome: the evaluation's seconds
        # with one worker (used only by cost_power > 0).
        self._obs_cost.append(self.proxy.clock - asked_at)


__all__ = ["ACQUISITIONS", "ModelBased", "behind", "front_height", "hypervolume_gain"]
