"""The in-memory Trace, its validation, and the HDF5 writer/reader round trip."""
import dataclasses
import os
import pickle
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import assert_same_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g10core.policies import HINT_DTYPE, HINT_FREE, HINT_TO_GPU, HINT_TO_SSD
from g10core.workload.synth import synthesize
from g10core.workload.trace import (
    ACCESS_READ, ACCESS_WRITE, CHUNK_BYTES, SCHEMA, SCHEMA_HISTORY, SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS, Trace, TraceError, kernel_working_set_bytes, read_trace,
    summarize, validate_trace, write_trace,
)

R, W = ACCESS_READ, ACCESS_WRITE


def tiny_trace(**changes) -> Trace:
    """3 tensors (1 global page; 5000 B = 2 pages; 3 pages), 2 kernels."""
    t = Trace(
        model="tiny", batch_size=2,
        tensor_size_bytes=np.array([4096, 5000, 12288], np.int64),
        tensor_is_global=np.array([True, False, False]),
        tensor_name=np.array(["w", "a", "g"]),
        kernel_name=np.array(["fwd", "bwd"]),
        kernel_time_ideal_ns=np.array([10.0, 20.0]),
        kernel_time_fault_all_ns=np.array([30.0, 60.0]),
        kernel_time_fault_outputs_ns=np.array([15.0, 25.0]),
        kernel_workspace_bytes=np.array([0, 0], np.int64),
        access_offsets=np.array([0, 2, 4], np.int64),
        access_tensor=np.array([0, 1, 1, 2], np.int32),
        access_mode=np.array([R, W, R, R | W], np.uint8),
        source="hand-made", profiling_gpu="none",
    )
    return dataclasses.replace(t, **changes)


# ---- derived quantities (closed forms on the hand-made trace) -------------------

def test_tiny_trace_derived_values():
    t = tiny_trace()
    assert t.tensor_pages.tolist() == [1, 2, 3]
    assert t.tensor_first_page.tolist() == [0, 1, 3]  # globals first, then the rest
    assert t.footprint_bytes == 6 * 4096
    assert t.global_bytes == 4096
    assert kernel_working_set_bytes(t).tolist() == [3 * 4096, 5 * 4096]
    assert t.kernel_inputs(1).tolist() == [1, 2] and t.kernel_outputs(1).tolist() == [2]
    s = summarize(t, gpu_memory_GiB=1.0)
    assert s["memory_ratio_percent"] == pytest.approx(100 * 6 * 4096 / 2**30)
    assert s["ideal_time_s"] == pytest.approx(30e-9)
    assert s["max_kernel_working_set_kernel"] == 1
    assert s["schema_version"] is None  # not read from a file


# ---- round trip ---------------------------------------------------------------------

def test_round_trip_tiny(tmp_path):
    t = tiny_trace(attrs={"note": "x", "answer": 42, "ratio": 0.5, "flag": True})
    path = write_trace(t, tmp_path / "tiny.h5")
    back = read_trace(path)
    assert_same_trace(t, back)
    assert back.attrs["note"] == "x" and back.attrs["answer"] == 42
    assert back.attrs["ratio"] == 0.5 and back.attrs["flag"] is True
    assert back.attrs["schema_version"] == SCHEMA_VERSION
    assert back.attrs["creator"].startswith("g10core ")


def test_round_trip_shipped_trace(tmp_path, load_shipped):
    t = load_shipped("vit-b1280")
    back = read_trace(write_trace(t, tmp_path / "vit.h5"))
    assert_same_trace(t, back)


def test_round_trip_with_hints(tmp_path, small_trace):
    hints = np.zeros(3, HINT_DTYPE)
    hints["kernel"] = [0, 5, 63]
    hints["tensor"] = [1, 2, 0]
    hints["action"] = [HINT_TO_GPU, HINT_TO_SSD, HINT_FREE]
    t = dataclasses.replace(small_trace, hints=hints, hints_policy="g10")
    back = read_trace(write_trace(t, tmp_path / "h.h5"))
    assert_same_trace(t, back)
    with h5py.File(tmp_path / "h.h5") as f:
        assert f["hints"].attrs["policy"] == "g10"


def test_unicode_names_round_trip(tmp_path):
    t = tiny_trace(tensor_name=np.array(["w", "ä·活性", ""]), model="模型")
    assert_same_trace(t, read_trace(write_trace(t, tmp_path / "u.h5")))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=st.sampled_from(["training", "random"]), n_kernels=st.integers(2, 120),
       seed=st.integers(0, 2**32), pages=st.integers(400, 10**7))
def test_round_trip_synthetic(pattern, n_kernels, seed, pages):
    t = synthesize(n_kernels, pages * 4096, pattern=pattern, seed=seed)
    with tempfile.TemporaryDirectory() as d:
        back = read_trace(write_trace(t, Path(d) / "s.h5"))
    assert_same_trace(t, back)
    assert back.attrs["synth_seed"] == seed


# ---- file layout ----------------------------------------------------------------------

def test_file_layout_root_attributes(tmp_path):
    path = write_trace(tiny_trace(), tmp_path / "t.h5")
    with h5py.File(path) as f:
        assert f.attrs["schema"] == SCHEMA == "g10core-trace"
        assert f.attrs["schema_version"] == SCHEMA_VERSION
        assert f.attrs["model"] == "tiny" and f.attrs["batch_size"] == 2
        assert set(f) == {"tensors", "tensor_names", "kernels", "kernel_names", "accesses"}
        assert set(f["accesses"]) == {"offsets", "tensor", "mode"}
        assert f["kernels"].dtype.names == ("time_ideal_ns", "time_fault_all_ns",
                                            "time_fault_outputs_ns", "workspace_bytes")


def test_every_dataset_chunked_compressed_and_chunks_about_1MiB(tmp_path):
    # 300k kernels each touching tensor 0: /accesses/* are several chunks long
    K = 300_000
    t = Trace(
        model="long", batch_size=1,
        tensor_size_bytes=np.array([4096], np.int64), tensor_is_global=np.array([False]),
        tensor_name=np.array(["t"]), kernel_name=np.full(K, "k"),
        kernel_time_ideal_ns=np.ones(K), kernel_time_fault_all_ns=np.ones(K),
        kernel_time_fault_outputs_ns=np.ones(K), kernel_workspace_bytes=np.zeros(K, np.int64),
        access_offsets=np.arange(K + 1, dtype=np.int64), access_tensor=np.zeros(K, np.int32),
        access_mode=np.full(K, R, np.uint8))
    path = write_trace(t, tmp_path / "long.h5")
    seen = []
    with h5py.File(path) as f:
        def check(name, obj):
            if isinstance(obj, h5py.Dataset):
                seen.append(name)
                assert obj.compression == "gzip" and obj.shuffle and obj.fletcher32, name
                rows = obj.chunks[0]
                assert rows <= obj.shape[0], name
                assert rows * obj.dtype.itemsize <= max(CHUNK_BYTES, obj.dtype.itemsize), name
                if obj.shape[0] * obj.dtype.itemsize >= CHUNK_BYTES:  # big enough to fill one
                    assert rows * obj.dtype.itemsize > CHUNK_BYTES // 2, name
        f.visititems(check)
        assert f["accesses/offsets"].chunks[0] == CHUNK_BYTES // 8
    assert len(seen) == 7
    assert_same_trace(t, read_trace(path))


def test_writer_is_deterministic(tmp_path, small_trace):
    a = write_trace(small_trace, tmp_path / "a.h5").read_bytes()
    b = write_trace(small_trace, tmp_path / "b.h5").read_bytes()
    assert a == b


# ---- atomic writes ------------------------------------------------------------------------

def test_write_leaves_no_temporary_files(tmp_path):
    write_trace(tiny_trace(), tmp_path / "t.h5")
    assert os.listdir(tmp_path) == ["t.h5"]


def test_invalid_trace_is_not_written_and_old_file_survives(tmp_path):
    path = write_trace(tiny_trace(), tmp_path / "t.h5")
    before = path.read_bytes()
    bad = tiny_trace(tensor_size_bytes=np.array([4096, -1, 8], np.int64))
    with pytest.raises(TraceError):
        write_trace(bad, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["t.h5"]


def test_failed_write_removes_temporary_and_keeps_old_file(tmp_path, monkeypatch):
    path = write_trace(tiny_trace(), tmp_path / "t.h5")
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(h5py.Group, "create_group", boom)
    with pytest.raises(OSError, match="disk full"):
        write_trace(tiny_trace(model="other"), path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["t.h5"]


def test_write_into_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_trace(tiny_trace(), tmp_path / "nope" / "t.h5")


# ---- TraceError ----------------------------------------------------------------------------

def test_trace_error_is_one_line_naming_everything():
    e = TraceError("x/t.h5", "/kernels", "got nan;\n must be finite", row=17, field="time_ideal_ns")
    assert str(e) == "x/t.h5: /kernels, row 17, field time_ideal_ns: got nan; must be finite"
    assert (e.path, e.dataset, e.row, e.field) == ("x/t.h5", "/kernels", 17, "time_ideal_ns")
    assert "\n" not in str(e)
    root = TraceError(None, "/", "unsupported", field="schema_version")
    assert str(root) == "<in-memory trace>: /, attribute schema_version: unsupported"
    assert isinstance(e, ValueError)


def test_trace_error_pickles():
    e = TraceError("t.h5", "/accesses/tensor", "out of range", row=3)
    back = pickle.loads(pickle.dumps(e))
    assert str(back) == str(e) and back.row == 3 and back.dataset == "/accesses/tensor"


def test_schema_history_covers_every_supported_version():
    assert SCHEMA_VERSION in SUPPORTED_SCHEMA_VERSIONS
    assert set(SUPPORTED_SCHEMA_VERSIONS) <= set(SCHEMA_HISTORY)


# ---- in-memory validation: each broken invariant names dataset, row and field ----------------

def _f64(*v):
    return np.array(v, np.float64)


BROKEN = {
    "negative size": (dict(tensor_size_bytes=np.array([4096, -5, 8], np.int64)), "/tensors", 1, "size_bytes"),
    "zero size": (dict(tensor_size_bytes=np.array([0, 5, 8], np.int64)), "/tensors", 0, "size_bytes"),
    "nan ideal time": (dict(kernel_time_ideal_ns=_f64(1, np.nan)), "/kernels", 1, "time_ideal_ns"),
    "inf fault time": (dict(kernel_time_fault_all_ns=_f64(np.inf, 1)), "/kernels", 0, "time_fault_all_ns"),
    "negative time": (dict(kernel_time_fault_outputs_ns=_f64(1, -1)), "/kernels", 1, "time_fault_outputs_ns"),
    "negative workspace": (dict(kernel_workspace_bytes=np.array([0, -1], np.int64)), "/kernels", 1,
                           "workspace_bytes"),
    "first offset not 0": (dict(access_offsets=np.array([1, 2, 4], np.int64)), "/accesses/offsets", 0, None),
    "offsets decrease": (dict(access_offsets=np.array([0, 3, 2], np.int64)), "/accesses/offsets", 2, None),
    "last offset short": (dict(access_offsets=np.array([0, 2, 3], np.int64)), "/accesses/offsets", 2, None),
    "offset beyond accesses": (dict(access_offsets=np.array([0, 5, 4], np.int64)), "/accesses/offsets", 1, None),
    "tensor id too large": (dict(access_tensor=np.array([0, 1, 3, 2], np.int32)), "/accesses/tensor", 2, None),
    "tensor id negative": (dict(access_tensor=np.array([-1, 1, 1, 2], np.int32)), "/accesses/tensor", 0, None),
    "tensor twice in a kernel": (dict(access_tensor=np.array([0, 1, 2, 2], np.int32)), "/accesses/tensor", 3,
                                 None),
    "mode 0": (dict(access_mode=np.array([R, 0, R, R], np.uint8)), "/accesses/mode", 1, None),
    "mode 4": (dict(access_mode=np.array([R, W, R, 4], np.uint8)), "/accesses/mode", 3, None),
    "wrong size dtype": (dict(tensor_size_bytes=np.array([4096, 5, 8], np.int32)), "/tensors", None,
                         "size_bytes"),
    "wrong time dtype": (dict(kernel_time_ideal_ns=np.array([1, 2], np.float32)), "/kernels", None,
                         "time_ideal_ns"),
    "names wrong length": (dict(tensor_name=np.array(["a", "b"])), "/tensor_names", None, None),
    "times wrong length": (dict(kernel_time_fault_all_ns=_f64(1, 2, 3)), "/kernels", None, "time_fault_all_ns"),
    "kernel names short": (dict(kernel_name=np.array(["fwd"])), "/kernel_names", None, None),
    "2-D array": (dict(access_mode=np.array([[R, W], [R, R]], np.uint8)), "/accesses/mode", None, None),
    "list not array": (dict(kernel_name=["fwd", "bwd"]), "/kernel_names", None, None),
    "no tensors": (dict(tensor_size_bytes=np.zeros(0, np.int64), tensor_is_global=np.zeros(0, bool),
                        tensor_name=np.zeros(0, "U1")), "/tensors", None, None),
    "empty model": (dict(model=""), "/", None, "model"),
    "batch 0": (dict(batch_size=0), "/", None, "batch_size"),
    "bad attr value": (dict(attrs={"x": [1, 2]}), "/", None, "x"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_validation_names_dataset_row_field(case):
    changes, dataset, row, fld = BROKEN[case]
    with pytest.raises(TraceError) as info:
        validate_trace(tiny_trace(**changes), path="mem.h5")
    e = info.value
    assert (e.dataset, e.row, e.field) == (dataset, row, fld), str(e)
    assert str(e).startswith("mem.h5: ") and "\n" not in str(e)


def test_validation_accepts_the_tiny_trace_and_noncontiguous_views():
    validate_trace(tiny_trace())
    base = np.array([0, 9, 1, 9, 1, 9, 2, 9], np.int32)
    validate_trace(tiny_trace(access_tensor=base[::2]))  # a strided view is fine


def test_validation_does_not_require_time_order():
    # the published profiles have t10 < t11 for some kernels; the format keeps them as measured
    validate_trace(tiny_trace(kernel_time_fault_outputs_ns=_f64(5, 5)))


def test_hint_at_kernel_K_is_valid():
    # the published scheduler frees tensors at kernel K: applied at the next iteration's kernel 0
    hints = np.zeros(2, HINT_DTYPE)
    hints["kernel"][1] = 2                                  # tiny_trace has K = 2
    validate_trace(tiny_trace(hints=hints))


@pytest.mark.parametrize("fld,value", [("kernel", 3), ("kernel", -1), ("tensor", -1), ("action", 4)])
def test_validation_of_hints(fld, value):
    hints = np.zeros(2, HINT_DTYPE)
    hints[fld][1] = value
    with pytest.raises(TraceError) as info:
        validate_trace(tiny_trace(hints=hints))
    assert (info.value.dataset, info.value.row, info.value.field) == ("/hints", 1, fld)


def test_validation_of_hint_dtype():
    with pytest.raises(TraceError, match="HINT_DTYPE"):
        validate_trace(tiny_trace(hints=np.zeros(2, np.int64)))


def test_write_refuses_invalid_trace_before_touching_disk(tmp_path):
    with pytest.raises(TraceError) as info:
        write_trace(tiny_trace(kernel_time_ideal_ns=_f64(np.nan, 1)), tmp_path / "t.h5")
    assert info.value.path == str(tmp_path / "t.h5") and info.value.row == 0
    assert os.listdir(tmp_path) == []


# ---- traces kept by a reproduction's workers (keeping_read_traces) ------------------------------

def test_a_kept_trace_is_read_once_and_each_caller_gets_its_own_copy(tmp_path, monkeypatch, load_shipped):
    from g10core.workload import trace as trace_module

    path = tmp_path / "bert_base-b256.h5"
    write_trace(load_shipped("bert_base-b256"), path)
    parsed = []
    real = trace_module._read_checked
    monkeypatch.setattr(trace_module, "_read_checked", lambda p: parsed.append(p) or real(p))
    with trace_module.keeping_read_traces():
        first = read_trace(path)
        first.kernel_time_ideal_ns[:] = 0.0            # a caller that writes into its arrays ...
        second = read_trace(path)
    assert len(parsed) == 1
    assert second.kernel_time_ideal_ns.sum() > 0      # ... changes nothing another caller reads
    assert second.access_tensor is not first.access_tensor
    assert_same_trace(second, read_trace(path))       # (outside the block: parsed afresh)
    assert len(parsed) == 2


def test_a_kept_trace_is_parsed_again_once_its_file_changed(tmp_path, monkeypatch):
    from g10core.workload import trace as trace_module

    path = tmp_path / "t.h5"
    write_trace(tiny_trace(), path)
    with trace_module.keeping_read_traces(limit=1):
        assert read_trace(path).model == "tiny"
        write_trace(tiny_trace(model="other"), path)     # a new file in its place (new inode)
        assert read_trace(path).model == "other"
        other = tmp_path / "u.h5"
        write_trace(tiny_trace(model="third"), other)
        assert read_trace(other).model == "third"      # limit 1: the first one is dropped ...
        assert list(trace_module._kept) and len(trace_module._kept) == 1
    assert trace_module._kept is None                  # ... and nothing is kept after the block
