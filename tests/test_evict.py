"""Eviction rules: Belady's MIN against textbook MIN, MIN as a lower bound, user score callbacks.

Textbook MIN (Belady 1966) is computed here from the reference string alone, with no
part of the simulator: on a miss with every frame full, evict the resident page whose
next reference is farthest in the future (never referenced again: farthest of all).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g10core.uvm import evictors
from g10core.config import preset
from g10core.simulator import Simulator
from g10core.workload.synth import synthesize
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, PAGE_SIZE_BYTES, Trace

PAGE = PAGE_SIZE_BYTES


def one_page_trace(kernels: list[list[int]], n_tensors: int, is_global=None) -> Trace:
    """Kernel k reads the one-page tensors kernels[k] (every tensor global unless told)."""
    K = len(kernels)
    offsets = np.zeros(K + 1, np.int64)
    offsets[1:] = np.cumsum([len(ts) for ts in kernels])
    tensors = np.array([t for ts in kernels for t in ts], np.int32)
    t11 = np.full(K, 10_000.0)
    return Trace(
        model="min_check", batch_size=1,
        tensor_size_bytes=np.full(n_tensors, PAGE, np.int64),
        tensor_is_global=np.ones(n_tensors, bool) if is_global is None else np.asarray(is_global, bool),
        tensor_name=np.array([f"t{i}" for i in range(n_tensors)]),
        kernel_name=np.array([f"k{i}" for i in range(K)]),
        kernel_time_ideal_ns=t11, kernel_time_fault_all_ns=t11 * 3, kernel_time_fault_outputs_ns=t11 * 2,
        kernel_workspace_bytes=np.zeros(K, np.int64),
        access_offsets=offsets, access_tensor=tensors,
        access_mode=np.full(tensors.size, ACCESS_READ, np.uint8),
    )


def textbook_min_misses(refs: list[int], frames: int) -> int:
    """Belady's MIN on a reference string: misses (compulsory ones included)."""
    resident: set[int] = set()
    misses = 0
    for i, p in enumerate(refs):
        if p in resident:
            continue
        misses += 1
        if len(resident) == frames:
            def next_ref(q):
                for j in range(i + 1, len(refs)):
                    if refs[j] == q:
                        return j
                return len(refs) + 1
            resident.remove(max(sorted(resident), key=next_ref))
        resident.add(p)
    return misses


def set_min_misses(kernels: list[list[int]], iterations: int, frames: int) -> int:
    """MIN when a kernel references a set of pages that must be resident together."""
    seq = [set(ts) for _ in range(iterations) for ts in kernels]
    resident: set[int] = set()
    misses = 0
    for i, need in enumerate(seq):
        for p in sorted(need - resident):
            misses += 1
            if len(resident) == frames:
                def next_ref(q):
                    for j in range(i + 1, len(seq)):
                        if q in seq[j]:
                            return j
                    return len(seq) + 1
                victim = max(sorted(resident - need), key=next_ref)
                resident.remove(victim)
            resident.add(p)
    return misses


def config_pages(gpu_pages: int, iterations: int = 2):
    return preset("g10-artifact").with_overrides({
        "gpu": {"memory_GiB": gpu_pages * PAGE / 2**30}, "run": {"iterations": iterations}})


def total_faults(result) -> int:
    return sum(sum(it.faults_pages.values()) for it in result.iterations)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 6).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.integers(0, n - 1), min_size=2, max_size=30), st.integers(1, n - 1))))
def test_belady_equals_textbook_min_on_one_page_tensors(case):
    n, refs, frames = case
    trace = one_page_trace([[t] for t in refs], n)
    result = Simulator(config_pages(frames)).run(trace, "belady")
    assert total_faults(result) == textbook_min_misses(refs * 2, frames)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(3, 7).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.lists(st.integers(0, n - 1), min_size=1, max_size=3, unique=True), min_size=2, max_size=16),
    st.integers(3, n))))
def test_belady_equals_min_with_kernel_sets(case):
    n, kernels, frames = case
    trace = one_page_trace(kernels, n)
    result = Simulator(config_pages(frames)).run(trace, "belady")
    assert total_faults(result) == set_min_misses(kernels, 2, frames)


def training_case(seed, gpu_fraction, kernels=24, footprint_MiB=6):
    trace = synthesize(kernels, footprint_MiB << 20, pattern="random" if seed % 2 else "training", seed=seed)
    ws = max(int(trace.tensor_pages[np.unique(trace.kernel_accesses(k)[0])].sum()) for k in range(trace.n_kernels))
    gpu = max(ws, int(trace.tensor_pages.sum() * gpu_fraction))
    return trace, config_pages(gpu)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.floats(0.2, 0.9))
def test_belady_never_faults_more_than_other_demand_paging_rules(seed, gpu_fraction):
    trace, cfg = training_case(seed, gpu_fraction)
    sim = Simulator(cfg)
    belady = total_faults(sim.run(trace, "belady"))
    assert belady <= total_faults(sim.run(trace, "base-uvm"))
    assert belady <= total_faults(sim.run(trace, "base-uvm", eviction="least_recently_used.py:score"))


def test_farthest_next_use_callback_equals_builtin_belady(small_trace):
    cfg = config_pages(int(small_trace.tensor_pages.sum() * 0.4))
    sim = Simulator(cfg)
    builtin = sim.run(small_trace, "belady")
    user = sim.run(small_trace, "base-uvm", eviction="farthest_next_use.py:score")
    assert user.counters["eviction"] == "farthest_next_use.py:score"
    for a, b in zip(builtin.iterations, user.iterations):
        assert (a.time_s, a.faults_pages, a.traffic_pages) == (b.time_s, b.faults_pages, b.traffic_pages)
    assert np.array_equal(builtin.kernels["end_cycles"], user.kernels["end_cycles"])


def test_score_inputs_follow_the_contract():
    # tensor 0 used by kernels 0 and 2 of 4; two iterations simulated
    trace = one_page_trace([[0], [1], [0], [1]], 2)
    from g10core.uvm._evict import NEVER, ScoreEvictor
    from g10core.uvm._pagetable import PageTable

    uses = {"off": np.array([0, 2, 4]), "kernels": np.array([0, 2, 1, 3])}
    pt = PageTable({"first": [0, 1], "pages": [1, 1], "is_global": [1, 1], "birth": [0, 1], "death": [3, 4]}, 4, 10)
    ev = ScoreEvictor(pt, uses, 4, 2)
    cases = {
        # (iteration, kernel) -> tensor 0's (last use, next use)
        (0, 0): (0, 0), (0, 1): (0, 2), (0, 3): (2, 4 + 0), (1, 0): (0, 0), (1, 3): (2, NEVER),
    }
    for (it, k), expected in cases.items():
        ev.kernel_begin_py(k, it)
        assert ev.score_inputs(0) == expected, (it, k)
    ev.kernel_begin_py(0, 0)
    assert ev.score_inputs(1)[0] == -NEVER            # never used before, first iteration
    ev.kernel_begin_py(0, 1)
    assert ev.score_inputs(1) == (3 - 4, 1)            # last used at kernel 3 of the previous iteration
    assert trace.n_kernels == 4


def write_rule(tmp_path, body: str, name="rule.py"):
    path = tmp_path / name
    path.write_text(body)
    return path


@pytest.mark.parametrize("body, message", [
    ("def score(a, b):\n    return 0.0\n", "must take exactly 7 positional arguments"),
    ("def score(*args):\n    return 0.0\n", "must take exactly 7 positional arguments"),
    ("def other(a, b, c, d, e, f, g):\n    return 0.0\n", "has no function 'score'"),
    ("def score(a, b, c, d, e, f, g):\n    return {'x': a}['x'] + 'text'\n", "cannot be compiled by numba"),
    ("def score(a, b, c, d, e, f, g)\n    return 0.0\n", "cannot be imported: SyntaxError"),
    ("import sys\nsys.exit(0)\n", "cannot be imported: SystemExit: 0"),
])
def test_bad_user_rules_are_refused_naming_file_and_function(tmp_path, body, message):
    path = write_rule(tmp_path, body)
    with pytest.raises(evictors.EvictionRuleError, match=message) as info:
        evictors.resolve(f"{path}:score")
    assert str(path) in str(info.value) or "rule.py" in str(info.value)


def test_unknown_rules_and_missing_files_are_refused(tmp_path):
    with pytest.raises(evictors.EvictionRuleError, match="unknown eviction rule 'lfu'; known: arrival, belady, deepum"):
        evictors.resolve("lfu")
    with pytest.raises(evictors.EvictionRuleError, match="no such file"):
        evictors.resolve(f"{tmp_path}/none.py:score")


def test_a_user_rule_is_refused_for_tensor_level_policies(small_trace):
    with pytest.raises(ValueError, match="--eviction applies to page-level policies"):
        Simulator(config_pages(int(small_trace.tensor_pages.sum()))).run(small_trace, "g10-gds", eviction="belady")


def test_the_callback_is_cached_on_disk(tmp_path):
    path = write_rule(tmp_path, "def score(a, b, c, d, e, f, g):\n    return float(f - a)\n", "cached_rule.py")
    first = evictors.load_score_function(f"{path}:score")
    cache_files = list((tmp_path / "__pycache__").glob("cached_rule*.nb*"))
    assert cache_files, "numba wrote no cache beside the file"
    second = evictors.load_score_function(f"{path}:score")
    assert second.address != 0 and first.address != 0
    # a second load reuses the cache: no new entry per run
    assert sorted((tmp_path / "__pycache__").glob("cached_rule*.nb*")) == sorted(cache_files)


@pytest.mark.parametrize("body, what", [
    ("def score(a, b, c, d, e, f, g):\n    assert b < 0\n    return 0.0\n", "raised AssertionError"),
    ("def score(a, b, c, d, e, f, g):\n    return f // (b - b)\n", "raised ZeroDivisionError: integer division"),
    ("import math\ndef score(a, b, c, d, e, f, g):\n    return math.nan if b % 2 == 0 else float(f)\n",
     "returned NaN"),
])
def test_a_rule_that_raises_or_returns_nan_is_refused_naming_the_call(small_trace, tmp_path, body, what):
    # a numba cfunc that raises prints a traceback at every call and returns 0: the run went
    # on with made-up scores (1.6 M lines of tracebacks on BERT, then exit 1)
    path = write_rule(tmp_path, body)
    sim = Simulator(config_pages(int(small_trace.tensor_pages.sum() * 0.4)))
    with pytest.raises(evictors.EvictionRuleError) as info:
        sim.run(small_trace, "base-uvm", eviction=f"{path}:score")
    message = str(info.value)
    assert message.startswith(f"--eviction {path}:score: score(now_kernel=") and what in message, message
    assert "call(s) of this run failed" in message and "\n" not in message
    # the call named is one the rule fails on
    args = dict(kv.split("=") for kv in message.split("score(", 1)[1].split(")", 1)[0].split(", "))
    assert set(args) == set(evictors.SCORE_ARGUMENTS)
    if "NaN" in what:
        assert int(args["tensor"]) % 2 == 0


def test_a_failing_rule_is_one_line_and_exit_2_on_the_command_line(tmp_path):
    import subprocess
    import sys

    path = write_rule(tmp_path, "def score(a, b, c, d, e, f, g):\n    assert b < 0\n    return 0.0\n")
    proc = subprocess.run([sys.executable, "-m", "g10core", "run", "bert_base-b256", "--policy", "base-uvm",
                           "--no-progress", "--eviction", f"{path}:score"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[:2000]
    assert "raised AssertionError" in proc.stderr and "Traceback" not in proc.stderr


def test_lru_example_is_least_recently_used(small_trace):
    """With one kernel per tensor use and no reuse distance ties, tensor LRU differs from FIFO."""
    cfg = config_pages(int(small_trace.tensor_pages.sum() * 0.4))
    sim = Simulator(cfg)
    lru = sim.run(small_trace, "base-uvm", eviction="least_recently_used.py:score")
    assert lru.counters["eviction"] == "least_recently_used.py:score"
    assert lru.counters["evictor"]["victim_tensors_chosen"] > 0
    assert lru.iteration_time_s >= sim.run(small_trace, "ideal").iteration_time_s
    assert ACCESS_WRITE  # (imported for the traces above)


FIG11 = ["bert_base-b256", "vit-b1280", "inceptionv3-b1536", "resnet152-b1280", "senet154-b1024"]


@pytest.mark.slow
@pytest.mark.parametrize("name", __import__("conftest").SHIPPED_NAMES)
def test_farthest_next_use_equals_belady_on_every_shipped_trace(name, load_shipped):
    trace = load_shipped(name)
    sim = Simulator("g10-artifact")
    builtin = sim.run(trace, "belady")
    user = sim.run(trace, "base-uvm", eviction="farthest_next_use.py:score")
    assert [(it.time_s, it.faults_pages, it.traffic_pages) for it in builtin.iterations] == \
        [(it.time_s, it.faults_pages, it.traffic_pages) for it in user.iterations]


@pytest.mark.slow
@pytest.mark.parametrize("name", FIG11)
def test_belady_faults_no_more_than_base_uvm_on_fig11(name, load_shipped):
    trace = load_shipped(name)
    sim = Simulator("g10-artifact")
    belady, base = sim.run(trace, "belady"), sim.run(trace, "base-uvm")
    assert total_faults(belady) <= total_faults(base)
    for b, u in zip(belady.iterations, base.iterations):
        assert sum(b.faults_pages.values()) <= sum(u.faults_pages.values())


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 5, 40]), st.sampled_from([1, 3, 64]))
def test_deepum_search_finds_the_first_page_outside_its_window(seed, window, walk_steps):
    """DeepUM+'s victim is the oldest GPU page of a tensor outside the next ``window``
    kernels.  Its search keeps a cursor, a known prefix of window nodes, and (long windows)
    asks the tensors instead of walking the list; under random arrivals and departures,
    which split, shrink and unlink nodes and move the cursor to the head, it must name the
    page a walk of the whole list from the head names."""
    from g10core.uvm._evict import DeepUMWindowEvictor
    from g10core.uvm._pagetable import PageTable
    rng = np.random.default_rng(seed)
    sizes = rng.integers(20, 120, 12)
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    n_pages = int(sizes.sum())
    T = len(sizes)
    pt = PageTable({"first": first, "pages": sizes, "is_global": [0] * T, "birth": [0] * T,
                    "death": [5] * T}, n_pages, 100)
    n_kernels = 8
    uses = [sorted(set(rng.integers(0, T - 3, 2).tolist())) for _ in range(n_kernels)]  # the last 3: never used
    off = np.concatenate(([0], np.cumsum([len(u) for u in uses]))).astype(np.int64)
    flat = np.array([t for u in uses for t in u], np.int32)
    ev = DeepUMWindowEvictor(pt, {"in_off": off, "in_t": flat, "out_off": np.zeros(n_kernels + 1, np.int64),
                                  "out_t": np.zeros(0, np.int32)}, window, walk_steps)
    weights = np.array([1.0] * (T - 3) + [0.01] * 3)
    weights /= weights.sum()
    order: list[int] = []                    # GPU pages, oldest first
    on_gpu = np.zeros(n_pages, bool)
    kernel, searches = 0, 0

    def expected():
        in_window = {t for off_k in range(window) for t in uses[(kernel + off_k) % n_kernels]}
        if pt.cursor < 0:                    # the cursor at the list's end (no kernel yet, a search
            return -1                        # that found nothing, the list emptied) waits for a kernel
        for s, _c, t in pt.arrival_list():
            if t not in in_window:
                return s
        return -1

    for step in range(3000):
        r = rng.random()
        if r < 0.45 or not order:            # a few pages of one tensor arrive, as the newest
            # (the unused tensors rarely: long stretches of window nodes, as a long window makes)
            t = int(rng.choice(T, p=weights))
            absent = np.flatnonzero(~on_gpu[first[t]:first[t] + sizes[t]]) + first[t]
            if absent.size == 0:
                continue
            a = int(absent[rng.integers(absent.size)])
            n = 1
            while n < 8 and a + n < first[t] + sizes[t] and not on_gpu[a + n]:
                n += 1
            pt.py_arrive(a, n, t)
            on_gpu[a:a + n] = True
            order.extend(range(a, a + n))
        elif r < 0.85:                       # consecutive pages leave (anywhere in the list)
            i = int(rng.integers(len(order)))
            a = order[i]
            run = 1
            while run < 4 and i + run < len(order) and order[i + run] == a + run:
                run += 1
            pt.py_depart(a, run)
            on_gpu[a:a + run] = False
            del order[i:i + run]
        elif r < 0.9:                        # the next kernel begins
            kernel = (kernel + 1) % n_kernels
            ev.kernel_begin_py(kernel, 0)
        else:
            want = expected()
            got = ev.find_victim_py(False)
            assert got == want, f"step {step}: victim page {got}, a walk from the head finds {want}"
            searches += 1
    assert searches > 100 and len(pt.arrival_list()) > 0


def test_deepum_prefetch_victims_pass_pages_queued_to_leave():
    """A pre-eviction hint (G10's, under ``--eviction deepum``) leaves GPU pages in transfer
    until its queue evicts them.  DeepUM+'s search for a prefetch's victim must pass them
    like its window's pages (its fault search and the arrival rule already did): taken,
    they left twice, and the queue then met pages no longer on the GPU."""
    from g10core.uvm._evict import DeepUMWindowEvictor
    from g10core.uvm._pagetable import PageTable
    from g10core.codes import TIER_GPU
    sizes = np.array([10, 10, 10])
    pt = PageTable({"first": [0, 10, 20], "pages": sizes, "is_global": [0] * 3, "birth": [0] * 3,
                    "death": [5] * 3}, 30, 100)
    for t in range(3):
        pt.py_assign(t, 10 * t, 10 * t + 10, TIER_GPU, 0)
        pt.py_arrive(10 * t, 10, t)
    # kernel 0 uses tensor 0, kernel 1 tensor 2; the window is one kernel
    ev = DeepUMWindowEvictor(pt, {"in_off": np.array([0, 1, 2], np.int64), "in_t": np.array([0, 2], np.int32),
                                  "out_off": np.zeros(3, np.int64), "out_t": np.zeros(0, np.int32)}, 1)
    pt.py_assign(1, 10, 15, TIER_GPU, 1)          # tensor 1's first half is queued to leave
    ev.kernel_begin_py(0, 0)
    assert ev.find_victim_py(False) == 15         # not 10
    assert ev.find_victim_py(True) == 0           # a fault's victim: the oldest idle page
    pt.py_assign(1, 15, 20, TIER_GPU, 1)          # all of tensor 1
    ev.kernel_begin_py(0, 0)
    assert ev.find_victim_py(False) == 20
    # from the list's head (kernel 1's window is tensor 2): past tensor 0's pages in transfer
    pt.py_assign(0, 0, 5, TIER_GPU, 1)
    ev.kernel_begin_py(1, 0)
    assert pt.cursor == 0 and ev.find_victim_py(False) == 5
    pt.py_assign(0, 5, 10, TIER_GPU, 1)
    ev.kernel_begin_py(1, 0)
    assert ev.find_victim_py(False) == -1         # every page outside the window is leaving
    assert ev.find_victim_py(True) == 20          # a fault takes the oldest idle page
