"""Model-based multi-objective search: a learned accuracy model on a measured throughput axis.

The two objectives are the study's: validation accuracy (learned) and throughput (asked of
the proxy, each query charged). Each round:

1. **Fit** a Bayesian ridge model of validation accuracy over the free features of every
   architecture (:func:`~nasfilter.searchers.features.base_features`: channel one-hots and
   logs, log MACs, log parameters), its penalty chosen by generalized cross-validation; with
   ``hardware=True`` the (measured or predicted) log throughput and log utilization and
   their squares join the features. A second ridge model predicts log throughput and log
   utilization from the proxy readings so far, for architectures not measured yet.
2. **Score** every unevaluated architecture (``acquisition="hypervolume"``, the default)
   by the hypervolume its point (predicted throughput, predicted accuracy + ``beta`` x
   posterior sd; ``beta=0`` by default) would add to the front of the evaluated ones'
   predictions, in a space normalized like :mod:`nasfilter.metrics` (accuracy and log
   throughput, each scaled to [0, 1] over the predictions); where nothing would add any,
   the one least far behind the front (additive epsilon) comes first. The best
   ``pool x batch`` are measured with the proxy (charged). ``acquisition="layers"``
   instead takes whole predicted non-dominated layers, spread over throughput.
3. **Choose** a batch greedily from them, by improvement (per predicted evaluation second
   ** ``cost_power``, 0 by default), adding each choice's predicted point to the front
   before the next, so a batch spreads over the throughput range instead of piling onto
   one gap. The batch is an eighth of the evaluations so far, between 2 and ``batch``.

The first ``init`` evaluations (and ``init_proxy`` proxy queries, at most a tenth of the
budget) are spread evenly over log MACs: a stratified random design. Whenever a fit is
impossible (fewer than 3 evaluations) or fails numerically, the searcher falls back to the
same exploratory rule: a random unevaluated architecture from the log-MACs stratum with
the fewest evaluations.

Repeat rule: each architecture is proposed at most once (a repeated evaluation adds nothing
to the returned front and is charged again); a proposal dropped by a filter is not proposed
again. The searcher returns None when every architecture has been proposed.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from nasfilter.checks import check_positive_int, check_real
from nasfilter.costs import network_costs
from nasfilter.pareto import nondominated_mask, nondominated_ranks
from nasfilter.searchers.base import Searcher
from nasfilter.searchers.features import RidgeModel, base_features
from nasfilter.searchers.utilization_pareto import spread_order
from nasfilter.space import N_ARCHS, Arch, arch_from_index, index_of
from nasfilter.trial import Trial

ACQUISITIONS = ("hypervolume", "layers")
_PREFILTER = 2000  # candidates whose posterior sd is computed each round


def hypervolume_gain(
    front: np.ndarray, points: np.ndarray, reference: tuple[float, float] = (0.0, 0.0)
) -> np.ndarray:
    """Hypervolume each point (k, 2) alone would add to a front (m, 2); both maximized.

    ``front`` must be non-dominated. Returns (k,) >= 0. O(k m), vectorized.
    """
    r0, r1 = reference
    if len(front) == 0:
        return np.maximum(points[:, 0] - r0, 0.0) * np.maximum(points[:, 1] - r1, 0.0)
    f = front[np.argsort(front[:, 0])]  # x ascending, so y descending
    # Strips in x: [r0, x_1], (x_1, x_2], ..., (x_{m-1}, x_m], (x_m, inf); the front's height
    # on each is the y of the first front point at or right of it.
    lo = np.concatenate([[r0], f[:, 0]])
    hi = np.concatenate([f[:, 0], [np.inf]])
    height = np.concatenate([f[:, 1], [r1]])
    width = np.clip(np.minimum(points[:, :1], hi[None, :]) - lo[None, :], 0.0, None)
    rise = np.clip(points[:, 1:] - height[None, :], 0.0, None)
    return np.asarray((width * rise).sum(axis=1))


def front_height(front: np.ndarray, x: np.ndarray, floor: float) -> np.ndarray:
    """The front's (m, 2) y at each x (k,): the best y among front points with x' >= x."""
    if len(front) == 0:
        return np.full(len(x), floor)
    f = front[np.argsort(front[:, 0])]
    best_right = np.maximum.accumulate(f[::-1, 1])[::-1]  # best y from position i on
    pos = np.searchsorted(f[:, 0], x, side="left")
    out = np.full(len(x), floor)
    inside = pos < len(f)
    out[inside] = best_right[pos[inside]]
    return out


def behind(front: np.ndarray, points: np.ndarray) -> np.ndarray:
    """How far each point (k, 2) lies behind a front (m, 2), both maximized: the additive
    epsilon, the smallest equal shift of both coordinates that leaves a point dominated by
    no front point (0 on the front, < 0 beyond it, +inf... never: -inf for an empty front).

    The same measure as :func:`nasfilter.filters.log_epsilon`, in linear units.
    """
    from nasfilter.filters.builtins import log_epsilon

    return log_epsilon(np.exp(points), np.exp(front))


def _layer_order(points: np.ndarray) -> np.ndarray:
    """Positions of points (k, 2) by non-dominated layer (both maximized), and within a layer
    in spread order over x (both ends, then midpoints coarse to fine), int64 (k,)."""
    ranks = nondominated_ranks(points)
    within = np.empty(len(points), dtype=np.int64)
    for layer in np.unique(ranks):
        members = np.flatnonzero(ranks == layer)
        by_x = members[np.argsort(points[members, 0], kind="stable")]
        within[by_x[spread_order(len(by_x))]] = np.arange(len(by_x))
    return np.lexsort((within, ranks))


def _strata(n: int) -> np.ndarray:
    """Stratum (0..n-1) of every architecture by log MACs, equal counts, int64 (32768,)."""
    order = np.argsort(network_costs("cifar10").macs, kind="stable")
    strata = np.empty(N_ARCHS, dtype=np.int64)
    strata[order] = np.arange(N_ARCHS) * n // N_ARCHS
    return strata


class ModelBased(Searcher):
    """Model-based multi-objective search (module docstring).

    Args:
        hardware: use the proxy's log throughput and log utilization as accuracy features.
        beta: optimism, posterior sds added to the predicted accuracy (>= 0).
        batch: largest number of proposals chosen per model fit, in [1, 32768]; early rounds choose
            fewer (an eighth of the evaluations so far, at least 2).
        init: evaluations of the initial stratified design, in [3, 32768].
        init_proxy: proxy queries of the initial design, in [0, 32768], for the throughput model.
        strata: log-MACs strata of the exploratory rule, in [1, 32768].
        cost_power: the greedy choice maximizes gain / predicted seconds ** cost_power
            (0: ignore cost; 1: gain per second).
        pool: candidates measured with the proxy per round, as a multiple of the batch
            (>= 1); the batch is chosen among them.
        calibrate: pass the linear prediction through a cubic fitted to the evaluations
            (a single-index model), once 20 architectures are evaluated.
    """

    name: ClassVar[str] = "model-based"
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
    ) -> None:
        if not isinstance(hardware, bool):
            raise ValueError(f"hardware must be True or False, got {hardware!r}")
        self.hardware = hardware
        self.beta = check_real(beta, "beta (valid range: [0, 10])", low=0.0, high=10.0)
        top = N_ARCHS  # no setting needs more than the space holds
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

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        self._x = base_features()
        self._stratum = _strata(self.strata)
        self._used = np.zeros(N_ARCHS, dtype=bool)  # proposed (evaluated, dropped or pending)
        self._pending: dict[int, float] = {}  # trial id -> simulated clock when proposed
        self._proposed = 0  # proposals so far (the next trial id)
        self._obs_index: list[int] = []
        self._obs_acc: list[float] = []
        self._obs_cost: list[float] = []
        self._measured = np.zeros(N_ARCHS, dtype=bool)
        self._log_thr = np.full(N_ARCHS, np.nan)
        self._log_util = np.full(N_ARCHS, np.nan)
        self._queue: list[int] = []
        self._predicted: tuple[np.ndarray, np.ndarray] | None = None
        self._predicted_at = 0
        self._started = False
        self.fallbacks = 0  # rounds that used the exploratory rule (for tests and reports)

    def _measure(self, indices: np.ndarray) -> None:
        """Query the proxy for those of ``indices`` not measured yet (charged)."""
        todo = indices[~self._measured[indices]]
        if len(todo) == 0:
            return
        answered, readings = self.proxy.query_many(todo)
        self._measured[answered] = True
        self._log_thr[answered] = np.log(readings[:, 1])
        self._log_util[answered] = np.log(np.maximum(readings[:, 0], 1e-12))

    def _start(self) -> None:
        self._started = True
        n = max(self.init, self.init_proxy)
        strata = _strata(n)
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

    def _proxy_predictions(self) -> tuple[np.ndarray, np.ndarray]:
        """Predicted log throughput and log utilization of every architecture, (32768,)
        each; refitted when the proxy readings have grown by a quarter since the last fit."""
        n = int(self._measured.sum())
        if self._predicted is None or n >= 1.25 * self._predicted_at:
            meas = np.flatnonzero(self._measured)
            thr = RidgeModel.fit(self._x[meas], self._log_thr[meas]).mean(self._x)
            util = (
                RidgeModel.fit(self._x[meas], self._log_util[meas]).mean(self._x)
                if self.hardware
                else thr
            )
            self._predicted, self._predicted_at = (thr, util), n
        return self._predicted

    def _hardware_columns(self, thr: np.ndarray, util: np.ndarray) -> np.ndarray:
        t = np.where(self._measured, self._log_thr, thr)
        u = np.where(self._measured, self._log_util, util)
        cols = np.stack([t, u, t * t, u * u], axis=1)
        std = cols.std(axis=0)
        return (cols - cols.mean(axis=0)) / np.where(std > 0, std, 1.0)

    def _plan(self) -> list[int]:
        n_obs = len(self._obs_index)
        if n_obs < 3 or self._measured.sum() < 3:
            return self._explore()
        try:
            return self._plan_model(n_obs)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            return self._explore()

    def _plan_model(self, n_obs: int) -> list[int]:
        x = self._x
        predicted = self._proxy_predictions()
        if self.hardware:
            x = np.concatenate([x, self._hardware_columns(*predicted)], axis=1)
        obs = np.asarray(self._obs_index, dtype=np.int64)
        acc = np.asarray(self._obs_acc)
        # One row per architecture: the mean of its observations (repeats are rare).
        uniq, inv = np.unique(obs, return_inverse=True)
        acc_mean = np.bincount(inv, weights=acc) / np.bincount(inv)
        model = RidgeModel.fit(x[uniq], acc_mean)
        mu = model.mean(x)
        if self.calibrate and len(uniq) >= 20:
            # A single-index correction: a cubic of the linear predictor captures the
            # saturation of accuracy with capacity that a linear model cannot.
            coef = np.polyfit(mu[uniq], acc_mean, 3)
            mu = np.polyval(coef, mu)
        log_thr = np.where(self._measured, self._log_thr, predicted[0])
        if not (np.isfinite(mu).all() and np.isfinite(log_thr).all()):
            raise FloatingPointError("non-finite predictions")
        # Normalized objective space, as the metrics: each axis to [0, 1] with a 1 % margin.
        lo_a, hi_a = float(mu.min()), float(mu.max())
        lo_t, hi_t = float(log_thr.min()), float(log_thr.max())
        span_a = max(hi_a - lo_a, 1e-9) * 1.01
        span_t = max(hi_t - lo_t, 1e-9) * 1.01
        a0, t0 = hi_a - span_a, hi_t - span_t

        def point(a: np.ndarray, t: np.ndarray) -> np.ndarray:
            return np.stack([(t - t0) / span_t, (a - a0) / span_a], axis=1)

        ev = point(mu[uniq], log_thr[uniq])
        front = ev[nondominated_mask(ev)]
        free = np.flatnonzero(~self._used)
        if len(free) == 0:
            return []
        # Prefilter by the mean's distance below the front, then add optimism.
        p_mean = point(mu[free], log_thr[free])
        gap = -behind(front, p_mean)
        if len(free) > _PREFILTER:
            keep = np.argpartition(-gap, _PREFILTER)[:_PREFILTER]
            free, p_mean, gap = free[keep], p_mean[keep], gap[keep]
        batch = int(min(self.batch, max(2, n_obs // 8)))
        k = min(len(free), math.ceil(self.pool * batch))
        if self.acquisition == "layers":
            pool = free[_layer_order(p_mean)[:k]]
            self._measure(pool)  # charged; the budget may end here
            pool = pool[self._measured[pool]]
            if len(pool) == 0:
                return self._explore()
            pts = point(mu[pool], self._log_thr[pool])
            chosen = pool[_layer_order(pts)[:batch]].tolist()
            n_random = int(self.rng.binomial(len(chosen), self.explore))
            if n_random:
                rest = np.flatnonzero(~self._used)
                rest = rest[~np.isin(rest, chosen)]
                picks = self.rng.choice(rest, size=min(n_random, len(rest)), replace=False)
                chosen = chosen[: len(chosen) - len(picks)] + picks.tolist()
            return chosen
        sd = model.sd(x[free]) / span_a if self.beta else np.zeros(len(free))
        optimistic = p_mean.copy()
        optimistic[:, 1] += self.beta * sd
        gain = hypervolume_gain(front, optimistic)
        pool = free[np.lexsort((-(gap + self.beta * sd), -gain))[:k]]
        self._measure(pool)  # charged; the budget may end here
        pool = pool[self._measured[pool]]
        if len(pool) == 0:
            return self._explore()
        # Recompute the pool's points with measured throughput; choose greedily.
        pts_mean = point(mu[pool], self._log_thr[pool])
        pts_opt = pts_mean.copy()
        if self.beta:
            pts_opt[:, 1] += self.beta * model.sd(x[pool]) / span_a
        cost = self._predicted_cost(pool) ** self.cost_power
        chosen = []
        alive = np.ones(len(pool), dtype=bool)
        for _ in range(min(batch, len(pool))):
            g = hypervolume_gain(front, pts_opt) / cost
            if g[alive].max() > 0:
                j = int(np.flatnonzero(alive)[np.argmax(g[alive])])
            else:  # nothing is predicted to improve: the closest below the front
                below = -behind(front, pts_opt)
                j = int(np.flatnonzero(alive)[np.argmax(below[alive])])
            alive[j] = False
            chosen.append(int(pool[j]))
            merged = np.concatenate([front, pts_mean[j : j + 1]])
            front = merged[nondominated_mask(merged)]
        return chosen

    def _predicted_cost(self, indices: np.ndarray) -> np.ndarray:
        """Evaluation seconds of ``indices`` predicted from those observed: a least-squares
        line of log seconds on log MACs (>= 1e-3 s each), (k,)."""
        logm = np.log(network_costs("cifar10").macs)
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
                    # The k-th proposal becomes trial id k (nasfilter.trial).
                    self._pending[self._proposed] = self.proxy.clock
                    self._proposed += 1
                    return arch_from_index(index)
            planned = self._plan()
            if not planned:
                return None
            self._queue = planned[::-1]

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        asked_at = self._pending.pop(trial.id, None)
        if accuracy is None or asked_at is None:
            return
        self._obs_index.append(index_of(trial.arch))
        self._obs_acc.append(float(accuracy))
        # Simulated wall-clock seconds from proposal to outcome: the evaluation's seconds
        # with one worker (used only by cost_power > 0).
        self._obs_cost.append(self.proxy.clock - asked_at)
