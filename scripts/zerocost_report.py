"""Print the cheap-signal comparison of docs/cheap-signals.md from a zero-cost score file.

    python scripts/zerocost_report.py [FILE.npz]     # default: the shipped tss-cifar10 scores
    python scripts/zerocost_report.py --tss | --sss  # the other signals, every architecture

Accuracy, tss: the real NATS hp-200 validation accuracy (x-valid split, mean over the seeds
777/888/999 that were trained) of the dataset's record (cifar10: cifar10-valid). Beside each
proxy, on the same architectures: measured utilization and throughput (HELP latency, RTX 2080
Ti, batch 256), the real hp-12 validation accuracy (seed mean) and the NATS params/FLOPs.
Accuracy, sss: the real NATS hp-90 validation accuracy (x-valid split, seed 777); beside each
proxy the modelled utilization and throughput (calibrated GPU model, V100) and params/FLOPs.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nasfilter.bench.tss_data import load_tss_arrays  # noqa: E402
from nasfilter.oracle.measured import measured_proxy  # noqa: E402
from nasfilter.zerocost.compare import SignalRank, rank_signal, rank_vote  # noqa: E402
from nasfilter.zerocost.scorefile import ScoreFile, load_scores, packaged_scores  # noqa: E402

VOTE = ("synflow", "jacob_cov", "snip")


def references(space: str, dataset: str) -> dict[str, np.ndarray]:
    """The non-proxy signals of every architecture of ``space``, (size,) each: on tss the
    measured hardware signal (2080 Ti, batch 256), hp-12 accuracy and NATS params/FLOPs; on
    sss the modelled hardware signal (calibrated GPU model, V100) and params/FLOPs."""
    if space == "sss":
        from nasfilter.bench.costs import network_costs
        from nasfilter.oracle import proxy_table

        hw = proxy_table("calibrated", "v100", dataset)
        costs = network_costs(dataset)
        return {
            "utilization (modelled: calibrated GPU model, V100)": hw.utilization,
            "throughput (modelled: calibrated GPU model, V100)": hw.throughput,
            "params": costs.params,
            "FLOPs": costs.macs,
        }
    arrays = load_tss_arrays(dataset)
    hw = measured_proxy("2080ti", 256)
    return {
        "utilization (measured 2080 Ti, batch 256)": hw.utilization,
        "throughput (measured 2080 Ti, batch 256)": hw.throughput,
        "hp-12 validation accuracy (real, seed mean)": arrays.hp12_valid_acc,
        "params (NATS)": arrays.params_M,
        "FLOPs (NATS)": arrays.flops_M,
    }


def accuracy(space: str, dataset: str) -> np.ndarray:
    """The real accuracy each signal is ranked against, float64 (size,), NaN where unknown:
    tss, hp-200 validation (x-valid), mean over the trained seeds; sss, hp-90 validation
    (x-valid), seed 777."""
    if space == "sss":
        from nasfilter.bench.sss_real import read_accuracies

        return np.asarray(read_accuracies(dataset), dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: no seed trained
        return np.nanmean(load_tss_arrays(dataset).hp200_valid_acc.astype(np.float64), axis=1)


def table(rows: list[tuple[str, SignalRank]]) -> str:
    lines = ["| signal | n | Spearman | Kendall | top-5 % recall |", "|---|---|---|---|---|"]
    for label, r in rows:
        lines.append(
            f"| {label} | {r.n} | {r.spearman:.3f} | {r.kendall:.3f} | {r.top_recall:.2f} |"
        )
    return "\n".join(lines)


def sample_rows(f: ScoreFile, proxies: list[str], acc: np.ndarray) -> tuple[np.ndarray, list]:
    """Rows over the architectures where every proxy of ``proxies`` is computed and finite and
    the accuracy known (disconnected cells with a NaN score are dropped, and counted)."""
    done = np.logical_and.reduce([f.computed[p] for p in proxies])
    finite = np.logical_and.reduce([np.isfinite(f.values[p]) for p in proxies])
    archs = np.flatnonzero(done & finite & np.isfinite(acc))
    dropped = int((done & ~finite).sum())
    rows = [
        (
            f"{p} (stand-in data)" if p not in ("synflow", "zen", "params", "flops") else p,
            rank_signal(p, f.values[p][archs], acc[archs], archs),
        )
        for p in proxies
    ]
    if all(p in proxies for p in VOTE):
        vote = rank_vote([f.values[p][archs].astype(np.float64) for p in VOTE])
        rows.append(
            ("vote: mean rank of synflow, jacob_cov, snip", rank_signal("vote", vote, acc[archs]))
        )
    for label, values in references(f.space, f.dataset).items():
        rows.append((label, rank_signal(label, values[archs], acc[archs], archs)))
    print(f"\n{len(archs)} architectures ({dropped} dropped: a NaN score, disconnected cells)")
    return archs, rows


def sss_rows(dataset: str) -> None:
    """The sss signals without zero-cost scores: modelled hardware signal and params/FLOPs
    against the real hp-90 validation accuracy (x-valid, seed 777), all 32768."""
    acc = accuracy("sss", dataset)
    every = np.flatnonzero(np.isfinite(acc))
    print(f"\nsss {dataset}: all {len(every)} architectures, real hp-90 x-valid, seed 777")
    refs = references("sss", dataset).items()
    print(table([(k, rank_signal(k, v[every], acc[every], every)) for k, v in refs]))


def main() -> None:
    if sys.argv[1:2] == ["--tss"]:
        for dataset in ("cifar10", "cifar100", "ImageNet16-120"):
            acc = accuracy("tss", dataset)
            every = np.flatnonzero(np.isfinite(acc))
            refs = references("tss", dataset).items()
            print(f"\ntss {dataset}: {len(every)} architectures, real hp-200 x-valid seed mean")
            print(table([(k, rank_signal(k, v[every], acc[every], every)) for k, v in refs]))
        return
    if sys.argv[1:2] == ["--sss"]:
        for dataset in ("cifar10", "cifar100", "ImageNet16-120"):
            sss_rows(dataset)
        return
    f = load_scores(sys.argv[1]) if len(sys.argv) > 1 else packaged_scores("tss", "cifar10")
    acc = accuracy(f.space, f.dataset)
    counts = {p: int(f.computed[p].sum()) for p in f.proxies}
    print(f"{f.space} {f.dataset}, seed {f.seed}, stand-in {f.stand_in}; computed: {counts}")
    full = [p for p in f.proxies if counts[p] > 0]  # over the archs where all are computed
    _, rows = sample_rows(f, full, acc)
    print(table(rows))
    most = [p for p in f.proxies if counts[p] == max(counts.values())]
    if most != full:
        _, rows = sample_rows(f, most, acc)
        print(table(rows))
    every = np.flatnonzero(np.isfinite(acc))
    rows = [
        (lab, rank_signal(lab, v[every], acc[every], every))
        for lab, v in references(f.space, f.dataset).items()
    ]
    print(f"\nall {len(every)} architectures with a real accuracy")
    print(table(rows))
    for p in f.proxies:
        secs = f.seconds[p][f.computed[p]]
        print(f"{p}: median {np.median(secs):.3f} CPU s over {secs.size}")


if __name__ == "__main__":
    main()
