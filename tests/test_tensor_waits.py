"""Timelines and summaries of tensor-level runs say why (issue 43): link, SSD, host, CPU and GPU-wait
tracks that cover the iteration, and each wait named by what it waited for (results.tensor_waits)."""
from __future__ import annotations

import os
import subprocess
import sys

from pathlib import Path

import numpy as np
import pytest

import g10core
from g10core.results import WAIT_CPU, WAIT_IDLE, WAIT_RESOURCES, waits_text
from g10core.simulator import simulate
from g10core.timeline import read_timeline, tracks

ZI = "llama-1b-s2048-bf16-b4"
ENV = {**os.environ, "PYTHONPATH": str(Path(g10core.__file__).resolve().parents[1])}   # this checkout's g10core


def _union_covers(intervals, lo: float, hi: float, tol: float) -> float:
    """The longest stretch of [lo, hi] that no interval covers."""
    iv = sorted((s, s + d) for s, d in intervals if d > 0)
    gap, cur = 0.0, lo
    for s, e in iv:
        if s > cur:
            gap = max(gap, s - cur)
        cur = max(cur, e)
    return max(gap, hi - cur)


@pytest.fixture(scope="module")
def zero_infinity():
    return simulate(ZI, "zero-infinity")


@pytest.mark.parametrize("policy", ["zero-infinity", "zero-offload", "teraio", "vdnn", "ssdtrain"])
def test_every_moment_of_the_iteration_is_on_some_track(policy, tmp_path):
    r = simulate(ZI, policy)
    if r.failed:
        pytest.skip(f"{policy} does not fit: {r.failure_reason}")
    path = r.write_timeline(tmp_path / "t.json")
    doc = read_timeline(path)
    end_us = doc["otherData"]["iteration_time_ns"][0] / 1e3
    t = tracks(doc)
    spans = [(s, d) for p, tr, ss, dd, _n in t["spans"] if tr != "iterations" for s, d in zip(ss, dd)]
    # the union covers [0, end] (to the microsecond: the file's times are whole ns)
    assert _union_covers(spans, 0.0, end_us, 1e-3) <= 1e-3
    # the GPU's kernels and waits alone cover it
    gpu = [(s, d) for p, tr, ss, dd, _n in t["spans"] if p == "GPU" and tr in ("kernels", "waits")
           for s, d in zip(ss, dd)]
    assert _union_covers(gpu, 0.0, end_us, 1e-3) <= 1e-3
    names = {(p, tr) for p, tr, *_ in t["spans"]}
    if r.counters.get("n_cpu_kernels"):
        # the CPU's two tracks tile it: kernels, waits and idle, without overlap
        cpu = sorted((s, d) for p, tr, ss, dd, _n in t["spans"] if p == "CPU" for s, d in zip(ss, dd))
        assert sum(d for _s, d in cpu) == pytest.approx(end_us, abs=1e-3 * len(cpu))
        assert _union_covers(cpu, 0.0, end_us, 1e-3) <= 1e-3
    moved = {k for k, v in r.counters["traffic_bytes"].items() if v}
    track = {"gpu_to_ssd": ("PCIe link", "GPU->SSD"), "ssd_to_gpu": ("PCIe link", "SSD->GPU"),
             "gpu_to_host": ("PCIe link", "GPU->host"), "host_to_gpu": ("PCIe link", "host->GPU"),
             "host_to_ssd": ("host", "host->SSD"), "ssd_to_host": ("host", "SSD->host")}
    for k in moved:
        assert track[k] in names, (k, sorted(names))
    if moved & {"gpu_to_ssd", "ssd_to_gpu", "host_to_ssd", "ssd_to_host"}:
        assert ("SSD", "reads") in names or ("SSD", "writes") in names
    assert "cover the iteration" in doc["otherData"]["note"]


@pytest.mark.parametrize("policy", ["zero-infinity", "zero-offload", "teraio", "vdnn"])
def test_the_waits_add_up_to_the_gpus_time_beyond_its_kernels(policy):
    """Each GPU kernel runs for its ideal time (tensorsim), so the GPU waits for the iteration's time
    minus its kernels' ideal time (the recompute copies' time is inside the waits: ``other``)."""
    r = simulate(ZI, policy)
    if r.failed:
        pytest.skip(r.failure_reason)
    w = r.counters["waits"]
    on_cpu = r.kernels.get("on_cpu", np.zeros(r.kernels["ideal_s"].size, bool))
    gpu_ideal = float(r.kernels["ideal_s"][~on_cpu].sum())
    assert w["gpu_wait_s"] == pytest.approx(r.iteration_time_s - gpu_ideal, abs=1e-6 + 1e-9 * on_cpu.size)
    assert sum(w["gpu_wait_by_resource_s"].values()) == pytest.approx(w["gpu_wait_s"], abs=1e-6)
    for res, s in w["gpu_wait_via_cpu_s"].items():
        assert s <= w["gpu_wait_by_resource_s"][res] + 1e-9


def test_zero_infinity_waits_for_the_ssd_through_the_cpu(zero_infinity):
    """ZeRO-Infinity on NVMe: the GPU's long wait is for CPU Adam, which waits for its state from the
    SSD: it is the SSD's, and more cores change nothing about it."""
    w = zero_infinity.counters["waits"]
    by = w["gpu_wait_by_resource_s"]
    top = max(by, key=by.get)
    assert top == "SSD read (SSD->host)"
    assert w["gpu_wait_via_cpu_s"][top] > 0.5 * by[top]
    assert by.get("CPU", 0.0) < 0.1 * by[top]           # the CPU computing is a small part
    assert w["cpu_wait_by_resource_s"][top] >= w["gpu_wait_via_cpu_s"][top] - 1e-9
    many = simulate(ZI, "zero-infinity", sets=["cpu.cores=1024"]).counters["waits"]
    assert many["gpu_wait_by_resource_s"][top] == pytest.approx(by[top], rel=0.05)
    text = waits_text(w)
    assert text.startswith(f"the GPU waited {w['gpu_wait_s']:.3f} s: {by[top]:.3f} s for the SSD read")
    assert "via the CPU" in text


def test_without_the_ssd_no_wait_is_the_ssds():
    w = simulate(ZI, "zero-infinity", sets=["scheduler.zero_infinity_device=cpu"]).counters["waits"]
    assert not [r for r in w["gpu_wait_by_resource_s"] if r.startswith("SSD")]


def test_one_slow_core_makes_the_cpu_the_wait():
    """zero-offload on one core: CPU Adam (1.4 s at one core's stream bandwidth) is what the GPU waits for."""
    w = simulate(ZI, "zero-offload", sets=["cpu.cores=1"]).counters["waits"]
    by = w["gpu_wait_by_resource_s"]
    assert max(by, key=by.get) == "CPU"


def test_the_wait_spans_name_resources_and_tile_the_cpu(zero_infinity):
    tl = zero_infinity.timeline
    g, c = tl["gpu_waits"], tl["cpu_pieces"]
    assert np.all(g["end"] > g["start"]) and np.all(g["start"][1:] >= g["end"][:-1])    # in order, disjoint
    assert set(np.unique(g["resource"]).tolist()) <= set(range(len(WAIT_RESOURCES)))
    assert np.all(c["start"][1:] == c["end"][:-1]) and c["start"][0] == 0
    assert c["end"][-1] == tl["time_cycles"]
    assert (c["resource"] == WAIT_CPU).any() and (c["resource"] == WAIT_IDLE).any()


def test_the_summary_names_what_the_gpu_waited_for(tmp_path):
    out = subprocess.run([sys.executable, "-m", "g10core", "run", ZI, "--policy", "zero-infinity", "--no-progress",
                          "--json", str(tmp_path / "r.json")], capture_output=True, text=True, env=ENV)
    assert out.returncode == 0, out.stderr
    import json

    d = json.loads((tmp_path / "r.json").read_text())
    assert "SSD read (SSD->host)" in d["counters"]["waits"]["gpu_wait_by_resource_s"]
    txt = subprocess.run([sys.executable, "-m", "g10core", "run", ZI, "--policy", "zero-infinity", "--no-progress"],
                         capture_output=True, text=True, env=ENV).stdout
    line = next(x for x in txt.splitlines() if x.strip().startswith("waits"))
    assert "for the SSD read (SSD->host)" in line and "via the CPU" in line
