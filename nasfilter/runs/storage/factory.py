"""Choosing a storage by path: :func:`get_storage` (as ``optuna.storages`` picks by URL).

``None`` is the in-memory storage (gone with the object); a path is the SQLite results
database there (:class:`~nasfilter.runs.storage.sqlite_store.Store`, created if missing).
"""

from __future__ import annotations

import os

from nasfilter.runs.storage.base import InMemoryStorage, Storage
from nasfilter.runs.storage.sqlite_store import Store


def get_storage(path: str | os.PathLike[str] | None = None, *, readonly: bool = False) -> Storage:
    """The storage at ``path``: None for :class:`~nasfilter.runs.storage.base.InMemoryStorage`, else
    the SQLite results database :class:`~nasfilter.runs.storage.sqlite_store.Store` (created if
    missing, unless
    ``readonly``: then an existing database is opened only to read). Use it as a context
    manager. Raises ValueError for a path that is not a str or path, or ``readonly``
    without a path; :class:`~nasfilter.runs.storage.sqlite_store.StoreError` for a file that is not
    a results database."""
    if not isinstance(readonly, bool):
        raise ValueError(f"readonly must be True or False, got {readonly!r}")
    if path is None:
        if readonly:
            raise ValueError(
                "readonly=True needs the path of an existing results database; "
                "the in-memory storage (path=None) starts empty"
            )
        return InMemoryStorage()
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise ValueError(
            f"path must be a file path (str or os.PathLike) or None for the in-memory "
            f"storage, got {path!r}"
        )
    if not os.fspath(path):
        raise ValueError("path is empty: give a file such as 'results.db', or None")
    if readonly:
        return Store(path, create=False)
    return Store(path)
