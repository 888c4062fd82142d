"""ZeRO-Offload and ZeRO-Infinity: the simulated traffic against the closed forms, CPU Adam's time,
the layer-wise refetch, and the refusals (issue 35)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import g10core
from g10core.config import preset
from g10core.errors import TensorSimError
from g10core.policies import get
from g10core.policies.zero_infinity import fetch_counts, param_segments
from g10core.policies.zero_offload import ADAM_FLOPS_PER_ELEMENT, OptimizerPlan, closed_form
from g10core.workload.trace import ACCESS_READ as R, ACCESS_WRITE as W, Trace, read_trace
from g10core.workload.tracestore import resolve_trace

PATHS = ("gpu_to_host", "host_to_gpu", "ssd_to_host", "host_to_ssd", "gpu_to_ssd", "ssd_to_gpu")
CASES = (("zero-offload", "nvme"), ("zero-infinity", "nvme"), ("zero-infinity", "cpu"))
ENV = {**os.environ, "PYTHONPATH": str(Path(g10core.__file__).resolve().parents[1])}   # this checkout's g10core


def config(device="nvme"):
    return preset("default").with_overrides({"scheduler": {"zero_infinity_device": device}})


def run(trace, policy, device="nvme"):
    return get(policy)(config(device)).simulate(trace)


def assert_closed_form(trace, policy, device):
    res = run(trace, policy, device)
    assert not res["failed"], res["failure_reason"]
    cf = closed_form(trace, config(device), policy)
    for path in PATHS:
        want, got = cf["traffic_bytes"][path], res["traffic_bytes"][path]
        assert got == pytest.approx(want, rel=0.01, abs=0), (policy, device, path)
    return res, cf


# ---- a mixed-precision trace by hand: bf16 parameters, fp32 master weights and moments ----------
N = (1 << 18, 1 << 19, 1 << 20)                 # parameters of the three layers


def mixed_trace() -> Trace:
    """Three layers; forward, loss, backward, then one fused optimizer kernel per parameter that
    reads the bf16 gradient and the fp32 master weight and moments and writes them and the bf16
    parameter (as a mixed-precision step does)."""
    names, sizes, glob = [], [], []

    def tensor(name, size, g):
        names.append(name)
        sizes.append(size)
        glob.append(g)
        return len(names) - 1

    x = tensor("x", 1 << 20, False)
    P = [tensor(f"P{i}", 2 * n, True) for i, n in enumerate(N)]
    a = [tensor(f"a{i}", 1 << 20, False) for i in range(3)]
    dy = tensor("dy", 1 << 20, False)
    da = [tensor(f"da{i}", 1 << 20, False) for i in range(3)]
    G = [tensor(f"G{i}", 2 * n, False) for i, n in enumerate(N)]
    S = [[tensor(f"{s}{i}", 4 * n, True) for s in ("master", "m", "v")] for i, n in enumerate(N)]
    kernels = [("fwd0", [(x, R), (P[0], R), (a[0], W)]),
               ("fwd1", [(a[0], R), (P[1], R), (a[1], W)]),
               ("fwd2", [(a[1], R), (P[2], R), (a[2], W)]),
               ("makeLoss", [(a[2], R), (dy, W)]),
               ("bwd2", [(dy, R), (a[1], R), (P[2], R), (G[2], W), (da[2], W)]),
               ("bwd1", [(da[2], R), (a[0], R), (P[1], R), (G[1], W), (da[1], W)]),
               ("bwd0", [(da[1], R), (x, R), (P[0], R), (G[0], W)])]
    for i in (2, 1, 0):
        kernels.append((f"adam{i}", [(G[i], R)] + [(s, R | W) for s in S[i]] + [(P[i], W)]))
    acc = [a for _, accs in kernels for a in accs]
    K = len(kernels)
    ns = np.full(K, 1e6)                          # 1 ms each
    return Trace(model="mixed3", batch_size=1, tensor_size_bytes=np.array(sizes, np.int64),
                 tensor_is_global=np.array(glob), tensor_name=np.array(names),
                 kernel_name=np.array([n for n, _ in kernels]), kernel_time_ideal_ns=ns,
                 kernel_time_fault_all_ns=3 * ns, kernel_time_fault_outputs_ns=2 * ns,
                 kernel_workspace_bytes=np.zeros(K, np.int64),
                 access_offsets=np.cumsum([0] + [len(x) for _, x in kernels]).astype(np.int64),
                 access_tensor=np.array([t for t, _ in acc], np.int32),
                 access_mode=np.array([m for _, m in acc], np.uint8))


def test_mixed_precision_offload_moves_two_bytes_each_way_per_parameter():
    tr = mixed_trace()
    res, cf = assert_closed_form(tr, "zero-offload", "nvme")
    n = sum(N)
    assert cf["n_parameters"] == n
    assert res["traffic_bytes"]["gpu_to_host"] == 2 * n       # bf16 gradients down
    assert res["traffic_bytes"]["host_to_gpu"] == 2 * n       # bf16 parameters up
    assert res["traffic_bytes"]["ssd_to_host"] == res["traffic_bytes"]["host_to_ssd"] == 0
    assert res["n_cpu_kernels"] == 3
    # the master weights and moments (12 B per parameter) live in host memory, with the bf16
    # parameters' host copies (2 B) and the gradients while they wait for the step (2 B)
    assert 14 * n <= res["peak_host_bytes"] <= 16 * n


def test_mixed_precision_infinity_refetches_layer_by_layer():
    tr = mixed_trace()
    opt = OptimizerPlan(tr)
    # layer steps: P0 | P1 | P2 (forward and backward of the last layer) | P1 | P0: P0 leaves the
    # GPU after its forward use (another layer comes between), P1's backward prefetch (one layer
    # ahead, at P2's first kernel) comes right after its forward use, so it stays
    assert fetch_counts(tr, opt.on_cpu) == {1: 2, 2: 1, 3: 1}
    assert param_segments(tr, opt.on_cpu)[1] == [(0, 0, 0), (5, 6, 6)]    # refetched at bwd1 for bwd0
    res, cf = assert_closed_form(tr, "zero-infinity", "nvme")
    n, up = sum(N), 2 * (2 * N[0] + N[1] + N[2])
    assert res["traffic_bytes"]["host_to_gpu"] == up
    assert res["traffic_bytes"]["ssd_to_host"] == up + 12 * n        # + master and moments for the step
    assert res["traffic_bytes"]["host_to_ssd"] == 12 * n + 2 * n     # + the updated bf16 parameters
    res, _ = assert_closed_form(tr, "zero-infinity", "cpu")
    assert res["traffic_bytes"]["host_to_gpu"] == up and res["traffic_bytes"]["ssd_to_host"] == 0


def test_cpu_adam_is_one_fused_pass_per_parameter():
    tr = mixed_trace()
    opt = OptimizerPlan(tr)
    assert [len(g) for g in opt.groups] == [1, 1, 1]
    for g, n in zip(opt.groups, (N[2], N[1], N[0])):
        assert opt.flops[g[0]] == ADAM_FLOPS_PER_ELEMENT * n
        assert opt.bytes[g[0]] == 28 * n     # 2 (gradient) + 3 x 8 (state read and written) + 2 (parameter)


# ---- a captured trace: GPT-2 small (fp32, AdamW) ----------------------------------------------

@pytest.fixture(scope="module")
def gpt2():
    return read_trace(resolve_trace("gpt2-small-s1024-b5"))


@pytest.mark.parametrize("policy,device", CASES)
def test_captured_trace_traffic_is_the_closed_form(gpt2, policy, device):
    res, cf = assert_closed_form(gpt2, policy, device)
    assert cf["n_parameters"] == 124_439_808          # GPT-2 small
    if policy == "zero-offload":
        # fp32: the gradient down and the parameter up, 4 B each per parameter (whole pages)
        assert cf["traffic_bytes"]["gpu_to_host"] == cf["gradient_bytes"] == cf["parameter_bytes"]
        assert 4 * cf["n_parameters"] <= cf["parameter_bytes"] <= 4 * cf["n_parameters"] * 1.01


def test_cpu_adam_time_is_the_closed_form_within_the_dma_share(gpt2):
    cfg = config()
    cf = closed_form(gpt2, cfg, "zero-offload")
    # fp32 AdamW: 28 B per parameter at the bandwidth its cores and the DRAM sustain (memory-bound:
    # 15 flops at 9.2 TFLOP/s is faster)
    kernel = min(cfg.cpu.cores * cfg.cpu.stream_GBps_per_core,
                 cfg.cpu.memory_bandwidth_GBps * cfg.cpu.memory_stream_fraction)
    assert cf["cpu_adam_s"] == pytest.approx(28 * cf["n_parameters"] / (kernel * 1e9), rel=0.01)
    mem = cfg.cpu.memory_bandwidth_GBps * cfg.cpu.memory_stream_fraction
    dma = 2 * cfg.link.bandwidth_GBps + 2 * cfg.ssd.bandwidth_GBps     # every host DMA stream at once
    for policy, device in CASES:
        busy = run(gpt2, policy, device)["cpu_busy_s"]
        assert cf["cpu_adam_s"] <= busy * (1 + 1e-6) and busy <= cf["cpu_adam_s"] * mem / (mem - dma) * 1.001


def test_small_captured_model_end_to_end():
    torch = pytest.importorskip("torch")
    from g10core.capture.api import capture

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                    torch.nn.ReLU(), torch.nn.Linear(1024, 512))
    tr = capture(model, torch.randn(64, 512), name="mlp3", batch_size=64)
    for policy, device in CASES:
        res, cf = assert_closed_form(tr, policy, device)
        assert cf["n_parameters"] == 512 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 512 + 512
        assert res["cpu_busy_s"] > 0 and res["time_s"] >= res["ideal_time_s"] * 0.5


# ---- refusals -------------------------------------------------------------------------------

def test_a_trace_without_optimizer_state_is_refused_naming_it():
    tr = read_trace(resolve_trace("bert_base-b256"))
    for policy in ("zero-offload", "zero-infinity"):
        with pytest.raises(TensorSimError, match="no optimizer_state tensors"):
            run(tr, policy)


@pytest.mark.parametrize("argv,words", [
    (["bert_base-b256", "--policy", "zero-offload"], "no optimizer_state tensors"),
    (["gpt2-small-s1024-b5", "--policy", "zero-infinity", "--preset", "detailed"], "tensor level"),
    (["gpt2-small-s1024-b5", "--policy", "zero-offload", "--preset", "g10-artifact"], "optimizer on the CPU"),
])
def test_cli_refusals_are_one_line_and_exit_2(argv, words):
    p = subprocess.run([sys.executable, "-m", "g10core", "run", *argv], capture_output=True, text=True, timeout=300, env=ENV)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in p.stderr


def test_cli_run_prints_the_cpu_tier(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "g10core", "run", "gpt2-small-s1024-b5", "--policy", "zero-infinity",
                        "--json", str(out)], capture_output=True, text=True, timeout=300, env=ENV)
    assert p.returncode == 0, p.stderr
    assert "host<->SSD" in p.stdout and "CPU " in p.stdout
    import json

    d = json.loads(out.read_text())
    assert d["counters"]["traffic_bytes"]["ssd_to_host"] > 0 and d["counters"]["cpu_busy_s"] > 0


def test_the_shipped_cpu_example_moves_on_demand(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "g10core", "run", "gpt2-small-s1024-b5", "--policy",
                        "cpu_optimizer.py:CPUOptimizer", "--json", str(out)], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    import json

    c = json.loads(out.read_text())["counters"]
    cf = closed_form(read_trace(resolve_trace("gpt2-small-s1024-b5")), config(), "zero-offload")
    # no hints: each gradient and each parameter goes down when the CPU needs it, the parameter back up
    assert c["traffic_bytes"]["gpu_to_host"] == cf["gradient_bytes"] + cf["parameter_bytes"]
    assert c["traffic_bytes"]["host_to_gpu"] == cf["parameter_bytes"]
    assert c["n_cpu_kernels"] == 1184
