"""Corrupt trace files are refused with a TraceError naming file, dataset and row,
and `g10sim trace validate` turns that into exit 2 with one line, never a traceback."""
import json

import h5py
import numpy as np
import pytest

from g10core.cli import main
from g10core.workload.trace import SCHEMA_VERSION, UNITS, TraceError, read_trace, write_trace


def _replace(path, name, data):
    with h5py.File(path, "r+") as f:
        del f[name]
        f.create_dataset(name, data=data)


def _edit(path, name, fn):
    with h5py.File(path, "r+") as f:
        data = f[name][()]
    fn(data)
    _replace(path, name, data)


def _rewrite(path, name, fn):
    """Replace dataset ``name`` by ``fn(its data)`` (keeping its string dtype, if any)."""
    with h5py.File(path, "r+") as f:
        old = f[name]
        data = fn(old[()])
        dtype = old.dtype if h5py.check_string_dtype(old.dtype) else data.dtype
        del f[name]
        f.create_dataset(name, data=data, dtype=dtype)


def _set_attr(path, key, value):
    with h5py.File(path, "r+") as f:
        if value is None:
            del f.attrs[key]
        else:
            f.attrs[key] = value


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip_chunk_bytes(path):
    with h5py.File(path) as f:
        info = f["kernels"].id.get_chunk_info(0)
    data = bytearray(path.read_bytes())
    for i in range(info.byte_offset + 8, info.byte_offset + 40):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _set(field, row, value):
    def fn(a):
        a[field][row] = value
    return fn


def _set_row(row, value):
    def fn(a):
        a[row] = value
    return fn


def _non_monotone(a):
    a[10] = a[9] - 1


def _ints_as_names(path):
    _replace(path, "tensor_names", np.arange(10))


def _group_for_dataset(path):
    with h5py.File(path, "r+") as f:
        del f["kernel_names"]
        f.create_group("kernel_names")


def _drop_field(path):
    with h5py.File(path, "r+") as f:
        sizes = f["tensors"]["size_bytes"]
    _replace(path, "tensors", np.array(sizes, dtype=[("size_bytes", "<i8")]))


# name -> (corrupt(path), expected dataset, row, field, words in the reason)
CASES = {
    "truncated file": (_truncate, "/", None, None, "truncated"),
    "empty file": (lambda p: p.write_bytes(b""), "/", None, None, "not an HDF5 file"),
    "not HDF5": (lambda p: p.write_text("kernel,tensor\n0,1\n"), "/", None, None, "not an HDF5 file"),
    "newer schema version": (lambda p: _set_attr(p, "schema_version", SCHEMA_VERSION + 1), "/", None, "schema_version",
                             "upgrade g10core"),
    "schema version 0": (lambda p: _set_attr(p, "schema_version", 0), "/", None, "schema_version",
                         "not supported"),
    "schema version not an int": (lambda p: _set_attr(p, "schema_version", "1"), "/", None, "schema_version",
                                  "integer"),
    "other schema": (lambda p: _set_attr(p, "schema", "pytables"), "/", None, "schema", "not a"),
    "no schema attribute": (lambda p: _set_attr(p, "schema", None), "/", None, "schema", "not a g10core trace"),
    "missing batch_size": (lambda p: _set_attr(p, "batch_size", None), "/", None, "batch_size", "missing"),
    "times in ms": (lambda p: _set_attr(p, "units", json.dumps({**UNITS, "kernels.time_ideal_ns": "ms"})), "/",
                    None, "units", "is in 'ms', this reader expects 'ns'"),
    "a unit missing": (lambda p: _set_attr(p, "units", json.dumps({"kernels.time_ideal_ns": "ns"})), "/",
                       None, "units", "no unit for tensors.size_bytes"),
    "units not JSON": (lambda p: _set_attr(p, "units", "ns"), "/", None, "units", "JSON"),
    "negative size": (lambda p: _edit(p, "tensors", _set("size_bytes", 3, -4096)), "/tensors", 3,
                      "size_bytes", "> 0"),
    "is_global 2": (lambda p: _edit(p, "tensors", _set("is_global", 4, 2)), "/tensors", 4, "is_global",
                    "0 or 1"),
    "tensor id out of range": (lambda p: _edit(p, "accesses/tensor", _set_row(5, 10**6)), "/accesses/tensor",
                               5, None, "out of range"),
    "non-monotone offsets": (lambda p: _edit(p, "accesses/offsets", _non_monotone), "/accesses/offsets", 10,
                             None, "must not decrease"),
    "NaN time": (lambda p: _edit(p, "kernels", _set("time_ideal_ns", 7, np.nan)), "/kernels", 7,
                 "time_ideal_ns", "finite"),
    "negative time": (lambda p: _edit(p, "kernels", _set("time_fault_all_ns", 2, -1.0)), "/kernels", 2,
                      "time_fault_all_ns", ">= 0"),
    "mode 0": (lambda p: _edit(p, "accesses/mode", _set_row(0, 0)), "/accesses/mode", 0, None, "must be 1"),
    "lossy id dtype": (lambda p: _rewrite(p, "accesses/tensor", lambda a: a.astype(np.uint64)),
                       "/accesses/tensor", None, None, "cannot be read as int32"),
    "missing field": (_drop_field, "/tensors", None, "is_global", "missing field"),
    "2-D dataset": (lambda p: _replace(p, "accesses/mode", np.ones((2, 2), np.uint8)), "/accesses/mode", None,
                    None, "1-D"),
    "names not strings": (_ints_as_names, "/tensor_names", None, None, "expected strings"),
    "names too short": (lambda p: _rewrite(p, "kernel_names", lambda a: a[:5]), "/kernel_names", None, None,
                        "rows"),
    "group instead of dataset": (_group_for_dataset, "/kernel_names", None, None, "expected a dataset"),
    "damaged chunk": (_flip_chunk_bytes, "/kernels", None, None, "unreadable"),
}
DATASETS = ["tensors", "tensor_names", "kernels", "kernel_names", "accesses/offsets", "accesses/tensor",
            "accesses/mode"]


@pytest.fixture
def good_file(tmp_path, small_trace):
    return write_trace(small_trace, tmp_path / "t.h5")


def _missing(name):
    def fn(p):
        with h5py.File(p, "r+") as f:
            del f[name]
    return fn


ALL = dict(CASES)
ALL.update({f"missing {d}": (_missing(d), "/" + d, None, None, "missing dataset") for d in DATASETS})


@pytest.mark.parametrize("case", sorted(ALL))
def test_corrupt_file_is_refused_by_name(case, good_file):
    corrupt, dataset, row, fld, words = ALL[case]
    corrupt(good_file)
    with pytest.raises(TraceError) as info:
        read_trace(good_file)
    e = info.value
    assert e.path == str(good_file)
    assert (e.dataset, e.row, e.field) == (dataset, row, fld), str(e)
    assert words in e.reason, str(e)


@pytest.mark.parametrize("case", ["truncated file", "newer schema version", "negative size",
                                  "tensor id out of range", "non-monotone offsets", "NaN time",
                                  "damaged chunk", "missing accesses/offsets"])
def test_cli_validate_refuses_with_one_line(case, good_file, capsys):
    corrupt, dataset, row, *_ = ALL[case]
    corrupt(good_file)
    assert main(["trace", "validate", str(good_file)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("g10sim: error: ")
    assert str(good_file) in err and dataset in err and "Traceback" not in err
    if row is not None:
        assert f"row {row}" in err


def test_narrower_dtypes_are_widened(good_file, small_trace):
    _rewrite(good_file, "accesses/offsets", lambda a: a.astype(np.int32))
    back = read_trace(good_file)
    assert back.access_offsets.dtype == np.int64
    assert np.array_equal(back.access_offsets, small_trace.access_offsets)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_trace(tmp_path / "nope.h5")
    with pytest.raises(TraceError, match="directory"):
        read_trace(tmp_path)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no named pipes on this OS")
def test_a_named_pipe_is_refused_not_waited_on(tmp_path):
    # opening a FIFO to read blocks until a writer comes: `g10sim run` on one waited forever.
    # Every file a command reads is refused instead, in a child with a timeout (a hang fails).
    import os
    import subprocess
    import sys

    fifo = tmp_path / "pipe.h5"
    os.mkfifo(fifo)
    with pytest.raises(TraceError, match="not a regular file"):
        read_trace(fifo)
    for argv in (["trace", "validate", str(fifo)],
                 ["trace", "info", str(fifo)],
                 ["run", str(fifo), "--policy", "g10"],
                 ["run", "bert_base-b256", "--policy", "g10", "--config", str(fifo)],
                 ["run", "bert_base-b256", "--hints", str(fifo)],
                 ["sweep", str(fifo), "--out", str(tmp_path / "out")],
                 ["report", "fig11", str(fifo)]):
        proc = subprocess.run([sys.executable, "-m", "g10core", *argv], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (argv, proc.stderr)
        assert str(fifo) in proc.stderr and "not a regular file" in proc.stderr, (argv, proc.stderr)


def test_a_binary_file_given_as_text_is_refused_naming_it(good_file, tmp_path, capsys):
    # the error of a file that is not UTF-8 named no file ("'utf-8' codec can't decode byte 0x89")
    for argv in (["sweep", str(good_file), "--out", str(tmp_path / "out")],
                 ["report", "fig11", str(good_file)],
                 ["run", str(good_file), "--policy", "g10", "--config", str(good_file)]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(good_file) in err and "not a text file" in err, (argv, err)


def test_cli_validate_ok_and_mixed(good_file, tmp_path, capsys):
    assert main(["trace", "validate", str(good_file)]) == 0
    assert capsys.readouterr().out.startswith(f"ok {good_file}: schema v{SCHEMA_VERSION}, 64 kernels")
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"\0" * 100)
    missing = tmp_path / "missing.h5"
    assert main(["trace", "validate", "-q", str(good_file), str(bad), str(missing)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 2
    assert str(bad) in lines[0] and "not an HDF5 file" in lines[0]
    assert str(missing) in lines[1] and "no such trace file" in lines[1]


def test_an_empty_file_is_refused_as_empty(tmp_path, capsys):
    # h5py says only "file signature not found": the message says the file is empty, and names it
    empty = tmp_path / "empty.h5"
    empty.write_bytes(b"")
    with pytest.raises(TraceError, match=r"empty\.h5: /: empty file \(0 bytes\), not an HDF5 file$"):
        read_trace(empty)
    for argv in (["run", str(empty), "--policy", "g10"], ["trace", "validate", str(empty)]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == f"g10sim: error: {empty}: /: empty file (0 bytes), not an HDF5 file\n"


def test_an_empty_hint_file_is_refused_as_empty(tmp_path):
    from g10core.errors import HintError
    from g10core.workload.hints import read_hints

    empty = tmp_path / "empty-hints.h5"
    empty.write_bytes(b"")
    with pytest.raises(HintError, match=r"empty-hints\.h5, /hints: empty file \(0 bytes\), not an HDF5 hint file$"):
        read_hints(empty)
