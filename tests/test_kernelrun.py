"""The detailed preset's kernels on the far-fault handler (``_kernelrun.KernelRunner``).

Closed forms on tiny synthetic traces (``detailed_model.md`` §5, §6): W SMs each faulting one
distinct cold 64 KiB unit at once take ceil(W / batch_faults) batches back to back; a kernel
whose pages are all resident takes exactly t11 (plus the translation the TLB reports); every
page-level policy runs through the handler with its traffic crossing the link and the SSD;
runs are deterministic; a run that makes no progress fails in one line, a slow SSD does not.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from g10core import simulator as S
from g10core.cli import main
from g10core.config import resolve
from g10core.errors import CannotFit
from g10core.simulator import Simulator
from g10core.workload.synth import synthesize
from g10core.workload.trace import Trace, write_trace

UNIT_PAGES = 16                  # 64 KiB migration unit
BATCH_CYCLES = 54_000            # 45 us at 1.2 GHz
T11_NS = 1_000_000.0             # 1 ms kernels: 1.2e6 cycles


def one_kernel_trace(units: int, *, is_global: bool, kernels: int = 1, t11_ns: float = T11_NS) -> Trace:
    """``kernels`` kernels of ``t11_ns`` each, each reading/writing one tensor of ``units`` 64 KiB units."""
    t = np.full(kernels, t11_ns)
    mode = 1 if is_global else 2
    return Trace(model="one", batch_size=1, tensor_size_bytes=np.array([units * UNIT_PAGES * 4096], np.int64),
                 tensor_is_global=np.array([is_global]), tensor_name=np.array(["x"]),
                 kernel_name=np.array([f"k{k}" for k in range(kernels)]),
                 kernel_time_ideal_ns=t, kernel_time_fault_all_ns=t * 2, kernel_time_fault_outputs_ns=t * 2,
                 kernel_workspace_bytes=np.zeros(kernels, np.int64),
                 access_offsets=np.arange(kernels + 1, dtype=np.int64),
                 access_tensor=np.zeros(kernels, np.int32), access_mode=np.full(kernels, mode, np.uint8))


# the closed forms below take a batch's driver time as one constant: the earlier 45 us (the
# driver's parts, per VA block, page and unmap, are tests/test_uvm_driver.py's)
EARLIER_COST = ["fault.batch_fixed_us=45", "fault.batch_per_block_us=0", "fault.batch_per_page_us=0",
                "fault.batch_unmap_us=0"]


def cfg(*sets):
    return resolve("detailed", None, ["gpu.memory_GiB=1", "host.memory_GiB=1", *EARLIER_COST, *sets])


def kernel_cycles(r):
    k = r.kernels
    return np.asarray(k["end_cycles"]) - np.asarray(k["start_cycles"])


def keep_built(mp, seen, *names):
    """Patch the simulator's builders ``names`` (``kernel_runner``, ``translator``) so that
    what each builds is kept in ``seen[name]``."""
    for name in names:
        def built(*a, _real=getattr(S, name), _name=name, **kw):
            seen[_name] = _real(*a, **kw)
            return seen[_name]
        mp.setattr(S, name, built)


# ---- closed forms ------------------------------------------------------------------------------

@pytest.mark.parametrize("W", [1, 108, 256, 257, 600])
def test_W_simultaneous_cold_faults_take_ceil_W_over_256_batches(W):
    # each of W SMs sweeps one distinct 64 KiB unit of a never-written tensor: all fault at
    # the kernel's start; zero-filled pages cross no link, so each batch costs its fixed 45 us
    r = Simulator(cfg(f"gpu.sms={W}", "fault.prefetcher=none", "tlb.model=none")).run(
        one_kernel_trace(W, is_global=False), "base-uvm")
    fb = r.counters["fault_batches"]
    batches = math.ceil(W / 256)
    assert fb["batches"] == batches and fb["batch_units"] == W
    t11 = round(T11_NS * 1.2)
    # iteration 0: the batches back to back, then the SMs' work; iteration 1: all resident
    assert kernel_cycles(r).tolist() == [batches * BATCH_CYCLES + t11, t11]
    assert r.iterations[0].faults_pages["unallocated"] == W * UNIT_PAGES
    b = r.iterations[0].breakdown_s
    assert b["stall"] == pytest.approx(batches * BATCH_CYCLES / 1.2e9, rel=1e-12)
    assert b["translation"] == 0
    assert sum(b.values()) == pytest.approx(r.iterations[0].time_s, rel=1e-12)


@pytest.mark.parametrize("W", [64, 300])
def test_faults_from_the_ssd_take_batch_costs_plus_link_time(W):
    # a global tensor starts on the SSD: every batch pays 45 us, the SSD's reads and the
    # link's transfer of its units; batches follow each other, so the stall is their sum
    r = Simulator(cfg(f"gpu.sms={W}", "fault.prefetcher=none", "tlb.model=none")).run(
        one_kernel_trace(W, is_global=True), "base-uvm")
    fb = r.counters["fault_batches"]
    batches = math.ceil(W / 256)
    assert fb["batches"] == batches and fb["pages_from_ssd"] == W * UNIT_PAGES
    eff = r.counters["link"]["to_device"]
    assert eff["bytes"] == W * UNIT_PAGES * 4096 == r.counters["ssd"]["host_read_pages"] * 4096
    stall = kernel_cycles(r)[0] - round(T11_NS * 1.2)
    assert stall == fb["batch_cycles"]
    # at least the batches' fixed cost plus the wire time at the raw Gen3 x16 rate
    wire = W * UNIT_PAGES * 4096 / 15.754e9 * 1.2e9
    assert stall >= batches * BATCH_CYCLES + wire


def test_everything_resident_takes_exactly_t11_and_the_translation():
    # kernel 0 zero-fills the tensor; kernels 1.. find it resident (10 us kernels: their
    # translations are not all hidden)
    trace = one_kernel_trace(1000, is_global=False, kernels=4, t11_ns=10_000.0)
    t11 = 12_000
    r = Simulator(cfg("tlb.model=none")).run(trace, "base-uvm")
    assert kernel_cycles(r)[1:].tolist() == [t11] * 7
    r = Simulator(cfg("tlb.reuse=none", "tlb.sample_modulus=1")).run(trace, "base-uvm")
    x = np.asarray(r.kernels["translation_cycles"])
    assert (x > 0).all()
    assert (kernel_cycles(r)[1:] == t11 + x[1:]).all()
    table = r.kernel_table()
    assert np.allclose(table["translation_s"], x / 1.2e9, rtol=0, atol=1e-15)
    parts = sum(np.asarray(table[c]) for c in ("compute_s", "overlap_s", "stall_s", "translation_s"))
    assert np.allclose(parts, table["time_s"], rtol=1e-12, atol=0)
    for it in r.iterations:
        assert sum(it.breakdown_s.values()) == pytest.approx(it.time_s, rel=1e-12)
        assert it.breakdown_s["translation"] == pytest.approx(x[4 * it.index:4 * it.index + 4].sum() / 1.2e9)


# ---- every page-level policy through the handler -----------------------------------------------

@pytest.fixture(scope="module")
def small_training():
    return synthesize(48, 96 << 20, pattern="training", seed=3)


SMALL = ("gpu.memory_GiB=0.05", "host.memory_GiB=0.02", "ssd.capacity_GiB=1")


@pytest.mark.parametrize("policy,eviction", [("base-uvm", None), ("deepum", None), ("g10", None),
                                             ("belady", None), ("base-uvm", "deepum")])
def test_page_policies_run_through_the_handler(small_training, policy, eviction):
    r = Simulator(cfg(*SMALL)).run(small_training, policy, eviction=eviction)
    assert not r.failed
    fb, link, ssd = r.counters["fault_batches"], r.counters["link"], r.counters["ssd"]
    assert fb["batches"] > 0 and "tlb" in r.counters
    moved = {k: sum(it.traffic_pages[k] for it in r.iterations) for k in r.iterations[0].traffic_pages}
    # conservation: every page moved crossed the link; SSD pages reached the FTL
    assert link["to_device"]["bytes"] == (moved["ssd_to_gpu"] + moved["host_to_gpu"]) * 4096
    assert link["from_device"]["bytes"] == (moved["gpu_to_ssd"] + moved["gpu_to_host"]) * 4096
    assert ssd["host_write_pages"] == moved["gpu_to_ssd"] and ssd["host_read_pages"] == moved["ssd_to_gpu"]
    assert ssd["flash_program_pages"] == ssd["host_write_pages"] + ssd["gc_copies"]
    assert max(r.kernels["gpu_used_pages"]) <= r.counters["gpu_pages"]
    for it in r.iterations:
        assert it.time_s >= it.ideal_time_s
        assert sum(it.breakdown_s.values()) == pytest.approx(it.time_s, rel=1e-9)


def test_detailed_fault_time_is_not_the_profiled_one(small_training):
    # the profiled t00/t10 do not enter the batched handler: scaling them changes nothing
    base = Simulator(cfg(*SMALL)).run(small_training, "base-uvm")
    t = small_training
    slow = Trace(**{**{f: getattr(t, f) for f in t.__dataclass_fields__},
                    "kernel_time_fault_all_ns": t.kernel_time_fault_all_ns * 10,
                    "kernel_time_fault_outputs_ns": t.kernel_time_fault_outputs_ns * 10})
    other = Simulator(cfg(*SMALL)).run(slow, "base-uvm")
    assert other.iteration_time_s == base.iteration_time_s
    profiled = Simulator(cfg(*SMALL, "fault.handler=profile")).run(small_training, "base-uvm")
    assert profiled.iteration_time_s != base.iteration_time_s


def test_runs_are_deterministic(small_training):
    a = Simulator(cfg(*SMALL)).run(small_training, "deepum")
    b = Simulator(cfg(*SMALL)).run(small_training, "deepum")
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k != "metadata"}   # noqa: E731
    assert strip(a) == strip(b)


# ---- the JSON, translation, sampling -----------------------------------------------------------

def test_json_carries_tlb_fault_batches_link_and_ssd(tmp_path, capsys):
    path = tmp_path / "synth_training-b1.h5"
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), path)
    code = main(["run", str(path), "--policy", "base-uvm", "--preset", "detailed", "--json", "-",
                 "--set", "gpu.memory_GiB=0.02", "--set", "host.memory_GiB=0.02"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    d = json.loads(out)
    c = d["counters"]
    for key in ("tlb", "fault_batches", "link", "ssd"):
        assert key in c
    assert c["fault_batches"]["batches"] > 0 and c["tlb"]["lookups"] > 0
    assert set(d["breakdown_s"]) == {"compute", "overlap", "stall", "translation"}
    assert sum(d["breakdown_s"].values()) == pytest.approx(d["iteration_time_s"], rel=1e-9)


def test_sampled_translation_contains_the_full_simulation_within_its_bound():
    # tensors of tens of MiB (each SM's share spans many sampled pages) and 200 us kernels
    # whose translation is not all hidden
    trace = synthesize(8, 2 << 30, pattern="training", seed=3, kernel_time_us=200.0)
    big = ("gpu.memory_GiB=8", "host.memory_GiB=8")
    full = Simulator(cfg(*big, "tlb.sample_modulus=1")).run(trace, "base-uvm")
    sampled = Simulator(cfg(*big)).run(trace, "base-uvm")
    f, s = full.counters["tlb"], sampled.counters["tlb"]
    assert f["bounds"]["cycles_added"] == 0 and s["bounds"]["cycles_added"] > 0
    assert f["cycles_added"] > 0
    assert abs(s["cycles_added"] - f["cycles_added"]) <= s["bounds"]["cycles_added"]
    assert s["lookups"] == f["lookups"]


@pytest.mark.parametrize("sets", [[], ["fault.handler=profile", "tlb.model=none"]])
def test_tensor_level_policies_are_refused_with_a_detailed_component(small_training, sets):
    from g10core.config import ConfigError

    with pytest.raises(ConfigError, match=r"^policy 'flashneuron' is tensor level .*link\.model = 'pcie'"):
        Simulator(cfg(*SMALL, *sets)).run(small_training, "flashneuron")
    # one component is enough; without any the default preset runs it
    with pytest.raises(ConfigError, match=r"\(tlb\.model = 'hierarchy'; preset 'default'\)"):
        Simulator(resolve("default", None, ["tlb.model=hierarchy"])).run(small_training, "g10-host")
    assert not Simulator(resolve("default", None, [])).run(small_training, "g10-host").failed


# ---- livelock guard -----------------------------------------------------------------------------

def test_no_progress_is_a_failed_run_in_one_line(small_training, monkeypatch, tmp_path, capsys):
    real = S.kernel_runner

    def impatient(*a, **kw):
        runner = real(*a, **kw)
        runner.set_max_idle_steps(3)
        return runner

    monkeypatch.setattr(S, "kernel_runner", impatient)
    r = Simulator(cfg(*SMALL)).run(small_training, "base-uvm")
    # a failed result that keeps the kernels that ended (tests/test_livelock.py)
    info = r.counters["no_progress"]
    assert r.failed and info["guard"] == "sm_steps" and info["max_idle_steps"] == 3
    assert r.failure_reason.startswith(f"kernel {info['kernel']} (") and "no SM advanced in 3 SM steps" in r.failure_reason
    assert len(r.kernels["kernel"]) == info["iteration"] * small_training.n_kernels + info["kernel"]
    path = tmp_path / "synth_training-b3.h5"
    write_trace(small_training, path)
    code = main(["run", str(path), "--policy", "base-uvm", "--preset", "detailed",
                 *[a for s in SMALL for a in ("--set", s)], "--json", str(tmp_path / "r.json")])
    out, err = capsys.readouterr()
    assert code == 1 and len(err.strip().splitlines()) == 1 and "livelock" in err and "Traceback" not in err
    assert json.loads((tmp_path / "r.json").read_text())["failed"] is True


def test_a_heavily_throttled_ssd_is_slow_not_livelocked(small_training):
    fast = Simulator(cfg(*SMALL)).run(small_training, "base-uvm")
    slow = Simulator(cfg(*SMALL, "ssd.t_read_us=1000", "ssd.t_program_us=5000")).run(small_training, "base-uvm")
    assert not slow.failed
    assert slow.iteration_time_s > 2 * fast.iteration_time_s


# ---- invariants over random runs (hypothesis) -------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), gpu_mib=st.sampled_from([24, 40, 64]),
       granularity=st.sampled_from(["chunk", "page"]), policy=st.sampled_from(["base-uvm", "belady", "deepum"]))
def test_no_tlb_entry_maps_a_page_off_the_gpu_after_a_run(seed, gpu_mib, granularity, policy):
    trace = synthesize(24, 48 << 20, pattern="training", seed=seed)
    seen = {}
    with pytest.MonkeyPatch.context() as mp:
        keep_built(mp, seen, "kernel_runner", "translator")
        try:
            r = Simulator(cfg(f"gpu.memory_GiB={gpu_mib / 1024}", "host.memory_GiB=0.02", "ssd.capacity_GiB=1",
                              "tlb.sample_modulus=1", "tlb.reuse=none", f"fault.eviction_granularity={granularity}",
                              "gpu.sms=16")).run(trace, policy)
        except CannotFit:                         # a kernel larger than the GPU: not this test's concern
            return
    assert not r.failed
    handler = seen["kernel_runner"].fault_handler
    resident = {b * 512 + p for b, pages in handler.resident_blocks().items() for p in pages}
    entries = seen["translator"].core.entries()
    # or a page of a block pinned by thrashing detection: mapped remotely, a valid translation
    pinned = set(handler.pinned_blocks())
    assert entries and all(page in resident or page // 512 in pinned for (_r, _level, _sm, page) in entries)
    # the handler's frames never exceed the GPU's, and its count matches its blocks
    assert handler.gpu_used_pages == len(resident) <= r.counters["gpu_pages"]
    st = handler.stats()
    if gpu_mib < 48:                              # the footprint does not fit: pages left the GPU
        assert st["pages_to_host"] + st["pages_to_ssd"] + st["pages_dropped"] > 0


@pytest.fixture(scope="module")
def a_runner():
    """A kernel runner, taken from a one-kernel run."""
    seen = {}
    with pytest.MonkeyPatch.context() as mp:
        keep_built(mp, seen, "kernel_runner")
        Simulator(cfg()).run(one_kernel_trace(4, is_global=True), "base-uvm")
    return seen["kernel_runner"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=1, max_size=40).flatmap(
    lambda initial: st.tuples(st.just(initial), st.lists(st.lists(st.integers(0, 40), max_size=6),
                                                         min_size=len(initial), max_size=len(initial)))))
def test_sms_step_in_cycle_then_sm_order(a_runner, case):
    """The SM schedule steps SMs by (cycle, SM), the earliest first, whether a step's SM comes
    back (taking the held root's place) or leaves; ties in cycle are many here."""
    import heapq
    initial, again = case
    heap = [(t, s) for s, t in enumerate(initial)]
    heapq.heapify(heap)
    later = [list(a) for a in again]
    expected = []
    while heap:
        t, s = heapq.heappop(heap)
        expected.append((t, s))
        if later[s]:
            heapq.heappush(heap, (later[s].pop(0), s))
    assert a_runner.py_schedule(initial, again) == expected


# ---- the handler's merged ranges may span tensors ---------------------------------------------

def test_a_range_set_across_two_tensors_keeps_each_tensors_counters_and_arrival_chain():
    """A batch merges the ranges it brings in; when a tensor ends on a VA block the next one
    starts there, so one range spans both: each tensor's counters and arrival chain must get
    its own pages (they went to the first, and Belady's evictor later named page -1)."""
    from g10core.uvm._kernelrun import PageTableTiers
    from g10core.uvm._pagetable import PageTable
    from g10core.uvm.fault_handler import TIERS

    pt = PageTable({"first": [0, 512, 1024], "pages": [512, 512, 100], "is_global": [0, 0, 0],
                    "birth": [0, 0, 0], "death": [5, 5, 5]}, 2048, 4096)
    tiers = PageTableTiers(pt, 1)
    tiers.py_set_tier(480, 1050, TIERS["gpu"])           # the end of 0, all of 1, the start of 2
    assert list(pt.counts()[0]) == [32, 512, 26]
    assert pt.tensors_on_gpu() == [0, 1, 2]
    assert [pt.py_oldest_idle_page(t) for t in range(3)] == [480, 512, 1024]
    tiers.py_set_tier(500, 1030, TIERS["host"])
    assert list(pt.counts()[0]) == [20, 0, 20]
    assert pt.tensors_on_gpu() == [0, 2]
    assert pt.stats()["host_used"] == 12 + 512 + 6


def test_tiers_without_the_arrival_list_keep_the_same_runs_counters_and_traffic():
    """Under the handler's least-recently-migrated rule no evictor reads the page table's GPU
    arrival list, so the tier map does not keep it (it was ~19 % of a Base UVM run): runs,
    counters, occupancy and traffic must be those of a tier map that keeps it."""
    from g10core.uvm._kernelrun import PageTableTiers
    from g10core.uvm._pagetable import PageTable
    from g10core.uvm.fault_handler import TIERS

    moves = [(480, 1050, "gpu"), (500, 1030, "host"), (0, 300, "gpu"), (100, 200, "ssd"),
             (520, 900, "gpu"), (0, 1124, "not_present"), (10, 20, "gpu"), (600, 1100, "gpu")]
    seen = []
    for keep in (True, False):
        pt = PageTable({"first": [0, 512, 1024], "pages": [512, 512, 100], "is_global": [0, 0, 0],
                        "birth": [0, 0, 0], "death": [5, 5, 5]}, 2048, 4096)
        tiers = PageTableTiers(pt, 1, None, keep)
        assert tiers.keep_arrivals == keep
        for a, b, tier in moves:
            tiers.py_set_tier(a, b, TIERS[tier])
        counts = [list(c) for c in pt.counts()]
        stats = {k: v for k, v in pt.stats().items() if k != "lru_nodes"}
        seen.append((pt.runs(), counts, stats, tiers.traffic_rows(1).tolist()))
        gpu_pages = sum(e - s for (s, e, loc, _f) in pt.runs() if loc == TIERS["gpu"])
        assert gpu_pages == 2048 - pt.stats()["gpu_free"] > 0
        listed = sum(c for (_s, c, _t) in pt.arrival_list())
        assert listed == (gpu_pages if keep else 0)
    assert seen[0] == seen[1]


def test_belady_with_a_long_sequential_prefetch_keeps_within_gpu_memory():
    """The sweep's case (bert_base-b256, whose tensors often end on a VA block): the GPU held
    688,460 pages of 655,360 (exit 1, 'GPU-resident pages ... capacity'), since the evictor,
    misled by the counters, found no victim and the handler overcommitted."""
    seen = {}
    with pytest.MonkeyPatch.context() as mp:
        keep_built(mp, seen, "kernel_runner")
        r = Simulator(resolve("detailed", None, ["gpu.memory_GiB=2.5", "fault.prefetcher=sequential",
                                                 "fault.sequential_units=512"])).run("bert_base-b256", "belady")
    assert not r.failed
    st = seen["kernel_runner"].fault_handler.stats()
    assert st["overcommit_pages"] == 0 and st["picked_victims"] > 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(-5, 40)), max_size=60), st.booleans())
def test_busy_intervals_coalesced_as_recorded_give_the_same_periods(pairs, in_order):
    """The runner joins a busy interval to the last one as it records it (batches come in time
    order, hint transfers may not); the merged periods must be those of the raw intervals."""
    from g10core.uvm._kernelrun import busy_periods, coalesced_busy_periods
    rows = [(a, a + d) for a, d in pairs]
    if in_order:
        rows.sort()
    iv = np.array(rows, np.int64).reshape(-1, 2)
    got, kept = coalesced_busy_periods(iv)
    assert np.array_equal(got, busy_periods(iv.reshape(-1)))
    assert kept <= max(1, len(rows))
    # the union, page by page: every cycle inside some interval is inside exactly one period
    covered = np.zeros(260, bool)
    for a, b in rows:
        covered[a:max(a, b)] = True
    periods = np.zeros(260, bool)
    for (s, _), (e, _) in zip(got[0::2], got[1::2]):
        assert not periods[s:e].any()
        periods[s:e] = True
    assert np.array_equal(covered, periods)
