# cython: language_level=3
"""The timeline's recorder (``g10core.timeline`` writes what it keeps).

Built only when a run asks for a timeline (``timeline=True``: the replay's input
``c["timeline"]``); without one, the replay, the batcher and the kernel runner test one
pointer per slot, batch or hint and record nothing.  What it keeps grows with kernels and
fault batches, never with pages:

* per kernel execution and transfer channel (link direction and cause, ``TL_*``): the
  first cycle a transfer of that channel began while the execution was the current one,
  the cycle the last ended, and the pages moved (``tl_span``);
* per fault batch and hint operation of the detailed preset: its start, end, pages in and
  out, units, GPU frames in use after it (``tl_op``);
* per kernel execution: pages waiting in the transfer queues at its first attempt, once its
  hints were applied and its missing pages queued (slot model), and the SSD's garbage
  collection while it was current (``tl_exec``).

The replay calls :meth:`begin` when a new kernel execution starts (restarts of a waiting
kernel do not count) and once more at the end of the run.
"""
from libc.stdint cimport int64_t
from libc.string cimport memcpy

from ..core._types cimport tl_span, tl_op, tl_exec, TL_N
from ..ssd._ssd cimport SSDCore

import numpy as np


cdef class TimelineRecorder:

    def __init__(self, int64_t n_exec, SSDCore ssd=None):
        """``n_exec``: kernel executions of the run (iterations x kernels); ``ssd``: the SSD's
        compiled core whose garbage collection is recorded (None: none)."""
        cdef tl_span empty
        cdef tl_exec e
        empty.first = -1
        empty.end = -1
        empty.pages = 0
        e.queued_pages = 0
        e.gc_first = e.gc_end = -1
        e.gc_blocks = e.gc_copies = e.gc_busy_cycles = 0
        self.n_exec = max(n_exec, 1)
        self.spans.assign(self.n_exec * TL_N, empty)
        self.execs.assign(self.n_exec, e)
        self.current = 0
        self.ssd = ssd
        if ssd is not None:
            ssd.d.gc.gc_first = ssd.d.gc.gc_end = -1
            self.gc_blocks0 = ssd.d.st.gc_victims
            self.gc_copies0 = ssd.d.st.gc_copies
            self.gc_busy0 = ssd.d.st.gc_busy_cycles

    cdef void add(self, int ch, int64_t first, int64_t end, int64_t pages) noexcept nogil:
        """``pages`` of channel ``ch`` moved over [first, end) during the current execution."""
        cdef tl_span* s
        if pages <= 0:
            return
        s = &self.spans[self.current * TL_N + ch]
        if s.first < 0 or first < s.first:
            s.first = first
        if end > s.end:
            s.end = end
        s.pages += pages

    cdef void op(self, int64_t kind, int64_t start, int64_t end, int64_t pages_in, int64_t pages_out,
                 int64_t units, int64_t gpu_used) noexcept nogil:
        cdef tl_op o
        o.exec_index = self.current
        o.kind = kind
        o.start = start
        o.end = end
        o.pages_in = pages_in
        o.pages_out = pages_out
        o.units = units
        o.gpu_used = gpu_used
        self.ops.push_back(o)

    cdef void take_gc(self) noexcept nogil:
        """The SSD's GC since the last take goes to the current execution."""
        cdef tl_exec* e = &self.execs[self.current]
        if self.ssd is None:
            return
        e.gc_blocks += self.ssd.d.st.gc_victims - self.gc_blocks0
        e.gc_copies += self.ssd.d.st.gc_copies - self.gc_copies0
        e.gc_busy_cycles += self.ssd.d.st.gc_busy_cycles - self.gc_busy0
        self.gc_blocks0 = self.ssd.d.st.gc_victims
        self.gc_copies0 = self.ssd.d.st.gc_copies
        self.gc_busy0 = self.ssd.d.st.gc_busy_cycles
        if self.ssd.d.gc.gc_first >= 0:
            if e.gc_first < 0 or self.ssd.d.gc.gc_first < e.gc_first:
                e.gc_first = self.ssd.d.gc.gc_first
            if self.ssd.d.gc.gc_end > e.gc_end:
                e.gc_end = self.ssd.d.gc.gc_end
        self.ssd.d.gc.gc_first = self.ssd.d.gc.gc_end = -1

    cdef void begin(self, int64_t exec_index) noexcept nogil:
        """Kernel execution ``exec_index`` begins (its first attempt): later transfers count in it."""
        self.take_gc()
        if exec_index >= self.n_exec:
            exec_index = self.n_exec - 1
        self.current = exec_index

    cdef void set_queued(self, int64_t pages) noexcept nogil:
        """Pages waiting in the transfer queues at the current execution's first attempt."""
        self.execs[self.current].queued_pages = pages

    def finish(self):
        """The run is over: the GC since the last execution began goes to it."""
        self.take_gc()

    def arrays(self):
        """What was recorded, as numpy records: ``spans`` (n_exec, TL_N) of ``TL_SPAN_DTYPE``,
        ``ops`` of ``TL_OP_DTYPE``, ``execs`` of ``TL_EXEC_DTYPE``."""
        from ..codes import TL_SPAN_DTYPE, TL_OP_DTYPE, TL_EXEC_DTYPE

        spans = np.zeros(self.spans.size(), TL_SPAN_DTYPE)
        ops = np.zeros(self.ops.size(), TL_OP_DTYPE)
        execs = np.zeros(self.execs.size(), TL_EXEC_DTYPE)
        cdef int64_t[::1] flat
        if self.spans.size():
            flat = spans.view(np.int64)
            memcpy(&flat[0], self.spans.data(), self.spans.size() * sizeof(tl_span))
        if self.ops.size():
            flat = ops.view(np.int64)
            memcpy(&flat[0], self.ops.data(), self.ops.size() * sizeof(tl_op))
        if self.execs.size():
            flat = execs.view(np.int64)
            memcpy(&flat[0], self.execs.data(), self.execs.size() * sizeof(tl_exec))
        return {"spans": spans.reshape(-1, TL_N), "ops": ops, "execs": execs}


def layout():
    """Struct sizes and channel count as compiled (tests compare with codes.py)."""
    return {"tl_span": sizeof(tl_span), "tl_op": sizeof(tl_op), "tl_exec": sizeof(tl_exec), "TL_N": TL_N}
