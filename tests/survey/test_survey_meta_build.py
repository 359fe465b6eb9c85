"""Building on the meta device without initialisation: torch's own resets and timm's own
weight initialisation are skipped only for meta modules and only inside their contexts, and
the tables are those of a build with the initialisation run
(tests/survey/test_survey_meta_rules.py checks them against torch's full initialisation too)."""

from __future__ import annotations

import torch

from nasfilter.survey.meta_build import meta_without_init


def test_meta_build_and_restored_resets() -> None:
    before = torch.nn.Conv2d.reset_parameters, torch.nn.Linear.reset_parameters
    with meta_without_init():
        conv = torch.nn.Conv2d(3, 8, 3)
        assert conv.weight.is_meta and torch.get_default_device().type == "meta"
        # A module on a real device is initialised in full, even inside the context.
        real = torch.nn.Linear(4, 5, device="cpu")
        assert not real.weight.is_meta and float(real.weight.detach().abs().sum()) > 0.0
    assert (torch.nn.Conv2d.reset_parameters, torch.nn.Linear.reset_parameters) == before
    after = torch.nn.Conv2d(3, 8, 3)
    assert not after.weight.is_meta and float(after.weight.detach().abs().sum()) > 0.0


def test_nested_contexts_restore_once() -> None:
    before = torch.nn.modules.batchnorm._NormBase.reset_running_stats
    with meta_without_init():
        with meta_without_init():
            bn = torch.nn.BatchNorm2d(4)
        assert bn.running_mean.is_meta
    assert torch.nn.modules.batchnorm._NormBase.reset_running_stats is before
    bn = torch.nn.BatchNorm2d(4)
    assert float(bn.running_var.sum()) == 4.0  # reset to ones outside the context


def test_timm_inits_skipped_only_for_meta_and_restored() -> None:
    """timm's weight initialisation is patched only inside the context, and a model on a
    real device is still initialised by timm there (ResNet zeroes each block's last norm)."""
    from nasfilter.survey.timm_import import import_timm
    from nasfilter.survey.timm_init import timm_inits_skipped

    timm = import_timm()
    convnext = timm.models.convnext
    original = convnext.named_apply, timm.models.resnet.ResNet.init_weights
    with timm_inits_skipped():
        assert convnext.named_apply is not original[0]
        real = timm.create_model("resnet10t")
    assert (convnext.named_apply, timm.models.resnet.ResNet.init_weights) == original
    last_norms = [block.bn2.weight for block in real.layer1]
    assert last_norms and all(float(w.detach().abs().sum()) == 0.0 for w in last_norms)
    assert float(real.layer1[0].bn1.weight.detach().sum()) > 0.0


def test_tables_equal_with_timm_init_run() -> None:
    """Skipping timm's initialisation (named_apply, init_weights methods) changes no table:
    the same models built with it run in full on the meta device."""
    from nasfilter.bench.layer_table import ARRAY_FIELDS
    from nasfilter.survey.analysis import profile_model
    from nasfilter.survey.timm_import import import_timm
    from nasfilter.survey.timm_models import timm_profile

    for name in ("convnext_atto", "resnet18"):
        fast = timm_profile(name, 224)
        with torch.device("meta"):
            model = import_timm().create_model(name)
        full = profile_model(model, (3, 224, 224), name=name)
        assert fast.params == full.params and fast.table.names == full.table.names
        for a in ARRAY_FIELDS:
            assert (getattr(fast.table, a) == getattr(full.table, a)).all(), (name, a)
