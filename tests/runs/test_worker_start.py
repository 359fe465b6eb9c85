"""Parallel runs that say what is wrong: real scripts, run as a user runs them.

A script without ``if __name__ == "__main__":`` either works with ``jobs=2`` or stops before
any worker starts with the guard named; a lambda factory is refused by name; nothing the
library does on its own (the plugin contract checks) changes how workers start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).parent.resolve().parent.parent

# Spawning is forced the way a user's process comes to it: torch imported (its thread pool
# rules out a fork; importing torch takes seconds, so a live thread stands in for it here).
FORCE_SPAWN = textwrap.dedent(
    """
    import threading
    threading.Thread(target=threading.Event().wait, daemon=True).start()
    """
)
PLUGIN = textwrap.dedent(
    """
    from nasfilter.searchers import RandomSearch

    class MySearch(RandomSearch):
        name = "my-search"
    """
)
RUN = textwrap.dedent(
    """
    specs = nasfilter.grid([{searcher}], budget=4000.0, n_ticks=4, table="synthetic")
    runs = nasfilter.run_experiment(specs, range(2), jobs=2)
    print("RUNS", len(runs), sorted(round(r.metrics["hv_ratio"], 6) for r in runs))
    import multiprocessing
    print("METHOD", multiprocessing.get_start_method(allow_none=True))
    """
)


def _script(tmp_path: Path, body: str, name: str = "study.py") -> subprocess.CompletedProcess:
    path = tmp_path / name
    path.write_text(body)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path, env=env,
        timeout=300,
    )


@pytest.mark.subprocess
def test_an_unguarded_script_passing_its_own_class_is_stopped_naming_the_guard(
    tmp_path: Path,
) -> None:
    body = "import nasfilter\n" + FORCE_SPAWN + PLUGIN + RUN.format(searcher="MySearch")
    done = _script(tmp_path, body)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "MainGuardError" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr
    assert "'spawn'" in done.stderr and "threads run in this process" in done.stderr
    assert "line 12" in done.stderr  # the run_experiment call of the script, named
    assert "WorkerDied" not in done.stderr and "RUNS" not in done.stdout


@pytest.mark.subprocess
def test_the_same_script_runs_once_guarded(tmp_path: Path) -> None:
    guarded = "    " + RUN.format(searcher="MySearch").strip().replace("\n", "\n    ")
    body = (
        "import nasfilter\n" + FORCE_SPAWN + PLUGIN
        + 'if __name__ == "__main__":\n' + guarded + "\n"
    )
    done = _script(tmp_path, body)
    assert done.returncode == 0, done.stderr
    assert "RUNS 2" in done.stdout


@pytest.mark.subprocess
def test_an_unguarded_script_with_named_searchers_runs_on_spawned_workers(
    tmp_path: Path,
) -> None:
    """The workers need nothing of the script, so they start without importing it."""
    body = "import nasfilter\n" + FORCE_SPAWN + RUN.format(searcher='"random"')
    spawned = _script(tmp_path, body, "spawned.py")
    forked = _script(tmp_path, "import nasfilter\n" + RUN.format(searcher='"random"'))
    assert spawned.returncode == 0 and forked.returncode == 0, spawned.stderr + forked.stderr
    assert "RUNS 2" in spawned.stdout
    runs = [line for line in spawned.stdout.splitlines() if line.startswith("RUNS")]
    assert runs == [line for line in forked.stdout.splitlines() if line.startswith("RUNS")]


@pytest.mark.subprocess
def test_a_lambda_factory_is_refused_before_any_worker_starts(tmp_path: Path) -> None:
    body = textwrap.dedent(
        """
        import multiprocessing
        import nasfilter
        from nasfilter.searchers import RandomSearch

        specs = nasfilter.grid([lambda: RandomSearch()], budget=4000.0, table="synthetic")
        try:
            nasfilter.run_experiment(specs, range(2), jobs=2)
        except ValueError as exc:
            print("REFUSED", exc)
        print("CHILDREN", len(multiprocessing.active_children()))
        """
    )
    done = _script(tmp_path, body)
    assert done.returncode == 0, done.stderr
    assert "REFUSED the searcher factory __main__.<lambda>" in done.stdout
    assert "jobs=2" in done.stdout and "module level" in done.stdout
    assert "CHILDREN 0" in done.stdout


@pytest.mark.subprocess
def test_the_plugin_contract_check_leaves_workers_forked(tmp_path: Path) -> None:
    """check_searcher once imported torch to check its generator, which made every later
    experiment spawn its workers."""
    body = textwrap.dedent(
        """
        import sys
        from nasfilter.runs.experiment import fork_blocker
        from nasfilter.searchers import RandomSearch
        from nasfilter.testing.contracts import check_searcher

        check_searcher(RandomSearch, budget=4000.0)
        print("TORCH", "torch" in sys.modules, "BLOCKER", fork_blocker())
        """
    )
    done = _script(tmp_path, body)
    assert done.returncode == 0, done.stderr
    assert "TORCH False BLOCKER None" in done.stdout


def _readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.subprocess
def test_the_readme_example_runs_as_a_script_with_two_jobs_forked_or_spawned(
    tmp_path: Path,
) -> None:
    example = _readme_example()
    assert "jobs=2" in example and "__main__" not in example
    forked = _script(tmp_path, example, "forked.py")
    spawned = _script(tmp_path, FORCE_SPAWN + example, "spawned.py")
    assert forked.returncode == 0 and spawned.returncode == 0, forked.stderr + spawned.stderr
    lines = forked.stdout.splitlines()
    assert len(lines) == 6 and lines == spawned.stdout.splitlines()


@pytest.mark.subprocess
def test_python_m_nasfilter_on_spawned_workers_runs(tmp_path: Path) -> None:
    """``python -m nasfilter`` calls main() unguarded in its __main__; multiprocessing never
    imports a package's __main__ again, so nothing is refused."""
    code = (
        FORCE_SPAWN
        + "import runpy, sys\n"
        + "sys.argv = ['nasfilter', 'run', '--searchers', 'random', '--seeds', '0-1',"
        " '--budget', '4000', '--table', 'synthetic', '--db', 'r.db', '--jobs', '2',"
        " '--no-progress']\n"
        + "runpy.run_module('nasfilter', run_name='__main__', alter_sys=True)\n"
    )
    done = _script(tmp_path, code, "launch.py")
    assert done.returncode == 0, done.stderr
    assert "wrote 2 runs" in done.stderr + done.stdout
