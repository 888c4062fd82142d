"""Least recently used, at tensor granularity: evict the tensor whose last use is oldest.

Unlike the published simulator's "LRU" (first in, first out by arrival on the GPU), this
looks at when each tensor was last used by a kernel.
"""


def score(now_kernel, tensor, resident_pages, size_pages, last_use_kernel, next_use_kernel, arrival_seq):
    # the older the last use, the higher the score; uses in the previous iteration count as k - K
    return float(now_kernel - last_use_kernel)
