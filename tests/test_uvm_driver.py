"""The NVIDIA driver's rules in the far-fault handler (issue 37): the tree prefetcher's 51 %
threshold, minimum fault count and big-page growth (uvm_perf_prefetch.c), eviction of 2 MiB
chunks in allocation order (uvm_pmm_gpu.c), the batch cost in parts, service passes
(uvm_gpu_replayable_faults.c), and our earlier rules reachable through the parameters."""
import numpy as np
import pytest

from g10core.config import preset
from g10core.link.pcie import PcieSpec
from g10core.tlb import TLB, TLBSpec
from g10core.uvm.fault_handler import BATCH_PARTS, EARLIER_RULES, TIERS, FaultHandler, FaultHandlerSpec, spec_from_config

B = 512          # pages per 2 MiB VA block
U = 16           # pages per 64 KiB migration unit (the big page)
HOST, GPU = TIERS["host"], TIERS["gpu"]
FAULT, PREFETCH, HINT, EVICT = 0, 1, 2, 3


def pages(moves, cause=None):
    sel = np.ones(len(moves), bool) if cause is None else moves["cause"] == cause
    return int((moves["end"][sel] - moves["first"][sel]).sum())


def resident_then_fault(spec, resident_pages, fault_page):
    """Pages [0, resident_pages) of block 0 made resident by a hint, then one fault on
    fault_page: the moves of that fault's batch."""
    h = FaultHandler(spec, gpu_pages=10_000)
    t = h.prefetch(0, resident_pages, 0, (0, B)) if resident_pages else 0
    h.fault(fault_page, t, (0, B))
    h.service_batch(t)
    return h.moves()


def test_rule_codes_are_the_compiled_ones():
    from g10core.uvm import _uvm, fault_handler as uvm
    lay = _uvm.layout()
    assert lay["tree_rules"] == uvm.TREE_RULES and lay["chunk_orders"] == uvm.CHUNK_ORDERS


# ---- the 51 % threshold --------------------------------------------------------------------

@pytest.mark.parametrize("resident_units,filled", [(15, False), (16, True)])
def test_threshold_edge_16_of_32_units_no_fill_17_fill(resident_units, filled):
    # units 0..resident_units-1 resident, unit 31 faults: the root holds 16 (or 17) of 32 units;
    # 16 * 100 > 32 * 51 is false (no fill), 17 * 100 > 32 * 51 is true (fill); no node below the
    # root is over the threshold ([30, 32) holds 1 of 2: 50 %)
    m = resident_then_fault(FaultHandlerSpec(), resident_units * U, 31 * U)
    assert pages(m, FAULT) == U
    assert pages(m, PREFETCH) == (B - (resident_units + 1) * U if filled else 0)


@pytest.mark.parametrize("threshold,resident,filled", [
    (0.51, 260, False), (0.51, 261, True),       # 261 of 512: 26100 > 26112 false; 262: true
    (0.5, 260, True),                             # our earlier "more than half": 261 > 256
])
def test_51_percent_differs_from_half_on_4KiB_leaves(threshold, resident, filled):
    spec = FaultHandlerSpec(migration_unit_bytes=4096, prefetch_threshold=threshold)
    m = resident_then_fault(spec, resident, B - 1)
    assert pages(m, FAULT) == 1
    assert pages(m, PREFETCH) == (B - resident - 1 if filled else 0)


def test_driver_rule_counts_only_resident_and_faulted_pages():
    # units 0, 1 and 4 resident, unit 2 faults: [0, 4) holds 3 of 4 (fill), [0, 8) holds 4 of 8
    # (50 %: no).  The cumulative walk counts [0, 4) full above it: [0, 8) then holds 5 of 8 and fills.
    def run(rule):
        h = FaultHandler(FaultHandlerSpec(prefetch_tree_rule=rule), gpu_pages=10_000)
        t = h.prefetch(0, 2 * U, 0, (0, B))
        t = h.prefetch(4 * U, 5 * U, t, (0, B))
        h.fault(2 * U, t, (0, B))
        h.service_batch(t)
        return pages(h.moves(), PREFETCH)
    assert run("driver") == U                    # unit 3
    assert run("cumulative") == 4 * U            # units 3, 5, 6, 7


def test_minimum_fault_count_holds_prefetch_back():
    # three faults on units 0, 1, 2 in one batch: [0, 4) holds 3 of 4 and fills unit 3, unless the
    # block needs more fault entries than that
    def run(min_faults):
        h = FaultHandler(FaultHandlerSpec(prefetch_min_faults=min_faults), gpu_pages=10_000)
        for u in (0, 1, 2):
            h.fault(u * U, 0, (0, B))
        h.service_batch(0)
        return pages(h.moves(), FAULT), pages(h.moves(), PREFETCH)
    assert run(3) == (3 * U, U)
    assert run(4) == (3 * U, 0)


def test_minimum_fault_count_accumulates_over_batches():
    h = FaultHandler(FaultHandlerSpec(prefetch_min_faults=2), gpu_pages=10_000)
    h.fault(0, 0, (0, B))
    t = h.service_batch(0)
    assert pages(h.moves(), PREFETCH) == 0       # 1 fault entry so far
    h.fault(U, t, (0, B))
    h.service_batch(t)
    # 2 entries now: [0, 2) is whole already; [0, 4) holds 2 of 4 (no); nothing to add
    assert pages(h.moves(), PREFETCH) == 0
    h.fault(2 * U, t, (0, B))
    h.service_batch(t)
    assert pages(h.moves(), PREFETCH) == U       # [0, 4): 3 of 4


@pytest.mark.parametrize("unit_bytes,moved", [(65536, [(0, 16)]), (4096, [(5, 6)])])
def test_big_page_growth(unit_bytes, moved):
    # a fault on page 5 moves its whole 64 KiB big page (grow_fault_granularity); 4 KiB: the page
    h = FaultHandler(FaultHandlerSpec(migration_unit_bytes=unit_bytes, prefetcher="none"), gpu_pages=10_000)
    h.fault(5, 0, (0, B))
    h.service_batch(0)
    m = h.moves()
    assert [(int(r["first"]), int(r["end"])) for r in m[m["cause"] == FAULT]] == moved


def test_big_page_growth_feeds_the_tree():
    # a fault on one 4 KiB page counts its whole big page in the tree: touching pages of units
    # 0, 1 and 2 fills unit 3 with 64 KiB big pages, nothing with 4 KiB ones (3 of 64 pages)
    def run(unit_bytes):
        h = FaultHandler(FaultHandlerSpec(migration_unit_bytes=unit_bytes), gpu_pages=10_000)
        for u in (0, 1, 2):
            h.fault(u * U + 3, 0, (0, B))
        h.service_batch(0)
        return pages(h.moves(), PREFETCH)
    assert run(65536) == U
    assert run(4096) == 0


# ---- eviction order ------------------------------------------------------------------------

def eviction_sequence(order):
    """GPU of 4 units; blocks 0, 1, 2 get a unit each, block 0 a second one (full), then
    blocks 3, 4 and 5 fault: the blocks each batch evicted, and the chunk list at the end."""
    h = FaultHandler(FaultHandlerSpec(prefetcher="none", chunk_order=order), gpu_pages=4 * U)
    t, evicted = 0, []
    for page in (0, B, 2 * B, U, 3 * B, 4 * B, 5 * B):
        h.fault(page, t)
        t = h.service_batch(t)
        m = h.moves()
        evicted.append(sorted({int(r["first"]) // B for r in m[m["cause"] == EVICT]}))
    return evicted, h.core.lrm_order()


def test_eviction_in_allocation_order_hand_computed():
    # allocation order: list 0, 1, 2 (block 0's second migration does not move it); block 3 evicts
    # the head, block 0 (both its units: the whole chunk, 32 pages), so block 4 fits (64 of 64);
    # block 5 evicts the head of 1, 2, 3, 4: block 1
    evicted, order = eviction_sequence("allocation")
    assert evicted == [[], [], [], [], [0], [], [1]]
    assert order == [2, 3, 4, 5]


def test_eviction_least_recently_migrated_is_reachable():
    # migration order: block 0 moves to the tail when its second unit arrives: list 1, 2, 0;
    # block 3 evicts block 1 (16 pages), block 4 block 2, block 5 block 0 (32 pages)
    evicted, order = eviction_sequence("migration")
    assert evicted == [[], [], [], [], [1], [2], [0]]
    assert order == [3, 4, 5]


def test_detailed_preset_uses_the_drivers_rules_and_earlier_ones_are_reachable():
    s = spec_from_config(preset("detailed"))
    assert (s.prefetch_threshold, s.prefetch_tree_rule, s.chunk_order) == (0.51, "driver", "allocation")
    old = spec_from_config(preset("detailed").with_overrides({"fault": dict(EARLIER_RULES)}))
    assert (old.prefetch_threshold, old.prefetch_tree_rule, old.chunk_order) == (0.5, "cumulative", "migration")
    assert (old.batch_fixed_us, old.batch_per_block_us, old.batch_per_page_us, old.batch_unmap_us) == \
        (45.0, 0.0, 0.0, 0.0)


def test_earlier_rules_give_the_earlier_batch_time():
    # one fault, one block from host: 45 us and the wire, as before issue 37
    spec = FaultHandlerSpec(prefetcher="none", **{k: v for k, v in EARLIER_RULES.items()
                                                  if k.startswith("batch")})
    h = FaultHandler(spec, gpu_pages=100)
    h.fault(0, 0)
    assert h.service_batch(0) == spec.cycles(45.0) + PcieSpec().idle_transfer_cycles(U * 4096)


# ---- batch cost in parts -------------------------------------------------------------------

def test_one_batch_cost_parts_closed_form():
    # 3 faults in 2 VA blocks, all from host memory, no prefetch: fixed + 2 blocks + 48 pages +
    # 2 unmaps, then one transfer of 48 pages on an idle link
    spec = FaultHandlerSpec(prefetcher="none")
    h = FaultHandler(spec, gpu_pages=1000)
    for page in (0, U, B):
        h.fault(page, 0)
    end = h.service_batch(0)
    s = h.stats()
    c = spec.cycles
    assert s["batch_fixed_cycles"] == c(spec.batch_fixed_us) > 0
    assert s["batch_block_cycles"] == 2 * c(spec.batch_per_block_us) > 0 and s["batch_blocks"] == 2
    assert s["batch_page_cycles"] == 48 * c(spec.batch_per_page_us) > 0
    assert s["batch_unmap_cycles"] == 2 * c(spec.batch_unmap_us) > 0 and s["batch_unmap_blocks"] == 2
    assert s["batch_tlb_cycles"] == 0
    assert s["batch_transfer_cycles"] == PcieSpec().idle_transfer_cycles(48 * 4096)
    assert end == sum(s[k] for k in BATCH_PARTS) == s["batch_cycles"]


def test_pages_not_from_host_are_not_unmapped():
    h = FaultHandler(FaultHandlerSpec(prefetcher="none"), gpu_pages=1000, initial_tier="not_present")
    h.fault(0, 0)
    h.service_batch(0)
    s = h.stats()
    assert s["batch_unmap_blocks"] == 0 and s["batch_unmap_cycles"] == 0 and s["batch_blocks"] == 1


def test_batch_parts_sum_to_the_batch_time_with_evictions_and_shootdowns():
    spec = FaultHandlerSpec()
    tlb = TLB(TLBSpec(sms=4, sample_modulus=1, sample_subsamples=1))
    h = FaultHandler(spec, gpu_pages=3 * B, translator=tlb)
    rng = np.random.default_rng(7)
    t = 0
    for step in range(60):
        touched = [int(p) for p in rng.integers(0, 12 * B, size=int(rng.integers(1, 40)))]
        for page in touched:
            h.fault(page, t, (0, 12 * B))
        while h.next_batch_time() >= 0:
            t = h.service_batch(t)
        tlb.translate_kernel(t, 1000, [min(touched)], [1])     # entries for the shootdowns to find
    s = h.stats()
    assert s["batches"] >= 60 and s["evictions"] > 0 and s["batch_tlb_cycles"] > 0
    assert sum(s[k] for k in BATCH_PARTS) == s["batch_cycles"]
    assert s["batch_tlb_cycles"] == s["shootdown_cycles"]      # no hints: every shootdown is a batch's


# ---- service passes ------------------------------------------------------------------------

def test_service_passes_are_runs_of_back_to_back_batches():
    # 50 distinct faults at once, batches of 2: 25 batches back to back, in passes of 20
    spec = FaultHandlerSpec(prefetcher="none", batch_faults=2)
    h = FaultHandler(spec, gpu_pages=10_000)
    for i in range(50):
        h.fault(i * B, 0)
    t = h.service_all(0)[-1]["end"]
    assert h.stats()["service_passes"] == 2                   # 20 + 5
    h.fault(60 * B, t + 10_000)                                # after an idle handler: a new pass
    h.service_batch(t + 10_000)
    assert h.stats()["service_passes"] == 3


# ---- end to end ----------------------------------------------------------------------------

def test_cli_detailed_run_reports_the_parts_and_the_earlier_rules_are_one_setting_away(tmp_path, capsys):
    import json
    from g10core.cli import main
    from g10core.workload.synth import synthesize
    from g10core.workload.trace import write_trace
    trace = tmp_path / "synth_training-b1.h5"
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), trace)
    small = ["--preset", "detailed", "--set", "gpu.memory_GiB=0.03", "--set", "host.memory_GiB=0.01",
             "--set", "fault.prefetcher=none", "--no-progress"]
    out = {}
    for name, sets in (("driver", []), ("earlier", [a for k, v in EARLIER_RULES.items()
                                                    for a in ("--set", f"fault.{k}={v}")])):
        path = tmp_path / f"{name}.json"
        assert main(["run", str(trace), "--policy", "base-uvm", *small, *sets, "--json", str(path)]) == 0
        capsys.readouterr()
        out[name] = json.loads(path.read_text())
    fb = out["driver"]["counters"]["fault_batches"]
    assert fb["batches"] > 0 and fb["batch_unmap_blocks"] > 0
    assert sum(fb[k] for k in BATCH_PARTS) == fb["batch_cycles"]
    assert fb["victims"] == "chunks in allocation order"
    old = out["earlier"]["counters"]["fault_batches"]
    assert old["victims"] == "least recently migrated"
    assert old["batch_fixed_cycles"] == old["batches"] * 54_000          # 45 us at 1.2 GHz
    assert old["batch_block_cycles"] == old["batch_page_cycles"] == old["batch_unmap_cycles"] == 0
    assert out["driver"]["iteration_time_s"] != out["earlier"]["iteration_time_s"]
