"""G10's greedy step without a sort (``SchedulerParams.best_by_scan``, ``default`` and
``detailed``): the heap of key bounds takes, at every step, the largest key of a scan of every
key recomputed then; it re-keys few intervals per step; ``g10-artifact`` keeps the published sort.

Oracle: a scan of every open interval's key at every step (``g10_schedule.VERIFY_BEST``: the
reference re-keys them all and checks the heap's choice, and its "none is positive", against
them), and the published pass's own counts.
"""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings

from g10core.config import preset
from g10core.policies import g10
from g10core.policies.g10 import _plan_with, plan, scheduler_params
from g10core.testing import g10_schedule as ref
from g10core.workload.vitality import analyze

from test_g10_kernels import scheduling_case, synthetic_trace


@pytest.fixture
def verify_every_step(monkeypatch):
    monkeypatch.setattr(ref, "VERIFY_BEST", True)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(case=scheduling_case())
def test_each_step_takes_the_largest_key_of_every_key_now(verify_every_step, case):
    trace, cfg, variant, _ = case
    cfg = cfg.with_overrides({"scheduler": {"artifact_quirks": False}})
    a = _plan_with(ref, trace, cfg, variant, None, False)   # asserts at every step
    assert a.params.best_by_scan


def test_a_shipped_plan_takes_the_largest_key(verify_every_step, load_shipped):
    s = _plan_with(ref, load_shipped("inceptionv3-b768"), preset("default"), "gds", None, False)
    assert s.params.best_by_scan and s.stats["greedy_steps"] > 300


def test_a_step_rekeys_few_intervals(load_shipped):
    """Cost in proportion to what changes: after keying each interval once, the heap re-keys a
    few per step, where the published pass re-keys every interval a booking or a kernel falling
    to the line touched, and sorts them all."""
    trace = load_shipped("resnet152-b1280")
    cfg = preset("default")
    heap = plan(trace, cfg).stats
    real = scheduler_params
    try:
        g10.scheduler_params = lambda *a, **k: dataclasses.replace(real(*a, **k), best_by_scan=False)
        sort = plan(trace, cfg).stats
    finally:
        g10.scheduler_params = real
    steps, intervals = heap["greedy_steps"], analyze(trace, cfg.gpu.frequency_GHz).n_intervals
    assert heap["sorts"] == 0 and sort["sorts"] == sort["greedy_steps"] > 500
    assert heap["area_approximations"] * 10 < sort["area_approximations"]
    # each interval keyed once per heap (two: over GPU memory, over the target), then a few a step
    assert heap["area_approximations"] < 2 * intervals + 16 * steps


@pytest.mark.parametrize("preset_name,scan", [("g10-artifact", False), ("default", True), ("detailed", True)])
def test_the_artifact_keeps_the_published_sort(preset_name, scan):
    t = synthetic_trace(2, [1, 1], [True, False], [{0: 1}, {1: 1}], [1.0, 1.0])
    assert scheduler_params(t, preset(preset_name)).best_by_scan is scan


def test_over_the_target_a_key_counts_the_host_links_walks(load_shipped):
    """BERT-256 under G10-Host with a 0.8 GB/s SSD: once no key is over GPU memory, the kernels
    still over the target (around kernel 400) lie outside every open interval's SSD walks (a slow
    SSD's half-size walk from kernel 1 reaches kernel 656), but inside its host link's walks.  With
    keys between the SSD's walks alone the pass stopped with the plan over the target (34 steps,
    7.878 s); with the host link's it fits, as the published pass's zero keys, taken in its sort's
    order, happened to (7.523 s)."""
    trace = load_shipped("bert_base-b256")
    cfg = preset("default").with_overrides({"ssd": {"bandwidth_GBps": 0.8}})
    s = plan(trace, cfg, "host")
    assert s.params.best_by_scan and s.params.host_memory_bytes > 0
    assert s.stats["fits_target"] and s.stats["greedy_end"] == "fits"
    assert s.stats["estimate_peak_bytes"] <= s.params.target_bytes
