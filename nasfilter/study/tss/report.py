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
    """(label, mean HV ratio at ``at``) of the best method that ``keep`` admits; ("none",
    NaN) when the block ran none."""
    rows = [m for m in b["methods"] if keep(m)]
    if not rows:
        return "none", math.nan
    best = max(rows, key=lambda m: m["hv"][at]["mean"] if m["hv"][at]["mean"] is not None
               else -1.0)  # fmt: skip
    return best["method"], best["hv"][at]["mean"]


def _named(label: str, mean: float) -> str:
    """``"label (0.9863)"``, or ``"–"`` for no method."""
    return "–" if label == "none" else f"{label} ({mean:.4f})"


def ablation_table(blocks: list[Block], at: str) -> str:
    """The best method (and its mean HV ratio at ``at`` s) of each cheap-signal condition."""
    conditions = sorted({m["condition"] for b in blocks for m in b["methods"]})
    out = "| condition | " + " | ".join(f"{b['dataset']} {b['device']}" for b in blocks)
    out += " |\n|---|" + "---|" * len(blocks) + "\n"
    for cond in conditions:
        cells = []
        for b in blocks:
            label, mean = _best(b, at, lambda m, c=cond: m["condition"] == c)
            cells.append("–" if label == "none" else f"{mean:.4f} ({label})")
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
                f"{_named(s_label, s_mean)} | {_named(c_label, c_mean)} |\n")  # fmt: skip
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


def _seed_text(seeds: list[int]) -> str:
    """``"5 (0–4)"`` for consecutive seeds, else the count and the list."""
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{len(seeds)} ({seeds[0]}–{seeds[-1]})" if len(seeds) > 1 else f"1 ({seeds[0]})"
    return f"{len(seeds)} ({', '.join(map(str, seeds))})"


def render_more(blocks: list[Block]) -> str:
    """The other GPUs and batch sizes: per batch (largest first), Fig. 3's numbers, every
    method at 20,000 and 55,000 s, the ablation and the goals at 20,000 s, each headed with
    its GPUs, batch and seeds."""
    out = ""
    for batch in sorted({b.get("batch", 256) for b in blocks}, reverse=True):
        group = [b for b in blocks if b.get("batch", 256) == batch]
        gpus = ", ".join(dict.fromkeys(b["device"] for b in group))
        seeds = sorted({_seed_text(list(b["seeds"])) for b in group})
        labels = list(dict.fromkeys(m["method"] for b in group for m in b["methods"]))
        out += (f"### Batch {batch}: {gpus}\n\nSeeds per cell: {'; '.join(seeds)}. Hardware: "
                f"latency measured by HELP on the named GPU at batch {batch}; accuracy: real "
                "hp-200 validation accuracy, seed mean. Mean ± SE of the HV ratio.\n\n"
                f"#### Fig. 3 (batch {batch})\n\n" + fig3_table(group))  # fmt: skip
        for at in ("20000", "55000"):
            out += (f"\n#### Every method at {int(at):,} s (batch {batch})\n\n"
                    + comparison_table(group, at, labels))  # fmt: skip
        out += (f"\n#### Ablation of cheap signals at 20,000 s (batch {batch}, best method of "
                f"each)\n\n{ablation_table(group, '20000')}\n#### Goals at 20,000 s (batch "
                f"{batch})\n\n{goals_table(group)}\n")  # fmt: skip
    return out


BEGIN, END = "<!-- tss-results:begin -->", "<!-- tss-results:end -->"
MORE = ("<!-- tss-more:begin -->", "<!-- tss-more:end -->")  # the other GPUs and batches


def section(path: Path, markers: tuple[str, str] = (BEGIN, END)) -> str:
    """What lies between the ``markers`` (:data:`BEGIN` and :data:`END`) in ``path`` (after
    the first one's newline)."""
    begin, end = markers
    old = path.read_text()
    if begin not in old or end not in old:
        raise ValueError(f"{path} lacks the markers {begin} and {end}")
    return old.split(begin, 1)[1].split(end, 1)[0].removeprefix("\n")


def splice(path: Path, text: str, markers: tuple[str, str] = (BEGIN, END)) -> None:
    """Replace what lies between the ``markers`` in ``path`` with ``text``; ValueError naming
    the file when the markers are missing."""
    begin, end = markers
    old = path.read_text()
    if begin not in old or end not in old:
        raise ValueError(f"{path} lacks the markers {begin} and {end}")
    head, rest = old.split(begin, 1)
    path.write_text(head + begin + "\n" + text + rest[rest.index(end):])


def readme_section(blocks: list[Block]) -> str:
    """The README's tss section: Fig. 3's numbers and the goals table."""
    seeds = sorted({len(b["seeds"]) for b in blocks})
    return (f"Seeds per cell: {', '.join(map(str, seeds))}; generated by "
            "`nasfilter reproduce --space tss --out DIR` and `python scripts/update_tss_docs.py "
            "DIR` (docs/tss-results.md has every method and the ablation).\n\n" + fig3_table(blocks)
            + "\nAt 20,000 s (mean HV ratio against the true accuracy–throughput front):\n\n"
            + goals_table(blocks))  # fmt: skip
