"""Every figure that docs/surrogate.md, docs/oracle.md and docs/concepts.md quote about the
surrogate, the roofline and the shipped CPU sample is recomputed here from the code, so a doc
that drifts from the code fails. (Speed figures are machine-dependent: `make bench` prints
them.) Real NATS-Bench figures quoted beside them are checked in tests/bench/test_surrogate.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

from nasfilter.bench.costs import network_costs
from nasfilter.bench.spaces.sss import N_ARCHS
from nasfilter.bench.surrogate import (
    CALIBRATIONS,
    LAYER_WEIGHTS,
    TRAIN_SECONDS_PER_IMAGE_MMAC,
    build_table,
    smooth_test_acc,
    smooth_valid_acc,
)
from nasfilter.bench.table import BenchmarkTable
from nasfilter.oracle.devices import DEVICES
from nasfilter.oracle.proxies import load_sample, sample_path
from nasfilter.oracle.roofline import roofline
from nasfilter.oracle.sweep import corner_indices, pareto_count
from nasfilter.sim.problem import DEFAULT_PROXY_COST

DOCS = Path(__file__).parent.resolve().parent.parent / "docs"
DATASETS = ("cifar10", "cifar100", "ImageNet16-120")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in _NUMBER.findall(text)]


def _cells(doc: str, label: str, section: str | None = None) -> list[str]:
    """The cells after the first column of the table row ``| label | ...`` (in ``section``)."""
    text = (DOCS / doc).read_text("utf-8")
    if section is not None:
        text = text[text.index(section) :]
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and cells[0] == label:
            return cells[1:]
    raise AssertionError(f"no row {label!r} in docs/{doc}")


def _close(quoted: list[float], computed: list[float], decimals: int) -> None:
    assert len(quoted) == len(computed), (quoted, computed)
    for q, c in zip(quoted, computed, strict=True):
        assert q == pytest.approx(round(c, decimals), abs=0.51 * 10**-decimals), (quoted, computed)


# ---- docs/surrogate.md ------------------------------------------------------------------


@pytest.fixture(scope="module")
def tables() -> dict[str, BenchmarkTable]:
    return {ds: build_table(ds) for ds in DATASETS}


def test_surrogate_cifar10_calibration_rows(tables: dict[str, BenchmarkTable]) -> None:
    t = tables["cifar10"]
    st, sv = smooth_test_acc("cifar10"), smooth_valid_acc("cifar10")
    section = "**CIFAR-10**"
    for i in (0, 11, 284, 1234):
        _, smooth, table = _cells("surrogate.md", f"{i}: test@90", section)
        _close(_numbers(smooth) + _numbers(table), [st[i], t.test_acc[i]], 2)
    for i in (0, 11, 284):
        _, smooth, table = _cells("surrogate.md", f"{i}: valid@12 seeds", section)
        _close(_numbers(smooth), [sv[i]], 2)
        _close(_numbers(table), list(t.valid_acc[i]), 2)
    _, smooth, table = _cells("surrogate.md", "1234: valid@12 mean", section)
    _close(_numbers(smooth) + _numbers(table), [sv[1234], t.valid_acc[1234].mean()], 2)
    mean = _cells("surrogate.md", "mean test@90, all 32768", section)
    _close(_numbers(mean[1]) + _numbers(mean[2]), [st.mean(), t.test_acc.mean()], 3)
    rows = {
        "train s/epoch 0 / 11 / 284": (t.train_time, [0, 11, 284], 3),
        "train s/epoch 1234 / 12": (t.train_time, [1234, 12], 3),
        "valid s/epoch 0 / 11 / 284": (t.valid_time, [0, 11, 284], 3),
        "latency 0 / 11 / 284 / 12": (t.latency, [0, 11, 284, 12], 5),
    }
    for label, (column, idx, decimals) in rows.items():
        _close(_numbers(_cells("surrogate.md", label, section)[-1]), list(column[idx]), decimals)


@pytest.mark.parametrize(
    ("dataset", "section"),
    [("cifar100", "**CIFAR-100**"), ("ImageNet16-120", "**ImageNet16-120**")],
)
def test_surrogate_other_dataset_rows(
    tables: dict[str, BenchmarkTable], dataset: str, section: str
) -> None:
    t = tables[dataset]
    idx = [0, 11, 284]
    _, smooth, table = _cells("surrogate.md", "test@90 0 / 11 / 284", section)
    _close(_numbers(smooth), list(smooth_test_acc(dataset)[idx]), 2)
    _close(_numbers(table), list(t.test_acc[idx]), 2)
    _, smooth, table = _cells("surrogate.md", "valid@12 mean 0 / 11 / 284", section)
    _close(_numbers(smooth), list(smooth_valid_acc(dataset)[idx]), 2)
    _close(_numbers(table), list(t.valid_acc[idx].mean(axis=1)), 2)
    for label, column, decimals in (
        ("train s/epoch", t.train_time, 3),
        ("valid s/epoch", t.valid_time, 3),
        ("latency", t.latency, 5),
    ):
        _close(_numbers(_cells("surrogate.md", label, section)[-1]), list(column[idx]), decimals)


def test_surrogate_pooled_seed_sd(tables: dict[str, BenchmarkTable]) -> None:
    for dataset, section in zip(
        DATASETS, ("**CIFAR-10**", "**CIFAR-100**", "**ImageNet16-120**"), strict=True
    ):
        valid = tables[dataset].valid_acc
        pooled = np.sqrt(np.var(valid, axis=1, ddof=1).mean())
        _close(
            _numbers(_cells("surrogate.md", "pooled seed sd of valid@12", section)[-1]), [pooled], 2
        )


def test_surrogate_whole_space_figures(tables: dict[str, BenchmarkTable]) -> None:
    section = "**Whole-space figures**"
    expected: dict[str, list[list[float]]] = {}
    for ds in DATASETS:
        t = tables[ds]
        test, valid = t.test_acc, t.valid_acc
        rows = {
            "test@90 mean / median / max": [test.mean(), np.median(test), test.max()],
            "Spearman (valid@12 seed mean, test@90)": [
                spearmanr(valid.mean(axis=1), test).statistic
            ],
            "Kendall tau (one seed's valid@12, test@90)": [kendalltau(valid[:, 0], test).statistic],
            "train s/epoch min / median / max": [
                t.train_time.min(),
                np.median(t.train_time),
                t.train_time.max(),
            ],
            "latency min / max (s)": [t.latency.min(), t.latency.max()],
            "median cost of one hp-12 evaluation (s)": [np.median(t.eval_cost)],
        }
        for label, values in rows.items():
            expected.setdefault(label, []).append(values)
    decimals = {
        "train s/epoch min / median / max": 1,
        "latency min / max (s)": 4,
        "median cost of one hp-12 evaluation (s)": 0,
    }
    for label, per_dataset in expected.items():
        cells = _cells("surrogate.md", label, section)
        for cell, values in zip(cells, per_dataset, strict=True):
            _close(_numbers(cell), values, decimals.get(label, 2))


def test_surrogate_model_prose(tables: dict[str, BenchmarkTable]) -> None:
    text = (DOCS / "surrogate.md").read_text("utf-8")
    weights = ", ".join(f"{w:.3f}" for w in LAYER_WEIGHTS)
    assert f"`a = {weights}`" in text
    smooth_best = smooth_test_acc("cifar10")[N_ARCHS - 1]
    assert f"({smooth_best:.1f} smooth on CIFAR-10)" in text
    means = [smooth_test_acc(ds).mean() for ds in DATASETS[1:]]
    assert f"their means ({means[0]:.1f} and {means[1]:.1f})" in text
    t = tables["cifar10"]
    cal = CALIBRATIONS["cifar10"]
    macs = network_costs("cifar10").macs[N_ARCHS - 1]
    smooth_train = cal.train_base + TRAIN_SECONDS_PER_IMAGE_MMAC * cal.train_images * macs
    table_train = t.train_time[N_ARCHS - 1]
    assert f"({smooth_train:.1f} s per epoch for" in text
    assert f"model, {table_train:.1f} s in the table)" in text


# ---- docs/oracle.md ---------------------------------------------------------------------


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_roofline_table_rows(device: str) -> None:
    thr, util, fronts = _cells("oracle.md", device.upper(), "What it predicts")
    res = roofline(device, "cifar10")
    # Drop the channel strings' numbers; a Pascal card's FP16 roofline rounds to 0 images/s.
    quoted = [x for x in _numbers(thr) if x >= 1000 or x == 0]
    _close(quoted, [round(res.throughput.min(), -3), round(res.throughput.max(), -3)], 0)
    _close(_numbers(util), [res.utilization.min(), res.utilization.max()], 2)
    counts = [
        pareto_count(r.throughput, r.utilization) for r in (roofline(device, ds) for ds in DATASETS)
    ]
    assert _numbers(fronts) == counts


def test_roofline_prose_figures() -> None:
    text = (DOCS / "oracle.md").read_text("utf-8")
    cmrs = ", ".join(f"{name.upper()} {DEVICES[name].cmr('spec'):.0f}" for name in DEVICES)
    assert f'`DeviceSpec.cmr("spec")`: {cmrs})' in text.replace("\n", " ")
    res = roofline("v100", "cifar10")
    assert f"the model's CMR is {res.cmr:.0f}:" in text
    executed = np.isfinite(res.layer_intensity)
    share = res.compute_bound.sum() / executed.sum()
    assert share == pytest.approx(1 / 3, abs=0.02)  # "a third of all executed layers"
    assert not res.compute_bound[0].any()  # "none of 8:8:8:8:8's"
    front = pareto_count(res.throughput, res.utilization)
    assert f"the roofline's front on the V100 holds **{front}** of 32768" in text.replace("\n", " ")


def test_shipped_sample_figures() -> None:
    text = (DOCS / "oracle.md").read_text("utf-8").replace("\n", " ")
    s = load_sample()
    n = len(s)
    assert f"{n} CIFAR-10 architectures" in text and f"on the sample ({n} architectures)" in text
    assert np.isin(corner_indices(), s.arch).all() and n - 32 == 256
    assert f"({sample_path().stat().st_size / 1000:.0f} KB)" in text
    assert f"in {s.meta['wall_seconds'] / 60:.1f} minutes" in text
    assert f"(the peak: {max(s.meta['peak_rounds_flops']) / 1e9:.0f} GFLOP/s)" in text
    assert (
        f"is {np.median(s.cv) * 100:.1f} % (90th percentile {np.percentile(s.cv, 90) * 100:.1f} %)"
        in text
    )
    first, last = np.searchsorted(s.arch, [0, N_ARCHS - 1])
    assert s.arch[first] == 0 and s.arch[last] == N_ARCHS - 1
    assert f"8:8:8:8:8 runs at {round(s.throughput[first], -2):,.0f} images/s" in text
    assert (
        f"64:64:64:64:64 at {round(s.throughput[last], -1):.0f}, at {s.utilization[last]:.2f}"
        in text
    )
    above, top = int((s.utilization > 1).sum()), s.utilization.max()
    assert f"{above} of the {n} rows come out slightly above 1 (at most {top:.2f})" in text
    rows = {
        "Spearman, roofline V100 throughput vs measured CPU throughput": (
            roofline("v100").throughput[s.arch],
            s.throughput,
            3,
        ),
        "Spearman, roofline H200 throughput vs measured": (
            roofline("h200").throughput[s.arch],
            s.throughput,
            3,
        ),
        "Spearman, minus MACs vs measured (baseline)": (
            -network_costs("cifar10").macs[s.arch],
            s.throughput,
            3,
        ),
        "Spearman, roofline V100 utilization vs measured CPU utilization": (
            roofline("v100").utilization[s.arch],
            s.utilization,
            2,
        ),
    }
    for label, (predicted, measured, decimals) in rows.items():
        (cell,) = _cells("oracle.md", label)
        _close(_numbers(cell), [spearmanr(predicted, measured).statistic], decimals)


# ---- docs/concepts.md -------------------------------------------------------------------


def test_proxy_cost_arithmetic() -> None:
    text = (DOCS / "concepts.md").read_text("utf-8").replace("\n", " ")
    frontier = 144 * 100  # the study's frontier at about 100 s per evaluation (docs/facts.md §4)
    most = (110_000 - frontier) / N_ARCHS
    assert f"(110000 − {frontier}) / {N_ARCHS} ≈ {most:.1f} s" in text
    left = 110_000 - DEFAULT_PROXY_COST * N_ARCHS - frontier
    assert f"= {left:.0f} s)" in text and f"`DEFAULT_PROXY_COST` = {DEFAULT_PROXY_COST:g} s" in text
    assert 0.2 < left / 110_000 < 0.3  # "about a quarter"
