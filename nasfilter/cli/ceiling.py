"""``nasfilter ceiling``: the best HV ratio any run could reach within a budget.

For a table and oracle (the flags of ``nasfilter run``), :mod:`nasfilter.runs.ceiling`'s
clairvoyant ceiling at each ``--budget``: the best set of architectures whose evaluation
costs fit it, knowing every scored accuracy; the seconds of evaluations an HV ratio of
``--target`` needs; and the best set by the accuracy a search observes (hp 12 on tss),
known for every architecture, scored on the accuracy that scores runs.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from nasfilter.bench.proxy import DEFAULT_ORACLE
from nasfilter.cli.args import add_inputs, apply_space, naming, seconds
from nasfilter.cli.run import resolve_inputs
from nasfilter.cli.score_with import add_score_with, score_with_files
from nasfilter.runs.metrics import accuracy_words
from nasfilter.runs.records import RunSpec
from nasfilter.study.ceilings import yardsticks

HELP = "the best HV ratio any run could reach within a budget (the clairvoyant ceiling)"


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"an HV ratio in (0, 1], got {text!r}")
    return value


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ceiling",
        help=HELP,
        description="Print, for each budget, the highest HV ratio of any set of "
        "architectures whose evaluation costs sum to at most the budget (exact on a grid of "
        "--resolution seconds; a bracket where the rounding shows), the seconds of "
        "evaluations an HV ratio of --target needs, and the HV ratio of the best set by the "
        "accuracy a search observes, known for every architecture. The scale is the one "
        "`nasfilter run` scores runs on, for the same --table, --dataset and oracle.",
    )
    p.add_argument(
        "--budget",
        type=seconds(positive=True),
        nargs="+",
        default=[20_000.0],
        metavar="S",
        help="worker-seconds, one or more (default 20000)",
    )
    p.add_argument(
        "--target", type=_ratio, default=0.99, help="the HV ratio to reach (default 0.99)"
    )
    p.add_argument(
        "--resolution",
        type=seconds(positive=True),
        default=1.0,
        metavar="S",
        help="the cost grid, seconds (default 1)",
    )
    p.add_argument(
        "--last-may-overrun",
        action="store_true",
        help="count a last evaluation that ends past the budget, as a run's final metrics "
        "do (`nasfilter compare`): a set fits when its costs less the largest sum to at "
        "most the budget (default: all of them, as a run scored at the budget)",
    )
    add_inputs(p, "oracle device (default v100; 2080ti with --space tss)")
    add_score_with(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _seconds(value: float) -> float | None:
    return value if math.isfinite(value) else None


def ceiling_report(args: argparse.Namespace) -> dict[str, Any]:
    """What the command prints, as one JSON-ready object (``--json`` prints it)."""
    apply_space(args)
    budgets = sorted(set(args.budget))
    spec = RunSpec(  # any searcher: the ceiling is the same for every one
        searcher="random", dataset=args.dataset, table=args.table,
        oracle=args.oracle or DEFAULT_ORACLE, device=args.device,
        oracle_cache=args.oracle_cache,
    )  # fmt: skip
    table, proxy, reference = resolve_inputs([spec])
    if args.score_with:
        rescoring = score_with_files(args.score_with, {table.dataset.name}, trust_plugins=True)
        table, proxy, reference = rescoring.inputs(spec)
    cost = table.eval_cost
    with naming("--resolution"):
        found = yardsticks(table, reference, budgets, args.resolution, args.last_may_overrun)
    ceiling = found.ceiling
    at_least, at_most = ceiling.seconds_to_reach(args.target)
    front = reference.true_front
    rows = [
        {
            "budget": b,
            "lower": float(ceiling.lower[i]),
            "upper": float(ceiling.upper[i]),
            "chosen": ceiling.chosen[i].tolist(),
            "chosen_seconds": float(cost[ceiling.chosen[i]].sum()),
            "observed_best_set_hv_ratio": float(found.trusted[i]),
            "observed_best_set": found.trusted_sets[i].tolist(),
        }
        for i, b in enumerate(budgets)
    ]
    return {
        "table": table.label,
        "oracle": proxy.label,
        "dataset": table.dataset.name,
        "accuracy": accuracy_words(table.provenance.scored, table.seeds),
        "resolution": args.resolution,
        "last_may_overrun": args.last_may_overrun,
        "true_front": front.tolist(),
        "true_front_seconds": float(cost[front].sum()),
        "target": args.target,
        "seconds_to_reach": [_seconds(at_least), _seconds(at_most)],
        "budgets": rows,
    }


def _print_text(out: dict[str, Any]) -> None:
    print(f"table   {out['table']}\noracle  {out['oracle']}\nscored  {out['accuracy']}")
    if out["last_may_overrun"]:
        print("rule    a set fits when its costs less the largest fit (a last evaluation "
              "may end past the budget, as in a run's final metrics)")  # fmt: skip
    print(
        f"true front: {len(out['true_front'])} architectures, "
        f"{out['true_front_seconds']:,.0f} s to evaluate all once"
    )
    print("budget (s)  ceiling          architectures  seconds used  best set by observed acc")
    for r in out["budgets"]:
        low, high = f"{r['lower']:.5f}", f"{r['upper']:.5f}"
        bracket = low if low == high else f"{low}-{high}"
        print(
            f"{r['budget']:>10,.0f}  {bracket:<15}  {len(r['chosen']):>13}  "
            f"{r['chosen_seconds']:>12,.0f}  {r['observed_best_set_hv_ratio']:.5f} "
            f"({len(r['observed_best_set'])})"
        )
    top, target = f"{out['budgets'][-1]['budget']:,.0f}", out["target"]
    at_least, at_most = out["seconds_to_reach"]
    if at_least is None:
        print(f"no set within {top} s reaches an HV ratio of {target}")
    elif at_most is None:
        print(f"an HV ratio of {target} needs at least {at_least:,.0f} s of evaluations "
              f"(within {top} s the grid leaves it open)")  # fmt: skip
    elif out["last_may_overrun"]:
        print(
            f"an HV ratio of {target} needs a budget of {at_least:,.0f} to {at_most:,.0f} s "
            "(the last evaluation ending past it): no smaller budget reaches it, the second does"
        )
    else:
        print(
            f"an HV ratio of {target} needs {at_least:,.0f} to {at_most:,.0f} s of "
            "evaluations: no set costing less reaches it, one costing the second does"
        )


def run(args: argparse.Namespace) -> int:
    out = ceiling_report(args)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        _print_text(out)
    return 0
