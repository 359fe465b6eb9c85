"""The storage conformance suite (nasfilter.testing.storage_suite) over both built-in
storages: the in-memory one and the SQLite results database."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasfilter.runs.records import RunRecord, ScoredRun, StoredScores
from nasfilter.runs.storage.base import InMemoryStorage, Storage
from nasfilter.runs.storage.sqlite_store import Store
from nasfilter.testing.storage_suite import SharedStorageSuite, StorageSuite, check_storage


class TestInMemoryStorage(StorageSuite):
    def make_storage(self, folder: Path) -> Storage:
        return InMemoryStorage()


class TestSQLiteStore(SharedStorageSuite):
    def make_storage(self, folder: Path) -> Storage:
        return Store(folder / "results.db")

    def reopen(self, folder: Path) -> Storage:
        return Store(folder / "results.db")


class Forgetful(InMemoryStorage):
    """A storage that breaks the interface: a duplicate run is stored again."""

    def add_run(
        self, run: RunRecord | ScoredRun, scores: StoredScores | None = None
    ) -> int | None:
        assert run.spec is not None
        self._by_key.pop((run.spec.key(), run.seed), None)
        return super().add_run(run, scores)


def test_check_storage_passes_a_conforming_storage() -> None:
    check_storage(lambda folder: InMemoryStorage())


def test_check_storage_names_the_broken_promise() -> None:
    with pytest.raises(AssertionError, match="test_a_run_added_twice_is_stored_once"):
        check_storage(lambda folder: Forgetful())
