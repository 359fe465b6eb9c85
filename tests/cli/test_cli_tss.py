"""``--space tss`` on the command line: show equals nats_bench, runs work, other spaces refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.spaces import TSS
from nasfilter.cli import main
from nasfilter.oracle import proxy_table
from tests.tss_shared import REPO, nats_tss_api, shared_tss

ENV = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}


def _show(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["show", *argv, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_show_11_gives_nats_benchs_per_seed_hp200_accuracies_and_train_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rec = _show(capsys, "11", "--space", "tss", "--dataset", "cifar10")
    api = nats_tss_api()
    seeds, accs = rec["hp200_seeds"], rec["hp200_valid_acc_per_seed"]
    assert isinstance(seeds, list) and isinstance(accs, list)
    for seed, acc in zip(seeds, accs, strict=True):
        info = api.get_more_info(11, "cifar10-valid", hp="200", is_random=seed)
        assert acc == float(np.float32(info["valid-accuracy"]))
        assert rec["hp200_train_time_s"] == float(np.float32(info["train-all-time"]))
    assert rec["arch"] == api.arch(11) and rec["record"] == "cifar10-valid"
    assert "real" in str(rec["real"]) and "modelled" in str(rec["real"])
    assert rec["space"] == "tss" and str(rec["oracle"]).startswith("measured 2080ti batch 256")


def test_measured_oracle_is_batch_over_help_latency_and_fp32_utilization() -> None:
    ms = shared_tss("help_latency_ms_titanxp_1").astype(np.float64)
    proxy = proxy_table("measured[batch=1]", "titanxp", "cifar10")
    assert proxy.space is TSS
    np.testing.assert_allclose(proxy.throughput, 1.0 / (ms / 1000.0), rtol=1e-12)
    macs = shared_tss("cifar10_flops_M").astype(np.float64) * 1e6
    peak = 3840 * 2 * 1.582e9  # Titan Xp: CUDA cores x FMA x boost clock (NVIDIA data sheet)
    np.testing.assert_allclose(proxy.utilization, proxy.throughput * 2 * macs / peak, rtol=1e-3)
    default = proxy_table("measured", "2080ti", "cifar10")
    assert default.provenance["batch"] == 256 and "FP32" in default.provenance["precision"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--space", "tss", "--table", "real"], "--table real is a table of the sss space"),
        (["--table", "tss-real"], "--table tss-real is a table of the tss space, but --space"),
        (["--space", "tss", "--oracle", "calibrated"],
         "the proxy of --oracle calibrated is of the sss space"),
        (["--space", "tss", "--oracle", "measured", "--device", "v100"], "measured GPUs: 1080ti"),
        (["--space", "tss", "--oracle", "measured[batch=64]", "--device", "2080ti"],
         "batches: 1, 32, 256"),
    ],
)  # fmt: skip
def test_other_space_tables_and_oracles_and_unmeasured_devices_are_refused(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = subprocess.run(
        [sys.executable, "-m", "nasfilter", "show", "11", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert code.returncode != 0
    assert words in code.stderr + code.stdout


def test_show_refuses_a_tss_index_out_of_range() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "nasfilter", "show", "15625", "--space", "tss"],
        cwd=REPO, capture_output=True, text=True, env=ENV,
    )  # fmt: skip
    assert out.returncode != 0 and "must be in [0, 15624], got 15625" in out.stderr


def test_run_and_compare_on_tss(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    argv = ["run", "--space", "tss", "--dataset", "cifar100", "--oracle", "measured", "--device",
            "2080ti", "--searchers", "random", "--filters", "none,proxy-threshold", "--seeds",
            "0", "--budget", "20000", "--jobs", "1", "--db", str(db)]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["compare", "--db", str(db), "--space", "tss", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 and all(r["dataset"] == "cifar100" for r in rows)
    assert main(["compare", "--db", str(db), "--space", "sss"]) == 0
    assert "no runs on sss tables" in capsys.readouterr().out
