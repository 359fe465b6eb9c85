"""``get_unique_str`` of the tss ``nats_api`` (real data and a converted archive) against two
independent references: xautodl's ``CellStructure.to_unique_str(consider_zero=True)`` on every
cell, and the real ``nats_bench`` 1.8 API on the official tss fixture (the converted archive's API:
``test_nats_api_tss_full``)."""

from __future__ import annotations

from typing import Any

import pytest

from nasfilter.bench.nats_api import create
from nasfilter.bench.nats_api.topology import unique_str
from tests.tss_shared import nats_tss_api

ZERO = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
SKIP = ("|skip_connect~0|+|skip_connect~0|skip_connect~1|"
        "+|skip_connect~0|skip_connect~1|skip_connect~2|")


@pytest.fixture(scope="module")
def api() -> Any:
    return create("real", "tss", fast_mode=True, verbose=False)


def test_hand_worked_cells() -> None:
    # worked by hand from the rule: none -> '#', skip passes its input on, nodes sort and join
    assert unique_str(ZERO) == "#+#+#"
    assert unique_str(SKIP) == "0+0+0+0"
    conv = "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|"
    assert unique_str(conv) == "#+#+0"
    # node 1 = (0)@conv3; node 2 = #+((0)@conv3)@pool; node 3 sorts '#' < '(' < '0'
    cell = "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|none~2|"
    assert unique_str(cell) == "#+((0)@nor_conv_3x3)@nor_conv_1x1+0"
    # two cells that differ only on an edge whose input is always zero are one class
    assert (unique_str("|none~0|+|none~0|nor_conv_3x3~1|+|skip_connect~0|none~1|none~2|")
            == unique_str("|none~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|none~1|none~2|"))


def test_every_cell_equals_xautodl(api: Any) -> None:
    from xautodl.models.cell_searchs.genotypes import Structure

    names = api.meta_archs
    want = [Structure.str2structure(n).to_unique_str(consider_zero=True) for n in names]
    got = [api.get_unique_str(i) for i in range(len(names))]
    assert got == want
    # NAS-Bench-201 (Dong & Yang 2020, sec. 3.1): 6466 unique topologies among the 15625
    assert len(set(got)) == 6466


def test_equals_nats_bench_on_the_fixture(api: Any) -> None:
    ref = nats_tss_api()
    for index in [*range(0, 15625, 97), 11, 284, 15624]:
        text = ref.meta_archs[index]
        want = ref.get_unique_str(index)
        assert api.get_unique_str(index) == want
        assert api.get_unique_str(text) == ref.get_unique_str(text) == want


def test_it_loads_nothing_and_refuses_what_is_no_cell(api: Any) -> None:
    before = set(api.evaluated_indexes)
    api.get_unique_str(5000)
    assert api.evaluated_indexes == before  # nats_bench's loads no record either
    with pytest.raises(ValueError, match="15625"):
        api.get_unique_str(15625)
    with pytest.raises(ValueError, match="conv"):
        api.get_unique_str("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|")
    with pytest.raises(ValueError, match="8:16:24:32:40"):
        api.get_unique_str("8:16:24:32:40")
    with pytest.raises(ValueError, match="none~1"):
        unique_str("|none~0|+|none~0|none~1|")
