"""LLM inference: the analytical prefill + decode trace, trace format 5, the offloading schedules
(FlexGen, ZeRO-Inference, Accelerate), the metrics, the published tables and the CLI."""
from __future__ import annotations

import dataclasses
import json

import h5py
import numpy as np
import pytest

from g10core.cli import main
from g10core.codes import ROLE_KV_CACHE, ROLE_PARAMETER
from g10core.experiments.inference import CELLS, DIFFERENCE_REASONS, reproduce_inference
from g10core.inference.schedule import (MACHINES, InferenceMemoryError, Machine, Placement, layer_stats,
                                        run_inference)
from g10core.workload.llm import (INT4_BYTES_PER_WEIGHT, MODELS, inference_trace, lm_config)
from g10core.workload.physical import KIND_GEMM, physical_model
from g10core.workload.trace import TraceError, read_trace, validate_trace, write_trace

TINY = dict(prompt=8, gen=4, batch=2)


def tiny(**kw):
    args = {**TINY, "gpu": "T4", **kw}
    return inference_trace(kw.pop("model", "opt-125m") if "model" in kw else "opt-125m",
                           **{k: v for k, v in args.items() if k != "model"})


# ---- the generator -------------------------------------------------------------------------------

@pytest.mark.parametrize("model", ["opt-125m", "gpt2", "llama-2-7b"])
@pytest.mark.parametrize("prompt, gen, batch", [(8, 4, 2), (16, 1, 3)])
def test_kv_cache_is_the_closed_form(model, prompt, gen, batch):
    cfg = lm_config(model)
    if model == "llama-2-7b":      # keep the test small: the layer count does not change the form
        cfg = dataclasses.replace(cfg, layers=2)
    t = inference_trace(cfg, prompt, gen, batch, gpu="T4")
    kv = t.tensor_size_bytes[t.tensor_role == ROLE_KV_CACHE].sum()
    # the tokens cached at the end: the prompt and every generated token but the last
    tokens = prompt + gen - 1
    assert kv == 2 * cfg.layers * (cfg.kv_heads or cfg.heads) * cfg.head_dim * tokens * batch * 2
    assert kv == cfg.kv_cache_bytes(tokens, batch)


def test_grouped_query_attention_shrinks_the_cache():
    cfg = lm_config("llama-2-70b")
    assert cfg.kv_dim == 8 * cfg.head_dim
    assert cfg.kv_cache_bytes(10, 1) * 8 == 2 * cfg.layers * cfg.hidden * 10 * 2


def test_phases_and_attention_over_the_growing_cache():
    t = tiny()
    cfg = lm_config("opt-125m")
    assert t.kernel_phase.tolist() == sorted(t.kernel_phase.tolist())
    assert set(t.kernel_phase.tolist()) == set(range(TINY["gen"]))
    attn = np.flatnonzero(np.char.endswith(t.kernel_name.astype(str), ".attention"))
    assert attn.size == cfg.layers * TINY["gen"]
    for k in attn.tolist():
        tensors, modes = t.kernel_accesses(k)
        cached = [x for x, m in zip(tensors.tolist(), modes.tolist()) if t.tensor_role[x] == ROLE_KV_CACHE and m == 1]
        assert len(cached) == int(t.kernel_phase[k])      # step i reads prefill's tensor and i - 1 decode tensors


def test_kernel_times_are_the_physical_model():
    t = tiny()
    assert np.array_equal(t.kernel_time_ideal_ns, physical_model().ideal_ns(t.kernel_work, "T4"))
    gemm = t.kernel_work.kind == KIND_GEMM
    assert gemm.any() and np.all(t.kernel_work.tiles[gemm] > 0)


def test_int4_weights_and_their_dequantisation():
    cfg = lm_config("opt-125m")
    fp16, int4 = tiny(), tiny(weights="int4")
    names = int4.tensor_name.astype(str)
    blocks = (int4.tensor_role == ROLE_PARAMETER) & np.char.startswith(names, "param:layers.") & \
        ~np.char.endswith(names, ".ln")
    n = sum(cfg.layer_weights().values()) * cfg.layers
    assert abs(int(int4.tensor_size_bytes[blocks].sum()) - n * INT4_BYTES_PER_WEIGHT) <= blocks.sum()
    deq = np.char.endswith(int4.kernel_name.astype(str), ".dequant")
    # one per weight matrix (4 per block, and the head) per GPU batch per phase
    assert deq.sum() == (4 * cfg.layers + 1) * TINY["gen"]
    assert int4.n_kernels == fp16.n_kernels + deq.sum()


def test_gpu_batches_run_a_layer_for_each_before_the_next():
    t = tiny(batch=4, gpu_batches=2)
    names = t.kernel_name.astype(str).tolist()
    i0, i1 = names.index("prefill.g0.l0.qkv"), names.index("prefill.g1.l0.qkv")
    assert i0 < i1 < names.index("prefill.g0.l1.qkv")
    with pytest.raises(ValueError, match="multiple"):
        tiny(batch=3, gpu_batches=2)


@pytest.mark.parametrize("kw, words", [
    (dict(gen=0), "gen = 0"), (dict(prompt=2040, gen=16), "beyond opt-125m's context"),
    (dict(batch=0), "batch = 0"), (dict(weights="int3"), "weights"), (dict(kv_cache="int2"), "kv_cache")])
def test_bad_requests_are_refused(kw, words):
    with pytest.raises(ValueError, match=words):
        tiny(**kw)


def test_unknown_model_and_gpu():
    with pytest.raises(ValueError, match="unknown model"):
        inference_trace("opt-7b", 8, 2, 1)
    with pytest.raises(ValueError, match="unknown GPU"):
        inference_trace("opt-125m", 8, 2, 1, gpu="T5")


def test_published_sizes():
    # the published parameter counts (OPT: Zhang et al. 2022, Table 1; Llama 2: the model cards' 7B and 70B,
    # 6.74e9 and 68.98e9 exactly; GPT-2 XL: 1,557,611,200 in the Hugging Face checkpoint), within 3 %
    # (norms and biases left out)
    for name, n in (("opt-6.7b", 6.7e9), ("opt-30b", 30e9), ("opt-66b", 66e9), ("opt-175b", 175e9),
                    ("llama-2-7b", 6.74e9), ("llama-2-70b", 68.98e9), ("gpt2-xl", 1.5576e9)):
        assert abs(MODELS[name].n_parameters() / n - 1) < 0.03, name


# ---- trace format 5 ------------------------------------------------------------------------------

def test_format_5_round_trip(tmp_path):
    t = tiny()
    back = read_trace(write_trace(t, tmp_path / "i.h5"))
    assert back.attrs["schema_version"] == 5
    assert np.array_equal(back.kernel_phase, t.kernel_phase)
    assert np.array_equal(back.tensor_role, t.tensor_role)


def test_a_version_4_file_still_reads_and_has_no_phases(tmp_path):
    t = tiny()
    role = np.where(t.tensor_role == ROLE_KV_CACHE, 0, t.tensor_role).astype(np.int8)
    t = dataclasses.replace(t, kernel_phase=None, tensor_role=role)
    path = write_trace(t, tmp_path / "v4.h5")
    with h5py.File(path, "r+") as f:
        f.attrs["schema_version"] = 4
    back = read_trace(path)
    assert back.kernel_phase is None and back.attrs["schema_version"] == 4


def test_version_4_refuses_the_kv_cache_role(tmp_path):
    path = write_trace(tiny(), tmp_path / "v.h5")
    with h5py.File(path, "r+") as f:
        f.attrs["schema_version"] = 4
    with pytest.raises(TraceError, match="role") as info:
        read_trace(path)
    assert "v.h5" in str(info.value) and info.value.row is not None


def test_bad_phases_are_refused_naming_dataset_and_row():
    t = tiny()
    phase = t.kernel_phase.copy()
    phase[5] = 3
    with pytest.raises(TraceError, match="/kernel_phase") as info:
        validate_trace(dataclasses.replace(t, kernel_phase=phase))
    assert info.value.row == 6
    with pytest.raises(TraceError, match="rows"):
        validate_trace(dataclasses.replace(t, kernel_phase=phase[:-1]))


# ---- the schedules: closed forms on a small model ------------------------------------------------

BIG_HOST = Machine("T4", 1000.0, 2.0, 1.0, 16, 128.0, 100.0)


def test_all_on_the_gpu_is_the_sum_of_kernel_times():
    t = tiny()
    r = run_inference(t, BIG_HOST, "flexgen")
    assert r.total_s == pytest.approx(t.kernel_time_ideal_ns.sum() / 1e9)
    assert r.ttft_s == pytest.approx(t.kernel_time_ideal_ns[t.kernel_phase == 0].sum() / 1e9)
    assert r.tpot_s == pytest.approx(r.decode_s / (TINY["gen"] - 1))
    assert r.tokens_per_s == pytest.approx(TINY["batch"] * TINY["gen"] / r.total_s)
    assert len(r.phase_s) == TINY["gen"] and sum(r.phase_s) == pytest.approx(r.total_s)


def test_zero_inference_is_the_longer_of_copy_and_compute_per_layer():
    t = tiny()
    st = layer_stats(t)
    h2d = BIG_HOST.link_GBps("to_device") * 1e9
    r = run_inference(t, BIG_HOST, "zero-inference")
    expect = np.maximum(st.weight_bytes[None, :] / h2d, st.gpu_s).sum()
    assert r.total_s == pytest.approx(expect)
    nvme = run_inference(t, BIG_HOST, "zero-inference", zero_device="nvme")
    expect = np.maximum.reduce([st.weight_bytes[None, :] / h2d + 0 * st.gpu_s,
                                st.weight_bytes[None, :] / (BIG_HOST.disk_read_GBps * 1e9) + 0 * st.gpu_s,
                                st.gpu_s]).sum()
    assert nvme.total_s == pytest.approx(expect)
    assert nvme.total_s >= r.total_s


def test_flexgen_hand_computed_case():
    # weights half in host memory, half on disk, no overlap: each layer step is the sum of the copy of
    # its off-GPU half, the disk read of its disk half and its compute
    t = tiny()
    st = layer_stats(t)
    h2d = BIG_HOST.link_GBps("to_device") * 1e9
    pl = Placement.from_percent(0, 50, 100, 0, 100, 0)
    r = run_inference(t, BIG_HOST, "flexgen", placement=pl, overlap=False)
    W = st.weight_bytes
    expect = (st.gpu_s + (W / h2d)[None, :] + (0.5 * W / (BIG_HOST.disk_read_GBps * 1e9))[None, :]).sum()
    assert r.total_s == pytest.approx(expect)
    overlapped = run_inference(t, BIG_HOST, "flexgen", placement=pl)
    assert overlapped.total_s <= r.total_s
    assert overlapped.placement["weights"] == pytest.approx({"gpu": 0.0, "cpu": 0.5, "disk": 0.5})


def test_flexgen_kv_cache_in_host_memory_costs_its_bytes_each_way():
    t = tiny()
    st = layer_stats(t)
    pl = Placement.from_percent(100, 0, 0, 100, 100, 0)
    r = run_inference(t, BIG_HOST, "flexgen", placement=pl, overlap=False)
    h2d, d2h = BIG_HOST.link_GBps("to_device") * 1e9, BIG_HOST.link_GBps("from_device") * 1e9
    assert r.total_s == pytest.approx((st.gpu_s + st.kv_read / h2d + st.kv_write / d2h).sum())
    cpu = run_inference(t, BIG_HOST, "flexgen", placement=pl, cpu_attention=True, overlap=False)
    assert cpu.placement["cpu_attention"]


def test_accelerate_copies_offloaded_layers_without_overlap():
    cfg = dataclasses.replace(lm_config("opt-13b"), layers=12)          # 7.3 GB of fp16 weights
    t = inference_trace(cfg, 4, 2, 1, gpu="T4")
    st = layer_stats(t)
    small = dataclasses.replace(BIG_HOST, gpu="T4")
    r = run_inference(t, small, "accelerate")
    assert r.placement["weights"]["gpu"] == pytest.approx(1.0)           # it all fits: nothing moves
    assert r.total_s == pytest.approx(st.gpu_s.sum())
    big = inference_trace(lm_config("opt-13b"), 4, 2, 1, gpu="T4")      # 26 GB: some layers in host memory
    st = layer_stats(big)
    r = run_inference(big, small, "accelerate")
    assert 0 < r.placement["weights"]["cpu"] < 1
    h2d = small.link_GBps("to_device") * 1e9
    on_cpu = r.placement["weights"]["cpu"] * st.weight_bytes.sum()
    assert r.total_s == pytest.approx(st.gpu_s.sum() + st.gpu_s.shape[0] * on_cpu / h2d)


def test_more_link_bandwidth_is_never_slower():
    t = tiny()
    slow = run_inference(t, BIG_HOST, "zero-inference", zero_device="nvme")
    fast = run_inference(t, dataclasses.replace(BIG_HOST, disk_read_GBps=20.0), "zero-inference", zero_device="nvme")
    assert fast.total_s <= slow.total_s


def test_a_placement_that_does_not_fit_is_refused():
    t = inference_trace("opt-6.7b", 8, 2, 1, gpu="T4")
    tight = dataclasses.replace(BIG_HOST, host_memory_GB=1.0)
    with pytest.raises(InferenceMemoryError, match="cpu memory"):
        run_inference(t, tight, "zero-inference")
    with pytest.raises(ValueError, match="sum to 1|at most 100"):
        Placement.from_percent(60, 50, 0, 0, 0, 100)
    with pytest.raises(ValueError, match="sum to 1"):
        Placement(weights=(0.5, 0.2, 0.2))


def test_not_an_inference_trace_or_wrong_gpu():
    t = tiny()
    with pytest.raises(ValueError, match="not an inference trace"):
        run_inference(dataclasses.replace(t, kernel_phase=None), BIG_HOST, "flexgen")
    with pytest.raises(ValueError, match="A6000"):
        run_inference(t, MACHINES["zero-inference-a6000"], "flexgen")


def test_result_to_pandas_has_a_row_per_phase():
    pytest.importorskip("pandas")
    r = run_inference(tiny(), BIG_HOST, "flexgen")
    df = r.to_pandas()
    assert df["phase"].tolist() == ["prefill", "decode1", "decode2", "decode3"]
    assert df["seconds"].sum() == pytest.approx(r.total_s)
    assert json.dumps(r.to_dict())


# ---- the simulator on an inference trace ---------------------------------------------------------

def test_simulator_reports_inference_metrics(tmp_path):
    from g10core.config import resolve
    from g10core.simulator import Simulator

    t = tiny()
    cfg = resolve(sets=["run.iterations=2", "gpu.model=T4"])
    ideal = Simulator(cfg).run(t, "ideal")
    inf = ideal.inference
    ours = run_inference(t, BIG_HOST, "flexgen")
    assert inf["tokens_per_s"] == pytest.approx(ours.tokens_per_s, rel=1e-3)
    assert inf["ttft_s"] == pytest.approx(ours.ttft_s, rel=1e-3)
    assert ideal.to_dict()["inference"]["gen"] == TINY["gen"]
    uvm = Simulator(resolve(sets=["run.iterations=2", "gpu.model=T4", "gpu.memory_GiB=0.25"])).run(t, "base-uvm")
    assert not uvm.failed and uvm.inference["tokens_per_s"] <= inf["tokens_per_s"] * (1 + 1e-9)
    assert uvm.inference["warm_up_iterations"] == 1


@pytest.mark.parametrize("policy", ["base-uvm", "deepum", "belady", "g10", "g10-host", "g10-gds"])
def test_every_simulator_policy_runs_an_inference_trace_that_oversubscribes(policy):
    # OPT-125M (0.25 GB of weights) on a 0.1 GiB GPU: each policy moves weights and cache, reports
    # time to first token, time per output token and tokens/s, and none beats infinite memory
    from g10core.config import resolve
    from g10core.simulator import Simulator

    t = tiny()
    ideal = Simulator(resolve(sets=["run.iterations=2", "gpu.model=T4"])).run(t, "ideal").inference
    # the page level runs a warm-up batch first; the tensor level has no iterations to set
    sets = ["gpu.model=T4", "gpu.memory_GiB=0.1"] + ([] if policy.startswith("g10-") else ["run.iterations=2"])
    r = Simulator(resolve(sets=sets)).run(t, policy)
    assert not r.failed
    inf = r.inference
    assert inf["gen"] == TINY["gen"] and inf["batch"] == TINY["batch"]
    assert 0 < inf["ttft_s"] and 0 < inf["tpot_s"]
    assert inf["tokens_per_s"] <= ideal["tokens_per_s"] * (1 + 1e-9)
    assert inf["ttft_s"] >= ideal["ttft_s"] * (1 - 1e-9)


# ---- the published tables and the CLI ------------------------------------------------------------

def test_every_big_difference_has_a_reason():
    rows = reproduce_inference()
    assert len(rows) == len(CELLS)
    for r in rows:
        assert r["tokens_per_s"] is not None, r
        if abs(r["ratio"] - 1) > 0.2:
            assert (r["table"], r["system"], r["model"]) in DIFFERENCE_REASONS and r["reason"]


def test_cli_end_to_end(tmp_path, capsys):
    path = tmp_path / "t.h5"
    assert main(["trace", "inference", "--model", "opt-125m", "--prompt", "8", "--gen", "4", "--batch", "2",
                 "--gpu", "T4", "-o", str(path), "--json", "-"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["schema_version"] == 5 and info["phases"] == 4
    assert main(["inference", "run", str(path), "--policy", "flexgen", "--machine", "flexgen-t4",
                 "--percent", "0", "100", "100", "0", "100", "0", "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens_per_s"] > 0 and out["placement"]["weights"]["cpu"] == 1.0
    png = tmp_path / "inf.png"
    assert main(["reproduce", "inference", "--tables", "zero-inference-a6000", "--json", "-", "--plot", str(png)]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 5
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv, code", [
    (["trace", "inference", "--model", "opt-125m", "--prompt", "8", "--gen", "0", "--batch", "2"], 2),
    (["trace", "inference", "--model", "gpt2", "--prompt", "1020", "--gen", "8", "--batch", "1"], 2),
    (["trace", "inference", "--model", "opt-7b", "--prompt", "8", "--gen", "2", "--batch", "1"], 2),
])
def test_cli_bad_input_exits_2(tmp_path, capsys, argv, code):
    assert main(argv + ["-o", str(tmp_path / "x.h5")]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 or "usage" in err


def test_cli_run_refusals(tmp_path, capsys):
    path = tmp_path / "t.h5"
    write_trace(inference_trace("opt-6.7b", 8, 2, 1, gpu="T4"), path)
    assert main(["inference", "run", str(path), "--policy", "flexgen", "--machine", "flexgen-t4",
                 "--percent", "60", "50", "0", "0", "0", "100"]) == 2
    assert main(["inference", "run", str(path), "--policy", "flexgen", "--machine", "zero-inference-a6000"]) == 2
    capsys.readouterr()
    big = tmp_path / "b.h5"
    write_trace(inference_trace("opt-30b", 8, 2, 1, gpu="T4"), big)     # 60 GB of weights on a 16 GB GPU
    assert main(["inference", "run", str(big), "--policy", "flexgen", "--machine", "flexgen-t4"]) == 1
    assert "gpu memory" in capsys.readouterr().err


# ---- FlexGen's policy search ---------------------------------------------------------------------

def test_search_agrees_with_the_schedule_and_beats_the_grid_it_searched():
    from g10core.inference.search import search_flexgen

    cfg = dataclasses.replace(lm_config("opt-1.3b"), layers=4)
    machine = dataclasses.replace(BIG_HOST, host_memory_GB=4.0)
    r = search_flexgen(cfg, 16, 4, machine, gpu_batch_sizes=(1, 4), gpu_batches=(1, 2), step=50)
    t = inference_trace(cfg, 16, 4, r.gpu_batch_size * r.gpu_batches, gpu="T4", gpu_batches=r.gpu_batches)
    ours = run_inference(t, machine, "flexgen", placement=r.placement, cpu_attention=r.cpu_attention)
    assert ours.tokens_per_s == pytest.approx(r.tokens_per_s)
    # every placement on the grid at the chosen batch sizes is no faster
    for w in ((1, 0, 0), (0, 1, 0), (0.5, 0.5, 0), (0, 0, 1)):
        for kv in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
            for cpu in (False, True):
                try:
                    x = run_inference(t, machine, "flexgen", placement=Placement(w, kv), cpu_attention=cpu)
                except InferenceMemoryError:
                    continue
                assert x.tokens_per_s <= r.tokens_per_s * (1 + 1e-9)


def test_search_refuses_what_fits_nowhere():
    from g10core.inference.search import search_flexgen

    tiny_machine = Machine("T4", 0.5, 1.0, 1.0, 1, 1.0, 1.0, disk_GB=0.5)
    with pytest.raises(ValueError, match="no FlexGen policy"):
        search_flexgen("opt-13b", 8, 2, tiny_machine, gpu_batch_sizes=(1,), gpu_batches=(1,))
    with pytest.raises(ValueError, match="step"):
        search_flexgen("opt-125m", 8, 2, BIG_HOST, step=7)


def test_cli_search(capsys):
    assert main(["inference", "search", "--model", "opt-125m", "--prompt", "8", "--gen", "2",
                 "--machine", "flexgen-t4", "--step", "50", "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens_per_s"] > 0 and len(out["percent"]) == 6


def test_timeline_draws_prefill_and_each_decode_step(tmp_path):
    from g10core.config import resolve
    from g10core.simulator import Simulator

    t = tiny()
    r = Simulator(resolve(sets=["run.iterations=2", "gpu.model=T4"])).run(t, "base-uvm")
    path = r.write_timeline(tmp_path / "tl.json")
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "phase"]
    assert [e["name"] for e in events] == (["prefill"] + [f"decode {i}" for i in range(1, TINY["gen"])]) * 2
    assert r.inference["phase_first_kernel"][-1] == t.n_kernels


# ---- vLLM-style preemption -----------------------------------------------------------------------

def _kv_total(t):
    return float(t.tensor_size_bytes[t.tensor_role == ROLE_KV_CACHE].sum())


def test_a_budget_that_holds_the_cache_never_preempts():
    from g10core.inference.preemption import serve_with_preemption

    t = inference_trace("opt-125m", 32, 8, 8, gpu="T4")
    r = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=2 * _kv_total(t))
    assert r.preemptions == 0 and r.recomputed_tokens == 0 and r.swapped_bytes == 0
    assert r.total_s == pytest.approx(run_inference(t, BIG_HOST, "flexgen").total_s)


def test_hand_computed_case_one_sequence_at_a_time():
    # prompt 16, 3 tokens, 2 sequences, blocks of 16: each sequence needs 2 blocks (17 then 18 tokens);
    # a budget of 3 blocks runs them one after the other, without preemption
    from g10core.inference.preemption import _decode_model, serve_with_preemption

    t = inference_trace("opt-125m", 16, 3, 2, gpu="T4")
    block = 16 * _kv_total(t) / (2 * (16 + 3 - 1))
    r = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=3 * block)
    floor, at_b = _decode_model(t)
    step = [floor[i] + (at_b[i] - floor[i]) * 1 / 2 for i in (1, 2)]
    prefill_per_token = layer_stats(t).gpu_s[0].sum() / (2 * 16)
    assert r.preemptions == 0
    assert r.total_s == pytest.approx(2 * (16 * prefill_per_token + step[0] + step[1]))
    assert r.ttft_s == pytest.approx((16 * prefill_per_token + (2 * 16 * prefill_per_token + step[0] + step[1])) / 2)


def test_swap_and_recompute_choices():
    from g10core.inference.preemption import serve_with_preemption

    t = inference_trace("opt-125m", 32, 32, 16, gpu="T4")
    budget = 0.5 * _kv_total(t)
    auto = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=budget)
    assert auto.mode == "recompute" and auto.preemptions > 0 and auto.recomputed_tokens > 0 and auto.swapped_bytes == 0
    beams = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=budget, seqs_per_group=4)
    assert beams.mode == "swap" and beams.preemptions > 0 and beams.swapped_bytes > 0 and beams.recomputed_tokens == 0
    block = 16 * _kv_total(t) / (16 * (32 + 32 - 1))
    assert beams.swapped_bytes / block == pytest.approx(round(beams.swapped_bytes / block))
    for r in (auto, beams):
        assert r.total_s > serve_with_preemption(t, BIG_HOST, kv_budget_bytes=2 * _kv_total(t)).total_s
    from g10core.errors import SimulationError
    with pytest.raises(SimulationError, match="swap space"):
        serve_with_preemption(t, BIG_HOST, kv_budget_bytes=budget, mode="swap", swap_space_bytes=1.0)


def test_a_budget_below_one_sequence_is_refused(tmp_path, capsys):
    from g10core.inference.preemption import serve_with_preemption

    t = inference_trace("opt-125m", 32, 4, 2, gpu="T4")
    with pytest.raises(ValueError, match="KV budget"):
        serve_with_preemption(t, BIG_HOST, kv_budget_bytes=1000.0)
    path = write_trace(t, tmp_path / "t.h5")
    assert main(["inference", "serve", str(path), "--machine", "flexgen-t4", "--kv-budget-GB", "0.000001"]) == 2
    assert "KV budget" in capsys.readouterr().err
    assert main(["inference", "serve", str(path), "--machine", "flexgen-t4", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["preemptions"] == 0


def test_requests_of_the_traces_lengths_are_the_batch():
    from g10core.inference.preemption import serve_with_preemption

    t = inference_trace("opt-125m", 32, 32, 16, gpu="T4")
    budget = 0.5 * _kv_total(t)
    base = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=budget)
    same = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=budget, prompt_tokens=[32] * 16, output_tokens=[32] * 16)
    assert same.total_s == base.total_s and same.ttft_s == base.ttft_s and same.preemptions == base.preemptions > 0
    assert same.tokens_per_s == pytest.approx(base.tokens_per_s) and same.output_tokens == 16 * 32


def test_requests_of_their_own_lengths_by_hand():
    # the trace: prompt 32, 4 tokens, batch 2; requests (32 prompt, 4 out) and (16, 2), all at once,
    # a budget that holds them: one prefill of 48 tokens, a decode step of both at the trace's step 1
    # (mean context: 24 + 1 tokens, nearest step clamped to 1), then the first alone at steps 2 and 3
    from g10core.inference.preemption import _decode_model, serve_with_preemption

    t = inference_trace("opt-125m", 32, 4, 2, gpu="T4")
    r = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=4 * _kv_total(t), prompt_tokens=[32, 16],
                              output_tokens=[4, 2])
    floor, at_b = _decode_model(t)
    ppt = layer_stats(t).gpu_s[0].sum() / (2 * 32)
    first = 48 * ppt
    second_done = first + at_b[1]
    total = second_done + sum(floor[i] + (at_b[i] - floor[i]) / 2 for i in (2, 3))
    assert r.preemptions == 0 and not r.beyond_trace_context
    assert r.total_s == pytest.approx(total)
    assert r.ttft_s == pytest.approx(first)
    assert r.latency_mean_s == pytest.approx((total + second_done) / 2)
    assert r.output_tokens == 6 and r.tokens_per_s == pytest.approx(6 / total)
    assert r.prompt_mean == 24 and r.gen_mean == 3
    # a context past the trace's is flagged (it costs the trace's last step)
    long = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=4 * _kv_total(t), prompt_tokens=[32, 64],
                                 output_tokens=[4, 8])
    assert long.beyond_trace_context and long.output_tokens == 12


def test_requests_file_and_its_refusals(tmp_path, capsys):
    from g10core.errors import InputError
    from g10core.inference.preemption import read_requests, serve_with_preemption

    good = tmp_path / "r.csv"
    good.write_text("arrival_s,prompt_tokens,output_tokens,note\n0.5,16,2,x\n0,32,4,y\n")
    req = read_requests(good)
    assert req["prompt_tokens"].tolist() == [16, 32] and req["arrival_s"].tolist() == [0.5, 0.0]
    t = inference_trace("opt-125m", 32, 4, 2, gpu="T4")
    r = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=4 * _kv_total(t), **req)
    assert r.first_arrival_s == 0.0 and r.last_arrival_s == 0.5 and r.output_tokens == 6
    for text, match in (("prompt_tokens\n3\n", "no column output_tokens"),
                        ("prompt_tokens,output_tokens\n3,4\n3,x\n", "row 3, column output_tokens: 'x'"),
                        ("prompt_tokens,output_tokens\n3,0\n", "row 2, column output_tokens.*>= 1"),
                        ("prompt_tokens,output_tokens,arrival_s\n3,4,-1\n", "row 2, column arrival_s"),
                        ("prompt_tokens,output_tokens\n", "no request")):
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(InputError, match=match):
            read_requests(bad)
    with pytest.raises(ValueError, match="output_tokens"):
        serve_with_preemption(t, BIG_HOST, prompt_tokens=[16, 32], output_tokens=[2])
    path = write_trace(t, tmp_path / "t.h5")
    argv = ["inference", "serve", str(path), "--machine", "flexgen-t4", "--kv-budget-GB", "1", "--requests"]
    assert main(argv + [str(good), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["output_tokens"] == 6
    assert main(argv + [str(good), "--request-rate", "2"]) == 2
    assert "arrival_s and --request-rate" in capsys.readouterr().err
    assert main(argv + [str(tmp_path / "none.csv")]) == 2
    bad.write_text("prompt_tokens,output_tokens\n3,x\n")
    assert main(argv + [str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv: row 2, column output_tokens" in err and "Traceback" not in err


# ---- invariants ----------------------------------------------------------------------------------

from hypothesis import given, settings, strategies as hst  # noqa: E402

_TRACE = None


def _shared_trace():
    global _TRACE
    if _TRACE is None:
        _TRACE = tiny()
    return _TRACE


@settings(max_examples=40, deadline=None)
@given(w=hst.tuples(hst.integers(0, 10), hst.integers(0, 10)), kv=hst.tuples(hst.integers(0, 10), hst.integers(0, 10)),
       cpu=hst.booleans(), overlap=hst.booleans(), factor=hst.floats(1.0, 10.0),
       which=hst.sampled_from(["disk_read_GBps", "disk_write_GBps", "cpu_memory_GBps", "cpu_GFLOPs_per_core"]))
def test_more_bandwidth_never_makes_a_run_slower(w, kv, cpu, overlap, factor, which):
    t = _shared_trace()
    def frac(a, b):
        a, b = min(a, 10), min(b, 10 - min(a, 10))
        return (a / 10, b / 10, (10 - a - b) / 10)
    pl = Placement(frac(*w), frac(*kv))
    base = run_inference(t, BIG_HOST, "flexgen", placement=pl, cpu_attention=cpu, overlap=overlap)
    more = dataclasses.replace(BIG_HOST, **{which: getattr(BIG_HOST, which) * factor})
    faster = run_inference(t, more, "flexgen", placement=pl, cpu_attention=cpu, overlap=overlap)
    assert faster.total_s <= base.total_s * (1 + 1e-12)


# ---- the planner ---------------------------------------------------------------------------------

def test_plan_finds_the_least_disk_bandwidth_for_a_target():
    from g10core.inference.plan import plan_inference

    t = tiny()
    target = 0.5 * run_inference(t, dataclasses.replace(BIG_HOST, disk_read_GBps=100.0), "zero-inference",
                                 zero_device="nvme").tokens_per_s
    out = plan_inference(t, BIG_HOST, "zero-inference", "disk_read_GBps", 0.01, 100.0, target_tokens_per_s=target,
                         zero_device="nvme")
    at = lambda v: run_inference(t, dataclasses.replace(BIG_HOST, disk_read_GBps=v), "zero-inference",  # noqa: E731
                                 zero_device="nvme").tokens_per_s
    assert at(out["value"]) >= target > at(out["value"] * (1 - 2e-3))


def test_plan_gpu_memory_and_refusals(tmp_path, capsys):
    from g10core.errors import SimulationError
    from g10core.inference.plan import plan_inference

    t = tiny()
    out = plan_inference(t, BIG_HOST, "flexgen", "gpu_memory_GB", 0.01, 16.0, target_tpot_s=1.0)
    need = run_inference(t, BIG_HOST, "flexgen").memory["gpu_needed_bytes"] / 1e9
    assert need <= out["value"] <= need * 1.002
    with pytest.raises(SimulationError, match="no value of"):
        plan_inference(t, BIG_HOST, "flexgen", "gpu_memory_GB", 0.001, 0.01, target_tokens_per_s=1.0)
    with pytest.raises(ValueError, match="vary"):
        plan_inference(t, BIG_HOST, "flexgen", "cores", 1, 2, target_tokens_per_s=1.0)
    path = write_trace(t, tmp_path / "t.h5")
    base = ["inference", "plan", str(path), "--policy", "flexgen", "--machine", "flexgen-t4", "--vary",
            "gpu_memory_GB"]
    assert main(base + ["--range", "0.01", "16", "--target-tpot-s", "1", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] > 0
    assert main(base + ["--range", "0.001", "0.01", "--target-tpot-s", "1"]) == 1
    assert main(base + ["--range", "1", "16"]) == 2


# ---- ZeRO-Inference replayed by the tensor-level simulator ---------------------------------------

@pytest.mark.parametrize("device", ["cpu", "nvme"])
def test_zero_inference_replay_agrees_with_the_closed_form(device):
    import warnings

    from g10core.config import resolve
    from g10core.inference.replay import zero_inference_replay

    t = tiny()
    link = BIG_HOST.link_GBps("to_device")
    cfg = resolve(sets=["gpu.model=T4", "host.memory_GiB=200", f"ssd.bandwidth_GBps={BIG_HOST.disk_read_GBps!r}",
                        f"host.bandwidth_GBps={link!r}", f"link.bandwidth_GBps={link!r}"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = zero_inference_replay(t, cfg, device)
    closed = run_inference(t, BIG_HOST, "zero-inference", zero_device=device)
    assert not r["failed"]
    # every layer step fetches its weights once per phase: the traffic is the closed form's
    weights = float(layer_stats(t).weight_bytes.sum())
    pages = t.tensor_pages[t.tensor_role == ROLE_PARAMETER].sum() * 4096
    assert r["traffic_bytes"]["host_to_gpu"] == pages * TINY["gen"]
    assert pages >= weights
    assert r["time_s"] == pytest.approx(closed.total_s, rel=0.01)


def test_accelerate_replay_agrees_with_the_closed_form():
    import warnings

    from g10core.config import resolve
    from g10core.inference.replay import accelerate_replay

    cfg13 = dataclasses.replace(lm_config("opt-13b"), layers=30)      # 19 GB: some layers must leave the T4
    t = inference_trace(cfg13, 8, 3, 1, gpu="T4")
    link = BIG_HOST.link_GBps("to_device")
    cfg = resolve(sets=["gpu.model=T4", "host.memory_GiB=200", f"ssd.bandwidth_GBps={BIG_HOST.disk_read_GBps!r}",
                        f"host.bandwidth_GBps={link!r}", f"link.bandwidth_GBps={link!r}"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        host = accelerate_replay(t, cfg, BIG_HOST)
        small = dataclasses.replace(BIG_HOST, host_memory_GB=1.0)
        disk = accelerate_replay(t, cfg, small)
    closed = run_inference(t, BIG_HOST, "accelerate")
    assert 0 < closed.placement["weights"]["cpu"] < 1 and host["plan"]["layers_on"]["cpu"] > 0
    assert host["time_s"] == pytest.approx(closed.total_s, rel=0.01)
    # layers on disk: the replay's queues overlap one tensor's SSD read with the copy of the one before,
    # where the closed form runs a layer's two hops one after the other
    closed_disk = run_inference(t, small, "accelerate")
    assert disk["plan"]["layers_on"]["disk"] > 0
    assert host["time_s"] < disk["time_s"] <= closed_disk.total_s * (1 + 1e-6)


def test_deepnvme_llama3_70b_over_three_drive_sets():
    """DeepNVMe's LLaMA-3-70B ZeRO-Inference (microsoft/DeepSpeed blogs/deepnvme/03-2025): weights on
    4 x Gen4, 4 x Gen5 and 8 x Gen5 NVMe RAID0 (reads 10 / 27 / 48 GB/s, the post's ds_io figures),
    7 / 17 / 26 tokens/s published.  Ours streams every weight from the drives at every step, so the
    decode steps take the weights' bytes over the drive set's read rate; each cell within 20 %."""
    from g10core.inference.schedule import MACHINES
    from g10core.workload.llm import lm_config

    rows = reproduce_inference(("deepnvme",))
    assert [r["published_tokens_per_s"] for r in rows] == [7.0, 17.0, 26.0]
    for r in rows:
        assert 0.8 <= r["ratio"] <= 1.2, r
    # more drive bandwidth, more tokens/s (and no resource of the first is faster in the next)
    assert rows[0]["tokens_per_s"] < rows[1]["tokens_per_s"] < rows[2]["tokens_per_s"]
    cfg = lm_config("llama-3-70b")
    assert (cfg.layers, cfg.hidden, cfg.kv_heads, cfg.vocab) == (80, 8192, 8, 128256)
    # a decode step reads the fp16 weights (about 141 GB) at the drive set's read rate
    for r, machine in zip(rows, ("deepnvme-a100-4xgen4", "deepnvme-h200-4xgen5", "deepnvme-h200-8xgen5")):
        weights = r["memory"]["disk_needed_bytes"]
        assert 140e9 < weights < 142e9
        assert r["tpot_s"] == pytest.approx(weights / (MACHINES[machine].disk_read_GBps * 1e9), rel=0.02)
        assert r["placement"]["weights"]["disk"] == 1.0 and r["memory"]["cpu_needed_bytes"] == 0


# ---- requests arriving over time -----------------------------------------------------------------

def test_arrivals_all_at_zero_are_the_batch_at_once():
    from g10core.inference.preemption import serve_with_preemption

    t = inference_trace("opt-125m", 32, 32, 16, gpu="T4")
    budget = 0.5 * _kv_total(t)
    once = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=budget)
    zeros = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=budget, arrival_s=[0.0] * 16)
    assert once.to_dict() == zeros.to_dict() and once.first_arrival_s == once.last_arrival_s == 0.0


def test_requests_far_apart_are_served_one_at_a_time():
    # each request arrives after the one before has finished: its time to first token is its prompt's
    # prefill, its latency that plus its decode steps at one running sequence
    from g10core.inference.preemption import _decode_model, serve_with_preemption

    P, G, B = 16, 4, 3
    t = inference_trace("opt-125m", P, G, B, gpu="T4")
    floor, at_b = _decode_model(t)
    prefill = P * layer_stats(t).gpu_s[0].sum() / (B * P)
    alone = prefill + sum(floor[d] + (at_b[d] - floor[d]) / B for d in range(1, G))
    arrivals = [0.0, 10.0, 20.0]
    r = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=2 * _kv_total(t), arrival_s=arrivals)
    assert alone < 10.0
    assert r.ttft_s == pytest.approx(prefill) and r.ttft_p99_s == pytest.approx(prefill)
    assert r.latency_mean_s == pytest.approx(alone) and r.latency_p99_s == pytest.approx(alone)
    assert r.total_s == pytest.approx(20.0 + alone) and r.last_arrival_s == 20.0
    assert r.tokens_per_s == pytest.approx(B * G / (20.0 + alone))
    # out of order, the same requests (served first come first served)
    assert serve_with_preemption(t, BIG_HOST, kv_budget_bytes=2 * _kv_total(t),
                                 arrival_s=arrivals[::-1]).to_dict() == r.to_dict()


def test_poisson_arrivals_are_seeded_and_at_their_rate():
    from g10core.inference.preemption import poisson_arrivals

    a = poisson_arrivals(4000, 5.0, seed=3)
    assert np.all(np.diff(a) > 0) and a[0] > 0
    assert np.array_equal(a, poisson_arrivals(4000, 5.0, seed=3))
    assert not np.array_equal(a, poisson_arrivals(4000, 5.0, seed=4))
    assert np.mean(np.diff(a)) == pytest.approx(1 / 5.0, rel=0.05)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="request rate"):
            poisson_arrivals(3, bad)


def test_continuous_batching_takes_in_requests_as_they_arrive(tmp_path, capsys):
    from g10core.inference.preemption import poisson_arrivals, serve_with_preemption

    t = inference_trace("opt-125m", 32, 16, 16, gpu="T4")
    once = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=2 * _kv_total(t))
    slow = serve_with_preemption(t, BIG_HOST, kv_budget_bytes=2 * _kv_total(t),
                                 arrival_s=poisson_arrivals(16, 1.0 / once.total_s, seed=1))
    # requests that arrive about one batch-time apart rarely wait: each one's first token comes
    # sooner than in the batch at once (where the last prefill waits for all before it)...
    assert slow.ttft_p50_s < once.ttft_p50_s
    # ...and nothing finishes before it arrives; the run ends after the last arrival
    assert slow.total_s > slow.last_arrival_s and slow.latency_mean_s > slow.ttft_s > 0
    with pytest.raises(ValueError, match="arrival times"):
        serve_with_preemption(t, BIG_HOST, arrival_s=[0.0] * 3)
    path = write_trace(t, tmp_path / "t.h5")
    assert main(["inference", "serve", str(path), "--machine", "flexgen-t4", "--request-rate", "2", "--seed", "1",
                 "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["last_arrival_s"] > 0 and out["ttft_p99_s"] >= out["ttft_p50_s"] > 0
    assert main(["inference", "serve", str(path), "--machine", "flexgen-t4", "--request-rate", "0"]) == 2
    assert "request rate" in capsys.readouterr().err
