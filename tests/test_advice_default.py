"""Memory advice in the slot model (the ``default`` preset; issue 37), against closed forms.

Every replay here runs twice, with bulk repeats of identical slots and without (slot by slot,
the oracle): the numbers must be identical (``replay``, ``assert_bulk_identical``; the bulk
path's guards for advice are in ``_batcher.pyx``).

The far-fault handler (``detailed``) gives advice its meaning page by page
(``tests/test_thrashing.py``); the slot model gives it the same meaning per tensor:

* ``prefer_host`` / ``accessed_by``: a kernel's pages of the tensor that are in host memory are
  not migrated; it reads (writes) them over the link, which adds their pages at the host path's
  rate to its time and keeps that path busy as long; ``prefer_host`` also places never-touched
  pages in host memory, ``accessed_by`` lets them be allocated on the GPU;
* ``read_mostly``: evicting the tensor to host before a kernel writes it is a drop (no
  write-back); after a write, evictions write back;
* ``prefer_gpu`` clears ``prefer_host``.

Rows come from a replay whose fault model adds nothing (``test_slot_physics``), so a kernel's
time is its ideal time, its waits for transfers and its remote accesses, and nothing else.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from g10core.uvm._fault import FaultModel
from g10core.uvm._replay import Replay
from g10core.codes import (HINT_ADVISE_ACCESSED_BY, HINT_ADVISE_PREFER_GPU, HINT_ADVISE_PREFER_HOST,
                           HINT_ADVISE_READ_MOSTLY, HINT_DTYPE, HINT_TO_HOST)
from g10core.config import preset
from g10core.simulator import Simulator, replay_inputs
from g10core.uvm.slots import UNITS_PER_CYCLE, ArtifactConstants, page_units
from test_slot_physics import PAGE, config, make_trace

N = 5_000                                 # pages of the advised tensor (20 MB)
LONG = 1e9                                # ns: a kernel long enough for any pre-eviction to end
HOST_GBPS = 15.754


def cfg_default(name="default", **kw):
    return config(name, link=HOST_GBPS, host_GBps=HOST_GBPS, gpu_pages=4 * N, host_pages=4 * N, **kw)


# what a replay's output says about how it ran its slots, not what they did
SLOT_KEYS = ("bulk", "ticks", "events")


def assert_same_replay(on, off):
    """Two replays' outputs (bulk repeats on, off) agree on everything the slots did."""
    assert set(on) == set(off)
    for key in set(on) - set(SLOT_KEYS):
        a, b = on[key], off[key]
        if isinstance(a, dict):
            assert set(a) == set(b), key
            for col in a:
                assert np.array_equal(np.asarray(a[col]), np.asarray(b[col])), (key, col)
        else:
            assert np.array_equal(np.asarray(a), np.asarray(b)), key


def replay_both(trace, cfg, hints, eviction="arrival"):
    """The replay with bulk repeats, checked against the one without; returns the first."""
    outs = []
    for bulk in (True, False):
        c, a, _ = replay_inputs(trace, cfg, np.array(hints, HINT_DTYPE), eviction=eviction, apply_hints=True,
                                advice=True, bulk=bulk)
        assert c["bulk"] is bulk
        outs.append(Replay(c, a, fault_model=FaultModel()).run())
    assert_same_replay(*outs)
    return outs[0], a["t11"]


def replay(trace, cfg, hints):
    return replay_both(trace, cfg, hints)


def remote_cycles(pages, cfg):
    """Cycles ``pages`` pages take over the host path: the slot model's integer form."""
    ac = ArtifactConstants.from_config(cfg)
    units = page_units(PAGE, ac.freq_hz, HOST_GBPS)
    assert units == ac.host_units
    return -(-pages * units // UNITS_PER_CYCLE)


def extra(out, t11, k):
    """Cycles kernel row k took beyond its ideal time."""
    rows = out["kernels"]
    return int(rows[k, 3] - rows[k, 2] - t11[int(rows[k, 1])])


def traffic(out):
    """(alloc, ssd->gpu, host->gpu, gpu->ssd, gpu->host) pages over the run."""
    return tuple(int(x) for x in out["pcie"].sum(axis=0))


def test_the_remote_time_is_the_pages_over_the_link():
    cfg = cfg_default()
    cyc = remote_cycles(N, cfg)
    freq = ArtifactConstants.from_config(cfg).freq_hz
    # the integer form is N pages * 4096 B over the link's bandwidth, in cycles, to 1e-4
    assert math.isclose(cyc, N * PAGE / (HOST_GBPS * 1e9) * freq, rel_tol=1e-4)


def test_prefer_host_places_never_touched_pages_in_host_memory_and_reads_them_remotely():
    # k0 reads X (never touched) under prefer_host: X is placed in host memory, read over the link
    trace = make_trace([N], [False], [([0], [])], [1000.0])
    out, t11 = replay(trace, cfg_default(), [(0, 0, HINT_ADVISE_PREFER_HOST)])
    assert extra(out, t11, 0) == remote_cycles(N, cfg_default())
    assert traffic(out) == (0, 0, 0, 0, 0)                  # nothing migrated, nothing allocated on the GPU
    assert out["final"]["host_used"] == N and out["final"]["gpu_free"] == 4 * N
    assert out["advice"] == {"remote_accesses": 1, "remote_pages": N, "remote_read_bytes": N * PAGE,
                             "remote_write_bytes": 0, "remote_populated": N, "readdup_clean_pages": 0,
                             "advice_ranges": 1}


def test_prefer_host_writes_go_over_the_link_gpu_to_host():
    # k0 writes X under prefer_host: placed in host memory, written remotely (GPU -> host)
    trace = make_trace([N], [False], [([], [0])], [1000.0])
    out, t11 = replay(trace, cfg_default(), [(0, 0, HINT_ADVISE_PREFER_HOST)])
    assert extra(out, t11, 0) == remote_cycles(N, cfg_default())
    assert out["advice"]["remote_write_bytes"] == N * PAGE and out["advice"]["remote_read_bytes"] == 0


def host_resident_then_read(advice, at=2):
    """X (N pages) written by k0, pre-evicted to host at k1 (a long kernel), read by k2, with
    ``advice`` on X given at kernel ``at``."""
    trace = make_trace([N, 1], [False, False], [([], [0]), ([1], []), ([0], [])], [1000.0, LONG, 1000.0])
    hints = [(1, 0, HINT_TO_HOST)]
    if advice is not None:
        hints = sorted(hints + [(at, 0, advice)], key=lambda h: h[0])
    return replay(trace, cfg_default(), hints)


def test_accessed_by_reads_host_pages_remotely_without_migrating_them():
    base, t11 = host_resident_then_read(None)
    out, _ = host_resident_then_read(HINT_ADVISE_ACCESSED_BY)
    cyc = remote_cycles(N, cfg_default())
    # without advice k2 waits for N pages from host; with it, k2 reads them over the link
    assert traffic(base)[2] == N and traffic(out)[2] == 0
    assert extra(out, t11, 2) == cyc
    assert out["final"]["host_used"] == N                   # X stays in host memory
    assert out["advice"]["remote_pages"] == N and out["advice"]["remote_populated"] == 0
    # the same link time as the migration it replaces, within a slot's rounding
    assert abs(extra(base, t11, 2) - cyc) <= 2 * int(ArtifactConstants.from_config(cfg_default()).tick_cycles)


def test_accessed_by_lets_never_touched_pages_populate_on_the_gpu():
    # advice at k0, which writes X for the first time: X is allocated on the GPU as without advice
    out, t11 = host_resident_then_read(HINT_ADVISE_ACCESSED_BY, at=0)
    base, _ = host_resident_then_read(None)
    assert out["final"]["allocated_pages"] == base["final"]["allocated_pages"] == N + 1
    assert out["advice"]["remote_populated"] == 0
    assert extra(out, t11, 0) == extra(base, t11, 0)
    # ... and later read remotely from host memory, where the hint at k1 put it
    assert out["advice"]["remote_pages"] == N and extra(out, t11, 2) == remote_cycles(N, cfg_default())


def test_pages_on_the_gpu_stay_there():
    # X written by k0, read by k1 with prefer_host: its pages are on the GPU, nothing is remote
    trace = make_trace([N], [False], [([], [0]), ([0], [])], [1000.0, 1000.0])
    out, t11 = replay(trace, cfg_default(), [(1, 0, HINT_ADVISE_PREFER_HOST)])
    assert extra(out, t11, 1) == 0 and out["advice"]["remote_pages"] == 0 and traffic(out)[4] == 0


def test_prefer_gpu_clears_prefer_host():
    # prefer_host at k0 (X placed in host, read remotely), prefer_gpu at k1: k2 migrates X as usual
    trace = make_trace([N, 1], [False, False], [([0], []), ([1], []), ([0], [])], [1000.0, 1000.0, 1000.0])
    out, t11 = replay(trace, cfg_default(), [(0, 0, HINT_ADVISE_PREFER_HOST), (1, 0, HINT_ADVISE_PREFER_GPU)])
    assert out["advice"]["remote_pages"] == N and out["advice"]["remote_populated"] == N
    assert traffic(out)[2] == N                             # k2 fetched X from host memory
    assert out["advice"]["advice_ranges"] == 2


def test_the_link_is_busy_while_a_kernel_reads_remotely():
    # k2 reads X (host, accessed_by) remotely; a prefetch of Y (M pages in host) at k2 waits for the
    # link: it ends no earlier than X's and Y's pages over the link after k2 begins
    M = N // 2
    trace = make_trace([N, M, 1], [False, False, False],
                       [([], [0, 1]), ([2], []), ([0], []), ([2], [])], [1000.0, LONG, 1000.0, LONG])
    from g10core.codes import HINT_TO_GPU
    hints = [(1, 0, HINT_TO_HOST), (1, 1, HINT_TO_HOST), (2, 0, HINT_ADVISE_ACCESSED_BY), (2, 1, HINT_TO_GPU)]
    out, t11 = replay(trace, cfg_default(), hints)
    cfg = cfg_default()
    k2 = int(out["kernels"][2, 2])
    b = out["boundaries"]
    busy_end = int(b[(b[:, 1] == 0) & (b[:, 0] > k2)][0, 0])
    tick = ArtifactConstants.from_config(cfg).tick_cycles
    assert busy_end - k2 >= remote_cycles(N + M, cfg) - tick
    assert busy_end - k2 <= remote_cycles(N + M, cfg) + 2 * tick
    assert traffic(out)[2] == M


def read_mostly_round_trip(write):
    """X written by k0, pre-evicted to host at k1, read by k2 under read_mostly (fetched back),
    written by k3 when ``write``, pre-evicted to host again at k4."""
    trace = make_trace([N, 1], [False, False],
                       [([], [0]), ([1], []), ([0], []), ([], [0] if write else [1]), ([1], [])],
                       [1000.0, LONG, 1000.0, 1000.0, LONG])
    hints = [(1, 0, HINT_TO_HOST), (2, 0, HINT_ADVISE_READ_MOSTLY), (4, 0, HINT_TO_HOST)]
    return replay(trace, cfg_default(), hints)


def test_read_mostly_evicted_unwritten_makes_no_write_back():
    out, _ = read_mostly_round_trip(write=False)
    # one write-back (k1's, before the advice), the second eviction is a drop
    assert traffic(out)[4] == N and traffic(out)[2] == N
    assert out["advice"]["readdup_clean_pages"] == N
    assert out["final"]["host_used"] == N


def test_read_mostly_written_writes_back():
    out, _ = read_mostly_round_trip(write=True)
    assert traffic(out)[4] == 2 * N and out["advice"]["readdup_clean_pages"] == 0
    assert out["final"]["host_used"] == N


def test_a_kernel_that_reads_and_writes_the_tensor_collapses_the_duplicates():
    # k3 updates X in place (read and write, as an optimizer step updates weights): a write
    from dataclasses import replace as dc_replace
    from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE

    trace = make_trace([N, 1], [False, False], [([], [0]), ([1], []), ([0], []), ([0], []), ([1], [])],
                       [1000.0, LONG, 1000.0, 1000.0, LONG])
    mode = trace.access_mode.copy()
    mode[int(trace.access_offsets[3])] = ACCESS_READ | ACCESS_WRITE
    trace = dc_replace(trace, access_mode=mode)
    hints = [(1, 0, HINT_TO_HOST), (2, 0, HINT_ADVISE_READ_MOSTLY), (4, 0, HINT_TO_HOST)]
    out, _ = replay(trace, cfg_default(), hints)
    assert traffic(out)[4] == 2 * N and out["advice"]["readdup_clean_pages"] == 0


def test_a_bulk_repeat_of_pre_evictions_stops_before_a_clean_tensor():
    # Y goes to host memory at k1 and comes back read-mostly at k2 (duplicates: its host copy stays
    # valid); k3 pre-evicts X (written: write-backs, slot after slot, repeated in bulk) and then Y
    # (unwritten since: a drop); a repeat of X's slots must not run on into Y's pages
    trace = make_trace([N, N, 1], [False] * 3, [([], [0, 1]), ([2], []), ([1], []), ([2], []), ([0, 1], [])],
                       [1000.0, LONG, 1000.0, LONG, 1000.0])
    hints = [(1, 1, HINT_TO_HOST), (2, 1, HINT_ADVISE_READ_MOSTLY), (3, 0, HINT_TO_HOST), (3, 1, HINT_TO_HOST)]
    out, _ = replay(trace, cfg_default(), hints)
    assert out["ticks"]["bulk"] > 0
    assert traffic(out)[4] == 2 * N and out["advice"]["readdup_clean_pages"] == N


def test_read_mostly_victims_of_a_full_gpu_are_dropped():
    # the GPU holds 2N pages: X (N, read_mostly, fetched from host) is evicted by Y's and Z's
    # allocations without a write-back; W (written) by the same allocations is written back
    trace = make_trace([N, N, N, N, 1], [False] * 5,
                       [([], [0]), ([4], []), ([0], []), ([], [1]), ([], [2]), ([], [3])],
                       [1000.0, LONG, 1000.0, 1000.0, 1000.0, 1000.0])
    cfg = config(link=HOST_GBPS, host_GBps=HOST_GBPS, gpu_pages=2 * N, host_pages=8 * N)
    outs = []
    for advice in (HINT_ADVISE_READ_MOSTLY, HINT_ADVISE_PREFER_GPU):       # prefer_gpu: no effect here
        outs.append(replay(trace, cfg, [(1, 0, HINT_TO_HOST), (2, 0, advice)])[0])
    out, base = outs
    # k4 allocates Z over X (clean: dropped), k5 allocates W over Y (written by k3: written back)
    assert out["advice"]["readdup_clean_pages"] == N and base["advice"]["readdup_clean_pages"] == 0
    assert traffic(base)[4] - traffic(out)[4] == N          # exactly X's write-back saved
    assert traffic(out)[4] >= 2 * N                         # k1's pre-eviction of X, and Y's eviction
    assert out["final"]["host_used"] == base["final"]["host_used"]


# ---- the simulator: counters, invariants, presets ---------------------------------------------

def test_the_simulator_applies_advice_under_default_with_detaileds_counter_names():
    trace = make_trace([N], [False], [([0], [])], [1000.0])
    hints = np.array([(0, 0, HINT_ADVISE_PREFER_HOST)], HINT_DTYPE)
    cfg = cfg_default().with_overrides({"run": {"iterations": 2}})
    r = Simulator(cfg).run(trace, "g10", hints=hints)
    assert not r.failed
    th = r.counters["thrashing"]
    detailed = Simulator(preset("detailed").with_overrides({"run": {"iterations": 2}})).run(
        trace, "g10", hints=hints).counters["thrashing"]
    assert set(th) == set(detailed)
    # both iterations read X over the link; it was placed in host memory once
    assert th["remote_pages"] == 2 * N and th["remote_populated"] == N and th["advice_ranges"] == 2
    # the Result's JSON carries them where detailed's has them
    assert json.loads(r.to_json())["counters"]["thrashing"]["remote_read_bytes"] == 2 * N * PAGE


def test_the_artifact_rules_ignore_advice_and_keep_their_numbers():
    trace = make_trace([N], [False], [([0], [])], [1000.0])
    hints = np.array([(0, 0, HINT_ADVISE_PREFER_HOST)], HINT_DTYPE)
    cfg = cfg_default("g10-artifact").with_overrides({"run": {"iterations": 2}})
    with pytest.warns(Warning, match="memory advice"):
        r = Simulator(cfg).run(trace, "g10", hints=hints)
    plain = Simulator(cfg).run(trace, "g10", hints=np.zeros(0, HINT_DTYPE))
    assert r.iteration_time_s == plain.iteration_time_s and "thrashing" not in r.counters


def test_the_read_mostly_example_saves_write_backs_under_default():
    from g10core.workload.synth import synthesize
    from g10core.workload.trace import kernel_working_set_bytes

    # seed 3: weights evicted between their fetch from host and the optimizer's write (seed 2's are
    # evicted only after it: dirty, written back, nothing saved)
    trace = synthesize(12, 96 << 20, seed=3)
    gpu = max(int(kernel_working_set_bytes(trace).max()) * 5 // 4, 48 << 20)     # oversubscribed
    cfg = preset("default").with_overrides({"gpu": {"memory_GiB": gpu / 2**30}})
    r = Simulator(cfg).run(trace, "read_mostly_weights.py:ReadMostlyWeights")
    plain = Simulator(cfg).run(trace, "base-uvm")
    assert not r.failed
    th = r.counters["thrashing"]
    assert th["advice_ranges"] == int(trace.tensor_is_global.sum()) * cfg.run.iterations
    assert th["readdup_clean_pages"] > 0
    # the drops are the write-backs saved: fewer pages to host than without advice
    assert r.traffic_pages["gpu_to_host"] < plain.traffic_pages["gpu_to_host"]


# ---- bulk repeats of identical slots: the same numbers as slot by slot -------------------------

def results_without_slot_counts(r):
    """A Result's JSON without what depends on how its slots ran (counts of detailed and bulk
    slots, events, why slots were repeated) or on the machine (metadata), and its kernel table."""
    j = json.loads(r.to_json())
    del j["metadata"], j["counters"]["ticks"], j["counters"]["events"], j["counters"]["bulk"]
    return j, {c: np.asarray(v) for c, v in r.kernel_table().items()}


def assert_bulk_identical(monkeypatch, trace, cfg, policy, **kw):
    """``policy`` on ``trace`` with bulk repeats and without (``replay_inputs(bulk=False)``):
    identical iteration times, traffic, counters and kernel rows; returns the bulk run."""
    import g10core.simulator as simulator
    orig = simulator.replay_inputs
    runs = []
    for bulk in (True, False):
        monkeypatch.setattr(simulator, "replay_inputs",
                            lambda *a, _bulk=bulk, **k: orig(*a, **{**k, "bulk": _bulk and k.get("bulk", True)}))
        runs.append(Simulator(cfg).run(trace, policy, **kw))
    monkeypatch.setattr(simulator, "replay_inputs", orig)
    on, off = runs
    assert not on.failed and not off.failed
    assert off.counters["ticks"].get("bulk", 0) == 0
    (j_on, k_on), (j_off, k_off) = results_without_slot_counts(on), results_without_slot_counts(off)
    assert j_on == j_off
    assert set(k_on) == set(k_off) and all(np.array_equal(k_on[c], k_off[c]) for c in k_on)
    return on


def test_bulk_repeats_keep_the_read_mostly_example_identical_on_a_shipped_trace(monkeypatch, load_shipped):
    # bert_base-b256 (~2 s slot by slot): clean weight victims, drops, in bulk
    r = assert_bulk_identical(monkeypatch, load_shipped("bert_base-b256"), preset("default"),
                              "read_mostly_weights.py:ReadMostlyWeights")
    assert r.counters["thrashing"]["readdup_clean_pages"] > 0
    assert r.counters["ticks"]["bulk"] > r.counters["ticks"]["detailed"]


@pytest.mark.parametrize("seed", range(24))
def test_bulk_repeats_keep_random_advice_on_synthetic_traces_identical(monkeypatch, seed):
    # random advice (all four), prefetches and pre-evictions on oversubscribed synthetic traces,
    # tight or ample host memory, each eviction rule; without the bulk path's guards for advice
    # most of these seeds differ or break page conservation
    from g10core.workload.synth import synthesize
    from g10core.workload.vitality import kernel_working_set_bytes

    rng = np.random.default_rng(seed)
    trace = synthesize(int(rng.integers(12, 40)), int(rng.integers(48, 128)) << 20,
                       pattern=("training", "random")[seed % 2], seed=seed)
    ws = int(kernel_working_set_bytes(trace).max())
    cfg = preset("default").with_overrides({"gpu": {"memory_GiB": float(rng.uniform(1.05, 1.6)) * ws / 2**30},
                                            "host": {"memory_GiB": float(rng.choice([0.05, 0.2, 4.0]))},
                                            "run": {"iterations": 2}})
    actions = [0, 1, 2, HINT_ADVISE_PREFER_GPU, HINT_ADVISE_PREFER_HOST, HINT_ADVISE_ACCESSED_BY] + \
        [HINT_ADVISE_READ_MOSTLY] * 3
    hints = np.array(sorted((int(rng.integers(0, trace.n_kernels)), int(rng.integers(0, trace.n_tensors)),
                             int(rng.choice(actions))) for _ in range(int(rng.integers(5, 60)))), HINT_DTYPE)
    r = assert_bulk_identical(monkeypatch, trace, cfg, "g10", hints=hints,
                              eviction=("arrival", "deepum", "belady")[seed % 3])
    assert r.counters["ticks"]["bulk"] > 0


# ---- read duplication under both presets: drops are no traffic, a duplicate needs a host copy ------

def read_mostly_run(preset_name, kernels, t11, hints):
    """X (N pages) under ``hints`` on the simulator (both presets): gpu->host pages, clean drops."""
    trace = make_trace([N, 1], [False, False], kernels, t11)
    cfg = config(preset_name, link=HOST_GBPS, gpu_pages=4 * N, host_pages=4 * N)
    r = Simulator(cfg).run(trace, "g10", hints=np.array(hints, HINT_DTYPE))
    assert not r.failed
    return r.traffic_pages["gpu_to_host"], r.counters["thrashing"]["readdup_clean_pages"]


@pytest.mark.parametrize("preset_name", ["default", "detailed"])
def test_a_to_host_hint_on_a_read_duplicate_is_a_drop_not_traffic(preset_name):
    # X written by k0, written back to host at k1, fetched back read-mostly at k2 (its host copy
    # stays), sent to host again at k4: one write-back; the second is a drop, counted apart
    kernels = [([], [0]), ([1], []), ([0], []), ([1], []), ([1], [])]
    hints = [(1, 0, HINT_TO_HOST), (2, 0, HINT_ADVISE_READ_MOSTLY), (4, 0, HINT_TO_HOST)]
    assert read_mostly_run(preset_name, kernels, [1000.0, LONG, 1000.0, 1000.0, LONG], hints) == (N, N)


@pytest.mark.parametrize("preset_name", ["default", "detailed"])
def test_read_mostly_given_while_the_pages_are_on_the_gpu_writes_them_back(preset_name):
    # X written by k0 is on the GPU only (no host copy) when the advice comes at k1: its eviction
    # writes back; once it has left the GPU, a fetch from host duplicates it, and the next eviction
    # (k4) is a drop
    kernels = [([], [0]), ([1], []), ([0], []), ([1], []), ([1], [])]
    hints = [(1, 0, HINT_ADVISE_READ_MOSTLY), (1, 0, HINT_TO_HOST), (4, 0, HINT_TO_HOST)]
    assert read_mostly_run(preset_name, kernels, [1000.0, LONG, 1000.0, 1000.0, LONG], hints) == (N, N)
    # written again at k3: the duplicates collapse, the eviction at k4 writes back
    kernels[3] = ([], [0])
    assert read_mostly_run(preset_name, kernels, [1000.0, LONG, 1000.0, 1000.0, LONG], hints) == (2 * N, 0)


@pytest.mark.parametrize("preset_name", ["default", "detailed"])
def test_a_read_mostly_tensor_first_touched_on_the_gpu_has_no_host_copy(preset_name):
    # X never populated, advised read-mostly, read by k0 (allocated on the GPU, not fetched): its
    # eviction at k1 writes back
    kernels = [([0], []), ([1], []), ([1], [])]
    hints = [(0, 0, HINT_ADVISE_READ_MOSTLY), (1, 0, HINT_TO_HOST)]
    assert read_mostly_run(preset_name, kernels, [1000.0, LONG, 1000.0], hints) == (N, 0)
