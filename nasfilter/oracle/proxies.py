"""The simulator's door to the oracle: a :class:`~nasfilter.proxy.ProxyTable` per backend.

The roofline is computed on the fly for any device spec. Measured backends are read from a
measurement cache (SQLite) or an exported table file (.npz); the onnxruntime backend falls
back to the shipped CPU sample (about 290 architectures of CIFAR-10; NaN elsewhere).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from nasfilter.datasets import Dataset, get_dataset
from nasfilter.oracle.cache import Group, MeasurementCache
from nasfilter.oracle.devices import DeviceSpec
from nasfilter.oracle.measurement import device_label
from nasfilter.oracle.registry import backend_name
from nasfilter.oracle.tablefile import MeasurementTable, load_table_file, table_label
from nasfilter.proxy import DEFAULT_ORACLE, ProxyTable

SAMPLE_FILE = "onnxruntime_cpu_sample.npz"


def sample_path() -> Path:
    """The path of the shipped onnxruntime-CPU sample table."""
    return Path(str(resources.files("nasfilter") / "data" / SAMPLE_FILE))


def load_sample() -> MeasurementTable:
    """The shipped onnxruntime-CPU measurement (CIFAR-10), with its device fingerprint."""
    path = sample_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"the shipped sample {str(path)!r} is missing; reinstall nasfilter or run "
            "scripts/measure_sample.py"
        )
    return load_table_file(path)


def _matches(group: Group, device: str | None) -> bool:
    if device is None:
        return True
    fp = group.device_dict
    wanted = device.strip().lower()
    return wanted in (str(fp.get("name", "")).lower(), device_label(fp).lower()) or wanted in (
        str(fp.get("gpu", "")).lower(),
        str(fp.get("kind", "")).lower(),
    )


def _from_cache(path: Path, backend: str, device: str | None, ds: Dataset) -> ProxyTable:
    with MeasurementCache(path, readonly=True) as cache:
        groups = [g.group for g in cache.groups(ds.name, backend) if _matches(g.group, device)]
        if not groups:
            held = sorted(
                {
                    f"{g.group.backend} on {device_label(g.group.device_dict)} ({g.group.dataset})"
                    for g in cache.groups()
                }
            )
            raise LookupError(
                f"cache {str(path)!r} holds no {backend} measurements for {ds.name}"
                + (f" on device {device!r}" if device else "")
                + f"; it holds: {', '.join(held) or 'nothing'}. Run `nasfilter measure` first."
            )
        if len(groups) > 1:
            labels = [f"{device_label(g.device_dict)} {g.config}" for g in groups]
            raise ValueError(
                f"cache {str(path)!r} holds {len(groups)} {backend} groups for {ds.name}; "
                f"name the device (--device) to choose one of: {'; '.join(labels)}"
            )
        group = groups[0]
        thr, util = cache.columns(group)
    provenance = {
        "backend": backend,
        "dataset": ds.name,
        "config": group.config_dict,
        "device": group.device_dict,
        "source": str(path),
        "synthetic": backend in ("roofline", "calibrated"),
    }
    return ProxyTable(util, thr, table_label(backend, group.device_dict), provenance)


def proxy_table(
    backend: str = DEFAULT_ORACLE,
    device: str | DeviceSpec | None = None,
    dataset: str | Dataset = "cifar10",
    cache: str | os.PathLike[str] | None = None,
) -> ProxyTable:
    """Utilization and throughput of every architecture from ``backend``.

    Args:
        backend: "roofline" (the default) or "calibrated" (analytic), or a measured backend
            ("onnxruntime", "torch-cuda", "tensorrt").
        device: roofline, calibrated: a device spec (default V100); measured backends:
            picks a group in the cache by device name (needed only when the cache holds
            several).
        dataset: the dataset.
        cache: a measurement cache (SQLite) or an exported table (.npz). Without one, the
            roofline or calibrated model is computed and onnxruntime reads the shipped CPU
            sample.
    """
    ds = get_dataset(dataset)
    if cache is None:
        backend = backend_name(backend)  # an unknown name gets the list of known backends
        if backend == "roofline":
            from nasfilter.oracle.roofline import roofline

            return roofline(device, ds).proxy_table()
        if backend == "calibrated":
            from nasfilter.oracle.calibrated import calibrated

            return calibrated(device, ds).proxy_table()
        if backend == "onnxruntime":
            table = load_sample()
            if table.dataset != ds.name:
                raise LookupError(
                    f"the shipped onnxruntime sample is for {table.dataset}, not {ds.name}; "
                    "measure that dataset with `nasfilter measure --backend onnxruntime`"
                )
            return table.proxy_table()
        raise LookupError(
            f"no {backend} measurements given: measure with `nasfilter measure --backend "
            f"{backend} --cache PATH` and pass that cache (or an exported .npz)"
        )
    path = Path(cache)
    if path.suffix == ".npz":
        table = load_table_file(path)
        if table.backend != backend or table.dataset != ds.name:
            raise ValueError(
                f"table {str(path)!r} holds {table.backend} measurements for {table.dataset}, "
                f"not {backend} for {ds.name}"
            )
        return table.proxy_table()
    if not path.is_file():
        raise FileNotFoundError(f"measurement cache {str(path)!r} does not exist or is not a file")
    if path.stat().st_size == 0:  # reading must not turn an empty file into a cache
        raise LookupError(
            f"measurement cache {str(path)!r} is empty; fill it with `nasfilter measure` first"
        )
    dev = device.name if isinstance(device, DeviceSpec) else device
    return _from_cache(path, backend, dev, ds)
