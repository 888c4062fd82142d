"""bench/bench_detailed.py's budget bookkeeping and process measurement (issue 44), and that
the asv classes of bench/ that track the budgets are there.

The modules are loaded from the checkout's bench/ by path (they are scripts and an asv suite,
not part of the package); nothing here runs a simulation.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load(name: str):
    if str(BENCH) not in sys.path:          # as when run as a script: the modules import each other
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def detailed():
    return load("bench_detailed")


def row(policy, cpu_s, rss_MB, table_MB=0.0, rc=0):
    return {"trace": "senet154-b1024", "policy": policy, "rc": rc, "cpu_s": cpu_s, "peak_rss_MB": rss_MB,
            "table_MB": table_MB}


def test_base_uvm_has_its_own_cpu_budget(detailed):
    assert detailed.budget_cpu_s("base-uvm") == detailed.BUDGET_BASE_UVM_CPU_S
    for policy in ("belady", "deepum", "g10", "ideal"):
        assert detailed.budget_cpu_s(policy) == detailed.BUDGET_CPU_S
    between = (detailed.BUDGET_CPU_S + detailed.BUDGET_BASE_UVM_CPU_S) / 2
    assert detailed.over_budget(row("base-uvm", between, 100)) == "met"
    assert detailed.over_budget(row("belady", between, 100)) == "time missed"


def test_memory_budget_excludes_the_ftl_table(detailed):
    limit = detailed.BUDGET_RSS_MB
    assert detailed.over_budget(row("base-uvm", 1.0, limit + 1000, table_MB=1000)) == "met"
    assert detailed.over_budget(row("base-uvm", 1.0, limit + 1001, table_MB=1000)) == "memory missed"
    over_both = row("belady", detailed.BUDGET_CPU_S + 1, limit + 1)
    assert detailed.over_budget(over_both) == "time and memory missed"


def test_refused_and_failed_runs_say_so(detailed):
    assert detailed.over_budget(row("flashneuron", 0.5, 60, rc=2)) == "refused"
    assert detailed.over_budget(row("g10", 0.5, 60, rc=1)) == "exit 1"
    # the /usr/bin/time rows of the grid name the exit code "exit"
    assert detailed.over_budget({"exit": 2, "policy": "g10-gds", "cpu_s": 0.1, "peak_rss_MB": 50}) == "refused"


def test_measured_counts_the_child_alone(detailed):
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nprint('done')"
    out = detailed.measured([sys.executable, "-c", spin])
    assert out["rc"] == 0 and out["stdout"].strip() == "done"
    assert 0.3 <= out["cpu_s"] <= out["wall_s"] + 0.05      # its own CPU time, not this process's
    assert out["peak_rss_MB"] > 1
    assert detailed.measured([sys.executable, "-c", "raise SystemExit(3)"])["rc"] == 3


def test_asv_tracks_the_budgeted_runs(detailed):
    grid = detailed.DetailedFig11
    traces, policies = grid.params
    assert {"resnet152-b1280", "senet154-b1024"} <= set(traces)
    assert {"base-uvm", "belady"} <= set(policies)
    for name in ("track_cpu_s", "track_peak_rss_MB", "track_rss_over_table_MB", "peakmem_run",
                 "track_iteration_time_s"):
        assert callable(getattr(grid, name))
    llm = load("bench_llm").ReproduceLlm
    assert callable(llm.track_wall_s) and callable(llm.track_cpu_s) and callable(llm.track_peak_rss_MB)
    fig11 = load("bench_fig11").Fig11
    assert callable(fig11.track_wall_s) and callable(fig11.track_cpu_s)
