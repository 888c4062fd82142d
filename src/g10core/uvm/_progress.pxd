# cython: language_level=3
# The progress guard of a waiting kernel (the replay's module docstring says the rule).
from libc.stdint cimport int64_t

from ._batcher cimport Batcher


cdef class ProgressGuard:
    cdef readonly int64_t factor            # the budget's multiple of the slots the wait needs
    cdef readonly int64_t quota_min         # the smallest per-slot quota, pages
    cdef readonly int64_t budget            # slots the current wait may pass without progress
    cdef int64_t qmin                       # fewest pages queued so far in the current wait
    cdef readonly int64_t slots_at_progress  # slot count (less waited ones) at its last new low
    cdef readonly int64_t slots0            # ... when the wait began
    cdef readonly int64_t requeued0         # re-queued pages when it began
    cdef readonly int64_t missing           # pages the kernel missed at its first attempt
    cdef readonly int64_t pages             # pages of the kernel's tensors
    cdef readonly double peak               # the largest share of its budget a wait used
    cdef int64_t slack                      # slots every budget adds

    cdef int begin(self, Batcher bt, int64_t slots, int64_t pages, int64_t missing) except -1 nogil
    cdef bint stalled(self, Batcher bt, int64_t slots) noexcept nogil
