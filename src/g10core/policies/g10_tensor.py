"""G10's schedule at tensor granularity: ``g10-gds`` and ``g10-host``.

* ``g10-gds``: G10's smart-migration schedule with GPU<->SSD transfers only (GPUDirect Storage).
* ``g10-host``: the same schedule with host memory as a second tier.

Both move whole tensors without UVM and are simulated by :mod:`g10core.policies.tensorsim`, as
FlashNeuron is; the schedules come from :func:`g10core.policies.g10.schedule`.

Outside ``g10-artifact`` an iteration starts from the plan's placement of the global tensors
(:func:`initial_placement`) and ends there (the steady state of repeated iterations, the moves
back counted), and the globals of models whose parameters and optimizer state exceed GPU
memory are streamed from host memory or the SSD; the published simulator (``g10-artifact``)
starts with every global tensor on the GPU, leaves them where the iteration ends, and sizes
its allocator at 4x the GPU instead.
"""
from __future__ import annotations

import numpy as np

from ..codes import (ACTION_NAMES, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD, TIER_GPU, TIER_HOST,
                     TIER_NAMES, TIER_NOT_PRESENT, TIER_SSD)
from ..workload.trace import Trace
from . import tensorsim
from .base import (G10_PLANNER_KEYS, G10_SCHEDULER_KEYS, HOST_KEYS, QUIRKS_KEY, TENSOR_LEVEL_KEYS, TensorPolicy,
                   register)
from .g10 import schedule, target_quirk


def gds_capacity_quirk(config) -> dict | None:
    """quirk: the published GDS baselines size their allocator at 4x the GPU."""
    if config.scheduler.artifact_quirks:
        return {"name": "gds_allocator_capacity_factor", "factor": 4.0,
                "what": "G10-GDS/G10-Host allocate from 4x the GPU memory; only the scheduler's target "
                        "line limits memory (vitality.cc)"}
    return None


PLACEMENT_RULE = ("every global starts on the GPU while the globals fit in GPU memory (the published "
                  "start), and goes back there after the last kernel; when they do not fit, every one is "
                  "streamed from host memory (g10-host, the globals first used latest first, while it has "
                  "room) or the SSD: it starts there, is prefetched ahead of each use by its transfer time "
                  "and evicted back after it")


def first_use(trace: Trace) -> np.ndarray:
    """The first kernel that touches each tensor (``n_kernels`` for a tensor no kernel touches)."""
    K = trace.n_kernels
    kernel_of = np.repeat(np.arange(K, dtype=np.int64), np.diff(trace.access_offsets))
    first = np.full(trace.n_tensors, K, np.int64)
    np.minimum.at(first, trace.access_tensor.astype(np.int64), kernel_of)
    return first


def initial_placement(trace: Trace, config, variant: str) -> tuple[np.ndarray, np.ndarray]:
    """Where each tensor starts G10-GDS's / G10-Host's steady-state iteration, and which globals stream.

    Returns ``(tier, streamed)``: int8 tier codes per tensor and a bool mask of the global
    tensors that :func:`stream_hints` streams.

    The rule (:data:`PLACEMENT_RULE`): while the global tensors fit in GPU memory they all start
    on the GPU, the published simulator's start, and the simulator moves back after the last
    kernel whatever the schedule left elsewhere.  When they do not fit (the run could not even
    start before placements existed), every global is streamed: it starts in host memory under
    ``g10-host`` while ``host.memory_GiB`` holds it (the globals first used latest first; ties:
    the higher tensor id), otherwise on the SSD.  Non-global tensors start not present.

    Two other rules were measured and dropped.  Starting each global where the schedule's
    hints leave it at the end of an iteration (its steady state without moves back) made a
    tight synthetic trace that runs fail (the prefetches of the globals it starts off the GPU
    take the room its activations need) and was slower on every trace it changed under
    ``default`` (gpt2-medium-s1024-b16 under g10-gds 47.64 s against 47.32 s, llama-1b-s2048-b4
    51.87 s against 50.72 s, bert_base-b256 15.52 s against 15.10 s): the moves back run when the
    shared SSD is otherwise idle (with ssd.duplex = full it was faster: 44.32 s against 49.61 s).  Streaming only as many globals as the GPU lacks left llama-7b-s2048-b1 out
    of memory in the backward pass: G10's schedule plans as if every global were resident, and
    the activations it cannot offload within its bandwidth budgets need the room.
    """
    glob = np.asarray(trace.tensor_is_global, bool)
    tier = np.where(glob, TIER_GPU, TIER_NOT_PRESENT).astype(np.int8)
    streamed = np.zeros(trace.n_tensors, bool)
    page = config.gpu.page_size_bytes
    pages = (trace.tensor_size_bytes.astype(np.int64) + page - 1) // page
    capacity = int(config.gpu.memory_GiB * tensorsim.GiB) // page
    if int(pages[glob].sum()) > capacity:
        host_room = int(config.host.memory_GiB * tensorsim.GiB) // page if variant == "host" else 0
        first = first_use(trace)
        cand = np.flatnonzero(glob)
        for t in cand[np.lexsort((-cand, -first[cand]))].tolist():
            n = int(pages[t])
            if n <= host_room:
                tier[t] = TIER_HOST
                host_room -= n
            else:
                tier[t] = TIER_SSD
            streamed[t] = True
    return tier, streamed


def stream_hints(trace: Trace, tier: np.ndarray, streamed: np.ndarray, config) -> np.ndarray:
    """Move hints that stream the ``streamed`` globals between their start tier and the GPU.

    Per use of such a tensor (kernels in order), a ``to_gpu`` at the latest kernel whose
    ideal time until the use covers the transfer (size over the tier's bandwidth), and
    after the use an eviction back to its start tier; when the prefetch would fall at or
    before the kernel right after the previous use, the tensor stays on the GPU between the
    two uses.  After its last use it goes back, so the iteration ends where it started.
    """
    K = trace.n_kernels
    spec = tensorsim.TensorSimSpec.from_config(config, "gds")
    cyc = np.asarray(tensorsim.kernel_cycles(trace, config.gpu.frequency_GHz), np.float64)
    csum = np.concatenate(([0.0], np.cumsum(cyc)))       # csum[k]: cycles before kernel k
    hz = spec.frequency_GHz * 1e9
    page = config.gpu.page_size_bytes
    kernel_of = np.repeat(np.arange(K, dtype=np.int64), np.diff(trace.access_offsets))
    acc_t = trace.access_tensor.astype(np.int64)
    sel = streamed[acc_t]
    uses_t, uses_k = acc_t[sel], kernel_of[sel]
    order = np.lexsort((uses_k, uses_t))
    uses_t, uses_k = uses_t[order], uses_k[order]
    rows = []
    start = 0
    n = uses_t.size
    while start < n:
        t = int(uses_t[start])
        end = start
        while end < n and uses_t[end] == t:
            end += 1
        ks = sorted(set(uses_k[start:end].tolist()))
        start = end
        home = int(tier[t])
        evict = HINT_TO_HOST if home == TIER_HOST else HINT_TO_SSD
        Bps = spec.host_bandwidth_Bps if home == TIER_HOST else spec.ssd_bandwidth_Bps
        lead = (trace.tensor_size_bytes[t] + page - 1) // page * page * hz / Bps
        prev = -1
        for use in ks:
            # latest kernel p with csum[use] - csum[p] >= lead
            p = int(np.searchsorted(csum, csum[use] - lead, side="right")) - 1
            if prev >= 0 and p <= prev + 1:
                prev = use                        # too close to the previous use: stay resident
                continue
            if prev >= 0:
                rows.append((prev + 1, t, evict))
            rows.append((max(p, prev + 1, 0), t, HINT_TO_GPU))
            prev = use
        if prev >= 0 and prev + 1 <= K:
            rows.append((prev + 1, t, evict))
    out = np.zeros(len(rows), tensorsim.HINT_DTYPE)
    if rows:
        arr = np.array(rows, np.int64)
        out["kernel"], out["tensor"], out["action"] = arr[:, 0], arr[:, 1], arr[:, 2]
    return out


def with_stream_hints(hints: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """``hints`` and ``extra`` merged by kernel (stable: a kernel's schedule hints come first)."""
    merged = np.concatenate((np.asarray(hints), extra))
    return merged[np.argsort(merged["kernel"], kind="stable")]


def placement_summary(trace: Trace, tier: np.ndarray) -> dict:
    """Bytes of the global tensors per start tier, and the rule that placed them."""
    glob = np.asarray(trace.tensor_is_global, bool)
    size = trace.tensor_size_bytes.astype(np.int64)
    return {"rule": "globals on the GPU while they fit, else streamed (g10_tensor.PLACEMENT_RULE)",
            "bytes": {name: int(size[glob & (tier == code)].sum()) for code, name in TIER_NAMES.items()}}


class _G10TensorLevel(TensorPolicy):
    variant: str = ""
    reads = TENSOR_LEVEL_KEYS | G10_PLANNER_KEYS | G10_SCHEDULER_KEYS | {QUIRKS_KEY}
    plans_with = G10_PLANNER_KEYS           # the scheduler's lead and safe times, its SSD budget rule

    def schedule(self, trace: Trace) -> np.ndarray:
        """G10's schedule and, outside ``g10-artifact``, the hints that stream the globals that do
        not fit (:func:`stream_hints`): the whole plan, which :meth:`simulate` replays."""
        return self._plan(trace)[0]

    def _plan(self, trace: Trace):
        """``(hints, tier, n_stream)``: the plan, its start placement (None under ``g10-artifact``,
        whose published simulator starts with every global tensor on the GPU) and how many of the
        hints stream globals."""
        hints = np.asarray(schedule(trace, self.config, variant=self.variant))
        if self.config.scheduler.artifact_quirks:
            return hints, None, 0
        tier, streamed = initial_placement(trace, self.config, self.variant)
        n = 0
        if streamed.any():
            extra = stream_hints(trace, tier, streamed, self.config)
            hints, n = with_stream_hints(hints, extra), int(extra.size)
        return hints, tier, n

    @property
    def _demand_eviction(self) -> str | None:
        """G10 runs on UVM: outside ``g10-artifact`` (whose published simulator fails a plan that
        overfills the GPU) a tensor that finds the GPU full evicts on demand, as the driver does,
        to the tier the variant moves tensors to (G10-GDS: the SSD only)."""
        if self.config.scheduler.artifact_quirks:
            return None
        return "ssd" if self.variant == "gds" else "host"

    def simulate(self, trace: Trace, hints=None) -> dict:
        if hints is not None:       # a given hint table replaces G10's schedule
            hints = np.asarray(hints)
            tier = None
            if hints.dtype == tensorsim.HINT_DTYPE and not self.config.scheduler.artifact_quirks:
                # the same start as the policy's own plan (whose table, schedule(), holds the
                # streaming hints when the globals do not fit)
                tier, _ = initial_placement(trace, self.config, self.variant)
            return tensorsim.simulate(trace, self.config, hints, mode="gds", initial_tier=tier,
                                      demand_eviction=self._demand_eviction)
        reason = tensorsim.working_set_check(trace, self.config)
        if reason is not None:
            failed = tensorsim.failed_result(reason, mode="gds", trace=trace, config=self.config)
            return tensorsim.with_policy(failed, self.name, {})
        hints, tier, n_stream = self._plan(trace)
        res = tensorsim.simulate(trace, self.config, hints, mode="gds", initial_tier=tier,
                                 demand_eviction=self._demand_eviction)
        counts = {ACTION_NAMES[a]: int((hints["action"] == a).sum()) for a in np.unique(hints["action"]).tolist()}
        info = {"n_hints": int(hints.size), "hints_by_action": counts}
        if tier is not None:
            info["initial_placement"] = placement_summary(trace, tier)
            info["stream_hints"] = n_stream
        return tensorsim.with_policy(res, self.name, info)

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


__all__ = ["G10GDS", "G10Host", "PLACEMENT_RULE", "first_use", "gds_capacity_quirk", "initial_placement",
           "placement_summary", "stream_hints", "with_stream_hints"]
