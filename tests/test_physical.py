"""The physical kernel-time model (g10core.workload.physical) and the work a capture records."""
from __future__ import annotations

import math

import numpy as np
import pytest

from g10core.gpus import GPUS, gpu_model
from g10core.workload import physical as ph
from g10core.workload.physical import KernelWork, PhysicalModel, physical_model

torch = pytest.importorskip("torch")

from g10core.capture import capture, capture_family  # noqa: E402
from g10core.workload.trace import read_trace, write_trace  # noqa: E402

A100 = gpu_model("A100-40GB")


def one(flops=0.0, nbytes=0.0, unit=ph.UNIT_CUDA_FP32, kind=ph.KIND_OTHER, tiles=0, fill=1.0) -> KernelWork:
    return KernelWork(np.array([flops], float), np.array([nbytes], float), np.array([unit], np.uint8),
                      np.array([kind], np.uint8), np.array([tiles], np.int64), np.array([fill], np.float32))


# ---- the model's closed forms -------------------------------------------------------------------------

def test_a_compute_bound_gemm_runs_at_the_measured_fraction_of_the_tensor_core_peak():
    m = physical_model()
    flops = 1e12
    t = m.ideal_ns(one(flops, 1e6, ph.UNIT_TENSOR_BF16, ph.KIND_GEMM, tiles=2 * A100.sms), A100)[0]
    # 2 full waves: no wave loss; 86.9 % of 312 TFLOP/s (ml-engineering's measured A100 BF16 matmul)
    expected = 3.5e3 + flops / (0.869 * 312e12) * 1e9
    assert t == round(expected)


def test_a_memory_bound_kernel_streams_at_the_measured_fraction_of_hbm():
    m = physical_model()
    nbytes = 8e9
    t = m.ideal_ns(one(nbytes / 4, nbytes), A100)[0]
    assert t == round(3.5e3 + nbytes / (0.886 * 1555e9) * 1e9)   # BabelStream Triad share of the A100's 1,555 GB/s


def test_an_empty_kernel_costs_the_launch():
    assert physical_model().ideal_ns(one(), A100)[0] == 3500


def test_wave_and_tile_quantization():
    sms = A100.sms
    assert ph.wave_fraction(sms, sms) == 1.0 and ph.wave_fraction(sms + 1, sms) == pytest.approx((sms + 1) / (2 * sms))
    m = physical_model()
    full = m.ideal_ns(one(1e12, 0, ph.UNIT_TENSOR_FP16, ph.KIND_GEMM, tiles=sms), A100)[0]
    tail = m.ideal_ns(one(1e12, 0, ph.UNIT_TENSOR_FP16, ph.KIND_GEMM, tiles=sms + 1), A100)[0]
    half = m.ideal_ns(one(1e12, 0, ph.UNIT_TENSOR_FP16, ph.KIND_GEMM, tiles=sms, fill=0.5), A100)[0]
    body = full - 3500
    assert tail - 3500 == pytest.approx(body * 2 * sms / (sms + 1), rel=1e-6)
    assert half - 3500 == pytest.approx(2 * body, rel=1e-6)
    # the library's tile: a 64-wide output fills 64-wide tiles, not half of a 128-wide one
    # 4096 x 64 on 108 SMs: 64 x 64 tiles (64 of them, full) beat 256 x 128 ones (16, half empty)
    assert ph.best_tile(4096, 64, 1, sms) == (64, 1.0)
    # a weight gradient's split reduction: no wave term, the fullest tile
    assert ph.best_tile(64, 147, 1, sms, split_k=True)[1] == pytest.approx(64 * 147 / (3 * 64 * 64))
    assert ph.gemm_tiles(1000, 100, 3, 256, 128) == 3 * 4 * 1
    # split-K: a skinny product (8 x 10 outputs, 4096 deep) spreads its reduction over idle SMs,
    # 64 deep at least: one 64 x 64 tile in 64 splits
    tiles, fill = ph.best_tile(8, 10, 1, sms, k=4096)
    assert tiles == 64 and fill == pytest.approx(80 / 4096)
    assert ph.best_tile(8, 10, 1, sms, k=64) == (1, pytest.approx(80 / 4096))      # too shallow to split


def test_units_run_at_their_own_peaks():
    m = physical_model()
    f = 1e13
    times = {u: m.ideal_ns(one(f, 0, u, ph.KIND_GEMM, tiles=A100.sms), A100)[0] - 3500 for u in ph.UNIT_NAMES}
    assert times[ph.UNIT_TENSOR_TF32] == pytest.approx(2 * times[ph.UNIT_TENSOR_BF16], rel=1e-6)
    assert times[ph.UNIT_TENSOR_FP16] == times[ph.UNIT_TENSOR_BF16]
    # fp32 on the CUDA cores: 19.5 TFLOP/s at the SGEMM share (60 %)
    assert times[ph.UNIT_CUDA_FP32] == pytest.approx(f / (0.60 * 19.5e12) * 1e9, rel=1e-6)


def test_no_fraction_exceeds_peak_and_every_constant_is_cited():
    m = physical_model()
    fractions = [m.tensor_core_fraction, m.cuda_core_fraction, m.attention_fwd_fraction, m.attention_bwd_fraction,
                 m.memory_fraction, *m.tensor_core_fraction_by_gpu.values(), *m.attention_fraction_by_gpu.values()]
    assert all(0 < x <= 1 for x in fractions)
    with pytest.raises(ValueError, match="must be in \\(0, 1\\]"):
        PhysicalModel(tensor_core_fraction=1.2)
    with pytest.raises(ValueError, match="tensor_core_fraction_by_gpu"):
        PhysicalModel(tensor_core_fraction_by_gpu={"A100-40GB": 1.5})
    for name in ("tensor_core_fraction_by_gpu", "cuda_core_fraction", "attention_fwd_fraction", "memory_fraction",
                 "launch_overhead_us", "attention_fraction_by_gpu"):
        assert name in ph.SOURCES and len(ph.SOURCES[name]) > 40
    for name in m.tensor_core_fraction_by_gpu:
        assert name in GPUS


def test_no_kernel_beats_its_gpus_peak():
    # every captured kernel's FLOP rate and byte rate stay below the unit's peak and the HBM bandwidth
    trace = capture_family("gpt2", "small", batch=2, seq_len=64, dtype="bfloat16", master_weights="fp32",
                           layers=2, hidden=128, heads=4)
    w = trace.kernel_work
    t = trace.kernel_time_ideal_ns * 1e-9
    peak = ph.PhysicalModel.peak_flops_per_s(A100, w.unit)
    assert np.all(w.flops / t <= peak)
    assert np.all(w.bytes / t <= A100.memory_bandwidth_GBps * 1e9)


# ---- what a capture records ---------------------------------------------------------------------------

class _Layer(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x):
        return self.op(x)


def _work_of(trace, name):
    k = [i for i, n in enumerate(trace.kernel_name.tolist()) if n == name]
    assert k, f"no {name} in {sorted(set(trace.kernel_name.tolist()))}"
    w = trace.kernel_work
    return [(float(w.flops[i]), float(w.bytes[i]), int(w.unit[i]), int(w.kind[i])) for i in k]


def test_linear_flops_and_bytes_by_hand():
    b, i, o = 64, 256, 512
    with torch.device("meta"):
        model = torch.nn.Linear(i, o)
    trace = capture(model, torch.empty(b, i), optimizer="sgd")
    flops, nbytes, unit, kind = _work_of(trace, "aten::addmm")[0]
    assert flops == 2 * b * i * o
    assert nbytes == 4 * (o + b * i + i * o + b * o)           # bias, input, weight read; output written
    assert unit == ph.UNIT_CUDA_FP32 and kind == ph.KIND_GEMM  # fp32 products: CUDA cores (PyTorch's default)
    tf32 = capture(model, torch.empty(b, i), optimizer="sgd", tf32=True)
    assert _work_of(tf32, "aten::addmm")[0][2] == ph.UNIT_TENSOR_TF32


def test_convolution_flops_and_units_by_hand():
    n, c, k, h = 8, 16, 32, 28
    with torch.device("meta"):
        model = torch.nn.Conv2d(c, k, 3, padding=1, bias=False)
    trace = capture(model, torch.empty(n, c, h, h), optimizer="sgd")
    flops, nbytes, unit, kind = _work_of(trace, "aten::convolution")[0]
    assert flops == 2 * n * k * h * h * c * 9
    assert nbytes == 4 * (n * c * h * h + k * c * 9 + n * k * h * h)
    assert unit == ph.UNIT_TENSOR_TF32 and kind == ph.KIND_GEMM   # cuDNN's default: fp32 convolutions in TF32
    bwd = _work_of(trace, "aten::convolution_backward")[0]
    assert bwd[0] == 2 * n * k * h * h * c * 9     # the weight gradient (the input needs none)


def test_elementwise_and_batch_norm_bytes_by_hand():
    n = 1 << 16
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(n // 64, n // 64), _Layer(torch.relu))
    trace = capture(model, torch.empty(64, n // 64), optimizer="sgd")
    flops, nbytes, unit, kind = _work_of(trace, "aten::relu")[0]
    assert flops == n and nbytes == 2 * 4 * n and kind == ph.KIND_OTHER
    with torch.device("meta"):
        bn = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 1), torch.nn.BatchNorm2d(8))
    trace = capture(bn, torch.empty(16, 4, 32, 32), optimizer="sgd")
    x = 16 * 8 * 32 * 32 * 4
    fwd = _work_of(trace, "aten::native_batch_norm")[0]
    # read twice (statistics, then normalisation), written once, plus the per-channel vectors
    assert 3 * x <= fwd[1] < 3 * x + 4096
    bwd = _work_of(trace, "aten::native_batch_norm_backward")[0]
    assert 5 * x <= bwd[1] < 5 * x + 4096     # input and output gradient twice, input gradient once


@pytest.mark.parametrize("dtype,fwd,bwd", [
    ("float32", "aten::_scaled_dot_product_efficient_attention",
     "aten::_scaled_dot_product_efficient_attention_backward"),
    ("bfloat16", "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_flash_attention_backward"),
])
def test_attention_is_fused_by_default(dtype, fwd, bwd):
    layers, b, s, hidden, heads = 2, 2, 128, 64, 4
    mixed = dict(master_weights="fp32") if dtype != "float32" else {}
    trace = capture_family("gpt2", "small", batch=b, seq_len=s, dtype=dtype, layers=layers, hidden=hidden,
                           heads=heads, **mixed)
    assert trace.attrs["capture_attention"] == "fused" and "fused attention" in trace.source
    names = trace.kernel_name.tolist()
    assert names.count(fwd) == layers and names.count(bwd) == layers
    assert "aten::_softmax" not in names and "aten::bmm" not in names
    d = hidden // heads
    f_flops, _, unit, kind = _work_of(trace, fwd)[0]
    # q k^T and p v, 2 b h s^2 d FLOPs each, of which causal attention computes half
    assert f_flops == pytest.approx(4 * b * heads * s * s * d / 2)
    assert kind == ph.KIND_ATTENTION_FWD
    assert unit == (ph.UNIT_TENSOR_BF16 if dtype == "bfloat16" else ph.UNIT_CUDA_FP32)
    assert _work_of(trace, bwd)[0][3] == ph.KIND_ATTENTION_BWD
    eager = capture_family("gpt2", "small", batch=b, seq_len=s, dtype=dtype, layers=layers, hidden=hidden,
                           heads=heads, attention="eager", **mixed)
    assert eager.attrs["capture_attention"] == "eager" and fwd not in eager.kernel_name.tolist()
    assert "aten::bmm" in eager.kernel_name.tolist()


def test_attention_kind_is_checked():
    with pytest.raises(ValueError, match="attention = 'sparse'"):
        capture_family("gpt2", "small", batch=1, seq_len=8, layers=1, hidden=32, heads=2, attention="sparse")


# ---- the file and retargeting ---------------------------------------------------------------------------

def test_kernel_work_round_trips_through_format_4(tmp_path):
    trace = capture_family("resnet", "50", batch=2, seq_len=32, layers=(1, 1, 1, 1))
    back = read_trace(write_trace(trace, tmp_path / "r.h5"))
    assert back.attrs["schema_version"] == 5
    for name in ("flops", "bytes", "unit", "kind", "tiles", "fill"):
        assert np.array_equal(getattr(back.kernel_work, name), getattr(trace.kernel_work, name)), name


def test_a_bad_kernel_work_row_is_refused_by_name(tmp_path):
    import h5py

    from g10core.errors import TraceError

    trace = capture_family("gpt2", "small", batch=1, seq_len=8, layers=1, hidden=32, heads=2)
    path = write_trace(trace, tmp_path / "t.h5")
    with h5py.File(path, "r+") as f:
        data = f["kernel_work"][()]
        data["fill"][3] = 1.5
        del f["kernel_work"]
        ds = f.create_dataset("kernel_work", data=data)
        ds.attrs["units"] = '{"bytes": "bytes", "fill": "fraction", "flops": "FLOP", "kind": "code", ' \
                            '"tiles": "tiles", "unit": "code"}'
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert "/kernel_work" in str(err.value) and "fill" in str(err.value) and "row 3" in str(err.value)


def test_retargeting_a_physical_trace_gives_the_models_times_on_the_target():
    from g10core.workload.retarget import retarget

    trace = capture_family("gpt3", "125m", batch=4, seq_len=512, dtype="bfloat16", master_weights="fp32",
                           layers=2)
    moved, info = retarget(trace, "H100-SXM")
    assert info["method"].startswith("physical")
    direct = physical_model().ideal_ns(trace.kernel_work, "H100-SXM")
    assert np.all(np.abs(moved.kernel_time_ideal_ns - direct) <= 1 + 1e-6 * direct)
    # a big bf16 matrix product scales by the tensor-core ratio (measured shares of peak), not by HBM's
    k = int(np.argmax(trace.kernel_work.flops * (trace.kernel_work.kind == ph.KIND_GEMM)))
    ratio = trace.kernel_time_ideal_ns[k] / moved.kernel_time_ideal_ns[k]
    tensor_ratio = (0.803 * 989.5) / (0.869 * 312.0)
    assert ratio > 2.15 * 1.1                     # well above the HBM ratio (3350 / 1555)
    assert ratio <= tensor_ratio * (1 + 1e-6) + 1e-9
    assert math.isfinite(info["ideal_time_ratio"]) and info["ideal_time_ratio"] < 1
