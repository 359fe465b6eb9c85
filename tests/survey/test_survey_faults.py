"""The survey's and the device files' faults: a pooled analysis after torch ran, and bad
inputs, each refused with a message naming the value (regression tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nasfilter.cli import main
from nasfilter.oracle.devices import UnknownDeviceError, get_device

ROOT = Path(__file__).parent.resolve().parent.parent


def _err(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return captured.err


# ---- the pool --------------------------------------------------------------------------------
def test_worker_pool_never_forks() -> None:
    from nasfilter.survey.cache import worker_pool

    with worker_pool(1) as pool:
        method = pool._mp_context.get_start_method()  # type: ignore[attr-defined]
    assert method != "fork"


@pytest.mark.slow
def test_pooled_analysis_after_torch_ran(tmp_path: Path) -> None:
    """The parent has run torch (threaded ops, a meta trace) before the pool starts; every
    model comes back analysed, within a bound (a forked worker could wait forever)."""
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        import torch
        torch.set_num_threads(2)
        x = torch.randn(256, 256)
        for _ in range(20):
            x = torch.tanh(x @ x)
        from nasfilter.survey.timm_models import timm_profile
        timm_profile("resnet18", 224)
        from nasfilter.survey.cache import profile_all
        pairs = [("resnet18", 160), ("mobilenetv3_small_100", 224), ("convit_tiny", 224),
                 ("efficientnet_b0", 224), ("regnetx_002", 224)]
        out = profile_all(pairs, Path({str(tmp_path)!r}), jobs=2)
        bad = {{k: v for k, v in out.items() if isinstance(v, str)}}
        assert not bad, bad
        print("analysed", len(out))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "analysed 5" in done.stdout
    assert len(list(tmp_path.glob("*.prof"))) == 5


@pytest.mark.slow
def test_pooled_analysis_from_an_unguarded_script(tmp_path: Path) -> None:
    """Spawned workers do not run the main script again (it has no __main__ guard)."""
    script = tmp_path / "survey_script.py"
    script.write_text(
        "from pathlib import Path\n"
        "from nasfilter.survey.cache import profile_all\n"
        f"out = profile_all([('resnet18', 160), ('regnetx_002', 224)], Path({str(tmp_path)!r}),"
        " jobs=2)\n"
        "print('analysed', sum(not isinstance(v, str) for v in out.values()))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("analysed") == 1 and "analysed 2" in done.stdout


# ---- survey flags ----------------------------------------------------------------------------
@pytest.fixture
def base(tmp_path: Path) -> list[str]:
    return ["survey", "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c"), "--quiet"]


def test_empty_models_is_refused(capsys: pytest.CaptureFixture[str], base: list[str]) -> None:
    err = _err(capsys, [*base, "--models", ""])
    assert "--models" in err and "no model given" in err


def test_empty_models_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], base: list[str]
) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n# nothing\n")
    err = _err(capsys, [*base, "--models-file", str(empty)])
    assert "--models-file" in err and "no model given" in err


def test_path_like_model_name_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], base: list[str]
) -> None:
    err = _err(capsys, [*base, "--models", "../../x"])
    assert "'../../x'" in err and "''" not in err
    listed = tmp_path / "models.txt"
    listed.write_text("resnet18\n../../x\n")
    err = _err(capsys, [*base, "--models-file", str(listed)])
    assert "--models-file" in err and "'../../x'" in err and "''" not in err


def test_binary_measured_csv_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], base: list[str]
) -> None:
    for name, data in (("bin.csv", bytes(range(256)) * 4), ("nul.csv", b"model\x00,a\n" * 3)):
        path = tmp_path / name
        path.write_bytes(data)
        err = _err(capsys, [*base, "--models", "resnet18", "--measured", str(path)])
        assert "--measured" in err and name in err
    assert "not a text CSV (byte 128 is not UTF-8)" in _err(
        capsys, [*base, "--models", "resnet18", "--measured", str(tmp_path / "bin.csv")]
    )


def test_binary_models_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], base: list[str]
) -> None:
    path = tmp_path / "models.bin"
    path.write_bytes(b"\xff\xfe\x00resnet")
    err = _err(capsys, [*base, "--models-file", str(path)])
    assert "--models-file" in err and "models.bin" in err and "UTF-8" in err


def test_cache_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache.txt"
    cache.write_text("mine")
    argv = ["survey", "--out", str(tmp_path / "o"), "--models", "resnet18", "--cache", str(cache)]
    err = _err(capsys, argv)
    assert "--cache" in err and "is a file" in err and "Errno" not in err
    assert cache.read_text() == "mine"


# ---- device files ----------------------------------------------------------------------------
def _device_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "dev.json"
    path.write_text(text)
    return str(path)


GOOD = {"name": "g", "peak_tflops": 100, "bandwidth_tbs": 1, "sm_count": 80, "memory_gb": 16}


@pytest.mark.parametrize("key", ["peak_tflops", "bandwidth_tbs", "memory_gb", "sm_count"])
def test_device_with_a_400_digit_integer(tmp_path: Path, key: str) -> None:
    path = _device_file(tmp_path, json.dumps({**GOOD, key: 10**400}))
    with pytest.raises(UnknownDeviceError, match=key) as info:
        get_device(path)
    assert path in str(info.value) and len(str(info.value)) < 400


def test_device_nested_100000_deep(tmp_path: Path) -> None:
    path = _device_file(tmp_path, "[" * 100_000 + "]" * 100_000)
    with pytest.raises(UnknownDeviceError, match="nested too deep") as info:
        get_device(path)
    assert path in str(info.value)
    inline = '{"name": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(UnknownDeviceError, match="nested too deep"):
        get_device(inline)


def test_inline_device_with_a_huge_integer() -> None:
    text = json.dumps({"name": "g", "peak_flops": 10**400, "bandwidth": 1e12})
    with pytest.raises(UnknownDeviceError, match="cannot read a device"):
        get_device(text)


def test_device_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "gpu.json"
    folder.mkdir()
    for spec in (str(folder), str(tmp_path)):
        with pytest.raises(UnknownDeviceError, match="is a folder") as info:
            get_device(spec)
        assert "does not exist" not in str(info.value)
    err = _err(capsys, ["survey", "--out", str(tmp_path / "o"), "--device", str(folder)])
    assert "--device" in err and "is a folder" in err


def test_survey_cli_device_json_faults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _device_file(tmp_path, json.dumps({**GOOD, "sm_count": 10**400}))
    err = _err(capsys, ["survey", "--out", str(tmp_path / "o"), "--device", path])
    assert "--device" in err and "sm_count" in err


# ---- fold ------------------------------------------------------------------------------------
def _tiny() -> object:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)
    )


def test_fold_factor_bounded() -> None:
    from nasfilter.survey.fold import MAX_FOLD, fold

    with pytest.raises(ValueError, match=r"at most 1024.*got 1000000000000"):
        fold(_tiny(), 10**12)
    with pytest.raises(ValueError, match="at most"):
        fold(_tiny(), (32 + 1) ** 2)
    assert fold(_tiny(), MAX_FOLD, (3, 8, 8)) is not None
    assert "--fold" in _cli_fold_error(str(10**12))


def _cli_fold_error(value: str) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        assert main(["survey", "--out", "x", "--fold", value]) == 2
    return buf.getvalue()


@pytest.mark.parametrize("shape", [(3, 0, 0), (3, -1, 8), (3, 8), (3, 8.0, 8), "3x8x8", None])
def test_fold_input_shape_checked(shape: object) -> None:
    from nasfilter.survey.fold import fold

    with pytest.raises(ValueError, match="input_shape must be") as info:
        fold(_tiny(), 4, shape)  # type: ignore[arg-type]
    assert repr(shape) in str(info.value)
