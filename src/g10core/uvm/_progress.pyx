# cython: language_level=3
"""The progress guard of a waiting kernel.

While a kernel waits, only its own evicted pages re-enter the transfer queues, so a slot that
moves pages for good shrinks them.  The guard counts the slots since the queued pages last
reached a new low; past ``factor`` x the slots the kernel's pages and the work queued at its
first attempt take at the smallest quota (+ ``slack``), the wait has stalled.  The replay
(``_replay.pyx``) asks after each slot and stops the run with ``NoProgress``.
"""
from libc.stdint cimport int64_t

from ._batcher cimport Batcher

cdef int64_t BIG = 1 << 62


cdef class ProgressGuard:
    def __init__(self, int64_t factor, int64_t quota_min, int64_t slack):
        if factor < 1:
            raise ValueError(f"progress_factor = {factor}: must be >= 1")
        self.factor = factor
        self.quota_min = max(1, quota_min)
        self.slack = slack
        self.budget = BIG
        self.qmin = BIG
        self.slots_at_progress = self.slots0 = self.requeued0 = self.missing = self.pages = 0
        self.peak = 0.0

    cdef int begin(self, Batcher bt, int64_t slots, int64_t pages, int64_t missing) except -1 nogil:
        """The running kernel begins to wait for ``missing`` of its ``pages`` at slot count
        ``slots``: arm the guard."""
        cdef int64_t q = bt.queued()
        bt.rq_wait += 1
        self.qmin = q
        self.slots_at_progress = self.slots0 = slots
        self.requeued0 = bt.requeued_pages
        self.missing = missing
        self.pages = pages
        self.budget = self.factor * ((q + pages) // self.quota_min + 1) + self.slack
        return 0

    cdef bint stalled(self, Batcher bt, int64_t slots) noexcept nogil:
        """After a slot (``slots`` so far): a new low of the queued pages is progress; True when
        the waiting kernel has gone past its budget without one."""
        cdef int64_t q
        cdef double used
        if not bt.waiting or bt.started:
            return False
        q = bt.queued()
        if q < self.qmin:
            self.qmin = q
            self.slots_at_progress = slots
            return False
        used = <double>(slots - self.slots_at_progress) / <double>self.budget
        if used > self.peak:
            self.peak = used
        return slots - self.slots_at_progress > self.budget
