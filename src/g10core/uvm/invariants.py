"""What a finished page-level replay must satisfy, and a stopped one's reason in the user's terms.

The replay (``_replay.Replay``) returns its counters; the simulator checks them here before it
reports a result: kernels in order and no faster than ideal, residency within the GPU's frames
and the host line, pages conserved over the run, every page moved to the GPU counted once under
one cause (docs/accounting.md).  A run that stops making progress (``_replay.NoProgress``) fails
with :func:`no_progress_reason`'s one line.
"""
from __future__ import annotations

import numpy as np

from ..codes import HINT_FREE, KERNEL_ROW_DTYPE, MOVED_ROW_DTYPE, TRAFFIC_ROW_DTYPE, as_columns


def replay_invariant_violations(raw: dict, consts: dict, t11, *, fresh_pages: int | None,
                                exact_host: bool, host_populated: int = 0, readdup_clean: int = 0) -> list[str]:
    """What a finished page-level replay must satisfy; returns one message per broken rule.

    * every kernel of every iteration ran, in order, back to back, and no faster than
      its ideal time (a kernel starts only once all its faults are served);
    * GPU-resident pages never exceed the GPU's frames; host-resident pages never
      exceed the host line (unless ``host_overflow`` was flagged, which fails the run);
    * every tick that moved pages gave a GPU frame to each page it fetched;
    * conservation over the run, from the PCIe counters and the final residency.
      Host: pages evicted to host = pages fetched from host + pages still on host +
      pages freed there by hints (0 when no free hint is applied: ``exact_host``,
      otherwise >= 0); memory advice adds to the host pages those placed there
      (``host_populated``) and read-mostly pages evicted without a write-back
      (``readdup_clean``; neither model counts a transfer for them, so the GPU's
      balance subtracts them too).  GPU, when ``fresh_pages`` (pages allocated from nothing) is
      known: fresh + fetched = evicted + still resident.  It is known for a policy that
      never drops or frees a page (LRU, no hints): every page of every non-global
      tensor a kernel touches, once.  (The artifact's ``alloc`` counter cannot close
      the balance in general: it counts only ticks that also moved pages over PCIe.)
    """
    out = []
    K, n_iter = int(consts["kernels"]), int(consts["iterations"])
    gpu_pages, host_line = int(consts["gpu_pages"]), int(consts["host_pages"])
    overflow = bool(raw["host_overflow"])
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    n = rows.shape[0]
    if n != K * n_iter:
        out.append(f"{n} kernel executions recorded, expected {K} kernels x {n_iter} iterations "
                   "(some kernel never got its pages)")
    else:
        it_ok = rows[:, 0] == np.repeat(np.arange(n_iter), K)
        k_ok = rows[:, 1] == np.tile(np.arange(K), n_iter)
        bad = np.flatnonzero(~(it_ok & k_ok))
        if bad.size:
            r = int(bad[0])
            out.append(f"execution {r} is iteration {rows[r, 0]} kernel {rows[r, 1]}, expected "
                       f"iteration {r // K} kernel {r % K}")
    if n:
        start, end, k = rows[:, 2], rows[:, 3], rows[:, 1]
        bad = np.flatnonzero(end - start < np.asarray(t11, np.int64)[np.clip(k, 0, K - 1)])
        if bad.size:
            r = int(bad[0])
            out.append(f"execution {r} (kernel {k[r]}) took {end[r] - start[r]} cycles, less than its ideal time")
        gap = np.flatnonzero(start[1:] != end[:-1])
        if start[0] != 0 or gap.size:
            r = 0 if start[0] != 0 else int(gap[0]) + 1
            out.append(f"execution {r} starts at cycle {start[r]}, not where the previous kernel ended")
        gpu, host = rows[:, 9], rows[:, 8]
        bad = np.flatnonzero((gpu < 0) | (gpu > gpu_pages))
        if bad.size:
            r = int(bad[0])
            out.append(f"{gpu[r]} GPU-resident pages at execution {r}, capacity {gpu_pages}")
        bad = np.flatnonzero((host < 0) | ((host > host_line) & (not overflow)))
        if bad.size:
            r = int(bad[0])
            out.append(f"{host[r]} host-resident pages at execution {r}, host line {host_line}")
    final = raw["final"]
    gpu_end = gpu_pages - int(final["gpu_free"])
    host_end = int(final["host_used"])
    if not 0 <= gpu_end <= gpu_pages:
        out.append(f"{gpu_end} GPU-resident pages at the end, capacity {gpu_pages}")
    if host_end < 0 or (host_end > host_line and not overflow):
        out.append(f"{host_end} host-resident pages at the end, host line {host_line}")
    pc = as_columns(raw["pcie"], TRAFFIC_ROW_DTYPE)
    alloc, in_ssd, in_host, out_ssd, out_host = (int(x) for x in pc.sum(axis=0))
    out.extend(accounting_violations(raw, n_iter))
    over = np.flatnonzero(pc[:, 1] + pc[:, 2] > pc[:, 0])
    if over.size:
        i = int(over[0])
        out.append(f"iteration {i}: {pc[i, 1] + pc[i, 2]} pages fetched but only {pc[i, 0]} given a GPU frame")
    allocated = int(final.get("allocated_pages", -1))
    if allocated >= 0:
        # exact for every policy: the replay counts allocations, dropped and freed pages
        dropped, freed_gpu = int(final["dropped_pages"]), int(final["freed_gpu_pages"])
        balance = (allocated + in_ssd + in_host - out_ssd - out_host - readdup_clean - dropped - freed_gpu
                   - gpu_end)
        if balance != 0:
            out.append(f"GPU pages not conserved: {allocated} allocated + {in_ssd + in_host} fetched - "
                       f"{out_ssd + out_host} evicted - "
                       + (f"{readdup_clean} evicted without a write-back - " if readdup_clean else "")
                       + f"{dropped} dropped - {freed_gpu} freed - "
                       f"{gpu_end} resident = {balance} (must be 0)")
        if fresh_pages is not None and allocated != fresh_pages:
            out.append(f"GPU pages not conserved: {allocated} pages allocated, but the trace has {fresh_pages} "
                       "pages to allocate once each")
        freed_host = int(final["freed_host_pages"])
        # host_populated: pages first placed in host memory (prefer_host advice, read remotely)
        balance = out_host + readdup_clean + host_populated - in_host - freed_host - host_end
        if balance != 0:
            out.append(f"host pages not conserved: {out_host} evicted to host + "
                       + (f"{readdup_clean} evicted there without a write-back + " if readdup_clean else "")
                       + f"{host_populated} placed there - "
                       f"{in_host} fetched from host - "
                       f"{freed_host} freed - {host_end} resident = {balance} (must be 0)")
        return out
    if fresh_pages is not None:
        balance = fresh_pages + in_ssd + in_host - out_ssd - out_host - gpu_end
        if balance != 0:
            out.append(f"GPU pages not conserved: {fresh_pages} allocated + {in_ssd + in_host} fetched - "
                       f"{out_ssd + out_host} evicted - {gpu_end} resident = {balance} (must be 0)")
    freed = out_host - in_host - host_end
    if freed < 0 or (exact_host and freed != 0):
        out.append(f"host pages not conserved: {out_host} evicted to host - {in_host} fetched from host - "
                   f"{host_end} resident = {freed} (must be {'0' if exact_host else '>= 0'})")
    return out


def run_violations(raw: dict, consts: dict, t11, trace, rule, applied, runner) -> list[str]:
    """:func:`replay_invariant_violations` of a finished run, with what its inputs tell: the pages
    the run must bring in fresh (the arrival-order rule with no hints applied: every page of a
    non-global tensor a kernel touches; other rules drop dead pages), whether host pages are
    conserved exactly (no free hint applied), and the pages placed in host memory or dropped as
    clean read duplicates (by the far-fault handler ``runner``, or by the slot model's advice)."""
    frees = bool(np.any(applied["action"] == HINT_FREE))
    fresh = None
    if rule.arrival_order and applied.size == 0:      # (other rules drop dead pages)
        touched = np.zeros(trace.n_tensors, bool)
        touched[trace.access_tensor] = True
        fresh = int(trace.tensor_pages[touched & ~trace.tensor_is_global].sum())
    populated = clean = 0
    if runner is not None:        # the far-fault handler: pages placed in host, read duplicates dropped
        rs = runner.fault_handler.remote_stats()
        populated, clean = rs["remote_populated"], rs["readdup_clean_pages"]
    if "advice" in raw:           # the slot model's advice: pages placed in host, evictions dropped
        populated, clean = raw["advice"]["remote_populated"], raw["advice"]["readdup_clean_pages"]
    return replay_invariant_violations(raw, consts, t11, fresh_pages=fresh, exact_host=not frees,
                                       host_populated=populated, readdup_clean=clean)


def pages_in_by_cause(raw: dict, n_iter: int) -> dict:
    """Per iteration, the pages moved to the GPU by cause and source, from the replay's kernel rows
    (demand faults) and moved rows (prefetched, hinted, refetched): ``{cause: (n_iter, 3) array}``
    with columns host, ssd, unallocated (causes: faults, prefetched, hinted, refetched)."""
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    moved = as_columns(raw["moved"], MOVED_ROW_DTYPE)
    it = rows[:, 0]
    out = {}
    for cause, cols in (("faults", rows[:, 5:8]), ("prefetched", moved[:, 0:3]), ("hinted", moved[:, 3:6]),
                        ("refetched", moved[:, 6:9])):
        a = np.zeros((n_iter, 3), np.int64)
        ok = (it >= 0) & (it < n_iter)
        np.add.at(a, it[ok], cols[ok])
        out[cause] = a
    return out


def accounting_violations(raw: dict, n_iter: int) -> list[str]:
    """Every page moved to the GPU is counted once, under one cause (docs/accounting.md): per
    iteration, pages from host memory (from the SSD) = the causes' host (SSD) pages; over the run,
    pages given a frame without a transfer = the causes' unallocated pages; and, where the traffic
    counts every frame given (the far-fault handler; the slot model's ``alloc`` counts only slots
    that also moved pages over PCIe), per iteration all pages moved in = the causes' sum."""
    if "moved" not in raw or len(raw["moved"]) != len(raw["kernels"]):
        return []
    out = []
    by = pages_in_by_cause(raw, n_iter)
    total = sum(by.values())
    pc = as_columns(raw["pcie"], TRAFFIC_ROW_DTYPE)
    for i in range(min(n_iter, pc.shape[0])):
        for name, col, src in (("host", 2, 0), ("SSD", 1, 1)):
            if int(pc[i, col]) != int(total[i, src]):
                parts = ", ".join(f"{c} {int(a[i, src])}" for c, a in by.items())
                out.append(f"iteration {i}: {int(pc[i, col])} pages moved from {name} to the GPU, but the causes "
                           f"add up to {int(total[i, src])} ({parts})")
        if "runner" in raw and int(pc[i, 0]) != int(total[i].sum()):
            out.append(f"iteration {i}: {int(pc[i, 0])} pages given a GPU frame, but the causes add up to "
                       f"{int(total[i].sum())}")
    allocated = int(raw["final"].get("allocated_pages", -1))
    if allocated >= 0 and int(total[:, 2].sum()) != allocated:
        out.append(f"{allocated} pages allocated on the GPU, but the causes' unallocated pages add up to "
                   f"{int(total[:, 2].sum())}")
    return out


def _count(n: int) -> str:
    """A page count as people read it: 3.2 M, 196,608."""
    return f"{n / 1e6:.1f} M" if n >= 10_000_000 else f"{n:,}"


def no_progress_reason(info: dict, trace, rule, consts: dict, given_hints: bool = False) -> str:
    """The one line a run that stopped making progress fails with (``_replay.NoProgress.info``),
    in the user's terms: which rule, which kernel, what it kept evicting."""
    k, it = int(info["kernel"]), int(info["iteration"])
    kname = str(trace.kernel_name[k]) if 0 <= k < trace.n_kernels else "?"
    kernel = f"kernel {k} ({kname}) of iteration {it}"
    slots = int(info.get("slots_without_progress", 0))
    requeued = int(info.get("requeued_pages", 0))
    needs = (f"it needs {_count(int(info.get('kernel_pages', 0)))} pages, "
             f"{_count(int(consts['gpu_pages']))} fit on the GPU")

    def tensor(t):
        name = str(trace.tensor_name[t]) if t < trace.n_tensors else "workspace"
        return f"{t}" if name == f"tensor{t}" else f"{t} ({name})"
    by_tensor = sorted(((int(n), int(t)) for t, n in info.get("requeued_by_tensor", {}).items() if int(n) > 0),
                       reverse=True)
    named = ", ".join(tensor(t) for _n, t in by_tensor[:3]) + (
        f" and {len(by_tensor) - 3} more" if len(by_tensor) > 3 else "")
    evicted = (f"eviction rule {rule.label} evicted and re-fetched {_count(requeued)} pages of the kernel's own "
               f"tensor{'s' if len(by_tensor) > 1 else ''} {named}")
    if info.get("guard") == "wait":
        if requeued:
            what = f"{evicted} without the kernel starting"
        else:
            what = (f"under eviction rule {rule.label} the {_count(int(info.get('still_missing_pages', 0)))} "
                    f"pages it waits for did not come in")
        text = (f"{kernel} never started: {what}; the run stopped after {slots:,} transfer slots in which the "
                f"pages queued for the GPU reached no new low ({needs})")
    elif info.get("guard") == "sm_steps":
        steps = int(info.get("max_idle_steps", 0))
        text = (f"{kernel}: no SM advanced in {steps:,} SM steps and fault batches in a row under eviction rule "
                f"{rule.label} (livelock: the fault handler keeps evicting pages the SMs wait for); the run stopped")
    else:
        text = f"no kernel ended for {slots:,} transfer slots under eviction rule {rule.label}"
        if info.get("waiting"):
            text += (f": {kernel} waited for {_count(int(info.get('still_missing_pages', 0)))} of its pages"
                     + (f" while {evicted}" if requeued else "") + f" ({needs})")
        text += "; the run stopped"
    if given_hints:
        text += " (with the given hints: hints that keep evicting or freeing what a waiting kernel needs never let it start)"
    return text
