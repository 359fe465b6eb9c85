"""`nasfilter show`: one record, from a named or a converted table, with the oracle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nasfilter.bench.convert import convert_archive
from nasfilter.bench.costs import network_costs
from nasfilter.bench.lookup import load_table
from nasfilter.cli import main
from nasfilter.oracle import proxy_table
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE
KEYS = {
    "index",
    "channels",
    "dataset",
    "macs",
    "flops",
    "params",
    "valid_acc_hp12",
    "test_acc_hp90",
    "train_seconds_per_epoch",
    "valid_seconds_per_epoch",
    "latency",
    "synthetic",
    "source",
    "utilization",
    "throughput",
    "oracle",
}


def show_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["show", *argv, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_embedded_record_is_labelled_synthetic(capsys: pytest.CaptureFixture[str]) -> None:
    rec = show_json(capsys, "8:8:40:32:40", "--table", "synthetic")
    assert KEYS <= set(rec)
    assert rec["index"] == 284 and rec["synthetic"] is True
    assert rec["macs"] == network_costs("cifar10").macs[284]
    cal = proxy_table("calibrated", "v100", "cifar10")  # the default oracle
    assert rec["throughput"] == cal.throughput[284] and rec["utilization"] == cal.utilization[284]
    assert str(rec["oracle"]).startswith("calibrated v100") and "fit:" in str(rec["oracle"])
    rec = show_json(capsys, "8:8:40:32:40", "--oracle", "roofline", "--table", "synthetic")
    roof = proxy_table("roofline", "v100", "cifar10")
    assert rec["throughput"] == roof.throughput[284] and rec["utilization"] == roof.utilization[284]
    assert str(rec["oracle"]).startswith("roofline v100")
    assert main(["show", "284", "--table", "SYNTHETIC"]) == 0
    assert "SYNTHETIC" in capsys.readouterr().out


def test_default_record_is_the_real_validation_accuracy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`nasfilter show 284` prints NATS-Bench's own hp-90 validation accuracy of 8:8:40:32:40,
    read here through the real nats_bench API from the official fixture."""
    import nats_bench

    api = nats_bench.create(str(FIXTURE), "sss", fast_mode=True, verbose=False)
    info = api.get_more_info(284, "cifar10-valid", hp="90", is_random=777)
    rec = show_json(capsys, "8:8:40:32:40")
    assert rec["synthetic"] is False and rec["seeds"] == [777]
    assert rec["observed_acc"] == [info["valid-accuracy"]]
    assert rec["score_acc"] == info["valid-accuracy"]
    assert "test_acc_hp90" not in rec and "valid_acc_hp12" not in rec  # neither is held
    assert main(["show", "284"]) == 0
    out = capsys.readouterr().out
    assert "valid@90  86.80 (seed 777)" in out
    assert "real      the accuracies: NATS-Bench's hp-90 validation accuracy" in out
    assert "modelled  the times" in out and "SYNTHETIC" not in out


def test_converted_real_record_matches_the_nats_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import nats_bench

    path = convert_archive(FIXTURE, "cifar10", allow_partial=True, progress=False).save(
        tmp_path / "c10.npz"
    )
    rec = show_json(capsys, "8:8:40:32:40", "--table", str(path))
    api = nats_bench.create(str(FIXTURE), "sss", fast_mode=True, verbose=False)
    assert rec["synthetic"] is False
    assert (
        rec["test_acc_hp90"]
        == api.get_more_info(284, "cifar10", hp="90", is_random=False)["test-accuracy"]
    )
    assert rec["macs"] == api.get_cost_info(284, "cifar10")["flops"]
    assert load_table(path).record(284)["valid_acc_hp12"] == rec["valid_acc_hp12"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["8:8:8:8:12"], "one of (8, 16"),
        (["40000"], "[0, 32767]"),
        (["0", "--dataset", "mnist"], "unknown dataset 'mnist'"),
        (["0", "--oracle", "foo"], "known backends: calibrated, onnxruntime, roofline"),
        (["0", "--device", "x100"], "known devices: v100"),
        (["0", "--table", "absent.npz"], "does not exist"),
    ],
)
def test_bad_input_exits_2_with_a_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", *argv]) == 2
    assert message in capsys.readouterr().err


def test_missing_row_of_a_partial_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = convert_archive(FIXTURE, "cifar10", allow_partial=True, progress=False).save(
        tmp_path / "c10.npz"
    )
    assert main(["show", "1234", "--table", str(path)]) == 2
    assert "missing from the partial table" in capsys.readouterr().err


@pytest.mark.subprocess
def test_a_closed_pipe_ends_quietly() -> None:
    """A reader that went away (`nasfilter show 0 | head -1`) gets no traceback, exit 0."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import nasfilter.cli.show as show\n"
        "def closed(args):\n"
        "    raise BrokenPipeError(32, 'Broken pipe')\n"
        "show.run = closed\n"
        "from nasfilter.cli import main\n"
        "sys.exit(main(['show', '0']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parent.parent.parent,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
