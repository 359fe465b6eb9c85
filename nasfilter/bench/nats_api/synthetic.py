"""nats_bench's record queries on the embedded SYNTHETIC surrogate, learning curves included.

Over the compact surrogate tables (:class:`~nasfilter.bench.nats_api.compact.CompactRecords`),
the search record's ``train`` and ``x-valid`` sets answer every epoch of every setting
(hp ``01``, ``12``, ``90``) and seed from :mod:`nasfilter.bench.surrogate_curves` (SYNTHETIC, not
NATS-Bench data). Per-epoch times are the table's, the same in every setting, so
``all_time`` is ``per-epoch x (iepoch + 1)``. Losses, training accuracy and test sets at
other epochs are not modelled: they raise :class:`NeedsFullBenchmarkError` as on a compact
table (the hp-90 test accuracy at the last epoch, seed mean, is the table's).
"""

from __future__ import annotations

from typing import Any

from nasfilter.bench.nats_api.compact import CompactRecords, NeedsFullBenchmarkError
from nasfilter.bench.nats_api.records import check_iepoch
from nasfilter.bench.surrogate_curves import CURVE_SEEDS, EPOCHS, HPS, valid_curves
from nasfilter.bench.table import BenchmarkTable


class SyntheticRecords(CompactRecords):
    """Compact surrogate tables plus their SYNTHETIC learning curves (module docstring)."""

    def hps(self) -> list[str]:
        return list(HPS)

    def epochs(self, hp: str) -> int:
        return EPOCHS[hp]

    def _search_table(self, dataset: str) -> BenchmarkTable | None:
        """The table whose search record is ``dataset`` (a known record), else None."""
        role, table = self.by_record[dataset]
        return table if role == "search" else None

    def seeds(self, index: int, hp: str, dataset: str) -> list[int]:
        self._table(dataset)  # KeyError for an unknown record
        if self._search_table(dataset) is None:
            return super().seeds(index, hp, dataset)  # the final record: not modelled
        return list(CURVE_SEEDS[hp])

    def has_valid(self, hp: str, dataset: str) -> bool:
        return self._search_table(dataset) is not None or super().has_valid(hp, dataset)

    def get_metrics(self, index: int, hp: str, dataset: str, setname: str, iepoch: Any = None,
                    is_random: Any = False) -> dict[str, Any]:
        self._table(dataset)  # KeyError for an unknown record
        table = self._search_table(dataset)
        name = "x-valid" if setname == "valid" else setname
        if table is None or name not in ("train", "x-valid") or isinstance(is_random, bool):
            if hp == "01" or (table is not None and (hp, dataset) not in self.held):
                raise NeedsFullBenchmarkError(
                    f"{setname} at hp {hp} on {dataset!r} (is_random={is_random!r}): the "
                    "SYNTHETIC curves model one seed's x-valid accuracy and times only "
                    "(is_random=SEED)"
                )
            return super().get_metrics(index, hp, dataset, setname, iepoch, is_random)
        epoch = check_iepoch(iepoch, EPOCHS[hp], hp)
        seeds = CURVE_SEEDS[hp]
        if is_random not in seeds:
            raise ValueError(f"can not find random seed ({is_random}) from {list(seeds)}")
        per = float(table.train_time[index] if name == "train" else table.valid_time[index])
        acc = None
        if name == "x-valid":
            curves = valid_curves(table.dataset.name, hp)
            acc = float(curves[index, seeds.index(is_random), epoch])
        return {"iepoch": epoch, "loss": None, "accuracy": acc, "cur_time": per,
                "all_time": per * (epoch + 1)}


def synthetic_records(tables: list[BenchmarkTable]) -> SyntheticRecords:
    """Records over the surrogate's three tables (one per dataset)."""
    names = [t.dataset.name for t in tables]
    if len(set(names)) != len(names):
        raise ValueError(f"one table per dataset, got {names}")
    return SyntheticRecords(tables)


__all__ = ["SyntheticRecords", "synthetic_records"]
