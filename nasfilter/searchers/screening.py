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

NODES = 24  # Gauss-Hermite nodes of the expectation over a screen's outcome
SIGNIFICANCE = 0.05  # two-sided level of ScreenLink.significant, the conventional one
_U, _W = np.polynomial.hermite_e.hermegauss(NODES)
_W = _W / _W.sum()  # probabilists' weights of N(0, 1)


def expected_improvement(mean: np.ndarray, sd: np.ndarray, height: np.ndarray) -> np.ndarray:
    """E[max(F - height, 0)] for F ~ N(mean, sd**2), elementwise (broadcast), percent."""
    # Imported here: scipy.special takes ~0.7 s to import, and every process that loads
    # the searcher registry (a nine-seed comparison's parent, say) would pay it unused.
    from scipy.special import ndtr

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
        with fewer than 3 screens or 4 pairs, or no spread (:class:`LinkStats`)."""
        stats = LinkStats()
        for mu, y in np.asarray(screens).reshape(-1, 2):
            stats.add_screen(float(mu), float(y))
        for mu, y, f in np.asarray(pairs).reshape(-1, 3):
            stats.add_pair(float(mu), float(y), float(f))
        return stats.link(cost_ratio)

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
        from scipy.stats import t as student_t  # ~1 s to import: only when a link is tested

        return bool(t > student_t.ppf(1.0 - level / 2.0, df))

    def posterior(self, mu: float, sd: float, y: float) -> tuple[float, float]:
        """(mean, sd) of the final accuracy after a screen returned ``y``, for a candidate
        with prior ``N(mu, sd**2)`` (percent)."""
        rho2 = self.explained
        z = (y - self.a - self.b * mu) / self.sd_y
        return mu + np.sign(self.c) * np.sqrt(rho2) * sd * z, sd * np.sqrt(1.0 - rho2)


class LinkStats:
    """Sums of the screens (mu, y) and pairs (mu, y, F) of one fidelity, from which
    :class:`ScreenLink` is fitted in O(1) however many there are: the least-squares line of
    ``y`` on ``mu``, and the regression of ``F`` on ``(1, mu, e_y)``, which has the
    coefficient ``c`` and the residuals of ``F`` on ``(1, mu, y)`` (``e_y`` is ``y`` less
    a line in ``mu``), so its normal equations need only the pairs' 3 x 3 sums. Values are
    summed less the first screen's (``mu``, ``y``) and the first pair's ``F``, so the
    sums of squares keep their digits."""

    def __init__(self) -> None:
        self.n_screens = 0
        self.n_pairs = 0
        self._shift: tuple[float, float] | None = None
        self._f0 = 0.0
        self._s = np.zeros(6)  # 1, mu, y, mu^2, mu y, y^2 of the screens
        self._g = np.zeros((3, 3))  # (1, mu, y)' (1, mu, y) of the pairs
        self._gf = np.zeros(3)  # (1, mu, y)' F
        self._ff = 0.0

    def add_screen(self, mu: float, y: float) -> None:
        if self._shift is None:
            self._shift = (mu, y)
        m, v = mu - self._shift[0], y - self._shift[1]
        self._s += (1.0, m, v, m * m, m * v, v * v)
        self.n_screens += 1

    def add_pair(self, mu: float, y: float, f: float) -> None:
        """A screened architecture's final accuracy ``f`` (its screen added before, as a
        rule; else the pair sets the shift)."""
        if self._shift is None:
            self._shift = (mu, y)
        if self.n_pairs == 0:
            self._f0 = f
        row = np.array([1.0, mu - self._shift[0], y - self._shift[1]])
        g = f - self._f0
        self._g += np.outer(row, row)
        self._gf += g * row
        self._ff += g * g
        self.n_pairs += 1

    def link(self, cost_ratio: float) -> ScreenLink | None:
        """The link, or None with fewer than 3 screens or 4 pairs, or no spread."""
        n, p = self.n_screens, self.n_pairs
        if n < 3 or p < 4 or self._shift is None:
            return None
        _, sm, sy, smm, smy, syy = self._s
        sxx = smm - sm * sm / n
        if sxx <= 0:
            return None
        b = (smy - sm * sy / n) / sxx
        a = (sy - b * sm) / n  # in shifted units
        rss_y = max(syy - sy * sy / n - b * (smy - sm * sy / n), 0.0)
        sd_y = float(np.sqrt(rss_y / max(n - 2, 1)))
        v = np.array([-a, -b, 1.0])
        if sd_y <= 0 or v @ self._g @ v <= 0:  # e_y of the pairs all zero
            return None
        coef, *_ = np.linalg.lstsq(self._g, self._gf, rcond=None)
        rss = max(self._ff - float(coef @ self._gf), 0.0)
        sd_post = float(np.sqrt(rss / (p - 3)))
        a_full = a + self._shift[1] - b * self._shift[0]
        return ScreenLink(float(a_full), float(b), sd_y, float(coef[2]), max(sd_post, 1e-6),
                          float(cost_ratio), p)


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


__all__ = [
    "NODES", "SIGNIFICANCE", "LinkStats", "ScreenLink", "expected_improvement", "promote",
    "screen_rates",
]
