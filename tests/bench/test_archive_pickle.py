"""Archive pickles are read with an allow-list: a crafted archive is refused and runs nothing."""

from __future__ import annotations

import bz2
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nasfilter.cli
from nasfilter.bench.archive_pickle import UnsafeArchiveError, load_archive_pickle
from nasfilter.bench.convert import convert_archive
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE


class _Payload:
    """Unpickled naively, this creates the file ``marker`` (through os.system)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def _crafted_archive(root: Path, file_name: str, marker: Path) -> Path:
    target = root / "NATS-sss-v1_0-50262-simple"
    shutil.copytree(FIXTURE, target)
    with bz2.open(target / file_name, "rb") as fh:
        original = pickle.load(fh)  # the official fixture: trusted
    crafted = {"payload": _Payload(marker), "real": original}
    with bz2.open(target / file_name, "wb") as fh:
        pickle.dump(crafted, fh, protocol=4)
    return target


def test_the_payload_would_run_if_unpickled_naively(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    archive = _crafted_archive(tmp_path, "000011.pickle.pbz2", marker)
    with bz2.open(archive / "000011.pickle.pbz2", "rb") as fh:
        pickle.load(fh)
    assert marker.exists()  # so the refusals below are refusals of a live payload


@pytest.mark.parametrize("file_name", ["000011.pickle.pbz2", "meta.pickle.pbz2"])
def test_convert_refuses_a_crafted_archive_and_runs_nothing(tmp_path: Path, file_name: str) -> None:
    marker = tmp_path / "ran"
    archive = _crafted_archive(tmp_path, file_name, marker)
    with pytest.raises(UnsafeArchiveError, match=r"names posix\.system.*nothing from it was run"):
        convert_archive(archive, "cifar10", allow_partial=True, progress=False)
    assert not marker.exists()


def test_cli_refuses_a_crafted_archive_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "ran"
    archive = _crafted_archive(tmp_path, "000284.pickle.pbz2", marker)
    out = tmp_path / "t.npz"
    argv = ["convert", str(archive), "--dataset", "cifar10", "-o", str(out), "--allow-partial"]
    assert nasfilter.cli.main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "posix.system" in err and "Traceback" not in err
    assert not marker.exists() and not out.exists()


def test_official_records_load_exactly_as_pickle_does() -> None:
    for path in sorted(FIXTURE.iterdir()):
        with bz2.open(path, "rb") as fh:
            expected = pickle.load(fh)
        assert load_archive_pickle(path) == expected
    record = load_archive_pickle(FIXTURE / "000284.pickle.pbz2")
    params = record["12"]["all_results"][("cifar10", 777)]["params"]
    assert type(params) is np.float64 and params == 0.144834


def test_object_dtype_numpy_scalars_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.pickle.pbz2"
    with bz2.open(path, "wb") as fh:
        pickle.dump(np.array([None], dtype=object)[0:1].reshape(()).item(), fh)  # None: fine
    assert load_archive_pickle(path) is None
    with bz2.open(path, "wb") as fh:
        pickle.dump(np.array([1, 2]), fh)  # ndarray reconstruct is not in real archives
    with pytest.raises(UnsafeArchiveError, match="_reconstruct"):
        load_archive_pickle(path)
