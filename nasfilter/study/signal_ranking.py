"""Every cheap signal as a ranking of the accuracy the report scores with: the oracle's
utilization and throughput, the table's MACs and parameters, and each zero-cost proxy whose
shipped scores cover the table's space and dataset completely.

One row per signal: n (architectures where both the signal and the accuracy are finite),
Spearman's rho, Kendall's tau and the top-5 % recall (the share of the top 5 % by accuracy
that are also in the top 5 % by the signal, both among those n). Nothing here draws.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.stats import spearman
from nasfilter.study.json_values import finite_or_none
from nasfilter.zerocost.base import get_proxy
from nasfilter.zerocost.scorefile import packaged_scores, shipped

TOP_SHARE = 0.05  # the top share of architectures the recall compares


def kendall(x: object, y: object) -> float:
    """Kendall's tau-b of two (n,) arrays over their finite pairs; NaN if undefined (fewer
    than three finite pairs, or a constant side), as :func:`nasfilter.stats.spearman`."""
    a = np.asarray(x, dtype=float).ravel()
    b = np.asarray(y, dtype=float).ravel()
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


def top_recall(signal: object, accuracy: object, share: float = TOP_SHARE) -> float:
    """The share of the top ``share`` by ``accuracy`` that are also in the top ``share``
    by ``signal`` (largest values first), both (n,) arrays, over their finite pairs; the top
    holds ceil(share * n) architectures, ties broken by index. NaN with no finite pair."""
    a = np.asarray(signal, dtype=float).ravel()
    b = np.asarray(accuracy, dtype=float).ravel()
    ok = np.flatnonzero(np.isfinite(a) & np.isfinite(b))
    if ok.size == 0:
        return float("nan")
    k = math.ceil(share * ok.size)
    by_signal = ok[np.argsort(-a[ok], kind="stable")[:k]]
    by_accuracy = ok[np.argsort(-b[ok], kind="stable")[:k]]
    return float(np.intersect1d(by_signal, by_accuracy).size / k)


@dataclass(frozen=True)
class SignalRank:
    """One signal as a ranking of the accuracy: its label, n, Spearman's rho, Kendall's tau
    and the top-5 % recall (fractions; NaN where undefined)."""

    label: str
    n: int
    spearman: float
    kendall: float
    top_recall: float

    @classmethod
    def of(cls, label: str, signal: np.ndarray, accuracy: np.ndarray) -> SignalRank:
        """The row of ``signal`` (n,) against ``accuracy`` (n,) over their finite pairs."""
        n = int((np.isfinite(signal) & np.isfinite(accuracy)).sum())
        return cls(
            label, n, spearman(signal, accuracy), kendall(signal, accuracy),
            top_recall(signal, accuracy),
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "n": self.n,
            "spearman": finite_or_none(self.spearman),
            "kendall": finite_or_none(self.kendall),
            "top_recall": finite_or_none(self.top_recall),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SignalRank:
        def num(key: str) -> float:
            value = data.get(key)
            return float("nan") if value is None else float(value)

        return cls(
            str(data["label"]), int(data["n"]), num("spearman"), num("kendall"),
            num("top_recall"),
        )  # fmt: skip


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
