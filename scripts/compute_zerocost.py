"""Recompute the zero-cost proxy scores that ship as package data, and pack them.

Run it (hours for a whole space on one core; resumable: rerun the same command after an
interruption)::

    nice -n 19 python scripts/compute_zerocost.py run --space tss --dataset cifar10 \\
        --cache ~/zc-cache --full 400 --cheap synflow --full-until 21:05 --until 21:40
    python scripts/compute_zerocost.py pack --space tss --dataset cifar10 --cache ~/zc-cache

``run`` walks one fixed, seeded order of the space (``numpy.random.default_rng(33)``
permutation, so any prefix is a uniform random sample without replacement): phase 1 scores
the first ``--full`` architectures with every built-in proxy (until ``--full-until``), phase 2
scores the ``--cheap`` proxies on the whole order (until ``--until``). Omit the times to run to
the end; ``--full 0 --cheap all`` computes everything. Each score goes to the cache as it is
computed, with its CPU seconds; torch runs on one thread.

``seed`` primes the cache from the shipped package file (its computed scores and their CPU
seconds), so that a run continues where the shipped file ends instead of recomputing it::

    python scripts/compute_zerocost.py seed --space tss --dataset cifar100 --cache ~/zc-cache

``pack`` writes ``nasfilter/data/zerocost/<space>-<dataset>.npz`` (float32 arrays, NaN where
not computed or undefined; only the proxies computed for at least one architecture) and
refreshes ``SHA256SUMS`` beside it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ORDER_SEED = 33  # the seed of the fixed order every run walks


def order(size: int) -> np.ndarray:
    """The fixed order of a space's architectures: a seeded permutation, int64 (size,)."""
    return np.random.default_rng(ORDER_SEED).permutation(size).astype(np.int64)


def _deadline(text: str | None) -> float | None:
    """``HH:MM`` (UTC) as a ``time.time()``: its next occurrence (tomorrow's when today's has
    passed, so that ``--until 00:45`` given at 23:30 means 75 minutes); None for None."""
    if text is None:
        return None
    hour, minute = (int(t) for t in text.split(":"))
    now = dt.datetime.now(dt.timezone.utc)
    when = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if when <= now:
        when += dt.timedelta(days=1)
    return when.timestamp()


def run(args: argparse.Namespace) -> None:
    import torch

    from nasfilter.bench.spaces import get_space
    from nasfilter.zerocost import known_proxies
    from nasfilter.zerocost.compute import compute

    torch.set_num_threads(1)
    walk = order(get_space(args.space).size)
    started = time.time()

    def report(done: int, total: int) -> None:
        if done % 25 == 0 or done == total:
            print(f"{time.time() - started:8.0f} s  {done}/{total}", flush=True)

    phases = [(walk[: args.full], list(known_proxies()), _deadline(args.full_until))]
    cheap = list(known_proxies()) if args.cheap == "all" else args.cheap.split(",")
    phases.append((walk, cheap, _deadline(args.until)))
    for archs, proxies, until in phases:
        if len(archs) and (until is None or time.time() < until):
            print(f"phase: {len(archs)} archs, proxies {','.join(proxies)}", flush=True)
            compute(
                args.space,
                args.dataset,
                archs,
                proxies,
                args.seed,
                args.cache,
                progress=report,
                deadline=until,
            )
    print(f"done in {time.time() - started:.0f} s", flush=True)


def pack(args: argparse.Namespace) -> None:
    from nasfilter.bench.spaces import get_space
    from nasfilter.zerocost.scorefile import DATA_DIR, save_scores, write_sums

    walk = order(get_space(args.space).size)
    scores = compute_cached(args, walk)
    for name in [n for n, done in scores.computed.items() if not done.any()]:
        for part in (scores.values, scores.computed, scores.seconds):
            del part[name]  # a proxy computed for no architecture is not shipped
    if not scores.values:
        raise SystemExit(f"nothing computed in {args.cache} for {args.space}/{args.dataset}")
    out = DATA_DIR / f"{args.space}-{args.dataset}.npz"
    save_scores(scores, out, force=True)
    write_sums(DATA_DIR)
    for name, done in scores.computed.items():
        secs = scores.seconds[name][done]
        median = float(np.median(secs)) if secs.size else 0.0
        print(f"{name:10s} {int(done.sum()):6d} archs, median {median:.3f} CPU s")
    print(f"wrote {out}")


def seed(args: argparse.Namespace) -> None:
    from nasfilter.bench.datasets import get_dataset
    from nasfilter.bench.spaces import get_space
    from nasfilter.zerocost.compute import cache_path, read_cache
    from nasfilter.zerocost.scorefile import packaged_scores

    sp, ds = get_space(args.space), get_dataset(args.dataset)
    shipped = packaged_scores(sp.name, ds.name)
    if shipped.seed != args.seed:
        raise SystemExit(f"the shipped file has seed {shipped.seed}, not --seed {args.seed}")
    path = cache_path(args.cache, sp, ds, args.seed)
    have = read_cache(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    added = 0
    with path.open("a", encoding="utf-8") as handle:
        for name in shipped.proxies:
            for arch in np.flatnonzero(shipped.computed[name]).tolist():
                if (arch, name) not in have:
                    row = {
                        "arch": arch,
                        "proxy": name,
                        "score": float(shipped.values[name][arch]),
                        "seconds": float(shipped.seconds[name][arch]),
                    }
                    handle.write(json.dumps(row) + "\n")
                    added += 1
    print(f"seeded {added} scores from the shipped {sp.name}-{ds.name} file into {path}")


def compute_cached(args: argparse.Namespace, walk: np.ndarray):  # type: ignore[no-untyped-def]
    """The scores already in the cache, every proxy, without computing anything new."""
    from nasfilter.bench.datasets import get_dataset
    from nasfilter.bench.spaces import get_space
    from nasfilter.zerocost import known_proxies
    from nasfilter.zerocost.compute import _collect, cache_path, read_cache

    sp, ds = get_space(args.space), get_dataset(args.dataset)
    table = read_cache(cache_path(args.cache, sp, ds, args.seed))
    return _collect(table, known_proxies(), sp, ds, args.seed, walk)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("run", "seed", "pack"):
        p = sub.add_parser(name)
        p.add_argument("--space", required=True, choices=("sss", "tss"))
        p.add_argument("--dataset", required=True)
        p.add_argument("--cache", required=True, type=Path)
        p.add_argument("--seed", type=int, default=0)
        if name == "run":
            p.add_argument("--full", type=int, default=0, help="archs scored by every proxy")
            p.add_argument("--cheap", default="synflow", help="proxies for the whole order")
            p.add_argument("--full-until", help="UTC HH:MM that ends phase 1")
            p.add_argument("--until", help="UTC HH:MM that ends phase 2")
    args = parser.parse_args()
    {"run": run, "seed": seed, "pack": pack}[args.cmd](args)


if __name__ == "__main__":
    main()
