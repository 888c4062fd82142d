# Translators: the cycles address translation adds to a kernel.  See _tlb.pyx.
from libc.stdint cimport int64_t


cdef class Translator:
    cdef int64_t kernel_cycles(self, int64_t k, int64_t now) except -1 nogil
    cdef void pages_evicted(self, int64_t page, int64_t n) noexcept nogil
    cdef bint bulk_safe(self) noexcept nogil


cdef class NoTranslation(Translator):
    pass
