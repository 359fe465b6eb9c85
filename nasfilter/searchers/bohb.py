"""BOHB (Falkner et al., ICML 2018): Hyperband whose new architectures come from a density
model, over epochs of hp 12.

**Schedule**: :class:`~nasfilter.searchers.successive_halving.Hyperband`'s (brackets
``s_max .. 0``, synchronous rungs; with several workers, a worker waits for its rung). Only
the architectures a bracket starts with are drawn differently.

**Model** (the paper's, on categorical parameters): the observations at the largest budget
(epochs) that has enough of them, at least ``min_points`` good and ``min_points`` bad
(``min_points = d + 1 = 6`` by default, ``d = 5`` channel positions), are split into the best
``max(min_points, 15 %)`` and the next ``max(min_points, 85 %)``
(:func:`~nasfilter.searchers.kde.split_good_bad`); an Aitchison-Aitken product KDE is fitted
to each and the new architecture is the best ``l / g`` of ``n_samples`` draws from ``l``
(:mod:`nasfilter.searchers.kde`). A fraction ``random_fraction`` (1/3, the paper's) of new
architectures, and all of them before a model exists, is uniform at random. Draws already
evaluated at full fidelity in this run are left out of the ``n_samples``; when all are, and
for a uniform draw, an architecture is drawn uniformly (redrawn up to 10 times if already
evaluated at full fidelity).

Single objective (validation accuracy), as the paper; no proxy queries.
"""

from __future__ import annotations

from functools import cache
from typing import ClassVar

import numpy as np

from nasfilter.bench.spaces import SSS
from nasfilter.checks import check_positive_int, check_real
from nasfilter.searchers.kde import CategoricalKDE, best_ratio, split_good_bad
from nasfilter.searchers.successive_halving import Hyperband
from nasfilter.sim.trial import Trial

# sss base-8 place values, layer 1 first
_PLACE = SSS.n_choices ** np.arange(SSS.n_positions - 1, -1, -1)


def codes_of(indices: np.ndarray) -> np.ndarray:
    """Channel-choice codes (n, 5), each 0..7, of architecture indices (n,)."""
    return (np.asarray(indices, dtype=np.int64)[:, None] // _PLACE) % SSS.n_choices


@cache
def _all_codes() -> np.ndarray:
    """:func:`codes_of` every architecture, (32768, 5), computed once (read-only)."""
    codes = codes_of(np.arange(SSS.size))
    codes.flags.writeable = False
    return codes


class _Observed:
    """The observations at one budget, in the order told: channel codes (n, 5) and losses
    (n,), -accuracy; grown by doubling."""

    __slots__ = ("all_codes", "codes", "losses", "n")

    def __init__(self, all_codes: np.ndarray | None = None) -> None:
        self.all_codes = _all_codes() if all_codes is None else all_codes  # (size, positions)
        self.codes = np.empty((64, self.all_codes.shape[1]), dtype=np.int64)
        self.losses = np.empty(64)
        self.n = 0

    def add(self, index: int, loss: float) -> None:
        if self.n == len(self.losses):
            self.codes = np.concatenate([self.codes, np.empty_like(self.codes)])
            self.losses = np.concatenate([self.losses, np.empty_like(self.losses)])
        self.codes[self.n] = self.all_codes[index]
        self.losses[self.n] = loss
        self.n += 1


class BOHB(Hyperband):
    """BOHB over epochs ``min_epochs .. max_epochs`` of hp 12 (module docstring).

    Args:
        min_epochs, max_epochs, eta: Hyperband's schedule.
        random_fraction: share of new architectures drawn uniformly, in [0, 1].
        top_fraction: share of the observations the good density is fitted to, in (0, 1].
        n_samples: draws from the good density per new architecture (>= 1).
        min_points: observations each density needs at least (>= 1; None: d + 1 = 6).
    """

    name: ClassVar[str] = "bohb"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")

    def __init__(
        self,
        min_epochs: int = 1,
        max_epochs: int = 12,
        eta: float = 3,
        random_fraction: float = 1 / 3,
        top_fraction: float = 0.15,
        n_samples: int = 64,
        min_points: int | None = None,
    ) -> None:
        super().__init__(min_epochs, max_epochs, eta)
        self.random_fraction = check_real(random_fraction, "random_fraction", 0.0, 1.0)
        self.top_fraction = check_real(top_fraction, "top_fraction", 0.0, 1.0, low_open=True)
        self.n_samples = check_positive_int(n_samples, "n_samples (valid range: >= 1)")
        self.min_points = None if min_points is None else check_positive_int(
            min_points, "min_points (valid range: >= 1)"
        )

    def reset(self) -> None:
        super().reset()
        space = self.space
        self._sss = space is SSS
        self._codes = _all_codes() if self._sss else space.all_digits()  # (size, positions)
        self._obs: dict[int, _Observed] = {}  # epochs -> the observations there
        self._full = np.zeros(space.size, dtype=bool)  # told at max_epochs
        self._fitted: tuple[int, tuple[CategoricalKDE, CategoricalKDE] | None] = (-1, None)
        self._n_obs = 0

    def _start_bracket(self) -> None:
        super()._start_bracket()
        self._todo = [self._new_index() for _ in self._todo]

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        super().observe(trial, accuracy)
        if accuracy is not None:
            epochs = self.max_epochs if trial.fidelity is None else trial.fidelity.epochs
            index = self.index_of_arch(trial.arch)
            self._obs.setdefault(epochs, _Observed(self._codes)).add(index, -float(accuracy))
            self._n_obs += 1
            if epochs == self.max_epochs:
                self._full[index] = True

    def _model(self) -> tuple[CategoricalKDE, CategoricalKDE] | None:
        """The good and bad densities at the largest budget with enough observations
        (refitted only when observations arrived)."""
        if self._fitted[0] == self._n_obs:
            return self._fitted[1]
        space = self.space
        least = space.n_positions + 1 if self.min_points is None else self.min_points
        model = None
        for epochs in sorted(self._obs, reverse=True):
            obs = self._obs[epochs]
            if obs.n < 2 * least:
                continue
            good, bad = split_good_bad(obs.losses[:obs.n], self.top_fraction, least)
            if len(bad) >= least:
                codes = obs.codes
                model = (CategoricalKDE(codes[good], space.n_choices),
                         CategoricalKDE(codes[bad], space.n_choices))
                break
        self._fitted = (self._n_obs, model)
        return model

    def _seen(self, codes: np.ndarray) -> np.ndarray:
        if not self._sss:
            return self._full[self.space.from_digits(codes)]
        return self._full[codes @ _PLACE]

    def _new_index(self) -> int:
        model = None if self.rng.random() < self.random_fraction else self._model()
        if model is not None:
            best = best_ratio(*model, self.rng, self.n_samples, exclude=self._seen)
            if best is not None:
                return int(best @ _PLACE) if self._sss else int(self.space.from_digits(best))
        size = self.space.size
        index = int(self.rng.integers(size))
        for _ in range(10):
            if not self._full[index]:
                break
            index = int(self.rng.integers(size))
        return index
