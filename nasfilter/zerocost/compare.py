"""How well a cheap signal ranks architectures: Spearman, Kendall and top-5 % recall against a
real accuracy, with NaN scores refused by name (:func:`~nasfilter.zerocost.base.check_finite`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from nasfilter.stats import spearman
from nasfilter.zerocost.base import check_finite

TOP_SHARE = 0.05  # the top share whose recall is reported


@dataclass(frozen=True)
class SignalRank:
    """One signal (its ``label``) as a ranking of one accuracy over ``n`` architectures:
    Spearman's rho, Kendall's tau and the top-5 % recall (fractions; NaN where undefined).
    The one record of a signal's ranking, in the zero-cost comparison and the study report.
    """

    label: str
    n: int
    spearman: float
    kendall: float
    top_recall: float

    @classmethod
    def of(cls, label: str, signal: np.ndarray, accuracy: np.ndarray) -> SignalRank:
        """The row of ``signal`` (n,) against ``accuracy`` (n,) over their finite pairs
        (:func:`rank_signal` on them); NaN figures below three pairs."""
        x, y = np.asarray(signal, dtype=np.float64), np.asarray(accuracy, dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        n = int(ok.sum())
        if n < 3:
            return cls(label, n, math.nan, math.nan, math.nan)
        return rank_signal(label, x[ok], y[ok])

    def to_json(self) -> dict[str, Any]:
        """Strict JSON: NaN figures as null."""
        return {
            "label": self.label,
            "n": self.n,
            **{k: _finite_or_none(getattr(self, k)) for k in ("spearman", "kendall", "top_recall")},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SignalRank:
        def num(key: str) -> float:
            value = data.get(key)
            return math.nan if value is None else float(value)

        return cls(
            str(data["label"]), int(data["n"]), num("spearman"), num("kendall"),
            num("top_recall"),
        )  # fmt: skip


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def top_recall(scores: np.ndarray, accuracy: np.ndarray, share: float = TOP_SHARE) -> float:
    """Share of the best ``share`` of architectures by accuracy that are also among the best
    ``share`` by score (k = ceil(share * n) each; ties broken by index)."""
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    k = max(1, math.ceil(share * len(scores)))
    best = set(np.argsort(-accuracy, kind="stable")[:k].tolist())
    picked = set(np.argsort(-scores, kind="stable")[:k].tolist())
    return len(best & picked) / k


def rank_signal(
    name: str, scores: np.ndarray, accuracy: np.ndarray, archs: np.ndarray | None = None
) -> SignalRank:
    """Rank ``scores`` (n,) against ``accuracy`` (n,); ValueError naming the signal if a score
    is NaN or infinite (``archs`` labels them), or if an accuracy is."""
    values = check_finite(name, scores, archs)
    acc = np.asarray(accuracy, dtype=np.float64)
    if acc.shape != values.shape or not np.isfinite(acc).all():
        raise ValueError(f"accuracy for {name!r} must be {values.shape[0]} finite values")
    tau = float(sps.kendalltau(values, acc).statistic)
    return SignalRank(name, len(values), spearman(values, acc), tau, top_recall(values, acc))


def rank_vote(columns: list[np.ndarray]) -> np.ndarray:
    """The mean rank (0..1) of each architecture over ``columns`` (each (n,), finite): a
    scalar stand-in for Abdelfattah et al.'s majority vote, used here to rank a vote."""
    n = len(columns[0])
    ranks = [
        np.argsort(np.argsort(c, kind="stable"), kind="stable") / max(1, n - 1) for c in columns
    ]
    return np.mean(ranks, axis=0)


__all__ = ["TOP_SHARE", "SignalRank", "rank_signal", "rank_vote", "top_recall"]
