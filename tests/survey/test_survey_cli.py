"""`nasfilter survey`: every output on a few real timm models, and every bad input refused."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from nasfilter.bench.timm_data import read_benchmark, shipped_benchmark
from nasfilter.cli import main
from nasfilter.survey.output import OUTPUTS
from nasfilter.survey.survey import COLUMNS

MODELS = "resnet50,efficientnet_b0,mobilenetv3_large_100,tresnet_m,vit_base_patch16_224"


@pytest.fixture(scope="module")
def survey_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("survey")
    out = root / "out"
    code = main(
        [
            "survey", "--device", "rtx4090", "--measured",
            str(shipped_benchmark("rtx4090", "nchw")), "--models", MODELS,
            "--cache", str(root / "cache"), "--out", str(out), "--quiet",
        ]
    )  # fmt: skip
    assert code == 0
    return out


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "survey.csv").open() as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_writes_every_output(survey_dir: Path) -> None:
    for name in (*OUTPUTS, "fig1.png", "fig2a.png", "fig2b.png", "fig1.svg"):
        assert (survey_dir / name).stat().st_size > 0, name
    rows = _rows(survey_dir)
    assert tuple(rows[0]) == COLUMNS
    # resnet50 at 224 and 288 (published sizes), measured at 288 in the RTX 4090 file.
    r50 = {int(r["img_size"]): r for r in rows if r["model"] == "resnet50"}
    assert {224, 288} <= set(r50)
    row = r50[288]
    assert row["utilization_source"] == "measured"
    measured = {(m.model, m.img_size): m for m in read_benchmark(shipped_benchmark("rtx4090"))}
    m = measured[("resnet50", 288)]
    assert float(row["measured_throughput"]) == pytest.approx(m.throughput)
    assert int(row["batch"]) == m.batch
    # utilization = images/s x FLOPs per image / 165.2 TFLOP/s (docs/facts.md §7)
    assert float(row["utilization"]) == pytest.approx(
        m.throughput * 2 * float(row["macs"]) / 165.2e12, rel=1e-6
    )
    assert float(row["cmr"]) == pytest.approx(165.2 / 1.008, rel=1e-6)
    vit = [r for r in rows if r["model"] == "vit_base_patch16_224"]
    assert vit and all(r["is_cnn"] == "false" for r in vit)


@pytest.mark.slow
def test_summary_answers_the_studys_questions(survey_dir: Path) -> None:
    s = json.loads((survey_dir / "summary.json").read_text())
    rows = [r for r in _rows(survey_dir) if r["is_cnn"] == "true"]
    assert s["n_cnn_rows"] == len(rows)
    assert s["non_cnn_models"] == ["vit_base_patch16_224"]
    below = [r for r in rows if float(r["arithmetic_intensity"]) < float(r["cmr"])]
    assert s["n_cnn_below_cmr"] == len(below) == s["n_fold_candidates"]
    assert s["on_all_three_fronts"] == sorted(
        f"{r['model']}@{r['img_size']}" for r in rows if r["on_all_fronts"] == "true"
    )
    assert -1 <= s["spearman_utilization_top1"] <= 1
    # Fronts never mix measured and predicted throughputs.
    on_a_front = [r for r in rows if r["pareto_throughput_accuracy"] == "true"]
    assert on_a_front and all(r["utilization_source"] == "measured" for r in on_a_front)
    assert s["fronts_over"] == "measured CNN rows"
    folded = [r for r in below if r["folded_utilization"]]
    assert len(folded) == s["n_folded"] > 0
    for r in folded:  # intensity up, FLOPs per image about the same
        assert float(r["folded_arithmetic_intensity"]) > float(r["arithmetic_intensity"])
        assert float(r["folded_flops"]) == pytest.approx(float(r["flops"]), rel=0.1)


@pytest.mark.slow
def test_layers_csv_matches_the_rows(survey_dir: Path) -> None:
    with (survey_dir / "layers.csv").open() as fh:
        layers = list(csv.DictReader(fh))
    for row in _rows(survey_dir):
        mine = [
            x for x in layers if x["model"] == row["model"] and x["img_size"] == row["img_size"]
        ]
        assert sum(float(x["macs"]) for x in mine) == pytest.approx(float(row["macs"]), rel=1e-5)


@pytest.mark.slow
def test_report_has_the_survey_section(survey_dir: Path) -> None:
    html = (survey_dir / "report.html").read_text()
    assert "CNN survey" in html and html.count("<img") == 3


def _err(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    return capsys.readouterr().err


def test_bad_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["survey", "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c")]
    # An unknown model is listed back with close matches, named by its flag.
    err = _err(capsys, [*base, "--models", "resnet5O,resnet50"])
    assert "--models" in err and "'resnet5O' (close: resnet50" in err
    models_file = tmp_path / "models.txt"
    models_file.write_text("resnet50\nmobilenetv3_lage_100\n")
    err = _err(capsys, [*base, "--models-file", str(models_file)])
    assert "--models-file" in err
    assert "'mobilenetv3_lage_100' (close: mobilenetv3_large_100" in err
    # Parse-time flags: argparse names the flag and the value.
    err = _err(capsys, [*base, "--fold", "3"])
    assert "--fold" in err and "got 3" in err and "try 1 or 4" in err
    assert "--fold" in _err(capsys, [*base, "--fold", "four"])
    err = _err(capsys, [*base, "--device", "mygpu:abc:1"])
    assert "--device" in err and "mygpu:abc:1" in err
    # A device spec without the SM count the calibrated GPU model needs.
    err = _err(capsys, [*base, "--device", "mygpu:100:1"])
    assert "--device" in err and "sm_count" in err
    nomem = tmp_path / "nomem.json"
    nomem.write_text(
        json.dumps({"name": "x", "peak_tflops": 100, "bandwidth_tbs": 1, "sm_count": 80})
    )
    err = _err(capsys, [*base, "--models", "resnet50", "--device", str(nomem)])
    assert "--device" in err and "memory_bytes" in err
    err = _err(capsys, [*base, "--batch", "huge"])
    assert "--batch" in err and "'huge'" in err
    err = _err(capsys, [*base, "--layout", "nhcw"])
    assert "--layout" in err and "'nhcw'" in err
    assert "--jobs" in _err(capsys, [*base, "--jobs", "0"])
    # Measured CSVs in the wrong format, or missing.
    bad = tmp_path / "bad.csv"
    bad.write_text("model,img_size,top1\nresnet50,224,80\n")
    err = _err(capsys, [*base, "--models", "resnet50", "--measured", str(bad)])
    assert "--measured" in err and "missing column(s)" in err and "infer_samples_per_sec" in err
    bad.write_text(
        "model,infer_img_size,infer_samples_per_sec,infer_batch_size\nresnet50,224,fast,8\n"
    )
    err = _err(capsys, [*base, "--models", "resnet50", "--measured", str(bad)])
    assert "--measured" in err and "'fast'" in err
    err = _err(capsys, [*base, "--models", "resnet50", "--measured", str(tmp_path / "no.csv")])
    assert "--measured" in err and "does not exist" in err
    assert "no shipped measurements" in _err(capsys, [*base, "--measured", "shipped"])
    # Output folder: never overwritten without --force, never over an input, parent must exist.
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    err = _err(capsys, ["survey", "--out", str(full), "--models", "resnet18"])
    assert "--out" in err and "--force" in err and (full / "keep.txt").read_text() == "mine"
    err = _err(capsys, ["survey", "--out", str(tmp_path / "no" / "o"), "--models", "resnet18"])
    assert "--out" in err and "does not exist" in err and not (tmp_path / "no").exists()
    err = _err(capsys, ["survey", "--out", str(bad), "--models", "resnet18"])
    assert "--out" in err and "is a file" in err
    own = full / "survey.csv"
    own.write_text("model,infer_img_size,infer_samples_per_sec,infer_batch_size\n")
    err = _err(
        capsys,
        ["survey", "--out", str(full), "--force", "--models", "resnet18", "--measured", str(own)],
    )
    assert "--out" in err and "--measured" in err and "input" in err
    assert own.read_text().startswith("model,infer_img_size")
    assert not (tmp_path / "o").exists()  # nothing refused above created its output


def test_a_command_parses_as_with_every_command_registered(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """main() registers only the command it runs (the others' imports cost a cached survey
    about a second); its help and its errors are those of the full parser."""
    import subprocess
    import sys

    from nasfilter.cli import build_parser

    assert main(["survey", "--help"]) == 0
    alone = capsys.readouterr().out
    full = build_parser()
    assert full._subparsers is not None
    sub = next(a for a in full._subparsers._group_actions if a.choices)
    assert alone == sub.choices["survey"].format_help()
    script = "import sys; from nasfilter.cli import main; main(['survey', '--help'])\n"
    script += "print('nasfilter.searchers' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.stdout.splitlines()[-1] == "False"  # the other commands' imports not made
    assert main(["survey", "--jobs", "0"]) == 2
    assert "argument --jobs" in capsys.readouterr().err
    assert main(["bogus"]) == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
