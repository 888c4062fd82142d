"""G10 smart-migration scheduler: published hint lists, sort emulation, invariants, bounds.

Oracles: the published simulator's hint lists
(``shared/g10_artifact/expected/<Model>-<B>/g10/prefetch_guide.config.gz``) and
libstdc++'s own ``std::sort``, compiled here, for the emulation of its permutation.
"""
from __future__ import annotations

import gzip
import re
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g10core import policies
from g10core.workload.vitality import CannotFit, analyze
from g10core.config import preset
from g10core.workload.g10artifact import load_workload
from g10core.policies import HINT_DTYPE, HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD
from g10core.testing import g10_schedule as kern
from g10core.policies.g10 import plan, schedule, scheduler_params
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, Trace

CFG = preset("g10-artifact")
_ACTION = {"In_gpu": HINT_TO_GPU, "In_ssd": HINT_TO_SSD, "In_cpu": HINT_TO_HOST, "Not_present": HINT_FREE}
_HINT = re.compile(r"Issued Time: (\d+) Tensor: (\d+) G:[ox] From: \S+, To: (\S+)")


def published_hints(artifact: Path, folder: str) -> list[tuple[int, int, int]]:
    rows = []
    with gzip.open(artifact / "expected" / folder / "g10" / "prefetch_guide.config.gz", "rt") as fh:
        for line in fh:
            m = _HINT.match(line)
            assert m, line
            rows.append((int(m[1]), int(m[2]), _ACTION[m[3]]))
    return rows


def as_rows(hints) -> list[tuple[int, int, int]]:
    return list(zip(hints["kernel"].tolist(), hints["tensor"].tolist(), hints["action"].tolist()))


@pytest.fixture(scope="module")
def bert256(artifact_dir):
    return load_workload(artifact_dir, "bert_base", 256)


PUBLISHED = [("bert_base", 128, "BERT_Base-128"), ("bert_base", 256, "BERT_Base-256"),
             ("inceptionv3", 1536, "Inceptionv3-1536"), ("vit", 1280, "VIT-1280")]


@pytest.mark.parametrize("model,batch,folder", PUBLISHED, ids=[p[2] for p in PUBLISHED])
def test_hints_equal_published_in_order(model, batch, folder, artifact_dir):
    trace = load_workload(artifact_dir, model, batch)
    ours = as_rows(schedule(trace, CFG, "g10"))
    ref = published_hints(artifact_dir, folder)
    assert sorted(ours) == sorted(ref)  # same (kernel, tensor, destination) multiset
    assert ours == ref                  # and the same unstable-sort order


def test_bert256_counts_match_notes(bert256):
    s = plan(bert256, CFG, "g10")
    assert s.counts() == {"to_host": 18, "to_ssd": 6, "to_gpu": 1330, "free": 1306}
    assert s.stats["greedy_end"] == "fits" and s.stats["fits_target"]


def test_bert128_has_no_pre_evictions(artifact_dir):
    s = plan(load_workload(artifact_dir, "bert_base", 128), CFG, "g10")
    assert s.counts() == {"to_host": 0, "to_ssd": 0, "to_gpu": 899, "free": 899}
    assert s.stats["greedy_steps"] == 0


def test_action_codes_match_hint_dtype():
    assert (kern.A_TO_GPU, kern.A_TO_SSD, kern.A_TO_HOST, kern.A_FREE) == (
        HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE)


@pytest.mark.parametrize("model,batch,variant", [
    ("bert_base", 256, "g10"), ("bert_base", 256, "gds"), ("bert_base", 256, "host"),
    ("inceptionv3", 1536, "g10"), ("inceptionv3", 1536, "gds"), ("vit", 1280, "host")])
def test_cached_keys_equal_exact_keys(model, batch, variant, artifact_dir):
    """Approximate keys + exact sums for near ties decide as exact keys everywhere."""
    trace = load_workload(artifact_dir, model, batch)
    fast = plan(trace, CFG, variant)
    ref = plan(trace, CFG, variant, exact_keys=True)
    np.testing.assert_array_equal(fast.hints, ref.hints)
    np.testing.assert_array_equal(fast.memory_estimate_bytes, ref.memory_estimate_bytes)
    assert fast.stats["area_sums_exact"] <= ref.stats["area_sums_exact"]


def test_registered_policy(bert256):
    cls = policies.get("g10")
    assert (cls.name, cls.level, cls.eviction) == ("g10", "page", "arrival")
    h = cls(CFG).hints(bert256)
    assert h.dtype == HINT_DTYPE
    np.testing.assert_array_equal(h, schedule(bert256, CFG, "g10"))


# ---- libstdc++ std::sort as oracle of the emulation --------------------------

_SORT_CPP = r"""
#include <algorithm>
#include <cstdio>
#include <vector>
int main() {
    int mode, n;
    if (std::scanf("%d %d", &mode, &n) != 2) return 1;
    std::vector<double> k1(n), k2(n);
    for (int i = 0; i < n; i++) if (std::scanf("%lf %lf", &k1[i], &k2[i]) != 2) return 1;
    std::vector<int> p(n);
    for (int i = 0; i < n; i++) p[i] = i;
    std::sort(p.begin(), p.end(), [&](int a, int b) {
        if (mode == 0) {   // the G10 scheduler's interval comparator
            double d = k1[a] - k1[b];
            if (d < 0.000001 && d > -0.000001 && k1[a] != 0 && k1[b] != 0) return k2[a] > k2[b];
            return k1[a] > k1[b];
        }
        if (mode == 1) return k1[a] < k1[b];
        return k1[a] > k1[b];
    });
    for (int i = 0; i < n; i++) std::printf("%d\n", p[i]);
    return 0;
}
"""


@pytest.fixture(scope="module")
def cxx_sort(tmp_path_factory):
    d = tmp_path_factory.mktemp("stdsort")
    (d / "sort.cpp").write_text(_SORT_CPP)
    cxx = (sysconfig.get_config_var("CXX") or "c++").split()
    subprocess.run(cxx + ["-O1", "-std=c++17", "-o", str(d / "sort"), str(d / "sort.cpp")], check=True)

    def run(mode, k1, k2):
        text = f"{mode} {len(k1)}\n" + "".join(f"{a!r} {b!r}\n" for a, b in zip(k1.tolist(), k2.tolist()))
        out = subprocess.run([str(d / "sort")], input=text, capture_output=True, text=True, check=True).stdout
        return np.array(out.split(), np.int64)
    return run


def tie_heavy_keys(rng, n):
    """Keys like the scheduler's: many exact ties (zeros, repeats), near-ties, distinct values."""
    k1 = rng.choice(np.array([0.0, 0.0, 0.0, 1.5e9, 1.5e9 + 1e-7, 2.5e9, 3.0]), size=n)
    distinct = rng.random(n) < 0.3
    k1[distinct] = rng.random(int(distinct.sum())) * 1e9
    k2 = rng.integers(0, 4, n).astype(np.float64)
    return k1, k2


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 40, 300, 2500])
@pytest.mark.parametrize("mode", [kern.CMP_AREA, kern.CMP_LESS, kern.CMP_GREATER])
def test_sort_emulation_equals_libstdcxx(cxx_sort, n, mode):
    k1, k2 = tie_heavy_keys(np.random.default_rng(1000 * n + mode), n)
    p = np.arange(n, dtype=np.int64)
    kern.std_sort(p, mode, k1, k2)
    np.testing.assert_array_equal(p, cxx_sort(mode, k1, k2))


def test_sort_emulation_chain_of_sorts(cxx_sort):
    """The greedy pass re-sorts the previous permutation each step: chain 12 sorts."""
    rng = np.random.default_rng(7)
    n = 700
    p = np.arange(n, dtype=np.int64)
    for _ in range(12):
        k1, k2 = tie_heavy_keys(rng, n)
        # C++ sorts positions of the current order; map them back to element ids
        ref = p[cxx_sort(kern.CMP_AREA, k1[p], k2[p])]
        kern.std_sort(p, kern.CMP_AREA, k1, k2)
        np.testing.assert_array_equal(p, ref)


# ---- variants and their invariants -------------------------------------------

@pytest.mark.parametrize("variant", ["g10", "gds", "host"])
def test_variant_invariants(bert256, variant):
    s = plan(bert256, CFG, variant)
    h = s.hints
    K = bert256.n_kernels
    assert np.all(np.diff(h["kernel"]) >= 0)                   # applied in kernel order
    assert h["kernel"].min() >= 0 and h["kernel"].max() <= K   # K = after the last kernel
    v = analyze(bert256)
    evict = h[(h["action"] == HINT_TO_SSD) | (h["action"] == HINT_TO_HOST)]
    assert len(evict) > 0
    if variant == "gds":
        assert not np.any(h["action"] == HINT_TO_HOST) and not np.any(h["action"] == HINT_FREE)
        assert s.params.host_memory_bytes == 0
    if variant == "host":
        assert not np.any(h["action"] == HINT_FREE)
    if variant != "g10":  # no pre-allocation: every to_gpu is the prefetch of an offload
        assert np.count_nonzero(h["action"] == HINT_TO_GPU) <= len(evict)
    # every offload from the greedy pass is prefetched back inside its own interval;
    # only GDS's peak shaving pre-evicts without a planned prefetch
    prefetch = {(int(k), int(t)) for k, t, a in h if a == HINT_TO_GPU}
    unmatched = 0
    for k, t, a in evict:
        rows = v.tensor_intervals(int(t))
        iv = [(s_, e_, lp) for s_, e_, lp in zip(v.interval_start[rows], v.interval_end[rows],
                                                  v.interval_looped[rows]) if s_ == k]
        assert iv, f"pre-eviction of tensor {t} at kernel {k} is not at the start of one of its intervals"
        s_, e_, lp = iv[0]
        if lp:
            ks = list(range(s_ + 1, K)) + list(range(0, e_ + 1))
        else:
            ks = range(s_ + 1, e_ + 1)
        if not any((kk, int(t)) in prefetch for kk in ks):
            unmatched += 1
    assert unmatched <= s.stats["peak_shaved"]
    if variant == "g10":
        assert unmatched == 0


def test_target_factors_are_quirks(artifact_dir):
    bert512 = load_workload(artifact_dir, "bert_base", 512)
    vit = load_workload(artifact_dir, "vit", 1280)
    p = scheduler_params(bert512, CFG, "g10")
    line = 40 * 2**30
    assert p.gpu_memory_bytes == line and p.target_factor == 1.394
    assert p.target_bytes == int(1.394 * int(line * 0.99))
    assert scheduler_params(bert512, CFG, "gds").target_factor == 1.060606
    assert scheduler_params(vit, CFG, "host").target_factor == 1.269366
    assert scheduler_params(vit, CFG, "g10").target_factor == 1.0
    fast_ssd = CFG.with_overrides({"ssd": {"bandwidth_GBps": 6.4}})
    assert scheduler_params(vit, fast_ssd, "g10").target_factor == 1.1
    plain = CFG.with_overrides({"scheduler": {"artifact_quirks": False}})
    for tr, var in ((bert512, "g10"), (vit, "host"), (bert512, "gds")):
        q = scheduler_params(tr, plain, var)
        assert q.target_factor == 1.0 and q.target_bytes == int(line * 0.99)
    # the scheduler reads GB/s as 2^30 B/s
    assert p.ssd_bytes_per_us == 3.2 * 2**30 / 1e6 and p.host_bytes_per_us == 15.754 * 2**30 / 1e6
    with pytest.raises(ValueError, match="variant"):
        scheduler_params(vit, CFG, "flashneuron")


# ---- adversarial synthetic traces --------------------------------------------

def synthetic_trace(K, sizes_pages, is_global, uses, times_ns):
    off, tens, mode = [0], [], []
    for k in range(K):
        for t, m in sorted(uses[k].items()):
            tens.append(t)
            mode.append(m)
        off.append(len(tens))
    T = len(sizes_pages)
    times = np.asarray(times_ns, np.float64)
    return Trace(
        model="synthetic", batch_size=1,
        tensor_size_bytes=np.asarray(sizes_pages, np.int64) * 4096,
        tensor_is_global=np.asarray(is_global, bool),
        tensor_name=np.array([f"t{i}" for i in range(T)]),
        kernel_name=np.array([f"k{i}" for i in range(K)]),
        kernel_time_ideal_ns=times, kernel_time_fault_all_ns=times * 3,
        kernel_time_fault_outputs_ns=times * 2, kernel_workspace_bytes=np.zeros(K, np.int64),
        access_offsets=np.array(off, np.int64), access_tensor=np.array(tens, np.int32),
        access_mode=np.array(mode, np.uint8))


@st.composite
def adversarial(draw):
    K = draw(st.integers(1, 40))
    T = draw(st.integers(1, 25))
    # tiny to huge tensors (4 KiB .. 64 GiB), many zero-time or nanosecond kernels
    sizes = draw(st.lists(st.sampled_from([1, 2, 3, 1 << 10, 1 << 18, 1 << 20, 1 << 24]), min_size=T, max_size=T))
    is_global = draw(st.lists(st.booleans(), min_size=T, max_size=T))
    times = draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 1e3, 1e6, 5e8]), min_size=K, max_size=K))
    uses = [dict() for _ in range(K)]
    for t in range(T):
        ks = draw(st.lists(st.integers(0, K - 1), min_size=0, max_size=8, unique=True))
        for k in ks:
            uses[k][t] = draw(st.sampled_from([ACCESS_READ, ACCESS_WRITE, ACCESS_READ | ACCESS_WRITE]))
    trace = synthetic_trace(K, sizes, is_global, uses, times)
    # GPU memory mostly between the largest working set and the footprint (where a
    # schedule is needed), sometimes below the working set (cannot fit)
    ws = np.zeros(K, np.int64)
    np.add.at(ws, trace.access_kernel, trace.tensor_pages[trace.access_tensor] * 4096)
    lo, hi = int(ws.max()), trace.footprint_bytes
    frac = draw(st.sampled_from([-0.5, 0.0, 0.01, 0.1, 0.3, 0.6, 0.9, 1.2]))
    gpu_bytes = max(lo + frac * (hi - lo) if frac >= 0 else lo * 0.5, 4096.0)
    host_GiB = draw(st.sampled_from([0.0, 0.5, 128.0])) * (hi / 2**30 if hi < 2**30 else 1.0)
    variant = draw(st.sampled_from(["g10", "gds", "host"]))
    return trace, gpu_bytes / 2**30, host_GiB, variant


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(adversarial())
def test_scheduler_terminates_with_bounded_work(case):
    trace, gpu_GiB, host_GiB, variant = case
    cfg = CFG.with_overrides({"gpu": {"memory_GiB": gpu_GiB}, "host": {"memory_GiB": host_GiB}})
    ws = np.zeros(trace.n_kernels, np.int64)
    np.add.at(ws, trace.access_kernel, trace.tensor_pages[trace.access_tensor] * 4096)
    if ws.max() > cfg.gpu.memory_GiB * 2**30:
        with pytest.raises(CannotFit) as e:
            plan(trace, cfg, variant)
        assert e.value.working_set_bytes == ws.max() and "cannot fit" in str(e.value)
        return
    s = plan(trace, cfg, variant)
    np.testing.assert_array_equal(s.hints, plan(trace, cfg, variant, exact_keys=True).hints)
    v = analyze(trace)
    I, K, T = v.n_intervals, trace.n_kernels, trace.n_tensors
    # bounded work: at most one greedy step (one sort) per interval, and per step at
    # most one key update per interval
    assert s.stats["greedy_steps"] <= I and s.stats["sorts"] == s.stats["greedy_steps"]
    assert s.stats["area_sums_exact"] <= I * (1 + s.stats["greedy_steps"])
    assert s.stats["area_approximations"] <= I * (1 + s.stats["greedy_steps"])
    h = s.hints
    assert len(h) <= 2 * T + 4 * I + 8
    assert np.all(np.diff(h["kernel"]) >= 0)
    assert np.all((h["kernel"] >= 0) & (h["kernel"] <= K))
    assert np.all((h["tensor"] >= 0) & (h["tensor"] < T))
    assert set(np.unique(h["action"]).tolist()) <= {HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE}
    if variant == "gds":
        assert not np.any(h["action"] == HINT_TO_HOST)
    if variant != "g10":
        assert not np.any(h["action"] == HINT_FREE)
    if host_GiB == 0 or variant == "gds":
        assert not np.any(h["action"] == HINT_TO_HOST)


def test_cannot_fit_is_an_error_not_a_hang():
    # one kernel reads 3 GiB and writes 2 GiB: no schedule fits it in 4 GiB
    trace = synthetic_trace(2, [3 << 18, 2 << 18], [True, False],
                            [{0: ACCESS_READ, 1: ACCESS_WRITE}, {1: ACCESS_READ}], [1e6, 1e6])
    cfg = CFG.with_overrides({"gpu": {"memory_GiB": 4.0}})
    with pytest.raises(CannotFit) as e:
        schedule(trace, cfg)
    assert (e.value.kernel, e.value.working_set_bytes, e.value.gpu_memory_bytes) == (0, 5 << 30, 4 << 30)
    assert isinstance(e.value, ValueError)


def test_rejects_malformed_trace():
    trace = synthetic_trace(2, [1, 1], [False, False], [{0: ACCESS_WRITE}, {0: ACCESS_READ}], [1e3, np.nan])
    with pytest.raises(ValueError, match="kernel_time_ideal_ns"):
        schedule(trace, CFG)

