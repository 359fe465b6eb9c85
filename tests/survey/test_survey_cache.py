"""The survey's profile cache (format 5): a profile reads back exactly as written, an error
message too, and a damaged or foreign file counts as not cached (analysed again)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nasfilter.bench.layer_table import ARRAY_FIELDS, LayerTable
from nasfilter.survey.analysis import ModelProfile
from nasfilter.survey.cache import _file, load, save_error, save_profile


def _profile() -> ModelProfile:
    # Values that a float32 or a decimal round trip would change (1/3, 2**60 + a bit).
    n = 3
    arrays = {a: np.full((1, n), 1.0 / 3.0 + k) for k, a in enumerate(ARRAY_FIELDS)}
    arrays["macs"] = np.array([[2.0**60 + 2.0**8, 0.0, 7.25]])
    arrays["kernel_layout"] = np.array([[1.0, 0.0, 0.0]])  # codes: nhwc, any, any
    table = LayerTable(
        names=("stem.conv", 'blocks.0 "odd", name\nwith newline', "head.fc"),
        kinds=("conv", "memory", "linear"),
        present=np.ones((1, n), dtype=bool),
        **arrays,
    )
    return ModelProfile("net", (3, 224, 224), table, 25557032.0, 4.1e9 + 0.5)


def test_a_profile_reads_back_exactly(tmp_path: Path) -> None:
    prof = _profile()
    save_profile(tmp_path, prof, fold=4)
    got = load(tmp_path, "net", 224, fold=4)
    assert isinstance(got, ModelProfile)
    assert (got.name, got.input_shape, got.params, got.fvcore_macs) == (
        "net",
        (3, 224, 224),
        25557032.0,
        4.1e9 + 0.5,
    )
    assert got.table.names == prof.table.names and got.table.kinds == prof.table.kinds
    for a in (*ARRAY_FIELDS, "in_channels", "kernel_layout", "present"):
        want, have = getattr(prof.table, a), getattr(got.table, a)
        assert have.dtype == want.dtype and np.array_equal(have, want), a
        assert have.flags.writeable, a
    assert load(tmp_path, "net", 224) is None  # the unfolded model is another entry


def test_an_error_reads_back_as_its_message(tmp_path: Path) -> None:
    save_error(tmp_path, "broken", 160, "AnalysisError: cannot trace 'broken' (ü)")
    assert load(tmp_path, "broken", 160) == "AnalysisError: cannot trace 'broken' (ü)"


def test_a_damaged_file_is_not_cached(tmp_path: Path) -> None:
    save_profile(tmp_path, _profile())
    path = _file(tmp_path, "net", 224)
    data = path.read_bytes()
    path.write_bytes(data[:-5])  # truncated arrays
    assert load(tmp_path, "net", 224) is None
    path.write_bytes(b"PK\x03\x04 an npz of an older format")
    assert load(tmp_path, "net", 224) is None
