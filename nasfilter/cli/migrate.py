"""``nasfilter migrate-db``: rewrite a results database of an older schema in the current one."""

from __future__ import annotations

import argparse
from typing import Any

from nasfilter.runs.storage.migration import migrate
from nasfilter.runs.storage.sqlite_store import SCHEMA_VERSION


def register(sub: Any) -> None:
    p = sub.add_parser(
        "migrate-db",
        help="convert a results database of an older schema version",
        description="Rewrite a results database written by an older nasfilter in the current "
        "schema. The old file is kept beside it (DB.v<version>); metrics are recomputed "
        "from the stored events when the database is next read.",
    )
    p.add_argument("--db", required=True, help="the SQLite results database to migrate")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    kept, n = migrate(args.db)
    print(
        f"migrated {n} runs of {args.db} to schema version {SCHEMA_VERSION}; the old file is "
        f"kept as {kept}. Summarize with: nasfilter compare --db {args.db}"
    )
    return 0
