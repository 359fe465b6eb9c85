"""The size space's module constants stay in its definition ("the search space as a
value"): no module of ``nasfilter`` outside ``nasfilter/bench/spaces/`` names ``N_ARCHS``,
``CHANNEL_CHOICES``, ``N_LAYERS`` or ``N_CHOICES``; code reads the space value instead
(``table.space.size``, ``SSS.size``, ``SSS.choices``, ``SSS.n_positions``).

Read from the source with ``ast``, nothing imported: an import of the name (``from ... import
N_ARCHS``, aliased or not), a bare name and an attribute (``sss.N_ARCHS``) all count; a word
in a string or a comment does not.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

import nasfilter
from nasfilter.bench.spaces import SSS

PACKAGE = Path(__file__).resolve().parents[2] / "nasfilter"
SPACES_DIR = PACKAGE / "bench" / "spaces"
BANNED = frozenset({"N_ARCHS", "CHANNEL_CHOICES", "N_LAYERS", "N_CHOICES"})


def constant_references(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of every reference to a :data:`BANNED` name in ``source``, sorted."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in BANNED:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in BANNED:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom):
            found += [(node.lineno, a.name) for a in node.names if a.name in BANNED]
    return sorted(found)


def test_the_checker_finds_every_form_of_reference() -> None:
    source = (
        "from nasfilter.bench.spaces.sss import N_ARCHS as n, Arch\n"  # 1: aliased import
        "from nasfilter.bench.spaces import sss\n"
        "x = sss.CHANNEL_CHOICES[0]\n"  # 3: attribute
        "def f(size=N_LAYERS):\n"  # 4: bare name in a default
        "    return 'N_CHOICES'  # N_ARCHS in a comment\n"  # 5: a string, not a reference
        "y = [N_CHOICES for _ in range(2)]\n"  # 6: bare name
    )
    assert constant_references(source) == [
        (1, "N_ARCHS"), (3, "CHANNEL_CHOICES"), (4, "N_LAYERS"), (6, "N_CHOICES"),
    ]  # fmt: skip


def test_no_module_outside_the_space_definition_names_a_size_space_constant() -> None:
    files = [p for p in sorted(PACKAGE.rglob("*.py")) if SPACES_DIR not in p.parents]
    assert len(files) > 100  # the walk found the package
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name}"
        for path in files
        for line, name in constant_references(path.read_text(encoding="utf-8"))
    ]
    assert not found, (
        "module constants of the size space outside nasfilter/bench/spaces/ (read the space "
        "value instead: table.space.size, SSS.size, SSS.choices, SSS.n_positions):\n"
        + "\n".join(found)
    )


def test_the_space_definition_still_holds_the_constants() -> None:
    sss_source = (SPACES_DIR / "sss.py").read_text(encoding="utf-8")
    assert {name for _, name in constant_references(sss_source)} == BANNED


def test_the_package_s_old_names_warn_and_give_the_space_value() -> None:
    assert "N_ARCHS" not in nasfilter.__all__ and "CHANNEL_CHOICES" not in nasfilter.__all__
    assert nasfilter.SSS is SSS and nasfilter.SSS.size == 32768
    with pytest.warns(DeprecationWarning, match=r"nasfilter\.SSS\.size"):
        assert nasfilter.N_ARCHS == 32768
    with pytest.warns(DeprecationWarning, match=r"nasfilter\.SSS\.choices"):
        assert nasfilter.CHANNEL_CHOICES == (8, 16, 24, 32, 40, 48, 56, 64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nasfilter.TSS.size == 15625 and nasfilter.get_space("tss") is nasfilter.TSS
