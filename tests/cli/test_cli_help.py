"""`nasfilter --help` lists the commands without importing their modules, and lists them
exactly as the full parser does."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from nasfilter.cli import COMMAND_HELP, build_parser, main
from tests.paths import REPO


def test_the_listing_is_the_full_parsers_help() -> None:
    assert build_parser(listing=True).format_help() == build_parser().format_help()


def test_every_command_is_listed_with_the_help_its_module_registers() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    registered = {action.dest: action.help for action in commands._choices_actions}
    assert registered == COMMAND_HELP


def test_no_command_answers_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "migrate-db" in capsys.readouterr().out
    assert main([]) == 2
    assert "the following arguments are required: COMMAND" in capsys.readouterr().err
    assert main(["--version"]) == 0


@pytest.mark.subprocess
def test_the_listing_imports_no_command_module() -> None:
    code = (
        "import sys\nfrom nasfilter.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('nasfilter.cli.'))\n"
        "assert loaded == [], loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, capture_output=True)
