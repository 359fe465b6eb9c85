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
from typing import Any

from nasfilter.bench.nats_api.api import NATSsize
from nasfilter.bench.nats_api.topology import unique_str
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

    def get_unique_str(self, arch: Any) -> str:
        """nats_bench's: the isomorphism class string of ``arch`` (an index, a string or an
        object with ``tostr``); ValueError naming one that is no tss cell (nats_bench would
        answer for the last cell)."""
        index = self.query_index_by_arch(arch)
        if index < 0:
            TSS.parse(arch.tostr() if hasattr(arch, "tostr") else arch)
            raise ValueError(f"{arch!r} is not a tss architecture: give an index in "
                             f"[0, {TSS.size - 1}] or a string such as {TSS.example!r}")
        return unique_str(_tss_names()[0][index])


__all__ = ["NATStopologyFull"]
