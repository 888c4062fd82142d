"""ZeRO partitioned across data-parallel ranks (issue 46): one rank's shards and collectives against
the closed form and a hand count, the CPU optimizer's share, the order of shard and collective, the
wait it names, and the machine's ranks moving the one-GPU bytes between them."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from g10core.codes import ROLE_GRADIENT, ROLE_OPTIMIZER_STATE, ROLE_PARAMETER
from g10core.config import preset
from g10core.errors import TensorSimError
from g10core.policies import get, tensorsim
from g10core.policies._zero import OptimizerPlan
from g10core.policies.zero_offload import closed_form
from g10core.workload.trace import read_trace
from g10core.workload.tracestore import resolve_trace

sys.path.insert(0, str(Path(__file__).parent))
from test_zero import CASES, N, PATHS, mixed_trace  # noqa: E402

PAGE = 4096


def config(device="nvme", ranks=1, busbw=100.0, **scheduler):
    return preset("default").with_overrides({"scheduler": {"zero_infinity_device": device, "zero_ranks": ranks,
                                                           "zero_collective_busbw_GBps": busbw, **scheduler}})


def shard(nbytes, n):
    """One rank's shard of a tensor: ceil(pages / n) whole pages."""
    return -(-(-(-nbytes // PAGE)) // n) * PAGE


def gathered(nbytes, n):
    """What one GPU sends in a ring all-gather (or reduce-scatter) of the tensor: (n - 1) / n of it."""
    return -(-(-(-nbytes // PAGE) * PAGE) * (n - 1) // n)


@pytest.fixture(scope="module")
def gpt2():
    return read_trace(resolve_trace("gpt2-small-s1024-b5"))


@pytest.mark.parametrize("ranks", (2, 3, 8))
@pytest.mark.parametrize("policy,device", CASES)
def test_rank_traffic_and_collectives_are_the_closed_form(ranks, policy, device):
    tr = mixed_trace()
    cfg = config(device, ranks)
    res = get(policy)(cfg).simulate(tr)
    assert not res["failed"], res["failure_reason"]
    cf = closed_form(tr, cfg, policy)
    assert {p: res["traffic_bytes"][p] for p in PATHS} == cf["traffic_bytes"]
    assert res["collective_bytes"] == cf["collective_bytes"] > 0
    assert res["zero_ranks"] == ranks


@pytest.mark.parametrize("policy,device", CASES)
def test_captured_trace_rank_is_the_closed_form(gpt2, policy, device):
    cfg = config(device, 4)
    res = get(policy)(cfg).simulate(gpt2)
    cf = closed_form(gpt2, cfg, policy)
    assert {p: res["traffic_bytes"][p] for p in PATHS} == cf["traffic_bytes"]
    assert res["collective_bytes"] == cf["collective_bytes"]


def test_partition_sizes_by_hand():
    """Four ranks of the hand-built three-layer trace (bf16 parameters of N_i elements, fp32 master and
    moments): every path moves each tensor's quarter, rounded up to whole pages."""
    n = 4
    res = get("zero-infinity")(config("nvme", n)).simulate(mixed_trace())
    params = [shard(2 * k, n) for k in N]
    grads = params                                    # bf16 gradients, as the parameters
    states = [3 * shard(4 * k, n) for k in N]         # master weights and two moments
    fetches = (2, 1, 1)                               # P0 is fetched again for its backward (test_zero)
    up = sum(f * p for f, p in zip(fetches, params))
    assert res["traffic_bytes"]["gpu_to_host"] == sum(grads)
    assert res["traffic_bytes"]["host_to_gpu"] == up
    assert res["traffic_bytes"]["ssd_to_host"] == up + sum(states)
    assert res["traffic_bytes"]["host_to_ssd"] == sum(states) + sum(params)
    # an all-gather per fetch and a reduce-scatter per gradient, 3/4 of each tensor per GPU
    assert res["collective_bytes"] == sum(f * gathered(2 * k, n) for f, k in zip(fetches, N)) + \
        sum(gathered(2 * k, n) for k in N)
    # the rank's partition is 1/n of the optimizer state ZeRO's paper counts (K = 12 bytes per
    # parameter) and of the fp16 parameters and gradients (2 + 2), within page rounding
    total = sum(params) + sum(grads) + sum(states)
    assert total == pytest.approx((2 + 2 + 12) * sum(N) / n, rel=1e-3)


def test_one_rank_is_today(gpt2):
    base = get("zero-infinity")(config("nvme")).simulate(gpt2)
    one = get("zero-infinity")(config("nvme", 1, busbw=0.0)).simulate(gpt2)
    assert one["time_s"] == base["time_s"] and one["traffic_bytes"] == base["traffic_bytes"]
    assert "collective_bytes" not in one


def test_cpu_optimizer_does_one_rank_share():
    tr = mixed_trace()
    for n in (1, 2, 8):
        cf = closed_form(tr, config("nvme", n), "zero-infinity")
        assert cf["cpu_adam_s"] == pytest.approx(closed_form(tr, config("nvme", 1), "zero-infinity")["cpu_adam_s"] / n)
    busy = {n: get("zero-offload")(config("nvme", n)).simulate(tr)["cpu_busy_s"] for n in (1, 4)}
    assert busy[4] < busy[1] / 2


def test_all_gather_follows_the_shard_and_reduce_scatter_precedes_it(gpt2):
    res = get("zero-infinity")(config("nvme", 4)).simulate(gpt2)
    spans = tensorsim.transfer_spans(res["transfer_log"])
    role = gpt2.tensor_role
    into = {tensorsim.HOST_TO_GPU, tensorsim.SSD_TO_GPU}
    out = {tensorsim.GPU_TO_HOST, tensorsim.GPU_TO_SSD}
    checked = 0
    for t in np.unique(spans["tensor"][spans["queue"] == tensorsim.COLLECTIVE]).tolist():
        mine = spans[spans["tensor"] == t]
        mine = mine[np.argsort(mine["start"], kind="stable")]
        for i, row in enumerate(mine):
            if row["queue"] != tensorsim.COLLECTIVE:
                continue
            if role[t] == ROLE_GRADIENT:      # the reduce-scatter, then the shard leaves
                nxt = mine[i + 1]
                assert nxt["queue"] in out and nxt["start"] >= row["end"]
            else:                             # the shard arrived, then the all-gather
                prev = mine[i - 1]
                assert role[t] == ROLE_PARAMETER and prev["queue"] in into and row["start"] >= prev["end"]
            checked += 1
    assert checked > 100
    # the optimizer state never reaches the GPU: no collective of it
    assert not np.any(role[spans["tensor"][spans["queue"] == tensorsim.COLLECTIVE]] == ROLE_OPTIMIZER_STATE)


def test_a_slow_collective_is_the_wait_it_names(tmp_path):
    from g10core.simulator import Simulator, resolve_config

    sets = ["scheduler.zero_infinity_device=cpu", "scheduler.zero_ranks=8", "scheduler.zero_collective_busbw_GBps=0.1"]
    r = Simulator(resolve_config("default", None, sets)).run(mixed_trace(), "zero-infinity")
    waits = r.counters["waits"]["gpu_wait_by_resource_s"]
    assert max(waits, key=waits.get) == "NVLink collective"
    # at 0.1 GB/s the collectives take their bytes / 0.1 GB/s, most of which the GPU waits for
    assert waits["NVLink collective"] > 0.5 * r.counters["collective_bytes"] / 0.1e9
    from g10core.experiments.report import format_run_summary
    from g10core.results import waits_text
    assert "for the NVLink collective" in waits_text(r.counters["waits"])
    text = format_run_summary(r)
    assert "ZeRO rank        one of 8" in text and "GiB between the GPUs" in text
    r.write_timeline(tmp_path / "t.json")
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert any(e.get("args", {}).get("name") == "NVLink collectives" for e in events)
    assert sum(e.get("dur", 0) for e in events if e.get("name") == "all-gather / reduce-scatter") > 0


def test_partition_refusals():
    tr = mixed_trace()
    hints = np.zeros(0, tensorsim.HINT_DTYPE)
    with pytest.raises(TensorSimError, match="needs the CPU tier"):
        tensorsim.simulate(tr, config(), hints, mode="gds", partition=tensorsim.ZeroPartition(2, 1e9))
    on_cpu = OptimizerPlan(tr).on_cpu
    for bad, match in ((tensorsim.ZeroPartition(0, 1e9), "ranks"), (tensorsim.ZeroPartition(2, 0.0), "collective")):
        with pytest.raises(TensorSimError, match=match):
            tensorsim.simulate(tr, config(), hints, mode="gds", cpu_kernels=on_cpu, partition=bad)


def test_machine_ranks_move_the_one_gpu_bytes_between_them(tmp_path):
    """ZeRO-Infinity on 1 and 4 GPUs of the DGX A100: the 4 ranks' SSD bytes add up to the one GPU's
    (each moves its quarter, within page rounding), they all-gather and reduce-scatter instead of the
    DDP all-reduce, and each has a quarter of the host memory."""
    from g10core.machine import load
    from g10core.machine.training import data_parallel

    m = load("dgx-a100")
    tr = mixed_trace()
    sets = ["gpu.memory_GiB=1"]
    one = data_parallel(tr, "zero-infinity", m, 1, sets=sets)
    four = data_parallel(tr, "zero-infinity", m, 4, sets=sets)
    assert not one.failed and not four.failed, (one.failure_reason, four.failure_reason)
    flash = [sum(d["bytes"] for h, d in r.hops.items() if h.endswith("flash")) for r in (one, four)]
    assert flash[0] > 0 and flash[1] == pytest.approx(flash[0], rel=0.01)
    assert four.allreduce_bytes == 0 and all(g["allreduce_buckets"] == 0 for g in four.per_gpu)
    cf = closed_form(tr, config("nvme", 4), "zero-infinity")
    assert all(g["collective_bytes"] == cf["collective_bytes"] for g in four.per_gpu)
    assert any("ZeRO partitions across the 4 ranks" in n for n in four.notes)
    d = four.to_dict()
    assert json.loads(json.dumps(d))["per_gpu"][0]["collective_bytes"] == cf["collective_bytes"]
    assert "all-gathers and reduce-scatters" in four.summary()


from hypothesis import given, settings, strategies as hst  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(ranks=hst.integers(1, 64), busbw=hst.floats(0.1, 1000.0), case=hst.sampled_from(CASES))
def test_any_rank_count_is_its_closed_form_and_never_moves_more_than_one_gpu(ranks, busbw, case):
    """For any n: the rank's paths are the closed form's, n ranks together move at least the one-GPU
    bytes and at most a page per tensor per rank more (the shards' rounding), and the CPU's share
    is 1/n."""
    policy, device = case
    tr = mixed_trace()
    res = get(policy)(config(device, ranks, busbw)).simulate(tr)
    one = get(policy)(config(device, 1)).simulate(tr)
    cf = closed_form(tr, config(device, ranks, busbw), policy)
    assert {p: res["traffic_bytes"][p] for p in PATHS} == cf["traffic_bytes"]
    assert res.get("collective_bytes", 0) == cf["collective_bytes"]
    # the PCIe paths without the (unpartitioned) activation checkpoints
    ckpt = cf["checkpoint_offloaded_bytes"]
    for p in PATHS:
        extra = ckpt if p in ("gpu_to_host", "host_to_gpu") else 0
        whole, part = one["traffic_bytes"][p] - extra, res["traffic_bytes"][p] - extra
        assert whole <= ranks * part <= whole + ranks * PAGE * tr.n_tensors * 4
    assert res["time_s"] > 0


def test_the_ranks_share_the_totals_the_user_sets():
    """``--set`` of a machine total (host memory, CPU cores, DRAM bandwidth) is divided among the
    ranks like the machine's own; a collective bus bandwidth the user sets is kept."""
    from g10core.machine import load
    from g10core.machine.training import _shared_sets

    m = load("dgx-a100")
    own = _shared_sets(m, 4, "default", True)
    assert f"host.memory_GiB={m.host_memory_GiB / 4:g}" in own and "scheduler.zero_collective_busbw_GBps=200" in own
    user = _shared_sets(m, 4, "default", True, ["host.memory_GiB=64", "cpu.cores=32",
                                                "cpu.memory_bandwidth_GBps=100",
                                                "scheduler.zero_collective_busbw_GBps=50"])
    for want in ("host.memory_GiB=16", "cpu.cores=8", "cpu.memory_bandwidth_GBps=25",
                 "scheduler.zero_collective_busbw_GBps=50", "scheduler.zero_ranks=4"):
        assert want in user
    assert _shared_sets(m, 1, "default", True, ["host.memory_GiB=64"]) == []
    # end to end: a slow collective set by the user slows every rank
    from g10core.machine.training import data_parallel

    tr = mixed_trace()
    fast = data_parallel(tr, "zero-infinity", m, 4, sets=["gpu.memory_GiB=1"])
    slow = data_parallel(tr, "zero-infinity", m, 4, sets=["gpu.memory_GiB=1",
                                                          "scheduler.zero_collective_busbw_GBps=0.1"])
    assert slow.iteration_s > fast.iteration_s
