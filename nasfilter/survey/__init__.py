"""The study's CNN survey (§3): layer analysis of torch models, utilization, FoldedCNNs.

- :mod:`~nasfilter.survey.analysis`: any ``torch.nn.Module`` -> a fused
  :class:`~nasfilter.bench.layer_table.LayerTable` (:func:`analyze_model`, :func:`profile_model`);
- :mod:`~nasfilter.survey.timm_models`: timm models by name on the meta device
  (:func:`timm_layer_table`, :func:`timm_profile`);
- :mod:`~nasfilter.survey.timm_import`: importing timm beside the CPU build of torch.

torch and timm are imported only when a model is analysed (the ``survey`` extra).
"""

from nasfilter.bench.layer_table import CNN_MAC_FRACTION
from nasfilter.survey.analysis import (
    AnalysisError,
    ModelProfile,
    analyze_model,
    profile_model,
)
from nasfilter.survey.timm_models import UnknownModelError, timm_layer_table, timm_profile

__all__ = [
    "CNN_MAC_FRACTION",
    "AnalysisError",
    "ModelProfile",
    "UnknownModelError",
    "analyze_model",
    "profile_model",
    "timm_layer_table",
    "timm_profile",
]
