"""DataFrames and notebook display: Result.to_pandas, sweep.to_pandas, sweep export (CSV, Parquet),
Result's one-line repr and its HTML summary, the flattening both tables share.

Every DataFrame is checked cell by cell against the JSON it stands for: ``g10sim run --json
--kernels`` for the kernel table, ``IterationStats.to_dict`` for the iterations, ``runs.jsonl``
for a sweep.
"""
from __future__ import annotations

import csv
import json
import math
import sys
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from g10core import results
from g10core.cli import main
from g10core.config import DEFAULT_PRESET, resolve
from g10core.experiments import sweep as sw
from g10core.results import KERNEL_TABLE_COLUMNS, flat_columns
from g10core.simulator import Simulator
from g10core.workload.synth import synthesize
from g10core.workload.trace import write_trace

SMALL = ["gpu.memory_GiB=0.03", "host.memory_GiB=0.05"]
SET_SMALL = [x for s in SMALL for x in ("--set", s)]

SWEEP = """
name = "frames"
traces = ["a.h5"]
policies = ["base-uvm", "g10", "g10-gds", "flashneuron", "ideal"]
[set]
"gpu.memory_GiB" = 0.014
[grid]
"host.memory_GiB" = [0, 0.03]
"""


@pytest.fixture(scope="module")
def trace():
    return synthesize(40, 64 << 20, pattern="training", seed=1)


@pytest.fixture(scope="module")
def trace_file(trace, tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "synth_training-b1.h5"
    write_trace(trace, path)
    return path


@pytest.fixture(scope="module")
def runs(trace):
    cfg = resolve(DEFAULT_PRESET, None, SMALL)
    return {p: Simulator(cfg).run(trace, p) for p in ("base-uvm", "g10", "g10-gds", "ideal")}


@pytest.fixture(scope="module")
def store(tmp_path_factory, trace):
    d = tmp_path_factory.mktemp("sweep")
    write_trace(trace, d / "a.h5")
    (d / "s.toml").write_text(SWEEP)
    sw.run_sweep(sw.load_sweep(d / "s.toml"), d / "out", jobs=1, progress=False)
    return d / "out"


def _same(frame_value, json_value) -> bool:
    """A DataFrame cell equals its JSON value (null: NaN or None in the frame)."""
    if json_value is None:
        return frame_value is None or (isinstance(frame_value, float) and math.isnan(frame_value))
    if isinstance(json_value, float):
        return float(frame_value) == json_value
    return frame_value == json_value


# ---- the flattening -----------------------------------------------------------------------

def test_flat_columns_spreads_each_table_with_its_unit_last():
    d = {"index": 1, "time_s": 2.5, "breakdown_s": {"compute": 1.5, "stall": 1.0},
         "faults_pages": {"host": 3, "ssd": 4}, "traffic_bytes": {"gpu_to_ssd": 8}, "grid": {"a.b": 1}}
    assert flat_columns(d) == {"index": 1, "time_s": 2.5, "breakdown_compute_s": 1.5, "breakdown_stall_s": 1.0,
                               "faults_host_pages": 3, "faults_ssd_pages": 4, "traffic_gpu_to_ssd_bytes": 8,
                               "grid_a.b": 1}
    assert list(flat_columns(d)) == ["index", "time_s", "breakdown_compute_s", "breakdown_stall_s",
                                     "faults_host_pages", "faults_ssd_pages", "traffic_gpu_to_ssd_bytes",
                                     "grid_a.b"]


# ---- kernel names ------------------------------------------------------------------------

def test_kernel_names_are_the_traces_own_array(runs, trace):
    for policy, r in runs.items():
        assert r.kernel_names is trace.kernel_name, policy          # a reference, not a copy
        k = r.kernel_table()
        assert list(k["name"]) == [trace.kernel_name[i] for i in k["kernel"]], policy
    assert runs["base-uvm"].kernel_table()["name"][0] == "load_data"


def test_a_result_without_names_has_none(runs):
    r = runs["base-uvm"]
    bare = results.Result(policy=r.policy, level=r.level, preset=r.preset, config=r.config,
                          config_hash=r.config_hash, trace=r.trace, ideal_time_s=r.ideal_time_s,
                          iterations=r.iterations, kernels=r.kernels)
    names = bare.kernel_table()["name"]
    assert len(names) == len(r.kernel_table()["kernel"]) and all(n is None for n in names)
    assert set(json.loads(bare.to_json(kernels=True))["kernels"]["name"]) == {None}


# ---- Result.to_pandas ----------------------------------------------------------------------

def test_kernels_frame_equals_the_cli_json_rows(trace_file, tmp_path, capsys):
    cfg = resolve(DEFAULT_PRESET, None, SMALL)
    for policy in ("base-uvm", "g10-gds", "ideal"):
        path = tmp_path / f"{policy}.json"
        assert main(["run", str(trace_file), "--policy", policy, *SET_SMALL, "--json", str(path), "--kernels"]) == 0
        capsys.readouterr()
        d = json.loads(path.read_text())
        assert d["kernel_columns"][:3] == ["iteration", "kernel", "name"]
        df = Simulator(cfg).run(str(trace_file), policy).to_pandas("kernels")
        assert list(df.columns) == d["kernel_columns"] == list(KERNEL_TABLE_COLUMNS)
        assert len(df) == len(d["kernels"]["kernel"]) > 0
        for col in df.columns:
            got, want = df[col].tolist(), d["kernels"][col]
            bad = [i for i, (a, b) in enumerate(zip(got, want)) if not _same(a, b)]
            assert not bad, (policy, col, bad[:3], [got[i] for i in bad[:3]], [want[i] for i in bad[:3]])
        assert df["name"].iloc[0] == "load_data"


def test_kernels_frame_adds_up_to_the_iterations(runs):
    for policy, r in runs.items():
        df = r.to_pandas("kernels")
        per_iteration = df.groupby("iteration")["time_s"].sum()
        for it in r.iterations:
            assert per_iteration[it.index] == pytest.approx(it.time_s, rel=1e-9), policy
        if r.level == "page":
            # the partition rule: each kernel's compute + overlap + stall is its time
            parts = df["compute_s"] + df["overlap_s"] + df["stall_s"] + df["translation_s"]
            np.testing.assert_allclose(parts, df["time_s"], rtol=1e-9, atol=1e-12)


def test_iterations_frame_equals_the_iteration_dicts(runs):
    for policy, r in runs.items():
        df = r.to_pandas("iterations")
        assert len(df) == len(r.iterations) > 0
        cols = list(df.columns)
        assert cols[:2] == ["iteration", "reported"]
        for col in ("breakdown_compute_s", "breakdown_overlap_s", "breakdown_stall_s", "traffic_ssd_to_gpu_pages",
                    "traffic_gpu_to_host_pages", "faults_host_pages", "faults_unallocated_pages",
                    "prefetched_ssd_pages", "hinted_host_pages", "refetched_unallocated_pages",
                    "in_transfer_pages", "allocated_pages", "time_cycles"):
            assert col in cols, (policy, col)
        for row, it in zip(df.to_dict("records"), r.iterations):
            d = it.to_dict()
            want = {"iteration": d["index"], "reported": it.index in r.reported_iterations}
            for key, value in d.items():
                if isinstance(value, dict):
                    unit = "_s" if key.endswith("_s") else "_pages"
                    want.update((f"{key[:-len(unit)]}_{k}{unit}", v) for k, v in value.items())
                elif key != "index":
                    want[key] = value
            assert set(row) == set(want), policy
            for key, value in want.items():
                assert _same(row[key], value), (policy, key, row[key], value)
            assert row["breakdown_stall_s"] == it.breakdown_s["stall"]
            assert row["faults_host_pages"] == it.faults_pages["host"]
        # the reported rows' mean is the iteration time
        assert df[df.reported]["time_s"].mean() == pytest.approx(r.iteration_time_s, rel=1e-12)


def test_a_failed_run_has_empty_frames_with_their_columns(runs):
    r = results.failed("cannot fit", level="page", ideal_time_s=1.0, policy="g10", preset="default", config={},
                       config_hash="x", trace={"model": "m", "batch_size": 2})
    its = r.to_pandas("iterations")
    assert len(its) == 0 and list(its.columns) == list(runs["base-uvm"].to_pandas("iterations").columns)
    k = r.to_pandas("kernels")
    assert len(k) == 0 and list(k.columns) == list(KERNEL_TABLE_COLUMNS)


def test_to_pandas_refuses_another_table(runs):
    with pytest.raises(ValueError, match="'kernels', 'iterations' or 'inference'"):
        runs["g10"].to_pandas("tensors")


def test_without_pandas_the_error_is_one_line_naming_the_extra(runs, monkeypatch, tmp_path, store):
    monkeypatch.setitem(sys.modules, "pandas", None)          # import pandas raises ImportError
    for call in (lambda: runs["g10"].to_pandas("kernels"), lambda: sw.to_pandas(store)):
        with pytest.raises(ImportError) as exc:
            call()
        msg = str(exc.value)
        assert "\n" not in msg and "pandas" in msg and "pip install 'g10core[analysis]'" in msg


# ---- repr and _repr_html_ ------------------------------------------------------------------

def test_repr_is_one_short_line(runs):
    r = runs["base-uvm"]
    text = repr(r)
    assert text == (f"Result(trace='synth_training-b1', policy='base-uvm', preset='default', "
                    f"iteration_time_s={r.iteration_time_s:.6g}, ideal_time_s={r.ideal_time_s:.6g}, failed=False)")
    assert "\n" not in text and len(text) < 160 and "config" not in text
    f = results.failed("host memory overflow", level="page", ideal_time_s=2.5, policy="g10", preset="g10-artifact",
                       config={}, config_hash="x", trace={"model": "bert_base", "batch_size": 256})
    assert repr(f) == ("Result(trace='bert_base-b256', policy='g10', preset='g10-artifact', iteration_time_s=inf, "
                       "ideal_time_s=2.5, failed=True)")


class _TagCheck(HTMLParser):
    """Counts cells and checks that every tag closes in order."""

    def __init__(self):
        super().__init__()
        self.stack, self.cells, self.errors = [], [], []

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)

    def handle_data(self, data):
        if self.stack and self.stack[-1] in ("th", "td"):
            self.cells.append(data)


def _parse(text: str) -> _TagCheck:
    p = _TagCheck()
    p.feed(text)
    p.close()
    assert not p.errors and not p.stack, text
    return p


def test_repr_html_is_a_table_with_the_numbers(runs):
    r = runs["base-uvm"]
    text = r._repr_html_()
    assert text.startswith("<table") and text.endswith("</table>")
    cells = _parse(text).cells
    table = dict(zip(cells[0::2], cells[1::2]))
    assert table["trace"] == "synth_training-b1" and table["policy"] == "base-uvm (page level)"
    assert table["preset"] == "default"
    assert table["iteration time"] == f"{r.iteration_time_s:.6g} s (steady_mean: iterations 1, 2)"
    assert table["ideal time"] == f"{r.ideal_time_s:.6g} s"
    assert table["slowdown"] == f"{r.slowdown:.6g}"
    b = r.breakdown_s
    assert table["breakdown"] == (f"compute {b['compute']:.6g}, overlap {b['overlap']:.6g}, "
                                  f"stall {b['stall']:.6g} s")
    assert f"host {r.faults_pages['host']:.6g}" in table["demand faults"]
    assert f"gpu_to_host {r.traffic_pages['gpu_to_host']:.6g}" in table["traffic"]


def test_repr_html_of_a_failed_run_escapes_the_reason():
    f = results.failed("a <b> & c", level="tensor", ideal_time_s=1.0, policy="flashneuron", preset="default",
                       config={}, config_hash="x", trace={"model": "m", "batch_size": 1})
    text = f._repr_html_()
    assert "a &lt;b&gt; &amp; c" in text
    cells = _parse(text).cells
    assert dict(zip(cells[0::2], cells[1::2]))["failed"] == "a <b> & c"


# ---- sweeps ----------------------------------------------------------------------------------

def _records(store) -> dict:
    out = {}
    for line in (store / "runs.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out[rec["run_key"]] = rec
    return out


def test_sweep_frame_equals_runs_jsonl(store):
    df = sw.to_pandas(store)
    recs = _records(store)
    assert len(df) == len(recs) == 10 and set(df["run_key"]) == set(recs)
    assert list(df.columns[:7]) == ["run_key", "trace", "model", "batch", "policy", "host.memory_GiB", "time_s"]
    failed = 0
    for row in df.to_dict("records"):
        rec = recs[row["run_key"]]
        assert row["host.memory_GiB"] == rec["grid"]["host.memory_GiB"]
        for key in ("trace", "model", "batch", "policy", "time_s", "ideal_time_s", "normalized_performance",
                    "failed", "failure_reason", "error"):
            assert _same(row[key], rec[key]), (key, row[key], rec[key])
        tables = ("breakdown_s", "traffic_pages", "faults_pages", "prefetched_pages", "hinted_pages",
                  "refetched_pages")
        if rec["failed"]:
            failed += 1
            assert all(_same(row[f"breakdown_{k}_s"], None) for k in ("compute", "overlap", "stall"))
            continue
        assert row["best_iteration"] == rec["best_iteration"]
        for table in tables:
            unit = "_s" if table.endswith("_s") else "_pages"
            stem = table[: -len(unit)]
            assert rec[table], table
            for k, v in rec[table].items():
                assert row[f"{stem}_{k}{unit}"] == v, (table, k)
    assert 0 < failed < len(df)          # FlashNeuron cannot fit its weights and working set in 0.014 GiB


def test_sweep_export_csv_has_the_frames_columns_and_values(store, tmp_path, capsys):
    df = sw.to_pandas(store)
    dest = tmp_path / "rows.csv"
    assert main(["sweep", "export", str(store), "-o", str(dest)]) == 0
    capsys.readouterr()
    with open(dest, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(df.columns)
    for got, want in zip(rows, df.to_dict("records")):
        for col, v in want.items():
            if v is None or (isinstance(v, float) and math.isnan(v)):
                assert got[col] == "", col
            elif isinstance(v, (bool, np.bool_, str)):
                assert got[col] == str(v), col
            else:
                assert float(got[col]) == float(v), col


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def test_sweep_export_parquet(store, tmp_path, capsys):
    dest = tmp_path / "rows.parquet"
    code = main(["sweep", "export", str(store), "-o", str(dest)])
    out, err = capsys.readouterr()
    if _has_pyarrow():
        assert code == 0 and err == ""
        back = pd.read_parquet(dest)
        pd.testing.assert_frame_equal(back, sw.to_pandas(store), check_dtype=False)
    else:        # pyarrow is optional: then the answer is one line, exit 2, and no file
        assert code == 2 and out == "" and len(err.splitlines()) == 1
        assert "pyarrow" in err and str(dest) in err and not dest.exists()


def test_sweep_export_parquet_without_pyarrow_is_one_line(store, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    dest = tmp_path / "rows.parquet"
    assert main(["sweep", "export", str(store), "-o", str(dest)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and not dest.exists()
    assert err.startswith("g10sim: error: ") and "pip install pyarrow" in err and "CSV" in err
    with pytest.raises(sw.SweepError, match="pyarrow"):
        sw.export(store, dest)
