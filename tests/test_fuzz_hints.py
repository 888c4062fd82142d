"""Fuzzing hint files: every damaged or invalid hint file gets the contract's answer.

Kinds (``fuzzkit`` has the contract and the counts):

* ``hints-semantic``: a hint file from ``write_hints`` with one attribute or the
  ``/hints`` dataset changed through h5py (types, shapes, lengths, fields, special and
  huge values, deleted, a group instead);
* ``hints-bytes``: 1-4 byte-level edits of that file (HDF5 1.10 format, checksummed);
* ``hints-bytes-v0``: the same on a hand-made hint file (h5py's default, oldest format,
  no checksums), which the reader opens in a child process.

Each file is replayed with ``run TRACE --hints FILE`` (the policy that made it) and with
``--policy deepum --json -``; the issue's reproducers (item 6) are plain tests below.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from fuzzkit import (FUZZ_SETTINGS, OUTCOMES, SPECIAL_FLOATS, SPECIAL_INTS, apply_byte_edits, attribute_values,
                     byte_edits, call, check_contract, copy_to)
from hypothesis import given, reject
from hypothesis import strategies as st

from g10core.workload.hints import HintError, read_hints, write_hints
from g10core.workload.h5safe import LIBVER
from g10core.simulator import policy_hints
from g10core.workload.synth import synthesize
from g10core.workload.trace import write_trace

ATTRIBUTES = ["schema", "schema_version", "policy", "creator", "trace_model", "trace_batch_size",
              "trace_n_kernels", "trace_n_tensors", "trace_footprint_bytes", "trace_digest", "trace_path"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz-hints-base")
    trace_path = write_trace(synthesize(8, 1 << 20, pattern="training", seed=3), folder / "t.h5")
    hints, trace, _ = policy_hints(trace_path, "g10")
    if hints.shape[0] < 3:                                  # make sure there are rows to damage
        hints = np.concatenate([hints, np.array([(0, 0, 0), (1, 1, 1), (8, 2, 3)], hints.dtype)])
        hints = np.sort(hints, order="kernel", kind="stable")
    new = write_hints(folder / "hints.h5", hints, policy="g10", trace=trace, trace_path=trace_path)
    old = folder / "hand-made.h5"
    with h5py.File(old, "w") as f:                          # as README tells a user to write one
        f.attrs["schema"] = "g10core-hints"
        f.attrs["schema_version"] = 1
        f.attrs["policy"] = "mine"
        f.create_dataset("hints", data=hints)
    assert read_hints(new, trace).hints.shape == read_hints(old, trace).hints.shape
    return {"trace": trace_path, "new": new, "old": old}


def check_all(kind: str, trace: Path, path: Path) -> None:
    OUTCOMES[kind]["inputs"] += 1
    codes = set()
    for label, argv in (("run --hints", ["run", str(trace), "--hints", str(path)]),
                        ("run deepum --hints --json", ["run", str(trace), "--policy", "deepum", "--hints",
                                                       str(path), "--json", "-"])):
        codes.add(check_contract(kind, argv, path, label).code)
    OUTCOMES[kind]["refused (exit 2 everywhere)" if codes == {2} else "accepted by some command"] += 1


@st.composite
def edits(draw):
    kind = draw(st.sampled_from(["attr", "attr", "delete-attr", "replace", "element", "delete", "group"]))
    if kind == "attr":
        return (kind, draw(st.sampled_from(ATTRIBUTES)), draw(attribute_values()))
    if kind == "delete-attr":
        return (kind, draw(st.sampled_from(ATTRIBUTES)), None)
    if kind == "replace":
        return (kind, "hints", draw(st.integers(0, 12)))
    if kind == "element":
        value = draw(st.one_of(st.sampled_from(SPECIAL_FLOATS), st.sampled_from(SPECIAL_INTS)))
        return (kind, "hints", (draw(st.floats(0, 1, exclude_max=True)), draw(st.integers(0, 2)), value))
    return (kind, "hints", None)


def apply_edit(path: Path, edit) -> None:
    kind, name, arg = edit
    with h5py.File(path, "r+", libver=LIBVER) as f:
        if kind == "attr":
            try:
                f.attrs[name] = arg
            except (TypeError, ValueError):          # a value h5py cannot store: not an input
                reject()
            return
        if kind == "delete-attr":
            if name in f.attrs:
                del f.attrs[name]
            return
        data = f["hints"][()]
        del f["hints"]
        if kind == "group":
            f.create_group("hints")
        elif kind == "replace":
            n = data.shape[0]
            options = [data[:0], data[::-1], np.resize(data, (2, n)), data["kernel"], np.arange(n, dtype=float),
                       np.array([b"x"] * n), np.zeros(n, [("kernel", "<i4"), ("tensor", "<i4")]),
                       np.zeros(n, [("kernel", "<f8"), ("tensor", "<i4"), ("action", "i1")]),
                       np.full(n, 2**63, [("kernel", "<u8"), ("tensor", "<u8"), ("action", "<u8")]),
                       np.concatenate([data] * 3), data[0], np.float64(3.0), np.zeros((0, 0))]
            f.create_dataset("hints", data=options[arg % len(options)])
        elif kind == "element":
            where, pick, value = arg
            data = np.array(data, copy=True)
            fields = ("kernel", "tensor", "action")
            wide = np.zeros(data.shape[0], [(x, "<i8" if isinstance(value, int) else "<f8") for x in fields])
            for x in fields:
                wide[x] = data[x]
            if data.shape[0]:
                wide[fields[pick]][int(where * data.shape[0])] = value
            f.create_dataset("hints", data=wide)


@FUZZ_SETTINGS
@given(edit=edits())
def test_fuzz_hint_file_edits(base, edit):
    with tempfile.TemporaryDirectory() as folder:
        path = copy_to(base["new"], Path(folder), "edited.h5")
        apply_edit(path, edit)
        check_all("hints-semantic", base["trace"], path)


@FUZZ_SETTINGS
@given(edits=byte_edits())
def test_fuzz_hint_file_bytes(base, edits):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "damaged.h5"
        path.write_bytes(apply_byte_edits(base["new"].read_bytes(), edits))
        check_all("hints-bytes", base["trace"], path)


@FUZZ_SETTINGS
@given(edits=byte_edits())
def test_fuzz_hand_made_hint_file_bytes(base, edits):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "damaged-v0.h5"
        path.write_bytes(apply_byte_edits(base["old"].read_bytes(), edits))
        check_all("hints-bytes-v0", base["trace"], path)


# ---- issue 12 item 6, one test per reproducer ---------------------------------------------

def _refused(base, path, *words):
    o = call(["run", str(base["trace"]), "--hints", str(path)])
    assert o.crash is None and o.code == 2, (o.code, o.err, o.crash)
    assert o.err.count("\n") == 1 and str(path) in o.err and "Traceback" not in o.err, o.err
    for w in words:
        assert w in o.err, (w, o.err)
    with pytest.raises(HintError):
        read_hints(path)


@pytest.mark.parametrize("attribute", ["schema_version", "trace_n_kernels"])
@pytest.mark.parametrize("value", [h5py.Empty("i8"), np.zeros((), [("a", "<i4"), ("b", "<f8")]),
                                   np.zeros(2, [("a", "<i4")]), "abc", np.array([1, 2]), 1.5, np.bytes_(b"\xff")],
                         ids=["empty", "compound", "compound-array", "abc", "array", "float", "non-utf8"])
def test_bad_integer_attributes_name_file_and_attribute(base, tmp_path, attribute, value):
    path = copy_to(base["new"], tmp_path, "h.h5")
    with h5py.File(path, "r+") as f:
        f.attrs[attribute] = value
    _refused(base, path, f"root attribute {attribute}", "must be an integer")


def test_integer_attributes_may_be_decimal_text(base, tmp_path):
    path = copy_to(base["new"], tmp_path, "h.h5")
    with h5py.File(path, "r+") as f:
        f.attrs["schema_version"] = "1"
    assert read_hints(path).hints.shape[0] > 0


@pytest.mark.parametrize("attribute", ["schema", "policy", "trace_model", "trace_digest"])
def test_string_attributes_must_be_strings(base, tmp_path, attribute):
    path = copy_to(base["new"], tmp_path, "h.h5")
    with h5py.File(path, "r+") as f:
        f.attrs[attribute] = np.zeros(3)
    _refused(base, path, f"root attribute {attribute}", "must be a string")


@pytest.mark.parametrize("which", ["new", "old"])
def test_corrupt_hint_files_are_refused_naming_the_file(base, tmp_path, which):
    data = bytearray(base[which].read_bytes())
    refused = 0
    for offset in range(0, min(len(data), 2048), 29):
        bad = bytearray(data)
        bad[offset] ^= 0x5A
        path = tmp_path / f"bad-{offset}.h5"
        path.write_bytes(bytes(bad))
        o = call(["run", str(base["trace"]), "--hints", str(path)])
        assert o.crash is None and o.code in (0, 1, 2) and "Traceback" not in o.err and o.err.count("\n") <= 1
        assert o.code != 2 or str(path) in o.err, o.err
        refused += o.code == 2
        path.unlink()
    assert refused > 0


def test_missing_and_directory(base, tmp_path):
    o = call(["run", str(base["trace"]), "--hints", str(tmp_path / "none.h5")])
    assert o.code == 2 and "none.h5" in o.err
    _refused(base, tmp_path, "directory")
