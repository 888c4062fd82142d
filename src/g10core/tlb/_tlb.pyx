# cython: language_level=3
"""Compiled address translation (the Python API is ``g10core.tlb``).

``Translator`` is the interface the replay calls; ``NoTranslation`` charges
nothing; ``TLBHierarchy`` models a GPU's translation path:

* every SM has a private set-associative L1 TLB, all SMs share an L2 TLB
  (LRU within each set; a lookup costs the level's latency);
* an L2 miss starts a page walk on the first free walker of a pool (walks
  queue when every walker is busy); an optional page-walk cache keyed by the
  2^9-entry region above the translation page shortens a walk to its last
  level;
* an entry is installed in the L2 and the L1 when its lookup starts, with the
  cycle its walk completes: a later hit on it waits for that cycle, so
  concurrent misses to one page merge into one walk;
* a shootdown removes every entry that maps an evicted page, at a cost per
  level that held one; its work is proportional to the range's entries or the
  TLBs' entries, whichever is smaller.

The replay calls ``kernel_cycles(k, now)`` (kernel k of a table given once with
``attach_kernels``), ``pages_evicted`` and ``bulk_safe``; ``translate_kernel``
and ``invalidate`` are the same with the tensors given per call.

The access stream of a kernel: each SM sweeps its share of each tensor the
kernel touches (the SM's contiguous 1/S of the tensor's 4 KiB pages), inputs
then outputs, in page order; an SM's accesses are spread evenly over the
kernel's duration (t11), SM s offset by s/S of an access interval.  Consecutive accesses of one SM to one translation
page form a run: its first access is a lookup, the others hit the L1 entry
that lookup installed (counted, not simulated).  SMs are interleaved in time
order (a heap of their next issue cycles).

Latency hiding: an SM keeps up to ``overlap`` translations in flight while it
computes.  Its translation pipeline is modelled as a fluid server: a lookup of
latency L occupies it for L / overlap cycles, so a stream of lookups runs no
faster than overlap / mean latency (Little's law).  An access cannot issue
before its nominal cycle (plus the delay the SM has accumulated) nor before
the pipeline is free.
SM at the end.

Sampling: a replica simulates only the translation pages v with
v % modulus == residue, with every TLB scaled down by the modulus (sets first,
then ways), the walkers run in dilated time (a walk holds a walker modulus
times its latency, its requester waits 1/modulus of the queueing it sees: the
same utilisation and number of servers as the full pool) and every simulated
lookup standing for the lookups of its SM between the midpoints with its
neighbouring simulated ones.  With
the modulus dividing the sets of a level, a replica is exactly that level's
sets v % modulus == residue.  Several replicas with distinct residues are
independent sub-samples; the Python layer turns their spread into an error
bound.  Inputs are trusted: ``g10core.tlb`` validates them.
"""
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from libcpp.vector cimport vector
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memset

from g10core.core._types cimport cycle_t, page_t, tlb_params, tlb_array, tlb_stats

import numpy as np

cdef extern from "g10core/pcie_math.h" nogil:
    int64_t g10_ceil_muldiv(int64_t n, int64_t num, int64_t den)

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

cdef extern from "g10core/tlb_math.h" nogil:
    void g10_muldivmod(int64_t a, int64_t b, int64_t n, int64_t* q, int64_t* r)

# Shootdown filter: each replica counts its L1 and L2 entries per region of 2^REGION_SHIFT
# consecutive keys; a shootdown skips a replica whose counts over the range are all 0 (most
# evicted pages were translated long ago, or never: the TLBs hold a few thousand entries).
cdef enum:
    REGION_SHIFT = 6
    REGION_SCAN_MAX = 4096      # more regions than this in a range: search the arrays instead


STATS_FIELDS = (
    "accesses", "lookups", "l1_hits", "l1_misses", "l2_hits", "l2_pending_hits", "l2_misses",
    "pwc_hits", "pwc_misses", "walker_queue_cycles", "max_walker_queue_cycles", "latency_cycles",
    "invalidated_l1", "invalidated_l2", "cycles_added", "kernels",
)


# ---- one set-associative array ---------------------------------------------------
# Each set is a ring of its ways in recency order (see tlb_array in _types.pxd): a miss
# replaces the least recently used entry by moving the ring's head back one way (O(1));
# a hit moves its entry to the front (O(its depth)); a lookup compares every way's tag
# without branching (empty ways hold -1, which no page equals).

cdef int array_init(tlb_array* a, int32_t sets, int32_t ways) noexcept nogil:
    """Empty array of sets x ways entries; returns -1 when memory ran out."""
    cdef int64_t n = <int64_t>sets * ways, i
    a.sets = sets
    a.ways = ways
    a.entries = n
    a.set_mask = (sets - 1) if sets > 0 and (sets & (sets - 1)) == 0 else -1
    a.way_mask = (ways - 1) if ways > 0 and (ways & (ways - 1)) == 0 else -1
    a.tag = <int64_t*>calloc(n if n > 0 else 1, sizeof(int64_t))
    a.ready = <int64_t*>calloc(n if n > 0 else 1, sizeof(int64_t))
    a.head = <int32_t*>calloc(sets if sets > 0 else 1, sizeof(int32_t))
    a.fill = <int32_t*>calloc(sets if sets > 0 else 1, sizeof(int32_t))
    if a.tag == NULL or a.ready == NULL or a.head == NULL or a.fill == NULL:
        return -1
    for i in range(n):
        a.tag[i] = -1
    return 0


cdef void array_free(tlb_array* a) noexcept nogil:
    free(a.tag)
    free(a.ready)
    free(a.head)
    free(a.fill)
    a.tag = a.ready = NULL
    a.head = a.fill = NULL


cdef inline int64_t array_setno(const tlb_array* a, int64_t key) noexcept nogil:
    """The set ``key`` maps to (0 for an array without entries)."""
    if a.sets == 0:
        return 0
    if a.set_mask >= 0:
        return key & a.set_mask
    return key % a.sets


cdef inline int64_t array_slot(const tlb_array* a, int64_t set, int64_t logical) noexcept nogil:
    """Physical index of a set's logical way (0 = most recent)."""
    cdef int64_t w = a.head[set] + logical
    if a.way_mask >= 0:
        w &= a.way_mask
    elif w >= a.ways:
        w -= a.ways
    return set * a.ways + w


cdef inline int64_t find8(const int64_t* t, int64_t key) noexcept nogil:
    """Index of key among t[0:8], or -1 (a fixed trip count the compiler unrolls)."""
    cdef int64_t w, found = -1
    for w in range(8):
        if t[w] == key:
            found = w
    return found


cdef inline int64_t array_find(const tlb_array* a, int64_t set, int64_t key) noexcept nogil:
    """Physical index of ``key`` in its set, or -1 (every way compared: a conditional move
    per way, no branch to mispredict)."""
    cdef int64_t base = set * a.ways, w = 0, found = -1, f
    cdef const int64_t* t = a.tag + base
    while w + 8 <= a.ways:
        f = find8(t + w, key)
        if f >= 0:
            found = w + f
        w += 8
    while w < a.ways:
        if t[w] == key:
            found = w
        w += 1
    return base + found if found >= 0 else -1


cdef inline int64_t array_depth(const tlb_array* a, int64_t set, int64_t slot) noexcept nogil:
    """Logical way of physical index ``slot`` of its set."""
    cdef int64_t w = slot - set * a.ways - a.head[set]
    if w < 0:
        w += a.ways
    return w


cdef inline void array_to_front(tlb_array* a, int64_t set, int64_t slot) noexcept nogil:
    """Make the entry at ``slot`` its set's most recent."""
    cdef int64_t i = array_depth(a, set, slot), dst, src
    cdef int64_t key = a.tag[slot], ready = a.ready[slot]
    dst = slot
    while i > 0:
        src = array_slot(a, set, i - 1)
        a.tag[dst] = a.tag[src]
        a.ready[dst] = a.ready[src]
        dst = src
        i -= 1
    a.tag[dst] = key
    a.ready[dst] = ready


cdef inline int64_t array_insert(tlb_array* a, int64_t set, int64_t key, cycle_t ready) noexcept nogil:
    """Install ``key`` as its set's most recent entry; a full set drops its least recent,
    whose key is returned (-1: none dropped)."""
    cdef int32_t h = a.head[set] - 1
    cdef int64_t slot, dropped
    if h < 0:
        h = a.ways - 1
    a.head[set] = h
    if a.fill[set] < a.ways:
        a.fill[set] += 1
    slot = set * a.ways + h
    dropped = a.tag[slot]
    a.tag[slot] = key
    a.ready[slot] = ready
    return dropped


cdef inline void array_remove(tlb_array* a, int64_t set, int64_t slot) noexcept nogil:
    """Drop the entry at ``slot``; the set's less recent entries move up one way."""
    cdef int64_t i = array_depth(a, set, slot), n = a.fill[set], dst = slot, src
    while i + 1 < n:
        src = array_slot(a, set, i + 1)
        a.tag[dst] = a.tag[src]
        a.ready[dst] = a.ready[src]
        dst = src
        i += 1
    a.tag[dst] = -1
    a.fill[set] = <int32_t>(n - 1)


cdef int64_t array_invalidate(tlb_array* a, int64_t v_first, int64_t n_keys, int64_t step,
                              int64_t key_shift, int32_t* counts) noexcept nogil:
    """Remove the entries whose translation page is v_first + i * step, i < n_keys.

    Keys are translation pages >> key_shift (a replica's arrays index v >> log2(modulus)
    and hold only pages of its residue, so the range's keys are consecutive).  Probes the
    range's sets when the range has fewer keys than the array has sets, else visits every
    set once: the cost is min(range, entries), never per page of a huge range."""
    cdef int64_t removed = 0, key, lo, hi, set, slot, i, r, n, src, dst
    if a.entries == 0 or n_keys <= 0:
        return 0
    lo = v_first >> key_shift
    hi = lo + n_keys
    if n_keys < a.sets:
        for key in range(lo, hi):
            set = array_setno(a, key)
            slot = array_find(a, set, key)
            if slot >= 0:
                array_remove(a, set, slot)
                removed += 1
                if counts != NULL:
                    counts[key >> REGION_SHIFT] -= 1
    else:
        for set in range(a.sets):
            n = a.fill[set]
            r = 0                           # survivors keep their order, packed at the front
            for i in range(n):
                src = array_slot(a, set, i)
                if lo <= a.tag[src] < hi:
                    removed += 1
                    if counts != NULL:
                        counts[a.tag[src] >> REGION_SHIFT] -= 1
                    continue
                if r != i:
                    dst = array_slot(a, set, r)
                    a.tag[dst] = a.tag[src]
                    a.ready[dst] = a.ready[src]
                r += 1
            for i in range(r, n):
                a.tag[array_slot(a, set, i)] = -1
            a.fill[set] = <int32_t>r
    return removed


# ---- small heaps -----------------------------------------------------------------

cdef inline int64_t ring_take(int64_t* r, int32_t n, int32_t* head) noexcept nogil:
    """Remove the smallest of the n sorted values of ring r (it starts at head)."""
    cdef int64_t x = r[head[0]]
    head[0] = head[0] + 1 if head[0] + 1 < n else 0
    return x


cdef inline void ring_put(int64_t* r, int32_t n, int32_t head, int64_t x) noexcept nogil:
    """Insert x into the sorted ring holding n - 1 values from head (its free slot is before
    head): move larger values up from the tail."""
    cdef int32_t i = head - 1 if head > 0 else n - 1     # the free slot, the ring's tail end
    cdef int32_t j = i - 1 if i > 0 else n - 1
    cdef int32_t k = 1
    while k < n and r[j] > x:
        r[i] = r[j]
        i = j
        j = j - 1 if j > 0 else n - 1
        k += 1
    r[i] = x


cdef inline void walker_sift(int64_t* h, int32_t n) noexcept nogil:
    """Restore the min-heap after h[0] grew."""
    cdef int32_t i = 0, c
    cdef int64_t x = h[0]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and h[c + 1] < h[c]:
            c += 1
        if h[c] >= x:
            break
        h[i] = h[c]
        i = c
    h[i] = x


cdef inline void _pipe_take(sm_cursor* c, int64_t t, int64_t w, int32_t osh, int64_t overlap) noexcept nogil:
    """The SM's translation pipeline takes weighted latency ``w`` (remainder included) at ``t``:
    it is busy w / overlap cycles, the remainder kept exact (``osh``: log2(overlap) when
    overlap is a power of two, a shift and a mask then; -1 otherwise)."""
    if osh >= 0:
        c.pipe_free = t + (w >> osh)
        c.pipe_rem = w & (overlap - 1)
    else:
        c.pipe_free = t + w // overlap
        c.pipe_rem = w % overlap


cdef inline void sched_insert_at(int64_t* key, int32_t* sm, int64_t i) noexcept nogil:
    """Move entry i back into the sorted run key[0:i]."""
    cdef int64_t k = key[i]
    cdef int32_t s = sm[i]
    while i > 0 and (key[i - 1] > k or (key[i - 1] == k and sm[i - 1] > s)):
        key[i] = key[i - 1]
        sm[i] = sm[i - 1]
        i -= 1
    key[i] = k
    sm[i] = s


cdef inline void sched_insert(int64_t* key, int32_t* sm, int64_t* head, int64_t* tail, int64_t cap,
                              int64_t k, int32_t s) noexcept nogil:
    """Insert (k, s) into the sorted run key[head:tail] (ties: lower SM first).

    SMs advance nearly in step, so a new key usually belongs near the tail: the search
    runs backwards from there.  The run is moved to the array's start when it reaches
    the end (amortised O(1): the array holds twice the SMs)."""
    cdef int64_t i, h = head[0], t = tail[0]
    if t == cap:
        for i in range(t - h):
            key[i] = key[h + i]
            sm[i] = sm[h + i]
        t -= h
        h = 0
        head[0] = 0
    i = t
    while i > h and (key[i - 1] > k or (key[i - 1] == k and sm[i - 1] > s)):
        key[i] = key[i - 1]
        sm[i] = sm[i - 1]
        i -= 1
    key[i] = k
    sm[i] = s
    tail[0] = t + 1


cdef inline void heap_sift_down(int64_t* key, int32_t* sm, int64_t n, int64_t i) noexcept nogil:
    """Restore the (key, sm) min-heap below i (ties: lower SM first)."""
    cdef int64_t c
    cdef int64_t k = key[i]
    cdef int32_t s = sm[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and (key[c + 1] < key[c] or (key[c + 1] == key[c] and sm[c + 1] < sm[c])):
            c += 1
        if key[c] > k or (key[c] == k and sm[c] > s):
            break
        key[i] = key[c]
        sm[i] = sm[c]
        i = c
    key[i] = k
    sm[i] = s


cdef inline int64_t imax(int64_t a, int64_t b) noexcept nogil:
    return a if a > b else b


cdef inline int64_t imin(int64_t a, int64_t b) noexcept nogil:
    return a if a < b else b


cdef inline void note_insert(tlb_replica* R, int64_t key, int64_t dropped) noexcept nogil:
    """An L1 or L2 entry for ``key`` was installed and ``dropped`` (-1: none) replaced."""
    if R.region_count == NULL:
        return
    if (key >> REGION_SHIFT) >= R.n_regions:
        free(R.region_count)                 # a key beyond the attached address space: no filter
        R.region_count = NULL
        return
    R.region_count[key >> REGION_SHIFT] += 1
    if dropped >= 0:
        R.region_count[dropped >> REGION_SHIFT] -= 1


cdef bint region_empty(tlb_replica* R, int64_t key_lo, int64_t key_hi) noexcept nogil:
    """No L1 or L2 entry of the replica has a key in [key_lo, key_hi] (False when unknown)."""
    cdef int64_t g, g_hi = key_hi >> REGION_SHIFT
    if R.region_count == NULL or g_hi >= R.n_regions or g_hi - (key_lo >> REGION_SHIFT) > REGION_SCAN_MAX:
        return False
    for g in range(key_lo >> REGION_SHIFT, g_hi + 1):
        if R.region_count[g]:
            return False
    return True


# ---- the interface ---------------------------------------------------------------

cdef inline void _land(sm_cursor* c, int64_t v, int64_t p, int32_t shift, int32_t S, int32_t s,
                       cycle_t start, cycle_t duration) noexcept nogil:
    """Put cursor c on the lookup of translation page v at access page p (inside its segment):
    its run, stream index, lookup slot and nominal cycle (one step of the exact quotient when
    it follows the previous access, a division otherwise)."""
    cdef int64_t j = c.j_base + (p - c.seg_lo)
    c.v = v
    c.page = p
    c.run = imin(c.seg_hi, (v + 1) << shift) - p
    if j == c.j + 1:
        c.nq += c.dq
        c.nr += c.dr
        if c.nr >= c.nS:
            c.nr -= c.nS
            c.nq += 1
    else:
        g10_muldivmod(j * S + s, duration, c.nS, &c.nq, &c.nr)
    c.j = j
    c.lk = c.lk_base + v - (c.seg_lo >> shift)
    c.nominal = start + c.nq + (1 if c.nr > 0 else 0)


cdef class Translator:
    """Base translator: no cost.  Subclasses override the nogil methods."""

    cdef cycle_t translate_kernel(self, cycle_t start, cycle_t duration, const page_t* first,
                                  const page_t* count, int32_t n) noexcept nogil:
        return 0

    cdef cycle_t invalidate(self, page_t first, page_t end) noexcept nogil:
        return 0

    cdef int64_t kernel_cycles(self, int64_t k, int64_t now) except -1 nogil:
        """Cycles translation adds to kernel k (beyond what latency hiding absorbs)."""
        return 0

    cdef void pages_evicted(self, int64_t page, int64_t n) noexcept nogil:
        """Pages [page, page+n) left the GPU: invalidate their translations."""
        self.invalidate(page, page + n)

    cdef bint bulk_safe(self) noexcept nogil:
        return True

    def stats(self):
        return {}

    # ---- thin wrappers (inputs validated by g10core.tlb) ----

    def py_translate_kernel(self, cycle_t start, cycle_t duration, first, count):
        """Translate one kernel; ``first``/``count``: int64 arrays of its tensors' pages."""
        cdef int64_t[::1] f = np.ascontiguousarray(first, dtype=np.int64)
        cdef int64_t[::1] c = np.ascontiguousarray(count, dtype=np.int64)
        cdef int32_t n = <int32_t>f.shape[0]
        cdef cycle_t r
        if n == 0:
            return self.translate_kernel(start, duration, NULL, NULL, 0)
        with nogil:
            r = self.translate_kernel(start, duration, &f[0], &c[0], n)
        return r

    def py_invalidate(self, page_t first, page_t end):
        return self.invalidate(first, end)

    def py_pages_evicted(self, int64_t page, int64_t n):
        self.pages_evicted(page, n)

    def py_bulk_safe(self):
        return self.bulk_safe()


cdef class NoTranslation(Translator):
    """Translation costs nothing; counts the calls."""

    def __init__(self):
        self.kernels = 0
        self.invalidations = 0

    def __reduce__(self):
        return (_rebuild_none, (self.kernels, self.invalidations))

    cdef cycle_t translate_kernel(self, cycle_t start, cycle_t duration, const page_t* first,
                                  const page_t* count, int32_t n) noexcept nogil:
        self.kernels += 1
        return 0

    cdef cycle_t invalidate(self, page_t first, page_t end) noexcept nogil:
        self.invalidations += 1
        return 0

    cdef int64_t kernel_cycles(self, int64_t k, int64_t now) except -1 nogil:
        self.kernels += 1
        return 0

    def reset_stats(self):
        self.kernels = 0
        self.invalidations = 0

    def stats(self):
        return {"model": "none", "kernels": self.kernels, "invalidate_calls": self.invalidations,
                "cycles_added": 0}


def _rebuild_none(kernels, invalidations):
    t = NoTranslation()
    t.kernels = kernels
    t.invalidations = invalidations
    return t


# ---- the TLB hierarchy -----------------------------------------------------------

cdef class TLBHierarchy(Translator):
    """Per-SM L1 TLBs, a shared L2, page-walk cache, walkers; build it through g10core.tlb.TLB."""

    def __cinit__(self, list replicas, list residues):
        """``replicas``: one ``tlb_params`` dict per replica; ``residues``: their residues."""
        cdef int32_t r, s, nsm = 0
        cdef tlb_replica* R
        self.n_rep = len(replicas)
        self.reps = <tlb_replica*>calloc(self.n_rep, sizeof(tlb_replica))
        if self.reps == NULL:
            raise MemoryError()
        for r in range(self.n_rep):
            R = &self.reps[r]
            R.p = replicas[r]
            R.residue = residues[r]
            nsm = R.p.sms
            R.l1 = <tlb_array*>calloc(nsm, sizeof(tlb_array))
            R.walker_free = <int64_t*>calloc(R.p.walkers, sizeof(int64_t))
            R.cap_seg = 2 * nsm + 16
            R.seg_end = <int64_t*>calloc(R.cap_seg, sizeof(int64_t))
            R.seg_rate = <double*>calloc(R.cap_seg, sizeof(double))
            if R.l1 == NULL or R.walker_free == NULL or R.seg_end == NULL or R.seg_rate == NULL:
                raise MemoryError()
            for s in range(nsm):
                if array_init(&R.l1[s], R.p.l1_sets, R.p.l1_ways):
                    raise MemoryError()
            if array_init(&R.l2, R.p.l2_sets, R.p.l2_ways):
                raise MemoryError()
            if array_init(&R.pwc, R.p.pwc_sets, R.p.pwc_ways):
                raise MemoryError()
        self.modulus = self.reps[0].p.modulus
        self.n_kernels = 0
        self.k_shape = NULL
        self.reused = 0
        self.tail = self.reps[0].p.l1_latency + self.reps[0].p.l2_latency + self.reps[0].p.walk_latency
        self.cur = <sm_cursor*>calloc(nsm, sizeof(sm_cursor))
        self.sched_key = <int64_t*>calloc(2 * nsm + 2, sizeof(int64_t))
        self.sched_sm = <int32_t*>calloc(2 * nsm + 2, sizeof(int32_t))
        if self.cur == NULL or self.sched_key == NULL or self.sched_sm == NULL:
            raise MemoryError()
        self.reset_stats()

    def __dealloc__(self):
        cdef int32_t r, s
        if self.reps != NULL:
            for r in range(self.n_rep):
                if self.reps[r].l1 != NULL:
                    for s in range(self.reps[r].p.sms):
                        array_free(&self.reps[r].l1[s])
                    free(self.reps[r].l1)
                array_free(&self.reps[r].l2)
                array_free(&self.reps[r].pwc)
                free(self.reps[r].walker_free)
                free(self.reps[r].seg_end)
                free(self.reps[r].seg_rate)
                free(self.reps[r].region_count)
            free(self.reps)
        free(self.cur)
        free(self.sched_key)
        free(self.sched_sm)

    def __reduce__(self):
        kernels = None
        if self.n_kernels:
            a = self._kernel_arrays
            kernels = (a["first"], a["pages"], a["offsets"], a["tensors"], a["t11"], a.get("classes"))
        return (_rebuild_hierarchy, ([self.reps[r].p for r in range(self.n_rep)],
                                     [self.reps[r].residue for r in range(self.n_rep)], self._state(), kernels))

    def reset_stats(self):
        """Zero every counter; TLB contents and walker state are kept."""
        cdef int32_t r
        for r in range(self.n_rep):
            memset(&self.reps[r].st, 0, sizeof(tlb_stats))
        self.accesses_exact = self.lookups_exact = self.kernels = self.cycles_added = 0
        self.invalidate_calls = self.shootdowns_l1 = self.shootdowns_l2 = self.shootdown_cycles = 0
        self.reused = 0

    # ---- one lookup ----

    cdef cycle_t lookup(self, tlb_replica* R, int32_t sm, int64_t v, cycle_t now) noexcept nogil:
        """Translate page ``v`` for SM ``sm`` at cycle ``now``; returns the latency."""
        cdef tlb_params* p = &R.p
        cdef tlb_stats* st = &R.st
        cdef tlb_array* l1 = &R.l1[sm]
        cdef int64_t key = v >> p.modulus_shift
        cdef int64_t s1 = array_setno(l1, key), s2, sp, i, region
        cdef cycle_t t_walk, start, done, wlat, queue, lat
        self.last_walk = 0
        i = array_find(l1, s1, key) if l1.entries else -1
        if i >= 0:
            lat = p.l1_latency
            if l1.ready[i] > now + lat:
                lat = l1.ready[i] - now
            array_to_front(l1, s1, i)
            st.l1_hits += 1
            self.last_level = 1
            return lat
        st.l1_misses += 1
        s2 = array_setno(&R.l2, key)
        i = array_find(&R.l2, s2, key)
        lat = p.l1_latency + p.l2_latency
        if i >= 0:
            st.l2_hits += 1
            self.last_level = 2
            if R.l2.ready[i] > now + lat:
                st.l2_pending_hits += 1
                lat = R.l2.ready[i] - now
            array_to_front(&R.l2, s2, i)
            if l1.entries:
                note_insert(R, key, array_insert(l1, s1, key, now + lat))
            return lat
        st.l2_misses += 1
        self.last_level = 3
        # page walk: the page-walk cache first, then a walker
        wlat = p.walk_latency
        if p.pwc_sets > 0:
            region = v >> 9
            sp = array_setno(&R.pwc, region)
            i = array_find(&R.pwc, sp, region)
            if i >= 0:
                array_to_front(&R.pwc, sp, i)
                st.pwc_hits += 1
                wlat = p.pwc_latency + p.walk_last_level
            else:
                st.pwc_misses += 1
                array_insert(&R.pwc, sp, region, 0)
                # a sampled replica sees one walk in `modulus` of a region's walks: the
                # miss's extra levels are charged once, spread over what the walk stands for
                wlat = p.pwc_latency + p.walk_last_level + \
                    (p.walk_latency - p.walk_last_level + p.modulus - 1) // p.modulus
        t_walk = now + lat
        if p.modulus == 1:
            # the pool: the earliest free walker takes the walk.  Free cycles are kept sorted
            # in a ring; a walk usually ends after every walk already running, so its new
            # free cycle goes in at the tail without moving anything
            start = ring_take(R.walker_free, R.p.walkers, &R.ring_head)
            if start < t_walk:
                start = t_walk
            ring_put(R.walker_free, R.p.walkers, R.ring_head, start + wlat)
            queue = start - t_walk
        else:
            # a sampled replica sees one walk in `modulus`: its pool is a fluid server whose
            # backlog the translation pipeline's groups feed (see _translate_replica)
            queue = self._walk_wait(R, t_walk)
            start = t_walk + queue
        self.last_walk = wlat
        st.walker_queue_cycles += queue
        if queue > st.max_walker_queue_cycles:
            st.max_walker_queue_cycles = queue
        done = start + wlat
        note_insert(R, key, array_insert(&R.l2, s2, key, done))
        if l1.entries:
            note_insert(R, key, array_insert(l1, s1, key, done))
        return done - now

    # ---- the fluid walker pool of a sampled replica ----

    cdef cycle_t _walk_wait(self, tlb_replica* R, cycle_t t) noexcept nogil:
        """Bring the backlog up to cycle t; the wait of a walk that arrives then."""
        cdef double cap = R.p.walkers
        cdef int64_t e
        cdef int32_t i, c, n
        cdef double x
        if t < R.fl_time:                   # requests arrive nearly in order; never go back
            t = R.fl_time
        while R.n_seg > 0 and R.seg_end[0] <= t:
            e = R.seg_end[0]
            R.fl_backlog += (R.fl_rate - cap) * (e - R.fl_time)
            if R.fl_backlog < 0:
                R.fl_backlog = 0
            R.fl_time = e
            R.fl_rate -= R.seg_rate[0]
            # pop the segment heap
            R.n_seg -= 1
            n = R.n_seg
            e = R.seg_end[n]
            x = R.seg_rate[n]
            i = 0
            while True:
                c = 2 * i + 1
                if c >= n:
                    break
                if c + 1 < n and R.seg_end[c + 1] < R.seg_end[c]:
                    c += 1
                if R.seg_end[c] >= e:
                    break
                R.seg_end[i] = R.seg_end[c]
                R.seg_rate[i] = R.seg_rate[c]
                i = c
            R.seg_end[i] = e
            R.seg_rate[i] = x
        if R.n_seg == 0:
            R.fl_rate = 0
        R.fl_backlog += (R.fl_rate - cap) * (t - R.fl_time)
        if R.fl_backlog < 0:
            R.fl_backlog = 0
        R.fl_time = t
        return <cycle_t>(R.fl_backlog / cap + 0.5)

    cdef int _add_inflow(self, tlb_replica* R, cycle_t t, double work, double span) except -1 nogil:
        """``work`` walker-cycles arrive evenly over [t, t + span)."""
        cdef int32_t i, parent
        cdef int64_t end
        if span < 1:
            span = 1
        end = t + <int64_t>(span + 0.5)
        if t != R.fl_time:
            self._walk_wait(R, t)
        if R.n_seg == R.cap_seg:
            R.cap_seg *= 2
            R.seg_end = <int64_t*>realloc(R.seg_end, R.cap_seg * sizeof(int64_t))
            R.seg_rate = <double*>realloc(R.seg_rate, R.cap_seg * sizeof(double))
            if R.seg_end == NULL or R.seg_rate == NULL:
                with gil:
                    raise MemoryError()
        i = R.n_seg
        R.n_seg += 1
        while i > 0:
            parent = (i - 1) // 2
            if R.seg_end[parent] <= end:
                break
            R.seg_end[i] = R.seg_end[parent]
            R.seg_rate[i] = R.seg_rate[parent]
            i = parent
        R.seg_end[i] = end
        R.seg_rate[i] = work / span
        R.fl_rate += work / span
        return 0

    # ---- a kernel's access stream ----

    cdef bint _next_lookup(self, tlb_replica* R, int32_t s, sm_cursor* c, cycle_t start, cycle_t duration,
                           const page_t* first, const page_t* count, int32_t n) noexcept nogil:
        """Move ``c`` to its next lookup of this replica's pages; False when the SM is done.

        The lookup's nominal cycle is start + ceil((j + s / S) * duration / n_s) for its
        stream index j: SM s issues s / S of an access interval after SM 0 (SMs are not in
        lockstep).  Kept as an exact quotient and remainder: stepping by one access costs no
        division."""
        cdef int32_t shift = R.p.page_shift, S = R.p.sms
        cdef int64_t k1 = R.p.modulus - 1, v0, v, p, N, j
        if k1 == 0 and c.pos < c.seg_hi:
            # full simulation inside a share: the next translation page starts at pos
            _land(c, c.pos >> shift, c.pos, shift, S, s, start, duration)
            return True
        while True:
            if c.pos < c.seg_hi:
                v0 = c.pos >> shift
                v = v0 + ((R.residue - v0) & k1)
                p = v << shift
                if p < c.pos:
                    p = c.pos
                if p < c.seg_hi:
                    _land(c, v, p, shift, S, s, start, duration)
                    return True
            if c.seg_hi > c.seg_lo:
                c.lk_base += ((c.seg_hi - 1) >> shift) - (c.seg_lo >> shift) + 1
            c.j_base += c.seg_hi - c.seg_lo
            c.seg += 1
            if c.seg >= n:
                return False
            N = count[c.seg]
            c.seg_lo = first[c.seg] + (s * N) // S
            c.seg_hi = first[c.seg] + ((s + 1) * N) // S
            c.pos = c.seg_lo

    cdef cycle_t _translate_replica(self, tlb_replica* R, cycle_t start, cycle_t duration,
                                    const page_t* first, const page_t* count, int32_t n) noexcept nogil:
        cdef tlb_params* p = &R.p
        cdef tlb_stats* st = &R.st
        cdef int32_t S = p.sms, s, i, shift = p.page_shift
        cdef int64_t N, lo, hi, lat, w, t, kernel_added = 0, added, head = 0, tail = 0, cap = 2 * S + 2
        cdef int64_t overlap = p.overlap, l1 = p.l1_latency, v, run, w_lookups, w_acc, j, lk, j_to, lk_to
        cdef int64_t active = 0, walk
        cdef int32_t osh = -1
        cdef double span
        cdef bint more
        cdef cycle_t end = start + duration
        cdef sm_cursor* c
        if overlap & (overlap - 1) == 0:
            osh = 0
            while (1 << osh) < overlap:
                osh += 1
        for s in range(S):
            c = &self.cur[s]
            c.n = 0
            c.lk_n = 0
            for i in range(n):
                N = count[i]
                lo = first[i] + (s * N) // S
                hi = first[i] + ((s + 1) * N) // S
                if hi > lo:
                    c.n += hi - lo
                    c.lk_n += ((hi - 1) >> shift) - (lo >> shift) + 1
            if c.n == 0:
                continue
            active += 1
            c.seg = -1
            c.seg_lo = c.seg_hi = c.pos = 0
            c.j_base = c.lk_base = 0
            c.j = -2
            c.j_from = c.lk_from = 0
            c.nS = c.n * S
            c.dq = duration // c.n                  # (duration * S) = dq * (n * S) + dr
            c.dr = (duration % c.n) * S
            c.delay = 0
            c.pipe_free = start
            c.pipe_rem = 0
            if self._next_lookup(R, s, c, start, duration, first, count, n):
                self.sched_key[tail] = c.nominal
                self.sched_sm[tail] = s
                tail += 1
        # SMs in the order of their next lookup.  Full simulation: they move nearly in step, so a
        # sorted run with insertion from its tail is O(1); sampled: a binary heap
        if p.modulus == 1:
            i = 1
            while i < tail:                     # insertion sort of the first lookups
                sched_insert_at(self.sched_key, self.sched_sm, i)
                i += 1
        else:
            i = <int32_t>(tail // 2) - 1
            while i >= 0:
                heap_sift_down(self.sched_key, self.sched_sm, tail, i)
                i -= 1
        while head < tail:
            s = self.sched_sm[head]
            t = self.sched_key[head]
            c = &self.cur[s]
            if p.modulus == 1:
                head += 1
            if t - c.nominal > c.delay:
                c.delay = t - c.nominal
            v = c.v
            run = c.run
            lk = c.lk
            j = c.j
            lat = self.lookup(R, s, v, t)
            walk = self.last_walk
            st.lookups += 1
            st.accesses += run
            st.l1_hits += run - 1
            st.latency_cycles += lat + (run - 1) * l1
            c.pos = c.page + run
            more = self._next_lookup(R, s, c, start, duration, first, count, n)
            if p.modulus == 1:
                # full simulation: the lookup stands for itself and its run's L1 hits
                w = lat + (run - 1) * l1 + c.pipe_rem
                _pipe_take(c, t, w, osh, overlap)
                if more:
                    sched_insert(self.sched_key, self.sched_sm, &head, &tail, cap,
                                 imax(c.nominal + c.delay, c.pipe_free), s)
                else:
                    kernel_added += imax(end + c.delay, c.pipe_free) - end
                continue
            # this lookup stands for the SM's lookups from the midpoint with its previous
            # simulated one to the midpoint with its next (the first from the SM's start, the
            # last to its end): a latency that changes along the stream (a queue building up)
            # is sampled at the middle of what it stands for.  Each costs latency / overlap of
            # the SM's translation pipeline.  Full simulation: itself and its run's L1 hits.
            if more:
                lk_to = (lk + c.lk + 1) >> 1
                j_to = j + run + ((c.j - j - run + 1) >> 1)
            else:
                lk_to = c.lk_n
                j_to = c.n
            w_lookups = lk_to - c.lk_from
            w_acc = j_to - c.j_from
            w = w_lookups * lat + (w_acc - w_lookups) * l1 + c.pipe_rem
            _pipe_take(c, t, w, osh, overlap)
            if walk and p.modulus > 1:
                # the walks this one stands for reach the pool over the time the SM takes
                # for their accesses: nominal, or what its pipeline allows
                span = (<double>w_acc) * duration / c.n
                if span < <double>(c.pipe_free - t):
                    span = <double>(c.pipe_free - t)
                self._add_inflow(R, t, <double>w_lookups * walk, span)
            c.lk_from = lk_to
            c.j_from = j_to
            if more:
                if p.modulus == 1:
                    sched_insert(self.sched_key, self.sched_sm, &head, &tail, cap,
                                 imax(c.nominal + c.delay, c.pipe_free), s)
                else:
                    self.sched_key[0] = imax(c.nominal + c.delay, c.pipe_free)
                    heap_sift_down(self.sched_key, self.sched_sm, tail, 0)
            else:
                if p.modulus > 1:
                    tail -= 1
                    self.sched_key[0] = self.sched_key[tail]
                    self.sched_sm[0] = self.sched_sm[tail]
                    if tail > 1:
                        heap_sift_down(self.sched_key, self.sched_sm, tail, 0)
                kernel_added += imax(end + c.delay, c.pipe_free) - end
        # the SMs' mean delay: they sweep equal shares, so their spread is only the order in
        # which a walker happens to serve them (and, when sampled, noise a maximum would amplify)
        if active:
            kernel_added = (kernel_added + active // 2) // active
        st.kernels += 1
        st.cycles_added += kernel_added
        R.kernel_added = kernel_added
        return kernel_added

    cdef cycle_t translate_kernel(self, cycle_t start, cycle_t duration, const page_t* first,
                                  const page_t* count, int32_t n) noexcept nogil:
        cdef int32_t r, s, i, S = self.reps[0].p.sms, shift = self.reps[0].p.page_shift
        cdef int64_t total = 0, N, lo, hi
        for i in range(n):
            N = count[i]
            self.accesses_exact += N
            for s in range(S):
                lo = first[i] + (s * N) // S
                hi = first[i] + ((s + 1) * N) // S
                if hi > lo:
                    self.lookups_exact += ((hi - 1) >> shift) - (lo >> shift) + 1
        for r in range(self.n_rep):
            total += self._translate_replica(&self.reps[r], start, duration, first, count, n)
        total = (total + self.n_rep // 2) // self.n_rep
        self.kernels += 1
        self.cycles_added += total
        return total

    cdef int64_t kernel_cycles(self, int64_t k, int64_t now) except -1 nogil:
        """Translate kernel k of the attached kernel table, starting at ``now``.

        A kernel of a reuse class already translated is not simulated: it gets that
        translation's estimate (rescaled to its duration, ``_rescaled``) and counters."""
        cdef int64_t j, n, cls = -1, added, a
        cdef int32_t r
        if self.n_kernels == 0:
            return 0
        if self.k_shape != NULL:
            cls = self.k_shape[k]
        if cls >= 0 and self.memo_ok[cls]:
            added = self._rescaled(self.memo_added[cls], self.memo_t11[cls], self.k_t11[k])
            for r in range(self.n_rep):
                a = self._rescaled(self.memo_st[cls * self.n_rep + r].cycles_added, self.memo_t11[cls],
                                   self.k_t11[k])
                stats_add(&self.reps[r].st, &self.memo_st[cls * self.n_rep + r], a)
                self.reps[r].kernel_added = a
            self.accesses_exact += self.memo_exact[2 * cls]
            self.lookups_exact += self.memo_exact[2 * cls + 1]
            self.kernels += 1
            self.cycles_added += added
            self.reused += 1
            return added
        n = self.k_off[k + 1] - self.k_off[k]
        self.scratch_first.resize(n if n > 0 else 1)
        self.scratch_count.resize(n if n > 0 else 1)
        for j in range(n):
            self.scratch_first[j] = self.k_first[self.k_tensor[self.k_off[k] + j]]
            self.scratch_count[j] = self.k_pages[self.k_tensor[self.k_off[k] + j]]
        if cls < 0:
            return self.translate_kernel(now, self.k_t11[k], self.scratch_first.data(),
                                         self.scratch_count.data(), <int32_t>n)
        for r in range(self.n_rep):
            self.snap[r] = self.reps[r].st
        self.memo_exact[2 * cls] = self.accesses_exact
        self.memo_exact[2 * cls + 1] = self.lookups_exact
        added = self.translate_kernel(now, self.k_t11[k], self.scratch_first.data(),
                                      self.scratch_count.data(), <int32_t>n)
        for r in range(self.n_rep):
            self.memo_st[cls * self.n_rep + r] = stats_delta(&self.reps[r].st, &self.snap[r])
        self.memo_exact[2 * cls] = self.accesses_exact - self.memo_exact[2 * cls]
        self.memo_exact[2 * cls + 1] = self.lookups_exact - self.memo_exact[2 * cls + 1]
        self.memo_t11[cls] = self.k_t11[k]
        self.memo_added[cls] = added
        self.memo_ok[cls] = 1
        return added

    cdef int64_t _rescaled(self, int64_t added, int64_t t11_ref, int64_t t11) noexcept nogil:
        """What a kernel of duration t11 adds, given that one of its class with t11_ref added
        ``added``.  Up to one lookup's latency the kernel was compute-bound (the last lookups'
        latency shows): the same.  Beyond it the translation stream bounded the kernel, whose
        length t11_ref + added does not depend on the compute: that length less t11, and
        never less than one lookup's latency."""
        if added <= self.tail or t11 == t11_ref:
            return added
        return imax(self.tail, added + t11_ref - t11)

    cdef bint bulk_safe(self) noexcept nogil:
        return False                        # its state changes with every kernel and eviction

    def attach_kernels(self, first_pages, n_pages, offsets, tensors, t11_cycles, classes=None):
        """The kernel table kernel_cycles(k, now) translates (validated by g10core.tlb).
        ``classes``: per kernel its reuse class in [0, K) (-1: translate it every time)."""
        keep = {}
        def arr(name, a, dtype):
            a = np.ascontiguousarray(a, dtype=dtype)
            keep[name] = a if a.size else np.zeros(1, dtype)
            return keep[name]
        cdef int64_t[::1] v64
        cdef int32_t[::1] v32
        v64 = arr("first", first_pages, np.int64); self.k_first = &v64[0]
        v64 = arr("pages", n_pages, np.int64); self.k_pages = &v64[0]
        v64 = arr("offsets", offsets, np.int64); self.k_off = &v64[0]
        v32 = arr("tensors", tensors, np.int32); self.k_tensor = &v32[0]
        v64 = arr("t11", t11_cycles, np.int64); self.k_t11 = &v64[0]
        self.n_kernels = len(t11_cycles)
        self.k_shape = NULL
        cdef tlb_stats zero
        memset(&zero, 0, sizeof(tlb_stats))
        cdef int64_t n_cls
        if classes is not None:
            v64 = arr("classes", classes, np.int64); self.k_shape = &v64[0]
            n_cls = int(max(keep["classes"].max() + 1, 1))
            self.memo_ok.assign(n_cls, 0)
            self.memo_t11.assign(n_cls, 0)
            self.memo_added.assign(n_cls, 0)
            self.memo_exact.assign(2 * n_cls, 0)
            self.memo_st.assign(n_cls * self.n_rep, zero)
            self.snap.assign(self.n_rep, zero)
        self._kernel_arrays = keep
        top = int((keep["first"] + keep["pages"]).max()) if keep["first"].size else 0
        self._size_filter(top)

    def _size_filter(self, int64_t end_page):
        """Start counting entries per region for pages below ``end_page`` (the shootdown filter)."""
        cdef int32_t r, s
        cdef int64_t i, n
        cdef tlb_replica* R
        cdef tlb_array* arr
        for r in range(self.n_rep):
            R = &self.reps[r]
            free(R.region_count)
            R.n_regions = ((end_page >> R.p.page_shift) >> R.p.modulus_shift >> REGION_SHIFT) + 1
            R.region_count = <int32_t*>calloc(R.n_regions, sizeof(int32_t))
            if R.region_count == NULL:
                raise MemoryError()
            # entries installed before (lookups from Python): count them, or give up the filter
            for s in range(R.p.sms + 1):
                arr = &R.l2 if s == R.p.sms else &R.l1[s]
                for i in range(arr.entries):
                    if arr.tag[i] >= 0:
                        n = arr.tag[i] >> REGION_SHIFT
                        if n >= R.n_regions:
                            free(R.region_count)
                            R.region_count = NULL
                            break
                        R.region_count[n] += 1
                if R.region_count == NULL:
                    break

    def py_kernel_cycles(self, int64_t k, int64_t now):
        return self.kernel_cycles(k, now)

    cdef cycle_t invalidate(self, page_t first, page_t end) noexcept nogil:
        cdef int32_t r, s
        cdef int64_t v_lo, v_hi, va, nv, k, found1 = 0, found2 = 0, x
        cdef tlb_replica* R
        cdef cycle_t cost = 0
        self.invalidate_calls += 1
        if end <= first:
            return 0
        v_lo = first >> self.reps[0].p.page_shift
        v_hi = (end - 1) >> self.reps[0].p.page_shift
        for r in range(self.n_rep):
            R = &self.reps[r]
            k = R.p.modulus
            va = v_lo + ((R.residue - v_lo) & (k - 1))
            if va > v_hi:
                continue
            nv = (v_hi - va) // k + 1
            if region_empty(R, va >> R.p.modulus_shift, (va >> R.p.modulus_shift) + nv - 1):
                continue
            for s in range(R.p.sms):
                x = array_invalidate(&R.l1[s], va, nv, k, R.p.modulus_shift, R.region_count)
                R.st.invalidated_l1 += x
                found1 += x
            x = array_invalidate(&R.l2, va, nv, k, R.p.modulus_shift, R.region_count)
            R.st.invalidated_l2 += x
            found2 += x
        if found1:
            self.shootdowns_l1 += 1
            cost += self.reps[0].p.shootdown_l1
        if found2:
            self.shootdowns_l2 += 1
            cost += self.reps[0].p.shootdown_l2
        self.shootdown_cycles += cost
        return cost

    # ---- thin wrappers for the Python layer and tests ----

    def py_lookup(self, int32_t sm, int64_t v, cycle_t now, int32_t replica=0):
        """One lookup of translation page ``v`` (it must belong to the replica); (level, latency)."""
        cdef cycle_t lat = self.lookup(&self.reps[replica], sm, v, now)
        self.reps[replica].st.lookups += 1
        self.reps[replica].st.accesses += 1
        self.reps[replica].st.latency_cycles += lat
        self.accesses_exact += 1
        self.lookups_exact += 1
        return self.last_level, lat

    def entries(self):
        """Every valid entry: list of (replica, level name, sm or -1, translation page)."""
        cdef int32_t r, s
        cdef int64_t w
        cdef tlb_replica* R
        out = []
        for r in range(self.n_rep):
            R = &self.reps[r]
            for s in range(R.p.sms):
                for w in range(R.l1[s].entries):
                    if R.l1[s].tag[w] >= 0:
                        out.append((r, "l1", s, _page_of(R, R.l1[s].tag[w])))
            for w in range(R.l2.entries):
                if R.l2.tag[w] >= 0:
                    out.append((r, "l2", -1, _page_of(R, R.l2.tag[w])))
        return out

    def walker_free_cycles(self, int32_t replica=0):
        cdef tlb_replica* R = &self.reps[replica]
        return sorted(R.walker_free[i] for i in range(R.p.walkers))

    @property
    def n_replicas(self):
        return self.n_rep

    def replica_stats(self):
        """Unscaled counters of each replica (list of dicts)."""
        return [dict(self.reps[r].st) for r in range(self.n_rep)]

    def replica_params(self):
        return [dict(self.reps[r].p) for r in range(self.n_rep)]

    def hierarchy_stats(self):
        """Exact counters kept outside the replicas."""
        return {
            "accesses": self.accesses_exact,
            "lookups": self.lookups_exact,
            "kernels": self.kernels,
            "cycles_added": self.cycles_added,
            "invalidate_calls": self.invalidate_calls,
            "shootdowns_l1": self.shootdowns_l1,
            "shootdowns_l2": self.shootdowns_l2,
            "shootdown_cycles": self.shootdown_cycles,
            "kernels_reused": self.reused,
        }

    def last_kernel_added(self):
        """Each replica's estimate for the latest kernel (cycles)."""
        return [self.reps[r].kernel_added for r in range(self.n_rep)]

    def _state(self):
        cdef int32_t r, s
        cdef tlb_replica* R
        reps = []
        for r in range(self.n_rep):
            R = &self.reps[r]
            arrays = [_array_state(&R.l1[s]) for s in range(R.p.sms)]
            arrays.append(_array_state(&R.l2))
            arrays.append(_array_state(&R.pwc))
            walkers = [R.walker_free[i] for i in range(R.p.walkers)]
            reps.append((arrays, (walkers, R.ring_head), dict(R.st), R.kernel_added))
        top = (self.accesses_exact, self.lookups_exact, self.kernels, self.cycles_added,
               self.invalidate_calls, self.shootdowns_l1, self.shootdowns_l2, self.shootdown_cycles)
        return reps, top

    def _set_state(self, state):
        cdef int32_t r, s, i
        cdef tlb_replica* R
        for r in range(self.n_rep):                 # entries change: the filter's counts are stale
            free(self.reps[r].region_count)
            self.reps[r].region_count = NULL
        reps, top = state
        for r in range(self.n_rep):
            R = &self.reps[r]
            arrays, (walkers, R.ring_head), st, added = reps[r]
            for s in range(R.p.sms):
                _array_set_state(&R.l1[s], arrays[s])
            _array_set_state(&R.l2, arrays[R.p.sms])
            _array_set_state(&R.pwc, arrays[R.p.sms + 1])
            for i in range(R.p.walkers):
                R.walker_free[i] = walkers[i]
            R.st = st
            R.kernel_added = added
        (self.accesses_exact, self.lookups_exact, self.kernels, self.cycles_added,
         self.invalidate_calls, self.shootdowns_l1, self.shootdowns_l2, self.shootdown_cycles) = top


cdef inline int64_t _page_of(tlb_replica* R, int64_t key) noexcept:
    return (key << R.p.modulus_shift) | R.residue


cdef object _array_state(tlb_array* a):
    cdef int64_t i
    return ([a.tag[i] for i in range(a.entries)], [a.ready[i] for i in range(a.entries)],
            [a.head[i] for i in range(a.sets)], [a.fill[i] for i in range(a.sets)])


cdef void _array_set_state(tlb_array* a, object state):
    cdef int64_t i
    tag, ready, head, fill = state
    for i in range(a.entries):
        a.tag[i] = tag[i]
        a.ready[i] = ready[i]
    for i in range(a.sets):
        a.head[i] = head[i]
        a.fill[i] = fill[i]


cdef inline void stats_add(tlb_stats* a, const tlb_stats* d, int64_t cycles_added) noexcept nogil:
    """a += d (a reused kernel's counters), with its own cycles_added."""
    a.accesses += d.accesses
    a.lookups += d.lookups
    a.l1_hits += d.l1_hits
    a.l1_misses += d.l1_misses
    a.l2_hits += d.l2_hits
    a.l2_pending_hits += d.l2_pending_hits
    a.l2_misses += d.l2_misses
    a.pwc_hits += d.pwc_hits
    a.pwc_misses += d.pwc_misses
    a.walker_queue_cycles += d.walker_queue_cycles
    if d.max_walker_queue_cycles > a.max_walker_queue_cycles:
        a.max_walker_queue_cycles = d.max_walker_queue_cycles
    a.latency_cycles += d.latency_cycles
    a.cycles_added += cycles_added
    a.kernels += d.kernels


cdef inline tlb_stats stats_delta(const tlb_stats* after, const tlb_stats* before) noexcept nogil:
    """One translation's counters (shootdown counters excluded: they are not the kernel's)."""
    cdef tlb_stats d
    memset(&d, 0, sizeof(tlb_stats))
    d.accesses = after.accesses - before.accesses
    d.lookups = after.lookups - before.lookups
    d.l1_hits = after.l1_hits - before.l1_hits
    d.l1_misses = after.l1_misses - before.l1_misses
    d.l2_hits = after.l2_hits - before.l2_hits
    d.l2_pending_hits = after.l2_pending_hits - before.l2_pending_hits
    d.l2_misses = after.l2_misses - before.l2_misses
    d.pwc_hits = after.pwc_hits - before.pwc_hits
    d.pwc_misses = after.pwc_misses - before.pwc_misses
    d.walker_queue_cycles = after.walker_queue_cycles - before.walker_queue_cycles
    d.max_walker_queue_cycles = after.max_walker_queue_cycles
    d.latency_cycles = after.latency_cycles - before.latency_cycles
    d.cycles_added = after.cycles_added - before.cycles_added
    d.kernels = after.kernels - before.kernels
    return d


def _rebuild_hierarchy(params, residues, state, kernels=None):
    h = TLBHierarchy(list(params), list(residues))
    h._set_state(state)
    if kernels is not None:
        h.attach_kernels(*kernels)
    return h


# ---- a lone TLB (microbenchmarks, tests) -------------------------------------------

cdef class SetAssociativeTLB:
    """``entries`` entries in sets of ``ways`` (``entries % ways == 0``), LRU within a set;
    translation page v maps to set v % (entries // ways)."""

    def __cinit__(self, int32_t entries, int32_t ways):
        if array_init(&self.a, entries // ways, ways):
            raise MemoryError()
        self.hits = self.misses = 0

    def __dealloc__(self):
        array_free(&self.a)

    cdef bint _access(self, int64_t v) noexcept nogil:
        cdef int64_t set = array_setno(&self.a, v)
        cdef int64_t i = array_find(&self.a, set, v)
        if i >= 0:
            array_to_front(&self.a, set, i)
            self.hits += 1
            return True
        array_insert(&self.a, set, v, 0)
        self.misses += 1
        return False

    def access(self, int64_t v):
        """Look up page v (installing it on a miss); True on a hit."""
        return self._access(v)

    def invalidate(self, int64_t v):
        return array_invalidate(&self.a, v, 1, 1, 0, NULL)

    def cyclic(self, int64_t pages, int64_t rounds, int64_t stride=1):
        """Access pages 0, stride, 2 stride, ... ((pages - 1) stride) ``rounds`` times; hits per round."""
        out = np.zeros(rounds, np.int64)
        cdef int64_t[::1] h = out
        cdef int64_t r, i, n
        with nogil:
            for r in range(rounds):
                n = 0
                for i in range(pages):
                    n += self._access(i * stride)
                h[r] = n
        return out

    @property
    def sets(self):
        return self.a.sets

    @property
    def ways(self):
        return self.a.ways

    def stats(self):
        return {"hits": self.hits, "misses": self.misses}
