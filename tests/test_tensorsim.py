"""Tensor-level simulator: allocator, FIFO timing, hand-built traces with closed-form answers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g10core.policies import tensorsim
from g10core.config import preset
from g10core.policies import HINT_DTYPE, HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD
from g10core.workload.synth import synthesize
from g10core.policies.tensorsim import (GPU_TO_HOST, GPU_TO_SSD, ExtentAllocator, TensorLevelSimulator,
                               TensorSimError, TensorSimSpec)
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, Trace

GiB = 1 << 30
HZ = 1.2e9
BIG = 1 << 28                 # 256 MiB = 65536 pages: 0.25 s at 1 GiB/s
BIG_PAGES = BIG // 4096


# ---- helpers ----------------------------------------------------------------

def make_trace(sizes, is_global, kernels, model="hand", kernel_names=None):
    """kernels: list of (ideal_ms, reads, writes); a tensor in both is read and written."""
    offsets, tensors, modes = [0], [], []
    for _, reads, writes in kernels:
        order = list(dict.fromkeys(list(reads) + list(writes)))
        for t in order:
            tensors.append(t)
            modes.append((ACCESS_READ if t in reads else 0) | (ACCESS_WRITE if t in writes else 0))
        offsets.append(len(tensors))
    ns = np.array([k[0] * 1e6 for k in kernels], np.float64)
    K = len(kernels)
    return Trace(
        model=model, batch_size=1,
        tensor_size_bytes=np.array(sizes, np.int64),
        tensor_is_global=np.array(is_global, bool),
        tensor_name=np.array([f"t{i}" for i in range(len(sizes))]),
        kernel_name=np.array(kernel_names or [f"k{k}" for k in range(K)]),
        kernel_time_ideal_ns=ns, kernel_time_fault_all_ns=ns * 3, kernel_time_fault_outputs_ns=ns * 2,
        kernel_workspace_bytes=np.zeros(K, np.int64),
        access_offsets=np.array(offsets, np.int64),
        access_tensor=np.array(tensors, np.int32),
        access_mode=np.array(modes, np.uint8),
    )


def hints(*rows):
    h = np.zeros(len(rows), HINT_DTYPE)
    for i, (k, t, a) in enumerate(rows):
        h[i] = (k, t, a)
    return h


def spec(mode="gds", capacity_pages=10 * BIG_PAGES, quirks=True, ssd_GiBps=1.0, host_GiBps=2.0, backward=-1):
    return TensorSimSpec(mode=mode, capacity_pages=capacity_pages, page_size_bytes=4096, frequency_GHz=1.2,
                         ssd_bandwidth_Bps=ssd_GiBps * GiB, host_bandwidth_Bps=host_GiBps * GiB,
                         backward_start_kernel=backward, artifact_quirks=quirks).check()


def run(trace, sp, h):
    return TensorLevelSimulator(trace, sp, tensorsim.check_hints(trace, h, sp.mode)).run()


def cycles(seconds):
    return round(seconds * HZ)


# ---- allocator --------------------------------------------------------------

def test_alloc_low_is_first_fit_from_the_bottom():
    a = ExtentAllocator(100)
    assert a.alloc_low(10) == 0
    assert a.alloc_low(20) == 10
    a.free(0, 10)                      # hole [0, 10)
    assert a.alloc_low(15) == 30       # does not fit the hole: first fit above
    assert a.alloc_low(10) == 0        # fits the hole exactly
    assert a.free_extents() == [(45, 55)]


def test_alloc_high_takes_the_top_of_the_highest_fitting_extent():
    a = ExtentAllocator(100)
    assert a.alloc_high(10) == 90
    assert a.alloc_low(50) == 0
    a.free(0, 50)                      # free: [0, 90)
    assert a.alloc_high(30) == 60
    a.free(90, 10)                     # free: [0, 60) and [90, 100)
    assert a.alloc_high(5) == 95       # highest extent that fits wins, even if small
    assert a.alloc_high(20) == 40      # the top one is too small now


def test_fragmentation_refuses_a_request_that_only_the_total_would_satisfy():
    a = ExtentAllocator(30)
    starts = [a.alloc_low(10) for _ in range(3)]
    a.free(starts[0], 10)
    a.free(starts[2], 10)
    assert a.free_pages == 20 and a.largest_free() == 10
    assert a.alloc_low(11) == -1 and a.alloc_high(11) == -1
    assert a.used_pages == 10


def test_free_merges_with_both_neighbours():
    a = ExtentAllocator(30)
    for _ in range(3):
        a.alloc_low(10)
    a.free(0, 10)
    a.free(20, 10)
    assert a.n_free_extents == 2
    a.free(10, 10)
    assert a.free_extents() == [(0, 30)] and a.used_pages == 0


def test_free_of_unallocated_pages_is_refused():
    a = ExtentAllocator(30)
    a.alloc_low(10)
    with pytest.raises(ValueError, match="not allocated"):
        a.free(5, 10)
    with pytest.raises(ValueError, match="not allocated"):
        a.free(25, 10)


class BitmapAllocator:
    """Slow reference with the published simulator's semantics: one flag per page, linear scans."""

    def __init__(self, n):
        self.used = [False] * n

    def alloc_low(self, n):
        run = 0
        for i, u in enumerate(self.used):
            run = 0 if u else run + 1
            if run == n:
                s = i - n + 1
                self.used[s:i + 1] = [True] * n
                return s
        return -1

    def alloc_high(self, n):
        run = 0
        for i in range(len(self.used) - 1, -1, -1):
            run = 0 if self.used[i] else run + 1
            if run == n:
                self.used[i:i + n] = [True] * n
                return i
        return -1

    def free(self, s, n):
        self.used[s:s + n] = [False] * n

    def largest_free(self):
        best = run = 0
        for u in self.used:
            run = 0 if u else run + 1
            best = max(best, run)
        return best


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["low", "high", "free"]), st.integers(1, 40), st.integers(0, 10 ** 6)),
                max_size=60))
def test_allocator_matches_the_page_bitmap_reference(ops):
    cap = 200
    fast, ref = ExtentAllocator(cap), BitmapAllocator(cap)
    live = []
    for op, n, pick in ops:
        if op == "free":
            if live:
                s, m = live.pop(pick % len(live))
                fast.free(s, m)
                ref.free(s, m)
        else:
            got = getattr(fast, f"alloc_{op}")(n)
            assert got == getattr(ref, f"alloc_{op}")(n)
            if got >= 0:
                live.append((got, n))
        assert fast.largest_free() == ref.largest_free()
        assert fast.used_pages == sum(ref.used)
        ext = fast.free_extents()
        assert all(s1 + l1 < s2 for (s1, l1), (s2, _) in zip(ext, ext[1:]))   # sorted, disjoint, not adjacent


# ---- FIFO transfer timing -----------------------------------------------------

def test_fifo_serialises_a_direction_and_directions_run_in_parallel():
    # three resident weights; two evictions share the GPU->SSD FIFO, one goes to host
    tr = make_trace([BIG, BIG // 2, BIG], [True, True, True], [(1.0, [0, 1, 2], [])])
    sim = TensorLevelSimulator(tr, spec(), tensorsim.check_hints(tr, hints(), "gds"))
    sim._initial_placement()
    sim._enqueue(GPU_TO_SSD, 0)
    sim._enqueue(GPU_TO_SSD, 1)
    sim._enqueue(GPU_TO_HOST, 2)
    done = []
    while sim._events:
        kind = sim._serve_one()
        done.append((kind, sim.now))
    e0, e1, h2 = BIG / GiB, (BIG // 2) / GiB, BIG / (2 * GiB)    # S / BW, seconds
    assert done == [(GPU_TO_HOST, cycles(h2)), (GPU_TO_SSD, cycles(e0)), (GPU_TO_SSD, cycles(e0 + e1))]
    assert sim.busy_cycles == cycles(e0 + e1)                   # union of busy time
    assert sim.traffic == [BIG + BIG // 2, 0, BIG, 0]
    assert sim.alloc.used_pages == 0                            # evictions free the GPU pages
    assert sim.in_host[2] and not sim.in_host[0]


def test_transfer_duration_is_size_over_bandwidth_rounded_up_to_a_cycle():
    tr = make_trace([4096 * 3], [True], [(1.0, [0], [])])
    sim = TensorLevelSimulator(tr, spec(ssd_GiBps=3.0), hints())
    exact = 4096 * 3 / (3.0 * GiB) * HZ
    assert sim._duration(GPU_TO_SSD, 0) == math.ceil(exact)


# ---- hand-built traces with a known answer -------------------------------------

def test_no_pressure_no_hints_runs_at_the_ideal_time():
    tr = make_trace([4096, 8192, 4096], [True, False, False],
                    [(1.0, [0], [1]), (2.0, [1], [2]), (3.0, [0, 2], [])])
    res = tensorsim.simulate(tr, preset("g10-artifact"), hints(), mode="gds")
    assert not res["failed"]
    assert res["time_s"] == pytest.approx(6e-3, abs=1 / HZ)
    assert res["breakdown_s"] == {"compute": pytest.approx(6e-3, abs=1e-9), "overlap": 0.0, "stall": 0.0}
    assert res["traffic_bytes"] == {"ssd_to_gpu": 0, "gpu_to_ssd": 0, "host_to_gpu": 0, "gpu_to_host": 0}
    np.testing.assert_allclose(res["kernel_time_s"], [1e-3, 2e-3, 3e-3], atol=1 / HZ)


def evict_and_prefetch_trace():
    # W global (used by k0 and k2), X/Y small activations
    return make_trace([BIG, 4096, 4096], [True, False, False],
                      [(100.0, [0], [1]), (400.0, [1], [2]), (100.0, [0, 2], [])])


def test_prefetch_after_eviction_closed_form():
    # k1 @0.1 s evicts W (0.25 s, done 0.35); k2 @0.5 s prefetches W (0.25 s) and waits for it
    tr = evict_and_prefetch_trace()
    res = run(tr, spec(), hints((1, 0, HINT_TO_SSD), (2, 0, HINT_TO_GPU)))
    e = BIG / GiB
    assert res["time_s"] == pytest.approx(0.6 + e, abs=2 / HZ)
    assert res["breakdown_s"]["stall"] == pytest.approx(e, abs=2 / HZ)
    assert res["transfer_busy_s"] == pytest.approx(2 * e, abs=2 / HZ)
    assert res["breakdown_s"]["overlap"] == pytest.approx(e, abs=2 / HZ)     # the eviction hid under k1
    assert res["breakdown_s"]["compute"] == pytest.approx(0.6 - e, abs=2 / HZ)
    assert res["traffic_bytes"]["gpu_to_ssd"] == BIG and res["traffic_bytes"]["ssd_to_gpu"] == BIG
    assert res["kernel_start_s"][2] == pytest.approx(0.5, abs=1 / HZ)
    assert res["kernel_time_s"][2] == pytest.approx(0.1 + e, abs=2 / HZ)


def test_host_tier_uses_the_link_share_left_by_the_ssd():
    tr = evict_and_prefetch_trace()
    res = run(tr, spec(host_GiBps=2.0), hints((1, 0, HINT_TO_HOST), (2, 0, HINT_TO_GPU)))
    e = BIG / (2 * GiB)
    assert res["time_s"] == pytest.approx(0.6 + e, abs=2 / HZ)
    assert res["traffic_bytes"] == {"ssd_to_gpu": 0, "gpu_to_ssd": 0, "host_to_gpu": BIG, "gpu_to_host": BIG}
    cfg = preset("g10-artifact").with_overrides({"ssd": {"bandwidth_GBps": 3.2}})
    sp = TensorSimSpec.from_config(cfg, "gds")
    assert sp.host_bandwidth_Bps == pytest.approx((15.754 - 3.2) * GiB)
    assert sp.ssd_bandwidth_Bps == pytest.approx(3.2 * GiB)     # quirk: GB read as 2^30 B


def test_evicted_tensor_without_prefetch_is_fetched_on_demand():
    # X (256 MiB) is written by k0, evicted at k1, read again by k2
    tr = make_trace([BIG, 4096], [False, False], [(100.0, [], [0]), (400.0, [], [1]), (100.0, [0, 1], [])])
    res = run(tr, spec(), hints((1, 0, HINT_TO_SSD)))
    e = BIG / GiB
    assert res["n_on_demand_fetches"] == 1
    assert res["time_s"] == pytest.approx(0.6 + e, abs=2 / HZ)


def quirk_trace():
    # Q global, P and R activations, each 256 MiB; the GPU holds two of them
    return make_trace([BIG, BIG, BIG], [True, False, False],
                      [(500.0, [0], [1]), (500.0, [0], [2]), (50.0, [2], []), (100.0, [1, 2], [])])


@pytest.mark.parametrize("quirks, expect_s", [(True, 1.6), (False, 1.85)])
def test_waiting_prefetch_quirk(quirks, expect_s):
    # k1: P evicted (0.5-0.75 s), R placed once it is gone; k1 runs 0.75-1.25.  k2: Q evicted
    # (1.25-1.5), P's prefetch waits for room.  k3 @1.3 needs P: room appears at 1.5 and P's fetch
    # runs 1.5-1.75.  The published simulator starts k3 at 1.5 without waiting for P's data.
    h = hints((1, 1, HINT_TO_SSD), (2, 0, HINT_TO_SSD), (2, 1, HINT_TO_GPU))
    res = run(quirk_trace(), spec(capacity_pages=2 * BIG_PAGES, quirks=quirks), h)
    assert not res["failed"]
    assert res["time_s"] == pytest.approx(expect_s, abs=4 / HZ)


def test_free_hint_drops_the_pages_without_traffic():
    tr = make_trace([BIG, BIG], [False, False], [(1.0, [], [0]), (1.0, [], [1]), (1.0, [0, 1], [])])
    res = run(tr, spec(capacity_pages=2 * BIG_PAGES), hints((1, 0, HINT_FREE)))
    assert not res["failed"]
    assert sum(res["traffic_bytes"].values()) == 0


def test_cannot_fit_is_a_result_not_an_exception():
    # two 256 MiB activations alive together on a GPU that holds one
    tr = make_trace([BIG, BIG], [False, False], [(1.0, [], [0]), (1.0, [0], [1]), (1.0, [0, 1], [])])
    res = run(tr, spec(capacity_pages=BIG_PAGES + 10), hints())
    assert res["failed"] and res["time_s"] == math.inf
    assert "cannot fit" in res["failure_reason"] and "tensor 1" in res["failure_reason"]
    assert res["failed_at_kernel"] == 1
    assert set(res) == set(run(tr, spec(), hints()))      # same keys as a finished run


def test_a_kernel_larger_than_the_gpu_cannot_fit_under_any_schedule():
    cfg = preset("g10-artifact").with_overrides({"gpu": {"memory_GiB": 0.25}})
    tr = make_trace([BIG, BIG], [False, False], [(1.0, [], [0, 1]), (1.0, [0, 1], [])])
    res = tensorsim.simulate(tr, cfg, hints(), mode="gds")
    assert res["failed"] and "one kernel alone" in res["failure_reason"]


def test_bad_hints_are_refused_with_the_row():
    tr = evict_and_prefetch_trace()
    with pytest.raises(TensorSimError, match="row 0: kernel 4"):
        tensorsim.check_hints(tr, hints((4, 0, HINT_TO_SSD)), "gds")
    assert tensorsim.check_hints(tr, hints((3, 0, HINT_FREE)), "gds").size == 0   # next iteration's
    with pytest.raises(TensorSimError, match="row 1: tensor 7"):
        tensorsim.check_hints(tr, hints((0, 0, HINT_TO_SSD), (1, 7, HINT_TO_SSD)), "gds")
    with pytest.raises(TensorSimError, match="action .* not allowed"):
        tensorsim.check_hints(tr, hints((0, 1, HINT_TO_GPU)), "flashneuron")
    with pytest.raises(TensorSimError, match="dtype"):
        tensorsim.check_hints(tr, np.zeros(2, np.int64), "gds")
    with pytest.raises(TensorSimError, match="mode"):
        tensorsim.simulate(tr, preset("g10-artifact"), hints(), mode="uvm")


def test_hints_are_applied_in_kernel_order_stably():
    tr = evict_and_prefetch_trace()
    h = tensorsim.check_hints(tr, hints((2, 0, HINT_TO_GPU), (1, 0, HINT_TO_SSD), (2, 1, HINT_TO_SSD)), "gds")
    assert h["kernel"].tolist() == [1, 2, 2] and h["tensor"].tolist() == [0, 0, 1]


# ---- invariants on random traces and hints ------------------------------------

@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n_kernels=st.integers(4, 40), n_hints=st.integers(0, 30),
       pattern=st.sampled_from(["training", "random"]), quirks=st.booleans())
def test_random_runs_terminate_with_consistent_accounting(seed, n_kernels, n_hints, pattern, quirks):
    tr = synthesize(n_kernels, 64 * 4096 * 40, pattern=pattern, seed=seed)
    rng = np.random.default_rng(seed)
    h = np.zeros(n_hints, HINT_DTYPE)
    h["kernel"] = rng.integers(0, tr.n_kernels, n_hints)
    h["tensor"] = rng.integers(0, tr.n_tensors, n_hints)
    h["action"] = rng.choice([HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST], n_hints)
    cap = int(rng.integers(tr.footprint_pages // 4 + 1, tr.footprint_pages * 2 + 2))
    res = run(tr, spec(capacity_pages=cap, quirks=quirks), h)
    if res["failed"]:
        assert "cannot fit" in res["failure_reason"]
        return
    ideal = res["ideal_time_s"]
    assert res["time_s"] >= ideal - 1e-12
    b = res["breakdown_s"]
    assert b["stall"] == pytest.approx(res["time_s"] - ideal, abs=1e-9)
    assert b["compute"] + b["overlap"] + b["stall"] == pytest.approx(res["time_s"], abs=1e-9)
    assert res["transfer_busy_s"] <= res["time_s"] + 1e-12
    starts = res["kernel_start_s"]
    assert np.all(np.diff(starts) >= 0)
    assert np.all(res["kernel_time_s"] >= tensorsim.kernel_cycles(tr, 1.2) / HZ - 1e-12)
    assert res["peak_gpu_bytes"] <= cap * 4096


# ---- the published simulator's corners (artifact_quirks) --------------------------

@pytest.mark.parametrize("quirks, expect_s", [(True, 0.6), (False, 0.6 + BIG / GiB)])
def test_evicted_global_without_prefetch(quirks, expect_s):
    # W is evicted at k1 and nothing brings it back; the published simulator re-allocates it
    # at k2 without reading it back, our model fetches it on demand.
    res = run(evict_and_prefetch_trace(), spec(quirks=quirks), hints((1, 0, HINT_TO_SSD)))
    assert res["time_s"] == pytest.approx(expect_s, abs=2 / HZ)


@pytest.mark.parametrize("quirks, expect_s, leaked", [(True, 0.6 + BIG / GiB, BIG), (False, 0.35 + BIG / GiB + 0.1, 0)])
def test_prefetch_of_a_tensor_still_being_evicted(quirks, expect_s, leaked):
    # X is evicted and prefetched at k1 (0.1 s).  Published: the prefetch takes a second extent
    # (the first leaks), the eviction then frees the new one, and k2 (0.5 s) fetches X again on
    # demand.  Ours: the prefetch waits for the eviction (done 0.35 s), k2 waits for its data.
    tr = make_trace([BIG, 4096], [False, False], [(100.0, [], [0]), (400.0, [], [1]), (100.0, [0, 1], [])])
    res = run(tr, spec(quirks=quirks), hints((1, 0, HINT_TO_SSD), (1, 0, HINT_TO_GPU)))
    assert res["time_s"] == pytest.approx(expect_s, abs=3 / HZ)
    assert res["leaked_bytes"] == leaked


@pytest.mark.parametrize("quirks, moved", [(True, 4096), (False, 0)])
def test_eviction_of_a_tensor_that_is_not_resident(quirks, moved):
    tr = make_trace([4096, 4096], [False, False], [(1.0, [], [0]), (1.0, [0], []), (1.0, [], [1])])
    res = run(tr, spec(quirks=quirks), hints((2, 0, HINT_TO_SSD)))     # tensor 0 died after k1
    assert res["traffic_bytes"]["gpu_to_ssd"] == moved


# ---- the published simulator's tensor order ---------------------------------------

def test_hash_set_order_distinct_buckets_reverse_insertion():
    assert tensorsim.libstdcxx_set_order([1, 2, 3]) == [3, 2, 1]


def test_hash_set_order_a_collision_joins_the_head_of_its_bucket():
    # 13 buckets: 0 and 13 share one; 13 goes in front of 0, where that bucket's run starts
    assert tensorsim.libstdcxx_set_order([0, 5, 13]) == [5, 13, 0]
    assert tensorsim.libstdcxx_set_order([0, 13, 5]) == [5, 13, 0]


def test_hash_set_order_rehashes_at_fourteen_elements():
    # 0..12 fill the 13 buckets (list 12..0); the 14th insert rehashes to 29 buckets, pushing
    # each node of 12..0 to the front of the new list (giving 0..12); then 13 goes to the front
    assert tensorsim.libstdcxx_set_order(list(range(14))) == [13] + list(range(13))


def test_hash_set_order_follows_the_addresses():
    # 0 and 5 lie 13 bytes apart (one bucket of 13), 13 in the next: 5 joins 0's run, 13 starts
    # a new one at the head; hashing the ids instead puts 13 with 0
    assert tensorsim.libstdcxx_set_order([0, 5, 13], {0: 0, 5: 13, 13: 1}) == [13, 5, 0]
    assert tensorsim.libstdcxx_set_order([0, 5, 13]) == [5, 13, 0]


def test_artifact_tensor_layout_covers_every_shipped_trace(load_shipped):
    from conftest import SHIPPED_NAMES

    for name in SHIPPED_NAMES:
        tr = load_shipped(name)
        address = tensorsim.artifact_tensor_addresses(str(tr.model), tr.n_tensors)
        if tr.model in ("bert_base", "vit"):     # not measured: a fixed stride
            assert address is None, name
            continue
        assert address is not None and len(address) == tr.n_tensors, name
        assert address[0] == 0 and len(set(address)) == tr.n_tensors    # one object per tensor
        assert all(a % 16 == 0 for a in address)                        # glibc's alignment
    assert tensorsim.artifact_tensor_addresses("no-such-model", 3) is None
    assert tensorsim.artifact_tensor_addresses("senet154", 10 ** 6) is None


def test_visit_orders():
    tr = make_trace([4096] * 3, [False] * 3, [(1.0, [0, 1], [2])])
    assert tensorsim.visit_lists(tr, "access") == [[0, 1, 2]]
    assert tensorsim.visit_lists(tr, "reverse") == [[2, 1, 0]]
    assert tensorsim.visit_lists(tr, "artifact") == [[2, 1, 0]]
    with pytest.raises(TensorSimError, match="visit_order"):
        tensorsim.visit_lists(tr, "random")
    assert TensorSimSpec.from_config(preset("g10-artifact"), "gds").visit_order == "artifact"
    cfg = preset("g10-artifact").with_overrides({"scheduler": {"artifact_quirks": False}})
    assert TensorSimSpec.from_config(cfg, "gds").visit_order == "access"


# ---- the page pool (G10-GDS and G10-Host outside g10-artifact) ----------------

def test_page_pool_takes_any_free_pages_and_gives_them_back():
    from g10core.policies.tensorsim import PageAllocator

    a = PageAllocator(30)
    t1, t2 = a.alloc_low(10), a.alloc_high(15)
    assert t1 >= 0 and t2 >= 0 and t1 != t2 and a.free_pages == 5
    assert a.alloc_low(6) == -1 and a.largest_free() == 5
    a.free(t1, 10)
    # an extent allocator would now hold two holes of 10 and 5 pages; the pool gives 15 at once
    assert a.largest_free() == 15 and a.alloc_low(15) >= 0 and a.free_pages == 0
    with pytest.raises(ValueError):
        a.free(99, 1)


def test_g10_tensor_level_allocates_pages_outside_the_artifact_preset_flashneuron_extents():
    from g10core.config import preset
    from g10core.policies.tensorsim import TensorSimSpec

    default, artifact = preset("default"), preset("g10-artifact")
    assert TensorSimSpec.from_config(default, "gds").allocator == "pages"
    assert TensorSimSpec.from_config(artifact, "gds").allocator == "extents"
    for cfg in (default, artifact):
        assert TensorSimSpec.from_config(cfg, "flashneuron").allocator == "extents"
    with pytest.raises(TensorSimError, match="allocator"):
        TensorSimSpec(**{**spec().__dict__, "allocator": "buddy"}).check()


def test_a_fragmented_gpu_fits_a_tensor_with_the_page_pool_not_with_extents():
    # t0 [0, 4), t2 [4, 8), t1 [8, 11) of 13 pages; t2 dies, leaving holes of 4 and 2 pages: the
    # 6-page t3 fits in the 6 free pages only when they need not be contiguous
    P = 4096
    tr = make_trace([4 * P, 3 * P, 4 * P, 6 * P], [False] * 4,
                    [(1.0, [], [0]), (1.0, [], [2]), (1.0, [], [1]), (1.0, [2], []), (1.0, [], [3]),
                     (1.0, [0, 1, 3], [])])
    sp = spec(capacity_pages=13, quirks=False)
    extents = run(tr, sp, hints())
    assert extents["failed"] and "largest free extent is 4 pages" in extents["failure_reason"]
    pages = run(tr, TensorSimSpec(**{**sp.__dict__, "allocator": "pages"}).check(), hints())
    assert not pages["failed"], pages["failure_reason"]
    assert pages["time_s"] == pytest.approx(pages["ideal_time_s"])


# ---- demand eviction (a policy on UVM: G10-GDS, G10-Host outside g10-artifact) -------------

def uvm_spec(tier, capacity_pages=2 * BIG_PAGES, ssd_GiBps=1.0, host_GiBps=2.0):
    """A GPU with virtual memory (page allocator, no quirks) that evicts on demand to ``tier``."""
    import dataclasses
    sp = spec(capacity_pages=capacity_pages, quirks=False, ssd_GiBps=ssd_GiBps, host_GiBps=host_GiBps)
    sp = dataclasses.replace(sp, allocator="pages")
    return dataclasses.replace(sp, demand_eviction_tier=tier).check() if tier >= 0 else sp.check()


def three_globals_trace():
    # three 256 MiB globals, used by kernels 0, 1, 2 and A again by kernels 3 and 4; the GPU
    # holds two (kernel 4 ends the iteration: the steady state's restore counts in its step)
    return make_trace([BIG, BIG, BIG], [True, True, True],
                      [(10, [0], []), (10, [1], []), (10, [2], []), (10, [0], []), (10, [0], [])])


def steady_run(trace, sp, tiers):
    return TensorLevelSimulator(trace, sp, tensorsim.check_hints(trace, hints(), sp.mode),
                                initial_tier=np.array(tiers, np.int8)).run()


def test_without_demand_eviction_a_full_gpu_fails():
    from g10core.codes import TIER_GPU, TIER_SSD
    res = steady_run(three_globals_trace(), uvm_spec(-1), [TIER_GPU, TIER_GPU, TIER_SSD])
    assert res["failed"] and "cannot fit" in res["failure_reason"]


@pytest.mark.parametrize("tier_name", ["ssd", "host"])
def test_demand_eviction_evicts_in_arrival_order_with_closed_form_time(tier_name):
    # A and B start on the GPU (A placed first), C on the SSD.  Kernel 2 needs C: nothing is in
    # flight, so A (the earliest arrival, not kernel 2's) is evicted, then C is fetched.  Kernel 3
    # needs A back: B (arrived before C) is evicted, then A is fetched.  After the last kernel the
    # steady state moves every global back where it started (C out to the SSD, B in).
    from g10core.codes import TIER_GPU, TIER_HOST, TIER_SSD
    tier = TIER_SSD if tier_name == "ssd" else TIER_HOST
    sp = uvm_spec(tier)
    res = steady_run(three_globals_trace(), sp, [TIER_GPU, TIER_GPU, TIER_SSD])
    assert not res["failed"], res["failure_reason"]
    out_Bps = GiB * (1.0 if tier_name == "ssd" else 2.0)
    write = math.ceil(BIG * HZ / out_Bps - 1e-6)          # a demand eviction
    read_ssd = math.ceil(BIG * HZ / GiB - 1e-6)            # C from the SSD
    read_back = math.ceil(BIG * HZ / out_Bps - 1e-6)       # A from where it was evicted to
    k = cycles(0.010)
    assert res["demand_evictions"] == 2
    assert res["demand_evicted_bytes"] == 2 * BIG
    assert res["traffic_bytes"]["gpu_to_" + tier_name] >= 2 * BIG
    # kernel 2 waits for A's eviction, then C's fetch; kernel 3 for B's eviction, then A's fetch
    assert res["kernel_time_s"][2] * HZ == pytest.approx(k + write + read_ssd, abs=2)
    assert res["kernel_time_s"][3] * HZ == pytest.approx(k + write + read_back, abs=2)
    # then the steady state puts the globals back where they started (its time counts)
    assert res["time_cycles"] > 5 * k + 2 * write + read_ssd + read_back


def test_demand_eviction_never_takes_the_running_kernels_tensors():
    # kernel 1 reads A and needs B too: the GPU holds two tensors and the third, C, arrived
    # last; the victim must be C, not A (arrived first but read by the running kernel)
    from g10core.codes import TIER_GPU, TIER_SSD
    tr = make_trace([BIG, BIG, BIG], [True, True, True], [(10, [0, 2], []), (10, [0, 1], [])])
    res = steady_run(tr, uvm_spec(TIER_SSD), [TIER_GPU, TIER_SSD, TIER_GPU])
    assert not res["failed"], res["failure_reason"]
    assert res["demand_evictions"] == 1


def test_a_kernel_larger_than_the_gpu_still_fails_with_demand_eviction():
    from g10core.codes import TIER_GPU, TIER_SSD
    tr = make_trace([BIG, BIG, BIG], [True, True, True], [(10, [0, 1, 2], [])])
    res = steady_run(tr, uvm_spec(TIER_SSD), [TIER_GPU, TIER_GPU, TIER_SSD])
    assert res["failed"] and "cannot fit" in res["failure_reason"]


def test_demand_eviction_is_refused_under_the_artifacts_quirks():
    cfg = preset("g10-artifact")
    tr = three_globals_trace()
    with pytest.raises(TensorSimError, match="demand_eviction"):
        tensorsim.simulate(tr, cfg, hints(), mode="gds", demand_eviction="ssd")


def test_demand_eviction_walks_every_resident_tensor_in_arrival_order(monkeypatch):
    # the resident tensors' dict (kept by _place and _free) against the definition: every
    # tensor with an extent, by its latest placement; OPT-13B on the T4 under G10-GDS demand-evicts
    from g10core.config import resolve
    from g10core.simulator import Simulator
    from g10core.workload.llm import inference_trace

    placed, calls = [], []
    orig_place, orig_evict = TensorLevelSimulator._place, TensorLevelSimulator._evict_on_demand

    def place(self, tensor, high):
        ok = orig_place(self, tensor, high)
        if ok:
            placed.append(tensor)
        return ok

    def evict(self, tensor, kernel):
        last = {t: i for i, t in enumerate(placed)}
        resident = [t for t in range(self.trace.n_tensors) if self.extent[t] >= 0]
        assert list(self._resident) == sorted(resident, key=last.__getitem__)
        calls.append(tensor)
        return orig_evict(self, tensor, kernel)

    monkeypatch.setattr(TensorLevelSimulator, "_place", place)
    monkeypatch.setattr(TensorLevelSimulator, "_evict_on_demand", evict)
    r = Simulator(resolve(sets=["gpu.model=T4"])).run(inference_trace("opt-13b", 512, 4, 16, gpu="T4"), "g10-gds")
    assert not r.failed and calls and r.counters["demand_evictions"] > 0
