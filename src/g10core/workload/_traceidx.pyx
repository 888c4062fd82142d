# cython: language_level=3
"""Compiled helpers over a trace's kernel->tensor CSR index.

The Python layer (``trace.py``) checks every array's dtype and shape before
calling in here; these functions trust them.  Each scan returns the index of the
first offending row (or -1), so the caller can name the row in its error.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t

from g10core.core._types cimport hint_rec

import numpy as np

cdef extern from *:
    """
    #ifdef G10_DEBUG
    #define G10_DEBUG_BUILD 1
    #else
    #define G10_DEBUG_BUILD 0
    #endif
    """
    const int G10_DEBUG_BUILD

# True when the extensions were built with G10_CYTHON_DEBUG=1 (bounds/overflow checks on)
DEBUG_BUILD = bool(G10_DEBUG_BUILD)


def first_bad_offset(const int64_t[::1] offsets, int64_t n_accesses):
    """Index of the first offset that breaks monotonicity or bounds, or -1."""
    cdef Py_ssize_t i, n = offsets.shape[0]
    cdef int64_t bad = -1
    with nogil:
        if n == 0 or offsets[0] != 0:
            bad = 0
        else:
            for i in range(1, n):
                if offsets[i] < offsets[i - 1] or offsets[i] > n_accesses:
                    bad = i
                    break
            if bad < 0 and offsets[n - 1] != n_accesses:
                bad = n - 1
    return bad


def first_out_of_range(const int32_t[::1] ids, int64_t n):
    """Index of the first id outside [0, n), or -1."""
    cdef Py_ssize_t i, m = ids.shape[0]
    cdef int64_t bad = -1
    with nogil:
        for i in range(m):
            if ids[i] < 0 or ids[i] >= n:
                bad = i
                break
    return bad


def first_bad_mode(const uint8_t[::1] modes):
    """Index of the first access mode that is not READ (1), WRITE (2) or both (3), or -1."""
    cdef Py_ssize_t i, m = modes.shape[0]
    cdef int64_t bad = -1
    with nogil:
        for i in range(m):
            if modes[i] == 0 or modes[i] > 3:
                bad = i
                break
    return bad


def first_repeated_access(const int64_t[::1] offsets, const int32_t[::1] ids, int64_t n_tensors):
    """Index of the first access row whose tensor already appeared in the same kernel, or -1.

    ``offsets`` must be a valid CSR (checked by :func:`first_bad_offset`) and every id
    in [0, n_tensors) (checked by :func:`first_out_of_range`).  O(A + T).
    """
    cdef Py_ssize_t k, a, n_kernels = offsets.shape[0] - 1
    cdef int64_t bad = -1
    # last_kernel[t] = the latest kernel seen touching t (-1: none yet)
    cdef int64_t[::1] last_kernel = np.full(n_tensors, -1, dtype=np.int64)
    with nogil:
        for k in range(n_kernels):
            for a in range(offsets[k], offsets[k + 1]):
                if last_kernel[ids[a]] == k:
                    bad = a
                    break
                last_kernel[ids[a]] = k
            if bad >= 0:
                break
    return bad


def hint_rec_layout():
    """Size and field offsets of the C struct ``hint_rec`` (tests compare them to ``HINT_DTYPE``)."""
    cdef hint_rec rec
    cdef size_t base = <size_t>&rec
    return {
        "itemsize": sizeof(hint_rec),
        "kernel": <size_t>&rec.kernel - base,
        "tensor": <size_t>&rec.tensor - base,
        "action": <size_t>&rec.action - base,
        "sizes": {"kernel": sizeof(rec.kernel), "tensor": sizeof(rec.tensor), "action": sizeof(rec.action)},
    }
