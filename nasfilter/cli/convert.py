"""``nasfilter convert ARCHIVE -o TABLE.npz``: turn a NATS-Bench sss archive into a table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nasfilter.datasets import DATASETS


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
    p.add_argument("--dataset", default="cifar10", help=f"one of {', '.join(DATASETS)}")
    p.add_argument(
        "-o", "--output", required=True, metavar="TABLE.npz", help="the table file to write"
    )
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="accept an archive lacking some architectures (their rows are NaN, marked absent)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.set_defaults(func=run)


def _check_output(output: Path, force: bool) -> None:
    if output.suffix != ".npz":
        raise ValueError(f"the output table must end in .npz, got {str(output)!r}")
    if output.is_dir():
        raise ValueError(f"the output {str(output)!r} is a folder; give a file name ending in .npz")
    if output.exists() and not force:
        raise FileExistsError(f"{str(output)!r} already exists; pass --force to overwrite it")


def run(args: argparse.Namespace) -> int:
    from nasfilter.convert import convert_archive

    output = Path(args.output)
    _check_output(output, args.force)
    try:
        table = convert_archive(
            args.archive, args.dataset, allow_partial=args.allow_partial, progress=not args.quiet
        )
    except ImportError as exc:  # nats_bench missing: the message says what to install
        print(f"nasfilter convert: error: {exc}", file=sys.stderr)
        return 2
    _check_output(output, args.force)  # it may have appeared while converting
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
