"""``nasfilter zero-cost``: compute zero-cost proxy scores of architectures and export them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from nasfilter.bench.spaces import get_space
from nasfilter.cli.args import add_dataset, add_force, check_output_file, int_at_least, naming
from nasfilter.zerocost import parse_proxies
from nasfilter.zerocost.compute import compute
from nasfilter.zerocost.scorefile import save_scores, shipped_table

if TYPE_CHECKING:  # annotations only: torch is imported when the command runs
    import numpy as np

    from nasfilter.bench.spaces import Space

ARCHS_HELP = (
    "all (every architecture of the space), N (the first N of the fixed seeded order that "
    "scripts/compute_zerocost.py walks: a uniform sample), or a comma-separated LIST of indices "
    "or arch strings (one index alone: add a comma, '5,'). Given, every score is computed "
    "afresh; left out (all), scores that ship as package data for the same space, dataset, "
    "proxy and seed are reused, not recomputed"
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "zero-cost",
        help="compute zero-cost proxy scores (synflow, snip, ...) into a .npz",
        description="Score untrained networks with zero-cost proxies (torch on the CPU, on the "
        "xautodl network of each architecture) and write one float32 array per proxy, indexed "
        "by architecture. Data-needing proxies read a stand-in batch of Gaussian images and "
        "random labels, not dataset images (docs/cheap-signals.md). With --cache, scores are "
        "stored as they are computed, so an interrupted run resumes where it stopped.",
    )
    p.add_argument("--space", required=True, choices=("sss", "tss"), help="the search space")
    add_dataset(p)
    p.add_argument(
        "--proxies", help="comma-separated proxy names (default: every registered proxy)"
    )
    p.add_argument("--archs", help=ARCHS_HELP)
    p.add_argument("--seed", type=int_at_least(0), default=0, help="weights and stand-in seed")
    p.add_argument("--export", required=True, metavar="FILE.npz", help="the score file to write")
    add_force(p, "--export file")
    p.add_argument("--cache", metavar="DIR", help="a folder to keep scores in (resumable)")
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="fan out over Ray: a local instance, or the cluster at ADDRESS ('auto')",
    )
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def select(text: str, space: Space) -> np.ndarray:
    """The indices ``--archs`` names: all, N, or a comma-separated list."""
    import numpy as np

    value = text.strip()
    if value == "all":
        return np.arange(space.size, dtype=np.int64)
    if value.isdigit():
        n = int(value)
        if not 1 <= n <= space.size:
            raise ValueError(f"--archs N must be in [1, {space.size}], got {n}")
        return np.random.default_rng(33).permutation(space.size)[:n].astype(np.int64)
    items = [t for t in value.split(",") if t.strip()]
    if not items:
        raise ValueError(f"--archs: {ARCHS_HELP}; got {text!r}")
    return np.asarray([space.index_of(space.parse(t.strip())) for t in items], dtype=np.int64)


def run(args: argparse.Namespace) -> int:
    import time

    space = get_space(args.space)
    with naming("--proxies"):
        proxies = parse_proxies(args.proxies)
    with naming("--archs"):
        archs = select("all" if args.archs is None else args.archs, space)
    check_output_file(args.export, "--export", force=args.force, suffix=".npz")
    names = [p.name for p in proxies]
    start = time.time()

    def progress(done: int, total: int) -> None:
        if not args.quiet and (done % 25 == 0 or done == total):
            print(f"zero-cost: {done}/{total} in {time.time() - start:.0f} s", file=sys.stderr)

    ray_init = {"address": args.ray} if args.ray and args.ray != "local" else None
    reuse: dict[tuple[int, str], tuple[float, float]] = {}
    reused: dict[str, int] = {}
    if args.archs is None:  # no --archs: reuse the shipped scores that match
        reuse, reused = shipped_table(space.name, args.dataset, args.seed, names)
    scores = compute(
        space,
        args.dataset,
        archs,
        names,
        args.seed,
        args.cache,
        executor="ray" if args.ray else "local",
        progress=progress,
        ray_init=ray_init,
        reuse=reuse,
    )
    save_scores(scores, args.export, force=True)
    summary = {
        "space": space.name,
        "dataset": scores.dataset.name,
        "seed": args.seed,
        "archs": len(archs),
        "export": str(args.export),
        "from_package_data": reused,
        "nan": {n: int((scores.computed[n] & ~(v == v)).sum()) for n, v in scores.values.items()},
        "seconds": round(time.time() - start, 1),
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"scored    {summary['archs']} {space.name} archs for {summary['dataset']} "
            f"(seed {args.seed}; data proxies on the Gaussian stand-in) in {summary['seconds']} s"
        )
        if reused:
            shipped_from = f"nasfilter/data/zerocost/{space.name}-{scores.dataset.name}.npz"
            counts = ", ".join(f"{n} {k} archs" for n, k in reused.items())
            print(f"reused    {counts} from package data ({shipped_from}), not recomputed")
        print(f"NaN       {summary['nan']} (undefined: docs/cheap-signals.md)")
        print(f"exported  {args.export}")
    return 0
