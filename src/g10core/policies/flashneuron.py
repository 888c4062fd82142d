"""FlashNeuron, a tensor-level baseline.

It moves whole tensors between GPU memory and storage without UVM and is simulated by
:mod:`g10core.policies.tensorsim` (as G10-GDS and G10-Host are: :mod:`g10core.policies.g10_tensor`).

* ``flashneuron`` (Bae et al., FAST 2021, as the G10 paper evaluates it): the
  forward activations that are still alive after the loss are offloaded to the
  SSD, in order of first appearance, until the rest fits in the GPU memory left
  after the weights and the largest per-kernel working set.  The backward pass
  brings them back as free space allows.  When even offloading every candidate
  leaves too much, the run fails ("FlashNeuron cannot fit"), as published.
"""
from __future__ import annotations

import numpy as np

from ..codes import HINT_DTYPE, HINT_TO_SSD
from ..workload import vitality
from ..workload.trace import Trace
from . import tensorsim
from .base import HOST_KEYS, QUIRKS_KEY, TENSOR_LEVEL_KEYS, TensorPolicy, register

GiB = 1 << 30
LOSS_KERNEL_NAME = "makeLoss"


def loss_kernel(trace: Trace) -> int:
    """Index of the loss kernel (the forward/backward boundary), or -1.

    The first kernel named ``makeLoss`` (the artifact's name); failing that, the
    first whose name contains "loss" (any case).
    """
    names = trace.kernel_name
    exact = np.flatnonzero(names == LOSS_KERNEL_NAME)
    if exact.size:
        return int(exact[0])
    for k, name in enumerate(names.tolist()):
        if "loss" in str(name).lower():
            return k
    return -1


def gpu_line_quirk(trace: Trace, config) -> dict | None:
    """quirk: the artifact lowers FlashNeuron's GPU line for ViT-1024 by hand ("so FlashNeuron
    does not crash"); ``{name, factor, what}`` or None."""
    if config.scheduler.artifact_quirks and trace.model == "vit" and trace.batch_size == 1024:
        return {"name": "flashneuron_vit1024_gpu_factor", "factor": 0.993,
                "what": "FlashNeuron plans ViT-1024 against 0.993x the GPU memory (vitality.cc)"}
    return None


def flashneuron_schedule(trace: Trace, config) -> dict:
    """FlashNeuron's offload plan.

    Returns ``{"failed", "failure_reason", "hints" (HINT_DTYPE, TO_SSD only),
    "loss_kernel", "gpu_line_bytes", "candidate_bytes", "remaining_bytes",
    "offloaded_bytes"}``.  ``failed`` is True when the plan cannot fit.
    """
    page = config.gpu.page_size_bytes
    loss = loss_kernel(trace)
    out = {"failed": False, "failure_reason": None, "hints": np.zeros(0, HINT_DTYPE),
           "loss_kernel": loss, "gpu_line_bytes": 0, "candidate_bytes": 0,
           "remaining_bytes": 0, "offloaded_bytes": 0}
    if loss < 0:
        out.update(failed=True, failure_reason=(
            f"FlashNeuron needs the forward/backward boundary: no kernel named {LOSS_KERNEL_NAME!r} "
            f"(or containing 'loss') in trace {trace.model}-b{trace.batch_size}"))
        return out

    gpu_bytes = int(config.gpu.memory_GiB * GiB)
    quirk = gpu_line_quirk(trace, config)
    if quirk is not None:
        gpu_bytes = int(gpu_bytes * quirk["factor"])
    max_ws = tensorsim.max_working_set_pages(trace, page) * page
    pages = (trace.tensor_size_bytes + page - 1) // page
    global_bytes = int(pages[trace.tensor_is_global].sum()) * page
    gpu_line = gpu_bytes - global_bytes - max_ws
    out["gpu_line_bytes"] = gpu_line
    if gpu_line <= 0:
        out.update(failed=True, failure_reason=(
            f"FlashNeuron cannot fit: weights ({global_bytes} B) plus the largest kernel working set "
            f"({max_ws} B) leave no GPU memory ({gpu_bytes} B) for activations"))
        return out

    # candidates: activations touched before the loss and still needed after it
    vit = vitality.analyze(trace, config.gpu.frequency_GHz)
    death = vit.death
    # the artifact collects candidates kernel by kernel in its hash-set order
    required = tensorsim.visit_lists(trace, tensorsim.default_visit_order(config))
    is_global = trace.tensor_is_global
    seen: dict[int, None] = {}
    for k in range(loss):
        for t in required[k]:
            if not is_global[t] and death[t] != -1 and death[t] > loss:
                seen.setdefault(t, None)
    candidates = list(seen)
    size = pages * page
    total = int(sum(int(size[t]) for t in candidates))
    out["candidate_bytes"] = total

    rows = []
    for t in candidates:
        if total < gpu_line:
            break
        # offload at the start of its last inactive interval that begins by the loss
        starts = vit.interval_start[vit.tensor_intervals(t)]
        starts = starts[starts <= loss]
        if starts.size == 0:
            continue   # no inactive interval before the loss: nothing to hide the transfer in
        start = int(starts[-1])
        rows.append((start, t))
        total -= int(size[t])
    out["remaining_bytes"] = total
    if total > gpu_line:
        out.update(failed=True, failure_reason=(
            f"FlashNeuron cannot fit: after offloading every forward activation it can, "
            f"{total} B remain resident but only {gpu_line} B are left after weights and the "
            f"largest kernel working set"))
        return out
    hints = np.zeros(len(rows), HINT_DTYPE)
    if rows:
        hints["kernel"] = [r[0] for r in rows]
        hints["tensor"] = [r[1] for r in rows]
        hints["action"] = HINT_TO_SSD
        hints = hints[_issue_order(hints["kernel"], config)]
    out["hints"] = hints
    out["offloaded_bytes"] = int(size[hints["tensor"]].sum()) if hints.size else 0
    return out


def _issue_order(issue_kernel: np.ndarray, config) -> np.ndarray:
    """Permutation that puts the offloads (in candidate order) in issue-kernel order.

    Offloads issued at the same kernel enter the SSD queue in this order.  The
    published simulator orders them with ``std::sort``, which is not stable:
    libstdc++'s introsort swaps some equal keys (BERT-256: 2 of its 103
    offloads), and the swapped offload finishes later, which delays the
    backward pass's prefetches by a few kernels.  With
    ``scheduler.artifact_quirks`` we emulate that sort exactly (the G10
    scheduler's ``std_sort``); without, the order is stable.
    """
    if not config.scheduler.artifact_quirks:
        return np.argsort(issue_kernel, kind="stable")
    from . import _g10sched

    keys = np.ascontiguousarray(issue_kernel, np.float64)
    order = np.arange(keys.size, dtype=np.int64)
    _g10sched.std_sort(order, _g10sched.CMP_LESS, keys, keys)
    return order


@register
class FlashNeuron(TensorPolicy):
    name = "flashneuron"
    reads = (TENSOR_LEVEL_KEYS - HOST_KEYS) | {QUIRKS_KEY}   # plans without the G10 scheduler
    not_applicable = HOST_KEYS              # offloads to the SSD only, whatever the machine has
    description = ("FlashNeuron: forward activations offloaded to SSD (FIFO, tensor granularity, "
                   "first-fit contiguous allocator); fails when the model cannot fit")

    def schedule(self, trace: Trace) -> np.ndarray:
        plan = flashneuron_schedule(trace, self.config)
        if plan["failed"]:
            raise ValueError(plan["failure_reason"])
        return plan["hints"]

    def simulate(self, trace: Trace, hints=None) -> dict:
        if hints is not None:       # a given hint table (its offloads) replaces the schedule
            loss = loss_kernel(trace)
            if loss < 0:
                raise ValueError(f"flashneuron needs a loss kernel (named 'makeLoss' or containing 'loss') "
                                 f"in {trace.model}-b{trace.batch_size} to replay hints")
            return tensorsim.simulate(trace, self.config, hints, mode="flashneuron", backward_start_kernel=loss)
        plan = flashneuron_schedule(trace, self.config)
        info = {k: v for k, v in plan.items() if k not in ("hints", "failed", "failure_reason")}
        info["n_offloads"] = int(plan["hints"].size)
        if plan["failed"]:
            failed = tensorsim.failed_result(plan["failure_reason"], mode="flashneuron", trace=trace,
                                             config=self.config)
            return tensorsim.with_policy(failed, self.name, info)
        res = tensorsim.simulate(trace, self.config, plan["hints"], mode="flashneuron",
                                 backward_start_kernel=plan["loss_kernel"])
        return tensorsim.with_policy(res, self.name, info)

    def hand_tuned_factors(self, trace: Trace) -> list[dict]:
        q = gpu_line_quirk(trace, self.config)
        return [] if q is None else [q]


__all__ = ["FlashNeuron", "flashneuron_schedule", "loss_kernel"]
