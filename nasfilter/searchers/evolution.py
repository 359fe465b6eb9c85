"""Regularized evolution (Real et al. 2019), as NATS-Bench's ``regularized_ea.py``.

While the population holds fewer than ``population_size`` evaluated members, propose uniform
random architectures. Then each step draws ``tournament_size`` members uniformly *with*
replacement (as the reference does), mutates the most accurate of them and proposes the
child. An evaluated child joins the population and the oldest member leaves (aging). The
mutation redraws one uniformly chosen digit of the space's encoding (sss: one layer's
channels; tss: one edge's operation), *excluding* the current value (as NASLib does;
NATS-Bench can redraw the same value, which wastes an evaluation on a copy).

A proposal that a filter drops is forgotten: it neither joins the population nor ages it.
"""

from __future__ import annotations

import collections
from typing import Any, ClassVar

import numpy as np

from nasfilter.bench.spaces import MAX_SIZE, SSS
from nasfilter.bench.spaces.sss import Arch, arch_from_index, index_of
from nasfilter.checks import check_positive_int
from nasfilter.searchers.base import Searcher, check_fits_space
from nasfilter.sim.trial import Trial

_BLOCK_NUMBERS = 4096  # numbers drawn per generator call once the population is full
# sss index step of one channel code at each layer (base 8, layer 1 most significant)
_SSS_PLACE = tuple(SSS.n_choices ** (SSS.n_positions - 1 - k) for k in range(SSS.n_positions))


class RegularizedEvolution(Searcher):
    """Aging evolution with tournament selection.

    Args:
        population_size: members kept, in [1, the space's size]; NATS-Bench uses 10.
        tournament_size: members drawn per tournament, in [1, the space's size]; NATS-Bench
            uses 3.

    On a space other than sss the population holds indices (the space's ``arch`` objects are
    proposed) and the mutation works on :meth:`~nasfilter.bench.spaces.Space.digits`.
    """

    name: ClassVar[str] = "evolution"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")

    def __init__(self, population_size: int = 10, tournament_size: int = 3) -> None:
        self.population_size = check_positive_int(
            population_size, "population_size", maximum=MAX_SIZE, why="at most the space size"
        )
        self.tournament_size = check_positive_int(
            tournament_size,
            "tournament_size",
            maximum=MAX_SIZE,
            why="at most the space size: draws are with replacement, so a larger tournament "
            "only repeats members, at a cost per proposal that grows with it",
        )

    def reset(self) -> None:
        self.population: collections.deque[tuple[Arch, float]] = collections.deque()
        width = self.tournament_size + 2  # the tournament's picks, the layer, the new value
        self._rows = max(1, _BLOCK_NUMBERS // width)
        space = self.space
        check_fits_space(self, "population_size", "tournament_size")
        self._sss = space is SSS
        self._highs = np.tile(
            np.array(
                [self.population_size] * self.tournament_size
                + [space.n_positions, space.n_choices - 1]
            ),
            self._rows,
        )
        self._draws: list[list[int]] = []  # drawn tournaments not used yet, last first

    def propose(self) -> Arch:
        rng = self.rng
        population = self.population
        if len(population) < self.population_size:
            if not self._sss:
                return self.space.arch(int(rng.integers(self.space.size)))
            return arch_from_index(int(rng.integers(SSS.size)))
        draws = self._draws
        if not draws:
            # The draws of many proposals in one call (the population stays full from now
            # on, so each proposal draws the same bounds): the same numbers, in the same
            # order, as one call per proposal, at a fraction of the per-call cost.
            block = rng.integers(0, self._highs).reshape(self._rows, -1)
            draws = self._draws = block[::-1].tolist()
        *picks, layer, pick = draws.pop()
        best = population[picks[0]]  # the first most accurate of the picks (with replacement)
        for i in picks[1:]:
            member = population[i]
            if member[1] > best[1]:
                best = member
        parent = best[0]
        if not self._sss:
            return self._mutate(parent, layer, pick)
        digit = parent.channels[layer] // 8 - 1
        new_digit = pick + (pick >= digit)  # uniform over the 7 other values
        index = index_of(parent) + (new_digit - digit) * _SSS_PLACE[layer]
        return arch_from_index(index)

    def _mutate(self, parent: Any, position: int, pick: int) -> Any:
        """``parent`` (an architecture of a non-sss space) with the digit at ``position``
        changed to the ``pick``-th of the other ``n_choices - 1`` values."""
        space = self.space
        digits = space.digits(space.index_of(parent)).copy()
        digit = int(digits[position])
        digits[position] = pick + (pick >= digit)
        return space.arch(int(space.from_digits(digits)))

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        if accuracy is None:
            return
        self.population.append((trial.arch, float(accuracy)))
        if len(self.population) > self.population_size:
            self.population.popleft()
