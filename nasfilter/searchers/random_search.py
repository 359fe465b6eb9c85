"""Random search: a uniform architecture of the run's space (NATS ``random_wo_share.py``)."""

from __future__ import annotations

from typing import ClassVar

from nasfilter.bench.spaces.sss import Arch
from nasfilter.searchers.base import Searcher

_BLOCK = 512  # indices drawn per call of the generator


class RandomSearch(Searcher):
    """Propose architectures uniformly at random, with replacement, forever.

    A uniform index over the space's architectures (32768 in sss, 15625 in tss) is a
    uniform, independent draw per layer or edge. Outcomes are ignored; the runner keeps the
    best.
    """

    name: ClassVar[str] = "random"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")

    def reset(self) -> None:
        self._draws: list[int] = []

    def propose(self) -> Arch | None:
        if not self._draws:
            self._draws = self.rng.integers(0, self.space.size, size=_BLOCK)[::-1].tolist()
        return self.space.arch(self._draws.pop())
