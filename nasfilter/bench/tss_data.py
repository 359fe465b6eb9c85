"""The shipped real measurements of the NATS topology space (tss, = NAS-Bench-201), as arrays.

All arrays are indexed by the NATS-tss index 0..15624 and are read-only. What each holds, and
its source and licence, is in ``nasfilter/data/nats_tss_real/README.md``; every value is a
real measurement or an exact count, shipped bit for bit as its source gives it (float32).
Each file's SHA-256 is checked before use (:data:`SHA256`); a changed file is refused.

- :func:`load_tss_arrays`: per-dataset accuracies (percent), training time and NATS latency
  (seconds), parameters and FLOPs (millions).
- :func:`load_latency`: HELP's measured latency of one device (and batch, for GPUs), seconds.
- :func:`arch_ops`, :func:`seed_record_params_mismatch`: the space's op codes and the 204
  flagged seed records (NATS-Bench issue #36).
"""

from __future__ import annotations

import functools
import hashlib
import io
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

N_TSS = 15625
DATASETS: tuple[str, ...] = ("cifar10", "cifar100", "ImageNet16-120")
SEEDS: tuple[int, ...] = (777, 888, 999)  # columns of the per-seed hp-200 arrays
# The NATS record behind each dataset's accuracies and times (CIFAR-10: 25k train, 25k x-valid).
RECORDS: dict[str, str] = {
    "cifar10": "cifar10-valid",
    "cifar100": "cifar100",
    "ImageNet16-120": "ImageNet16-120",
}
SHA256: dict[str, str] = {
    "space.npz": "9ee018857f91af48da19d0b21fbaa4814052d0f858572c6b2585d5a6c446451c",
    "cifar10.npz": "fd17991a29e2c4b71de62bd66ee9d9988dada9618f0feda1b419faa6538526dc",
    "cifar100.npz": "c2d881fbe96a78f67c918a3bbbc52cec032807a9875f2411f61d8f6eb98fcbef",
    "ImageNet16-120.npz": "94b4bf82679827160cf94c69e4c17fcc7d625b68f4ac550350781258c2903eb9",
    "help_latency_ms.npz": "efee6bee884951f358648ddd5601b12d46d9c46104a7e0927ce6b93df363b28d",
}
GPUS: tuple[str, ...] = ("1080ti", "2080ti", "titanx", "titanxp")
GPU_BATCHES: tuple[int, ...] = (1, 32, 256)
CPUS: tuple[str, ...] = ("gold_6226", "gold_6240", "silver_4114", "silver_4210r")
EDGE: tuple[str, ...] = (
    "pixel3", "raspi4", "eyeriss", "fpga", "pixel2", "samsung_a50", "samsung_s7", "essential_ph_1",
)  # fmt: skip


class TssDataError(ValueError):
    """A shipped tss data file is missing, or does not hold the bytes it was released with."""


@dataclass(frozen=True)
class TssArrays:
    """One dataset's real arrays, all (15625,) unless noted, float32, read-only.

    ``hp200_valid_acc`` (15625, 3): x-valid top-1 (percent) after epoch 200 of the hp-200 run,
    columns = seeds 777, 888, 999 (NaN: seed not trained). ``hp12_valid_acc``: the hp-12 run's
    x-valid accuracy, seed mean (no per-seed values, no curve). ``hp200_train_time_s``: the
    sum of the 200 measured epochs, seconds. ``hp200_latency_s``: NATS's own latency,
    seconds (batch 256). ``params_M``, ``flops_M``: exact, millions.
    """

    dataset: str
    record: str
    hp200_valid_acc: np.ndarray
    hp12_valid_acc: np.ndarray
    hp200_train_time_s: np.ndarray
    hp200_latency_s: np.ndarray
    params_M: np.ndarray
    flops_M: np.ndarray


def data_folder() -> Path:
    """The folder of the shipped tss files."""
    return Path(str(resources.files("nasfilter") / "data" / "nats_tss_real"))


@functools.cache
def _read_npz(name: str) -> dict[str, np.ndarray]:
    path = data_folder() / name
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TssDataError(
            f"cannot read the tss data file {str(path)!r}: {exc}; reinstall nasfilter"
        ) from exc
    actual = hashlib.sha256(raw).hexdigest()
    if actual != SHA256[name]:
        raise TssDataError(
            f"{str(path)!r} has SHA-256 {actual}, not the released {SHA256[name]}; the file is "
            "damaged or altered, so nasfilter refuses it. Reinstall nasfilter to restore it"
        )
    with np.load(io.BytesIO(raw), allow_pickle=False) as archive:
        arrays = {key: archive[key] for key in archive.files}
    for array in arrays.values():
        array.setflags(write=False)
    return arrays


def check_dataset(dataset: str) -> str:
    """The NATS name of ``dataset`` (case-insensitive); ValueError naming the known ones."""
    if isinstance(dataset, str):
        for name in DATASETS:
            if dataset.strip().lower() == name.lower():
                return name
    raise ValueError(f"unknown tss dataset {dataset!r}; known datasets: {', '.join(DATASETS)}")


def load_tss_arrays(dataset: str) -> TssArrays:
    """The real arrays of ``dataset`` (cifar10, cifar100 or ImageNet16-120), cached."""
    name = check_dataset(dataset)
    arrays = _read_npz(f"{name}.npz")
    return TssArrays(dataset=name, record=RECORDS[name], **arrays)


def arch_ops() -> np.ndarray:
    """int8 (15625, 6): the op code of each edge, edges (1<-0), (2<-0), (2<-1), (3<-0),
    (3<-1), (3<-2); codes 0 none, 1 skip_connect, 2 nor_conv_1x1, 3 nor_conv_3x3, 4 avg_pool_3x3."""
    return _read_npz("space.npz")["arch_ops"]


def seed_record_params_mismatch() -> np.ndarray:
    """bool (15625, 3): True where the hp-200 record of seed 777/888/999 stores another
    architecture's parameter count (204 architectures; NATS-Bench issue #36)."""
    return _read_npz("space.npz")["seed_record_params_mismatch"]


def latency_devices() -> dict[str, tuple[int, ...]]:
    """Every measured device -> its batch sizes (empty: the source gives no batch size)."""
    return {**{g: GPU_BATCHES for g in GPUS}, **{d: () for d in CPUS + EDGE}}


def _measured_list() -> str:
    return "; ".join(
        f"{d} (batch {', '.join(map(str, b))})" if b else d for d, b in latency_devices().items()
    )


def latency_key(device: str, batch: int | None = None) -> str:
    """The HELP key of ``device`` at ``batch``; ValueError listing the measured ones."""
    devices = latency_devices()
    if device not in devices:
        raise ValueError(
            f"no latency was measured on device {device!r}; measured: {_measured_list()}"
        )
    batches = devices[device]
    if not batches:
        if batch is not None:
            raise ValueError(
                f"device {device!r} has one latency with no documented batch size; got batch "
                f"{batch!r}: leave the batch out"
            )
        return device
    if batch is None or isinstance(batch, bool) or batch not in batches:
        raise ValueError(
            f"no latency was measured on {device!r} at batch {batch!r}; measured batches: "
            f"{', '.join(map(str, batches))}"
        )
    return f"{device}_{int(batch)}"


def load_latency(device: str, batch: int | None = None) -> np.ndarray:
    """HELP's measured latency of every architecture on ``device``, float64 (15625,) seconds.

    GPUs (1080ti, 2080ti, titanx, titanxp) need ``batch`` in 1, 32, 256; CPUs and edge
    devices take no batch. The shipped values are float32 milliseconds; this divides by 1000.
    """
    key = latency_key(device, batch)
    seconds = _read_npz("help_latency_ms.npz")[key].astype(np.float64) / 1000.0
    seconds.setflags(write=False)
    return seconds
