# cython: language_level=3
# distutils: extra_compile_args = -ffp-contract=off
"""Compiled array kernels of the G10 smart-migration scheduler (``policies/g10.py`` calls them).

The same functions, argument for argument and bit for bit, as the plain-Python
reference ``testing/g10_schedule.py``, whose docstring explains why every decision
is the published scheduler's (integer truncations, the order of float operations,
the exact ``std::sort`` emulation, the cached and bounded greedy keys).
``tests/test_g10_kernels.py`` checks the two against each other.

Here arrays arrive as typed memoryviews; the wrappers check shapes (so that a wrong
call is an exception, not a stray write), allocate the scratch arrays once, and run
the work on raw pointers without the GIL.  Contents are trusted: ``g10.py`` validates
the trace and configuration first.

``-ffp-contract=off`` (above): the keys are float sums that must equal the
artifact's bit for bit; a fused multiply-add, which GCC may emit on CPUs that have
one (``-march=native``), rounds differently.
"""
from libc.math cimport fabs
from libc.string cimport memset
from libc.stdint cimport int64_t

from ..core._types cimport HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE
from libcpp cimport bool as cbool

cdef extern from "<algorithm>" nogil:
    # std::sort of plain integers cannot throw (libcpp.algorithm's declaration would
    # wrap it in a try/catch)
    void sort_int64 "std::sort"(int64_t* first, int64_t* last) noexcept

import numpy as np

IMPLEMENTATION = "compiled"

# budget directions (rows of cap / est / full)
cdef enum:
    DIR_S2G = 0        # SSD -> GPU (prefetch from SSD)
    DIR_G2S = 1        # GPU -> SSD (pre-evict to SSD)
    DIR_H2G = 2        # host -> GPU over PCIe
    DIR_G2H = 3        # GPU -> host over PCIe

# comparator modes of the sort emulation
cdef enum:
    MODE_AREA = 0      # the greedy comparator: larger area first, near-equal areas by time*size
    MODE_LESS = 1      # k1 ascending (hint issue kernel, prefetch index)
    MODE_GREATER = 2   # k1 descending (time*size)

cdef enum:
    SORT_THRESHOLD = 16    # libstdc++ _S_threshold
    SORT_STACK = 136       # > 2 * 63 + 1: the deepest the introsort loop's stack can grow

# dirty bits of a cached greedy key
cdef enum:
    RE_FORWARD = 1     # redo the GPU->SSD walk from the interval's start
    RE_BACKWARD = 2    # redo the SSD->GPU walk back from its end
    RE_ALL = 3

# budget changes a greedy step records (what an interval's cached walks read)
cdef enum:
    CH_G2S = 0         # GPU->SSD budget: read by the forward walk over [start, off_mid]
    CH_S2G = 1         # SSD->GPU budget: read by the backward walk over [pre_mid, end-1]
    CH_MAX = 8         # records per step (a step makes at most four)

# why the greedy pass stopped (greedy_stats.end)
cdef enum:
    END_FITS = 0       # every kernel's estimate is under the target
    END_TAKEN = 1      # the best key is an interval already handled (best_by_scan: no key is positive)
    END_EXHAUSTED = 2  # one step per interval taken

# |exact area - approximation| <= size * T[K] * (K + 4) * 2^-48 (derivation in the reference)
cdef double BOUND_UNIT = 1.0 / 281474976710656.0
cdef double TIE_PAD = 0.000001     # the comparator's tolerance

# the same constants for the Python layer (g10.py builds cap/est/full with these rows)
S2G, G2S, H2G, G2H = DIR_S2G, DIR_G2S, DIR_H2G, DIR_G2H
A_TO_GPU, A_TO_SSD, A_TO_HOST, A_FREE = HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE
CMP_AREA, CMP_LESS, CMP_GREATER = MODE_AREA, MODE_LESS, MODE_GREATER
GREEDY_FITS, GREEDY_TAKEN, GREEDY_EXHAUSTED = END_FITS, END_TAKEN, END_EXHAUSTED


# The four bandwidth budgets, one bucket per (direction, kernel), row-major.  A direction books
# and reads the row ``row[d]``: its own, or with a shared SSD (ssd.duplex = shared) GPU->SSD
# the SSD->GPU row, so that reads and writes draw on one SSD budget per kernel.
cdef struct budgets:
    const double* cap          # [4 * K] bytes the bucket can carry
    double* est                # [4 * K] bytes booked so far
    cbool* full                # [4 * K] bucket closed to further bookings
    int64_t K                  # kernels per iteration
    int64_t row[4]             # bucket row of each direction
    cbool shared_ssd           # row[DIR_G2S] == row[DIR_S2G]
    # the open buckets as disjoint sets, or NULL (the walks then step over every kernel): per row
    # (K + 1 entries each) ``nxt[i]`` leads to the first open kernel >= i (K: none), ``prv[i + 1]``
    # to 1 + the last open kernel <= i (0: none).  A bucket only ever closes, so the walks skip the
    # closed runs in amortised constant time and stop where the kernel-by-kernel walk stops.
    int64_t* nxt
    int64_t* prv

# Keys of one emulated std::sort.
cdef struct sort_keys:
    int mode                   # MODE_AREA, MODE_LESS or MODE_GREATER
    const double* k1           # primary key per element
    const double* k2           # MODE_AREA: tie-break key of near-equal primaries

# The hint vector the passes append to.
cdef struct hint_out:
    int64_t* kernel            # issuing kernel per row
    int64_t* tensor            # tensor per row
    int64_t* action            # ACT_* per row
    int64_t n                  # rows written
    int64_t capacity           # rows available
    int overflow               # a push found no room (impossible with g10.py's sizing)

# The inactive intervals (read-only).
cdef struct interval_table:
    const int64_t* tensor      # owning tensor
    const int64_t* start       # kernel the interval starts after
    const int64_t* end         # kernel of the next use (next iteration's when looped)
    const cbool* looped        # crosses the iteration boundary
    const double* time_us      # idle time the artifact estimates
    const int64_t* size        # tensor bytes
    int64_t n                  # intervals

# The greedy pass's key cache, its prefix sums, and what a step changed (to invalidate keys).
cdef struct area_keys:
    double* A                  # [I] key: exact where `exact`, else approximate
    double* B                  # [I] error bound of A (0 where exact)
    cbool* exact               # [I] A is the artifact's exact sum
    cbool* fresh               # [I] A/B up to date with the prefix sums and walks
    int64_t* dirty             # [I] RE_* walks to redo
    int64_t* dep               # [2 I] walk ends (off_mid, pre_mid) of plain intervals
    double* tsz                # [I] time * size: the comparator's tie-break key
    int64_t* order             # [I] keys by lower bound, repaired each step
    double* lo                 # [I] lower end of a key's padded uncertainty interval
    double* hi                 # [I] upper end
    int64_t* span              # [3 I] (first, last, wrap) nonzero terms of a key's sum
    double* step_us            # [K] kernel durations T[j+1] - T[j]
    double* M                  # [K+1] prefix sums of the durations over the line
    int64_t* C                 # [K+1] prefix counts of the nonzero ones
    double* M2                 # [K+1] the same with the duration lagging one kernel
    int64_t* C2                # [K+1]
    int64_t* on                # [K+1] kernels with a nonzero term, count in slot K
    int64_t* on2               # [K+1] the same for the lagging form
    int64_t* ch                # [3 CH_MAX] (CH_* kind, lo, hi) budget ranges this step changed
    int64_t* flips             # [K] kernels whose estimate fell to the line this step

# The greedy pass's scalars: greedy_pass takes them as a dict with these keys
# (g10.py builds it from SchedulerParams, whose fields have the same names).
cdef struct greedy_params:
    int64_t gpu_memory_bytes   # the line: a key sums the time each kernel's estimate is above it
    int64_t target_bytes       # the pass stops once every kernel's estimate is under this
    int64_t host_memory_bytes  # host memory the host offloads may fill
    double ssd_latency_us      # SSD access latency
    double system_latency_us   # system latency of one transfer
    double ssd_bytes_per_us    # SSD bandwidth
    double host_bytes_per_us   # host link (PCIe) bandwidth
    double delta               # safety margin, a fraction of the move time
    cbool exact_keys           # every key summed exactly (reference mode, slower), not only near ties
    cbool looped_budgets       # a looped offload books the bandwidth budgets (False: the artifact's time test)
    cbool shared_ssd           # SSD reads and writes book one budget (ssd.duplex = shared; False: the artifact's two)
    cbool set_aside_short      # an interval too short for either tier is not chosen again (False: the artifact's loop)
    cbool best_by_scan         # a step takes the best key by one scan of the approximate keys (False: the
                               # artifact's emulated std::sort of every key); when no key is over the GPU-memory
                               # line, keys over the target line

# What the greedy pass did (greedy_pass returns it as a dict with these keys).
cdef struct greedy_stats:
    int64_t steps                  # greedy steps begun (each sorts the keys once)
    int64_t area_sums_exact        # keys summed exactly
    int64_t area_approximations    # keys approximated from the prefix sums
    int64_t sorts                  # emulated std::sorts of the keys
    int64_t offloads_ssd           # local offloads to SSD
    int64_t offloads_host          # local offloads to host memory
    int64_t offloads_looped        # offloads of intervals across the iteration boundary
    int64_t dropped_for_bandwidth  # chosen, but no bandwidth to move it out and back in time
    int64_t end                    # END_*: why the pass stopped

# the keys of greedy_pass's params and of the statistics it returns, read off the structs
cdef greedy_params _no_params
cdef greedy_stats _no_stats
memset(&_no_params, 0, sizeof(_no_params))
memset(&_no_stats, 0, sizeof(_no_stats))
GREEDY_PARAMS = tuple(<dict>_no_params)
GREEDY_STATS = tuple(<dict>_no_stats)

# The local offloads the prefetch placement revisits, one row each.
cdef struct local_offloads:
    int64_t* interval          # the interval offloaded
    int64_t* pre               # kernel its prefetch starts at, at the latest
    int64_t* evf               # kernel its eviction ends at
    int64_t n                  # rows written


# ---------------------------------------------------------------------------
# exact emulation of libstdc++ std::sort on an index array
# ---------------------------------------------------------------------------

cdef inline bint before(const sort_keys* k, int64_t x, int64_t y) noexcept nogil:
    """comp(x, y) of the emulated sort: does element x go before element y?"""
    cdef double d
    if k.mode == MODE_AREA:
        d = k.k1[x] - k.k1[y]
        if d < TIE_PAD and d > -TIE_PAD and k.k1[x] != 0.0 and k.k1[y] != 0.0:
            return k.k2[x] > k.k2[y]
        return k.k1[x] > k.k1[y]
    if k.mode == MODE_LESS:
        return k.k1[x] < k.k1[y]
    return k.k1[x] > k.k1[y]


cdef void adjust_heap(int64_t* p, int64_t first, int64_t hole, int64_t length, int64_t value,
                      const sort_keys* k) noexcept nogil:
    cdef int64_t top = hole, child = hole, parent
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if before(k, p[first + child], p[first + child - 1]):
            child -= 1
        p[first + hole] = p[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        p[first + hole] = p[first + child - 1]
        hole = child - 1
    # push_heap (hole > top >= 0 whenever parent is used, so C division is exact)
    parent = (hole - 1) // 2
    while hole > top and before(k, p[first + parent], value):
        p[first + hole] = p[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    p[first + hole] = value


cdef void heap_sort(int64_t* p, int64_t first, int64_t last, const sort_keys* k) noexcept nogil:
    """std::__partial_sort(first, last, last): make_heap then sort_heap."""
    cdef int64_t length = last - first, parent, value
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            adjust_heap(p, first, parent, length, p[first + parent], k)
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        value = p[last]
        p[last] = p[first]
        adjust_heap(p, first, 0, last - first, value, k)


cdef inline void swap(int64_t* p, int64_t i, int64_t j) noexcept nogil:
    cdef int64_t t = p[i]
    p[i] = p[j]
    p[j] = t


cdef int64_t partition_pivot(int64_t* p, int64_t first, int64_t last, const sort_keys* k) noexcept nogil:
    cdef int64_t mid = first + (last - first) // 2
    cdef int64_t a = first + 1, b = mid, c = last - 1
    cdef int64_t lo, hi, pv
    # __move_median_to_first(first, a, b, c)
    if before(k, p[a], p[b]):
        if before(k, p[b], p[c]):
            swap(p, first, b)
        elif before(k, p[a], p[c]):
            swap(p, first, c)
        else:
            swap(p, first, a)
    elif before(k, p[a], p[c]):
        swap(p, first, a)
    elif before(k, p[b], p[c]):
        swap(p, first, c)
    else:
        swap(p, first, b)
    # __unguarded_partition(first + 1, last, pivot = first); the guards only matter
    # for an inconsistent comparator, where C++ would read out of range
    lo = first + 1
    hi = last
    pv = p[first]
    while True:
        while lo < last - 1 and before(k, p[lo], pv):
            lo += 1
        hi -= 1
        while hi > first and before(k, pv, p[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        swap(p, lo, hi)
        lo += 1


cdef inline void linear_insert(int64_t* p, int64_t i, int64_t lo, const sort_keys* k) noexcept nogil:
    """__unguarded_linear_insert (guarded at ``lo`` for safety)."""
    cdef int64_t value = p[i], j = i - 1
    while j >= lo and before(k, value, p[j]):
        p[j + 1] = p[j]
        j -= 1
    p[j + 1] = value


cdef void insertion_sort(int64_t* p, int64_t first, int64_t last, const sort_keys* k) noexcept nogil:
    cdef int64_t i, j, value
    for i in range(first + 1, last):
        if before(k, p[i], p[first]):
            value = p[i]
            j = i
            while j > first:
                p[j] = p[j - 1]
                j -= 1
            p[first] = value
        else:
            linear_insert(p, i, first, k)


cdef void std_sort_c(int64_t* p, int64_t n, const sort_keys* k) noexcept nogil:
    """Sort index array ``p[0:n]`` in place exactly as libstdc++'s ``std::sort`` would."""
    cdef int64_t depth0 = 0, m = n, top, first, last, depth, cut, i
    cdef int64_t stack[3 * SORT_STACK]
    if n < 2:
        return
    while m > 1:  # 2 * __lg(n)
        m >>= 1
        depth0 += 1
    depth0 *= 2
    # __introsort_loop with an explicit stack; the segments it leaves are disjoint,
    # so the processing order does not change the result
    stack[0] = 0
    stack[1] = n
    stack[2] = depth0
    top = 1
    while top > 0:
        top -= 1
        first = stack[3 * top]
        last = stack[3 * top + 1]
        depth = stack[3 * top + 2]
        while last - first > SORT_THRESHOLD:
            if depth == 0:
                heap_sort(p, first, last, k)
                break
            depth -= 1
            cut = partition_pivot(p, first, last, k)
            stack[3 * top] = cut
            stack[3 * top + 1] = last
            stack[3 * top + 2] = depth
            top += 1
            last = cut
    # __final_insertion_sort
    if n > SORT_THRESHOLD:
        insertion_sort(p, 0, SORT_THRESHOLD, k)
        for i in range(SORT_THRESHOLD, n):
            linear_insert(p, i, 0, k)
    else:
        insertion_sort(p, 0, n, k)


# ---------------------------------------------------------------------------
# bandwidth budgets (one bucket per kernel and direction)
# ---------------------------------------------------------------------------

cdef inline int64_t find_open(int64_t* up, int64_t i) noexcept nogil:
    """The root of ``i`` in a row of ``budgets.nxt`` or ``budgets.prv`` (path halving)."""
    while up[i] != i:
        up[i] = up[up[i]]
        i = up[i]
    return i


cdef inline void close_at(budgets* bud, int64_t at) noexcept nogil:
    """Close bucket ``at`` (row * K + kernel) to further bookings."""
    cdef int64_t r, i
    if bud.full[at]:
        return
    bud.full[at] = True
    if bud.nxt != NULL:
        r = at // bud.K
        i = at - r * bud.K
        bud.nxt[r * (bud.K + 1) + i] = i + 1
        bud.prv[r * (bud.K + 1) + i + 1] = i


cdef int64_t walk_forward_c(const budgets* bud, int64_t d, int64_t size, int64_t start) noexcept nogil:
    """Kernel where ``size`` bytes are through direction ``d``, starting at ``start``."""
    cdef int64_t K = bud.K, o = bud.row[d] * bud.K, rest = size, i = start
    cdef int64_t* up
    if bud.nxt != NULL and rest > 0 and i < K:
        up = bud.nxt + bud.row[d] * (K + 1)
        i = find_open(up, i)
        while i < K:
            rest = <int64_t>(<double>rest - (bud.cap[o + i] - bud.est[o + i]))
            if rest <= 0 or i == K - 1:
                return i
            i = find_open(up, i + 1)
        return K - 1
    while rest > 0 and i < K:
        if not bud.full[o + i]:
            # C++ `long -= double`: the double difference, truncated toward zero
            rest = <int64_t>(<double>rest - (bud.cap[o + i] - bud.est[o + i]))
        if rest <= 0 or i == K - 1:
            break
        i += 1
    return i


cdef int64_t walk_backward_c(const budgets* bud, int64_t d, int64_t size, int64_t needed) noexcept nogil:
    """Kernel where a transfer of ``size`` bytes must start to be in by ``needed``."""
    cdef int64_t o = bud.row[d] * bud.K, rest = size, i = needed - 1, q
    cdef int64_t* up
    if bud.nxt != NULL and rest > 0 and i >= 0:
        up = bud.prv + bud.row[d] * (bud.K + 1)
        q = find_open(up, i + 1)
        while q > 0:
            i = q - 1
            rest = <int64_t>(<double>rest - (bud.cap[o + i] - bud.est[o + i]))
            if rest <= 0 or i == 0:
                return i
            q = find_open(up, i)
        return 0
    while rest > 0 and i >= 0:
        if not bud.full[o + i]:
            rest = <int64_t>(<double>rest - (bud.cap[o + i] - bud.est[o + i]))
        if rest <= 0 or i == 0:
            break
        i -= 1
    return i


cdef int64_t reserve_ssd_c(budgets* bud, int64_t d, int64_t shadow, int64_t size, int64_t start) noexcept nogil:
    """Book an SSD transfer from ``start`` on; it also fills the PCIe bucket ``shadow``.
    Returns the last kernel touched."""
    cdef int64_t K = bud.K, od = bud.row[d] * bud.K, osh = bud.row[shadow] * bud.K, rest = size, i = start
    cdef const double* cap = bud.cap
    cdef double* est = bud.est
    cdef cbool* full = bud.full
    cdef double room
    while rest > 0 and i < K:
        if not full[od + i]:
            if rest + est[od + i] > cap[od + i]:
                room = cap[od + i] - est[od + i]
                rest = <int64_t>(<double>rest - room)
                est[osh + i] += room
                if est[osh + i] >= cap[osh + i]:
                    close_at(bud, osh + i)
                est[od + i] = cap[od + i]
                close_at(bud, od + i)
            else:
                est[od + i] += rest
                est[osh + i] += rest
                if est[osh + i] >= cap[osh + i]:
                    close_at(bud, osh + i)
                rest = -1
        if rest <= 0 or i == K - 1:
            break
        i += 1
    return i


cdef int64_t reserve_pcie_c(budgets* bud, int64_t d, int64_t shadow, int64_t size, int64_t start) noexcept nogil:
    """Book a host transfer from ``start`` on (with the artifact's excess quirk on the
    SSD bucket ``shadow``, see the reference).  Returns the last kernel touched."""
    cdef int64_t K = bud.K, od = bud.row[d] * bud.K, osh = bud.row[shadow] * bud.K, rest = size, i = start
    cdef const double* cap = bud.cap
    cdef double* est = bud.est
    cdef cbool* full = bud.full
    while rest > 0 and i < K:
        if not full[od + i]:
            if rest + est[od + i] > cap[od + i]:
                rest = <int64_t>(<double>rest - (cap[od + i] - est[od + i]))
                est[od + i] = cap[od + i]
                close_at(bud, od + i)
                est[osh + i] = cap[osh + i]
                close_at(bud, osh + i)
            else:
                est[od + i] += rest
                if est[od + i] >= cap[od + i] - cap[osh + i]:
                    est[osh + i] += est[od + i] - (cap[od + i] - cap[osh + i])
                    if est[osh + i] >= cap[osh + i]:
                        est[osh + i] = cap[osh + i]
                        close_at(bud, osh + i)
                rest = -1
        if rest <= 0 or i == K - 1:
            break
        i += 1
    return i


cdef inline int64_t find_slot(const double* table, double t, int64_t lo, int64_t hi) noexcept nogil:
    """First j in [lo, hi) with table[j] <= t < table[j+1], or -1.  ``table`` (kernel start
    times) never falls, so that j is the first with table[j+1] > t, found by bisection, provided
    table[j] <= t: the reference's kernel-by-kernel scan, in O(log K)."""
    cdef int64_t a = lo, b = hi, m
    while a < b:  # first j in [lo, hi) with table[j + 1] > t (hi: none)
        m = a + (b - a) // 2
        if table[m + 1] > t:
            b = m
        else:
            a = m + 1
    if a < hi and table[a] <= t:
        return a
    return -1


cdef inline bint all_at_most(const int64_t* arr, int64_t n, int64_t line) noexcept nogil:
    cdef int64_t k
    for k in range(n):
        if arr[k] > line:
            return False
    return True


cdef inline bint span_at_most(const int64_t* mem, int64_t K, int64_t line, int64_t start, int64_t end) noexcept nogil:
    """check_GPU_OK_interval: mem <= line over [start, end), wrapping when end < start."""
    cdef int64_t i
    if end < start:
        end += K
    for i in range(start, end):
        if mem[i % K] > line:
            return False
    return True


cdef inline void add_wrapped(int64_t* arr, int64_t K, int64_t value, int64_t start, int64_t end) noexcept nogil:
    cdef int64_t i
    if end < start:
        end += K
    for i in range(start, end):
        arr[i % K] += value


cdef inline void push_hint(hint_out* h, int64_t kernel, int64_t tensor, int64_t action) noexcept nogil:
    if h.n >= h.capacity:
        h.overflow = 1
        return
    h.kernel[h.n] = kernel
    h.tensor[h.n] = tensor
    h.action[h.n] = action
    h.n += 1


cdef inline int64_t lower_bound(const int64_t* a, int64_t n, int64_t x) noexcept nogil:
    """np.searchsorted(a[:n], x) (side='left') on ascending ``a``."""
    cdef int64_t lo = 0, hi = n, mid
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


# ---------------------------------------------------------------------------
# keys of the greedy sort ("reducible area"), cached and bounded
# ---------------------------------------------------------------------------

cdef double exact_area(const interval_table* iv, int64_t i, const int64_t* dep, const int64_t* mem,
                       int64_t K, const double* table, int64_t line) noexcept nogil:
    """The artifact's area of interval i, bit for bit (its own left-to-right sum)."""
    cdef int64_t s = iv.start[i], e = iv.end[i], size = iv.size[i], j
    cdef double a = 0.0
    if iv.looped[i]:
        # quirk copied (see the reference): the steps wrap through T[0] - T[K]
        for j in range(s, K):
            if mem[j] > line:
                a += size * (table[j + 1] - table[j])
        if e > 0 and mem[0] > line:
            a += size * (table[0] - table[K])
        for j in range(1, e):
            if mem[j] > line:
                a += size * (table[j] - table[j - 1])
    else:
        for j in range(dep[2 * i], dep[2 * i + 1]):
            if mem[j] > line:
                a += size * (table[j + 1] - table[j])
    return a


cdef void rebuild_prefix(const int64_t* mem, int64_t K, int64_t line, area_keys* ks) noexcept nogil:
    """Prefix sums (M) and counts (C) of the kernel durations over the line; M2/C2 the
    same with the duration lagging by one kernel; on/on2 the kernels with a nonzero
    term, ascending, their count in slot K."""
    cdef double* M = ks.M
    cdef double* M2 = ks.M2
    cdef int64_t* C = ks.C
    cdef int64_t* C2 = ks.C2
    cdef const double* step = ks.step_us
    cdef int64_t j, n = 0, n2 = 0
    cdef bint over
    M[0] = 0.0
    C[0] = 0
    M2[0] = 0.0
    C2[0] = 0
    if K >= 1:
        M2[1] = 0.0
        C2[1] = 0
    for j in range(K):
        over = mem[j] > line
        M[j + 1] = M[j] + (step[j] if over else 0.0)
        C[j + 1] = C[j] + (1 if over and step[j] > 0 else 0)
        if over and step[j] > 0:
            ks.on[n] = j
            n += 1
        if j >= 1:
            M2[j + 1] = M2[j] + (step[j - 1] if over else 0.0)
            C2[j + 1] = C2[j] + (1 if over and step[j - 1] > 0 else 0)
            if over and step[j - 1] > 0:
                ks.on2[n2] = j
                n2 += 1
    ks.on[K] = n
    ks.on2[K] = n2


cdef double approx_area(const interval_table* iv, int64_t i, const area_keys* ks, const int64_t* mem,
                        int64_t K, int64_t line, double total_time, double bound_per_byte,
                        double* bound) noexcept nogil:
    """Approximate area of interval i, its error bound in ``bound``; a bound of 0 means
    the area is exactly 0.0 (no term of its sum is nonzero)."""
    cdef int64_t size = iv.size[i], s, e, om, pm, n
    cdef double part
    if iv.looped[i]:
        s = iv.start[i]
        e = iv.end[i]
        n = ks.C[K] - ks.C[s]
        part = ks.M[K] - ks.M[s]
        if e > 0 and mem[0] > line and total_time > 0:
            n += 1
            part += -total_time
        if e > 1:
            n += ks.C2[e] - ks.C2[1]
            part += ks.M2[e] - ks.M2[1]
    else:
        om = ks.dep[2 * i]
        pm = ks.dep[2 * i + 1]
        if pm <= om:
            bound[0] = 0.0
            return 0.0
        n = ks.C[pm] - ks.C[om]
        part = ks.M[pm] - ks.M[om]
    if n == 0:
        bound[0] = 0.0
        return 0.0
    bound[0] = size * bound_per_byte
    return size * part


cdef void term_span(const interval_table* iv, int64_t i, const area_keys* ks, const int64_t* mem,
                    int64_t K, int64_t line, double total_time, int64_t* out) noexcept nogil:
    """(first, last, wrap) identifying the nonzero terms of interval i's sum, into
    out[0:3]; (-1, -1, 0) when there is none.  Equal spans, sizes and looped-ness
    mean bit-identical exact sums (see the reference)."""
    cdef int64_t s, e, r, r2, first, last, wrap, om, pm
    cdef int64_t n_on = ks.on[K], n_on2 = ks.on2[K]
    if iv.looped[i]:
        s = iv.start[i]
        e = iv.end[i]
        r = lower_bound(ks.on, n_on, s)
        first = ks.on[r] if r < n_on else K
        wrap = 1 if e > 0 and mem[0] > line and total_time > 0 else 0
        r2 = lower_bound(ks.on2, n_on2, e) - 1  # last kernel < e (all are >= 1)
        last = ks.on2[r2] if r2 >= 0 else 0
        if first == K and wrap == 0 and last == 0:
            out[0] = -1
            out[1] = -1
            out[2] = 0
        else:
            out[0] = first
            out[1] = last
            out[2] = wrap
        return
    om = ks.dep[2 * i]
    pm = ks.dep[2 * i + 1]
    r = lower_bound(ks.on, n_on, om)
    if r >= n_on or ks.on[r] >= pm:
        out[0] = -1
        out[1] = -1
        out[2] = 0
        return
    r2 = lower_bound(ks.on, n_on, pm) - 1
    out[0] = ks.on[r]
    out[1] = ks.on[r2]
    out[2] = 0


cdef int64_t resolve_near_ties(const interval_table* iv, area_keys* ks, const int64_t* mem, int64_t K,
                               const double* table, int64_t line) noexcept nogil:
    """Make exact every key whose comparisons the approximations cannot decide (a
    cluster of overlapping padded keys that mixes classes, or a key that might be 0).
    Returns how many exact sums it computed."""
    cdef int64_t I = iv.n, i, i0, t, u, v, r, q, moves = 0, done = 0
    cdef double* A = ks.A
    cdef double* B = ks.B
    cdef double* lo = ks.lo
    cdef double* hi = ks.hi
    cdef int64_t* order = ks.order
    cdef int64_t* span = ks.span
    cdef double pad, top
    cdef bint mixed
    cdef sort_keys by_lo
    for i in range(I):
        # pad: bound, tolerance, and the rounding of these very operations
        pad = B[i] + TIE_PAD + 8 * BOUND_UNIT * (fabs(A[i]) + B[i]) + 1e-9
        lo[i] = A[i] - pad
        hi[i] = A[i] + pad
    # ``order`` (kept between steps) is nearly sorted by ``lo``: repair it by insertion,
    # unless too much moved.  Only the clusters matter, and they do not depend on the
    # order among equal ``lo`` values.
    for t in range(1, I):
        v = order[t]
        u = t - 1
        while u >= 0 and lo[order[u]] > lo[v]:
            order[u + 1] = order[u]
            u -= 1
            moves += 1
        order[u + 1] = v
        if moves > 16 * I:
            for i in range(I):
                order[i] = i
            by_lo.mode = MODE_LESS
            by_lo.k1 = lo
            by_lo.k2 = lo
            std_sort_c(order, I, &by_lo)
            break
    r = 0
    while r < I:
        q = r + 1
        top = hi[order[r]]
        while q < I and lo[order[q]] <= top:
            if hi[order[q]] > top:
                top = hi[order[q]]
            q += 1
        # a cluster whose keys are all exact has nothing to resolve (the offloaded
        # intervals, all 0, make one large cluster at every step)
        for t in range(r, q):
            if not ks.exact[order[t]]:
                break
        else:
            r = q
            continue
        mixed = False
        if q - r > 1:
            for t in range(r, q):
                i = order[t]
                term_span(iv, i, ks, mem, K, line, table[K], &span[3 * i])
            i0 = order[r]
            for t in range(r + 1, q):
                i = order[t]
                if (iv.size[i] != iv.size[i0] or iv.looped[i] != iv.looped[i0]
                        or span[3 * i] != span[3 * i0] or span[3 * i + 1] != span[3 * i0 + 1]
                        or span[3 * i + 2] != span[3 * i0 + 2]):
                    mixed = True
                    break
        for t in range(r, q):
            i = order[t]
            if ks.exact[i]:
                continue
            if mixed or fabs(A[i]) <= B[i] + 4 * TIE_PAD:
                A[i] = exact_area(iv, i, ks.dep, mem, K, table, line)
                B[i] = 0.0
                ks.exact[i] = True
                done += 1
        r = q
    return done


cdef inline int64_t walk_redo(const interval_table* iv, int64_t i, const int64_t* dep, int64_t kind,
                              int64_t lo, int64_t hi) noexcept nogil:
    """Walks of interval i that a budget change of ``kind`` over [lo, hi] invalidates."""
    if iv.looped[i]:  # no budget walks
        return 0
    if kind == CH_G2S:
        return RE_FORWARD if hi >= iv.start[i] and lo <= dep[2 * i] else 0
    return RE_BACKWARD if hi >= dep[2 * i + 1] and lo <= iv.end[i] - 1 else 0


cdef inline bint crossed_in_range(const interval_table* iv, int64_t i, const int64_t* dep,
                                  const int64_t* flips, int64_t n) noexcept nogil:
    """Did a kernel of interval i's sum fall to the line (``flips[0:n]`` ascending, n > 0)?"""
    cdef int64_t r
    if iv.looped[i]:  # kernels [start, K) and [0, end)
        return lower_bound(flips, n, iv.start[i]) < n or flips[0] < iv.end[i]
    r = lower_bound(flips, n, dep[2 * i])
    return r < n and flips[r] < dep[2 * i + 1]


cdef inline int64_t record(int64_t* ch, int64_t nch, int64_t kind, int64_t lo, int64_t hi) noexcept nogil:
    if nch >= CH_MAX:  # unreachable: a step records at most four changes
        return nch
    ch[3 * nch] = kind
    ch[3 * nch + 1] = lo
    ch[3 * nch + 2] = hi
    return nch + 1


cdef int64_t record_line_drops(int64_t* flips, int64_t nfl, int64_t K, const int64_t* mem, int64_t line,
                               int64_t size, int64_t lo, int64_t hi) noexcept nogil:
    """After ``mem[lo..hi] -= size``: append the kernels that fell to ``line`` (each
    kernel falls at most once per step, so K slots suffice)."""
    cdef int64_t j
    for j in range(lo, hi + 1):
        if mem[j] <= line and mem[j] + size > line and nfl < K:
            flips[nfl] = j
            nfl += 1
    return nfl


cdef int64_t record_wrapped_drops(int64_t* flips, int64_t nfl, int64_t K, const int64_t* mem, int64_t line,
                                  int64_t size, int64_t lo, int64_t hi) noexcept nogil:
    """Same for the two-iteration index range [lo, hi] of a looped offload."""
    if hi < lo:
        return nfl
    if hi < K:
        return record_line_drops(flips, nfl, K, mem, line, size, lo, hi)
    if lo >= K:
        return record_line_drops(flips, nfl, K, mem, line, size, lo - K, hi - K)
    nfl = record_line_drops(flips, nfl, K, mem, line, size, lo, K - 1)
    return record_line_drops(flips, nfl, K, mem, line, size, 0, hi - K)


# Budget walks and bookings over a looped interval's two-iteration index range: index x is
# kernel x % K (the budgets are one steady-state iteration's).  Not in the artifact, whose
# looped offloads test time only (``looped_budgets``).

cdef int64_t walk_forward_wrapped_c(const budgets* bud, int64_t d, int64_t size, int64_t start,
                                    int64_t last) noexcept nogil:
    """Index in [start, last] where ``size`` bytes are through direction ``d`` (``last`` if never)."""
    cdef int64_t K = bud.K, o = bud.row[d] * bud.K, rest = size, x = start, i
    while rest > 0 and x <= last:
        i = x % K
        if not bud.full[o + i]:
            rest = <int64_t>(<double>rest - (bud.cap[o + i] - bud.est[o + i]))
        if rest <= 0 or x == last:
            break
        x += 1
    return x


cdef int64_t walk_backward_wrapped_c(const budgets* bud, int64_t d, int64_t size, int64_t needed,
                                     int64_t first) noexcept nogil:
    """Index in [first, needed) where a transfer of ``size`` bytes must start to be in by
    ``needed`` (``first`` if never)."""
    cdef int64_t K = bud.K, o = bud.row[d] * bud.K, rest = size, x = needed - 1, i
    while rest > 0 and x >= first:
        i = x % K
        if not bud.full[o + i]:
            rest = <int64_t>(<double>rest - (bud.cap[o + i] - bud.est[o + i]))
        if rest <= 0 or x == first:
            break
        x -= 1
    return x


cdef int64_t reserve_wrapped_c(budgets* bud, int64_t d, int64_t shadow, int64_t size, int64_t start,
                               bint ssd) noexcept nogil:
    """Book ``size`` bytes through ``d`` from index ``start`` on, over at most one iteration
    (``reserve_ssd_c``'s buckets when ``ssd``, else ``reserve_pcie_c``'s).  Returns the last index."""
    cdef int64_t K = bud.K, od = bud.row[d] * bud.K, osh = bud.row[shadow] * bud.K, rest = size, x = start, i
    cdef const double* cap = bud.cap
    cdef double* est = bud.est
    cdef cbool* full = bud.full
    cdef double room
    while rest > 0:
        i = x % K
        if not full[od + i]:
            if rest + est[od + i] > cap[od + i]:
                room = cap[od + i] - est[od + i]
                rest = <int64_t>(<double>rest - room)
                if ssd:
                    est[osh + i] += room
                    if est[osh + i] >= cap[osh + i]:
                        close_at(bud, osh + i)
                else:
                    est[osh + i] = cap[osh + i]
                    close_at(bud, osh + i)
                est[od + i] = cap[od + i]
                close_at(bud, od + i)
            else:
                est[od + i] += rest
                if ssd:
                    est[osh + i] += rest
                    if est[osh + i] >= cap[osh + i]:
                        close_at(bud, osh + i)
                elif est[od + i] >= cap[od + i] - cap[osh + i]:
                    est[osh + i] += est[od + i] - (cap[od + i] - cap[osh + i])
                    if est[osh + i] >= cap[osh + i]:
                        est[osh + i] = cap[osh + i]
                        close_at(bud, osh + i)
                rest = -1
        if rest <= 0 or x == start + K - 1:
            break
        x += 1
    return x


cdef inline int64_t record_wrapped(int64_t* ch, int64_t nch, int64_t K, int64_t kind, int64_t lo,
                                   int64_t hi) noexcept nogil:
    """Record the changed index range [lo, hi] (at most K long) as one or two kernel ranges."""
    hi -= lo - lo % K
    lo %= K
    if hi < K:
        return record(ch, nch, kind, lo, hi)
    nch = record(ch, nch, kind, lo, K - 1)
    return record(ch, nch, kind, 0, hi - K)


cdef inline int64_t lower_span(int64_t* mem, int64_t K, int64_t line, int64_t size, int64_t lo, int64_t hi,
                              int64_t* flips, int64_t nfl) noexcept nogil:
    """The tensor is off the GPU over kernels [lo, hi): lower the estimate there and append
    the kernels that fell to ``line``."""
    cdef int64_t j
    for j in range(lo, hi):
        mem[j] -= size
    return record_line_drops(flips, nfl, K, mem, line, size, lo, hi - 1)


cdef inline bint fell_to(const int64_t* mem, int64_t line, int64_t size, int64_t lo, int64_t hi) noexcept nogil:
    """After ``mem[lo:hi] -= size``: did a kernel there fall to ``line``?"""
    cdef int64_t j
    for j in range(lo, hi):
        if mem[j] <= line and mem[j] + size > line:
            return True
    return False


cdef inline int64_t lower_wrapped(int64_t* mem, int64_t K, int64_t line, int64_t size, int64_t lo, int64_t hi,
                                 int64_t* flips, int64_t nfl) noexcept nogil:
    """Same over the two-iteration index range [lo, hi) of a looped offload."""
    cdef int64_t j
    for j in range(lo, hi):
        mem[j % K] -= size
    return record_wrapped_drops(flips, nfl, K, mem, line, size, lo, hi - 1)


cdef inline int64_t looped_time_only_c(int64_t c, int64_t s, int64_t size, int64_t clear, int64_t pidx,
                                       int64_t action, int64_t* mem, int64_t K, int64_t line, int64_t* flips,
                                       int64_t nfl, const interval_table* iv, cbool* really,
                                       greedy_stats* st, hint_out* h) noexcept nogil:
    """The published looped offload (time-based only, no budgets) to the tier of ``action``;
    returns the new count of line drops."""
    if pidx != s:
        push_hint(h, s, iv.tensor[c], action)
        really[c] = True
        push_hint(h, pidx % K, iv.tensor[c], HINT_TO_GPU)
        st.offloads_looped += 1
    return lower_wrapped(mem, K, line, size, clear + 1, pidx, flips, nfl)


cdef bint looped_booked_c(int64_t c, int64_t s, int64_t e, int64_t size, int64_t clear, int64_t pidx,
                          bint ssd_tier, double cpu_move, double cpu_lead, const double* ext,
                          const double* table, budgets* bud, int64_t* cpu, int64_t cpu_line,
                          int64_t* mem, int64_t line, int64_t* flips, int64_t* nfl, int64_t* ch,
                          int64_t* nch, const interval_table* iv, cbool* really, greedy_stats* st,
                          hint_out* h) noexcept nogil:
    """A looped offload that books the bandwidth budgets (``looped_budgets``); the reference's
    ``_looped_booked`` says what it does.  Returns whether it booked one."""
    cdef int64_t K = bud.K, last = e + K - 1, x, pre, evf, out, back, hi
    cdef bint to_host = not ssd_tier, ssd_open
    if ssd_tier:
        ssd_open = False
        for x in range(s, clear):
            if not bud.full[bud.row[DIR_G2S] * K + x % K]:
                ssd_open = True
                break
        if not ssd_open and all_at_most(cpu, K, cpu_line - size):
            to_host = True
            clear = find_slot(ext, table[s] + cpu_move, s, e + K)
            pidx = find_slot(ext, ext[e + K] - cpu_lead, s, e + K)
    if to_host:
        pre = walk_backward_wrapped_c(bud, DIR_H2G, size, e + K, s)
        evf = walk_forward_wrapped_c(bud, DIR_G2H, size, s, last)
    else:
        pre = walk_backward_wrapped_c(bud, DIR_S2G, size, e + K, s)
        evf = walk_forward_wrapped_c(bud, DIR_G2S, size, s, last)
    out = evf if evf > clear else clear
    back = pre if pre < pidx else pidx
    if pre <= evf or back <= out:
        st.dropped_for_bandwidth += 1
        return False
    push_hint(h, s, iv.tensor[c], HINT_TO_HOST if to_host else HINT_TO_SSD)
    really[c] = True
    push_hint(h, back % K, iv.tensor[c], HINT_TO_GPU)
    if to_host:
        hi = reserve_wrapped_c(bud, DIR_H2G, DIR_S2G, size, back, False)
        nch[0] = record_wrapped(ch, nch[0], K, CH_S2G, back, hi)
        hi = reserve_wrapped_c(bud, DIR_G2H, DIR_G2S, size, s, False)
        nch[0] = record_wrapped(ch, nch[0], K, CH_G2S, s, hi)
        if ssd_tier:  # the host tier books it after (as for every interval it takes)
            add_wrapped(cpu, K, size, s, e)
    else:
        hi = reserve_wrapped_c(bud, DIR_S2G, DIR_H2G, size, back, True)
        nch[0] = record_wrapped(ch, nch[0], K, CH_S2G, back, hi)
        hi = reserve_wrapped_c(bud, DIR_G2S, DIR_G2H, size, s, True)
        nch[0] = record_wrapped(ch, nch[0], K, CH_G2S, s, hi)
    st.offloads_looped += 1
    nfl[0] = lower_wrapped(mem, K, line, size, out + 1, back, flips, nfl[0])
    return True


# ---------------------------------------------------------------------------
# the passes
# ---------------------------------------------------------------------------

cdef inline void fenwick_add(int64_t* tree, int64_t n, int64_t at, int64_t value) noexcept nogil:
    """Add ``value`` at position ``at`` (0-based) of a Fenwick tree over ``n`` positions."""
    at += 1
    while at <= n:
        tree[at] += value
        at += at & (-at)


cdef inline int64_t fenwick_prefix(const int64_t* tree, int64_t at) noexcept nogil:
    """Sum of positions 0..at of a Fenwick tree."""
    cdef int64_t total = 0
    at += 1
    while at > 0:
        total += tree[at]
        at -= at & (-at)
    return total


cdef int64_t prealloc_pass_c(int64_t* mem, int64_t K, const double* table, const int64_t* ptensors,
                             const int64_t* pbirth, const int64_t* pdeath, const int64_t* psize,
                             int64_t N, int64_t target, double malloc_us_per_byte, bint emit,
                             hint_out* h, int64_t* change) noexcept nogil:
    """The pre-allocation pass.  Each tensor it takes lowers the estimate before its allocation
    and after its free: ``change`` (K + 1 entries, zeroed) is a Fenwick tree of those steps, so a
    tensor costs O(log K), not O(K), and the first kernel over the target is found by a cursor
    (the estimate only falls); ``mem`` is written back at the end.  Integer sums: the result is
    the kernel-by-kernel pass's, exactly."""
    cdef int64_t handled = 0, n, t, b, d, size, issue, death, finish, j, over = 0
    cdef double start_time, free_time
    for n in range(N):
        while over < K and mem[over] + fenwick_prefix(change, over) <= target:
            over += 1
        if over == K:
            break
        t = ptensors[n]
        b = pbirth[n]
        d = pdeath[n]
        size = psize[n]
        handled += 1
        start_time = table[b] - size * malloc_us_per_byte
        if start_time < 0:
            issue = 0
        else:
            issue = find_slot(table, start_time, 0, b)
            if issue < 0:  # allocation takes no time (artifact: undefined); allocate at birth
                issue = b
            if issue > 0:  # mem[0:issue] -= size
                fenwick_add(change, K, 0, -size)
                fenwick_add(change, K, issue, size)
        if emit:
            push_hint(h, issue, t, HINT_TO_GPU)
        death = d if d != -1 else b + 1
        if emit:
            push_hint(h, death, t, HINT_FREE)
        free_time = table[death]
        if free_time < table[K]:
            finish = find_slot(table, free_time, death, K)
            if finish < 0:
                finish = 0  # unreachable (artifact falls back on a global that is 0)
            fenwick_add(change, K, finish, -size)  # mem[finish:K] -= size
    for j in range(K):
        mem[j] += fenwick_prefix(change, j)
    return handled


cdef inline void push_local(local_offloads* loc, int64_t c, int64_t pre, int64_t evf) noexcept nogil:
    loc.interval[loc.n] = c
    loc.pre[loc.n] = pre
    loc.evf[loc.n] = evf
    loc.n += 1


cdef inline bint redo_walks(const interval_table* iv, int64_t i, area_keys* ks, const budgets* bud) noexcept nogil:
    """Redo interval i's dirty budget walks; True when an end moved (its key is then stale)."""
    cdef int64_t end
    cdef bint moved = False
    if ks.dirty[i] & RE_FORWARD:
        end = walk_forward_c(bud, DIR_G2S, iv.size[i] // 2, iv.start[i])
        if end != ks.dep[2 * i]:
            ks.dep[2 * i] = end
            moved = True
    if ks.dirty[i] & RE_BACKWARD:
        end = walk_backward_c(bud, DIR_S2G, iv.size[i] // 2, iv.end[i])
        if end != ks.dep[2 * i + 1]:
            ks.dep[2 * i + 1] = end
            moved = True
    ks.dirty[i] = 0
    return moved


cdef int64_t sort_step(const interval_table* iv, area_keys* ks, const budgets* bud, int64_t* perm,
                       const cbool* offloaded, const int64_t* mem, int64_t K, const double* table,
                       int64_t line, double bound_per_byte, bint exact_keys, greedy_stats* st) noexcept nogil:
    """The published step: every key (exact where a near-tie needs it), the emulated
    std::sort of them all, its first.  -1 when the first is an interval already handled."""
    cdef int64_t I = iv.n, i
    cdef double* A = ks.A
    cdef double* B = ks.B
    cdef sort_keys by_area
    by_area.mode = MODE_AREA
    by_area.k1 = ks.A
    by_area.k2 = ks.tsz
    for i in range(I):
        if offloaded[i]:  # the artifact zeroes the area of an interval already handled
            A[i] = 0.0
            B[i] = 0.0
            ks.exact[i] = True
            continue
        if ks.dirty[i] and redo_walks(iv, i, ks, bud):
            ks.exact[i] = False
            ks.fresh[i] = False
        if not ks.exact[i] and not ks.fresh[i]:
            ks.fresh[i] = True
            A[i] = approx_area(iv, i, ks, mem, K, line, table[K], bound_per_byte, &B[i])
            st.area_approximations += 1
            if B[i] == 0.0:
                ks.exact[i] = True
            elif exact_keys:
                A[i] = exact_area(iv, i, ks.dep, mem, K, table, line)
                B[i] = 0.0
                ks.exact[i] = True
                st.area_sums_exact += 1
    if not exact_keys:
        st.area_sums_exact += resolve_near_ties(iv, ks, mem, K, table, line)
    std_sort_c(perm, I, &by_area)
    st.sorts += 1
    return -1 if offloaded[perm[0]] else perm[0]


# ---------------------------------------------------------------------------
# the best key without a sort (best_by_scan): lazy keys in a heap
# ---------------------------------------------------------------------------
# Within the greedy pass a key only falls: a booking lengthens an interval's walks, which
# narrows the kernels its sum covers, and a kernel falling to the line drops a term.  (The one
# exception, a looped key's wrap term, which rises when kernel 0 falls to the line, is re-keyed
# when it happens.)  So a key computed earlier bounds the key now from above, and a heap of such
# bounds finds the best key by re-keying only the intervals popped above it: each step touches
# a few intervals, not all of them.

cdef struct lazy_keys:
    double* key        # [cap] an entry's key (an upper bound of its interval's key now)
    int64_t* item      # [cap] the entry's interval
    int64_t* ver       # [cap] the entry's version
    int64_t* live      # [I] each interval's live version: an entry with another is stale
    int64_t n          # entries
    int64_t cap        # entries the arrays hold
    int64_t line       # the line the keys are over
    cbool built        # keyed once (the heap over the target is built at its first use)
    cbool over0        # mem[0] > line when last keyed (a looped key rises when it falls)
    area_keys* ks      # prefix sums over ``line`` (the walks' ends ``dep`` are shared)
    area_keys* kh      # or NULL: the same prefix sums with the ends of walks over the host link's
                       # budgets (``dep`` of its own): a key is then the larger of the two


cdef inline bint entry_before(const lazy_keys* q, const double* tsz, int64_t a, int64_t b) noexcept nogil:
    """Heap order: the larger key, then the larger time x size, then the lower interval."""
    cdef int64_t ia = q.item[a], ib = q.item[b]
    if q.key[a] != q.key[b]:
        return q.key[a] > q.key[b]
    if tsz[ia] != tsz[ib]:
        return tsz[ia] > tsz[ib]
    if ia != ib:
        return ia < ib
    return q.ver[a] > q.ver[b]


cdef inline void entry_swap(lazy_keys* q, int64_t a, int64_t b) noexcept nogil:
    cdef double k = q.key[a]
    cdef int64_t t = q.item[a]
    q.key[a] = q.key[b]
    q.key[b] = k
    q.item[a] = q.item[b]
    q.item[b] = t
    t = q.ver[a]
    q.ver[a] = q.ver[b]
    q.ver[b] = t


cdef void sift_down(lazy_keys* q, const double* tsz, int64_t at) noexcept nogil:
    cdef int64_t child
    while True:
        child = 2 * at + 1
        if child >= q.n:
            return
        if child + 1 < q.n and entry_before(q, tsz, child + 1, child):
            child += 1
        if not entry_before(q, tsz, child, at):
            return
        entry_swap(q, at, child)
        at = child


cdef void compact(lazy_keys* q, const double* tsz) noexcept nogil:
    """Drop the stale entries and re-heapify (at most one live entry per interval remains)."""
    cdef int64_t r, w = 0
    for r in range(q.n):
        if q.ver[r] == q.live[q.item[r]]:
            q.key[w] = q.key[r]
            q.item[w] = q.item[r]
            q.ver[w] = q.ver[r]
            w += 1
    q.n = w
    for r in range(w // 2 - 1, -1, -1):
        sift_down(q, tsz, r)


cdef void push_key(lazy_keys* q, const double* tsz, int64_t i, double key) noexcept nogil:
    """The interval's key is now ``key``: a new live entry (earlier ones go stale)."""
    cdef int64_t at, parent
    q.live[i] += 1
    if q.n == q.cap:  # only stale entries can fill it (cap > intervals)
        compact(q, tsz)
    at = q.n
    q.n += 1
    q.key[at] = key
    q.item[at] = i
    q.ver[at] = q.live[i]
    while at > 0:
        parent = (at - 1) // 2
        if not entry_before(q, tsz, at, parent):
            break
        entry_swap(q, at, parent)
        at = parent


cdef void pop_top(lazy_keys* q, const double* tsz) noexcept nogil:
    q.n -= 1
    if q.n > 0:
        q.key[0] = q.key[q.n]
        q.item[0] = q.item[q.n]
        q.ver[0] = q.ver[q.n]
        sift_down(q, tsz, 0)


cdef inline double key_now(const interval_table* iv, int64_t i, area_keys* ks, lazy_keys* q,
                           const budgets* bud, const int64_t* mem, int64_t K, const double* table,
                           double bound_per_byte) noexcept nogil:
    """Interval i's key over ``q.line`` now: its walks redone, its approximate area (with
    ``q.kh``, the larger of the areas between the SSD's walks and between the host link's)."""
    cdef double bound, key, by_host
    if not iv.looped[i]:  # a looped key has no walks
        ks.dirty[i] = RE_ALL
        redo_walks(iv, i, ks, bud)
    key = approx_area(iv, i, q.ks, mem, K, q.line, table[K], bound_per_byte, &bound)
    if q.kh != NULL and not iv.looped[i]:
        q.kh.dep[2 * i] = walk_forward_c(bud, DIR_G2H, iv.size[i] // 2, iv.start[i])
        q.kh.dep[2 * i + 1] = walk_backward_c(bud, DIR_H2G, iv.size[i] // 2, iv.end[i])
        by_host = approx_area(iv, i, q.kh, mem, K, q.line, table[K], bound_per_byte, &bound)
        if by_host > key:
            key = by_host
    return key


cdef void rekey(const interval_table* iv, area_keys* ks, lazy_keys* q, const budgets* bud,
                const cbool* offloaded, const int64_t* mem, int64_t K, const double* table,
                double bound_per_byte, bint looped_only, greedy_stats* st) noexcept nogil:
    """Key every open interval (or every open looped one) now; push the positive keys."""
    cdef int64_t i
    cdef double key
    for i in range(iv.n):
        if offloaded[i] or (looped_only and not iv.looped[i]):
            continue
        key = key_now(iv, i, ks, q, bud, mem, K, table, bound_per_byte)
        st.area_approximations += 1
        if key > 0.0:
            push_key(q, ks.tsz, i, key)
        else:
            q.live[i] += 1
    q.over0 = mem[0] > q.line


cdef int64_t lazy_best(const interval_table* iv, area_keys* ks, lazy_keys* q, const budgets* bud,
                       const cbool* offloaded, const int64_t* mem, int64_t K, const double* table,
                       double bound_per_byte, double* taken, greedy_stats* st) noexcept nogil:
    """The open interval with the largest positive key over ``q.line`` (ties: the larger
    time x size, then the lower interval), its key in ``taken``; -1 when none is positive.
    The prefix sums ``q.ks`` must be up to date."""
    cdef int64_t i, v
    cdef double bound_key, key
    if not q.built:
        q.built = True
        rekey(iv, ks, q, bud, offloaded, mem, K, table, bound_per_byte, False, st)
    elif (mem[0] > q.line) != q.over0:
        rekey(iv, ks, q, bud, offloaded, mem, K, table, bound_per_byte, True, st)
    while q.n > 0:
        i = q.item[0]
        v = q.ver[0]
        bound_key = q.key[0]
        pop_top(q, ks.tsz)
        if v != q.live[i] or offloaded[i]:
            continue
        key = key_now(iv, i, ks, q, bud, mem, K, table, bound_per_byte)
        st.area_approximations += 1
        if key == bound_key:  # no other key can be above it
            q.live[i] += 1
            taken[0] = key
            return i
        if key > 0.0:
            push_key(q, ks.tsz, i, key)
        else:
            q.live[i] += 1
    return -1


cdef greedy_stats greedy_pass_c(int64_t* mem, int64_t* cpu, const double* table, const double* ext,
                                budgets* bud, const interval_table* iv, area_keys* ks, area_keys* kt,
                                lazy_keys* q_line, lazy_keys* q_target, greedy_params p, int64_t* perm,
                                cbool* offloaded, cbool* really, local_offloads* loc,
                                hint_out* h) noexcept nogil:
    cdef int64_t K = bud.K, I = iv.n
    cdef int64_t step, i, c, r, j, nch, nfl, s, e, size, span, pre, evf, last, clear, pidx
    cdef int64_t kind, lo, hi, over
    cdef bint looped, ssd_open, host_first = False, target_stale = True
    cdef double dummy
    cdef double ssd_safe, ssd_move, d_ssd, ssd_lead, cpu_safe, cpu_move, d_cpu, cpu_lead, taken = 0.0
    cdef lazy_keys* q = q_line
    # the three lines by the names the helpers (and the reference) give them
    cdef int64_t line = p.gpu_memory_bytes, target = p.target_bytes, cpu_line = p.host_memory_bytes
    cdef int64_t* ch = ks.ch
    cdef int64_t* flips = ks.flips
    cdef greedy_stats st
    memset(&st, 0, sizeof(st))
    cdef double bound_per_byte = table[K] * (K + 4) * BOUND_UNIT
    cdef const cbool* full = bud.full
    cdef double* A = ks.A
    cdef double* B = ks.B
    cdef cbool* exact = ks.exact
    cdef cbool* fresh = ks.fresh
    cdef int64_t* dirty = ks.dirty
    cdef int64_t* dep = ks.dep
    for i in range(I):
        A[i] = 0.0
        B[i] = 0.0
        exact[i] = False
        fresh[i] = False
        dirty[i] = RE_ALL
        dep[2 * i] = -1
        dep[2 * i + 1] = -1
        ks.order[i] = i
        ks.tsz[i] = iv.time_us[i] * iv.size[i]
    for j in range(K):
        ks.step_us[j] = table[j + 1] - table[j]
    rebuild_prefix(mem, K, line, ks)
    st.end = END_EXHAUSTED
    # the first kernel over the target: mem only decreases in this pass, so the search
    # resumes where it stopped (all_at_most(mem, K, target) at every step, in O(K) overall)
    over = 0
    for step in range(I):
        while over < K and mem[over] <= target:
            over += 1
        if over == K:
            st.end = END_FITS
            break
        st.steps += 1
        host_first = False
        if p.best_by_scan:
            q = q_line
            c = lazy_best(iv, ks, q, bud, offloaded, mem, K, table, bound_per_byte, &taken, &st)
            if c < 0 and target < line:
                # no key over GPU memory, a kernel still over the target: keys over the target
                q = q_target
                if target_stale:  # the prefix sums over the target move only where a kernel fell to it
                    rebuild_prefix(mem, K, target, kt)
                    target_stale = False
                c = lazy_best(iv, ks, q, bud, offloaded, mem, K, table, bound_per_byte, &taken, &st)
                # taken for what the host link's walks lower: it goes to host memory (where it has
                # room) even while the SSD's budget has room, which would not lower those kernels
                host_first = (c >= 0 and q.kh != NULL and not iv.looped[c]
                              and approx_area(iv, c, q.kh, mem, K, q.line, table[K], bound_per_byte, &dummy)
                              > approx_area(iv, c, q.ks, mem, K, q.line, table[K], bound_per_byte, &dummy))
            if c < 0:
                st.end = END_TAKEN
                break
        else:
            c = sort_step(iv, ks, bud, perm, offloaded, mem, K, table, line, bound_per_byte, p.exact_keys, &st)
            if c < 0:
                st.end = END_TAKEN
                break
        nch = 0
        nfl = 0
        s = iv.start[c]
        e = iv.end[c]
        size = iv.size[c]
        looped = iv.looped[c]

        if span_at_most(mem, K, target, s, e):
            offloaded[c] = True
            continue
        span = e - s if not looped else e + K - s
        if span == 1:
            offloaded[c] = True
            continue

        ssd_safe = 2 * (p.ssd_latency_us + p.system_latency_us + size / p.ssd_bytes_per_us)
        ssd_move = ssd_safe / 2
        d_ssd = p.delta * ssd_move
        ssd_safe += d_ssd
        ssd_lead = ssd_move + d_ssd
        cpu_safe = 2 * (p.system_latency_us + size / p.host_bytes_per_us)
        cpu_move = cpu_safe / 2
        d_cpu = p.delta * cpu_move
        cpu_safe += d_cpu
        cpu_lead = cpu_move + d_cpu

        if iv.time_us[c] > ssd_safe:
            if not looped:
                clear = find_slot(table, table[s] + ssd_move, s, e)
                if clear < 0:  # unreachable for valid traces (artifact asserts)
                    offloaded[c] = True
                    continue
                ssd_open = False  # any GPU->SSD room before the ideal eviction end?
                for j in range(s, clear):
                    if not full[bud.row[DIR_G2S] * K + j]:
                        ssd_open = True
                        break
                if (not ssd_open or host_first) and all_at_most(cpu, K, cpu_line - size):
                    pre = walk_backward_c(bud, DIR_H2G, size, e)
                    evf = walk_forward_c(bud, DIR_G2H, size, s)
                    if pre > evf:
                        push_hint(h, s, iv.tensor[c], HINT_TO_HOST)
                        really[c] = True
                        push_local(loc, c, pre, evf)
                        last = reserve_pcie_c(bud, DIR_H2G, DIR_S2G, size, pre)
                        nch = record(ch, nch, CH_S2G, pre, last)
                        last = reserve_pcie_c(bud, DIR_G2H, DIR_G2S, size, s)
                        nch = record(ch, nch, CH_G2S, s, last)
                        add_wrapped(cpu, K, size, s, e)
                        st.offloads_host += 1
                    else:
                        offloaded[c] = True
                        st.dropped_for_bandwidth += 1
                        continue
                else:
                    pre = walk_backward_c(bud, DIR_S2G, size, e)
                    evf = walk_forward_c(bud, DIR_G2S, size, s)
                    if pre > evf:
                        push_hint(h, s, iv.tensor[c], HINT_TO_SSD)
                        really[c] = True
                        push_local(loc, c, pre, evf)
                        last = reserve_ssd_c(bud, DIR_S2G, DIR_H2G, size, pre)
                        nch = record(ch, nch, CH_S2G, pre, last)
                        last = reserve_ssd_c(bud, DIR_G2S, DIR_G2H, size, s)
                        nch = record(ch, nch, CH_G2S, s, last)
                        st.offloads_ssd += 1
                    else:
                        offloaded[c] = True
                        st.dropped_for_bandwidth += 1
                        continue
                nfl = lower_span(mem, K, line, size, evf + 1, pre, flips, nfl)
                target_stale = target_stale or fell_to(mem, target, size, evf + 1, pre)
                offloaded[c] = True
            else:
                target_stale = True  # a looped offload lowers a wrapped range
                # a global tensor idle across the iteration boundary: time-based only
                clear = find_slot(ext, table[s] + ssd_move, s, e + K)
                pidx = find_slot(ext, ext[e + K] - ssd_lead, s, e + K)
                if clear < 0 or pidx < 0:  # unreachable for valid traces (artifact asserts)
                    offloaded[c] = True
                    continue
                if p.looped_budgets:
                    offloaded[c] = True
                    if not looped_booked_c(c, s, e, size, clear, pidx, True, cpu_move, cpu_lead, ext, table,
                                           bud, cpu, cpu_line, mem, line, flips, &nfl, ch, &nch, iv,
                                           really, &st, h):
                        continue
                else:
                    nfl = looped_time_only_c(c, s, size, clear, pidx, HINT_TO_SSD, mem, K, line, flips, nfl, iv,
                                             really, &st, h)
                offloaded[c] = True
        elif iv.time_us[c] > cpu_safe:
            if not all_at_most(cpu, K, cpu_line - size):
                offloaded[c] = True
                continue
            if not looped:
                evf = walk_forward_c(bud, DIR_G2H, size, s)
                pre = walk_backward_c(bud, DIR_H2G, size, e)
                if pre > evf:
                    push_hint(h, s, iv.tensor[c], HINT_TO_HOST)
                    really[c] = True
                    push_local(loc, c, pre, evf)
                    last = reserve_pcie_c(bud, DIR_H2G, DIR_S2G, size, pre)
                    nch = record(ch, nch, CH_S2G, pre, last)
                    last = reserve_pcie_c(bud, DIR_G2H, DIR_G2S, size, s)
                    nch = record(ch, nch, CH_G2S, s, last)
                    st.offloads_host += 1
                    nfl = lower_span(mem, K, line, size, evf + 1, pre, flips, nfl)
                    target_stale = target_stale or fell_to(mem, target, size, evf + 1, pre)
                else:
                    st.dropped_for_bandwidth += 1
                offloaded[c] = True
            else:
                target_stale = True  # a looped offload lowers a wrapped range
                clear = find_slot(ext, table[s] + cpu_move, s, e + K)
                pidx = find_slot(ext, ext[e + K] - cpu_lead, s, e + K)
                if clear < 0 or pidx < 0:  # unreachable for valid traces (artifact asserts)
                    offloaded[c] = True
                    continue
                if p.looped_budgets:
                    looped_booked_c(c, s, e, size, clear, pidx, False, cpu_move, cpu_lead, ext, table,
                                    bud, cpu, cpu_line, mem, line, flips, &nfl, ch, &nch, iv, really, &st, h)
                else:
                    nfl = looped_time_only_c(c, s, size, clear, pidx, HINT_TO_HOST, mem, K, line, flips, nfl, iv,
                                             really, &st, h)
                offloaded[c] = True
            # quirk copied: host residency is booked even when no offload was emitted
            add_wrapped(cpu, K, size, s, e)
        else:
            # too short for either tier: the artifact leaves it unmarked, so it is chosen again
            # (and again, until the step count runs out); set aside, the pass goes on
            if p.set_aside_short:
                offloaded[c] = True
            elif p.best_by_scan:  # back among the keys, to be chosen again
                push_key(q, ks.tsz, c, taken)
            continue

        if p.best_by_scan:  # the lazy keys re-key themselves; the prefix sums must be current
            if nfl:
                rebuild_prefix(mem, K, line, ks)
            continue
        # invalidate what this step changed (an offloaded interval's key is 0 for good)
        for r in range(nch):
            kind = ch[3 * r]
            lo = ch[3 * r + 1]
            hi = ch[3 * r + 2]
            for i in range(I):
                if not offloaded[i]:
                    dirty[i] |= walk_redo(iv, i, dep, kind, lo, hi)
                    if bud.shared_ssd:  # one SSD budget: both walks read what either booking changed
                        dirty[i] |= walk_redo(iv, i, dep, CH_G2S + CH_S2G - kind, lo, hi)
        if nfl:
            rebuild_prefix(mem, K, line, ks)
            for i in range(I):
                fresh[i] = False
            sort_int64(flips, flips + nfl)
            for i in range(I):
                if exact[i] and not offloaded[i] and crossed_in_range(iv, i, dep, flips, nfl):
                    exact[i] = False
    return st


cdef void place_prefetches_c(int64_t* mem, int64_t target, const int64_t* loc_iv, const int64_t* loc_pre,
                             const int64_t* loc_evf, int64_t n, const int64_t* iv_tensor,
                             const int64_t* iv_size, int64_t* order, double* keys, hint_out* h,
                             cbool whole) noexcept nogil:
    cdef int64_t r, o, pre, evf, c, k, j
    cdef sort_keys by_pre
    for r in range(n):
        order[r] = r
        keys[r] = <double>loc_pre[r]
    by_pre.mode = MODE_LESS
    by_pre.k1 = keys
    by_pre.k2 = keys
    std_sort_c(order, n, &by_pre)
    for r in range(n):
        o = order[r]
        pre = loc_pre[o]
        evf = loc_evf[o]
        c = loc_iv[o]
        k = pre
        # the published test admits kernel k - 1 while its estimate is under the target, before the
        # tensor is added (the plan can then exceed GPU memory); ``whole``: only while the tensor fits
        while k > evf + 1 and ((mem[k - 1] + iv_size[c] <= target) if whole else (target > mem[k - 1])):
            k -= 1
        push_hint(h, k, iv_tensor[c], HINT_TO_GPU)
        for j in range(k, pre):
            mem[j] += iv_size[c]


cdef int64_t shave_peak_c(int64_t* mem, int64_t* perm, const interval_table* iv, cbool* really,
                          int64_t hill_index, int64_t hill_mem, double limit, double* tsz,
                          hint_out* h) noexcept nogil:
    cdef int64_t i, r, c, j, shaved = 0
    cdef sort_keys by_tsz
    for i in range(iv.n):
        tsz[i] = iv.time_us[i] * iv.size[i]
    by_tsz.mode = MODE_GREATER
    by_tsz.k1 = tsz
    by_tsz.k2 = tsz
    std_sort_c(perm, iv.n, &by_tsz)
    for r in range(iv.n):
        if hill_mem < limit:
            break
        c = perm[r]
        if really[c]:
            continue
        if not iv.looped[c] and iv.start[c] <= hill_index and iv.end[c] > hill_index:
            push_hint(h, iv.start[c], iv.tensor[c], HINT_TO_SSD)
            for j in range(iv.start[c] + 1, iv.end[c]):
                mem[j] -= iv.size[c]
            hill_mem -= iv.size[c]
            really[c] = True
            shaved += 1
    return shaved


# ---------------------------------------------------------------------------
# Python entry points: the reference's signatures, shapes checked, then nogil
# ---------------------------------------------------------------------------

cdef inline void _need(bint ok, str what) except *:
    if not ok:
        raise ValueError(f"_g10sched: {what}")


cdef hint_out _hints(int64_t[::1] hk, int64_t[::1] ht, int64_t[::1] ha, int64_t[::1] nh) except *:
    cdef hint_out h
    _need(ht.shape[0] == hk.shape[0] and ha.shape[0] == hk.shape[0], "hk, ht, ha must have one length")
    _need(nh.shape[0] >= 1 and 0 <= nh[0] <= hk.shape[0], "nh[0] must be a row count within hk")
    h.kernel = &hk[0] if hk.shape[0] else NULL
    h.tensor = &ht[0] if ht.shape[0] else NULL
    h.action = &ha[0] if ha.shape[0] else NULL
    h.n = nh[0]
    h.capacity = hk.shape[0]
    h.overflow = 0
    return h


cdef void _hints_done(const hint_out* h, int64_t[::1] nh) except *:
    nh[0] = h.n
    if h.overflow:
        raise RuntimeError("_g10sched: the hint arrays are too short for this schedule")


cdef budgets _budgets(const double[:, ::1] cap, double[:, ::1] est, cbool[:, ::1] full, int64_t K,
                      bint shared_ssd) except *:
    cdef budgets b
    _need(cap.shape[0] == 4 and cap.shape[1] == K and est.shape[0] == 4 and est.shape[1] == K
          and full.shape[0] == 4 and full.shape[1] == K, "cap, est, full must have shape (4, K)")
    b.cap = &cap[0, 0]
    b.est = &est[0, 0]
    b.full = &full[0, 0]
    b.K = K
    b.row[DIR_S2G] = DIR_S2G
    b.row[DIR_G2S] = DIR_S2G if shared_ssd else DIR_G2S
    b.row[DIR_H2G] = DIR_H2G
    b.row[DIR_G2H] = DIR_G2H
    b.shared_ssd = shared_ssd
    b.nxt = NULL
    b.prv = NULL
    return b


cdef void open_sets(budgets* b, int64_t[::1] nxt, int64_t[::1] prv) noexcept nogil:
    """Point ``b``'s disjoint sets of open buckets at ``nxt`` and ``prv`` (4 * (K + 1) each) and
    fill them from ``b.full``."""
    cdef int64_t K = b.K, r, i
    for r in range(4):
        for i in range(K):
            nxt[r * (K + 1) + i] = i + 1 if b.full[r * K + i] else i
            prv[r * (K + 1) + i + 1] = i if b.full[r * K + i] else i + 1
        nxt[r * (K + 1) + K] = K
        prv[r * (K + 1)] = 0
    b.nxt = &nxt[0]
    b.prv = &prv[0]


def open_bucket_sets(const double[:, ::1] cap, double[:, ::1] est, cbool[:, ::1] full):
    """The disjoint sets of ``full``'s open buckets, ``(nxt, prv)``: what the greedy pass keeps to
    skip closed runs.  Pass them as ``sets`` to the walk and booking wrappers (which then use and
    update them, as inside the pass) to test them against the kernel-by-kernel walks."""
    cdef budgets b = _budgets(cap, est, full, cap.shape[1], False)
    nxt = np.empty(4 * (b.K + 1), np.int64)
    prv = np.empty(4 * (b.K + 1), np.int64)
    open_sets(&b, nxt, prv)
    return nxt, prv


cdef void _use_sets(budgets* b, sets) except *:
    cdef int64_t[::1] nxt, prv
    if sets is None:
        return
    nxt, prv = sets
    _need(nxt.shape[0] == 4 * (b.K + 1) and prv.shape[0] == 4 * (b.K + 1), "sets must have 4 * (K + 1) entries each")
    b.nxt = &nxt[0]
    b.prv = &prv[0]


cdef interval_table _intervals(const int64_t[::1] iv_tensor, const int64_t[::1] iv_start,
                               const int64_t[::1] iv_end, const cbool[::1] iv_looped,
                               const double[::1] iv_time, const int64_t[::1] iv_size) except *:
    cdef interval_table t
    cdef Py_ssize_t n = iv_tensor.shape[0]
    _need(iv_start.shape[0] == n and iv_end.shape[0] == n and iv_looped.shape[0] == n
          and iv_time.shape[0] == n and iv_size.shape[0] == n, "the interval arrays must have one length")
    t.n = n
    t.tensor = &iv_tensor[0] if n else NULL
    t.start = &iv_start[0] if n else NULL
    t.end = &iv_end[0] if n else NULL
    t.looped = &iv_looped[0] if n else NULL
    t.time_us = &iv_time[0] if n else NULL
    t.size = &iv_size[0] if n else NULL
    return t


def std_sort(int64_t[::1] p, int mode, const double[::1] k1, const double[::1] k2):
    """Sort index array ``p`` in place exactly as libstdc++'s ``std::sort`` would."""
    cdef sort_keys k
    cdef Py_ssize_t n = p.shape[0], i
    _need(MODE_AREA <= mode <= MODE_GREATER, f"unknown comparator mode {mode}")
    for i in range(n):
        _need(0 <= p[i] < k1.shape[0] and p[i] < k2.shape[0], "p must index k1 and k2")
    if n < 2:
        return
    k.mode = mode
    k.k1 = &k1[0]
    k.k2 = &k2[0]
    with nogil:
        std_sort_c(&p[0], n, &k)


def walk_forward(const double[:, ::1] cap, double[:, ::1] est, cbool[:, ::1] full, int64_t d,
                 int64_t size, int64_t start, bint shared_ssd=False, sets=None):
    """Kernel where ``size`` bytes are through direction ``d``, starting at ``start``
    (``shared_ssd``: GPU->SSD reads and books the SSD->GPU row, ssd.duplex = shared; ``sets``:
    :func:`open_bucket_sets` to walk with, as the greedy pass does)."""
    cdef budgets b = _budgets(cap, est, full, cap.shape[1], shared_ssd)
    _need(0 <= d < 4 and b.K >= 1 and 0 <= start, "bad direction, K or start")
    _use_sets(&b, sets)
    return walk_forward_c(&b, d, size, start)


def walk_backward(const double[:, ::1] cap, double[:, ::1] est, cbool[:, ::1] full, int64_t d,
                  int64_t size, int64_t needed, bint shared_ssd=False, sets=None):
    """Kernel where a transfer of ``size`` bytes must start to be in by ``needed``."""
    cdef budgets b = _budgets(cap, est, full, cap.shape[1], shared_ssd)
    _need(0 <= d < 4 and b.K >= 1 and needed <= b.K, "bad direction, K or needed")
    _use_sets(&b, sets)
    return walk_backward_c(&b, d, size, needed)


def reserve_ssd(const double[:, ::1] cap, double[:, ::1] est, cbool[:, ::1] full, int64_t d,
                int64_t shadow, int64_t size, int64_t start, bint shared_ssd=False, sets=None):
    """Book an SSD transfer from ``start`` on (also into PCIe bucket ``shadow``); last kernel touched."""
    cdef budgets b = _budgets(cap, est, full, cap.shape[1], shared_ssd)
    _need(0 <= d < 4 and 0 <= shadow < 4 and b.K >= 1 and 0 <= start, "bad direction, K or start")
    _use_sets(&b, sets)
    return reserve_ssd_c(&b, d, shadow, size, start)


def reserve_pcie(const double[:, ::1] cap, double[:, ::1] est, cbool[:, ::1] full, int64_t d,
                 int64_t shadow, int64_t size, int64_t start, bint shared_ssd=False, sets=None):
    """Book a host transfer from ``start`` on (artifact quirk on SSD bucket ``shadow``); last kernel touched."""
    cdef budgets b = _budgets(cap, est, full, cap.shape[1], shared_ssd)
    _need(0 <= d < 4 and 0 <= shadow < 4 and b.K >= 1 and 0 <= start, "bad direction, K or start")
    _use_sets(&b, sets)
    return reserve_pcie_c(&b, d, shadow, size, start)


def prealloc_pass(int64_t[::1] mem, const double[::1] table, const int64_t[::1] ptensors,
                  const int64_t[::1] pbirth, const int64_t[::1] pdeath, const int64_t[::1] psize,
                  int64_t target, double malloc_us_per_byte, bint emit,
                  int64_t[::1] hk, int64_t[::1] ht, int64_t[::1] ha, int64_t[::1] nh):
    """Pre-allocation just before birth and pre-free at death, tensor by tensor,
    until the estimate fits under ``target``.  Returns how many tensors it handled."""
    cdef int64_t K = mem.shape[0], N = ptensors.shape[0], handled
    _need(K >= 1 and table.shape[0] == K + 1, "mem must have K >= 1 entries and table K + 1")
    _need(pbirth.shape[0] == N and pdeath.shape[0] == N and psize.shape[0] == N,
          "ptensors, pbirth, pdeath, psize must have one length")
    cdef hint_out h = _hints(hk, ht, ha, nh)
    if N == 0:
        return 0
    cdef int64_t[::1] change = np.zeros(K + 1, np.int64)
    with nogil:
        handled = prealloc_pass_c(&mem[0], K, &table[0], &ptensors[0], &pbirth[0], &pdeath[0],
                                  &psize[0], N, target, malloc_us_per_byte, emit, &h, &change[0])
    _hints_done(&h, nh)
    return handled


def greedy_pass(int64_t[::1] mem, int64_t[::1] cpu, const double[::1] table, const double[::1] ext,
                const double[:, ::1] cap, double[:, ::1] est, cbool[:, ::1] full,
                const int64_t[::1] iv_tensor, const int64_t[::1] iv_start, const int64_t[::1] iv_end,
                const cbool[::1] iv_looped, const double[::1] iv_time, const int64_t[::1] iv_size,
                params, int64_t[::1] perm, cbool[::1] offloaded, cbool[::1] really,
                int64_t[::1] loc_iv, int64_t[::1] loc_pre, int64_t[::1] loc_evf, int64_t[::1] n_loc,
                int64_t[::1] hk, int64_t[::1] ht, int64_t[::1] ha, int64_t[::1] nh):
    """Greedy offloading of inactive intervals (the artifact's cold-period loop).

    ``params``: a mapping with the keys of ``greedy_params`` (above).  Returns the
    statistics, a dict with the keys of ``greedy_stats``; ``end`` is one of
    GREEDY_FITS, GREEDY_TAKEN, GREEDY_EXHAUSTED."""
    cdef greedy_params p = params    # a missing key is a ValueError naming it
    cdef greedy_stats st
    cdef int64_t K = mem.shape[0]
    cdef Py_ssize_t I = iv_tensor.shape[0]
    _need(K >= 1 and cpu.shape[0] == K and table.shape[0] == K + 1 and ext.shape[0] >= 2 * K + 1,
          "mem, cpu need K >= 1 entries, table K + 1, ext 2 K + 1")
    cdef budgets bud = _budgets(cap, est, full, K, p.shared_ssd)
    cdef int64_t[::1] open_nxt = np.empty(4 * (K + 1), np.int64)
    cdef int64_t[::1] open_prv = np.empty(4 * (K + 1), np.int64)
    open_sets(&bud, open_nxt, open_prv)
    cdef interval_table iv = _intervals(iv_tensor, iv_start, iv_end, iv_looped, iv_time, iv_size)
    _need(perm.shape[0] == I and offloaded.shape[0] == I and really.shape[0] == I
          and loc_iv.shape[0] == I and loc_pre.shape[0] == I and loc_evf.shape[0] == I,
          "perm, offloaded, really, loc_iv, loc_pre, loc_evf must have one entry per interval")
    _need(n_loc.shape[0] >= 1 and n_loc[0] == 0, "n_loc[0] must be 0")
    cdef hint_out h = _hints(hk, ht, ha, nh)
    if I == 0:
        memset(&st, 0, sizeof(st))
        st.end = END_FITS if all_at_most(&mem[0], K, p.target_bytes) else END_EXHAUSTED
        return st
    # scratch, allocated once (the cost is O(I + K), as is one greedy step)
    cdef double[::1] f_A = np.zeros(I, np.float64), f_B = np.zeros(I, np.float64)
    cdef double[::1] f_tsz = np.empty(I, np.float64), f_lo = np.empty(I, np.float64)
    cdef double[::1] f_hi = np.empty(I, np.float64)
    cdef cbool[::1] b_exact = np.zeros(I, np.bool_), b_fresh = np.zeros(I, np.bool_)
    cdef int64_t[::1] i_dirty = np.empty(I, np.int64), i_order = np.empty(I, np.int64)
    cdef int64_t[::1] i_dep = np.empty(2 * I, np.int64), i_span = np.empty(3 * I, np.int64)
    cdef double[::1] f_step = np.empty(K, np.float64)
    cdef double[::1] f_M = np.empty(K + 1, np.float64), f_M2 = np.empty(K + 1, np.float64)
    cdef int64_t[::1] i_C = np.empty(K + 1, np.int64), i_C2 = np.empty(K + 1, np.int64)
    cdef int64_t[::1] i_on = np.empty(K + 1, np.int64), i_on2 = np.empty(K + 1, np.int64)
    cdef int64_t[::1] i_ch = np.empty(3 * CH_MAX, np.int64), i_flips = np.empty(K, np.int64)
    cdef double[::1] f_At = np.zeros(I, np.float64), f_Bt = np.zeros(I, np.float64)
    cdef double[::1] f_Mt = np.empty(K + 1, np.float64), f_M2t = np.empty(K + 1, np.float64)
    cdef int64_t[::1] i_Ct = np.empty(K + 1, np.int64), i_C2t = np.empty(K + 1, np.int64)
    cdef int64_t[::1] i_ont = np.empty(K + 1, np.int64), i_on2t = np.empty(K + 1, np.int64)
    cdef area_keys ks, kt, kh
    ks.A = &f_A[0]
    ks.B = &f_B[0]
    ks.exact = &b_exact[0]
    ks.fresh = &b_fresh[0]
    ks.dirty = &i_dirty[0]
    ks.dep = &i_dep[0]
    ks.tsz = &f_tsz[0]
    ks.order = &i_order[0]
    ks.lo = &f_lo[0]
    ks.hi = &f_hi[0]
    ks.span = &i_span[0]
    ks.step_us = &f_step[0]
    ks.M = &f_M[0]
    ks.C = &i_C[0]
    ks.M2 = &f_M2[0]
    ks.C2 = &i_C2[0]
    ks.on = &i_on[0]
    ks.on2 = &i_on2[0]
    ks.ch = &i_ch[0]
    ks.flips = &i_flips[0]
    # best_by_scan: the lazy keys over GPU memory and over the target (cap > I: room for the
    # stale entries of one re-keying of the looped intervals before a compaction)
    cdef int64_t heap_cap = 2 * I + 16
    cdef double[::1] f_qk = np.empty(heap_cap, np.float64), f_qkt = np.empty(heap_cap, np.float64)
    cdef int64_t[::1] i_qi = np.empty(heap_cap, np.int64), i_qit = np.empty(heap_cap, np.int64)
    cdef int64_t[::1] i_qv = np.empty(heap_cap, np.int64), i_qvt = np.empty(heap_cap, np.int64)
    cdef int64_t[::1] i_ql = np.zeros(I, np.int64), i_qlt = np.zeros(I, np.int64)
    cdef lazy_keys q_line, q_target
    # the keys over the target line (best_by_scan): their own prefix sums, the same walks
    kt = ks
    kt.A = &f_At[0]
    kt.B = &f_Bt[0]
    kt.M = &f_Mt[0]
    kt.C = &i_Ct[0]
    kt.M2 = &f_M2t[0]
    kt.C2 = &i_C2t[0]
    kt.on = &i_ont[0]
    kt.on2 = &i_on2t[0]
    q_line.key, q_line.item, q_line.ver, q_line.live = &f_qk[0], &i_qi[0], &i_qv[0], &i_ql[0]
    q_target.key, q_target.item, q_target.ver, q_target.live = &f_qkt[0], &i_qit[0], &i_qvt[0], &i_qlt[0]
    q_line.n = q_target.n = 0
    q_line.cap = q_target.cap = heap_cap
    q_line.line, q_target.line = p.gpu_memory_bytes, p.target_bytes
    q_line.built = q_target.built = False
    q_line.over0 = q_target.over0 = False
    q_line.ks, q_target.ks = &ks, &kt
    # over the target, an interval may lower a kernel by the host link where the SSD's walks
    # reach past it (a slow SSD): its key is the larger of the two (with host memory to offload to)
    cdef int64_t[::1] i_dep_host = np.full(2 * I, -1, np.int64)
    kh = kt
    kh.dep = &i_dep_host[0]
    q_line.kh = NULL
    q_target.kh = &kh if p.host_memory_bytes > 0 else NULL
    cdef local_offloads loc
    loc.interval = &loc_iv[0]
    loc.pre = &loc_pre[0]
    loc.evf = &loc_evf[0]
    loc.n = 0
    with nogil:
        st = greedy_pass_c(&mem[0], &cpu[0], &table[0], &ext[0], &bud, &iv, &ks, &kt, &q_line, &q_target,
                           p, &perm[0], &offloaded[0], &really[0], &loc, &h)
    n_loc[0] = loc.n
    _hints_done(&h, nh)
    return st


def place_prefetches(int64_t[::1] mem, int64_t target, const int64_t[::1] loc_iv, const int64_t[::1] loc_pre,
                     const int64_t[::1] loc_evf, const int64_t[::1] iv_tensor, const int64_t[::1] iv_size,
                     int64_t[::1] hk, int64_t[::1] ht, int64_t[::1] ha, int64_t[::1] nh, bint whole=False):
    """Move each local offload's prefetch as early as the memory estimate allows.

    ``whole=False`` (the published test): a kernel is taken while its estimate is under the
    target before the tensor is added; ``whole=True``: only while the estimate plus the tensor
    stays within the target."""
    cdef Py_ssize_t n = loc_iv.shape[0]
    _need(mem.shape[0] >= 1 and loc_pre.shape[0] == n and loc_evf.shape[0] == n
          and iv_size.shape[0] == iv_tensor.shape[0], "loc_* must have one length, iv_* another")
    cdef hint_out h = _hints(hk, ht, ha, nh)
    if n == 0:
        return
    cdef int64_t[::1] order = np.empty(n, np.int64)
    cdef double[::1] keys = np.empty(n, np.float64)
    with nogil:
        place_prefetches_c(&mem[0], target, &loc_iv[0], &loc_pre[0], &loc_evf[0], n, &iv_tensor[0],
                           &iv_size[0], &order[0], &keys[0], &h, whole)
    _hints_done(&h, nh)


def shave_peak(int64_t[::1] mem, int64_t[::1] perm, const int64_t[::1] iv_tensor, const int64_t[::1] iv_start,
               const int64_t[::1] iv_end, const cbool[::1] iv_looped, const double[::1] iv_time,
               const int64_t[::1] iv_size, cbool[::1] really, int64_t hill_index, int64_t hill_mem,
               double limit, int64_t[::1] hk, int64_t[::1] ht, int64_t[::1] ha, int64_t[::1] nh):
    """GDS baselines: pre-evict intervals that span the peak kernel until it is under
    ``limit``, largest time*size first (on the greedy pass's final order)."""
    cdef interval_table iv = _intervals(iv_tensor, iv_start, iv_end, iv_looped, iv_time, iv_size)
    _need(mem.shape[0] >= 1 and perm.shape[0] == iv.n and really.shape[0] == iv.n,
          "perm and really must have one entry per interval")
    cdef hint_out h = _hints(hk, ht, ha, nh)
    cdef int64_t shaved
    if iv.n == 0:
        return 0
    cdef double[::1] tsz = np.empty(iv.n, np.float64)
    with nogil:
        shaved = shave_peak_c(&mem[0], &perm[0], &iv, &really[0], hill_index, hill_mem, limit, &tsz[0], &h)
    _hints_done(&h, nh)
    return shaved


def sort_hints(const int64_t[::1] hk):
    """Order of the hint vector after the artifact's final std::sort by issue kernel."""
    cdef Py_ssize_t n = hk.shape[0], i
    order_arr = np.arange(n, dtype=np.int64)
    cdef int64_t[::1] order = order_arr
    cdef double[::1] keys = np.empty(n, np.float64)
    cdef sort_keys k
    if n < 2:
        return order_arr
    for i in range(n):
        keys[i] = <double>hk[i]
    k.mode = MODE_LESS
    k.k1 = &keys[0]
    k.k2 = &keys[0]
    with nogil:
        std_sort_c(&order[0], n, &k)
    return order_arr
