"""``nasfilter profile``'s outputs: the printed report, ``layers.csv``, ``profile.json`` and
the roofline figure (``roofline.png``/``.svg``)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.files import atomic_write
from nasfilter.oracle.calibrated import DEFAULT_CALIBRATION
from nasfilter.oracle.gpumodel import BYTES_PER_ELEMENT
from nasfilter.render.drawing import save_figure
from nasfilter.survey.breakdown import PARTS
from nasfilter.survey.profile import Profile
from nasfilter.survey.profile_plot import roofline_figure

OUTPUTS = ("layers.csv", "profile.json", "roofline.png", "roofline.svg")
COLUMNS = (
    "index", "name", "kind", "gemm_m", "gemm_n", "gemm_k", "groups", "flops", "bytes",
    "intensity", "above_cmr", "seconds", "share", "bound", "tile_efficiency",
    "wave_efficiency", *(f"{p.replace(' ', '_').replace('-', '_')}_seconds" for p in PARTS),
)  # fmt: skip


def layer_rows(prof: Profile) -> list[dict[str, Any]]:
    """One dict per layer (:data:`COLUMNS`): shape (GEMM M per image, N, K, groups), FLOPs
    and bytes for the batch, FLOP/byte, seconds for the batch, share of the model's time,
    bound, tile and wave efficiency, and each part's seconds."""
    t, layers, b = prof.table, prof.layers, prof.batch
    flops, moved = t.flops(b)[0], t.bytes(b, BYTES_PER_ELEMENT)[0]
    intensity = t.intensity(b, BYTES_PER_ELEMENT)[0]
    total = float(layers.seconds.sum())
    bound = layers.bound
    rows = []
    for i, name in enumerate(t.names):
        row: dict[str, Any] = {
            "index": i,
            "name": name,
            "kind": t.kinds[i],
            "gemm_m": float(t.gemm_m[0, i]),
            "gemm_n": float(t.gemm_n[0, i]),
            "gemm_k": float(t.gemm_k[0, i]),
            "groups": float(t.groups[0, i]),
            "flops": float(flops[i]),
            "bytes": float(moved[i]),
            "intensity": float(intensity[i]),
            "above_cmr": bool(intensity[i] >= prof.cmr),
            "seconds": float(layers.seconds[i]),
            "share": float(layers.seconds[i]) / total,
            "bound": bound[i],
            "tile_efficiency": float(layers.tile_efficiency[i]),
            "wave_efficiency": float(layers.wave_efficiency[i]),
        }
        for part, column in zip(PARTS, COLUMNS[-len(PARTS) :], strict=True):
            row[column] = float(layers.parts[part][i])
        rows.append(row)
    return rows


def shares_by(prof: Profile, key: str) -> dict[str, float]:
    """Share of the model's time per ``key`` ("bound" or "kind"), largest first."""
    out: dict[str, float] = {}
    for row in layer_rows(prof):
        out[row[key]] = out.get(row[key], 0.0) + row["share"]
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def summary(prof: Profile) -> dict[str, Any]:
    """``profile.json`` without its layers: the setting, the whole-model figures, the time
    by bound and by kind, and the what-ifs."""
    cal = prof.calibration
    return {
        "model": prof.model,
        "input_shape": list(prof.input_shape),
        "device": prof.device.to_dict(),
        "layout": prof.layout,
        "engine": prof.engine,
        "batch": prof.batch,
        "calibration": {
            "fitted_on": cal.fitted_on,
            "path": cal.path,
            "shipped": cal.path is not None and Path(cal.path) == DEFAULT_CALIBRATION,
        },
        "predicted": True,
        "throughput": prof.throughput,
        "utilization": prof.utilization,
        "seconds_per_batch": float(prof.layers.seconds.sum()),
        "flops_per_image": prof.flops_per_image,
        "params": prof.analysis.params,
        "arithmetic_intensity": prof.arithmetic_intensity,
        "cmr": prof.cmr,
        "n_layers": prof.table.n_layers,
        "time_by_bound": shares_by(prof, "bound"),
        "time_by_kind": shares_by(prof, "kind"),
        "what_ifs": [
            {**w.__dict__, "speedup": w.throughput / prof.throughput} for w in prof.what_ifs
        ],
    }


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.8g}"
    return str(value)


def write_profile(prof: Profile, out: Path, figure: bool = True) -> list[Path]:
    """Write ``layers.csv``, ``profile.json`` and (``figure``) the roofline into ``out``."""
    rows = layer_rows(prof)
    with atomic_write(out / "layers.csv", "w") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows([_cell(r[c]) for c in COLUMNS] for r in rows)
    with atomic_write(out / "profile.json", "w") as fh:
        json.dump(_json_safe({**summary(prof), "layers": rows}), fh, indent=2, allow_nan=False)
        fh.write("\n")
    written = [out / "layers.csv", out / "profile.json"]
    if figure:
        files = save_figure(roofline_figure(prof), out, "roofline")
        written += [files.png, files.svg]
    return written


def report(prof: Profile, top: int = 15) -> str:
    """The printed report: the setting, the ``top`` layers by time, time by bound, what-ifs."""
    lines = [
        f"{prof.model} {'x'.join(map(str, prof.input_shape))} on {prof.device.name}, "
        f"{prof.layout}, {prof.engine} engine, batch {prof.batch} (predicted; fit: "
        f"{prof.calibration.fitted_on})",
        f"throughput {prof.throughput:,.0f} images/s, utilization "
        f"{100 * prof.utilization:.1f} %, intensity {prof.arithmetic_intensity:.0f} FLOP/B "
        f"vs CMR {prof.cmr:.0f}, {prof.table.n_layers} layers",
        "",
        f"{'layer':<34} {'kind':<12} {'M/image x N x K':>20} {'GFLOP':>8} {'MB':>8} "
        f"{'FLOP/B':>7} {'time %':>6} {'bound':<18} {'tile':>5} {'wave':>5}",
    ]
    rows = sorted(layer_rows(prof), key=lambda r: -r["seconds"])
    for r in rows[:top]:
        shape = f"{r['gemm_m']:.0f}x{r['gemm_n']:.0f}x{r['gemm_k']:.0f}"
        if r["groups"] > 1:
            shape += f"/{r['groups']:.0f}"
        if r["kind"] == "memory":
            shape = "-"
        lines.append(
            f"{r['name'][-34:]:<34} {r['kind']:<12} {shape:>20} {r['flops'] / 1e9:8.2f} "
            f"{r['bytes'] / 1e6:8.1f} {r['intensity']:7.0f} {100 * r['share']:6.1f} "
            f"{r['bound']:<18} {_eff(r['tile_efficiency'])} {_eff(r['wave_efficiency'])}"
        )
    if len(rows) > top:
        rest = sum(r["share"] for r in rows[top:])
        lines.append(f"... {len(rows) - top} more layers, {100 * rest:.1f} % of the time")
    by_bound = shares_by(prof, "bound").items()
    listed = ", ".join(f"{k} {100 * v:.1f} %" for k, v in by_bound if v >= 0.0005)
    lines += ["", f"time by bound: {listed}"]
    lines += ["", f"{'what if':<16} {'setting':<48} {'images/s':>10} {'util %':>7} {'x':>6}"]
    for w in prof.what_ifs:
        if w.error:
            lines.append(f"{w.name:<16} {w.setting:<48} not predicted: {w.error[:80]}")
            continue
        lines.append(
            f"{w.name:<16} {w.setting:<48} {w.throughput:10,.0f} {100 * w.utilization:7.1f} "
            f"{w.throughput / prof.throughput:6.2f}"
        )
    return "\n".join(lines)


def _eff(value: float) -> str:
    return "    -" if not np.isfinite(value) else f"{value:5.2f}"
