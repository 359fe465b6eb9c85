"""Rewrite the tss study's tables in docs/tss-results.md and the README's tss section from a
finished ``nasfilter reproduce --space tss --out DIR`` (never typed by hand).

    python scripts/update_tss_docs.py DIR            # rewrite both sections, copy Fig. 3
    python scripts/update_tss_docs.py DIR --check    # exit 1 if either section is stale

The sections lie between ``<!-- tss-results:begin -->`` and ``<!-- tss-results:end -->``;
Fig. 3 of cifar10 on each GPU is copied to ``docs/img/tss-fig3-cifar10-<gpu>.png``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the --out folder of `reproduce --space tss`")
    parser.add_argument("--check", action="store_true", help="exit 1 if a section is stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from nasfilter.study.tss.report import readme_section, render, section, splice

    blocks = json.loads((args.out / "summary.json").read_text("utf-8"))["blocks"]
    targets = ((REPO / "docs" / "tss-results.md", render(blocks)),
               (REPO / "README.md", readme_section(blocks)))  # fmt: skip
    if args.check:
        stale = [str(p) for p, text in targets if section(p) != text]
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    for path, text in targets:
        splice(path, text)
    for b in blocks:
        name = f"fig3-{b['dataset']}-{b['device']}.png"
        if b["dataset"] == "cifar10" and (args.out / name).is_file():
            shutil.copyfile(args.out / name, REPO / "docs" / "img" / f"tss-{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
