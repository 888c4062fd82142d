"""GPU models (issue 34): the table, gpu.model and --gpu, the trace's profiled_gpu, retargeting."""
import json
from dataclasses import replace

import h5py
import numpy as np
import pytest

from g10core.cli import main
from g10core.config import preset, resolve
from g10core.config import model_values
from g10core.gpus import DEFAULT_GPU, GPUS, MODEL_KEYS, gpu_model
from g10core.workload.kerneltime import ProfilingGPU, load_calibration
from g10core.workload.retarget import retarget, retarget_times
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, Trace, TraceError, read_trace, write_trace

FIG11 = ("bert_base-b256", "vit-b1280", "inceptionv3-b1536", "resnet152-b1280", "senet154-b1024")
MiB = 1 << 20


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---- the table ---------------------------------------------------------------------------

def test_the_table_has_every_model_with_a_source_for_every_figure():
    assert {"A100-40GB", "A100-80GB", "H100-SXM", "H100-PCIe", "H200", "B200", "L40S", "RTX-4090", "T4", "A6000"} <= set(GPUS)
    for g in GPUS.values():
        assert g.memory_GiB > 0 and g.sms > 0 and g.memory_bandwidth_GBps > 0
        assert 0 < g.fp32_TFLOPs <= g.tf32_TFLOPs * 1.000001 <= g.fp16_TFLOPs and g.bf16_TFLOPs == g.fp16_TFLOPs
        assert g.fp8_TFLOPs is None or g.fp8_TFLOPs > g.fp16_TFLOPs
        for figure in ("memory_GiB", "sms", "memory_bandwidth_GBps", "fp32_TFLOPs", "tf32_TFLOPs", "fp16_TFLOPs",
                       "bf16_TFLOPs", "fp8_TFLOPs", "pcie"):
            assert g.sources.get(figure, "").strip(), (g.name, figure)
    assert GPUS["A100-40GB"].fp8_TFLOPs is None and GPUS["H100-SXM"].fp8_TFLOPs == 1979.0


def test_the_profiling_gpu_is_the_tables_a100():
    # each fact once: the calibrated model's A100 figures are the table's
    assert ProfilingGPU() == ProfilingGPU.of_model("A100-40GB") == load_calibration().gpu
    assert ProfilingGPU().model == "A100-40GB" and ProfilingGPU(name="other", fp32_peak_TFLOPs=1.0).model == ""


def test_an_unknown_name_suggests_one():
    with pytest.raises(ValueError, match=r"unknown GPU 'H100'; known: A100-40GB, .*did you mean 'H100-SXM'\?"):
        gpu_model("H100")


# ---- configuration -------------------------------------------------------------------------

def test_the_presets_are_the_profiling_gpu_on_the_papers_link():
    for name in ("default", "g10-artifact", "detailed"):
        cfg = preset(name)
        assert cfg.gpu.model == DEFAULT_GPU == "A100-40GB"
        assert cfg.link.bandwidth_GBps == 15.754 and cfg.gpu.memory_GiB == 40.0


def test_naming_a_model_sets_its_memory_and_link():
    cfg = resolve("default", None, ["gpu.model=H100-SXM"])
    assert (cfg.gpu.memory_GiB, cfg.gpu.sms, cfg.link.generation, cfg.link.lanes) == (80.0, 132, 5, 16)
    assert cfg.link.bandwidth_GBps == cfg.host.bandwidth_GBps == 63.015
    assert set(model_values("B200")) == set(MODEL_KEYS)


def test_an_explicit_key_wins_over_the_models(tmp_path):
    for sets in (["gpu.model=H100-SXM", "gpu.memory_GiB=40"], ["gpu.memory_GiB=40", "gpu.model=H100-SXM"]):
        cfg = resolve("default", None, sets)
        assert cfg.gpu.memory_GiB == 40.0 and cfg.link.generation == 5, sets
    toml = tmp_path / "c.toml"
    toml.write_text("[link]\nbandwidth_GBps = 10.0\n")
    cfg = resolve("default", toml, ["gpu.model=B200"])           # a key of the config file wins too
    assert cfg.link.bandwidth_GBps == 10.0 and cfg.gpu.memory_GiB == 180.0 and cfg.host.bandwidth_GBps == 63.015


def test_a_sweep_grid_over_the_model_keeps_the_set_keys_and_rebuilds(tmp_path):
    from g10core.experiments.sweep import config_from_dict, load_sweep

    f = tmp_path / "s.toml"
    f.write_text('traces = ["bert_base-b256"]\npolicies = ["ideal"]\n[set]\n"gpu.memory_GiB" = 40.0\n'
                 '[grid]\n"gpu.model" = ["A100-40GB", "H100-SXM"]\n')
    sw = load_sweep(f)
    got = {r.config["gpu"]["model"]: r.config for r in sw.runs}
    assert got["H100-SXM"]["gpu"]["memory_GiB"] == 40.0 and got["H100-SXM"]["link"]["generation"] == 5
    for d in got.values():                     # a worker rebuilds each run's configuration exactly
        assert config_from_dict(d).to_dict() == d
    sw = load_sweep(f, gpu="B200")             # --gpu: the grid's key still wins
    assert {r.config["gpu"]["model"] for r in sw.runs} == {"A100-40GB", "H100-SXM"}


# ---- the trace records its GPU ---------------------------------------------------------------

def _gemm_and_add(t11_gemm=20e6, t11_add=400e3) -> Trace:
    """Two kernels: C = A @ B (4096^3, fp32) and D = C + A (elementwise), 64 MiB tensors."""
    n = 4096 * 4096 * 4
    return Trace(
        model="toy", batch_size=1,
        tensor_size_bytes=np.full(4, n, np.int64), tensor_is_global=np.array([True, True, False, False]),
        tensor_name=np.array(["A", "B", "C", "D"]), kernel_name=np.array(["Linear_Forward", "Add_Forward"]),
        kernel_time_ideal_ns=np.array([t11_gemm, t11_add]),
        kernel_time_fault_all_ns=np.array([t11_gemm + 9e6, t11_add + 5e6]),
        kernel_time_fault_outputs_ns=np.array([t11_gemm + 2e6, t11_add / 2]),      # below t11: clamped
        kernel_workspace_bytes=np.zeros(2, np.int64),
        access_offsets=np.array([0, 3, 6]), access_tensor=np.array([0, 1, 2, 2, 0, 3], np.int32),
        access_mode=np.array([ACCESS_READ, ACCESS_READ, ACCESS_WRITE, ACCESS_READ, ACCESS_READ, ACCESS_WRITE],
                             np.uint8),
        profiling_gpu="hand-made")


def test_profiled_gpu_is_written_and_read_back_and_absent_means_a100(tmp_path):
    t = _gemm_and_add()
    assert t.profiled_gpu == "A100-40GB"
    p = write_trace(replace(t, profiled_gpu="H100-SXM"), tmp_path / "h.h5")
    assert read_trace(p).profiled_gpu == "H100-SXM"
    with h5py.File(p, "a") as f:               # a file written before the attribute existed
        del f.attrs["profiled_gpu"]
    assert read_trace(p).profiled_gpu == "A100-40GB"
    with h5py.File(p, "a") as f:
        f.attrs["profiled_gpu"] = "H100"
    with pytest.raises(TraceError, match="did you mean 'H100-SXM'"):
        read_trace(p)


def test_trace_info_shows_the_gpu_model(capsys, traces_dir):
    code, out, _ = run(capsys, "trace", "info", traces_dir / "bert_base-b256.h5")
    assert code == 0 and "GPU model" in out and "A100-40GB" in out


# ---- retargeting against closed forms -----------------------------------------------------------

def _closed_form(t11, coeff, flops, nbytes, src, tgt):
    c = lambda g: flops / (coeff.compute_efficiency * g.fp32_TFLOPs * 1e12)               # noqa: E731
    m = lambda g: nbytes / (coeff.memory_efficiency * g.memory_bandwidth_GBps * 1e9)     # noqa: E731
    o = coeff.overhead_us * 1e-6
    return max(1.0, round(t11 * (o + max(c(tgt), m(tgt))) / (o + max(c(src), m(src))))), c(src) >= m(src)


def test_retargeting_a_gemm_and_an_elementwise_kernel():
    t = _gemm_and_add()
    cal = load_calibration()
    src, tgt = GPUS["A100-40GB"], GPUS["H100-SXM"]
    n = 4096 * 4096 * 4
    t11, t10, t00, compute = retarget_times(t, "A100-40GB", "H100-SXM", cal)
    # GEMM: 2 M K N FLOPs, compute-bound on both GPUs: scales by the fp32 peaks (plus the fixed overhead)
    want, is_compute = _closed_form(20e6, cal.coefficients("Linear_Forward", "linear"), 2 * 4096.0 ** 3, 3 * n, src, tgt)
    assert is_compute and compute[0] and t11[0] == want
    # elementwise add: one FLOP per output element, memory-bound: scales by the memory bandwidths
    want, is_compute = _closed_form(400e3, cal.coefficients("Add_Forward", "elementwise"), 4096.0 ** 2, 3 * n,
                                    src, tgt)
    assert not is_compute and not compute[1] and t11[1] == want
    # fault times: their extra over t11 as profiled (t10 clamped to t11 first), the ideal part moved
    assert np.array_equal(t10 - t11, [2e6, 0.0]) and np.array_equal(t00 - t11, [9e6, 5e6])


def test_without_overheads_the_ratio_is_the_peak_or_the_bandwidth_ratio():
    cal = load_calibration()
    tiny = {k: replace(c, overhead_us=1e-9) for k, c in cal.classes.items()}
    cal = replace(cal, classes=tiny, ops={k: replace(c, overhead_us=1e-9) for k, c in cal.ops.items()})
    t = _gemm_and_add(20e9, 4e9)               # long kernels: rounding to whole ns is negligible
    t11, *_ = retarget_times(t, "A100-40GB", "B200", cal)
    assert t11[0] / 20e9 == pytest.approx(19.5 / 75.0, rel=1e-6)        # fp32 peaks
    assert t11[1] / 4e9 == pytest.approx(1555.0 / 7700.0, rel=1e-6)     # memory bandwidths


def test_the_same_gpu_is_not_retargeted_and_the_result_says_when_it_is():
    t = _gemm_and_add()
    same, info = retarget(t, "A100-40GB")
    assert same is t and info is None
    moved, info = retarget(t, "H100-SXM")
    assert moved.profiled_gpu == "H100-SXM" and moved.kernel_time_ideal_ns.sum() < t.kernel_time_ideal_ns.sum()
    assert info["from"] == "A100-40GB" and info["to"] == "H100-SXM" and 0 < info["ideal_time_ratio"] < 1
    assert (info["compute_bound_kernels"], info["memory_bound_kernels"]) == (1, 1)
    assert retarget(replace(t, profiled_gpu=""), "H100-SXM")[1] is None      # a GPU not in the table


@pytest.mark.parametrize("name", FIG11)
def test_a_faster_gpu_never_has_a_longer_ideal_time(name, load_shipped):
    trace = load_shipped(name)
    sums = [retarget(trace, g)[0].kernel_time_ideal_ns.sum() for g in ("A100-40GB", "H100-SXM", "B200")]
    assert sums[0] > sums[1] >= sums[2], sums


# ---- the command line -------------------------------------------------------------------------

def test_run_with_gpu_records_the_model_and_the_retargeting(capsys):
    code, out, err = run(capsys, "run", "bert_base-b256", "--policy", "ideal", "--gpu", "H100-SXM", "--json", "-")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["config"]["gpu"]["model"] == "H100-SXM" and doc["config"]["gpu"]["memory_GiB"] == 80.0
    rt = doc["trace"]["retargeted"]
    assert (rt["from"], rt["to"]) == ("A100-40GB", "H100-SXM") and 0 < rt["ideal_time_ratio"] < 1
    code, out, err = run(capsys, "run", "bert_base-b256", "--policy", "ideal", "--gpu", "B200")
    assert code == 0 and "A100-40GB -> B200: kernel times retargeted" in out


def test_the_default_run_is_not_retargeted(capsys):
    code, out, err = run(capsys, "run", "bert_base-b256", "--policy", "ideal", "--json", "-")
    doc = json.loads(out)
    assert code == 0 and doc["config"]["gpu"]["model"] == "A100-40GB" and "retargeted" not in doc["trace"]


def test_an_unknown_gpu_is_exit_2_with_one_line(capsys):
    code, out, err = run(capsys, "run", "bert_base-b256", "--policy", "ideal", "--gpu", "H100")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and out == ""
    assert "known: A100-40GB, A100-80GB, H100-SXM" in lines[0] and "did you mean 'H100-SXM'?" in lines[0]


def test_the_clock_warns_that_it_scales_no_kernel_time(capsys):
    code, out, err = run(capsys, "run", "bert_base-b256", "--policy", "ideal", "--set", "gpu.frequency_GHz=2.4")
    assert code == 0 and "simulation clock" in err and "gpu.model" in err


def test_reproduce_and_sweep_take_gpu(capsys, tmp_path):
    # --gpu on reproduce: the runs are retargeted and the text says the published column is the A100's
    code, out, err = run(capsys, "reproduce", "fig11", "--gpu", "H100-SXM", "--models", "bert_base-b256",
                         "--policies", "ideal", "--jobs", "1", "--no-progress", "--json", str(tmp_path / "f.json"))
    assert code == 0, err
    assert "GPU H100-SXM (gpu.model)" in out and "the paper's, on the A100-40GB" in out
    doc = json.loads((tmp_path / "f.json").read_text())
    assert doc["metadata"]["config"]["gpu"]["model"] == "H100-SXM"
    (row,) = doc["rows"]
    assert row["time_s"] < 0.5 * row["published_s"]            # bert_base-b256: x0.472 on the H100
    code, out, err = run(capsys, "reproduce", "fig11", "--models", "bert_base-b256", "--policies", "ideal",
                         "--jobs", "1", "--no-progress")
    assert code == 0 and "GPU " not in out
    # --gpu on sweep: the store's config hash is the H100's, the ideal time the retargeted one
    (tmp_path / "s.toml").write_text('traces = ["bert_base-b256"]\npolicies = ["ideal"]\n')
    for gpu in ("H100-SXM", None):
        out_dir = tmp_path / f"out-{gpu}"
        code, out, err = run(capsys, "sweep", str(tmp_path / "s.toml"), "--out", str(out_dir), "--jobs", "1",
                             "--no-progress", *(("--gpu", gpu) if gpu else ()))
        assert code == 0, err
    (h100,) = [json.loads(x) for x in (tmp_path / "out-H100-SXM" / "runs.jsonl").read_text().splitlines()]
    (a100,) = [json.loads(x) for x in (tmp_path / "out-None" / "runs.jsonl").read_text().splitlines()]
    assert h100["config_hash"] != a100["config_hash"]
    assert h100["time_s"] == pytest.approx(a100["time_s"] * 0.472, rel=2e-3)
