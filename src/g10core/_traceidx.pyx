# cython: language_level=3
"""Compiled helpers over a trace's kernel->tensor CSR index.

The Python layer (``trace.py``) validates every array before calling in here;
these functions trust their inputs' shapes and dtypes.
"""
from libc.stdint cimport int32_t, int64_t

import numpy as np


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
