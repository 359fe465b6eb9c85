"""The cheap signal: per-architecture utilization and throughput, as the simulator reads it.

An oracle backend (``nasfilter.oracle``) measures or predicts these numbers; the simulator
only needs them as two columns indexed by architecture. :class:`ProxyTable` is that hand-off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nasfilter.bench.spaces import SSS, Space

# The default oracle everywhere: the calibrated GPU model. It won on held-out measurements,
# the condition set for the switch: fitted on one shipped GPU it predicts the other
# within a median 8.8-14.1 % (Spearman 0.974-0.981) where the plain roofline is off by
# 104-153 % (docs/gpu-model.md). The plain roofline stays available by name ("roofline") as
# the baseline, and `nasfilter reproduce` sets the two side by side.
DEFAULT_ORACLE = "calibrated"
# The oracle and device a space's runs use when none is named: (oracle, device). On sss the
# calibrated GPU model of a V100 (modelled); on tss HELP's latencies measured on the RTX 2080 Ti.
SPACE_DEFAULT_ORACLE: dict[str, tuple[str, str]] = {
    "sss": (DEFAULT_ORACLE, "v100"),
    "tss": ("measured", "2080ti"),
}


@dataclass(frozen=True, eq=False)
class ProxyTable:
    """Utilization and throughput of every architecture on one device and backend.

    Attributes:
        utilization: achieved FLOP/s / peak FLOP/s, a positive fraction, shape (32768,); NaN
            where the architecture was not measured. At most 1 for the roofline; a measured
            backend can exceed 1 slightly when its peak microbenchmark falls short of what the
            network reaches (docs/oracle.md).
        throughput: images per second, shape (32768,); NaN where not measured.
        label: a short description ("roofline v100 fp16", ...), shown in outputs.
        provenance: backend, device and config details, JSON-serialisable.
    """

    utilization: np.ndarray
    throughput: np.ndarray
    label: str
    provenance: dict[str, Any] = field(default_factory=dict)
    space: Space = SSS

    def __post_init__(self) -> None:
        n_rows = self.space.size
        for name in ("utilization", "throughput"):
            arr = getattr(self, name)
            if arr.shape != (n_rows,):
                raise ValueError(
                    f"proxy column {name!r} must have shape ({n_rows},), got {arr.shape}"
                )
            if not np.issubdtype(arr.dtype, np.floating):
                raise ValueError(
                    f"proxy column {name!r} must hold floats (NaN where unmeasured), "
                    f"got {arr.dtype}"
                )
            if np.isinf(arr).any():
                raise ValueError(
                    f"proxy column {name!r} holds infinite values; they must be finite and "
                    "positive (NaN where unmeasured)"
                )
            ok = np.isfinite(arr)
            if np.any(arr[ok] <= 0):
                raise ValueError(f"proxy column {name!r} holds values <= 0; they must be positive")
            arr.setflags(write=False)
        if not np.array_equal(np.isfinite(self.utilization), np.isfinite(self.throughput)):
            raise ValueError(
                "utilization and throughput must be measured for the same architectures"
            )

    @property
    def measured(self) -> np.ndarray:
        """Boolean mask (32768,) of architectures with a reading."""
        return np.isfinite(self.throughput)

    def require(self, index: int) -> None:
        if not np.isfinite(self.throughput[index]):
            raise LookupError(
                f"architecture index {index} has no {self.label} measurement; measure it first "
                "(`nasfilter measure`) or use an analytic backend (calibrated, roofline)"
            )
