"""Shipped traces as package data, and trace names (g10core.workload.tracestore)."""
import os
import shutil

import pytest
from conftest import SHIPPED_ALL_NAMES, SHIPPED_LLM_NAMES, SHIPPED_NAMES

from g10core.workload import tracestore
from g10core.experiments.reproduce import fig11_tasks
from g10core.simulator import Simulator


@pytest.fixture
def no_user_dir(monkeypatch):
    monkeypatch.delenv(tracestore.ENV_TRACES_DIR, raising=False)


def test_the_thirty_workloads_are_package_data(no_user_dir):
    assert tracestore.shipped_traces() == sorted(SHIPPED_ALL_NAMES)
    folder = tracestore.shipped_dir()
    # installed: g10core/workload/traces; run from a checkout (PYTHONPATH=src, editable): <checkout>/traces
    installed = folder.parent.name == "workload" and folder.parent.parent.name == "g10core"
    checkout = folder.name == "traces" and (folder.parent / "src" / "g10core" / "workload").is_dir()
    assert installed or checkout, folder
    assert (folder / "LICENSE").is_file() and (folder / "NOTICE").is_file() and (folder / "README.md").is_file()
    assert set(tracestore.available_traces()) == set(SHIPPED_ALL_NAMES)


def _package_at(monkeypatch, workload_dir):
    """Make tracestore believe g10core.workload lies in ``workload_dir``."""
    workload_dir.mkdir(parents=True)
    monkeypatch.setattr(tracestore.resources, "files", lambda package: workload_dir)


def test_installed_package_data_wins_over_a_checkout_folder(tmp_path, monkeypatch):
    _package_at(monkeypatch, tmp_path / "src" / "g10core" / "workload")
    (tmp_path / "src" / "g10core" / "workload" / "traces").mkdir()
    (tmp_path / "traces").mkdir()
    assert tracestore.shipped_dir() == tmp_path / "src" / "g10core" / "workload" / "traces"


def test_a_source_checkout_finds_its_top_level_traces(tmp_path, monkeypatch):
    _package_at(monkeypatch, tmp_path / "src" / "g10core" / "workload")
    (tmp_path / "traces").mkdir()
    assert tracestore.shipped_dir() == (tmp_path / "traces").resolve()


def test_an_install_without_its_data_looks_only_beside_the_package(tmp_path, monkeypatch):
    # a folder named traces above an installed package is not the checkout's: only <...>/src/g10core counts
    _package_at(monkeypatch, tmp_path / "site-packages" / "g10core" / "workload")
    (tmp_path / "traces").mkdir()
    assert tracestore.shipped_dir() == tmp_path / "site-packages" / "g10core" / "workload" / "traces"
    assert tracestore.shipped_traces() == []


@pytest.mark.parametrize("asked", ["bert_base-b256", "bert_base-b256.h5"])
def test_a_name_resolves_to_the_shipped_file(asked, no_user_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                     # from any directory
    assert tracestore.resolve_trace(asked) == tracestore.shipped_dir() / "bert_base-b256.h5"


def test_an_existing_path_wins_over_a_name(no_user_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bert_base-b256.h5").write_bytes(b"mine")
    assert tracestore.resolve_trace("bert_base-b256.h5") == tracestore.Path("bert_base-b256.h5")
    assert tracestore.resolve_trace(tmp_path / "bert_base-b256.h5") == tmp_path / "bert_base-b256.h5"


def test_user_dir_comes_first_and_adds_names(tmp_path, monkeypatch):
    shutil.copyfile(tracestore.shipped_dir() / "vit-b256.h5", tmp_path / "bert_base-b256.h5")
    shutil.copyfile(tracestore.shipped_dir() / "vit-b256.h5", tmp_path / "mine-b1.h5")
    monkeypatch.setenv(tracestore.ENV_TRACES_DIR, str(tmp_path))
    assert tracestore.search_dirs() == [tmp_path, tracestore.shipped_dir()]
    assert tracestore.resolve_trace("bert_base-b256") == tmp_path / "bert_base-b256.h5"
    assert tracestore.resolve_trace("mine-b1") == tmp_path / "mine-b1.h5"
    assert tracestore.resolve_trace("vit-b1280") == tracestore.shipped_dir() / "vit-b1280.h5"
    names = tracestore.available_traces()
    assert names["mine-b1"] == tmp_path / "mine-b1.h5" and len(names) == len(SHIPPED_ALL_NAMES) + 1
    assert tracestore.shipped_traces() == sorted(SHIPPED_ALL_NAMES)     # the shipped ones only


def test_a_missing_path_with_folders_is_no_such_file(no_user_dir, tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        tracestore.resolve_trace(tmp_path / "sub" / "bert_base-b256")
    assert info.value.strerror == "no such trace file" and info.value.filename == str(tmp_path / "sub/bert_base-b256")


@pytest.mark.parametrize("asked", ["nope-b1", "nope.h5"])
def test_unknown_name_says_what_was_asked_and_how_to_list(asked, no_user_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as info:
        tracestore.resolve_trace(asked)
    assert info.value.filename == asked
    assert "g10sim trace list" in info.value.strerror and "shipped traces" in info.value.strerror


def test_unknown_name_mentions_the_user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(tracestore.ENV_TRACES_DIR, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="G10_TRACES_DIR") as info:
        tracestore.resolve_trace("nope-b1")
    assert str(tmp_path) in info.value.strerror


def test_simulator_takes_a_name(no_user_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = Simulator("g10-artifact").run("bert_base-b256", "ideal")
    assert r.trace["path"] == os.fspath(tracestore.shipped_dir() / "bert_base-b256.h5")
    assert r.iteration_time_s == pytest.approx(7.285, abs=1e-3)


def test_fig11_finds_its_traces_by_name_even_with_an_empty_user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(tracestore.ENV_TRACES_DIR, str(tmp_path))
    tasks = fig11_tasks(policies=["ideal"])
    assert [os.path.basename(t.trace_path) for t in tasks] == [
        "bert_base-b256.h5", "vit-b1280.h5", "inceptionv3-b1536.h5", "resnet152-b1280.h5", "senet154-b1024.h5"]
    assert all(os.path.dirname(t.trace_path) == str(tracestore.shipped_dir()) for t in tasks)
