"""A policy in a file that uses the CPU as a compute tier: the optimizer step on the CPU, no hints.

Run it from the command line by file and class name (g10sim finds the shipped examples by
file name; copy this file to start your own)::

    g10sim run gpt2-small-s1024-b5 --policy cpu_optimizer.py:CPUOptimizer

What it does.  The optimizer state (Adam's moments; role ``optimizer_state``) starts each
iteration in host memory, and every optimizer kernel (``roles.optimizer_kernels``) runs on the
CPU.  It gives no hints at all, so the tensor-level simulator moves what the CPU kernels read
into host memory on demand, when the CPU comes to them (each gradient and parameter, from the
GPU), and what the GPU then needs back on demand too (the parameters the CPU rewrote, at the
next iteration's first use: here they are fetched after the last kernel by a hint at kernel K).
Compare it with ``--policy zero-offload``, which sends each gradient down as soon as the backward
pass has produced it and keeps a host copy of the parameters, so only the gradient goes down.

The CPU kernels' work is left to the simulator's default (each kernel's own reads and writes, one
operation per 4 bytes written), where ``zero-offload`` gives it CPU Adam's fused pass.
"""
import numpy as np

from g10core.codes import HINT_DTYPE, HINT_TO_GPU, ROLE_OPTIMIZER_STATE, ROLE_PARAMETER, TIER_GPU, TIER_HOST
from g10core.policies import TensorPolicy
from g10core.policies import tensorsim
from g10core.policies.base import CPU_KEYS, TENSOR_LEVEL_KEYS
from g10core.workload import roles


class CPUOptimizer(TensorPolicy):
    """The optimizer on the CPU, its state in host memory, everything moved on demand."""

    name = "cpu-optimizer"
    reads = TENSOR_LEVEL_KEYS | CPU_KEYS
    description = "optimizer kernels on the CPU with their state in host memory; moves on demand"

    def simulate(self, trace, hints=None):
        on_cpu = np.zeros(trace.n_kernels, bool)
        on_cpu[roles.optimizer_kernels(trace)] = True
        tier = np.where(trace.tensor_is_global, TIER_GPU, 0).astype(np.int8)
        tier[trace.tensor_is_global & (trace.tensor_role == ROLE_OPTIMIZER_STATE)] = TIER_HOST
        # the parameters go back to the GPU after the last kernel (a hint at kernel K): the next
        # iteration starts with them there, as this one did
        params = np.flatnonzero(trace.tensor_role == ROLE_PARAMETER)
        end = np.zeros(params.size, HINT_DTYPE)
        end["kernel"], end["tensor"], end["action"] = trace.n_kernels, params, HINT_TO_GPU
        res = tensorsim.simulate(trace, self.config, end if hints is None else hints, mode="gds",
                                 initial_tier=tier, cpu_kernels=on_cpu)
        return tensorsim.with_policy(res, self.name, {"n_cpu_kernels": int(on_cpu.sum())})
