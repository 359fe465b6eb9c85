"""The SQLite file under a results database: opening it safely, the schema version, one
write transaction at a time, SQLite's errors as :class:`~nasfilter.runs.storage.codec.StoreError`.

:class:`ResultsFile` is the plumbing :class:`~nasfilter.runs.storage.sqlite_store.Store` is built
on; it knows
nothing of runs. Another program's SQLite database is refused untouched, and a database of
another schema version before anything is read from it, naming the version and the
migration command (``nasfilter migrate-db``).
"""

from __future__ import annotations

import os
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nasfilter.files import check_sqlite_writable, connect_sqlite_readonly, sqlite_uri
from nasfilter.runs.storage.codec import BUSY_TIMEOUT, StoreError, database_problem

SCHEMA_VERSION = 3
# older schema versions nasfilter.runs.storage.migration rewrites in this one
MIGRATABLE = ("1", "2")


class ResultsFile:
    """An open results database file (see :class:`~nasfilter.runs.storage.sqlite_store.Store` for
    the arguments); ``schema`` is the SQL that sets up a new one."""

    readonly: bool = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        timeout: float = BUSY_TIMEOUT,
        create: bool = True,
        readonly: bool | None = None,
        schema: str = "",
    ) -> None:
        self.path = Path(path)
        self.duplicates = 0
        self.readonly = not create if readonly is None else readonly
        if create and self.readonly:
            raise ValueError("a Store cannot both create a database and be read-only")
        if self.path.is_dir():
            raise StoreError(f"database path {str(self.path)!r} is a directory")
        if not create and not self.path.is_file():
            raise StoreError(f"results database {str(self.path)!r} does not exist")
        if not self.readonly:
            check_sqlite_writable(self.path, "results database")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if not self.readonly:
                self._con = sqlite3.connect(
                    sqlite_uri(self.path), timeout=timeout, isolation_level=None, uri=True
                )
            else:  # a reader: never writes, and works on a read-only file and folder
                self._con = connect_sqlite_readonly(self.path, "results database")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open results database {str(self.path)!r}: {exc}") from exc
        self._timeout = timeout
        try:
            self._con.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._refuse_foreign(create)
            if self._has_meta():
                self._check_version()  # refuse another version before touching the file
            if not self.readonly:
                self._con.execute("PRAGMA journal_mode = WAL")
                self._con.execute("PRAGMA synchronous = NORMAL")
                self._con.execute("PRAGMA foreign_keys = ON")
            if create:
                with self._write():
                    for statement in schema.split(";"):
                        if statement.strip():
                            self._con.execute(statement)
                    self._check_version()
            else:
                self._check_version()
        except StoreError:
            self._con.close()
            raise
        except sqlite3.DatabaseError as exc:
            self._con.close()
            text = str(exc)
            if "locked" in text or "busy" in text or "full" in text or "I/O" in text:
                raise database_problem(self.path, exc, timeout) from exc
            raise StoreError(
                f"{str(self.path)!r} is not a nasfilter results database: {exc}"
            ) from exc

    @contextmanager
    def _guard(self, run_id: int | None = None) -> Iterator[None]:
        """Turn SQLite's and zlib's errors inside into a StoreError naming the database
        (and the run)."""
        try:
            yield
        except (sqlite3.DatabaseError, zlib.error) as exc:
            problem = database_problem(self.path, exc, self._timeout)
            if run_id is not None:
                problem.args = (f"run {run_id}: {problem.args[0]}",)
            raise problem from exc

    def _refuse_readonly(self, what: str) -> None:
        if self.readonly:
            raise StoreError(
                f"{self.describe()} was opened read-only, so {what} cannot be written; open "
                "it with Store(path) or Store(path, create=False, readonly=False)"
            )

    # ------------------------------------------------------------------ plumbing
    def _refuse_foreign(self, create: bool) -> None:
        """StoreError, before anything is written, unless the file is empty (and ``create``)
        or already holds nasfilter's schema version."""
        tables = {
            row[0]
            for row in self._con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if not tables and create:
            return
        if (
            "meta" in tables
            and self._con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        ):
            return
        if not tables:
            raise StoreError(
                f"{str(self.path)!r} is not a nasfilter results database (it holds no "
                "results); write one with `nasfilter run --db ...`"
            )
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise StoreError(
            f"{str(self.path)!r} is not a nasfilter results database: it holds other tables "
            f"({shown}); give --db a new file"
        )

    def _check_version(self) -> None:
        """Record the schema version in a new database; StoreError for another version."""
        row = self._con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            self._con.execute(
                "INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        elif row[0] != str(SCHEMA_VERSION):
            how = (
                f"migrate it with `nasfilter migrate-db --db {self.path}` (the old file is "
                "kept beside it), or use a new --db file"
                if row[0] in MIGRATABLE
                else "use a new --db file, or the nasfilter version that wrote it"
            )
            raise StoreError(
                f"{str(self.path)!r} has results schema version {row[0]}; this nasfilter "
                f"reads and writes version {SCHEMA_VERSION}: {how}"
            )

    def _has_meta(self) -> bool:
        return (
            self._con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone()
            is not None
        )

    def describe(self) -> str:
        return repr(str(self.path))

    def close(self) -> None:
        self._con.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; BEGIN IMMEDIATE takes the write lock up front. SQLite's
        errors (a full disk, a lock held too long) come out as a StoreError naming the
        file; a transaction SQLite already rolled back is not rolled back twice."""
        con = self._con
        with self._guard():
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                if con.in_transaction:
                    try:
                        con.execute("ROLLBACK")
                    except sqlite3.DatabaseError:  # pragma: no cover (SQLite gave up already)
                        pass
                raise
            con.execute("COMMIT")
