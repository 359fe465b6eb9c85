"""``query_meta_info_by_index``'s and ``query_by_index``'s answers: nats_bench's
``ArchResults`` and ``ResultsCount`` queries of one architecture at one training setting,
read from the records. No weights ship (NATS-Bench's ``-simple`` archive, the one
``nasfilter convert`` reads, holds none either), so ``get_net_param`` raises
NotImplementedError saying so.
"""

from __future__ import annotations

from typing import Any

NO_WEIGHTS = (
    "no trained weights ship with nasfilter: a converted benchmark keeps NATS-Bench's "
    "accuracies, times and costs only (the '-simple' archive it is converted from holds no "
    "weights either; nats_bench answers None there). Train the network from "
    "get_net_config(index, dataset) to get weights"
)


class RunInfo:
    """One run (record, seed) of an architecture: nats_bench's ``ResultsCount`` queries."""

    def __init__(self, records: Any, index: int, hp: str, dataset: str, seed: int) -> None:
        self._records, self.arch_index, self.hp = records, index, hp
        self.name, self.seed = dataset, seed

    def get_total_epoch(self) -> int:
        return int(self._records.epochs(self.hp))

    def get_train(self, iepoch: Any = None) -> dict[str, Any]:
        """Training loss, accuracy and times after epoch ``iepoch`` (None: the last)."""
        return dict(self._records.get_metrics(self.arch_index, self.hp, self.name, "train",
                                              iepoch, self.seed))

    def get_eval(self, name: str, iepoch: Any = None) -> dict[str, Any]:
        """Loss, accuracy and times on evaluation set ``name`` after epoch ``iepoch``."""
        return dict(self._records.get_metrics(self.arch_index, self.hp, self.name, name,
                                              iepoch, self.seed))

    def get_net_param(self, clone: bool = False) -> Any:
        raise NotImplementedError(NO_WEIGHTS)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.name}, arch-index={self.arch_index}, "
                f"hp={self.hp}, seed={self.seed:04d})")


class ArchInfo:
    """One architecture at one setting: nats_bench's ``ArchResults`` queries."""

    def __init__(self, records: Any, index: int, hp: str, arch_str: str) -> None:
        self._records, self.arch_index, self.hp, self.arch_str = records, index, hp, arch_str

    def arch_idx_str(self) -> str:
        return f"{self.arch_index:06d}"

    def get_dataset_names(self) -> list[str]:
        return list(self._records.dataset_names(self.hp))

    def get_dataset_seeds(self, dataset: str) -> list[int]:
        return list(self._records.seeds(self.arch_index, self.hp, dataset))

    def get_total_epoch(self, dataset: str | None = None) -> int:
        return int(self._records.epochs(self.hp))

    def get_compute_costs(self, dataset: str) -> dict[str, Any]:
        return dict(self._records.get_compute_costs(self.arch_index, self.hp, dataset))

    def get_latency(self, dataset: str) -> Any:
        return self._records.latency(self.arch_index, self.hp, dataset)

    def get_metrics(self, dataset: str, setname: str, iepoch: Any = None,
                    is_random: Any = False) -> dict[str, Any]:
        return dict(self._records.get_metrics(self.arch_index, self.hp, dataset, setname,
                                              iepoch, is_random))

    def query(self, dataset: str, seed: int | None = None) -> Any:
        """{seed: RunInfo} of ``dataset`` (``seed`` None), else that seed's RunInfo."""
        seeds = self.get_dataset_seeds(dataset)
        if seed is None:
            return {s: RunInfo(self._records, self.arch_index, self.hp, dataset, s)
                    for s in seeds}
        if seed not in seeds:
            raise KeyError(f"({dataset!r}, {seed!r}): the seeds of {dataset!r} at hp "
                           f"{self.hp} are {seeds}")
        return RunInfo(self._records, self.arch_index, self.hp, dataset, seed)

    def get_net_param(self, dataset: str, seed: int | None = None) -> Any:
        raise NotImplementedError(NO_WEIGHTS)

    def clear_params(self) -> None:
        """Nothing to clear: no weights are kept."""

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(arch-index={self.arch_index}, arch={self.arch_str}, "
                f"hp={self.hp})")


__all__ = ["NO_WEIGHTS", "ArchInfo", "RunInfo"]
