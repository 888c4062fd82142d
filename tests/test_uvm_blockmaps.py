"""The far-fault handler's 512-bit block maps (``_uvm.pyx``: bits_count, bits_set, bits_clear):
each against its definition, bit by bit, for every range of a block and random maps."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from g10core.uvm import _uvm

BITS = 512                      # a 2 MiB VA block of 4 KiB pages
FULL = (1 << 64) - 1

words = st.lists(st.integers(0, FULL), min_size=8, max_size=8)


def as_int(w):
    return sum(x << (64 * k) for k, x in enumerate(w))


def as_words(n):
    return [(n >> (64 * k)) & FULL for k in range(8)]


def reference(w, lo, hi):
    """(count, set, cleared) of the bits [lo, hi) of map w, from the definition."""
    n = as_int(w)
    rng = sum(1 << i for i in range(lo, hi))
    return bin(n & rng).count("1"), as_words(n | rng), as_words(n & ~rng)


@settings(max_examples=60, deadline=None)
@given(words, st.integers(0, BITS), st.integers(0, BITS))
def test_block_map_ranges_match_their_definition(w, lo, hi):
    count, set_, cleared = reference(w, lo, hi)
    assert _uvm.bits_count_py(w, lo, hi) == count
    assert _uvm.bits_set_clear_py(w, lo, hi) == (set_, cleared)


def test_every_range_of_a_random_map():
    w = [random.Random(44).getrandbits(64) for _ in range(8)]
    n = as_int(w)
    prefix = [0]
    for i in range(BITS):
        prefix.append(prefix[-1] + ((n >> i) & 1))
    for lo in range(BITS + 1):
        for hi in range(BITS + 1):
            assert _uvm.bits_count_py(w, lo, hi) == max(prefix[hi] - prefix[lo], 0), (lo, hi)
    # word edges, where the first and last words' masks meet
    for lo, hi in ((0, 64), (63, 65), (64, 128), (0, 512), (511, 512), (1, 511), (128, 129)):
        assert _uvm.bits_set_clear_py(w, lo, hi) == reference(w, lo, hi)[1:]
