"""``nasfilter demo``: the study's comparison on the real table (or ``--table``).

Approximate filtering (evaluate only the throughput–utilization Pareto front) against
REINFORCE with the MnasNet reward, random search and regularized evolution, and the peers
(model-based search with and without utilization features; Optuna NSGA-II and random
search when Optuna is installed); nine seeds of
110000 simulated seconds each; the metrics table, mean ± standard error over seeds.
"""

from __future__ import annotations

import argparse
from typing import Any

STUDY_SEARCHERS = ("utilization-pareto", "reinforce-mnas", "random", "evolution")
FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # of the budget, for the hypervolume-over-time table


def register(sub: Any) -> None:
    from nasfilter.cli.run import add_common

    p = sub.add_parser(
        "demo",
        help="run the study's comparison on the real table",
        description="Approximate filtering vs REINFORCE (MnasNet reward) vs random search vs "
        "regularized evolution vs model-based search (and Optuna NSGA-II and random search "
        "when Optuna is installed), nine seeds, 110000 simulated seconds, on the real table "
        "(NATS-Bench's real hp-90 validation accuracies, seed 777, with modelled times) or "
        "--table.",
    )
    p.add_argument("--seeds", default="0-8", help="seeds (default 0-8: nine)")
    p.add_argument("--db", help="also keep the results in this SQLite database")
    add_common(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nasfilter.cli.run import worker_died
    from nasfilter.experiment import WorkerDied

    try:
        return _demo(args)
    except WorkerDied as exc:
        return worker_died("demo", exc)


def _demo(args: argparse.Namespace) -> int:
    from nasfilter.cli.args import naming
    from nasfilter.cli.compare import format_summary, summarize
    from nasfilter.cli.run import build_specs, check_inputs, parse_seeds, plan_jobs, resolve_device
    from nasfilter.experiment import check_seeds, inputs, run_experiment
    from nasfilter.results import format_mean_se, load_results, mean_se
    from nasfilter.storage import InMemoryStorage, Storage

    if args.db is not None:
        from nasfilter.cli.args import check_database

        check_database(
            args.db, "--db", {"--table": args.table, "--oracle-cache": args.oracle_cache}
        )
    seeds = check_seeds(parse_seeds(args.seeds))
    from nasfilter.reproduce import PEER_METHODS

    searchers = [*STUDY_SEARCHERS, *(m.searcher for m in PEER_METHODS)]
    resolve_device(args)
    specs = build_specs(args, searchers, ["none"])
    check_inputs(args)
    with naming("--table"):  # the oracle is loaded: what can fail now is the table's
        table, proxy, ref = inputs(specs[0])
    jobs, capped = plan_jobs(args.jobs, len(specs) * len(seeds))
    print(f"nasfilter demo: the comparison of arXiv 2212.07936 on {table.dataset.name}")
    print(f"  table : {table.provenance.label}")
    print(f"  oracle: {proxy.label}; a proxy query costs {specs[0].proxy_cost:g} simulated s")
    print(
        f"  true accuracy-throughput front: {len(ref.true_front)} architectures; "
        f"{len(seeds)} seeds x {args.budget:g} simulated {args.budget_clock}-seconds; "
        f"{args.workers} simulated worker(s) per run; {jobs} process(es){capped}\n"
    )

    storage: Storage
    if args.db is not None:
        from nasfilter.store import Store

        storage = Store(args.db)
    else:
        storage = InMemoryStorage()
    with storage:
        run_experiment(specs, seeds, store=storage, jobs=jobs, progress=not args.no_progress)
        # The runs of this command line: any plugin in them was named by the user here.
        selected = [(s.key(), seed) for s in specs for seed in seeds]
        results = load_results(storage, select=selected, trust_plugins=True)
    rows = [r.row() for r in results]
    summary = summarize(rows)
    print(format_summary(summary))
    print("\nhypervolume ratio over simulated time (mean ± standard error over seeds):")
    header = "  ".join(f"{f * args.budget:>15,.0f} s" for f in FRACTIONS)
    width = max(len(e["searcher"]) for e in summary)
    print(f"{'method'.ljust(width)}  {header}")
    for e in summary:
        mine = [r for r in results if r.spec.searcher == e["searcher"]]
        hv = [_hv_at(r.curves["clock"].tolist(), r.curves["hv_ratio"].tolist(), args.budget)
              for r in mine]  # fmt: skip
        cells = []
        for i in range(len(FRACTIONS)):
            stat = mean_se([h[i] for h in hv])
            cells.append(format_mean_se(stat.mean, stat.se, 3).rjust(17))
        print(f"{e['searcher'].ljust(width)}  {'  '.join(cells)}")
    print(
        "\nutilization-pareto = approximate filtering: query the proxy for all 32768 "
        "architectures, evaluate only the throughput-utilization Pareto front. Metrics "
        "compare each run's accuracy-throughput front with the true one (docs/searchers.md).",
    )
    if not table.synthetic and table.provenance.modelled:
        print(
            f"NOTE: the accuracies above are {table.provenance.real}: searches observe them "
            "and they score every run, since no real test accuracy ships; the simulated "
            "seconds come from modelled times (docs/real-results.md)."
        )
    if table.synthetic:
        print(
            f"NOTE: every accuracy above comes from the {table.provenance.label}: a smooth "
            "model calibrated to a few real records, which illustrates the method; these are "
            "not NATS-Bench results (omit --table for the real table)."
        )
    return 0


def _hv_at(clock: list[float], hv: list[float], budget: float) -> list[float | None]:
    """The hypervolume ratio at each fraction of the budget, from a curve."""
    out: list[float | None] = []
    for f in FRACTIONS:
        t = f * budget
        k = max((i for i, c in enumerate(clock) if c <= t + 1e-9), default=None)
        out.append(None if k is None else hv[k])
    return out
