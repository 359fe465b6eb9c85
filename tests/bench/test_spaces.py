"""The search space as a value: SSS and TSS against NATS index rules and the real nats_bench API."""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.bench.spaces import SSS, TSS, Cell, get_space
from nasfilter.bench.spaces import sss as sss_module
from tests.tss_shared import FIXTURE_ARCHS, nats_tss_api, shared_data


def test_tss_arch_strings_and_indices_follow_the_official_meta() -> None:
    api = nats_tss_api()
    meta = list(api.meta_archs)
    assert TSS.size == len(meta) == 15625
    assert [TSS.format(i) for i in range(TSS.size)] == meta
    for index in (0, 1, 11, 284, 7777, 15624):
        assert TSS.index_of(meta[index]) == index == api.query_index_by_arch(meta[index])
    lines = (shared_data() / "nats-tss-real" / "arch_strings.txt").read_text().splitlines()
    assert lines == meta


def test_tss_cell_ops_and_digits_round_trip() -> None:
    api = nats_tss_api()
    cell = TSS.arch(11)
    assert str(cell) == api.arch(11)
    assert cell.ops == ("nor_conv_3x3", "nor_conv_3x3", "avg_pool_3x3", "none", "nor_conv_3x3",
                        "avg_pool_3x3")  # fmt: skip
    assert Cell.from_string(str(cell)) == cell and cell.index == 11
    digits = TSS.digits(np.arange(TSS.size))
    assert digits.shape == (15625, 6) and digits.min() == 0 and digits.max() == 4
    np.testing.assert_array_equal(TSS.from_digits(digits), np.arange(TSS.size))
    assert TSS.digits(11).tolist() == [3, 3, 4, 0, 3, 4]


def test_sss_as_a_value_keeps_the_module_index_rule() -> None:
    assert SSS.size == sss_module.N_ARCHS == 32768
    assert SSS.arch(5) is sss_module.arch_from_index(5)
    digits = SSS.digits(np.arange(SSS.size))
    np.testing.assert_array_equal(digits, sss_module.all_channels() // 8 - 1)
    np.testing.assert_array_equal(SSS.from_digits(digits), np.arange(SSS.size))
    assert SSS.index_of("64:64:64:64:64") == 32767 and SSS.format(0) == "8:8:8:8:8"


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (15625, r"tss architecture index must be in \[0, 15624\], got 15625"),
        (-1, r"must be in \[0, 15624\], got -1"),
        ("|none~0|+|none~0|none~1|+|none~0|none~1|", "node 3 has 2 incoming edges, expected 3"),
        ("|conv5~0|+|none~0|none~1|+|none~0|none~1|none~2|", "operation 'conv5'; allowed: none,"),
        ("|none~0|+|none~0|none~1|", "has 2 nodes joined by '\\+', expected 3"),
        ("|none~1|+|none~0|none~1|+|none~0|none~1|none~2|", "must come from node 0"),
        ("8:8:8:8:8", "of the sss space .* not of the tss space"),
        (sss_module.Arch((8, 8, 8, 8, 8)), "of the sss space .* not of the tss space"),
        (2.5, r"give an index in \[0, 15624\]"),
    ],
)
def test_bad_tss_input_names_the_value_and_the_allowed_range(value: object, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        TSS.parse(value)


def test_a_tss_cell_given_to_sss_and_an_unknown_space_are_refused() -> None:
    with pytest.raises(ValueError, match=r"of the tss space .* not of the sss space"):
        SSS.parse(TSS.arch(3))
    with pytest.raises(ValueError, match="of the tss space"):
        SSS.parse("|none~0|+|none~0|none~1|+|none~0|none~1|none~2|")
    assert get_space("TSS") is TSS and get_space(SSS) is SSS
    with pytest.raises(ValueError, match="unknown search space 'nb101'; known spaces: sss, tss"):
        get_space("nb101")


def test_fixture_archs_resolve_in_both_directions() -> None:
    api = nats_tss_api()
    for index in FIXTURE_ARCHS:
        assert TSS.parse(api.arch(index)).index == index
        assert TSS.parse(str(index)) is TSS.arch(index)
