"""Recomputation hints: a trace expanded with the kernels that regenerate dropped tensors.

A hint ``(kernel k, tensor t, recompute)`` (:data:`g10core.codes.HINT_RECOMPUTE`) regenerates
``t`` when kernel ``k`` begins by running again the kernel that last wrote ``t`` before ``k``
in the iteration (its *producer*), with the producer's ideal time, on the GPU, once its
inputs are resident (faulted or fetched in as any kernel's).  ``t`` must have been dropped by
an earlier ``free`` hint (a row before this one, at a kernel ``<= k``) and neither touched
by a kernel nor named by a transfer hint since (a ``free`` that drops only the GPU copy of a
tensor with a copy elsewhere, which a later ``to_gpu`` fetches, as the CPU tier's policies
do, is not a drop); otherwise the hint table is refused, naming the row.  A recompute of a tensor that a chain
(below) has regenerated since its free is a no-op.

Chains: when an input of the producer was dropped too (freed and not touched since), it is
regenerated first, by its own producer (the last kernel that wrote it before the producer),
recursively.  At one kernel each producer runs once, regenerating every dropped tensor it
wrote, and the producers run in their trace order (a producer always comes after the
producers of its inputs).

Both simulators implement recompute the same way, by :func:`expand`: before each kernel ``k``
with recompute hints, a copy of each producer is inserted (named ``recompute:<name>``; it
reads the producer's inputs and writes the regenerated tensors; its ideal and fault times
are the producer's), the hints are re-indexed to the expanded trace (a hint at ``k`` is
applied before ``k``'s copies) and the recompute rows are dropped.  The simulators run the
expanded trace; the per-kernel results are folded back (:meth:`Expansion.fold_rows`): the
copies' time is charged to ``k``, whose row keeps the trace's kernel count and ideal time, so
the recompute time shows as stall (time beyond the ideal).  With every tensor resident a
``free`` + ``recompute`` pair therefore adds exactly the producer's ideal time.

Liveness follows the expanded trace: the producer's inputs stay alive until the copy reads
them (the memory a recompute needs is held).
"""
from __future__ import annotations

import dataclasses
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from ..codes import HINT_DTYPE, HINT_FREE, HINT_RECOMPUTE, KERNEL_ROW_DTYPE, MOVED_ROW_DTYPE, as_columns
from ..errors import HintError
from .trace import ACCESS_READ, ACCESS_WRITE, Trace

COPY_PREFIX = "recompute:"


@dataclass(frozen=True, eq=False)
class Expansion:
    """A trace with recompute kernels inserted, and how to map results back.

    Attributes
    ----------
    trace : Trace
        The expanded trace (``K + n_copies`` kernels).
    hints : ndarray
        The hint table re-indexed to it, without the recompute rows.
    group : ndarray
        int64 per expanded kernel: the trace's kernel it is charged to (a copy: the kernel it
        was inserted before).
    source : ndarray
        int64 per expanded kernel: the trace's kernel whose times it runs (a copy: its producer).
    is_copy : ndarray
        bool per expanded kernel.
    n_tensors : int
        Tensors regenerated per iteration (hinted ones and those of chains).
    n_hinted : int
        Recompute rows of the hint table.
    """

    trace: Trace
    hints: np.ndarray
    group: np.ndarray
    source: np.ndarray
    is_copy: np.ndarray
    n_tensors: int
    n_hinted: int

    @property
    def n_kernels(self) -> int:
        """Recompute kernels per iteration."""
        return int(self.is_copy.sum())

    def fold_rows(self, kernel_of_row: np.ndarray, iteration_of_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """How to fold executed-kernel rows of the expanded trace into rows of the trace.

        Rows are in execution order.  Returns ``(starts, keep)``: ``starts`` the index of the
        first row of each folded row (a run of rows of one iteration charged to one kernel,
        copies first), for ``np.add.reduceat``; ``keep`` whether each folded run ends with its
        kernel's own row (a run cut short by a stopped replay does not).
        """
        k = np.asarray(kernel_of_row, np.int64)
        it = np.asarray(iteration_of_row, np.int64)
        n = k.size
        if n == 0:
            return np.zeros(0, np.int64), np.zeros(0, bool)
        g = self.group[k]
        new = np.ones(n, bool)
        # a run continues while the previous row is a copy of the same group and iteration
        new[1:] = ~(self.is_copy[k[:-1]] & (g[1:] == g[:-1]) & (it[1:] == it[:-1]))
        starts = np.flatnonzero(new)
        ends = np.append(starts[1:], n) - 1
        keep = ~self.is_copy[k[ends]]
        return starts, keep


def _kernel_lists(trace: Trace):
    """Per tensor: sorted kernels touching it, and sorted kernels writing it."""
    T = trace.n_tensors
    kof = trace.access_kernel.astype(np.int64)
    tens = trace.access_tensor.astype(np.int64)
    writes = (trace.access_mode & ACCESS_WRITE) != 0
    touch = [[] for _ in range(T)]
    wr = [[] for _ in range(T)]
    for k, t, w in zip(kof.tolist(), tens.tolist(), writes.tolist()):
        touch[t].append(k)
        if w:
            wr[t].append(k)
    return touch, wr


def has_recompute(hints) -> bool:
    """Whether a hint table has a recompute row."""
    return hints is not None and np.asarray(hints).size > 0 and bool(np.any(np.asarray(hints)["action"] == HINT_RECOMPUTE))


def expand(trace: Trace, hints: np.ndarray, path=None) -> Expansion:
    """The trace expanded with the recompute kernels ``hints`` ask for (see the module docstring).

    ``hints`` is a validated hint table (sorted by kernel).  Raises
    :class:`~g10core.errors.HintError` naming the row of a recompute that cannot happen: at
    kernel ``K`` (the next iteration's), of a tensor not dropped by an earlier ``free``, of a
    tensor no kernel before it writes, or one whose producer needs a dropped input that no
    kernel before the producer writes.
    """
    hints = np.asarray(hints)
    K = trace.n_kernels
    touch, wr = _kernel_lists(trace)
    off = trace.access_offsets
    acc_t = trace.access_tensor
    acc_m = trace.access_mode

    def inputs_of(p: int) -> list[int]:
        a, b = int(off[p]), int(off[p + 1])
        return [int(t) for t, m in zip(acc_t[a:b].tolist(), acc_m[a:b].tolist()) if m & ACCESS_READ]

    def touched_in(t: int, lo: int, hi: int) -> bool:
        """Whether a kernel in [lo, hi) touches t."""
        ks = touch[t]
        i = bisect_left(ks, lo)
        return i < len(ks) and ks[i] < hi

    def last_writer_before(t: int, k: int) -> int:
        ks = wr[t]
        i = bisect_left(ks, k)
        return ks[i - 1] if i else -1

    freed_at = {}          # tensor -> kernel of its latest free row so far
    regen_at = {}          # tensor -> kernel of its latest regeneration so far
    revived = set()        # tensors a transfer hint named after their latest free (a copy elsewhere)
    copies: dict[int, dict[int, set]] = {}     # kernel -> producer -> tensors it regenerates
    n_tensors = 0
    n_hinted = 0

    def dropped(t: int, k: int) -> bool:
        kf = freed_at.get(t)
        if kf is None or kf > k or t in revived or touched_in(t, kf, k):
            return False
        r = regen_at.get(t)
        return r is None or r < kf

    for row, (k, t, a) in enumerate(zip(hints["kernel"].tolist(), hints["tensor"].tolist(),
                                        hints["action"].tolist())):
        if a == HINT_FREE:
            if k < K:
                freed_at[t] = k
                revived.discard(t)
            continue
        if a != HINT_RECOMPUTE:
            if k < K and t in freed_at:
                revived.add(t)      # fetched or moved again: a copy of its data exists elsewhere
            continue
        n_hinted += 1
        if k >= K:
            raise HintError(path, f"recompute at kernel {k}: a recompute must name a kernel of the iteration "
                                  f"(0 to {K - 1})", row, "kernel")
        if t in freed_at and regen_at.get(t, -1) >= freed_at[t]:
            continue        # a chain regenerated it since its free (at this kernel or before)
        if not dropped(t, k):
            raise HintError(path, f"recompute of tensor {t} at kernel {k}: the tensor was not dropped by an "
                                  "earlier free hint (or a kernel touched it since)", row, "action")
        plan = copies.setdefault(k, {})

        def regenerate(u: int, before: int, via: str) -> None:
            nonlocal n_tensors
            p = last_writer_before(u, before)
            if p < 0:
                raise HintError(path, f"recompute of tensor {t} at kernel {k}: no kernel before kernel {before} "
                                      f"writes tensor {u}{via}", row, "tensor")
            plan.setdefault(p, set()).add(u)
            regen_at[u] = k
            n_tensors += 1
            for v in dict.fromkeys(inputs_of(p)):
                if v == u:
                    # an in-place producer reads the tensor it writes: the earlier version is dropped too
                    regenerate(v, p, f" (kernel {p} updates it in place)")
                elif dropped(v, k):
                    regenerate(v, p, f" (an input of kernel {p}, dropped too)")

        regenerate(t, k, "")
    if not copies:
        return Expansion(trace=trace, hints=hints, group=np.arange(K, dtype=np.int64),
                         source=np.arange(K, dtype=np.int64), is_copy=np.zeros(K, bool),
                         n_tensors=0, n_hinted=0)
    return _build(trace, hints, copies, n_tensors, n_hinted)


def _build(trace: Trace, hints: np.ndarray, copies: dict, n_tensors: int, n_hinted: int) -> Expansion:
    K = trace.n_kernels
    off = trace.access_offsets
    acc_t = trace.access_tensor
    acc_m = trace.access_mode
    group, source, is_copy, names = [], [], [], []
    new_t, new_m, new_off = [], [], [0]
    pos = np.zeros(K + 1, np.int64)          # expanded index where kernel k's group starts
    for k in range(K):
        pos[k] = len(group)
        for p in sorted(copies.get(k, {})):
            out = copies[k][p]
            a, b = int(off[p]), int(off[p + 1])
            ins = [int(t) for t, m in zip(acc_t[a:b].tolist(), acc_m[a:b].tolist()) if m & ACCESS_READ]
            ins = list(dict.fromkeys(ins))
            for t in ins:
                new_t.append(t)
                new_m.append(ACCESS_READ | (ACCESS_WRITE if t in out else 0))
            for t in sorted(out):
                if t not in ins:
                    new_t.append(t)
                    new_m.append(ACCESS_WRITE)
            new_off.append(len(new_t))
            group.append(k)
            source.append(p)
            is_copy.append(True)
            names.append(COPY_PREFIX + str(trace.kernel_name[p]))
        a, b = int(off[k]), int(off[k + 1])
        new_t.extend(acc_t[a:b].tolist())
        new_m.extend(acc_m[a:b].tolist())
        new_off.append(len(new_t))
        group.append(k)
        source.append(k)
        is_copy.append(False)
        names.append(str(trace.kernel_name[k]))
    pos[K] = len(group)
    src = np.array(source, np.int64)
    is_copy_a = np.array(is_copy, bool)
    ws = np.where(is_copy_a, 0, trace.kernel_workspace_bytes[src]).astype(trace.kernel_workspace_bytes.dtype)
    expanded = dataclasses.replace(
        trace,
        kernel_name=np.array(names),
        kernel_time_ideal_ns=trace.kernel_time_ideal_ns[src],
        kernel_time_fault_all_ns=trace.kernel_time_fault_all_ns[src],
        kernel_time_fault_outputs_ns=trace.kernel_time_fault_outputs_ns[src],
        kernel_workspace_bytes=ws,
        access_offsets=np.array(new_off, np.int64),
        access_tensor=np.array(new_t, trace.access_tensor.dtype),
        access_mode=np.array(new_m, trace.access_mode.dtype),
        hints=None,
    )
    keep = hints["action"] != HINT_RECOMPUTE
    h = np.array(hints[keep], HINT_DTYPE)
    h["kernel"] = pos[h["kernel"].astype(np.int64)]
    return Expansion(trace=expanded, hints=h, group=np.array(group, np.int64), source=src, is_copy=is_copy_a,
                     n_tensors=n_tensors, n_hinted=n_hinted)


__all__ = ["COPY_PREFIX", "Expansion", "expand", "has_recompute"]


def fold_recompute(raw: dict, expansion, t11, freq_hz) -> tuple[dict, dict]:
    """The replay's output on a recompute-expanded trace folded back onto the trace's kernels.

    Each run of executed rows charged to one kernel (its recompute copies, then itself) becomes
    one row: the copies' start, the kernel's end and occupancy, the sums of the page counts,
    moved pages and translation cycles; a run a stopped replay cut short is dropped.  Returns
    ``(raw, counters)``, the counters holding the recompute work per iteration.
    """
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    if rows.shape[0] == 0:
        return raw, {"tensors": expansion.n_tensors, "kernels": expansion.n_kernels, "hints": expansion.n_hinted,
                     "ideal_s": 0.0, "time_s": []}
    k, it = rows[:, 1], rows[:, 0]
    starts, keep = expansion.fold_rows(k, it)
    ends = np.append(starts[1:], rows.shape[0]) - 1
    # each copy's time: its end minus the previous row's end (as summarize counts a kernel's time)
    prev_end = np.concatenate(([0], rows[:-1, 3]))
    copy = expansion.is_copy[k]
    per_it = np.zeros(int(it.max()) + 1, np.int64)
    np.add.at(per_it, it[copy], (rows[:, 3] - prev_end)[copy])
    out = rows[ends].copy()
    out[:, 1] = expansion.group[k[ends]]
    out[:, 2] = rows[starts, 2]
    sums = np.add.reduceat(rows[:, 4:8], starts, axis=0)
    out[:, 4:8] = sums
    folded = dict(raw)
    folded["kernels"] = np.ascontiguousarray(out[keep])
    if "moved" in raw:
        moved = as_columns(raw["moved"], MOVED_ROW_DTYPE)
        folded["moved"] = np.ascontiguousarray(np.add.reduceat(moved, starts, axis=0)[keep])
    if "translation_cycles" in raw:
        tr = np.asarray(raw["translation_cycles"], np.int64)
        if tr.size == rows.shape[0]:
            folded["translation_cycles"] = np.ascontiguousarray(np.add.reduceat(tr, starts)[keep])
    hz = float(freq_hz)
    counters = {"tensors": expansion.n_tensors, "kernels": expansion.n_kernels, "hints": expansion.n_hinted,
                "ideal_s": int(np.asarray(t11, np.int64)[expansion.is_copy].sum()) / hz,   # t11: the expanded trace's
                "time_s": (per_it / hz).tolist()}
    return folded, counters
