"""The zero-cost lane of a run: proxy scores of untrained networks, queried and charged.

A searcher or filter reads a zero-cost score (:mod:`nasfilter.zerocost`) the way it reads a
hardware reading: through the metered problem
(:meth:`~nasfilter.sim.proxy_handle.ProxyHandle.query_zerocost`), each query charged to the
run's clocks. The scores are a :class:`~nasfilter.zerocost.scorefile.ScoreFile` of the
table's space and dataset: the one passed to the problem, else the shipped one, loaded at
the first query (a run that never asks loads nothing).

Charging (docs/cheap-signals.md, "Zero-cost proxies in the search"): the first query of an
(proxy, architecture) pair costs :func:`zerocost_cost` simulated seconds, a repeat is free
(unless the problem charges repeated proxy queries), serially on the wall clock, starting
only while both clocks are below their limits. The cost is **modelled**: the proxy's
measured median CPU seconds per network on one core (from the score file) times
:data:`GPU_SCALE`. Queries are counted (``n_queries``, ``seconds``) and logged: one
``zerocost`` event per answered query (:class:`~nasfilter.sim.events.EventKind`), with the
architecture, the proxy (its code in the log's names, ``EventLog.proxies``), the seconds
charged (0 for a free repeat) and the wall-clock interval.
"""

from __future__ import annotations

import numpy as np

from nasfilter.sim.clock import SimClock
from nasfilter.sim.trace import Trace
from nasfilter.zerocost.scorefile import ScoreFile, packaged_scores

# Modelled: how a zero-cost score's measured CPU seconds (one core) become seconds on the
# GPU the study assumes. Synflow is one forward and backward pass of a single image
# (float64): far too little work to fill a GPU, so its time there is bound by kernel launches
# (hundreds of small kernels), not by FLOPs, and we assume no speed-up over one CPU core: a
# factor 1, an upper bound on the GPU time, not a measurement.
GPU_SCALE = 1.0


def zerocost_cost(scores: ScoreFile, proxy: str) -> float:
    """Simulated seconds charged per query of ``proxy``: the median CPU seconds of its
    computed scores in ``scores`` times :data:`GPU_SCALE` (modelled); ValueError listing
    the proxies the file holds for an unknown one."""
    scores.scores(proxy)  # ValueError naming the proxies held
    seconds = scores.seconds[proxy][scores.computed[proxy]]
    seconds = seconds[np.isfinite(seconds)]
    if seconds.size == 0:
        raise ValueError(f"the score file records no CPU seconds for proxy {proxy!r}")
    return float(np.median(seconds)) * GPU_SCALE


class ZeroCostLane:
    """The zero-cost scores of one run and their charging (see the module docstring).

    Args:
        space, dataset: the run's table's names ("tss", "cifar10").
        clock: the run's clocks, charged here.
        trace: the run's trace, where each query is logged (None: not logged).
        scores: the score file, or None for the shipped one of (space, dataset).
        charge_repeats: a repeated query of a pair is charged again.
    """

    def __init__(
        self, space: str, dataset: str, clock: SimClock, scores: ScoreFile | None,
        charge_repeats: bool, trace: Trace | None = None,
    ) -> None:  # fmt: skip
        if scores is not None and not isinstance(scores, ScoreFile):
            raise ValueError(
                f"zerocost must be a nasfilter.zerocost.scorefile.ScoreFile or None, "
                f"got {type(scores).__name__}"
            )
        if scores is not None and (scores.space, scores.dataset) != (space, dataset):
            raise ValueError(
                f"the zero-cost scores are for {scores.space}/{scores.dataset} but the table "
                f"is {space}/{dataset}; load the scores of the table's space and dataset"
            )
        self.space, self.dataset, self.clock, self.trace = space, dataset, clock, trace
        self._scores = scores
        self.charge_repeats = charge_repeats
        self._seen: dict[str, np.ndarray] = {}  # proxy -> bool (size,): queried before
        self._costs: dict[str, float] = {}  # proxy -> its cost (the score file is frozen)
        self.seconds = 0.0
        self.n_queries = 0

    @property
    def scores(self) -> ScoreFile:
        """The score file (the shipped one is loaded here, at first use)."""
        if self._scores is None:
            self._scores = packaged_scores(self.space, self.dataset)
        return self._scores

    def cost(self, proxy: str) -> float:
        """Simulated seconds per query of ``proxy`` (:func:`zerocost_cost`)."""
        if proxy not in self._costs:
            self._costs[proxy] = zerocost_cost(self.scores, proxy)
        return self._costs[proxy]

    def coverage(self, proxy: str) -> np.ndarray:
        """bool (size,): which architectures have a computed score of ``proxy`` (free)."""
        self.scores.scores(proxy)
        return self.scores.computed[proxy]

    def query_many(self, proxy: str, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Query ``proxy`` for indices ``idx`` (int64 (n,), valid) in order until the budget
        runs out; (answered (k,), scores float64 (k,), NaN where the proxy is undefined,
        e.g. synflow on a disconnected tss cell). LookupError naming the proxy and the first
        architecture whose score was never computed."""
        scores = self.scores
        values = scores.scores(proxy)
        computed = scores.computed[proxy][idx]
        if not computed.all():
            missing = idx[~computed]
            raise LookupError(
                f"zero-cost proxy {proxy!r} was not computed for {missing.size} of the "
                f"{idx.size} queried {self.space}/{self.dataset} architectures (first: "
                f"{missing[:5].tolist()}); it covers {int(scores.computed[proxy].sum())} of "
                f"{scores.computed[proxy].size}"
            )
        self.clock.check_open(f"query zero-cost proxy {proxy!r}")
        cost = self.cost(proxy)
        if proxy not in self._seen:
            self._seen[proxy] = np.zeros(values.size, dtype=bool)
        seen = self._seen[proxy]
        first = np.zeros(idx.shape, dtype=bool)
        first[np.unique(idx, return_index=True)[1]] = True
        first &= ~seen[idx]
        costs = np.where(first | self.charge_repeats, cost, 0.0)
        total = np.cumsum(costs)
        clock = self.clock
        k = clock.allowed(clock.spent + total - costs, clock.now + total - costs)
        if k and self.trace is not None:
            self.trace.zerocost(
                proxy,
                {
                    "index": idx[:k],
                    "cost": costs[:k],
                    "worker_seconds": clock.spent + total[:k],
                    "start": clock.now + total[:k] - costs[:k],
                    "end": clock.now + total[:k],
                },
            )
        if k:
            clock.spent += float(total[k - 1])
            clock.now += float(total[k - 1])
            self.seconds += float(total[k - 1])
        self.n_queries += k
        seen[idx[:k]] = True
        return idx[:k], values[idx[:k]].astype(np.float64)
