"""Tensor vitality analysis: the published analysis as oracle, plus closed-form cases.

The oracle is ``shared/g10_artifact/workloads/<Model>/<B>/interval.config.gz``, the
published simulator's own printout of liveness and inactive intervals (times printed
with C++'s default 6 significant digits, so we compare at that precision).
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from g10core.workload.vitality import CannotFit, analyze, check_fits, kernel_time_tables, kernel_working_set_bytes
from g10core.workload.g10artifact import ARTIFACT_FOLDERS, available_workloads, load_workload
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, Trace

from conftest import artifact_path

# the published inputs: $G10_ARTIFACT_DIR or ../shared/g10_artifact beside the checkout
ARTIFACT = artifact_path()

_TENSOR = re.compile(r"tensor(\d+) Is weight")
_LIVE = re.compile(r"Liveness: Birth: (-?\d+), Death: (-?\d+)\.")
_IV = re.compile(r"interval (\d+): (-?\d+)--------(-?\d+)")


def parse_interval_config(path: Path):
    """-> (birth, death, is_global, [(tensor, start, end, time_text)]) of the printout."""
    birth, death, glob, intervals = {}, {}, {}, []
    tensor = None
    pending = None
    with gzip.open(path, "rt") as fh:
        for line in fh:
            m = _TENSOR.match(line)
            if m:
                tensor = int(m[1])
                continue
            if line.startswith("Global!"):
                glob[tensor] = True
            elif (m := _LIVE.match(line)):
                glob[tensor] = False
                birth[tensor], death[tensor] = int(m[1]), int(m[2])
            elif (m := _IV.match(line)):
                pending = (tensor, int(m[2]), int(m[3]))
            elif line.startswith("Estimated Time:"):
                intervals.append(pending + (line.split(":", 1)[1].strip(),))
                pending = None
    return birth, death, glob, intervals


WORKLOADS = available_workloads(ARTIFACT)


def test_all_thirty_workloads_present(artifact_dir):  # skips (or fails in CI) without them
    assert len(WORKLOADS) == 30


@pytest.mark.parametrize("model,batch", WORKLOADS, ids=[f"{m}-{b}" for m, b in WORKLOADS])
def test_analysis_equals_published(model, batch, artifact_dir):
    trace = load_workload(ARTIFACT, model, batch)
    v = analyze(trace)
    path = ARTIFACT / "workloads" / ARTIFACT_FOLDERS[model] / str(batch) / "interval.config.gz"
    birth, death, glob, intervals = parse_interval_config(path)

    assert len(glob) == trace.n_tensors
    g = np.array([glob[t] for t in range(trace.n_tensors)])
    np.testing.assert_array_equal(v.is_global, g)
    local = np.flatnonzero(~g)
    np.testing.assert_array_equal(v.birth[local], [birth[t] for t in local])
    np.testing.assert_array_equal(v.death[local], [death[t] for t in local])

    assert v.n_intervals == len(intervals)
    exp = np.array([iv[:3] for iv in intervals], np.int64).reshape(-1, 3)
    np.testing.assert_array_equal(v.interval_tensor, exp[:, 0])
    np.testing.assert_array_equal(v.interval_start, exp[:, 1])
    np.testing.assert_array_equal(v.interval_end, exp[:, 2])
    np.testing.assert_array_equal(v.interval_looped, exp[:, 2] < exp[:, 1])
    ours = ["%g" % x for x in v.interval_time_us]  # C++ ostream default: %g, 6 digits
    bad = [i for i, (a, b) in enumerate(zip(ours, (iv[3] for iv in intervals))) if a != b]
    assert not bad, f"{len(bad)} times differ, first: interval {bad[0]} ours {ours[bad[0]]} published {intervals[bad[0]][3]}"
    # CSR grouping by tensor is consistent with the table
    for t in (0, trace.n_tensors // 2, trace.n_tensors - 1):
        assert np.all(v.interval_tensor[v.tensor_intervals(t)] == t)


# ---- closed-form cases on hand-made traces ----------------------------------

def make_trace(K, sizes, is_global, uses, times_ns=None, model="synthetic"):
    """uses: per kernel a list of (tensor, mode) with mode 'r', 'w' or 'rw'."""
    sizes = np.asarray(sizes, np.int64)
    times = np.full(K, 1000.0) if times_ns is None else np.asarray(times_ns, np.float64)
    off, tens, mode = [0], [], []
    for k in range(K):
        for t, m in uses[k]:
            tens.append(t)
            mode.append((ACCESS_READ if "r" in m else 0) | (ACCESS_WRITE if "w" in m else 0))
        off.append(len(tens))
    T = len(sizes)
    return Trace(
        model=model, batch_size=1,
        tensor_size_bytes=sizes, tensor_is_global=np.asarray(is_global, bool),
        tensor_name=np.array([f"t{i}" for i in range(T)]),
        kernel_name=np.array([f"k{i}" for i in range(K)]),
        kernel_time_ideal_ns=times, kernel_time_fault_all_ns=times * 3,
        kernel_time_fault_outputs_ns=times * 2, kernel_workspace_bytes=np.zeros(K, np.int64),
        access_offsets=np.array(off, np.int64), access_tensor=np.array(tens, np.int32),
        access_mode=np.array(mode, np.uint8))


def intervals_of(v, t):
    s = v.tensor_intervals(t)
    return list(zip(v.interval_start[s].tolist(), v.interval_end[s].tolist(), v.interval_looped[s].tolist()))


def test_local_liveness_and_gaps():
    # t0 written at 0, read at 3 and 6, written at 8 (after its last read): death 7
    # t1 written at 2, never read: death -1, no intervals
    K = 10
    uses = [[] for _ in range(K)]
    uses[0] = [(0, "w")]
    uses[2] = [(1, "w")]
    uses[3] = [(0, "r")]
    uses[4] = [(0, "rw")]
    uses[6] = [(0, "r")]
    uses[8] = [(0, "w")]
    v = analyze(make_trace(K, [4096, 8192], [False, False], uses))
    assert (v.birth[0], v.death[0]) == (0, 7)
    assert (v.birth[1], v.death[1]) == (2, -1)
    assert intervals_of(v, 0) == [(1, 3, False), (5, 6, False)]
    assert intervals_of(v, 1) == []
    assert v.is_alive(1, 2) and not v.is_alive(1, 3)
    assert v.is_alive(0, 6) and not v.is_alive(0, 7)


@pytest.mark.parametrize("use_at,expected", [
    ([2, 5], [(3, 5, False), (6, 2, True)]),   # wraps: idle 6..9 then 0..1
    ([0, 5], [(1, 5, False), (6, 0, True)]),   # used by kernel 0: wrap gap ends at 0
    ([3, 9], [(4, 9, False), (0, 3, False)]),  # used by the last kernel: gap 0..2, not looped
    ([0, 9], [(1, 9, False)]),                 # first and last kernel: no wrap gap
    ([4], [(5, 4, True)]),                     # used once: idle the rest of the loop
])
def test_global_wrap_around(use_at, expected):
    K = 10
    uses = [[] for _ in range(K)]
    for k in use_at:
        uses[k] = [(0, "r")]
    v = analyze(make_trace(K, [4096], [True], uses))
    assert intervals_of(v, 0) == expected


def test_estimated_times_closed_form():
    # kernels of 1..10 µs at 1.2 GHz (1200 cycles per µs)
    K = 10
    times_ns = np.arange(1, K + 1) * 1000.0
    uses = [[] for _ in range(K)]
    uses[2] = [(0, "r")]
    uses[6] = [(0, "r")]
    v = analyze(make_trace(K, [4096], [True], uses, times_ns))
    np.testing.assert_array_equal(v.kernel_cycles, np.arange(1, K + 1) * 1200)
    # [3, 6): kernels 3,4,5 = 4+5+6 µs; looped [7, 2): kernels 7,8,9,0,1 = 8+9+10+1+2 µs
    np.testing.assert_allclose(v.interval_time_us, [15.0, 30.0], rtol=0, atol=1e-9)


def test_time_tables_accumulate_left_to_right():
    cycles = np.array([1, 3, 7, 0, 5], np.int64)
    table, ext = kernel_time_tables(cycles, 1.2)
    acc, ref = 0.0, [0.0]
    for c in cycles:
        acc += c / 1200.0
        ref.append(acc)
    assert table.tolist() == ref                    # bitwise
    run, ref_ext = ref[-1], ref[:-1] + [ref[-1]]
    for c in cycles:
        run += c / 1200.0
        ref_ext.append(run)
    assert ext.tolist() == ref_ext


def test_untouched_local_tensor():
    v = analyze(make_trace(3, [4096, 4096], [False, False], [[(0, "w")], [(0, "r")], []]))
    assert (v.birth[1], v.death[1]) == (-1, -1)
    assert intervals_of(v, 1) == []


def test_cannot_fit_names_the_kernel():
    tr = make_trace(3, [8 << 20, 12 << 20, 4096], [False, False, True],
                    [[(0, "w"), (2, "r")], [(0, "r"), (1, "w")], [(1, "r")]])
    np.testing.assert_array_equal(kernel_working_set_bytes(tr), [(8 << 20) + 4096, 20 << 20, 12 << 20])
    check_fits(tr, 20 << 20)
    with pytest.raises(CannotFit) as e:
        check_fits(tr, (20 << 20) - 1)
    assert e.value.kernel == 1 and e.value.working_set_bytes == 20 << 20
    assert "kernel 1" in str(e.value)
