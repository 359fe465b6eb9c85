"""Cost-aware screening: whether a partial evaluation is worth its seconds before a full one.

The pieces of :mod:`nasfilter.searchers.model_based_mf`, in accuracy units (percent) and
simulated seconds. A candidate's final accuracy ``F`` has the accuracy model's Gaussian
predictive distribution ``N(mu, s**2)``; the front it must beat has height ``h`` at its
throughput. What a full evaluation is worth is its expected improvement ``EI(mu, s, h) =
E[max(F - h, 0)]`` (the hypervolume it adds is that height times a width the same for every
choice about this candidate, so the width cancels).

A **screen** at ``k`` epochs returns a partial accuracy ``y``. :class:`ScreenLink` is the
linear-Gaussian link learned from the run's own screens:

- ``y = a + b mu + e_y``, ``e_y ~ N(0, sd_y**2)``: fitted on every screen (chosen on the
  model's prediction, never on ``y``, so an unbiased regression);
- ``F = alpha + beta mu + c e_y + eta``, ``eta ~ N(0, sd_post**2)``: fitted on the screened
  architectures that were then fully evaluated (selected on ``y``, which leaves a
  regression on ``y`` unbiased; ``alpha`` and ``beta`` absorb a miscalibrated model).

Of the link, a candidate's prior uses only the share of the final accuracy's variance a
screen explains, ``rho**2 = c**2 sd_y**2 / (c**2 sd_y**2 + sd_post**2)``, so that a screen
splits the candidate's own prior and adds no spread of its own: after a screen with
standardized residual ``z = e_y / sd_y``, the final accuracy is ``N(m, (1 - rho**2) s**2)``
with ``m = mu + sign(c) rho s z``, and before it ``m ~ N(mu, rho**2 s**2)``. (Promoting
every outcome then has exactly the full evaluation's expected improvement, at a higher
cost: a screen pays only by what it lets the search skip.) The
**decision** maximizes expected improvement per simulated second, candidate by candidate
(:func:`screen_rates`): a full evaluation has rate ``EI(mu, s, h) / C``; a screen of cost
``C_k`` followed by the full evaluation (cost ``C``) only when ``m`` is high enough has rate
``E[EI(m, sd_post, h) 1{promoted}] / (C_k + P(promoted) C)``, maximized over the promotion
threshold. The best threshold is Dinkelbach's: promote exactly when
``EI(m, sd_post, h) / C`` reaches the screen's optimal rate (:func:`promote`). The
expectation over ``m`` uses Gauss-Hermite quadrature (:data:`NODES` nodes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr
from scipy.stats import t as student_t

NODES = 24  # Gauss-Hermite nodes of the expectation over a screen's outcome
SIGNIFICANCE = 0.05  # two-sided level of ScreenLink.significant, the conventional one
_U, _W = np.polynomial.hermite_e.hermegauss(NODES)
_W = _W / _W.sum()  # probabilists' weights of N(0, 1)


def expected_improvement(mean: np.ndarray, sd: np.ndarray, height: np.ndarray) -> np.ndarray:
    """E[max(F - height, 0)] for F ~ N(mean, sd**2), elementwise (broadcast), percent."""
    sd = np.maximum(sd, 1e-9)
    z = (mean - height) / sd
    return np.asarray(sd * np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi) + (mean - height) * ndtr(z))


@dataclass(frozen=True)
class ScreenLink:
    """What a screen at one fidelity says about the final accuracy (module docstring)."""

    a: float
    b: float
    sd_y: float  # percent
    c: float
    sd_post: float  # percent
    cost_ratio: float  # a screen's seconds over the full evaluation's
    n_pairs: int = 1_000_000  # pairs the link was fitted on

    @classmethod
    def fit(
        cls,
        screens: np.ndarray,
        pairs: np.ndarray,
        cost_ratio: float,
    ) -> ScreenLink | None:
        """The link from ``screens`` (n, 2: mu, y) and ``pairs`` (p, 3: mu, y, F), or None
        with fewer than 3 screens or 4 pairs, or no spread."""
        if len(screens) < 3 or len(pairs) < 4 or np.ptp(screens[:, 0]) <= 0:
            return None
        b, a = np.polyfit(screens[:, 0], screens[:, 1], 1)
        resid = screens[:, 1] - (a + b * screens[:, 0])
        sd_y = float(np.sqrt(resid @ resid / max(len(screens) - 2, 1)))
        e_y = pairs[:, 1] - (a + b * pairs[:, 0])
        if sd_y <= 0 or e_y @ e_y <= 0:
            return None
        # F on (1, mu, e_y): the intercept and mu absorb a miscalibrated accuracy model
        design = np.stack([np.ones(len(pairs)), pairs[:, 0], e_y], axis=1)
        coef, *_ = np.linalg.lstsq(design, pairs[:, 2], rcond=None)
        eta = pairs[:, 2] - design @ coef
        sd_post = float(np.sqrt(eta @ eta / (len(pairs) - 3)))
        return cls(float(a), float(b), sd_y, float(coef[2]), max(sd_post, 1e-6),
                   float(cost_ratio), len(pairs))

    @property
    def explained(self) -> float:
        """``rho**2``: the share of the final accuracy's variance a screen explains, adjusted
        for the pairs it was estimated on (``1 - (1 - r**2) (p - 1) / (p - 3)``, Ezekiel's
        nearly unbiased estimate, at least 0), so a chance correlation of a few pairs does
        not buy screens."""
        signal = (self.c * self.sd_y) ** 2
        r2 = signal / (signal + self.sd_post**2)
        p = self.n_pairs
        return max(0.0, 1.0 - (1.0 - r2) * (p - 1) / (p - 3)) if p > 3 else 0.0

    def significant(self, level: float = SIGNIFICANCE) -> bool:
        """Whether the screen's partial correlation with the final accuracy (given the
        model's prediction; ``r**2`` unadjusted) differs from zero at ``level``, two-sided:
        ``t = r sqrt(df / (1 - r**2))`` on ``df = p - 3`` degrees of freedom (the residual
        degrees of freedom of ``F`` on ``(1, mu, e_y)``), against Student's t."""
        df = self.n_pairs - 3
        if df < 1:
            return False
        signal = (self.c * self.sd_y) ** 2
        r2 = signal / (signal + self.sd_post**2)
        t = np.sqrt(r2 * df / max(1.0 - r2, 1e-300))
        return bool(t > student_t.ppf(1.0 - level / 2.0, df))

    def posterior(self, mu: float, sd: float, y: float) -> tuple[float, float]:
        """(mean, sd) of the final accuracy after a screen returned ``y``, for a candidate
        with prior ``N(mu, sd**2)`` (percent)."""
        rho2 = self.explained
        z = (y - self.a - self.b * mu) / self.sd_y
        return mu + np.sign(self.c) * np.sqrt(rho2) * sd * z, sd * np.sqrt(1.0 - rho2)


def screen_rates(
    link: ScreenLink, mu: np.ndarray, sd: np.ndarray, height: np.ndarray, cost: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(full rate, best screen rate), each (k,): expected improvement per second of a full
    evaluation, and of a screen with the best promotion threshold, for candidates with
    predictive mean ``mu``, sd ``sd``, front height ``height`` (percent) and full cost
    ``cost`` (seconds), all (k,)."""
    full = expected_improvement(mu, sd, height) / cost
    rho2 = link.explained
    m = mu[:, None] + np.sqrt(rho2) * sd[:, None] * _U[None, :]  # (k, n) posterior means
    post = np.broadcast_to(sd[:, None] * np.sqrt(1.0 - rho2), m.shape)
    value = expected_improvement(m, post, height[:, None])
    order = np.argsort(-value, axis=1)  # promote the best outcomes first
    v = np.take_along_axis(value, order, axis=1) * _W[order]
    w = np.cumsum(_W[order], axis=1)
    rate = np.cumsum(v, axis=1) / ((link.cost_ratio + w) * cost[:, None])
    return full, np.maximum(rate.max(axis=1), 0.0)


def promote(link: ScreenLink, prior: tuple[float, float, float, float], y: float,
            rate: float) -> bool:
    """Whether a screened candidate goes on to its full evaluation: its expected improvement
    after the screen, per second of the full evaluation, reaches the screen's optimal
    ``rate`` (Dinkelbach's threshold for a ratio). ``prior``: (mu, sd, front height,
    full cost), as :func:`screen_rates` takes them."""
    mu, sd, height, cost = prior
    m, post = link.posterior(mu, sd, y)
    value = float(expected_improvement(np.asarray(m), np.asarray(post), np.asarray(height)))
    return value / cost >= rate


__all__ = ["NODES", "SIGNIFICANCE", "ScreenLink", "expected_improvement", "promote", "screen_rates"]
