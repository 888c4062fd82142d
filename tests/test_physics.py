"""Physical bounds every run obeys (issue 33), over random small configurations and traces.

Per simulated iteration (docs/accounting.md says what each counter counts):

- its time is at least its ideal time (every kernel at least its profiled ideal time);
- each direction of each path carries no more than its bandwidth allows: the GPU's link
  (to and from the GPU), the SSD (each direction at most its bandwidth, and under the
  ``shared`` duplex rule of ``default`` reads / read bandwidth + writes / write bandwidth at
  most the time, at page and at tensor level) and host memory (at most min(host, link) each way);
- demand faults from host memory (from the SSD) are at most the pages moved host->GPU (SSD->GPU);
- GPU residency stays within GPU memory (page level: ``gpu_used_pages`` per kernel against the
  replay's frames; tensor level: ``peak_gpu_bytes``).

Bandwidths are in GB/s = 1e9 B/s.  Under ``detailed`` the devices carry less than their keys:
the PCIe link's raw bandwidth is ``link.bandwidth_GBps`` (Gen3 x16, scaled) before TLP
overheads; the SSD's link is scaled by ``ssd.bandwidth_GBps / 3.2`` from zssd's Gen3 x4, whose
effective rate is a little above 3.2 GB/s, so its bound is the device link's effective rate.
The slot model moves a slot's pages in ``tick_cycles``, the period rounded down to a cycle (at
most one cycle short), and counts them in the iteration where the slot starts: each bound
allows one cycle per tick and two ticks.  ``g10-artifact`` is left out: it reproduces the
published simulator, whose tensor-level SSD stream outruns the link (tests/test_exploration.py).
"""
import math
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from g10core.config import resolve
from g10core.errors import ConfigError, G10Warning
from g10core.simulator import Simulator
from g10core.workload.synth import synthesize
from g10core.workload.trace import PAGE_SIZE_BYTES, kernel_working_set_bytes

GiB = 1 << 30
PAGE_POLICIES = ("base-uvm", "belady", "deepum", "g10")


@st.composite
def runs(draw):
    preset = draw(st.sampled_from(("default", "detailed")))
    policies = PAGE_POLICIES + ("ideal",) + (("g10-host",) if preset == "default" else ())
    policy = draw(st.sampled_from(policies))
    trace = synthesize(draw(st.integers(4, 30)), draw(st.integers(4, 48)) << 20,
                       pattern=draw(st.sampled_from(("training", "random"))), seed=draw(st.integers(0, 1000)))
    footprint = trace.footprint_bytes
    need = int(kernel_working_set_bytes(trace).max())
    # GPU memory between the largest kernel's working set (+ slack for the VA-block alignment of
    # detailed) and the footprint; host memory from none to the footprint
    lo = need + (8 << 20)
    gpu = draw(st.integers(lo, max(lo, footprint)))
    host = draw(st.integers(0, footprint))
    sets = [f"gpu.memory_GiB={gpu / GiB!r}", f"host.memory_GiB={host / GiB!r}",
            f"link.bandwidth_GBps={draw(st.sampled_from((2.0, 8.0, 15.754, 32.0, 64.0)))}",
            f"ssd.bandwidth_GBps={draw(st.sampled_from((0.4, 1.6, 3.2, 6.4, 16.0)))}",
            f"host.bandwidth_GBps={draw(st.sampled_from((1.0, 8.0, 15.754, 64.0)))}"]
    return preset, policy, trace, resolve(preset, None, sets)


def _bandwidths(cfg) -> dict:
    """GB/s the bounds use: link, SSD (each direction), host path."""
    link = cfg.link.bandwidth_GBps
    ssd = cfg.ssd.bandwidth_GBps
    if cfg.link.model == "pcie":
        from g10core.ssd import ssd_spec_from_config

        link_spec = ssd_spec_from_config(cfg).link
        ssd = max(link_spec.effective_GBps(d, f) for d in ("to_device", "from_device") for f in ("host", "peer"))
    write = cfg.ssd.write_bandwidth_GBps or cfg.ssd.bandwidth_GBps
    slot_ssd = cfg.link.model != "pcie" and not cfg.scheduler.artifact_quirks
    return {"link": link, "ssd": min(ssd, link), "host": min(cfg.host.bandwidth_GBps, link),
            "ssd_write": min(write, link) if slot_ssd else min(ssd, link),
            # the shared SSD's own budget: its read and write bandwidths (the link caps each
            # direction apart, and is full duplex)
            "ssd_raw": ssd, "ssd_write_raw": write,
            "ssd_shared": slot_ssd and cfg.ssd.duplex == "shared"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_every_iteration_obeys_the_physical_bounds(run):
    preset, policy, trace, cfg = run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", G10Warning)
        try:
            r = Simulator(cfg).run(trace, policy)
        except ConfigError:     # refused: e.g. host.bandwidth_GBps << link leaves 0 host pages per slot
            return
    if r.failed:        # host memory overflow (the published simulator aborts): nothing to bound
        assert r.failure_reason
        return
    bw = _bandwidths(cfg)
    c = r.counters
    freq = cfg.gpu.frequency_GHz * 1e9
    tick = c.get("tick_cycles", 0)
    for it in r.iterations:
        assert it.time_s >= it.ideal_time_s * (1 - 1e-12), (it.index, it.time_s, it.ideal_time_s)
        t = it.time_s * (1 + (1 / tick if tick else 0)) + 2 * tick / freq + 1e-9
        tp = it.traffic_pages

        def secs(pages, GBps):
            return pages * PAGE_SIZE_BYTES / (GBps * 1e9)

        where = f"iteration {it.index}: {dict(tp)} in {it.time_s:.6g} s, bandwidths {bw}"
        assert secs(tp["host_to_gpu"] + tp["ssd_to_gpu"], bw["link"]) <= t, "link to GPU; " + where
        assert secs(tp["gpu_to_host"] + tp["gpu_to_ssd"], bw["link"]) <= t, "link from GPU; " + where
        # each direction at most the SSD's bandwidth (its own write bandwidth in the slot model)
        assert secs(tp["ssd_to_gpu"], bw["ssd"]) <= t, "SSD read; " + where
        assert secs(tp["gpu_to_ssd"], bw["ssd_write"]) <= t, "SSD write; " + where
        # the shared SSD: reads and writes add up (docs/physics.md), in the slot model and in the
        # tensor-level simulator (one SSD transfer at a time)
        if bw["ssd_shared"]:
            assert secs(tp["ssd_to_gpu"], bw["ssd_raw"]) + secs(tp["gpu_to_ssd"], bw["ssd_write_raw"]) <= t, \
                "SSD reads + writes; " + where
        assert secs(tp["host_to_gpu"], bw["host"]) <= t, "host to GPU; " + where
        assert secs(tp["gpu_to_host"], bw["host"]) <= t, "GPU to host; " + where
        assert it.faults_pages["host"] <= tp["host_to_gpu"] and it.faults_pages["ssd"] <= tp["ssd_to_gpu"], where
    if r.level == "page":
        used = np.asarray(r.kernel_table()["gpu_used_pages"], np.int64)
        assert used.size == 0 or used.max() <= c["gpu_pages"], (int(used.max()), c["gpu_pages"])
        assert c["final_gpu_used_pages"] <= c["gpu_pages"]
    elif r.level == "tensor":
        assert c["peak_gpu_bytes"] <= c["gpu_capacity_bytes"] <= cfg.gpu.memory_GiB * GiB
    assert math.isfinite(r.iteration_time_s)
