"""Random search: every layer's channel count drawn uniformly (NATS ``random_wo_share.py``)."""

from __future__ import annotations

from typing import ClassVar

from nasfilter.searchers.base import Searcher
from nasfilter.space import N_ARCHS, Arch, arch_from_index

_BLOCK = 512  # indices drawn per call of the generator


class RandomSearch(Searcher):
    """Propose architectures uniformly at random, with replacement, forever.

    A uniform index over the 32768 architectures is a uniform, independent draw per layer.
    Outcomes are ignored; the runner keeps the best.
    """

    name: ClassVar[str] = "random"

    def reset(self) -> None:
        self._draws: list[int] = []

    def propose(self) -> Arch | None:
        if not self._draws:
            self._draws = self.rng.integers(0, N_ARCHS, size=_BLOCK)[::-1].tolist()
        return arch_from_index(self._draws.pop())
