"""The search spaces as values: one :class:`Space` type, two instances, :data:`SSS` and :data:`TSS`.

A space is ``n_positions`` positions (sss: 5 layers; tss: 6 cell edges), each taking one of
``choices`` (sss: channel counts 8..64; tss: five operations), and NATS's index rule between
an architecture and its index. Everything generic over spaces reads it as digits: int codes
``0..n_choices-1``, one per position (:meth:`Space.digits`).

- :data:`SSS`: the NATS size space, 8**5 = 32768 architectures (:mod:`nasfilter.bench.spaces.sss`
holds
  its :class:`~nasfilter.bench.spaces.sss.Arch` and index rule).
- :data:`TSS`: the NATS topology space (= NAS-Bench-201), 5**6 = 15625 cells, written
  ``|op~0|+|op~0|op~1|+|op~0|op~1|op~2|``. Its index rule is the order of the arch strings
  in the official meta (``api.meta_archs``), shipped as ``arch_ops``
  (:mod:`nasfilter.bench.tss_data`).

A table knows its space (``table.space``); problems, searchers and oracles take it from there.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nasfilter.bench.spaces import sss
from nasfilter.bench.tss_data import N_TSS, arch_ops

TSS_OPS: tuple[str, ...] = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
TSS_EDGES: tuple[tuple[int, int], ...] = ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2))
TSS_EXAMPLE = (
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|none~0|nor_conv_3x3~1|avg_pool_3x3~2|"
)


@dataclass(frozen=True, slots=True, order=True)
class Cell:
    """One cell of the topology space: the operation on each of the six edges, string order."""

    ops: tuple[str, ...]

    def __post_init__(self) -> None:
        raw = self.ops
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence) or len(raw) != 6:
            raise ValueError(f"a tss cell has 6 edge operations, got {raw!r}")
        for edge, op in zip(TSS_EDGES, raw, strict=True):
            if op not in TSS_OPS:
                raise ValueError(
                    f"edge {edge[0]}<-{edge[1]} has operation {op!r}; allowed: {', '.join(TSS_OPS)}"
                )
        object.__setattr__(self, "ops", tuple(raw))

    @classmethod
    def from_string(cls, text: str) -> Cell:
        """Parse ``|op~0|+|op~0|op~1|+|op~0|op~1|op~2|``."""
        nodes = text.strip().split("+") if isinstance(text, str) else []
        ops: list[str] = []
        for node, part in enumerate(nodes, start=1):
            edges = [e for e in part.split("|") if e]
            if len(edges) != node:
                raise ValueError(
                    f"tss arch string {text!r}: node {node} has {len(edges)} incoming edges, "
                    f"expected {node} (format {TSS_EXAMPLE!r})"
                )
            for source, edge in enumerate(edges):
                op, _, src = edge.partition("~")
                if src != str(source):
                    raise ValueError(
                        f"tss arch string {text!r}: edge {edge!r} of node {node} must come from "
                        f"node {source} ('{op}~{source}')"
                    )
                ops.append(op)
        if len(nodes) != 3:
            raise ValueError(
                f"tss arch string {text!r} has {len(nodes)} nodes joined by '+', expected 3 "
                f"with 6 edges in all, such as {TSS_EXAMPLE!r}"
            )
        return cls(tuple(ops))

    @property
    def index(self) -> int:
        """The NATS-tss index of this cell."""
        return TSS.index_of(self)

    def __str__(self) -> str:
        o = self.ops
        return f"|{o[0]}~0|+|{o[1]}~0|{o[2]}~1|+|{o[3]}~0|{o[4]}~1|{o[5]}~2|"

    def __repr__(self) -> str:
        return f"Cell('{self}')"


class Space:
    """A search space: its size, positions and choices, index rule, parsing and encodings."""

    name: str
    title: str
    size: int
    n_positions: int
    choices: tuple[Any, ...]
    position_word: str
    example: str

    @property
    def n_choices(self) -> int:
        return len(self.choices)

    def check_index(self, value: object) -> int:
        """``value`` as an int in ``[0, size)``; ValueError naming it and the range."""
        return sss.check_index(value, self.size, self.name)

    def arch(self, index: int) -> Any:
        """The architecture object of ``index`` (cached)."""
        raise NotImplementedError

    def parse(self, value: object) -> Any:
        """An index, an arch string or an architecture object of this space -> its architecture."""
        raise NotImplementedError

    def index_of(self, arch: object) -> int:
        """The index of ``arch`` (anything :meth:`parse` reads)."""
        raise NotImplementedError

    def format(self, arch: object) -> str:
        """The arch string of ``arch``."""
        return str(self.parse(arch))

    def all_digits(self) -> np.ndarray:
        """Read-only int64 (size, n_positions): the choice code of every position, by index."""
        raise NotImplementedError

    def digits(self, indices: np.ndarray | int) -> np.ndarray:
        """int64 (..., n_positions) choice codes of ``indices``."""
        idx = np.asarray(indices)
        if idx.size and (idx.min() < 0 or idx.max() >= self.size):
            bad = idx[(idx < 0) | (idx >= self.size)].ravel()[:5].tolist()
            raise ValueError(
                f"{self.name} architecture indices must be in [0, {self.size - 1}], got {bad}"
            )
        return np.asarray(self.all_digits()[idx], dtype=np.int64)

    def from_digits(self, digits: np.ndarray) -> np.ndarray:
        """int64 (...) indices of choice codes (..., n_positions)."""
        raise NotImplementedError

    def sample_indices(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """int64 (n,) indices drawn uniformly with replacement from ``rng``."""
        return rng.integers(0, self.size, size=n, dtype=np.int64)

    def other_space_error(self, value: object, other: Space) -> ValueError:
        return ValueError(
            f"{value!r} is an architecture of the {other.name} space ({other.title}), not of "
            f"the {self.name} space ({self.title}); give an index in [0, {self.size - 1}] or a "
            f"string such as {self.example!r}"
        )

    def __repr__(self) -> str:
        return f"<space {self.name}: {self.title}, {self.size} architectures>"


class SizeSpace(Space):
    """The NATS size space (sss): five layers, channel counts 8..64
    (:mod:`nasfilter.bench.spaces.sss`)."""

    name = "sss"
    title = "NATS size space"
    size = sss.N_ARCHS
    n_positions = sss.N_LAYERS
    choices = sss.CHANNEL_CHOICES
    position_word = "layer"
    example = "8:16:24:32:40"

    def arch(self, index: int) -> sss.Arch:
        return sss.arch_from_index(self.check_index(index))

    def parse(self, value: object) -> sss.Arch:
        if isinstance(value, Cell) or (isinstance(value, str) and "~" in value):
            raise self.other_space_error(value, TSS)
        return sss.as_arch(value)  # type: ignore[arg-type]

    def index_of(self, arch: object) -> int:
        if isinstance(arch, sss.Arch):
            return sss.index_of(arch)
        return self.parse(arch).index

    def all_digits(self) -> np.ndarray:
        return _sss_digits()

    def from_digits(self, digits: np.ndarray) -> np.ndarray:
        return sss.channels_to_index((np.asarray(digits, dtype=np.int64) + 1) * 8)


class TopologySpace(Space):
    """The NATS topology space (tss, = NAS-Bench-201): six edges, five operations."""

    name = "tss"
    title = "NATS topology space (NAS-Bench-201)"
    size = N_TSS
    n_positions = 6
    choices = TSS_OPS
    position_word = "edge"
    example = TSS_EXAMPLE

    def arch(self, index: int) -> Cell:
        return _tss_cells()[self.check_index(index)]

    def parse(self, value: object) -> Cell:
        if isinstance(value, Cell):
            return value
        if isinstance(value, sss.Arch):
            raise self.other_space_error(value, SSS)
        if isinstance(value, str):
            text = value.strip()
            if text.isdigit() or (text[:1] in "+-" and text[1:].isdigit()):
                return self.arch(int(text))
            if ":" in text and "|" not in text:
                raise self.other_space_error(value, SSS)
            return Cell.from_string(text)
        if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool):
            return self.arch(int(value))
        raise ValueError(
            f"cannot read a tss architecture from {value!r}: give an index in "
            f"[0, {self.size - 1}] or an arch string such as {TSS_EXAMPLE!r}"
        )

    def index_of(self, arch: object) -> int:
        cell = self.parse(arch)
        codes = [TSS_OPS.index(op) for op in cell.ops]
        return int(_tss_lookup()[int(np.dot(codes, _TSS_PLACE))])

    def all_digits(self) -> np.ndarray:
        return _tss_digits()

    def from_digits(self, digits: np.ndarray) -> np.ndarray:
        d = np.asarray(digits, dtype=np.int64)
        if d.shape[-1:] != (6,) or (d.size and (d.min() < 0 or d.max() >= len(TSS_OPS))):
            raise ValueError(f"tss digits must be codes 0..4 with a last axis of 6, got {d.shape}")
        return np.asarray(_tss_lookup()[d @ _TSS_PLACE], dtype=np.int64)


_TSS_PLACE = 5 ** np.arange(5, -1, -1, dtype=np.int64)  # base-5 code of the six edge digits


@functools.cache
def _sss_digits() -> np.ndarray:
    out = sss.all_channels() // 8 - 1
    out.setflags(write=False)
    return out


@functools.cache
def _tss_digits() -> np.ndarray:
    out = arch_ops().astype(np.int64)
    out.setflags(write=False)
    return out


@functools.cache
def _tss_lookup() -> np.ndarray:
    """int64 (15625,): base-5 code of the edge digits -> NATS-tss index."""
    lookup = np.full(N_TSS, -1, dtype=np.int64)
    lookup[_tss_digits() @ _TSS_PLACE] = np.arange(N_TSS)
    if (lookup < 0).any():  # pragma: no cover - the shipped ops are a bijection (tested)
        raise ValueError("the shipped tss arch_ops are not a bijection onto 5**6 cells")
    lookup.setflags(write=False)
    return lookup


@functools.cache
def _tss_cells() -> tuple[Cell, ...]:
    cells = []
    for row in _tss_digits().tolist():
        cell = object.__new__(Cell)
        object.__setattr__(cell, "ops", tuple(TSS_OPS[d] for d in row))
        cells.append(cell)
    return tuple(cells)


SSS: Space = SizeSpace()
TSS: Space = TopologySpace()
SPACES: dict[str, Space] = {"sss": SSS, "tss": TSS}
# The largest space's size: the bound of a plugin setting checked before its space is known
MAX_SIZE: int = max(space.size for space in SPACES.values())


def get_space(name: str | Space) -> Space:
    """The space called ``name`` (sss or tss); ValueError listing the known ones."""
    if isinstance(name, Space):
        return name
    if isinstance(name, str) and name.strip().lower() in SPACES:
        return SPACES[name.strip().lower()]
    raise ValueError(f"unknown search space {name!r}; known spaces: {', '.join(SPACES)}")


def space_of(arch: object) -> Space | None:
    """The space an architecture object belongs to (None for an index or a string)."""
    if isinstance(arch, Cell):
        return TSS
    if isinstance(arch, sss.Arch):
        return SSS
    return None
