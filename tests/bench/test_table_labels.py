"""Every SYNTHETIC table says which synthetic table it is: the embedded surrogate, the
structured test table, or an archive in the NATS format that nasfilter wrote."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.convert import convert_archive
from nasfilter.bench.fullbench import FullBenchmark, convert_full
from nasfilter.bench.lookup import load_table
from nasfilter.bench.nats_api.derive import compact_table
from nasfilter.testing.nats_full_archive import write_varied_archive
from nasfilter.testing.structured_table import structured_table
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE
TEMPLATE = FIXTURE / "000284.pickle.pbz2"
ARCHIVE_LABEL = "SYNTHETIC NATS-format archive written by nasfilter (not NATS-Bench data)"


@pytest.fixture(scope="module")
def varied_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("varied")
    return write_varied_archive(root, TEMPLATE, (0, 1, 284), np.random.default_rng(1),
                                compresslevel=1)  # fmt: skip


def test_the_surrogate_is_labelled_as_the_surrogate():
    label = load_table("synthetic", "cifar10").provenance.label
    assert label == "SYNTHETIC surrogate (not NATS-Bench data)"


def test_the_structured_table_is_not_called_the_surrogate():
    label = structured_table().provenance.label
    assert label == "SYNTHETIC structured test table (not NATS-Bench data)"


def test_a_converted_archive_that_nasfilter_wrote_says_so(varied_archive: Path):
    table = convert_archive(varied_archive, "cifar10", allow_partial=True, progress=False)
    assert table.synthetic and table.provenance.label == ARCHIVE_LABEL


def test_a_table_derived_from_such_a_full_benchmark_says_so_too(varied_archive, tmp_path):
    full = FullBenchmark.open(convert_full(varied_archive, tmp_path / "full", True,
                                           progress=False))  # fmt: skip
    table = compact_table(full, "cifar10")
    assert table.synthetic and table.provenance.label == ARCHIVE_LABEL


def test_the_official_fixture_is_no_synthetic_table(tmp_path):
    table = convert_archive(FIXTURE, "cifar10", allow_partial=True, progress=False)
    assert not table.synthetic
    assert table.provenance.label == "NATS-Bench archive NATS-sss-v1_0-50262-simple"
