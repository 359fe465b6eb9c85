"""``nasfilter convert ARCHIVE -o TABLE.npz``: turn a NATS-Bench sss archive into a table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nasfilter.cli.args import add_dataset, add_force


def register(sub: Any) -> None:
    p = sub.add_parser(
        "convert",
        help="convert a NATS-Bench sss archive into a table (.npz)",
        description="Read a NATS-Bench size-space archive through the nats_bench API "
        "(pip install nasfilter[nats]) and write one dataset's records as a table that "
        "loads in milliseconds. ARCHIVE is the folder NATS-sss-v1_0-50262-simple or the "
        "file NATS-sss-v1_0-50262.pickle.pbz2.",
    )
    p.add_argument("archive", metavar="ARCHIVE", help="the NATS-Bench sss archive folder or file")
    add_dataset(p)
    p.add_argument(
        "-o", "--output", required=True, metavar="TABLE.npz", help="the table file to write"
    )
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="accept an archive lacking some architectures (their rows are NaN, marked absent)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_force(p, "output file")
    p.set_defaults(func=run)


def _check_output(args: argparse.Namespace) -> Path:
    from nasfilter.cli.args import check_output_file

    return check_output_file(
        args.output,
        "-o/--output",
        force=args.force,
        inputs={"ARCHIVE": args.archive},
        suffix=".npz",
    )


def run(args: argparse.Namespace) -> int:
    from nasfilter.convert import convert_archive

    output = _check_output(args)
    try:
        table = convert_archive(
            args.archive, args.dataset, allow_partial=args.allow_partial, progress=not args.quiet
        )
    except ImportError as exc:  # nats_bench missing: the message says what to install
        print(f"nasfilter convert: error: {exc}", file=sys.stderr)
        return 2
    _check_output(args)  # it may have appeared while converting
    try:
        table.save(output)  # atomic: a temporary file, then a rename
    except OSError as exc:  # permissions, a full disk, a parent that is a file, ...
        print(f"nasfilter convert: error: cannot write {str(output)!r}: {exc}", file=sys.stderr)
        return 2
    prov = table.provenance
    checksum = (prov.checksum or "")[:12]
    print(
        f"wrote {output}: {table.n_present} of {len(table.present)} rows present, "
        f"dataset {table.dataset.name}, seeds {list(table.seeds)}, source {prov.source}, "
        f"sha256 {checksum}"
    )
    return 0
