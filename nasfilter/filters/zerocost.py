"""The study's approximate filtering with a zero-cost score in place of utilization.

:class:`ZeroCostFrontiers` is :class:`~nasfilter.filters.builtins.SuccessiveFrontiers` on the
throughput–score plane (both maximized) instead of the throughput–utilization plane: at the
first candidate it scans the hardware proxy for throughput (the same budget-aware scan,
:mod:`nasfilter.sim.scan`), then queries the zero-cost score of every scanned architecture
through the metered problem (:meth:`~nasfilter.sim.proxy_handle.ProxyHandle.query_zerocost`,
each charged at the proxy's modelled cost), and passes the front layers in turn.

Scores that are not numbers: an architecture whose score is NaN or infinite (synflow on
the 341 disconnected tss cells) is never ranked as a number: it goes into one layer after
every layer of finite scores, so it is passed only once all of those are used up.

It runs on any space (sss or tss) whose score file covers the run's space and dataset: the
problem's own file (``Problem(..., zerocost=ScoreFile)``) or the shipped one
(:func:`~nasfilter.zerocost.scorefile.shipped` lists them). A space and dataset with no
shipped file is refused at the first candidate, naming it and the shipped ones; a proxy whose
scores do not cover every architecture (on the shipped tss files only synflow does; the other
proxies cover a 108-cell CIFAR-10 sample) is refused there too, naming its coverage; an
unknown proxy is refused at construction, listing the known ones.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from nasfilter.filters.builtins import SuccessiveFrontiers
from nasfilter.pareto import nondominated_ranks
from nasfilter.sim.proxy_handle import ProxyHandle
from nasfilter.sim.scan import DEFAULT_SCAN_SHARE, scan
from nasfilter.zerocost import get_proxy
from nasfilter.zerocost.scorefile import shipped


def score_ranks(
    answered: np.ndarray, throughput: np.ndarray, scores: np.ndarray, size: int
) -> np.ndarray:
    """Front layer of each index on the (throughput, score) plane, both maximized, int64
    (size,); -1 where unanswered; a non-finite score gets the layer after the last finite
    one (never ranked as a number). ``answered``, ``throughput``, ``scores``: shape (k,)."""
    ranks = np.full(size, -1, dtype=np.int64)
    finite = np.isfinite(scores)
    last = 0
    if finite.any():
        layers = nondominated_ranks(np.stack([throughput[finite], scores[finite]], axis=1))
        ranks[answered[finite]] = layers
        last = int(layers.max()) + 1
    ranks[answered[~finite]] = last
    return ranks


class ZeroCostFrontiers(SuccessiveFrontiers):
    """Successive throughput–score frontiers of a zero-cost proxy (see the module docstring).

    Args:
        score: the zero-cost proxy's name (``nasfilter.zerocost.known_proxies()``).
        patience, scan_share: as :class:`~nasfilter.filters.builtins.SuccessiveFrontiers`.
    """

    name: ClassVar[str] = "zerocost-frontiers"
    # any space; whether its scores cover the run's space and dataset is checked at setup
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")
    needs_proxy = True
    uses_utilization = False
    uses_zerocost = True

    def __init__(
        self,
        score: str = "synflow",
        patience: int | None = 100,
        scan_share: float | None = DEFAULT_SCAN_SHARE,
    ) -> None:
        super().__init__(patience=patience, scan_share=scan_share)
        self.score = get_proxy(score).name  # ValueError listing the known proxies

    def _start(self, proxy: ProxyHandle) -> None:
        covered = proxy.zerocost_coverage(self.score)
        if not covered.all():
            raise ValueError(
                f"zero-cost proxy {self.score!r} covers {int(covered.sum())} of the "
                f"{covered.size} {proxy.space.name}/{proxy.dataset} architectures; "
                f"{self.name} ranks the whole space, so it needs a proxy with full coverage "
                f"(shipped score files: {', '.join(shipped())}; compute others with "
                "`nasfilter zero-cost`)"
            )
        answered, readings = scan(proxy, self.rng, self.scan_share)
        answered, scores = proxy.query_zerocost(self.score, answered)
        throughput = readings[: len(answered), 1]
        ranks = score_ranks(answered, throughput, scores, self.space.size)
        self._ranks = ranks.tolist()
        self._counts = np.bincount(ranks[ranks >= 0], minlength=1)
        self._left = int(self._counts[0])
