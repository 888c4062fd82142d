"""Far-fault handler (g10core.uvm.fault_handler, uvm/_uvm.pyx): fault buffer and batches, deduplication, the
prefetchers inside the VA block, least-recently-migrated eviction, destinations, hints, frees,
timing through the PCIe link and the SSD (detailed_model.md §1, §5)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from g10core.config import ConfigError
from g10core.link.pcie import PcieLink, PcieSpec
from g10core.ssd import SSD
from g10core.tlb import TLB, TLBSpec
from g10core.uvm.fault_handler import (FAULT_DUPLICATE, FAULT_QUEUED, FAULT_RESIDENT, TIERS, FaultHandler,
                         FaultHandlerSpec)
from g10core.uvm._uvm import RunTierMap

B = 512          # pages per 2 MiB VA block
U = 16           # pages per 64 KiB migration unit
HOST, SSD_T, GPU, NP = TIERS["host"], TIERS["ssd"], TIERS["gpu"], TIERS["not_present"]
FAULT, PREFETCH, HINT, EVICT = 0, 1, 2, 3


def pages(moves, cause=None, dst=None):
    sel = np.ones(len(moves), bool)
    if cause is not None:
        sel &= moves["cause"] == cause
    if dst is not None:
        sel &= moves["dst"] == dst
    return int((moves["end"][sel] - moves["first"][sel]).sum())


# ---- spec -------------------------------------------------------------------------------

def test_defaults_are_the_reference_figures():
    s = FaultHandlerSpec().check()
    # detailed_model.md §1
    assert (s.migration_unit_bytes, s.va_block_bytes) == (64 * 1024, 2 * 1024 * 1024)
    # the driver's module parameters (uvm_perf_prefetch.c, uvm_gpu_replayable_faults.c, uvm_pmm_gpu.c)
    assert (s.prefetcher, s.prefetch_threshold, s.prefetch_min_faults, s.prefetch_tree_rule) == \
        ("tree", 0.51, 1, "driver")
    assert (s.batch_faults, s.batches_per_service, s.chunk_order) == (256, 20, "allocation")
    # fault.batch_profile = uvm-eval-titanv: the instrumented driver's batch record (ns; tallendev/uvm-eval
    # bsize-scripts README): time 736221 - service_time 534863, map_time 35196, unmap_res_time 34254;
    # per page the GTX 1080 Ti fit
    assert (s.batch_fixed_us, s.batch_per_block_us, s.batch_per_page_us, s.batch_unmap_us) == \
        pytest.approx(((736221 - 534863) / 1000, 35196 / 1000, 0.2, 34254 / 1000))
    assert (s.eviction_granularity_bytes, s.evict_destination) == (2 * 1024 * 1024, "host-then-ssd")
    assert s.compiled_params(10, 10)["batch_fixed"] == math.ceil((736221 - 534863) * 1.2)   # at 1.2 GHz


@pytest.mark.parametrize("field,value", [
    ("migration_unit_bytes", 2048), ("migration_unit_bytes", 3 * 4096), ("migration_unit_bytes", 131072),
    ("va_block_bytes", 4 * 1024 * 1024), ("va_block_bytes", 3 * 65536), ("prefetcher", "density"),
    ("prefetch_threshold", 0.0), ("prefetch_threshold", 1.0), ("prefetch_threshold", float("nan")),
    ("sequential_units", 0), ("sequential_units", 33), ("batch_faults", 0), ("batch_faults", 1.5),
    ("batch_fixed_us", -1.0), ("batch_per_page_us", float("inf")), ("eviction_granularity_bytes", 65536),
    ("evict_destination", "disk"), ("clock_GHz", 0.0),
])
def test_bad_values_are_refused_naming_the_field(field, value):
    with pytest.raises(ConfigError, match=rf"fault\.{field}"):
        FaultHandlerSpec(**{field: value}).check()


@pytest.mark.parametrize("name", ["unit_pages", "block_pages"])
def test_compiled_handler_refuses_sizes_that_are_not_powers_of_two(name):
    # it divides pages by these with shifts; the spec's check refuses such sizes first
    from g10core.uvm._uvm import FarFaultHandler
    params = FaultHandlerSpec().check().compiled_params(1024, 1024)
    params[name] = 24
    with pytest.raises(ValueError, match=f"{name} = 24: must be a power of two"):
        FarFaultHandler(params, PcieLink().core)


def test_block_smaller_than_the_unit_is_refused():
    with pytest.raises(ConfigError, match="va_block_bytes"):
        FaultHandlerSpec(va_block_bytes=32768).check()


def test_python_entry_points_refuse_bad_input():
    h = FaultHandler(gpu_pages=100)
    with pytest.raises(ConfigError):
        h.fault(10, 0, (20, 30))                          # outside its allocation
    with pytest.raises(ConfigError):
        h.fault(10, -1)
    with pytest.raises(ConfigError):
        h.prefetch(5, 3, 0)
    with pytest.raises(ConfigError):
        h.evict(0, 10, "gpu", 0)
    with pytest.raises(ConfigError):
        FaultHandler(gpu_pages=-1)
    with pytest.raises(ConfigError):
        FaultHandler(gpu_pages=10, initial_tier="gpu")
    with pytest.raises(ConfigError, match="logical pages"):
        FaultHandler(gpu_pages=10, ssd=SSD("zssd")).fault(1 << 40, 0)


def test_codes_are_the_compiled_ones():
    from g10core.uvm import _uvm, fault_handler as uvm
    lay = _uvm.layout()
    assert lay["prefetchers"] == uvm.PREFETCHERS
    assert lay["evict_destinations"] == uvm.EVICT_DESTINATIONS
    assert lay["causes"] == uvm.CAUSES == {n: i for i, n in enumerate(_uvm.CAUSE_NAMES)}
    assert lay["fault_answers"] == {"queued": FAULT_QUEUED, "duplicate": FAULT_DUPLICATE, "resident": FAULT_RESIDENT}
    assert lay["tiers"] == TIERS


# ---- buffer and batches ------------------------------------------------------------------

@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_deep_buffer_deduplicates_every_unit_while_batches_drain_it(seed):
    """The buffer's unit set (a flat hash table) grows past its first size, and batches take
    units out of it while faults keep coming: each unit is queued once while it waits,
    duplicates are told apart, and a unit a batch took faults as resident afterwards."""
    rng = np.random.default_rng(seed)
    h = FaultHandler(FaultHandlerSpec(prefetcher="none"), gpu_pages=1 << 22)
    waiting, served, t = set(), set(), 0
    counts = {FAULT_QUEUED: 0, FAULT_DUPLICATE: 0, FAULT_RESIDENT: 0}
    for _ in range(6):
        for unit in rng.integers(0, 3000, 700):
            unit = int(unit) * 7919 % 100_003                 # units far apart, many VA blocks
            code = h.fault(unit * U + int(rng.integers(U)), t)
            expect = (FAULT_RESIDENT if unit in served else FAULT_DUPLICATE if unit in waiting
                      else FAULT_QUEUED)
            assert code == expect
            counts[code] += 1
            if code == FAULT_QUEUED:
                waiting.add(unit)
        for _ in range(int(rng.integers(1, 4))):              # a few batches drain part of it
            if h.next_batch_time() < 0:
                break
            t = h.service_batch(t)
            took = {u for r in h.moves() for u in range(int(r["first"]) // U, int(r["end"]) // U)}
            assert took <= waiting
            waiting -= took
            served |= took
    s = h.stats()
    assert (s["duplicate_faults"], s["resident_faults"]) == (counts[FAULT_DUPLICATE], counts[FAULT_RESIDENT])
    assert s["max_buffer"] > 256


def test_deduplication_per_migration_unit():
    h = FaultHandler(gpu_pages=10_000)
    assert h.fault(0, 0) == FAULT_QUEUED
    assert h.fault(5, 1) == FAULT_DUPLICATE               # same 64 KiB unit
    assert h.fault(16, 2) == FAULT_QUEUED                 # next unit
    end = h.service_batch(2)                               # both raised by the batch's start
    assert h.stats()["batch_units"] == 2
    assert h.fault(3, end + 10) == FAULT_RESIDENT         # arrived
    assert h.arrival(3) == end
    s = h.stats()
    assert (s["faults"], s["duplicate_faults"], s["resident_faults"]) == (4, 1, 1)


def test_faults_raised_during_a_batch_wait_for_the_next():
    spec = FaultHandlerSpec(prefetcher="none")
    h = FaultHandler(spec, gpu_pages=100_000)
    for i in range(3):
        h.fault(i * B, 0)
    end1 = h.service_batch(0)
    h.fault(10 * B, end1 // 2)                             # raised while batch 1 runs
    assert h.next_batch_time() == end1
    end2 = h.service_batch(0)
    assert pages(h.moves()) == U and h.moves()["first"][0] == 10 * B
    assert end2 > end1
    assert h.stats()["batches"] == 2


def test_a_batch_takes_only_faults_raised_by_its_start():
    h = FaultHandler(FaultHandlerSpec(prefetcher="none"), gpu_pages=100_000)
    h.fault(0, 0)
    h.fault(B, 5000)                                       # raised later than the first batch starts
    h.service_batch(0)
    assert pages(h.moves()) == U
    assert h.next_batch_time() >= 5000


@pytest.mark.parametrize("W,size", [(1, 256), (256, 256), (257, 256), (1000, 256), (100, 64)])
def test_batch_count_and_time_closed_form(W, size):
    # one VA block per fault: a batch of n costs fixed + n (per block + unmap + 16 per page)
    spec = FaultHandlerSpec(prefetcher="none", batch_faults=size)
    per_unit = spec.cycles(spec.batch_per_block_us) + spec.cycles(spec.batch_unmap_us) + U * spec.cycles(0.2)
    link = PcieSpec()
    h = FaultHandler(spec, gpu_pages=W * U)
    for i in range(W):
        h.fault(i * B, 0)
    batches = h.service_all(0)
    assert len(batches) == math.ceil(W / size)
    # each batch: fixed cost, then one host->GPU transfer of its units on an idle link
    expect, left = 0, W
    for _ in batches:
        n = min(left, size)
        expect += spec.cycles(spec.batch_fixed_us) + n * per_unit + link.idle_transfer_cycles(n * 65536)
        left -= n
    assert batches[-1]["end"] == expect
    s = h.stats()
    assert s["pages_from_host"] == W * U and s["max_batch_units"] == min(W, size)


def test_per_page_cost_is_charged_per_migrated_page():
    spec = FaultHandlerSpec(prefetcher="none", batch_fixed_us=45.0, batch_per_block_us=0.0, batch_unmap_us=0.0)
    h = FaultHandler(spec, gpu_pages=1000)
    h.fault(0, 0)
    end = h.service_batch(0)
    assert end == spec.cycles(45.0) + U * spec.cycles(0.2) + PcieSpec().idle_transfer_cycles(U * 4096)


# ---- prefetchers ---------------------------------------------------------------------

@pytest.mark.parametrize("touches,expected_units", [
    ([0, 1, 2, 4, 8, 16], [1, 1, 2, 4, 8, 16]),            # detailed_model.md §5 (GTX 1080 Ti traces)
    ([31, 30, 29], [1, 1, 2]),                              # mirrored: [28, 31] fills after 29
    ([0, 2], [1, 1]),                                       # half of [0, 3] is not more than half
])
def test_tree_prefetcher(touches, expected_units):
    h = FaultHandler(gpu_pages=10_000)
    t = 0
    for u, n in zip(touches, expected_units):
        h.fault(u * U, t, (0, B))
        t = h.service_batch(t)
        assert pages(h.moves()) == n * U


def test_sequential_prefetcher_adds_the_next_units_within_the_block():
    h = FaultHandler(FaultHandlerSpec(prefetcher="sequential", sequential_units=3), gpu_pages=10_000)
    h.fault(5 * U, 0, (0, 2 * B))
    h.service_batch(0)
    assert pages(h.moves(), FAULT) == U and pages(h.moves(), PREFETCH) == 3 * U
    h.fault(31 * U, 0, (0, 2 * B))                         # last unit of block 0: nothing beyond it
    h.service_batch(0)
    assert pages(h.moves(), PREFETCH) == 0


def test_prefetch_stays_inside_a_partial_last_block():
    # an allocation of 1.25 blocks: its second block has 128 valid pages
    h = FaultHandler(gpu_pages=10_000)
    alloc = (0, B + 128)
    for u in range(5):
        h.fault(B + u * U, 0, alloc)
        h.service_batch(0)
    res = h.core.resident_blocks()
    assert max(res[1]) < 128 and len(res[1]) == 128        # [0, 128) filled by the tree, nothing after


def test_blocks_far_apart_in_the_va_are_found_and_forgotten():
    """The VA-block index is a directory made 4,096 blocks (8 GiB) at a time where faults land:
    blocks in different directory pages, at the edges of one, and past 1 TiB each keep their own
    resident pages, and a block evicted whole leaves it."""
    h = FaultHandler(FaultHandlerSpec(prefetcher="none"), gpu_pages=1 << 20)
    blocks = [0, 4095, 4096, 8191, 3 * 4096 + 17, 600_000]            # 600,000 blocks: 1.14 TiB
    for i, blk in enumerate(blocks):
        h.fault(blk * B + i * U, 0, (blk * B, blk * B + B))
    h.service_all(0)
    res = h.core.resident_blocks()
    assert sorted(res) == blocks
    assert all(res[blk] == list(range(i * U, i * U + U)) for i, blk in enumerate(blocks))
    h.core.py_evict_range(4096 * B, 4097 * B, TIERS["host"], 0)
    assert sorted(h.core.resident_blocks()) == [b for b in blocks if b != 4096]
    assert h.core.py_arrival(4096 * B + 2 * U) == -1 and h.core.py_arrival(4095 * B + U) >= 0


@settings(max_examples=150, deadline=None)
@given(blocks=st.integers(1, 4), lo_off=st.integers(0, 511), hi_cut=st.integers(0, 511),
       touches=st.lists(st.integers(0, 4 * B - 1), min_size=1, max_size=40),
       prefetcher=st.sampled_from(["tree", "sequential", "none"]), unit=st.sampled_from([4096, 16384, 65536]),
       batch=st.integers(1, 8))
def test_no_prefetch_crosses_the_va_block_or_the_allocation(blocks, lo_off, hi_cut, touches, prefetcher,
                                                            unit, batch):
    spec = FaultHandlerSpec(prefetcher=prefetcher, migration_unit_bytes=unit, batch_faults=batch,
                            sequential_units=2)
    h = FaultHandler(spec, gpu_pages=1 << 20)
    lo = 7 * B + lo_off
    hi = max(lo + 1, 7 * B + blocks * B - hi_cut)
    resident = set()
    faulted_blocks = set()
    t = 0
    for x in touches:
        page = lo + x % (hi - lo)
        code = h.fault(page, t, (lo, hi))
        faulted_blocks.add(page // B)
        assert code == (FAULT_RESIDENT if page in resident else code)
        if h.next_batch_time() >= 0 and (len(touches) % 3 == 0 or x % 2):
            t = h.service_batch(t)
            m = h.moves()
            # every batch: each move stays in one VA block where a fault was raised (a fault
            # whose unit a prefetch brought meanwhile still prefetches around it)
            for row in m:
                assert lo <= row["first"] < row["end"] <= hi
                assert row["first"] // B == (row["end"] - 1) // B            # within one VA block
                assert row["first"] // B in faulted_blocks
                new = set(range(row["first"], row["end"]))
                assert not new & resident                                   # nothing moves twice
                resident |= new
    for b in h.service_all(t):
        for row in b["moves"]:
            assert lo <= row["first"] < row["end"] <= hi and row["first"] // B == (row["end"] - 1) // B
            resident |= set(range(row["first"], row["end"]))
    got = {blk * B + p for blk, ps in h.core.resident_blocks().items() for p in ps}
    assert got == resident
    assert h.stats()["gpu_used_pages"] == len(resident)


# ---- eviction ----------------------------------------------------------------------------

def test_least_recently_migrated_block_goes_first_in_whole_chunks():
    spec = FaultHandlerSpec(prefetcher="none", chunk_order="migration")
    h = FaultHandler(spec, gpu_pages=3 * U)
    t = 0
    for blk in (0, 1, 2):
        h.fault(blk * B, t)
        t = h.service_batch(t)
    h.fault(B + U, t)                                      # block 1 migrates again: now the newest
    t = h.service_batch(t)
    assert h.core.lrm_order() == [2, 1]                    # block 0 left to make room
    assert [tuple(r) for r in h.moves()[h.moves()["cause"] == EVICT][["first", "end", "dst"]]] == \
        [(0, U, HOST)]
    h.fault(3 * B, t)
    h.service_batch(t)
    # block 2 is the least recently migrated: its chunk leaves whole
    ev = h.moves()[h.moves()["cause"] == EVICT]
    assert {(int(r["first"]), int(r["end"])) for r in ev} == {(2 * B, 2 * B + U)}


def test_4KiB_granularity_evicts_only_what_is_needed():
    spec = FaultHandlerSpec(prefetcher="none", eviction_granularity_bytes=4096)
    h = FaultHandler(spec, gpu_pages=2 * U + 4)
    h.fault(0, 0)
    t = h.service_batch(0)
    h.fault(U, t)
    t = h.service_batch(t)
    h.fault(B, t)
    h.service_batch(t)
    ev = h.moves()[h.moves()["cause"] == EVICT]
    assert pages(ev) == U - 4 and ev["first"][0] == 0      # the oldest block's lowest pages
    assert h.stats()["gpu_used_pages"] == 2 * U + 4


def test_destination_host_until_full_then_ssd():
    spec = FaultHandlerSpec(prefetcher="none")
    ssd = SSD("zssd")
    h = FaultHandler(spec, gpu_pages=U, host_pages=U + 6, ssd=ssd, initial_tier="not_present")
    t = 0
    for blk in range(3):
        h.fault(blk * B, t)
        t = h.service_batch(t)
    s = h.stats()
    assert s["pages_zero_filled"] == 3 * U
    assert (s["pages_to_host"], s["pages_to_ssd"]) == (U + 6, U - 6)
    runs = h.tiers.py_tier_runs(0, 2 * B)
    assert (0, U, HOST) in runs and (B, B + 6, HOST) in runs and (B + 6, B + U, SSD_T) in runs
    # the SSD pages come back through the SSD and the link's peer flow
    h.fault(B + 8, t)
    end = h.service_batch(t)
    s = h.stats()
    assert s["pages_from_ssd"] == U - 6 and s["pages_from_host"] == 6
    assert ssd.core.stats()["host_read_pages"] >= U - 6
    assert h.link.core.stats()["to_device"]["bytes_peer_flow"] == (U - 6) * 4096
    assert end > t


def test_evictions_shoot_down_the_tlbs():
    tlb = TLB(TLBSpec(sms=4, sample_modulus=1, sample_subsamples=1))
    spec = FaultHandlerSpec(prefetcher="none")
    h = FaultHandler(spec, gpu_pages=U, translator=tlb)
    h.fault(0, 0)
    t = h.service_batch(0)
    tlb.translate_kernel(t, 1000, [0], [U])
    assert tlb.core.entries()
    h.fault(B, t)
    end = h.service_batch(t)
    assert not [e for e in tlb.core.entries() if e[3] < U]
    assert tlb.stats()["shootdown_cycles"] == 215
    assert h.stats()["shootdown_cycles"] == 215
    # the batch paid its driver parts (one VA block from host memory, U pages) and the shootdown, then
    # the victim's copy out, then the unit's copy in
    c = spec.cycles
    driver = (c(spec.batch_fixed_us) + c(spec.batch_per_block_us) + c(spec.batch_unmap_us)
              + U * c(spec.batch_per_page_us))
    link = PcieSpec()
    out = link.idle_transfer_cycles(U * 4096, "from_device", "host")
    assert end == t + driver + 215 + out + link.idle_transfer_cycles(U * 4096)


def test_overcommit_when_nothing_can_be_evicted():
    h = FaultHandler(FaultHandlerSpec(prefetcher="none", batch_faults=4), gpu_pages=U)
    for blk in range(3):
        h.fault(blk * B, 0)
    h.service_batch(0)                                     # one batch brings 3 units; all pinned
    assert h.stats()["overcommit_pages"] == 2 * U


# ---- hints and frees -------------------------------------------------------------------

def test_hint_prefetch_evict_and_release():
    h = FaultHandler(gpu_pages=10 * B)
    done = h.prefetch(100, 1500, 0, alloc=(0, 2000))
    assert pages(h.moves(), HINT) == 1400 and done > 0
    assert h.fault(700, done) == FAULT_RESIDENT
    assert h.stats()["pages_hinted"] == 1400
    h.evict(0, 1000, "ssd", done)
    assert pages(h.moves(), EVICT, SSD_T) == 900
    assert h.stats()["gpu_used_pages"] == 500
    assert h.release(0, 2000) == 0                        # no translator: shootdowns cost nothing
    assert h.stats()["gpu_used_pages"] == 0 and h.core.resident_blocks() == {}
    assert h.tiers.py_tier_runs(0, 2000) == [(0, 2000, NP)]


def test_cost_follows_blocks_touched_not_the_footprint():
    h = FaultHandler(gpu_pages=1 << 30)
    alloc = (0, 1 << 40)                                   # 4 PiB allocation
    for i in range(10):
        h.fault(i * (1 << 30), 0, alloc)
    h.service_all(0)
    assert h.stats()["blocks_created"] == 10 and h.stats()["max_blocks"] == 10
    h.release(0, 1 << 40)                                  # visits the 10 records, not 2**31 blocks
    assert h.stats()["live_blocks"] == 0


# ---- tier map -----------------------------------------------------------------------------

@settings(max_examples=100, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 60), st.sampled_from([0, 1, 2, 3])),
                    max_size=40))
def test_run_tier_map_matches_a_page_array(ops):
    m = RunTierMap(HOST)
    ref = np.full(300, HOST)
    for a, n, tier in ops:
        m.py_set_tier(a, a + n, tier)
        ref[a:a + n] = tier
    runs = m.py_tier_runs(0, 300)
    got = np.concatenate([np.full(e - f, t) for f, e, t in runs])
    assert (got == ref).all()
    assert all(runs[i][2] != runs[i + 1][2] for i in range(len(runs) - 1))   # runs are maximal
