"""TERAIO: lifetime-aware tensor offloading to SSD over GPUDirect Storage.

Yuan, Zhang, Zhou, Mohan, Chung, Seelam and Huang, "Cost-Efficient LLM Training with
Lifetime-Aware Tensor Offloading via GPUDirect Storage" (TERAIO), arXiv 2506.06472, 2025
(NeurIPS 2025); G10's group.

What the paper does (sections 3.1-3.3): it profiles the first iterations to learn every tensor's
lifetime, the kernels during which it is *active* (used) and the *inactive periods* between uses;
active tensors are a small share of allocated GPU memory (1.7 % on average in its LLMs).  From
that analysis it plans, before training, which tensors to offload to SSD and when to prefetch
them back, preferring the tensors that stay inactive longest (large and long-idle tensors hide
their transfers best) and checking that the SSD bandwidth can carry each migration within its
inactive period; a runtime migration engine executes the plan through GPUDirect Storage
(GPU<->SSD directly, no host bounce), across several GPUs and SSDs.  Parameters, gradients,
optimizer states and activations are all candidates.

How it maps onto a trace (where we had to choose):

* Lifetimes are G10's vitality analysis (:func:`g10core.workload.vitality.analyze`): every
  inactive interval of every tensor, a global tensor's (weights, optimizer states) across the
  iteration boundary included.  Their lengths are the ideal kernel times (t11).
* Greedy, longest interval first: an interval is taken when it holds a kernel still over the
  GPU memory (resident bytes with nothing moved, less what the plan already moved out) and
  its migration fits the SSD's remaining time: the write takes the time left in the kernels
  from the interval's start onward, the read the time left in the kernels before its end,
  backward, and the write must end before the read begins.  With ``ssd.duplex = shared``
  (default) reads and writes share the SSD's time; with ``full`` each direction has its own.
  The plan stops once no kernel is over.  When the SSD's time runs out first, a second pass
  takes the remaining intervals, longest first, each timed as if it had the SSD alone: the
  memory must fit (the paper's plan cannot run otherwise), and the simulation charges what
  the SSD cannot carry as stalls.
* ``to_ssd`` is issued at the interval's first kernel, ``to_gpu`` at the kernel where its read
  begins.  A global tensor whose interval wraps the iteration and whose read begins before the
  wrap starts the iteration on the SSD (``initial_tier``): a model larger than the GPU starts
  with its long-idle optimizer states and weights there.
* One GPU and one SSD (the paper stripes several SSDs and runs several GPUs); no host tier.
  No run-time adjustment: a migration that falls behind stalls the kernel that needs it.

Needs nothing but the trace (no roles): lifetimes come from the accesses.
"""
from __future__ import annotations

import numpy as np

from ..codes import HINT_TO_GPU, HINT_TO_SSD, TIER_GPU, TIER_NOT_PRESENT, TIER_SSD
from ..workload import vitality
from ..workload.trace import Trace
from .base import HOST_KEYS, TENSOR_LEVEL_KEYS, register
from .offload import PlannedOffloadPolicy, Timeline, fill, hint_table, live_bytes


def teraio_schedule(trace: Trace, config) -> dict:
    """TERAIO's plan: ``{"hints", "initial_tier", "info", "chosen"}``; see the module docstring.

    ``chosen`` lists ``(tensor, start, end, looped)`` per interval taken; ``initial_tier`` is None when
    every tensor starts where the simulator starts it anyway; ``planned_live_bytes`` is each kernel's
    resident bytes under the plan (transfers taking their ideal time).
    """
    K, T = trace.n_kernels, trace.n_tensors
    tl = Timeline(trace, config)
    vit = vitality.analyze(trace, tl.spec.frequency_GHz)
    live = live_bytes(trace, tl).astype(np.float64)
    cap = tl.capacity_bytes
    read_Bps = tl.ssd_Bps
    wg = config.ssd.write_bandwidth_GBps
    write_Bps = min(wg * 1e9, tl.ssd_Bps) if wg > 0 else tl.ssd_Bps
    read_free = tl.kernel_s.astype(np.float64).copy()     # seconds of SSD time left per kernel
    write_free = read_free if config.ssd.duplex == "shared" else read_free.copy()
    size = tl.size
    glob = np.asarray(trace.tensor_is_global, bool)
    order = np.lexsort((vit.interval_tensor, -vit.interval_time_us))
    initial = np.where(glob, TIER_GPU, TIER_NOT_PRESENT).astype(np.int8)
    rows, chosen = [], []
    moved = 0
    peak = float(live.max()) if K else 0.0
    over = np.concatenate(([0], np.cumsum(live > cap)))     # kernels over the GPU memory, cumulative
    taken = np.zeros(order.size, bool)
    full = tl.kernel_s.astype(np.float64)
    n_fitted = 0
    # pass 1: migrations the SSD's remaining time carries; pass 2 (memory still short): the rest,
    # each timed as if it had the SSD alone, which the simulation then charges as stalls
    placed = []                 # per migration: [tensor, seq, r_pos, prefetch row index, start, looped]
    for forced in (False, True):
        if forced:
            # a prefetch that the pass-1 bandwidth pushed early keeps its tensor resident where
            # memory is short: start it as late as the SSD alone allows
            for m in placed:
                t, seq, r_pos, row, s0, looped0 = m
                if not np.any(live[seq[r_pos:]] > cap):
                    continue
                rr = fill(full[seq][::-1], size[t] / read_Bps)
                late = seq.size - 1 - rr[0]
                if late <= r_pos:
                    continue
                live[seq[r_pos:late]] -= size[t]
                m[2] = late
                rows[row] = (int(seq[late]), t, HINT_TO_GPU)
                initial[t] = TIER_SSD if looped0 and seq[late] < s0 else initial[t]
            over = np.concatenate(([0], np.cumsum(live > cap)))
        for j, r in enumerate(order.tolist()):
            if over[-1] == 0:
                break
            if taken[j]:
                continue
            t = int(vit.interval_tensor[r])
            s, e = int(vit.interval_start[r]), int(vit.interval_end[r])
            looped = bool(vit.interval_looped[r])
            seq = np.concatenate((np.arange(s, K), np.arange(0, e))) if looped else np.arange(s, e)
            if seq.size < 2 or (over[e] - over[s] if not looped else over[K] - over[s] + over[e]) == 0:
                continue            # idle only where memory is not short
            wfree = full[seq] if forced else write_free[seq]
            w = fill(wfree, size[t] / write_Bps)
            if w is None:
                continue
            w_pos, w_take = w
            if forced:
                rfree = full[seq]
            else:
                saved_write = write_free[seq].copy()
                write_free[seq] -= w_take
                rfree = read_free[seq]
            rr = fill(rfree[::-1], size[t] / read_Bps)
            ok = rr is not None and seq.size - 1 - rr[0] > w_pos + 1
            if ok:
                r_pos = seq.size - 1 - rr[0]
                gone = seq[w_pos + 1:r_pos]          # kernels the tensor is off the GPU
                ok = bool(np.any(live[gone] > cap))
            if not ok:
                if not forced:
                    write_free[seq] = saved_write
                continue
            if not forced:
                read_free[seq] -= rr[1][::-1]
                n_fitted += 1
            taken[j] = True
            live[gone] -= size[t]
            over = np.concatenate(([0], np.cumsum(live > cap)))
            pre = int(seq[r_pos])
            rows.append((s, t, HINT_TO_SSD))
            rows.append((pre, t, HINT_TO_GPU))
            placed.append([t, seq, r_pos, len(rows) - 1, s, looped])
            if looped and pre < s:
                # the read begins before the wrap: the tensor is on the SSD when the iteration starts
                # (a write that runs across the iteration's end is charged when the simulator
                # restores the start placement after the last kernel)
                initial[t] = TIER_SSD
            chosen.append((t, s, e, looped))
            moved += int(size[t])
    starts_off = bool(np.any(glob & (initial != TIER_GPU)))
    info = {"n_intervals": int(vit.n_intervals), "n_offloads": len(chosen), "n_within_bandwidth": n_fitted,
            "offloaded_bytes": moved,
            "n_start_on_ssd": int((initial == TIER_SSD).sum()), "peak_bytes_resident": int(peak),
            "peak_bytes_planned": int(live.max()) if K else 0, "gpu_capacity_bytes": cap}
    return {"hints": hint_table(rows), "initial_tier": initial if starts_off else None, "info": info,
            "chosen": chosen, "planned_live_bytes": live}


@register
class TeraIO(PlannedOffloadPolicy):
    name = "teraio"
    reads = (TENSOR_LEVEL_KEYS - HOST_KEYS) | {"ssd.write_bandwidth_GBps", "ssd.duplex"}
    not_applicable = HOST_KEYS              # GPUDirect Storage: the SSD is the only tier
    description = ("TERAIO (2025): lifetime analysis; the longest-idle tensors (activations, weights, optimizer "
                   "states) offloaded to SSD over GPUDirect Storage where its bandwidth allows, prefetched ahead")

    def make_plan(self, trace: Trace) -> dict:
        return teraio_schedule(trace, self.config)


__all__ = ["TeraIO", "teraio_schedule"]
