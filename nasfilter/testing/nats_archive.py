"""Write any :class:`BenchmarkTable` as a NATS-Bench sss archive folder, in NATS's own format.

The real archive is not reachable from every machine; tests and benchmarks still need one of
full size that the real ``nats_bench`` API reads. :func:`write_nats_archive` takes one real
architecture record (a fixture file such as ``000000.pickle.pbz2``) as a template and, for
each architecture, substitutes the table's numbers where ``nats_bench`` reads them:

- search record (e.g. ``cifar10-valid``), hp 12, each seed: the last-epoch ``x-valid``
  accuracy, the per-epoch train and ``x-valid`` times;
- final record (e.g. ``cifar10``), hp 90: the last-epoch test accuracy (``ori-test`` for
  CIFAR-10, ``x-test`` otherwise);
- every kept record: ``flop`` (MMACs), ``params`` (millions), ``latency`` (s), the channels.

Accuracy curves are scaled so their last epoch hits the table's value and other times are
scaled by the same ratios, so the files look like real ones; numbers that ``convert`` does
not read are the template's and mean nothing. Only the datasets and hps asked for are kept,
so files stay small.

Every archive written here is marked: its meta file holds a ``nasfilter_written_by`` entry
(:data:`nasfilter.bench.convert.WRITTEN_MARK`, which ``nats_bench`` ignores) naming the source
table and whether it is synthetic, and ``nasfilter convert`` keeps that label, so the
SYNTHETIC surrogate never comes back from the NATS format looking like NATS-Bench data.
"""

from __future__ import annotations

import bz2
import os
import pickle
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.convert import (
    ARCHIVE_DIR_NAME,
    FINAL_HP,
    META_FILE_NAME,
    SEARCH_HP,
    WRITTEN_MARK,
    record_file_name,
)
from nasfilter.bench.spaces import SSS
from nasfilter.bench.spaces.sss import all_channels
from nasfilter.bench.table import BenchmarkTable
from nasfilter.version import __version__

_PICKLE_PROTOCOL = 4  # what nats_bench's pickle_save writes


def _read_pickle(path: Path) -> Any:
    with bz2.open(path, "rb") as fh:
        return pickle.load(fh)


def _write_pickle(obj: object, path: Path, compresslevel: int) -> None:
    with bz2.open(path, "wb", compresslevel=compresslevel) as fh:
        pickle.dump(obj, fh, protocol=_PICKLE_PROTOCOL)


def _test_set(final_record: str) -> str:
    """The eval set whose accuracy ``get_more_info`` reports as ``test-accuracy``."""
    return "ori-test" if final_record == "cifar10" else "x-test"


def _scaled_curve(curve: dict[str, float], name: str, epochs: int, target: float) -> dict:
    """A copy of an eval-accuracy dict whose ``name`` curve ends exactly at ``target``."""
    last_key = f"{name}@{epochs - 1}"
    last = float(curve[last_key])
    factor = target / last if last else 1.0
    out = {k: (v * factor if k.startswith(f"{name}@") else v) for k, v in curve.items()}
    out[last_key] = target
    return out


class _Template:
    """The template record, cut down to the datasets and hps that are kept."""

    def __init__(
        self, path: Path, table: BenchmarkTable, datasets: Sequence[str], hps: Sequence[str]
    ) -> None:
        ds = table.dataset
        needed = {ds.search_record, ds.final_record}
        allowed = needed | {ds.name}
        if not needed <= set(datasets) or not set(datasets) <= allowed:
            raise ValueError(
                f"datasets must hold {sorted(needed)} (and at most {sorted(allowed)}) for a "
                f"{ds.name} table, got {list(datasets)}"
            )
        if not {SEARCH_HP, FINAL_HP} <= set(hps):
            raise ValueError(f"hps must include {SEARCH_HP!r} and {FINAL_HP!r}, got {list(hps)}")
        try:
            record = _read_pickle(path)
            self.hp_states: dict[str, dict[str, Any]] = {}
            for hp in hps:
                state = record[hp]
                seeds = {d: list(state["dataset_seed"][d]) for d in datasets}
                self.hp_states[hp] = {
                    "state": state,
                    "dataset_seed": seeds,
                    "results": {
                        (d, s): state["all_results"][(d, s)] for d in datasets for s in seeds[d]
                    },
                }
            base = self.hp_states[SEARCH_HP]["results"]
            seed0 = self.hp_states[SEARCH_HP]["dataset_seed"][ds.search_record][0]
            first = (ds.search_record, seed0)
            train_times = list(base[first]["train_times"].values())
            epochs = base[first]["epochs"]
            valid_times = [base[first]["eval_times"][f"x-valid@{e}"] for e in range(epochs)]
        except (OSError, EOFError, pickle.UnpicklingError, KeyError, TypeError, IndexError) as exc:
            raise ValueError(
                f"{str(path)!r} is not a usable NATS-Bench sss architecture record with hps "
                f"{list(hps)} and datasets {list(datasets)}: {type(exc).__name__}: {exc}"
            ) from exc
        self.datasets = tuple(datasets)
        self.hps = tuple(hps)
        self.base_train = float(np.mean(train_times))
        self.base_valid = float(np.mean(valid_times))
        self.table = table

    def record(self, index: int, arch_str: str) -> OrderedDict[str, dict[str, Any]]:
        """Architecture ``index``'s record, with the table's numbers substituted."""
        t = self.table
        ds = t.dataset
        train_t = float(t.train_time[index])
        valid_t = float(t.valid_time[index])
        r_train = train_t / self.base_train
        r_valid = valid_t / self.base_valid
        cost = {
            "flop": float(t.macs[index]),
            "params": float(t.params[index]),
            "latency": [float(t.latency[index])],
        }
        out: OrderedDict[str, dict[str, Any]] = OrderedDict()
        for hp in self.hps:
            tpl = self.hp_states[hp]
            dataset_seed = {d: list(s) for d, s in tpl["dataset_seed"].items()}
            results: dict[tuple[str, int], dict[str, Any]] = {}
            for (d, seed), rc in tpl["results"].items():
                if hp == SEARCH_HP and d == ds.search_record:
                    continue  # one per table seed, below
                results[(d, seed)] = self._result(rc, arch_str, cost, r_train, r_valid)
                if hp == FINAL_HP and d == ds.final_record:
                    name, epochs = _test_set(d), rc["epochs"]
                    target = float(t.test_acc[index])
                    results[(d, seed)]["eval_acc1es"] = _scaled_curve(
                        rc["eval_acc1es"], name, epochs, target
                    )
            if hp == SEARCH_HP:
                seeds = self._search_results(index, arch_str, cost, train_t, valid_t, results)
                dataset_seed[ds.search_record] = seeds
            state = dict(tpl["state"])
            state.update(
                arch_index=index, arch_str=arch_str, all_results=results, dataset_seed=dataset_seed
            )
            out[hp] = state
        return out

    def _search_results(
        self,
        index: int,
        arch_str: str,
        cost: dict[str, Any],
        train_t: float,
        valid_t: float,
        results: dict[tuple[str, int], dict[str, Any]],
    ) -> list[int]:
        """Add the search record's hp-12 runs, one per table seed with a value; their seeds."""
        t = self.table
        d = t.dataset.search_record
        tpl = self.hp_states[SEARCH_HP]
        tpl_seeds = tpl["dataset_seed"][d]
        kept = []
        for slot, seed in enumerate(t.seeds):
            acc = float(t.valid_acc[index, slot])
            if np.isnan(acc):
                continue
            rc = tpl["results"][(d, seed if seed in tpl_seeds else tpl_seeds[0])]
            new = self._result(rc, arch_str, cost, 1.0, 1.0)
            epochs = rc["epochs"]
            new["seed"] = f"{seed:04d}"
            new["train_times"] = OrderedDict((e, train_t) for e in range(epochs))
            new["eval_times"] = {
                k: (valid_t if k.startswith("x-valid@") else v * valid_t / self.base_valid)
                for k, v in rc["eval_times"].items()
            }
            new["eval_acc1es"] = _scaled_curve(rc["eval_acc1es"], "x-valid", epochs, acc)
            results[(d, seed)] = new
            kept.append(seed)
        if not kept:
            raise ValueError(
                f"architecture {index} is present in the table but has no validation accuracy "
                f"for any seed {list(t.seeds)}"
            )
        return sorted(kept)

    @staticmethod
    def _result(
        rc: dict[str, Any], arch_str: str, cost: dict[str, Any], r_train: float, r_valid: float
    ) -> dict[str, Any]:
        """A shallow copy of one run (ResultsCount state) with cost, channels and times set."""
        new = dict(rc)
        new.update(cost)
        new["latency"] = list(cost["latency"])
        new["arch_config"] = dict(rc["arch_config"], channels=arch_str, arch_str=arch_str)
        if rc.get("train_times") is not None:
            new["train_times"] = OrderedDict((e, v * r_train) for e, v in rc["train_times"].items())
        new["eval_times"] = {k: v * r_valid for k, v in rc["eval_times"].items()}
        return new


def _indices(table: BenchmarkTable, indices: Iterable[int] | None) -> list[int]:
    if indices is None:
        return np.flatnonzero(table.present).tolist()
    out = sorted({int(i) for i in indices})
    bad = [i for i in out if not (0 <= i < SSS.size) or not table.present[i]]
    if bad:
        raise ValueError(
            f"indices {bad[:5]} are out of range or absent from table {table.label!r}; "
            "only present rows can be written"
        )
    return out


def written_mark(table: BenchmarkTable) -> dict[str, Any]:
    """The mark stored in the meta file of an archive written from ``table``."""
    prov = table.provenance
    return {
        "writer": "nasfilter.testing.write_nats_archive",
        "nasfilter_version": __version__,
        "synthetic": bool(prov.synthetic),
        "table_label": prov.label,
        "table_source": prov.source,
        "real": prov.real,  # a table mixing real and modelled numbers says which is which
        "modelled": prov.modelled,
        "observed": prov.observed,  # what the written hp-12 and hp-90 slots really hold
        "scored": prov.scored,
    }


def write_nats_archive(
    table: BenchmarkTable,
    folder: str | os.PathLike[str],
    template_record_path: str | os.PathLike[str],
    indices: Iterable[int] | None = None,
    datasets: Sequence[str] = ("cifar10-valid", "cifar10"),
    hps: Sequence[str] = (SEARCH_HP, FINAL_HP),
    compresslevel: int = 9,
    progress: bool = False,
) -> Path:
    """Write ``table``'s rows as a fast-mode NATS-Bench sss archive; return its folder.

    Creates ``folder/NATS-sss-v1_0-50262-simple/`` holding ``meta.pickle.pbz2`` (all 32768
    architecture strings) and one ``{index:06d}.pickle.pbz2`` per index in ``indices``
    (default: every present row), readable by ``nats_bench.create(path, 'sss',
    fast_mode=True)``. ``datasets`` are the archive records to keep: the table dataset's
    search and final records (``cifar10-valid`` and ``cifar10`` for CIFAR-10; ``cifar100``
    alone for CIFAR-100). Raises ValueError for a non-empty target folder, a template that
    lacks the datasets or hps, indices absent from the table, or a table of another space.
    """
    from tqdm import tqdm

    if table.space is not SSS:
        raise ValueError(
            f"write_nats_archive writes a NATS-Bench size-space (sss) archive; table "
            f"{table.label!r} is of the {table.space.name} space ({table.space.title})"
        )
    template = _Template(Path(template_record_path), table, datasets, hps)
    rows = _indices(table, indices)
    target = Path(folder) / ARCHIVE_DIR_NAME
    if target.exists() and any(target.iterdir()):
        raise ValueError(f"{str(target)!r} already exists and is not empty")
    target.mkdir(parents=True, exist_ok=True)
    names = [":".join(str(c) for c in row) for row in all_channels().tolist()]
    meta = {
        "meta_archs": names,
        "total_archs": SSS.size,
        "arch2infos": None,
        "evaluated_indexes": set(),
        WRITTEN_MARK: written_mark(table),
    }
    _write_pickle(meta, target / META_FILE_NAME, compresslevel)
    for index in tqdm(rows, desc="writing NATS archive", unit="arch", disable=not progress):
        record = template.record(index, names[index])
        _write_pickle(record, target / record_file_name(index), compresslevel)
    return target
