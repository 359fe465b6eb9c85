"""Derive the simulator's compact per-dataset table from a full benchmark.

The columns are what ``nasfilter convert --dataset`` reads through the nats_bench API
(:mod:`nasfilter.bench.convert`), computed with the same nats_bench semantics by
:class:`~nasfilter.bench.nats_api.api.NATSsize`, so both routes give the same numbers, bit for bit.
"""

from __future__ import annotations

import math
import os
from datetime import datetime, timezone
from typing import Any

import numpy as np

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.fullbench.bench import FullBenchmark
from nasfilter.bench.nats_api.api import NATSsize
from nasfilter.bench.nats_api.records import FullRecords
from nasfilter.bench.spaces import SSS
from nasfilter.bench.table import BenchmarkTable, Provenance

_COLUMNS = ("test_acc", "train_time", "valid_time", "latency", "params", "macs")


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def compact_table(bench: FullBenchmark | str | os.PathLike[str], dataset: str) -> BenchmarkTable:
    """``dataset``'s table (hp-12 valid accuracy per seed, hp-90 test accuracy, per-epoch
    times, costs) from a full benchmark folder or an opened :class:`FullBenchmark`."""
    full = bench if isinstance(bench, FullBenchmark) else FullBenchmark.open(bench)
    if full.space != "sss":
        raise ValueError(
            f"{str(full.root)!r} is a converted {full.space} benchmark; the simulator's tables "
            "of a converted folder are of the size space (sss). Query it with "
            f"nasfilter.bench.nats_api.create({str(full.root)!r}, '{full.space}'), or search the "
            "shipped real tss tables: --space tss"
        )
    ds = get_dataset(dataset)
    api = NATSsize(FullRecords(full), full.root.name, fast_mode=True, verbose=False)
    seeds = sorted(set(full.record("12", ds.search_record)["seeds"]))
    valid = np.full((SSS.size, len(seeds)), np.nan)
    cols = {name: np.full(SSS.size, np.nan) for name in _COLUMNS}
    present = np.asarray(full.present, dtype=bool).copy()
    for index in np.flatnonzero(present).tolist():
        times = api.get_more_info(index, ds.search_record, hp="12", is_random=False)
        for seed in full.seeds(index, "12", ds.search_record):
            info = api.get_more_info(index, ds.search_record, hp="12", is_random=seed)
            valid[index, seeds.index(seed)] = _number(info["valid-accuracy"])
        final = api.get_more_info(index, ds.final_record, hp="90", is_random=False)
        cost = api.get_cost_info(index, ds.name, hp="12")
        cols["test_acc"][index] = _number(final["test-accuracy"])
        cols["train_time"][index] = _number(times["train-per-time"])
        cols["valid_time"][index] = _number(times["valid-per-time"])
        cols["latency"][index] = _number(cost["latency"])
        cols["macs"][index] = _number(cost["flops"])
        cols["params"][index] = _number(cost["params"])
    prov = full.provenance
    provenance = Provenance(
        synthetic=bool(prov.get("synthetic")),
        source=str(prov.get("source")),
        description=f"derived from the full benchmark {full.root} for {ds.name}",
        checksum=prov.get("checksum"),
        nats_bench_version=prov.get("nats_bench_version"),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        extra={
            "n_present": int(present.sum()),
            "full_benchmark": str(full.root),
            # what wrote the archive, where nasfilter did: the label names it (not the surrogate)
            **({"written_by": prov["written_by"]} if "written_by" in prov else {}),
        },
    )
    return BenchmarkTable(dataset=ds, seeds=tuple(seeds), valid_acc=valid, present=present,
                          provenance=provenance, **cols)
