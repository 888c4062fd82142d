"""Activation checkpointing of ZeRO-Offload and ZeRO-Infinity (issue 35): the layer segments and
their checkpoints, the recompute closed form, the checkpoints' traffic to host memory and back,
and the traces whose activations did not fit without it."""
from __future__ import annotations

import numpy as np
import pytest

from g10core.config import preset
from g10core.policies import get
from g10core.policies._zero import CheckpointPlan, OptimizerPlan, checkpoint_mode, closed_form
from g10core.workload import recompute
from g10core.workload.trace import read_trace
from g10core.workload.tracestore import resolve_trace

from test_zero import PATHS

PAGE = 4096


def config(mode, device="nvme"):
    return preset("default").with_overrides({"scheduler": {"zero_activation_checkpointing": mode,
                                                           "zero_infinity_device": device}})


def run(trace, policy, mode, device="nvme"):
    res = get(policy)(config(mode, device)).simulate(trace)
    assert not res["failed"], res["failure_reason"]
    return res


def paged(trace, ts):
    size = trace.tensor_size_bytes.astype(np.int64)
    return int(sum((int(size[t]) + PAGE - 1) // PAGE * PAGE for t in ts))


@pytest.fixture(scope="module")
def gpt2():
    return read_trace(resolve_trace("gpt2-small-s1024-b5"))


@pytest.fixture(scope="module")
def plan(gpt2):
    return CheckpointPlan(gpt2, OptimizerPlan(gpt2).on_cpu, "cpu")


def test_auto_is_recompute_for_offload_and_cpu_for_infinity():
    assert preset("default").scheduler.zero_activation_checkpointing == "auto"
    assert checkpoint_mode(preset("default"), "zero-offload") == "recompute"
    assert checkpoint_mode(preset("default"), "zero-infinity") == "cpu"
    assert checkpoint_mode(config("off"), "zero-infinity") == "off"


def test_each_block_checkpoints_its_input_the_residual_stream(gpt2, plan):
    seg = plan.segment
    names = gpt2.tensor_name
    # GPT-2 small, batch 5 x 1024 tokens x 768 fp32: each of the 12 blocks starts at its first layer
    # norm, whose input (the residual add before it) is a checkpoint of the residual stream's size
    stream = 5 * 1024 * 768 * 4
    starts = [int(np.flatnonzero(seg == s)[0]) for s in range(int(seg.max()) + 1)]
    blocks = [k for k in starts if gpt2.kernel_name[k] == "aten::native_layer_norm"]
    assert len(blocks) >= 12
    ck = set(plan.checkpoints)
    for k in blocks[:11]:
        lo, hi = int(gpt2.access_offsets[k]), int(gpt2.access_offsets[k + 1])
        ins = [t for t in gpt2.access_tensor[lo:hi].tolist() if t in ck]
        assert len(ins) == 1 and gpt2.tensor_size_bytes[ins[0]] == stream and str(names[ins[0]]).startswith("fwd:add")
    # every checkpoint is written in one segment and read in forward by a later one
    for t in plan.checkpoints:
        ks = gpt2.access_kernel[gpt2.access_tensor == t]
        fk = ks[ks < len(seg)][seg[ks[ks < len(seg)]] >= 0]
        assert seg[fk].max() > seg[fk.min()]
    # nothing a layer segment recomputes is a checkpoint, a parameter or a global
    assert not set(plan.dropped) & ck
    assert not np.any(gpt2.tensor_is_global[plan.dropped])


def test_recompute_adds_exactly_the_producers_ideal_time(gpt2, plan):
    # GPT-2 small fits without checkpointing: with every tensor resident, checkpointing adds the
    # ideal time of the producers re-run, each once (the recompute closed form), and no traffic
    off = run(gpt2, "zero-offload", "off")
    on = run(gpt2, "zero-offload", "recompute")
    exp = recompute.expand(gpt2, np.sort(np.array(
        [r for r in plan.rows if r[2] in (3, 4)], dtype=[("kernel", "<i8"), ("tensor", "<i8"), ("action", "u1")]),
        order="kernel", kind="stable"))
    src = exp.source[exp.is_copy]
    boundary = int(np.flatnonzero(plan.segment >= 0).max()) + 1
    assert np.all(src < boundary)                                   # forward kernels only
    # each producer at most once per layer segment's recompute kernel
    assert len(set(zip(exp.group[exp.is_copy].tolist(), src.tolist()))) == src.size
    ideal = float(gpt2.kernel_time_ideal_ns[src].sum()) * 1e-9
    assert on["recompute"]["ideal_s"] == pytest.approx(ideal, rel=1e-6)     # (kernel times in whole cycles)
    assert on["time_s"] - off["time_s"] == pytest.approx(ideal, rel=1e-6)
    assert on["traffic_bytes"] == off["traffic_bytes"]
    # 6.3 GiB -> 3.5 GiB (fused attention keeps no score matrices: 12.6 GiB -> 3.5 GiB with eager attention)
    assert on["peak_gpu_bytes"] < off["peak_gpu_bytes"] * 0.6
    cf = closed_form(gpt2, config("recompute"), "zero-offload")
    assert cf["recompute_ideal_s"] == pytest.approx(ideal, rel=1e-6) and cf["checkpoint_offloaded_bytes"] == 0


@pytest.mark.parametrize("policy,device", [("zero-offload", "nvme"), ("zero-infinity", "nvme"),
                                           ("zero-infinity", "cpu")])
def test_cpu_checkpointing_moves_the_checkpoint_bytes_each_way(gpt2, plan, policy, device):
    C = paged(gpt2, plan.offloaded)
    assert C > 0 and set(plan.offloaded) <= set(plan.checkpoints)
    rec = run(gpt2, policy, "recompute", device)["traffic_bytes"]
    cpu = run(gpt2, policy, "cpu", device)["traffic_bytes"]
    assert cpu["gpu_to_host"] - rec["gpu_to_host"] == C
    assert cpu["host_to_gpu"] - rec["host_to_gpu"] == C
    for k in ("ssd_to_host", "host_to_ssd", "gpu_to_ssd", "ssd_to_gpu"):
        assert cpu[k] == rec[k]
    # the parameter, gradient and state closed forms still hold, with the checkpoints beside them
    for mode, traffic in (("recompute", rec), ("cpu", cpu)):
        cf = closed_form(gpt2, config(mode, device), policy)
        assert cf["checkpoint_offloaded_bytes"] == (C if mode == "cpu" else 0)
        for path in PATHS:
            assert traffic[path] == pytest.approx(cf["traffic_bytes"][path], rel=0.01, abs=0), (mode, path)


def test_off_is_the_earlier_behaviour(gpt2):
    for policy in ("zero-offload", "zero-infinity"):
        res = run(gpt2, policy, "off")
        assert "recompute" not in res
        cf = closed_form(gpt2, config("off"), policy)
        for path in PATHS:
            assert res["traffic_bytes"][path] == cf["traffic_bytes"][path]


def test_a_trace_whose_activations_did_not_fit_now_runs():
    # llama-7b-s2048-b3 (with fused attention the smaller traces' activations fit a 40 GiB GPU)
    tr = read_trace(resolve_trace("llama-7b-s2048-b3"))
    for policy in ("zero-offload", "zero-infinity"):
        off = get(policy)(config("off")).simulate(tr)
        assert off["failed"] and "keeps the activations on the GPU (scheduler.zero_activation_checkpointing = off)" \
            in off["failure_reason"]
        on = get(policy)(preset("default")).simulate(tr)
        assert not on["failed"], on["failure_reason"]
        assert on["peak_gpu_bytes"] <= on["gpu_capacity_bytes"]
        assert on["time_s"] >= on["ideal_time_s"] + on["recompute"]["ideal_s"] * (1 - 1e-9)
