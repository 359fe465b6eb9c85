"""The one event schema of a run: kinds, columns, the in-memory log and the disk codec.

A run's trace is a table of events, one row per query or decision, column-wise. The same
column table (:data:`COLUMNS`) describes the in-memory :class:`EventLog`, the arrays a run
returns (:meth:`EventLog.arrays`) and the SQLite store's blobs (:func:`to_disk`,
:func:`from_disk`). Units:

- ``accuracy``: validation accuracy in percent (evaluate: the answer; recommend: the best
  seen of the recommended architecture); NaN for the other kinds.
- ``utilization``: fraction of peak FLOP/s (proxy); NaN otherwise.
- ``throughput``: images per second (proxy); NaN otherwise.
- ``cost``: simulated seconds charged (0 for ask, drop, recommend).
- ``worker_seconds``: simulated seconds charged in the run up to and including this event,
  summed over all workers.
- ``hp``, ``epochs``: the fidelity of a partial evaluation (``hp`` as an integer: 12 for
  setting ``"12"``; ``epochs`` trained, 1..the setting's); -1 for the other kinds (a full
  evaluation is hp 12 at 12 epochs).
- ``start``, ``end``: the simulated *wall clock*, in seconds, when the event began and when
  its result was available. "Clock" always means this wall clock; what is charged is
  worker-seconds.

- ``proxy``: which zero-cost proxy a ``zerocost`` event read, as its code in the run's proxy
  names (:attr:`EventLog.proxies`: the names in the order the run first read each, stored
  with the run as ``info["zerocost_proxies"]``); -1 for every other kind.

A ``zerocost`` event is one zero-cost proxy query (``index``, ``proxy``, ``cost``,
``worker_seconds``, ``start``, ``end``; the rest -1 or NaN). The ``proxy`` column is the one
column a log may lack: logs and databases written before it existed read as -1 throughout
(:data:`OPTIONAL`), their zero-cost events then naming no proxy.
"""

from __future__ import annotations

import math
import struct
from enum import IntEnum
from typing import NamedTuple

import numpy as np


class EventKind(IntEnum):
    """What an event records; the value is its code in the log and on disk."""

    EVALUATE = 0  # an accuracy evaluation started
    PROXY = 1  # a proxy (utilization) query
    ASK = 2  # a trial asked for and never dropped nor started (the budget ran out)
    DROP = 3  # a filter dropped a trial
    RECOMMEND = 4  # the searcher's recommendation changed
    PARTIAL = 5  # an evaluation below the full fidelity (fewer epochs, or another setting)
    ZEROCOST = 6  # a zero-cost proxy query (which proxy: the ``proxy`` column)

    @property
    def label(self) -> str:
        """The kind's name in event arrays and exports ("evaluate", ...)."""
        return self.name.lower()


EVENT_KINDS = tuple(kind.label for kind in EventKind)  # code -> name
EVALUATE, PROXY, ASK, DROP, RECOMMEND, PARTIAL, ZEROCOST = EVENT_KINDS
KIND_CODES = {kind.label: int(kind) for kind in EventKind}  # name -> code


class Column(NamedTuple):
    """One event column: its name, numpy dtype in memory, little-endian dtype on disk."""

    name: str
    memory: str
    disk: str
    meaning: str


# The one column table (see the module docstring for units).
COLUMNS = (
    Column("kind", "<U9", "<u1", "EventKind code on disk, its name in arrays"),
    Column("trial", "<i8", "<i4", "trial id (ask, drop, evaluate), else -1"),
    Column("index", "<i8", "<i4", "NATS architecture index"),
    Column("accuracy", "<f8", "<f8", "validation accuracy, percent (evaluate, recommend)"),
    Column("utilization", "<f8", "<f8", "fraction of peak FLOP/s (proxy)"),
    Column("throughput", "<f8", "<f8", "images per second (proxy)"),
    Column("seed", "<i8", "<i4", "training seed (evaluate), else -1"),
    Column("cost", "<f8", "<f8", "simulated seconds charged"),
    Column("worker_seconds", "<f8", "<f8", "worker-seconds charged in the run so far"),
    Column("start", "<f8", "<f8", "simulated wall clock when the event began, s"),
    Column("end", "<f8", "<f8", "simulated wall clock when its result was available, s"),
    Column("worker", "<i8", "<i2", "simulated worker 0..K-1 (evaluate, partial), else -1"),
    Column("hp", "<i8", "<i2", "training setting of a partial evaluation (12: hp '12'), else -1"),
    Column("epochs", "<i8", "<i2", "epochs trained before a partial evaluation, else -1"),
    Column("proxy", "<i8", "<i2", "zero-cost proxy's code in the run's names, else -1"),
)
# Columns added after logs were first stored: a log or database row without one reads as
# this fill (-1: no zero-cost proxy named), so older runs load and score unchanged.
OPTIONAL = {"proxy": -1}
EVENT_COLUMNS = tuple(c.name for c in COLUMNS)
DISK_DTYPES = {c.name: c.disk for c in COLUMNS}
_NUMERIC = COLUMNS[1:]
_INT = frozenset(c.name for c in _NUMERIC if c.memory == "<i8")
# One event as packed little-endian bytes: the kind's code (uint8), then 8 bytes a number
# (113 bytes an event); the log appends these to one bytearray and reads it back as a
# structured array of this dtype.
_ROW = struct.Struct("<B" + "".join("q" if c.name in _INT else "d" for c in _NUMERIC))
ROW_DTYPE = np.dtype(
    [("kind", "<u1")] + [(c.name, "<i8" if c.name in _INT else "<f8") for c in _NUMERIC]
)
assert ROW_DTYPE.itemsize == _ROW.size
_KIND_NAMES = np.asarray(EVENT_KINDS)

# Events a run's trace keeps in full. Every run of a sensible budget stays far below it (the
# study's runs log under 35,000). Past it, only events that can change a result are kept
# (nasfilter.sim.trace); the others are counted. 250,000 events are about 28 MB.
TRACE_LIMIT = 250_000


class Event(NamedTuple):
    """One event of a run (see the module docstring for units)."""

    step: int
    kind: str
    trial: int
    arch: int  # NATS index
    accuracy: float
    utilization: float
    throughput: float
    seed: int
    cost: float
    worker_seconds: float
    start: float
    end: float
    worker: int
    hp: int
    epochs: int
    proxy: int


_NAN = math.nan
_PACK = _ROW.pack
ROW_SIZE = _ROW.size  # bytes of one packed event
# One event's packed bytes from its fields in EVENT_COLUMNS order (the kind's code first;
# as EventLog.append takes them, hp, epochs and proxy included): what a writer on the hot path
# appends to EventLog.buffer itself, saving the call of append
pack_event = _ROW.pack


class EventLog:
    """Append-only record of a run's events (cheap to append and export).

    Each event is packed into a few bytes at once (:data:`ROW_DTYPE`, 113 bytes an event),
    appended to one buffer: an append builds no Python object that outlives it, and
    :meth:`arrays` reads the buffer as columns in one pass. The buffer is public
    (:attr:`buffer`): a writer may append whole rows of :func:`pack_event` to it.
    :attr:`proxies` names the zero-cost proxies the ``proxy`` column's codes stand for."""

    __slots__ = ("buffer", "proxies")

    def __init__(self) -> None:
        self.buffer = bytearray()  # the packed events, ROW_SIZE bytes each
        self.proxies: list[str] = []  # zero-cost proxy names; code = position

    def proxy_code(self, name: str) -> int:
        """The ``proxy`` column's code of zero-cost proxy ``name`` in this log (a new name
        gets the next code)."""
        if name not in self.proxies:
            if len(self.proxies) >= np.iinfo(np.int16).max:
                raise ValueError("a run's event log names at most 32767 zero-cost proxies")
            self.proxies.append(name)
        return self.proxies.index(name)

    @property
    def n(self) -> int:
        """Events so far."""
        return len(self.buffer) // ROW_SIZE

    def __len__(self) -> int:
        return len(self.buffer) // ROW_SIZE

    def append(
        self,
        kind: EventKind,
        trial: int,
        index: int,
        accuracy: float,
        utilization: float,
        throughput: float,
        seed: int,
        cost: float,
        worker_seconds: float,
        start: float,
        end: float,
        worker: int,
        hp: int = -1,
        epochs: int = -1,
        proxy: int = -1,
    ) -> None:
        """Append one event, its fields in :data:`EVENT_COLUMNS` order (``hp`` and
        ``epochs``: partial evaluations only; ``proxy``: zero-cost queries only)."""
        self.buffer += _PACK(kind, trial, index, accuracy, utilization, throughput, seed, cost,
                             worker_seconds, start, end, worker, hp, epochs, proxy)  # fmt: skip

    def append_instant(
        self, kind: EventKind, trial: int, index: int, accuracy: float, spent: float, now: float
    ) -> None:
        """Append an event that costs nothing and takes no time (ask, drop, recommend) at
        ``spent`` worker-seconds and wall clock ``now``."""
        self.buffer += _PACK(kind, trial, index, accuracy, _NAN, _NAN, -1, 0.0, spent, now, now,
                             -1, -1, -1, -1)  # fmt: skip

    def extend(self, kind: EventKind, columns: dict[str, np.ndarray]) -> None:
        """Append events of one kind from arrays of equal shape (k,), one per column
        except ``kind``; a column left out is filled with -1 (ints) or NaN."""
        n = len(columns["index"])
        rows = np.empty(n, dtype=ROW_DTYPE)
        rows["kind"] = int(kind)
        for col in _NUMERIC:
            arr = columns.get(col.name)
            rows[col.name] = (-1 if col.name in _INT else _NAN) if arr is None else arr
        self.buffer += rows.tobytes()

    def _table(self) -> np.ndarray:
        """The events as a structured array (:data:`ROW_DTYPE`) of shape (n,), a copy."""
        return np.frombuffer(bytes(self.buffer), dtype=ROW_DTYPE)

    def arrays(self) -> dict[str, np.ndarray]:
        """Columns as arrays of shape (n,): ``step`` and :data:`EVENT_COLUMNS`, ``kind`` as
        names (:data:`EVENT_KINDS`)."""
        rows = self._table()
        n = len(rows)
        out: dict[str, np.ndarray] = {
            "step": np.arange(n, dtype=np.int64),
            "kind": _KIND_NAMES[rows["kind"]] if n else np.asarray([], dtype=str),
        }
        for col in _NUMERIC:
            dtype = np.int64 if col.name in _INT else np.float64
            out[col.name] = np.array(rows[col.name], dtype=dtype)
        return out

    def events(self) -> list[Event]:
        """Every event as an :class:`Event` (a copy)."""
        return [
            Event(i, EVENT_KINDS[row[0]], *row[1:]) for i, row in enumerate(self._table().tolist())
        ]


# ------------------------------------------------------------------------- the disk codec
def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype="<f8").view("<u8")


def kind_codes(kinds: np.ndarray) -> np.ndarray:
    """The :class:`EventKind` codes (uint8) of an array of kind names; ValueError for a
    name that is none."""
    kinds = np.asarray(kinds)
    codes = np.zeros(len(kinds), dtype=np.uint8)
    known = np.zeros(len(kinds), dtype=bool)
    for name, code in KIND_CODES.items():
        hit = kinds == name
        codes[hit] = code
        known |= hit
    if not known.all():
        raise ValueError(f"unknown event kind {kinds[~known][0]!r}; kinds are {EVENT_KINDS}")
    return codes


# On disk ``end`` is stored XOR ``worker_seconds`` and ``start`` XOR ``end - cost``, bit for
# bit: with one worker they are equal, so the stored words are zeros and compress to almost
# nothing.
def to_disk(events: dict[str, np.ndarray]) -> list[bytes]:
    """The raw bytes of each event column in :data:`COLUMNS` order, as the disk stores them
    (uncompressed; dtypes :data:`DISK_DTYPES`); an :data:`OPTIONAL` column the events lack
    is written as its fill."""
    end = np.asarray(events["end"], dtype=np.float64)
    n = len(end)
    stored = {
        "kind": kind_codes(events["kind"]),
        "end": _bits(end) ^ _bits(events["worker_seconds"]),
        "start": _bits(events["start"]) ^ _bits(end - events["cost"]),
    }
    out = []
    for col in COLUMNS:
        if col.name in ("start", "end"):
            out.append(stored[col.name].tobytes())  # the XOR words, bit for bit
        elif col.name in stored:
            out.append(np.ascontiguousarray(stored[col.name], dtype=col.disk).tobytes())
        elif col.name in OPTIONAL and col.name not in events:
            out.append(np.full(n, OPTIONAL[col.name], dtype=col.disk).tobytes())
        else:
            out.append(np.ascontiguousarray(events[col.name], dtype=col.disk).tobytes())
    return out


def disk_sizes(n: int) -> dict[str, int]:
    """Bytes each column of ``n`` events takes on disk (uncompressed)."""
    return {c.name: n * np.dtype(c.disk).itemsize for c in COLUMNS}


def from_disk(n: int, raw: dict[str, bytes]) -> dict[str, np.ndarray]:
    """The event arrays (as :meth:`EventLog.arrays`) of ``n`` events from the bytes of
    each column (:func:`to_disk`); an :data:`OPTIONAL` column missing from ``raw`` (a row
    stored before it existed) reads as its fill. ValueError for an unknown kind code."""
    cols = {
        c.name: np.frombuffer(raw[c.name], c.disk, count=n)
        if c.name in raw or c.name not in OPTIONAL
        else np.full(n, OPTIONAL[c.name], dtype=c.disk)
        for c in COLUMNS
    }
    if np.any(cols["kind"] >= len(EVENT_KINDS)):
        raise ValueError("column 'kind' holds an unknown event kind")
    out: dict[str, np.ndarray] = {"step": np.arange(n, dtype=np.int64)}
    out["kind"] = _KIND_NAMES[cols["kind"]]
    for col in _NUMERIC:
        if col.name not in ("start", "end"):
            out[col.name] = cols[col.name].astype(col.memory)
    end = (cols["end"].view("<u8") ^ _bits(out["worker_seconds"])).view("<f8")
    out["end"] = end.astype(np.float64)
    guess = out["end"] - out["cost"]
    out["start"] = (cols["start"].view("<u8") ^ _bits(guess)).view("<f8").astype(np.float64)
    return {name: out[name] for name in ("step", *EVENT_COLUMNS)}
