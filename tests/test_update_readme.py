"""scripts/update_readme.py splices the generated section between its markers, nowhere else."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "update_readme", REPO / "scripts/update_readme.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_splice_replaces_only_the_marked_section() -> None:
    m = _script()
    readme = f"# Title\n\nintro\n\n{m.BEGIN}\nold table\n{m.END}\n\n## After\n"
    section = f"{m.BEGIN}\nnew table\n{m.END}"
    out = m.splice(readme, section)
    assert out == f"# Title\n\nintro\n\n{section}\n\n## After\n"
    assert m.splice(out, section) == out  # idempotent


def test_splice_without_markers_says_what_to_add() -> None:
    m = _script()
    with pytest.raises(ValueError, match="results:begin"):
        m.splice("# no markers\n", "x")
