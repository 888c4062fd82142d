"""ZeRO-Offload: the optimizer on the CPU, gradients down and parameters up every step.

Ren et al., "ZeRO-Offload: Democratizing Billion-Scale Model Training", USENIX ATC 2021 (the
sections "Unique Optimal Offload Strategy", for what lives where and what crosses PCIe, and
"Optimized CPU Execution", for CPU Adam and the one-step delayed parameter update; DeepSpeed's
configuration ``zero_optimization.offload_optimizer.device = "cpu"``, stage 2).  One GPU:

* the fp16/bf16 parameters stay on the GPU (``initial_tier`` GPU) and forward and backward run
  there with their activations, as without offloading;
* each gradient goes to host memory as soon as the backward pass has produced it (a ``to_host``
  hint after its last GPU access): 2 bytes per parameter in mixed precision, 4 in fp32;
* the fp32 master weights and Adam's two moments live in host memory (``initial_tier`` host):
  12 bytes per parameter, never on the GPU;
* the optimizer step runs on the CPU: every kernel that writes optimizer state or updates a
  parameter (:func:`g10core.workload.roles.optimizer_kernels`) is a CPU kernel;
* each updated parameter is copied back to the GPU (a ``to_gpu`` hint after the last CPU kernel
  that writes it; after the last kernel, where the transfer still counts in the iteration);
* the activations are checkpointed layer by layer (``scheduler.zero_activation_checkpointing``,
  ``auto``: ``recompute``, the checkpoints on the GPU; DeepSpeed's ``activation_checkpointing``,
  which runs beside ``offload_optimizer``): each layer keeps its input, the rest is
  freed after its forward use and recomputed at the layer's backward
  (:class:`g10core.policies._zero.CheckpointPlan`, where the choices are listed).

Where we had to choose:

* CPU Adam is one fused pass per parameter (DeepSpeed's ``DeepSpeedCPUAdam``: vectorised and
  tiled), not the trace's separate elementwise optimizer kernels: the work of a
  parameter's optimizer kernels is given to its first one, :data:`ADAM_FLOPS_PER_ELEMENT`
  operations per element and one read of every tensor it reads plus one write of every tensor
  it writes (the gradient, master weight, moments and parameter: 28 bytes per element in fp32
  and in mixed precision).  The CPU computes in fp32.
* The step starts per parameter as soon as its gradient is in host memory (the trace's order of
  the optimizer kernels), and each updated parameter goes up as soon as it is written; DeepSpeed
  overlaps the gradient copies with the backward pass the same way and copies the parameters
  after the step.  The one-step delayed parameter update (DPU) is not modelled: the iteration
  waits for the step.
* The parameters' steady state: a host copy of each parameter the CPU writes stays in host memory
  between steps (``CPUWork.host_copies``), as DeepSpeed keeps its fp16 parameter buffers pinned.
  In an fp32 trace the parameter is its own master weight (a trace without separate master
  weights); the GPU copy is then the one that goes stale.
* No pinned staging buffers beyond those tensors: the host copies are the pinned buffers.
* Checkpointing is on by default although our traces were captured without it: the systems'
  runs of models this size use it, and without it 12 of the 17 shipped LLM traces do not fit a
  40 GiB GPU beside the parameters.  ``off`` restores the trace's own activation lifetimes.

The traffic per iteration has a closed form (:func:`closed_form`; ``docs/guide/zero.md``).
"""
from __future__ import annotations

import numpy as np

from ..codes import (HINT_TO_GPU, HINT_TO_HOST, ROLE_GRADIENT, ROLE_OPTIMIZER_STATE, ROLE_PARAMETER, TIER_GPU,
                     TIER_HOST, TIER_NOT_PRESENT)
from ..workload.trace import Trace
from . import tensorsim
from ._zero import (ADAM_FLOPS_PER_ELEMENT, CKPT_KEY, CheckpointPlan, OptimizerPlan, checkpoint_mode,  # noqa: F401
                    closed_form, hint_table, refuse_artifact, require_roles, run_plan, tensor_uses,
                    zero_partition, RANKS_KEY, COLLECTIVE_KEY)
from .base import CPU_KEYS, TENSOR_LEVEL_KEYS, TensorPolicy, register

def offload_plan(trace: Trace, checkpointing: str = "off") -> dict:
    """ZeRO-Offload's plan: ``{"hints", "on_cpu", "work" (CPUWork), "initial_tier", "info"}``;
    ``checkpointing`` is ``off``, ``recompute`` or ``cpu`` (:class:`CheckpointPlan`)."""
    require_roles(trace, "zero-offload")
    K, T = trace.n_kernels, trace.n_tensors
    role = trace.tensor_role
    opt = OptimizerPlan(trace)
    gpu_uses, cpu_uses = tensor_uses(trace, opt.on_cpu)
    glob = trace.tensor_is_global
    tier = np.where(glob, TIER_GPU, TIER_NOT_PRESENT).astype(np.int8)
    tier[glob & (role == ROLE_OPTIMIZER_STATE)] = TIER_HOST
    rows = []
    host_copies = np.zeros(T, bool)
    for t in range(T):
        if role[t] == ROLE_GRADIENT and gpu_uses[t] and cpu_uses[t]:
            rows.append((gpu_uses[t][-1] + 1, t, HINT_TO_HOST))      # down as soon as backward is done with it
        elif role[t] == ROLE_PARAMETER and cpu_uses[t]:
            host_copies[t] = True
            rows.append((cpu_uses[t][-1] + 1, t, HINT_TO_GPU))       # up once the step wrote it (K: after the last kernel)
    ckpt = CheckpointPlan(trace, opt.on_cpu, checkpointing)
    hints = hint_table(rows + ckpt.rows)
    work = tensorsim.CPUWork(flops=opt.flops, bytes=opt.bytes, dtype="fp32", host_copies=host_copies)
    info = {"n_cpu_kernels": int(opt.on_cpu.sum()), "n_parameter_groups": len(opt.groups),
            "n_parameters": int(opt.n_elements), "n_hints": int(hints.size), **ckpt.info(trace)}
    return {"hints": hints, "on_cpu": opt.on_cpu, "work": work, "initial_tier": tier, "info": info}


@register
class ZeroOffload(TensorPolicy):
    name = "zero-offload"
    reads = TENSOR_LEVEL_KEYS | CPU_KEYS | {CKPT_KEY, RANKS_KEY, COLLECTIVE_KEY}
    description = ("ZeRO-Offload (Ren et al., ATC 2021): parameters on the GPU, gradients to host memory as "
                   "backward produces them, Adam on the CPU, updated parameters back up")

    def schedule(self, trace: Trace) -> np.ndarray:
        return offload_plan(trace, checkpoint_mode(self.config, self.name))["hints"]

    def simulate(self, trace: Trace, hints=None) -> dict:
        refuse_artifact(self.name, self.config)
        partition = zero_partition(self.config)
        plan = offload_plan(trace, checkpoint_mode(self.config, self.name))
        return run_plan(self, trace, plan["hints"] if hints is None else hints, plan["on_cpu"], plan["work"],
                        plan["initial_tier"], plan["info"], partition)


__all__ = ["ZeroOffload", "offload_plan", "closed_form", "ADAM_FLOPS_PER_ELEMENT"]
