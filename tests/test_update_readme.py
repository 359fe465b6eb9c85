"""scripts/update_readme.py splices the generated section between its markers, nowhere else."""

from __future__ import annotations

import pytest

from tests.paths import load_script


def test_splice_replaces_only_the_marked_section() -> None:
    m = load_script("update_readme")
    readme = f"# Title\n\nintro\n\n{m.BEGIN}\nold table\n{m.END}\n\n## After\n"
    section = f"{m.BEGIN}\nnew table\n{m.END}"
    out = m.splice(readme, section)
    assert out == f"# Title\n\nintro\n\n{section}\n\n## After\n"
    assert m.splice(out, section) == out  # idempotent


def test_splice_without_markers_says_what_to_add() -> None:
    m = load_script("update_readme")
    with pytest.raises(ValueError, match="results:begin"):
        m.splice("# no markers\n", "x")
