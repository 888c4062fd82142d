"""GPU TLB hierarchy (g10core.tlb, _tlb.pyx): LRU sets against a pure-Python model, shootdowns,
walker queueing, latency hiding, sampling error, validation (detailed_model.md §2, §5)."""
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from g10core.config import ConfigError
from g10core.tlb import TLB, TLBSpec, t_quantile_995
from g10core.tlb._tlb import NoTranslation, SetAssociativeTLB


# ---- a pure-Python model of the same hierarchy (presence only, no timing) ----------

class ModelTLB:
    """sets x ways, LRU within a set; page v maps to set v % sets."""

    def __init__(self, entries, ways):
        self.n_sets, self.ways = entries // ways, ways
        self.sets = [[] for _ in range(self.n_sets)]      # most recent first

    def lookup(self, v):
        s = self.sets[v % self.n_sets]
        if v in s:
            s.remove(v)
            s.insert(0, v)
            return True
        s.insert(0, v)
        del s[self.ways:]
        return False

    def invalidate(self, lo, hi):
        for s in self.sets:
            s[:] = [v for v in s if not lo <= v <= hi]

    def contents(self):
        return {v for s in self.sets for v in s}


class ModelHierarchy:
    def __init__(self, spec):
        self.l1 = [ModelTLB(spec.l1_entries, spec.l1_ways) for _ in range(spec.sms)]
        self.l2 = ModelTLB(spec.l2_entries, spec.l2_ways)
        self.shift = spec.page_shift

    def lookup(self, sm, v):
        if self.l1[sm].lookup(v):
            return 1
        return 2 if self.l2.lookup(v) else 3

    def invalidate(self, first, end):
        lo, hi = first >> self.shift, (end - 1) >> self.shift
        for t in self.l1 + [self.l2]:
            t.invalidate(lo, hi)


def tiny(**kw):
    base = dict(sms=3, l1_entries=4, l1_ways=2, l2_entries=8, l2_ways=2, walkers=2,
                sample_modulus=1, sample_subsamples=1)
    base.update(kw)
    return TLBSpec(**base)


# ---- defaults and validation ---------------------------------------------------------

def test_defaults_are_the_reference_figures():
    s = TLBSpec()
    # detailed_model.md §2
    assert (s.l1_entries, s.l1_ways, s.l1_latency_cycles) == (64, 8, 1)
    assert (s.l2_entries, s.l2_ways, s.l2_latency_cycles) == (2048, 16, 20)
    assert (s.pwc_entries, s.pwc_ways, s.pwc_latency_cycles) == (64, 8, 10)
    assert s.walkers == 32 and s.walk_latency_cycles == 100 and s.walk_latency_2MiB_cycles == 66
    assert (s.shootdown_l1_cycles, s.shootdown_l2_cycles) == (15, 200)
    assert s.sms == 108 and s.page_size_bytes == 4096
    s.check()


@pytest.mark.parametrize("field,value", [
    ("model", "tlb"), ("page_size_bytes", 8192), ("page_size_bytes", True), ("sms", 0),
    ("l1_entries", 0), ("l1_ways", 3), ("l1_ways", 128), ("l2_entries", 2.5), ("l2_ways", 0),
    ("l2_latency_cycles", -1), ("pwc_enabled", 1), ("pwc_entries", 63), ("walkers", 0),
    ("walk_latency_cycles", 0), ("walk_latency_2MiB_cycles", -5), ("shootdown_l1_cycles", -1),
    ("shootdown_l2_cycles", 10**7), ("overlap_translations", 0), ("sample_modulus", 3),
    ("sample_modulus", 0), ("sample_subsamples", 0), ("sample_seed", -1),
])
def test_bad_values_are_refused_naming_the_field(field, value):
    with pytest.raises(ConfigError, match=rf"tlb\.{field}"):
        TLBSpec(**{field: value}).check()


def test_sampling_needs_two_subsamples_and_enough_residues():
    with pytest.raises(ConfigError, match="sample_subsamples"):
        TLBSpec(sample_modulus=8, sample_subsamples=1).check()
    with pytest.raises(ConfigError, match="sample_subsamples"):
        TLBSpec(sample_modulus=2, sample_subsamples=3).check()
    TLBSpec(sample_modulus=1, sample_subsamples=1).check()


def test_python_entry_points_refuse_bad_input():
    t = TLB(tiny())
    with pytest.raises(ConfigError):
        t.translate_kernel(-1, 10, [0], [4])
    with pytest.raises(ConfigError):
        t.translate_kernel(0, 10, [0, 1], [4])
    with pytest.raises(ConfigError):
        t.translate_kernel(0, 10, [-3], [4])
    with pytest.raises(ConfigError):
        t.invalidate(5, 2)


# ---- one set-associative TLB: the cyclic closed forms ------------------------------

@settings(max_examples=60, deadline=None)
@given(entries=st.integers(1, 96), extra=st.integers(-40, 40), rounds=st.integers(2, 5))
def test_fully_associative_lru_cyclic_hit_rate_is_one_or_exactly_zero(entries, extra, rounds):
    n = max(1, entries + extra)
    t = SetAssociativeTLB(entries, entries)
    hits = t.cyclic(n, rounds)
    assert hits[0] == 0                                  # cold
    assert list(hits[1:]) == [n if n <= entries else 0] * (rounds - 1)


@settings(max_examples=40, deadline=None)
@given(sets_log=st.integers(0, 5), ways=st.integers(1, 8), n=st.integers(1, 20))
def test_a_stride_that_maps_to_one_set_misses_once_it_exceeds_the_ways(sets_log, ways, n):
    sets = 1 << sets_log
    t = SetAssociativeTLB(sets * ways, ways)
    hits = t.cyclic(n, 3, sets)
    assert list(hits[1:]) == [n if n <= ways else 0] * 2


# ---- the hierarchy against the model ---------------------------------------------------

ops = st.lists(st.one_of(
    st.tuples(st.just("lookup"), st.integers(0, 2), st.integers(0, 40)),
    st.tuples(st.just("inval"), st.integers(0, 700), st.integers(1, 300)),
), min_size=1, max_size=120)


@settings(max_examples=120, deadline=None)
@given(ops=ops, page_size=st.sampled_from([4096, 65536]))
def test_no_entry_maps_an_evicted_page_and_hits_match_the_model(ops, page_size):
    spec = tiny(page_size_bytes=page_size)
    t = TLB(spec)
    model = ModelHierarchy(spec)
    now = 0
    for op in ops:
        now += 7
        if op[0] == "lookup":
            _, sm, v = op
            level, _lat = t.core.py_lookup(sm, v, now)
            assert level == model.lookup(sm, v)
        else:
            _, first, n = op
            t.invalidate(first, first + n)
            model.invalidate(first, first + n)
            lo, hi = first >> spec.page_shift, (first + n - 1) >> spec.page_shift
            assert not [e for e in t.core.entries() if lo <= e[3] <= hi]
    got = {(lvl, sm, v) for _r, lvl, sm, v in t.core.entries()}
    want = {("l1", sm, v) for sm, m in enumerate(model.l1) for v in m.contents()}
    want |= {("l2", -1, v) for v in model.l2.contents()}
    assert got == want
    s = t.stats()
    assert s["l1_hits"] + s["l1_misses"] == s["accesses"] == sum(op[0] == "lookup" for op in ops)


@settings(max_examples=40, deadline=None)
@given(kernels=st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 900), st.integers(0, 4000)),
                        min_size=1, max_size=6),
       invals=st.lists(st.tuples(st.integers(0, 4000), st.integers(1, 600)), max_size=6),
       modulus=st.sampled_from([1, 2, 8]))
def test_sampled_replicas_keep_no_entry_of_an_evicted_page(kernels, invals, modulus):
    spec = tiny(sms=4, sample_modulus=modulus, sample_subsamples=2 if modulus > 1 else 1)
    t = TLB(spec)
    for i, (first, n, dur) in enumerate(kernels):
        t.translate_kernel(1000 * i, dur, [first, first + n + 5], [n, 17])
        for a, m in invals:
            t.invalidate(a, a + m)
            assert not [e for e in t.core.entries() if a <= e[3] < a + m]


def test_invalidating_a_huge_range_costs_entries_not_pages():
    t = TLB(TLBSpec(sample_modulus=1, sample_subsamples=1))
    t.translate_kernel(0, 10**6, [0, 1 << 40], [5000, 3000])
    assert t.core.entries()
    # 2**45 pages: a per-page loop would never finish; the scan touches each entry once
    t.invalidate(0, 1 << 45)
    assert t.core.entries() == []


def test_shootdown_cost_per_level_that_held_the_page():
    t = TLB(tiny(sms=1, l1_entries=2, l1_ways=2, l2_entries=64, l2_ways=4))
    assert t.invalidate(0, 100) == 0                      # nothing cached: nothing to shoot down
    t.core.py_lookup(0, 5, 0)
    assert t.invalidate(5, 6) == 15 + 200                 # in the SM's L1 and in the L2
    for v in (5, 6, 7):                                   # 5 leaves the 2-entry L1, stays in the L2
        t.core.py_lookup(0, v, 1000)
    assert t.invalidate(5, 6) == 200
    s = t.stats()
    assert (s["shootdowns_l1"], s["shootdowns_l2"], s["shootdown_cycles"]) == (1, 2, 415)


# ---- timing ---------------------------------------------------------------------------

@pytest.mark.parametrize("W,P", [(1, 1), (5, 2), (32, 32), (33, 32), (100, 32), (64, 8)])
def test_W_simultaneous_misses_on_P_walkers_take_ceil_W_over_P_walks(W, P):
    spec = TLBSpec(sms=1, l1_entries=4096, l1_ways=4096, l2_entries=4096, l2_ways=4096, walkers=P,
                   sample_modulus=1, sample_subsamples=1)
    t = TLB(spec)
    lat = sorted(t.core.py_lookup(0, v, 1000)[1] for v in range(W))
    front = spec.l1_latency_cycles + spec.l2_latency_cycles
    assert lat == [front + (i // P + 1) * spec.walk_latency_cycles for i in range(W)]
    assert max(lat) == front + math.ceil(W / P) * spec.walk_latency_cycles
    s = t.stats()
    assert s["walks"] == W
    assert s["walker_queue_cycles"] == sum((i // P) * spec.walk_latency_cycles for i in range(W))


def test_concurrent_misses_to_one_page_merge_into_one_walk():
    spec = TLBSpec(sms=2, walkers=1, sample_modulus=1, sample_subsamples=1)
    t = TLB(spec)
    l0 = t.core.py_lookup(0, 42, 0)
    l1 = t.core.py_lookup(1, 42, 3)                       # other SM, walk still in flight
    assert l0 == (3, 121) and l1 == (2, 118)              # done at the same cycle
    s = t.stats()
    assert s["walks"] == 1 and s["l2_pending_hits"] == 1


def test_2MiB_pages_walk_in_66_cycles_and_one_entry_covers_512_pages():
    t = TLB(TLBSpec(sms=1, page_size_bytes=2097152, sample_modulus=1, sample_subsamples=1))
    t.translate_kernel(0, 10**6, [0], [1024])             # two 2 MiB pages
    s = t.stats()
    assert s["walks"] == 2 and s["lookups"] == 2 and s["accesses"] == 1024
    assert s["l1_hits"] == 1022
    assert s["latency_cycles"] == 2 * (1 + 20 + 66) + 1022 * 1


def test_page_walk_cache_shortens_walks_within_a_region():
    spec = TLBSpec(sms=1, pwc_enabled=True, sample_modulus=1, sample_subsamples=1)
    t = TLB(spec)
    a = t.core.py_lookup(0, 0, 0)[1]
    b = t.core.py_lookup(0, 1, 10_000)[1]
    assert a == 1 + 20 + 10 + 100                         # walk-cache miss: the full walk
    assert b == 1 + 20 + 10 + 25                          # hit: only the last of four levels
    s = t.stats()
    assert (s["pwc_hits"], s["pwc_misses"]) == (1, 1)


def test_hidden_translation_adds_nothing_and_no_compute_exposes_all_of_it():
    # one SM sweeps N cold pages: every lookup is a walk of L = 1 + 20 + 100 cycles; with M
    # in flight the pipeline takes L / M per lookup (walkers = M: no queueing)
    N, M = 1000, 16
    L = 1 + 20 + 100
    spec = TLBSpec(sms=1, walkers=M, overlap_translations=M, sample_modulus=1, sample_subsamples=1)
    t = TLB(spec)
    assert t.translate_kernel(0, 0, [0], [N]) == (N * L) // M
    t = TLB(spec)
    c = math.ceil(L / M)                                  # compute per access covers a lookup
    assert t.translate_kernel(0, N * c, [0], [N]) == 0
    assert t.stats()["walker_queue_cycles"] == 0


def test_the_replay_interface_translates_the_attached_kernels():
    # kernel_cycles(k, now) (what the replay calls) = translate_kernel with kernel k's tensors
    first, pages = [0, 5000, 9000, 20000], [3000, 700, 40, 9000]
    off, acc, t11 = [0, 2, 3, 5], [0, 1, 2, 3, 1], [4000, 100, 30000]
    a, b = TLB(tiny(sms=8)), TLB(tiny(sms=8))
    a.attach_kernels(first, pages, off, acc, t11)
    now = 0
    for k in range(3):
        ts = acc[off[k]:off[k + 1]]
        got = a.core.py_kernel_cycles(k, now)
        assert got == b.translate_kernel(now, t11[k], [first[t] for t in ts], [pages[t] for t in ts])
        now += t11[k] + got
    assert a.stats() == b.stats()
    a.core.py_pages_evicted(0, 3000)                      # = invalidate(0, 3000)
    assert not [e for e in a.core.entries() if e[3] < 3000]
    assert a.core.py_bulk_safe() is False
    assert pickle.loads(pickle.dumps(a.core)).py_kernel_cycles(2, now) == a.core.py_kernel_cycles(2, now)
    with pytest.raises(ConfigError, match="access_offsets"):
        a.attach_kernels(first, pages, [0, 2, 9], acc, [1, 2])
    with pytest.raises(ConfigError, match="access_tensor"):
        a.attach_kernels(first, pages, [0, 1], [7], [1])


def test_no_translation_costs_nothing():
    t = NoTranslation()
    assert t.py_translate_kernel(0, 100, np.array([0]), np.array([10])) == 0
    assert t.py_invalidate(0, 10) == 0
    assert t.stats() == {"model": "none", "kernels": 1, "invalidate_calls": 1, "cycles_added": 0}
    assert pickle.loads(pickle.dumps(t)).stats() == t.stats()
    assert TLB(TLBSpec(model="none")).translate_kernel(0, 10, [0], [5]) == 0


def test_pickled_hierarchy_continues_identically():
    spec = tiny(sms=4)
    a = TLB(spec)
    a.translate_kernel(0, 500, [0, 300], [200, 50])
    b = TLB(spec)
    b.core = pickle.loads(pickle.dumps(a.core))
    for t in (a, b):
        t.translate_kernel(1000, 100, [150, 300], [200, 50])
    assert a.stats() == b.stats()
    assert a.core.entries() == b.core.entries()


# ---- sampling -------------------------------------------------------------------------

def small_trace(rng):
    """Kernels over a few big activations and small, reused weights (first page, pages)."""
    acts = [(i * 5000, int(rng.integers(1500, 3500))) for i in range(6)]
    weights = [(40_000 + i * 256, int(rng.integers(60, 120))) for i in range(6)]
    kernels = []
    for k in range(24):
        if k % 3 == 2:                                    # a small kernel: weights only (L2 reuse)
            ts = [weights[(k - 1) % 6], weights[k % 6]]
        else:
            ts = [acts[k % 6], acts[(k + 1) % 6], weights[k % 6], weights[(k + 1) % 6]]
        kernels.append(([f for f, _ in ts], [n for _, n in ts], int(rng.integers(2_000, 60_000))))
    return kernels


def run(spec, kernels):
    t = TLB(spec)
    now = 0
    for first, count, dur in kernels:
        now += t.translate_kernel(now, dur, first, count) + dur
    return t.stats()


SAMPLED_BASE = dict(sms=8, l1_entries=8, l1_ways=1, l2_entries=256, l2_ways=16, walkers=8,
                    overlap_translations=4)


def test_every_residue_sums_exactly_to_the_full_simulation():
    # with the modulus dividing every level's set count and the pipelines never binding, the
    # replicas are exactly the full hierarchy's sets r, r + k, ...: counts add up exactly
    rng = np.random.default_rng(1)
    kernels = [(f, c, d * 1000) for f, c, d in small_trace(rng)]
    full = run(TLBSpec(**SAMPLED_BASE, sample_modulus=1, sample_subsamples=1), kernels)
    every = run(TLBSpec(**SAMPLED_BASE, sample_modulus=8, sample_subsamples=8), kernels)
    for name in ("l1_hits", "l1_misses", "l2_hits", "l2_misses", "accesses", "lookups"):
        assert every[name] == full[name], name
        assert every["bounds"][name] == 0
    assert full["l2_hits"] > 0 and full["walks"] > 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sampled_estimate_contains_the_full_result_within_its_bound(seed):
    rng = np.random.default_rng(seed)
    kernels = small_trace(rng)
    full = run(TLBSpec(**SAMPLED_BASE, sample_modulus=1, sample_subsamples=1), kernels)
    est = run(TLBSpec(**SAMPLED_BASE, sample_modulus=8, sample_subsamples=4, sample_seed=seed), kernels)
    # the trace exercises L2 reuse, walker queueing and translation that compute cannot hide
    assert full["l2_hits"] > 0 and full["cycles_added"] > 0 and full["walker_queue_cycles"] > 0
    for name in ("l1_hits", "l2_hits", "walks", "latency_cycles", "walker_queue_cycles", "cycles_added"):
        bound = est["bounds"][name]
        assert bound < math.inf, name
        assert abs(est[name] - full[name]) <= bound, (name, est[name], full[name], bound)
    # the bound is the replicas' spread, plus stated allowances for timing only (exact levels here)
    assert set(est["sampling"]["systematic"]) == {"latency_cycles", "walker_queue_cycles", "cycles_added"}
    assert est["bounds"]["walks"] > 0


def test_student_t_quantiles():
    assert t_quantile_995(1) == pytest.approx(63.657)
    assert t_quantile_995(3) == pytest.approx(5.841)
    assert t_quantile_995(1000) == pytest.approx(2.576, abs=0.01)
    assert t_quantile_995(0) == math.inf
