"""Choose the joint fit's source weight (``fit_joint(..., cell_weight=w)``) by a nested
leave-one-GPU-out, so that the held-out figure of each GPU comes from a weight chosen
without it.

For each of the six GPUs g (RTX 3090 and RTX 4090 from timm's files, the four cell GPUs):

1. for each weight w of :data:`WEIGHTS` and each other GPU h, fit on the four GPUs left
   (neither g nor h) and predict h; score w by its goal checks on those five held-out GPUs
   (:func:`choice_key`);
2. the weight with the smallest key is g's choice; fit on the five GPUs other than g with it
   and predict g. That figure is the nested (honest) held-out figure of g.

The rule, fixed before any nested fit ran: a weight's key is (number of goal checks missed,
the sum of each miss relative to its goal, the mean held-out MdAPE of the goal rows); the
smallest key wins, ties to the smaller weight. The goal checks of a held-out GPU are those of
docs/gpu-model.md: timm MdAPE <= 10 % and Spearman >= 0.975 in each layout; cells at batch
256 MdAPE <= 12 % and Spearman >= 0.95, at batch 1 MdAPE <= 20 %. With both timm GPUs out a
fit sees no timm file and the weight does not enter it (one fit serves every weight).

The plain leave-one-GPU-out choice (the weight with the best key over all six GPUs, each
held out of a fit on the other five) is printed too: that is the weight a default would
ship, and the nested figures are what to expect of that choice on a GPU it never saw.

    python scripts/nested_cell_weight.py --cache /tmp/nested --jobs 2   # 61 fits, ~22 min

Fits are cached (one JSON of figures each) so that a run resumes; ``--out`` writes every
record as JSON, and the Markdown table goes to stdout.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

WEIGHTS = (0.25, 0.5, 1.0)
TIMM_GPUS = ("rtx3090", "rtx4090")
CELL_GPUS = ("1080ti", "titanx", "titanxp", "2080ti")
GPUS = (*TIMM_GPUS, *CELL_GPUS)
TIMM_MDAPE, TIMM_SPEARMAN = 10.0, 0.975

_SETS: dict[str, Any] = {}


def _fit_key(excluded: frozenset[str], weight: float) -> str:
    """The cache name of the fit without ``excluded`` (weight 1 stands for any weight when no
    timm file is left: the weight does not enter such a fit)."""
    if all(g in excluded for g in TIMM_GPUS):
        weight = 1.0
    return "excl-" + "-".join(sorted(excluded)) + f"-w{weight:g}"


def _fit(job: tuple[frozenset[str], float, str]) -> str:
    """Fit without ``excluded`` at ``weight`` and cache its figures; the cache path."""
    from nasfilter.oracle.cells import cell_measurements
    from nasfilter.oracle.joint import fit_joint

    excluded, weight, path = job
    if Path(path).exists():
        return path
    timm = [_SETS[g] for g in TIMM_GPUS if g not in excluded]
    cells = cell_measurements(tuple(g for g in CELL_GPUS if g not in excluded))
    result = fit_joint(timm, cells, cell_weight=weight)
    tmp = Path(path + ".tmp")
    tmp.write_text(json.dumps(result.params.to_dict(), sort_keys=True))
    os.replace(tmp, path)
    return path


def checks(gpu: str, params: Any) -> list[dict[str, Any]]:
    """The goal checks of ``gpu`` held out under ``params``: name, value, goal, sense."""
    from nasfilter.oracle.cells_validation import (
        GOAL_B1_MDAPE,
        GOAL_B256_MDAPE,
        GOAL_B256_SPEARMAN,
    )
    from nasfilter.oracle.cells_validation import _rows as cell_rows
    from nasfilter.oracle.validation import evaluate

    out: list[dict[str, Any]] = []
    if gpu in TIMM_GPUS:
        held = evaluate(_SETS[gpu], params)
        for layout in ("nchw", "nhwc"):
            c = held[layout]["calibrated"]
            out.append(_check(f"{layout} MdAPE", c["mdape_percent"], TIMM_MDAPE, "max"))
            out.append(_check(f"{layout} Spearman", c["spearman"], TIMM_SPEARMAN, "min"))
        return out
    for row in cell_rows(params, gpu, "nested"):
        c, b = row["calibrated"], row["batch"]
        if b == 1:
            out.append(_check("b1 MdAPE", c["mdape_percent"], GOAL_B1_MDAPE, "max"))
        elif b == 256:
            out.append(_check("b256 MdAPE", c["mdape_percent"], GOAL_B256_MDAPE, "max"))
            out.append(_check("b256 Spearman", c["spearman"], GOAL_B256_SPEARMAN, "min"))
        else:
            out.append({"name": f"b{b} MdAPE", "value": c["mdape_percent"], "goal": None})
    return out


def _check(name: str, value: float, goal: float, sense: str) -> dict[str, Any]:
    miss = max(0.0, value - goal) if sense == "max" else max(0.0, goal - value)
    return {"name": name, "value": value, "goal": goal, "sense": sense, "miss": miss / goal}


def choice_key(records: Sequence[Sequence[dict[str, Any]]]) -> tuple[int, float, float]:
    """(checks missed, summed relative miss, mean MdAPE of the goal rows) over held-out GPUs."""
    goal_rows = [c for rec in records for c in rec if c["goal"] is not None]
    missed = sum(c["miss"] > 0 for c in goal_rows)
    mdapes = [c["value"] for c in goal_rows if c["name"].endswith("MdAPE")]
    return missed, sum(c["miss"] for c in goal_rows), sum(mdapes) / len(mdapes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", required=True, help="folder for the fitted figures")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", help="JSON file for every record")
    args = parser.parse_args(argv)

    from nasfilter.oracle.gpumodel import GpuModelParams
    from nasfilter.oracle.validation import shipped_samples
    from nasfilter.survey.tables import SurveyTables

    tables = SurveyTables(None, 1)
    _SETS.update({g: shipped_samples(g, tables) for g in TIMM_GPUS})
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    wanted: dict[str, tuple[frozenset[str], float, str]] = {}
    for w in WEIGHTS:
        for size in (1, 2):
            for excl in itertools.combinations(GPUS, size):
                key = _fit_key(frozenset(excl), w)
                wanted[key] = (frozenset(excl), w, str(cache / f"{key}.json"))
    todo = [job for job in wanted.values() if not Path(job[2]).exists()]
    print(f"{len(wanted)} fits, {len(todo)} to run", file=sys.stderr, flush=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for i, path in enumerate(pool.map(_fit, todo), 1):
            print(f"  {i}/{len(todo)} {Path(path).name}", file=sys.stderr, flush=True)

    def params(excluded: Sequence[str], w: float) -> GpuModelParams:
        path = cache / f"{_fit_key(frozenset(excluded), w)}.json"
        return GpuModelParams.from_dict(json.loads(path.read_text()))

    held = {(g, w): checks(g, params([g], w)) for g in GPUS for w in WEIGHTS}
    nested: dict[str, Any] = {}
    for g in GPUS:
        keys = {
            w: choice_key([checks(h, params([g, h], w)) for h in GPUS if h != g]) for w in WEIGHTS
        }
        chosen = min(WEIGHTS, key=lambda w: (keys[w], w))
        nested[g] = {"keys": {str(w): k for w, k in keys.items()}, "chosen": chosen,
                     "held_out": held[(g, chosen)]}  # fmt: skip
    plain = {w: choice_key([held[(g, w)] for g in GPUS]) for w in WEIGHTS}
    default = min(WEIGHTS, key=lambda w: (plain[w], w))
    print(_table(nested, held, plain, default))
    if args.out:
        record = {
            "weights": WEIGHTS,
            "nested": nested,
            "held_out": {f"{g} w={w:g}": c for (g, w), c in held.items()},
            "plain_keys": {str(w): k for w, k in plain.items()},
            "plain_choice": default,
        }
        Path(args.out).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return 0


def _table(
    nested: dict[str, Any], held: dict[Any, Any], plain: dict[float, Any], default: float
) -> str:
    """Markdown: per held-out GPU, its nested choice and the held-out checks at each weight."""
    lines = [
        "| held out | nested choice (key per w: missed, summed miss, mean MdAPE) | check | "
        + " | ".join(f"w = {w:g}" for w in WEIGHTS)
        + " | nested |",
        "|---|---|---|" + "---|" * (len(WEIGHTS) + 1),
    ]
    for g in GPUS:
        n = nested[g]
        keys = "; ".join(f"{w}: {k[0]}, {k[1]:.4f}, {k[2]:.2f}" for w, k in n["keys"].items())
        for i, c in enumerate(held[(g, WEIGHTS[0])]):
            vals = [held[(g, w)][i]["value"] for w in WEIGHTS]
            fmt = "{:.3f}" if "Spearman" in c["name"] else "{:.1f}"
            chosen = n["held_out"][i]
            mark = "**" if chosen["goal"] is not None and chosen["miss"] > 0 else ""
            gpu, choice = (g, f"w = {n['chosen']:g} ({keys})") if i == 0 else ("", "")
            lines.append(
                f"| {gpu} | {choice} | {c['name']} | "
                + " | ".join(fmt.format(v) for v in vals)
                + f" | {mark}{fmt.format(chosen['value'])}{mark} |"
            )
    keys = "; ".join(f"{w:g}: {k[0]}, {k[1]:.4f}, {k[2]:.2f}" for w, k in plain.items())
    lines.append(f"\nPlain leave-one-GPU-out choice over all six: w = {default:g} ({keys}).")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
