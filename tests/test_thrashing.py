"""Thrashing detection, throttling, pinning and remote access, and memory advice (issue 37).

The rules are the UVM driver's (uvm_perf_thrashing.c): a page that comes back to the GPU
within a lapse of its previous migration in is a thrashing event; `threshold` events in a
row make it thrashing; each fault on it then throttles the GPU (its pages are usable a nap
later) until it has been throttled `pin_threshold` times; then its host pages are pinned
where they are and the GPU reads them over the link (remote, zero-copy) for `pin` lapses.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from g10core.codes import HINT_DTYPE, HINT_ADVISE_PREFER_HOST, ACTION_NAMES
from g10core.config import preset
from g10core.errors import HintError
from g10core.link.pcie import PcieLink, PcieSpec
from g10core.simulator import Simulator
from g10core.uvm.fault_handler import PAGE_BYTES, FaultHandler, FaultHandlerSpec
from g10core.workload.hints import read_hints, validate_hints, write_hints
from g10core.workload.synth import synthesize

UNIT = 16                                  # pages of a 64 KiB migration unit


def spec(**kw):
    return replace(FaultHandlerSpec(), prefetcher="none", **kw).check()


def wire(nbytes, direction="to_device"):
    """Completion cycle of one transfer of ``nbytes`` on an idle link of the default spec."""
    return PcieLink(PcieSpec(clock_GHz=FaultHandlerSpec().clock_GHz)).submit(direction, nbytes, 0)


def remote_cycles(nbytes, write=False):
    """A remote (zero-copy) access on an idle link: the SMs' loads, so the wire time alone."""
    link = PcieLink(PcieSpec(clock_GHz=FaultHandlerSpec().clock_GHz))
    return link.core.py_wire_cycles(1 if write else 0, 0, nbytes)


def ping_pong(h, rounds):
    """Blocks 0 and 1 fault in turn on a GPU that holds one unit: each fault evicts the other.
    Returns per fault (block, start, arrival of its page, remote pages, remote done)."""
    B = h.spec.block_pages
    t, out = 0, []
    for i in range(rounds):
        blk = i % 2
        n, done = h.remote(blk * B, blk * B + UNIT, t)
        if n:
            out.append((blk, t, None, n, done))
            t = done
            continue
        h.fault(blk * B, t, (0, 2 * B))
        end = t
        for x in h.service_all(t):
            end = x["end"]
        a = h.arrival(blk * B)
        out.append((blk, t, a, 0, None))
        t = max(end, a)
    return out


# ---- thrashing: throttled, then pinned with remote accesses ------------------------------------

def test_a_thrashing_trace_is_throttled_then_pinned_and_read_remotely():
    s = spec(thrashing_threshold=3, thrashing_pin_threshold=2)
    p = s.thrashing_params()
    assert p["lapse"] == s.cycles(500) and p["nap"] == p["lapse"] and p["pin"] == 300 * p["lapse"]
    h = FaultHandler(s, gpu_pages=UNIT)
    steps = ping_pong(h, 20)
    # per block: fault 1 is its first migration (no event); returns 2, 3 are events 1, 2 and
    # migrate at once; return 4 is event 3 = threshold: thrashing, throttled (usable a nap
    # after its batch starts), as is return 5 (2 throttles = pin_threshold).  Block 0's return 6
    # pins it: its unit stays in host memory (no arrival) and the GPU reads it over the link
    # from then on; block 1, no longer evicted, stays resident
    for blk in (0, 1):
        mine = [x for x in steps if x[0] == blk]
        for j, (_b, start, arrive, n, done) in enumerate(mine[:5]):
            assert n == 0
            assert (arrive - start < p["nap"]) if j < 3 else (arrive == start + p["nap"]), (blk, j)
    b0 = [x for x in steps if x[0] == 0]
    assert b0[5][2] == -1 and all(x[3] == UNIT and x[4] - x[1] == remote_cycles(UNIT * PAGE_BYTES) for x in b0[6:])
    b1 = [x for x in steps if x[0] == 1]
    assert all(0 <= x[2] <= x[1] for x in b1[5:])
    rs = h.remote_stats()
    assert rs["thrashing_events"] == 2 and rs["throttles"] == 4 and rs["pins"] == 1
    assert rs["pinned_pages"] == UNIT
    n_remote = len(b0[6:])
    assert rs["remote_accesses"] == n_remote and rs["remote_pages"] == n_remote * UNIT
    assert rs["remote_read_bytes"] == n_remote * UNIT * PAGE_BYTES and rs["remote_write_bytes"] == 0
    # once pinned, nothing moves: the migrations stop
    moved = h.stats()["pages_from_host"]
    ping_pong(h, 6)
    assert h.stats()["pages_from_host"] == moved


def test_a_pin_maps_remotely_until_it_ends_and_not_after():
    # remote_run skips the record lookup once every pin has ended (the handler's pin horizon):
    # the last cycle of a pin still reads remotely, the first one after it faults
    s = spec(thrashing_threshold=3, thrashing_pin_threshold=2)
    h = FaultHandler(s, gpu_pages=UNIT)
    ping_pong(h, 20)
    B = h.spec.block_pages
    pins = h.core.pinned_blocks()
    assert list(pins) == [0]                   # block 0 pinned (the test above), block 1 never
    until = pins[0]
    assert h.remote(0, UNIT, until - 1)[0] == UNIT
    assert h.remote(0, UNIT, until)[0] == 0
    assert h.remote(B, B + UNIT, until - 1)[0] == 0


def test_slow_returns_are_not_thrashing():
    # a return later than the lapse is no event: no throttle, no pin
    s = spec(thrashing_lapse_us=1.0)
    h = FaultHandler(s, gpu_pages=UNIT)
    ping_pong(h, 30)
    rs = h.remote_stats()
    assert rs["thrashing_events"] == rs["throttles"] == rs["pins"] == rs["remote_pages"] == 0


def test_thrashing_off_migrates_every_time():
    h = FaultHandler(spec(thrashing_enable=False), gpu_pages=UNIT)
    steps = ping_pong(h, 30)
    assert all(x[3] == 0 for x in steps)
    assert h.stats()["pages_from_host"] == 30 * UNIT and h.remote_stats()["throttles"] == 0


# ---- memory advice -----------------------------------------------------------------------------

def test_accessed_by_maps_host_pages_remotely_without_migration():
    h = FaultHandler(spec(), gpu_pages=4 * UNIT)
    h.advise(0, 2 * UNIT, "accessed_by")
    n, done = h.remote(0, 2 * UNIT, 0)
    assert (n, done) == (2 * UNIT, remote_cycles(2 * UNIT * PAGE_BYTES))
    n, done = h.remote(2 * UNIT, 3 * UNIT, 0)           # not advised: it faults
    assert n == 0
    # a write goes the other way
    n, done = h.remote(0, UNIT, done, write=True)
    assert n == UNIT
    assert h.stats()["pages_from_host"] == 0
    rs = h.remote_stats()
    assert rs["remote_read_bytes"] == 2 * UNIT * PAGE_BYTES and rs["remote_write_bytes"] == UNIT * PAGE_BYTES


def test_prefer_host_populates_in_host_memory_and_prefer_gpu_undoes_it():
    h = FaultHandler(spec(), gpu_pages=4 * UNIT, initial_tier="not_present")
    h.advise(0, UNIT, "accessed_by")
    assert h.remote(0, UNIT, 0)[0] == 0                 # never touched: accessed_by alone faults it in
    h.advise(UNIT, 3 * UNIT, "prefer_host")
    assert h.remote(UNIT, 3 * UNIT, 0)[0] == 2 * UNIT   # first touch: placed in host memory, read remotely
    assert h.remote_stats()["remote_populated"] == 2 * UNIT and h.core.host_used_pages == 2 * UNIT
    h.advise(UNIT, 3 * UNIT, "prefer_gpu")
    assert h.remote(UNIT, 3 * UNIT, 0)[0] == 0          # preferred on the GPU again: it faults and migrates
    h.fault(UNIT, 0, (UNIT, 3 * UNIT))
    h.service_all(0)
    assert h.stats()["pages_from_host"] == UNIT


def test_read_mostly_evicts_without_write_back_until_written():
    h = FaultHandler(spec(), gpu_pages=4 * UNIT)
    h.advise(0, UNIT, "read_mostly")
    h.fault(0, 0, (0, UNIT))
    t = h.service_all(0)[-1]["end"]
    # the host copy is still valid: the eviction is a drop, done at once
    assert h.evict(0, UNIT, "host", t) == t
    assert h.remote_stats()["readdup_clean_pages"] == UNIT
    # a kernel writes it: the duplicate collapses, the next eviction writes back 64 KiB
    h.fault(0, t, (0, UNIT))
    t = h.service_all(t)[-1]["end"]
    h.written(0, UNIT)
    done = h.evict(0, UNIT, "host", t)
    assert done - t == wire(UNIT * PAGE_BYTES, "from_device")
    assert h.remote_stats()["readdup_clean_pages"] == UNIT


def test_a_read_duplicate_leaves_as_a_drop_move_and_is_no_write_back():
    h = FaultHandler(spec(), gpu_pages=4 * UNIT)
    h.advise(0, UNIT, "read_mostly")
    h.fault(0, 0, (0, UNIT))
    t = h.service_all(0)[-1]["end"]
    assert h.evict(0, UNIT, "host", t) == t
    (m,) = h.moves()
    assert m["clean"] == 1 and m["done"] == t and (m["first"], m["end"]) == (0, UNIT)
    assert h.stats()["pages_to_host"] == 0                 # write-backs only; drops: readdup_clean_pages
    assert h.remote_stats()["readdup_clean_pages"] == UNIT


def test_read_mostly_advice_on_pages_already_on_the_gpu_is_not_clean_until_they_left():
    h = FaultHandler(spec(), gpu_pages=4 * UNIT)
    h.fault(0, 0, (0, UNIT))
    t = h.service_all(0)[-1]["end"]
    h.advise(0, UNIT, "read_mostly")                       # migrated before the advice: no host copy
    done = h.evict(0, UNIT, "host", t)
    assert done - t == wire(UNIT * PAGE_BYTES, "from_device")
    assert h.moves()["clean"].tolist() == [0] and h.remote_stats()["readdup_clean_pages"] == 0
    h.fault(0, done, (0, UNIT))                            # fetched back while advised: a duplicate
    t = h.service_all(done)[-1]["end"]
    assert h.evict(0, UNIT, "host", t) == t
    assert h.remote_stats()["readdup_clean_pages"] == UNIT


def test_pages_a_writing_kernel_brings_in_are_not_read_duplicates():
    h = FaultHandler(spec(), gpu_pages=4 * UNIT)
    h.advise(0, UNIT, "read_mostly")
    h.written(0, UNIT)                                     # the running kernel writes the range
    h.fault(0, 0, (0, UNIT))
    t = h.service_all(0)[-1]["end"]
    assert h.evict(0, UNIT, "host", t) - t == wire(UNIT * PAGE_BYTES, "from_device")
    assert h.remote_stats()["readdup_clean_pages"] == 0


def test_advice_names_and_codes():
    assert {ACTION_NAMES[c] for c in (5, 6, 7, 8)} == {"prefer_gpu", "prefer_host", "accessed_by", "read_mostly"}
    with pytest.raises(Exception, match="prefer_gpu"):
        FaultHandler(spec(), gpu_pages=UNIT).advise(0, 1, "to_gpu")


# ---- hint files: schema_version 2 carries advice, version 1 files hold 0-3 only ------------------

def test_hint_file_v2_round_trips_advice_and_v1_refuses_it(tmp_path):
    import h5py

    trace = synthesize(6, 32 << 20, seed=1)
    h = np.array([(0, 0, 7), (1, 1, 8), (2, 0, 5), (2, 1, 6)], HINT_DTYPE)
    path = write_hints(tmp_path / "h.h5", h, policy="hand", trace=trace)
    with h5py.File(path) as f:
        assert int(f.attrs["schema_version"]) == 2
    assert read_hints(path).hints.tolist() == h.tolist()
    with h5py.File(path, "r+") as f:
        f.attrs["schema_version"] = 1
    with pytest.raises(HintError, match="schema_version 2"):
        read_hints(path)
    with pytest.raises(HintError, match="action 9"):
        validate_hints(np.array([(0, 0, 9)], HINT_DTYPE), trace.n_kernels, trace.n_tensors)


# ---- the replay (detailed): prefer_host reads a tensor over the link every time ------------------

def test_prefer_host_in_the_detailed_replay_reads_the_tensor_remotely():
    trace = synthesize(8, 64 << 20, seed=3)
    # the largest tensor that is not global (globals may start on the GPU)
    x = int(np.argmax(np.where(trace.tensor_is_global, 0, trace.tensor_size_bytes)))
    pages = -(-int(trace.tensor_size_bytes[x]) // PAGE_BYTES)
    cfg = preset("detailed").with_overrides({"gpu": {"memory_GiB": 1.0}})
    hints = np.array([(0, x, HINT_ADVISE_PREFER_HOST)], HINT_DTYPE)
    r = Simulator(cfg).run(trace, "g10", hints=hints)
    assert not r.failed
    acc = np.flatnonzero(trace.access_tensor == x)
    # every access of x in every iteration after the hint reads or writes its pages over the link
    # (the hint is applied at kernel 0 of each iteration; x is never placed on the GPU)
    uses = len(acc)
    th = r.counters["thrashing"]
    assert th["advice_ranges"] == cfg.run.iterations
    assert th["remote_pages"] == uses * cfg.run.iterations * pages


# ---- the shipped advice example; a rule that thrashes under detailed ends with a result ----------

def test_the_read_mostly_example_advises_every_weight_and_saves_write_backs():
    from g10core.workload.trace import PAGE_SIZE_BYTES, kernel_working_set_bytes

    # seed 1, 24 kernels: weight pages come back from host memory and leave again before the backward
    # pass writes them (seed 2, 12 kernels: each weight leaves only written, nothing is saved)
    trace = synthesize(24, 96 << 20, seed=1)
    gpu = max(int(kernel_working_set_bytes(trace).max()) * 5 // 4, 48 << 20)     # oversubscribed
    cfg = preset("detailed").with_overrides({"gpu": {"memory_GiB": gpu / 2**30}})
    r = Simulator(cfg).run(trace, "read_mostly_weights.py:ReadMostlyWeights")
    assert not r.failed
    th = r.counters["thrashing"]
    assert th["advice_ranges"] == int(trace.tensor_is_global.sum()) * cfg.run.iterations
    assert r.hints["by_action"]["read_mostly"] == int(trace.tensor_is_global.sum())
    assert th["readdup_clean_pages"] > 0            # weight pages evicted without a write-back


def test_advice_under_the_artifact_rules_warns_that_it_is_ignored():
    # the slot model applies advice under default (tests/test_advice_default.py); the published
    # rules (g10-artifact) have no remote access or read duplicates: they warn and keep their numbers
    trace = synthesize(6, 32 << 20, seed=1)
    hints = np.array([(0, 0, HINT_ADVISE_PREFER_HOST)], HINT_DTYPE)
    with pytest.warns(Warning, match="memory advice"):
        r = Simulator(preset("g10-artifact")).run(trace, "g10", hints=hints)
    assert not r.failed and "thrashing" not in r.counters
    r = Simulator(preset("default")).run(trace, "g10", hints=hints)
    assert not r.failed and r.counters["thrashing"]["advice_ranges"] == preset("default").run.iterations


def test_largest_tensor_first_offered_the_running_kernel_finishes_under_detailed(monkeypatch, tmp_path):
    # the rule that livelocked the default preset's replay (tests/test_livelock.py): under detailed
    # the handler never evicts the blocks its batch brings in, and the replay ends with a result
    import test_livelock as ll
    from g10core.workload.trace import PAGE_SIZE_BYTES, kernel_working_set_bytes

    ll.offer_running(monkeypatch)
    rule = tmp_path / "largest.py"
    rule.write_text(ll.LARGEST)
    trace = synthesize(24, 256 << 20, seed=0)
    ws = int(kernel_working_set_bytes(trace).max()) // PAGE_SIZE_BYTES
    gpu = max(int(trace.tensor_pages.sum() * 0.5), ws + 1)
    cfg = preset("detailed").with_overrides({"gpu": {"memory_GiB": gpu * PAGE_SIZE_BYTES / 2**30},
                                             "fault": {"victims": "evictor"}})
    r = Simulator(cfg).run(trace, "base-uvm", eviction=f"{rule}:score")
    assert not r.failed and len(r.iterations) == cfg.run.iterations
    assert r.counters["thrashing"]["thrashing_enabled"]


def test_a_users_prefetch_clears_the_thrashing_state():
    # the driver lets user commands take precedence: a hint's migration resets the block's history
    s = spec(thrashing_threshold=3, thrashing_pin_threshold=2)
    h = FaultHandler(s, gpu_pages=UNIT)
    B, nap = s.block_pages, s.thrashing_params()["nap"]
    ping_pong(h, 8)                       # each block throttled once (its 4th migration); block 0 out
    assert h.remote_stats()["throttles"] == 2
    t = max(h.arrival(0), h.arrival(B))
    t = h.prefetch(0, UNIT, t, (0, 2 * B))              # block 0 back by a hint: its history cleared
    h.fault(B, t, (0, 2 * B))                           # block 1's 5th return: throttled again
    start = t
    t = h.service_all(t)[-1]["end"]
    assert h.arrival(B) == start + nap and h.remote_stats()["throttles"] == 3
    t = h.arrival(B)
    h.fault(0, t, (0, 2 * B))                           # block 0's return: event 1 of a fresh count
    h.service_all(t)
    assert h.arrival(0) - t < nap and h.remote_stats()["throttles"] == 3


def test_a_blocks_pages_returning_over_several_batches_are_one_event():
    # the driver counts per page: after one eviction, block 0's two units coming back in two
    # batches are one return, not two events (a per-block count took them for two, and found
    # block 0 thrashing a round early)
    def first_detection(split, n=5):
        s = spec(thrashing_threshold=3, thrashing_pin_threshold=10)
        h = FaultHandler(s, gpu_pages=2 * UNIT)
        B, t = s.block_pages, 0
        for r in range(n):
            for blk in (0, 1):
                alloc = (blk * B, blk * B + 2 * UNIT)
                groups = [[0], [UNIT]] if split and blk == 0 else [[0, UNIT]]
                for g in groups:                    # each group: faults raised together, one batch
                    for off in g:
                        h.fault(blk * B + off, t, alloc)
                    for x in h.service_all(t):
                        t = x["end"]
                    t = max([t] + [h.arrival(blk * B + off) for off in g])
                    if h.remote_stats()["thrashing_events"]:
                        return r, blk
        return None

    # block 0 comes in at round 0 and back at rounds 1, 2, 3: the third return is the third event
    assert first_detection(False) == first_detection(True) == (3, 0)
