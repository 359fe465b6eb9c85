"""Sweeps: measure many architectures into the cache, locally or fanned out over Ray.

A sweep skips every architecture already cached for its group (dataset, backend, config,
device), measures the rest, and writes each finished row at once (a local sweep of a
measured backend commits row by row; the roofline in large batches), so an interrupted
sweep loses only the architectures in flight and resumes where it stopped. With Ray, one
task measures one chunk of architectures (asking for a GPU per task for GPU backends) and
returns its rows; the driver alone writes them.

Sweeps index the sss space (:data:`~nasfilter.bench.spaces.SSS`: its size and channel
choices); ``measure --space tss`` goes through :mod:`nasfilter.oracle.tss_measure`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.costs import network_costs
from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.spaces import SSS
from nasfilter.bench.spaces.sss import as_arch, channels_to_index
from nasfilter.checks import check_positive_int
from nasfilter.oracle.base import Backend, BackendSpec
from nasfilter.oracle.cache import Group, MeasurementCache
from nasfilter.oracle.measurement import Measurement, device_label
from nasfilter.oracle.registry import BACKENDS, from_spec, uses_gpu
from nasfilter.oracle.roofline import roofline
from nasfilter.oracle.tablefile import build_table, save_table
from nasfilter.pareto import nondominated_mask

MAX_FAILURES_KEPT = 20


# ----------------------------------------------------------------- choosing architectures
def corner_indices() -> np.ndarray:
    """The 32 corners of the sss space: every layer at 8 or 64 channels (int64, sorted)."""
    lo, hi = SSS.choices[0], SSS.choices[-1]
    bits = (np.arange(32)[:, None] >> np.arange(4, -1, -1)) & 1
    return np.sort(channels_to_index(np.where(bits == 1, hi, lo)))


def stratified_sample(
    n: int,
    rng: np.random.Generator,
    dataset: str | Dataset = "cifar10",
    strata: tuple[int, int] = (8, 8),
    corners: bool = True,
) -> np.ndarray:
    """About ``n`` architectures spread over MACs x arithmetic-intensity strata, plus corners.

    MACs are cut into ``strata[0]`` equal-count bins; within each, the network's arithmetic
    intensity (roofline, V100, batch 1024) into ``strata[1]`` equal-count bins. Each of the
    cells gets ``n // cells`` architectures drawn without replacement (the remainder goes
    to randomly chosen cells); ``corners`` adds the 32 corners. Returns sorted unique
    indices (int64).
    """
    ds = get_dataset(dataset)
    n_macs, n_ai = strata
    cells = n_macs * n_ai
    n = check_positive_int(n, "sample size", minimum=0, maximum=SSS.size)
    macs = network_costs(ds).macs
    intensity = roofline("v100", ds).network_intensity
    order = np.argsort(macs, kind="stable")
    chosen: list[np.ndarray] = []
    extra = np.zeros(cells, dtype=np.int64)
    if n % cells:
        extra[rng.choice(cells, size=n % cells, replace=False)] = 1
    per_cell = n // cells + extra
    cell = 0
    for macs_bin in np.array_split(order, n_macs):
        by_ai = macs_bin[np.argsort(intensity[macs_bin], kind="stable")]
        for ai_bin in np.array_split(by_ai, n_ai):
            k = int(min(per_cell[cell], len(ai_bin)))
            chosen.append(rng.choice(ai_bin, size=k, replace=False))
            cell += 1
    if corners:
        chosen.append(corner_indices())
    return np.unique(np.concatenate(chosen).astype(np.int64))


def select_archs(
    text: str, rng: np.random.Generator, dataset: str | Dataset = "cifar10"
) -> np.ndarray:
    """Architectures from ``all``, ``sample:N`` (uniform, without replacement),
    ``stratified:N`` (see :func:`stratified_sample`) or a FILE (one index or ``8:16:...``
    string per line; ``#`` starts a comment). Returns int64 indices in order, duplicates
    dropped."""
    spec = text.strip()
    if spec == "all":
        return np.arange(SSS.size, dtype=np.int64)
    for prefix in ("sample:", "stratified:"):
        if spec.startswith(prefix):
            count = spec[len(prefix) :]
            if not count.isdigit() or not 0 < int(count) <= SSS.size:
                raise ValueError(
                    f"--archs {spec!r}: N must be an integer in [1, {SSS.size}], e.g. {prefix}256"
                )
            if prefix == "sample:":
                picked = rng.choice(SSS.size, size=int(count), replace=False)
                return np.sort(picked).astype(np.int64)
            return stratified_sample(int(count), rng, dataset)
    path = Path(spec)
    if not path.is_file():
        raise ValueError(
            f"--archs {spec!r} is not 'all', 'sample:N', 'stratified:N' or an existing file"
        )
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"--archs {spec!r}: cannot read the architecture file ({exc}); expected UTF-8 text "
            "with one index or 8:16:24:32:40 per line"
        ) from None
    out: list[int] = []
    for number, line in enumerate(lines, start=1):
        item = line.split("#", 1)[0].strip()
        if not item:
            continue
        try:
            out.append(as_arch(item).index)
        except ValueError as exc:
            raise ValueError(f"{spec}:{number}: {exc}") from None
    if not out:
        raise ValueError(f"architecture file {spec!r} lists no architectures")
    return np.asarray(list(dict.fromkeys(out)), dtype=np.int64)


# --------------------------------------------------------------------------- summaries
def pareto_count(throughput: np.ndarray, utilization: np.ndarray) -> int:
    """How many measured architectures are on the throughput-utilization Pareto front
    (both maximized; NaN entries are unmeasured and ignored)."""
    ok = np.isfinite(throughput) & np.isfinite(utilization)
    if not ok.any():
        return 0
    points = np.stack([throughput[ok], utilization[ok]], axis=1)
    return int(nondominated_mask(points, maximize=(True, True)).sum())


@dataclass
class SweepSummary:
    """What a sweep did. Seconds are wall-clock."""

    backend: str
    device: str
    dataset: str
    executor: str
    n_requested: int
    n_cached: int  # already in the cache before the sweep
    n_measured: int  # measured and stored now
    n_failed: int  # measured but not ok (not stored; retried next time)
    seconds: float
    n_rows: int  # rows of this group in the cache after the sweep
    pareto_throughput_utilization: int  # over all rows of this group
    device_fingerprint: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------------------ sweeps
class _Writer:
    """Buffers rows and commits them every ``every`` rows (and at the end)."""

    def __init__(self, cache: MeasurementCache, every: int) -> None:
        self.cache = cache
        self.every = max(1, every)
        self.buffer: list[Measurement] = []
        self.stored = 0
        self.failed = 0
        self.failures: list[dict[str, Any]] = []

    def add(self, m: Measurement) -> None:
        if not m.ok:
            self.failed += 1
            if len(self.failures) < MAX_FAILURES_KEPT:
                self.failures.append({"arch": m.arch, "status": m.status.value, "error": m.error})
            return
        self.buffer.append(m)
        if len(self.buffer) >= self.every:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.cache.put_many(self.buffer)
            self.stored += len(self.buffer)
            self.buffer = []


def _progress(total: int, label: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=label,
        unit="arch",
        disable=not enabled,
        file=sys.stderr,
        dynamic_ncols=True,
        smoothing=0.1,
    )


def sweep(
    backend: Backend | BackendSpec,
    archs: Iterable[int],
    dataset: str | Dataset,
    cache: MeasurementCache,
    *,
    progress: bool = False,
    executor: str = "local",
    chunk_size: int | None = None,
    ray_init: dict[str, Any] | None = None,
    on_row: Callable[[Measurement], None] | None = None,
) -> SweepSummary:
    """Measure every architecture of ``archs`` not yet cached, storing rows as they finish.

    Args:
        backend: a backend, or (for Ray, where the driver may lack the device) its spec.
        archs: NATS indices.
        dataset: the dataset.
        cache: where rows are read from and written to.
        progress: show a progress bar with an ETA on stderr.
        executor: "local" (this process) or "ray" (one task per chunk).
        chunk_size: architectures per Ray task (default: 4 for measured backends, 4096 for
            the roofline).
        ray_init: keyword arguments for ``ray.init`` if Ray is not yet initialized
            (e.g. ``{"address": "auto"}`` or ``{"num_cpus": 2}``).
        on_row: called with each finished row after it is stored (or refused as failed).
    """
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    ds = get_dataset(dataset)
    start = time.perf_counter()
    order = np.asarray(list(dict.fromkeys(int(a) for a in archs)), dtype=np.int64)
    if order.size and (order.min() < 0 or order.max() >= SSS.size):
        raise ValueError(f"architecture indices must be in [0, {SSS.size - 1}]")

    if executor == "ray":
        return _ray_sweep(backend, order, ds, cache, progress, chunk_size, ray_init, on_row, start)
    if isinstance(backend, BackendSpec):
        backend = from_spec(backend)
    config, fingerprint = backend.config, backend.fingerprint()
    group = Group.make(ds.name, backend.name, config, fingerprint)
    cached = np.isin(order, cache.cached_indices(group))
    todo = order[~cached]
    writer = _Writer(cache, backend.commit_every)
    bar = _progress(len(todo), f"{backend.name} {device_label(fingerprint)}", progress)
    try:
        for m in backend.measure_many(todo.tolist(), ds):
            writer.add(m)
            if on_row is not None:
                on_row(m)
            bar.update(1)
        writer.flush()
    finally:
        bar.close()
    return _summary(
        backend.name, ds, "local", group, cache, len(order), int(cached.sum()), writer, start
    )


def _summary(
    name: str,
    ds: Dataset,
    executor: str,
    group: Group,
    cache: MeasurementCache,
    n_requested: int,
    n_cached: int,
    writer: _Writer,
    start: float,
) -> SweepSummary:
    thr, util = cache.columns(group)
    fingerprint = group.device_dict
    return SweepSummary(
        backend=name,
        device=device_label(fingerprint),
        dataset=ds.name,
        executor=executor,
        n_requested=n_requested,
        n_cached=n_cached,
        n_measured=writer.stored,
        n_failed=writer.failed,
        seconds=time.perf_counter() - start,
        n_rows=int(np.isfinite(thr).sum()),
        pareto_throughput_utilization=pareto_count(thr, util),
        device_fingerprint=fingerprint,
        config=group.config_dict,
        failures=writer.failures,
    )


# ------------------------------------------------------------------------------- Ray
def _spec_dict(spec: BackendSpec) -> dict[str, Any]:
    return {"name": spec.name, "device": spec.device, "config": dict(spec.config)}


def _rebuild(spec: dict[str, Any]) -> Backend:
    return from_spec(BackendSpec(spec["name"], spec["device"], spec["config"]))


def describe_backend(spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(config, device fingerprint) of a backend built from ``spec`` (run in a Ray task)."""
    backend = _rebuild(spec)
    return backend.config, backend.fingerprint()


def measure_chunk(spec: dict[str, Any], archs: list[int], dataset: str) -> list[dict[str, Any]]:
    """Measure ``archs`` with a backend built from ``spec`` (a Ray task); rows as dicts."""
    backend = _rebuild(spec)
    return [m.to_dict() for m in backend.measure_many(archs, get_dataset(dataset))]


RAY_CONNECT_TIMEOUT = 5.0  # seconds to reach a Ray cluster's address before giving up


def probe_ray_address(address: str, timeout: float = RAY_CONNECT_TIMEOUT) -> None:
    """ConnectionError naming ``address`` unless a TCP connection to it opens within
    ``timeout`` seconds. ``ray.init`` itself retries an unreachable address for minutes
    while flooding its log. Addresses without a port ("auto", "local") are left to Ray."""
    import socket
    from urllib.parse import urlsplit

    text = address if "://" in address else f"ray://{address}"
    try:
        parts = urlsplit(text)
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise ValueError(f"cannot read the Ray address {address!r} (--ray): {exc}") from None
    if not host or port is None:
        return
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(
            f"cannot reach the Ray cluster at {address!r} within {timeout:g} s: "
            f"{exc.strerror or exc}; start one with `ray start --head` and pass the address it "
            "prints, or use --ray alone for a local instance"
        ) from None


def _ray_sweep(
    backend: Backend | BackendSpec,
    order: np.ndarray,
    ds: Dataset,
    cache: MeasurementCache,
    progress: bool,
    chunk_size: int | None,
    ray_init: dict[str, Any] | None,
    on_row: Callable[[Measurement], None] | None,
    start: float,
) -> SweepSummary:
    try:
        import ray
    except ImportError as exc:
        raise ValueError(
            f"executor 'ray' needs Ray ({exc}): install the ray extra, `pip install nasfilter[ray]`"
        ) from exc

    spec = backend.spec() if isinstance(backend, Backend) else backend
    BACKENDS.factory(spec.name)  # an unknown name fails here, before Ray starts
    size = check_positive_int(
        chunk_size or (4096 if spec.name in ("roofline", "calibrated") else 4), "chunk_size"
    )
    started = _ray_start(ray, ray_init)
    try:
        options = {"num_cpus": 1, "num_gpus": 1 if uses_gpu(spec.name) else 0}
        describe = ray.remote(describe_backend).options(**options)
        config, fingerprint = ray.get(describe.remote(_spec_dict(spec)))
        group = Group.make(ds.name, spec.name, config, fingerprint)
        cached = np.isin(order, cache.cached_indices(group))
        todo = order[~cached].tolist()
        task = ray.remote(measure_chunk).options(**options)
        pending = [
            task.remote(_spec_dict(spec), todo[i : i + size], ds.name)
            for i in range(0, len(todo), size)
        ]
        writer = _Writer(cache, 1 << 30)  # flushed by hand, once per chunk
        bar = _progress(len(todo), f"{spec.name} (ray)", progress)
        _ray_collect(ray, pending, writer, bar, on_row)
    finally:
        if started:
            ray.shutdown()
    return _summary(
        spec.name, ds, "ray", group, cache, len(order), int(cached.sum()), writer, start
    )


def _ray_start(ray: Any, ray_init: dict[str, Any] | None) -> bool:
    """Start or join Ray unless it is running; True when this call started it."""
    if ray.is_initialized():
        return False
    address = (ray_init or {}).get("address")
    if isinstance(address, str):
        probe_ray_address(address)
    try:
        ray.init(**{"include_dashboard": False, "log_to_driver": False, **(ray_init or {})})
    except ConnectionError as exc:  # "auto" with no cluster running, say
        raise ConnectionError(f"cannot connect to the Ray cluster at {address!r}: {exc}") from exc
    return True


def _ray_collect(
    ray: Any,
    pending: list[Any],
    writer: _Writer,
    bar: Any,
    on_row: Callable[[Measurement], None] | None,
) -> None:
    """Write each chunk's rows as it arrives (one flush per chunk); cancel what is left on
    an error or an interrupt."""
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                rows = [Measurement.from_dict(d) for d in ray.get(ref)]
                for m in rows:
                    writer.add(m)
                    if on_row is not None:
                        on_row(m)
                writer.flush()
                bar.update(len(rows))
    finally:
        bar.close()
        for ref in pending:
            ray.cancel(ref)


def export_table(
    cache: MeasurementCache, group: Group, path: str | Path, extra: dict[str, Any] | None = None
) -> Path:
    """Write every ok row of ``group`` to a measurement table file (.npz) for the simulator."""
    return save_table(build_table(list(cache.rows(group)), extra), path)
