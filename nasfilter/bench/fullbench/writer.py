"""Convert a NATS-Bench archive (sss, or tss: ``NATS-tss-v1_0-3ffb9``) into a full-fidelity
benchmark folder (see :mod:`.layout`).

The archive's pickles are read directly, through the allow-list of
:mod:`nasfilter.bench.archive_pickle` (no ``nats_bench`` needed), one architecture at a time, and
written into memory-mapped arrays, so memory stays bounded whatever the archive's size.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.archive_pickle import load_archive_pickle
from nasfilter.bench.convert import (
    FOLDER,
    WRITTEN_MARK,
    _check_meta_archs,
    _nats_bench_version,
    _scan_folder,
    arch_strings,
    archive_checksum,
    archive_space,
    locate_archive,
    record_file_name,
)
from nasfilter.bench.fullbench import checks, codec
from nasfilter.bench.fullbench import layout as L
from nasfilter.bench.fullbench.index import check_replaceable, manifest
from nasfilter.bench.fullbench.staging import replace_folder, staging_folder
from nasfilter.version import __version__

_Record = dict[str, dict[str, Any]]  # hp -> ArchResults state dict


def _folder_records(path: Path, present: np.ndarray) -> Iterator[tuple[int, _Record, str]]:
    for index in np.flatnonzero(present).tolist():
        where = str(path / record_file_name(index))
        yield index, load_archive_pickle(where), where


def _open_archive(
    archive: str | os.PathLike[str],
) -> tuple[Path, list[Path], np.ndarray, tuple[Iterator[tuple[int, _Record, str]], Any]]:
    """(path, files, present, (records, meta)) for a folder or single-file archive."""
    path, fmt = locate_archive(archive)
    space = archive_space(path)
    if fmt == FOLDER:
        files, present = _scan_folder(path)
        meta = load_archive_pickle(files[0])
        _check_meta_archs(meta.get("meta_archs") if isinstance(meta, dict) else None, files[0],
                          space)
        return path, list(files), present, (_folder_records(path, present), meta)
    data = load_archive_pickle(path)
    if not isinstance(data, dict) or not isinstance(data.get("arch2infos"), dict):
        raise ValueError(
            f"{str(path)!r} is not a NATS-Bench {space.name} archive file: expected a dict with "
            "'meta_archs', 'arch2infos' and 'evaluated_indexes'"
        )
    _check_meta_archs(data.get("meta_archs"), path, space)
    infos = data["arch2infos"]
    present = np.zeros(space.size, dtype=bool)
    for index in infos:
        if not (isinstance(index, int) and 0 <= index < space.size):
            raise ValueError(f"{str(path)!r} holds an invalid architecture index {index!r}")
        present[index] = True
    records = ((i, infos[i], f"{path}[{i}]") for i in sorted(infos))
    return path, [path], present, (records, data)


class _Runs:
    """One record's runs being written (raw float64 rows appended to staging files)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.rows: list[int] = []  # the architecture row of each run
        self.seeds: list[int] = []
        self.costs: list[list[float]] = []
        self.kinds: list[int] = []
        self.files: dict[str, Any] = {}

    def append(self, name: str, values: np.ndarray) -> None:
        fh = self.files.get(name)
        if fh is None:
            fh = (self.folder / f"{name}.raw").open("wb")
            self.files[name] = fh
        fh.write(values.tobytes())


class _Sink:
    """The runs being written, per setting and record; architectures present get rows
    (``rows`` maps index -> row)."""

    def __init__(self, root: Path, present: np.ndarray, names: list[str]) -> None:
        self.root = root
        self.names = names  # every architecture's arch_str, in index order
        self.rows = np.full(present.size, -1, dtype=np.int32)
        self.rows[present] = np.arange(int(present.sum()), dtype=np.int32)
        self.n_rows = int(present.sum())
        self.runs: dict[tuple[str, str], _Runs] = {}
        self.layout: dict[str, Any] = {"hps": {}, "order": [], "genotype": None}

    def setting(self, hp: str) -> dict[str, Any]:
        """This setting's layout entry (created from the first record that has it)."""
        entry = self.layout["hps"].get(hp)
        if entry is None:
            entry = {"epochs": None, "records": {}}
            self.layout["hps"][hp] = entry
            self.layout["order"].append(hp)
        return entry

    def run(self, index: int, hp: str, ds: str, seed: int, rc: dict[str, Any], where: str) -> None:
        """Write one run (a ResultsCount state dict) into row ``index``."""
        entry = self.layout["hps"][hp]
        epochs = checks.epochs(rc["epochs"], f"{where}: hp {hp} {ds} seed {seed}")
        if entry["epochs"] is None:
            entry["epochs"] = epochs
        if epochs != entry["epochs"]:
            raise ValueError(
                f"{where}: hp {hp} on {ds} seed {seed} has {epochs} epochs, where the records "
                f"before it have {entry['epochs']}; a full benchmark needs one epoch count per "
                "setting"
            )
        rec = entry["records"].setdefault(
            ds, {"seeds": [], "eval_sets": list(rc["eval_names"]), "class_num": None}
        )
        if list(rc["eval_names"]) != rec["eval_sets"]:
            raise ValueError(
                f"{where}: hp {hp} {ds} seed {seed} has evaluation sets "
                f"{rc['eval_names']}, other records {rec['eval_sets']}"
            )
        self._config(rec, rc, where)
        if seed not in rec["seeds"]:
            rec["seeds"].append(seed)
        runs = self.runs.get((hp, ds))
        if runs is None:
            runs = self.runs[(hp, ds)] = _Runs(L.record_dir(self.root, hp, ds))
        self._curves(runs, hp, ds, seed, rc, rec["eval_sets"], epochs, where)
        self._costs(runs, rc, f"{where}: hp {hp} {ds} seed {seed}")
        runs.rows.append(int(self.rows[index]))
        runs.seeds.append(seed)

    def _config(self, rec: dict[str, Any], rc: dict[str, Any], where: str) -> None:
        config = rc["arch_config"]
        if rec["class_num"] is None:
            rec["class_num"] = config["class_num"]
        if "genotype" not in config:  # tss: a cell of C channels, N cells per stage
            shape = {"C": config["channel"], "N": config["num_cells"]}
            self.layout.setdefault("cell", shape)
            self.layout["config_name"] = "infer.tiny"
            if (config["class_num"], shape) != (rec["class_num"], self.layout["cell"]):
                raise ValueError(f"{where}: the network configuration differs between records")
            return
        if self.layout["genotype"] is None:
            self.layout["genotype"] = config["genotype"]
            self.layout["config_name"] = config["name"]
        if (config["class_num"], config["genotype"]) != (rec["class_num"], self.layout["genotype"]):
            raise ValueError(f"{where}: the network configuration differs between records")

    @staticmethod
    def _curves(
        runs: _Runs, hp: str, ds: str, seed: int, rc: dict[str, Any], sets: list[str],
        epochs: int, where: str,
    ) -> None:
        if rc.get("train_times") is None or not rc.get("eval_times"):
            raise ValueError(f"{where}: hp {hp} {ds} seed {seed} has no recorded times")
        epoch_range = range(epochs)
        run = f"{where}: hp {hp} {ds} seed {seed}"
        for metric, field in (("acc", "train_acc1es"), ("loss", "train_losses"),
                              ("time", "train_times")):
            values = rc[field]
            runs.append(f"{L.TRAIN}.{metric}",
                        _checked([values[e] for e in epoch_range], run, field, metric))
        for name in sets:
            keys = [f"{name}@{e}" for e in epoch_range]
            for metric, field in (("acc", "eval_acc1es"), ("loss", "eval_losses"),
                                  ("time", "eval_times")):
                runs.append(f"{name}.{metric}",
                            _sparse(rc[field], keys, run, f"{field} {name}", metric))

    @staticmethod
    def _costs(runs: _Runs, rc: dict[str, Any], where: str) -> None:
        values = {"flop": rc["flop"], "params": rc["params"],
                  "latency": checks.latency(rc["latency"], where)}
        runs.costs.append([checks.number(values[f], where, f) for f in L.COST_FIELDS])
        runs.kinds.append(sum(L.KIND_BITS[f] for f in L.COST_FIELDS
                              if isinstance(values[f], np.floating)))


def _checked(values: list[Any], where: str, field: str, metric: str) -> np.ndarray:
    """One curve as float64, its values checked (:mod:`.checks`): accuracies in 0..100 %,
    times finite and >= 0, losses numbers."""
    if metric == "acc":
        return checks.numbers(values, where, field, *checks.ACC_RANGE)
    if metric == "time":
        return checks.numbers(values, where, field, 0.0)
    return checks.numbers(values, where, field, finite=False)


def _sparse(values: dict[str, Any], keys: list[str], where: str, field: str,
            metric: str) -> np.ndarray:
    """One evaluation curve; an epoch the archive does not hold (NATS-Bench's tss archive
    evaluates some sets at the last epoch only) is NaN, read back as nats_bench's KeyError."""
    held = [k in values for k in keys]
    if all(held):
        return _checked([values[k] for k in keys], where, field, metric)
    if not any(held):
        raise KeyError(keys[-1])
    out = np.full(len(keys), np.nan)
    where_held = np.flatnonzero(held)
    out[where_held] = _checked([values[keys[i]] for i in where_held], where, field, metric)
    return out


def _read_record(sink: _Sink, index: int, record: _Record, where: str, seen: dict) -> None:
    """Write every run of one architecture's record, checking the orders nats_bench keeps."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: not a NATS-Bench architecture record")
    expected = sink.names[index]
    for hp, state in record.items():
        sink.setting(hp)
        checks.architecture(state, index, expected, f"{where} (hp {hp})")
        ds_seeds = state["dataset_seed"]
        order = seen.setdefault(hp, list(ds_seeds))
        if list(ds_seeds) != order:
            raise ValueError(f"{where}: hp {hp} lists records {list(ds_seeds)}, others {order}")
        for ds, seeds in ds_seeds.items():
            for seed in checks.seeds(seeds, f"{where}: hp {hp} {ds} seeds"):
                sink.run(index, hp, ds, seed, state["all_results"][(ds, seed)], where)
    hps = list(record)
    order = seen.setdefault("__hps__", hps)
    if hps != order:
        raise ValueError(f"{where}: settings {hps}, other records {order}")


def _write_runs(runs: _Runs, n_rows: int, epochs: int) -> dict[str, Any]:
    """Close one record's staging files: offsets, seeds, costs, and every curve encoded
    (see :mod:`.codec`); return each curve's description."""
    rows = np.asarray(runs.rows, dtype=np.int64)
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=offsets[1:])
    folder = runs.folder
    np.save(folder / L.OFFSETS_FILE, offsets)
    np.save(folder / L.RUN_SEEDS_FILE, np.asarray(runs.seeds, dtype=np.int64))
    np.save(folder / f"{L.COST_STEM}.npy", np.asarray(runs.costs, dtype=np.float64))
    np.save(folder / f"{L.KINDS_STEM}.npy", np.asarray(runs.kinds, dtype=np.uint8))
    specs: dict[str, Any] = {}
    for name, fh in runs.files.items():
        fh.close()
        raw_file = folder / f"{name}.raw"
        raw = np.fromfile(raw_file, dtype=np.float64).reshape(len(runs.rows), epochs)
        set_name, metric = name.split(".")
        stored, specs[name] = codec.encode(raw, L.is_float32(set_name, metric))
        np.save(folder / f"{name}.npy", stored)
        raw_file.unlink()
    return specs


def _finish(sink: _Sink, seen: dict[str, list[str]], present: np.ndarray) -> dict[str, Any]:
    """Write every record's arrays and present.npy, rows.npy; return the index's layout."""
    layout = sink.layout
    layout["arrays"] = {}
    for hp in layout["order"]:
        entry = layout["hps"][hp]
        entry["dataset_order"] = seen[hp]
        for ds, rec in entry["records"].items():
            rec["seeds"] = sorted(rec["seeds"])
            runs = sink.runs.pop((hp, ds))
            layout["arrays"][f"{hp}/{ds}"] = _write_runs(runs, sink.n_rows, entry["epochs"])
    np.save(sink.root / L.PRESENT_FILE, present)
    np.save(sink.root / L.ROWS_FILE, sink.rows)
    return layout


def _provenance(path: Path, files: list[Path], meta: Any) -> dict[str, Any]:
    """Where the benchmark comes from; an archive nasfilter wrote is marked SYNTHETIC."""
    mark = meta.get(WRITTEN_MARK) if isinstance(meta, dict) else None
    return {
        "synthetic": bool(mark.get("synthetic", True)) if isinstance(mark, dict)
        else mark is not None,
        "source": str(path), "checksum": archive_checksum(files),
        "written_by": mark, "nasfilter_version": __version__,
        "nats_bench_version": _nats_bench_version(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def convert_full(
    archive: str | os.PathLike[str],
    output: str | os.PathLike[str],
    allow_partial: bool = False,
    progress: bool = True,
    replace: bool = False,
) -> Path:
    """Convert every record, setting, seed and epoch of a NATS-Bench sss or tss archive into the
    folder ``output`` (see :mod:`.layout`); return it. The folder is written beside
    ``output`` under a hidden name and renamed into place when whole (see :mod:`.staging`);
    its index records every array's shape, dtype and sha256 as written.

    Raises ValueError for a path that is not an sss or tss archive, a crafted, damaged or
    unreadable file (named), records whose layout or values are wrong (named), missing
    architectures without ``allow_partial``, or an ``output`` that exists (unless
    ``replace`` and it is provably a nasfilter benchmark folder, which is then replaced)."""
    target = Path(output)
    if target.exists() or target.is_symlink():
        if not replace:
            raise ValueError(f"output {str(target)!r} already exists; remove it or choose another")
        check_replaceable(target, "output")
    path, files, present, (records, meta) = _open_archive(archive)
    space, n_archs = archive_space(path), int(present.size)
    n_present = int(present.sum())
    if n_present == 0:
        raise ValueError(f"{str(path)!r} holds no architecture records")
    if n_present < n_archs and not allow_partial:
        raise ValueError(
            f"{n_archs - n_present} of {n_archs} architectures are missing from {str(path)!r} "
            f"({n_present} present). Use the complete archive, or pass allow_partial=True / "
            "--allow-partial to convert the architectures present."
        )
    with staging_folder(target) as staging:
        layout = _write_all(staging, path, records, present, progress, arch_strings(space))
        index = {
            "format": L.FORMAT_NAME, "version": L.FORMAT_VERSION, "n_archs": n_archs,
            "space": space.name, "n_present": n_present, "layout": layout,
            "provenance": _provenance(path, files, meta), "files": manifest(staging),
        }
        (staging / L.INDEX_FILE).write_text(json.dumps(index, indent=1, default=repr))
        if target.exists() or target.is_symlink():
            check_replaceable(target, "output")  # it may have changed while converting
        replace_folder(staging, target)
    return target


def _write_all(staging: Path, path: Path, records: Iterator[tuple[int, _Record, str]],
               present: np.ndarray, progress: bool, names: list[str]) -> dict[str, Any]:
    """Write every record's runs into ``staging``; return the index's layout."""
    from tqdm import tqdm

    sink, seen = _Sink(staging, present, names), dict[str, list[str]]()
    bar = tqdm(records, total=int(present.sum()), desc=f"converting {path.name}", unit="arch",
               disable=not progress, dynamic_ncols=True)
    try:
        for index, record, where in bar:
            try:
                _read_record(sink, index, record, where, seen)
            except (KeyError, TypeError, AttributeError, IndexError) as exc:
                raise ValueError(
                    f"{where}: not a readable NATS-Bench record "
                    f"({type(exc).__name__}: {exc})"
                ) from exc
    finally:
        bar.close()
    return _finish(sink, seen, present)
