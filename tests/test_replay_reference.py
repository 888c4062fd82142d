"""The compiled page-level replay against its page-by-page specification.

``reference.ReferenceReplay`` walks pages one at a time with the published
simulator's rules; ``_replay.Replay`` works on extents, in chunks, and repeats
identical ticks in bulk.  Both must give identical results (every kernel's start,
end, faults and residency; traffic per iteration; transfer busy periods) on any
valid input.  Hypothesis drives random traces, memory sizes, link quotas and
hint tables, small enough for the reference to run in milliseconds.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from g10core.uvm._replay import Replay
from g10core.config import preset
from g10core.policies import HINT_DTYPE, HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD
from g10core.policies.baseline import deepum_hints
from g10core.testing.reference import EVICT_DEEPUM, EVICT_LRU, ReferenceReplay
from g10core.simulator import replay_inputs
from g10core.workload.synth import synthesize

PAGE = 4096


def small_config(gpu_pages, host_pages, batch_pages, ssd_GBps=3.2, host_GBps=15.754):
    return preset("g10-artifact").with_overrides({
        "gpu": {"memory_GiB": gpu_pages * PAGE / 2**30},
        "host": {"memory_GiB": host_pages * PAGE / 2**30, "bandwidth_GBps": host_GBps},
        "link": {"batch_pages": batch_pages},
        "ssd": {"bandwidth_GBps": ssd_GBps},
    })


def max_working_set(trace):
    return max(int(trace.tensor_pages[np.unique(trace.kernel_accesses(k)[0])].sum())
               for k in range(trace.n_kernels))


def run_reference(trace, cfg, eviction, hints, apply_hints):
    ref = ReferenceReplay(trace, cfg, hints=hints, apply_hints=apply_hints,
                          eviction=EVICT_DEEPUM if eviction == "deepum" else EVICT_LRU)
    ref.max_ticks = 200_000
    out = ref.run()
    kernels = np.array(out["kernels"], np.int64).reshape(-1, 10)
    pcie = np.zeros((cfg.run.iterations, 5), np.int64)
    for (it, _t, alloc, in_ssd, in_cpu, out_ssd, out_cpu) in ref.pcie:
        pcie[it] += (alloc, in_ssd, in_cpu, out_ssd, out_cpu)
    bounds = np.array([(t, int(b)) for (_it, t, b) in ref.boundaries], np.int64).reshape(-1, 2)
    return kernels, pcie, bounds, out["host_overflow"]


def run_compiled(trace, cfg, eviction, hints, apply_hints, bulk=True):
    c, a, _ = replay_inputs(trace, cfg, hints, eviction=eviction, apply_hints=apply_hints, bulk=bulk)
    c["max_ticks"] = 200_000
    r = Replay(c, a)
    out = r.run()
    return out, r


def random_hints(trace, rng, n):
    """A plausible hint table: prefetches anywhere, pre-evictions and frees of idle tensors."""
    K, T = trace.n_kernels, trace.n_tensors
    rows = []
    for _ in range(n):
        k = int(rng.integers(0, K))
        t = int(rng.integers(0, T))
        if t in set(trace.kernel_accesses(k)[0].tolist()):
            action = HINT_TO_GPU
        else:
            action = int(rng.choice([HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE]))
        rows.append((k, t, action))
    rows.sort(key=lambda r: r[0])
    return np.array(rows, HINT_DTYPE)


@st.composite
def cases(draw):
    seed = draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    n_kernels = draw(st.integers(3, 30))
    trace = synthesize(n_kernels, draw(st.integers(4 * n_kernels + 10, 4 * n_kernels + 360)) * PAGE,
                       pattern=draw(st.sampled_from(["training", "random"])), seed=seed)
    ws = max_working_set(trace)
    gpu = draw(st.integers(int(ws * 1.3) + 2, int(ws * 1.3) + 120))
    host = draw(st.integers(4, 400))
    batch = draw(st.integers(2, 14))
    ssd = draw(st.sampled_from([3.2, 6.4, 1.6]))
    host_bw = draw(st.sampled_from([15.754, 12.0]))
    policy = draw(st.sampled_from(["base-uvm", "deepum", "hinted"]))
    cfg = small_config(gpu, host, batch, ssd, host_bw)
    if policy == "deepum":
        # its window (the prefetch degree): the default 8, short, or as long as the trace
        degree = draw(st.sampled_from([8, 1, 3, n_kernels, 2 * n_kernels]))
        cfg = cfg.with_overrides({"scheduler": {"prefetch_degree": degree}})
        return trace, cfg, "deepum", deepum_hints(trace, cfg), True
    if policy == "hinted":
        return trace, cfg, "lru", random_hints(trace, rng, draw(st.integers(0, 60))), True
    return trace, cfg, "lru", None, False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_compiled_replay_equals_reference(case):
    trace, cfg, eviction, hints, apply_hints = case
    try:
        ref_k, ref_pcie, ref_bounds, ref_overflow = run_reference(trace, cfg, eviction, hints, apply_hints)
    except (AssertionError, RuntimeError):
        # the published simulator asserts (a restarted kernel lost a page to a free hint)
        # or never finishes (hints that keep evicting what a kernel needs) on these
        # inputs: they are outside its semantics
        assume(False)
    out, r = run_compiled(trace, cfg, eviction, hints, apply_hints)
    assert np.array_equal(out["kernels"], ref_k)
    assert np.array_equal(out["pcie"], ref_pcie)
    assert np.array_equal(out["boundaries"], ref_bounds)
    assert out["host_overflow"] == ref_overflow
    # the same without bulk repeats: they must not change anything
    out2, _ = run_compiled(trace, cfg, eviction, hints, apply_hints, bulk=False)
    assert np.array_equal(out2["kernels"], ref_k)
    assert np.array_equal(out2["pcie"], ref_pcie)


@settings(max_examples=60, deadline=None)
@given(cases())
def test_state_invariants(case):
    """Per-tensor counters agree with the runs; residency within capacity; conservation."""
    trace, cfg, eviction, hints, apply_hints = case
    try:
        out, r = run_compiled(trace, cfg, eviction, hints, apply_hints)
    except RuntimeError:
        assume(False)   # a livelock the published simulator has too (see above)
    d = r.dump()
    ready, intr = r.tensor_counts()
    first, npages = trace.tensor_first_page, trace.tensor_pages
    exp_ready = np.zeros_like(ready)
    exp_intr = np.zeros_like(intr)
    gpu_pages = 0
    owner = np.argsort(first)
    starts = first[owner]
    prev_end = 0
    for (s, e, loc, it) in d["runs"]:
        assert s == prev_end and e > s          # runs tile the address space
        prev_end = e
        t = owner[np.searchsorted(starts, s, side="right") - 1]
        assert first[t] <= s and e <= first[t] + npages[t]   # never across a tensor
        if it:
            exp_intr[t] += e - s
        elif loc == 3:
            exp_ready[t] += e - s
        if loc == 3:
            gpu_pages += e - s
    assert prev_end == trace.footprint_pages
    assert np.array_equal(ready, exp_ready) and np.array_equal(intr, exp_intr)
    lru_pages = sum(n for (_s, n, _t) in d["lru"])
    capacity = round(cfg.gpu.memory_GiB * 2**30 / PAGE)
    assert lru_pages == gpu_pages == capacity - d["gpu_free"]
    assert all(row[9] <= capacity for row in out["kernels"])
    # pages in - pages out = resident change (allocations count as arrivals)
    moved_in = int(out["pcie"][:, 0].sum())
    assert moved_in >= 0


@pytest.mark.parametrize("n_kernels, seed, gpu_pages", [(14, 25, 100), (16, 20, 96), (18, 12, 94)])
def test_deepum_eviction_under_g10_pre_evictions(n_kernels, seed, gpu_pages):
    """G10's hints pre-evict: the pages stay on the GPU, in transfer, until their queue serves
    them.  DeepUM+'s prefetch victim search (``--eviction deepum``) took such pages as
    victims, and the queue then evicted pages no longer on the GPU ("internal: page 7 is not
    in the GPU page list", found by fuzzing; the reference failed alike).  Both now pass
    them; these small traces hit it within a few kernels."""
    from g10core.uvm import evictors
    from g10core.simulator import Simulator, _resolve_policy
    trace = synthesize(n_kernels, (4 * n_kernels + 100) * PAGE, pattern="random", seed=seed)
    cfg = small_config(gpu_pages, 400, 8)
    hints = _resolve_policy("g10", cfg).plan(trace, cfg, hints=None, eviction=evictors.resolve("deepum")).hints
    assert np.isin(hints["action"], (HINT_TO_SSD, HINT_TO_HOST)).any()
    ref_k, ref_pcie, ref_bounds, ref_overflow = run_reference(trace, cfg, "deepum", hints, True)
    for bulk in (True, False):
        out, r = run_compiled(trace, cfg, "deepum", hints, True, bulk=bulk)
        assert np.array_equal(out["kernels"], ref_k)
        assert np.array_equal(out["pcie"], ref_pcie)
        assert np.array_equal(out["boundaries"], ref_bounds)
        assert out["host_overflow"] == ref_overflow
        d = r.dump()
        gpu_pages_now = sum(e - s for (s, e, loc, _it) in d["runs"] if loc == 3)
        assert sum(n for (_s, n, _t) in d["lru"]) == gpu_pages_now == gpu_pages - d["gpu_free"]
    # the whole run (its replay invariants checked) under the CLI's path
    Simulator(cfg).run(trace, "g10", eviction="deepum")


def test_reference_reproduces_published_prefix(artifact_dir, load_shipped):
    """The specification itself against the published simulator: BERT-256 Base UVM, first kernels."""
    import gzip
    import re

    trace = load_shipped("bert_base-b256")
    ref = ReferenceReplay(trace, preset("g10-artifact"), max_kernels=30)
    ref.run()
    path = artifact_dir / "expected" / "BERT_Base-256" / "base-uvm" / "sim_result.kernel.gz"
    pat = re.compile(r"(\d+)\+(\d+):\[(\d+),(\d+)\]\((\d+),(\d+)\)<(\d+),(\d+),(\d+),(\d+)>\((\d+),(\d+)\)")
    published = []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            m = pat.match(line)
            if m:
                published.append([int(m[i]) for i in (1, 2, 3, 4, 7, 8, 9, 10, 11, 12)])
            if len(published) == 30:
                break
    assert [list(r) for r in ref.kernels] == published


@settings(max_examples=40, deadline=None)
@given(cases())
def test_bulk_repeats_move_the_same_pages(case):
    """Page by page, bulk repeats move exactly the pages the detailed ticks move."""
    trace, cfg, eviction, hints, apply_hints = case
    moves = []
    for bulk in (True, False):
        c, a, _ = replay_inputs(trace, cfg, hints, eviction=eviction, apply_hints=apply_hints, bulk=bulk)
        c["max_ticks"] = 200_000
        c["debug_log"] = True
        try:
            r = Replay(c, a)
            r.run()
        except RuntimeError:
            assume(False)
        rows = r.debug_rows()
        per_kind = []
        for kind in (1, 2):
            sel = rows[rows[:, 0] == kind]
            pages = np.concatenate([np.arange(p, p + k) for _, _, p, k, _ in sel]) if len(sel) else np.zeros(0)
            tiers = np.repeat(sel[:, 4], sel[:, 3]) if len(sel) else np.zeros(0)
            per_kind.append((pages, tiers))
        moves.append(per_kind)
    for (p1, t1), (p2, t2) in zip(*moves):
        assert np.array_equal(p1, p2) and np.array_equal(t1, t2)


# ---- the exact quotas of the exploration presets (docs/physics.md) ---------------------------------

@st.composite
def exact_cases(draw):
    """A case of :func:`cases` under the rules outside g10-artifact: exact quotas carried from slot
    to slot, the SSD's duplex rule, zero-fill at allocation cost; links from 4 to 63 GB/s, SSD
    writes at the read bandwidth or not, allocation free or dear."""
    trace, cfg, eviction, hints, apply_hints = draw(cases())
    cfg = cfg.with_overrides({
        "scheduler": {"artifact_quirks": False},
        "ssd": {"duplex": draw(st.sampled_from(["shared", "full"])),
                "write_bandwidth_GBps": draw(st.sampled_from([0.0, 1.1, 5.0]))},
        "link": {"bandwidth_GBps": draw(st.sampled_from([15.754, 4.0, 8.0, 63.0]))},
        "gpu": {"malloc_us_per_byte": draw(st.sampled_from([8.14e-7, 0.0, 2e-5]))},
    })
    return trace, cfg, eviction, hints, apply_hints


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exact_cases())
def test_compiled_replay_equals_reference_exact_quotas(case):
    trace, cfg, eviction, hints, apply_hints = case
    try:
        ref_k, ref_pcie, ref_bounds, ref_overflow = run_reference(trace, cfg, eviction, hints, apply_hints)
    except (AssertionError, RuntimeError):
        assume(False)      # outside the semantics, as in test_compiled_replay_equals_reference
    for bulk in (True, False):
        out, r = run_compiled(trace, cfg, eviction, hints, apply_hints, bulk=bulk)
        assert np.array_equal(out["kernels"], ref_k)
        assert np.array_equal(out["pcie"], ref_pcie)
        assert np.array_equal(out["boundaries"], ref_bounds)
        assert out["host_overflow"] == ref_overflow


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exact_cases())
def test_bulk_repeats_move_the_same_pages_exact_quotas(case):
    test_bulk_repeats_move_the_same_pages.hypothesis.inner_test(case)


@st.composite
def larger_exact_cases(draw):
    """Traces too large for the reference (hundreds of pages a kernel, thousands of slots), links up
    to 256 GB/s (under a page per slot on the SSD), slow SSD writes: bulk repeats against slot by slot."""
    seed = draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    n_kernels = draw(st.integers(5, 40))
    trace = synthesize(n_kernels, draw(st.integers(200 * n_kernels, 3000 * n_kernels)) * PAGE,
                       pattern=draw(st.sampled_from(["training", "random"])), seed=seed)
    ws = max_working_set(trace)
    cfg = small_config(draw(st.integers(int(ws * 1.3) + 2, int(ws * 1.3) + 3000)), draw(st.integers(4, 20000)),
                       draw(st.integers(2, 64)), draw(st.sampled_from([3.2, 6.4, 1.6, 0.7])),
                       draw(st.sampled_from([15.754, 12.0, 5.0])))
    cfg = cfg.with_overrides({
        "scheduler": {"artifact_quirks": False},
        "ssd": {"duplex": draw(st.sampled_from(["shared", "full"])),
                "write_bandwidth_GBps": draw(st.sampled_from([0.0, 1.1, 5.0]))},
        "link": {"bandwidth_GBps": draw(st.sampled_from([15.754, 4.0, 8.0, 63.0, 256.0]))},
        "gpu": {"malloc_us_per_byte": draw(st.sampled_from([8.14e-7, 0.0, 2e-5]))},
    })
    policy = draw(st.sampled_from(["base-uvm", "deepum", "hinted"]))
    if policy == "deepum":
        return trace, cfg, "deepum", deepum_hints(trace, cfg), True
    if policy == "hinted":
        return trace, cfg, "lru", random_hints(trace, rng, draw(st.integers(0, 200))), True
    return trace, cfg, "lru", None, False


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(larger_exact_cases())
def test_bulk_repeats_equal_slot_by_slot_exact_quotas(case):
    """The table of recorded slots per budget key (try_bulk_exact) changes nothing (600 cases
    checked by hand, found a slot that moved nothing repeated after frames were freed)."""
    trace, cfg, eviction, hints, apply_hints = case
    try:
        ref, _ = run_compiled(trace, cfg, eviction, hints, apply_hints, bulk=False)
    except RuntimeError:
        assume(False)
    out, _ = run_compiled(trace, cfg, eviction, hints, apply_hints, bulk=True)
    assert np.array_equal(out["kernels"], ref["kernels"])
    assert np.array_equal(out["pcie"], ref["pcie"])
    assert np.array_equal(out["boundaries"], ref["boundaries"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exact_cases(), st.sampled_from([{}, {"batch_faults": 1, "migration_unit_bytes": 4096, "va_block_bytes": 65536},
                                       {"batch_fixed_us": 45.0, "batch_per_block_us": 0.0, "batch_per_page_us": 0.0,
                                        "batch_unmap_us": 0.0}, {"batch_per_page_us": 50.0}]))
def test_compiled_replay_equals_reference_physical_fault_time(case, driver):
    """The physical fault time (fault.handler = physical, the default preset; docs/physics.md)
    under the exact quotas: the compiled replay with and without bulk repeats against the
    reference, with the driver's costs as measured, one batch per 4 KiB fault, G10's single
    45 us latency per batch, and a dear page."""
    trace, cfg, eviction, hints, apply_hints = case
    cfg = cfg.with_overrides({"fault": {"handler": "physical", **driver}})
    test_compiled_replay_equals_reference_exact_quotas.hypothesis.inner_test((trace, cfg, eviction, hints, apply_hints))
