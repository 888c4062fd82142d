"""SSD properties: over random geometries and workloads GC never deadlocks, the FTL tables stay
consistent, pages are conserved; bad parameters raise errors that name the parameter."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from g10core.config import ConfigError
from g10core.ssd import SSD, SSDSpec, ssd_preset


def check_ftl_invariants(ssd: SSD):
    """Every structural invariant of the FTL, from a copy of its tables."""
    spec, snap = ssd.spec, ssd.core.snapshot()
    P, N, n_planes = spec.pages_per_block, spec.blocks_per_plane, spec.n_planes
    l2p, p2l, valid, state, nxt = snap["l2p"], snap["p2l"], snap["valid"], snap["state"], snap["next"]
    # mapping: l2p and p2l are inverse, and a page never leaves its lpn's plane
    mapped = np.flatnonzero(l2p)
    ppn = l2p[mapped].astype(np.int64) - 1
    assert np.array_equal(p2l[ppn].astype(np.int64) - 1, mapped)
    assert np.count_nonzero(p2l) == mapped.size
    assert np.array_equal(ppn // (P * N), mapped % n_planes)
    # per-block valid counts
    assert np.array_equal(valid, np.count_nonzero(p2l.reshape(-1, P), axis=1))
    for plane, pl in enumerate(snap["planes"]):
        blocks = np.arange(plane * N, (plane + 1) * N)
        st_ = state[blocks]
        # free FIFO holds exactly the erased blocks, which hold no data
        free_list, b = [], pl["free_head"]
        while b >= 0:
            free_list.append(b)
            assert len(free_list) <= N
            b = nxt[b]
        assert sorted(free_list) == sorted(blocks[st_ == 0].tolist())
        assert len(free_list) == pl["free_count"] >= spec.gc_free_blocks_min
        assert pl["free_tail"] == (free_list[-1] if free_list else -1)
        assert not valid[blocks[st_ == 0]].any()
        # open blocks are exactly the frontiers; closed ones are the GC candidates
        frontiers = {x for x in (pl["host_block"], pl["gc_block"]) if x >= 0}
        assert set(blocks[st_ == 1].tolist()) == frontiers
        assert pl["closed_count"] == int(np.count_nonzero(st_ == 2))
        if pl["host_block"] >= 0:       # nothing written past the frontier's write point
            hb = pl["host_block"]
            assert not p2l[hb * P + pl["host_next"]:(hb + 1) * P].any()
        closed = blocks[st_ == 2]
        if spec.victim_policy == "greedy" and closed.size:
            assert pl["min_valid"] <= valid[closed].min()
    st_ = ssd.core.stats()
    assert st_["alloc_failures"] == 0 and st_["gc_stalls"] == 0
    assert int(snap["erases"].sum()) == st_["erases"]


geometries = st.fixed_dictionaries({
    "n_channels": st.integers(1, 3),
    "chips_per_channel": st.integers(1, 2),
    "dies_per_chip": st.integers(1, 2),
    "planes_per_die": st.integers(1, 2),
    "pages_per_block": st.sampled_from([1, 2, 3, 4, 7, 8, 16, 64]),
    "extra_blocks": st.integers(0, 30),
    "gc_free_blocks_min": st.integers(2, 4),
    "overprovisioning": st.sampled_from([0.01, 0.05, 0.07, 0.125, 0.28, 0.5, 1.0]),
    "victim_policy": st.sampled_from(["greedy", "fifo", "random", "d-choices:2", "d-choices:5"]),
    "gc_frontier": st.sampled_from(["separate", "shared"]),
    "queue_depth": st.integers(1, 8),
    "write_buffer_bytes": st.sampled_from([4096, 65536, 1 << 20]),
    "seed": st.integers(0, 1000),
})


def make_spec(g):
    g = dict(g)
    extra = g.pop("extra_blocks")
    blocks = g["gc_free_blocks_min"] + 2 + extra
    spec = SSDSpec(blocks_per_plane=blocks, max_command_bytes=4096 * 4, **g)
    if spec.logical_pages_per_plane < 1:      # too small for this OP: add blocks until a page fits
        spec = spec.with_user_capacity(4096 * spec.n_planes)
    return spec.check()


ops = st.lists(st.tuples(st.sampled_from(["write", "write", "write", "read", "trim"]),
                         st.floats(0, 1, exclude_max=True), st.integers(1, 40), st.integers(0, 3000)),
               max_size=60)


def _drive(ssd, ops, hammer, seed):
    """Commands from ``ops``, then (``hammer``) random and skewed overwrites of ``hammer``
    device capacities; returns (issue cycle, completion cycle) per command and the hammer,
    then (idle_at, idle_at)."""
    U = ssd.logical_pages
    rng = np.random.default_rng(seed)
    now, out = 0, []
    for kind, where, n, gap in ops:
        lpn = int(where * U)
        n = min(n, U - lpn)
        now += gap
        if kind == "write":
            out.append((now, ssd.write(lpn, n, now)))
        elif kind == "read":
            out.append((now, ssd.read(lpn, n, now)))
        else:
            ssd.trim(lpn, n)
    if hammer:
        lpns = rng.integers(0, U, hammer * ssd.spec.physical_pages)
        lpns[::3] = rng.integers(0, max(1, U // 5), lpns[::3].size)
        out.append((now, ssd.run_pages(lpns, write=True, now=now)))
    out.append((ssd.idle_at(), ssd.idle_at()))
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=geometries, ops=ops, hammer=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_gc_never_deadlocks_and_tables_stay_consistent(g, ops, hammer, seed):
    spec = make_spec(g)
    ssd = SSD(spec)
    # every command (and the hammer: random and skewed overwrites of up to 6 device
    # capacities, to steady-state GC) completes at or after its issue
    for issued, done in _drive(ssd, ops, hammer, seed)[:-1]:
        assert done >= issued
    check_ftl_invariants(ssd)
    s = ssd.stats()
    assert s["flash_program_pages"] == s["host_write_pages"] + s["gc_copies"]
    assert s["erases"] == s["gc_count"]
    assert s["flash_read_pages"] <= s["host_read_pages"] + s["gc_copies"]
    end = ssd.idle_at()
    link = ssd.link.stats(max(end, 1))
    assert link["to_device"]["busy_cycles"] <= end and link["from_device"]["busy_cycles"] <= end


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=geometries, ops=ops, hammer=st.integers(0, 4), seed=st.integers(0, 2**32 - 1))
def test_blocks_without_lpns_change_no_result(g, ops, hammer, seed):
    """No block keeps its lpns, and no page its valid bit, until the first GC that copies
    out of one (p2l_lazy), which gives them back from l2p; a device that keeps them from
    the start gives the same completions, statistics and tables (but the tables' sizes)."""
    spec = make_spec(g)
    lazy, kept = SSD(spec), SSD(spec)
    kept.core.p2l_lazy = False
    assert _drive(lazy, ops, hammer, seed) == _drive(kept, ops, hammer, seed)
    assert lazy.core.stats() == kept.core.stats()
    stats = [{k: v for k, v in d.stats().items() if k != "table_bytes"} for d in (lazy, kept)]
    assert repr(stats[0]) == repr(stats[1])             # (nan where nothing was measured)
    a, b = lazy.core.snapshot(), kept.core.snapshot()
    for key in ("l2p", "p2l", "valid", "erases", "state", "next", "list_head"):
        assert np.array_equal(a[key], b[key]), key
    assert a["planes"] == b["planes"] and a["channel_free"] == b["channel_free"]
    assert b["p2l_unknown_blocks"] == 0
    if lazy.core.p2l_lazy:                              # no GC copied: no lpns kept at all
        assert lazy.stats()["gc_copies"] == 0
        assert lazy.table_bytes()["p2l_dense"] == lazy.table_bytes()["p2l_runs"] == 0
        assert lazy.table_bytes()["valid_bits"] == 0 < kept.table_bytes()["valid_bits"]
    else:                                               # rebuilt, every block
        assert a["p2l_unknown_blocks"] == 0
    check_ftl_invariants(lazy)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=geometries, ops=ops, hammer=st.integers(0, 4), seed=st.integers(0, 2**32 - 1),
       log_cap=st.sampled_from([1, 2, 3, 7, 256]))
def test_deferred_greedy_moves_change_no_result(g, ops, hammer, seed, log_cap):
    """Greedy victim lists whose moves are logged and applied at the plane's next GC or when
    its log is full (each block's last move, in order) pick the same victims, and end up the
    same lists, as lists moved at every page a block loses."""
    spec = make_spec({**g, "victim_policy": "greedy"})
    deferred, eager = SSD(spec), SSD(spec)
    deferred.core.set_move_log_cap(log_cap)
    eager.core.greedy_moves_deferred = False
    assert deferred.core.greedy_moves_deferred and not eager.core.greedy_moves_deferred
    assert _drive(deferred, ops, hammer, seed) == _drive(eager, ops, hammer, seed)
    assert deferred.core.stats() == eager.core.stats()
    a, b = deferred.core.snapshot(), eager.core.snapshot()
    for key in ("l2p", "p2l", "valid", "erases", "state", "next", "list_head"):
        assert np.array_equal(a[key], b[key]), key
    assert a["planes"] == b["planes"]
    check_ftl_invariants(deferred)


@settings(max_examples=40, deadline=None)
@given(g=geometries, seed=st.integers(0, 1000))
def test_full_device_rewritten_repeatedly_keeps_every_page(g, seed):
    # every lpn stays mapped to exactly one page through any amount of GC
    spec = make_spec(g)
    ssd = SSD(spec)
    U = ssd.logical_pages
    ssd.run_pages(np.arange(U), write=True)
    rng = np.random.default_rng(seed)
    ssd.run_pages(rng.integers(0, U, 4 * spec.physical_pages), write=True)
    snap = ssd.core.snapshot()
    assert np.count_nonzero(snap["l2p"]) == U
    check_ftl_invariants(ssd)


def test_idle_4k_latencies_of_the_zssd_preset():
    # Samsung Z-SSD SZ985 (and G10's SSD model): 12 us read, 16 us write for 4 KiB
    ssd = SSD(ssd_preset("zssd").with_user_capacity(1 << 30))
    per_us = 1200.0
    assert ssd.write(0, 1, 0) / per_us == pytest.approx(16.0, abs=0.01)
    t = 10**7
    assert (ssd.read(0, 1, t) - t) / per_us == pytest.approx(12.0, abs=0.01)


@pytest.mark.parametrize("preset", ["zssd", "mlc"])
def test_idle_read_is_overhead_plus_tR_plus_transfers(preset):
    spec = ssd_preset(preset).with_user_capacity(1 << 30)
    ssd = SSD(spec)
    ssd.write(0, 1, 0)
    t = 10**8
    link = spec.link.idle_transfer_cycles(spec.page_size_bytes, "from_device", "host")
    expected = (spec.cycles(spec.read_overhead_us) + spec.cycles(spec.t_read_us)
                + spec.channel_transfer_cycles + link)
    assert ssd.read(0, 1, t) - t == expected


def _rate_GBps(ssd, write, n_pages, start_page=0):
    spec = ssd.spec
    cmd = spec.max_command_bytes // spec.page_size_bytes
    t0 = ssd.idle_at()
    now = t0
    for lpn in range(start_page, start_page + n_pages, cmd):
        now = ssd.core.py_next_issue_time(now)
        (ssd.core.py_write if write else ssd.core.py_read)(lpn, cmd, now)
    return n_pages * spec.page_size_bytes / ((ssd.idle_at() - t0) / (spec.clock_GHz * 1e9)) / 1e9


def test_zssd_sequential_bandwidth_is_g10s_3_2_GBps():
    # G10 models the SSD as 3.2 GB/s read = write; here it emerges from the Gen3 x4 link
    ssd = SSD(ssd_preset("zssd").with_user_capacity(2 << 30))
    n = (1 << 30) // 4096
    w = _rate_GBps(ssd, True, n)
    r = _rate_GBps(ssd, False, n)
    assert w == pytest.approx(ssd.spec.link.effective_GBps("to_device", "host"), rel=0.01)
    assert r == pytest.approx(ssd.spec.link.effective_GBps("from_device", "host"), rel=0.01)
    assert w == pytest.approx(3.2, rel=0.03) and r == pytest.approx(3.2, rel=0.03)


def test_mlc_sustained_write_is_program_bound():
    # Once the write buffer is full, every plane programs back to back:
    # bandwidth = planes * page / tPROG (channels and link have room to spare).
    spec = ssd_preset("mlc").with_user_capacity(8 << 30)
    ssd = SSD(spec)
    buffer_pages = spec.write_buffer_bytes // spec.page_size_bytes
    _rate_GBps(ssd, True, 2 * buffer_pages)                      # fill the buffer
    sustained = _rate_GBps(ssd, True, 2 * buffer_pages, start_page=2 * buffer_pages)
    expected = spec.n_planes * spec.page_size_bytes / (spec.t_program_us * 1e-6) / 1e9
    assert sustained == pytest.approx(expected, rel=0.03)


@pytest.mark.parametrize("kw,field", [
    ({"overprovisioning": 0.0}, "ssd.overprovisioning"),
    ({"overprovisioning": -0.07}, "ssd.overprovisioning"),
    ({"n_channels": 0}, "ssd.n_channels"),
    ({"planes_per_die": 0}, "ssd.planes_per_die"),
    ({"gc_free_blocks_min": 1}, "ssd.gc_free_blocks_min"),
    ({"gc_free_blocks_min": 0}, "ssd.gc_free_blocks_min"),
    ({"blocks_per_plane": 3, "gc_free_blocks_min": 2}, "ssd.blocks_per_plane"),
    ({"pages_per_block": 0}, "ssd.pages_per_block"),
    ({"page_size_bytes": 1000}, "ssd.page_size_bytes"),
    ({"victim_policy": "oldest"}, "ssd.victim_policy"),
    ({"victim_policy": "d-choices:0"}, "ssd.victim_policy"),
    ({"gc_frontier": "mixed"}, "ssd.gc_frontier"),
    ({"t_read_us": -1.0}, "ssd.t_read_us"),
    ({"queue_depth": 0}, "ssd.queue_depth"),
    ({"max_command_bytes": 512}, "ssd.max_command_bytes"),
    ({"channel_MTps": 0.0}, "ssd.channel_MTps"),
])
def test_bad_parameters_name_the_parameter(kw, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        SSD(SSDSpec(**kw))


def test_page_larger_than_block_is_refused():
    with pytest.raises(ConfigError, match=r"pages_per_block.*at least one page"):
        SSDSpec(pages_per_block=0).check()


def test_bad_link_and_unknown_preset_parameters():
    from g10core.link.pcie import PcieSpec
    with pytest.raises(ConfigError, match=r"ssd\.link\.lanes"):
        SSDSpec(link=PcieSpec(lanes=5)).check()
    with pytest.raises(ConfigError, match="unknown ssd parameter"):
        ssd_preset("zssd", channels=8)
    with pytest.raises(ConfigError, match="unknown SSD preset"):
        ssd_preset("optane")


def test_out_of_range_requests_are_refused():
    ssd = SSD(ssd_preset("zssd").with_user_capacity(1 << 28))
    U = ssd.logical_pages
    with pytest.raises(ConfigError, match="exceeds"):
        ssd.write(U - 1, 2, 0)
    with pytest.raises(ConfigError, match="lpn"):
        ssd.read(-1, 1, 0)
    with pytest.raises(ConfigError, match=r"lpns\[1\]"):
        ssd.run_pages([0, U], write=True)


def test_capacity_scaling_and_op_accounting():
    spec = ssd_preset("zssd").with_user_capacity(10**10)
    assert spec.user_capacity_bytes >= 10**10
    t = (spec.blocks_per_plane - spec.gc_free_blocks_min - 1) * spec.pages_per_block
    assert spec.logical_pages_per_plane == int(t / 1.07)
    assert spec.alpha == pytest.approx(1.07, abs=1e-4)
    assert spec.op_raw > spec.overprovisioning      # the reserve is physical space too


@settings(max_examples=60, deadline=None)
@given(qd=st.integers(1, 6), seed=st.integers(0, 10**6),
       cmds=st.lists(st.tuples(st.booleans(), st.integers(0, 40_000)), min_size=1, max_size=120))
def test_queue_slots_follow_a_plain_multiset_of_completions(qd, seed, cmds):
    # The front end keeps in-flight completions in a sorted ring while they arrive in order and
    # in a heap otherwise; either way it must act as the multiset of the completions returned.
    spec = SSDSpec(n_channels=1, chips_per_channel=1, dies_per_chip=2, planes_per_die=1,
                   blocks_per_plane=12, pages_per_block=8, queue_depth=qd, write_buffer_bytes=8 * 4096)
    ssd = SSD(spec)
    U = ssd.logical_pages
    rng = np.random.default_rng(seed)
    in_flight, now = [], 0
    for is_write, gap in cmds:
        now += gap
        in_flight = [c for c in in_flight if c > now]
        expected = now if len(in_flight) < qd else min(in_flight)
        assert ssd.core.py_next_issue_time(now) == expected
        if len(in_flight) == qd:
            in_flight.remove(min(in_flight))
        lpn = int(rng.integers(0, U))
        done = ssd.write(lpn, 1, now) if is_write else ssd.read(lpn, 1, now)
        in_flight.append(done)
    assert ssd.idle_at() >= max(in_flight)


def test_table_bytes_follow_the_data_and_its_pattern():
    # Tables are allocated only for data: none before the first write.  A sequential
    # write is one p2l run per block (no per-page p2l); writes at random go per page.
    spec = ssd_preset("zssd").with_user_capacity(1 << 30)
    ssd = SSD(spec)
    before = ssd.table_bytes()
    assert before["l2p_leaves"] == before["p2l_dense"] == before["p2l_runs"] == 0
    assert before["total"] == sum(v for k, v in before.items() if k != "total")
    n = 64 * spec.n_planes * spec.pages_per_block // 8          # an eighth of a block per plane
    lazy, kept = SSD(spec), SSD(spec)
    kept.core.p2l_lazy = False
    for dev in (lazy, kept):
        t = 0
        for lpn in range(0, n, 32):
            t = dev.write(lpn, 32, t)
    seq = kept.table_bytes()
    assert seq["l2p_leaves"] >= (n // 1024) * 1024 * 4        # 4 B per mapped lpn, at least
    assert seq["p2l_runs"] > 0 and seq["p2l_dense"] == 0
    # no GC has copied a page: a lazy device keeps no lpns at all
    assert lazy.table_bytes()["p2l_runs"] == lazy.table_bytes()["p2l_dense"] == 0
    assert lazy.table_bytes()["l2p_leaves"] == seq["l2p_leaves"]
    # at random (fresh devices, half full: no GC), one lpn per page; but blocks filled at
    # random keep no lpns until a GC must copy out of one (p2l_lazy)
    lpns = np.random.default_rng(7).integers(0, spec.logical_pages, size=4 * spec.n_planes * spec.pages_per_block)
    lazy, kept = SSD(spec), SSD(spec)
    kept.core.p2l_lazy = False
    for dev in (lazy, kept):
        t = 0
        for lpn in lpns:
            t = dev.write(int(lpn), 1, t)
        assert dev.stats()["gc_copies"] == 0
    assert kept.table_bytes()["p2l_dense"] > 0
    assert lazy.table_bytes()["p2l_dense"] == 0 and lazy.core.p2l_lazy
    assert lazy.core.snapshot()["p2l_unknown_blocks"] > 0
    check_ftl_invariants(lazy)


def test_the_rebuild_gives_sequentially_written_blocks_their_runs_back():
    """A device written in order, then overwritten at random until GC copies: the lpns are
    rebuilt from l2p at the first copy, in runs where a block's lpns rise with its pages,
    and the tables come out as those of a device that kept its lpns all along."""
    spec = ssd_preset("zssd").with_user_capacity(1 << 30)
    devices = []
    for keep in (False, True):
        ssd = SSD(spec)
        ssd.core.p2l_lazy = not keep
        U = ssd.logical_pages
        t = 0
        for lpn in range(0, U, 32):
            t = ssd.write(lpn, 32, t)
        assert ssd.core.p2l_lazy == (not keep) and ssd.stats()["gc_copies"] == 0
        ssd.run_pages(np.random.default_rng(5).integers(0, U, U // 2), write=True, now=t)
        assert ssd.stats()["gc_copies"] > 0 and not ssd.core.p2l_lazy
        devices.append(ssd)
    rebuilt, kept = devices
    a, b = rebuilt.core.snapshot(), kept.core.snapshot()
    assert a["p2l_unknown_blocks"] == 0
    assert np.array_equal(a["p2l"], b["p2l"]) and np.array_equal(a["l2p"], b["l2p"])
    assert rebuilt.table_bytes() == kept.table_bytes()
    assert rebuilt.table_bytes()["p2l_runs"] > 0
    check_ftl_invariants(rebuilt)


def test_the_first_gc_copy_from_a_block_without_lpns_rebuilds_them():
    spec = make_spec({"n_channels": 1, "chips_per_channel": 1, "dies_per_chip": 1, "planes_per_die": 2,
                      "pages_per_block": 256, "extra_blocks": 12, "gc_free_blocks_min": 2,
                      "overprovisioning": 0.125, "victim_policy": "fifo", "gc_frontier": "separate",
                      "queue_depth": 4, "write_buffer_bytes": 65536, "seed": 3})
    ssd = SSD(spec)
    U = ssd.logical_pages
    rng = np.random.default_rng(11)
    ssd.run_pages(rng.permutation(U), write=True)          # filled at random: no lpns kept
    assert ssd.core.p2l_lazy and ssd.stats()["gc_copies"] == 0
    assert ssd.table_bytes()["p2l_dense"] == 0
    ssd.run_pages(rng.integers(0, U, 2 * spec.physical_pages), write=True)   # FIFO victims hold valid pages
    assert ssd.stats()["gc_copies"] > 0
    assert not ssd.core.p2l_lazy and ssd.table_bytes()["p2l_dense"] > 0
    assert ssd.core.snapshot()["p2l_unknown_blocks"] == 0
    check_ftl_invariants(ssd)
