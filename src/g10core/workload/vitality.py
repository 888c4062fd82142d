"""Tensor vitality analysis: liveness and inactive intervals of every tensor.

This is the first half of G10's compiler-side pass (MICRO 2023, section 4 of the
paper; ``reference/g10_artifact_model.md`` section 2), with the conventions of the
published simulator, so that its ``interval.config`` files are an oracle:

* **Liveness** of a non-global tensor: ``birth`` = first kernel that reads or
  writes it; ``death`` = 1 + the last kernel that *reads* it.  A tensor that no
  kernel reads (workspaces, write-only outputs) has ``death = -1``: alive only
  during its birth kernel.  Global tensors (weights) are alive the whole run; they
  are reported with ``birth = 0, death = K`` and ``is_global``.  A non-global
  tensor that no kernel touches at all (the artifact leaves its birth undefined)
  gets ``birth = death = -1``.
* **Inactive intervals** ("hiding intervals"): for a non-global tensor, every gap
  between two consecutive uses inside ``[birth, death)`` -- uses at ``a`` and
  ``b > a + 1`` give the interval ``[a+1, b]``: kernels ``a+1 .. b-1`` leave the
  tensor untouched and kernel ``b`` needs it again.  Uses after ``death - 1``
  (writes after the last read) do not count.  For a global tensor the scan wraps
  around the iteration: after its last use ``l`` it is idle until its first use
  ``f`` of the next iteration, giving ``[l+1, f]`` with ``is_looped`` (``end <
  start``).  If the last use is kernel ``K-1`` the wrap gap starts at 0 and the
  artifact stores it as the ordinary (not looped) interval ``[0, f]``; if the
  tensor is also used by kernel 0 there is no wrap gap.
* **Estimated time** of an interval = sum of the ideal kernel times (t11) of the
  kernels it spans, in µs, computed exactly as the artifact does: kernel cycles
  ``c_k`` (``int(ms * GHz*1e9 / 1000)``), the cumulative table ``T[k] = sum_{i<k}
  c_i / (GHz*1000)`` accumulated left to right, ``T[end] - T[start]``; a looped
  interval uses the table extended to 2K kernels.  Bit-identical to the artifact,
  so the greedy scheduler that compares these times breaks ties identically.

Intervals are returned as one flat table (numpy columns) in the artifact's order:
by tensor, then in the order its scan opens them (a global tensor's wrap interval
last).  That order is the scheduler's initial candidate order.

Everything here is a handful of vectorised numpy passes over the K+1 kernels and
the A accesses; no per-tensor Python loop.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import CannotFit  # noqa: F401 (defined in errors.py; importable from here)
from .trace import ACCESS_READ, Trace


@dataclass(frozen=True, eq=False)
class Vitality:
    """Liveness and inactive intervals of every tensor of one trace (numpy columns).

    Per tensor (T rows): ``birth``, ``death`` (int32, conventions in the module
    docstring), ``is_global`` (bool).  Per interval (I rows, grouped by tensor,
    ``interval_offsets`` is the CSR index, T+1 entries): ``interval_tensor``,
    ``interval_start``, ``interval_end`` (int32 kernel indices), ``interval_looped``
    (bool), ``interval_time_us`` (float64).  Per kernel: ``kernel_cycles`` (int64,
    K) and the artifact's cumulative time table ``kernel_time_table_us`` (float64,
    K+1) and its extension over two iterations ``kernel_time_table_ext_us`` (2K+1).
    """

    n_kernels: int
    birth: np.ndarray
    death: np.ndarray
    is_global: np.ndarray
    interval_tensor: np.ndarray
    interval_start: np.ndarray
    interval_end: np.ndarray
    interval_looped: np.ndarray
    interval_time_us: np.ndarray
    interval_offsets: np.ndarray
    kernel_cycles: np.ndarray
    kernel_time_table_us: np.ndarray
    kernel_time_table_ext_us: np.ndarray

    @property
    def n_tensors(self) -> int:
        return int(self.birth.shape[0])

    @property
    def n_intervals(self) -> int:
        return int(self.interval_tensor.shape[0])

    def tensor_intervals(self, t: int) -> slice:
        """Rows of the interval table that belong to tensor ``t``."""
        return slice(int(self.interval_offsets[t]), int(self.interval_offsets[t + 1]))

    def is_alive(self, t: int, k: int) -> bool:
        """The artifact's liveness test of tensor ``t`` during kernel ``k``."""
        if self.is_global[t]:
            return True
        b, d = int(self.birth[t]), int(self.death[t])
        return k == b if d == -1 else b <= k < d


def ns_to_cycles(ns: np.ndarray, frequency_GHz: float = 1.2) -> np.ndarray:
    """Profiled times to cycles, the artifact's way: ``(long)(ms * GHz*1e9 / 1000)``."""
    return np.trunc((ns / 1e6) * (frequency_GHz * 1e9) / 1000.0).astype(np.int64)


def kernel_cycles(trace: Trace, frequency_GHz: float = 1.2) -> np.ndarray:
    """Ideal kernel times in cycles (see :func:`ns_to_cycles`)."""
    return ns_to_cycles(trace.kernel_time_ideal_ns, frequency_GHz)


def kernel_time_tables(cycles: np.ndarray, frequency_GHz: float = 1.2) -> tuple[np.ndarray, np.ndarray]:
    """(T, T_ext): cumulative µs before each kernel, over one (K+1) and two (2K+1) iterations.

    Accumulated left to right in float64 like the artifact (``np.cumsum`` is
    sequential), so every difference of two entries is bit-identical to its.
    """
    K = int(cycles.shape[0])
    per_kernel_us = cycles.astype(np.float64) / float(frequency_GHz * 1000)
    table = np.zeros(K + 1, np.float64)
    np.cumsum(per_kernel_us, out=table[1:])
    ext = np.empty(2 * K + 1, np.float64)
    ext[:K + 1] = table
    # the second iteration continues the running sum from T[K] (not T[K] + T[j])
    ext[K:] = np.cumsum(np.concatenate(([table[K]], per_kernel_us)))
    return table, ext


def kernel_working_set_bytes(trace: Trace) -> np.ndarray:
    """Page-rounded bytes of the distinct tensors each kernel reads or writes (int64, K)."""
    page_bytes = trace.tensor_pages * 4096
    per_access = page_bytes[trace.access_tensor]
    csum = np.concatenate(([0], np.cumsum(per_access)))
    return csum[trace.access_offsets[1:]] - csum[trace.access_offsets[:-1]]


def check_fits(trace: Trace, gpu_memory_bytes: int) -> None:
    """Raise :class:`CannotFit` if some kernel's working set exceeds GPU memory."""
    ws = kernel_working_set_bytes(trace)
    if ws.size and int(ws.max()) > gpu_memory_bytes:
        k = int(np.argmax(ws))
        raise CannotFit(k, int(ws[k]), int(gpu_memory_bytes), trace.model)


def analyze(trace: Trace, frequency_GHz: float = 1.2) -> Vitality:
    """Liveness and inactive intervals of every tensor of ``trace`` (see module docstring)."""
    K, T = trace.n_kernels, trace.n_tensors
    is_global = np.asarray(trace.tensor_is_global, bool)
    cycles = kernel_cycles(trace, frequency_GHz)
    table, ext = kernel_time_tables(cycles, frequency_GHz)

    # Uses grouped by tensor, each group in kernel order (CSR rows are in kernel
    # order and a stable sort keeps it; a kernel lists a tensor at most once).
    acc_kernel = trace.access_kernel.astype(np.int64)
    order = np.argsort(trace.access_tensor, kind="stable")
    use_tensor = trace.access_tensor[order].astype(np.int64)
    use_kernel = acc_kernel[order]
    use_read = (trace.access_mode[order] & ACCESS_READ) != 0
    n_uses = np.bincount(use_tensor, minlength=T)
    use_off = np.zeros(T + 1, np.int64)
    np.cumsum(n_uses, out=use_off[1:])
    used = n_uses > 0

    first_use = np.full(T, -1, np.int64)
    last_use = np.full(T, -1, np.int64)
    first_use[used] = use_kernel[use_off[:-1][used]]
    last_use[used] = use_kernel[use_off[1:][used] - 1]
    last_read = np.full(T, -1, np.int64)
    np.maximum.at(last_read, use_tensor[use_read], use_kernel[use_read])

    birth = np.where(is_global, 0, first_use)
    death = np.where(is_global, K, np.where(last_read >= 0, last_read + 1, -1))

    # Gaps between consecutive uses of the same tensor: [u_i + 1, u_{i+1}].
    nxt_kernel = np.empty_like(use_kernel)
    nxt_kernel[:-1] = use_kernel[1:]
    same_tensor = np.zeros(use_kernel.shape, bool)
    same_tensor[:-1] = use_tensor[1:] == use_tensor[:-1]
    gap = same_tensor & (nxt_kernel > use_kernel + 1)
    # a non-global tensor's scan stops at its death: the closing use must be < death
    t_of = use_tensor
    gap &= is_global[t_of] | (nxt_kernel < death[t_of])
    gap_t = t_of[gap]
    gap_s = use_kernel[gap] + 1
    gap_e = nxt_kernel[gap]

    # A global tensor's gap across the iteration boundary.
    g = is_global & used
    wrap_looped = g & (last_use < K - 1)
    wrap_plain = g & (last_use == K - 1) & (first_use > 0)
    wrap = wrap_looped | wrap_plain
    wrap_t = np.flatnonzero(wrap)
    wrap_s = np.where(wrap_looped[wrap_t], last_use[wrap_t] + 1, 0)
    wrap_e = first_use[wrap_t]

    # Merge in the artifact's order: by tensor, gaps in kernel order, then the wrap.
    it = np.concatenate((gap_t, wrap_t))
    istart = np.concatenate((gap_s, wrap_s))
    iend = np.concatenate((gap_e, wrap_e))
    rank = np.concatenate((np.zeros(gap_t.size, np.int8), np.ones(wrap_t.size, np.int8)))
    o = np.lexsort((istart * (rank == 0), rank, it))
    it, istart, iend = it[o], istart[o], iend[o]
    looped = iend < istart

    time_us = np.empty(it.shape, np.float64)
    nl = ~looped
    time_us[nl] = table[iend[nl]] - table[istart[nl]]
    time_us[looped] = ext[iend[looped] + K] - ext[istart[looped]]

    ioff = np.zeros(T + 1, np.int64)
    np.cumsum(np.bincount(it, minlength=T), out=ioff[1:])

    return Vitality(
        n_kernels=K,
        birth=birth.astype(np.int32),
        death=death.astype(np.int32),
        is_global=is_global.copy(),
        interval_tensor=it.astype(np.int32),
        interval_start=istart.astype(np.int32),
        interval_end=iend.astype(np.int32),
        interval_looped=looped,
        interval_time_us=time_us,
        interval_offsets=ioff,
        kernel_cycles=cycles,
        kernel_time_table_us=table,
        kernel_time_table_ext_us=ext,
    )
