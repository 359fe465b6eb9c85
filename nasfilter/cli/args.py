"""Checks every subcommand shares: argument types that name their flag, and output paths.

Rules for the files a command writes (one place, so every command behaves alike):

- a missing parent folder is refused, never created (a typo would otherwise scatter
  folders, even at the filesystem root);
- an existing output file is refused unless the command's ``--force`` is given;
- an output that is one of the command's own inputs is refused, even with ``--force``;
- a folder where a file is expected (or a file where a folder is) is named as such;
- an empty name (``''``, which would mean the current folder) and a symbolic link that
  leads nowhere (a loop) are refused by flag.

Databases a command adds to (``run --db``, ``measure --cache``) are not overwritten, so they
need no ``--force``; they get the folder and input checks.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from nasfilter.bench.datasets import DATASETS, get_dataset
from nasfilter.bench.lookup import SPACE_DEFAULT_TABLE, table_name
from nasfilter.bench.proxy import DEFAULT_ORACLE, SPACE_DEFAULT_ORACLE
from nasfilter.bench.tss_real import TSS_TABLES
from nasfilter.files import PathArg as PathArg
from nasfilter.files import check_not_input as check_not_input  # the one rule, shared
from nasfilter.files import check_path_text

TABLE_HELP = (
    "the table: 'real' (default: NATS-Bench's real hp-90 validation accuracies, seed 777, "
    "with modelled times), 'synthetic' (the embedded surrogate), a .npz converted with "
    "`nasfilter convert --dataset`, or a full-fidelity benchmark folder (`nasfilter convert` "
    "without --dataset; it brings its learning curves)"
)


# ---------------------------------------------------------------- argument types
def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer >= ``low``; argparse names the flag on error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {low}, got {text!r}"
            ) from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def seconds(positive: bool) -> Callable[[str], float]:
    """An argparse ``type``: finite simulated seconds, > 0 (``positive``) or >= 0."""
    bound = "> 0" if positive else ">= 0"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number of simulated seconds {bound}, got {text!r}"
            ) from None
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(
                f"expected a finite number of simulated seconds {bound}, got {text!r}"
            )
        return value

    parse.__name__ = f"seconds {bound}"
    return parse


def dataset_name(text: str) -> str:
    """An argparse ``type``: a dataset name or alias (case-insensitive), as its canonical
    name."""

    try:
        return get_dataset(text).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_dataset(p: argparse.ArgumentParser) -> None:
    """The ``--dataset`` flag, checked while parsing."""

    p.add_argument(
        "--dataset", default="cifar10", type=dataset_name, help=f"one of {', '.join(DATASETS)}"
    )


def add_inputs(p: argparse.ArgumentParser, device_help: str) -> None:
    """The flags that name a run's inputs, as ``run`` takes them: ``--table``,
    ``--dataset``, ``--space``, ``--oracle``, ``--device`` (``device_help``) and
    ``--oracle-cache``."""
    p.add_argument("--table", help=TABLE_HELP)
    add_dataset(p)
    add_space(p)
    p.add_argument(
        "--oracle",
        default=None,
        help=f"proxy backend (default {DEFAULT_ORACLE}; measured with --space tss)",
    )
    p.add_argument("--device", default=None, help=device_help)
    p.add_argument(
        "--oracle-cache", help="measurement cache or exported .npz for a measured oracle"
    )


def add_force(p: argparse.ArgumentParser, what: str) -> None:
    """The ``--force`` flag of a command that writes ``what``."""
    p.add_argument(
        "--force",
        action="store_true",
        help=f"overwrite an existing {what} (never one of the command's inputs)",
    )


@contextmanager
def naming(flag: str) -> Iterator[None]:
    """Prefix ``flag: `` to the message of a ValueError or LookupError raised inside (the
    exception keeps its type), unless the message names the flag already."""
    try:
        yield
    except (ValueError, LookupError) as exc:
        message = str(exc.args[0]) if exc.args else ""
        if flag not in message:
            exc.args = (f"{flag}: {message}", *exc.args[1:])
        raise


ORACLE_FLAGS = "--oracle/--device/--oracle-cache"


# ---------------------------------------------------------------------- paths
def check_parent(path: str | os.PathLike[str], flag: str) -> Path:
    """``path`` as a Path; FileNotFoundError naming ``flag`` when its folder is missing."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.exists():
        raise FileNotFoundError(
            f"{flag} {str(target)!r}: the folder {str(folder)!r} does not exist; create it "
            "first (nasfilter never creates folders on its own)"
        )
    if not folder.is_dir():
        raise NotADirectoryError(f"{flag} {str(target)!r}: {str(folder)!r} is not a folder")
    return target


def check_output_file(
    path: str | os.PathLike[str],
    flag: str,
    *,
    force: bool,
    inputs: Mapping[str, PathArg] | None = None,
    databases: tuple[str, ...] = (),
    suffix: str | None = None,
) -> Path:
    """The output file ``path`` of ``flag``, checked by the rules of this module."""
    check_path_text(path, flag)
    target = Path(path)
    if suffix is not None and target.suffix != suffix:
        raise ValueError(f"{flag} must name a {suffix} file, got {str(target)!r}")
    if target.is_dir():
        raise IsADirectoryError(f"{flag} {str(target)!r} is a folder; give a file name")
    if target.exists() and not target.is_file():
        raise ValueError(f"{flag} {str(target)!r} is not a regular file; give a file name")
    check_parent(target, flag)
    check_not_input(target, flag, inputs or {}, databases)
    if target.exists() and not force:
        raise FileExistsError(
            f"{flag} {str(target)!r} already exists; pass --force to overwrite it"
        )
    check_writable_folder(target.parent if str(target.parent) else Path("."), flag, target)
    return target


def check_writable_folder(folder: Path, flag: str, target: Path) -> None:
    """PermissionError naming ``flag`` when this user may not create files in ``folder``
    (outputs are written beside their target, then renamed over it)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(
            f"{flag} {str(target)!r}: the folder {str(folder)!r} is not writable for this "
            "user (no write permission); choose a writable folder"
        )


def check_database(
    path: str | os.PathLike[str], flag: str, inputs: Mapping[str, PathArg] | None = None
) -> Path:
    """A database ``flag`` adds to (created if missing): not a folder, its folder exists,
    and it is none of ``inputs``."""
    check_path_text(path, flag)
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(
            f"{flag} {str(target)!r} is a folder; give a database file name inside it"
        )
    if target.exists() and not target.is_file():
        raise ValueError(f"{flag} {str(target)!r} is not a regular file; give a database file")
    check_parent(target, flag)
    check_not_input(target, flag, inputs or {})
    return target


def check_input_file(path: str | os.PathLike[str], flag: str, what: str) -> Path:
    """An existing input file of ``flag``; FileNotFoundError or IsADirectoryError naming it."""
    check_path_text(path, flag)
    source = Path(path)
    if source.is_dir():
        raise IsADirectoryError(f"{flag} {str(source)!r} is a folder, not a {what} file")
    if not source.exists():
        raise FileNotFoundError(f"{flag} {str(source)!r}: {what} file does not exist")
    return source


# ---------------------------------------------------------------- the search space
SPACE_HELP = (
    "the search space: sss (default, the NATS size space) or tss (the NATS topology space, "
    "NAS-Bench-201: table tss-real, oracle measured on --device 2080ti, batch 256, unless "
    "--table / --oracle say otherwise)"
)


def add_space(p: argparse.ArgumentParser) -> None:
    """The ``--space`` flag (sss or tss)."""
    p.add_argument("--space", choices=("sss", "tss"), default="sss", help=SPACE_HELP)


def apply_space(args: argparse.Namespace) -> None:
    """Fill in ``--space tss``'s default table and oracle, and refuse a ``--table`` of the
    other space naming both; nothing ever falls back to sss silently."""

    space = getattr(args, "space", "sss")
    name = table_name(args.table) if args.table is not None else None
    if args.table is None:
        args.table = SPACE_DEFAULT_TABLE[space] if space != "sss" else None
    elif name is not None and (name in TSS_TABLES) != (space == "tss"):
        other = "tss" if name in TSS_TABLES else "sss"
        raise SystemExit(
            f"nasfilter: error: --table {args.table} is a table of the {other} space, but "
            f"--space is {space}; pass --space {other}, or a {space} table"
            + (f" ({', '.join(TSS_TABLES)})" if space == "tss" else "")
        )
    elif name is None and space == "tss":
        raise SystemExit(
            f"nasfilter: error: --space tss takes the shipped tss tables "
            f"({', '.join(TSS_TABLES)}); {args.table!r} is a file, and converting a tss "
            "archive is not supported yet"
        )
    if getattr(args, "oracle", DEFAULT_ORACLE) is None:  # not given: the space's default
        args.oracle, device = SPACE_DEFAULT_ORACLE[space]
        if space == "tss" and args.device is None:  # sss keeps each oracle's own default
            args.device = device
