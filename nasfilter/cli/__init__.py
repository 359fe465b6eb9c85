"""The ``nasfilter`` command line. Each subcommand lives in its own module of this package.

A subcommand module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a function taking the parsed namespace and returning an exit code. Modules
import heavy dependencies only inside that function, so ``nasfilter --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sqlite3
import sys
import zlib
from collections.abc import Sequence

from nasfilter.version import __version__

# Subcommand modules, in the order `--help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "show",
    "convert",
    "measure",
    "run",
    "compare",
    "ceiling",
    "report",
    "migrate",
    "demo",
    "reproduce",
    "survey",
    "profile",
    "calibrate",
    "host_figure",
    "zero_cost",
)


# Each command's one-line help, as `nasfilter --help` lists it, so that the listing imports no
# command's module (each module registers the same text; tests/cli/test_cli_help.py checks it).
COMMAND_HELP: dict[str, str] = {
    "show": "print one architecture's record",
    "convert": "convert a NATS-Bench sss or tss archive into a benchmark (folder, or .npz table)",
    "measure": "measure utilization and throughput into a cache",
    "run": "run searchers x filters x seeds into a results database",
    "compare": "summarize a results database",
    "ceiling": "the best HV ratio any run could reach within a budget (the clairvoyant ceiling)",
    "report": "write figures and report.html for a results database",
    "migrate-db": "convert a results database of an older schema version",
    "demo": "run the study's comparison on the real table",
    "reproduce": "regenerate the study's figures, summary.json and report.html",
    "survey": "the study's CNN survey (§3): intensity, utilization, fronts and folding",
    "profile": "one model's predicted per-layer time on a GPU, what bounds it, and what-ifs",
    "calibrate": "fit the GPU model to measurements, or hold it against another GPU's",
    "host-figure": "a machine's host time per kernel from tss networks measured on it, for a "
    "device file",
    "zero-cost": "compute zero-cost proxy scores (synflow, snip, ...) into a .npz",
}

# The extra that brings everything a command needs, where one does (else each package's own).
COMMAND_EXTRAS = {"survey": "survey", "profile": "survey", "reproduce": "plot", "report": "plot"}


def build_parser(only: str | None = None, *, listing: bool = False) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of ``only`` that one (what a run of it needs:
    registering the others imports their modules, up to a second for a cached survey). With
    ``listing``, only the commands' names and one-line help (:data:`COMMAND_HELP`): what
    ``nasfilter --help`` prints, without importing any command's module."""
    parser = argparse.ArgumentParser(
        prog="nasfilter",
        description="Simulated neural architecture search on the NATS-Bench size and topology "
        "spaces.",
    )

    parser.add_argument(
        "--version", action="version", version=f"nasfilter {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    if listing:
        for command, text in COMMAND_HELP.items():
            sub.add_parser(command, help=text)
        return parser
    for name in COMMAND_MODULES if only is None else (only,):
        importlib.import_module(f"nasfilter.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; bad input or an OS error prints ``nasfilter CMD: error: ...``, returns 2.

    Argument errors name their flag (argparse's ``argument --FLAG: ...``); ``--help`` and
    ``--version`` return 0 after printing."""
    given = list(sys.argv[1:] if argv is None else argv)
    if not given or given[0].startswith("-"):  # no command: --help, --version or an error
        try:
            build_parser(listing=True).parse_args(given)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 2
    first = given[0].replace("-", "_") if given else ""
    parser = build_parser(first if first in COMMAND_MODULES else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help, --version, or a bad argument (named)
        return exc.code if isinstance(exc.code, int) else 2
    if sys.stdout is not None and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="surrogateescape")  # non-UTF-8 file names, as they are
    try:
        code: int = args.func(args)
        if sys.stdout is not None:  # None when standard output is closed (`>&-`)
            sys.stdout.flush()  # inside the try, so a closed pipe is caught here
    except BrokenPipeError:
        # The reader went away (`nasfilter show 0 | head -1`): stop quietly, as cat does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except ModuleNotFoundError as exc:  # an optional package: name the extra that brings it
        from nasfilter.extras import missing_message

        extra = COMMAND_EXTRAS.get(args.command)
        message = missing_message(exc.name or "", f"nasfilter {args.command}", extra)
        if message is None:
            raise
        print(f"nasfilter {args.command}: error: {message}", file=sys.stderr)
        return 2
    except (ValueError, LookupError, OSError) as exc:
        print(f"nasfilter {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (sqlite3.Error, zlib.error) as exc:  # read outside nasfilter.runs.storage.sqlite_store
        print(f"nasfilter {args.command}: error: a database is damaged: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"nasfilter {args.command}: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
