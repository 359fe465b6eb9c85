"""SYNTHETIC learning curves for the embedded surrogate: x-valid accuracy at every epoch.

NOT NATS-Bench data. For every architecture, training setting (hp ``01``, ``12``, ``90``)
and seed (hp 12: 777 / 888 / 999; hp 01 and 90: 777) of :mod:`nasfilter.bench.surrogate`, a
validation-accuracy curve on the search record (``cifar10-valid`` for CIFAR-10), in percent.
Model (``docs/surrogate.md``), epoch ``e`` of ``E``, ``x = (e + 1) / E``:

    F             final accuracy: hp 12 = the surrogate table's valid_acc (exactly);
                  hp 90 = its test_acc + delta_90 + sd_90 z;  hp 01 (E = 1, so F is the
                  whole curve) = B + (V - B) r_01 exp(sd_01 z), V the table's seed-mean hp 12
    gamma_i       = gamma[hp] * exp(sd_gamma u_i)       per architecture, shared by seeds/hps
    acc[e]        = F - (F - B) (1 - x ** gamma_i) + sigma[hp] (1 - x) z_e

``B`` is chance accuracy (100 / classes), ``z``, ``u``, ``z_e`` independent standard normal.
The last epoch has ``x = 1`` and is exactly ``F``. Curves are clipped to [0, 100]. Times per
epoch are the table's (``train_time``, ``valid_time``), the same in every setting.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.spaces import SSS
from nasfilter.bench.surrogate import _DATASET_KEYS, SURROGATE_SEED, embedded_table

CURVES_VERSION = 1
HPS: tuple[str, ...] = ("01", "12", "90")
EPOCHS: dict[str, int] = {"01": 1, "12": 12, "90": 90}
CURVE_SEEDS: dict[str, tuple[int, ...]] = {"01": (777,), "12": (777, 888, 999), "90": (777,)}
# Spawn keys below SeedSequence(SURROGATE_SEED, spawn_key=(dataset key, k)): the surrogate's
# own children are k = 0..5, so these never collide with the table's noise.
_GAMMA_KEY = 16
_HP_KEYS = {"01": 17, "12": 18, "90": 19}
SD_LOG_GAMMA = 0.10  # per-architecture jitter of the curve exponent (log scale)


@dataclass(frozen=True, slots=True)
class CurveCalibration:
    """One dataset's curve constants (percent); fitted to the official fixture's curves."""

    chance: float  # B, 100 / number of classes
    gamma: dict[str, float]  # hp -> curve exponent (hp 12, 90; hp 01 has one epoch)
    sigma: dict[str, float]  # hp -> epoch noise at x = 0 (shrinks linearly to 0 at the end)
    ratio_01: float  # r_01: (hp-01 accuracy - B) / (hp-12 final - B)
    sd_log_01: float  # its log-normal scatter
    delta_90: float  # hp-90 x-valid final minus hp-90 test accuracy of the table
    sd_90: float  # scatter of that difference


# Least-squares fits on the official fixture (architectures 0, 11, 284; every seed):
# gamma = mean over runs of the slope of log((acc - B) / (F - B)) against log x; sigma = the
# maximum-likelihood scale of the residuals under noise sigma (1 - x); ratio_01 and sd_log_01
# = mean and log-sd of the hp-01 ratio; delta_90, sd_90 = mean and sd of the hp-90 x-valid
# final minus the hp-90 test accuracy (ori-test of `cifar10` for CIFAR-10, x-test otherwise).
# Except CIFAR-10's delta_90, whose table matches the real mean test accuracy of the whole
# space: there delta_90 = -3.16, the real mean hp-90 x-valid accuracy of all 32768
# architectures (87.93, NATS-Bench's archive as exported by LightOn's
# contrastive-embeddings-for-neural-architectures, MIT) minus the table's mean (91.09);
# the fixture's three architectures give -2.55.
CURVE_CALIBRATIONS: dict[str, CurveCalibration] = {
    "cifar10": CurveCalibration(10.0, {"12": 0.363, "90": 0.172}, {"12": 7.36, "90": 6.46},
                                0.347, 0.281, -3.16, 0.45),
    "cifar100": CurveCalibration(1.0, {"12": 0.669, "90": 0.370}, {"12": 6.64, "90": 7.53},
                                 0.197, 0.143, 0.27, 0.45),
    "ImageNet16-120": CurveCalibration(100 / 120, {"12": 0.505, "90": 0.342},
                                       {"12": 2.80, "90": 5.70}, 0.313, 0.032, 0.61, 0.44),
}


def _rng(dataset: str, key: int) -> np.random.Generator:
    seq = np.random.SeedSequence(SURROGATE_SEED, spawn_key=(_DATASET_KEYS[dataset], key))
    return np.random.default_rng(seq)


@functools.cache
def _gammas(dataset: str) -> np.ndarray:
    """float (32768,): the per-architecture factor exp(sd_gamma u) of every exponent."""
    return np.exp(SD_LOG_GAMMA * _rng(dataset, _GAMMA_KEY).standard_normal(SSS.size))


def final_accuracy(dataset: str, hp: str) -> np.ndarray:
    """float (32768, seeds of ``hp``): the SYNTHETIC last-epoch x-valid accuracy (percent)."""
    name = get_dataset(dataset).name
    cal = CURVE_CALIBRATIONS[name]
    table = embedded_table(name)
    if hp == "12":
        return np.asarray(table.valid_acc, dtype=np.float64)
    g = _rng(name, _HP_KEYS[hp])
    z = g.standard_normal(SSS.size)
    if hp == "90":
        return (table.test_acc + cal.delta_90 + cal.sd_90 * z)[:, None]
    mean12 = np.asarray(table.valid_acc).mean(axis=1)
    acc01 = cal.chance + (mean12 - cal.chance) * cal.ratio_01 * np.exp(cal.sd_log_01 * z)
    return acc01[:, None]


def build_curves(dataset: str, hp: str) -> np.ndarray:
    """float (32768, seeds, epochs): SYNTHETIC x-valid accuracy curves, built afresh.

    Deterministic (a fixed ``SeedSequence``, no global random state); about 0.1 s for hp 90.
    """
    name = get_dataset(dataset).name
    if hp not in EPOCHS:
        raise ValueError(f"hp {hp!r} is not a training setting; the settings are {list(HPS)}")
    final = final_accuracy(name, hp)
    epochs = EPOCHS[hp]
    if epochs == 1:
        return np.ascontiguousarray(final[:, :, None])
    cal = CURVE_CALIBRATIONS[name]
    x = np.arange(1, epochs + 1, dtype=np.float64) / epochs  # (E,)
    gamma = cal.gamma[hp] * _gammas(name)  # (N,)
    rise = np.multiply.outer(gamma, np.log(x))  # (N, E): 1 - x ** gamma, 0 at the last epoch
    np.exp(rise, out=rise)
    np.subtract(1.0, rise, out=rise)
    g = _rng(name, _HP_KEYS[hp])
    g.standard_normal(SSS.size)  # the draw final_accuracy makes for hp 90
    curves = g.standard_normal((SSS.size, final.shape[1], epochs))
    curves *= cal.sigma[hp] * (1.0 - x)
    curves -= (final - cal.chance)[:, :, None] * rise[:, None, :]
    curves += final[:, :, None]
    np.clip(curves, 0.0, 100.0, out=curves)
    curves[:, :, -1] = final  # exactly the final values
    return curves


@functools.cache
def _cached(dataset: str, hp: str) -> np.ndarray:
    curves = build_curves(dataset, hp)
    curves.setflags(write=False)
    return curves


def valid_curves(dataset: str, hp: str = "12") -> np.ndarray:
    """float (32768, seeds, epochs), read-only: the cached SYNTHETIC curves of one setting.

    Seeds are :data:`CURVE_SEEDS` ``[hp]`` in order; built on first use per process.
    """
    if hp not in EPOCHS:
        raise ValueError(f"hp {hp!r} is not a training setting; the settings are {list(HPS)}")
    return _cached(get_dataset(dataset).name, hp)
