"""Result and IterationStats: JSON keys and units, failed results, atomic writes."""
import json
import math
import os

import numpy as np
import pytest

from g10core import results
from g10core.config import preset
from g10core.testing.reference import kernel_cycles
from g10core.simulator import Simulator
from g10core.workload.synth import synthesize

ITERATION_KEYS = {"index", "time_s", "ideal_time_s", "slowdown", "time_cycles", "ideal_cycles",
                  "all_fault_time_s", "faults_pages", "in_transfer_pages", "traffic_pages",
                  "allocated_pages", "breakdown_s", "prefetched_pages", "hinted_pages", "refetched_pages"}


@pytest.fixture(scope="module")
def small():
    """A 40-kernel training trace that does not fit a 12 MiB GPU (every tier gets used)."""
    trace = synthesize(40, 64 << 20, pattern="training", seed=1)
    cfg = preset("g10-artifact").with_overrides({"gpu": {"memory_GiB": 0.012}, "host": {"memory_GiB": 0.03}})
    return trace, cfg


@pytest.fixture(scope="module")
def page_result(small):
    trace, cfg = small
    return Simulator(cfg).run(trace, "base-uvm")


def test_json_has_the_issue_keys_with_units(page_result, small):
    trace, cfg = small
    d = json.loads(page_result.to_json())
    for key in ("policy", "preset", "config", "trace", "iterations", "iteration_time_s", "failed",
                "failure_reason", "config_hash", "ideal_time_s", "hints", "metadata"):
        assert key in d, key
    assert d["policy"] == "base-uvm" and d["preset"] == "g10-artifact" and d["level"] == "page"
    assert d["config"] == cfg.to_dict() and d["config_hash"] == cfg.hash
    assert d["config"]["gpu"]["memory_GiB"] == 0.012           # the resolved config, overrides included
    assert d["trace"]["model"] == trace.model and d["trace"]["n_kernels"] == trace.n_kernels
    assert d["trace"]["path"] is None and len(d["trace"]["digest"]) == 16
    assert len(d["iterations"]) == cfg.run.iterations == 2
    for it in d["iterations"]:
        assert set(it) == ITERATION_KEYS
        assert set(it["faults_pages"]) == {"host", "ssd", "unallocated"}
        assert set(it["traffic_pages"]) == {"ssd_to_gpu", "gpu_to_ssd", "host_to_gpu", "gpu_to_host"}
        assert set(it["breakdown_s"]) == {"compute", "overlap", "stall"}
        assert it["time_s"] == it["time_cycles"] / 1.2e9      # seconds = cycles at 1.2 GHz
        assert it["ideal_time_s"] == it["ideal_cycles"] / 1.2e9
    assert d["failed"] is False and d["failure_reason"] is None
    assert d["metadata"]["wall_s"] > 0 and d["metadata"]["peak_rss_MB"] > 0
    assert "kernels" not in d


def test_iteration_time_is_the_faster_iteration(page_result):
    times = [it.time_s for it in page_result.iterations]
    assert page_result.iteration_time_s == min(times)
    assert page_result.iterations[page_result.best_iteration].time_s == min(times)
    # cold start: iteration 0 faults in the weights from SSD, iteration 1 starts warm
    assert page_result.iterations[0].faults_pages["ssd"] > 0


def test_ideal_time_is_the_sum_of_ideal_kernel_cycles(page_result, small):
    trace, cfg = small
    t11 = kernel_cycles(trace, cfg.gpu.frequency_GHz)[0]
    assert page_result.ideal_time_s == int(t11.sum()) / 1.2e9
    for it in page_result.iterations:
        assert it.ideal_cycles == int(t11.sum())
    assert page_result.slowdown == page_result.iteration_time_s / page_result.ideal_time_s > 1
    assert page_result.normalized_performance == pytest.approx(1 / page_result.slowdown)


def test_per_kernel_arrays_only_on_request(page_result, small):
    trace, _ = small
    n = 2 * trace.n_kernels
    for name in results.KERNEL_COLUMNS + ("compute_cycles", "overlap_cycles", "stall_cycles"):
        assert page_result.kernels[name].shape == (n,), name
    # the per-kernel breakdown adds up to the per-iteration one
    it0 = page_result.kernels["iteration"] == 0
    assert page_result.kernels["stall_cycles"][it0].sum() / 1.2e9 == pytest.approx(
        page_result.iterations[0].breakdown_s["stall"])
    d = page_result.to_dict(kernels=True)
    assert len(d["kernels"]["end_cycles"]) == n
    assert d["kernels"]["end_cycles"][-1] == int(page_result.kernels["end_cycles"][-1])


def test_failed_result_is_inf_and_null_in_json():
    r = results.failed("cannot fit: kernel 3 alone needs 9 B", level="page", ideal_time_s=2.5,
                       policy="g10", preset="g10-artifact", config={}, config_hash="x", trace={})
    assert r.failed and r.iteration_time_s == math.inf and r.best_iteration is None
    assert r.normalized_performance == 0.0 and r.iterations == ()
    d = json.loads(r.to_json())   # strict JSON: no Infinity or NaN tokens
    assert d["failed"] is True and d["iteration_time_s"] is None and d["slowdown"] is None
    assert d["failure_reason"] == "cannot fit: kernel 3 alone needs 9 B"
    assert d["normalized_performance"] is None and d["iterations"] == [] and d["ideal_time_s"] == 2.5


def test_tensor_level_result_converts_bytes_to_pages():
    d = {"time_s": 3.0, "ideal_time_s": 2.0, "failed": False, "time_cycles": 3_600_000_000,
         "breakdown_s": {"compute": 1.5, "overlap": 0.5, "stall": 1.0},
         "traffic_bytes": {"gpu_to_ssd": 8192, "ssd_to_gpu": 4097, "gpu_to_host": 0, "host_to_gpu": 4096},
         "kernel_start_s": np.array([0.0, 1.0]), "kernel_time_s": np.array([1.0, 2.0]), "n_transfers": 3}
    r = results.from_tensor_level(d, page_size_bytes=4096, policy="g10-gds", preset="g10-artifact",
                                  config={}, config_hash="x", trace={})
    it = r.iterations[0]
    assert it.traffic_pages == {"ssd_to_gpu": 2, "gpu_to_ssd": 2, "host_to_gpu": 1, "gpu_to_host": 0}
    assert r.iteration_time_s == 3.0 and r.level == "tensor" and r.counters["n_transfers"] == 3
    assert r.counters["traffic_bytes"]["ssd_to_gpu"] == 4097
    assert list(r.kernels["time_s"]) == [1.0, 2.0]


def test_tensor_level_failure_becomes_a_failed_result():
    d = {"time_s": math.inf, "ideal_time_s": 2.0, "failed": True, "failure_reason": "FlashNeuron cannot fit",
         "breakdown_s": {"compute": math.nan, "overlap": math.nan, "stall": math.nan}, "traffic_bytes": {}}
    r = results.from_tensor_level(d, page_size_bytes=4096, policy="flashneuron", preset="p", config={},
                                  config_hash="x", trace={})
    assert r.failed and r.failure_reason == "FlashNeuron cannot fit" and r.iteration_time_s == math.inf
    json.loads(r.to_json())


def test_write_json_is_atomic(page_result, tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    page_result.write_json(path)
    before = path.read_text()
    assert json.loads(before)["policy"] == "base-uvm"

    def interrupted(src, dst):   # Ctrl-C between writing the temporary file and the rename
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        page_result.write_json(path, kernels=True)
    assert path.read_text() == before                  # the old file is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]   # no temporary left behind


def test_jsonable_turns_numpy_and_non_finite_into_plain_json():
    out = results.jsonable({"a": np.int64(3), "b": np.array([1.5, np.inf]), "c": (np.float32(2), float("nan"))})
    assert out == {"a": 3, "b": [1.5, None], "c": [2.0, None]}
    assert type(out["a"]) is int


# ---- the busy-time sweep of the breakdown ---------------------------------------------

from hypothesis import given, settings, strategies as hst  # noqa: E402

from g10core.results import _busy_per_span, _busy_per_span_sweep, busy_intervals  # noqa: E402


def _intersections(spans, begins, ends):
    """Cycles of each span covered by the intervals, by brute force."""
    return [sum(max(0, min(e, be) - max(s, bs)) for bs, be in zip(begins, ends)) for s, e, *_ in spans]


@settings(max_examples=300, deadline=None)
@given(hst.lists(hst.integers(0, 40), max_size=30), hst.lists(hst.integers(0, 40), max_size=40))
def test_busy_per_span_is_the_sweep_for_ordered_spans_and_intervals(span_lengths, marks):
    # spans back to back from 0 (kernel ends in order); markers in time order, paired
    ends = np.cumsum(span_lengths).tolist()
    spans = [(s, e, 0, i) for i, (s, e) in enumerate(zip([0] + ends[:-1], ends))]
    times = np.cumsum(marks).tolist()
    begins, stops = busy_intervals([(0, t, 0) for t in times], ends[-1] if ends else 0)
    fast = _busy_per_span(spans, (begins, stops))
    sweep = _busy_per_span_sweep(spans, list(zip(begins.tolist(), stops.tolist())))
    if not spans:
        assert fast == sweep == []
        return
    if fast is None:        # refused only where the sweep is not a plain intersection
        assert ((len(stops) and stops[-1] < begins[-1])       # unpaired last marker after the last end
                or any(s == e and s in begins.tolist() for s, e, *_ in spans))   # the sweep's skip
        return
    assert fast == sweep == _intersections(spans, begins.tolist(), stops.tolist())


def test_busy_per_span_refuses_what_the_sweep_alone_defines():
    spans = [(0, 10, 0, 0), (10, 20, 0, 1)]
    overlapping = (np.array([0, 5]), np.array([8, 12]))
    assert _busy_per_span(spans, overlapping) is None
    assert _busy_per_span([(10, 20, 0, 0), (0, 10, 0, 1)], (np.array([0]), np.array([5]))) is None
    # an empty span where an interval starts: the sweep steps past the whole interval
    empty_at_start = [(0, 1, 0, 0), (1, 1, 0, 1), (1, 2, 0, 2)]
    assert _busy_per_span(empty_at_start, (np.array([1]), np.array([2]))) is None
    assert _busy_per_span_sweep(empty_at_start, [(1, 2)]) == [0, 0, 0]


# ---- the replay's summary on whole columns (summarize_replay) is the artifact's loop (summarize) ---------

@hst.composite
def _replay_outputs(draw):
    iterations = draw(hst.integers(1, 3))
    K = draw(hst.integers(1, 12))
    t11 = np.array(draw(hst.lists(hst.integers(0, 50), min_size=K, max_size=K)), np.int64)
    t00 = t11 + np.array(draw(hst.lists(hst.integers(0, 50), min_size=K, max_size=K)), np.int64)
    rows, end = [], 0
    for it in range(iterations):
        for k in range(K):
            end += draw(hst.integers(0, 60))          # kernel ends in order; a span may be empty
            rows.append([it, k, end - 1, end, *draw(hst.lists(hst.integers(0, 9), min_size=6, max_size=6))])
    marks = np.cumsum(draw(hst.lists(hst.integers(0, 80), max_size=2 * len(rows)))).tolist()
    boundaries = [(t, 1 - i % 2) for i, t in enumerate(marks)]
    pcie = draw(hst.lists(hst.lists(hst.integers(0, 99), min_size=5, max_size=5), max_size=iterations + 1))
    translation = draw(hst.lists(hst.integers(0, 5), min_size=len(rows), max_size=len(rows)))
    raw = {"kernels": np.array(rows, np.int64), "pcie": np.array(pcie, np.int64).reshape(-1, 5),
           "boundaries": np.array(boundaries, np.int64).reshape(-1, 2), "host_overflow": draw(hst.booleans()),
           "translation_cycles": np.array(translation, np.int64)}
    return raw, t11, t00, iterations


@settings(max_examples=300, deadline=None)
@given(_replay_outputs(), hst.sampled_from(["partition", "artifact"]), hst.booleans())
def test_the_replay_summary_on_columns_is_the_artifacts_loop(replay, rule, translation):
    raw, t11, t00, iterations = replay
    fast = results.summarize_replay(raw, t11, t00, iterations, rule, translation)
    tb = raw["boundaries"]
    bounds = np.column_stack((np.zeros(len(tb), np.int64), tb))
    loop = results.summarize(K=len(t11), t11=t11, t00=t00, kernels=[tuple(r) for r in raw["kernels"].tolist()],
                             pcie=[(i, 0, *r) for i, r in enumerate(raw["pcie"].tolist())], boundaries=bounds,
                             iterations=iterations, host_overflow=raw["host_overflow"], rule=rule,
                             translation=raw["translation_cycles"] if translation else None)
    assert fast["iterations"] == loop["iterations"]            # every key, in order, as Python ints
    assert [list(d) for d in fast["iterations"]] == [list(d) for d in loop["iterations"]]
    assert all(type(v) is int for d in fast["iterations"] for v in d.values())
    assert fast["per_kernel_breakdown"].tolist() == [list(r) for r in loop["per_kernel_breakdown"]]
    assert fast["host_overflow"] == loop["host_overflow"]
