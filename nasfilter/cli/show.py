"""``nasfilter show ARCH``: print one architecture's record from a table."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict
from typing import Any

from nasfilter.bench.lookup import load_table
from nasfilter.bench.spaces import get_space
from nasfilter.bench.tss_data import SEEDS, load_tss_arrays, seed_record_params_mismatch
from nasfilter.cli.args import ORACLE_FLAGS, add_inputs, apply_space, naming
from nasfilter.oracle import proxy_table
from nasfilter.sim.inputs_check import check_proxy_suits


def register(sub: Any) -> None:
    p = sub.add_parser(
        "show",
        help="print one architecture's record",
        description="Print one architecture's benchmark record. Without --table, the real table "
        "(NATS-Bench's real hp-90 validation accuracies, seed 777, with modelled times) is "
        "used; --table synthetic picks the embedded surrogate.",
    )
    p.add_argument("arch", help="an index in [0, 32767] or channels such as 8:16:24:32:40")
    add_inputs(p, "oracle device (default v100)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _json_value(value: Any) -> Any:
    """``value`` with NaN and infinities (an absent seed's run, say) as None: strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def add_tss_detail(rec: dict[str, Any], table: Any) -> None:
    """Add a tss record's real per-seed hp-200 values (raw, with NATS-Bench's issue #36 flags)."""

    arrays = load_tss_arrays(table.dataset.name)
    index = rec["index"]
    rec["hp200_seeds"] = list(SEEDS)
    rec["hp200_valid_acc_per_seed"] = [float(x) for x in arrays.hp200_valid_acc[index]]
    rec["hp200_seed_record_flagged"] = [bool(x) for x in seed_record_params_mismatch()[index]]
    rec["hp200_train_time_s"] = float(arrays.hp200_train_time_s[index])
    rec["record"] = arrays.record
    rec["real"] = (
        "real (NATS-Bench): hp200_valid_acc_per_seed (x-valid after 200 epochs), "
        "hp200_train_time_s (sum of 200 measured epochs), observed_acc, score_acc; "
        "modelled: valid_seconds_per_epoch (one validation pass)"
    )


def run(args: argparse.Namespace) -> int:

    apply_space(args)
    with naming("ARCH"):
        index = get_space(args.space).index_of(args.arch)
    with naming("--table"):
        table = load_table(args.table, args.dataset)
    rec = table.record(index)
    with naming(ORACLE_FLAGS):
        proxy = proxy_table(args.oracle, args.device, table.dataset, args.oracle_cache)
        check_proxy_suits(
            table, proxy, who=f"the proxy of --oracle {args.oracle}",
            remedy=f"use an oracle of the {table.space.name} space",
        )  # fmt: skip
    measured = bool(proxy.measured[index])
    if table.space.name == "tss":
        add_tss_detail(rec, table)
    rec["oracle"] = proxy.label
    rec["utilization"] = float(proxy.utilization[index]) if measured else None
    rec["throughput"] = float(proxy.throughput[index]) if measured else None
    rec["provenance"] = asdict(table.provenance)  # path, checksum, nats_bench version, ...
    if args.json:
        print(json.dumps({key: _json_value(v) for key, v in rec.items()}, allow_nan=False))
        return 0
    _print_record(rec, table, proxy, measured)
    return 0


def _print_record(rec: dict[str, Any], table: Any, proxy: Any, measured: bool) -> None:
    """The record as text: the table, the architecture, its costs, accuracies and oracle."""
    seeds = ", ".join(
        f"{a:.2f} (seed {s})" for a, s in zip(rec["observed_acc"], rec["seeds"], strict=True)
    )
    print(f"table     {table.label}")
    prov = table.provenance
    if prov.real or prov.modelled:  # a table that mixes real and modelled numbers
        print(f"real      {prov.extra.get('real_detail', prov.real) or 'nothing'}")
        print(f"modelled  {prov.extra.get('modelled_detail', prov.modelled) or 'nothing'}")
        print(f"source    {prov.source} (sha256 {(prov.checksum or '?')[:12]})")
    elif prov.checksum:  # a converted archive: say exactly which one
        print(
            f"source    {prov.source} (sha256 {prov.checksum[:12]}, nats_bench "
            f"{prov.nats_bench_version or '?'}, converted {prov.created or '?'})"
        )
    print(f"arch      {rec.get('channels', rec.get('arch'))}  (index {rec['index']})")
    if "hp200_valid_acc_per_seed" in rec:
        per_seed = ", ".join(
            f"{a:.3f} (seed {s})" if a == a else f"- (seed {s})"
            for a, s in zip(rec["hp200_valid_acc_per_seed"], rec["hp200_seeds"], strict=True)
        )
        print(f"real      hp-200 x-valid accuracy per seed: {per_seed}")
        print(f"real      hp-200 training time {rec['hp200_train_time_s']:.3f} s (200 epochs)")
    print(
        f"cost      {rec['macs']:.6f} MMACs, {rec['flops'] / 1e6:.3f} MFLOPs, "
        f"{rec['params']:.6f} M params"
    )
    print(f"{prov.observed:<9} {seeds}")
    if prov.scored == prov.observed:
        print(f"scored on {prov.scored} (the true front and every metric use it)")
    else:
        print(f"{prov.scored:<9} {rec['score_acc']:.2f} %")
    print(
        f"{'time' if not prov.modelled else 'time (m)':<9} "
        f"{rec['train_seconds_per_epoch']:.3f} s/epoch train, "
        f"{rec['valid_seconds_per_epoch']:.3f} s/epoch valid, latency {rec['latency']:.5f} s"
    )
    if measured:
        print(
            f"oracle    {proxy.label}: utilization {rec['utilization']:.4f}, "
            f"throughput {rec['throughput']:.0f} images/s"
        )
    else:
        print(f"oracle    {proxy.label}: not measured for this architecture")
