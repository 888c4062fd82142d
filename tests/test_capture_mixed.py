"""Mixed-precision capture (bf16 model, fp32 master weights and Adam moments) and the roles a capture records."""
from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from g10core.capture import capture_family  # noqa: E402
from g10core.capture.families import family_config, parameter_count  # noqa: E402
from g10core.cli import main  # noqa: E402
from g10core.codes import (ROLE_ACTIVATION, ROLE_GRADIENT, ROLE_INPUT, ROLE_OPTIMIZER_STATE,  # noqa: E402
                           ROLE_PARAMETER, ROLE_TEMPORARY, ROLE_UNKNOWN)
from g10core.workload import roles  # noqa: E402
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, read_trace, write_trace  # noqa: E402

SMALL = dict(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab_size=256)


@pytest.fixture(scope="module")
def mixed():
    return capture_family("llama", "1b", batch=2, seq_len=16, dtype="bfloat16", master_weights="fp32", **SMALL)


@pytest.fixture(scope="module")
def fp32():
    return capture_family("llama", "1b", batch=2, seq_len=16, **SMALL)


def test_model_state_is_16_bytes_per_parameter(mixed):
    n = parameter_count(family_config("llama", "1b", **SMALL))
    assert mixed.attrs["capture_n_parameters"] == n
    b = roles.bytes_by_role(mixed)
    # ZeRO's accounting: bf16 parameter 2 + bf16 gradient 2 + fp32 master, m and v 4 + 4 + 4
    assert b["parameter"] == 2 * n
    assert b["gradient"] == 2 * n
    assert b["optimizer_state"] == 12 * n
    assert b["parameter"] + b["gradient"] + b["optimizer_state"] == 16 * n
    assert mixed.attrs["capture_master_weights"] == "fp32" and mixed.attrs["capture_dtype"] == "bfloat16"
    assert mixed.attrs["capture_optimizer"] == "MasterWeightAdamW"
    assert "fp32 master weights" in mixed.source


def test_fp32_adamw_is_also_16_bytes_per_parameter_but_split_differently(fp32):
    n = fp32.attrs["capture_n_parameters"]
    b = roles.bytes_by_role(fp32)
    assert (b["parameter"], b["gradient"], b["optimizer_state"]) == (4 * n, 4 * n, 8 * n)
    assert fp32.attrs["capture_master_weights"] == ""


def test_the_step_reads_bf16_gradients_and_writes_bf16_parameters(mixed):
    opt = roles.optimizer_kernels(mixed)
    n = mixed.attrs
    assert opt.tolist() == list(range(n["capture_forward_kernels"] + n["capture_backward_kernels"], mixed.n_kernels))
    role = mixed.tensor_role
    is_opt = np.zeros(mixed.n_kernels, bool)
    is_opt[opt] = True
    k, t, m = mixed.access_kernel, mixed.access_tensor, mixed.access_mode
    # every parameter is overwritten once per step, by the copy from its master weights, and by nothing else
    pw = (role[t] == ROLE_PARAMETER) & ((m & ACCESS_WRITE) != 0)
    assert is_opt[k[pw]].all()
    assert set(mixed.kernel_name[k[pw]].tolist()) == {"aten::copy_"}
    assert np.bincount(t[pw], minlength=mixed.n_tensors)[role == ROLE_PARAMETER].tolist() == \
        [1] * int((role == ROLE_PARAMETER).sum())
    # every gradient is read by the step (widened to fp32 first), and each is as large as its bf16 parameter
    gr = (role[t] == ROLE_GRADIENT) & ((m & ACCESS_READ) != 0) & is_opt[k]
    assert set(t[gr].tolist()) == set(np.flatnonzero(role == ROLE_GRADIENT).tolist())
    # the optimizer state (master, m, v) is written only by the step
    sw = (role[t] == ROLE_OPTIMIZER_STATE) & ((m & ACCESS_WRITE) != 0)
    assert is_opt[k[sw]].all()
    assert int((role == ROLE_OPTIMIZER_STATE).sum()) == 3 * int((role == ROLE_PARAMETER).sum())


def test_layers_follow_the_module_path(mixed):
    role, layer = mixed.tensor_role, mixed.tensor_layer
    names = mixed.tensor_name
    # embedding, 2 blocks, final norm, head: 5 layers in forward order
    p = role == ROLE_PARAMETER
    assert sorted(set(layer[p].tolist())) == [0, 1, 2, 3, 4]
    assert layer[names == "param:token.weight"].tolist() == [0]
    assert set(layer[[n.startswith("param:blocks.1.") for n in names.tolist()]].tolist()) == {2}
    assert layer[names == "param:lm_head.weight"].tolist() == [4]
    for i in np.flatnonzero(np.isin(role, (ROLE_GRADIENT, ROLE_OPTIMIZER_STATE))).tolist():
        pname = names[i].split(":")[-1]
        assert layer[i] == layer[names == f"param:{pname}"][0], names[i]


def test_inputs_and_activations_are_recorded(mixed):
    role = mixed.tensor_role
    assert sorted(mixed.tensor_name[role == ROLE_INPUT].tolist()) == ["input:0", "target:0"]
    acts = np.flatnonzero(role == ROLE_ACTIVATION)
    assert acts.size > 10
    b = roles.forward_backward_boundary(mixed)
    assert b == mixed.attrs["capture_forward_kernels"]
    first_write = {int(t): int(k) for k, t, m in zip(mixed.access_kernel[::-1], mixed.access_tensor[::-1],
                                                      mixed.access_mode[::-1]) if m & ACCESS_WRITE}
    assert all(first_write[int(a)] < b for a in acts)


def test_temporaries_are_recorded_by_phase(mixed):
    # forward, backward and optimizer temporaries: every access of each within one recorded phase
    role, n = mixed.tensor_role, mixed.attrs["capture_n_parameters"]
    a = mixed.attrs
    ends = np.cumsum([a["capture_forward_kernels"], a["capture_backward_kernels"], a["capture_optimizer_kernels"]])
    phase = np.searchsorted(ends, mixed.access_kernel, side="right")
    t = mixed.access_tensor
    tmp = np.flatnonzero(role == ROLE_TEMPORARY)
    lo, hi = np.full(mixed.n_tensors, 9), np.full(mixed.n_tensors, -1)
    np.minimum.at(lo, t, phase)
    np.maximum.at(hi, t, phase)
    assert (lo[tmp] == hi[tmp]).all()
    size = mixed.tensor_size_bytes
    by_phase = [int(size[tmp[lo[tmp] == p]].sum()) for p in range(3)]
    assert by_phase[0] > 0 and by_phase[1] > 0
    # the step's fp32 temporaries (the widened gradient, the denominator, ...): 12 bytes per parameter
    assert by_phase[2] == 12 * n
    assert {nm.split(":")[0] for nm in mixed.tensor_name[tmp].tolist()} <= {"fwd", "bwd", "opt"}
    assert all(nm.startswith("buffer:") for nm in mixed.tensor_name[role == ROLE_UNKNOWN].tolist())


def test_roles_survive_the_file(mixed, tmp_path):
    back = read_trace(write_trace(mixed, tmp_path / "m.h5"))
    assert back.attrs["schema_version"] == 5
    assert np.array_equal(back.tensor_role, mixed.tensor_role)
    assert np.array_equal(back.tensor_layer, mixed.tensor_layer)


def test_bf16_matrix_products_run_at_the_bf16_peak(mixed, fp32):
    # the same products: in bf16 the roofline's compute bound is the tensor-core bf16 peak (312 TFLOP/s on
    # the A100) instead of TF32 (156) or fp32, so no matrix product is slower than its fp32 twin
    def mm_times(tr):
        return tr.kernel_time_ideal_ns[tr.kernel_name == "aten::mm"]
    a, b = mm_times(mixed), mm_times(fp32)
    assert a.size == b.size > 0
    assert (a <= b + 1e-9).all()
    assert json.loads(mixed.attrs["calibration_gpu"])["bf16_peak_TFLOPs"] == 312.0


def test_master_weights_need_a_16_bit_model():
    with pytest.raises(ValueError, match="16-bit"):
        capture_family("llama", "1b", batch=1, seq_len=8, master_weights="fp32", **SMALL)
    with pytest.raises(ValueError, match="adamw or adam"):
        capture_family("llama", "1b", batch=1, seq_len=8, dtype="bfloat16", master_weights="fp32",
                       optimizer="sgd", **SMALL)


def test_cli_capture_mixed_precision(tmp_path, capsys):
    out = tmp_path / "g.h5"
    code = main(["trace", "capture", "gpt2", "--batch", "1", "--seq-len", "8", "--dtype", "bfloat16",
                 "--master-weights", "fp32", "-o", str(out), "--json", "-"])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    info = json.loads(stdout)
    n = info["attrs"]["capture_n_parameters"]
    b = info["bytes_by_role"]
    assert b["parameter"] + b["gradient"] + b["optimizer_state"] == 16 * n
    assert read_trace(out).attrs["capture_master_weights"] == "fp32"
    code = main(["trace", "capture", "gpt2", "--batch", "1", "--seq-len", "8", "--master-weights", "fp32",
                 "-o", str(tmp_path / "x.h5")])
    _, err = capsys.readouterr()
    assert code == 2 and "--dtype bfloat16" in err and err.count("\n") == 1
    assert not (tmp_path / "x.h5").exists()
