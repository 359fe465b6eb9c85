"""Two oracles side by side on the NATS space: what the calibrated model changes.

For each oracle (a :class:`~nasfilter.bench.proxy.ProxyTable`): the utilization distribution, the
throughput–utilization Pareto front (its size, and its overlap with the first oracle's), and
the Spearman correlations of utilization and throughput with test accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.pareto import nondominated_mask
from nasfilter.stats import spearman


def oracle_figures(proxies: Sequence[ProxyTable], accuracy: np.ndarray) -> list[dict[str, Any]]:
    """One record per oracle, in order; overlaps are with the first oracle's front.

    ``accuracy``: test accuracy per architecture, (32768,). Architectures an oracle did not
    measure (NaN) are left out of its figures.
    """
    if not proxies:
        raise ValueError("give at least one oracle")
    fronts = []
    out = []
    for proxy in proxies:
        util, thr = proxy.utilization, proxy.throughput
        ok = np.isfinite(util)
        idx = np.flatnonzero(ok)
        front = idx[nondominated_mask(np.stack([thr[ok], util[ok]], axis=1))]
        fronts.append(set(front.tolist()))
        q = np.quantile(util[ok], [0.0, 0.1, 0.5, 0.9, 1.0])
        out.append(
            {
                "label": proxy.label,
                "backend": proxy.provenance.get("backend"),
                "n": int(ok.sum()),
                "utilization": {
                    "min": float(q[0]),
                    "p10": float(q[1]),
                    "median": float(q[2]),
                    "p90": float(q[3]),
                    "max": float(q[4]),
                },
                "front_size": len(front),
                "front": sorted(front.tolist()),
                "spearman_utilization_accuracy": spearman(util[ok], accuracy[ok]),
                "spearman_throughput_accuracy": spearman(thr[ok], accuracy[ok]),
            }
        )
    for rec, front in zip(out, fronts, strict=True):
        shared = len(front & fronts[0])
        rec["front_overlap_with_first"] = shared
        rec["front_jaccard_with_first"] = shared / len(front | fronts[0])
    return out


def comparison_rows(records: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The records as formatted text cells: (header, rows)."""
    header = [
        "oracle",
        "utilization median [min – max]",
        "front size",
        "shared with first",
        "Spearman util–acc",
        "Spearman thr–acc",
    ]
    rows = []
    for r in records:
        u = r["utilization"]
        rows.append(
            [
                r["label"],
                f"{u['median']:.3f} [{u['min']:.3f} – {u['max']:.3f}]",
                str(r["front_size"]),
                f"{r['front_overlap_with_first']} (Jaccard {r['front_jaccard_with_first']:.2f})",
                f"{r['spearman_utilization_accuracy']:.3f}",
                f"{r['spearman_throughput_accuracy']:.3f}",
            ]
        )
    return header, rows
