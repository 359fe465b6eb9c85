"""Write full-fidelity NATS-Bench sss archives for tests and benchmarks (NOT NATS-Bench data).

:func:`write_varied_archive` takes one real architecture record (a fixture file such as
``000284.pickle.pbz2``) as a template and writes, for each requested index, a record in
NATS's own format holding every setting (hp 01, 12, 90) and record of the template, with

- learning curves that differ per architecture, epoch and seed (the template's curves times
  random factors), test accuracies of 10,000 images rounded to 0.01 as real ones are;
- uneven seed lists: each setting and record keeps a random non-empty subset of the seeds
  (hp 12 draws from 777/888/999; hp 01 and 90 sometimes gain 888);
- per-epoch times constant within a run (as in real archives) or, with
  ``constant_times=False``, varying per epoch;
- FLOPs, parameters and latency per architecture (numpy float64 where the archive has them).

``keep`` (such as :data:`CIFAR10_SEARCH`) writes only some settings, records and evaluation
sets, and ``even_seeds`` every template seed on every record (hp 12: 777, 888, 999), as the
real archive has them: such records are still read by ``nats_bench`` (its queries of the
records kept answer as for a whole record), and the whole space is written and converted in
minutes instead of most of an hour (``bz2`` and pickling cost by the byte).
:func:`search_benchmark` writes and converts such an archive of all 32768 architectures once,
into a content-addressed cache folder.

Every number is drawn from the ``numpy.random.Generator`` passed in. The meta file carries
the ``nasfilter_written_by`` mark, so conversions of these archives are labelled SYNTHETIC.
"""

from __future__ import annotations

import bz2
import hashlib
import os
import pickle
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.archive_pickle import load_archive_pickle
from nasfilter.bench.convert import ARCHIVE_DIR_NAME, META_FILE_NAME, WRITTEN_MARK, record_file_name
from nasfilter.bench.fullbench import convert_full
from nasfilter.bench.spaces import SSS
from nasfilter.bench.spaces.sss import all_channels

_EXTRA_SEEDS = {"12": (777, 888, 999), "01": (777, 888), "90": (777, 888)}

Keep = Mapping[str, Mapping[str, tuple[str, ...]]]  # hp -> record -> evaluation sets
# What a CIFAR-10 search and its scoring read: hp-12 curves of cifar10-valid (x-valid), the
# hp-12 costs of cifar10 (get_cost_info) and the hp-90 test accuracy of cifar10 (ori-test).
CIFAR10_SEARCH: Keep = {
    "12": {"cifar10-valid": ("x-valid",), "cifar10": ("ori-test",)},
    "90": {"cifar10": ("ori-test",)},
}


def _seed_subset(hp: str, rng: np.random.Generator) -> list[int]:
    pool = _EXTRA_SEEDS.get(hp, (777,))
    if hp == "12":
        keep = rng.random(len(pool)) < 0.75
        if not keep.any():
            keep[rng.integers(len(pool))] = True
        return [s for s, k in zip(pool, keep, strict=True) if k]
    return [777, 888] if rng.random() < 0.2 else [777]


def _run(
    rc: dict[str, Any], seed: int, arch_str: str, cost: dict[str, Any], speed: float,
    rng: np.random.Generator, constant_times: bool, eval_names: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """A varied copy of one template run (ResultsCount state dict), with the evaluation sets
    ``eval_names`` (None: the template's)."""
    epochs = rc["epochs"]
    names = list(rc["eval_names"]) if eval_names is None else list(eval_names)
    new = dict(rc, eval_names=names)
    new["seed"] = f"{seed:04d}"
    new["arch_config"] = dict(rc["arch_config"], channels=arch_str, arch_str=arch_str)
    new.update(flop=cost["flop"], params=cost["params"], latency=[cost["latency"]])
    noise = (1.0 + 0.02 * rng.standard_normal(epochs)).tolist()  # Python floats, as archives
    new["train_acc1es"] = {e: min(100.0, rc["train_acc1es"][e] * noise[e]) for e in range(epochs)}
    new["train_losses"] = {e: rc["train_losses"][e] / noise[e] for e in range(epochs)}
    per_epoch = float(rc["train_times"][0]) * speed
    steps = [1.0] * epochs if constant_times else (1.0 + 0.05 * rng.random(epochs)).tolist()
    new["train_times"] = OrderedDict((e, per_epoch * steps[e]) for e in range(epochs))
    accs, losses, times = {}, {}, {}
    for name in names:
        eval_noise = (1.0 + 0.02 * rng.standard_normal(epochs)).tolist()
        for e in range(epochs):
            key = f"{name}@{e}"
            acc = min(100.0, rc["eval_acc1es"][key] * eval_noise[e])
            accs[key] = round(acc, 2) if name == "ori-test" else acc
            losses[key] = rc["eval_losses"][key] / eval_noise[e]
            times[key] = float(rc["eval_times"][key]) * speed * steps[e]
    new.update(eval_acc1es=accs, eval_losses=losses, eval_times=times)
    return new


def _record(
    template: dict[str, dict[str, Any]], index: int, arch_str: str, rng: np.random.Generator,
    constant_times: bool, keep: Keep | None = None, even_seeds: bool = False,
) -> OrderedDict[str, dict[str, Any]]:
    size = 1.0 + rng.random()
    speed = 0.5 + rng.random()
    out: OrderedDict[str, dict[str, Any]] = OrderedDict()
    for hp, state in template.items():
        if keep is not None and hp not in keep:
            continue
        all_results: dict[tuple[str, int], dict[str, Any]] = {}
        dataset_seed: dict[str, list[int]] = {}
        for ds, tpl_seeds in state["dataset_seed"].items():
            if keep is not None and ds not in keep[hp]:
                continue
            base = state["all_results"][(ds, tpl_seeds[0])]
            cost = {
                "flop": float(base["flop"]) * size,
                "params": np.float64(base["params"] * size),
                "latency": np.float64(base["latency"][0] * (0.8 + 0.4 * rng.random())),
            }
            seeds = sorted(tpl_seeds) if even_seeds else _seed_subset(hp, rng)
            dataset_seed[ds] = seeds
            sets = None if keep is None else keep[hp][ds]
            for seed in seeds:
                rc = state["all_results"].get((ds, seed), base)
                all_results[(ds, seed)] = _run(rc, seed, arch_str, cost, speed, rng,
                                               constant_times, sets)
        new_state = dict(state)
        new_state.update(arch_index=index, arch_str=arch_str, all_results=all_results,
                         dataset_seed=dataset_seed)
        out[hp] = new_state
    return out


def _check_keep(template: dict[str, dict[str, Any]], keep: Keep) -> None:
    """ValueError unless every setting, record and evaluation set of ``keep`` is the
    template's (naming what the template holds)."""
    for hp, records in keep.items():
        if hp not in template:
            raise ValueError(f"keep: setting hp {hp!r} is not in the template; it has "
                             f"{list(template)}")
        state = template[hp]
        for ds, sets in records.items():
            seeds = state["dataset_seed"].get(ds)
            if not seeds:
                raise ValueError(f"keep: record {ds!r} is not in the template's hp {hp}; it "
                                 f"has {list(state['dataset_seed'])}")
            have = list(state["all_results"][(ds, seeds[0])]["eval_names"])
            if not sets or not set(sets) <= set(have):
                raise ValueError(f"keep: evaluation sets {list(sets)} of hp {hp} {ds!r} must "
                                 f"be a non-empty subset of the template's {have}")


def _write_pickle(obj: object, path: Path, compresslevel: int) -> None:
    with bz2.open(path, "wb", compresslevel=compresslevel) as fh:
        pickle.dump(obj, fh, protocol=4)


def write_varied_archive(
    folder: str | os.PathLike[str],
    template_record_path: str | os.PathLike[str],
    indices: Iterable[int],
    rng: np.random.Generator,
    constant_times: bool = True,
    compresslevel: int = 9,
    keep: Keep | None = None,
    even_seeds: bool = False,
) -> Path:
    """Write a fast-mode archive ``folder/NATS-sss-v1_0-50262-simple`` holding varied
    records for ``indices`` (see the module docstring); return its path.

    ``keep`` maps each setting to write to its records and their evaluation sets (None:
    everything the template holds; ValueError naming what the template has if it lacks
    one); ``even_seeds`` writes every template seed of a setting on every record."""
    template = load_archive_pickle(template_record_path)
    if keep is not None:
        _check_keep(template, keep)
    target = Path(folder) / ARCHIVE_DIR_NAME
    if target.exists() and any(target.iterdir()):
        raise ValueError(f"{str(target)!r} already exists and is not empty")
    target.mkdir(parents=True, exist_ok=True)
    names = [":".join(str(c) for c in row) for row in all_channels().tolist()]
    meta = {
        "meta_archs": names, "total_archs": SSS.size, "arch2infos": None,
        "evaluated_indexes": set(),
        WRITTEN_MARK: {"writer": "nasfilter.testing.write_varied_archive", "synthetic": True,
                       "table_label": "varied template records (SYNTHETIC)"},
    }
    _write_pickle(meta, target / META_FILE_NAME, compresslevel)
    for index in sorted({int(i) for i in indices}):
        if not 0 <= index < SSS.size:
            raise ValueError(f"index {index} is outside 0..{SSS.size - 1}")
        record = _record(template, index, names[index], rng, constant_times, keep, even_seeds)
        _write_pickle(record, target / record_file_name(index), compresslevel)
    return target


# Bumped whenever the output for the same inputs changes, the archive writer's or convert_full's
# (the cache key holds it).
WRITER_VERSION = 3


def search_benchmark(
    cache_dir: str | os.PathLike[str], template_record_path: str | os.PathLike[str],
    seed: int = 18, keep_archive: bool = False,
) -> Path:
    """A full-fidelity benchmark of all 32768 architectures converted from an archive that
    :func:`write_varied_archive` writes with ``keep=CIFAR10_SEARCH, even_seeds=True``
    (SYNTHETIC, NOT NATS-Bench data), from ``default_rng(seed)``; kept in the
    content-addressed folder ``cache_dir/nats-full-search-KEY`` (KEY: the template's bytes,
    the seed and :data:`WRITER_VERSION`), so it is written once (minutes). Returns the
    benchmark folder, ``.../full``; the archive stays beside it, in ``.../archive``, with
    ``keep_archive``."""
    digest = hashlib.sha256(Path(template_record_path).read_bytes())
    digest.update(f"{seed};{WRITER_VERSION};{sorted(CIFAR10_SEARCH.items())}".encode())
    home = Path(cache_dir) / f"nats-full-search-{digest.hexdigest()[:16]}"
    full = home / "full"
    if full.is_dir() and (not keep_archive or (home / "archive" / ARCHIVE_DIR_NAME).is_dir()):
        return full
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".nats-full-search-", dir=cache_dir))
    try:
        archive = write_varied_archive(staging / "archive", template_record_path,
                                       range(SSS.size), np.random.default_rng(seed),
                                       compresslevel=1, keep=CIFAR10_SEARCH, even_seeds=True)
        convert_full(archive, staging / "full", progress=False)
        if not keep_archive:
            shutil.rmtree(staging / "archive")
        shutil.rmtree(home, ignore_errors=True)
        os.replace(staging, home)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return full
