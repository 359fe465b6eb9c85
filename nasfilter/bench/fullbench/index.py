"""A benchmark folder's ``index.json``: read it safely, tell whether a folder is provably a
benchmark (the only kind ``convert --force`` replaces), and the per-array manifest
(shape, dtype, sha256 of every ``.npy``) that :class:`~nasfilter.bench.fullbench.FullBenchmark`
checks when it opens an array and :func:`verify` checks in full.

A folder of an older format version (without the manifest) is refused, naming the command
that re-creates it: nothing in it could tell a damaged array from a sound one.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.fullbench import layout as L

_REQUIRED = {"layout": dict, "provenance": dict, "files": dict, "n_present": int,
             "n_archs": int}
_LAYOUT = {"order": list, "hps": dict, "arrays": dict}


class NotFullBenchmarkError(ValueError):
    """A path that is not a full-fidelity benchmark folder."""


class DamagedBenchmarkError(NotFullBenchmarkError):
    """A benchmark folder whose index or arrays are damaged (the message names the file)."""


def how_to_convert(path: Path) -> str:
    """The command that (re-)creates the benchmark folder ``path``."""
    return (
        f"convert a NATS-Bench sss archive into it: nasfilter convert "
        f"NATS-sss-v1_0-50262-simple -o {path} --force"
    )


def _parse(file: Path) -> Any:
    """The JSON in ``file``; NotFullBenchmarkError (naming it) if missing or unreadable."""
    try:
        text = file.read_text(encoding="utf-8")
        return json.loads(text)
    except FileNotFoundError:
        raise NotFullBenchmarkError(
            f"{str(file.parent)!r} is not a full-fidelity nasfilter benchmark (no "
            f"{L.INDEX_FILE}); " + how_to_convert(file.parent)
        ) from None
    except (OSError, ValueError, RecursionError, MemoryError) as exc:
        reason = f"{type(exc).__name__}: {exc}"[:160]
        raise DamagedBenchmarkError(
            f"{str(file)!r} is unreadable ({reason}); " + how_to_convert(file.parent)
        ) from None


def names_itself(index: Any) -> bool:
    """Whether a parsed index says it is a full-fidelity nasfilter benchmark (any version)."""
    return isinstance(index, dict) and index.get("format") == L.FORMAT_NAME


def read_index(root: Path) -> dict[str, Any]:
    """``root/index.json`` checked: this format, this version, every key it needs of the
    right type; NotFullBenchmarkError (or DamagedBenchmarkError) naming the file."""
    file = root / L.INDEX_FILE
    if root.is_dir() and not file.is_file() and file.exists():
        raise DamagedBenchmarkError(f"{str(file)!r} is not a file; " + how_to_convert(root))
    index = _parse(file)
    if not names_itself(index):
        raise NotFullBenchmarkError(f"{str(file)!r} is not a {L.FORMAT_NAME} index")
    if index.get("version") != L.FORMAT_VERSION:
        raise NotFullBenchmarkError(
            f"{str(file)!r} has format version {index.get('version')!r}; this nasfilter "
            f"reads version {L.FORMAT_VERSION} (whose index checks every array): "
            + how_to_convert(root)
        )
    for key, kind in _REQUIRED.items():
        _need(index, key, kind, file)
    for key, kind in _LAYOUT.items():
        _need(index["layout"], key, kind, file, "layout.")
    return index


def _need(data: dict[str, Any], key: str, kind: type, file: Path, prefix: str = "") -> None:
    value = data.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        got = "missing" if key not in data else f"a {type(value).__name__}"
        raise DamagedBenchmarkError(
            f"{str(file)!r}: {prefix}{key} is {got}, expected a {kind.__name__}; the index is "
            "damaged: " + how_to_convert(file.parent)
        )


def foreign_entries(root: Path, index: dict[str, Any]) -> list[str]:
    """The names at the top of ``root`` that a benchmark of ``index`` does not hold."""
    order = index.get("layout", {}).get("order", []) if isinstance(index, dict) else []
    allowed = {L.INDEX_FILE, L.PRESENT_FILE, L.ROWS_FILE}
    allowed |= {f"hp{hp}" for hp in order if isinstance(hp, str)}
    return sorted(name for name in os.listdir(root) if name not in allowed)


def check_replaceable(target: Path, flag: str) -> None:
    """ValueError unless ``target`` is provably a nasfilter benchmark folder: a folder (not
    a link) whose index parses and names itself, holding nothing a benchmark does not."""
    refuse = f"{flag} {str(target)!r} exists and is not a nasfilter benchmark folder"
    keep = "; refusing to replace it, even with --force (nothing was deleted)"
    if target.is_symlink() or not target.is_dir():
        raise ValueError(f"{refuse} (it is {'a link' if target.is_symlink() else 'a file'})"
                         + keep)
    try:
        index = _parse(target / L.INDEX_FILE)
    except NotFullBenchmarkError:
        raise ValueError(f"{refuse} (its {L.INDEX_FILE} is missing or unreadable){keep}") from None
    if not names_itself(index):
        raise ValueError(f"{refuse} (its {L.INDEX_FILE} is not a {L.FORMAT_NAME} index){keep}")
    foreign = foreign_entries(target, index)
    if foreign:
        raise ValueError(
            f"{flag} {str(target)!r} holds files a nasfilter benchmark does not ("
            f"{', '.join(repr(n) for n in foreign[:5])}){keep}: move them out first"
        )


def file_digest(path: Path, chunk: int = 1 << 20) -> str:
    """sha256 (hex) of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def manifest(root: Path) -> dict[str, dict[str, Any]]:
    """Every ``.npy`` under ``root`` (relative POSIX path) -> its shape, dtype and sha256."""
    out = {}
    for path in sorted(root.rglob("*.npy")):
        arr = np.load(path, mmap_mode="r")
        out[path.relative_to(root).as_posix()] = {
            "shape": list(arr.shape), "dtype": arr.dtype.str, "sha256": file_digest(path),
        }
        del arr
    return out


def check_array(root: Path, rel: str, arr: np.ndarray, spec: Any) -> None:
    """DamagedBenchmarkError unless ``arr`` (read from ``root/rel``) has the shape and dtype
    the index records for it."""
    if not isinstance(spec, dict):
        raise DamagedBenchmarkError(
            f"{str(root / rel)!r} is not listed in {str(root / L.INDEX_FILE)!r}; "
            + how_to_convert(root)
        )
    if list(arr.shape) != spec.get("shape") or arr.dtype.str != spec.get("dtype"):
        raise DamagedBenchmarkError(
            f"{str(root / rel)!r} holds {arr.dtype.str} {list(arr.shape)}, but the index "
            f"records {spec.get('dtype')} {spec.get('shape')}: the folder is damaged; "
            + how_to_convert(root)
        )


def check_digest(root: Path, rel: str, spec: dict[str, Any]) -> None:
    """DamagedBenchmarkError unless ``root/rel``'s sha256 is the one the index records."""
    if file_digest(root / rel) != spec.get("sha256"):
        raise DamagedBenchmarkError(
            f"{str(root / rel)!r} does not hold the numbers it was written with (its sha256 "
            f"differs from {L.INDEX_FILE}'s): the folder is damaged; " + how_to_convert(root)
        )


def verify(root: Path, index: dict[str, Any]) -> None:
    """Check every array the index lists (shape, dtype, sha256; DamagedBenchmarkError)."""
    for rel, spec in index["files"].items():
        path = root / rel
        try:
            arr = np.load(path, mmap_mode="r")
        except (OSError, ValueError, EOFError) as exc:
            raise DamagedBenchmarkError(
                f"{str(path)!r} is unreadable ({type(exc).__name__}: {exc}); "
                + how_to_convert(root)
            ) from None
        check_array(root, rel, arr, spec)
        del arr
        check_digest(root, rel, spec)
