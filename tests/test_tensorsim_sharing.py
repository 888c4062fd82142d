"""Tensor-level simulator: link sharing re-rated at every start and end, the transfer log, host memory
capacity, and lifetimes (no release under a kernel, nothing moved for a dead tensor).

Unit tests on hand-built traces with known answers, then hypothesis properties over small synthetic
traces run by several tensor-level policies.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g10core import config as C
from g10core import policies
from g10core.codes import HINT_DTYPE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD, ROLE_ACTIVATION
from g10core.policies import tensorsim
from g10core.policies.tensorsim import (GPU_TO_HOST, GPU_TO_SSD, HOST_TO_GPU, SSD_TO_GPU, TensorLevelSimulator,
                                        TensorSimSpec, link_rate_excess, transfer_spans)
from g10core.workload.synth import synthesize
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, Trace

GiB = 1 << 30
HZ = 1.2e9
BIG = 1 << 28                 # 256 MiB
BIG_PAGES = BIG // 4096


def make_trace(sizes, is_global, kernels):
    """kernels: list of (ideal_ms, reads, writes)."""
    offsets, tensors, modes = [0], [], []
    for _, reads, writes in kernels:
        for t in dict.fromkeys(list(reads) + list(writes)):
            tensors.append(t)
            modes.append((ACCESS_READ if t in reads else 0) | (ACCESS_WRITE if t in writes else 0))
        offsets.append(len(tensors))
    ns = np.array([k[0] * 1e6 for k in kernels], np.float64)
    K = len(kernels)
    return Trace(model="hand", batch_size=1, tensor_size_bytes=np.array(sizes, np.int64),
                 tensor_is_global=np.array(is_global, bool),
                 tensor_name=np.array([f"t{i}" for i in range(len(sizes))]),
                 kernel_name=np.array([f"k{k}" for k in range(K)]),
                 kernel_time_ideal_ns=ns, kernel_time_fault_all_ns=ns * 3, kernel_time_fault_outputs_ns=ns * 2,
                 kernel_workspace_bytes=np.zeros(K, np.int64), access_offsets=np.array(offsets, np.int64),
                 access_tensor=np.array(tensors, np.int32), access_mode=np.array(modes, np.uint8))


def hints(*rows):
    h = np.zeros(len(rows), HINT_DTYPE)
    for i, row in enumerate(rows):
        h[i] = row
    return h


def spec(link_GiBps=2.0, ssd_GiBps=1.5, host_GiBps=1.5, host_capacity=1 << 62, quirks=False, overflow=-1):
    return TensorSimSpec(mode="gds", capacity_pages=10 * BIG_PAGES, page_size_bytes=4096, frequency_GHz=1.2,
                         ssd_bandwidth_Bps=ssd_GiBps * GiB, host_bandwidth_Bps=host_GiBps * GiB,
                         link_bandwidth_Bps=link_GiBps * GiB, artifact_quirks=quirks, visit_order="access",
                         allocator="pages", host_capacity_bytes=host_capacity, host_overflow_tier=overflow).check()


def run(trace, sp, h):
    return TensorLevelSimulator(trace, sp, tensorsim.check_hints(trace, h, "gds")).run()


# ---- link sharing ---------------------------------------------------------------

def test_a_second_transfer_re_rates_the_one_in_flight():
    # Two resident weights, A and B (256 MiB each).  A leaves for the SSD at k0 (t = 0) alone: 1.5 GiB/s
    # (its own bandwidth, under the 2 GiB/s link).  B leaves for host memory at k1 (t = 0.05 s): the
    # link is shared max-min fair, 1 GiB/s each, A slowed down too.  A has 0.25 - 0.075 = 0.175 GiB
    # left: B ends first?  B: 0.25 GiB at 1 -> would take 0.25 s; A: 0.175 GiB at 1 -> 0.175 s, A ends
    # at 0.225 s; then B alone at 1.5 GiB/s: it moved 0.175 GiB, 0.075 GiB left, ends 0.275 s.
    tr = make_trace([BIG, BIG, 4096], [True, True, False],
                    [(50.0, [], [2]), (500.0, [2], []), (10.0, [0, 1], [])])
    res = run(tr, spec(), hints((0, 0, HINT_TO_SSD), (1, 1, HINT_TO_HOST)))
    spans = transfer_spans(res["transfer_log"])
    ends = {int(r["tensor"]): int(r["end"]) / HZ for r in spans if r["queue"] in (GPU_TO_SSD, GPU_TO_HOST)}
    assert ends[0] == pytest.approx(0.225, abs=3 / HZ)
    assert ends[1] == pytest.approx(0.275, abs=3 / HZ)
    log = res["transfer_log"]
    assert link_rate_excess(log, (GPU_TO_SSD, GPU_TO_HOST), 2.0 * GiB, 1.2) <= 1e-6 * GiB
    # the rows of a transfer add up to its size
    assert sorted(spans["bytes"][spans["queue"] <= GPU_TO_HOST].tolist())[:2] == [BIG, BIG]


def test_the_old_rule_would_have_run_the_link_above_its_bandwidth():
    # the same two evictions: the link carries at most 2 GiB/s at every instant, and both directions'
    # bound is checked on the log (the fetches back, too)
    tr = make_trace([BIG, BIG, 4096], [True, True, False],
                    [(50.0, [], [2]), (500.0, [2], []), (10.0, [2], []), (10.0, [0, 1], [])])
    res = run(tr, spec(), hints((0, 0, HINT_TO_SSD), (1, 1, HINT_TO_HOST), (2, 0, HINT_TO_GPU),
                                (2, 1, HINT_TO_GPU)))
    log = res["transfer_log"]
    for direction in ((GPU_TO_SSD, GPU_TO_HOST), (SSD_TO_GPU, HOST_TO_GPU)):
        assert link_rate_excess(log, direction, 2.0 * GiB, 1.2) <= 1e-6 * GiB
    for q in (GPU_TO_HOST, HOST_TO_GPU):
        assert link_rate_excess(log, (q,), 1.5 * GiB, 1.2) <= 1e-6 * GiB
    # a rate change splits a transfer into rows: A's eviction has two (alone, then shared)
    a_rows = log[(log["tensor"] == 0) & (log["queue"] == GPU_TO_SSD) & (log["bytes"] > 0)]
    assert a_rows.size == 2


def test_the_artifact_preset_keeps_the_static_split():
    # g10-artifact: no link sharing (link_bandwidth 0); each queue at its own bandwidth, rows one per transfer
    tr = make_trace([BIG, BIG, 4096], [True, True, False],
                    [(50.0, [], [2]), (500.0, [2], []), (10.0, [0, 1], [])])
    sp = TensorSimSpec(mode="gds", capacity_pages=10 * BIG_PAGES, page_size_bytes=4096, frequency_GHz=1.2,
                       ssd_bandwidth_Bps=1.0 * GiB, host_bandwidth_Bps=2.0 * GiB).check()
    res = run(tr, sp, hints((0, 0, HINT_TO_SSD), (1, 1, HINT_TO_HOST)))
    spans = transfer_spans(res["transfer_log"])
    assert spans.size == res["n_transfers"]
    dur = {int(r["tensor"]): (int(r["end"]) - int(r["start"])) / HZ for r in spans}
    assert dur[0] == pytest.approx(0.25, abs=2 / HZ) and dur[1] == pytest.approx(0.125, abs=2 / HZ)


# ---- host memory capacity ----------------------------------------------------------

def two_offloads_trace():
    # A and B (256 MiB activations) written by k0, both offloaded at k1 and read by k3
    return make_trace([BIG, BIG, 4096], [False, False, False],
                      [(10.0, [], [0, 1]), (10.0, [], [2]), (500.0, [2], []), (10.0, [0, 1], [])])


def test_offload_beyond_host_memory_fails_naming_the_tensor():
    res = TensorLevelSimulator(two_offloads_trace(), spec(host_capacity=BIG + BIG // 2),
                               tensorsim.check_hints(two_offloads_trace(), hints((1, 0, HINT_TO_HOST),
                                                                                 (1, 1, HINT_TO_HOST)), "gds"),
                               policy="vdnn").run()
    assert res["failed"]
    assert res["failure_reason"].startswith("vdnn: offloading tensor 1 (t1, 0.25 GiB) needs host memory beyond "
                                            "host.memory_GiB = 0.375 GiB (held: 0.25 GiB")


def test_offload_beyond_host_memory_spills_to_the_ssd_where_the_policy_has_one():
    res = run(two_offloads_trace(), spec(host_capacity=BIG + BIG // 2, overflow=tensorsim.TIER_SSD),
              hints((1, 0, HINT_TO_HOST), (1, 1, HINT_TO_HOST)))
    assert not res["failed"]
    assert res["host_spills"] == 1 and res["host_spilled_bytes"] == BIG
    assert res["traffic_bytes"]["gpu_to_host"] == BIG and res["traffic_bytes"]["gpu_to_ssd"] == BIG
    assert res["traffic_bytes"]["ssd_to_gpu"] == BIG            # fetched back from where it went
    assert res["peak_host_bytes"] == BIG <= BIG + BIG // 2


def test_host_memory_is_released_when_the_copy_comes_back():
    # room for one copy: A goes and comes back before B goes
    tr = make_trace([BIG, BIG, 4096], [False, False, False],
                    [(10.0, [], [0, 1]), (10.0, [1], [2]), (500.0, [2], []), (10.0, [0], []), (10.0, [], []),
                     (500.0, [2], []), (10.0, [1], [])])
    res = run(tr, spec(host_capacity=BIG), hints((1, 0, HINT_TO_HOST), (2, 0, HINT_TO_GPU),
                                                  (4, 1, HINT_TO_HOST)))
    assert not res["failed"], res["failure_reason"]
    assert res["peak_host_bytes"] == BIG and res["traffic_bytes"]["gpu_to_host"] == 2 * BIG


def training_trace(n_kernels: int, seed: int) -> Trace:
    """A synthetic training trace whose ``act_*`` tensors are marked activations (the generator leaves
    the hidden ones' role unknown), so that the activation-offloading policies have work."""
    tr = synthesize(n_kernels, 64 << 20, seed=seed, kernel_time_us=1000.0)
    act = np.char.startswith(tr.tensor_name.astype(str), "act_")
    return dataclasses.replace(tr, tensor_role=np.where(act, ROLE_ACTIVATION, tr.tensor_role).astype(
        tr.tensor_role.dtype))


def test_vdnn_fails_past_host_memory():
    tr = training_trace(14, 3)
    cfg = C.resolve("default", sets=["gpu.memory_GiB=1", "host.memory_GiB=0.001"])
    res = policies.get("vdnn")(cfg).simulate(tr)
    assert res["failed"] and "needs host memory beyond host.memory_GiB" in res["failure_reason"]
    assert res["failure_reason"].startswith("vdnn: offloading tensor 0 (act_0, 0.0249 GiB) needs host memory "
                                            "beyond host.memory_GiB = 0.001 GiB (held: 0 GiB")
    # the SSD-backed policies never use host memory
    assert not policies.get("ssdtrain")(cfg).simulate(tr)["failed"]


# ---- lifetimes ----------------------------------------------------------------------

def test_a_queued_eviction_of_a_tensor_the_next_kernel_reads_is_cancelled():
    # A, B written by k0; B's eviction (at k1) waits behind A's (1.5 GiB/s: 0.167 s each); k2 (10 ms)
    # reads B before its eviction starts: cancelled, nothing moves for B and B is never fetched
    tr = make_trace([BIG, BIG, 4096], [False, False, False],
                    [(10.0, [], [0, 1]), (10.0, [], [2]), (10.0, [1, 2], []), (500.0, [2], []), (10.0, [0, 1], [])])
    res = run(tr, spec(), hints((1, 0, HINT_TO_HOST), (1, 1, HINT_TO_HOST)))
    assert res["n_cancelled_transfers"] == 1
    assert res["traffic_bytes"]["gpu_to_host"] == BIG and res["traffic_bytes"]["host_to_gpu"] == BIG
    assert res["n_on_demand_fetches"] == 1           # A, at k4


def test_an_eviction_in_flight_when_a_kernel_reads_the_tensor_completes_as_a_copy():
    # A's eviction starts at k1 (0.167 s); k2 reads A from 0.02 s for 0.5 s: the copy ends under it, the
    # pages stay, and A is not fetched back
    tr = make_trace([BIG, 4096], [False, False],
                    [(10.0, [], [0, 1]), (10.0, [1], []), (500.0, [0], []), (10.0, [0], [])])
    res = run(tr, spec(), hints((1, 0, HINT_TO_HOST)))
    assert res["n_kept_evictions"] == 1
    assert res["traffic_bytes"]["host_to_gpu"] == 0 and not res["transfer_log"]["released"].any()
    assert res["peak_host_bytes"] == BIG           # (its buffer was claimed, and given back)


def test_a_dead_tensor_is_not_copied_nor_fetched():
    # A dies at k2 (its last reader) while its eviction (hinted at k1) still queues behind B's; the
    # prefetch hinted at k3 for it is ignored
    tr = make_trace([BIG, BIG, 4096], [False, False, False],
                    [(10.0, [], [0, 1]), (10.0, [], [2]), (10.0, [0], []), (500.0, [2], []), (10.0, [1], [])])
    res = run(tr, spec(), hints((1, 1, HINT_TO_HOST), (1, 0, HINT_TO_HOST), (3, 0, HINT_TO_GPU)))
    moved = transfer_spans(res["transfer_log"])
    assert set(moved["tensor"].tolist()) == {1}
    assert res["n_cancelled_transfers"] == 1


# ---- properties over synthetic traces and several policies ------------------------------

POLICIES = ["vdnn", "vdnn-conv", "capuchin", "ssdtrain", "teraio", "flashneuron", "g10-gds", "g10-host"]


def kernel_users(tr: Trace) -> dict:
    users: dict = {}
    off = tr.access_offsets
    acc = tr.access_tensor.tolist()
    for k in range(tr.n_kernels):
        for t in set(acc[off[k]:off[k + 1]]):
            users.setdefault(t, []).append(k)
    return users


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n_kernels=st.integers(6, 30), policy=st.sampled_from(POLICIES),
       gpu_share=st.floats(0.4, 1.2), link=st.sampled_from([1.0, 4.0, 16.0]), host_share=st.floats(0.0, 2.0),
       duplex=st.sampled_from(["shared", "full"]))
def test_tiers_hold_their_capacity_kernels_keep_their_tensors_and_the_link_its_bandwidth(
        seed, n_kernels, policy, gpu_share, link, host_share, duplex):
    footprint = 64 << 20
    tr = training_trace(n_kernels, seed)
    cfg = C.resolve("default", sets=[f"gpu.memory_GiB={gpu_share * footprint / GiB:.6f}",
                                     f"host.memory_GiB={host_share * footprint / GiB:.6f}",
                                     f"link.bandwidth_GBps={link}", f"ssd.duplex={duplex}"])
    res = policies.get(policy)(cfg).simulate(tr)
    if "peak_host_bytes" not in res:              # refused before simulating (one kernel alone does not fit)
        assert res["failed"]
        return
    page = cfg.gpu.page_size_bytes
    assert res["peak_gpu_bytes"] <= int(cfg.gpu.memory_GiB * GiB) // page * page
    assert res["peak_host_bytes"] <= int(cfg.host.memory_GiB * GiB)
    if res["failed"]:
        assert "cannot fit" in res["failure_reason"] or "host memory" in res["failure_reason"]
    log = res["transfer_log"]
    hz_GHz = cfg.gpu.frequency_GHz
    link_Bps = link * 1e9
    tol = 1e-6 * link_Bps
    assert link_rate_excess(log, (GPU_TO_SSD, GPU_TO_HOST), link_Bps, hz_GHz) <= tol
    assert link_rate_excess(log, (SSD_TO_GPU, HOST_TO_GPU), link_Bps, hz_GHz) <= tol
    host_Bps = min(cfg.host.bandwidth_GBps, link) * 1e9
    for q in (GPU_TO_HOST, HOST_TO_GPU):
        assert link_rate_excess(log, (q,), host_Bps, hz_GHz) <= tol
    if res["failed"] or res.get("recompute"):
        return      # (recompute copies are folded into the kernels they precede: no per-kernel intervals)
    hz = hz_GHz * 1e9
    start = np.rint(res["kernel_start_s"] * hz).astype(np.int64)
    finish = start + np.rint(res["kernel_time_s"] * hz).astype(np.int64)
    # the last kernel's step runs on until the link is idle; the kernel itself ends at gpu_end_cycles
    finish[-1] = min(finish[-1], res["gpu_end_cycles"])
    users = kernel_users(tr)
    birth, death = tensorsim.liveness(tr, hz_GHz)
    for row in transfer_spans(log):
        t = int(row["tensor"])
        if row["released"]:                       # no release while a kernel that touches it runs
            assert not any(start[k] < row["end"] < finish[k] for k in users.get(t, ())), (t, row)
        if not tr.tensor_is_global[t]:
            last = int(death[t]) - 1 if death[t] != -1 else int(birth[t])
            if last >= 0:                         # nothing starts moving once it is dead
                assert row["start"] < finish[last] or row["start"] <= start[last], (t, row, last)
