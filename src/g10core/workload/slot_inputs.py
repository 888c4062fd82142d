"""What the page-level replay reads from a trace: its kernel times in cycles, every tensor's
first and last use, and the check that the run fits the simulated clock.

The slot model (:mod:`g10core.uvm.slots`) derives its quotas and capacities from a configuration;
these are its inputs from the workload, with the published simulator's conversions and clamping
(``shared/reference/g10_artifact_model.md``).  (Before issue 44 both halves were
``g10core.slot_model``; that path still imports, with a warning.)
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..uvm.slots import physical_fault_params
from .trace import ACCESS_READ, Trace, kernel_working_set_bytes
from .vitality import ns_to_cycles

# The simulated clock is int64 cycles; a run's kernel times (all faulting) must leave 8x room
# for the stalls on top of them.
MAX_RUN_KERNEL_CYCLES = 1 << 60


def kernel_cycles(trace: Trace, freq_GHz: float = 1.2):
    """(t11, t10, t00) in cycles with the artifact's conversion and clamping."""
    t11 = ns_to_cycles(trace.kernel_time_ideal_ns, freq_GHz)
    t10 = np.maximum(ns_to_cycles(trace.kernel_time_fault_outputs_ns, freq_GHz), t11)
    t00 = np.maximum(ns_to_cycles(trace.kernel_time_fault_all_ns, freq_GHz), t10)
    return t11, t10, t00


def liveness(trace: Trace):
    """(birth, death) per tensor with the artifact's conventions (death -1: never read)."""
    T = trace.n_tensors
    birth = np.full(T, -1, np.int64)
    death = np.full(T, -1, np.int64)
    for k in range(trace.n_kernels):
        ts, ms = trace.kernel_accesses(k)
        for t, m in zip(ts.tolist(), ms.tolist()):
            if birth[t] < 0:
                birth[t] = k
            if m & ACCESS_READ:
                death[t] = k + 1
    return birth, death


def check_cycles_fit(trace: Trace, cfg, path=None) -> None:
    """Refuse a trace and configuration whose kernel times overflow the simulated clock.

    The times are ``trace``'s (bounded by its validation), the clock ``gpu.frequency_GHz`` and
    the count ``run.iterations`` (bounded by their ranges); only their product can overflow,
    so it is checked here, in floating point before any conversion to cycles.
    """
    per_kernel_ns = np.maximum(np.maximum(trace.kernel_time_fault_all_ns, trace.kernel_time_fault_outputs_ns),
                               trace.kernel_time_ideal_ns)
    seconds = float(np.sum(per_kernel_ns, dtype=np.float64)) / 1e9
    cycles = seconds * cfg.gpu.frequency_GHz * 1e9 * cfg.run.iterations
    if not cycles <= MAX_RUN_KERNEL_CYCLES:
        raise ConfigError(
            f"{path or f'{trace.model}-b{trace.batch_size}'}: /kernels: its kernels take {seconds:.4g} s per "
            f"iteration (all faulting); "
            f"at gpu.frequency_GHz = {cfg.gpu.frequency_GHz:g} over run.iterations = {cfg.run.iterations} that is "
            f"{cycles:.4g} cycles, more than the simulator's 64-bit clock leaves room for (2^60): lower "
            "run.iterations or gpu.frequency_GHz, or check the trace's kernel times")
    if cfg.fault.handler == "physical":
        fault_cycles = worst_physical_fault_cycles(trace, cfg) * cfg.run.iterations
        if not cycles + fault_cycles <= MAX_RUN_KERNEL_CYCLES:
            from ..params import batch_costs
            c = batch_costs(cfg.fault)
            raise ConfigError(
                f"{path or f'{trace.model}-b{trace.batch_size}'}: with every page of every kernel faulting, "
                f"fault.handler = 'physical' charges {fault_cycles:.4g} cycles of fault time over run.iterations = "
                f"{cfg.run.iterations} (fault.batch_profile = {cfg.fault.batch_profile!r}: fault.batch_fixed_us = "
                f"{c['batch_fixed_us']:g}, batch_per_block_us = {c['batch_per_block_us']:g}, batch_per_page_us = "
                f"{c['batch_per_page_us']:g}, batch_unmap_us = {c['batch_unmap_us']:g}, "
                f"batch_faults = {cfg.fault.batch_faults}, "
                f"gpu.malloc_us_per_byte = {cfg.gpu.malloc_us_per_byte:g}), more than the simulator's 64-bit clock "
                "leaves room for (2^60): lower those costs, run.iterations or gpu.frequency_GHz")


def worst_physical_fault_cycles(trace: Trace, cfg) -> float:
    """An upper bound of one iteration's physical fault time: every page of every kernel faulting
    from the slowest path, zero-filled at the same time, and in its own batches.

    Parameters
    ----------
    trace : Trace
        The trace (its kernels' working sets).
    cfg : SimConfig
        The configuration (:func:`physical_fault_params`).

    Returns
    -------
    float
        Cycles, in floating point (it is compared with the clock's room before any conversion).
    """
    p = physical_fault_params(cfg)
    pages = kernel_working_set_bytes(trace).astype(np.float64) / p["page_bytes"]
    slowest = min(p["bw_link_Bpms"], p["bw_ssd_Bpms"], p["bw_host_Bpms"])
    transfer = np.maximum(pages * p["page_bytes"] / slowest / 1e3 * p["freq_hz"],
                          pages * p["alloc_cycles_per_page"])
    blocks = np.ceil(pages / p["block_pages"])
    driver = (np.ceil(np.ceil(pages / p["unit_pages"]) / p["batch_faults"]) * p["batch_fixed_cycles"]
              + blocks * (p["batch_per_block_cycles"] + p["batch_unmap_cycles"]) + pages * p["batch_per_page_cycles"])
    return float(np.sum(transfer + driver))
