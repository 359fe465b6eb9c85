"""Building on the meta device without initialisation: torch's own resets are skipped only
for meta modules and only inside the context, and the tables are those of a plain meta build
(tests/test_survey_meta_rules.py checks them against a full initialisation)."""

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
