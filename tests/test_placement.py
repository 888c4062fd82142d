"""Initial placement and steady-state iterations of the tensor-level simulator (issue 35)."""
from __future__ import annotations

import numpy as np
import pytest

from g10core.codes import TIER_GPU, TIER_HOST, TIER_NOT_PRESENT, TIER_SSD
from g10core.config import preset
from g10core.policies import HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD, tensorsim
from g10core.policies.g10_tensor import initial_placement, stream_hints
from g10core.policies.tensorsim import TensorLevelSimulator, TensorSimError

from test_tensorsim import BIG, BIG_PAGES, GiB, HZ, hints, make_trace, spec

E = BIG / GiB          # seconds to move one BIG tensor at 1 GiB/s (the SSD of spec())
H = BIG / (2 * GiB)    # ... at 2 GiB/s (its host path)


def run(trace, sp, h, tier):
    tier = None if tier is None else tensorsim.check_initial_tier(trace, np.array(tier, np.int8), sp)
    return TensorLevelSimulator(trace, sp, tensorsim.check_hints(trace, h, sp.mode), tier).run()


def one_weight_trace():
    # W (global, 256 MiB) read by k1 only; k0 and k2 touch a small activation
    return make_trace([BIG, 4096], [True, False],
                      [(100.0, [], [1]), (100.0, [0, 1], []), (100.0, [1], [])])


@pytest.mark.parametrize("tier, move_s", [(TIER_SSD, E), (TIER_HOST, H)])
def test_a_global_that_starts_off_the_gpu_is_fetched_on_demand_and_moved_back(tier, move_s):
    # k0 0-0.1; k1 waits for W's fetch (0.1 .. 0.1 + m), runs 0.1 s; k2 0.1 s; then W goes back
    res = run(one_weight_trace(), spec(quirks=False), hints(), [tier, TIER_NOT_PRESENT])
    assert not res["failed"]
    assert res["time_s"] == pytest.approx(0.3 + 2 * move_s, abs=4 / HZ)
    assert res["n_on_demand_fetches"] == 1
    assert res["restore_bytes"] == BIG and res["restore_transfers"] == 1
    names = ("ssd_to_gpu", "gpu_to_ssd") if tier == TIER_SSD else ("host_to_gpu", "gpu_to_host")
    assert {k: v for k, v in res["traffic_bytes"].items() if v} == {n: BIG for n in names}
    key = "ssd" if tier == TIER_SSD else "host"
    assert res["initial_tier_bytes"][key] == BIG and res["initial_tier_bytes"]["gpu"] == 0


def test_a_prefetch_hides_the_fetch_and_an_eviction_after_use_leaves_nothing_to_restore():
    # to_gpu at k0 (0 .. E, under k0's 0.3 s), evict at k2 (under k2's 0.3 s)
    tr = make_trace([BIG, 4096], [True, False],
                    [(300.0, [], [1]), (100.0, [0, 1], []), (300.0, [1], [])])
    res = run(tr, spec(quirks=False), hints((0, 0, HINT_TO_GPU), (2, 0, HINT_TO_SSD)), [TIER_SSD, TIER_NOT_PRESENT])
    assert res["time_s"] == pytest.approx(0.7, abs=4 / HZ)      # both moves hide under k0 and k2
    assert res["restore_bytes"] == 0 and res["n_on_demand_fetches"] == 0


def test_a_resident_global_evicted_in_the_iteration_is_fetched_back_at_its_end():
    # W starts on the GPU, is evicted at k2 (0.2 .. 0.2 + E) and never prefetched: the restore
    # fetches it after the eviction (.. 0.2 + 2E); without a placement the iteration ends with W out
    res = run(one_weight_trace(), spec(quirks=False), hints((2, 0, HINT_TO_SSD)), [TIER_GPU, TIER_NOT_PRESENT])
    assert res["time_s"] == pytest.approx(0.2 + 2 * E, abs=4 / HZ)
    assert res["restore_bytes"] == BIG
    none = run(one_weight_trace(), spec(quirks=False), hints((2, 0, HINT_TO_SSD)), None)
    assert none["time_s"] == pytest.approx(0.2 + E, abs=4 / HZ) and none["restore_bytes"] == 0


def test_a_global_that_starts_not_present_is_allocated_without_a_transfer():
    res = run(one_weight_trace(), spec(quirks=False), hints(), [TIER_NOT_PRESENT, TIER_NOT_PRESENT])
    assert res["time_s"] == pytest.approx(0.3, abs=4 / HZ)
    assert sum(res["traffic_bytes"].values()) == 0


def test_the_globals_placed_on_the_gpu_must_fit():
    tr = make_trace([BIG, BIG], [True, True], [(1.0, [0], []), (1.0, [1], [])])
    sp = spec(quirks=False, capacity_pages=BIG_PAGES + 8)
    assert run(tr, sp, hints(), [TIER_GPU, TIER_GPU])["failure_reason"].startswith(
        "cannot fit: the global tensors placed on the GPU at the start need")
    ok = run(tr, sp, hints((1, 0, HINT_TO_SSD)), [TIER_GPU, TIER_SSD])
    assert not ok["failed"]


def test_bad_placements_are_refused():
    tr = one_weight_trace()
    with pytest.raises(TensorSimError, match="2 integer tier codes"):
        tensorsim.check_initial_tier(tr, np.zeros(3, np.int8), spec())
    with pytest.raises(TensorSimError, match=r"initial_tier\[0\] = 7"):
        tensorsim.check_initial_tier(tr, np.array([7, 0], np.int8), spec())
    with pytest.raises(TensorSimError, match="FlashNeuron"):
        tensorsim.check_initial_tier(tr, np.array([TIER_SSD, 0], np.int8), spec(mode="flashneuron", backward=1))
    with pytest.raises(TensorSimError, match="no host path"):
        tensorsim.check_initial_tier(tr, np.array([TIER_HOST, 0], np.int8), spec(host_GiBps=0.0))
    # a non-global tensor's entry is ignored: it is born in the iteration
    assert tensorsim.check_initial_tier(tr, np.array([TIER_GPU, TIER_SSD], np.int8), spec()).tolist() == \
        [TIER_GPU, TIER_NOT_PRESENT]


def test_the_placement_rule_follows_the_schedules_steady_state():
    cfg = preset("default")
    tr = make_trace([BIG, BIG, BIG, 4096], [True, True, True, False],
                    [(1.0, [0], [3]), (1.0, [1, 3], []), (1.0, [2], [])])
    # W0: evicted last (starts on the SSD); W1: evicted then prefetched (GPU); W2: to host
    h = hints((0, 1, HINT_TO_SSD), (1, 1, HINT_TO_GPU), (1, 0, HINT_TO_SSD), (2, 2, HINT_TO_HOST))
    tier, streamed = initial_placement(tr, h, cfg, "host")
    assert tier.tolist() == [TIER_SSD, TIER_GPU, TIER_HOST, TIER_NOT_PRESENT] and not streamed.any()
    tier, _ = initial_placement(tr, h, cfg, "gds")          # no host tier under g10-gds
    assert tier[2] == TIER_SSD
    h2 = hints((0, 0, HINT_FREE))
    assert initial_placement(tr, h2, cfg, "gds")[0][0] == TIER_NOT_PRESENT


def test_globals_that_do_not_fit_are_streamed_latest_first_use_to_host_first():
    # 3 x 256 MiB globals on a 0.5 GiB GPU with 0.25 GiB of host memory
    cfg = preset("default").with_overrides({"gpu": {"memory_GiB": 0.5}, "host": {"memory_GiB": 0.25}})
    tr = make_trace([BIG, BIG, BIG, 4096], [True, True, True, False],
                    [(100.0, [0], [3]), (100.0, [1, 3], []), (100.0, [2], []), (100.0, [0], [])])
    tier, streamed = initial_placement(tr, hints(), cfg, "host")
    # every global streams; the host holds the one first used latest (W2)
    assert tier.tolist() == [TIER_SSD, TIER_SSD, TIER_HOST, TIER_NOT_PRESENT]
    assert streamed.tolist() == [True, True, True, False]
    sh = stream_hints(tr, tier, streamed, cfg)
    rows = sorted(zip(sh["tensor"].tolist(), sh["kernel"].tolist(), sh["action"].tolist()))
    # W0 used at k0 and k3: k1..k2 (0.2 s) hold its 0.084 s SSD fetch: evict after k0, prefetch at k2
    assert (0, 1, HINT_TO_SSD) in rows and (0, 2, HINT_TO_GPU) in rows and (0, 4, HINT_TO_SSD) in rows
    assert (2, 3, HINT_TO_HOST) in rows                      # W2 back to host after its use
    tier, _ = initial_placement(tr, hints(), cfg, "gds")
    assert tier.tolist() == [TIER_SSD] * 3 + [TIER_NOT_PRESENT]


def test_g10_policies_run_state_larger_than_the_gpu_and_artifact_keeps_the_published_start():
    from g10core.policies import get as get_policy
    cfg = preset("default").with_overrides({"gpu": {"memory_GiB": 0.75}})
    tr = make_trace([BIG, BIG, BIG, 4096], [True, True, True, False],
                    [(100.0, [0], [3]), (100.0, [1, 3], []), (100.0, [2], []), (100.0, [0], [])])
    for name in ("g10-gds", "g10-host"):
        res = get_policy(name)(cfg).simulate(tr)
        assert not res["failed"], res["failure_reason"]
        assert res["schedule"]["initial_placement"]["bytes"]["gpu"] == 0
    art = get_policy("g10-host")(preset("g10-artifact")).simulate(tr)
    assert "initial_placement" not in art["schedule"] and art["restore_bytes"] == 0
