"""Shared parts of the fuzz suites (tests/test_fuzz_trace.py, tests/test_fuzz_hints.py).

The contract every input must meet through ``g10core.cli.main`` (README, "Bad input"):
exit 0, 1 or 2; at most one line on stderr and never a traceback; a refusal (exit 2)
names the file; JSON on stdout is strict JSON (no NaN/Infinity); a run that exits 0
reports a finite, non-negative time; and every call ends within ``CALL_LIMIT_S``.

Example counts: ``G10_FUZZ_EXAMPLES`` per kind (default 60 in the test suite, derandomised
so CI sees the same inputs every run; any other value draws fresh random inputs), e.g.
``G10_FUZZ_EXAMPLES=20000 G10_FUZZ_REPORT=fuzz.json pytest tests/test_fuzz_trace.py
tests/test_fuzz_hints.py -p no:cacheprovider`` for a long campaign;
``G10_FUZZ_REPORT`` writes the inputs tried and the outcomes per kind as JSON.
"""
from __future__ import annotations

import atexit
import collections
import contextlib
import io
import json
import math
import os
import shutil
import threading
import time
import traceback
from pathlib import Path

import h5py
import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from g10core.cli import main

DEFAULT_EXAMPLES = 60
EXAMPLES = int(os.environ.get("G10_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))
CALL_LIMIT_S = float(os.environ.get("G10_FUZZ_CALL_LIMIT_S", 30))

FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,                       # time is checked per CLI call (CALL_LIMIT_S), not per example
    derandomize=EXAMPLES == DEFAULT_EXAMPLES,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                           HealthCheck.data_too_large],
    print_blob=True,
)

# kind -> Counter of outcomes ("inputs", "<command>: exit N", ...)
OUTCOMES: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


def _report():
    dest = os.environ.get("G10_FUZZ_REPORT")
    if dest and OUTCOMES:
        Path(dest).write_text(json.dumps({k: dict(sorted(v.items())) for k, v in sorted(OUTCOMES.items())},
                                         indent=1) + "\n")


atexit.register(_report)


class Outcome:
    def __init__(self, code, out, err, seconds, crash):
        self.code, self.out, self.err, self.seconds, self.crash = code, out, err, seconds, crash


def call(argv: list[str]) -> Outcome:
    """``main(argv)`` in a thread with stdout/stderr captured; a call past CALL_LIMIT_S is a hang."""
    box = {}
    out, err = io.StringIO(), io.StringIO()

    def target():
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                box["code"] = main(argv)
        except BaseException:                        # noqa: BLE001 (the contract says: never)
            box["crash"] = traceback.format_exc()

    t0 = time.perf_counter()
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(CALL_LIMIT_S)
    seconds = time.perf_counter() - t0
    if worker.is_alive():
        raise AssertionError(f"g10sim {' '.join(argv)}: still running after {CALL_LIMIT_S:.0f} s (a hang)")
    return Outcome(box.get("code"), out.getvalue(), err.getvalue(), seconds, box.get("crash"))


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"non-JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def error_lines(err: str) -> list[str]:
    """stderr without the heartbeat (``g10sim: still running ...``, a progress note that a run
    slower than a few seconds prints, e.g. on the debug build of a loaded machine) and without
    warnings (``g10sim: warning: ...``, a note on a run that still gives its answer: a failed
    result's one line may follow one)."""
    return [line for line in err.splitlines()
            if not line.startswith(("g10sim: still running ", "g10sim: warning: "))]


def check_contract(kind: str, argv: list[str], path: Path, label: str) -> Outcome:
    """Run one command on a fuzzed file and assert the contract; count the outcome."""
    o = call(argv)
    shown = f"g10sim {' '.join(argv)}"
    assert o.crash is None, f"{shown}: an exception escaped main():\n{o.crash}"
    assert o.code in (0, 1, 2), f"{shown}: exit {o.code}, stderr {o.err!r}"
    assert "Traceback" not in o.err and len(error_lines(o.err)) <= 1, f"{shown}: stderr {o.err!r}"
    if o.code == 2:
        assert str(path) in o.err, f"{shown}: the refusal does not name the file: {o.err!r}"
    if o.code == 2:
        assert o.err.startswith("g10sim: "), f"{shown}: exit 2 without a message: {o.err!r}"
    if "--json" in argv and o.code in (0, 1) and argv[argv.index("--json") + 1] == "-":
        doc = _strict_json(o.out)
        if argv[0] == "run" and o.code == 0:
            t = doc["iteration_time_s"]
            assert isinstance(t, (int, float)) and math.isfinite(t) and t >= 0, f"{shown}: time {t!r}"
    OUTCOMES[kind][f"{label}: exit {o.code}"] += 1
    return o


# ---- building blocks for mutations -----------------------------------------------------

def copy_to(src: Path, folder: Path, name: str) -> Path:
    dest = folder / name
    shutil.copyfile(src, dest)
    return dest


# Values a dataset element or an attribute may be set to.
SPECIAL_FLOATS = [np.nan, np.inf, -np.inf, -1.0, 0.0, 1e-300, 1e15, 1e20, 1e308, -1e308, 2.0**63, 2.0**64]
SPECIAL_INTS = [0, -1, 1, 2, 3, 4, 255, 2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**62, 2**63 - 1, -2**63, -2**31]


def attribute_values():
    """Any value h5py can store as an attribute: wrong types, shapes, huge and special values."""
    return st.one_of(
        st.sampled_from(SPECIAL_FLOATS).map(np.float64),
        st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
        st.sampled_from(SPECIAL_INTS).map(np.int64),
        st.integers(0, 2**64 - 1).map(np.uint64),
        st.integers(-2**63, 2**63 - 1).map(np.int64),
        st.booleans().map(np.bool_),
        st.text(max_size=40).filter(lambda t: "\x00" not in t),       # h5py cannot store a NUL in a str
        st.sampled_from(["", "abc", "1", "-1", "1e3", " 1", "99999999999999999999999", "{}", "[]", "null",
                         '{"tensors.size_bytes": 1}', "g10core-trace", "g10core-hints", "ä·活"]),
        st.binary(max_size=24).map(np.void),                                   # opaque
        st.binary(max_size=24).filter(lambda b: b"\x00" not in b).map(np.bytes_),   # fixed-length bytes
        st.lists(st.integers(-2**31, 2**31 - 1), max_size=4).map(lambda v: np.array(v, np.int64)),
        st.lists(st.floats(allow_nan=True), min_size=2, max_size=3).map(lambda v: np.array(v)),
        st.just(np.zeros(2, [("a", "<i4"), ("b", "<f8")])),                  # compound array
        st.just(np.zeros((), [("a", "<i4")])),                                  # compound scalar
        st.just(h5py.Empty("f8")),
        st.just(h5py.Empty(h5py.string_dtype())),
    )


def byte_edits():
    """1-4 edits of a file's bytes: flip a bit, set a byte, zero a run, or truncate."""
    edit = st.one_of(
        st.tuples(st.just("bit"), st.floats(0, 1, exclude_max=True), st.integers(0, 7)),
        st.tuples(st.just("byte"), st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
        st.tuples(st.just("zero"), st.floats(0, 1, exclude_max=True), st.integers(1, 64)),
        st.tuples(st.just("cut"), st.floats(0, 1, exclude_max=True), st.just(0)),
    )
    return st.lists(edit, min_size=1, max_size=4)


def apply_byte_edits(data: bytes, edits) -> bytes:
    buf = bytearray(data)
    for kind, where, arg in edits:
        if not buf:
            break
        at = int(where * len(buf))
        if kind == "bit":
            buf[at] ^= 1 << arg
        elif kind == "byte":
            buf[at] = arg
        elif kind == "zero":
            buf[at:at + arg] = bytes(len(buf[at:at + arg]))
        else:
            del buf[at:]
    return bytes(buf)
