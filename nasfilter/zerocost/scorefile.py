"""Zero-cost score files (``.npz``): write, read with checks, and the scores shipped as data.

A score file holds, for one (space, dataset, seed, score version):

- ``<proxy>``: float32 (space.size,), the score of every architecture, NaN where not computed
  (``computed__<proxy>`` is False) or undefined for it (docs: a disconnected tss cell);
- ``computed__<proxy>``: bool (space.size,); ``seconds__<proxy>``: float32 CPU seconds;
- ``meta``: a JSON string: format, version, space, dataset, seed, stand-in, proxies.

:func:`load_scores` refuses a file of another space, dataset or version by name. The
package's own files are checked against their SHA-256 (:data:`SHA256`) before use.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.spaces import get_space
from nasfilter.zerocost.base import check_finite
from nasfilter.zerocost.compute import VERSION, Scores
from nasfilter.zerocost.nets import STAND_IN, STAND_IN_TEXT

FORMAT = "nasfilter-zerocost"
DATA_DIR = Path(str(resources.files("nasfilter") / "data" / "zerocost"))
# SHA-256 of each shipped score file (scripts/compute_zerocost.py pack writes SHA256SUMS).
SHA256: dict[str, str] = {
    "sss-ImageNet16-120.npz": "bc3597ca1f8488844b417c4b74ef3a31f7794880464b7b1d0f1621c6e92a6052",
    "sss-cifar10.npz": "f013a92bf5ce76f78ad6e6fabe97b458f37466b32cf021bca483d47af1fd5ff9",
    "sss-cifar100.npz": "df94c4a5a96d1dc9a92f1ce496c16c1d1443b630bf25a1714e3f2d30e59af6fe",
    "tss-cifar10.npz": "622ad6d254f510d21c2da603ec2c8c779f8333f37079857d9cb04d47688e36ac",
    "tss-cifar100.npz": "e84b71c42fe2dd621973174b6ca2bf6779c6a56a60aa4b74721e0035f5352b70",
    "tss-ImageNet16-120.npz": "cc7d10c5279edd055e83f73a6a2b005e5915146584167d5b590badfcd3646bd6",
}


@dataclass(frozen=True)
class ScoreFile:
    """The contents of a score file (arrays read-only)."""

    space: str
    dataset: str
    seed: int
    version: int
    stand_in: str
    values: dict[str, np.ndarray]
    computed: dict[str, np.ndarray]
    seconds: dict[str, np.ndarray]

    @property
    def proxies(self) -> tuple[str, ...]:
        return tuple(self.values)

    def scores(self, proxy: str) -> np.ndarray:
        """float32 (size,) scores of ``proxy``; ValueError listing those the file holds."""
        if proxy not in self.values:
            raise ValueError(
                f"this score file has no proxy {proxy!r}; it holds: {', '.join(self.proxies)}"
            )
        return self.values[proxy]

    def ranked(self, proxy: str) -> tuple[np.ndarray, np.ndarray]:
        """``(archs, scores)`` of the computed architectures of ``proxy``, scores float64;
        ValueError naming the proxy if any of them is NaN or infinite (never ranked)."""
        self.scores(proxy)
        archs = np.flatnonzero(self.computed[proxy])
        return archs, check_finite(proxy, self.values[proxy][archs], archs)


def save_scores(scores: Scores, path: str | Path, force: bool = False) -> Path:
    """Write ``scores`` to ``path`` (.npz); FileExistsError unless ``force``."""
    out = Path(path)
    if out.suffix != ".npz":
        raise ValueError(f"a zero-cost score file ends in .npz, got {str(out)!r}")
    if out.exists() and not force:
        raise FileExistsError(f"{str(out)!r} exists; pass --force to replace it")
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "space": scores.space.name,
        "dataset": scores.dataset.name,
        "seed": scores.seed,
        "stand_in": STAND_IN,
        "stand_in_text": STAND_IN_TEXT,
        "proxies": list(scores.values),
    }
    arrays: dict[str, np.ndarray] = {"meta": np.array(json.dumps(meta))}
    for name, values in scores.values.items():
        arrays[name] = values.astype(np.float32)
        arrays[f"computed__{name}"] = scores.computed[name].astype(bool)
        arrays[f"seconds__{name}"] = scores.seconds[name].astype(np.float32)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(buffer.getvalue())
    return out


def _parse(raw: bytes, where: str) -> ScoreFile:
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
        meta = json.loads(str(arrays.pop("meta")))
    except (ValueError, KeyError, OSError) as exc:
        raise ValueError(f"{where} is not a zero-cost score file: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{where} is not a zero-cost score file (format {FORMAT!r})")
    for array in arrays.values():
        array.setflags(write=False)
    names = list(meta["proxies"])
    return ScoreFile(
        space=str(meta["space"]),
        dataset=str(meta["dataset"]),
        seed=int(meta["seed"]),
        version=int(meta["version"]),
        stand_in=str(meta["stand_in"]),
        values={n: arrays[n] for n in names},
        computed={n: arrays[f"computed__{n}"] for n in names},
        seconds={n: arrays[f"seconds__{n}"] for n in names},
    )


def _check(file: ScoreFile, where: str, space: str | None, dataset: str | None) -> ScoreFile:
    if file.version != VERSION:
        raise ValueError(
            f"{where} holds zero-cost scores of version {file.version}; this nasfilter computes "
            f"version {VERSION}: recompute it with `nasfilter zero-cost`"
        )
    if space is not None and file.space != get_space(space).name:
        raise ValueError(f"{where} holds scores of the {file.space} space, not {space}")
    if dataset is not None and file.dataset != get_dataset(dataset).name:
        raise ValueError(f"{where} holds scores for dataset {file.dataset}, not {dataset}")
    return file


def load_scores(
    path: str | Path, space: str | None = None, dataset: str | None = None
) -> ScoreFile:
    """Read a score file; ValueError naming it if it is of another space, dataset (when
    given) or score version, or not a score file at all."""
    where = repr(str(path))
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read the zero-cost score file {where}: {exc}") from None
    return _check(_parse(raw, where), where, space, dataset)


def shipped() -> tuple[str, ...]:
    """The (space-dataset) names of the score files shipped with nasfilter."""
    return tuple(name.removesuffix(".npz") for name in SHA256)


@functools.cache
def packaged_scores(space: str, dataset: str) -> ScoreFile:
    """The shipped scores of (space, dataset), SHA-256 checked; ValueError listing the
    shipped ones when there are none, or if the file was altered."""
    name = f"{get_space(space).name}-{get_dataset(dataset).name}.npz"
    if name not in SHA256:
        raise ValueError(
            f"no zero-cost scores ship for {space}/{dataset}; shipped: {', '.join(shipped())} "
            "(compute them with `nasfilter zero-cost`)"
        )
    path = DATA_DIR / name
    raw = path.read_bytes()
    actual = hashlib.sha256(raw).hexdigest()
    if actual != SHA256[name]:
        raise ValueError(
            f"{str(path)!r} has SHA-256 {actual}, not the released {SHA256[name]}: nasfilter "
            "refuses an altered file; reinstall nasfilter"
        )
    return _check(_parse(raw, repr(str(path))), repr(str(path)), space, dataset)


def shipped_table(
    space: str, dataset: str, seed: int, proxies: list[str]
) -> tuple[dict[tuple[int, str], tuple[float, float]], dict[str, int]]:
    """The shipped scores that match (space, dataset, seed) for ``proxies``, as
    ``{(arch, proxy): (score, CPU seconds)}`` over the architectures the file computed, and
    ``{proxy: how many}``; both empty when no file ships for (space, dataset) or its seed
    differs. ValueError if the shipped file was altered or is of another score version."""
    name = f"{get_space(space).name}-{get_dataset(dataset).name}.npz"
    if name not in SHA256:
        return {}, {}
    file = packaged_scores(space, dataset)
    if file.seed != seed:
        return {}, {}
    table: dict[tuple[int, str], tuple[float, float]] = {}
    counts: dict[str, int] = {}
    for proxy in proxies:
        if proxy not in file.values:
            continue
        archs = np.flatnonzero(file.computed[proxy])
        if archs.size == 0:
            continue
        values, seconds = file.values[proxy], file.seconds[proxy]
        for a in archs.tolist():
            table[a, proxy] = (float(values[a]), float(seconds[a]))
        counts[proxy] = int(archs.size)
    return table, counts


def write_sums(folder: Path) -> Path:
    """Write ``SHA256SUMS`` of every ``.npz`` in ``folder`` (sha256sum's format)."""
    lines = [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}"
        for p in sorted(folder.glob("*.npz"))
    ]
    out = folder / "SHA256SUMS"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


__all__ = [
    "DATA_DIR",
    "SHA256",
    "ScoreFile",
    "load_scores",
    "packaged_scores",
    "save_scores",
    "shipped",
    "shipped_table",
    "write_sums",
]
