"""``python -m nasfilter.study_tss --out DIR``: run the tss study and write ``results.json``,
``results.md`` and Fig. 3 per dataset and device (``fig3-<dataset>-<device>.png/.svg``).

Each (dataset, device) block is appended to ``results.json`` as it finishes, so a run cut
short keeps what it finished; ``--seeds``, ``--datasets`` and ``--devices`` pick a part.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.drawing import FigureContext, save_figure
from nasfilter.oracle.measured import measured_proxy
from nasfilter.plots import fig3_utilization_space
from nasfilter.study_tss import (
    COMPARED,
    DATASETS,
    DEVICES,
    HP12,
    HP200_ONLY,
    SEEDS,
    TIMES,
    TWO_FIDELITY,
    fig3_numbers,
    hv_ratios,
    mean_and_se,
)
from nasfilter.study_tss.report import readme_section, render, splice
from nasfilter.tss_table import tss_table


def _fig3(dataset: str, device: str, out: Path) -> dict[str, Any]:
    nums = fig3_numbers(dataset, device)
    table, proxy = tss_table(dataset, HP12), measured_proxy(device)
    mask = np.zeros(table.space.size, dtype=bool)
    mask[nums.pareto_set] = True
    ctx = FigureContext(table.label, proxy.label, "hp-200 validation accuracy, seed mean (%)")
    fig = fig3_utilization_space(
        proxy.utilization, proxy.throughput, table.test_acc, mask, nums.spearman_util_acc, ctx
    )
    save_figure(fig, out, f"fig3-{dataset}-{device}")
    return {
        "pareto_set": nums.pareto_set.tolist(),
        "pareto_set_size": len(nums.pareto_set),
        "spearman_utilization_accuracy": nums.spearman_util_acc,
        "true_front_size": nums.true_front_size,
    }


def _block(dataset: str, device: str, seeds: list[int], out: Path) -> dict[str, Any]:
    rows = []
    for method in (*COMPARED, *HP200_ONLY, *TWO_FIDELITY):
        start = time.perf_counter()
        hv = hv_ratios(method, dataset, device, seeds)
        stats = [mean_and_se(hv[:, j]) for j in range(len(TIMES))]
        rows.append({
            "method": method.label, "searcher": method.searcher, "filter": method.filter,
            "table": method.table, "condition": method.condition,
            "hardware": method.hardware, "two_fidelities": method.two_fidelities,
            "hv": {str(int(t)): {"mean": m, "se": s} for t, (m, s) in zip(TIMES, stats,
                                                                        strict=True)},
            "per_seed": hv.tolist(), "seconds": round(time.perf_counter() - start, 2),
        })  # fmt: skip
        print(f"{dataset} {device} {method.label}: "
              + ", ".join(f"{m:.4f}±{s:.4f}" for m, s in stats), flush=True)  # fmt: skip
    return {"dataset": dataset, "device": device, "batch": 256, "seeds": seeds,
            "fig3": _fig3(dataset, device, out), "methods": rows}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nasfilter.study_tss", description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=len(SEEDS), help="seeds 0..N-1")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--devices", default=",".join(DEVICES))
    parser.add_argument("--docs", type=Path, default=None,
                        help="a checkout: rewrite its docs/tss-results.md and README.md sections "
                        "and copy Fig. 3 of cifar10 on each GPU to docs/img")  # fmt: skip
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "results.json"
    done = json.loads(path.read_text()) if path.is_file() else []
    seeds = list(range(args.seeds))
    for dataset in args.datasets.split(","):
        for device in args.devices.split(","):
            if any(b["dataset"] == dataset and b["device"] == device and b["seeds"] == seeds
                   for b in done):  # fmt: skip
                continue
            done.append(_block(dataset, device, seeds, args.out))
            path.write_text(json.dumps(done, indent=1))
    (args.out / "results.md").write_text(render(done))
    if args.docs is not None:
        splice(args.docs / "docs" / "tss-results.md", render(done))
        splice(args.docs / "README.md", readme_section(done))
        for device in args.devices.split(","):
            name = f"fig3-cifar10-{device}.png"
            if (args.out / name).is_file():
                shutil.copyfile(args.out / name, args.docs / "docs" / "img" / f"tss-{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
