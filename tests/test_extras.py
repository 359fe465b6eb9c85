"""A slim install: the core needs numpy, scipy and tqdm; every other package is an extra,
imported only where used, and a missing one is named with its extra."""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nasfilter.extras import EXTRA_OF, ExtraMissing, install_hint, missing_message, require

REPO = Path(__file__).resolve().parent.parent


def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return cfg


def _names(requirements: str) -> set[str]:
    return {re.split(r"[<>=!~ ]", line.strip())[0] for line in requirements.split("\n") if line}


def test_the_core_install_is_numpy_scipy_and_tqdm() -> None:
    assert _names(_setup_cfg()["options"]["install_requires"]) == {"numpy", "scipy", "tqdm"}


def test_every_optional_module_names_an_extra_of_setup_cfg_that_installs_it() -> None:
    extras = _setup_cfg()["options.extras_require"]
    package = {"nats_bench": "nats-bench"}  # the distribution's name, where it differs
    for module, extra in EXTRA_OF.items():
        assert extra in extras, (module, extra)
        assert package.get(module, module) in _names(extras[extra]), (module, extra)
    assert install_hint("matplotlib.pyplot") == "pip install 'nasfilter[plot]'"
    assert install_hint("numpy") is None
    assert missing_message("json", "x") is None  # not optional: the error is left as it is


def test_require_names_the_extra_without_importing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)  # find_spec sees it as not installed
    with pytest.raises(ExtraMissing, match=r"peers needs optuna.*nasfilter\[optuna\]"):
        require("optuna", "peers")
    require("numpy", "everything")  # installed: nothing happens


@pytest.mark.subprocess
def test_the_core_modules_import_no_optional_package() -> None:
    """What the demo, experiments and results import: none of the extras' packages."""
    code = (
        "import sys\n"
        "import nasfilter, nasfilter.cli.demo, nasfilter.runs.experiment, nasfilter.runs.results\n"
        "from nasfilter.cli import build_parser\n"
        "build_parser()\n"
        "from nasfilter.extras import BY_HAND, EXTRA_OF\n"
        "print(sorted(m for m in [*EXTRA_OF, *BY_HAND] if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.subprocess
def test_reproduce_without_matplotlib_stops_before_running_naming_the_plot_extra(
    tmp_path: Path,
) -> None:
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from nasfilter.cli import main\n"
        "sys.exit(main(['reproduce', '--table', 'synthetic', '--seeds', '0', '--budget',"
        f" '4000', '--out', {str(tmp_path / 'out')!r}]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 2, done.stderr
    assert "needs matplotlib, which is not installed: pip install 'nasfilter[plot]'" in (
        done.stderr
    )
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_every_tracked_data_file_of_the_package_is_in_its_package_data() -> None:
    # A file the code reads but no package_data glob names is left out of a wheel (and of
    # a non-editable install) while every test of an editable checkout still passes.
    tracked = subprocess.run(
        ["git", "ls-files", "nasfilter"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    data = [Path(p).relative_to("nasfilter") for p in tracked if not p.endswith(".py")]
    assert any(p.parts[0] == "data" for p in data)  # the listing itself is not empty
    globs = [g.strip() for g in _setup_cfg()["options.package_data"]["nasfilter"].split(",")]
    unlisted = [str(p) for p in data if not any(p.match(g) for g in globs)]
    assert unlisted == []
