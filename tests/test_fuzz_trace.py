"""Fuzzing trace files: every damaged or invalid trace gets the contract's answer.

Three kinds of inputs, each a small valid trace (8 kernels, with a hint table) changed:

* ``trace-semantic``: one dataset or attribute changed through h5py: deleted, replaced
  by a group, by another dtype, shape or length, by a compound without its fields, one
  element set to NaN, inf, a negative, 0 or a huge value; an attribute set to any type,
  shape or value (``fuzzkit.attribute_values``);
* ``trace-bytes``: 1-4 bit flips, byte changes, zeroed runs or a truncation of the file
  as g10core writes it (HDF5 1.10 format, checksummed metadata);
* ``trace-bytes-v0``: the same on a file in HDF5's oldest format (no checksums; files of
  g10core 0.1.0, and what h5py writes by default), which the reader opens in a child.

Each file goes through ``trace validate``, ``trace info --json -``, ``run --policy g10
--json -`` and ``run --policy base-uvm`` (``fuzzkit.check_contract``: exit 0/1/2, one line,
no traceback, the file named, strict JSON, a finite time, within a time limit).  The
issue's reproducers are plain tests below.  Counts: ``fuzzkit`` docstring.
"""
from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from fuzzkit import (FUZZ_SETTINGS, OUTCOMES, SPECIAL_FLOATS, SPECIAL_INTS, apply_byte_edits, attribute_values,
                     byte_edits, call, check_contract, copy_to)
from hypothesis import given, reject
from hypothesis import strategies as st

import g10core.workload.trace as trace_module
from g10core.cli import main
from g10core.policies import HINT_DTYPE
from g10core.workload.synth import synthesize
from g10core.workload.trace import MAX_ITERATION_TIME_NS, TraceError, read_trace, write_trace

DATASETS = ["tensors", "tensor_names", "kernels", "kernel_names", "accesses/offsets", "accesses/tensor",
            "accesses/mode", "hints"]
ROOT_ATTRIBUTES = ["schema", "schema_version", "model", "batch_size", "source", "profiling_gpu", "units",
                   "creator", "synth_seed", "an_extra_attribute"]


def _base_trace():
    t = synthesize(8, 1 << 20, pattern="training", seed=3)
    hints = np.zeros(3, HINT_DTYPE)
    hints["kernel"], hints["tensor"], hints["action"] = [0, 2, 8], [1, 2, 0], [0, 1, 3]
    return dataclasses.replace(t, hints=hints, hints_policy="g10")


@pytest.fixture(scope="module")
def base_files(tmp_path_factory, request):
    folder = tmp_path_factory.mktemp("fuzz-trace-base")
    trace = _base_trace()
    new = write_trace(trace, folder / "base.h5")
    mp = pytest.MonkeyPatch()
    mp.setattr(trace_module, "LIBVER", ("earliest", "v110"))     # the 0.1.0 writer: no checksums
    old = write_trace(trace, folder / "base-v0.h5")
    mp.undo()
    with open(old, "rb") as fh:
        assert fh.read(9)[8] == 0 and open(new, "rb").read(9)[8] == 3   # superblock versions
    return {"new": new, "old": old}


def commands(path: Path) -> list[tuple[str, list[str]]]:
    p = str(path)
    return [("trace validate", ["trace", "validate", p]),
            ("trace info --json", ["trace", "info", p, "--json", "-"]),
            ("run g10", ["run", p, "--policy", "g10", "--json", "-"]),
            ("run base-uvm", ["run", p, "--policy", "base-uvm"])]


def check_all(kind: str, path: Path) -> None:
    OUTCOMES[kind]["inputs"] += 1
    codes = set()
    for label, argv in commands(path):
        codes.add(check_contract(kind, argv, path, label).code)
    OUTCOMES[kind]["refused (exit 2 everywhere)" if codes == {2} else "accepted by some command"] += 1


# ---- semantic edits ------------------------------------------------------------------------

def _replacements(data: np.ndarray):
    """Arrays a dataset may be replaced with: other dtypes, shapes, lengths, fields."""
    n = data.shape[0]
    plain = data if data.dtype.names is None else data[data.dtype.names[0]]
    out = [
        data[:0], data[:-1] if n else data, np.concatenate([data, data[-1:]]) if n else data,
        np.resize(data, (2, max(1, n))), plain.astype("<f8") if plain.dtype.kind in "iufb" else np.arange(n),
        np.arange(n, dtype=np.uint64), np.arange(n, dtype=np.int8), np.full(n, -1, np.int64),
        np.zeros(n, bool), np.array([b"x"] * n), np.array(["ä"] * n, dtype=h5py.string_dtype()),
        np.zeros(n, [("size_bytes", "<i8")]), np.zeros(n, [("nothing", "<f4")]), np.float64(1.5),
        np.zeros(n, [("kernel", "<f8"), ("tensor", "<f8"), ("action", "<f8")]),
    ]
    if data.dtype.names:
        for name in data.dtype.names:                          # every field as another type
            other = np.zeros(n, [(f, "<f8" if f == name else data.dtype[f]) for f in data.dtype.names])
            for f in data.dtype.names:
                other[f] = data[f]
            out.append(other)
    return out


@st.composite
def semantic_edits(draw):
    kind = draw(st.sampled_from(["attr", "delete-attr", "replace", "element", "delete", "group"]))
    if kind in ("attr", "delete-attr"):
        name = draw(st.sampled_from(ROOT_ATTRIBUTES + ["hints/policy"]))
        return (kind, name, draw(attribute_values()) if kind == "attr" else None)
    name = draw(st.sampled_from(DATASETS))
    if kind == "replace":
        return (kind, name, draw(st.integers(0, 40)))
    if kind == "element":
        value = draw(st.one_of(st.sampled_from(SPECIAL_FLOATS), st.sampled_from(SPECIAL_INTS),
                               st.floats(allow_nan=True, allow_infinity=True)))
        return (kind, name, (draw(st.floats(0, 1, exclude_max=True)), draw(st.integers(0, 7)), value))
    return (kind, name, None)


def apply_semantic(path: Path, edit) -> None:
    kind, name, arg = edit
    with h5py.File(path, "r+", libver=trace_module.LIBVER) as f:
        if kind in ("attr", "delete-attr"):
            target = f
            if name.startswith("hints/"):
                target, name = f["hints"], name.split("/", 1)[1]
            if kind == "delete-attr":
                if name in target.attrs:
                    del target.attrs[name]
            else:
                try:
                    target.attrs[name] = arg
                except (TypeError, ValueError):      # a value h5py cannot store: not an input
                    reject()
            return
        data = f[name][()]
        del f[name]
        if kind == "group":
            f.create_group(name)
        elif kind == "replace":
            options = _replacements(data)
            f.create_dataset(name, data=options[arg % len(options)])
        elif kind == "element":
            where, field_pick, value = arg
            data = np.array(data, copy=True)
            if data.shape[0]:
                row = int(where * data.shape[0])
                fields = data.dtype.names
                column = data[fields[field_pick % len(fields)]] if fields else data
                with np.errstate(all="ignore"):
                    if column.dtype.kind in "SUO":
                        column[row] = str(value)
                    else:
                        column[row] = np.array(value).astype(column.dtype, casting="unsafe")
            f.create_dataset(name, data=data)
        # "delete": nothing to recreate


@FUZZ_SETTINGS
@given(edit=semantic_edits())
def test_fuzz_semantic_edits(base_files, edit):
    with tempfile.TemporaryDirectory() as folder:
        path = copy_to(base_files["new"], Path(folder), "edited.h5")
        apply_semantic(path, edit)
        check_all("trace-semantic", path)


@FUZZ_SETTINGS
@given(edits=byte_edits())
def test_fuzz_byte_corruption(base_files, edits):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "damaged.h5"
        path.write_bytes(apply_byte_edits(base_files["new"].read_bytes(), edits))
        check_all("trace-bytes", path)


@FUZZ_SETTINGS
@given(edits=byte_edits())
def test_fuzz_byte_corruption_of_the_old_format(base_files, edits):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "damaged-v0.h5"
        path.write_bytes(apply_byte_edits(base_files["old"].read_bytes(), edits))
        check_all("trace-bytes-v0", path)


# ---- the issue's reproducers (items 2, 4 and the replay bugs 1 and 3) -------------------------

def _contract_one_line(capsys, argv, path, code):
    assert main([str(a) for a in argv]) == code
    out, err = capsys.readouterr()
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("g10sim: error: ") and str(path) in err, err
        assert "Traceback" not in err
    return out, err


def _with_times(tmp_path, name, times_ns):
    t = synthesize(len(times_ns), 1 << 20, pattern="training", seed=1)
    t = dataclasses.replace(t, kernel_time_ideal_ns=np.array(times_ns, float),
                            kernel_time_fault_all_ns=np.array(times_ns, float),
                            kernel_time_fault_outputs_ns=np.array(times_ns, float))
    path = tmp_path / name
    with h5py.File(write_trace(synthesize(len(times_ns), 1 << 20, pattern="training", seed=1), path),
                   "r+") as f:
        k = f["kernels"][()]
        for fld in ("time_ideal_ns", "time_fault_all_ns", "time_fault_outputs_ns"):
            k[fld] = t.kernel_time_ideal_ns
        del f["kernels"]
        f.create_dataset("kernels", data=k)
    return path


@pytest.mark.parametrize("huge", [1e308, MAX_ITERATION_TIME_NS * 1.0001])
@pytest.mark.parametrize("policy", ["base-uvm", "flashneuron", "g10", "ideal"])
def test_huge_finite_kernel_times_are_refused_naming_dataset_and_row(tmp_path, capsys, huge, policy):
    path = _with_times(tmp_path, "huge.h5", [1000.0, huge, 1000.0, 1000.0])
    _, err = _contract_one_line(capsys, ["run", path, "--policy", policy], path, 2)
    assert "/kernels, row 1, field time_ideal_ns" in err and "1e+21 ns" in err


@pytest.mark.parametrize("policy", ["base-uvm", "flashneuron", "g10", "ideal"])
def test_times_past_the_clock_at_this_configuration_are_refused_in_one_line(tmp_path, capsys, policy):
    # issue 12 item 2: 1e20 ns gave 'took -9223372036847103673 cycles'; a valid trace, but not
    # at 1.2 GHz over 2 iterations (the run's clock check refuses it)
    path = _with_times(tmp_path, "long.h5", [1000.0, 1e20, 1000.0, 1000.0])
    assert main(["run", str(path), "--policy", policy]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "64-bit clock" in err and "Traceback" not in err


def test_times_that_add_up_past_the_bound_name_the_row_where_they_do(tmp_path, capsys):
    path = _with_times(tmp_path, "sum.h5", [0.4 * MAX_ITERATION_TIME_NS] * 3 + [1.0])
    _, err = _contract_one_line(capsys, ["trace", "validate", path], path, 2)
    assert "/kernels, row 2, field time_ideal_ns" in err and "kernels 0..2 add up" in err


def test_info_json_never_prints_non_json(tmp_path, capsys):
    path = _with_times(tmp_path, "two.h5", [1e308, 1e308])
    out, err = _contract_one_line(capsys, ["trace", "info", path, "--json", "-"], path, 2)
    assert out == "" and "row 0" in err
    ok = _with_times(tmp_path, "ok.h5", [MAX_ITERATION_TIME_NS / 2] * 2)
    assert main(["trace", "info", str(ok), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    assert doc["ideal_time_s"] == pytest.approx(MAX_ITERATION_TIME_NS * 1e-9)


def test_the_longest_times_the_clock_allows_run_to_a_finite_result(tmp_path, capsys):
    path = _with_times(tmp_path, "max.h5", [1e17] * 4)     # 9.6e17 cycles at 1.2 GHz x 2 < 2^60
    for policy in ("base-uvm", "flashneuron", "g10", "g10-host", "deepum"):
        code = main(["run", str(path), "--policy", policy, "--set", "run.iterations=2", "--json", "-"])
        out, err = capsys.readouterr()
        assert code in (0, 1) and "Traceback" not in err, (policy, err)
        doc = json.loads(out)
        if code == 0:
            assert 0 < doc["iteration_time_s"] < float("inf"), policy


def _flip(src: Path, dest: Path, offset: int, new: int) -> Path:
    data = bytearray(src.read_bytes())
    data[offset] = new
    dest.write_bytes(bytes(data))
    return dest


def _old_format_trace(tmp_path) -> Path:
    mp = pytest.MonkeyPatch()
    mp.setattr(trace_module, "LIBVER", ("earliest", "v110"))
    try:
        return write_trace(synthesize(4, 65536, pattern="training", seed=1), tmp_path / "small.h5")
    finally:
        mp.undo()


def test_the_issues_hanging_bit_flip_is_refused_quickly(tmp_path, capsys):
    # the issue: a small trace with one bit flipped in a global heap object's size (0x08 -> 0x88)
    # made h5py loop forever reading the attributes; find that byte in our own small trace
    small = _old_format_trace(tmp_path)
    data = small.read_bytes()
    heap = data.index(b"GCOL")
    creator = data.index(b"g10core ", heap)
    size_at = creator - 8                  # the object's 8-byte size field precedes its data
    nxt = data.index(b"training", creator) - 8
    assert data[nxt] == 8
    bad = _flip(small, tmp_path / "flipped.h5", nxt, 0x88)
    for argv in (["trace", "validate", bad], ["trace", "info", bad], ["run", bad, "--policy", "g10"]):
        o = call([str(a) for a in argv])
        assert o.code == 2 and o.seconds < 10 and str(bad) in o.err and "global heap" in o.err, o.err
    assert size_at > heap


def test_a_changed_byte_in_attribute_metadata_is_refused_not_a_traceback(tmp_path, capsys):
    # the issue: one changed byte gave an h5py RuntimeError traceback while reading attributes
    small = _old_format_trace(tmp_path)
    data = small.read_bytes()
    at = data.index(b"profiling_gpu")
    refused = 0
    for offset in range(at - 24, at + 40):
        for value in (0x00, 0xFF, data[offset] ^ 0x04):
            bad = _flip(small, tmp_path / "bad.h5", offset, value)
            o = call(["trace", "validate", str(bad)])
            assert o.crash is None and o.code in (0, 2) and "Traceback" not in o.err, o.err
            assert o.err.count("\n") <= 1 and (o.code == 0 or str(bad) in o.err)
            refused += o.code == 2
    assert refused > 0


def test_checksums_catch_what_the_old_format_cannot(tmp_path):
    t = synthesize(4, 65536, pattern="training", seed=1)
    new = write_trace(t, tmp_path / "new.h5")
    data = new.read_bytes()
    at = data.index(b"profiling_gpu")               # an attribute name: inside the root object header
    bad = _flip(new, tmp_path / "bad.h5", at, ord("P"))
    with pytest.raises(TraceError, match="corrupt HDF5 file|cannot open") as info:
        read_trace(bad)
    assert info.value.path == str(bad)


def _synth(tmp_path, *args) -> tuple[int, Path]:
    path = tmp_path / "s.h5"
    code = main(["trace", "synth", "-o", str(path), *map(str, args)])
    return code, path


@pytest.mark.parametrize("policy", ["g10", "base-uvm", "deepum"])
def test_reproducer_1_one_kernel_trace_runs(tmp_path, capsys, policy):
    # issue 12 item 1: a 1-kernel trace stopped every page-level policy (fixed in the replay)
    code, path = _synth(tmp_path, "--kernels", 1, "--footprint-bytes", 8192, "--pattern", "random", "--seed", 5)
    assert code == 0
    capsys.readouterr()
    o = call(["run", str(path), "--policy", policy, "--json", "-"])
    assert o.crash is None and o.code == 0, (o.code, o.err, o.crash)
    assert json.loads(o.out)["iteration_time_s"] > 0


def test_reproducer_3_huge_kernel_times_are_refused_at_synthesis(tmp_path, capsys):
    # issue 12 item 3's trace (1e12 us per kernel: 1e20 ns per iteration) is past the time bound
    code, path = _synth(tmp_path, "--pattern", "training", "--kernels", 100000, "--footprint-GiB", 41,
                        "--tensors", 1000, "--kernel-time-us", "1e12", "--seed", 593)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "kernel_time_us = 1000000000000.0: must be at most" in err
    assert not path.exists()


def _limit_memory():
    import resource

    limit = 3 << 30                     # the run needs a few MB; a runaway allocation fails fast
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_reproducer_1_zero_time_kernel_on_a_slow_link_finishes(tmp_path):
    # issue 12 item 1: one global 2,160-byte tensor, kernel time 0, g10 --preset detailed
    # --set link.bandwidth_GBps=1 allocated without bound (std::bad_alloc; fixed in the replay)
    import os
    import subprocess
    import sys

    from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, Trace

    t = Trace(model="one", batch_size=1, tensor_size_bytes=np.array([2160], np.int64),
              tensor_is_global=np.array([True]), tensor_name=np.array(["w"]), kernel_name=np.array(["k"]),
              kernel_time_ideal_ns=np.zeros(1), kernel_time_fault_all_ns=np.zeros(1),
              kernel_time_fault_outputs_ns=np.zeros(1), kernel_workspace_bytes=np.zeros(1, np.int64),
              access_offsets=np.array([0, 1], np.int64), access_tensor=np.array([0], np.int32),
              access_mode=np.array([ACCESS_READ | ACCESS_WRITE], np.uint8))
    path = write_trace(t, tmp_path / "one.h5")
    # in a child with a memory limit: today this run grows past 10 GB within a minute
    proc = subprocess.run([sys.executable, "-m", "g10core", "run", str(path), "--policy", "g10", "--preset",
                           "detailed", "--set", "link.bandwidth_GBps=1"], capture_output=True, text=True,
                          timeout=300, preexec_fn=_limit_memory, env=dict(os.environ))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-500:]


def test_damage_that_crashes_hdf5_in_an_old_format_file_is_refused(tmp_path):
    # the kind of a string attribute's variable-length datatype, 1 (string) -> 3: HDF5 2.0.0
    # dies with SIGSEGV reading it; the reader opens files without checksums in a child
    small = _old_format_trace(tmp_path)
    data = small.read_bytes()
    datatype = data.index(b"profiling_gpu\x00") + 16          # the name, padded to 16, then the datatype
    assert data[datatype] & 0x0F == 9 and data[datatype + 1] == 1   # variable-length, a string
    bad = _flip(small, tmp_path / "crash.h5", datatype + 1, 3)
    for argv in (["trace", "validate", str(bad)], ["run", str(bad), "--policy", "g10"]):
        o = call(argv)
        assert o.crash is None and o.code == 2 and o.err.count("\n") == 1, o.err
        assert str(bad) in o.err and "corrupt HDF5 file" in o.err
