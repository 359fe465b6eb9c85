"""Exact MACs and parameter counts of all 32768 networks, in closed form.

The numbers are those of xautodl's ``get_model_infos(net, (1, 3, H, H))`` on the real
network, which is what NATS-Bench stores as ``flops`` (millions of multiply-accumulates) and
``params`` (millions). Like xautodl, MACs count the convs (``k*k*cin*cout`` per output pixel)
and the classifier (``c4*K`` plus its ``K`` bias additions), and leave out pooling, BN, ReLU
and additions. Parameters count conv and linear weights and biases and each BN's scale and
shift (2 per channel; running statistics are buffers, not parameters). The network's
structure is described in :mod:`nasfilter.bench.network`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.network import feature_sizes
from nasfilter.bench.spaces.sss import all_channels


@dataclass(frozen=True, eq=False)
class NetworkCosts:
    """Per-image costs of every architecture, rows indexed by NATS index.

    Attributes:
        dataset: the dataset (input size, number of classes) these costs are for.
        macs: multiply-accumulates per image, in millions, float64 (32768,).
        params: parameters, in millions, float64 (32768,).
    """

    dataset: Dataset
    macs: np.ndarray
    params: np.ndarray


def _cell_macs(cin: np.ndarray, cout: np.ndarray, area: int) -> np.ndarray:
    """A cell ``cin -> cout``: two 3x3 convs from its input, three 3x3 convs ``cout -> cout``
    and, where the widths differ, a 1x1 skip conv; all at ``area`` output pixels."""
    return area * (18 * cin * cout + 27 * cout * cout + (cin != cout) * cin * cout)


def _cell_params(cin: np.ndarray, cout: np.ndarray) -> np.ndarray:
    """The same convs (no bias) with a BN each."""
    reduce = cin != cout
    return 18 * cin * cout + 27 * cout * cout + 10 * cout + reduce * (cin * cout + 2 * cout)


def _block_macs(cin: np.ndarray, cout: np.ndarray, area_out: int) -> np.ndarray:
    """A stride-2 ResNet block: 3x3 ``cin -> cout``, 3x3 ``cout -> cout``, 1x1 shortcut."""
    return area_out * (10 * cin * cout + 9 * cout * cout)


def _block_params(cin: np.ndarray, cout: np.ndarray) -> np.ndarray:
    """The same convs (no bias), with a BN after each 3x3 one."""
    return 10 * cin * cout + 9 * cout * cout + 4 * cout


def compute_network_costs(dataset: Dataset) -> NetworkCosts:
    """Uncached :func:`network_costs` (for benchmarks); ``dataset`` must be a Dataset."""
    s0, s1, s2 = feature_sizes(dataset)
    a0, a1, a2 = s0 * s0, s1 * s1, s2 * s2
    k = dataset.num_classes
    c0, c1, c2, c3, c4 = all_channels().astype(np.float64).T
    macs = (
        27 * c0 * a0  # stem
        + _cell_macs(c0, c0, a0)
        + _block_macs(c0, c1, a1)
        + _cell_macs(c1, c2, a1)
        + _block_macs(c2, c3, a2)
        + _cell_macs(c3, c4, a2)
        + (c4 * k + k)  # classifier
    )
    params = (
        29 * c0  # stem conv + BN
        + _cell_params(c0, c0)
        + _block_params(c0, c1)
        + _cell_params(c1, c2)
        + _block_params(c2, c3)
        + _cell_params(c3, c4)
        + 2 * c4  # lastact BN
        + (c4 * k + k)  # classifier
    )
    macs /= 1e6
    params /= 1e6
    macs.setflags(write=False)
    params.setflags(write=False)
    return NetworkCosts(dataset, macs, params)


@functools.cache
def _network_costs(dataset: Dataset) -> NetworkCosts:
    return compute_network_costs(dataset)


def network_costs(dataset: str | Dataset) -> NetworkCosts:
    """MACs and parameters (millions) of all 32768 architectures on ``dataset`` (cached)."""
    return _network_costs(get_dataset(dataset))


@functools.cache
def _flops(dataset: Dataset) -> np.ndarray:
    out = 2.0 * np.rint(_network_costs(dataset).macs * 1e6)  # exact integer MACs, doubled
    out.setflags(write=False)
    return out


def flops(dataset: str | Dataset) -> np.ndarray:
    """FLOPs per image (2 x MACs; not millions), float64 (32768,), read-only (docs/facts.md §1)."""
    return _flops(get_dataset(dataset))
