"""The simulator's door to the oracle: a :class:`~nasfilter.bench.proxy.ProxyTable` per backend.

The roofline is computed on the fly for any device spec. Measured backends are read from a
measurement cache (SQLite) or an exported table file (.npz); the onnxruntime backend falls
back to the shipped CPU sample (about 290 architectures of CIFAR-10; NaN elsewhere).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.proxy import DEFAULT_ORACLE, ProxyTable
from nasfilter.oracle.analytic import AnalyticBackend
from nasfilter.oracle.cache import Group, MeasurementCache
from nasfilter.oracle.devices import DeviceSpec
from nasfilter.oracle.measured import is_measured_spec, measured_proxy_spec
from nasfilter.oracle.measurement import device_label
from nasfilter.oracle.registry import ANALYTIC_BACKENDS, check_spec, create
from nasfilter.oracle.tablefile import MeasurementTable, load_table_file, table_label

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


def _recorded(config: dict[str, Any], key: str) -> Any:
    """The value of setting ``key`` as the measurements recorded it (seconds get ``_s``)."""
    for name in (key, f"{key}_s"):
        if name in config:
            return config[name]
    raise KeyError(key)


def _same_settings(config: dict[str, Any], settings: dict[str, Any], spec: str) -> bool:
    """Whether measurements taken with ``config`` are the ones ``settings`` ask for."""
    for key, value in settings.items():
        try:
            held = _recorded(config, key)
        except KeyError:
            raise ValueError(
                f"oracle {spec!r}: setting {key!r} is not recorded with the measurements, so "
                "it cannot choose among them; settings apply when measuring (`nasfilter "
                f"measure --backend {spec}`): drop it here"
            ) from None
        if held != value:
            return False
    return True


def _from_cache(
    path: Path, spec: str, device: str | None, ds: Dataset, settings: dict[str, Any]
) -> ProxyTable:
    backend = check_spec(spec)[0]
    with MeasurementCache(path, readonly=True) as cache:
        groups = [
            g.group
            for g in cache.groups(ds.name, backend)
            if _matches(g.group, device) and _same_settings(g.group.config_dict, settings, spec)
        ]
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
                + (f" with {spec!r}" if settings else "")
                + f"; it holds: {', '.join(held) or 'nothing'}. Run `nasfilter measure` first."
            )
        if len(groups) > 1:
            labels = [f"{device_label(g.device_dict)} {g.config}" for g in groups]
            raise ValueError(
                f"cache {str(path)!r} holds {len(groups)} {backend} groups for {ds.name}; "
                f"name the device (--device) or a setting (NAME[key=value]) to choose one of: "
                f"{'; '.join(labels)}"
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
        backend: "calibrated" (the default) or "roofline" (the plain baseline), both analytic,
            ``measured`` (HELP's real GPU latencies of the tss cells, a tss proxy:
            :mod:`nasfilter.oracle.measured`; ``measured[batch=1]``, device such as
            ``2080ti``), or a measured backend ("onnxruntime", "torch-cuda", "tensorrt");
            settings as ``NAME[key=value,...]`` (``roofline[batch=256]``), checked by
            :func:`~nasfilter.oracle.registry.check_spec`. A measured backend's settings
            choose among the measurements of a cache or table by what they recorded.
        device: roofline, calibrated: a device spec (default V100); measured backends:
            picks a group in the cache by device name (needed only when the cache holds
            several).
        dataset: the dataset.
        cache: a measurement cache (SQLite) or an exported table (.npz). Without one, the
            roofline or calibrated model is computed and onnxruntime reads the shipped CPU
            sample.
    """
    ds = get_dataset(dataset)
    if is_measured_spec(backend):  # the tss cells' real GPU latencies (HELP)
        if cache is not None:
            raise ValueError(
                f"oracle {backend!r} reads the shipped HELP latencies; it takes no cache "
                f"(got {str(cache)!r})"
            )
        return measured_proxy_spec(backend, device)
    name, settings = check_spec(backend)
    if name in ANALYTIC_BACKENDS and cache is None:
        try:
            model = create(backend, device=device)  # every setting's value checked here
        except ValueError as exc:
            raise ValueError(f"oracle {backend!r}: {exc}") from exc
        assert isinstance(model, AnalyticBackend)
        return model.result(ds).proxy_table()
    if cache is None:
        if name == "onnxruntime":
            return _from_table(sample_path(), backend, ds, settings, shipped=True)
        raise LookupError(
            f"no {name} measurements given: measure with `nasfilter measure --backend "
            f"{name} --cache PATH` and pass that cache (or an exported .npz)"
        )
    path = Path(cache)
    if path.suffix == ".npz":
        return _from_table(path, backend, ds, settings)
    if not path.is_file():
        raise FileNotFoundError(f"measurement cache {str(path)!r} does not exist or is not a file")
    if path.stat().st_size == 0:  # reading must not turn an empty file into a cache
        raise LookupError(
            f"measurement cache {str(path)!r} is empty; fill it with `nasfilter measure` first"
        )
    dev = device.name if isinstance(device, DeviceSpec) else device
    return _from_cache(path, backend, dev, ds, settings)


def _from_table(
    path: Path, spec: str, ds: Dataset, settings: dict[str, Any], shipped: bool = False
) -> ProxyTable:
    """The proxy of an exported measurement table (or the shipped sample), checked against
    the backend, dataset and settings asked for."""
    name = check_spec(spec)[0]
    table = load_sample() if shipped else load_table_file(path)
    what = "the shipped onnxruntime sample" if shipped else f"table {str(path)!r}"
    if shipped and table.dataset != ds.name:
        raise LookupError(
            f"the shipped onnxruntime sample is for {table.dataset}, not {ds.name}; "
            "measure that dataset with `nasfilter measure --backend onnxruntime`"
        )
    if table.backend != name or table.dataset != ds.name:
        raise ValueError(
            f"{what} holds {table.backend} measurements for {table.dataset}, "
            f"not {name} for {ds.name}"
        )
    config = dict(table.meta.get("config") or {})
    if not _same_settings(config, settings, spec):
        held = ", ".join(f"{k}={_recorded(config, k)!r}" for k in settings)
        raise ValueError(f"{what} was measured with {held}, not as {spec!r} asks")
    return table.proxy_table()
