"""``python -m benchmarks``: each module in its own process, its rows relayed and judged."""

from __future__ import annotations

import json
import os
import textwrap
import time
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
    "bench_hangs": """
        import os, subprocess, sys, time
        def run():
            worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            with open(os.environ["HANG_PIDS"], "w") as f:
                f.write(f"{os.getpid()} {worker.pid}")
            yield {"name": "a", "passed": True}
            time.sleep(600)
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

    def fake_run(module: str, limit_s: float) -> bool:
        assert limit_s == harness.DEFAULT_LIMIT_S
        ran.append(module)
        return module != "benchmarks.bench_demo"

    monkeypatch.setattr(harness, "run_module", fake_run)
    assert harness.main(["bench_search", "bench_demo"]) == 1
    assert ran == ["benchmarks.bench_demo", "benchmarks.bench_search"]
    ran.clear()
    assert harness.main(["bench_search"]) == 0 and ran == ["benchmarks.bench_search"]


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_module_over_its_limit_is_stopped_with_its_workers(fake, capfd, tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    monkeypatch.setenv("HANG_PIDS", str(pids))
    start = time.monotonic()
    assert harness.run_module(f"{fake}.bench_hangs", limit_s=3.0) is False
    assert time.monotonic() - start < 30  # not the module's 600 s sleep
    out = rows(capfd.readouterr().out)
    assert out[0] == {"name": "a", "passed": True}
    assert out[-1]["passed"] is False and "limit of 3 s" in out[-1]["error"]
    module_pid, worker_pid = map(int, pids.read_text().split())
    deadline = time.monotonic() + 10
    while (_alive(module_pid) or _alive(worker_pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(module_pid) and not _alive(worker_pid)


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "soon"])
def test_a_bad_limit_is_refused_naming_it(value, capsys):
    assert harness.main(["--limit", value, "bench_search"]) == 2
    assert repr(value) in capsys.readouterr().err


def test_a_limit_without_a_value_is_refused(capsys):
    assert harness.main(["bench_search", "--limit"]) == 2
    assert "--limit needs a number" in capsys.readouterr().err


def test_the_limit_reaches_every_module(monkeypatch):
    limits: list[float] = []
    monkeypatch.setattr(
        harness, "run_module", lambda module, limit_s: limits.append(limit_s) or True
    )
    assert harness.main(["--limit", "90", "bench_search", "bench_demo"]) == 0
    assert limits == [90.0, 90.0]
