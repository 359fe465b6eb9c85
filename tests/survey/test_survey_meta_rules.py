"""The analysis' shortcuts around slow meta kernels give the meta kernels' own shapes (or
defer to them on a shape error), skipping initialisation changes no table, and an analysis
does not depend on which ids Python hands out."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nasfilter.bench.layer_table import ARRAY_FIELDS
from nasfilter.survey.meta_rules import shortcut as _shortcut

aten = torch.ops.aten


def _meta(*shape: int) -> torch.Tensor:
    return torch.empty(shape, device="meta")


CASES = [
    (aten.mm.default, (_meta(5, 7), _meta(7, 3))),
    (aten.addmm.default, (_meta(3), _meta(5, 7), _meta(7, 3))),
    (aten.bmm.default, (_meta(2, 5, 7), _meta(2, 7, 3))),
    (aten.cat.default, ([_meta(2, 3, 4), _meta(2, 5, 4)], 1)),
    (aten.cat.default, ([_meta(2, 3), _meta(0), _meta(4, 3)],)),
    (aten.cat.default, ([_meta(2, 3, 4), _meta(2, 5, 4)], -2)),
    (aten.native_layer_norm.default, (_meta(2, 9, 16), [16], None, None, 1e-5)),
    (aten.native_layer_norm.default, (_meta(2, 4, 8, 8), [8, 8], None, None, 1e-5)),
    (aten.mean.dim, (_meta(2, 16, 7, 7), [2, 3], True)),
    (aten.mean.dim, (_meta(2, 16, 7, 7), [-1], False)),
    (aten.hardswish_.default, (_meta(2, 16, 7, 7),)),
    (aten.relu_.default, (_meta(2, 16),)),
    (
        aten.convolution.default,
        (_meta(1, 8, 9, 9), _meta(4, 2, 3, 3), None, [2, 2], [1, 1], [1, 1], False, [0, 0], 4),
    ),
    (aten.mul.Tensor, (_meta(2, 1, 5), _meta(3, 1))),
    (aten.native_group_norm.default, (_meta(2, 8, 5, 5), None, None, 2, 8, 25, 4, 1e-5)),
    (aten.native_group_norm.default, (_meta(3, 6, 7), _meta(6), _meta(6), 3, 6, 7, 1, 1e-5)),
    (aten._softmax.default, (_meta(2, 4, 9, 9), -1, False)),
    (aten._safe_softmax.default, (_meta(2, 4, 9, 9), 3)),
]


@pytest.mark.parametrize("func,args", CASES, ids=[str(c[0]) for c in CASES])
def test_shortcut_shapes_are_the_meta_kernels(func: object, args: tuple) -> None:
    fast = _shortcut(func, args, {})
    assert fast is not None
    real = func(*args)  # type: ignore[operator]
    fast_t = fast if isinstance(fast, tuple) else (fast,)
    real_t = real if isinstance(real, tuple) else (real,)
    assert [tuple(t.shape) for t in fast_t] == [tuple(t.shape) for t in real_t]
    assert [t.dtype for t in fast_t][:1] == [t.dtype for t in real_t][:1]


BAD = [
    (aten.mm.default, (_meta(5, 7), _meta(6, 3))),
    (aten.addmm.default, (_meta(3), _meta(5, 7), _meta(8, 3))),
    (aten.bmm.default, (_meta(2, 5, 7), _meta(3, 7, 3))),
    (aten.cat.default, ([_meta(2, 3, 4), _meta(2, 5, 5)], 1)),
    (aten.native_layer_norm.default, (_meta(2, 9, 16), [15], None, None, 1e-5)),
    (
        aten.convolution.default,
        (_meta(1, 3, 9, 9), _meta(4, 2, 3, 3), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
    ),
    (
        aten.convolution.default,
        (_meta(1, 2, 2, 2), _meta(4, 2, 3, 3), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
    ),
    (aten.mul.Tensor, (_meta(2, 4), _meta(3, 4))),
    (aten.native_group_norm.default, (_meta(2, 8, 5, 5), None, None, 2, 8, 25, 3, 1e-5)),
]


@pytest.mark.parametrize("func,args", BAD, ids=[str(c[0]) for c in BAD])
def test_shortcut_defers_shape_errors_to_the_meta_kernel(func: object, args: tuple) -> None:
    assert _shortcut(func, args, {}) is None
    with pytest.raises(RuntimeError):
        func(*args)  # type: ignore[operator]


def test_gelu_with_its_approximation_keyword_is_shortcut() -> None:
    """A point-wise op's shape-free keyword (``approximate``) keeps the shortcut."""
    x = _meta(2, 3, 4)
    fast = _shortcut(aten.gelu.default, (x,), {"approximate": "tanh"})
    real = aten.gelu.default(x, approximate="tanh")
    assert fast is not None and fast.shape == real.shape and fast.dtype == real.dtype
    assert _shortcut(aten.add.Tensor, (x, x), {"alpha": 2}).shape == (2, 3, 4)


def _arrays(name: str) -> dict[str, np.ndarray]:
    from nasfilter.survey.timm_models import timm_profile

    table = timm_profile(name, 224).table
    return {"kinds": np.array(table.kinds), **{a: getattr(table, a) for a in ARRAY_FIELDS}}


@pytest.mark.slow
def test_an_analysis_is_deterministic() -> None:
    """ConViT replaces a buffer during its forward; the freed buffer's id must not make a
    later activation look like a parameter (its tables differed from run to run)."""
    first = _arrays("convit_tiny")
    for _ in range(3):
        again = _arrays("convit_tiny")
        assert again.keys() == first.keys()
        for key, value in first.items():
            np.testing.assert_array_equal(again[key], value, err_msg=key)


@pytest.mark.slow
def test_skipping_initialisation_changes_nothing() -> None:
    """The same analysis with torch's initialisation run in full on the meta device."""
    from nasfilter.survey import timm_models
    from nasfilter.survey.analysis import profile_model
    from nasfilter.survey.timm_import import import_timm

    fast = timm_models.timm_profile("efficientnet_b0", 224)
    with torch.device("meta"):
        model = import_timm().create_model("efficientnet_b0")
    slow = profile_model(model, (3, 224, 224), name="efficientnet_b0")
    assert fast.params == slow.params and fast.table.names == slow.table.names
    for a in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(fast.table, a), getattr(slow.table, a))
