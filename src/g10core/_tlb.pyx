# cython: language_level=3
"""Translators: what address translation adds to a kernel's time.

* ``Translator`` / ``NoTranslation``: translation costs nothing (the g10-artifact
  preset: the published simulator has no TLB).
"""
from libc.stdint cimport int64_t


cdef class Translator:
    """Base: no translation cost; subclasses model TLBs and page walks."""

    cdef int64_t kernel_cycles(self, int64_t k, int64_t now) except -1 nogil:
        """Cycles translation adds to kernel k (beyond what latency hiding absorbs)."""
        return 0

    cdef void pages_evicted(self, int64_t page, int64_t n) noexcept nogil:
        """Pages [page, page+n) left the GPU: invalidate their translations."""
        pass

    cdef bint bulk_safe(self) noexcept nogil:
        return True

    def stats(self):
        return {}


cdef class NoTranslation(Translator):
    """No translation cost (the published simulator models no TLB)."""
    pass
