"""FlashNeuron, G10-GDS and G10-Host: the offload plan, tiny traces, and the published numbers."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from g10core.config import preset
from g10core.policies import HINT_TO_SSD, get, names
from g10core.policies.flashneuron import flashneuron_schedule, loss_kernel

from test_tensorsim import BIG, BIG_PAGES, GiB, HZ, hints, make_trace, run, spec

# Published seconds per iteration (G10 artifact's expected results, MICRO 2023;
# reference/g10_artifact_model.md section 7).  None: FlashNeuron cannot run it.
PUBLISHED = {
    ("bert_base", 256): {"flashneuron": 10.216, "g10-gds": 9.043, "g10-host": 7.989},
    ("vit", 1280): {"flashneuron": None, "g10-gds": 6.576, "g10-host": 6.234},
    ("inceptionv3", 1536): {"flashneuron": None, "g10-gds": 80.341, "g10-host": 65.370},
}
TOLERANCE = 0.01   # the issue asks for 3 %, with 1 % as the goal; all are within 0.01 %


def fn_trace():
    """k0 writes A (256 MiB); k1 reads it; k3 is the loss; k4 reads A again (backward)."""
    return make_trace([BIG, 4096, 4096, 4096], [False] * 4,
                      [(100.0, [], [0]), (100.0, [0], [1]), (100.0, [1], [2]), (100.0, [2], [3]),
                       (100.0, [0, 3], [])],
                      kernel_names=["load", "fwd1", "fwd2", "makeLoss", "bwd1"])


def fn_config(gpu_bytes):
    return preset("g10-artifact").with_overrides({"gpu": {"memory_GiB": gpu_bytes / GiB}})


# ---- the plan -----------------------------------------------------------------

def test_policies_are_registered_as_tensor_level():
    for name in ("flashneuron", "g10-gds", "g10-host"):
        assert name in names()
        assert get(name).level == "tensor"


def test_loss_kernel_is_the_forward_backward_boundary():
    assert loss_kernel(fn_trace()) == 3
    tr = make_trace([4096], [False], [(1.0, [], [0]), (1.0, [0], [])])
    assert loss_kernel(tr) == -1


def test_plan_offloads_the_first_candidates_at_their_last_forward_gap():
    # GPU line = memory - weights (0) - largest working set (A + one page) = A + 1 page:
    # the candidates A and C (C is read by the loss) hold A + 1 page >= line, so A goes.
    plan = flashneuron_schedule(fn_trace(), fn_config(2 * BIG + 8192))
    assert not plan["failed"]
    assert plan["gpu_line_bytes"] == BIG + 4096
    assert plan["candidate_bytes"] == BIG + 4096
    assert plan["hints"].tolist() == [(2, 0, HINT_TO_SSD)]   # A idle from k2 until k4
    assert plan["remaining_bytes"] == 4096


def test_plan_fails_when_even_offloading_everything_leaves_too_much():
    # line = 2 KiB; after A only C (4 KiB, never idle) remains, which is more than the line
    plan = flashneuron_schedule(fn_trace(), fn_config(BIG + 4096 + 2048))
    assert plan["failed"] and "FlashNeuron cannot fit" in plan["failure_reason"]
    res = get("flashneuron")(fn_config(BIG + 4096 + 2048)).simulate(fn_trace())
    assert res["failed"] and res["time_s"] == math.inf and res["policy"] == "flashneuron"


def test_plan_fails_when_weights_and_working_set_fill_the_gpu():
    plan = flashneuron_schedule(fn_trace(), fn_config(BIG))
    assert plan["failed"] and "leave no GPU memory" in plan["failure_reason"]


# ---- the simulation ------------------------------------------------------------

def test_flashneuron_run_closed_form():
    # k2 @0.2 s offloads A (0.25 s at 1 GiB/s, done 0.45); the loss kernel (@0.3) waits for it and
    # runs 0.45-0.55; A comes back 0.55-0.8 and k4 waits for it: 0.9 s in all.
    cfg = fn_config(2 * BIG + 8192).with_overrides({"ssd": {"bandwidth_GBps": 1.0}})
    res = get("flashneuron")(cfg).simulate(fn_trace())
    assert not res["failed"]
    e = BIG / GiB
    assert res["time_s"] == pytest.approx(0.2 + e + 0.1 + e + 0.1, abs=3 / HZ)   # = 0.9 s
    assert res["traffic_bytes"]["gpu_to_ssd"] == BIG and res["traffic_bytes"]["ssd_to_gpu"] == BIG
    assert res["breakdown_s"]["stall"] == pytest.approx(0.4, abs=3 / HZ)
    assert res["transfer_busy_s"] == pytest.approx(2 * e, abs=3 / HZ)
    # the GPU holds exactly A plus one page beside it: too tight to prefetch ahead, so k4 fetches
    assert res["n_on_demand_fetches"] == 1
    np.testing.assert_allclose(res["kernel_stall_normalized"][[3, 4]], [1.5, 2.5], atol=1e-6)


def test_flashneuron_prefetches_ahead_when_there_is_room():
    tr = fn_trace()
    res = run(tr, spec("flashneuron", capacity_pages=10 * BIG_PAGES, backward=3), hints((2, 0, HINT_TO_SSD)))
    assert res["n_on_demand_fetches"] == 0
    assert res["time_s"] == pytest.approx(0.9, abs=3 / HZ)      # the fetch starts after k3 either way


def test_flashneuron_workspaces_share_one_reserved_region():
    # two write-only tensors (20 and 10 pages) and a 30-page activation on a 55-page GPU:
    # separate workspaces would need 60 pages; one shared region of 20 leaves room
    tr = make_trace([20 * 4096, 10 * 4096, 30 * 4096], [False] * 3,
                    [(1.0, [], [0, 2]), (1.0, [], [1]), (1.0, [2], [])])
    res = run(tr, spec("flashneuron", capacity_pages=55, backward=3), hints())
    assert not res["failed"]
    assert res["peak_gpu_bytes"] == 50 * 4096


def test_a_trace_that_fits_nowhere_is_cannot_fit_for_every_tensor_policy(small_trace):
    cfg = preset("g10-artifact").with_overrides({"gpu": {"memory_GiB": 1e-4}})
    for name in ("flashneuron", "g10-gds", "g10-host"):
        res = get(name)(cfg).simulate(small_trace)
        assert res["failed"] and res["time_s"] == math.inf, name
        assert "cannot fit" in res["failure_reason"], name


# ---- the published numbers -----------------------------------------------------

def _expected_final(artifact_dir, folder, policy):
    text = (artifact_dir / "expected" / folder / policy / "sim_result.final").read_text()
    return {k: float(v) for k, v in re.findall(r"(\w+) = (\S+)", text)}


@pytest.mark.parametrize("model, batch", list(PUBLISHED))
def test_flashneuron_reproduces_the_published_outcome(load_shipped, model, batch):
    tr = load_shipped(f"{model}-b{batch}")
    res = get("flashneuron")(preset("g10-artifact")).simulate(tr)
    want = PUBLISHED[(model, batch)]["flashneuron"]
    if want is None:
        assert res["failed"] and res["time_s"] == math.inf
        assert "cannot fit" in res["failure_reason"]
    else:
        assert not res["failed"], res["failure_reason"]
        assert res["time_s"] == pytest.approx(want, rel=TOLERANCE)


def test_flashneuron_bert256_moves_the_published_bytes(load_shipped, artifact_dir):
    exp = _expected_final(artifact_dir, "BERT_Base-256", "flashneuron")
    res = get("flashneuron")(preset("g10-artifact")).simulate(load_shipped("bert_base-b256"))
    assert res["traffic_bytes"]["gpu_to_ssd"] == exp["total_gpu2ssd_byte"]
    assert res["traffic_bytes"]["ssd_to_gpu"] == exp["total_ssd2gpu_byte"]
    # the ideal time (compute + overlap) and the time some transfer is in flight (overlap + stall)
    ideal_ms = exp["total_time_breakdown_executionOnly"] + exp["total_time_breakdown_overlap"]
    busy_ms = exp["total_time_breakdown_overlap"] + exp["total_time_breakdown_stall"]
    assert res["ideal_time_s"] == pytest.approx(ideal_ms / 1e3, rel=1e-5)
    assert res["transfer_busy_s"] == pytest.approx(busy_ms / 1e3, rel=1e-5)


@pytest.mark.parametrize("policy", ["g10-gds", "g10-host"])
@pytest.mark.parametrize("model, batch", list(PUBLISHED))
def test_g10_tensor_level_reproduces_the_published_time(load_shipped, model, batch, policy):
    res = get(policy)(preset("g10-artifact")).simulate(load_shipped(f"{model}-b{batch}"))
    assert not res["failed"], res["failure_reason"]
    assert res["time_s"] == pytest.approx(PUBLISHED[(model, batch)][policy], rel=TOLERANCE)


def test_flashneuron_bert256_per_kernel_stalls_match_the_published_run(load_shipped, artifact_dir):
    import gzip
    path = artifact_dir / "expected" / "BERT_Base-256" / "flashneuron" / "sim_result.kernelStall.gz"
    with gzip.open(path, "rt") as fh:
        published = np.array([float(x) for x in fh.read().split()])
    res = get("flashneuron")(preset("g10-artifact")).simulate(load_shipped("bert_base-b256"))
    ours = res["kernel_stall_normalized"]
    ours = np.where(ours < 1e-4, 0.0, ours)              # the artifact prints small stalls as 0
    same = np.isclose(ours, published, rtol=1e-3, atol=1e-3)
    assert published.size == ours.size == 1369
    # kernel for kernel, once the offloads issued at one kernel queue in std::sort's order
    assert int((~same).sum()) == 0
    exp = _expected_final(artifact_dir, "BERT_Base-256", "flashneuron")
    b = res["breakdown_s"]
    assert res["time_s"] == pytest.approx(exp["total_exe_time"] / 1e3, rel=1e-5)
    assert b["stall"] == pytest.approx(exp["total_time_breakdown_stall"] / 1e3, rel=1e-5)
    assert b["overlap"] == pytest.approx(exp["total_time_breakdown_overlap"] / 1e3, rel=1e-5)


@pytest.mark.parametrize("policy, folder", [("g10-gds", "g10-gds"), ("g10-host", "g10-host")])
def test_g10_tensor_level_bert256_matches_the_published_run(load_shipped, artifact_dir, policy, folder):
    exp = _expected_final(artifact_dir, "BERT_Base-256", folder)
    res = get(policy)(preset("g10-artifact")).simulate(load_shipped("bert_base-b256"))
    tb = res["traffic_bytes"]
    # the published counters lump host traffic in with SSD traffic
    assert tb["ssd_to_gpu"] + tb["host_to_gpu"] == exp["total_ssd2gpu_byte"]
    assert tb["gpu_to_ssd"] + tb["gpu_to_host"] == exp["total_gpu2ssd_byte"]
    if policy == "g10-gds":
        assert tb["host_to_gpu"] == tb["gpu_to_host"] == 0
    b = res["breakdown_s"]
    assert res["time_s"] == pytest.approx(exp["total_exe_time"] / 1e3, rel=1e-4)
    assert b["stall"] == pytest.approx(exp["total_time_breakdown_stall"] / 1e3, rel=1e-3)
    assert b["overlap"] == pytest.approx(exp["total_time_breakdown_overlap"] / 1e3, rel=1e-3)
    assert b["compute"] == pytest.approx(exp["total_time_breakdown_executionOnly"] / 1e3, rel=1e-3)


@pytest.mark.parametrize("model, batch", [("resnet152", 1280), ("senet154", 1024)])
def test_flashneuron_per_kernel_slowdowns_match_the_published_cdf(load_shipped, model, batch):
    """Fig. 12's FlashNeuron CDFs: every published quantile of the per-kernel slowdown (the
    artifact's example_results), which needs the published simulator's offload order
    (std::sort) and tensor order (its Tensor objects' addresses) kernel for kernel."""
    from g10core.experiments.published import published_fig12

    quantiles, published, n = published_fig12()[(model, batch, "flashneuron")]
    res = get("flashneuron")(preset("g10-artifact")).simulate(load_shipped(f"{model}-b{batch}"))
    stall = np.asarray(res["kernel_stall_normalized"])
    ours = np.sort(np.where(stall < 1e-4, 0.0, stall) + 1.0)   # the artifact prints small stalls as 0
    assert ours.size == n
    for q, want in zip(quantiles, published):
        assert ours[round(q * (n - 1))] == pytest.approx(want, rel=1e-4), q
