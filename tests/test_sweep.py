"""Sweeps (g10core.experiments.sweep): sweep files, expansion, executors, the resumable store.

Small synthetic traces keep every sweep here to well under a second per run.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from g10core.experiments import sweep as sw
from g10core.config import DEFAULT_PRESET, preset
from g10core.simulator import Simulator
from g10core.workload.synth import synthesize
from g10core.workload.trace import write_trace

SRC = str(Path(__file__).resolve().parents[1] / "src")

SMALL_SWEEP = """
name = "small"
traces = ["a.h5", "b.h5"]
policies = ["base-uvm", "g10", "deepum", "ideal"]
[set]
"gpu.memory_GiB" = 0.014
[grid]
"host.memory_GiB" = [0, 0.03]
noise.kernel_time_sigma = [0, 0.1]
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), d / "a.h5")
    write_trace(synthesize(30, 48 << 20, pattern="random", seed=2), d / "b.h5")
    (d / "small.toml").write_text(SMALL_SWEEP)
    return d


def write(folder, text, name="s.toml"):
    p = folder / name
    p.write_text(textwrap.dedent(text))
    return p


# ---- the sweep file ---------------------------------------------------------------------

def test_expansion_and_run_keys(folder):
    s = sw.load_sweep(folder / "small.toml")
    assert s.name == "small" and s.grid_keys == ("host.memory_GiB", "noise.kernel_time_sigma")
    assert len(s.runs) == 2 * 4 * 2 * 2
    assert len({r.run_key for r in s.runs}) == len(s.runs)
    r = s.runs[0]
    assert (r.trace, r.policy, r.grid) == ("a.h5", "base-uvm", {"host.memory_GiB": 0, "noise.kernel_time_sigma": 0})
    cfg = preset(DEFAULT_PRESET).with_overrides({"gpu": {"memory_GiB": 0.014}, "host": {"memory_GiB": 0},
                                                 "noise": {"kernel_time_sigma": 0}})
    assert r.config == cfg.to_dict() and r.config_hash == cfg.hash
    # the key is the resolved config, the trace's content, the policy and the version
    assert r.run_key == sw.run_key(cfg.to_dict(), r.trace_digest, "base-uvm")
    assert sw.run_key(cfg.to_dict(), r.trace_digest, "base-uvm", version="0.0.0") != r.run_key
    # a second block naming the same runs adds nothing; a trace named by another path is the same run
    p = write(folder, """
        traces = ["a.h5"]
        policies = ["g10"]
        [[block]]
        [[block]]
        traces = ["./a.h5"]
        [block.set]
        gpu.memory_GiB = 40.0
        """)
    s2 = sw.load_sweep(p)
    assert len(s2.runs) == 1


def test_blocks_inherit_and_override(folder):
    p = write(folder, """
        policies = ["g10"]
        traces = ["a.h5"]
        [set]
        "gpu.memory_GiB" = 0.014
        [grid]
        "host.memory_GiB" = [0, 0.03]
        [[block]]
        name = "more"
        [block.grid]
        "host.memory_GiB" = [0.01]
        "ssd.bandwidth_GBps" = [3.2, 6.4]
        [[block]]
        name = "other"
        traces = ["b.h5"]
        policies = ["ideal"]
        """)
    s = sw.load_sweep(p)
    more = [r for r in s.runs if r.block == "more"]
    other = [r for r in s.runs if r.block == "other"]
    assert [r.grid for r in more] == [{"host.memory_GiB": 0.01, "ssd.bandwidth_GBps": 3.2},
                                      {"host.memory_GiB": 0.01, "ssd.bandwidth_GBps": 6.4}]
    assert [r.grid["host.memory_GiB"] for r in other] == [0, 0.03] and {r.trace for r in other} == {"b.h5"}
    assert all(r.config["gpu"]["memory_GiB"] == 0.014 for r in s.runs)
    assert s.grid_keys == ("host.memory_GiB", "ssd.bandwidth_GBps")


MALFORMED = [
    ('traces = ["a.h5"]\npolicies = ["g10"]\nfoo = 1\n', r"unknown key 'foo' \(line 3\)"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[set]\n"gpu.memroy_GiB" = 1\n',
     r"\[set\] 'gpu.memroy_GiB' \(line 4\): unknown config key gpu.memroy_GiB"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[grid]\n"hots.memory_GiB" = [1]\n',
     r"'hots.memory_GiB' \(line 4\): unknown config section 'hots'"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[grid]\n', r"empty grid \(line 3\)"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[grid]\n"host.memory_GiB" = []\n',
     r"'host.memory_GiB' \(line 4\) is an empty list"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[grid]\n"host.memory_GiB" = 3\n', r"must be a list"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[grid]\n"host.memory_GiB" = [1, -2]\n',
     r"'host.memory_GiB' \(line 4\): host.memory_GiB = -2.0: must be >= 0"),
    ('traces = ["a.h5", "nope.h5"]\npolicies = ["g10"]\n', r"trace 'nope.h5' \(line 1\) not found"),
    ('traces = ["bert_base-b999"]\npolicies = ["g10"]\n', r"trace 'bert_base-b999' \(line 1\) not found"),
    ('traces = ["a.h5"]\npolicies = ["g10", "lru"]\n', r"unknown policy 'lru' \(line 2\)"),
    ('traces = []\npolicies = ["g10"]\n', r"'traces' \(line 1\) must be a non-empty list"),
    ('traces = ["a.h5"]\n', r"'policies' must be a non-empty list"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[set]\n"host.memory_GiB" = 1\n[grid]\n"host.memory_GiB" = [1]\n',
     r"'host.memory_GiB' \(line 4\) is both in \[set\] and in \[grid\]"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[[block]]\ntrace = ["b.h5"]\n', r"\[\[block\]\] 1: unknown key 'trace'"),
    # (the published simulator's whole-page quotas: under default any bandwidth moves pages)
    ('preset = "g10-artifact"\ntraces = ["a.h5"]\npolicies = ["g10"]\n[grid]\n"ssd.bandwidth_GBps" = [0.2]\n',
     r"0 SSD pages per transfer slot"),
    ('traces = ["a.h5"\npolicies = ["g10"]\n', r"not valid TOML: .*line 2"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\nrecord = ["kernels"]\n', r"'record' names 'kernels'"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\npreset = "fast"\n', r"unknown preset 'fast'"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[grid]\nhost = [1]\n', r"'host' \(line 4\): expected section.key"),
]


@pytest.mark.parametrize("text, message", MALFORMED)
def test_malformed_files_are_refused_naming_key_and_line(folder, tmp_path, text, message):
    p = folder / "bad.toml"
    p.write_text(text)
    with pytest.raises(sw.SweepError, match=message) as err:
        sw.load_sweep(p)
    assert str(err.value).startswith(str(p)) and "\n" not in str(err.value)


def test_an_unreadable_trace_is_refused(folder):
    (folder / "broken.h5").write_bytes(b"not hdf5")
    p = write(folder, 'traces = ["broken.h5"]\npolicies = ["g10"]\n')
    with pytest.raises(sw.SweepError, match=r"trace 'broken.h5' \(line 1\)"):
        sw.load_sweep(p)


def test_shipped_trace_names_resolve(traces_dir, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('traces = ["bert_base-b256"]\npolicies = ["ideal"]\n')
    s = sw.load_sweep(p, traces_dir=traces_dir)
    assert Path(s.runs[0].trace_path) == traces_dir / "bert_base-b256.h5"
    assert (s.runs[0].model, s.runs[0].batch) == ("bert_base", 256)


# ---- running, the store -----------------------------------------------------------------

def test_rows_are_the_simulators_results(folder, tmp_path):
    s = sw.load_sweep(folder / "small.toml")
    st = sw.run_sweep(s, tmp_path / "out", jobs=1, progress=False)
    assert (st["total"], st["done"]) == (len(s.runs), len(s.runs))
    for row in st["rows"]:
        assert set(sw.ROW_FIELDS) <= set(row)
        assert {"host.memory_GiB", "noise.kernel_time_sigma"} <= set(row)
    by = {(r["trace"], r["policy"], r["host.memory_GiB"], r["noise.kernel_time_sigma"]): r for r in st["rows"]}
    cfg = preset(DEFAULT_PRESET).with_overrides({"gpu": {"memory_GiB": 0.014}, "host": {"memory_GiB": 0.03},
                                                 "noise": {"kernel_time_sigma": 0.1}})
    r = Simulator(cfg).run(folder / "a.h5", "g10")
    row = by[("a.h5", "g10", 0.03, 0.1)]
    assert row["time_s"] == r.iteration_time_s and row["ideal_time_s"] == r.ideal_time_s
    assert row["failed"] is False and row["error"] is None
    # host memory 0: Base UVM evicts to a full host -> a failed run, recorded as such
    assert all(r["failed"] == (r["failure_reason"] is not None) for r in st["rows"])
    assert st["failed"] == sum(r["failed"] for r in st["rows"])
    # a second run finds everything done and runs nothing
    again = sw.run_sweep(s, tmp_path / "out", jobs=1, progress=False)
    assert again == st
    lines = (tmp_path / "out" / sw.RUNS_FILE).read_text().splitlines()
    assert len(lines) == len(s.runs)


def test_local_processes_and_dask_give_identical_rows(folder, tmp_path):
    s = sw.load_sweep(folder / "small.toml")
    local = sw.run_sweep(s, tmp_path / "local", jobs=2, progress=False)
    dask = sw.run_sweep(s, tmp_path / "dask", jobs=2, dask="local", progress=False)
    inline = sw.run_sweep(s, tmp_path / "inline", jobs=1, progress=False)
    assert local["done"] == len(s.runs)
    assert json.dumps(local, sort_keys=True) == json.dumps(dask, sort_keys=True) == json.dumps(inline, sort_keys=True)


def test_a_run_that_raises_is_recorded_and_the_sweep_goes_on(folder, tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    for name in ("a.h5", "b.h5"):
        (d / name).write_bytes((folder / name).read_bytes())
    p = d / "s.toml"
    p.write_text(SMALL_SWEEP)
    s = sw.load_sweep(p)
    (d / "b.h5").write_bytes(b"broken after the sweep was checked")
    st = sw.run_sweep(s, tmp_path / "out", jobs=1, progress=False)
    assert st["done"] == st["total"] == len(s.runs)
    bad = [r for r in st["rows"] if r["trace"] == "b.h5"]
    good = [r for r in st["rows"] if r["trace"] == "a.h5"]
    assert bad and all(r["failed"] and r["error"].startswith("TraceError: ") for r in bad)
    assert all(r["error"] is None for r in good)
    # retry_errors runs them again (the store keeps one row per run)
    (d / "b.h5").write_bytes((folder / "b.h5").read_bytes())
    st2 = sw.run_sweep(s, tmp_path / "out", jobs=1, progress=False, retry_errors=True)
    assert all(r["error"] is None for r in st2["rows"]) and len(st2["rows"]) == len(s.runs)


def test_a_torn_last_line_is_ignored_then_cut(folder, tmp_path):
    s = sw.load_sweep(folder / "small.toml")
    out = tmp_path / "out"
    sw.run_sweep(s, out, jobs=1, progress=False)
    f = out / sw.RUNS_FILE
    lines = f.read_bytes().splitlines(keepends=True)
    # a driver killed inside its last write: the last run's line half written
    f.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    st = sw.sweep_status(out)
    assert st["done"] == len(s.runs) - 1
    st = sw.run_sweep(s, out, jobs=1, progress=False)
    assert st["done"] == len(s.runs)
    keys = [json.loads(x)["run_key"] for x in f.read_text().splitlines()]
    assert sorted(keys) == sorted(r.run_key for r in s.runs)          # every run exactly once


def test_a_policy_the_preset_cannot_run_is_refused_before_any_run(traces_dir, tmp_path):
    # preset detailed with a tensor-level policy ran, stored an error per run and exited 1;
    # `g10sim run` refuses the pair (exit 2), and so does the sweep file now, up front
    p = tmp_path / "s.toml"
    p.write_text('preset = "detailed"\ntraces = ["bert_base-b256"]\npolicies = ["g10", "flashneuron"]\n')
    with pytest.raises(sw.SweepError, match=r"s.toml: top level: policy 'flashneuron' is tensor level"):
        sw.load_sweep(p, traces_dir=traces_dir)


def test_ctrl_c_in_a_one_process_sweep_keeps_the_runs_that_finished(folder, tmp_path, monkeypatch):
    # jobs=1 ran every run before storing the first: an interrupt lost them all
    s = sw.load_sweep(folder / "small.toml")
    real, calls = sw.execute_run, []

    def interrupted_at_the_third(task):
        calls.append(task)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(sw, "execute_run", interrupted_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        sw.run_sweep(s, tmp_path / "out", jobs=1, progress=False)
    assert sw.sweep_status(tmp_path / "out")["done"] == 2
    monkeypatch.setattr(sw, "execute_run", real)
    st = sw.run_sweep(s, tmp_path / "out", jobs=1, progress=False)
    keys = [json.loads(x)["run_key"] for x in (tmp_path / "out" / sw.RUNS_FILE).read_text().splitlines()]
    assert st["done"] == len(s.runs) and sorted(keys) == sorted(r.run_key for r in s.runs)


def test_a_folder_that_is_not_a_store_is_refused(tmp_path):
    # it read as an empty store: "0 of 0 runs done", exit 0
    (tmp_path / "other").mkdir()
    for read in (sw.sweep_status, lambda d: sw.export_csv(d, tmp_path / "rows.csv")):
        with pytest.raises(sw.SweepError, match="not a sweep folder"):
            read(tmp_path / "other")


def test_a_second_driver_is_refused(folder, tmp_path):
    with sw.ResultStore(tmp_path / "out", writer=True):
        with pytest.raises(sw.SweepError, match="another sweep is writing"):
            sw.run_sweep(sw.load_sweep(folder / "small.toml"), tmp_path / "out", jobs=1, progress=False)


KILL_SWEEP = """
name = "kill"
traces = ["a.h5", "b.h5"]
policies = ["base-uvm", "g10", "deepum"]
[set]
"gpu.memory_GiB" = 0.014
[grid]
"host.memory_GiB" = [0.02, 0.03, 0.04, 0.05, 0.06]
"noise.kernel_time_sigma" = [0, 0.05, 0.1, 0.15]
"""


def test_sigkill_of_the_driver_midway_then_restart_leaves_every_run_once(folder, tmp_path):
    p = folder / "kill.toml"
    p.write_text(KILL_SWEEP)
    out = tmp_path / "out"
    code = (f"import sys; sys.path.insert(0, {SRC!r})\n"
            "from g10core.experiments.sweep import load_sweep, run_sweep\n"
            f"run_sweep(load_sweep({str(p)!r}), {str(out)!r}, jobs=1, progress=False)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    runs = out / sw.RUNS_FILE
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if runs.exists() and runs.read_bytes().count(b"\n") >= 5:
                break
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.005)
        assert proc.poll() is None                 # killed while it was still running
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    s = sw.load_sweep(p)
    before = sw.sweep_status(out)
    assert 5 <= before["done"] < len(s.runs)
    st = sw.run_sweep(s, out, jobs=1, progress=False)
    assert st["done"] == st["total"] == len(s.runs)
    keys = [json.loads(x)["run_key"] for x in runs.read_text().splitlines()]
    assert sorted(keys) == sorted(r.run_key for r in s.runs)        # every run once, none lost
    # the rows of the killed sweep are those an uninterrupted one gives
    clean = sw.run_sweep(s, tmp_path / "clean", jobs=1, progress=False)
    assert json.dumps(clean, sort_keys=True) == json.dumps(st, sort_keys=True)


def test_status_and_csv_export(folder, tmp_path):
    s = sw.load_sweep(folder / "small.toml")
    out = tmp_path / "out"
    sw.run_sweep(s, out, jobs=1, progress=False)
    st = sw.sweep_status(out)
    assert set(st) == {"total", "done", "failed", "rows"}
    csv_path = sw.export_csv(out, tmp_path / "rows.csv")
    import csv

    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(s.runs)
    assert list(rows[0])[:7] == ["run_key", "trace", "model", "batch", "policy", "host.memory_GiB",
                                 "noise.kernel_time_sigma"]
    by = {r["run_key"]: r for r in st["rows"]}
    for r in rows:
        mine = by[r["run_key"]]
        assert r["failed"] == str(mine["failed"])
        assert (r["time_s"] == "") == (mine["time_s"] is None)
        if mine["time_s"] is not None:
            assert float(r["time_s"]) == mine["time_s"]
    with pytest.raises(sw.SweepError, match="no such sweep folder"):
        sw.sweep_status(tmp_path / "nothing")


def test_a_plan_changes_what_status_counts(folder, tmp_path):
    out = tmp_path / "out"
    s = sw.load_sweep(folder / "small.toml")
    sw.run_sweep(s, out, jobs=1, progress=False)
    p = write(folder, 'traces = ["a.h5"]\npolicies = ["ideal", "g10"]\n[set]\n"gpu.memory_GiB" = 0.014\n'
                      '[grid]\n"host.memory_GiB" = [0, 0.5]\n"noise.kernel_time_sigma" = [0]\n')
    sub = sw.load_sweep(p)
    st = sw.run_sweep(sub, out, jobs=1, progress=False)
    assert st["total"] == 4 and st["done"] == 4
    lines = (out / sw.RUNS_FILE).read_text().splitlines()
    assert len(lines) == len(s.runs) + 2                 # only the two new points ran
