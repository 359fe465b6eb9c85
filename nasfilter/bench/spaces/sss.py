"""The NATS-Bench size search space ("sss").

Five layers, each with a channel count from {8, 16, ..., 64}: 8**5 = 32768 architectures.
The index rule is the official archive's (docs/facts.md §1): layer 1 is the most significant base-8
digit, ``index = sum((c_k / 8 - 1) * 8**(4 - k))``, so ``8:8:8:8:8`` is 0 and
``64:64:64:64:64`` is 32767.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

CHANNEL_CHOICES: tuple[int, ...] = (8, 16, 24, 32, 40, 48, 56, 64)
N_LAYERS = 5
N_CHOICES = len(CHANNEL_CHOICES)
N_ARCHS = N_CHOICES**N_LAYERS  # 32768

_PLACE = N_CHOICES ** np.arange(N_LAYERS - 1, -1, -1)  # (5,) base-8 place values, layer 1 first
_CHOICES_ARRAY = np.asarray(CHANNEL_CHOICES, dtype=np.int64)


def _check_channel(value: object, layer: int) -> int:
    """Return ``value`` as an int if it is an allowed channel count, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(
            f"channel count of layer {layer + 1} must be an integer from {CHANNEL_CHOICES}, "
            f"got {value!r} ({type(value).__name__})"
        )
    channel = int(value)
    if channel not in CHANNEL_CHOICES:
        raise ValueError(
            f"channel count of layer {layer + 1} must be one of {CHANNEL_CHOICES}, got {channel}"
        )
    return channel


def check_index(value: object, size: int = N_ARCHS, space: str = "") -> int:
    """``value`` as an int index of a space of ``size`` architectures (``space`` names it in
    the error), else ValueError naming the value and the range. The one index check of every
    space (:meth:`nasfilter.bench.spaces.Space.check_index` calls it)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise ValueError(
            f"{space}{' ' if space else ''}architecture index must be an integer in "
            f"[0, {size - 1}], got {value!r}"
        )
    index = int(value)
    if not 0 <= index < size:
        raise ValueError(
            f"{space}{' ' if space else ''}architecture index must be in [0, {size - 1}], "
            f"got {index}"
        )
    return index


@dataclass(frozen=True, slots=True, order=True)
class Arch:
    """One architecture of the size space: five channel counts, layer 1 first."""

    channels: tuple[int, ...]

    def __post_init__(self) -> None:
        raw = self.channels
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
            raise ValueError(f"channels must be a sequence of {N_LAYERS} integers, got {raw!r}")
        if len(raw) != N_LAYERS:
            raise ValueError(
                f"an architecture has {N_LAYERS} channel counts, got {len(raw)}: {tuple(raw)!r}"
            )
        checked = tuple(_check_channel(c, k) for k, c in enumerate(raw))
        object.__setattr__(self, "channels", checked)

    @classmethod
    def from_index(cls, index: int) -> Arch:
        """The architecture with NATS index ``index`` (0 <= index < 32768)."""
        return cls(tuple(int(c) for c in index_to_channels(check_index(index))))

    @classmethod
    def from_string(cls, text: str) -> Arch:
        """Parse ``"8:16:24:32:40"``."""
        if not isinstance(text, str):
            raise ValueError(f"architecture string must be a str, got {text!r}")
        parts = text.strip().split(":")
        if len(parts) != N_LAYERS or not all(p.strip().isdigit() for p in parts):
            raise ValueError(
                f"architecture string must be {N_LAYERS} channel counts joined by ':' "
                f"such as '8:16:24:32:40', got {text!r}"
            )
        return cls(tuple(int(p) for p in parts))

    @property
    def index(self) -> int:
        """The NATS index of this architecture."""
        return int(sum((c // 8 - 1) * int(p) for c, p in zip(self.channels, _PLACE, strict=True)))

    def __str__(self) -> str:
        return ":".join(str(c) for c in self.channels)

    def __repr__(self) -> str:
        return f"Arch('{self}')"


ArchLike = Union[Arch, int, str, Sequence[int]]  # noqa: UP007 (a runtime alias)


def as_arch(value: ArchLike) -> Arch:
    """Coerce an index, a ``"8:16:..."`` string, a channel sequence or an Arch to an Arch."""
    if isinstance(value, Arch):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit() or (text[:1] in "+-" and text[1:].isdigit()):
            return Arch.from_index(int(text))  # "-1" gets the index range, not the string form
        return Arch.from_string(text)
    if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool):
        return Arch.from_index(int(value))
    if isinstance(value, np.ndarray):
        return Arch(tuple(value.tolist()))
    if isinstance(value, Sequence):
        channels: tuple[Any, ...] = tuple(value)  # validated by Arch
        return Arch(channels)
    raise ValueError(
        f"cannot read an architecture from {value!r}: give an index in [0, {N_ARCHS - 1}], "
        "a string like '8:16:24:32:40', or five channel counts"
    )


def channels_to_index(channels: np.ndarray) -> np.ndarray:
    """Vectorized index rule: int array (..., 5) of channel counts -> int64 array (...)."""
    ch = np.asarray(channels)
    if ch.shape[-1:] != (N_LAYERS,):
        raise ValueError(f"channels must have a last axis of length {N_LAYERS}, got {ch.shape}")
    if not np.issubdtype(ch.dtype, np.integer):
        raise ValueError(f"channels must be integers, got dtype {ch.dtype}")
    bad = ~np.isin(ch, _CHOICES_ARRAY)
    if bad.any():
        raise ValueError(
            f"channel counts must be in {CHANNEL_CHOICES}, got {ch[bad].ravel()[:5].tolist()}"
        )
    digits = ch.astype(np.int64) // 8 - 1
    return np.asarray(digits @ _PLACE, dtype=np.int64)


def index_to_channels(index: int | np.ndarray) -> np.ndarray:
    """Vectorized inverse: int array (...) of indices -> int64 array (..., 5) of channels."""
    idx = np.asarray(index)
    if not np.issubdtype(idx.dtype, np.integer) or idx.dtype == np.bool_:
        raise ValueError(f"indices must be integers, got dtype {idx.dtype}")
    if idx.size and (idx.min() < 0 or idx.max() >= N_ARCHS):
        bad = idx[(idx < 0) | (idx >= N_ARCHS)].ravel()[:5].tolist()
        raise ValueError(f"architecture indices must be in [0, {N_ARCHS - 1}], got {bad}")
    digits = (idx.astype(np.int64)[..., None] // _PLACE) % N_CHOICES
    return np.asarray(_CHOICES_ARRAY[digits], dtype=np.int64)


@functools.cache
def _all_channels() -> np.ndarray:
    table = index_to_channels(np.arange(N_ARCHS))
    table.setflags(write=False)
    return table


def all_channels() -> np.ndarray:
    """Read-only int64 array (32768, 5): row i holds the channels of architecture i."""
    return _all_channels()


def all_indices() -> np.ndarray:
    """int64 array (32768,) of every architecture index."""
    return np.arange(N_ARCHS, dtype=np.int64)


_ARCHS: list[Arch | None] = [None] * N_ARCHS  # arch_from_index's cache, by index
_INDEX_OF: dict[Arch, int] = {}
# The index of each cached Arch by its id(): they live as long as the module, so no other
# live object has their id, and id() skips the dataclass's Python-level __hash__.
_INDEX_BY_ID: dict[int, int] = {}


def arch_from_index(index: int) -> Arch:
    """The Arch of NATS index ``index`` (0 <= index < 32768), built once and cached.

    Hot loops (searchers, filters) use this instead of :meth:`Arch.from_index`, which
    validates every call.
    """
    if not 0 <= index < N_ARCHS:
        raise ValueError(f"architecture index must be in [0, {N_ARCHS - 1}], got {index}")
    arch = _ARCHS[index]
    if arch is None:
        # The channels come from the index rule, so they are valid: skip Arch's per-field
        # validation (the slowest part of building one) by setting the frozen field directly.
        arch = object.__new__(Arch)
        object.__setattr__(arch, "channels", tuple(all_channels()[index].tolist()))
        _ARCHS[index] = arch
        _INDEX_OF[arch] = index
        _INDEX_BY_ID[id(arch)] = index
    return arch


def index_of(arch: Arch) -> int:
    """The NATS index of ``arch``; a dictionary look-up for architectures built here."""
    index = _INDEX_BY_ID.get(id(arch))
    if index is None:
        index = _INDEX_OF.get(arch)
        if index is None:
            return arch.index
    return index


def sample(rng: np.random.Generator) -> Arch:
    """One architecture drawn uniformly, each layer independently, from ``rng``."""
    digits = rng.integers(0, N_CHOICES, size=N_LAYERS)
    return Arch(tuple(CHANNEL_CHOICES[d] for d in digits))


def sample_indices(rng: np.random.Generator, n: int) -> np.ndarray:
    """int64 array (n,) of indices drawn uniformly with replacement from ``rng``."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return rng.integers(0, N_ARCHS, size=n, dtype=np.int64)


def neighbours(arch: ArchLike) -> list[Arch]:
    """The 35 architectures that differ from ``arch`` in exactly one layer, layer-major order."""
    base = as_arch(arch)
    out = []
    for layer in range(N_LAYERS):
        for c in CHANNEL_CHOICES:
            if c != base.channels[layer]:
                ch = list(base.channels)
                ch[layer] = c
                out.append(Arch(tuple(ch)))
    return out


def mutate(arch: ArchLike, rng: np.random.Generator) -> Arch:
    """Redraw one uniformly chosen layer's channels, excluding its current value."""
    base = as_arch(arch)
    layer = int(rng.integers(N_LAYERS))
    others = [c for c in CHANNEL_CHOICES if c != base.channels[layer]]
    ch = list(base.channels)
    ch[layer] = others[int(rng.integers(len(others)))]
    return Arch(tuple(ch))


def parse_many(values: Iterable[ArchLike]) -> list[Arch]:
    """Coerce each of ``values`` with :func:`as_arch`."""
    return [as_arch(v) for v in values]
