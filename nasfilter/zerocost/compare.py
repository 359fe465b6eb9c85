"""How well a cheap signal ranks architectures: Spearman, Kendall and top-5 % recall against a
real accuracy, with NaN scores refused by name (:func:`~nasfilter.zerocost.base.check_finite`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from nasfilter.stats import spearman
from nasfilter.zerocost.base import check_finite

TOP_SHARE = 0.05  # the top share whose recall is reported


@dataclass(frozen=True)
class SignalRank:
    """One signal against one accuracy over ``n`` architectures (all its values finite)."""

    signal: str
    n: int
    spearman: float
    kendall: float
    top_recall: float


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
