"""The slot model's physics outside g10-artifact (issue 33, docs/physics.md), against closed forms.

* exact quotas: a stream of N pages from the SSD or the host takes N pages at
  min(path, link) bandwidth within 1 %, at any link speed (the published whole-page quota
  per slot made a faster link slower);
* the SSD's duplex rule: with ``ssd.duplex = shared`` reads and writes add up
  (reads / read bandwidth + writes / write bandwidth = the time), with ``full`` each
  direction runs at its own bandwidth;
* a shared SSD serves its reads and writes fairly (half each while both wait), so a backlog of
  pre-evictions does not starve a read; a prefetch hint keeps the pages whose pre-eviction is
  still queued;
* zero-fill: a kernel whose only faults are first touches costs their allocation
  (``gpu.malloc_us_per_byte``), not link time (plus, under ``default``'s physical fault time,
  the driver's batch costs of those faults, which no link speed changes either);
* ``g10-artifact`` keeps the published rules.

The batcher's own times are read with a fault model that adds nothing (the kernel ends when
its last page arrives), so a quota too fast or too slow shows.
"""
from __future__ import annotations

import numpy as np
import pytest

from g10core.uvm._fault import FaultModel, PhysicalFaultModel
from g10core.uvm._replay import Replay
from g10core.config import preset
from g10core.policies import HINT_DTYPE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD
from g10core.simulator import Simulator, replay_inputs
from g10core.uvm.slots import ArtifactConstants, physical_fault_params
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, Trace

PAGE = 4096
N = 40_000                                  # pages streamed (160 MB)
LINKS = [4.0, 8.0, 15.754, 31.5, 63.0, 128.0, 256.0]
FREQ = 1.2e9


def make_trace(pages, is_global, kernels, t11_ns):
    """Tensors of ``pages`` pages; kernel k reads ``kernels[k][0]`` and writes ``kernels[k][1]``."""
    offs, acc, mode = [0], [], []
    for reads, writes in kernels:
        acc += list(reads) + list(writes)
        mode += [ACCESS_READ] * len(reads) + [ACCESS_WRITE] * len(writes)
        offs.append(len(acc))
    t = np.asarray(t11_ns, np.float64)
    return Trace(model="stream", batch_size=1, tensor_size_bytes=np.asarray(pages, np.int64) * PAGE,
                 tensor_is_global=np.asarray(is_global, bool), tensor_name=np.array([f"t{i}" for i in range(len(pages))]),
                 kernel_name=np.array([f"k{i}" for i in range(len(kernels))]),
                 kernel_time_ideal_ns=t, kernel_time_fault_all_ns=t.copy(), kernel_time_fault_outputs_ns=t.copy(),
                 kernel_workspace_bytes=np.zeros(len(kernels), np.int64),
                 access_offsets=np.asarray(offs, np.int64), access_tensor=np.asarray(acc, np.int32),
                 access_mode=np.asarray(mode, np.uint8))


def config(name="default", *, link, host_GBps=None, ssd_GBps=3.2, gpu_pages=4 * N, host_pages=4 * N, **ssd):
    return preset(name).with_overrides({
        "gpu": {"memory_GiB": gpu_pages * PAGE / 2**30},
        "host": {"memory_GiB": host_pages * PAGE / 2**30, "bandwidth_GBps": host_GBps or link},
        "link": {"bandwidth_GBps": link},
        "ssd": {"bandwidth_GBps": ssd_GBps, **ssd},
        "run": {"iterations": 1},
    })


def replay(trace, cfg, hints=None):
    """Kernel rows and transfer boundaries of a replay whose faults cost nothing beyond their transfers."""
    c, a, _ = replay_inputs(trace, cfg, hints, eviction="arrival", apply_hints=hints is not None)
    out = Replay(c, a, fault_model=FaultModel()).run()
    return out["kernels"], out["boundaries"]


def stream_seconds(pages, *GBps):
    return pages * PAGE / (min(GBps) * 1e9)


def close(cycles, seconds, tol=0.01):
    return abs(cycles / FREQ - seconds) <= tol * seconds


@pytest.mark.parametrize("ssd_GBps", [3.2, 40.0])
@pytest.mark.parametrize("link", LINKS)
def test_an_ssd_read_stream_runs_at_the_ssd_or_the_link(link, ssd_GBps):
    # one kernel reads a global tensor of N pages, all on the SSD
    trace = make_trace([N], [True], [([0], [])], [1000.0])
    rows, _ = replay(trace, config(link=link, ssd_GBps=ssd_GBps))
    assert close(rows[0, 3] - rows[0, 2], stream_seconds(N, ssd_GBps, link)), (rows[0], link)


def host_round_trip(host_GBps, link, action=HINT_TO_HOST, **ssd):
    """X (N pages) written by k0, pre-evicted by a hint at k1 (1 s long), read back by k2."""
    trace = make_trace([N, 1], [False, False], [([], [0]), ([1], []), ([0], [1])], [1000.0, 1e9, 1000.0])
    hints = np.array([(1, 0, action)], HINT_DTYPE)
    rows, bounds = replay(trace, config(link=link, host_GBps=host_GBps, **ssd), hints)
    # the pre-eviction: from k1's begin (k0's allocations are done by then) to the end of the
    # transfers' busy period
    k1 = rows[1, 2]
    ends = bounds[(bounds[:, 1] == 0) & (bounds[:, 0] > k1)]
    return rows, ends[0, 0] - k1


@pytest.mark.parametrize("host_GBps", [15.754, 20.0])
@pytest.mark.parametrize("link", LINKS)
def test_a_host_stream_runs_at_the_host_or_the_link_both_ways(link, host_GBps):
    rows, out_cycles = host_round_trip(host_GBps, link)
    assert close(out_cycles, stream_seconds(N, host_GBps, link)), ("to host", link)
    assert close(rows[2, 3] - rows[2, 2], stream_seconds(N, host_GBps, link)), ("from host", link)


@pytest.mark.parametrize("link", [8.0, 63.0])
@pytest.mark.parametrize("duplex", ["shared", "full"])
def test_ssd_writes_run_at_the_write_bandwidth(link, duplex):
    rows, out_cycles = host_round_trip(15.754, link, HINT_TO_SSD, write_bandwidth_GBps=1.6, duplex=duplex)
    assert close(out_cycles, stream_seconds(N, 1.6, link))
    assert close(rows[2, 3] - rows[2, 2], stream_seconds(N, 3.2, link))


@pytest.mark.parametrize("write_GBps", [0.0, 1.6])
@pytest.mark.parametrize("duplex", ["shared", "full"])
def test_the_duplex_rule(duplex, write_GBps):
    """A GPU full of pages that must leave for the SSD (no host memory) while N pages come from it:
    shared, reads/R + writes/W = the time; full, each direction at its own bandwidth at once."""
    M = N // 4
    trace = make_trace([M, M], [False, True], [([], [0]), ([1], [])], [1000.0, 1000.0])
    cfg = config(link=15.754, gpu_pages=M, host_pages=0, duplex=duplex, write_bandwidth_GBps=write_GBps)
    rows, _ = replay(trace, cfg)
    R, W = 3.2, write_GBps or 3.2
    want = M * PAGE * (1 / R + 1 / W) / 1e9 if duplex == "shared" else stream_seconds(M, R, W)
    assert close(rows[1, 3] - rows[1, 2], want), (rows[1], want)


def test_the_duplex_rule_under_g10_artifact_is_full():
    assert preset("g10-artifact").ssd.duplex == "full" and preset("default").ssd.duplex == "shared"
    M = N // 4
    trace = make_trace([M, M], [False, True], [([], [0]), ([1], [])], [1000.0, 1000.0])
    rows, _ = replay(trace, config("g10-artifact", link=15.754, gpu_pages=M, host_pages=0))
    # 10 pages a slot each way (int(50 x 3.2 / 15.754)): both directions at once
    tick = ArtifactConstants.from_config(config("g10-artifact", link=15.754)).tick_cycles
    assert rows[1, 3] - rows[1, 2] == pytest.approx(M / 10 * tick, rel=0.01)


def read_behind_writes_seconds(name="default", **ssd):
    """k0 writes B (M pages); k1 (1 us) queues A's prefetch (M/4 pages, on the SSD) and then B's
    pre-eviction to the SSD; k2 reads A: the time from k1's begin to k2's end."""
    M = N // 4
    trace = make_trace([M, M // 4], [False, True], [([], [0]), ([], []), ([1], []), ([0], [])],
                       [1000.0] * 4)
    hints = np.array([(1, 1, HINT_TO_GPU), (1, 0, HINT_TO_SSD)], HINT_DTYPE)
    rows, _ = replay(trace, config(name, link=15.754, **ssd), hints)
    return rows[2, 3] - rows[1, 2]


def test_a_backlog_of_ssd_writes_does_not_starve_a_read_queued_before_them():
    """Shared SSD: while both directions wait each gets half of it, so A's M/4 pages take twice
    their time at the read bandwidth (writes first: after all M of B's, 5x); full duplex: once."""
    M = N // 4
    read = stream_seconds(M // 4, 3.2)
    assert close(read_behind_writes_seconds(duplex="shared"), 2 * read, tol=0.03)
    assert close(read_behind_writes_seconds(duplex="full"), read)
    # g10-artifact: the published rule (full duplex) is unchanged
    assert close(read_behind_writes_seconds("g10-artifact"), read, tol=0.03)   # (whole-page quotas)


@pytest.mark.parametrize("duplex", ["shared", "full"])
def test_a_prefetch_keeps_the_pages_whose_pre_eviction_is_still_queued(duplex):
    """B (M pages) is pre-evicted at k1 (1 us) and prefetched at k2, which reads it: outside
    g10-artifact B's pages never left (they were still queued), so k2 does not wait for B to go
    out and come back; g10-artifact leaves pages in transfer alone (B leaves: M pages at R)."""
    M = N // 4
    trace = make_trace([M], [False], [([], [0]), ([], []), ([0], [])], [1000.0] * 3)
    hints = np.array([(1, 0, HINT_TO_SSD), (2, 0, HINT_TO_GPU)], HINT_DTYPE)
    rows, _ = replay(trace, config(link=15.754, duplex=duplex), hints)
    assert rows[2, 3] - rows[2, 2] < 0.01 * stream_seconds(M, 3.2) * FREQ
    rows, _ = replay(trace, config("g10-artifact", link=15.754), hints)
    assert rows[2, 3] - rows[1, 2] >= stream_seconds(M, 3.2) * FREQ


ZF = 196_608                                # pages first touched by one kernel (BERT-256's kernel 511)


def zero_fill_seconds(name, malloc=None, link=15.754):
    trace = make_trace([ZF], [False], [([], [0])], [100_000.0])
    cfg = config(name, link=link, gpu_pages=2 * ZF, host_pages=2 * ZF)
    if malloc is not None:
        cfg = cfg.with_overrides({"gpu": {"malloc_us_per_byte": malloc}})
    return Simulator(cfg).run(trace, "base-uvm").iteration_time_s


def driver_seconds(name="default"):
    """The driver's batch costs of the ZF first touches under the physical fault time (0 under
    the profile rule): the far-fault handler's fault.batch_* keys (docs/physics.md)."""
    cfg = config(name, link=15.754)
    if cfg.fault.handler != "physical":
        return 0.0
    p = physical_fault_params(cfg)
    return PhysicalFaultModel(p).py_driver_cycles(ZF, 0) / p["freq_hz"]


@pytest.mark.parametrize("malloc", [8.14e-7, 1e-5])
def test_zero_fill_costs_allocation_not_link_time(malloc):
    t = zero_fill_seconds("default", malloc)
    alloc = ZF * PAGE * malloc / 1e6
    assert driver_seconds() > 0
    assert t == pytest.approx(100e-6 + alloc + driver_seconds(), rel=0.01)
    assert zero_fill_seconds("default", malloc, link=32.0) == pytest.approx(t, rel=0.01)   # no link in it


def test_zero_fill_moves_with_malloc_and_keeps_the_published_rule_in_g10_artifact():
    # (the driver's part is the same at both allocation costs)
    more = ZF * PAGE * (1e-5 - 8.14e-7) / 1e6
    assert zero_fill_seconds("default", 1e-5) - zero_fill_seconds("default", 8.14e-7) == pytest.approx(more, rel=0.01)
    # the published rule: first touches are charged as host transfers over the link
    art = zero_fill_seconds("g10-artifact")
    assert art == pytest.approx(100e-6 + stream_seconds(ZF, 15.754), rel=0.01)
    assert zero_fill_seconds("g10-artifact", 1e-5) == art


def test_g10_artifact_keeps_whole_page_quotas():
    c = ArtifactConstants.from_config(preset("g10-artifact").with_overrides({"link": {"bandwidth_GBps": 63.0}}))
    assert not c.exact and c.ssd_batch == 2          # int(50 x 3.2 / 63): the published rounding
    d = ArtifactConstants.from_config(preset("default").with_overrides({"link": {"bandwidth_GBps": 63.0}}))
    assert d.exact and d.per_slot()["ssd_read"] == pytest.approx(50 * 3.2 / 63, rel=1e-3)
