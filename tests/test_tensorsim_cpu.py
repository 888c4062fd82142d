"""The CPU as a compute tier in the tensor-level simulator: CPU kernels beside GPU kernels.

Every expected time is worked out by hand from the sizes and bandwidths (closed forms).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g10core.codes import HINT_DTYPE, TIER_GPU, TIER_HOST, TIER_SSD
from g10core.config import preset
from g10core.errors import TensorSimError
from g10core.policies import HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD, tensorsim
from g10core.policies.tensorsim import CPUWork, TensorLevelSimulator, TensorSimSpec
from g10core.workload.synth import synthesize

from test_tensorsim import BIG, GiB, HZ, hints, make_trace

TOL = 4 / HZ                         # a few cycles of rounding per transfer


def cpu_spec(*, mem_GiBps=4.0, host_GiBps=2.0, ssd_GiBps=1.0, host_GiB=64.0):
    return TensorSimSpec(mode="gds", capacity_pages=10 * BIG // 4096, page_size_bytes=4096, frequency_GHz=1.2,
                         ssd_bandwidth_Bps=ssd_GiBps * GiB, host_bandwidth_Bps=host_GiBps * GiB,
                         artifact_quirks=False, visit_order="access", allocator="pages",
                         cpu_flops=(("fp32", 1e12), ("bf16", 2e12)), cpu_memory_Bps=mem_GiBps * GiB,
                         host_capacity_bytes=int(host_GiB * GiB), host_ssd_bandwidth_Bps=ssd_GiBps * GiB).check()


def run(trace, sp, h, on_cpu, **work):
    cpu = tensorsim.cpu_work_for(trace, np.array(on_cpu, bool), CPUWork(**work))
    return TensorLevelSimulator(trace, sp, tensorsim.check_hints(trace, h, sp.mode), cpu=cpu).run()


# W: a parameter (global, on the GPU), G: its gradient, M: an optimizer state (global, in host
# memory), X: an activation of the GPU's other work.
W, G, M, X = range(4)


def offload_trace(k2_ms):
    return make_trace([BIG, BIG, BIG, 4096], [True, False, True, False],
                      [(100.0, [W], [G, X]),        # k0 GPU: backward writes the gradient
                       (50.0, [G, M], [M, W]),      # k1 CPU: the optimizer (reads G, M; writes M and W)
                       (k2_ms, [X], []),            # k2 GPU: other work, independent of the CPU
                       (100.0, [W], [])])           # k3 GPU: needs the updated parameter


def test_cpu_kernel_overlaps_the_gpu():
    # k0 0-0.1; G goes down at 0.1 (0.25 GiB at 2 GiB/s: 0.125 s), the CPU runs 0.225-0.475
    # (1 GiB of host traffic: G + M read and written + W written, at 4 GiB/s), while k2 runs on the
    # GPU 0.1-0.5; k3 at 0.5 finds W stale on the GPU and fetches it (0.125 s): 0.625-0.725.
    tr = offload_trace(400.0)
    tier = np.array([TIER_GPU, 0, TIER_HOST, 0], np.int8)
    res = run(tr, cpu_spec(), hints((1, G, HINT_TO_HOST)), [False, True, False, False], initial_tier=tier,
              flops=np.zeros(4))
    assert not res["failed"], res["failure_reason"]
    assert res["time_s"] == pytest.approx(0.725, abs=TOL)
    assert res["cpu_busy_s"] == pytest.approx(0.25, abs=TOL)
    assert res["gpu_wait_cpu_s"] == pytest.approx(0.0, abs=TOL)
    assert res["kernel_start_s"][1] == pytest.approx(0.225, abs=TOL)
    assert res["kernel_time_s"][1] == pytest.approx(0.25, abs=TOL)
    assert res["kernel_start_s"][2] == pytest.approx(0.1, abs=TOL)     # k2 did not wait for the CPU
    assert res["traffic_bytes"] == {"gpu_to_ssd": 0, "ssd_to_gpu": 0, "gpu_to_host": BIG, "host_to_gpu": BIG,
                                    "host_to_ssd": 0, "ssd_to_host": 0}
    assert res["breakdown_s"]["cpu_busy_s"] == res["cpu_busy_s"]
    assert res["kernel_on_cpu"].tolist() == [False, True, False, False]
    # host memory: M from the start, G and W's new value while the CPU works (G dies after it)
    assert res["peak_host_bytes"] == 3 * BIG


def test_gpu_waits_for_the_cpu_kernel_that_writes_its_tensor():
    # k2 takes 50 ms, so k3 is ready at 0.15 and waits for the CPU (done at 0.475): 0.325 s of
    # waiting; W comes up from host memory by the prefetch issued at k2, deferred until the CPU is
    # done: 0.475-0.6; k3 runs 0.6-0.7.
    tr = offload_trace(50.0)
    tier = np.array([TIER_GPU, 0, TIER_HOST, 0], np.int8)
    res = run(tr, cpu_spec(), hints((1, G, HINT_TO_HOST), (2, W, HINT_TO_GPU)), [False, True, False, False],
              initial_tier=tier, flops=np.zeros(4))
    assert res["time_s"] == pytest.approx(0.7, abs=TOL)
    assert res["gpu_wait_cpu_s"] == pytest.approx(0.325, abs=TOL)
    assert res["kernel_start_s"][3] == pytest.approx(0.15, abs=TOL)
    assert res["n_on_demand_fetches"] == 0


def test_cpu_time_is_the_roofline_of_flops_and_bytes():
    # 1e12 fp32 FLOP/s: 0.5e12 flops take 0.5 s, more than the 1 GiB at 4 GiB/s (0.25 s)
    tr = offload_trace(400.0)
    tier = np.array([TIER_GPU, 0, TIER_HOST, 0], np.int8)
    flops = np.array([0, 0.5e12, 0, 0])
    res = run(tr, cpu_spec(), hints((1, G, HINT_TO_HOST)), [False, True, False, False], initial_tier=tier,
              flops=flops)
    assert res["cpu_busy_s"] == pytest.approx(0.5, abs=TOL)
    res = run(tr, cpu_spec(), hints((1, G, HINT_TO_HOST)), [False, True, False, False], initial_tier=tier,
              flops=flops, dtype="bf16")
    assert res["cpu_busy_s"] == pytest.approx(0.25, abs=TOL)     # 2e12 bf16 FLOP/s: the bytes bound


def test_dma_shares_host_memory_bandwidth_with_a_running_cpu_kernel():
    # host memory 3 GiB/s.  The CPU kernel k1 (1 GiB, memory-bound: 1/3 s) starts alone at 0.225 and
    # uses all of it; X2 (0.25 GiB), evicted to host at k2 (0.3 s), then gets max(3/2, 3 - 3) =
    # 1.5 GiB/s instead of the link's 2: 1/6 s instead of 0.125 s.
    X2 = 4
    tr = make_trace([BIG, BIG, BIG, 4096, BIG], [True, False, True, False, False],
                    [(100.0, [W], [G, X]), (50.0, [G, M], [M, W]), (200.0, [X], [X2]), (300.0, [X], []),
                     (10.0, [X2], [])])
    tier = np.array([TIER_GPU, 0, TIER_HOST, 0, 0], np.int8)
    sp = cpu_spec(mem_GiBps=3.0)
    res = run(tr, sp, hints((1, G, HINT_TO_HOST), (3, X2, HINT_TO_HOST)), [False, True, False, False, False],
              initial_tier=tier, flops=np.zeros(5))
    # G down 0.1-0.225 alone (2 GiB/s); the CPU 0.225-0.5583; X2 down 0.3-0.4667, during the CPU
    # kernel; k4 (at 0.6) fetches X2 back at the link's 2 GiB/s, the CPU done: 0.6-0.725
    assert res["transfer_busy_s"] == pytest.approx(0.125 + 0.25 / 1.5 + 0.125, abs=3 * TOL)
    assert res["time_s"] == pytest.approx(0.6 + 0.125 + 0.01, abs=3 * TOL)
    assert res["cpu_busy_s"] == pytest.approx(1 / 3, abs=TOL)
    # and the other way: a CPU kernel starting while a 2 GiB/s DMA runs gets max(1.5, 1) GiB/s
    tr2 = make_trace([BIG, BIG, BIG, 4096, 4 * BIG], [True, False, True, False, False],
                     [(100.0, [W], [G, X, X2]), (50.0, [G, M], [M, W]), (10.0, [X], []), (2000.0, [X2], [])])
    res2 = run(tr2, sp, hints((1, G, HINT_TO_HOST), (1, X2, HINT_TO_HOST)), [False, True, False, False],
               initial_tier=tier, flops=np.zeros(4))
    # G down 0.1-0.225 (2 GiB/s, link alone: X2 queues behind it in the same FIFO), X2 (1 GiB) down
    # from 0.225 at 2 GiB/s; the CPU starts at 0.225 with X2's DMA in flight: 1 GiB at 1.5 GiB/s
    assert res2["cpu_busy_s"] == pytest.approx(1 / 1.5, abs=TOL)


def test_optimizer_state_streams_between_ssd_and_host():
    # M starts on the SSD; the hint at k0 reads it into host memory (0.25 s at 1 GiB/s), the CPU
    # kernel waits for it (from 0.25; G read, M read and written: 0.75 GiB at 4 GiB/s), and the
    # write-back, hinted at k2 and deferred until the CPU is done, takes 0.25 s more (the GPU's k2
    # and k3 need nothing the CPU writes).
    tr = make_trace([BIG, BIG, BIG, 4096], [True, False, True, False],
                    [(100.0, [W], [G, X]), (50.0, [G, M], [M]), (10.0, [X], []), (10.0, [W], [])])
    tier = np.array([TIER_GPU, 0, TIER_SSD, 0], np.int8)
    res = run(tr, cpu_spec(), hints((0, M, HINT_TO_HOST), (1, G, HINT_TO_HOST), (2, M, HINT_TO_SSD)),
              [False, True, False, False], initial_tier=tier, flops=np.zeros(4))
    assert res["kernel_start_s"][1] == pytest.approx(0.25, abs=TOL)
    cpu_s = 3 * BIG / (4 * GiB)
    assert res["cpu_busy_s"] == pytest.approx(cpu_s, abs=TOL)
    assert res["time_s"] == pytest.approx(0.25 + cpu_s + 0.25, abs=TOL)
    assert res["traffic_bytes"]["ssd_to_host"] == BIG and res["traffic_bytes"]["host_to_ssd"] == BIG


def test_pinned_buffers_count_against_host_memory():
    tr = offload_trace(400.0)
    tier = np.array([TIER_GPU, 0, TIER_HOST, 0], np.int8)
    res = run(tr, cpu_spec(host_GiB=1.0), hints((1, G, HINT_TO_HOST)), [False, True, False, False],
              initial_tier=tier, pinned_host_bytes=GiB // 2)
    assert res["failed"] and "host memory" in res["failure_reason"]
    ok = run(tr, cpu_spec(host_GiB=1.5), hints((1, G, HINT_TO_HOST)), [False, True, False, False],
             initial_tier=tier, pinned_host_bytes=GiB // 2)
    assert not ok["failed"] and ok["peak_host_bytes"] == 3 * BIG + GiB // 2


def test_cpu_kernels_are_refused_where_they_cannot_run():
    tr = offload_trace(400.0)
    on = np.array([False, True, False, False])
    with pytest.raises(TensorSimError, match="artifact_quirks"):
        tensorsim.simulate(tr, preset("g10-artifact"), hints(), mode="gds", cpu_kernels=on)
    with pytest.raises(TensorSimError, match="cpu_kernels"):
        tensorsim.simulate(tr, preset("default"), hints(), mode="gds", cpu_kernels=np.array([1, 0]))


def test_without_cpu_kernels_the_result_keys_are_unchanged():
    tr = offload_trace(400.0)
    res = tensorsim.simulate(tr, preset("default"), hints(), mode="gds")
    assert "cpu_busy_s" not in res and set(res["traffic_bytes"]) == set(tensorsim.QUEUE_NAMES)
    res = tensorsim.simulate(tr, preset("default"), hints(), mode="gds", cpu_kernels=np.zeros(4, bool))
    assert res["cpu_busy_s"] == 0 and res["gpu_wait_cpu_s"] == 0


# ---- invariants on random traces, CPU kernels and hints ------------------------------------

@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n_kernels=st.integers(4, 40), n_hints=st.integers(0, 40),
       cpu_share=st.floats(0.0, 0.6))
def test_random_cpu_runs_terminate_with_consistent_accounting(seed, n_kernels, n_hints, cpu_share):
    tr = synthesize(n_kernels, 64 * 4096 * 40, pattern="training", seed=seed)
    rng = np.random.default_rng(seed)
    on_cpu = rng.random(tr.n_kernels) < cpu_share
    h = np.zeros(n_hints, HINT_DTYPE)
    h["kernel"] = rng.integers(0, tr.n_kernels + 1, n_hints)
    h["tensor"] = rng.integers(0, tr.n_tensors, n_hints)
    h["action"] = rng.choice([HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE], n_hints)
    tier = rng.choice([TIER_GPU, TIER_HOST, TIER_SSD], tr.n_tensors).astype(np.int8)
    sp = cpu_spec(mem_GiBps=float(rng.uniform(0.5, 8)), host_GiB=4.0)
    end = h[h["kernel"] == tr.n_kernels]
    res = run(tr, sp, h, on_cpu, initial_tier=tier, end_hints=end)
    if res["failed"]:
        assert "cannot" in res["failure_reason"]
        return
    assert res["time_s"] >= res["cpu_busy_s"] - 1e-12
    assert 0 <= res["gpu_wait_cpu_s"] <= res["time_s"] + 1e-12
    assert res["transfer_busy_s"] <= res["time_s"] + 1e-12
    assert res["peak_host_bytes"] <= 4 * GiB
    k = np.flatnonzero(on_cpu)
    assert np.all(res["kernel_start_s"][k] + res["kernel_time_s"][k] <= res["time_s"] + 1e-12)
    assert res["n_cpu_kernels"] == k.size
