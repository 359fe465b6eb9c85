"""``nasfilter convert ARCHIVE -o OUT``: turn a NATS-Bench sss or tss archive into a
full-fidelity benchmark folder, or (sss) with ``--dataset`` into one dataset's compact table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nasfilter.bench.convert import convert_archive
from nasfilter.bench.fullbench import FullBenchmark, convert_full
from nasfilter.bench.fullbench.index import check_replaceable
from nasfilter.cli.args import add_force, check_output_file, dataset_name


def register(sub: Any) -> None:
    p = sub.add_parser(
        "convert",
        help="convert a NATS-Bench sss or tss archive into a benchmark (folder, or .npz table)",
        description="Convert a NATS-Bench size-space archive once. Without --dataset, every "
        "record, training setting, seed and epoch goes into the folder OUT, which "
        "nasfilter.bench.nats_api.create opens in milliseconds and "
        "`nasfilter run --table OUT` searches, learning curves included. With --dataset, "
        "that dataset's hp-12 search slice is read through the nats_bench API "
        "(pip install nasfilter[nats]) into a compact table OUT.npz, the simulator's fast "
        "path. ARCHIVE is the folder "
        "NATS-sss-v1_0-50262-simple or the file NATS-sss-v1_0-50262.pickle.pbz2; its pickles "
        "are read with an allow-list of the types real archives hold. A topology-space "
        "archive (NATS-tss-v1_0-3ffb9-simple or NATS-tss-v1_0-3ffb9.pickle.pbz2) is converted "
        "in full only (no --dataset), for nasfilter.bench.nats_api.create(OUT, 'tss').",
    )
    p.add_argument("archive", metavar="ARCHIVE",
                   help="the NATS-Bench sss or tss archive folder or file")
    p.add_argument(
        "--dataset",
        default=None,
        type=dataset_name,
        help="write only this dataset's compact table (cifar10, cifar100 or ImageNet16-120); "
        "default: the full benchmark folder",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the benchmark folder to create, or the TABLE.npz file with --dataset",
    )
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="accept an archive lacking some architectures (their rows are NaN, marked absent)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_force(p, "output: the .npz file, or a folder only if it is a nasfilter benchmark")
    p.set_defaults(func=run)


def _check_output(args: argparse.Namespace) -> Path:

    return check_output_file(
        args.output,
        "-o/--output",
        force=args.force,
        inputs={"ARCHIVE": args.archive},
        suffix=".npz",
    )


def _check_folder(args: argparse.Namespace) -> Path:
    """The full benchmark's output folder: new, or (with --force) provably an earlier
    benchmark (its index parses and names itself, and it holds nothing else)."""

    target = Path(args.output)
    if target.suffix == ".npz":
        raise ValueError(
            f"-o/--output {str(target)!r} is a .npz name: pass --dataset for a compact table, "
            "or a folder name for the full benchmark"
        )
    archive = Path(args.archive).resolve()
    resolved = target.resolve()
    if resolved == archive or archive in resolved.parents or resolved in archive.parents:
        raise ValueError(f"-o/--output {str(target)!r} overlaps the ARCHIVE {args.archive!r}")
    if target.exists() or target.is_symlink():
        if not args.force:
            raise FileExistsError(
                f"-o/--output {str(target)!r} already exists; pass --force to replace it"
            )
        check_replaceable(target, "-o/--output")
    if not target.parent.is_dir():
        raise FileNotFoundError(f"-o/--output: folder {str(target.parent)!r} does not exist")
    return target


def _next_command(target: Path, n_present: int, n_archs: int, first: int, hp: str,
                  record: str, space: str = "sss") -> str:
    """What to do with the folder just written: a search needs every architecture (and,
    for now, the size space; a tss folder is read through the nats_bench API)."""
    query = (f"python -c \"from nasfilter.bench.nats_api import create; api = create('{target}', "
             f"'{space}'); print(api.get_more_info({first}, '{record}', hp='{hp}'))\"")
    if space == "tss":
        return f"query it through the nats_bench API (topology space): {query}"
    if n_present == n_archs:
        return (f"search it (learning curves included): nasfilter run --table {target} "
                "--searchers hyperband,bohb,asha --db RESULTS.db")
    return (f"a search needs all {n_archs} architectures, so `nasfilter run` refuses this "
            f"partial benchmark; query it through the nats_bench API: {query}")


def _run_full(args: argparse.Namespace) -> int:

    target = _check_folder(args)
    convert_full(args.archive, target, allow_partial=args.allow_partial,
                 progress=not args.quiet, replace=args.force)
    bench = FullBenchmark.open(target)
    prov = bench.provenance
    label = "SYNTHETIC (written by nasfilter)" if bench.synthetic else "NATS-Bench archive"
    n_present, n_archs = bench.index["n_present"], bench.index["n_archs"]
    records = bench.records(bench.hp_order[0])
    print(
        f"wrote {target}: {n_present} of {n_archs} architectures, "
        f"settings {bench.hp_order}, records {records}, {label}, "
        f"source {prov['source']}, sha256 {prov['checksum'][:12]}\n"
        + _next_command(target, n_present, n_archs, int(bench.present.argmax()),
                        bench.hp_order[0], records[0], bench.space)
    )
    return 0


def run(args: argparse.Namespace) -> int:

    if args.dataset is None:
        return _run_full(args)
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
