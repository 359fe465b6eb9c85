"""A complete custom searcher: greedy local search over single-layer changes.

Use it from Python (``run_search(LocalSearch(), make_problem(table, budget, seed=0))``, the
seed given once, to the problem) or from the command line:

    nasfilter run --searchers examples.custom_searcher:LocalSearch --seeds 0-2 --db r.db
    nasfilter run --searchers 'examples/custom_searcher.py:LocalSearch[patience=50]' ...
"""

from __future__ import annotations

from nasfilter.bench.spaces.sss import Arch, neighbours, sample
from nasfilter.checks import check_positive_int
from nasfilter.searchers import Searcher
from nasfilter.sim.trial import Trial


class LocalSearch(Searcher):
    """Evaluate the neighbours of the best architecture so far, in a random order; start
    afresh from a random architecture after ``patience`` evaluations without progress."""

    name = "local-search"

    def __init__(self, patience: int = 35) -> None:
        # Stored under the parameter's name: config() reports it, {"patience": 35}.
        self.patience = check_positive_int(patience, "patience")

    def reset(self) -> None:
        self.best: tuple[float, Arch] | None = None
        self.queue: list[Arch] = []
        self.stale = 0

    def propose(self) -> Arch:
        if self.best is None or self.stale >= self.patience:
            self.best, self.stale = None, 0
            return sample(self.rng)  # (re)start from a random architecture
        if not self.queue:
            near = neighbours(self.best[1])
            self.queue = [near[i] for i in self.rng.permutation(len(near))]
        return self.queue.pop()

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        self.stale += 1
        if accuracy is not None and (self.best is None or accuracy > self.best[0]):
            self.best, self.queue, self.stale = (accuracy, trial.arch), [], 0
