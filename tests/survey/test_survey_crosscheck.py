"""Our MACs and parameter counts against timm's published ``infer_gmacs`` and ``param_count``.

The published figures (the shipped RTX 4090 NCHW benchmark file) come from fvcore's counter,
rounded to 0.01 GMACs and 0.01 M parameters. ``ModelProfile.fvcore_macs`` is our count in
fvcore's convention (conv and matrix-product MACs plus fvcore's small norm and pooling
terms; see nasfilter.survey.analysis). Every model outside 2 % is explained in OUTLIERS.
"""

from __future__ import annotations

import pytest

from nasfilter.bench.timm_data import read_benchmark, shipped_benchmark
from nasfilter.survey import ModelProfile, timm_profile
from nasfilter.survey import cache as profile_cache
from nasfilter.survey.timm_import import import_timm

import_timm()

# Models outside 2 % over the whole file (1,444 rows, every one analysed), and why.
# Below 0.5 GMACs the published rounding alone (0.005 GMACs) can exceed 2 %: those are not
# checked at all.
OUTLIERS = {
    # fvcore has no handler for aten::_convolution_mode, the op that a convolution with
    # padding="same" traces to: it leaves ConvMixer's depthwise 9x9 / 7x7 convs uncounted
    # (20 x 1024 x 81 x 16 x 16 = 0.42 GMACs for this one).
    "convmixer_1024_20_ks9_p14": "same-padding conv uncounted by fvcore",
    "convmixer_768_32": "same-padding conv uncounted by fvcore",
    "convmixer_1536_20": "same-padding conv uncounted by fvcore",
    # fvcore has no handler for aten::lstm: Sequencer's bidirectional LSTMs are uncounted.
    "sequencer2d_s": "LSTM uncounted by fvcore",
    "sequencer2d_m": "LSTM uncounted by fvcore",
    "sequencer2d_l": "LSTM uncounted by fvcore",
    # The architecture changed in timm after the benchmark was run: 25.05 M parameters now
    # against 15.41 M published, a different network, not a counting difference.
    "ecaresnext50t_32x4d": "redefined in timm since the benchmark",
    # Position terms computed in forward from constants (ConViT's gated positional
    # attention, 2-4 % below; SwinV2-CR's continuous position-bias MLP on a coordinate
    # table, 3-9 % below): fvcore counts them on every forward; we treat computation on
    # weights and constants as done once per model (an engine folds it into a constant).
    # For ConViT this is our reading, not fully traced.
    "convit_": "position terms from constants, counted per forward by fvcore",
    "swinv2_cr_": "continuous position-bias MLP on constants, counted by fvcore",
}


def _outlier(model: str) -> bool:
    return any(model == k or (k.endswith("_") and model.startswith(k)) for k in OUTLIERS)


def _selection() -> list[tuple[str, int, float, float]]:
    rows = [
        m
        for m in read_benchmark(shipped_benchmark("rtx4090", "nchw"))
        if 0.5 <= m.gmacs <= 30 and not _outlier(m.model) and not m.model.startswith("test_")
    ]
    rows.sort(key=lambda m: (m.model, m.img_size))
    return [(m.model, m.img_size, m.gmacs, m.params_m) for m in rows[::9]]


SELECTION = _selection()


# Every FRESH_EVERY-th selected model is analysed afresh even when a cached profile exists.
FRESH_EVERY = 20


@pytest.fixture(scope="module")
def profiles() -> dict[tuple[str, int], ModelProfile]:
    """The selection's profiles, analysed once per session.

    Where the survey's persisted cache (``$NASFILTER_CACHE/survey`` or
    ``~/.cache/nasfilter/survey``, keyed by the timm version and the analysis rules) already
    holds a model, its profile is read from there (read only: this test writes nothing);
    the rest are analysed here. ``test_cached_profiles_match_a_fresh_analysis`` guards
    against a cache left stale by an analysis change.
    """
    folder = profile_cache.cache_folder()
    out: dict[tuple[str, int], ModelProfile] = {}
    for model, size, _, _ in SELECTION:
        cached = profile_cache.load(folder, model, size) if folder.is_dir() else None
        out[(model, size)] = (
            cached if isinstance(cached, ModelProfile) else timm_profile(model, size)
        )
    return out


def test_at_least_100_models_are_checked() -> None:
    assert len(SELECTION) >= 100


@pytest.mark.slow
def test_cached_profiles_match_a_fresh_analysis(
    profiles: dict[tuple[str, int], ModelProfile],
) -> None:
    """A cached profile must be what the analysis gives now (else bump cache.ANALYSIS)."""
    for model, size, _, _ in SELECTION[::FRESH_EVERY]:
        fresh, used = timm_profile(model, size), profiles[(model, size)]
        assert (used.fvcore_macs, used.params) == (fresh.fvcore_macs, fresh.params), model
        assert used.table.names == fresh.table.names, model
        assert used.table.macs.sum() == fresh.table.macs.sum(), model


@pytest.mark.slow
@pytest.mark.parametrize(("model", "size", "gmacs", "params_m"), SELECTION)
def test_macs_and_params_within_2_percent(
    model: str,
    size: int,
    gmacs: float,
    params_m: float,
    profiles: dict[tuple[str, int], ModelProfile],
) -> None:
    profile = profiles[(model, size)]
    assert profile.fvcore_macs / 1e9 == pytest.approx(gmacs, rel=0.02)
    assert profile.params / 1e6 == pytest.approx(params_m, rel=0.02, abs=0.005)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["convmixer_768_32", "sequencer2d_s", "ecaresnext50t_32x4d"])
def test_explained_outliers_are_outside_for_the_stated_reason(model: str) -> None:
    published = {m.model: m for m in read_benchmark(shipped_benchmark("rtx4090", "nchw"))}[model]
    profile = timm_profile(model, published.img_size)
    assert profile.fvcore_macs / 1e9 > published.gmacs * 1.02  # we count what fvcore skips
    if model == "convmixer_768_32":  # exactly the depthwise 7x7 convs: 32 x 768 x 49 x 32 x 32
        missing = 32 * 768 * 49 * 32 * 32
        assert (profile.fvcore_macs - missing) / 1e9 == pytest.approx(published.gmacs, rel=0.01)
    if model == "ecaresnext50t_32x4d":
        assert profile.params / 1e6 > published.params_m * 1.5
