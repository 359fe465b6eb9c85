"""The command line resolves a spec's inputs once, through the runs' own resolution
(:func:`nasfilter.runs.inputs.inputs`), and its errors name the flag at fault."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nasfilter.runs.inputs as inputs_module
from nasfilter.cli import main
from nasfilter.cli.run import resolve_inputs
from nasfilter.runs.experiment import RunSpec
from nasfilter.runs.metrics import FrontReference
from tests.tables import random_table


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts of table loads, proxy loads and front references built, from empty caches."""
    counts: Counter[str] = Counter()
    load_table, proxy_table = inputs_module.load_table, inputs_module.proxy_table
    build = FrontReference.build

    def counted(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(inputs_module, "load_table", counted("table", load_table))
    monkeypatch.setattr(inputs_module, "proxy_table", counted("proxy", proxy_table))
    monkeypatch.setattr(FrontReference, "build", counted("reference", build))
    inputs_module.clear_caches()
    yield counts
    inputs_module.clear_caches()


def test_a_run_resolves_its_inputs_once(
    tmp_path: Path, loads: Counter[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--searchers", "random,evolution", "--filters", "none",
            "proxy-threshold[tolerance=0.1]", "--seeds", "0-1", "--budget", "3000",
            "--table", "synthetic", "--oracle", "roofline", "--db", str(tmp_path / "r.db"),
            "--jobs", "1", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    assert "wrote 8 runs" in capsys.readouterr().err  # 4 specs x 2 seeds, one input
    assert loads == {"table": 1, "proxy": 1, "reference": 1}


def test_distinct_inputs_resolve_once_each(loads: Counter[str]) -> None:
    specs = [
        RunSpec(searcher, dataset=dataset, table="synthetic", oracle="roofline")
        for dataset in ("cifar10", "cifar100")
        for searcher in ("random", "evolution")
    ]
    first = resolve_inputs(specs)
    assert first.table.dataset.name == "cifar10"
    assert loads == {"table": 2, "proxy": 2, "reference": 2}
    assert resolve_inputs(specs[::-1]).table.dataset.name == "cifar100"  # the first spec's
    assert loads == {"table": 2, "proxy": 2, "reference": 2}  # served from the caches


def test_an_oracle_error_names_the_oracle_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "bad.npz"
    cache.write_text("not a zip")
    db = tmp_path / "r.db"
    argv = ["run", "--searchers", "random", "--seeds", "0", "--table", "synthetic",
            "--oracle", "onnxruntime", "--oracle-cache", str(cache), "--db", str(db),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("nasfilter run: error: --oracle/--device/--oracle-cache: ")
    assert "not a nasfilter measurement table" in err and not db.exists()


def test_a_table_error_names_the_table_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = random_table(4)
    present = np.ones(table.present.shape, bool)
    present[:100] = False  # a partial table: 32668 of 32768
    path = dataclasses.replace(table, present=present).save(tmp_path / "t.npz")
    db = tmp_path / "r.db"
    argv = ["run", "--searchers", "random", "--seeds", "0", "--table", str(path),
            "--oracle", "roofline", "--db", str(db), "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("nasfilter run: error: --table: ") and "32668 of 32768" in err
    assert "--oracle" not in err and not db.exists()


def test_an_error_is_marked_with_the_input_it_is_about() -> None:
    with pytest.raises(ValueError) as info:
        inputs_module.inputs(RunSpec("random", table="synthetic", oracle="roofline[batch=0]"))
    assert inputs_module.input_part(info.value) == "oracle"
    assert inputs_module.input_part(ValueError("elsewhere")) is None
