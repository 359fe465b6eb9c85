"""Calibration: timm-format input checks, a fit that recovers known figures, refusals, scores.

The layer tables and throughputs here are SYNTHETIC (random CNN-like tables, throughputs
generated from known figures): they test the fitting machinery, not the GPU.
"""

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.layer_table import LayerTable
from nasfilter.bench.timm_data import TIMM_COLUMNS
from nasfilter.cli import main
from nasfilter.oracle import calibration as cal
from nasfilter.oracle.calibrated import load_calibration
from nasfilter.oracle.devices import DEVICES
from nasfilter.oracle.gpumodel import TIMM_FIGURES, GpuModelParams

TRUE = GpuModelParams(
    tensor_efficiency=0.7,
    memory_efficiency=0.85,
    kernel_seconds=6e-6,
    grouped_efficiency=0.2,
    eager_passes=4.0,
    nchw_transpose_passes=1.5,
    nhwc_grouped_efficiency=0.12,
    unaligned_efficiency=0.3,
    layout_copy_passes=2.5,
    nchw_conv_seconds=20e-6,
    depthwise_efficiency=0.5,
    nhwc_depthwise_efficiency=0.3,
)


def _synthetic_table(rng: np.random.Generator, img: int) -> LayerTable:
    """A SYNTHETIC CNN: an RGB stem, then stages of dense and depthwise convs, some with a
    group norm (kernel layout NCHW) or a channels-last layer norm (NHWC), a pool, a linear."""
    names, kinds, rows, layouts = [], [], [], []
    size, cin = img // 2, 3.0
    cout = float(rng.choice([16, 24, 32, 48]))
    rows.append((size * size, cout, cin * 9, 1.0, cin * img * img, cin))
    kinds.append("conv")
    layouts.append(1.0)
    cin = cout
    for stage in range(int(rng.integers(2, 5))):
        size //= 2
        cout = cin * 2
        for _ in range(int(rng.integers(1, 4))):
            rows.append(
                (size * size, cout, cin, 1.0, cin * size * size * (4 if _ == 0 else 1), cin)
            )
            kinds.append("conv")
            layouts.append(1.0)
            if rng.random() < 0.5:  # depthwise 3x3
                rows.append((size * size, cout, 9.0, cout, cout * size * size, cout))
                kinds.append("grouped_conv")
                layouts.append(0.0)
            elif rng.random() < 0.6:  # grouped 3x3, 8 channels per group
                rows.append((size * size, cout, 72.0, cout / 8, cout * size * size, cout))
                kinds.append("grouped_conv")
                layouts.append(0.0)
            cin = cout
        norm = rng.random()
        if norm < 0.3:
            rows.append((0.0, 0.0, 0.0, 1.0, cin * size * size, 0.0))
            kinds.append("memory")
            layouts.append(2.0 if norm < 0.2 else 1.0)
        del stage
    rows.append((0.0, 0.0, 0.0, 1.0, cin * size * size, 0.0))
    kinds.append("memory")
    layouts.append(0.0)
    rows.append((1.0, 1000.0, cin, 1.0, cin, cin))
    kinds.append("linear")
    layouts.append(0.0)
    names = [f"l{i}" for i in range(len(rows))]
    m, n, k, g, inp, cins = (np.array([[r[j] for r in rows]]) for j in range(6))
    macs = np.where(np.array(kinds) == "memory", 0.0, m * n * k)
    out = np.where(np.array(kinds) == "memory", inp, m * n)
    return LayerTable(
        names=tuple(names),
        kinds=tuple(kinds),
        gemm_m=m,
        gemm_n=n,
        gemm_k=k,
        groups=g,
        macs=macs,
        weight_elems=n * k,
        input_elems=inp,
        output_elems=out,
        present=np.ones(m.shape, dtype=bool),
        in_channels=cins,
        kernel_layout=np.array([layouts]),
    )


def _synthetic_files(tmp: Path, device: str, params: GpuModelParams, n: int = 40) -> list[Path]:
    """Two timm-format files (NCHW, NHWC) of SYNTHETIC models whose throughputs ``params`` gives."""
    rng = np.random.default_rng(7)
    tables = {(f"synth{i}", int(rng.choice([160, 224, 256]))): None for i in range(n)}
    tables = {key: _synthetic_table(rng, key[1]) for key in tables}
    dev = DEVICES[device]
    paths = []
    for layout in ("nchw", "nhwc"):
        path = tmp / f"benchmark-infer-amp-{layout}-synthetic-{device}.csv"
        samples = [
            cal.Sample(cal.BenchmarkRow(m, s, 256, 1.0, float(t.macs.sum()) / 1e9), layout, t)
            for (m, s), t in tables.items()
        ]
        thr = cal.predict(cal.SampleSet(dev, samples, []), params)
        with path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(TIMM_COLUMNS)
            for smp, x in zip(samples, thr, strict=True):
                w.writerow(
                    [smp.row.model, smp.row.img_size, x, 256e3 / x, 256, 1.0, smp.row.gmacs, 1.0]
                )
        paths.append(path)
    _synthetic_files.tables = tables  # type: ignore[attr-defined]
    return paths


def _source(tables: dict[tuple[str, int], LayerTable]) -> Any:
    def source(model: str, size: int) -> LayerTable:
        if (model, size) not in tables:
            raise LookupError(f"no table for {model}")
        return tables[(model, size)]

    return source


def test_fit_recovers_known_figures_from_synthetic_data(tmp_path: Path) -> None:
    paths = _synthetic_files(tmp_path, "rtx3090", TRUE)
    tables = _synthetic_files.tables  # type: ignore[attr-defined]
    files = [cal.read_benchmark_file(p) for p in paths]
    assert {f.layout for f in files} == {"nchw", "nhwc"} and files[0].device.name == "rtx3090"
    sset = cal.build_samples(files, _source(tables))
    assert len(sset.samples) == 80
    result = cal.fit(sset)
    for name in TIMM_FIGURES:  # the cell figures are fitted on the tss cells
        assert getattr(result.params, name) == pytest.approx(getattr(TRUE, name), rel=1e-3), name
    assert result.rms_log_error < 1e-6 and result.provenance["at_bound"] == []
    figures = cal.scores(cal.predict(sset, result.params), cal.measured(sset))
    assert figures["mdape_percent"] < 0.01 and figures["within_10_percent"] == 1.0


def test_an_unphysical_optimum_is_refused(tmp_path: Path) -> None:
    # SYNTHETIC throughputs that only a negative number of NCHW transposes explains.
    bad = GpuModelParams.from_vector(
        np.array([0.7, 0.85, 6e-6, 0.2, 4.0, -1.0, 0.12, 0.3, 2.5, 20e-6, 0.5, 0.3])
    )
    paths = _synthetic_files(tmp_path, "rtx4090", bad)
    tables = _synthetic_files.tables  # type: ignore[attr-defined]
    sset = cal.build_samples([cal.read_benchmark_file(p) for p in paths], _source(tables))
    with pytest.raises(cal.CalibrationError, match=r"unphysical.*nchw_transpose_passes"):
        cal.fit(sset)


def test_the_cli_fits_stores_provenance_and_never_stores_a_refused_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import nasfilter.cli.calibrate as cli

    paths = _synthetic_files(tmp_path, "rtx3090", TRUE, n=20)
    tables = _synthetic_files.tables  # type: ignore[attr-defined]
    asked: list[tuple[str, int]] = []

    def source(model: str, size: int) -> LayerTable:
        asked.append((model, size))
        return _source(tables)(model, size)

    monkeypatch.setattr(cli, "_table_source", lambda cache, jobs: source)
    out = tmp_path / "cal.json"
    args = ["calibrate", "--measured", str(paths[0]), "--measured", str(paths[1])]
    assert main([*args, "--out", str(out)]) == 0
    saved = load_calibration(out)
    assert saved.params.tensor_efficiency == pytest.approx(0.7, rel=1e-3)
    files = saved.provenance["sets"][0]["files"]
    assert [f["layout"] for f in files] == ["nchw", "nhwc"] and len(files[0]["sha256"]) == 64
    assert "rtx3090" in saved.fitted_on and "--measured" in saved.provenance["command"]
    assert saved.provenance["layer_tables"].startswith("nasfilter.survey layer analysis")
    assert sorted(set(asked)) == sorted(tables)  # every measured model was analysed
    # An existing file is kept without --force.
    assert main([*args, "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    # A refused fit writes nothing.
    bad = GpuModelParams.from_vector(
        np.array([0.7, 0.85, 6e-6, 0.2, 4.0, -1.0, 0.12, 0.3, 2.5, 20e-6, 0.5, 0.3])
    )
    paths = _synthetic_files(tmp_path, "rtx3090", bad, n=20)
    refused = tmp_path / "refused.json"
    code = main(["calibrate", "--measured", str(paths[0]), "--out", str(refused)])
    assert code == 1 and not refused.exists()
    assert "fit refused" in capsys.readouterr().err


def test_the_cli_checks_its_paths_and_names_the_flag_before_any_analysis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import nasfilter.cli.calibrate as cli

    def never(cache: str | None, jobs: int) -> Any:
        raise AssertionError("no model may be analysed on bad input")

    monkeypatch.setattr(cli, "_table_source", never)
    paths = _synthetic_files(tmp_path, "rtx3090", TRUE, n=12)
    measured = ["--measured", str(paths[0])]
    folder = tmp_path / "dir.json"
    folder.mkdir()
    cases = [
        ([*measured, "--out", str(tmp_path / "no" / "cal.json")], "--out", "does not exist"),
        ([*measured, "--out", str(tmp_path / "cal.txt")], "--out", ".json file"),
        ([*measured, "--out", str(folder)], "--out", "is a folder"),
        (
            ["--measured", str(tmp_path / "gone.csv"), "--out", str(tmp_path / "c.json")],
            "--measured",
            "does not exist",
        ),
        ([*measured, "--out", str(tmp_path / "c.json"), "--jobs", "0"], "--jobs", ">= 1"),
        (["--validate", "--joint"], "--joint", "--validate holds the joint fit out too"),
        (
            [*measured, "--out", str(tmp_path / "c.json"), "--cache", str(tmp_path / "a" / "b")],
            "--cache",
            "does not exist",
        ),
    ]
    for argv, flag, reason in cases:
        assert main(["calibrate", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert flag in err and reason in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [folder.name, *(p.name for p in paths)]
    )


def test_wrong_columns_bad_values_or_no_rows_are_refused_with_the_reason(tmp_path: Path) -> None:
    wrong = tmp_path / "benchmark-infer-amp-nchw-x-rtx3090.csv"
    wrong.write_text("model,img_size,throughput\nresnet50,224,3000\n")
    with pytest.raises(cal.CalibrationInputError, match=r"missing column\(s\).*infer_gmacs"):
        cal.read_benchmark_file(wrong)
    bad = tmp_path / "benchmark-infer-amp-nhwc-x-rtx4090.csv"
    bad.write_text(",".join(TIMM_COLUMNS) + "\nresnet50,224,nan,1,1024,25,4.1,11\n")
    with pytest.raises(cal.CalibrationInputError, match=r"line 2: infer_samples_per_sec.*'nan'"):
        cal.read_benchmark_file(bad)
    bad.write_text(",".join(TIMM_COLUMNS) + "\n")
    with pytest.raises(cal.CalibrationInputError, match="has no rows"):
        cal.read_benchmark_file(bad)
    anonymous = tmp_path / "mine.csv"
    anonymous.write_text(wrong.read_text())
    with pytest.raises(cal.CalibrationInputError, match="cannot tell the layout"):
        cal.read_benchmark_file(anonymous)
    with pytest.raises(cal.CalibrationInputError, match="does not exist"):
        cal.read_benchmark_file(tmp_path / "missing.csv")


def test_rows_that_cannot_be_used_are_counted_by_reason(tmp_path: Path) -> None:
    paths = _synthetic_files(tmp_path, "rtx3090", TRUE, n=6)
    tables = dict(_synthetic_files.tables)  # type: ignore[attr-defined]
    keys = sorted(tables)
    del tables[keys[0]]  # not analysable
    t = tables[keys[1]]  # a transformer-like table: its MACs in linear layers
    tables[keys[1]] = LayerTable(**{**t.__dict__, "kinds": ("linear",) * t.n_layers})
    sset = cal.build_samples([cal.read_benchmark_file(paths[0])], _source(tables))
    assert sset.left_out == {"not analysable": 1, "not a CNN": 1}
    assert len(sset.samples) == 4
    with pytest.raises(cal.CalibrationError, match="a fit of 12 figures needs >= 24"):
        cal.fit(sset)
    with pytest.raises(cal.CalibrationInputError, match="no usable row"):
        cal.build_samples([cal.read_benchmark_file(paths[0])], _source({}))


def test_the_shipped_files_read_as_timm_published_them() -> None:
    f = cal.shipped_benchmark_file("rtx4090", "nchw")
    assert f.device.name == "rtx4090" and f.layout == "nchw" and len(f.rows) > 1400
    row = next(r for r in f.rows if r.model == "resnet50" and r.img_size == 224)
    assert (row.throughput, row.batch, row.gmacs) == (4217.6, 1024, 4.11)  # the CSV's values
    with pytest.raises(cal.CalibrationInputError, match="no shipped measurement"):
        cal.shipped_benchmark_file("v100", "nchw")


def test_scores_by_hand() -> None:
    s = cal.scores(np.array([109.0, 80.0, 300.0, 50.0]), np.array([100.0, 120.0, 200.0, 50.0]))
    # errors: 9 %, 33.3 %, 50 %, 0 % -> median 21.17 %; within ±10 %: 2 of 4;
    # ranks 3, 2, 4, 1 against 2, 3, 4, 1: Spearman = 1 - 6 x 2 / (4 x 15) = 0.8
    assert s["mdape_percent"] == pytest.approx((9 + 100 / 3) / 2)
    assert s["within_10_percent"] == 0.5 and s["spearman"] == pytest.approx(0.8)


def test_survey_tables_read_the_survey_cache_and_its_errors(tmp_path: Path) -> None:
    from nasfilter.survey.analysis import ModelProfile
    from nasfilter.survey.cache import save_error, save_profile
    from nasfilter.survey.tables import SurveyTables

    tables = SurveyTables(tmp_path)
    table = _synthetic_table(np.random.default_rng(2), 224)
    tables.folder.mkdir(parents=True)
    save_profile(tables.folder, ModelProfile("synthnet", (3, 224, 224), table, 1.0, 1.0))
    save_error(tables.folder, "broken", 224, "AnalysisError: cannot trace broken")
    got = tables("synthnet", 224)  # read from the cache: nothing is analysed
    assert got.names == table.names and np.array_equal(got.gemm_k, table.gemm_k)
    with pytest.raises(ValueError, match="cannot trace broken"):
        tables("broken", 224)


def test_validate_measured_scores_your_files_against_a_calibration_and_says_if_it_saw_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SYNTHETIC files: a calibration fitted on one GPU's files (made with figures TRUE)
    predicts another GPU's files made with the same figures to the digit, and misses a GPU
    whose tensor cores and memory reach half of TRUE's shares; a file it was fitted on is called
    in-sample; a one-layout file has no layout ratio."""
    import json

    import nasfilter.cli.calibrate as cli

    fit_dir, same_dir, slow_dir = (tmp_path / d for d in ("fit", "same", "slow"))
    for d in (fit_dir, same_dir, slow_dir):
        d.mkdir()
    fit_files = _synthetic_files(fit_dir, "rtx3090", TRUE, n=20)
    tables = dict(_synthetic_files.tables)  # type: ignore[attr-defined]
    same = _synthetic_files(same_dir, "rtx4090", TRUE, n=20)
    half = GpuModelParams(
        **{**TRUE.to_dict(), "tensor_efficiency": 0.35, "memory_efficiency": 0.425}
    )
    slow = _synthetic_files(slow_dir, "rtx4090", half, n=20)
    monkeypatch.setattr(cli, "_table_source", lambda cache, jobs: _source(tables))
    calibration = tmp_path / "cal.json"
    fit = ["calibrate", "--measured", str(fit_files[0]), "--measured", str(fit_files[1])]
    assert main([*fit, "--out", str(calibration)]) == 0
    capsys.readouterr()

    def scored(*files: Path) -> dict[str, Any]:
        argv = ["calibrate", "--validate", "--calibration", str(calibration), "--json"]
        assert main([*argv, *(a for f in files for a in ("--measured", str(f)))]) == 0
        out: dict[str, Any] = json.loads(capsys.readouterr().out)
        return out

    held = scored(*same)["measured"][0]
    assert held["device"] == "rtx4090" and held["in_fit"] == []
    assert held["all"]["calibrated"]["mdape_percent"] < 0.5
    assert held["all"]["calibrated"]["spearman"] > 0.999
    assert held["layout"]["n"] == 20
    missed = scored(*slow)["measured"][0]["all"]["calibrated"]
    assert missed["mdape_percent"] > 10
    in_sample = scored(fit_files[0])["measured"][0]
    assert in_sample["in_fit"] == [fit_files[0].name] and in_sample["layout"] is None
    argv = ["calibrate", "--validate", "--calibration", str(calibration)]
    assert main([*argv, "--measured", str(fit_files[0])]) == 0
    text = capsys.readouterr().out
    assert f"IN-SAMPLE, not held out: the calibration was fitted on {fit_files[0].name}" in text
    assert "NHWC/NCHW" not in text
    assert main([*argv, "--measured", str(same[0])]) == 0
    assert "it was fitted on none of them" in capsys.readouterr().out


def test_validate_measured_refuses_what_does_not_go_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import nasfilter.cli.calibrate as cli

    def never(cache: str | None, jobs: int) -> Any:
        raise AssertionError("no model may be analysed on bad input")

    monkeypatch.setattr(cli, "_table_source", never)
    (path,) = _synthetic_files(tmp_path, "rtx3090", TRUE, n=5)[:1]
    measured = ["--validate", "--measured", str(path)]
    cases = [
        (["--calibration", str(path), "--measured", str(path)], "--calibration", "goes with"),
        ([*measured, "--cells-only"], "--cells-only", "drop --cells-only"),
        ([*measured, "--out", str(tmp_path / "o.json")], "--out", "drop --cells-only and --out"),
    ]
    for argv, flag, reason in cases:
        assert main(["calibrate", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert flag in err and reason in err, err
    monkeypatch.setattr(cli, "_table_source", lambda cache, jobs: None)
    gone = tmp_path / "gone.json"
    assert main(["calibrate", *measured, "--calibration", str(gone)]) == 2
    err = capsys.readouterr().err
    assert "--calibration" in err and "does not exist" in err
