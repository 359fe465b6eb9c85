"""Conformance checks every :class:`~nasfilter.runs.storage.base.Storage` must pass, shipped for
reuse.

As Optuna ships ``StorageTestCase``: in a storage's own tests (pytest collects the ``test_*``
methods of a ``Test*`` subclass)::

    from nasfilter.testing.storage_suite import SharedStorageSuite, StorageSuite

    class TestMyStorage(StorageSuite):
        def make_storage(self, folder):
            return MyStorage(folder / "runs")

    class TestMySharedStorage(SharedStorageSuite):  # several handles onto one store
        def make_storage(self, folder):
            return MyStorage(folder / "runs")

        def reopen(self, folder):
            return MyStorage(folder / "runs")

or call :func:`check_storage`, which runs every check and raises AssertionError naming the
one that failed. Each check gets a fresh empty folder. The checks:

- an empty storage holds no runs, specs or provenance;
- runs, specs and events round trip: ids, spec, seed, status, info, labels; every event
  column with its dtype, bit for bit (NaN included); the scores cache with its version;
- idempotence: a spec added twice is stored once; a run added twice is stored once, the
  second ``add_run`` returns None and counts in ``duplicates``;
- ordering: runs come back in the order written, with increasing ids;
- missing keys: a run of an unknown spec, the events and scores of an unknown run id are
  refused with LookupError; what is read back is a copy the caller may change;
- :class:`SharedStorageSuite` (a store several handles open, as SQLite files are): what one
  handle writes another reads, after close too; a run written through two handles, also
  from two threads at once, is stored once and counted once as a duplicate.

The records come from short real runs on the embedded synthetic table with the roofline
proxy (loaded once a process, a few seconds).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.runs.experiment import RunRecord, RunSpec, ScoredRun, provenance, run_one
from nasfilter.runs.storage.base import Storage
from nasfilter.sim.clock import Budget

# Three kinds of run: evaluations only; proxy queries and drops; nothing evaluated (NaNs).
SPECS = (
    RunSpec("random", budget=Budget(2000.0), oracle="roofline", n_ticks=5),
    RunSpec(
        "random",
        filter="proxy-threshold",
        budget=Budget(2500.0),
        proxy_cost=0.05,
        oracle="roofline",
        n_ticks=5,
        workers=4,
    ),
    RunSpec("random", filter="drop-all", budget=Budget(2000.0), oracle="roofline", max_idle=50),
)


@functools.lru_cache(maxsize=16)
def sample_record(which: int = 0, seed: int = 0) -> ScoredRun:
    """The scored record of a short run of ``SPECS[which]`` with ``seed`` (cached)."""
    return run_one(SPECS[which], seed)


def _add(storage: Storage, record: ScoredRun | RunRecord) -> int | None:
    assert record.spec is not None
    storage.add_spec(record.spec, *provenance(record.spec))
    return storage.add_run(record)


def _raises(kind: type[BaseException], call: Callable[[], object], what: str) -> None:
    try:
        call()
    except kind:
        return
    except Exception as exc:  # any other error is the finding
        raise AssertionError(
            f"{what} raised {type(exc).__name__}: {exc}, not {kind.__name__}"
        ) from exc
    raise AssertionError(f"{what} raised nothing, not {kind.__name__}")


def _same(a: Any, b: Any) -> bool:
    """Equal values, NaN equal to NaN (numbers, dicts of them, arrays)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def assert_same_columns(got: dict[str, np.ndarray], want: dict[str, np.ndarray], what: str) -> None:
    """Same column names, dtypes (kind and size) and values, floats bit for bit."""
    assert list(got) == list(want), f"{what}: columns {list(got)}, expected {list(want)}"
    for name, expected in want.items():
        actual = np.asarray(got[name])
        assert actual.dtype.kind == expected.dtype.kind, (
            f"{what}: column {name!r} has dtype {actual.dtype}, expected {expected.dtype}"
        )
        assert actual.shape == expected.shape, f"{what}: column {name!r} shape {actual.shape}"
        if expected.dtype.kind == "f":
            equal = np.array_equal(actual.view(np.uint64), expected.view(np.uint64))
        else:
            equal = np.array_equal(actual, expected)
        assert equal, f"{what}: column {name!r} differs"


class StorageSuite:
    """Conformance checks for a storage; subclass as ``Test...`` and define make_storage."""

    def make_storage(self, folder: Path) -> Storage:
        """A fresh, empty storage for writing, in the empty folder ``folder``."""
        raise NotImplementedError("define make_storage(folder) in your Test class")

    @contextmanager
    def fresh(self) -> Iterator[tuple[Storage, Path]]:
        """A new storage in a new temporary folder, closed afterwards."""
        with tempfile.TemporaryDirectory(prefix="nasfilter-storage-") as name:
            folder = Path(name)
            with self.make_storage(folder) as storage:
                yield storage, folder

    def test_an_empty_storage_holds_nothing(self) -> None:
        with self.fresh() as (storage, _):
            assert storage.completed() == set()
            assert storage.stored_runs() == []
            assert storage.provenance() == []
            assert storage.duplicates == 0 and storage.readonly is False
            assert isinstance(storage.describe(), str) and storage.describe()

    def test_a_run_of_an_unknown_spec_is_refused(self) -> None:
        with self.fresh() as (storage, _):
            _raises(
                LookupError, lambda: storage.add_run(sample_record()), "add_run before add_spec"
            )
            assert storage.stored_runs() == [] and storage.completed() == set()

    def test_runs_round_trip(self) -> None:
        records = [sample_record(0, 0), sample_record(1, 0), sample_record(2, 3)]
        with self.fresh() as (storage, _):
            ids = [_add(storage, r) for r in records]
            assert all(isinstance(i, int) for i in ids) and len(set(ids)) == len(ids), ids
            stored = storage.stored_runs()
            assert [s.run_id for s in stored] == ids
            labels = {(p["kind"], p["label"]) for p in storage.provenance()}
            for run, record in zip(stored, records, strict=True):
                assert run.spec == record.spec and run.spec is not None
                assert run.spec.key() == record.spec.key()
                assert run.seed == record.seed and type(run.seed) is int
                assert run.status == record.status and run.events == {}
                info = record.record.stored_info()
                assert _same(run.info, info), (run.info, info)
                assert ("table", run.table_label) in labels
                assert ("oracle", run.oracle_label) in labels
            assert storage.completed() == {(r.spec.key(), r.seed) for r in records}

    def test_events_round_trip_bit_for_bit(self) -> None:
        records = [sample_record(0, 0), sample_record(1, 0), sample_record(2, 3)]
        with self.fresh() as (storage, _):
            for record in records:
                run_id = _add(storage, record)
                assert run_id is not None
                what = f"events of {record.spec.label} (run {run_id})"
                assert_same_columns(storage.events(run_id), record.events, what)

    def test_scores_round_trip_and_are_replaced(self) -> None:
        record = sample_record(1, 0)
        with self.fresh() as (storage, _):
            run_id = _add(storage, record)
            assert run_id is not None
            got = storage.scores(run_id)
            assert got is not None and got.version == record.version
            assert _same(got.summary, record.summary), got.summary
            assert _same(got.metrics, record.metrics), got.metrics
            assert_same_columns(got.curves, record.curves, "cached curves")
            curves = {k: v + 1 for k, v in record.curves.items()}
            storage.put_scores(run_id, 99, {"n_evaluations": 1}, {"recall": math.nan}, curves)
            again = storage.scores(run_id)
            assert again is not None and again.version == 99
            assert again.summary == {"n_evaluations": 1} and math.isnan(again.metrics["recall"])
            assert_same_columns(again.curves, curves, "replaced curves")

    def test_a_record_without_scores_caches_none(self) -> None:
        record = sample_record(0, 1)
        unscored = dataclasses.replace(record.record, seed=5)
        with self.fresh() as (storage, _):
            run_id = _add(storage, unscored)
            assert run_id is not None and storage.scores(run_id) is None

    def test_a_spec_added_twice_is_stored_once(self) -> None:
        spec = SPECS[0]
        table, oracle = provenance(spec)
        with self.fresh() as (storage, _):
            storage.add_spec(spec, table, oracle)
            first = storage.provenance()
            storage.add_spec(spec, table, oracle)
            assert storage.provenance() == first
            assert sorted(p["kind"] for p in first) == ["oracle", "table"]
            ids = [p["id"] for p in first]
            assert len(set(ids)) == 2, ids
            by_kind = {p["kind"]: p for p in first}
            assert by_kind["table"]["label"] == table["label"]
            assert _same(by_kind["oracle"]["data"], oracle)

    def test_a_run_added_twice_is_stored_once(self) -> None:
        record = sample_record(0, 0)
        with self.fresh() as (storage, _):
            first = _add(storage, record)
            assert storage.add_run(record) is None
            assert storage.duplicates == 1
            assert [r.run_id for r in storage.stored_runs()] == [first]
            assert first is not None
            assert_same_columns(storage.events(first), record.events, "events after a duplicate")

    def test_runs_come_back_in_the_order_written(self) -> None:
        seeds = (2, 0, 1)
        with self.fresh() as (storage, _):
            ids = [_add(storage, sample_record(0, s)) for s in seeds]
            stored = storage.stored_runs()
            assert [r.seed for r in stored] == list(seeds)
            assert ids == sorted(ids) and [r.run_id for r in stored] == ids  # type: ignore[type-var]

    def test_unknown_run_ids_are_refused(self) -> None:
        with self.fresh() as (storage, _):
            run_id = _add(storage, sample_record(0, 0))
            assert run_id is not None
            missing = run_id + 1000
            _raises(LookupError, lambda: storage.events(missing), f"events({missing})")
            _raises(LookupError, lambda: storage.scores(missing), f"scores({missing})")

    def test_put_scores_of_an_unknown_run_is_refused(self) -> None:
        with self.fresh() as (storage, _):
            record = sample_record(0, 0)
            run_id = _add(storage, record)
            assert run_id is not None
            missing = run_id + 1000
            _raises(
                LookupError,
                lambda: storage.put_scores(missing, 1, {}, {}, record.curves),
                f"put_scores({missing})",
            )
            assert storage.scores(run_id) is not None

    def test_what_is_read_back_is_a_copy(self) -> None:
        record = sample_record(0, 0)
        with self.fresh() as (storage, _):
            run_id = _add(storage, record)
            assert run_id is not None
            events = storage.events(run_id)
            events["index"][:] = -7
            events["accuracy"][:] = 0.0
            assert_same_columns(storage.events(run_id), record.events, "events after a change")
            scores = storage.scores(run_id)
            assert scores is not None
            for curve in scores.curves.values():
                curve[:] = -1
            again = storage.scores(run_id)
            assert again is not None
            assert_same_columns(again.curves, record.curves, "curves after a change")


class SharedStorageSuite(StorageSuite):
    """The checks of :class:`StorageSuite` plus those of several handles onto one store."""

    def reopen(self, folder: Path) -> Storage:
        """Another handle (another writer) onto the storage :meth:`make_storage` made in
        ``folder``."""
        raise NotImplementedError("define reopen(folder) in your Test class")

    def test_another_handle_reads_what_one_wrote(self) -> None:
        record = sample_record(1, 0)
        with self.fresh() as (storage, folder):
            run_id = _add(storage, record)
            assert run_id is not None
            with self.reopen(folder) as other:
                assert [r.run_id for r in other.stored_runs()] == [run_id]
                assert other.completed() == storage.completed()
                assert_same_columns(other.events(run_id), record.events, "events, other handle")
        # and after every handle is closed
        with tempfile.TemporaryDirectory(prefix="nasfilter-storage-") as name:
            folder = Path(name)
            with self.make_storage(folder) as storage:
                run_id = _add(storage, record)
            with self.reopen(folder) as other:
                assert other.provenance() and [r.run_id for r in other.stored_runs()] == [run_id]

    def test_a_run_written_through_two_handles_is_stored_once(self) -> None:
        record = sample_record(0, 0)
        with self.fresh() as (storage, folder):
            first = _add(storage, record)
            with self.reopen(folder) as other:
                assert _add(other, record) is None
                assert other.duplicates == 1 and storage.duplicates == 0
            assert [r.run_id for r in storage.stored_runs()] == [first]

    def test_two_threads_writing_the_same_runs_store_each_once(self) -> None:
        records = [sample_record(0, s) for s in range(3)]
        with self.fresh() as (storage, folder):
            storage.add_spec(records[0].spec, *provenance(records[0].spec))
            duplicates: list[int] = []
            errors: list[BaseException] = []

            def write() -> None:
                try:
                    with self.reopen(folder) as handle:
                        for record in records:
                            handle.add_run(record)
                        duplicates.append(handle.duplicates)
                except BaseException as exc:  # reported below
                    errors.append(exc)

            threads = [threading.Thread(target=write) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors, f"a writer failed: {errors[0]!r}"
            seeds = [r.seed for r in storage.stored_runs()]
            assert None not in seeds and sorted(s for s in seeds if s is not None) == [0, 1, 2]
            assert sum(duplicates) == len(records), duplicates


def _run_all(suite: object) -> None:
    for name in sorted(dir(suite)):
        if name.startswith("test_"):
            try:
                getattr(suite, name)()
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}") from exc


def check_storage(
    make: Callable[[Path], Storage], reopen: Callable[[Path], Storage] | None = None
) -> None:
    """Run every check on storages from ``make(folder)`` (and, given ``reopen(folder)``,
    the shared-store checks); AssertionError naming the check that failed."""
    if reopen is None:

        class _Suite(StorageSuite):
            def make_storage(self, folder: Path) -> Storage:
                return make(folder)

        _run_all(_Suite())
        return

    again = reopen

    class _Shared(SharedStorageSuite):
        def make_storage(self, folder: Path) -> Storage:
            return make(folder)

        def reopen(self, folder: Path) -> Storage:
            return again(folder)

    _run_all(_Shared())
