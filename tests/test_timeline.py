"""Timelines (``g10core.timeline``, ``g10sim run --timeline``, ``g10sim report timeline``).

The file is the trace-event JSON that ui.perfetto.dev and chrome://tracing open: every event has
the fields its phase needs and metadata names every track; each iteration's kernel spans tile its
time exactly (whole nanoseconds, and the cycles in their args); the transfer spans' pages add up
to the run's traffic per direction; spans of one track never overlap (the importers nest spans of
a thread, so an overlap would be dropped); recording changes no number.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from g10core import codes
from g10core.cli import main
from g10core.config import resolve
from g10core.simulator import Simulator
from g10core.timeline import (CHANNEL_TRACKS, PID_CPU, PID_GPU, PID_HANDLER, PID_LINK, PID_SSD, REQUIRED, TID_BATCHES,
                              TID_GC, TID_ITERATIONS, TID_KERNELS, Clock, merge_spans, read_timeline, us_text)
from g10core.workload.synth import synthesize
from g10core.workload.trace import kernel_working_set_bytes, write_trace

# a small SSD (2 planes of 64-page blocks) so that GC runs under detailed
SMALL_SSD = ["ssd.n_channels=2", "ssd.chips_per_channel=1", "ssd.dies_per_chip=1", "ssd.planes_per_die=1",
             "ssd.pages_per_block=64", "ssd.overprovisioning=0.1", "ssd.capacity_GiB=0.1"]


@pytest.fixture(scope="module")
def synth():
    return synthesize(40, 96 << 20, pattern="training", seed=3)


def tight(name: str, trace, *sets):
    """Preset ``name`` with a GPU 1.2x the largest working set: pages move every kernel."""
    ws = int(kernel_working_set_bytes(trace).max())
    return resolve(name, None, [f"gpu.memory_GiB={1.2 * ws / 2**30}", "run.iterations=3", *sets])


CASES = {
    "default-g10": ("default", "g10", ["host.memory_GiB=0.2"]),
    "default-base-uvm": ("default", "base-uvm", ["host.memory_GiB=0.2"]),
    "default-ssd-only": ("default", "base-uvm", ["host.memory_GiB=0"]),
    "detailed-g10": ("detailed", "g10", ["host.memory_GiB=0.2", "tlb.model=none"]),
    "detailed-base-uvm-gc": ("detailed", "base-uvm", ["host.memory_GiB=0", "tlb.model=none", *SMALL_SSD]),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def recorded(request, synth, tmp_path_factory):
    name, policy, sets = CASES[request.param]
    cfg = tight(name, synth, *sets)
    plain = Simulator(cfg).run(synth, policy)
    r = Simulator(cfg).run(synth, policy, timeline=True)
    path = tmp_path_factory.mktemp("tl") / f"{request.param}.json"
    r.write_timeline(path)
    return request.param, plain, r, json.loads(path.read_text()), path


def events(doc, ph, pid=None, tid=None):
    return [e for e in doc["traceEvents"] if e["ph"] == ph and (pid is None or e["pid"] == pid)
            and (tid is None or e.get("tid") == tid)]


def ns(x: float) -> int:
    """A ts or dur (microseconds with three decimals) as whole nanoseconds."""
    return int(round(x * 1000))


def test_recording_moves_no_number(recorded):
    _, plain, r, _, _ = recorded
    assert not r.failed
    assert [it.to_dict() for it in r.iterations] == [it.to_dict() for it in plain.iterations]
    assert plain.timeline == {} and r.timeline["spans"].shape[1] == codes.TL_N


def test_every_event_has_its_phase_fields_and_every_track_a_name(recorded):
    _, _, _, doc, path = recorded
    assert read_timeline(path)["traceEvents"] == doc["traceEvents"]     # the reader accepts it
    assert doc["otherData"]["schema"] == "g10core-timeline" and doc["otherData"]["transfers_recorded"]
    procs = {e["pid"] for e in events(doc, "M") if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]) for e in events(doc, "M") if e["name"] == "thread_name"}
    for e in doc["traceEvents"]:
        assert e["ph"] in REQUIRED, e
        assert all(f in e for f in REQUIRED[e["ph"]]), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name", "thread_sort_index")
            continue
        assert e["pid"] in procs, e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        if e["ph"] == "X":
            assert (e["pid"], e["tid"]) in threads, e
            assert e["dur"] >= 0
        else:
            assert len(e["args"]) == 1 and all(isinstance(v, (int, float)) for v in e["args"].values())


def test_spans_of_one_track_never_overlap(recorded):
    _, _, _, doc, _ = recorded
    by_track = {}
    for e in events(doc, "X"):
        by_track.setdefault((e["pid"], e["tid"]), []).append((ns(e["ts"]), ns(e["dur"])))
    assert (PID_GPU, TID_KERNELS) in by_track
    for track, spans in by_track.items():
        spans.sort()
        for (a, d), (b, _) in zip(spans, spans[1:]):
            assert b >= a + d, track


def test_kernel_spans_tile_each_iteration_exactly(recorded):
    _, _, r, doc, _ = recorded
    kern = events(doc, "X", PID_GPU, TID_KERNELS)
    assert len(kern) == r.config["run"]["iterations"] * 40
    assert [e["name"] for e in kern[:40]] == [str(n) for n in r.kernel_names]
    clock = Clock(int(round(r.config["gpu"]["frequency_GHz"] * 1e9)))
    assert ns(kern[0]["ts"]) == 0
    for a, b in zip(kern, kern[1:]):            # no gap, no overlap, in whole nanoseconds
        assert ns(b["ts"]) == ns(a["ts"]) + ns(a["dur"])
        assert b["args"]["start_cycles"] == a["args"]["end_cycles"]
    iters = events(doc, "X", PID_GPU, TID_ITERATIONS)
    for it, ev in zip(r.iterations, iters):
        mine = [e for e in kern if e["args"]["iteration"] == it.index]
        cycles = sum(e["args"]["end_cycles"] - e["args"]["start_cycles"] for e in mine)
        assert cycles == it.time_cycles
        total_ns = sum(ns(e["dur"]) for e in mine)
        assert total_ns == ns(ev["dur"]) == doc["otherData"]["iteration_time_ns"][it.index]
        s, e = mine[0]["args"]["start_cycles"], mine[-1]["args"]["end_cycles"]
        assert total_ns == int(clock.ns(e)) - int(clock.ns(s))
        assert abs(total_ns - it.time_cycles * 1e9 / clock.den * clock.num / 1e9) <= 1.0


def test_transfer_pages_add_up_to_the_traffic_per_direction(recorded):
    _, _, r, doc, _ = recorded
    pages = {ch: 0 for ch in codes.TL_CHANNELS}
    for e in events(doc, "X", PID_LINK):
        ch = codes.TL_CHANNELS[e["tid"] - 1]
        assert e["name"] == CHANNEL_TRACKS[ch][1]
        pages[ch] += e["args"]["pages"]
    total = {k: sum(it.traffic_pages[k] for it in r.iterations) for k in r.iterations[0].traffic_pages}
    assert pages["host_fault"] + pages["host_prefetch"] == total["host_to_gpu"]
    assert pages["ssd_fault"] + pages["ssd_prefetch"] == total["ssd_to_gpu"]
    assert pages["evict_host"] + pages["preevict_host"] == total["gpu_to_host"]
    assert pages["evict_ssd"] + pages["preevict_ssd"] == total["gpu_to_ssd"]
    assert sum(total.values()) > 0
    # per iteration too, from the recorder's per-execution spans
    sp = r.timeline["spans"]["pages"].reshape(len(r.iterations), 40, codes.TL_N).sum(axis=1)
    for it, row in zip(r.iterations, sp):
        assert row[0] + row[1] == it.traffic_pages["host_to_gpu"]
        assert row[2] + row[3] == it.traffic_pages["ssd_to_gpu"]
        assert row[4] + row[5] == it.traffic_pages["gpu_to_host"]
        assert row[6] + row[7] == it.traffic_pages["gpu_to_ssd"]


def test_causes_split_as_the_policy_moves_pages(recorded):
    name, _, r, doc, _ = recorded
    pages = r.timeline["spans"]["pages"].sum(axis=0)
    by = dict(zip(codes.TL_CHANNELS, pages.tolist()))
    if name == "default-base-uvm" or name == "default-ssd-only":     # no hints: no prefetch, no pre-eviction
        assert by["host_prefetch"] == by["ssd_prefetch"] == by["preevict_host"] == by["preevict_ssd"] == 0
    if name.endswith("g10"):
        assert by["host_prefetch"] + by["ssd_prefetch"] > 0
    if name == "default-ssd-only":
        assert by["evict_host"] == by["host_fault"] == 0 and by["evict_ssd"] > 0


def test_detailed_batches_and_gc(recorded):
    name, _, r, doc, _ = recorded
    batches = events(doc, "X", PID_HANDLER, TID_BATCHES)
    gc = events(doc, "X", PID_SSD, TID_GC)
    if not name.startswith("detailed"):
        assert not batches and not gc and not events(doc, "X", PID_HANDLER)
        assert doc["otherData"]["transfer_model"] == "slots"
        return
    assert doc["otherData"]["transfer_model"] == "batches"
    fb = r.counters["fault_batches"]
    assert len(batches) == fb["batches"] > 0
    assert sum(e["args"]["units"] for e in batches) == fb["batch_units"]
    assert sum(ns(e["dur"]) for e in batches) == pytest.approx(fb["batch_cycles"] / 1.2, abs=len(batches))
    if name.endswith("gc"):
        ssd = r.counters["ssd"]
        assert gc and sum(e["args"]["blocks"] for e in gc) == ssd["gc_count"] > 0
        assert sum(e["args"]["copied_pages"] for e in gc) == ssd["gc_copies"]


def test_memory_counters(recorded):
    _, _, r, doc, _ = recorded
    c = {}
    for e in events(doc, "C"):
        c.setdefault(e["name"], []).append(e)
    assert set(c) == {"GPU memory used", "host memory used", "pages in flight"}
    gpu_gib = r.timeline["gpu_pages"] * 4096 / 2**30
    assert max(e["args"]["GiB"] for e in c["GPU memory used"]) <= gpu_gib + 1e-4
    assert min(e["args"]["pages"] for e in c["pages in flight"]) >= 0
    for evs in c.values():
        ts = [e["ts"] for e in evs]
        assert ts == sorted(ts) and len(set(ts)) == len(ts)


def test_a_result_without_recording_has_kernels_and_memory(synth, tmp_path):
    r = Simulator(tight("default", synth, "host.memory_GiB=0.2")).run(synth, "g10")
    path = r.write_timeline(tmp_path / "plain.json")
    doc = read_timeline(path)
    assert not events(doc, "X", PID_LINK) and doc["otherData"]["transfers_recorded"] is False
    kern = events(doc, "X", PID_GPU, TID_KERNELS)
    assert len(kern) == 120 and kern[0]["name"] == str(synth.kernel_name[0])      # Result.kernel_names, recorded or not
    assert sum(ns(e["dur"]) for e in kern) == sum(doc["otherData"]["iteration_time_ns"])


def test_a_tensor_level_result_has_its_kernels(synth, tmp_path):
    r = Simulator(tight("default", synth, "host.memory_GiB=0.2")).run(synth, "g10-host", timeline=True)
    doc = read_timeline(r.write_timeline(tmp_path / "tensor.json"))
    kern = events(doc, "X", PID_GPU, TID_KERNELS)
    assert len(kern) == 40 and [e["name"] for e in kern] == [str(n) for n in synth.kernel_name]


def test_the_cpu_tiers_kernels_have_their_own_track(tmp_path):
    """ZeRO-Infinity runs the optimizer on the CPU: those kernels are on the CPU track, start to end
    as the run timed them; the GPU track holds the rest, each from the previous GPU kernel's end."""
    r = Simulator().run("gpt2-small-s1024-b5", "zero-infinity")
    on_cpu = r.kernels["on_cpu"]
    assert on_cpu.sum() == r.counters["n_cpu_kernels"] > 0
    doc = read_timeline(r.write_timeline(tmp_path / "zero.json"))
    cpu, gpu = events(doc, "X", PID_CPU, 1), events(doc, "X", PID_GPU, TID_KERNELS)
    names = [str(n) for n in r.kernel_names]
    assert [e["args"]["kernel"] for e in cpu] == np.flatnonzero(on_cpu).tolist()
    assert [e["args"]["kernel"] for e in gpu] == np.flatnonzero(~on_cpu).tolist()
    assert [e["name"] for e in cpu + gpu] == [names[e["args"]["kernel"]] for e in cpu + gpu]
    assert all(e["cat"] == "cpu_kernel" for e in cpu)
    clock = Clock(1_200_000_000)
    start_c = np.rint(r.kernels["start_s"] * 1.2e9).astype(np.int64)
    end_c = np.rint((r.kernels["start_s"] + r.kernels["time_s"]) * 1.2e9).astype(np.int64)
    for e in cpu:       # the CPU's own start and end
        kk = e["args"]["kernel"]
        assert ns(e["ts"]) == clock.ns(start_c[kk]) and ns(e["ts"] + e["dur"]) == clock.ns(end_c[kk])
    for a, b in zip(cpu, cpu[1:]):       # one CPU kernel at a time
        assert ns(a["ts"] + a["dur"]) <= ns(b["ts"])
    for a, b in zip(gpu, gpu[1:]):       # the GPU's kernels tile its time
        assert ns(a["ts"] + a["dur"]) == ns(b["ts"])
    assert ns(gpu[0]["ts"]) == 0
    # the CPU track's busy time is the run's (up to rounding each span to whole ns)
    assert sum(ns(e["dur"]) for e in cpu) == pytest.approx(r.counters["cpu_busy_s"] * 1e9, abs=len(cpu))
    meta = {(e["pid"], e["name"]): e["args"] for e in events(doc, "M")}
    assert meta[(PID_CPU, "process_name")] == {"name": "CPU"}
    # the iteration is the run's time (which goes on after the last kernel while transfers drain)
    (it,) = events(doc, "X", PID_GPU, TID_ITERATIONS)
    assert ns(it["ts"]) == 0 and ns(it["dur"]) == clock.ns(r.iterations[0].time_cycles)
    assert doc["otherData"]["iteration_time_ns"] == [ns(it["dur"])]
    assert max(ns(e["ts"] + e["dur"]) for e in cpu + gpu) <= ns(it["dur"])


def test_a_tensor_level_result_without_the_cpu_tier_has_no_cpu_track(synth, tmp_path):
    r = Simulator(tight("default", synth, "host.memory_GiB=0.2")).run(synth, "g10-host")
    doc = read_timeline(r.write_timeline(tmp_path / "tensor.json"))
    assert "on_cpu" not in r.kernels and not [e for e in doc["traceEvents"] if e["pid"] == PID_CPU]


# ---- the pieces, against hand-computed values -------------------------------------------------

def test_clock_rounds_cycles_to_whole_nanoseconds_exactly():
    c = Clock(1_200_000_000)
    assert c.ns([0, 1, 6, 12, 1_200_000_000]).tolist() == [0, 1, 5, 10, 1_000_000_000]   # 1 cycle = 0.833 ns
    assert int(c.ns(3)) == 3                         # 2.5 ns: halves up
    big = (1 << 62) + 7
    assert int(Clock(1_000_000_000).ns(big)) == big   # past int64 arithmetic: Python ints
    assert us_text(0) == "0.000" and us_text(1234567) == "1234.567" and us_text(5) == "0.005"


def test_merge_spans_joins_touching_and_overlapping_ones():
    f, e, n, pages = merge_spans([10, 0, 5, 30, 40], [20, 5, 8, 35, 41], [1, 2, 3, 4, 5])
    assert f.tolist() == [0, 10, 30, 40] and e.tolist() == [8, 20, 35, 41]
    assert n.tolist() == [2, 1, 1, 1] and pages.tolist() == [5, 1, 4, 5]
    f, e, n, pages = merge_spans([0, 5, 6], [10, 7, 12], [1, 1, 1])     # nested, then past the first's end
    assert f.tolist() == [0] and e.tolist() == [12] and pages.tolist() == [3]


def test_record_layouts_match_the_structs():
    from g10core.uvm import _timeline

    lay = _timeline.layout()
    assert lay["TL_N"] == codes.TL_N == len(codes.TL_CHANNELS)
    assert lay["tl_span"] == codes.TL_SPAN_DTYPE.itemsize
    assert lay["tl_op"] == codes.TL_OP_DTYPE.itemsize
    assert lay["tl_exec"] == codes.TL_EXEC_DTYPE.itemsize


# ---- the command line -------------------------------------------------------------------------

def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory, synth):
    path = tmp_path_factory.mktemp("traces") / "synth_training-b1.h5"
    write_trace(synth, path)
    return path


def gpu_sets(trace):
    ws = int(kernel_working_set_bytes(trace).max())
    return ["--set", f"gpu.memory_GiB={1.2 * ws / 2**30}", "--set", "host.memory_GiB=0.2"]


def test_run_writes_a_timeline_and_report_draws_it(trace_file, synth, tmp_path, capsys):
    tl, png = tmp_path / "run.json", tmp_path / "run.png"
    code, out, err = cli(capsys, "run", trace_file, "--policy", "g10", *gpu_sets(synth), "--timeline", tl,
                         "--no-progress")
    assert code == 0 and err == "" and f"wrote {tl}" in out
    doc = read_timeline(tl)
    assert events(doc, "X", PID_LINK) and doc["otherData"]["policy"] == "g10"
    code, out, err = cli(capsys, "report", "timeline", tl, "--plot", png)
    assert code == 0 and err == "" and f"wrote {png}" in out
    assert "GPU / kernels" in out and "PCIe link / SSD->GPU faults" in out and "peak" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert not list(tmp_path.glob(".*.tmp*"))      # written atomically: no temporary left


def test_an_unwritable_timeline_path_is_refused_before_the_run(trace_file, synth, tmp_path, capsys):
    code, out, err = cli(capsys, "run", trace_file, "--policy", "g10", *gpu_sets(synth),
                         "--timeline", tmp_path / "no" / "such" / "folder.json")
    assert code == 2 and out == "" and "--timeline" in err and len(err.strip().splitlines()) == 1
    code, out, err = cli(capsys, "run", trace_file, "--policy", "g10", "--timeline", tmp_path)
    assert code == 2 and "is a folder" in err and out == ""
    code, out, err = cli(capsys, "run", trace_file, "--policy", "g10", "--timeline", "-")
    assert code == 2 and "give a file path" in err and out == ""
    code, out, err = cli(capsys, "report", "timeline", tmp_path / "missing.json")
    assert code == 2 and "Traceback" not in err


def test_a_bad_timeline_file_is_refused_naming_it(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "k", "pid": 1, "tid": 1, "ts": 0}]}))
    code, _, err = cli(capsys, "report", "timeline", bad)
    assert code == 2 and str(bad) in err and "traceEvents[0]" in err and "dur" in err
    bad.write_text("{not json")
    code, _, err = cli(capsys, "report", "timeline", bad)
    assert code == 2 and "not JSON" in err


def test_a_failed_run_writes_its_timeline_and_exits_1(trace_file, tmp_path, capsys):
    # FlashNeuron keeps every weight resident: a GPU just above the largest kernel cannot hold them
    tl = tmp_path / "failed.json"
    code, out, err = cli(capsys, "run", trace_file, "--policy", "flashneuron", "--set", "gpu.memory_GiB=0.05",
                         "--timeline", tl, "--no-progress")
    assert code == 1 and "simulation failed" in err
    doc = read_timeline(tl)
    assert doc["otherData"]["failed"] is True and "cannot fit" in doc["otherData"]["failure_reason"]


def test_a_host_overflow_keeps_the_kernels_that_ran(synth, tmp_path, host_overflow):
    # the published simulator's abort, forced (conftest.host_overflow)
    r = Simulator(tight("default", synth, "host.memory_GiB=0.2")).run(synth, "base-uvm", timeline=True)
    assert r.failed and r.failure_reason.startswith("host memory overflow")
    doc = read_timeline(r.write_timeline(tmp_path / "overflow.json"))
    assert doc["otherData"]["failed"] is True
    assert len(events(doc, "X", PID_GPU, TID_KERNELS)) == len(r.timeline["kernel_rows"]) > 0
    assert events(doc, "X", PID_LINK)
