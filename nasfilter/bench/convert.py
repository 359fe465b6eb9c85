"""Convert a user's NATS-Bench sss archive into a :class:`BenchmarkTable`, once.

The archive is read through the real ``nats_bench`` API (``pip install nasfilter[nats]``),
so the table holds exactly what the API returns (docs/facts.md §2):

- ``valid_acc[i, s]``: hp-12 ``valid-accuracy`` of seed ``s`` on the dataset's search record
  (``cifar10-valid`` for CIFAR-10), what ``simulate_train_eval`` returns for that seed;
- ``test_acc[i]``: hp-90 ``test-accuracy`` on the final record, averaged over seeds;
- ``train_time``/``valid_time``: hp-12 ``train-per-time``/``valid-per-time`` on the search
  record (seconds per epoch);
- ``latency``: ``get_latency(i, dataset)`` (seconds per batch of 256);
- ``macs``/``params``: ``get_cost_info(i, dataset)`` (``flops`` is millions of MACs; params
  in millions).

This is the compact per-dataset path (``nasfilter convert --dataset``). The full-fidelity
benchmark (every record, setting, seed and epoch) is :func:`nasfilter.bench.fullbench.convert_full`;
both read archive pickles only through the allow-list of :mod:`nasfilter.bench.archive_pickle`.

Two archive formats are read: the fast-mode folder ``NATS-sss-v1_0-50262-simple`` (one
bz2 pickle per architecture) and the single file ``NATS-sss-v1_0-50262.pickle.pbz2``, which
``nats_bench`` loads whole (it needs the memory NATS-Bench itself needs; prefer the folder).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import math
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from nasfilter.bench.archive_names import ARCHIVE_DIR_NAME, ARCHIVE_FILE_NAME, META_FILE_NAME
from nasfilter.bench.archive_pickle import (
    DamagedArchiveError,
    UnsafeArchiveError,
    load_archive_pickle,
)
from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.spaces import SSS, TSS, Space
from nasfilter.bench.spaces.sss import Arch, all_channels
from nasfilter.bench.table import OBSERVED_HP12, SCORED_TEST90, BenchmarkTable, Provenance
from nasfilter.version import __version__

RECORD_SUFFIX = ".pickle.pbz2"
SEARCH_HP = "12"
FINAL_HP = "90"
FOLDER = "folder"
FILE = "file"

_RECORD_NAME = re.compile(r"^(\d{6})\.pickle\.pbz2$")
_BZ2_MAGIC = b"BZh"


class MissingDependencyError(ImportError):
    """An optional dependency needed for this operation is not installed."""


def record_file_name(index: int) -> str:
    """The fast-mode archive's file name for architecture ``index``: ``000284.pickle.pbz2``."""
    return f"{index:06d}{RECORD_SUFFIX}"


def import_nats_bench() -> ModuleType:
    """The ``nats_bench`` module, or MissingDependencyError saying how to install it."""
    try:
        import nats_bench
    except ImportError as exc:
        raise MissingDependencyError(
            "reading a NATS-Bench archive needs the nats_bench package: pip install nasfilter[nats]"
        ) from exc
    return nats_bench


@dataclass(frozen=True)
class _Archive:
    """An archive found at a path: its format, the files that make it up, and its API."""

    path: Path
    format: str  # FOLDER or FILE
    files: tuple[Path, ...]  # every file of the archive, in checksum order
    present: np.ndarray  # bool (32768,): which architectures have a record
    api: Any  # a nats_bench NATSsize

    def record_path(self, index: int) -> Path:
        """The file that holds architecture ``index``'s record."""
        if self.format == FOLDER:
            return self.path / record_file_name(index)
        return self.path


def _expected_arch_strings() -> list[str]:
    return [":".join(str(c) for c in row) for row in all_channels().tolist()]


# Key of the mark that nasfilter.testing.write_nats_archive adds to every meta file it
# writes (nats_bench ignores keys it does not know). A marked archive is not NATS-Bench's.
WRITTEN_MARK = "nasfilter_written_by"


def read_written_mark(meta_file: Path) -> dict[str, Any] | None:
    """The mark of an archive written by nasfilter (see :data:`WRITTEN_MARK`), or None for
    an archive without one (NATS-Bench's own). ``meta_file`` is ``meta.pickle.pbz2``."""
    meta = load_archive_pickle(meta_file)
    mark = meta.get(WRITTEN_MARK) if isinstance(meta, dict) else None
    if mark is None:
        return None
    return dict(mark) if isinstance(mark, dict) else {"synthetic": True, "mark": repr(mark)}


def _allow_listed_pickle_load(file_path: str, ext: str = ".pbz2") -> Any:
    """nats_bench's ``pickle_load`` (a path, or the path plus ``ext``), with the allow-list."""
    path = str(file_path)
    return load_archive_pickle(path if os.path.isfile(path) else path + ext)


@contextmanager
def allow_listed_loading(nats_bench: ModuleType) -> Iterator[None]:
    """While inside, ``nats_bench`` unpickles archive files only through the allow-list of
    :mod:`nasfilter.bench.archive_pickle`: a crafted archive is refused, and nothing in it runs."""
    modules = [m for m in (nats_bench.api_utils, nats_bench.api_size) if hasattr(m, "pickle_load")]
    saved = [m.pickle_load for m in modules]
    for module in modules:
        module.pickle_load = _allow_listed_pickle_load
    try:
        yield
    finally:
        for module, original in zip(modules, saved, strict=True):
            module.pickle_load = original


TSS_ARCHIVE_PREFIX = "NATS-tss-"
TSS_ARCHIVE_DIR_NAME = "NATS-tss-v1_0-3ffb9-simple"  # the tss fast-mode folder
TSS_ARCHIVE_FILE_NAME = "NATS-tss-v1_0-3ffb9.pickle.pbz2"
_SPACE_WORDS = {"sss": "size-space (sss)", "tss": "topology-space (tss)"}


def archive_space(path: Path) -> Space:
    """The space of the archive at ``path``, by NATS-Bench's name: tss for ``NATS-tss-*``."""
    return TSS if path.name.startswith(TSS_ARCHIVE_PREFIX) else SSS


def arch_strings(space: Space) -> list[str]:
    """Every arch string of ``space`` in index order (sss: ``8:16:24:32:40``; tss: the shipped
    order of the official meta)."""
    if space is TSS:
        return [str(TSS.arch(i)) for i in range(TSS.size)]
    return _expected_arch_strings()


def _check_meta_archs(meta_archs: object, where: Path, space: Space = SSS) -> None:
    """Refuse an archive whose architecture list is not ``space`` in index order."""
    words = _SPACE_WORDS[space.name]
    if not isinstance(meta_archs, list) or len(meta_archs) != space.size:
        n = len(meta_archs) if isinstance(meta_archs, list) else type(meta_archs).__name__
        raise ValueError(
            f"{str(where)!r} is not a NATS-Bench {words} archive: it lists {n} "
            f"architectures, expected {space.size}"
        )
    expected = arch_strings(space)
    if meta_archs != expected:
        bad = next(i for i, (a, b) in enumerate(zip(meta_archs, expected, strict=True)) if a != b)
        raise ValueError(
            f"{str(where)!r} is not a NATS-Bench {words} archive: architecture {bad} "
            f"is {meta_archs[bad]!r}, expected {expected[bad]!r}"
        )


def _scan_folder(path: Path) -> tuple[tuple[Path, ...], np.ndarray]:
    """The files of a fast-mode archive folder (meta first) and which indices have records
    (sss, or tss for the folder ``NATS-tss-v1_0-3ffb9-simple``)."""
    space = archive_space(path)
    if space is TSS and path.name != TSS_ARCHIVE_DIR_NAME:
        raise ValueError(
            f"{str(path)!r} is not a NATS-Bench tss archive: expected the folder "
            f"{TSS_ARCHIVE_DIR_NAME!r}, got a folder named {path.name!r}"
        )
    if space is SSS and path.name != ARCHIVE_DIR_NAME:
        hint = ""
        for name in (ARCHIVE_DIR_NAME, ARCHIVE_FILE_NAME):
            if (path / name).exists():
                hint = f"; did you mean {str(path / name)!r}?"
        raise ValueError(
            f"{str(path)!r} is not a NATS-Bench sss archive: expected the folder "
            f"{ARCHIVE_DIR_NAME!r} or the file {ARCHIVE_FILE_NAME!r}, got a folder named "
            f"{path.name!r}{hint}"
        )
    meta = path / META_FILE_NAME
    if not meta.is_file():
        raise ValueError(
            f"{str(path)!r} is not a NATS-Bench {space.name} archive folder: {META_FILE_NAME} is "
            "missing"
        )
    present = np.zeros(space.size, dtype=bool)
    records: list[Path] = []
    with os.scandir(path) as entries:
        for entry in entries:
            match = _RECORD_NAME.match(entry.name)
            if match is not None:
                index = int(match.group(1))
                if index >= space.size or not entry.is_file():
                    raise ValueError(
                        f"{entry.path!r} does not belong in a NATS-Bench {space.name} archive "
                        f"folder: records are files named 000000{RECORD_SUFFIX} .. "
                        f"{space.size - 1:06d}{RECORD_SUFFIX}"
                    )
                present[index] = True
                records.append(Path(entry.path))
            elif entry.name != META_FILE_NAME and entry.name.endswith(RECORD_SUFFIX):
                raise ValueError(
                    f"{entry.path!r}: unexpected file in a NATS-Bench {space.name} archive "
                    "folder; "
                    f"per-architecture records are named by six-digit index, such as "
                    f"{record_file_name(284)}"
                )
    records.sort(key=lambda p: p.name)
    return (meta, *records), present


def _open_folder(
    path: Path, files: tuple[Path, ...], present: np.ndarray, nats_bench: ModuleType
) -> _Archive:
    meta = files[0]
    try:
        with allow_listed_loading(nats_bench):
            api = nats_bench.create(str(path), "sss", fast_mode=True, verbose=False)
    except (UnsafeArchiveError, DamagedArchiveError):
        raise
    except Exception as exc:  # pickle and key errors from nats_bench
        raise ValueError(
            f"{str(meta)!r}: nats_bench cannot read the archive's meta file "
            f"({type(exc).__name__}: {exc})"
        ) from exc
    _check_meta_archs(api.meta_archs, meta)
    return _Archive(path, FOLDER, files, present, api)


def _open_file(path: Path, nats_bench: ModuleType) -> _Archive:
    if _RECORD_NAME.match(path.name) or path.name == META_FILE_NAME:
        raise ValueError(
            f"{str(path)!r} is one file of a fast-mode archive folder; give the folder "
            f"{str(path.parent)!r} instead"
        )
    with path.open("rb") as fh:
        magic = fh.read(len(_BZ2_MAGIC))
    if magic != _BZ2_MAGIC:
        raise ValueError(
            f"{str(path)!r} is not a NATS-Bench archive file: expected a bz2-compressed pickle "
            f"such as {ARCHIVE_FILE_NAME!r} (or the folder {ARCHIVE_DIR_NAME!r})"
        )
    try:
        with allow_listed_loading(nats_bench):
            api = nats_bench.create(str(path), "sss", fast_mode=False, verbose=False)
    except (UnsafeArchiveError, DamagedArchiveError):
        raise
    except Exception as exc:  # pickle and key errors from nats_bench
        raise ValueError(
            f"{str(path)!r}: nats_bench cannot read this archive file "
            f"({type(exc).__name__}: {exc}); expected a bz2 pickle of a dict with "
            "'meta_archs', 'arch2infos' and 'evaluated_indexes'"
        ) from exc
    _check_meta_archs(api.meta_archs, path)
    present = np.zeros(SSS.size, dtype=bool)
    for index in api.evaluated_indexes:
        if not (isinstance(index, int) and 0 <= index < SSS.size):
            raise ValueError(f"{str(path)!r} lists an invalid evaluated index {index!r}")
        present[index] = True
    return _Archive(path, FILE, (path,), present, api)


def locate_archive(archive: str | os.PathLike[str]) -> tuple[Path, str]:
    """Resolve ``archive`` and tell its format (FOLDER or FILE); ValueError if it is neither."""
    path = Path(archive).expanduser()
    if not path.exists():
        raise ValueError(
            f"archive {str(path)!r} does not exist; give the NATS-Bench folder "
            f"{ARCHIVE_DIR_NAME!r} or the file {ARCHIVE_FILE_NAME!r}"
        )
    path = path.resolve()
    if path.is_dir():
        return path, FOLDER
    if path.is_file():
        return path, FILE
    raise ValueError(f"archive {str(path)!r} is neither a folder nor a regular file")


def archive_checksum(files: Iterable[Path], chunk: int = 1 << 20) -> str:
    """sha256 over each file's name, size and contents, in the given order (hex digest)."""
    digest = hashlib.sha256()
    for file in files:
        name = file.name.encode("utf-8")
        digest.update(len(name).to_bytes(8, "little") + name)
        digest.update(file.stat().st_size.to_bytes(8, "little"))
        with file.open("rb") as fh:
            while block := fh.read(chunk):
                digest.update(block)
    return digest.hexdigest()


def _nats_bench_version() -> str | None:
    try:
        return importlib.metadata.version("nats_bench")
    except importlib.metadata.PackageNotFoundError:
        return None


def _number(value: Any) -> float:
    """A float from an API value; None (not available) becomes NaN."""
    return math.nan if value is None else float(value)


class _Columns:
    """Columns being filled, one architecture at a time."""

    def __init__(self) -> None:
        self.valid_by_seed: dict[int, np.ndarray] = {}
        self.floats = {
            name: np.full(SSS.size, np.nan)
            for name in ("test_acc", "train_time", "valid_time", "latency", "params", "macs")
        }

    def read(self, api: Any, index: int, ds: Dataset) -> None:
        """Fill row ``index`` from the API's queries (see the module docstring)."""
        times = api.get_more_info(index, ds.search_record, hp=SEARCH_HP, is_random=False)
        seeds = api.arch2infos_dict[index][SEARCH_HP].get_dataset_seeds(ds.search_record)
        for seed in seeds:
            info = api.get_more_info(index, ds.search_record, hp=SEARCH_HP, is_random=seed)
            if seed not in self.valid_by_seed:
                self.valid_by_seed[seed] = np.full(SSS.size, np.nan)
            self.valid_by_seed[seed][index] = _number(info["valid-accuracy"])
        final = api.get_more_info(index, ds.final_record, hp=FINAL_HP, is_random=False)
        # get_latency(index, dataset) is get_cost_info(index, dataset)["latency"]; one call.
        cost = api.get_cost_info(index, ds.name, hp=SEARCH_HP)
        row = self.floats
        row["test_acc"][index] = _number(final["test-accuracy"])
        row["train_time"][index] = _number(times["train-per-time"])
        row["valid_time"][index] = _number(times["valid-per-time"])
        row["latency"][index] = _number(cost["latency"])
        row["macs"][index] = _number(cost["flops"])
        row["params"][index] = _number(cost["params"])


def _read_all(archive: _Archive, ds: Dataset, progress: bool) -> _Columns:
    from tqdm import tqdm

    api = archive.api
    columns = _Columns()
    indices = np.flatnonzero(archive.present).tolist()
    bar = tqdm(
        indices,
        desc=f"converting {archive.path.name}",
        unit="arch",
        disable=not progress,
        dynamic_ncols=True,
    )
    try:
        with allow_listed_loading(import_nats_bench()):
            for index in bar:
                try:
                    columns.read(api, index, ds)
                except UnsafeArchiveError:
                    raise
                except Exception as exc:  # anything nats_bench raises on a bad record
                    raise ValueError(
                        f"{str(archive.record_path(index))!r}: cannot read the record of "
                        f"architecture {index} ({Arch.from_index(index)}): "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                finally:  # keep memory bounded: the API would otherwise keep every record
                    api.arch2infos_dict.pop(index, None)
                    api.evaluated_indexes.discard(index)
    finally:
        bar.close()
    return columns


def convert_archive(
    archive: str | os.PathLike[str],
    dataset: str,
    allow_partial: bool = False,
    progress: bool = True,
) -> BenchmarkTable:
    """Read a NATS-Bench sss archive through ``nats_bench`` into a table for ``dataset``.

    Args:
        archive: the fast-mode folder ``NATS-sss-v1_0-50262-simple`` or the single file
            ``NATS-sss-v1_0-50262.pickle.pbz2``.
        dataset: ``cifar10``, ``cifar100`` or ``ImageNet16-120``.
        allow_partial: accept an archive that lacks some architectures; their rows are
            marked absent (``present`` False) and hold NaN.
        progress: show a progress bar over architectures (on stderr).

    Raises:
        ValueError: unknown dataset, a path that is not a readable sss archive, an unreadable
            architecture record (the message names its file), or missing architectures
            without ``allow_partial``.
        MissingDependencyError: ``nats_bench`` is not installed.
    """
    ds = get_dataset(dataset)
    path, fmt = locate_archive(archive)
    if archive_space(path) is TSS:
        raise ValueError(
            f"{str(path)!r} is a NATS-Bench topology-space (tss) archive; a compact table "
            "(--dataset) is converted from a size-space (sss) archive only. Convert the tss "
            "archive in full (leave --dataset out) for nasfilter.bench.nats_api, or use the "
            "shipped real tss tables: --space tss"
        )
    found = _open_archive(path, fmt, allow_partial)
    checksum = archive_checksum(found.files)
    columns = _read_all(found, ds, progress)
    seeds = tuple(sorted(columns.valid_by_seed))
    if not seeds:
        raise ValueError(f"{str(path)!r} has no hp-{SEARCH_HP} runs on {ds.search_record!r}")
    valid_acc = np.stack([columns.valid_by_seed[s] for s in seeds], axis=1)
    return BenchmarkTable(
        dataset=ds,
        seeds=seeds,
        valid_acc=valid_acc,
        present=found.present,
        provenance=_provenance(path, fmt, found, ds, checksum),
        **columns.floats,
    )


def _open_archive(path: Path, fmt: str, allow_partial: bool) -> _Archive:
    """The archive at ``path`` opened through ``nats_bench``; ValueError when it holds no
    records, or misses some without ``allow_partial``."""
    if fmt == FOLDER:
        files, present = _scan_folder(path)  # refuse a wrong folder before importing nats_bench
        found = _open_folder(path, files, present, import_nats_bench())
    else:
        found = _open_file(path, import_nats_bench())
    n_present = int(found.present.sum())
    if n_present == 0:
        raise ValueError(f"{str(path)!r} holds no architecture records")
    n_missing = SSS.size - n_present
    if n_missing and not allow_partial:
        raise ValueError(
            f"{n_missing} of {SSS.size} architectures are missing from {str(path)!r} "
            f"({n_present} present). Use the complete archive, or pass allow_partial=True / "
            "--allow-partial to convert a partial table (missing rows are NaN and marked "
            "absent)."
        )
    return found


def _provenance(path: Path, fmt: str, found: _Archive, ds: Dataset, checksum: str) -> Provenance:
    """Where the converted table comes from and what its columns mean."""
    # An archive nasfilter wrote itself keeps the label of the table it was written from:
    # a synthetic table stays SYNTHETIC through the NATS format and back.
    mark = read_written_mark(found.files[0]) if fmt == FOLDER else None
    origin = "NATS-Bench sss archive"
    extra: dict[str, Any] = {"n_present": int(found.present.sum()), "format": fmt}
    if mark is not None:
        origin = (
            f"archive in the NATS format written by nasfilter from "
            f"{mark.get('table_label', 'an unknown table')} (NOT NATS-Bench's archive)"
        )
        extra["written_by"] = mark
    return Provenance(
        synthetic=False if mark is None else bool(mark.get("synthetic", True)),
        source=str(path),
        description=(
            f"{origin} ({fmt}) converted by nasfilter {__version__}: valid_acc = "
            f"hp-{SEARCH_HP} valid-accuracy on {ds.search_record} per seed, test_acc = "
            f"hp-{FINAL_HP} test-accuracy on {ds.final_record} averaged over seeds"
        ),
        checksum=checksum,
        nats_bench_version=_nats_bench_version(),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        extra=extra,
        # written from a table of real accuracies and modelled times: it still says so
        real=str(mark.get("real", "")) if mark else "",
        modelled=str(mark.get("modelled", "")) if mark else "",
        observed=str(mark.get("observed", OBSERVED_HP12)) if mark else OBSERVED_HP12,
        scored=str(mark.get("scored", SCORED_TEST90)) if mark else SCORED_TEST90,
    )
