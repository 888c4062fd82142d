"""Capuchin: per tensor, swap or recompute, chosen from the measured access times.

Peng, Shi, Dai, Jin, Ma, Xiong, Yang and Qian, "Capuchin: Tensor-based GPU Memory Management for
Deep Learning", ASPLOS 2020.

What the paper does (sections 4 and 5): it tracks every tensor's accesses in a measured
iteration and, for each candidate tensor (one accessed again later, resident at the memory
peak), knows its *evicted access* (after which it may leave), its *back access* (when it is
needed again), its size and the kernel that produced it.  Swapping a tensor costs nothing when
its transfer hides in the idle gap: the *free time* FT = (back access - evicted access) - swap-out
time - swap-in time (section 5.3) is >= 0; the swap-in is then issued from an *in-trigger*, an
earlier access chosen so the tensor is back just in time.  Recomputation always costs the
producer's time and is ranked by *MSPS*, memory saved per second of recomputation (size /
recompute time, including the recomputation of sources that were themselves dropped).  The
hybrid policy (section 5.4): swap first, largest FT first, while swaps hide entirely; then, until
the memory target is met, take the recompute candidate of largest MSPS unless swapping the
candidate of least swap overhead costs less.

How it maps onto a trace (where we had to choose):

* Candidates are the saved activations (:func:`g10core.policies.offload.saved_activations`):
  evicted access = last forward use, back access = first backward read.  The times are the
  trace's ideal kernel times (t11) on the configured GPU: the "measured iteration".
* The memory target: every kernel's resident bytes, when nothing moves, at most the GPU memory;
  a candidate counts only while some kernel of its idle gap is still over.
* Swaps go to host memory (``to_host`` at the kernel after the evicted access; ``to_gpu`` at the
  in-trigger).  Without a host path the simulator sends them to SSD; FT then uses the SSD
  bandwidth.  Host memory is Capuchin's only swap tier: a swap that ``host.memory_GiB`` cannot
  hold fails the run, naming the tensor (``host_overflow = "fail"``).  The swaps share the link: FT ranks the candidates (computed alone, as the paper
  does), but a swap counts as hidden only when the link time its idle gap still has (each
  kernel's ideal time, per direction, less the swaps already placed) carries its swap-out from
  the evicted access forward and its swap-in back from the back access, without overlap; its
  in-trigger is the kernel where that swap-in starts.  In phase 2 a swap's overhead is the
  transfer time its gap lacks, in each direction.
* A recompute is ``free`` at the kernel after the evicted access and ``recompute`` at the back
  access (the tensor-level simulator re-runs the producer, its ideal time, faulting in or
  recomputing its inputs).  A candidate is recomputable when its producer does not read the
  tensor itself (an in-place update) and every input of the producer is still alive at the back
  access (a weight, or an activation a later kernel reads): Capuchin recomputes from tensors
  that are still there.  An input already chosen for recomputation adds its own cost (the paper
  updates the MSPS of the dependent candidates the same way).
* No feedback loop: the paper adjusts in-triggers at run time when a swap-in arrives late; here
  the plan is made once, against the ideal timeline.

Needs tensor roles (activations), a forward/backward boundary and the ``recompute`` hint
action; refuses other traces with one line.
"""
from __future__ import annotations

import numpy as np

from ..codes import HINT_FREE, HINT_RECOMPUTE, HINT_TO_GPU, HINT_TO_HOST
from ..workload.trace import ACCESS_READ, Trace
from . import tensorsim
from .base import TENSOR_LEVEL_KEYS, register
from .offload import (PlannedOffloadPolicy, Timeline, fill, hint_table, live_bytes, require_boundary, require_roles,
                      saved_activations)

SWAP, RECOMPUTE = "swap", "recompute"


def capuchin_candidates(trace: Trace, config) -> dict:
    """Every candidate's numbers: columns ``tensor``, ``evicted``, ``back``, ``producer``, ``size``,
    ``free_time_s`` (FT), ``swap_s`` (out + in), ``swap_in_s``, ``recompute_s`` (the producer's ideal
    time; ``inf`` when not recomputable), plus ``boundary`` and the ``timeline``."""
    boundary = require_boundary("capuchin", trace)
    saved = saved_activations(trace, boundary)
    tl = Timeline(trace, config)
    Bps = tl.host_Bps if tl.host_Bps > 0 else tl.ssd_Bps
    t = saved.tensor
    size = tl.size[t]
    idle = tl.start_s[saved.back_access] - tl.start_s[saved.last_forward + 1]
    swap_in = size / Bps
    swap = 2 * swap_in
    _, death = tensorsim.liveness(trace, tl.spec.frequency_GHz)
    glob = np.asarray(trace.tensor_is_global, bool)
    # the first backward access of any kind: a backward write before the back access would
    # touch the dropped tensor, which a recompute does not allow
    kern = trace.access_kernel.astype(np.int64)
    bwd = kern >= boundary
    first_bwd = np.full(trace.n_tensors, np.iinfo(np.int64).max)
    np.minimum.at(first_bwd, trace.access_tensor[bwd], kern[bwd])
    rc = np.full(t.size, np.inf)
    for i, (tt, p, b) in enumerate(zip(t.tolist(), saved.producer.tolist(), saved.back_access.tolist())):
        lo, hi = int(trace.access_offsets[p]), int(trace.access_offsets[p + 1])
        ins = trace.access_tensor[lo:hi][(trace.access_mode[lo:hi] & ACCESS_READ) != 0]
        if tt in ins.tolist() or first_bwd[tt] < b:
            continue                    # an in-place update: re-running it needs the tensor itself
        if np.all(glob[ins] | (death[ins] > b)):
            rc[i] = tl.kernel_s[p]
    return {"tensor": t, "evicted": saved.last_forward, "back": saved.back_access, "producer": saved.producer,
            "size": size, "free_time_s": idle - swap, "swap_s": swap, "swap_in_s": swap_in, "recompute_s": rc,
            "boundary": boundary, "timeline": tl}


def _drain(free: np.ndarray, need: float) -> None:
    """Take up to ``need`` seconds from ``free`` (a view), front first: what a transfer the gap cannot
    carry still uses of it (the rest stalls)."""
    before = np.cumsum(free) - free
    free -= np.clip(need - before, 0.0, free)


def capuchin_choose(cand: dict, live: np.ndarray, capacity_bytes: int, trace: Trace | None = None,
                    link: tuple[np.ndarray, np.ndarray] | None = None, triggers: dict | None = None) -> dict:
    """The hybrid policy on candidates (``capuchin_candidates``) and a resident-bytes profile.

    Returns ``{tensor id: "swap" | "recompute"}`` in the order chosen.  ``live`` is updated in place.
    ``trace`` (optional) lets a recompute's cost grow by the inputs already chosen for recomputation.
    ``link`` (optional): the seconds each kernel leaves on the swap path, out and in (updated in
    place); with it a swap hides only when the time left in its idle gap carries it (the swaps share
    the link), and a swap's overhead is the transfer time its gap does not have.  Without it each
    candidate is costed alone: hidden when FT >= 0, overhead -FT otherwise.  ``triggers`` (optional,
    filled in) receives each hidden swap's in-trigger: the kernel whose link time its swap-in starts in.
    """
    n = cand["tensor"].size
    t, ev, back = cand["tensor"], cand["evicted"], cand["back"]
    size, ft = cand["size"], cand["free_time_s"]
    half = cand["swap_s"] / 2 if "swap_s" in cand else None
    rc = cand["recompute_s"].astype(float).copy()
    choice: dict[int, str] = {}
    triggers = {} if triggers is None else triggers
    taken = np.zeros(n, bool)

    def helps(i):
        return bool(np.any(live[ev[i] + 1:back[i]] > capacity_bytes))

    def helping():
        """Which candidates' idle gaps hold a kernel still over the target (all at once)."""
        cs = np.concatenate(([0], np.cumsum(live > capacity_bytes)))
        return cs[back] - cs[ev + 1] > 0

    def take(i, how, lo=None, hi=None):
        """Choose i; it is off the GPU during kernels [lo, hi) (default: its whole idle gap)."""
        taken[i] = True
        choice[int(t[i])] = how
        live[ev[i] + 1 if lo is None else lo:back[i] if hi is None else hi] -= size[i]

    def hide(i) -> bool:
        """Swap i if the link time left in its gap carries it out and back in: True when taken."""
        out_free, in_free = link
        lo, hi = ev[i] + 1, back[i]
        w = fill(out_free[lo:hi], half[i])
        if w is None:
            return False
        r = fill(in_free[lo:hi][::-1], half[i])
        if r is None:
            return False
        off_from, trigger = lo + w[0] + 1, lo + (hi - lo - 1 - r[0])   # off the GPU in [off_from, trigger)
        if trigger <= off_from or not np.any(live[off_from:trigger] > capacity_bytes):
            return False
        out_free[lo:hi] -= w[1]
        in_free[lo:hi] -= r[1][::-1]
        triggers[int(t[i])] = trigger
        take(i, SWAP, off_from, trigger)
        return True

    def swap_overheads(idx):
        if link is None:
            return np.maximum(0.0, -ft[idx])
        co = np.concatenate(([0.0], np.cumsum(link[0])))
        ci = np.concatenate(([0.0], np.cumsum(link[1])))
        lo, hi = ev[idx] + 1, back[idx]
        return (np.maximum(0.0, half[idx] - (co[hi] - co[lo])) + np.maximum(0.0, half[idx] - (ci[hi] - ci[lo])))

    # phase 1: swaps that hide entirely, largest free time first
    for i in sorted(np.flatnonzero(ft >= 0).tolist(), key=lambda i: (-ft[i], int(t[i]))):
        if not np.any(live > capacity_bytes):
            return choice
        if helps(i):
            if link is None:
                take(i, SWAP)
            else:
                hide(i)
    # phase 2: the recompute candidate of largest MSPS, unless the cheapest swap costs less
    producer_inputs = None
    if trace is not None:
        producer_inputs = {}
        for i in range(n):
            p = int(cand["producer"][i])
            lo, hi = int(trace.access_offsets[p]), int(trace.access_offsets[p + 1])
            producer_inputs[i] = trace.access_tensor[lo:hi][(trace.access_mode[lo:hi] & ACCESS_READ) != 0].tolist()
    while np.any(live > capacity_bytes):
        open_ = np.flatnonzero(~taken & helping())
        if not open_.size:
            break
        ovh = swap_overheads(open_)
        rcs = [i for i in open_.tolist() if np.isfinite(rc[i]) and rc[i] > 0]
        best_rc = max(rcs, key=lambda i: (size[i] / rc[i], -int(t[i])), default=None)
        j = min(range(open_.size), key=lambda j: (ovh[j], int(t[open_[j]])))
        best_sw, sw_cost = int(open_[j]), float(ovh[j])
        if best_rc is not None and rc[best_rc] <= sw_cost:
            take(best_rc, RECOMPUTE)
            if producer_inputs is not None:
                # a candidate whose producer reads this tensor now recomputes it too
                dropped = int(t[best_rc])
                for k in np.flatnonzero(~taken).tolist():
                    if dropped in producer_inputs[k]:
                        rc[k] += rc[best_rc]
        elif link is None or not hide(best_sw):
            if link is None:
                take(best_sw, SWAP)
            else:
                # what the gap has left goes to it, the rest is stall; out during its first kernel,
                # back in from the kernel before its back access
                lo, hi = ev[best_sw] + 1, back[best_sw]
                _drain(link[0][lo:hi], half[best_sw])
                _drain(link[1][lo:hi][::-1], half[best_sw])
                trigger = max(lo + 1, hi - 1)
                triggers[int(t[best_sw])] = trigger
                take(best_sw, SWAP, lo + 1, trigger)
    return choice


def capuchin_schedule(trace: Trace, config) -> dict:
    """Capuchin's plan: ``{"hints", "initial_tier" (None), "info", "choice"}``; see the module docstring."""
    require_roles("capuchin", trace)
    cand = capuchin_candidates(trace, config)
    tl = cand["timeline"]
    live = live_bytes(trace, tl)
    peak = int(live.max()) if live.size else 0
    link = (tl.kernel_s.astype(float).copy(), tl.kernel_s.astype(float).copy())   # swap path: out and in
    triggers: dict[int, int] = {}
    choice = capuchin_choose(cand, live, tl.capacity_bytes, trace, link=link, triggers=triggers)
    index = {int(x): i for i, x in enumerate(cand["tensor"].tolist())}
    rows = []
    for tt, how in choice.items():
        i = index[tt]
        off, back = int(cand["evicted"][i]) + 1, int(cand["back"][i])
        if how == SWAP:
            rows.append((off, tt, HINT_TO_HOST))
            trigger = triggers.get(tt)
            if trigger is None:         # its gap could not carry it: as early as the swap-out allows
                trigger = tl.lead_kernel(back, float(cand["swap_in_s"][i]), lowest=off + 1)
            if trigger < back:
                rows.append((trigger, tt, HINT_TO_GPU))
        else:
            rows.append((off, tt, HINT_FREE))
            rows.append((back, tt, HINT_RECOMPUTE))
    n_sw = sum(1 for h in choice.values() if h == SWAP)
    info = {"boundary": cand["boundary"], "n_candidates": int(cand["tensor"].size), "n_swapped": n_sw,
            "n_recomputed": len(choice) - n_sw, "peak_bytes_resident": peak,
            "peak_bytes_planned": int(live.max()) if live.size else 0, "gpu_capacity_bytes": tl.capacity_bytes}
    return {"hints": hint_table(rows), "initial_tier": None, "info": info, "choice": choice}


@register
class Capuchin(PlannedOffloadPolicy):
    name = "capuchin"
    reads = TENSOR_LEVEL_KEYS
    description = ("Capuchin (ASPLOS 2020): per activation, swap to host when the transfer hides in its idle "
                   "time, else recompute (largest memory saved per second) or swap, whichever costs less")

    def make_plan(self, trace: Trace) -> dict:
        return capuchin_schedule(trace, self.config)


__all__ = ["Capuchin", "capuchin_candidates", "capuchin_choose", "capuchin_schedule"]
