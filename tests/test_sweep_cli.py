"""The command line of sweeps and figure reproductions: `g10sim sweep`, `sweep status`,
`sweep export`, `reproduce figN`, `report figN` (exit codes: 0 result, 1 a run raised, 2 bad input)."""
from __future__ import annotations

import csv
import io
import json

import pytest

from g10core.cli import main
from g10core.workload.synth import synthesize
from g10core.workload.trace import write_trace

SWEEP = """
name = "cli"
traces = ["a.h5"]
policies = ["base-uvm", "g10", "ideal"]
[set]
"gpu.memory_GiB" = 0.014
[grid]
"host.memory_GiB" = [0.02, 0.03]
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), d / "a.h5")
    (d / "s.toml").write_text(SWEEP)
    return d


def test_sweep_status_export(folder, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["sweep", str(folder / "s.toml"), "--out", str(out), "--jobs", "1", "--no-progress"])
    text, err = capsys.readouterr()
    assert code == 0, err
    assert "cli: 6 of 6 runs done, 0 failed (0 raised an error)" in text
    code = main(["sweep", "status", str(out), "--json", "-"])
    st = json.loads(capsys.readouterr().out)
    assert code == 0 and (st["total"], st["done"], st["failed"]) == (6, 6, 0)
    assert {r["host.memory_GiB"] for r in st["rows"]} == {0.02, 0.03}
    assert all(set(r) >= {"run_key", "trace", "policy", "time_s", "failed", "error"} for r in st["rows"])
    code = main(["sweep", "status", str(out)])
    human = capsys.readouterr().out
    assert code == 0 and human.startswith("6 of 6 runs done, 0 failed") and "host.memory_GiB" in human
    code = main(["sweep", "export", str(out), "-o", "-"])
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert code == 0 and len(rows) == 6 and rows[0]["trace"] == "a.h5"
    assert {r["run_key"] for r in rows} == {r["run_key"] for r in st["rows"]}


@pytest.mark.parametrize("text, message", [
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[grid]\n"host.memory_GiB" = []\n', "is an empty list"),
    ('traces = ["missing.h5"]\npolicies = ["g10"]\n', "trace 'missing.h5' (line 1) not found"),
    ('traces = ["a.h5"]\npolicies = ["g10"]\n[set]\n"gpu.speed" = 3\n', "unknown config key gpu.speed"),
])
def test_a_malformed_sweep_is_one_line_exit_2_and_runs_nothing(folder, tmp_path, capsys, text, message):
    bad = folder / "bad.toml"
    bad.write_text(text)
    out = tmp_path / "out"
    code = main(["sweep", str(bad), "--out", str(out), "--no-progress"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and message in err and str(bad) in err
    assert not out.exists()


def test_sweep_usage_errors_exit_2(tmp_path, capsys):
    assert main(["sweep"]) == 2
    assert main(["sweep", "status"]) == 2
    assert main(["sweep", "status", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "no such sweep folder" in err


def test_a_run_that_raised_makes_exit_1(folder, tmp_path, capsys, monkeypatch):
    from g10core.experiments import sweep as sw

    d = tmp_path / "t"
    d.mkdir()
    (d / "a.h5").write_bytes((folder / "a.h5").read_bytes())
    (d / "s.toml").write_text(SWEEP)
    real = sw.load_sweep

    def load_then_break(*a, **k):            # the trace breaks after the sweep file was checked
        s = real(*a, **k)
        (d / "a.h5").write_bytes(b"broken")
        return s

    monkeypatch.setattr(sw, "load_sweep", load_then_break)
    code = main(["sweep", str(d / "s.toml"), "--out", str(tmp_path / "out"), "--jobs", "1", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1 and "6 raised an error" in out and "TraceError" in out


def test_reproduce_and_report_a_figure(traces_dir, tmp_path, capsys):
    out, js, png = tmp_path / "store", tmp_path / "fig19.json", tmp_path / "fig19.png"
    code = main(["reproduce", "fig19", "--models", "bert_base-b256", "--jobs", "1", "--no-progress",
                 "--out", str(out), "--json", str(js), "--plot", str(png)])
    text, err = capsys.readouterr()
    assert code == 0, err
    assert "Fig. 19" in text and "6 compared, 6 within ±0.2 %" in text and f"wrote {png}" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(js.read_text())
    assert doc["schema"] == "g10core-figure" and doc["figure"] == "fig19" and len(doc["rows"]) == 6
    assert all({"model", "batch", "policy", "sigma", "time_s", "normalized_performance", "failed"} <= set(r)
               for r in doc["rows"])
    # report reprints it from the JSON and from the store (the store run again: nothing to do)
    assert main(["report", "fig19", str(js)]) == 0
    from_json = capsys.readouterr().out
    assert main(["report", "fig19", str(out)]) == 0
    from_store = capsys.readouterr().out
    assert from_json.strip() == from_store.strip() and "6 compared" in from_json
    assert main(["report", "fig18", str(js)]) == 2
    assert "holds fig19, not fig18" in capsys.readouterr().err


def test_reproduce_refuses_an_unknown_workload(capsys):
    assert main(["reproduce", "fig16", "--models", "bert_base-b999", "--no-progress"]) == 2
    assert "not a workload of fig16" in capsys.readouterr().err


def _leaves(d: dict, prefix: str = "") -> dict:
    """A record's values by path (``meta.phases_s.setup``); the grid is its own columns."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and not (prefix == "" and k == "grid"):
            out.update(_leaves(v, f"{prefix}{k}."))
        elif not (prefix == "" and k == "grid"):
            out[prefix + k] = v
    return out


def test_sweep_export_has_every_value_the_store_holds(folder, tmp_path, capsys):
    # "the export with every column the store holds": config_hash, trace_digest, the run's meta
    # (wall and CPU seconds, phases, worker, version, finish time) and the record's schema_version too
    out = tmp_path / "out"
    assert main(["sweep", str(folder / "s.toml"), "--out", str(out), "--jobs", "1", "--no-progress",
                 "--gpu", "H100-SXM"]) == 0
    capsys.readouterr()
    assert main(["sweep", "export", str(out), "-o", "-"]) == 0
    rows = {r["run_key"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    recs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(rows) == len(recs) == 6
    for rec in recs:
        row = rows[rec["run_key"]]
        values = sorted(str(v) for v in row.values())
        for path, v in _leaves(rec).items():
            want = "" if v is None else str(v)
            assert want in values, (path, v)
        assert row["config_hash"] == rec["config_hash"] and row["trace_digest"] == rec["trace_digest"]
        assert float(row["wall_s"]) == rec["meta"]["wall_s"] and row["worker"] == rec["meta"]["worker"]
        assert int(row["schema_version"]) == rec["schema_version"]
    # the GPU given with --gpu is in the config hash: the same sweep on the default GPU differs there
    base = tmp_path / "base"
    assert main(["sweep", str(folder / "s.toml"), "--out", str(base), "--jobs", "1", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["sweep", "export", str(base), "-o", "-"]) == 0
    other = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["config_hash"] for r in other}.isdisjoint({r["config_hash"] for r in rows.values()})


def test_sweep_export_has_the_breakdown_traffic_and_fault_columns(folder, tmp_path, capsys):
    # runs.jsonl holds them; the CSV left them out
    out = tmp_path / "out"
    assert main(["sweep", str(folder / "s.toml"), "--out", str(out), "--jobs", "1", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["sweep", "export", str(out), "-o", "-"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    records = {}
    for line in (out / "runs.jsonl").read_text().splitlines():
        rec = json.loads(line)
        records[rec["run_key"]] = rec
    for col in ("best_iteration", "breakdown_compute_s", "breakdown_overlap_s", "breakdown_stall_s",
                "traffic_ssd_to_gpu_pages", "traffic_gpu_to_ssd_pages", "traffic_host_to_gpu_pages",
                "traffic_gpu_to_host_pages", "faults_host_pages", "faults_ssd_pages", "faults_unallocated_pages"):
        assert col in rows[0], col
    for r in rows:
        rec = records[r["run_key"]]
        assert int(r["best_iteration"]) == rec["best_iteration"]
        assert float(r["breakdown_stall_s"]) == rec["breakdown_s"]["stall"]
        assert int(r["traffic_ssd_to_gpu_pages"]) == rec["traffic_pages"]["ssd_to_gpu"]
        assert int(r["faults_host_pages"]) == rec["faults_pages"]["host"]
