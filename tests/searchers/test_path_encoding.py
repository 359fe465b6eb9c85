"""The path encoding of tss cells (model-based[encoding=paths]) against an independent
enumeration of each cell's input-to-output paths, read from its NATS arch string."""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.bench.spaces import SSS, TSS, TSS_OPS
from nasfilter.searchers.features import space_features, tss_path_encoding
from nasfilter.searchers.model_based import ModelBased

PASSING = TSS_OPS[1:]  # the four operations that pass data, in code order


ROUTES = {(0, 3): 0, (0, 1, 3): 1, (0, 2, 3): 2, (0, 1, 2, 3): 3}  # route -> block
BLOCK_START = (0, 4, 20, 36)


def paths_of(arch: str) -> set[tuple[int, tuple[str, ...]]]:
    """Every path from node 0 to node 3 of a NATS arch string, as (its route's block, its
    operations), found by a depth-first walk over the edges that are not 'none'."""
    incoming: dict[int, list[tuple[int, str]]] = {}
    for node, part in enumerate(arch.strip("|").split("|+|"), start=1):
        for edge in part.strip("|").split("|"):
            op, src = edge.split("~")
            if op != "none":
                incoming.setdefault(node, []).append((int(src), op))
    found: set[tuple[int, tuple[str, ...]]] = set()

    def walk(node: int, nodes: tuple[int, ...], ops: tuple[str, ...]) -> None:
        if node == 0:
            route = (0, *nodes)
            found.add((ROUTES[route], ops))
        for src, op in incoming.get(node, []):
            walk(src, (node, *nodes), (op, *ops))

    walk(3, (), ())
    return found


def decoded(row: np.ndarray) -> set[tuple[int, tuple[str, ...]]]:
    """The (block, operations) a path-encoding row (100,) marks, by its block layout."""
    out: set[tuple[int, tuple[str, ...]]] = set()
    for block, (start, length) in enumerate(zip(BLOCK_START, (1, 2, 2, 3), strict=True)):
        for code in np.flatnonzero(row[start : start + 4**length]).tolist():
            digits = [(code // 4 ** (length - 1 - k)) % 4 for k in range(length)]
            out.add((block, tuple(PASSING[d] for d in digits)))
    return out


def test_it_marks_exactly_the_paths_a_walk_over_the_arch_string_finds() -> None:
    rng = np.random.default_rng(0)
    indices = rng.choice(TSS.size, 400, replace=False)
    enc = tss_path_encoding(TSS.all_digits()[indices])
    counts = []
    for row, i in zip(enc, indices.tolist(), strict=True):
        arch = str(TSS.arch(i))
        assert decoded(row) == paths_of(arch), arch
        assert row.sum() == len(paths_of(arch))  # one mark per existing route
        counts.append(len(paths_of(arch)))
    assert set(counts) == {0, 1, 2, 3, 4}  # the sample has cells with every number of paths


def test_hand_cells() -> None:
    none = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
    skip_only = "|none~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|"
    dead_conv = "|nor_conv_3x3~0|+|none~0|nor_conv_3x3~1|+|skip_connect~0|none~1|none~2|"
    all_conv = ("|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|"
                "+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|")
    digits = np.array([[TSS_OPS.index(op) for op in TSS.parse(a).ops]
                       for a in (none, skip_only, dead_conv, all_conv)])  # fmt: skip
    enc = tss_path_encoding(digits)
    assert enc.shape == (4, 100)
    assert not enc[0].any()  # no path: the cell outputs zeros
    assert np.flatnonzero(enc[1]).tolist() == [0]  # 0->3 by skip, code 0 of the first block
    # the convs on 1<-0 and 2<-1 reach no output: only the skip path counts
    assert np.flatnonzero(enc[2]).tolist() == [0]
    conv = PASSING.index("nor_conv_3x3")  # 2
    assert np.flatnonzero(enc[3]).tolist() == [
        conv,
        4 + conv * 4 + conv,
        20 + conv * 4 + conv,
        36 + conv * 16 + conv * 4 + conv,
    ]


def test_space_features_with_paths_add_the_hundred_columns() -> None:
    ops = space_features(TSS, "cifar10")
    paths = space_features(TSS, "cifar10", "paths")
    assert ops.shape == (15625, 32) and paths.shape == (15625, 132)
    np.testing.assert_array_equal(paths[:, :30], ops[:, :30])
    np.testing.assert_array_equal(paths[:, 130:], ops[:, 30:])


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: space_features(SSS, "cifar10", "paths"), "encoding='paths' needs a cell"),
        (lambda: space_features(TSS, "cifar10", "graph"), "one of ('ops', 'paths'), got 'graph'"),
        (lambda: ModelBased(encoding="path"), "one of ('ops', 'paths'), got 'path'"),
        (lambda: tss_path_encoding(np.full((2, 6), 5)), "op codes 0..4 of shape (n, 6)"),
        (lambda: tss_path_encoding(np.zeros((2, 5), dtype=int)), "got (2, 5)"),
    ],
)
def test_bad_encodings_are_refused_by_name(call: object, words: str) -> None:
    with pytest.raises(ValueError) as err:
        call()  # type: ignore[operator]
    assert words in str(err.value)
