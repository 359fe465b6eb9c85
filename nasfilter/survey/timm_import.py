"""Importing timm beside the CPU build of torch.

timm imports torchvision (``torchvision.transforms`` and ``torchvision.ops.misc``, both pure
Python). The torchvision wheels on PyPI for Linux x86_64 are built against the CUDA build of
torch: beside the CPU build that development and CI pin (``torch==2.13.0``, with the matching
``torchvision==0.28.0`` in ``constraints.txt``), their C extension ``torchvision/_C.so`` fails
to load (it links ``libtorch_cuda.so``). torchvision tolerates that (its ops then raise when
called), except for one unguarded line: ``torch.library.register_fake("torchvision::nms")``
runs at import time and raises ``RuntimeError: operator torchvision::nms does not exist``.

:func:`import_timm` works around exactly that and nothing else: when, and only when, the first
import fails with that message, it declares the schemas of the two operators that torchvision
registers fakes for (``nms``, ``qnms``; the schemas are torchvision's own), then imports again.
No kernel is registered, so calling ``torchvision.ops.nms`` still raises; timm's image models
never call it. Where the extension loads (a CUDA torch, or a CPU torchvision built from
source), nothing is changed.
"""

from __future__ import annotations

import sys
from types import ModuleType

_MISSING_OP = "operator torchvision::nms does not exist"
_SCHEMAS = {
    "torchvision::nms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "torchvision::qnms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}
_INSTALL_HINT = (
    "install the survey extra: pip install -c constraints.txt -e '.[survey]' "
    "(timm, and the torchvision that matches your torch; docs/survey.md)"
)


def _forget(prefix: str) -> None:
    for key in [k for k in sys.modules if k == prefix or k.startswith(prefix + ".")]:
        del sys.modules[key]


def import_torchvision() -> ModuleType:
    """Import torchvision, declaring its two fake-registered op schemas if its C ops are missing.

    Raises ImportError naming the install route when torchvision is not installed.
    """
    import torch

    try:
        import torchvision
    except RuntimeError as exc:
        if _MISSING_OP not in str(exc):
            raise
        _forget("torchvision")
        for name, schema in _SCHEMAS.items():
            op = name.split("::")[1]
            if not hasattr(torch.ops.torchvision, op):
                torch.library.define(name, schema)
        import torchvision
    except ImportError as exc:
        raise ImportError(f"torchvision is not installed ({exc}); {_INSTALL_HINT}") from exc
    return torchvision


def import_timm() -> ModuleType:
    """Import timm (after :func:`import_torchvision`); ImportError with the install route."""
    import_torchvision()
    try:
        import timm
    except ImportError as exc:
        raise ImportError(f"timm is not installed ({exc}); {_INSTALL_HINT}") from exc
    return timm
