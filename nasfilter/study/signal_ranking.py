"""Every cheap signal as a ranking of the accuracy the report scores with: the oracle's
utilization and throughput, the table's MACs and parameters, and each zero-cost proxy whose
shipped scores cover the table's space and dataset completely.

One row per signal: n (architectures where both the signal and the accuracy are finite),
Spearman's rho, Kendall's tau and the top-5 % recall (the share of the top 5 % by accuracy
that are also in the top 5 % by the signal, both among those n). Nothing here draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.zerocost.base import get_proxy
from nasfilter.zerocost.compare import TOP_SHARE, SignalRank
from nasfilter.zerocost.scorefile import packaged_scores, shipped


@dataclass(frozen=True)
class SignalRanking:
    """Every cheap signal's row, and what the zero-cost rows are in words (the shipped file
    they come from, or why there are none)."""

    rows: tuple[SignalRank, ...]
    zerocost: str
    top_share: float = TOP_SHARE

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [r.to_json() for r in self.rows],
            "zerocost": self.zerocost,
            "top_share": self.top_share,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> SignalRanking | None:
        """None for a summary written before this record (``data`` None)."""
        if data is None:
            return None
        rows = tuple(SignalRank.from_json(r) for r in data["rows"])
        return cls(rows, str(data["zerocost"]), float(data.get("top_share", TOP_SHARE)))


def _proxy_words(name: str) -> str:
    """How a shipped proxy's score was computed, in words, for its row's label."""
    try:
        needs_data = get_proxy(name).needs_data
    except ValueError:  # a proxy this nasfilter does not register
        return f"{name} (zero-cost, computed on CPU)"
    data = "on a Gaussian stand-in batch" if needs_data else "data-free"
    return f"{name} (zero-cost, {data}, computed on CPU)"


def zerocost_rows(table: BenchmarkTable, accuracy: np.ndarray) -> tuple[list[SignalRank], str]:
    """The rows of the zero-cost proxies whose shipped scores for the table's space and
    dataset are computed for every architecture (NaN scores left out of n), and the
    caption's words on them."""
    space, dataset = table.space.name, table.dataset.name
    if table.synthetic:
        return [], (
            "no zero-cost rows: the shipped scores are of real networks and the synthetic "
            "table's accuracies are a surrogate's, so a ranking of one by the other says "
            "nothing about the proxy"
        )
    if f"{space}-{dataset}" not in shipped():
        return [], f"no zero-cost rows: no zero-cost scores ship for {space}/{dataset}"
    file = packaged_scores(space, dataset)
    complete = [p for p in file.proxies if bool(file.computed[p].all())]
    partial = [p for p in file.proxies if p not in complete]
    rows = [
        SignalRank.of(_proxy_words(p), file.values[p].astype(np.float64), accuracy)
        for p in complete
    ]
    words = f"zero-cost scores: the shipped file of {space}/{dataset} (seed {file.seed})"
    if partial:
        words += f"; left out, computed for part of the space only: {', '.join(partial)}"
    return rows, words


def signal_ranking(table: BenchmarkTable, proxy: ProxyTable) -> SignalRanking:
    """Every cheap signal's row against ``table.test_acc`` (the accuracy that scores
    runs): the oracle's utilization and throughput, the table's MACs and parameters, the
    shipped zero-cost proxies."""
    acc = np.asarray(table.test_acc, dtype=np.float64)
    rows = [
        SignalRank.of(f"utilization ({proxy.label})", proxy.utilization, acc),
        SignalRank.of(f"throughput ({proxy.label})", proxy.throughput, acc),
        SignalRank.of("MACs (the table's)", table.macs, acc),
        SignalRank.of("parameters (the table's)", table.params, acc),
    ]
    extra, words = zerocost_rows(table, acc)
    return SignalRanking((*rows, *extra), words)
