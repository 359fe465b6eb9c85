"""The three datasets of NATS-Bench, with what the simulator needs to know about each."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Dataset:
    """A NATS-Bench dataset.

    ``search_record`` is the archive record that searches see (``simulate_train_eval`` reads
    ``cifar10-valid`` for CIFAR-10); ``final_record`` holds the hp-90 test accuracy reported
    in papers.
    """

    name: str
    input_size: int  # pixels per side
    num_classes: int
    search_record: str
    final_record: str
    search_budget: float  # seconds, the NATS-Bench default for sss (docs/facts.md §2)


DATASETS: dict[str, Dataset] = {
    "cifar10": Dataset("cifar10", 32, 10, "cifar10-valid", "cifar10", 20_000.0),
    "cifar100": Dataset("cifar100", 32, 100, "cifar100", "cifar100", 40_000.0),
    "ImageNet16-120": Dataset(
        "ImageNet16-120", 16, 120, "ImageNet16-120", "ImageNet16-120", 60_000.0
    ),
}

_ALIASES = {name.lower(): name for name in DATASETS} | {"imagenet": "ImageNet16-120"}


def get_dataset(name: str | Dataset) -> Dataset:
    """Look up a dataset by name (case-insensitive); raise ValueError listing the known ones."""
    if isinstance(name, Dataset):
        return name
    if isinstance(name, str) and name.strip().lower() in _ALIASES:
        return DATASETS[_ALIASES[name.strip().lower()]]
    raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(DATASETS)}")
