"""The survey's timm index: what a cached survey needs of timm (names, default sizes,
version) without importing timm or torch, checked against timm itself."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nasfilter.survey.timm_index import INDEX_FILE, timm_index, timm_version

ROOT = Path(__file__).parent.resolve().parent.parent


@pytest.mark.slow
def test_index_agrees_with_timm(tmp_path: Path) -> None:
    from nasfilter.survey.timm_import import import_timm

    timm = import_timm()
    index = timm_index(tmp_path)
    assert (tmp_path / INDEX_FILE).is_file()
    assert index.names == frozenset(timm.list_models())
    assert timm_version() == timm.__version__ == importlib.metadata.version("timm")
    for arch in ("resnet50", "efficientnet_b3", "convnext_tiny", "vit_base_patch16_384"):
        cfg = timm.models.get_pretrained_cfg(arch)
        assert index.sizes[arch] == cfg.input_size[-1]
    assert index.sizes["efficientnet_b3"] != index.sizes["resnet50"]  # sizes really differ


def test_index_of_another_timm_version_is_rebuilt(tmp_path: Path) -> None:
    (tmp_path / INDEX_FILE).write_text(json.dumps({"timm_version": "0.0.1", "sizes": {"x": 1}}))
    index = timm_index(tmp_path)
    assert "x" not in index.names and "resnet50" in index.names
    assert json.loads((tmp_path / INDEX_FILE).read_text())["timm_version"] == timm_version()


def test_damaged_index_is_rebuilt(tmp_path: Path) -> None:
    (tmp_path / INDEX_FILE).write_text("{not json")
    assert "resnet50" in timm_index(tmp_path).names


@pytest.mark.subprocess
def test_names_checked_from_the_index_import_neither_timm_nor_torch(tmp_path: Path) -> None:
    """With the index written, checking names and reading sizes imports no timm or torch."""
    timm_index(tmp_path)
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from nasfilter.survey.timm_models import check_names
        from nasfilter.survey.timm_index import timm_index
        assert check_names(["resnet50.a1_in1k"], Path({str(tmp_path)!r})) == ["resnet50"]
        assert timm_index(Path({str(tmp_path)!r})).sizes["resnet50"] == 224
        print(sorted(m for m in ("timm", "torch", "torchvision") if m in sys.modules))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
