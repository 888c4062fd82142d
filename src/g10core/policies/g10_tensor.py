"""G10's schedule at tensor granularity: ``g10-gds`` and ``g10-host``.

* ``g10-gds``: G10's smart-migration schedule with GPU<->SSD transfers only (GPUDirect Storage).
* ``g10-host``: the same schedule with host memory as a second tier.

Both move whole tensors without UVM and are simulated by :mod:`g10core.policies.tensorsim`, as
FlashNeuron is; the schedules come from :func:`g10core.policies.g10.schedule`.
"""
from __future__ import annotations

import numpy as np

from ..codes import ACTION_NAMES
from ..workload.trace import Trace
from . import tensorsim
from .base import (G10_SCHEDULER_KEYS, G10_TIMING_KEYS, HOST_KEYS, QUIRKS_KEY, TENSOR_LEVEL_KEYS, TensorPolicy,
                   register)
from .g10 import schedule, target_quirk


def gds_capacity_quirk(config) -> dict | None:
    """quirk: the published GDS baselines size their allocator at 4x the GPU."""
    if config.scheduler.artifact_quirks:
        return {"name": "gds_allocator_capacity_factor", "factor": 4.0,
                "what": "G10-GDS/G10-Host allocate from 4x the GPU memory; only the scheduler's target "
                        "line limits memory (vitality.cc)"}
    return None


class _G10TensorLevel(TensorPolicy):
    variant: str = ""
    reads = TENSOR_LEVEL_KEYS | G10_TIMING_KEYS | G10_SCHEDULER_KEYS | {QUIRKS_KEY}

    def schedule(self, trace: Trace) -> np.ndarray:
        return schedule(trace, self.config, variant=self.variant)

    def simulate(self, trace: Trace, hints=None) -> dict:
        if hints is not None:       # a given hint table replaces G10's schedule
            return tensorsim.simulate(trace, self.config, hints, mode="gds")
        reason = tensorsim.working_set_check(trace, self.config)
        if reason is not None:
            failed = tensorsim.failed_result(reason, mode="gds", trace=trace, config=self.config)
            return tensorsim.with_policy(failed, self.name, {})
        hints = np.asarray(self.schedule(trace))
        res = tensorsim.simulate(trace, self.config, hints, mode="gds")
        counts = {ACTION_NAMES[a]: int((hints["action"] == a).sum()) for a in np.unique(hints["action"]).tolist()}
        return tensorsim.with_policy(res, self.name, {"n_hints": int(hints.size), "hints_by_action": counts})

    def hand_tuned_factors(self, trace: Trace) -> list[dict]:
        return [q for q in (target_quirk(trace, self.config, self.variant), gds_capacity_quirk(self.config))
                if q is not None]


@register
class G10GDS(_G10TensorLevel):
    name = "g10-gds"
    variant = "gds"
    reads = _G10TensorLevel.reads - HOST_KEYS
    not_applicable = HOST_KEYS              # no host memory, whatever the machine has
    description = "G10's schedule over GPUDirect storage: GPU<->SSD tensor transfers only, no host memory"


@register
class G10Host(_G10TensorLevel):
    name = "g10-host"
    variant = "host"
    description = "G10's schedule with host memory: GPU<->SSD and GPU<->host tensor transfers"


__all__ = ["G10GDS", "G10Host", "gds_capacity_quirk"]
