"""The optional dependencies: which extra of ``pip install 'nasfilter[EXTRA]'`` brings each.

``pip install nasfilter`` installs the simulator's own dependencies only (numpy, scipy,
tqdm): enough for searches, experiments, results and ``nasfilter demo``. Every other
package is imported where it is used, and a missing one is named with its extra
(:func:`require`, and the CLI's handler of :class:`ModuleNotFoundError`).
"""

from __future__ import annotations

import importlib.util

# The top-level module of each optional package -> the extra that installs it (setup.cfg).
EXTRA_OF: dict[str, str] = {
    "matplotlib": "plot",
    "pandas": "pandas",
    "optuna": "optuna",
    "ray": "ray",
    "torch": "torch",
    "onnx": "onnx",
    "onnxruntime": "onnx",
    "torchvision": "survey",
    "timm": "survey",
    "nats_bench": "nats",
}
# Installed by hand, not by an extra: the package, and how to install it.
BY_HAND: dict[str, str] = {
    "xautodl": "pip install --no-deps xautodl==1.0.0 (it pins numpy<=1.19.5; docs/facts.md)",
    "tensorrt": "NVIDIA's TensorRT wheel for your CUDA (docs/oracle.md)",
}


class ExtraMissing(ImportError, ValueError):
    """An optional package is not installed; the message names the extra that brings it."""


def install_hint(module: str) -> str | None:
    """How to install the optional package whose top-level module is ``module`` (a dotted
    name is cut at its first dot); None for a module that is not optional."""
    root = module.split(".", 1)[0]
    if root in EXTRA_OF:
        return f"pip install 'nasfilter[{EXTRA_OF[root]}]'"
    return BY_HAND.get(root)


def missing_message(module: str, what: str, extra: str | None = None) -> str | None:
    """``what`` needs ``module``, not installed, and how to install it (``extra`` when
    given: the extra that brings all that ``what`` needs, e.g. the survey's); None when
    ``module`` is not an optional package."""
    hint = install_hint(module)
    if hint is None:
        return None
    if extra is not None and module.split(".", 1)[0] in EXTRA_OF:
        hint = f"pip install 'nasfilter[{extra}]'"
    return f"{what} needs {module.split('.', 1)[0]}, which is not installed: {hint}"


def require(module: str, what: str) -> None:
    """ExtraMissing, before any work starts, when the optional ``module`` that ``what``
    needs is not installed (checked without importing it)."""
    if importlib.util.find_spec(module) is None:
        raise ExtraMissing(missing_message(module, what) or f"{what} needs {module}")


__all__ = ["BY_HAND", "EXTRA_OF", "ExtraMissing", "install_hint", "missing_message", "require"]
