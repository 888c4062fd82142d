"""Belady's rule as a user score: evict the tensor used farthest in the future.

``g10sim run bert_base-b256 --policy base-uvm --eviction farthest_next_use.py:score``
gives exactly the built-in ``--policy belady`` result.
"""


def score(now_kernel, tensor, resident_pages, size_pages, last_use_kernel, next_use_kernel, arrival_seq):
    # next_use_kernel is K + k for a use in the next iteration and 2**62 when there is none
    return next_use_kernel
