"""The cells held out: no fit sees what it predicts, by GPU and by generation, staged and joint."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from nasfilter.cli import main
from nasfilter.oracle import cells_validation, joint_validation
from nasfilter.oracle.cells import HELP_DEVICES, HELP_GENERATIONS
from nasfilter.oracle.devices import DEVICES


def test_the_generations_are_the_data_sheets() -> None:
    """Each cell GPU's generation, against its built-in device's data-sheet description."""
    assert sorted(g for gpus in HELP_GENERATIONS.values() for g in gpus) == sorted(HELP_DEVICES)
    for generation, gpus in HELP_GENERATIONS.items():
        for gpu in gpus:
            assert generation in DEVICES[HELP_DEVICES[gpu]].description, gpu


class _Numbered(int):
    """A fit's number standing in for its figures."""

    def to_dict(self) -> dict[str, float]:
        return {}


def _recording(
    monkeypatch: pytest.MonkeyPatch, module: Any, fit_name: str, rows_name: str, joint: bool
) -> list[Any]:
    """Replace ``module``'s fit with one that records what it was fitted on and returns the
    fit's number (as a joint fit's ``params`` when ``joint``), and its rows with (number,
    gpu, split): which fit each prediction was made from."""
    fitted: list[Any] = []

    def fit(*args: Any) -> Any:
        fitted.append(args)
        number = _Numbered(len(fitted) - 1)
        return SimpleNamespace(params=number, rms_log_error={}) if joint else number

    monkeypatch.setattr(module, fit_name, fit)
    monkeypatch.setattr(module, rows_name, lambda p, gpu, split: [(p, gpu, split)])
    return fitted


def test_each_generation_is_predicted_from_the_other_generation_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fitted = _recording(monkeypatch, cells_validation, "fit_cells", "_rows", joint=False)
    rows = cells_validation.leave_one_generation_out()
    assert sorted(gpu for _, gpu, _ in rows) == sorted(HELP_DEVICES)
    for fit_index, gpu, split in rows:
        on = fitted[fit_index][1]
        generation = next(k for k, v in HELP_GENERATIONS.items() if gpu in v)
        assert split == f"leave-one-generation-out ({generation})"
        assert set(on) == set(HELP_DEVICES) - set(HELP_GENERATIONS[generation]), (gpu, on)
    assert len(fitted) == len(HELP_GENERATIONS)  # one fit per generation, not per GPU


def test_the_joint_fit_holds_out_each_gpu_and_each_generation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every joint fit of a cell split is fitted without the cells it predicts; a generation
    of one GPU reuses that GPU's fit rather than fitting again."""
    fitted = _recording(monkeypatch, joint_validation, "fit_joint", "cell_rows", joint=True)
    monkeypatch.setattr(joint_validation, "shipped_samples", lambda d, t: SimpleNamespace(
        device=SimpleNamespace(name=d)))  # fmt: skip
    monkeypatch.setattr(joint_validation, "evaluate", lambda held, params: {})
    monkeypatch.setattr(joint_validation, "load_calibration",
                        lambda: SimpleNamespace(params=SimpleNamespace()))  # fmt: skip
    monkeypatch.setattr(joint_validation, "timm_only_params", lambda p: -1)
    monkeypatch.setattr(joint_validation, "cell_measurements",
                        lambda: [(d, b, None) for d in HELP_DEVICES.values() for b in (1, 256)])
    out = joint_validation.validate_joint(tables=None)
    held = [r for r in out["cells"] if r[2] != "timm only -> cells"]
    splits = {s for *_, s in held}
    assert splits == {"leave-one-GPU-out (joint)"} | {
        f"leave-one-generation-out ({g}, joint)" for g in HELP_GENERATIONS
    }
    for fit_index, gpu, split in held:
        timm, cells = fitted[fit_index]
        assert len(timm) == 2, split  # both timm GPUs in every cell split
        seen = {d for d, _, _ in cells}
        assert HELP_DEVICES[gpu] not in seen, (gpu, split)
        if "generation" in split:
            generation = split.split("(")[1].split(",")[0]
            assert seen == {HELP_DEVICES[g] for g in HELP_DEVICES} - {
                HELP_DEVICES[g] for g in HELP_GENERATIONS[generation]
            }
    # two timm GPUs out, four cell GPUs out, Pascal out (Turing is the RTX 2080 Ti's fit),
    # cells only, everything
    assert len(fitted) == 2 + 4 + 1 + 1 + 1


@pytest.mark.parametrize(
    ("split", "batch", "mdape", "rho", "expected"),
    [
        ("leave-one-generation-out (Pascal)", 32, 14.9, 0.5, True),
        ("leave-one-generation-out (Pascal)", 256, 15.1, 0.99, False),
        ("leave-one-generation-out (Turing, joint)", 1, 9.0, 0.9, True),
        ("leave-one-GPU-out", 32, 30.0, 0.5, None),
        ("leave-one-GPU-out", 256, 11.9, 0.951, True),
        ("leave-one-GPU-out (joint)", 256, 11.9, 0.949, False),
        ("leave-one-GPU-out", 1, 20.1, 0.99, False),
    ],
)
def test_each_split_is_held_to_its_own_goal(
    split: str, batch: int, mdape: float, rho: float, expected: bool | None
) -> None:
    record = {"split": split, "batch": batch,
              "calibrated": {"mdape_percent": mdape, "spearman": rho}}  # fmt: skip
    assert cells_validation.meets_goal(record) is expected


def test_validate_prints_every_cell_split_on_the_shipped_data(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The real fits (seconds): the Turing generation's records are the RTX 2080 Ti's
    leave-one-GPU-out records (the same fit reached two ways), and every held-out split beats
    the plain roofline by far at batch 1, where launches dominate."""
    assert main(["calibrate", "--validate", "--cells-only", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["timm"] == []
    by_split: dict[str, list[dict[str, Any]]] = {}
    for rec in out["cells"]:
        by_split.setdefault(rec["split"], []).append(rec)
    assert {k: len(v) for k, v in by_split.items()} == {
        "leave-one-GPU-out": 12,
        "leave-one-generation-out (Pascal)": 9,
        "leave-one-generation-out (Turing)": 3,
        "timm only -> cells": 12,
    }
    logo = {r["batch"]: r["calibrated"] for r in by_split["leave-one-GPU-out"]
            if r["device"] == "rtx2080ti"}  # fmt: skip
    for rec in by_split["leave-one-generation-out (Turing)"]:
        assert rec["calibrated"] == logo[rec["batch"]]
    for rec in out["cells"]:
        if rec["batch"] == 1 and rec["split"] != "timm only -> cells":
            assert rec["calibrated"]["mdape_percent"] < rec["roofline"]["mdape_percent"] / 10
    # the same splits with the held-out machine's host figure: 1 and 5 networks, each batch
    host = out["cells_measured_host"]
    assert len(host) == (4 + 4) * 2 * 3
    for rec in host:
        same = next(r for r in out["cells"] if (r["split"], r["device"], r["batch"])
                    == (rec["split"], rec["device"], rec["batch"]))  # fmt: skip
        assert rec["without"] == same["calibrated"]
