"""Rewrite the clairvoyant-ceiling tables of docs/tss-results.md and docs/cheap-signals.md
(``nasfilter.study.ceilings``; about 30 s on two cores, never typed by hand).

    python scripts/update_ceiling_docs.py            # rewrite both sections
    python scripts/update_ceiling_docs.py --check    # exit 1 if a section is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a section is stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from nasfilter.study.ceilings import DOC_SECTIONS, ceiling_table
    from nasfilter.study.tss.report import section, splice

    stale = []
    for name, markers, rows, observed in DOC_SECTIONS:
        path = REPO / name
        text = ceiling_table(rows(), observed)
        if args.check:
            if section(path, markers) != text:
                stale.append(name)
        else:
            splice(path, text, markers)
    if args.check:
        print("stale: " + ", ".join(stale) if stale else "up to date")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
