"""``python -m benchmarks``: each module in its own process, its rows relayed and judged."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from benchmarks import __main__ as harness

pytestmark = pytest.mark.subprocess

REPO = Path(__file__).resolve().parent.parent

MODULES = {
    "bench_ok": """
        def run():
            yield {"name": "a", "passed": True}
            print("a stray line")
            yield {"name": "b", "passed": True}
    """,
    "bench_fails": """
        def run():
            yield {"name": "a", "passed": True}
            yield {"name": "b", "passed": False}
    """,
    "bench_raises": """
        def run():
            yield {"name": "a", "passed": True}
            raise RuntimeError("boom")
    """,
    "bench_dies": """
        import os, sys
        def run():
            yield {"name": "a", "passed": True}
            sys.stdout.flush()
            os._exit(3)
    """,
    "bench_marks": """
        import json
        def run():
            json.MARKED_BY_ANOTHER_MODULE = True
            yield {"name": "marks", "passed": True}
    """,
    "bench_checks": """
        import json
        def run():
            yield {"name": "clean", "passed": not hasattr(json, "MARKED_BY_ANOTHER_MODULE")}
    """,
}


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package ``fakebench`` of the modules above, importable by the child processes."""
    package = tmp_path / "fakebench"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in MODULES.items():
        (package / f"{name}.py").write_text(textwrap.dedent(text))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(REPO)]))
    return "fakebench"


def rows(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_a_passing_module_relays_its_rows_and_its_stray_output(fake, capfd):
    assert harness.run_module(f"{fake}.bench_ok") is True
    out = capfd.readouterr().out
    assert [r["name"] for r in rows(out)] == ["a", "b"]
    assert "a stray line" in out


def test_one_failed_row_fails_the_module(fake, capfd):
    assert harness.run_module(f"{fake}.bench_fails") is False
    assert [r["passed"] for r in rows(capfd.readouterr().out)] == [True, False]


def test_a_module_that_raises_gives_a_failed_row_naming_the_error(fake, capfd):
    assert harness.run_module(f"{fake}.bench_raises") is False
    captured = capfd.readouterr()
    last = rows(captured.out)[-1]
    assert last["passed"] is False and "boom" in last["error"]
    assert "RuntimeError" in captured.err  # the traceback, on standard error


def test_a_module_whose_process_dies_after_passing_rows_is_failed(fake, capfd):
    assert harness.run_module(f"{fake}.bench_dies") is False
    last = rows(capfd.readouterr().out)[-1]
    assert last["passed"] is False and "status 3" in last["error"] and "1 rows" in last["error"]


def test_modules_do_not_share_a_process(fake, capfd):
    assert harness.run_module(f"{fake}.bench_marks") is True
    assert harness.run_module(f"{fake}.bench_checks") is True
    assert rows(capfd.readouterr().out)[-1] == {"name": "clean", "passed": True}


def test_an_unknown_module_name_is_refused_naming_it_and_the_known_ones(capsys):
    assert harness.main(["bench_nonesuch"]) == 2
    err = capsys.readouterr().err
    assert "bench_nonesuch" in err and "bench_search" in err


def test_main_runs_the_named_modules_in_name_order_and_fails_if_one_fails(monkeypatch):
    ran: list[str] = []

    def fake_run(module: str) -> bool:
        ran.append(module)
        return module != "benchmarks.bench_demo"

    monkeypatch.setattr(harness, "run_module", fake_run)
    assert harness.main(["bench_search", "bench_demo"]) == 1
    assert ran == ["benchmarks.bench_demo", "benchmarks.bench_search"]
    ran.clear()
    assert harness.main(["bench_search"]) == 0 and ran == ["benchmarks.bench_search"]
