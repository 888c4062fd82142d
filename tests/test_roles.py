"""Tensor roles (trace format version 2; temporary: 3): stored, read back, inferred for version-1 files."""
import dataclasses
import json

import h5py
import numpy as np
import pytest

from g10core import codes
from g10core.codes import (ROLE_ACTIVATION, ROLE_GRADIENT, ROLE_INPUT, ROLE_NAMES, ROLE_OPTIMIZER_STATE,
                           ROLE_PARAMETER, ROLE_TEMPORARY, ROLE_UNKNOWN, ROLE_WORKSPACE)
from g10core.workload import roles
from g10core.workload.trace import (ACCESS_READ, ACCESS_WRITE, SCHEMA_VERSION, TENSOR_DTYPE_V1, Trace,
                                    TraceError, read_trace, validate_trace, write_trace)

R, W = ACCESS_READ, ACCESS_WRITE
U, P, G, S, A, WS, IN, TMP = (ROLE_UNKNOWN, ROLE_PARAMETER, ROLE_GRADIENT, ROLE_OPTIMIZER_STATE, ROLE_ACTIVATION,
                              ROLE_WORKSPACE, ROLE_INPUT, ROLE_TEMPORARY)

# A two-layer network, one iteration, by hand (tensor: name, bytes, global):
#  0 x (input) 1 W1 2 a1 3 ws (workspace of kernel 0) 4 y 5 dy 6 gW2 7 da1 8 gW1 9 W2 10 m2 (Adam state of W2)
TENSORS = [("x", 4096, False), ("W1", 8192, True), ("a1", 4096, False), ("ws", 4096, False),
           ("y", 4096, False), ("dy", 4096, False), ("gW2", 12288, False), ("da1", 4096, False),
           ("gW1", 8192, False), ("W2", 12288, True), ("m2", 12288, True)]
KERNELS = [  # name, workspace bytes, accesses
    ("Linear_Forward", 4000, [(0, R), (1, R), (2, W), (3, W)]),
    ("Linear_Forward", 0, [(2, R), (9, R), (4, W)]),
    ("makeLoss", 0, [(4, R), (5, W)]),
    ("Linear_Backward", 0, [(5, R), (2, R), (9, R), (6, W), (7, W)]),
    ("Linear_Backward", 0, [(7, R), (0, R), (8, W)]),
    ("Apply_Grad", 0, [(6, R), (10, R | W), (9, R | W)]),
    ("Apply_Grad", 0, [(8, R), (1, R | W)]),
]
# dy and da1: backward temporaries (made and last read in backward, not read by the optimizer)
EXPECTED_ROLE = [IN, P, A, WS, A, TMP, G, TMP, G, P, S]
EXPECTED_LAYER = [-1, 0, -1, -1, -1, -1, 1, -1, 0, 1, 1]


def hand_trace(**fields) -> Trace:
    acc = [a for _, _, accs in KERNELS for a in accs]
    offsets = np.cumsum([0] + [len(accs) for _, _, accs in KERNELS])
    K = len(KERNELS)
    return Trace(
        model="two-layer", batch_size=1,
        tensor_size_bytes=np.array([s for _, s, _ in TENSORS], np.int64),
        tensor_is_global=np.array([g for _, _, g in TENSORS]),
        tensor_name=np.array([n for n, _, _ in TENSORS]),
        kernel_name=np.array([n for n, _, _ in KERNELS]),
        kernel_time_ideal_ns=np.full(K, 10.0), kernel_time_fault_all_ns=np.full(K, 30.0),
        kernel_time_fault_outputs_ns=np.full(K, 20.0),
        kernel_workspace_bytes=np.array([w for _, w, _ in KERNELS], np.int64),
        access_offsets=offsets.astype(np.int64), access_tensor=np.array([t for t, _ in acc], np.int32),
        access_mode=np.array([m for _, m in acc], np.uint8), source="hand-made", profiling_gpu="none", **fields)


def test_role_codes_are_the_shared_ones():
    assert ROLE_NAMES == {0: "unknown", 1: "parameter", 2: "gradient", 3: "optimizer_state", 4: "activation",
                          5: "workspace", 6: "input", 7: "temporary", 8: "kv_cache"}
    for code, name in ROLE_NAMES.items():
        assert getattr(codes, "ROLE_" + name.upper()) == code
        assert roles.role_code(name) == code
    with pytest.raises(ValueError, match="parameter"):
        roles.role_code("weights")


def test_inference_on_a_hand_made_trace():
    t = hand_trace()
    role, layer = roles.infer_roles(t)
    assert role.dtype == np.int8 and layer.dtype == np.int32
    assert [ROLE_NAMES[r] for r in role.tolist()] == [ROLE_NAMES[r] for r in EXPECTED_ROLE]
    assert layer.tolist() == EXPECTED_LAYER
    # a trace made without roles gets the inferred ones
    assert t.tensor_role.tolist() == EXPECTED_ROLE and t.tensor_layer.tolist() == EXPECTED_LAYER
    assert roles.forward_backward_boundary(t) == 2
    assert roles.optimizer_kernels(t).tolist() == [5, 6]


def test_bytes_by_role_adds_unrounded_sizes():
    got = roles.bytes_by_role(hand_trace())
    assert got == {"unknown": 0, "parameter": 8192 + 12288, "gradient": 12288 + 8192, "optimizer_state": 12288,
                   "activation": 8192, "workspace": 4096, "input": 4096, "temporary": 8192, "kv_cache": 0}
    assert sum(got.values()) == sum(s for _, s, _ in TENSORS)


def test_no_boundary_leaves_the_training_roles_unknown():
    t = hand_trace()
    t = dataclasses.replace(t, kernel_name=np.array(["k"] * t.n_kernels), tensor_role=None, tensor_layer=None)
    assert roles.forward_backward_boundary(t) == -1
    role = t.tensor_role.tolist()
    assert set(role) <= {U, IN, WS}
    assert role[3] == WS and role[0] == IN


def test_captured_phases_give_the_boundary_and_the_optimizer():
    t = hand_trace()
    t = dataclasses.replace(t, attrs={"capture_forward_kernels": 3, "capture_backward_kernels": 2})
    assert roles.forward_backward_boundary(t) == 3
    assert roles.optimizer_kernels(t).tolist() == [5, 6]


def test_capture_names_decide_and_give_layers():
    names = ["input:0", "param:h.0.w", "a1", "workspace:mm#0", "y", "dy", "grad:h.1.w", "da1", "grad:h.0.w",
             "param:h.1.w", "optim:exp_avg:h.1.w"]
    t = dataclasses.replace(hand_trace(), tensor_name=np.array(names), tensor_role=None, tensor_layer=None)
    assert t.tensor_role.tolist() == EXPECTED_ROLE
    assert t.tensor_layer.tolist() == EXPECTED_LAYER
    # a buffer (e.g. batch norm statistics) is not a parameter, whatever the graph says
    names[9] = "buffer:h.1.w"
    t = dataclasses.replace(t, tensor_name=np.array(names), tensor_role=None, tensor_layer=None)
    assert t.tensor_role[9] == U and t.tensor_layer[9] == -1


def test_roles_written_and_read_back(tmp_path):
    role = np.array([IN, P, A, WS, A, U, G, TMP, G, P, S], np.int8)
    role[5] = ROLE_GRADIENT   # stored roles are taken as given, not re-inferred
    role[4] = U
    layer = np.array(EXPECTED_LAYER, np.int32)
    layer[1] = 7
    t = hand_trace(tensor_role=role, tensor_layer=layer)
    path = write_trace(t, tmp_path / "t.h5")
    with h5py.File(path) as f:
        assert f.attrs["schema_version"] == SCHEMA_VERSION == 5
        assert f["tensors"].dtype.names == ("size_bytes", "is_global", "role", "layer")
    back = read_trace(path)
    assert back.tensor_role.dtype == np.int8 and back.tensor_layer.dtype == np.int32
    assert back.tensor_role.tolist() == role.tolist()      # the unknown activation y stays unknown
    assert back.tensor_role[7] == ROLE_TEMPORARY
    assert back.tensor_layer.tolist() == layer.tolist()


def test_a_version_2_file_reads_its_temporaries_from_its_unknowns(tmp_path):
    # version 2 had no temporary role: what the rules call one was stored unknown
    role = np.array(EXPECTED_ROLE, np.int8)
    role[role == TMP] = U
    role[2] = U                   # an unknown the rules call an activation stays unknown (stored roles win)
    path = write_trace(hand_trace(tensor_role=role, tensor_layer=np.array(EXPECTED_LAYER, np.int32)),
                       tmp_path / "v2.h5")
    with h5py.File(path, "r+") as f:
        f.attrs["schema_version"] = 2
    back = read_trace(path)
    assert back.attrs["schema_version"] == 2
    want = list(EXPECTED_ROLE)
    want[2] = U
    assert back.tensor_role.tolist() == want
    assert back.tensor_layer.tolist() == EXPECTED_LAYER
    # and a version-2 file cannot hold the code
    with h5py.File(path, "r+") as f:
        rows = f["tensors"][()]
        rows["role"][5] = TMP
        f["tensors"][...] = rows
    with pytest.raises(TraceError, match="schema_version 2 allows role codes 0..6") as info:
        read_trace(path)
    assert info.value.row == 5


def _phased_trace(extra_tensors, extra_accesses) -> Trace:
    """The hand trace with more tensors and accesses (kernel -> [(tensor, mode)])."""
    t = hand_trace()
    tensors = TENSORS + extra_tensors
    kernels = [(n, w, accs + extra_accesses.get(k, [])) for k, (n, w, accs) in enumerate(KERNELS)]
    acc = [a for _, _, accs in kernels for a in accs]
    return dataclasses.replace(
        t, tensor_size_bytes=np.array([s for _, s, _ in tensors], np.int64),
        tensor_is_global=np.array([g for _, _, g in tensors]), tensor_name=np.array([n for n, _, _ in tensors]),
        access_offsets=np.cumsum([0] + [len(a) for _, _, a in kernels]).astype(np.int64),
        access_tensor=np.array([x for x, _ in acc], np.int32), access_mode=np.array([m for _, m in acc], np.uint8),
        tensor_role=None, tensor_layer=None)


def test_temporaries_of_each_phase():
    # 11 ft: forward temporary (kernel 0 -> kernel 1, dead before the loss)
    # 12 ot: optimizer temporary (made and read by the Apply_Grad kernels)
    # 13 dead: a backward output no kernel reads
    # 14 cross: read in forward, written again in backward: no phase holds it, stays unknown
    # 15 g: a global only a forward kernel writes (a running mean): unknown
    t = _phased_trace([("ft", 4096, False), ("ot", 4096, False), ("dead", 4096, False), ("cross", 4096, False),
                       ("g", 4096, True)],
                      {0: [(11, W), (14, W), (15, R | W)], 1: [(11, R), (14, R)], 4: [(13, W), (14, W)],
                       5: [(12, W)], 6: [(12, R)]})
    validate_trace(t)
    assert t.tensor_role.tolist() == EXPECTED_ROLE + [TMP, TMP, TMP, U, U]
    assert t.tensor_role[2] == A            # a1: saved for backward, an activation
    assert t.tensor_layer.tolist() == EXPECTED_LAYER + [-1] * 5
    # the same from a capture's names and recorded phases: unnamed tensors take the graph's roles
    names = ["input:0", "param:h.0.w", "fwd:mm#0", "workspace:mm#0", "fwd:mm#1", "bwd:loss#2", "grad:h.1.w",
             "bwd:mm#3", "grad:h.0.w", "param:h.1.w", "optim:exp_avg:h.1.w", "fwd:mul#0", "opt:mul#5",
             "bwd:mm#4", "fwd:x#0", "buffer:rm"]
    c = dataclasses.replace(t, tensor_name=np.array(names), tensor_role=None, tensor_layer=None,
                            attrs={"capture_forward_kernels": 2, "capture_backward_kernels": 3})
    assert c.tensor_role.tolist() == EXPECTED_ROLE + [TMP, TMP, TMP, U, U]


def _write_v1(t: Trace, path):
    """A version-1 file (as g10core before tensor roles wrote it): /tensors without role and layer."""
    write_trace(t, path)
    with h5py.File(path, "r+") as f:
        old = f["tensors"][()]
        del f["tensors"]
        v1 = np.empty(old.shape[0], TENSOR_DTYPE_V1)
        for name in TENSOR_DTYPE_V1.names:
            v1[name] = old[name]
        f.create_dataset("tensors", data=v1)
        f.attrs["schema_version"] = 1


def test_a_version_1_file_is_read_with_inferred_roles(tmp_path):
    role = np.zeros(len(TENSORS), np.int8)        # what was written is lost in version 1
    path = tmp_path / "v1.h5"
    _write_v1(hand_trace(tensor_role=role, tensor_layer=np.full(len(TENSORS), -1, np.int32)), path)
    back = read_trace(path)
    assert back.attrs["schema_version"] == 1
    assert back.tensor_role.tolist() == EXPECTED_ROLE
    assert back.tensor_layer.tolist() == EXPECTED_LAYER


def test_a_version_2_file_without_roles_is_refused(tmp_path):
    path = tmp_path / "v2.h5"
    _write_v1(hand_trace(), path)
    with h5py.File(path, "r+") as f:
        f.attrs["schema_version"] = 2
    with pytest.raises(TraceError, match="role"):
        read_trace(path)


@pytest.mark.parametrize("col, value, words", [("tensor_role", 9, "role code"), ("tensor_role", -1, "role code"),
                                               ("tensor_layer", -2, ">= -1")])
def test_bad_roles_are_refused(col, value, words):
    t = hand_trace()
    arr = getattr(t, col).copy()
    arr[4] = value
    with pytest.raises(TraceError, match=words) as info:
        validate_trace(dataclasses.replace(t, **{col: arr}))
    assert info.value.row == 4


def test_roles_of_the_wrong_dtype_or_length_are_refused():
    t = hand_trace()
    with pytest.raises(TraceError, match="int8"):
        validate_trace(dataclasses.replace(t, tensor_role=t.tensor_role.astype(np.int64)))
    with pytest.raises(TraceError, match="rows"):
        validate_trace(dataclasses.replace(t, tensor_layer=t.tensor_layer[:-1]))


def test_shipped_bert_roles_from_the_graph(traces_dir):
    # a converted G10 artifact trace (version 1): SGD, so no optimizer state; every Apply_Grad
    # updates one parameter with one gradient
    t = read_trace(traces_dir / "bert_base-b256.h5")
    role = t.tensor_role
    n = {ROLE_NAMES[c]: int((role == c).sum()) for c in ROLE_NAMES}
    assert n["optimizer_state"] == 0
    assert n["parameter"] > 100 and n["gradient"] >= n["parameter"] and n["activation"] > 100
    opt = roles.optimizer_kernels(t)
    assert set(t.kernel_name[opt].tolist()) == {"Apply_Grad", "Linear_Apply_Grad_Weight"}
    assert roles.forward_backward_boundary(t) == int(np.flatnonzero(t.kernel_name == "makeLoss")[0])
    # every parameter and gradient has a layer, and each layer's gradient bytes are its parameters' bytes
    params = role == ROLE_PARAMETER
    assert (t.tensor_layer[params] >= 0).all()
    assert (t.tensor_layer[role == ROLE_GRADIENT] >= 0).all()
    assert int(t.tensor_size_bytes[params].sum()) <= int(t.tensor_size_bytes[t.tensor_is_global].sum())
    json.dumps(roles.bytes_by_role(t))


def test_trace_info_json_has_bytes_by_role(tmp_path, capsys):
    from g10core.cli import main

    path = write_trace(hand_trace(), tmp_path / "t.h5")
    assert main(["trace", "info", str(path), "--json", "-"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["schema_version"] == SCHEMA_VERSION
    assert info["bytes_by_role"] == roles.bytes_by_role(hand_trace())
    assert info["bytes_by_role"]["temporary"] == 8192
    assert info["bytes_by_role"]["optimizer_state"] == 12288
    assert main(["trace", "info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "bytes by role" in out and "optimizer state 12.0 KiB" in out and "inferred" not in out


def test_data_loaded_by_a_kernel_that_reads_nothing_is_input():
    # the CNN graphs' first kernel (LoadData_A0) writes the batch and reads no tensor
    t = hand_trace()
    acc = [(0, W)] + [a for _, _, accs in KERNELS for a in accs]
    offsets = np.cumsum([0, 1] + [len(accs) for _, _, accs in KERNELS]).astype(np.int64)
    t = dataclasses.replace(
        t, kernel_name=np.array(["LoadData_A0"] + t.kernel_name.tolist()),
        kernel_time_ideal_ns=np.full(8, 10.0), kernel_time_fault_all_ns=np.full(8, 30.0),
        kernel_time_fault_outputs_ns=np.full(8, 20.0),
        kernel_workspace_bytes=np.concatenate(([0], t.kernel_workspace_bytes)), access_offsets=offsets,
        access_tensor=np.array([a for a, _ in acc], np.int32), access_mode=np.array([m for _, m in acc], np.uint8),
        tensor_role=None, tensor_layer=None)
    validate_trace(t)
    assert t.tensor_role.tolist() == EXPECTED_ROLE      # x is still the input (and not an activation)
    assert roles.optimizer_kernels(t).tolist() == [6, 7]
