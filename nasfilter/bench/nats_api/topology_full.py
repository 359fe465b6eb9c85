"""``NATStopologyFull``: nats_bench 1.8's topology-space API over a converted tss archive.

``nasfilter convert NATS-tss-v1_0-3ffb9-simple -o OUT`` writes every record, setting (hp 12
and 200), seed and epoch of a user's tss archive into a full-benchmark folder
(:mod:`nasfilter.bench.fullbench`); ``create(OUT, 'tss')`` opens it as this class, which is
:class:`~nasfilter.bench.nats_api.api.NATSsize`'s code (the same calls, float arithmetic and draws
from Python's ``random``) over the topology space: 15625 cells named by their arch strings,
``is_topology`` True, 200 epochs in the paper. Test accuracies, losses and every epoch are
answered, as nats_bench answers them from the archive.
"""

from __future__ import annotations

import functools

from nasfilter.bench.nats_api.api import NATSsize
from nasfilter.bench.spaces import TSS


@functools.cache
def _tss_names() -> tuple[list[str], dict[str, int]]:
    names = [str(TSS.arch(i)) for i in range(TSS.size)]
    return names, {name: i for i, name in enumerate(names)}


class NATStopologyFull(NATSsize):
    """The NATS-Bench topology-space API (nats_bench 1.8) over a converted tss archive."""

    _space_word = "topology"
    _paper_epochs = 200
    _n_archs = TSS.size

    @staticmethod
    def _names() -> tuple[list[str], dict[str, int]]:
        return _tss_names()

    @staticmethod
    def _name(index: int) -> str:
        return _tss_names()[0][index]

    @staticmethod
    def _lookup(text: str) -> int:
        return _tss_names()[1].get(text, -1)


__all__ = ["NATStopologyFull"]
