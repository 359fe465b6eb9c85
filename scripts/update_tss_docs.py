"""Rewrite the tss study's tables in docs/tss-results.md and the README's tss section from a
finished ``nasfilter reproduce --space tss --out DIR`` (never typed by hand).

    python scripts/update_tss_docs.py DIR            # rewrite both sections, copy Fig. 3
    python scripts/update_tss_docs.py --more B256 B1 B32   # the other GPUs and batches
    python scripts/update_tss_docs.py [DIR] [--more ...] --check   # exit 1 if stale

The sections lie between ``<!-- tss-results:begin -->`` and ``<!-- tss-results:end -->``;
Fig. 3 of cifar10 on each GPU is copied to ``docs/img/tss-fig3-cifar10-<gpu>.png``. ``--more``
takes the ``--out`` folders of further runs (other GPUs, ``--oracle 'measured[batch=B]'``) and
writes their tables, grouped by batch, between ``<!-- tss-more:begin -->`` and
``<!-- tss-more:end -->`` in docs/tss-results.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _blocks(out: Path) -> list[dict[str, object]]:
    """The blocks of ``out``'s summary.json, or of its results.json (the blocks a run cut
    short finished) where there is no summary."""
    if not (out / "summary.json").is_file():
        done: list[dict[str, object]] = json.loads((out / "results.json").read_text("utf-8"))
        return done
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    if "scored_with" in summary:  # the docs show the tables' own scores, never a user's file
        raise SystemExit(f"{out}/summary.json is scored on the files {summary['scored_with']} "
                         "(--score-with); write it back with `nasfilter reproduce --space tss "
                         f"--out {out} --resume` first")  # fmt: skip
    blocks: list[dict[str, object]] = summary["blocks"]
    return blocks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?",
                        help="the --out folder of `reproduce --space tss` (the main tables)")
    parser.add_argument("--more", type=Path, nargs="+", default=[], metavar="DIR",
                        help="--out folders of runs on other GPUs or batches")
    parser.add_argument("--check", action="store_true", help="exit 1 if a section is stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from nasfilter.study.tss.report import MORE, readme_section, render, render_more, section

    if args.out is None and not args.more:
        parser.error("give the main study's folder DIR, --more folders, or both")
    blocks = _blocks(args.out) if args.out is not None else []
    results = REPO / "docs" / "tss-results.md"
    targets: list[tuple[Path, str, tuple[str, str] | None]] = []
    if args.out is not None:
        targets += [(results, render(blocks), None),
                    (REPO / "README.md", readme_section(blocks), None)]  # fmt: skip
    if args.more:
        more = [b for folder in args.more for b in _blocks(folder)]
        targets.append((results, render_more(more), MORE))
    if args.check:
        stale = [f"{p}" + (" (other GPUs and batches)" if m else "") for p, text, m in targets
                 if section(p, *([m] if m else [])) != text]  # fmt: skip
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    _write(targets, args.out, blocks)
    return 0


def _write(targets: list[tuple[Path, str, tuple[str, str] | None]], out: Path | None,
           blocks: list[dict[str, object]]) -> None:  # fmt: skip
    from nasfilter.study.tss.report import splice

    for path, text, markers in targets:
        if markers is None:
            splice(path, text)
        else:
            splice(path, text, markers)
    for b in blocks:
        name = f"fig3-{b['dataset']}-{b['device']}.png"
        if out is not None and b["dataset"] == "cifar10" and (out / name).is_file():
            shutil.copyfile(out / name, REPO / "docs" / "img" / f"tss-{name}")


if __name__ == "__main__":
    raise SystemExit(main())
