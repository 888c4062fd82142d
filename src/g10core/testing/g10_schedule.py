"""Array kernels of the G10 smart-migration scheduler: the plain-Python reference.

``g10.py`` runs the compiled twin of this module, ``g10core.policies._g10sched`` (Cython: the
same functions, arguments and results, bit for bit).  This one is the readable
statement of the semantics and the oracle of ``tests/test_g10_kernels.py``, which
checks the two against each other on random inputs and real traces (the msgpack
"fallback" pattern).  It is plain Python and numpy, hence slow (seconds per real
workload); nothing here is on the path a user runs.  Inputs are trusted: ``g10.py``
validates the trace and configuration first.

Why the decisions are the published scheduler's, ties included
--------------------------------------------------------------
* Integer and float semantics are the artifact's: byte counts walking over the
  bandwidth budgets are int64 and each step ``rest -= capacity - used`` truncates
  toward zero (C++ ``long -= double``); capacities, times and areas are float64 in
  the artifact's order of operations (kernel durations as differences of the
  cumulative time table, areas as left-to-right sums).
* Each greedy step the artifact ``std::sort``-s every interval with a comparator that
  recomputes both areas (O(K) each), and takes the first.  Ties are common (every
  area is 0 once the estimate is under GPU memory but over the target; intervals of
  equal size and window have bit-equal areas), and then the choice depends on the
  permutation, hence on every earlier sort.  We therefore run the same sort: an
  exact emulation of libstdc++'s introsort (``std_sort``, checked against the real
  one in the tests) on the same input order, every step.  Its result depends only
  on the outcomes of the comparisons it makes, and we make every outcome equal to
  the one on the artifact's exact keys, at O(1) per comparison:
  - each key is cached and updated only when something it reads changed: a budget
    walk that ends elsewhere, a kernel of its window whose estimate fell to GPU
    memory (each kernel does so at most once, the estimate only decreases), or its
    offloaded flag;
  - a key is kept as an approximation from prefix sums with a rigorous error bound
    (``BOUND_UNIT``); two keys whose bounds, padded by the comparator's 1e-6
    tolerance, do not overlap compare as their exact values would;
  - within a cluster of overlapping keys that all provably have bit-identical exact
    values (same size, same first and last nonzero term: ``_term_span``) every
    comparison takes the comparator's tie branch either way; any other cluster, and
    any key that might be 0, gets its exact left-to-right sum (``_exact_area``).
  ``exact_keys=True`` computes every exact sum instead (the reference mode the
  tests compare against on all shipped workloads).
* The other sorts of the artifact (offloads by prefetch kernel, GDS intervals by
  time x size, the final hint list by kernel) are emulated the same way, so the
  hint order, which decides the order pages are queued, is the published one.
"""
from __future__ import annotations

import heapq

import numpy as np

IMPLEMENTATION = "reference"

# budget directions (rows of cap/est/full)
S2G = 0  # SSD -> GPU (prefetch from SSD)
G2S = 1  # GPU -> SSD (pre-evict to SSD)
H2G = 2  # host -> GPU over PCIe
G2H = 3  # GPU -> host over PCIe


def budget_row(d, shared_ssd):
    """The row of cap/est/full that direction ``d`` reads and books: its own, or with a shared
    SSD (ssd.duplex = shared) the SSD->GPU row for GPU->SSD too, so that the SSD's reads and
    writes draw on one budget per kernel."""
    return S2G if shared_ssd and d == G2S else d

# hint actions, equal to g10core.policies.HINT_*
A_TO_GPU = 0
A_TO_SSD = 1
A_TO_HOST = 2
A_FREE = 3

# comparator modes of the sort emulation
CMP_AREA = 0    # the greedy comparator: larger area first, near-equal areas by time*size
CMP_LESS = 1    # k1 ascending (hint issue kernel, prefetch index)
CMP_GREATER = 2  # k1 descending (time*size)

THRESHOLD = 16  # libstdc++ _S_threshold

# greedy_pass: the keys of its ``params`` and of the statistics it returns (the
# fields of the compiled module's greedy_params and greedy_stats structs)
GREEDY_PARAMS = (
    "gpu_memory_bytes",    # the line: a key sums the time each kernel's estimate is above it
    "target_bytes",        # the pass stops once every kernel's estimate is under this
    "host_memory_bytes",   # host memory the host offloads may fill
    "ssd_latency_us",      # SSD access latency
    "system_latency_us",   # system latency of one transfer
    "ssd_bytes_per_us",    # SSD bandwidth
    "host_bytes_per_us",   # host link (PCIe) bandwidth
    "delta",               # safety margin, a fraction of the move time
    "exact_keys",          # every key summed exactly (slower), not only near ties
    "looped_budgets",      # a looped offload books the bandwidth budgets (False: the artifact's time test)
    "shared_ssd",          # SSD reads and writes book one budget (ssd.duplex = shared; False: the artifact's two)
    "set_aside_short",     # an interval too short for either tier is not chosen again (False: the artifact's loop)
    "best_by_scan",        # a step takes the best key by lazy keys in a heap (False: the artifact's std::sort);
                           # when no key is over the GPU-memory line, keys over the target line
)
GREEDY_STATS = (
    "steps",                  # greedy steps begun (each sorts the keys once)
    "area_sums_exact",        # keys summed exactly
    "area_approximations",    # keys approximated from the prefix sums
    "sorts",                  # emulated std::sorts of the keys
    "offloads_ssd",           # local offloads to SSD
    "offloads_host",          # local offloads to host memory
    "offloads_looped",        # offloads of intervals across the iteration boundary
    "dropped_for_bandwidth",  # chosen, but no bandwidth to move it out and back in time
    "end",                    # GREEDY_*: why the pass stopped
)
GREEDY_FITS = 0        # every kernel's estimate is under the target
GREEDY_TAKEN = 1       # the best key is an interval already handled (best_by_scan: no key is positive)
GREEDY_EXHAUSTED = 2   # one step per interval taken


# ---------------------------------------------------------------------------
# exact emulation of libstdc++ std::sort on an index array
# ---------------------------------------------------------------------------

def _before(mode, x, y, k1, k2):
    """comp(x, y) of the emulated sort: does element x go before element y?"""
    if mode == CMP_AREA:
        d = k1[x] - k1[y]
        if d < 0.000001 and d > -0.000001 and k1[x] != 0.0 and k1[y] != 0.0:
            return k2[x] > k2[y]
        return k1[x] > k1[y]
    if mode == CMP_LESS:
        return k1[x] < k1[y]
    return k1[x] > k1[y]


def _adjust_heap(p, first, hole, length, value, mode, k1, k2):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _before(mode, p[first + child], p[first + child - 1], k1, k2):
            child -= 1
        p[first + hole] = p[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        p[first + hole] = p[first + child - 1]
        hole = child - 1
    # push_heap
    parent = (hole - 1) // 2
    while hole > top and _before(mode, p[first + parent], value, k1, k2):
        p[first + hole] = p[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    p[first + hole] = value


def _heap_sort(p, first, last, mode, k1, k2):
    """std::__partial_sort(first, last, last): make_heap then sort_heap."""
    length = last - first
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _adjust_heap(p, first, parent, length, p[first + parent], mode, k1, k2)
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        value = p[last]
        p[last] = p[first]
        _adjust_heap(p, first, 0, last - first, value, mode, k1, k2)


def _swap(p, i, j):
    t = p[i]
    p[i] = p[j]
    p[j] = t


def _partition_pivot(p, first, last, mode, k1, k2):
    mid = first + (last - first) // 2
    a, b, c = first + 1, mid, last - 1
    # __move_median_to_first(first, a, b, c)
    if _before(mode, p[a], p[b], k1, k2):
        if _before(mode, p[b], p[c], k1, k2):
            _swap(p, first, b)
        elif _before(mode, p[a], p[c], k1, k2):
            _swap(p, first, c)
        else:
            _swap(p, first, a)
    elif _before(mode, p[a], p[c], k1, k2):
        _swap(p, first, a)
    elif _before(mode, p[b], p[c], k1, k2):
        _swap(p, first, c)
    else:
        _swap(p, first, b)
    # __unguarded_partition(first + 1, last, pivot = first); the bounds guards only
    # matter for an inconsistent comparator, where C++ would read out of range
    lo, hi, pv = first + 1, last, p[first]
    while True:
        while lo < last - 1 and _before(mode, p[lo], pv, k1, k2):
            lo += 1
        hi -= 1
        while hi > first and _before(mode, pv, p[hi], k1, k2):
            hi -= 1
        if not lo < hi:
            return lo
        _swap(p, lo, hi)
        lo += 1


def _linear_insert(p, i, lo, mode, k1, k2):
    """__unguarded_linear_insert (guarded at ``lo`` for safety)."""
    value = p[i]
    j = i - 1
    while j >= lo and _before(mode, value, p[j], k1, k2):
        p[j + 1] = p[j]
        j -= 1
    p[j + 1] = value


def _insertion_sort(p, first, last, mode, k1, k2):
    for i in range(first + 1, last):
        if _before(mode, p[i], p[first], k1, k2):
            value = p[i]
            for j in range(i, first, -1):
                p[j] = p[j - 1]
            p[first] = value
        else:
            _linear_insert(p, i, first, mode, k1, k2)


def std_sort(p, mode, k1, k2):
    """Sort index array ``p`` in place exactly as libstdc++'s ``std::sort`` would."""
    n = p.shape[0]
    if n < 2:
        return
    depth0 = 0
    m = n
    while m > 1:  # 2 * __lg(n)
        m >>= 1
        depth0 += 1
    depth0 *= 2
    # __introsort_loop with an explicit stack; the segments it leaves are disjoint,
    # so processing order does not change the result
    stack = np.empty((2 * 64 + 8, 3), np.int64)
    top = 0
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, n, depth0
    top = 1
    while top > 0:
        top -= 1
        first, last, depth = stack[top, 0], stack[top, 1], stack[top, 2]
        while last - first > THRESHOLD:
            if depth == 0:
                _heap_sort(p, first, last, mode, k1, k2)
                break
            depth -= 1
            cut = _partition_pivot(p, first, last, mode, k1, k2)
            stack[top, 0], stack[top, 1], stack[top, 2] = cut, last, depth
            top += 1
            last = cut
    # __final_insertion_sort
    if n > THRESHOLD:
        _insertion_sort(p, 0, THRESHOLD, mode, k1, k2)
        for i in range(THRESHOLD, n):
            _linear_insert(p, i, 0, mode, k1, k2)
    else:
        _insertion_sort(p, 0, n, mode, k1, k2)


# ---------------------------------------------------------------------------
# bandwidth budgets (one bucket per kernel and direction)
# ---------------------------------------------------------------------------

def walk_forward(cap, est, full, d, size, start, shared_ssd=False):
    """Kernel where ``size`` bytes are through direction ``d``, starting at ``start``
    (``shared_ssd``: in the row :func:`budget_row` gives)."""
    d = budget_row(d, shared_ssd)
    K = cap.shape[1]
    rest = size
    i = start
    while rest > 0 and i < K:
        if not full[d, i]:
            rest = int(rest - (cap[d, i] - est[d, i]))
        if rest <= 0 or i == K - 1:
            break
        i += 1
    return i


def walk_backward(cap, est, full, d, size, needed, shared_ssd=False):
    """Kernel where a transfer of ``size`` bytes must start to be in by ``needed``."""
    d = budget_row(d, shared_ssd)
    rest = size
    i = needed - 1
    while rest > 0 and i >= 0:
        if not full[d, i]:
            rest = int(rest - (cap[d, i] - est[d, i]))
        if rest <= 0 or i == 0:
            break
        i -= 1
    return i


def reserve_ssd(cap, est, full, d, shadow, size, start, shared_ssd=False):
    """Book an SSD transfer from ``start`` on; it also fills the PCIe bucket ``shadow``.

    Returns the last kernel touched."""
    d, shadow = budget_row(d, shared_ssd), budget_row(shadow, shared_ssd)
    K = cap.shape[1]
    rest = size
    i = start
    while rest > 0 and i < K:
        if not full[d, i]:
            if rest + est[d, i] > cap[d, i]:
                room = cap[d, i] - est[d, i]
                rest = int(rest - room)
                est[shadow, i] += room
                if est[shadow, i] >= cap[shadow, i]:
                    full[shadow, i] = True
                est[d, i] = cap[d, i]
                full[d, i] = True
            else:
                est[d, i] += rest
                est[shadow, i] += rest
                if est[shadow, i] >= cap[shadow, i]:
                    full[shadow, i] = True
                rest = -1
        if rest <= 0 or i == K - 1:
            break
        i += 1
    return i


def reserve_pcie(cap, est, full, d, shadow, size, start, shared_ssd=False):
    """Book a host transfer from ``start`` on.  Quirk copied from the artifact: once the
    PCIe bucket is past ``cap_pcie - cap_ssd``, the whole excess (not the increment) is
    added to the SSD bucket ``shadow``.  Returns the last kernel touched."""
    d, shadow = budget_row(d, shared_ssd), budget_row(shadow, shared_ssd)
    K = cap.shape[1]
    rest = size
    i = start
    while rest > 0 and i < K:
        if not full[d, i]:
            if rest + est[d, i] > cap[d, i]:
                rest = int(rest - (cap[d, i] - est[d, i]))
                est[d, i] = cap[d, i]
                full[d, i] = True
                est[shadow, i] = cap[shadow, i]
                full[shadow, i] = True
            else:
                est[d, i] += rest
                if est[d, i] >= cap[d, i] - cap[shadow, i]:
                    est[shadow, i] += est[d, i] - (cap[d, i] - cap[shadow, i])
                    if est[shadow, i] >= cap[shadow, i]:
                        est[shadow, i] = cap[shadow, i]
                        full[shadow, i] = True
                rest = -1
        if rest <= 0 or i == K - 1:
            break
        i += 1
    return i


def _find_slot(table, t, lo, hi):
    """First j in [lo, hi) with table[j] <= t < table[j+1], or -1."""
    for j in range(lo, hi):
        if table[j] <= t and table[j + 1] > t:
            return j
    return -1


# Budget walks and bookings over a looped interval's two-iteration index range: index x is
# kernel x % K (the budgets are one steady-state iteration's).  Not in the artifact, whose
# looped offloads test time only (``looped_budgets``).

def walk_forward_wrapped(cap, est, full, d, size, start, last):
    """Index in [start, last] where ``size`` bytes are through direction ``d`` (``last`` if never)."""
    K = cap.shape[1]
    rest = size
    x = start
    while rest > 0 and x <= last:
        i = x % K
        if not full[d, i]:
            rest = int(rest - (cap[d, i] - est[d, i]))
        if rest <= 0 or x == last:
            break
        x += 1
    return x


def walk_backward_wrapped(cap, est, full, d, size, needed, first):
    """Index in [first, needed) where a transfer of ``size`` bytes must start to be in by
    ``needed`` (``first`` if never)."""
    K = cap.shape[1]
    rest = size
    x = needed - 1
    while rest > 0 and x >= first:
        i = x % K
        if not full[d, i]:
            rest = int(rest - (cap[d, i] - est[d, i]))
        if rest <= 0 or x == first:
            break
        x -= 1
    return x


def reserve_wrapped(cap, est, full, d, shadow, size, start, ssd):
    """Book ``size`` bytes through ``d`` from index ``start`` on, over at most one iteration
    (``reserve_ssd``'s buckets when ``ssd``, else ``reserve_pcie``'s).  Returns the last index touched."""
    K = cap.shape[1]
    rest = size
    x = start
    while rest > 0:
        i = x % K
        if not full[d, i]:
            if rest + est[d, i] > cap[d, i]:
                room = cap[d, i] - est[d, i]
                rest = int(rest - room)
                if ssd:
                    est[shadow, i] += room
                    if est[shadow, i] >= cap[shadow, i]:
                        full[shadow, i] = True
                else:
                    est[shadow, i] = cap[shadow, i]
                    full[shadow, i] = True
                est[d, i] = cap[d, i]
                full[d, i] = True
            else:
                est[d, i] += rest
                if ssd:
                    est[shadow, i] += rest
                    if est[shadow, i] >= cap[shadow, i]:
                        full[shadow, i] = True
                elif est[d, i] >= cap[d, i] - cap[shadow, i]:
                    est[shadow, i] += est[d, i] - (cap[d, i] - cap[shadow, i])
                    if est[shadow, i] >= cap[shadow, i]:
                        est[shadow, i] = cap[shadow, i]
                        full[shadow, i] = True
                rest = -1
        if rest <= 0 or x == start + K - 1:
            break
        x += 1
    return x


def _record_wrapped(ch, nch, kind, lo, hi, K):
    """Record the changed index range [lo, hi] (at most K long) as one or two kernel ranges."""
    hi -= lo - lo % K
    lo %= K
    if hi < K:
        return _record(ch, nch, kind, lo, hi)
    nch = _record(ch, nch, kind, lo, K - 1)
    return _record(ch, nch, kind, 0, hi - K)


def _all_at_most(arr, line):
    for k in range(arr.shape[0]):
        if arr[k] > line:
            return False
    return True


def _span_at_most(mem, line, start, end):
    """check_GPU_OK_interval: mem <= line over [start, end), wrapping when end < start."""
    K = mem.shape[0]
    if end < start:
        end += K
    for i in range(start, end):
        if mem[i % K] > line:
            return False
    return True


def _add_wrapped(arr, value, start, end):
    K = arr.shape[0]
    if end < start:
        end += K
    for i in range(start, end):
        arr[i % K] += value


# ---------------------------------------------------------------------------
# the scheduler
# ---------------------------------------------------------------------------

def _push_hint(hk, ht, ha, n, kernel, tensor, action):
    c = n[0]
    hk[c] = kernel
    ht[c] = tensor
    ha[c] = action
    n[0] = c + 1


# Keys of the greedy sort.  The artifact's key ("reducible area") of an interval is
# a left-to-right float sum over up to K kernels.  We keep an O(1) approximation
# from prefix sums with a rigorous error bound and compute the exact sum only for
# intervals whose key might compare differently with the exact value: those whose
# uncertainty interval (padded by the comparator's 1e-6 tolerance) overlaps
# another interval's.  Every comparison the sort makes then has the outcome it has
# on the exact keys, so the permutation is the artifact's.
RE_FORWARD = 1   # dirty bit: redo the GPU->SSD walk from the start
RE_BACKWARD = 2  # dirty bit: redo the SSD->GPU walk back from the end
RE_ALL = 3
# |exact - approximation| <= size * T[K] * (K + 4) * 2^-48.  Derivation: with
# u = 2^-53, the exact sum of n <= K rounded products has error <= (n+1)u*size*S,
# S = sum of |time steps| <= 3 T[K]; the prefix-sum form adds <= (6K + 12)u*size*T[K];
# together <= (9K + 20)u*size*T[K] * 1.01, which 32(K + 4)u covers.
BOUND_UNIT = 2.0 ** -48
TIE_PAD = 0.000001  # the comparator's tolerance


def _exact_area(i, iv_start, iv_end, iv_looped, iv_size, dep, mem, table, line):
    """The artifact's area of interval i, bit for bit (its own left-to-right sum)."""
    K = mem.shape[0]
    s, e, size = iv_start[i], iv_end[i], iv_size[i]
    a = 0.0
    if iv_looped[i]:
        # quirk copied: the artifact sums j over [s, e+K) with the time step
        # T[(j+1) % (K+1)] - T[j % (K+1)]; at j = K that is T[0] - T[K], so kernel 0
        # over the line contributes -size * T[K], and after it the steps lag the
        # kernels by one.  The same terms in the same order, modulos resolved:
        for j in range(s, K):
            if mem[j] > line:
                a += size * (table[j + 1] - table[j])
        if e > 0 and mem[0] > line:
            a += size * (table[0] - table[K])
        for j in range(1, e):
            if mem[j] > line:
                a += size * (table[j] - table[j - 1])
    else:
        for j in range(dep[i, 0], dep[i, 1]):
            if mem[j] > line:
                a += size * (table[j + 1] - table[j])
    return a


def _rebuild_prefix(mem, line, step, M, C, M2, C2, on, on2):
    """Prefix sums (M) and counts (C) of the kernel time steps over the line; M2/C2 the
    same with the step lagging by one kernel (the tail of a looped interval's sum).
    ``on``/``on2``: the kernels whose term is nonzero in each form, ascending, with
    their count in the last slot."""
    K = mem.shape[0]
    M[0] = 0.0
    C[0] = 0
    M2[0] = 0.0
    C2[0] = 0
    if K >= 1:
        M2[1] = 0.0
        C2[1] = 0
    n, n2 = 0, 0
    for j in range(K):
        over = mem[j] > line
        M[j + 1] = M[j] + (step[j] if over else 0.0)
        C[j + 1] = C[j] + (1 if over and step[j] > 0 else 0)
        if over and step[j] > 0:
            on[n] = j
            n += 1
        if j >= 1:
            M2[j + 1] = M2[j] + (step[j - 1] if over else 0.0)
            C2[j + 1] = C2[j] + (1 if over and step[j - 1] > 0 else 0)
            if over and step[j - 1] > 0:
                on2[n2] = j
                n2 += 1
    on[K] = n
    on2[K] = n2


def _approx_area(i, iv_start, iv_end, iv_looped, iv_size, dep, mem, line, M, C, M2, C2,
                 total_time, bound_per_byte):
    """(approximate area, error bound) of interval i; a bound of 0 means the area is
    exactly 0.0 (no term of its sum is nonzero)."""
    K = mem.shape[0]
    size = iv_size[i]
    if iv_looped[i]:
        s, e = iv_start[i], iv_end[i]
        n = C[K] - C[s]
        part = M[K] - M[s]
        if e > 0 and mem[0] > line and total_time > 0:
            n += 1
            part += -total_time
        if e > 1:
            n += C2[e] - C2[1]
            part += M2[e] - M2[1]
    else:
        om, pm = dep[i, 0], dep[i, 1]
        if pm <= om:
            return 0.0, 0.0
        n = C[pm] - C[om]
        part = M[pm] - M[om]
    if n == 0:
        return 0.0, 0.0
    return size * part, size * bound_per_byte


def _term_span(i, iv_start, iv_end, iv_looped, dep, mem, line, total_time, on, on2):
    """(first, last, wrap) identifying the nonzero terms of interval i's sum.

    Two intervals of the same size and looped-ness with equal spans add the same
    terms in the same order (a zero term leaves a sum unchanged), so their exact sums
    are bit-identical, and so are their approximations (a prefix sum does not move
    over zero terms).  (-1, -1, 0): no nonzero term."""
    K = mem.shape[0]
    if iv_looped[i]:
        s, e = iv_start[i], iv_end[i]
        r = np.searchsorted(on[:on[K]], s)
        first = on[r] if r < on[K] else K
        wrap = 1 if e > 0 and mem[0] > line and total_time > 0 else 0
        r2 = np.searchsorted(on2[:on2[K]], e) - 1  # last kernel < e (all are >= 1)
        last = on2[r2] if r2 >= 0 else 0
        if first == K and wrap == 0 and last == 0:
            return -1, -1, 0
        return first, last, wrap
    om, pm = dep[i, 0], dep[i, 1]
    r = np.searchsorted(on[:on[K]], om)
    if r >= on[K] or on[r] >= pm:
        return -1, -1, 0
    r2 = np.searchsorted(on[:on[K]], pm) - 1
    return on[r], on[r2], 0


def _resolve_near_ties(A, B, exact, iv_start, iv_end, iv_looped, iv_size, dep, mem, table, line,
                       on, on2, order):
    """Make exact every key whose comparisons the approximations cannot decide.

    Padded intervals [A - B - pad, A + B + pad] that overlap form clusters.  Inside a
    cluster of one class (same size, looped-ness and term span: bit-identical exact
    keys) every comparison takes the comparator's tie branch either way, so nothing
    is needed; a cluster that mixes classes is made exact, and so is any key that
    might be 0.  Returns how many exact sums it computed."""
    I = A.shape[0]
    K = mem.shape[0]
    lo = np.empty(I, np.float64)
    hi = np.empty(I, np.float64)
    for i in range(I):
        # pad: bound, tolerance, and the rounding of these very operations
        pad = B[i] + TIE_PAD + 8 * BOUND_UNIT * (abs(A[i]) + B[i]) + 1e-9
        lo[i] = A[i] - pad
        hi[i] = A[i] + pad
    # ``order`` (kept between steps) is nearly sorted by ``lo``: repair it by insertion,
    # unless too much moved
    moves = 0
    for t in range(1, I):
        v = order[t]
        u = t - 1
        while u >= 0 and lo[order[u]] > lo[v]:
            order[u + 1] = order[u]
            u -= 1
            moves += 1
        order[u + 1] = v
        if moves > 16 * I:
            order[:] = np.argsort(lo)
            break
    span = np.empty((I, 3), np.int64)
    done = 0
    r = 0
    while r < I:
        q = r + 1
        top = hi[order[r]]
        while q < I and lo[order[q]] <= top:
            top = max(top, hi[order[q]])
            q += 1
        mixed = False
        if q - r > 1:
            for t in range(r, q):
                i = order[t]
                f, l, w = _term_span(i, iv_start, iv_end, iv_looped, dep, mem, line, table[K], on, on2)
                span[i, 0], span[i, 1], span[i, 2] = f, l, w
            i0 = order[r]
            for t in range(r + 1, q):
                i = order[t]
                if (iv_size[i] != iv_size[i0] or iv_looped[i] != iv_looped[i0] or span[i, 0] != span[i0, 0]
                        or span[i, 1] != span[i0, 1] or span[i, 2] != span[i0, 2]):
                    mixed = True
                    break
        for t in range(r, q):
            i = order[t]
            if exact[i]:
                continue
            if mixed or abs(A[i]) <= B[i] + 4 * TIE_PAD:
                A[i] = _exact_area(i, iv_start, iv_end, iv_looped, iv_size, dep, mem, table, line)
                B[i] = 0.0
                exact[i] = True
                done += 1
        r = q
    return done


# budget changes a greedy step records (what an interval's cached walks read);
# kernels whose estimate fell to GPU memory or below go to a separate list
CH_G2S = 0   # GPU->SSD budget: read by the forward walk over [start, off_mid]
CH_S2G = 1   # SSD->GPU budget: read by the backward walk over [pre_mid, end-1]


def _walk_redo(i, dep, iv_start, iv_end, iv_looped, kind, lo, hi):
    """Walks of interval i that a budget change of ``kind`` over [lo, hi] invalidates."""
    if iv_looped[i]:  # no budget walks
        return 0
    if kind == CH_G2S:
        return RE_FORWARD if hi >= iv_start[i] and lo <= dep[i, 0] else 0
    return RE_BACKWARD if hi >= dep[i, 1] and lo <= iv_end[i] - 1 else 0


def _crossed_in_range(i, dep, iv_start, iv_end, iv_looped, flips):
    """Did a kernel of interval i's sum fall to the line (``flips`` sorted)?"""
    n = flips.shape[0]
    if iv_looped[i]:  # kernels [start, K) and [0, end)
        return np.searchsorted(flips, iv_start[i]) < n or flips[0] < iv_end[i]
    r = np.searchsorted(flips, dep[i, 0])
    return r < n and flips[r] < dep[i, 1]


def _record(ch, nch, kind, lo, hi):
    ch[nch, 0], ch[nch, 1], ch[nch, 2] = kind, lo, hi
    return nch + 1


def _record_line_drops(flips, nfl, mem, line, size, lo, hi):
    """After ``mem[lo..hi] -= size``: append the kernels that fell to ``line``.

    A kernel falls at most once in the greedy pass (the estimate only decreases), so
    the list stays within K entries over a whole step."""
    for j in range(lo, hi + 1):
        if mem[j] <= line and mem[j] + size > line:
            flips[nfl] = j
            nfl += 1
    return nfl


def _record_wrapped_drops(flips, nfl, mem, line, size, lo, hi, K):
    """Same for the two-iteration index range [lo, hi] of a looped offload."""
    if hi < lo:
        return nfl
    if hi < K:
        return _record_line_drops(flips, nfl, mem, line, size, lo, hi)
    if lo >= K:
        return _record_line_drops(flips, nfl, mem, line, size, lo - K, hi - K)
    nfl = _record_line_drops(flips, nfl, mem, line, size, lo, K - 1)
    return _record_line_drops(flips, nfl, mem, line, size, 0, hi - K)


class _LazyKeys:
    """The best key without a sort (``best_by_scan``), as the compiled ``lazy_keys``: within the
    greedy pass a key only falls (a booking lengthens the walks, a kernel falling to the line
    drops a term; a looped key's wrap term, which rises when kernel 0 falls to the line, is
    re-keyed then), so a key computed earlier bounds the key now from above.  A heap of such
    bounds, ordered by the larger key, the larger time x size, then the lower interval, finds
    the best key by re-keying only the intervals popped above it."""

    def __init__(self, line, I, K):
        self.line = line
        self.heap = []                          # (-key, -tsz, interval, -version)
        self.live = np.zeros(I, np.int64)       # each interval's live version
        self.built = False
        self.over0 = False
        self.by_host = False                    # a key is also measured between the host link's walks
        self.M = np.empty(K + 1, np.float64)    # prefix sums over ``line``
        self.C = np.empty(K + 1, np.int64)
        self.M2 = np.empty(K + 1, np.float64)
        self.C2 = np.empty(K + 1, np.int64)
        self.on = np.empty(K + 1, np.int64)
        self.on2 = np.empty(K + 1, np.int64)

    def push(self, i, key, tsz):
        self.live[i] += 1
        heapq.heappush(self.heap, (-key, -tsz[i], int(i), -int(self.live[i])))


# tests set this: every choice of the heap is checked against a scan of every key, re-keyed now
VERIFY_BEST = False


def _verify_best(i, key, walks, offloaded, tsz):
    """The heap's choice is the largest key now (to rounding: a bound kept from an earlier step
    can sit an ulp under the key recomputed now); among the keys equal to it, the first in order."""
    keys = {j: walks(j) for j in range(offloaded.shape[0]) if not offloaded[j] and j != i}
    tol = 1e-12 * abs(key)
    above = {j: k for j, k in keys.items() if k > key + tol}
    assert not above, f"interval {i} (key {key!r}) taken over larger keys {above}"
    for j, k in keys.items():
        if k == key:
            assert (tsz[i], -i) > (tsz[j], -j), f"interval {i} taken before its equal {j}"
    walks(i)  # leave interval i's walks as the choice computed them


def _lazy_best(q, walks, offloaded, iv_looped, tsz, stats):
    """The open interval with the largest positive key over ``q.line`` and its key, or
    (-1, 0.0) when none is positive.  ``walks(i)`` redoes interval i's walks and returns its
    key over ``q.line`` now."""
    I = offloaded.shape[0]

    def rekey(looped_only):
        for i in range(I):
            if offloaded[i] or (looped_only and not iv_looped[i]):
                continue
            key = walks(i)
            stats["area_approximations"] += 1
            if key > 0.0:
                q.push(i, key, tsz)
            else:
                q.live[i] += 1

    if not q.built:
        q.built = True
        rekey(False)
        q.over0 = q.mem0_over
    elif q.mem0_over != q.over0:
        rekey(True)
        q.over0 = q.mem0_over
    while q.heap:
        neg_key, _, i, neg_ver = heapq.heappop(q.heap)
        if -neg_ver != q.live[i] or offloaded[i]:
            continue
        key = walks(i)
        stats["area_approximations"] += 1
        if key == -neg_key:  # no other key can be above it
            if VERIFY_BEST:
                _verify_best(i, key, walks, offloaded, tsz)
            q.live[i] += 1
            return i, key
        if key > 0.0:
            q.push(i, key, tsz)
        else:
            q.live[i] += 1
    if VERIFY_BEST:
        positive = [j for j in range(I) if not offloaded[j] and walks(j) > 0.0]
        assert not positive, f"no key taken, but intervals {positive} have positive keys"
    return -1, 0.0


def prealloc_pass(mem, table, ptensors, pbirth, pdeath, psize, target, malloc_us_per_byte,
                  emit, hk, ht, ha, nh):
    """Pre-allocation just before birth and pre-free at death, tensor by tensor,
    until the estimate fits under ``target``.  Returns how many tensors it handled."""
    K = mem.shape[0]
    handled = 0
    for n in range(ptensors.shape[0]):
        if _all_at_most(mem, target):
            break
        t, b, d, size = ptensors[n], pbirth[n], pdeath[n], psize[n]
        handled += 1
        start_time = table[b] - size * malloc_us_per_byte
        if start_time < 0:
            issue = 0
        else:
            issue = _find_slot(table, start_time, 0, b)
            if issue < 0:  # allocation takes no time (artifact: undefined); allocate at birth
                issue = b
            for j in range(issue):
                mem[j] -= size
        if emit:
            _push_hint(hk, ht, ha, nh, issue, t, A_TO_GPU)
        death = d if d != -1 else b + 1
        if emit:
            _push_hint(hk, ht, ha, nh, death, t, A_FREE)
        free_time = table[death]
        if free_time < table[K]:
            finish = _find_slot(table, free_time, death, K)
            if finish < 0:
                finish = 0  # unreachable (artifact falls back on a global that is 0)
            for j in range(finish, K):
                mem[j] -= size
    return handled


def _push_local(loc_iv, loc_pre, loc_evf, n_loc, c, pre, evf):
    loc_iv[n_loc[0]], loc_pre[n_loc[0]], loc_evf[n_loc[0]] = c, pre, evf
    n_loc[0] += 1


def _looped_booked(c, s, e, size, clear, pidx, ssd_tier, cap, est, full, cpu, cpu_line, mem, line,
                   flips, nfl, ch, nch, iv_tensor, really, stats, hk, ht, ha, nh, host_times, g2s):
    """A looped offload that books the bandwidth budgets (``looped_budgets``), as a local one does:
    over the index range [s, e + K), evicted from s on, prefetched to be in by e + K.  In the SSD
    tier (``ssd_tier``) it goes to host memory instead when the GPU->SSD budget is full from s to
    the ideal eviction end and host memory has room (``host_times``: the host tier's move and lead,
    the extended and plain time tables).  The tensor is out of GPU memory between the later of the
    budget walk's and the time test's eviction ends and the earlier of their prefetch starts.
    ``g2s``: the budget row GPU->SSD books (:func:`budget_row`).  Returns (nch, nfl, booked)."""
    K = mem.shape[0]
    last = e + K - 1
    to_host = not ssd_tier
    if ssd_tier:
        ssd_open = False
        for x in range(s, clear):
            if not full[g2s, x % K]:
                ssd_open = True
                break
        if not ssd_open and _all_at_most(cpu, cpu_line - size):
            to_host = True
            cpu_move, cpu_lead, ext, table = host_times
            clear = _find_slot(ext, table[s] + cpu_move, s, e + K)
            pidx = _find_slot(ext, ext[e + K] - cpu_lead, s, e + K)
    if to_host:
        pre = walk_backward_wrapped(cap, est, full, H2G, size, e + K, s)
        evf = walk_forward_wrapped(cap, est, full, G2H, size, s, last)
    else:
        pre = walk_backward_wrapped(cap, est, full, S2G, size, e + K, s)
        evf = walk_forward_wrapped(cap, est, full, g2s, size, s, last)
    out = max(evf, clear)
    back = min(pre, pidx)
    if pre <= evf or back <= out:
        stats["dropped_for_bandwidth"] += 1
        return nch, nfl, False
    _push_hint(hk, ht, ha, nh, s, iv_tensor[c], A_TO_HOST if to_host else A_TO_SSD)
    really[c] = True
    _push_hint(hk, ht, ha, nh, back % K, iv_tensor[c], A_TO_GPU)
    if to_host:
        hi = reserve_wrapped(cap, est, full, H2G, S2G, size, back, False)
        nch = _record_wrapped(ch, nch, CH_S2G, back, hi, K)
        hi = reserve_wrapped(cap, est, full, G2H, g2s, size, s, False)
        nch = _record_wrapped(ch, nch, CH_G2S, s, hi, K)
        if ssd_tier:  # the host tier books it after (as for every interval it takes)
            _add_wrapped(cpu, size, s, e)
    else:
        hi = reserve_wrapped(cap, est, full, S2G, H2G, size, back, True)
        nch = _record_wrapped(ch, nch, CH_S2G, back, hi, K)
        hi = reserve_wrapped(cap, est, full, g2s, G2H, size, s, True)
        nch = _record_wrapped(ch, nch, CH_G2S, s, hi, K)
    stats["offloads_looped"] += 1
    for x in range(out + 1, back):
        mem[x % K] -= size
    nfl = _record_wrapped_drops(flips, nfl, mem, line, size, out + 1, back - 1, K)
    return nch, nfl, True


def greedy_pass(mem, cpu, table, ext, cap, est, full,
                iv_tensor, iv_start, iv_end, iv_looped, iv_time, iv_size,
                params, perm, offloaded, really, loc_iv, loc_pre, loc_evf, n_loc,
                hk, ht, ha, nh):
    """Greedy offloading of inactive intervals (the artifact's cold-period loop).

    ``params``: a mapping with the keys :data:`GREEDY_PARAMS`.  Returns the
    statistics, a dict with the keys :data:`GREEDY_STATS`; ``end`` is one of
    GREEDY_FITS, GREEDY_TAKEN, GREEDY_EXHAUSTED."""
    for key in GREEDY_PARAMS:
        if key not in params:  # the compiled module's message
            raise ValueError(f"No value specified for struct attribute '{key}'")
    line, target, cpu_line = params["gpu_memory_bytes"], params["target_bytes"], params["host_memory_bytes"]
    ssd_lat_us, sys_lat_us = params["ssd_latency_us"], params["system_latency_us"]
    ssd_Bpus, host_Bpus = params["ssd_bytes_per_us"], params["host_bytes_per_us"]
    delta, exact_keys = params["delta"], bool(params["exact_keys"])
    looped_budgets = bool(params["looped_budgets"])
    shared_ssd = bool(params["shared_ssd"])
    set_aside_short = bool(params["set_aside_short"])
    best_by_scan = bool(params["best_by_scan"])
    g2s = budget_row(G2S, shared_ssd)   # the row GPU->SSD reads and books
    stats = dict.fromkeys(GREEDY_STATS, 0)
    if iv_tensor.shape[0] == 0:
        stats["end"] = GREEDY_FITS if _all_at_most(mem, target) else GREEDY_EXHAUSTED
        return stats
    K = mem.shape[0]
    I = iv_tensor.shape[0]
    A = np.zeros(I, np.float64)       # key: exact where ``exact``, else approximate
    B = np.zeros(I, np.float64)       # error bound of A (0 where exact)
    exact = np.zeros(I, np.bool_)
    tsz = np.empty(I, np.float64)
    for i in range(I):
        tsz[i] = iv_time[i] * iv_size[i]
    dirty = np.full(I, RE_ALL, np.int64)
    fresh = np.zeros(I, np.bool_)         # A/B up to date with the prefix sums and walks
    lo_order = np.arange(I)               # keys by lower bound, repaired each step
    dep = np.full((I, 2), -1, np.int64)   # walk ends (off_mid, pre_mid) of plain intervals
    step_us = np.empty(K, np.float64)
    for j in range(K):
        step_us[j] = table[j + 1] - table[j]
    M = np.empty(K + 1, np.float64)
    C = np.empty(K + 1, np.int64)
    M2 = np.empty(K + 1, np.float64)
    C2 = np.empty(K + 1, np.int64)
    on = np.empty(K + 1, np.int64)
    on2 = np.empty(K + 1, np.int64)
    _rebuild_prefix(mem, line, step_us, M, C, M2, C2, on, on2)
    bound_per_byte = table[K] * (K + 4) * BOUND_UNIT
    ch = np.empty((8, 3), np.int64)   # (kind, lo, hi) budget ranges changed by this step
    flips = np.empty(K, np.int64)     # kernels that fell to the line in this step
    q_line = _LazyKeys(line, I, K)
    q_line.M, q_line.C, q_line.M2, q_line.C2, q_line.on, q_line.on2 = M, C, M2, C2, on, on2
    q_target = _LazyKeys(target, I, K)

    # over the target, an interval may lower a kernel by the host link where the SSD's walks reach
    # past it (a slow SSD): its key is the larger of the two (with host memory to offload to)
    dep_host = np.full((I, 2), -1, np.int64)
    q_target.by_host = cpu_line > 0

    def redo_walks(i, which):
        """Redo interval i's budget walks named in ``which`` (RE_* bits); True when an end moved."""
        moved = False
        if which & RE_FORWARD:
            om = walk_forward(cap, est, full, g2s, iv_size[i] // 2, iv_start[i])
            moved = om != dep[i, 0]
            dep[i, 0] = om
        if which & RE_BACKWARD:
            pm = walk_backward(cap, est, full, S2G, iv_size[i] // 2, iv_end[i])
            moved = moved or pm != dep[i, 1]
            dep[i, 1] = pm
        return moved

    def key_now(q, i):
        """Interval i's key over ``q.line`` now: its walks redone, its approximate area (over the
        target with host memory, the larger of the areas between the SSD's walks and the host's)."""
        if not iv_looped[i]:  # a looped key has no walks
            redo_walks(i, RE_ALL)
        key = _approx_area(i, iv_start, iv_end, iv_looped, iv_size, dep, mem, q.line,
                           q.M, q.C, q.M2, q.C2, table[K], bound_per_byte)[0]
        if q.by_host and not iv_looped[i]:
            dep_host[i, 0] = walk_forward(cap, est, full, G2H, iv_size[i] // 2, iv_start[i])
            dep_host[i, 1] = walk_backward(cap, est, full, H2G, iv_size[i] // 2, iv_end[i])
            by_host = _approx_area(i, iv_start, iv_end, iv_looped, iv_size, dep_host, mem, q.line,
                                   q.M, q.C, q.M2, q.C2, table[K], bound_per_byte)[0]
            key = max(key, by_host)
        return key

    stats["end"] = GREEDY_EXHAUSTED
    for step in range(I):
        if _all_at_most(mem, target):
            stats["end"] = GREEDY_FITS
            break
        stats["steps"] += 1
        host_first = False
        if best_by_scan:
            q = q_line
            q.mem0_over = mem[0] > q.line
            c, taken = _lazy_best(q, lambda i: key_now(q_line, i), offloaded, iv_looped, tsz, stats)
            if c < 0 and target < line:
                # no key over GPU memory, a kernel still over the target: keys over the target
                q = q_target
                _rebuild_prefix(mem, target, step_us, q.M, q.C, q.M2, q.C2, q.on, q.on2)
                q.mem0_over = mem[0] > q.line
                c, taken = _lazy_best(q, lambda i: key_now(q_target, i), offloaded, iv_looped, tsz, stats)
                # taken for what the host link's walks lower: it goes to host memory (where it has
                # room) even while the SSD's budget has room, which would not lower those kernels
                host_first = bool(c >= 0 and q.by_host and not iv_looped[c] and (
                    _approx_area(c, iv_start, iv_end, iv_looped, iv_size, dep_host, mem, q.line,
                                 q.M, q.C, q.M2, q.C2, table[K], bound_per_byte)[0]
                    > _approx_area(c, iv_start, iv_end, iv_looped, iv_size, dep, mem, q.line,
                                   q.M, q.C, q.M2, q.C2, table[K], bound_per_byte)[0]))
            if c < 0:
                stats["end"] = GREEDY_TAKEN
                break
        else:
            for i in range(I):
                if offloaded[i]:  # the artifact zeroes the area of an interval already handled
                    A[i] = 0.0
                    B[i] = 0.0
                    exact[i] = True
                    continue
                if dirty[i] and redo_walks(i, dirty[i]):
                    exact[i] = False
                    fresh[i] = False
                dirty[i] = 0
                if not exact[i] and not fresh[i]:
                    fresh[i] = True
                    A[i], B[i] = _approx_area(i, iv_start, iv_end, iv_looped, iv_size, dep, mem, line,
                                              M, C, M2, C2, table[K], bound_per_byte)
                    stats["area_approximations"] += 1
                    if B[i] == 0.0:
                        exact[i] = True
                    elif exact_keys:
                        A[i] = _exact_area(i, iv_start, iv_end, iv_looped, iv_size, dep, mem, table, line)
                        B[i] = 0.0
                        exact[i] = True
                        stats["area_sums_exact"] += 1
            if not exact_keys:
                stats["area_sums_exact"] += _resolve_near_ties(A, B, exact, iv_start, iv_end, iv_looped,
                                                               iv_size, dep, mem, table, line, on, on2,
                                                               lo_order)
            std_sort(perm, CMP_AREA, A, tsz)
            stats["sorts"] += 1
            c = perm[0]
            if offloaded[c]:
                stats["end"] = GREEDY_TAKEN
                break
        nch = 0
        nfl = 0
        s, e, size, looped = iv_start[c], iv_end[c], iv_size[c], iv_looped[c]

        if _span_at_most(mem, target, s, e):
            offloaded[c] = True
            continue
        span = e - s if not looped else e + K - s
        if span == 1:
            offloaded[c] = True
            continue

        ssd_safe = 2 * (ssd_lat_us + sys_lat_us + size / ssd_Bpus)
        ssd_move = ssd_safe / 2
        d_ssd = delta * ssd_move
        ssd_safe += d_ssd
        ssd_lead = ssd_move + d_ssd
        cpu_safe = 2 * (sys_lat_us + size / host_Bpus)
        cpu_move = cpu_safe / 2
        d_cpu = delta * cpu_move
        cpu_safe += d_cpu
        cpu_lead = cpu_move + d_cpu

        if iv_time[c] > ssd_safe:
            if not looped:
                clear = _find_slot(table, table[s] + ssd_move, s, e)
                if clear < 0:  # unreachable for valid traces (artifact asserts)
                    offloaded[c] = True
                    continue
                ssd_open = False  # any GPU->SSD room before the ideal eviction end?
                for j in range(s, clear):
                    if not full[g2s, j]:
                        ssd_open = True
                        break
                if (not ssd_open or host_first) and _all_at_most(cpu, cpu_line - size):
                    pre = walk_backward(cap, est, full, H2G, size, e)
                    evf = walk_forward(cap, est, full, G2H, size, s)
                    if pre > evf:
                        _push_hint(hk, ht, ha, nh, s, iv_tensor[c], A_TO_HOST)
                        really[c] = True
                        _push_local(loc_iv, loc_pre, loc_evf, n_loc, c, pre, evf)
                        last = reserve_pcie(cap, est, full, H2G, S2G, size, pre)
                        nch = _record(ch, nch, CH_S2G, pre, last)
                        last = reserve_pcie(cap, est, full, G2H, g2s, size, s)
                        nch = _record(ch, nch, CH_G2S, s, last)
                        _add_wrapped(cpu, size, s, e)
                        stats["offloads_host"] += 1
                    else:
                        offloaded[c] = True
                        stats["dropped_for_bandwidth"] += 1
                        continue
                else:
                    pre = walk_backward(cap, est, full, S2G, size, e)
                    evf = walk_forward(cap, est, full, g2s, size, s)
                    if pre > evf:
                        _push_hint(hk, ht, ha, nh, s, iv_tensor[c], A_TO_SSD)
                        really[c] = True
                        _push_local(loc_iv, loc_pre, loc_evf, n_loc, c, pre, evf)
                        last = reserve_ssd(cap, est, full, S2G, H2G, size, pre)
                        nch = _record(ch, nch, CH_S2G, pre, last)
                        last = reserve_ssd(cap, est, full, g2s, G2H, size, s)
                        nch = _record(ch, nch, CH_G2S, s, last)
                        stats["offloads_ssd"] += 1
                    else:
                        offloaded[c] = True
                        stats["dropped_for_bandwidth"] += 1
                        continue
                for j in range(evf + 1, pre):
                    mem[j] -= size
                nfl = _record_line_drops(flips, nfl, mem, line, size, evf + 1, pre - 1)
                offloaded[c] = True
            else:
                # a global tensor idle across the iteration boundary: time-based only
                clear = _find_slot(ext, table[s] + ssd_move, s, e + K)
                pidx = _find_slot(ext, ext[e + K] - ssd_lead, s, e + K)
                if clear < 0 or pidx < 0:  # unreachable for valid traces (artifact asserts)
                    offloaded[c] = True
                    continue
                if looped_budgets:
                    nch, nfl, ok = _looped_booked(c, s, e, size, clear, pidx, True, cap, est, full, cpu,
                                                  cpu_line, mem, line, flips, nfl, ch, nch, iv_tensor,
                                                  really, stats, hk, ht, ha, nh,
                                                  (cpu_move, cpu_lead, ext, table), g2s)
                    offloaded[c] = True
                    if not ok:
                        continue
                elif pidx != s:
                    _push_hint(hk, ht, ha, nh, s, iv_tensor[c], A_TO_SSD)
                    really[c] = True
                    _push_hint(hk, ht, ha, nh, pidx % K, iv_tensor[c], A_TO_GPU)
                    stats["offloads_looped"] += 1
                if not looped_budgets:
                    for j in range(clear + 1, pidx):
                        mem[j % K] -= size
                    nfl = _record_wrapped_drops(flips, nfl, mem, line, size, clear + 1, pidx - 1, K)
                offloaded[c] = True
        elif iv_time[c] > cpu_safe:
            if not _all_at_most(cpu, cpu_line - size):
                offloaded[c] = True
                continue
            if not looped:
                evf = walk_forward(cap, est, full, G2H, size, s)
                pre = walk_backward(cap, est, full, H2G, size, e)
                if pre > evf:
                    _push_hint(hk, ht, ha, nh, s, iv_tensor[c], A_TO_HOST)
                    really[c] = True
                    _push_local(loc_iv, loc_pre, loc_evf, n_loc, c, pre, evf)
                    last = reserve_pcie(cap, est, full, H2G, S2G, size, pre)
                    nch = _record(ch, nch, CH_S2G, pre, last)
                    last = reserve_pcie(cap, est, full, G2H, g2s, size, s)
                    nch = _record(ch, nch, CH_G2S, s, last)
                    stats["offloads_host"] += 1
                    for j in range(evf + 1, pre):
                        mem[j] -= size
                    nfl = _record_line_drops(flips, nfl, mem, line, size, evf + 1, pre - 1)
                else:
                    stats["dropped_for_bandwidth"] += 1
                offloaded[c] = True
            else:
                clear = _find_slot(ext, table[s] + cpu_move, s, e + K)
                pidx = _find_slot(ext, ext[e + K] - cpu_lead, s, e + K)
                if clear < 0 or pidx < 0:  # unreachable for valid traces (artifact asserts)
                    offloaded[c] = True
                    continue
                if looped_budgets:
                    nch, nfl, _ = _looped_booked(c, s, e, size, clear, pidx, False, cap, est, full, cpu,
                                                 cpu_line, mem, line, flips, nfl, ch, nch, iv_tensor,
                                                 really, stats, hk, ht, ha, nh, None, g2s)
                else:
                    if pidx != s:
                        _push_hint(hk, ht, ha, nh, s, iv_tensor[c], A_TO_HOST)
                        really[c] = True
                        _push_hint(hk, ht, ha, nh, pidx % K, iv_tensor[c], A_TO_GPU)
                        stats["offloads_looped"] += 1
                    for j in range(clear + 1, pidx):
                        mem[j % K] -= size
                    nfl = _record_wrapped_drops(flips, nfl, mem, line, size, clear + 1, pidx - 1, K)
                offloaded[c] = True
            # quirk copied: host residency is booked even when no offload was emitted
            _add_wrapped(cpu, size, s, e)
        else:
            # too short for either tier: the artifact leaves it unmarked, so it is chosen again
            # (and again, until the step count runs out); set aside, the pass goes on
            if set_aside_short:
                offloaded[c] = True
            elif best_by_scan:  # back among the keys, to be chosen again
                q.push(c, taken, tsz)
            continue

        if best_by_scan:  # the lazy keys re-key themselves; the prefix sums must be current
            if nfl:
                _rebuild_prefix(mem, line, step_us, M, C, M2, C2, on, on2)
            continue
        # invalidate what this step changed (an offloaded interval's key is 0 for good)
        for r in range(nch):
            kind, lo, hi = ch[r, 0], ch[r, 1], ch[r, 2]
            for i in range(I):
                if not offloaded[i]:
                    dirty[i] |= _walk_redo(i, dep, iv_start, iv_end, iv_looped, kind, lo, hi)
                    if shared_ssd:  # one SSD budget: both walks read what either booking changed
                        dirty[i] |= _walk_redo(i, dep, iv_start, iv_end, iv_looped, CH_G2S + CH_S2G - kind,
                                               lo, hi)
        if nfl:
            _rebuild_prefix(mem, line, step_us, M, C, M2, C2, on, on2)
            fresh[:] = False
            fl = np.sort(flips[:nfl])
            for i in range(I):
                if exact[i] and not offloaded[i] and _crossed_in_range(i, dep, iv_start, iv_end,
                                                                       iv_looped, fl):
                    exact[i] = False
    return stats


def place_prefetches(mem, target, loc_iv, loc_pre, loc_evf, iv_tensor, iv_size, hk, ht, ha, nh, whole=False):
    """Move each local offload's prefetch as early as the memory estimate allows (``whole``: only
    while the estimate plus the tensor stays within the target; otherwise the published test, the
    estimate before the tensor is added)."""
    n = loc_iv.shape[0]
    order = np.arange(n)
    keys = loc_pre.astype(np.float64)
    std_sort(order, CMP_LESS, keys, keys)
    for r in range(n):
        o = order[r]
        pre, evf, c = loc_pre[o], loc_evf[o], loc_iv[o]
        k = pre
        while k > evf + 1 and ((mem[k - 1] + iv_size[c] <= target) if whole else (target > mem[k - 1])):
            k -= 1
        _push_hint(hk, ht, ha, nh, k, iv_tensor[c], A_TO_GPU)
        for j in range(k, pre):
            mem[j] += iv_size[c]


def shave_peak(mem, perm, iv_tensor, iv_start, iv_end, iv_looped, iv_time, iv_size, really,
               hill_index, hill_mem, limit, hk, ht, ha, nh):
    """GDS baselines: pre-evict intervals that span the peak kernel until it is under
    ``limit``, largest time*size first (on the greedy pass's final order)."""
    tsz = np.empty(iv_tensor.shape[0], np.float64)
    for i in range(tsz.shape[0]):
        tsz[i] = iv_time[i] * iv_size[i]
    std_sort(perm, CMP_GREATER, tsz, tsz)
    shaved = 0
    for r in range(perm.shape[0]):
        if hill_mem < limit:
            break
        c = perm[r]
        if really[c]:
            continue
        if not iv_looped[c] and iv_start[c] <= hill_index and iv_end[c] > hill_index:
            _push_hint(hk, ht, ha, nh, iv_start[c], iv_tensor[c], A_TO_SSD)
            for j in range(iv_start[c] + 1, iv_end[c]):
                mem[j] -= iv_size[c]
            hill_mem -= iv_size[c]
            really[c] = True
            shaved += 1
    return shaved


def sort_hints(hk):
    """Order of the hint vector after the artifact's final std::sort by issue kernel."""
    order = np.arange(hk.shape[0])
    keys = hk.astype(np.float64)
    std_sort(order, CMP_LESS, keys, keys)
    return order
