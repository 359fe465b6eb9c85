"""docs/cli.md is exactly what scripts/gen_cli_docs.py generates from the parser."""

from __future__ import annotations

from nasfilter.cli import COMMAND_MODULES, build_parser
from tests.paths import REPO, load_script


def test_committed_cli_reference_is_up_to_date() -> None:
    generated = load_script("gen_cli_docs").render()
    committed = (REPO / "docs" / "cli.md").read_text("utf-8")
    assert committed == generated, "docs/cli.md is out of date: run `make docs`"


def test_reference_covers_every_subcommand_and_option() -> None:
    text = load_script("gen_cli_docs").render()
    parser = build_parser()
    (sub_action,) = [a for a in parser._actions if a.dest == "command"]
    assert len(sub_action.choices) == len(COMMAND_MODULES)  # one subcommand per module
    for name, sub in sub_action.choices.items():
        assert f"## `nasfilter {name}`" in text
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in text, f"{flag} of `nasfilter {name}` is missing"
