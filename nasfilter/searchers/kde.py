"""BOHB's density model on the five channel positions: products of Aitchison-Aitken kernels.

Falkner et al. (ICML 2018) fit two kernel density estimates per budget, ``l(x)`` on the best
observations and ``g(x)`` on the rest, and propose the candidate with the highest ratio
``l(x) / g(x)`` among samples drawn from ``l``. Their implementation (hpbandster, with
statsmodels' ``KDEMultivariate``) treats a categorical parameter with the Aitchison-Aitken
kernel. For a position with ``c`` levels and bandwidth ``lam``::

    k(x, x_i) = 1 - lam            if x == x_i
              = lam / (c - 1)      otherwise

and the density of a configuration is ``mean_i prod_d k_d(x_d, x_id)``. Bandwidths follow
statsmodels' ``normal_reference`` rule, ``1.06 * std(codes_d) * n ** (-1 / (4 + d))``,
clipped to ``[min_bandwidth, (c - 1) / c]`` (the upper end is the uniform kernel).

Configurations are integer codes (n, positions), each in ``0 .. levels - 1``: the choice
codes of :meth:`nasfilter.bench.spaces.Space.digits` (on sss, the index of a layer's channel
count in ``SSS.choices``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

MIN_BANDWIDTH = 1e-3  # hpbandster's min_bandwidth


class CategoricalKDE:
    """A product-kernel density over integer codes ``data`` (n, d), ``levels`` per position.

    Args:
        data: int (n, d), n >= 1, every code in ``0 .. levels - 1``.
        levels: categories per position (>= 2).
        bandwidths: (d,) in (0, (levels - 1) / levels], or None for the normal-reference
            rule of the module docstring.
    """

    def __init__(
        self, data: np.ndarray, levels: int, bandwidths: np.ndarray | None = None
    ) -> None:
        codes = np.asarray(data)
        if codes.ndim != 2 or len(codes) == 0 or levels < 2:
            raise ValueError(
                f"data must be a non-empty (n, d) array of codes and levels >= 2, got shape "
                f"{codes.shape} and levels={levels!r}"
            )
        if codes.min() < 0 or codes.max() >= levels:
            raise ValueError(f"codes must lie in 0..{levels - 1}, got {codes.min()}..{codes.max()}")
        self.data = codes.astype(np.int64)
        self.levels = int(levels)
        top = (levels - 1) / levels
        if bandwidths is None:
            n, d = codes.shape
            bw = 1.06 * codes.std(axis=0) * n ** (-1.0 / (4 + d))
            bandwidths = np.clip(bw, MIN_BANDWIDTH, top)
        bw = np.asarray(bandwidths, dtype=np.float64)
        if bw.shape != (codes.shape[1],) or np.any(bw <= 0) or np.any(bw > top + 1e-12):
            raise ValueError(f"bandwidths must be (d,) values in (0, {top:g}], got {bw!r}")
        self.bandwidths = bw
        same, off = 1.0 - bw, bw / (levels - 1)
        # A position whose kernel is one power of two whatever the codes (the uniform kernel
        # at 8 levels: 1/8) scales every product exactly, so it is left out of the products
        # and its factor applied once: the same bits as the full product, fewer operations.
        flat = (same == off) & (np.frexp(same)[0] == 0.5)
        self._shaped = np.flatnonzero(~flat)  # positions that enter the products
        self._scale = float(np.prod(same[flat]))  # exact: a product of powers of two
        # kernel[j][v, i] = k_d(v, data[i, d]) for d = shaped[j]: a (levels, n) table each
        onehot = self.data.T[self._shaped, None, :] == np.arange(levels)[None, :, None]
        self._kernel = np.where(onehot, same[self._shaped, None, None],
                                off[self._shaped, None, None])

    def pdf(self, x: np.ndarray) -> np.ndarray:
        """Density at configurations ``x`` (m, d): float (m,); the product over positions
        ``0 .. d - 1`` in that order, then the mean over the data (the same bits as
        evaluating every position)."""
        x = np.asarray(x, dtype=np.int64)
        if len(self._shaped) == 0:
            return np.full(len(x), self._scale)
        cols = x[:, self._shaped].T  # (p, m)
        prod = self._kernel[0][cols[0]]  # (m, n)
        for j in range(1, len(cols)):
            prod *= self._kernel[j][cols[j]]
        return prod.mean(axis=1) * self._scale

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` configurations (n, d) drawn as hpbandster draws them: a random datum, then
        per position its code with probability ``1 - bandwidth``, else a uniform code."""
        picks = self.data[rng.integers(len(self.data), size=n)]
        keep = rng.random(picks.shape) < (1.0 - self.bandwidths)
        uniform = rng.integers(self.levels, size=picks.shape)
        return np.where(keep, picks, uniform)


def split_good_bad(
    losses: np.ndarray, top_fraction: float, min_points: int
) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the good and the bad observations, as hpbandster splits them: sorted by
    loss (ascending, stable), the first ``max(min_points, floor(top_fraction * n))`` are
    good and the next ``max(min_points, floor((1 - top_fraction) * n))`` bad."""
    n = len(losses)
    order = np.argsort(np.asarray(losses, dtype=np.float64), kind="stable")
    n_good = max(min_points, int(top_fraction * n))
    n_bad = max(min_points, int((1.0 - top_fraction) * n))
    return order[:n_good], order[n_good:n_good + n_bad]


def best_ratio(
    good: CategoricalKDE,
    bad: CategoricalKDE,
    rng: np.random.Generator,
    n_samples: int,
    exclude: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray | None:
    """The sample from ``good`` (d,) with the highest ``good.pdf / bad.pdf`` of
    ``n_samples`` draws (the first on ties), leaving out the draws for which ``exclude``
    (a predicate on (m, d) codes giving bool (m,)) is True; None if it leaves out all."""
    cands = good.sample(rng, n_samples)
    if exclude is not None:
        cands = cands[~exclude(cands)]
        if len(cands) == 0:
            return None
    ratio = good.pdf(cands) / np.maximum(bad.pdf(cands), 1e-32)
    return cands[int(np.argmax(ratio))]
