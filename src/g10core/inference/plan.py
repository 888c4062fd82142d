"""The planner for inference: the least host memory, SSD bandwidth or GPU memory for a target.

:func:`plan_inference` finds, by bisection, the least value of one machine figure (``vary``) in
``[lo, hi]`` at which a policy's run of the trace reaches a target throughput (tokens/s) or time
per output token.  A run is feasible or not (:class:`~g10core.inference.schedule.InferenceMemoryError`)
and, where feasible, no slower with more of any of these figures (tested), so the predicate "fits
and meets the target" is monotone in the figure and bisection finds its least value.
"""
from __future__ import annotations

import dataclasses

from ..errors import SimulationError
from ..workload.trace import Trace
from .schedule import InferenceMemoryError, Machine, layer_stats, run_inference

PLANNABLE = {"host_memory_GB": "GB", "disk_read_GBps": "GB/s", "gpu_memory_GB": "GB", "disk_GB": "GB"}


def plan_inference(trace: Trace, machine: Machine, policy: str, vary: str, lo: float, hi: float,
                   target_tokens_per_s: float | None = None, target_tpot_s: float | None = None,
                   rel_tol: float = 1e-3, **policy_kwargs) -> dict:
    """The least ``vary`` in ``[lo, hi]`` at which ``policy`` reaches the target on ``machine``.

    Parameters
    ----------
    vary : str
        One of :data:`PLANNABLE`: ``host_memory_GB``, ``disk_read_GBps``, ``gpu_memory_GB``, ``disk_GB``.
    target_tokens_per_s, target_tpot_s : float
        Exactly one: the least throughput, or the most time per output token.
    policy_kwargs :
        What :func:`run_inference` takes beside (placement, cpu_attention, overlap, zero_device).

    Returns
    -------
    dict
        ``value`` (the least value found, within ``rel_tol``), the run there (``tokens_per_s``,
        ``tpot_s``, ``ttft_s``) and the run at ``hi``.

    Raises
    ------
    ValueError
        A bad key, range or target.
    SimulationError
        Even ``hi`` does not reach the target (one line saying what ``hi`` reaches).
    """
    if vary not in PLANNABLE:
        raise ValueError(f"vary = {vary!r}: one of {', '.join(PLANNABLE)}")
    if not (0 < lo < hi):
        raise ValueError(f"range [{lo}, {hi}]: need 0 < lo < hi")
    if (target_tokens_per_s is None) == (target_tpot_s is None):
        raise ValueError("give exactly one target: tokens/s or time per output token")
    target = target_tokens_per_s if target_tokens_per_s is not None else target_tpot_s
    if not target > 0:
        raise ValueError(f"target {target!r}: must be > 0")
    stats = layer_stats(trace)

    def run(value):
        m = dataclasses.replace(machine, **{vary: value})
        try:
            return run_inference(trace, m, policy, stats=stats, **policy_kwargs)
        except InferenceMemoryError:
            return None

    def meets(r):
        if r is None:
            return False
        if target_tokens_per_s is not None:
            return r.tokens_per_s >= target_tokens_per_s
        return r.tpot_s is not None and r.tpot_s <= target_tpot_s

    top = run(hi)
    if not meets(top):
        what = ("does not fit" if top is None else
                f"reaches {top.tokens_per_s:.4g} tokens/s, time per output token {top.tpot_s:.4g} s")
        raise SimulationError(f"no value of {vary} in [{lo:g}, {hi:g}] reaches the target: at {hi:g} the run {what}")
    if meets(run(lo)):
        value = lo
    else:
        a, b = lo, hi                    # not meets(a), meets(b)
        while (b - a) > rel_tol * b:
            mid = (a + b) / 2
            if meets(run(mid)):
                b = mid
            else:
                a = mid
        value = b
    r = run(value)
    return {"vary": vary, "unit": PLANNABLE[vary], "value": value, "policy": policy,
            "target_tokens_per_s": target_tokens_per_s, "target_tpot_s": target_tpot_s,
            "tokens_per_s": r.tokens_per_s, "tpot_s": r.tpot_s, "ttft_s": r.ttft_s,
            "at_hi": {"value": hi, "tokens_per_s": top.tokens_per_s, "tpot_s": top.tpot_s}}
