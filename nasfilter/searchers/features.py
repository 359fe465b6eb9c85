"""Free features of every architecture and a Bayesian ridge model over them.

The channel choices, MACs and parameter counts are closed-form, so a searcher may use them
for all 32768 architectures without charge. :func:`base_features` holds them as one
standardized design matrix; :class:`RidgeModel` is a linear model with a Gaussian prior on
the weights, its penalty chosen by generalized cross-validation (so nothing is tuned to one
table), whose posterior gives a mean and a standard deviation per architecture.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nasfilter.bench.costs import network_costs
from nasfilter.bench.spaces import SSS, TSS, Space
from nasfilter.bench.spaces.sss import all_channels
from nasfilter.bench.tss_data import load_tss_arrays

RIDGE_PENALTIES = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)  # the GCV grid, standardized units


@functools.cache
def _base_features() -> np.ndarray:
    ch = all_channels()
    logc = np.log2(ch / 8.0)  # 0..3 per layer
    onehot = (ch[:, :, None] == np.asarray(SSS.choices)[None, None, :]).reshape(
        len(ch), SSS.n_positions * SSS.n_choices
    )
    costs = network_costs("cifar10")  # 32x32 inputs; another input size shifts logs only
    cols = [
        onehot.astype(np.float64),
        logc,
        logc**2,
        logc[:, :-1] * logc[:, 1:],  # neighbouring layers
        np.log(costs.macs)[:, None],
        np.log(costs.params)[:, None],
        np.log(ch.min(axis=1))[:, None],  # the narrowest layer: a bottleneck
    ]
    x = np.concatenate(cols, axis=1)
    std = x.std(axis=0)
    x = (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)
    x.setflags(write=False)
    return x


def base_features() -> np.ndarray:
    """Standardized free features, float64 (32768, 57), read-only; row i is architecture i.

    Columns: one-hot channel per layer (40), log2(c/8) per layer (5), their squares (5),
    products of neighbouring layers' log2 (4), log MACs and log parameters (at 32x32 input),
    log of the narrowest layer.
    """
    return _base_features()


def _standardized(x: np.ndarray) -> np.ndarray:
    std = x.std(axis=0)
    out = (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)
    out.setflags(write=False)
    return out


#: The encodings of a tss cell as accuracy features (:func:`space_features`).
ENCODINGS = ("ops", "paths")

#: The cell's input-to-output paths as positions in the edge order of
#: :func:`~nasfilter.bench.tss_data.arch_ops` ((1<-0), (2<-0), (2<-1), (3<-0), (3<-1),
#: (3<-2)): 0->3, 0->1->3, 0->2->3 and 0->1->2->3.
TSS_PATHS: tuple[tuple[int, ...], ...] = ((3,), (0, 4), (1, 5), (0, 2, 5))


def tss_path_encoding(digits: np.ndarray) -> np.ndarray:
    """The path encoding of tss cells (White et al., "BANANAS", AAAI 2021), float64 (n, 100).

    ``digits`` int (n, 6): the op code of each edge (0 = none). For each of the four
    input-to-output paths (:data:`TSS_PATHS`), a one-hot of the sequence of its operations
    over the four that pass data (4 + 16 + 16 + 64 columns); all zeros where an edge of the
    path is ``none`` (the path does not exist). Unlike the per-edge one-hots, it sees which
    operations feed which: an operation on an edge no path uses adds nothing.
    """
    d = np.asarray(digits, dtype=np.int64)
    if d.ndim != 2 or d.shape[1] != 6 or (d.size and (d.min() < 0 or d.max() > 4)):
        raise ValueError(f"tss digits must be op codes 0..4 of shape (n, 6), got {d.shape}")
    blocks = []
    for path in TSS_PATHS:
        ops = d[:, list(path)] - 1  # -1: none
        alive = (ops >= 0).all(axis=1)
        code = (np.maximum(ops, 0) * 4 ** np.arange(len(path) - 1, -1, -1)).sum(axis=1)
        block = np.zeros((len(d), 4 ** len(path)))
        rows = np.flatnonzero(alive)
        block[rows, code[rows]] = 1.0
        blocks.append(block)
    return np.concatenate(blocks, axis=1)


@functools.cache
def _tss_features(dataset: str, encoding: str) -> np.ndarray:
    arrays = load_tss_arrays(dataset)
    digits = TSS.all_digits()
    onehot = (digits[:, :, None] == np.arange(5)[None, None, :]).reshape(len(digits), 30)
    cols = [onehot.astype(np.float64)]
    if encoding == "paths":
        cols.append(tss_path_encoding(digits))
    cols += [
        np.log(arrays.flops_M.astype(np.float64))[:, None],
        np.log(arrays.params_M.astype(np.float64))[:, None],
    ]
    return _standardized(np.concatenate(cols, axis=1))


def space_features(space: Space, dataset: str, encoding: str = "ops") -> np.ndarray:
    """The free features of every architecture of ``space``, standardized, read-only,
    float64 (size, d): :func:`base_features` on sss; on tss the one-hot operation of each of
    the six edges (30 columns), with ``encoding="paths"`` the path encoding
    (:func:`tss_path_encoding`, 100 columns), then log MACs and log parameters (exact,
    NATS's counts for ``dataset``): (15625, 32) or (15625, 132).

    ValueError for an encoding not in :data:`ENCODINGS`, or ``"paths"`` on sss (its
    networks are a chain of layers, with no paths to encode)."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
    if space is TSS:
        return _tss_features(dataset, encoding)
    if space is SSS:
        if encoding != "ops":
            raise ValueError(
                f"encoding={encoding!r} needs a cell with paths (the tss space); an sss "
                "network is a chain of five layers: use encoding='ops' (its channel features)"
            )
        return base_features()
    raise ValueError(f"no free features for the {space.name} space; known: sss, tss")


def zerocost_columns(scores: np.ndarray, answered: np.ndarray) -> np.ndarray:
    """Accuracy-model columns from a zero-cost proxy's scores, float64 (size, 3): the score
    standardized over the finite answered ones, its square, and 1 where the score is
    undefined (NaN or infinite: a disconnected tss cell) else 0. An undefined score takes
    the lowest finite one (no signal path: the worst); an unanswered one (the budget ended
    before it was read) the mean, 0. ``scores`` float (size,), NaN where unanswered;
    ``answered`` bool (size,). ValueError when no answered score is finite."""
    scores = np.asarray(scores, dtype=np.float64)
    answered = np.asarray(answered, dtype=bool)
    finite = answered & np.isfinite(scores)
    if not finite.any():
        raise ValueError("no finite zero-cost score to build features from")
    z = np.zeros(len(scores))
    mean, std = scores[finite].mean(), scores[finite].std()
    z[finite] = (scores[finite] - mean) / (std if std > 0 else 1.0)
    undefined = answered & ~finite
    z[undefined] = z[finite].min()
    return np.stack([z, z * z, undefined.astype(np.float64)], axis=1)


def imputed_zerocost_columns(
    scores: np.ndarray, answered: np.ndarray, free: np.ndarray
) -> np.ndarray:
    """:func:`zerocost_columns` where an unanswered score is predicted instead of set to the
    mean: a :class:`RidgeModel` of the standardized score on the free features ``free``
    (size, d), fitted to the answered finite ones, gives it (and its square; the undefined
    flag stays 0); with fewer than 3 finite answered scores they stay at the mean, 0.
    float64 (size, 3); ValueError when no answered score is finite."""
    cols = zerocost_columns(scores, answered)
    finite = np.asarray(answered, dtype=bool) & np.isfinite(np.asarray(scores, dtype=np.float64))
    unread = ~np.asarray(answered, dtype=bool)
    if unread.any() and finite.sum() >= 3:
        model = RidgeModel.fit(free[finite], cols[finite, 0])
        z = model.mean(free[unread])
        cols[unread, 0], cols[unread, 1] = z, z * z
    return cols


def space_macs(space: Space, dataset: str) -> np.ndarray:
    """MACs (millions) of every architecture of ``space`` on ``dataset``, float64 (size,)."""
    if space is SSS:
        return network_costs(dataset).macs
    if space is TSS:
        return load_tss_arrays(dataset).flops_M.astype(np.float64)
    raise ValueError(f"no MACs for the {space.name} space; known: sss, tss")


@dataclass(frozen=True)
class RidgeModel:
    """A fitted Bayesian ridge regression y ~ (x - center) @ w + b.

    Attributes:
        weights: (d,); intercept: the mean of the training targets; center: the mean of
            the training rows (d,), subtracted before the weights apply.
        covariance: (X'X + penalty I)^-1 of the centred rows, (d, d); times noise_sd**2 it
            is the posterior covariance of the weights.
        noise_sd: residual standard deviation (targets' units).
        penalty: the ridge penalty GCV chose.
    """

    weights: np.ndarray
    intercept: float
    center: np.ndarray
    covariance: np.ndarray
    noise_sd: float
    penalty: float

    @classmethod
    def fit(
        cls, x: np.ndarray, y: np.ndarray, penalties: tuple[float, ...] = RIDGE_PENALTIES
    ) -> RidgeModel:
        """Fit to rows x (n, d) and targets y (n,); the penalty minimizes GCV.

        One inverse of a d x d matrix per penalty (no eigen-decomposition: LAPACK's is
        slow for small matrices when BLAS threads compete for cores). Raises ValueError for
        fewer than 3 rows or non-finite input, numpy.linalg.LinAlgError when a solve fails.
        """
        n = len(y)
        if n < 3:
            raise ValueError(f"a ridge fit needs at least 3 observations, got {n}")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise ValueError("a ridge fit needs finite features and targets")
        b = float(y.mean())
        yc = y - b
        center = x.mean(axis=0)
        xc = x - center
        gram = xc.T @ xc

        def rss(coef: np.ndarray) -> float:
            resid = yc - xc @ coef
            return float(resid @ resid)

        return cls.from_gram(gram, xc.T @ yc, rss, n, b, center, penalties)

    @classmethod
    def from_gram(
        cls, gram: np.ndarray, xty: np.ndarray, rss: Callable[[np.ndarray], float], n: int,
        intercept: float, center: np.ndarray, penalties: tuple[float, ...],
    ) -> RidgeModel:
        """The GCV choice of :meth:`fit` from centred statistics: ``gram`` (d, d), ``xty``
        (d,), ``rss(coef)`` the residual sum of squares of weights ``coef`` (d,), ``n``
        rows; ``intercept`` and ``center`` (d,) as the fitted model's."""
        eye = np.eye(len(gram))
        best: tuple[float, float, np.ndarray, np.ndarray, float] | None = None
        for lam in penalties:
            inv = np.linalg.inv(gram + lam * eye)
            coef = inv @ xty
            r = rss(coef)
            dof = float(np.sum(inv * gram))  # trace of the hat matrix
            gcv = r / max(n - dof, 0.5) ** 2 * n
            if best is None or gcv < best[0]:
                best = (gcv, lam, coef, inv, r / max(n - dof, 1.0))
        assert best is not None
        _, lam, coef, inv, var = best
        return cls(coef, intercept, center, inv, max(float(np.sqrt(var)), 1e-9), lam)

    def mean(self, x: np.ndarray) -> np.ndarray:
        """Posterior mean at rows x (k, d) -> (k,)."""
        # einsum, not BLAS: a matrix-vector product is memory-bound, and BLAS threads that
        # compete for busy cores make it many times slower.
        offset = self.intercept - float(self.center @ self.weights)
        return np.asarray(np.einsum("ij,j->i", x, self.weights) + offset)

    def sd(self, x: np.ndarray) -> np.ndarray:
        """Posterior standard deviation of the mean at rows x (k, d) -> (k,)."""
        xc = x - self.center
        var = np.einsum("ij,ij->i", xc @ self.covariance, xc)
        return np.asarray(self.noise_sd * np.sqrt(np.maximum(var, 0.0)))
