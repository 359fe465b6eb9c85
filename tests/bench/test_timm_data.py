"""The one reader of timm's published files, shared by the survey and the calibration."""

import math
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench import timm_data
from nasfilter.bench.layer_table import LayerTable
from nasfilter.oracle import calibration as cal

HEADER = ",".join(timm_data.TIMM_COLUMNS)


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
    path.write_text(HEADER + "\n" + body)
    return path


def test_the_survey_and_the_calibration_read_the_same_rows(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "resnet50,224,3000.5,85.3,256,25.56,4.11,11.11\n"
        "resnet18,160,9000,28.4,1024,11.69,,2.5\n"
        "resnet50,224,3100,82.6,256,25.56,4.11,11.11\n",  # duplicate: the last one wins
    )
    rows = timm_data.read_benchmark(path)
    assert [(r.model, r.img_size, r.batch, r.throughput) for r in rows] == [
        ("resnet50", 224, 256, 3100.0),
        ("resnet18", 160, 1024, 9000.0),
    ]
    assert rows[0].gmacs == 4.11 and rows[0].params_m == 25.56 and math.isnan(rows[1].gmacs)
    f = cal.read_benchmark_file(path)
    assert list(f.rows) == rows and (f.device.name, f.layout) == ("rtx3090", "nchw")
    assert len(f.sha256) == 64 and f.sha256 == timm_data.read_benchmark_digest(path)[1]


def test_one_error_policy_for_both_users(tmp_path: Path) -> None:
    path = _write(tmp_path, "resnet50,224,3000,85,256,25,4.1,11\nresnet18,160,-5,1,1024,11,1.8,2\n")
    with pytest.raises(ValueError, match=r"line 3: infer_samples_per_sec .*got '-5'") as survey:
        timm_data.read_benchmark(path)
    with pytest.raises(cal.CalibrationInputError) as calibration:
        cal.read_benchmark_file(path)
    assert str(calibration.value) == str(survey.value)
    path.write_bytes(b"model,infer_img_size\n\xff\xfe\n")
    with pytest.raises(ValueError, match="not a text CSV"):
        timm_data.read_benchmark(path)
    path.write_text("model,infer_img_size,infer_samples_per_sec,infer_batch_size\nm,224,10,8\n")
    assert timm_data.read_benchmark(path)[0].throughput == 10.0  # the survey needs no MACs
    with pytest.raises(cal.CalibrationInputError, match=r"missing column\(s\) \['infer_gmacs'\]"):
        cal.read_benchmark_file(path)  # the calibration checks MACs against them


def test_a_row_without_macs_is_left_out_of_a_fit_and_counted(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,224,100,1,64,1,0.000001,1\nb,224,100,1,64,1,,1\n")
    table = LayerTable(
        names=("conv",),
        kinds=("conv",),
        gemm_m=np.array([[1.0]]),
        gemm_n=np.array([[1.0]]),
        gemm_k=np.array([[1.0]]),
        groups=np.array([[1.0]]),
        macs=np.array([[1000.0]]),
        weight_elems=np.array([[1.0]]),
        input_elems=np.array([[1.0]]),
        output_elems=np.array([[1.0]]),
        present=np.ones((1, 1), dtype=bool),
    )
    asked = []

    def source(model: str, size: int) -> LayerTable:
        asked.append(model)
        return table

    sset = cal.build_samples([cal.read_benchmark_file(path)], source)
    assert [s.row.model for s in sset.samples] == ["a"] and asked == ["a"]
    assert sset.left_out == {"no infer_gmacs": 1}


def test_the_oracle_does_not_import_the_survey() -> None:
    import subprocess
    import sys

    code = (
        "import sys, nasfilter.oracle.calibration, nasfilter.oracle.validation; "
        "print(sorted(m for m in sys.modules if m.startswith('nasfilter.survey')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_software_of_a_measurement_is_read_from_timm_s_file_name() -> None:
    assert cal.software_tag("benchmark-infer-amp-nhwc-pt240-cu124-rtx4090.csv") == "pt240-cu124"
    assert cal.software_tag("benchmark-infer-amp-nchw-pt210-rtx3090.csv") == "pt210"
    assert cal.software_tag("mine.csv") == ""
    f = cal.shipped_benchmark_file("rtx3090", "nhwc")
    assert f.provenance()["software"] == "pt240-cu124"
