"""Model-based multi-fidelity search: model-based search that may screen a candidate with a
partial evaluation before paying for its full one.

The rounds are :class:`~nasfilter.searchers.model_based.ModelBased`'s (accuracy model,
hypervolume acquisition on the charged proxy's throughput, greedy batch); only what happens
to each chosen candidate differs. Before it is proposed, :mod:`nasfilter.searchers.screening`
compares, per simulated second, its full evaluation with a **screen** at each fidelity of
the schedule (the rungs below the top of Hyperband's most aggressive bracket with
``min_epochs``, ``max_epochs``, ``eta``; 1 and 4 epochs of hp 12 with the defaults 1, 12 and
3, Li et al.'s eta = 3) followed by the full evaluation only if the partial accuracy leaves
the candidate promising. What a screen says is learned from the run's own screens
(:class:`~nasfilter.searchers.screening.ScreenLink`): where partial accuracy adds little to
the model's prediction, the searcher stops screening and behaves as ``model-based``.

**Calibration.** A fidelity is trusted once ``calibration`` of its screens were followed by a
full evaluation (default 10: the smallest sample in which a correlation of 0.63 differs from
zero at the 5 % level); until then every screen is promoted, so calibration costs the
screens' seconds but never drops a candidate, and the candidates it screens are ones the
model chose for a full evaluation anyway. Fidelities are calibrated one at a time, lowest
(cheapest) first, and a higher one only when the one below it was found informative: its
screens' partial correlation with the final accuracy, given the model's prediction,
differs from zero at the 5 % level
(:meth:`~nasfilter.searchers.screening.ScreenLink.significant`, Student's t; the test and
level the sample size was chosen by). The same test decides whether a calibrated
fidelity's screens are considered at all, and keeps deciding as its pairs grow: a link
that is not significant buys no screens, whatever its point estimate. Where the cheapest
screen says nothing significant, a costlier one is not paid for: calibration then costs
``calibration`` screens of ``min_epochs`` (10 x 1/12 of a full evaluation with the
defaults, against 10 x (1 + 4)/12 when both are calibrated), the least that can find out
whether screening pays. (The assumption: a learning curve whose cheapest rung carries no
significant signal is not worth a rung several times costlier; the test has the power of
10 pairs.) The initial design and the exploratory rule evaluate at full fidelity. A
screen's cost is learned as a share of the predicted full cost (its observed seconds,
median), starting from its share of the training epochs, ``k / max_epochs``.

**Own computation.** The rounds' accuracy model is ``model-based``'s ridge model fitted
from statistics grown by each new evaluation (:mod:`nasfilter.searchers.ridge_stats`:
O(d**3) a refit, no Gram matrix over every evaluation; the same model up to rounding), as
are the proxy readings' throughput models; the screening rates of a round's candidates are
computed at once, and not at all once no fidelity can screen.

Only full evaluations feed the accuracy model and count towards the front; a screened
architecture that is not promoted is never proposed again (the repeat rule of
``model-based``). Promotions are proposed before new candidates.
"""

from __future__ import annotations

import math
import statistics
from typing import ClassVar

import numpy as np

from nasfilter.bench.fidelity import Fidelity
from nasfilter.bench.spaces.sss import Arch, arch_from_index, index_of
from nasfilter.checks import check_positive_int
from nasfilter.pareto import nondominated_mask
from nasfilter.searchers.accuracy_model import AccuracyFit, accuracy_fit
from nasfilter.searchers.acquisition import ObjectiveSpace, front_height
from nasfilter.searchers.asha import rung_epochs
from nasfilter.searchers.model_based import ModelBased
from nasfilter.searchers.ridge_stats import IncrementalReadings, RidgeStats
from nasfilter.searchers.screening import LinkStats, ScreenLink, promote, screen_rates
from nasfilter.searchers.successive_halving import HP, check_epochs_in_table, check_schedule
from nasfilter.sim.trial import WAIT, Proposal, Trial, Wait

# A candidate's prior: (mu, predictive sd, front height) in percent, full cost in seconds.
Prior = tuple[float, float, float, float]


class _Fidelity:
    """The screens of one fidelity in a run: (mu, y) of each, (mu, y, F) of the promoted.

    Its link is refitted (from :class:`~nasfilter.searchers.screening.LinkStats`, O(1))
    whenever a pair arrives while it has at most ``calibration`` pairs, and after that once
    the screens and pairs have grown by the square root of their number at the last fit:
    the most that ``m`` new points can move an estimate from ``n`` is about ``m / sqrt(n)``
    of its standard error, so a refit waits until that reaches one (a geometric schedule,
    about ``2 sqrt(n)`` refits in all instead of one per screen)."""

    def __init__(self, epochs: int, max_epochs: int, calibration: int) -> None:
        self.epochs = epochs
        self.calibration = calibration
        self.stats = LinkStats()
        self.screens: list[tuple[float, float]] = []
        self.pairs: list[tuple[float, float, float]] = []
        self.ratios: list[float] = []  # observed seconds / predicted full seconds
        self.pending = 0  # calibration screens not told yet
        self._prior_ratio = epochs / max_epochs
        self._link: ScreenLink | None = None
        self.rates: dict[int, tuple[float, float]] = {}  # index -> (full, screen) rates
        self.rates_link: ScreenLink | None = None  # the link they were computed with
        self._fitted_at = (-1, -1)

    def calibrated(self, n: int) -> bool:
        return len(self.pairs) >= n

    def add_screen(self, mu: float, y: float, ratio: float) -> None:
        self.screens.append((mu, y))
        self.ratios.append(ratio)
        self.stats.add_screen(mu, y)

    def add_pair(self, mu: float, y: float, f: float) -> None:
        self.pairs.append((mu, y, f))
        self.stats.add_pair(mu, y, f)

    def link(self) -> ScreenLink | None:
        """The link fitted on the screens so far (refitted on the schedule above)."""
        n, p = len(self.screens), len(self.pairs)
        last_n, last_p = self._fitted_at
        due = (p != last_p and p <= self.calibration) or (
            n + p - last_n - last_p >= max(1.0, math.sqrt(max(last_n + last_p, 0)))
        )
        if due:
            ratio = statistics.median(self.ratios) if self.ratios else self._prior_ratio
            self._link = self.stats.link(ratio)
            self._fitted_at = (n, p)
        return self._link


def _usable(link: ScreenLink | None) -> bool:
    """Whether a calibrated fidelity's screens are considered at all: its link explains
    something (``rho**2 > 0``; else a screen only adds its cost) and its partial
    correlation is significant (:meth:`ScreenLink.significant`, the calibration gate's
    test), so a chance correlation of the calibration sample buys no screens."""
    return link is not None and link.explained > 0 and link.significant()


class ModelBasedMF(ModelBased):
    """Model-based search with cost-aware screens at lower fidelities (module docstring).

    Args:
        min_epochs, max_epochs, eta: the schedule whose rungs below the top are the screen
            fidelities (as :class:`~nasfilter.searchers.asha.ASHA`'s rungs).
        calibration: promoted screens of a fidelity before its link is trusted, in [3, 1000].
        hardware, beta, batch, init, init_proxy, strata, cost_power, pool, calibrate,
            acquisition, explore: :class:`~nasfilter.searchers.model_based.ModelBased`'s.
    """

    name: ClassVar[str] = "model-based-mf"
    uses_fidelities: ClassVar[bool] = True
    # screens at 1 and 4 epochs of hp 12: tss has no per-epoch curve, so sss only
    spaces: ClassVar[tuple[str, ...]] = ("sss",)

    def __init__(
        self,
        min_epochs: int = 1,
        max_epochs: int = 12,
        eta: float = 3,
        calibration: int = 10,
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
        super().__init__(hardware, beta, batch, init, init_proxy, strata, cost_power, pool,
                         calibrate, acquisition, explore)
        self.min_epochs, self.max_epochs, self.eta = check_schedule(min_epochs, max_epochs, eta)
        self.calibration = check_positive_int(
            calibration, "calibration (valid range: [3, 1000])", minimum=3, maximum=1000
        )

    def reset(self) -> None:
        check_epochs_in_table(self, self.max_epochs)
        super().reset()
        self._readings = IncrementalReadings(self._x, with_utilization=self.hardware)
        epochs = rung_epochs(self.min_epochs, self.max_epochs, self.eta)[:-1]
        self._fids = [_Fidelity(e, self.max_epochs, self.calibration)
                      for e in epochs if e < self.max_epochs]
        self._priors: dict[int, Prior] = {}  # planned index -> its prior
        self._screening: dict[int, tuple[_Fidelity, Prior, float, float]] = {}
        self._awaiting: dict[int, tuple[_Fidelity, float, float]] = {}  # promoted screens
        self._promotions: list[int] = []
        self._round: tuple[AccuracyFit, np.ndarray] | None = None
        self._stats: RidgeStats | None = None  # the accuracy model's statistics, grown
        self.screens = 0  # screens proposed (for tests and reports)
        self.promoted = 0

    # ------------------------------------------------------------- the rounds
    def _fit(self) -> tuple[AccuracyFit, np.ndarray]:
        """``model-based``'s round model, fitted from :class:`RidgeStats` grown by the new
        evaluations (the same ridge model up to rounding, at O(d**3) a refit instead of
        a Gram matrix over every evaluation)."""
        obs = np.asarray(self._obs_index, dtype=np.int64)
        if len(np.unique(obs)) < len(obs):  # a repeat (never, by the repeat rule): the mean
            self._round = super()._fit()
            return self._round
        if self._stats is None:
            self._stats = RidgeStats(self._x, shift=float(np.mean(self._obs_acc)))
        new = slice(self._stats.n, len(obs))
        self._stats.add(obs[new], np.asarray(self._obs_acc[new]))
        design = self._design()
        extra = design[:, self._x.shape[1]:] if self.hardware else None
        order = np.argsort(obs)
        fit = accuracy_fit(self._stats.fit(extra), design, obs[order],
                           np.asarray(self._obs_acc)[order], self.calibrate)
        log_thr = self._readings.log_throughput()
        if not (np.isfinite(fit.mean).all() and np.isfinite(log_thr).all()):
            raise FloatingPointError("non-finite predictions")
        self._round = (fit, log_thr)
        return self._round

    def _plan(self) -> list[int]:
        self._round = None
        planned = super()._plan()
        if self._round is not None and planned and self._may_screen():
            self._priors.update(self._prior(np.asarray(planned, dtype=np.int64)))
        return planned

    def _calibrating(self) -> _Fidelity | None:
        """The fidelity being calibrated: the lowest one short of its sample, provided the
        fidelity below it (if any) was found informative (:meth:`ScreenLink.significant`);
        None when calibration is over."""
        for i, fid in enumerate(self._fids):
            if fid.calibrated(self.calibration):
                continue
            if i == 0:
                return fid
            below = self._fids[i - 1].link()
            return fid if below is not None and below.significant() else None
        return None

    def _may_screen(self) -> bool:
        """Whether a fidelity is being calibrated or has a link that explains anything:
        else no screen can pay (:func:`screen_rates` with ``rho**2 = 0``: a screen only adds
        its cost), and the round's priors are not computed."""
        if self._calibrating() is not None:
            return True
        for fid in self._fids:
            link = fid.link() if fid.calibrated(self.calibration) else None
            if _usable(link):
                return True
        return False

    def _prior(self, idx: np.ndarray) -> dict[int, Prior]:
        """The priors of the planned ``idx`` under the round's model."""
        assert self._round is not None
        fit, log_thr = self._round
        mu = fit.mean
        space = ObjectiveSpace.over(mu, log_thr)
        ev = space.points(mu[fit.evaluated], log_thr[fit.evaluated])
        front = ev[nondominated_mask(ev)]
        x = (log_thr[idx] - space.t0) / space.span_t
        height = space.a0 + front_height(front, x, 0.0) * space.span_a
        sd = np.sqrt(fit.sd(idx) ** 2 + fit.model.noise_sd**2)
        cost = self._predicted_cost(idx)
        return {
            int(i): (float(mu[i]), float(s), float(h), float(c))
            for i, s, h, c in zip(idx, sd, height, cost, strict=True)
        }

    def _choose(self, index: int) -> _Fidelity | None:
        """The fidelity to screen ``index`` at, or None for a full evaluation."""
        prior = self._priors.get(index)
        if prior is None:
            return None
        fid = self._calibrating()  # calibration first, lowest fidelity first
        if fid is not None:
            if len(fid.pairs) + fid.pending < self.calibration:
                return fid
            return None  # its calibration screens are in flight: evaluate in full
        best, best_rate = None, 0.0
        for fid in self._fids:
            link = fid.link() if fid.calibrated(self.calibration) else None
            if link is None or not _usable(link):
                continue
            full, screen = self._rates(fid, link, index)
            if screen > max(full, best_rate):
                best, best_rate = fid, screen
        return best

    def _rates(self, fid: _Fidelity, link: ScreenLink, index: int) -> tuple[float, float]:
        """:func:`screen_rates` of planned ``index`` at ``fid``, computed for every planned
        candidate at once and kept while the link is unchanged (each row is the same
        arithmetic as a call of its own)."""
        if fid.rates_link is not link or index not in fid.rates:
            idx = list(self._priors)
            mu, sd, h, cost = np.asarray([self._priors[i] for i in idx]).T
            full, screen = screen_rates(link, mu, sd, h, cost)
            fid.rates = dict(zip(idx, zip(full.tolist(), screen.tolist(), strict=True),
                                 strict=True))
            fid.rates_link = link
        return fid.rates[index]

    # ------------------------------------------------------- propose and observe
    # Wider than ModelBased.propose (Arch | None): a screen is a Proposal, WAIT waits for one.
    def propose(self) -> Arch | Proposal | Wait | None:  # type: ignore[override]
        if not self._started:
            self._start()
        if self._promotions:
            index = self._promotions.pop(0)
            self._pending[index] = self.proxy.clock
            return arch_from_index(index)
        while True:
            while self._queue:
                index = self._queue.pop()
                if self._used[index]:
                    continue
                self._used[index] = True
                self._measure(np.array([index]))
                return self._proposal(index)
            planned = self._plan()
            if not planned:
                return WAIT if self._screening or self._promotions else None
            self._queue = planned[::-1]

    def _proposal(self, index: int) -> Arch | Proposal:
        fid = self._choose(index)
        prior = self._priors.get(index)
        if fid is None or prior is None:
            self._priors.pop(index, None)
            self._pending[index] = self.proxy.clock
            return arch_from_index(index)
        rate = -1.0  # calibration: always promoted
        if fid.calibrated(self.calibration):
            link = fid.link()
            assert link is not None
            rate = self._rates(fid, link, index)[1]
        del self._priors[index]
        if rate < 0:
            fid.pending += 1
        self._screening[index] = (fid, prior, rate, self.proxy.clock)
        self.screens += 1
        return Proposal(arch_from_index(index), Fidelity(fid.epochs, HP))

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        index = index_of(trial.arch)
        if trial.fidelity is None:
            awaiting = self._awaiting.pop(index, None)
            if awaiting is not None and accuracy is not None:
                fid, mu, y = awaiting
                fid.add_pair(mu, y, float(accuracy))
            super().observe(trial, accuracy)
            return
        fid, prior, rate, asked_at = self._screening.pop(index)
        if rate < 0:
            fid.pending -= 1
        if accuracy is None:
            return
        mu, _, _, cost = prior
        y = float(accuracy)
        fid.add_screen(mu, y, (self.proxy.clock - asked_at) / cost)
        link = fid.link()
        if rate < 0 or link is None or promote(link, prior, y, rate):
            self._awaiting[index] = (fid, mu, y)
            self._promotions.append(index)
            self.promoted += 1


__all__ = ["ModelBasedMF"]
