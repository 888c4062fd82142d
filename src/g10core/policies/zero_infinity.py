"""ZeRO-Infinity: parameters and optimizer state on NVMe (or host memory), fetched layer by layer.

Rajbhandari et al., "ZeRO-Infinity: Breaking the GPU Memory Wall for Extreme Scale Deep
Learning", SC 2021 (its "infinity offload engine": parameters, gradients and optimizer state
offloaded to CPU or NVMe memory; its "overlap-centric design": the parameters of the next layers
prefetched while the current one computes, and the optimizer's NVMe reads and writes overlapped
with CPU Adam), with the names of DeepSpeed's
configuration (``zero_optimization.stage = 3``, ``offload_param.device`` and
``offload_optimizer.device`` = ``nvme`` or ``cpu``: ``scheduler.zero_infinity_device`` here).
On one GPU; ``scheduler.zero_ranks`` > 1 makes the run one rank of a data-parallel group, with the
bandwidth-centric partitioning across GPUs (:class:`g10core.policies.tensorsim.ZeroPartition`).

* Parameters (fp16/bf16, or fp32 in an fp32 trace) and optimizer state (fp32 master weights,
  Adam's moments) start each iteration on the SSD (``nvme``) or in host memory (``cpu``).
* Layer by layer: before a layer's forward, and again before its backward, its parameters are
  read from the SSD into host memory and copied to the GPU (``to_host`` then ``to_gpu`` hints),
  one layer ahead (the hints of layer l at the first kernel of the layer before it); after the
  layer's last kernel their GPU copy is dropped (``free``: the SSD copy stays current).  A
  parameter stays on the GPU when its next use is in the very next layer step (the last layer of
  the forward pass is the first of the backward one).
* Gradients go to host memory as the backward pass produces them, as in ZeRO-Offload.
* Activations are checkpointed layer by layer and the checkpoints offloaded to host memory
  (``scheduler.zero_activation_checkpointing``, ``auto``: ``cpu``; the paper's section 5.1,
  "Design for Unprecedented Scale", offloads activation checkpoints to CPU memory; DeepSpeed's
  ``activation_checkpointing.cpu_checkpointing``): each layer keeps its input, moved to host memory
  after its forward use and fetched one layer ahead of its backward; the rest is freed and
  recomputed when the layer's backward begins, its parameters fetched for that first use
  (:class:`g10core.policies._zero.CheckpointPlan`).
* CPU Adam runs on the CPU (:mod:`g10core.policies.zero_offload`'s fused model); the state and
  fp32 weights of each parameter are read from the SSD into host memory while the CPU works on
  the parameter before (DeepSpeed's ``pipeline_read``), and written back as soon as the step is
  done with them (``pipeline_write``), the updated fp16/bf16 parameter with them.

Where we had to choose:

* One layer of lookahead (DeepSpeed sizes it in elements, ``stage3_prefetch_bucket_size``); the
  first layer's parameters are fetched at the iteration's first kernel, without overlap.
* Gradients stay in host memory between the backward pass and the step (the paper allows NVMe;
  they are consumed in the same iteration, and writing them out would only add traffic).
* A layer is what the trace's roles say (``Trace.tensor_layer``: a transformer block; the
  embedding and the head are layers of their own); a GPU kernel belongs to the layer of the first
  parameter it reads.
* The staging copies in host memory (parameters on their way to the GPU, state being updated)
  are the pinned buffers (DeepSpeed's ``buffer_count`` x ``buffer_size``): they count against
  host memory while held, released when written or copied.

The traffic per iteration has a closed form (:func:`g10core.policies.zero_offload.closed_form`;
``docs/guide/zero.md``).
"""
from __future__ import annotations

import numpy as np

from ..codes import (HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD, ROLE_GRADIENT, ROLE_OPTIMIZER_STATE,
                     ROLE_PARAMETER, TIER_GPU, TIER_HOST, TIER_NOT_PRESENT, TIER_SSD)
from ..workload.trace import ACCESS_READ, ACCESS_WRITE, Trace
from . import tensorsim
from ._zero import (CKPT_KEY, CheckpointPlan, OptimizerPlan, checkpoint_mode, fetch_counts, hint_table,  # noqa: F401
                    layer_steps, param_segments, refuse_artifact, require_roles, run_plan, tensor_uses,
                    zero_partition, RANKS_KEY, COLLECTIVE_KEY)
from .base import CPU_KEYS, TENSOR_LEVEL_KEYS, TensorPolicy, register

DEVICE_KEY = "scheduler.zero_infinity_device"


def infinity_plan(trace: Trace, device: str, checkpointing: str = "off") -> dict:
    """ZeRO-Infinity's plan on ``device`` (``nvme`` or ``cpu``): ``{"hints", "on_cpu", "work",
    "initial_tier", "info"}``; ``checkpointing`` is ``off``, ``recompute`` or ``cpu``
    (:class:`g10core.policies._zero.CheckpointPlan`)."""
    require_roles(trace, "zero-infinity")
    K, T = trace.n_kernels, trace.n_tensors
    role = trace.tensor_role
    nvme = device == "nvme"
    home = TIER_SSD if nvme else TIER_HOST
    opt = OptimizerPlan(trace)
    gpu_uses, cpu_uses = tensor_uses(trace, opt.on_cpu)
    glob = trace.tensor_is_global
    tier = np.where(glob, TIER_GPU, TIER_NOT_PRESENT).astype(np.int8)
    tier[glob & ((role == ROLE_OPTIMIZER_STATE) | (role == ROLE_PARAMETER))] = home
    rows = []
    ckpt = CheckpointPlan(trace, opt.on_cpu, checkpointing)
    segments = param_segments(trace, opt.on_cpu, ckpt.param_uses)
    for t, segs in segments.items():
        for pre, _, last in segs:
            if nvme:
                rows.append((pre, t, HINT_TO_HOST))      # SSD -> host staging
            rows.append((pre, t, HINT_TO_GPU))           # host -> GPU once staged
            rows.append((last + 1, t, HINT_FREE))        # the GPU copy goes; the home copy stays current
    for t in np.flatnonzero(role == ROLE_GRADIENT).tolist():
        if gpu_uses[t] and cpu_uses[t]:
            rows.append((gpu_uses[t][-1] + 1, t, HINT_TO_HOST))
    if nvme:
        off, acc_t, acc_m = trace.access_offsets, trace.access_tensor, trace.access_mode
        prev_first = None
        for ks in opt.groups:
            at = prev_first if prev_first is not None else ks[0]
            seen = set()
            for k in ks:
                sl = slice(off[k], off[k + 1])
                for t, m in zip(acc_t[sl].tolist(), acc_m[sl].tolist()):
                    if t in seen or not glob[t] or role[t] not in (ROLE_PARAMETER, ROLE_OPTIMIZER_STATE):
                        continue
                    seen.add(t)
                    if m & ACCESS_READ:
                        rows.append((at, t, HINT_TO_HOST))       # pipeline_read: one group ahead
            for t in seen:
                if any(True for k in cpu_uses[t] if _writes(trace, k, t)):
                    rows.append((cpu_uses[t][-1] + 1, t, HINT_TO_SSD))   # pipeline_write
            prev_first = ks[0]
    hints = hint_table(rows + ckpt.rows)
    work = tensorsim.CPUWork(flops=opt.flops, bytes=opt.bytes, dtype="fp32")
    info = {"device": device, "n_cpu_kernels": int(opt.on_cpu.sum()), "n_parameter_groups": len(opt.groups),
            "n_parameters": int(opt.n_elements), "n_hints": int(hints.size),
            "n_layer_steps": int(layer_steps(trace, opt.on_cpu).max() + 1),
            "parameter_fetches": int(sum(len(s) for s in segments.values())), **ckpt.info(trace)}
    return {"hints": hints, "on_cpu": opt.on_cpu, "work": work, "initial_tier": tier, "info": info}


def _writes(trace: Trace, k: int, t: int) -> bool:
    sl = slice(trace.access_offsets[k], trace.access_offsets[k + 1])
    rows = np.flatnonzero(trace.access_tensor[sl] == t)
    return bool(np.any(trace.access_mode[sl][rows] & ACCESS_WRITE))


@register
class ZeroInfinity(TensorPolicy):
    name = "zero-infinity"
    reads = TENSOR_LEVEL_KEYS | CPU_KEYS | {"ssd.bandwidth_GBps", DEVICE_KEY, CKPT_KEY, RANKS_KEY, COLLECTIVE_KEY}
    description = ("ZeRO-Infinity (Rajbhandari et al., SC 2021): parameters and optimizer state on NVMe "
                   "(scheduler.zero_infinity_device), fetched layer by layer; CPU Adam streaming its state")

    def schedule(self, trace: Trace) -> np.ndarray:
        return infinity_plan(trace, self.config.scheduler.zero_infinity_device,
                             checkpoint_mode(self.config, self.name))["hints"]

    def simulate(self, trace: Trace, hints=None) -> dict:
        refuse_artifact(self.name, self.config)
        partition = zero_partition(self.config)
        plan = infinity_plan(trace, self.config.scheduler.zero_infinity_device, checkpoint_mode(self.config, self.name))
        return run_plan(self, trace, plan["hints"] if hints is None else hints, plan["on_cpu"], plan["work"],
                        plan["initial_tier"], plan["info"], partition)


__all__ = ["ZeroInfinity", "infinity_plan", "param_segments", "fetch_counts", "layer_steps"]
