"""NATS-Bench-style search loops, written the way NATS-Bench's reference scripts
(AutoDL-Projects ``exps/NATS-algos/``) use the API: architectures drawn from Python's global
``random``, ``simulate_train_eval`` in a ``while total < budget`` loop.

They run unchanged on ``nats_bench`` and on :mod:`nasfilter.bench.nats_api`, which is what the
proof tests and ``benchmarks/bench_nats_api.py`` compare: the same trajectory (architectures,
accuracies, total times) on both. Each returns a list of ``(arch, accuracy, total_time)``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from nasfilter.bench.spaces import SSS

CHANNELS: tuple[int, ...] = tuple(SSS.choices)  # the size space's channel counts
LAYERS: int = SSS.n_positions
Trajectory = list[tuple[str, Any, Any]]


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed Python's global ``random`` for a loop, and restore its state afterwards."""
    saved = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(saved)


def _random_arch(channels: tuple[int, ...]) -> str:
    return ":".join(str(random.choice(channels)) for _ in range(LAYERS))


def random_search(
    api: Any, dataset: str, budget: float, channels: tuple[int, ...] = CHANNELS
) -> Trajectory:
    """``random_wo_share.py``: uniform channels per layer until the budget is spent."""
    api.reset_time()
    out: Trajectory = []
    total = 0.0
    while total < budget:
        arch = _random_arch(channels)
        acc, _, _, total = api.simulate_train_eval(arch, dataset, hp="12")
        out.append((arch, acc, total))
    return out


def _mutate(arch: str, channels: tuple[int, ...]) -> str:
    """Re-draw one layer's channels (NATS's mutation includes the current value)."""
    layer = random.randint(0, LAYERS - 1)
    parts = arch.split(":")
    parts[layer] = str(random.choice(channels))
    return ":".join(parts)


def regularized_evolution(
    api: Any, dataset: str, budget: float, channels: tuple[int, ...] = CHANNELS,
    population_size: int = 10, sample_size: int = 3,
) -> Trajectory:
    """``regularized_ea.py``: aging evolution with tournament selection."""
    api.reset_time()
    out: Trajectory = []
    population: list[tuple[str, Any]] = []
    total = 0.0
    while len(population) < population_size and total < budget:
        arch = _random_arch(channels)
        acc, _, _, total = api.simulate_train_eval(arch, dataset, hp="12")
        population.append((arch, acc))
        out.append((arch, acc, total))
    while total < budget:
        sample = [random.choice(population) for _ in range(sample_size)]
        parent = max(sample, key=lambda item: item[1])
        child = _mutate(parent[0], channels)
        acc, _, _, total = api.simulate_train_eval(child, dataset, hp="12")
        population.append((child, acc))
        population.pop(0)
        out.append((child, acc, total))
    return out


def reinforce(
    api: Any, dataset: str, budget: float, channels: tuple[int, ...] = CHANNELS,
    learning_rate: float = 0.01, momentum: float = 0.9,
) -> Trajectory:
    """``reinforce.py`` in plain Python: a 5 x 8 softmax policy, an exponential-moving-
    average baseline, plain gradient ascent; samples drawn with ``random.random()``."""
    api.reset_time()
    logits = [[1e-3 * random.gauss(0.0, 1.0) for _ in channels] for _ in range(LAYERS)]
    baseline, steps = 0.0, 0
    out: Trajectory = []
    total = 0.0
    while total < budget:
        probs = [_softmax(row) for row in logits]
        choice = [_sample(p) for p in probs]
        arch = ":".join(str(channels[c]) for c in choice)
        acc, _, _, total = api.simulate_train_eval(arch, dataset, hp="12")
        out.append((arch, acc, total))
        steps += 1
        baseline = momentum * baseline + (1 - momentum) * acc
        advantage = acc - baseline / (1 - momentum**steps)
        for layer, c in enumerate(choice):
            for k in range(len(channels)):
                grad = (1.0 if k == c else 0.0) - probs[layer][k]
                logits[layer][k] += learning_rate * advantage * grad / 100.0
    return out


def _softmax(row: list[float]) -> list[float]:
    top = max(row)
    exps = [math.exp(v - top) for v in row]
    total = sum(exps)
    return [e / total for e in exps]


def _sample(probs: list[float]) -> int:
    u, acc = random.random(), 0.0
    for k, p in enumerate(probs):
        acc += p
        if u < acc:
            return k
    return len(probs) - 1


def successive_halving(
    api: Any, dataset: str, budget: float, channels: tuple[int, ...] = CHANNELS, n: int = 27,
    eta: int = 3, min_epochs: int = 1, max_epochs: int = 12,
) -> Trajectory:
    """A BOHB-like loop: brackets of successive halving over epochs of hp 12, each
    evaluation ``simulate_train_eval(arch, dataset, iepoch=epochs - 1)``, a retrain from
    scratch, until the budget is spent."""
    api.reset_time()
    out: Trajectory = []
    total = 0.0
    while total < budget:
        configs = [_random_arch(channels) for _ in range(n)]
        epochs = min_epochs
        while configs and total < budget:
            scored = []
            for arch in configs:
                acc, _, _, total = api.simulate_train_eval(arch, dataset, iepoch=epochs - 1,
                                                           hp="12")
                out.append((arch, acc, total))
                scored.append((acc, arch))
                if total >= budget:
                    break
            if epochs >= max_epochs:
                break
            scored.sort(key=lambda item: item[0], reverse=True)
            configs = [arch for _, arch in scored[: max(1, len(scored) // eta)]]
            epochs = min(max_epochs, epochs * eta)
    return out


LOOPS: dict[str, Callable[..., Trajectory]] = {
    "random": random_search,
    "regularized-evolution": regularized_evolution,
    "reinforce": reinforce,
    "successive-halving": successive_halving,
}
