# The timeline's recorder: per kernel execution one span per transfer channel and the SSD's
# GC, per fault batch or hint (detailed) one record.  See _timeline.pyx.
from libc.stdint cimport int64_t
from libcpp.vector cimport vector

from g10core.core._types cimport tl_span, tl_op, tl_exec
from g10core.ssd._ssd cimport SSDCore

cimport cython


@cython.final
cdef class TimelineRecorder:
    cdef vector[tl_span] spans             # n_exec * TL_N, execution-major
    cdef vector[tl_op] ops                 # fault batches and hint operations, in order
    cdef vector[tl_exec] execs             # per kernel execution
    cdef int64_t n_exec
    cdef public int64_t current            # the kernel execution transfers are counted in
    cdef SSDCore ssd                       # None: no SSD model (no GC to record)
    cdef int64_t gc_blocks0, gc_copies0, gc_busy0   # the SSD's GC counters when `current` began

    cdef void add(self, int ch, int64_t first, int64_t end, int64_t pages) noexcept nogil
    cdef void op(self, int64_t kind, int64_t start, int64_t end, int64_t pages_in, int64_t pages_out,
                 int64_t units, int64_t gpu_used) noexcept nogil
    cdef void begin(self, int64_t exec_index) noexcept nogil
    cdef void set_queued(self, int64_t pages) noexcept nogil
    cdef void take_gc(self) noexcept nogil
