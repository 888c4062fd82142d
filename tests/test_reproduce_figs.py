"""Figs. 12-19 reproduced against the published cells (``g10core/experiments/data/published.csv``).

A reproduced cell must be within 1 % of the published one (Fig. 19: normalised
performance within 0.2 %), and runs must fail exactly where the published figure has no
number.  The fast tests run a few cheap workloads of each figure through the same code
path as ``g10sim reproduce`` (sweep file -> store -> figure rows -> published cells); the
tests marked ``slow`` run every figure's whole grid.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os

import pytest

from g10core.experiments import reproduce
from g10core.experiments.published import published_cells, published_fig12
from g10core.experiments.report import (
    figure_cells, figure_document, figure_summary, format_figure_table, load_figure_json, plot_figure,
    write_figure_json,
)
from g10core.experiments.sweep import ResultStore, run_sweep


def sub_sweep(figure, traces_dir, keep):
    s = reproduce.figure_sweep(figure, traces_dir=traces_dir)
    runs = tuple(r for r in s.runs if keep(r))
    assert runs
    return dataclasses.replace(s, runs=runs)


def run_rows(figure, sweep, out):
    run_sweep(sweep, out, jobs=1, progress=False)
    return reproduce.figure_rows(figure, sweep, ResultStore(out).records())


# Cells off by more than the tolerance, with the reason.  None: FlashNeuron's per-kernel
# timeline (Figs. 12, 13) matches the published one kernel for kernel once the offloads issued
# at one kernel queue in std::sort's order and a kernel's tensors are walked in the order of the
# published simulator's Tensor addresses (tensorsim.artifact_tensor_addresses).
KNOWN_OFF: set = set()

# Fig. 17 cells the published figure has no number for although the run completes: the
# artifact's example_results lack them; they are not failures.  The published simulator
# (github.com/platformxlab/G10 de2c8c6, built with g++ 12 -O3 and run by us on the artifact's
# inputs) completes them with our numbers: FlashNeuron BERT-384 22803.4 ms; DeepUM+ ViT-768
# with 0 GB of host memory 19,118,508,776 cycles in its faster iteration (see the test below).
# DeepUM+ has published numbers only at 128 GB and for a few workloads (BERT-256 has none at
# 256 GB but one at 128 GB; ours are equal).
FIG17_PUBLISHED_NO_NUMBER_FLASHNEURON = {("bert_base", 384), ("resnet152", 1536)}


def assert_reproduced(figure, rows, *, expect_compared):
    cells = figure_cells(figure, rows)
    run = [c for c in cells if c["status"] != "missing"]
    bad = [c for c in run if c["status"] not in ("ok", "both fail")
           and (figure, c["model"], c["batch"], c["policy"], c["metric"]) not in KNOWN_OFF]
    assert not bad, bad[:5]
    assert sum(c["status"] in ("ok", "off") for c in run) == expect_compared
    return cells


# ---- fast subsets ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bert256_rows(traces_dir, tmp_path_factory):
    """BERT-256 under the four policies of Figs. 12-14 (with per-kernel slowdowns)."""
    s = sub_sweep("fig12", traces_dir, lambda r: r.trace == "bert_base-b256")
    return run_rows("fig12", s, tmp_path_factory.mktemp("fig12"))


def test_fig12_bert_kernel_slowdown_quantiles(bert256_rows):
    cells = assert_reproduced("fig12", bert256_rows, expect_compared=4 * 103)
    page = [c for c in cells if c["policy"] != "flashneuron" and c["status"] != "missing"]
    assert max(abs(c["error_pct"]) for c in page) < 1e-4      # page level: kernel for kernel
    n = {p: len(r["kernel_slowdown"]) for r in bert256_rows for p in [r["policy"]]}
    assert n == {p: published_fig12()[("bert_base", 256, p)][2] for p in n}       # 1369 kernels each


def test_fig13_bert_breakdown(bert256_rows):
    assert_reproduced("fig13", bert256_rows, expect_compared=12)


def test_fig14_bert_traffic(bert256_rows):
    assert_reproduced("fig14", bert256_rows, expect_compared=16)


def test_fig15_small_batches(traces_dir, tmp_path):
    s = sub_sweep("fig15", traces_dir, lambda r: r.trace in ("bert_base-b128", "vit-b256"))
    rows = run_rows("fig15", s, tmp_path)
    assert {r["policy"] for r in rows} == {"base-uvm", "flashneuron", "deepum", "g10", "ideal"}
    assert_reproduced("fig15", rows, expect_compared=10)


def test_fig16_bert_host_memory(traces_dir, tmp_path):
    s = sub_sweep("fig16", traces_dir, lambda r: r.trace == "bert_base-b256")
    rows = run_rows("fig16", s, tmp_path)
    assert sorted(r["host_memory_GiB"] for r in rows) == [0, 16, 32, 64, 128, 256]
    assert_reproduced("fig16", rows, expect_compared=6)


def test_fig17_bert_policies_under_host_memory(traces_dir, tmp_path):
    """DeepUM+'s host-memory runs: where the published figure has a number we match it; where it
    has none (its runs never finished: BERT-256 at 256 GB has none while 128 GB has one) ours
    complete, with 256 GB as fast as 128 GB."""
    s = sub_sweep("fig17", traces_dir, lambda r: r.trace == "bert_base-b256" and r.policy != "base-uvm")
    rows = run_rows("fig17", s, tmp_path)
    fn = sorted(r["host_memory_GiB"] for r in rows if r["policy"] == "flashneuron")
    assert fn == [0, 16, 32, 64, 128, 256]                 # one run at 128 GB, shown in every row
    cells = figure_cells("fig17", rows)
    mine = [c for c in cells if c["status"] != "missing"]
    assert len(mine) == 3 * 6
    no_number = {c["host_memory_GiB"] for c in mine if c["status"] == "unpublished"}
    assert all(c["policy"] == "deepum" for c in mine if c["status"] == "unpublished")
    assert no_number == {0, 16, 32, 64, 256}
    assert all(c["status"] == "ok" for c in mine if c["status"] != "unpublished")
    deepum = {r["host_memory_GiB"]: r["time_s"] for r in rows if r["policy"] == "deepum"}
    assert deepum[256] == deepum[128] and deepum[0] > deepum[16] > deepum[32] >= deepum[64]


@pytest.mark.parametrize("trace, policy, host, expected_s", [
    # run by us with the published simulator (see FIG17_PUBLISHED_NO_NUMBER_FLASHNEURON)
    ("vit-b768", "deepum", 0, 19_118_508_776 / 1.2e9),
    ("bert_base-b384", "flashneuron", 128, 22803.4e-3),
])
def test_unpublished_fig17_cells_complete_in_the_published_simulator(traces_dir, trace, policy, host, expected_s):
    from g10core.config import preset
    from g10core.simulator import Simulator

    cfg = preset("g10-artifact").with_overrides({"host": {"memory_GiB": host}})
    r = Simulator(cfg).run(traces_dir / f"{trace}.h5", policy)
    assert not r.failed
    assert r.iteration_time_s == pytest.approx(expected_s, rel=1e-5)
    model, batch = trace.split("-b")
    cell = next(c for c in published_cells("fig17") if (c.model, c.batch, c.policy, c.host_memory_GiB)
                == (model, int(batch), policy, host))
    assert cell.fails                                   # example_results has no number here


def test_fig18_bert512_at_equal_ssd_and_pcie_bandwidth(traces_dir, tmp_path):
    """The top of Fig. 18: SSD 32 GB/s = PCIe 32 GB/s (the SimulationError of issue 14), and 6.4 GB/s."""
    s = sub_sweep("fig18", traces_dir, lambda r: r.trace == "bert_base-b512" and r.policy != "flashneuron"
                  and r.grid["ssd.bandwidth_GBps"] in (6.4, 32.0))
    rows = run_rows("fig18", s, tmp_path)
    assert not any(r["failed"] or r["error"] for r in rows)
    cells = assert_reproduced("fig18", rows, expect_compared=8)      # 3 policies + ideal, 2 bandwidths
    at32 = [c for c in cells if c["status"] == "ok" and c["ssd_bandwidth_GBps"] == 32.0]
    assert {c["policy"] for c in at32} == {"base-uvm", "deepum", "g10", "ideal"}
    assert max(abs(c["error_pct"]) for c in at32) < 1e-9        # exact: the published cycles


def test_fig19_bert_noise(traces_dir, tmp_path):
    s = sub_sweep("fig19", traces_dir, lambda r: r.trace == "bert_base-b256")
    rows = run_rows("fig19", s, tmp_path)
    cells = assert_reproduced("fig19", rows, expect_compared=6)
    assert all(c["tolerance_pct"] == 0.2 for c in cells)


# ---- the figure documents, tables and plots --------------------------------------------

def test_figure_json_table_and_plot_round_trip(bert256_rows, tmp_path):
    path = write_figure_json("fig13", bert256_rows, tmp_path / "fig13.json", meta={"note": "test"})
    figure, rows = load_figure_json(path)
    assert figure == "fig13" and len(rows) == len(bert256_rows)
    doc = json.loads(path.read_text())
    assert doc["summary"] == figure_summary("fig13", figure_cells("fig13", bert256_rows))
    table = format_figure_table("fig13", rows)
    assert "Fig. 13" in table and "bert_base" in table and "12 compared, 12 within ±1 %" in table
    for fig in ("fig12", "fig13", "fig14"):
        png = plot_figure(fig, bert256_rows, tmp_path / f"{fig}.png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_published_cells_cover_every_figure():
    counts = {f: len(published_cells(f)) for f in ("fig11", "fig13", "fig14", "fig15", "fig16", "fig17", "fig18",
                                                   "fig19")}
    assert counts == {"fig11": 35, "fig13": 60, "fig14": 80, "fig15": 125, "fig16": 128, "fig17": 384,
                      "fig18": 125, "fig19": 30}
    assert len(published_fig12()) == 18
    # units: cycles at 1.2 GHz; FlashNeuron's breakdown in ms
    c = next(c for c in published_cells("fig11") if (c.model, c.policy) == ("bert_base", "g10"))
    assert c.seconds == pytest.approx(7.311024437, rel=1e-9)


# ---- every cell (slow) ---------------------------------------------------------------------

@pytest.fixture(scope="session")
def figure_store(tmp_path_factory):
    """One store for every whole-figure test, so figures share their runs (Figs. 12-14 are the same
    20 runs, Fig. 16's are in Fig. 17, ...); G10_REPRODUCE_STORE names one that already holds
    them (e.g. the --out DIR of `g10sim reproduce all`)."""
    return os.environ.get("G10_REPRODUCE_STORE") or tmp_path_factory.mktemp("figures")


def check_whole_figure(figure, traces_dir, store):
    rows = reproduce.reproduce_figure(figure, store, traces_dir=traces_dir, progress=False)
    cells = figure_cells(figure, rows)
    s = figure_summary(figure, cells)
    assert s["by_status"].get("missing", 0) == 0, s
    off = [c for c in cells if c["status"] == "off"
           and (figure, c["model"], c["batch"], c["policy"], c["metric"]) not in KNOWN_OFF]
    assert not off, off[:5]
    assert s["by_status"].get("we fail", 0) == 0, [c for c in cells if c["status"] == "we fail"][:5]
    return rows, cells, s


@pytest.mark.slow
@pytest.mark.parametrize("figure", ["fig12", "fig13", "fig14", "fig15", "fig16", "fig18", "fig19"])
def test_whole_figure_matches_the_published_cells(figure, traces_dir, figure_store):
    rows, cells, s = check_whole_figure(figure, traces_dir, figure_store)
    assert s["failures_match"], [c for c in cells if c["status"] == "unpublished"][:5]
    doc = figure_document(figure, rows)
    known = sum(1 for c in cells if (figure, c["model"], c["batch"], c["policy"], c["metric"]) in KNOWN_OFF)
    assert doc["summary"]["within_tolerance"] + known == doc["summary"]["compared"]
    assert math.isfinite(doc["summary"]["worst"]["error_pct"])


@pytest.mark.slow
def test_whole_fig17_matches_where_published(traces_dir, figure_store):
    rows, cells, s = check_whole_figure("fig17", traces_dir, figure_store)
    assert s["within_tolerance"] == s["compared"] == 245
    no_number = [c for c in cells if c["status"] == "unpublished"]
    assert {c["policy"] for c in no_number} == {"deepum", "flashneuron"}
    assert {(c["model"], c["batch"]) for c in no_number if c["policy"] == "flashneuron"} == \
        FIG17_PUBLISHED_NO_NUMBER_FLASHNEURON
    # and DeepUM+ equals the published value wherever the paper has one
    assert all(c["status"] == "ok" for c in cells if c["policy"] == "deepum" and math.isfinite(c["published"]))
