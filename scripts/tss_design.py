"""How the tss study's "model-based, layers (designed on cifar10)" was chosen (the goal of
a mean HV ratio >= 0.99 at 20,000 s on cifar100 and ImageNet16-120), on cifar10 only.

20,000 s buys about 30 hp-12 evaluations on ImageNet16-120 and about 90 on cifar100 (median
12-epoch training time 662 s and 218 s); on cifar10 (109 s) the same numbers of evaluations
cost about 3,300 s and 10,000 s. So every variant runs on cifar10 at those two budgets, on the
2080 Ti at batch 256, with seeds disjoint from the scored 0-8: a screen on seeds 100-104, then
the finalists on seeds 105-114. Nothing of cifar100 or ImageNet16-120 is read.

    python scripts/tss_design.py            # about 6 minutes on two shared cores
    python scripts/tss_design.py --held-out # the chosen method on cifar100, ImageNet16-120

``--held-out`` runs the chosen method, unchanged, on cifar100 and ImageNet16-120 at 20,000 s,
seeds 0-8 (the scored ones), on the 2080 Ti at batch 256, and prints the mean HV ratio (SE).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

SCREEN = (  # every variant run, in the order run
    "model-based",
    "model-based[init=5,batch=4]",
    "model-based[init=8,batch=4,cost_power=1.0]",
    "model-based-hw[init=8,batch=4,cost_power=1.0]",
    "model-based[init=8,batch=4,cost_power=0.5]",
    "model-based[init=5,batch=2,cost_power=1.0,calibrate=True]",
    "model-based[init=8,batch=4,cost_power=1.0,beta=0.5]",
    "model-based[init=8,batch=4,cost_power=1.0,acquisition=layers]",
    "model-based[acquisition=layers]",
    "model-based[init=5,batch=4,acquisition=layers]",
    "model-based[init=8,batch=4,acquisition=layers]",
    "model-based[init=8,batch=8,cost_power=1.0,acquisition=layers]",
    "model-based[init=5,batch=4,cost_power=1.0,acquisition=layers]",
    "model-based[init=12,batch=4,cost_power=1.0,acquisition=layers]",
    "model-based-hw[init=8,batch=4,cost_power=1.0,acquisition=layers]",
    "model-based[init=8,batch=4,cost_power=1.0,acquisition=layers,calibrate=True]",
    "model-based[init=8,batch=4,cost_power=1.0,acquisition=layers,pool=3.0]",
    "model-based[init=8,batch=2,cost_power=1.0,acquisition=layers]",
)
FINALISTS = (  # the best of the screen, within noise of each other; the simplest won
    "model-based[init=8,batch=8,acquisition=layers]",
    "model-based[init=8,batch=4,acquisition=layers,calibrate=True]",
    "model-based[init=8,batch=4,acquisition=layers,pool=3.0]",
    "model-based[init=8,batch=8,acquisition=layers,calibrate=True]",
)
CHOSEN = "model-based[init=8,batch=8,acquisition=layers]"
BUDGETS = (3_300.0, 10_000.0)  # cifar10 seconds buying ImageNet16-120's / cifar100's evaluations


def held_out() -> None:
    """The chosen method on the held-out datasets, scored seeds 0-8, 20,000 s."""
    from nasfilter.study.tss import TssMethod, hv_ratios

    for dataset in ("cifar100", "ImageNet16-120"):
        hv = hv_ratios(TssMethod(CHOSEN, CHOSEN), dataset, "2080ti", list(range(9)), (20_000.0,))
        print(f"held out: {CHOSEN} on {dataset}, 2080ti, seeds 0-8, 20,000 s: mean HV ratio "
              f"{hv.mean():.4f} (SE {hv.std(ddof=1) / np.sqrt(len(hv)):.4f})", flush=True)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from nasfilter.study.tss import TssMethod, hv_ratios

    if "--held-out" in (sys.argv[1:] if argv is None else argv):
        held_out()
        return 0
    for title, specs, seeds in (("screen", SCREEN, range(100, 105)),
                                ("finalists", FINALISTS, range(105, 115))):  # fmt: skip
        print(f"{title}: cifar10, 2080ti, seeds {seeds.start}-{seeds.stop - 1}, mean (SE) HV "
              f"ratio at {BUDGETS[0]:,.0f} s and {BUDGETS[1]:,.0f} s")
        for spec in specs:
            hv = hv_ratios(TssMethod(spec, spec), "cifar10", "2080ti", list(seeds), BUDGETS)
            se = hv.std(axis=0, ddof=1) / np.sqrt(len(hv))
            cells = ", ".join(f"{m:.4f} ({s:.4f})" for m, s in zip(hv.mean(axis=0), se,
                                                                    strict=True))
            print(f"  {spec}: {cells}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
