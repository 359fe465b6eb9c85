"""The tss study's tables in Markdown, from the blocks (one per dataset and device) that
:mod:`nasfilter.study.tss.run` writes to ``results.json`` and ``summary.json``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

Block = dict[str, Any]
SINGLE = ("hp-12 rung", "hp-200 only")  # one fidelity, no hardware signal
GOAL_PEERS = ("Optuna NSGA-II", "random search", "REINFORCE (MnasNet reward)",
              "approximate filtering")  # fmt: skip


def _cell(stat: dict[str, float | None]) -> str:
    mean, se = stat.get("mean"), stat.get("se")
    if mean is None or not math.isfinite(mean):
        return "–"
    return f"{mean:.4f}" + ("" if se is None or not math.isfinite(se) else f" ± {se:.4f}")


def _head(blocks: list[Block]) -> str:
    cols = [f"{b['dataset']} {b['device']}" for b in blocks]
    return "| method | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols) + "\n"


def fig3_table(blocks: list[Block]) -> str:
    """Fig. 3's numbers per dataset and device."""
    batch = blocks[0].get("batch", 256) if blocks else 256
    out = (f"| dataset | GPU (batch {batch}) | throughput–utilization Pareto set | Spearman "
           "(measured utilization, hp-200 validation acc) | true accuracy–throughput front |\n"
           "|---|---|---|---|---|\n")  # fmt: skip
    for b in blocks:
        f = b["fig3"]
        rho = f["spearman_utilization_accuracy"]
        out += (f"| {b['dataset']} | {b['device']} | {f['pareto_set_size']} of 15625 | "
                f"{rho:.3f} | {f['true_front_size']} |\n")  # fmt: skip
    return out


def comparison_table(blocks: list[Block], at: str, rows: list[str]) -> str:
    """Mean ± SE HV ratio at ``at`` seconds of the methods ``rows`` (labels) per block."""
    out = _head(blocks)
    for label in rows:
        cells = []
        for b in blocks:
            row = next((m for m in b["methods"] if m["method"] == label), None)
            cells.append("–" if row is None else _cell(row["hv"][at]))
        out += f"| {label} | " + " | ".join(cells) + " |\n"
    return out


def _best(b: Block, at: str, keep: Any) -> tuple[str, float]:
    rows = [m for m in b["methods"] if keep(m)]
    best = max(rows, key=lambda m: m["hv"][at]["mean"] if m["hv"][at]["mean"] is not None
               else -1.0)  # fmt: skip
    return best["method"], best["hv"][at]["mean"]


def ablation_table(blocks: list[Block], at: str) -> str:
    """The best method (and its mean HV ratio at ``at`` s) of each cheap-signal condition."""
    conditions = sorted({m["condition"] for b in blocks for m in b["methods"]})
    out = "| condition | " + " | ".join(f"{b['dataset']} {b['device']}" for b in blocks)
    out += " |\n|---|" + "---|" * len(blocks) + "\n"
    for cond in conditions:
        cells = []
        for b in blocks:
            label, mean = _best(b, at, lambda m, c=cond: m["condition"] == c)
            cells.append(f"{mean:.4f} ({label})")
        out += f"| {cond} | " + " | ".join(cells) + " |\n"
    return out


def goals_table(blocks: list[Block], at: str = "20000") -> str:
    """The issue's goals at ``at`` s per block: the best method and its mean, whether it
    beats the named peers, and the best combined method against the best single-fidelity."""
    out = ("| dataset | GPU | best method (mean HV ratio) | ≥ 0.99 | beats NSGA-II, random, "
           "REINFORCE (MnasNet), approximate filtering | best single-fidelity (no hardware) "
           "| best combining fidelity+hardware or two fidelities |\n"
           "|---|---|---|---|---|---|---|\n")  # fmt: skip
    for b in blocks:
        label, mean = _best(b, at, lambda m: True)
        peers = {m["method"]: m["hv"][at]["mean"] for m in b["methods"]}
        beats = all(mean > peers[p] for p in GOAL_PEERS if p in peers)
        s_label, s_mean = _best(b, at, lambda m: m["condition"] in SINGLE)
        c_label, c_mean = _best(b, at, lambda m: m["condition"] not in SINGLE
                                and (m["two_fidelities"] or m["hardware"]))  # fmt: skip
        out += (f"| {b['dataset']} | {b['device']} | {label} ({mean:.4f}) | "
                f"{'yes' if mean >= 0.99 else 'no'} | {'yes' if beats else 'no'} | "
                f"{s_label} ({s_mean:.4f}) | {c_label} ({c_mean:.4f}) |\n")  # fmt: skip
    return out


def render(blocks: list[Block]) -> str:
    """All tables, with headings, as Markdown."""
    labels = list(dict.fromkeys(m["method"] for b in blocks for m in b["methods"]))
    seeds = sorted({len(b["seeds"]) for b in blocks})
    out = f"Seeds per cell: {', '.join(map(str, seeds))}. Mean ± SE of the HV ratio.\n\n"
    out += "### Fig. 3\n\n" + fig3_table(blocks)
    for at in ("20000", "55000"):
        out += f"\n### Every method at {int(at):,} s\n\n" + comparison_table(blocks, at, labels)
    for at in ("20000", "55000"):
        out += f"\n### Ablation of cheap signals at {int(at):,} s (best method of each)\n\n"
        out += ablation_table(blocks, at)
    out += "\n### Goals at 20,000 s\n\n" + goals_table(blocks)
    return out


BEGIN, END = "<!-- tss-results:begin -->", "<!-- tss-results:end -->"


def section(path: Path) -> str:
    """What lies between :data:`BEGIN` and :data:`END` in ``path`` (after BEGIN's newline)."""
    old = path.read_text()
    if BEGIN not in old or END not in old:
        raise ValueError(f"{path} lacks the markers {BEGIN} and {END}")
    return old.split(BEGIN, 1)[1].split(END, 1)[0].removeprefix("\n")


def splice(path: Path, text: str) -> None:
    """Replace what lies between :data:`BEGIN` and :data:`END` in ``path`` with ``text``;
    ValueError naming the file when the markers are missing."""
    old = path.read_text()
    if BEGIN not in old or END not in old:
        raise ValueError(f"{path} lacks the markers {BEGIN} and {END}")
    head, rest = old.split(BEGIN, 1)
    path.write_text(head + BEGIN + "\n" + text + rest[rest.index(END):])


def readme_section(blocks: list[Block]) -> str:
    """The README's tss section: Fig. 3's numbers and the goals table."""
    seeds = sorted({len(b["seeds"]) for b in blocks})
    return (f"Seeds per cell: {', '.join(map(str, seeds))}; generated by "
            "`nasfilter reproduce --space tss --out DIR` and `python scripts/update_tss_docs.py "
            "DIR` (docs/tss-results.md has every method and the ablation).\n\n" + fig3_table(blocks)
            + "\nAt 20,000 s (mean HV ratio against the true accuracy–throughput front):\n\n"
            + goals_table(blocks))  # fmt: skip
