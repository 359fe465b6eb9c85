"""The report's section "Which cheap signal pays", from its typed summary
(:class:`~nasfilter.study.signal_summary.CheapSignals`): the goal table, the goal verdict in
words, the ablation table and a sentence on what the ablation means, all from the numbers.
"""

from __future__ import annotations

import math

from nasfilter.bench.fidelity import HOW_TO_ADD_CURVES
from nasfilter.render.html_page import ReportTable
from nasfilter.runs.meanse import format_mean_se
from nasfilter.study.signal_ranking import SignalRank, SignalRanking
from nasfilter.study.signal_summary import CONDITIONS, Ablation, CheapSignals, Goal

TITLE = "Which cheap signal pays"
# Spearman of the accuracy after the first rung with the final one, and what it means.
RANKS = ((0.3, "rungs promote close to at random"), (0.7, "rungs promote on a loose ranking"))
RANKS_WELL = "rungs keep most of the final ranking"


def _label(title: str, synthetic: bool) -> str:
    return f"{title} (SYNTHETIC table, not NATS-Bench data)" if synthetic else title


def goal_text(g: Goal) -> str:
    """The goal verdict in words: met or not, and by how much."""
    if not g.best:
        return "Goal not judged: no method ran."
    head = (
        f"Goal (the best method >= {g.level:g} at {g.at:,.0f} s, above "
        f"{' and '.join(label for label, _ in g.peers) or 'the peers'}, reading a cheap "
        "signal): "
    )
    best = f"the best, {g.best} ({g.best_condition}), reaches {g.best_mean:.4f}"
    gap = g.best_mean - g.level
    words = [f"{best}, {gap:.4f} above the level" if gap >= 0 else f"{best}, {-gap:.4f} short"]
    for label, mean in g.peers:
        if label == g.best:
            words.append(f"the best is the peer {label} itself: no cheap signal beat it")
            continue
        relation = "above" if g.best_mean > mean else "not above"
        words.append(f"{relation} {label} ({mean:.4f})")
    if not g.peers:
        words.append("no peer (model-based, optuna-tpe-hyperband) was run")
    if not g.reads_a_signal and g.best not in dict(g.peers):
        words.append("the best reads no cheap signal")
    return head + ("met: " if g.met else "not met: ") + "; ".join(words) + "."


def best_per_condition(cs: CheapSignals) -> str:
    """The best method of each condition that ran, at the first time, in words."""
    parts = []
    for cond in CONDITIONS:
        rows = [r for r in cs.rows if r.condition == cond and math.isfinite(r.hv[0].mean)]
        if rows:
            top = max(rows, key=lambda r: r.hv[0].mean)
            parts.append(f"{cond}: {top.method} {top.hv[0].mean:.4f}")
    return f"Best per condition at {cs.times[0]:,.0f} s: " + "; ".join(parts) + "."


def ablation_sentence(a: Ablation) -> str:
    """One sentence on how far the accuracy after the first rung ranks the final one."""
    rho = a.vs_final[0]
    meaning = next((words for level, words in RANKS if rho < level), RANKS_WELL)
    epochs = "epoch" if a.epochs[0] == 1 else "epochs"
    pairs = zip(a.epochs[1:], a.vs_final[1:], strict=True)
    later = ", ".join(f"after {e}: {r:.2f}" for e, r in pairs)
    return (
        f"Accuracy after {a.epochs[0]} {epochs} ranks the final one with Spearman {rho:.2f}"
        f"{f' ({later})' if later else ''}: {meaning}. Beyond the free features, which "
        f"explain {a.features_r2_final:.1%} of the final accuracy's variance, the accuracy "
        f"after {a.epochs[0]} {epochs} explains {a.beyond_features[0]:.2%} of the rest."
    )


def _goal_table(cs: CheapSignals, synthetic: bool) -> ReportTable:
    order = sorted(cs.rows, key=lambda r: CONDITIONS.index(r.condition))
    rows = tuple(
        (r.condition, r.method, str(r.runs), *(format_mean_se(s.mean, s.se, 4) for s in r.hv))
        for r in order
    )
    return ReportTable(
        _label(TITLE, synthetic),
        ("condition", "method", "runs", *(f"HV ratio at {t:,.0f} s" for t in cs.times)),
        rows,
        caption=f"{goal_text(cs.goal)} {best_per_condition(cs)} Conditions: the cheap signal "
        "a method reads besides full evaluations: hardware (the proxy's utilization), low "
        "fidelity (accuracy after fewer epochs), both, a zero-cost proxy's scores (alone or "
        "with the others), or none (throughput alone is an objective, not a signal). Mean ± "
        f"standard error over seeds, K = {cs.workers}.",
    )


def _ablation_table(a: Ablation, synthetic: bool) -> ReportTable:
    rows = tuple(
        (str(e), f"{final:.3f}", f"{test:.3f}", f"{beyond:.3f}")
        for e, final, test, beyond in zip(
            a.epochs, a.vs_final, a.vs_test, a.beyond_features, strict=True
        )
    )
    return ReportTable(
        _label(f"{TITLE}: the ablation", synthetic),
        (
            "epochs of hp 12",
            f"Spearman with the final accuracy (seed {a.final_seed})",
            "Spearman with the test accuracy",
            "share beyond the free features",
        ),
        rows,
        caption=f"{ablation_sentence(a)} Validation accuracy after each number of epochs "
        f"(seed {a.early_seed}) over {a.n_architectures} architectures.",
    )


def cheap_signal_tables(
    cs: CheapSignals | None, synthetic: bool, table_label: str
) -> list[ReportTable]:
    """The section's tables; without ``cs`` (no learning curves) one table without rows
    whose caption says why and how to add the curves."""
    if cs is None:
        why = (
            f"Left out: the table {table_label!r} has no learning curves, which the "
            "multi-fidelity searchers and the ablation need. To add them, "
            f"{HOW_TO_ADD_CURVES}; or pass --table synthetic (the embedded surrogate's "
            "curves, not NATS-Bench data)."
        )
        return [ReportTable(TITLE, ("condition", "method"), (), caption=why)]
    return [_goal_table(cs, synthetic), _ablation_table(cs.ablation, synthetic)]


def _share(row: SignalRank) -> str:
    return f"{row.top_recall:.1%}" if math.isfinite(row.top_recall) else "undefined"


def ranking_table(r: SignalRanking, accuracy_label: str, synthetic: bool) -> ReportTable:
    """Every cheap signal as a ranking of the accuracy the report scores with."""
    rows = tuple(
        (row.label, f"{row.n:,}", f"{row.spearman:.3f}", f"{row.kendall:.3f}", _share(row))
        for row in r.rows
    )
    top = f"{r.top_share:.0%}"
    return ReportTable(
        _label(f"{TITLE}: every cheap signal as a ranking", synthetic),
        ("signal", "n", "Spearman", "Kendall tau", f"top-{top} recall"),
        rows,
        caption=f"Each cheap signal against the {accuracy_label}, over the n architectures "
        f"where both are finite (NaN scores are left out, never ranked). Top-{top} recall: "
        f"the share of the top {top} by accuracy that are also in the top {top} by the "
        f"signal (largest first). Utilization and throughput are the oracle's; MACs and "
        f"parameters the table's; {r.zerocost}.",
    )
