"""SSD bandwidth equal to the PCIe bandwidth (the top of Fig. 18): the fault model's corner.

With ``ssd.bandwidth_GBps == link.bandwidth_GBps`` a kernel whose SSD faults get the
capped SSD bandwidth leaves ``BW_pcie - BW_ssd = 0`` for its host faults, and the
published simulator's ``performance_model`` divides by that zero: +inf when host or
unallocated pages fault, NaN (0 / 0) when none do.  ``std::max(ssd, NaN)`` keeps the SSD
time; an infinite fault time is converted to ``unsigned long`` cycles, which gcc on
x86-64 turns into 0, so the kernel ends when its last page arrives.  Before the fix the
compiled replay cast +inf to int64 (INT64_MIN) and a kernel "ended" before its ideal
time (SimulationError), and the page-by-page reference raised ZeroDivisionError.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from g10core.config import preset
from g10core.testing.reference import ArtifactConstants, fault_model_cycles, kernel_cycles

from test_replay_reference import max_working_set, run_compiled, run_reference, small_config

from g10core.policies.baseline import deepum_hints
from g10core.workload.synth import synthesize

PAGE = 4096


def equal_bandwidths(GBps=32.0):
    return preset("g10-artifact").with_overrides({
        "ssd": {"bandwidth_GBps": GBps}, "host": {"bandwidth_GBps": GBps}, "link": {"bandwidth_GBps": GBps}})


def test_fault_model_host_faults_with_no_bandwidth_left_add_no_time():
    c = ArtifactConstants.from_config(equal_bandwidths())
    assert c.bw_ssd_Bpms == c.bw_pcie_Bpms          # the two bandwidths are the same double
    # kernel 0 of BERT-256 under Base UVM: 2 weight pages on SSD, the rest unallocated
    t = 237_158
    assert fault_model_cycles(c, t, t, t, 2 + 100, 2, 200, 50, 0, 50) == 0
    # SSD faults only (inputs), no output faults: host terms are 0 / 0 = NaN, the SSD time stays
    in_total = 1000
    ssd_only = fault_model_cycles(c, t, t, t, in_total, in_total, in_total, 0, 0, 10)
    expected_ms = in_total * PAGE / c.bw_ssd_Bpms     # r_in = rs_in = 1, capped SSD bandwidth
    assert ssd_only == int(expected_ms / 1e3 * c.freq_hz) > 0
    # below the link's bandwidth nothing changes: the host share is finite
    c2 = ArtifactConstants.from_config(equal_bandwidths(32.0).with_overrides({"ssd": {"bandwidth_GBps": 25.6}}))
    host_left = c2.bw_pcie_Bpms - c2.bw_ssd_Bpms
    got = fault_model_cycles(c2, t, t, t, 2 + 100, 2, 200, 50, 0, 50)
    cpu_ms = (102 / 200) * (100 / 102) * 200 * PAGE / host_left + 1.0 * 1.0 * 50 * PAGE / host_left
    ssd_ms = (102 / 200) * (2 / 102) * 200 * PAGE / c2.bw_ssd_Bpms
    assert got == int(max(ssd_ms, cpu_ms) / 1e3 * c2.freq_hz)
    assert math.isfinite(cpu_ms) and got > 0


@pytest.mark.parametrize("seed, pattern, eviction", [(1, "training", "lru"), (2, "random", "lru"),
                                                     (4, "training", "deepum"), (8, "random", "deepum")])
def test_compiled_replay_equals_reference_at_equal_bandwidths(seed, pattern, eviction, monkeypatch):
    import g10core.testing.reference as reference

    fault_times = []
    convert = reference._artifact_ulong
    monkeypatch.setattr(reference, "_artifact_ulong", lambda x: fault_times.append(x) or convert(x))
    trace = synthesize(24, 400 * PAGE, pattern=pattern, seed=seed)
    ws = max_working_set(trace)
    cfg = small_config(int(ws * 1.3) + 20, 20, 10, ssd_GBps=15.754, host_GBps=15.754)
    hints = deepum_hints(trace, cfg) if eviction == "deepum" else None
    ref_k, ref_pcie, _bounds, ref_overflow = run_reference(trace, cfg, eviction, hints, eviction == "deepum")
    assert any(math.isinf(x) for x in fault_times)        # the corner is exercised
    out, _ = run_compiled(trace, cfg, eviction, hints, eviction == "deepum")
    assert np.array_equal(out["kernels"], ref_k)
    assert np.array_equal(out["pcie"], ref_pcie)
    assert out["host_overflow"] == ref_overflow
    rows = np.asarray(out["kernels"]).reshape(-1, 10)
    t11 = kernel_cycles(trace, cfg.gpu.frequency_GHz)[0]
    assert np.all(rows[:, 3] - rows[:, 2] >= t11[rows[:, 1]])     # no kernel beats its ideal time
