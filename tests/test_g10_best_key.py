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
