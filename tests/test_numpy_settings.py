"""Settings given as numpy numbers are accepted as the Python numbers they equal; an empty
table argument is refused rather than read as the current folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.lookup import load_table
from nasfilter.cli import main
from nasfilter.runs.experiment import RunSpec, check_seeds
from nasfilter.searchers import SEARCHERS


def test_numpy_numbers_are_settings() -> None:
    spec = RunSpec("random", budget=np.int64(20_000), proxy_cost=np.float32(1.5),
                   max_idle=np.int64(5), n_ticks=np.int32(8), workers=np.int64(2))
    plain = RunSpec("random", budget=20_000.0, proxy_cost=1.5, max_idle=5, n_ticks=8, workers=2)
    assert spec == plain and spec.key() == plain.key()  # the same runs, the same stored key
    assert type(spec.n_ticks) is int and type(spec.budget.seconds) is float
    assert check_seeds([np.int64(3), np.uint8(1)]) == [3, 1]
    evolution = SEARCHERS.create("evolution", population_size=np.int64(10))
    assert evolution.population_size == 10  # type: ignore[attr-defined]
    for bad in (np.float64(8.5), True):
        with pytest.raises(ValueError, match="n_ticks must be an integer >= 1"):
            RunSpec("random", n_ticks=bad)
    with pytest.raises(ValueError, match="budget must be a number of seconds"):
        RunSpec("random", budget=np.bool_(True))


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_table_is_refused(value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # the current folder must not be taken for a table
    with pytest.raises(ValueError, match=f"the table {value!r} is empty: name a table"):
        load_table(value, "cifar10")
    with pytest.raises(ValueError, match="is empty"):
        RunSpec("random", table=value)
    assert main(["show", "0", "--table", value]) == 2
    assert f"--table: the table {value!r} is empty" in capsys.readouterr().err
    assert main(["run", "--table", value, "--searchers", "random", "--seeds", "0",
                 "--budget", "1000", "--db", str(tmp_path / "r.db")]) == 2
    assert "is empty" in capsys.readouterr().err and not (tmp_path / "r.db").exists()
