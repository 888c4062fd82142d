"""Simulator: input validation, invariants of every page-level run, ideal, and a golden
case pinned against the page-by-page specification (``reference.ReferenceReplay``)."""
import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g10core import simulator
from g10core.workload.vitality import CannotFit
from g10core.config import ConfigError, preset
from g10core.workload.hints import HintError, validate_hints
from g10core.policies import HINT_DTYPE, HINT_FREE, HINT_TO_GPU, HINT_TO_SSD
from g10core.policies import get as get_policy
from g10core.testing.reference import EVICT_DEEPUM, EVICT_LRU, ReferenceReplay
from g10core.simulator import Simulator, SimulationError, replay_invariant_violations, resolve_config
from g10core.workload.synth import synthesize
from g10core.workload.trace import TraceError, kernel_working_set_bytes

PAGE_POLICIES = ("base-uvm", "deepum", "g10")


def config(gpu_GiB, host_GiB=0.03, **more):
    over = {"gpu": {"memory_GiB": gpu_GiB}, "host": {"memory_GiB": host_GiB}}
    for section, values in more.items():
        over.setdefault(section, {}).update(values)
    return preset("g10-artifact").with_overrides(over)


@pytest.fixture(scope="module")
def training():
    return synthesize(40, 64 << 20, pattern="training", seed=1)


def hints_table(rows):
    h = np.zeros(len(rows), HINT_DTYPE)
    for i, (k, t, a) in enumerate(rows):
        h[i] = (k, t, a)
    return h


# ---- validation -------------------------------------------------------------------

def test_hint_kernel_K_is_legal_and_K_plus_1_names_the_row(training):
    K, T = training.n_kernels, training.n_tensors
    ok = validate_hints(hints_table([(0, 1, HINT_TO_GPU), (K, 2, HINT_FREE)]), K, T)
    assert ok.dtype == HINT_DTYPE and ok.shape == (2,)
    with pytest.raises(HintError, match=rf"row 1, field kernel: kernel {K + 1} is out of range \[0, {K}\]"):
        validate_hints(hints_table([(0, 1, 0), (K + 1, 2, 0)]), K, T)


@pytest.mark.parametrize("rows, message", [
    ([(0, -1, 0)], r"row 0, field tensor: tensor -1 is out of range"),
    ([(0, 10**6, 0)], r"row 0, field tensor: tensor 1000000 is out of range"),
    ([(0, 1, 0), (0, 2, 9)], r"row 1, field action: action 9 is not"),   # 5-8: memory advice (issue 37)
    ([(-1, 1, 0)], r"row 0, field kernel: kernel -1 is out of range"),
    ([(3, 1, 0), (2, 1, 0)], r"row 1, field kernel: kernel 2 comes after kernel 3: rows must be sorted"),
])
def test_bad_hint_rows_are_refused_naming_row_and_field(training, rows, message):
    with pytest.raises(HintError, match=message):
        Simulator(config(0.02)).run(training, "g10", hints=hints_table(rows))


def test_hint_table_of_the_wrong_shape_is_refused(training):
    with pytest.raises(HintError, match="integer fields kernel, tensor, action"):
        validate_hints(np.zeros((3, 3), np.int32), training.n_kernels, training.n_tensors)
    with pytest.raises(HintError, match="field kernel: must be integers"):
        validate_hints(np.zeros(2, [("kernel", "f8"), ("tensor", "i4"), ("action", "i1")]), 40, 40)


def test_policy_that_ignores_hints_refuses_them(training):
    with pytest.raises(ValueError, match="applies no hints"):
        Simulator(config(0.02)).run(training, "base-uvm", hints=hints_table([(0, 1, 0)]))


def test_in_memory_trace_is_validated(training):
    sizes = training.tensor_size_bytes.copy()
    sizes[5] = -4096
    bad = dataclasses.replace(training, tensor_size_bytes=sizes)
    with pytest.raises(TraceError, match=r"/tensors, row 5"):
        Simulator(config(0.02)).run(bad, "base-uvm")


@pytest.mark.parametrize("policy", ["base-uvm", "deepum", "g10", "ideal", "flashneuron", "g10-gds", "g10-host"])
def test_a_gpu_smaller_than_a_kernel_cannot_fit(training, policy):
    ws = kernel_working_set_bytes(training)
    gpu_bytes = int(ws.max()) - 8 * 4096
    with pytest.raises(CannotFit) as info:
        Simulator(config(gpu_bytes / 2**30)).run(training, policy)
    exc = info.value
    assert exc.kernel == int(np.argmax(ws)) and exc.working_set_bytes == int(ws.max())
    assert exc.gpu_memory_bytes <= gpu_bytes and "cannot fit" in str(exc) and f"kernel {exc.kernel}" in str(exc)


def test_unknown_policy_lists_the_known_ones(training):
    with pytest.raises(ValueError, match="unknown policy 'lru'; known: base-uvm, belady, capuchin, deepum"):
        Simulator(config(0.02)).run(training, "lru")


@pytest.mark.parametrize("over, message", [
    ({"ssd": {"bandwidth_GBps": 0.1}}, r"ssd.bandwidth_GBps = 0.1 .* 0 SSD pages per transfer slot"),
    ({"host": {"bandwidth_GBps": 0.2}}, r"host.bandwidth_GBps = 0.2 .* 0 host pages"),
    ({"gpu": {"page_size_bytes": 8192}}, r"gpu.page_size_bytes = 8192"),
    ({"gpu": {"memory_GiB": 1e-9}}, r"gpu.memory_GiB = 1e-09 is less than one"),
])
def test_configs_the_replay_cannot_run_are_refused(over, message):
    with pytest.raises(ConfigError, match=message):
        Simulator(preset("g10-artifact").with_overrides(over))


def test_half_detailed_configurations_are_refused():
    # the PCIe link and the FTL SSD are devices together (tests/test_detailed.py runs them)
    with pytest.raises(ConfigError, match="modelled together"):
        Simulator(resolve_config("detailed", sets=["ssd.model=bandwidth"]))


# ---- ideal --------------------------------------------------------------------------

def test_ideal_is_the_sum_of_ideal_kernel_times(training):
    cfg = config(0.02)
    r = Simulator(cfg).run(training, "ideal")
    cycles = sum(int((ns / 1e6) * 1.2e9 / 1000.0) for ns in training.kernel_time_ideal_ns)  # the artifact's conversion
    assert r.level == "ideal" and not r.failed and len(r.iterations) == cfg.run.iterations
    for it in r.iterations:
        assert it.time_cycles == cycles and it.time_s == cycles / 1.2e9
        assert it.breakdown_s == {"compute": it.time_s, "overlap": 0.0, "stall": 0.0}
        assert sum(it.traffic_pages.values()) == 0 and sum(it.faults_pages.values()) == 0
    # each kernel's conversion truncates less than one cycle
    assert r.iteration_time_s == r.ideal_time_s
    assert 0 <= training.ideal_time_ns * 1e-9 - r.ideal_time_s < training.n_kernels / 1.2e9


# ---- invariants -----------------------------------------------------------------------

@st.composite
def page_runs(draw):
    pattern = draw(st.sampled_from(["training", "random"]))
    trace = synthesize(draw(st.integers(6, 48)), draw(st.integers(2, 24)) << 20, pattern=pattern,
                       seed=draw(st.integers(0, 10_000)))
    ws = int(kernel_working_set_bytes(trace).max())
    # from just enough for the largest kernel to more than the whole footprint
    gpu = draw(st.floats(1.0, 1.3 * trace.footprint_bytes / ws + 0.01)) * ws / 2**30 + 2**-30 * 8 * 4096
    host = draw(st.sampled_from([0.0, 0.001, 0.004, 0.03]))
    return trace, config(gpu, host), draw(st.sampled_from(PAGE_POLICIES))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page_runs())
def test_invariants_hold_for_every_page_policy(run):
    trace, cfg, policy = run
    sim = Simulator(cfg)
    r = sim.run(trace, policy)          # raises SimulationError if an invariant breaks
    gpu_pages, host_line = sim.constants.gpu_pages, sim.constants.host_pages
    assert r.counters["gpu_pages"] == gpu_pages
    if r.failed:                         # only host overflow can fail a page-level run
        assert r.failure_reason.startswith("host memory overflow")
        return
    k = r.kernels
    assert k["gpu_used_pages"].max() <= gpu_pages and k["host_used_pages"].max() <= host_line
    assert len(k["kernel"]) == cfg.run.iterations * trace.n_kernels
    for it in r.iterations:
        assert it.time_s >= it.ideal_time_s > 0
        assert it.breakdown_s["stall"] >= 0 and it.breakdown_s["overlap"] >= 0


def _raw(run_result_raw, **changes):
    raw = {k: (v.copy() if isinstance(v, np.ndarray) else dict(v) if isinstance(v, dict) else v)
           for k, v in run_result_raw.items()}
    raw.update(changes)
    return raw


@pytest.fixture(scope="module")
def real_replay(training):
    """A genuine base-uvm replay output plus what the checker needs."""
    from g10core.uvm._replay import Replay

    cfg = config(0.012)
    consts, arrays, (t11, _t00) = simulator.replay_inputs(training, cfg, None, eviction="lru", apply_hints=False)
    raw = Replay(consts, arrays).run()
    touched = np.zeros(training.n_tensors, bool)
    touched[training.access_tensor] = True
    fresh = int(training.tensor_pages[touched & ~training.tensor_is_global].sum())
    return raw, consts, t11, fresh


def test_the_invariant_checker_passes_a_real_run_and_catches_broken_ones(real_replay):
    raw, consts, t11, fresh = real_replay
    check = lambda r, fresh=fresh: replay_invariant_violations(r, consts, t11, fresh_pages=fresh, exact_host=True)
    assert check(raw) == []
    rows = raw["kernels"]
    over = rows.copy()
    over[7, 9] = consts["gpu_pages"] + 1
    assert any("GPU-resident pages at execution 7" in m for m in check(_raw(raw, kernels=over)))
    host = rows.copy()
    host[3, 8] = consts["host_pages"] + 5
    assert any("host-resident pages at execution 3" in m for m in check(_raw(raw, kernels=host)))
    assert any("kernel executions recorded" in m for m in check(_raw(raw, kernels=rows[:-1])))
    fast = rows.copy()
    fast[4, 3] = fast[4, 2]                      # a kernel that took no time: its faults were not served
    msgs = check(_raw(raw, kernels=fast))
    assert any("less than its ideal time" in m for m in msgs)
    pcie = raw["pcie"].copy()
    pcie[1, 1] += 3                              # three SSD fetches out of nowhere
    assert any("GPU pages not conserved" in m for m in check(_raw(raw, pcie=pcie)))
    pcie = raw["pcie"].copy()
    pcie[0, 4] += 2                              # two host evictions that never reached host
    assert any("host pages not conserved" in m for m in check(_raw(raw, pcie=pcie)))
    assert any("GPU pages not conserved" in m for m in check(raw, fresh=fresh + 1))


def test_host_overflow_fails_the_run(training, host_overflow):
    r = Simulator(config(0.012)).run(training, "base-uvm")
    assert r.failed and r.failure_reason.startswith("host memory overflow")
    assert r.iteration_time_s == math.inf and r.iterations == ()


def test_a_replay_that_never_ends_is_stopped(training, monkeypatch):
    # a failed result (exit 1) that keeps the kernels that ended (tests/test_livelock.py)
    monkeypatch.setattr(simulator, "tick_budget", lambda *a: 10)
    r = Simulator(config(0.012)).run(training, "base-uvm")
    assert r.failed and r.failure_reason.startswith("no kernel ended for ")
    assert r.iteration_time_s == math.inf and r.counters["no_progress"]["guard"] == "budget"
    # with hints someone gave us, the reason says so
    hints = get_policy("deepum")(config(0.012)).hints(training)
    r = Simulator(config(0.012)).run(training, "deepum", hints=hints)
    assert r.failed and r.failure_reason.endswith("(with the given hints: hints that keep evicting or freeing what "
                                                  "a waiting kernel needs never let it start)")


def test_the_progress_guard_leaves_room_for_real_runs(training):
    """No waiting kernel of a real run comes near the progress guard's budget (the Fig. 11
    traces under every page-level policy use at most 3 % of it)."""
    from g10core.uvm._replay import Replay

    for policy in PAGE_POLICIES + ("belady",):
        pol = get_policy(policy)(config(0.012))
        h = pol.hints(training)
        consts, arrays, _ = simulator.replay_inputs(training, config(0.012), h, eviction=pol.eviction,
                                                    apply_hints=pol.apply_hints)
        assert Replay(consts, arrays).run()["guard_peak"] < 0.1


def test_the_tick_budget_leaves_room_for_real_runs(training):
    from g10core.uvm._replay import Replay

    for policy in PAGE_POLICIES:
        pol = get_policy(policy)(config(0.012))
        h = pol.hints(training)
        consts, arrays, (_t11, t00) = simulator.replay_inputs(training, config(0.012), h, eviction=pol.eviction,
                                                             apply_hints=pol.apply_hints)
        used = Replay(consts, arrays).run()["ticks"]
        budget = simulator.tick_budget(consts, training, t00, int(training.tensor_pages[h["tensor"]].sum()))
        assert budget > 10 * sum(used.values())


# ---- golden: the compiled replay against the page-by-page specification ----------------

GOLDEN = [  # (pattern, seed, GPU GiB): small enough to thrash, large enough to fit every kernel
    ("training", 1, 0.012),
    ("random", 2, 0.016),
]


def _reference(trace, cfg, policy, hints=None):
    pol = get_policy(policy)(cfg)
    h = pol.hints(trace) if hints is None else hints
    ev = EVICT_DEEPUM if pol.eviction == "deepum" else EVICT_LRU
    return ReferenceReplay(trace, cfg, hints=h, apply_hints=pol.apply_hints, eviction=ev).run()


def _assert_same(result, ref):
    assert len(result.iterations) == len(ref["iterations"])
    for it, d in zip(result.iterations, ref["iterations"]):
        assert it.time_cycles == d["exe_cycles"] and it.ideal_cycles == d["ideal_cycles"]
        assert it.faults_pages == {"host": d["host_faults"], "ssd": d["ssd_faults"], "unallocated": d["unalloc_faults"]}
        assert it.in_transfer_pages == d["in_transfer"] and it.allocated_pages == d["alloc"]
        assert it.traffic_pages == {"ssd_to_gpu": d["in_ssd"], "gpu_to_ssd": d["out_ssd"],
                                    "host_to_gpu": d["in_host"], "gpu_to_host": d["out_host"]}
        for key in ("compute", "overlap", "stall"):
            assert round(it.breakdown_s[key] * 1.2e9) == d[key], key
    ref_rows = np.array([r[:10] for r in ref["kernels"]], np.int64)
    assert np.array_equal(np.stack([result.kernels[c] for c in
                                    ("iteration", "kernel", "start_cycles", "end_cycles")], 1), ref_rows[:, :4])


@pytest.mark.parametrize("pattern, seed, gpu", GOLDEN)
@pytest.mark.parametrize("policy", PAGE_POLICIES)
def test_golden_small_case_equals_the_reference_replay(pattern, seed, gpu, policy):
    trace = synthesize(40, 64 << 20, pattern=pattern, seed=seed)
    cfg = config(gpu)
    r = Simulator(cfg).run(trace, policy)
    assert r.iterations[0].traffic_pages["ssd_to_gpu"] > 0     # the case does move pages
    _assert_same(r, _reference(trace, cfg, policy))


def test_hand_written_hints_with_kernel_K_match_the_reference(training):
    """A researcher's own table: pre-evict a weight at kernel K (applied at the next kernel 0)."""
    K = training.n_kernels
    weights = np.flatnonzero(training.tensor_is_global)[:3].tolist()
    rows = [(0, weights[0], HINT_TO_GPU), (5, weights[1], HINT_TO_SSD)]
    rows += [(K - 1, weights[2], HINT_TO_SSD), (K, weights[0], HINT_TO_SSD), (K, weights[1], HINT_TO_GPU)]
    hints = hints_table(rows)
    cfg = config(0.012)
    r = Simulator(cfg).run(training, "g10", hints=hints)
    assert r.hints["source"] == "array" and r.hints["n_hints"] == 5
    _assert_same(r, _reference(training, cfg, "g10", hints))


def test_tensor_level_policy_replays_its_own_schedule_given_as_hints(training):
    from g10core.policies.g10 import schedule

    cfg = config(0.02)
    own = Simulator(cfg).run(training, "g10-gds")
    again = Simulator(cfg).run(training, "g10-gds", hints=schedule(training, cfg, variant="gds"))
    assert not own.failed and own.level == "tensor"
    assert again.iteration_time_s == own.iteration_time_s and again.hints["source"] == "array"
