"""A storage's runs, events and provenance as rows, a pandas DataFrame or a CSV file.

The "runs" rows are scored runs (:func:`nasfilter.results.load_results`), so this module
sits above results; the storage itself knows nothing of them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nasfilter.files import atomic_write, check_not_input, write_csv
from nasfilter.results import load_results
from nasfilter.storage import Storage
from nasfilter.store import Store

EXPORTS = ("runs", "events", "provenance")


def rows(storage: Storage, what: str = "runs", trust_plugins: bool = False) -> list[dict[str, Any]]:
    """Rows of ``what``: "runs" (one per run, with its summary and metrics; ``trust_plugins``
    as in :func:`~nasfilter.results.load_results`), "events" (one row per event, with
    run_id) or "provenance"."""
    if what == "runs":
        return [r.row() for r in load_results(storage, trust_plugins=trust_plugins)]
    if what == "provenance":
        return [{**r, "data": json.dumps(r["data"], sort_keys=True)} for r in storage.provenance()]
    if what == "events":
        out: list[dict[str, Any]] = []
        for run in storage.stored_runs():
            assert run.run_id is not None
            cols = storage.events(run.run_id)
            names = list(cols)
            lists = [cols[k].tolist() for k in names]
            out.extend(
                {"run_id": run.run_id, **dict(zip(names, vals, strict=True))}
                for vals in zip(*lists, strict=True)
            )
        return out
    raise ValueError(f"unknown export {what!r}; choose one of {', '.join(EXPORTS)}")


def to_pandas(storage: Storage, what: str = "runs", trust_plugins: bool = False) -> Any:
    """A pandas DataFrame of ``what`` (see :func:`rows`); needs the pandas extra."""
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover
        raise ImportError("to_pandas needs pandas: pip install nasfilter[pandas]") from exc
    return pd.DataFrame(rows(storage, what, trust_plugins))


def export_csv(
    storage: Storage,
    path: str | os.PathLike[str],
    what: str = "runs",
    trust_plugins: bool = False,
) -> Path:
    """Write ``what`` (see :func:`rows`) as CSV with a header row; return the path.
    ValueError when ``path`` is the storage's database (or a file SQLite keeps beside it)."""
    target = Path(path)
    if isinstance(storage, Store):
        check_not_input(target, "export_csv", {"the database": storage.path}, ("the database",))
    table = rows(storage, what, trust_plugins=trust_plugins)
    if table:
        write_csv(target, table)
    else:  # nothing to export: an empty file
        with atomic_write(target, "w"):
            pass
    return target
