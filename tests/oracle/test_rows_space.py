"""A measurement's space comes from its backend config (``"space": "tss"``, sss when absent):
the cache's index check and columns, and a measurement table file's proxy, span that space's
architectures (tss: 15625, sss: 32768); an unknown space is refused by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.spaces import SSS, TSS
from nasfilter.oracle.cache import Group, MeasurementCache
from nasfilter.oracle.measurement import InvalidMeasurement, Measurement, Status
from nasfilter.oracle.tablefile import build_table, load_table_file, save_table

DEVICE = {"kind": "spec", "name": "test-gpu"}


def _row(arch: int, space: str | None, throughput: float = 1000.0) -> Measurement:
    config = {"batch": 64} if space is None else {"batch": 64, "space": space}
    return Measurement(
        arch=arch, dataset="cifar10", backend="measured", config=config, device=DEVICE,
        status=Status.OK, throughput=throughput, batch_size=64, max_batch=None,
        flops_per_image=2e7, peak_flops=1e13, peak_source="spec",
    )  # fmt: skip


def _group(space: str | None) -> Group:
    return Group.of(_row(0, space))


def test_a_tss_group_spans_15625_cells_and_an_sss_group_32768(tmp_path: Path) -> None:
    with MeasurementCache(tmp_path / "c.db") as cache:
        assert cache.put_many([_row(0, "tss", 10.0), _row(15624, "tss", 20.0)]) == 2
        assert cache.put_many([_row(20000, None, 30.0)]) == 1  # a valid sss index
        thr, util = cache.columns(_group("tss"))
        assert thr.shape == util.shape == (15625,)
        assert thr[0] == 10.0 and thr[15624] == 20.0 and np.isnan(thr[1:15624]).all()
        thr, _ = cache.columns(_group(None))
        assert thr.shape == (32768,) and thr[20000] == 30.0 and np.isfinite(thr).sum() == 1


def test_an_index_outside_the_rows_space_is_refused(tmp_path: Path) -> None:
    with MeasurementCache(tmp_path / "c.db") as cache:
        with pytest.raises(InvalidMeasurement, match=r"index 15625 is not in \[0, 15624\]"):
            cache.put(_row(15625, "tss"))
        with pytest.raises(InvalidMeasurement, match=r"index 32768 is not in \[0, 32767\]"):
            cache.put(_row(32768, None))
        with pytest.raises(InvalidMeasurement, match="unknown search space 'xss'"):
            cache.put(_row(3, "xss"))
        assert cache.groups() == []  # nothing was stored


def test_a_table_file_of_tss_rows_gives_a_tss_proxy(tmp_path: Path) -> None:
    path = save_table(build_table([_row(7, "tss", 50.0), _row(9, "tss", 60.0)]), tmp_path / "t.npz")
    table = load_table_file(path)
    assert table.space is TSS
    proxy = table.proxy_table()
    assert proxy.space is TSS and proxy.throughput.shape == (15625,)
    assert proxy.throughput[7] == 50.0 and np.isfinite(proxy.throughput).sum() == 2
    sss = load_table_file(save_table(build_table([_row(20000, None)]), tmp_path / "s.npz"))
    assert sss.space is SSS and sss.proxy_table().throughput.shape == (32768,)


def test_a_table_file_with_an_index_outside_its_space_is_refused(tmp_path: Path) -> None:
    table = build_table([_row(20000, None)])  # an sss index ...
    table.meta["config"] = {"batch": 64, "space": "tss"}  # ... in a file that says tss
    path = save_table(table, tmp_path / "bad.npz")
    with pytest.raises(ValueError, match=r"architecture indices outside \[0, 15624\]"):
        load_table_file(path)
