"""The storage interface: where runs write their events, and results read them back.

In the manner of Optuna's ``BaseStorage``: one abstract class, :class:`Storage`, with an
in-memory implementation here (:class:`InMemoryStorage`, for ``demo`` and ``reproduce``
without a database) and an SQLite one in :mod:`nasfilter.runs.storage.sqlite_store`
(:class:`~nasfilter.runs.storage.sqlite_store.Store`). A run writes through :meth:`Storage.add_run`
its
:class:`~nasfilter.runs.records.RunRecord`: events (trials, evaluations, proxy queries, the
searcher's recommendations), why it stopped and the searcher's and filter's parameters;
:meth:`Storage.add_spec` records the provenance of the table and oracle. Nothing else is
stored except a cache of scores (:class:`~nasfilter.runs.records.StoredScores`), which a
storage keeps as it is given them: :mod:`nasfilter.runs.results` computes them and decides
their version. A storage imports only the value types of :mod:`nasfilter.runs.records`.
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import json
from typing import Any

import numpy as np

from nasfilter.runs.records import RunRecord, RunSpec, ScoredRun, StoredScores, record_and_scores


def input_id(provenance: dict[str, Any]) -> str:
    """What identifies a table's or oracle's content: the SHA-256 of its arrays that the
    provenance records (``sha256``), whatever file it was read from; for provenance written
    before that was recorded, a digest of the whole provenance (its path included)."""
    digest = provenance.get("sha256")
    if isinstance(digest, str) and digest:
        return digest
    text = json.dumps(provenance, sort_keys=True, default=str)
    return "provenance:" + hashlib.sha256(text.encode()).hexdigest()


NOT_IDENTITY = frozenset({"created"})  # when an input was written or derived, not what it holds


def changed_inputs(old: dict[str, Any], new: dict[str, Any], what: str = "table") -> list[str]:
    """What differs between the stored provenance ``old`` and ``new`` of one spec's
    ``what`` ("table" or "oracle"), one phrase per field both record (a field only one
    records tells nothing). Timestamps (:data:`NOT_IDENTITY`) are not compared: a table
    derived afresh from the same benchmark folder is the same input (its ``sha256`` says)."""
    def text(value: Any) -> str:  # NaN equals NaN here, a tuple its list
        return json.dumps(value, sort_keys=True, default=str)

    out = []
    for key in sorted((set(old) & set(new)) - NOT_IDENTITY):
        if text(old[key]) != text(new[key]):
            shown = [str(v)[:80] for v in (old[key], new[key])]
            name = "content (sha256)" if key == "sha256" else key
            out.append(f"the {what}'s {name} was {shown[0]!r}, now {shown[1]!r}")
    return out


class Storage(abc.ABC):
    """Where runs are written and read back. Use as a context manager.

    Attributes:
        duplicates: runs :meth:`add_run` found already stored (by another writer) and
            skipped, since this object was opened.
        readonly: True when this storage is only read (a reader of a results database,
            which may be a read-only file): :meth:`put_scores` must not be called, and
            :func:`nasfilter.runs.results.load_results` scores in memory instead.
    """

    duplicates: int = 0
    readonly: bool = False

    @abc.abstractmethod
    def add_spec(
        self, spec: RunSpec, table_provenance: dict[str, Any], oracle_provenance: dict[str, Any]
    ) -> None:
        """Record ``spec`` and the provenance of its table and oracle (idempotent)."""

    @abc.abstractmethod
    def add_run(
        self, run: RunRecord | ScoredRun, scores: StoredScores | None = None
    ) -> int | None:
        """Write one run (status, :meth:`~nasfilter.runs.records.RunRecord.stored_info`, events;
        ``scores`` as its cache) atomically; return its id, or None if that (spec, seed) is
        already stored. A :class:`~nasfilter.runs.records.ScoredRun` brings its own scores."""

    @abc.abstractmethod
    def completed(self) -> set[tuple[str, int]]:
        """Every stored (spec key, seed)."""

    @abc.abstractmethod
    def stored_runs(self) -> list[RunRecord]:
        """Every stored run, in the order written, as records without their events
        (``events`` ``{}``; :meth:`events` reads them) and with ``run_id``, the provenance
        labels and the content ids (:func:`input_id`) of its inputs set."""

    @abc.abstractmethod
    def events(self, run_id: int) -> dict[str, np.ndarray]:
        """The event columns of one run (:data:`nasfilter.sim.problem.EVENT_COLUMNS`)."""

    @abc.abstractmethod
    def scores(self, run_id: int) -> StoredScores | None:
        """The cached scores of a run, or None."""

    @abc.abstractmethod
    def put_scores(
        self,
        run_id: int,
        version: int,
        summary: dict[str, Any],
        metrics: dict[str, float],
        curves: dict[str, np.ndarray],
    ) -> None:
        """Cache (replace) a run's scores."""

    @abc.abstractmethod
    def provenance(self) -> list[dict[str, Any]]:
        """Every stored table and oracle description: ``kind``, ``label``, ``data``."""

    def describe(self) -> str:
        """How messages name this storage."""
        return type(self).__name__

    def close(self) -> None:  # noqa: B027 (nothing to release by default)
        """Release resources."""

    def __enter__(self) -> Storage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InMemoryStorage(Storage):
    """A storage in this process's memory: gone when the object is."""

    def __init__(self) -> None:
        self.duplicates = 0
        # spec key -> (table provenance, oracle provenance)
        self._specs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._provenance: list[dict[str, Any]] = []
        self._runs: list[RunRecord] = []
        self._by_key: dict[tuple[str, int], int] = {}
        self._events: dict[int, dict[str, np.ndarray]] = {}
        self._scores: dict[int, StoredScores] = {}

    def describe(self) -> str:
        return "the in-memory storage"

    def add_spec(
        self, spec: RunSpec, table_provenance: dict[str, Any], oracle_provenance: dict[str, Any]
    ) -> None:
        known = self._specs.get(spec.key())
        if known is not None:
            changes = changed_inputs(known[0], table_provenance)
            changes += changed_inputs(known[1], oracle_provenance, "oracle")
            if changes:
                raise ValueError(
                    f"{self.describe()} holds runs of {spec.label!r} made with other inputs: "
                    f"{'; '.join(changes)}"
                )
        for kind, data in (("table", table_provenance), ("oracle", oracle_provenance)):
            entry = {"kind": kind, "label": str(data.get("label", "")), "data": data}
            if entry not in self._provenance:
                self._provenance.append(entry)
        self._specs.setdefault(spec.key(), (table_provenance, oracle_provenance))

    def add_run(
        self, run: RunRecord | ScoredRun, scores: StoredScores | None = None
    ) -> int | None:
        record, scores = record_and_scores(run, scores)
        spec = record.spec
        if spec is None or record.seed is None:
            raise ValueError("a stored run needs its spec and seed (run_one makes them)")
        key = (spec.key(), record.seed)
        inputs = self._specs.get(key[0])
        if inputs is None:
            raise LookupError(f"spec {spec.label!r} is not stored; add_spec first")
        if key in self._by_key:
            self.duplicates += 1
            return None
        run_id = len(self._runs) + 1
        self._runs.append(
            RunRecord(
                spec,
                int(record.seed),
                str(record.status),
                {},
                record.stored_info(),
                workers=spec.workers,
                run_id=run_id,
                table_label=str(inputs[0].get("label", "")),
                oracle_label=str(inputs[1].get("label", "")),
                table_id=input_id(inputs[0]),
                oracle_id=input_id(inputs[1]),
            )
        )
        self._by_key[key] = run_id
        self._events[run_id] = {k: np.array(v) for k, v in record.require_events().items()}
        if scores is not None:
            self.put_scores(run_id, scores.version, scores.summary, scores.metrics, scores.curves)
        return run_id

    def completed(self) -> set[tuple[str, int]]:
        return set(self._by_key)

    def stored_runs(self) -> list[RunRecord]:
        return [dataclasses.replace(r, info=dict(r.info)) for r in self._runs]

    def _require(self, run_id: int) -> None:
        if run_id not in self._events:
            raise LookupError(f"no run {run_id} in {self.describe()}")

    def events(self, run_id: int) -> dict[str, np.ndarray]:
        self._require(run_id)
        return {k: v.copy() for k, v in self._events[run_id].items()}

    def scores(self, run_id: int) -> StoredScores | None:
        self._require(run_id)
        got = self._scores.get(run_id)
        if got is None:
            return None
        curves = {k: v.copy() for k, v in got.curves.items()}  # callers may change them
        return StoredScores(got.version, dict(got.summary), dict(got.metrics), curves)

    def put_scores(
        self,
        run_id: int,
        version: int,
        summary: dict[str, Any],
        metrics: dict[str, float],
        curves: dict[str, np.ndarray],
    ) -> None:
        self._require(run_id)
        self._scores[run_id] = StoredScores(
            version,
            dict(summary),
            dict(metrics),
            {k: np.array(v) for k, v in curves.items()},
        )

    def provenance(self) -> list[dict[str, Any]]:
        return [dict(p, id=i + 1) for i, p in enumerate(self._provenance)]
