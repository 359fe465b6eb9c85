"""`import nasfilter` gives the entry points, loads them only on first use, and
get_storage picks the in-memory or SQLite storage by path."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import nasfilter
from nasfilter.runs.storage.base import InMemoryStorage
from nasfilter.runs.storage.sqlite_store import Store, StoreError

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(nasfilter._LAZY))
def test_every_entry_point_is_its_module_s_object(name: str) -> None:
    module = importlib.import_module(nasfilter._LAZY[name])
    assert getattr(nasfilter, name) is getattr(module, name)
    assert name in nasfilter.__all__ and name in dir(nasfilter)


def test_every_exported_name_resolves() -> None:
    for name in nasfilter.__all__:
        assert getattr(nasfilter, name) is not None, name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'run_searches'"):
        _ = nasfilter.run_searches


@pytest.mark.subprocess
def test_importing_the_package_loads_no_entry_point_module() -> None:
    lazy = sorted(set(nasfilter._LAZY.values()))
    code = (
        "import sys, nasfilter\n"
        f"loaded = [m for m in {lazy!r} if m in sys.modules]\n"
        "heavy = [m for m in ('torch', 'scipy', 'matplotlib', 'optuna', 'sqlite3', 'tqdm') "
        "if m in sys.modules]\n"
        "print(loaded, heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[] []", done.stdout


def test_get_storage_none_is_in_memory() -> None:
    with nasfilter.get_storage(None) as storage:
        assert type(storage) is InMemoryStorage and storage.stored_runs() == []
    assert type(nasfilter.get_storage()) is InMemoryStorage


def test_get_storage_path_is_an_sqlite_store(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    with nasfilter.get_storage(db) as storage:
        assert type(storage) is Store and storage.path == db and not storage.readonly
    assert db.is_file()
    with nasfilter.get_storage(str(db), readonly=True) as reader:
        assert type(reader) is Store and reader.readonly


def test_get_storage_refuses_bad_input(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        nasfilter.get_storage(tmp_path / "missing.db", readonly=True)
    with pytest.raises(ValueError, match="readonly=True needs the path"):
        nasfilter.get_storage(None, readonly=True)
    for bad in (3, True, b"x.db", [tmp_path]):
        with pytest.raises(ValueError, match=r"path must be a file path .* got"):
            nasfilter.get_storage(bad)
    with pytest.raises(ValueError, match="path is empty"):
        nasfilter.get_storage("")
    with pytest.raises(ValueError, match="readonly must be True or False, got 'yes'"):
        nasfilter.get_storage(None, readonly="yes")


@pytest.mark.parametrize(
    ("name", "face"),
    [
        ("embedded_table", "nasfilter.load_table('synthetic', dataset)"),
        ("cached_table", "nasfilter.load_table(name_or_path, dataset)"),
        ("load_proxy", "nasfilter.proxy_table(oracle, device, dataset, cache)"),
        ("cached_proxy", "nasfilter.proxy_table(oracle, device, dataset, cache)"),
    ],
)
def test_a_spelling_that_went_names_the_one_face(name: str, face: str) -> None:
    import nasfilter.runs.experiment as experiment
    import nasfilter.runs.inputs as inputs

    named = rf"{name} is gone: .*here: {re.escape(face)}"
    for module in (nasfilter, experiment, inputs):
        with pytest.raises(AttributeError, match=named) as info:
            getattr(module, name)
        assert module.__name__ in str(info.value)
        assert name not in getattr(module, "__all__", ())
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = experiment.nope


def test_one_face_loads_a_table_and_one_names_a_proxy() -> None:
    from nasfilter.bench.lookup import load_table
    from nasfilter.oracle import proxy_table

    assert nasfilter.load_table is load_table and nasfilter.proxy_table is proxy_table
    table = nasfilter.load_table("synthetic", "cifar100")
    assert table.synthetic and table.dataset.name == "cifar100"
    proxy = nasfilter.proxy_table("roofline", "v100", "cifar100")
    assert proxy.provenance["dataset"] == "cifar100" and proxy.label.startswith("roofline v100")
