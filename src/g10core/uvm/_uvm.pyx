# cython: language_level=3
"""Compiled far-fault handler (the Python API is ``g10core.uvm``).

What happens between "a warp touches a page that is not on the GPU" and "the
warp runs again" (detailed_model.md §1), in the NVIDIA driver's terms:

* Fault buffer.  A fault names a 4 KiB page; the buffer holds one entry per
  migration unit (64 KiB by default): a fault on a unit already waiting is a
  duplicate, a fault on a page already resident or in flight waits for that
  page's arrival.  Entries wait in the order raised.
* Batches.  The handler services one batch at a time: the entries raised by
  the time the batch starts, at most ``batch_faults`` of them; faults raised
  while a batch is serviced wait for the next one.  A batch sorts its entries
  by address, decides per VA block (2 MiB) what moves in (the faulted units,
  whole, within the allocation, and what the prefetcher adds), evicts what it
  must, then costs its driver time in parts (``batch_fixed`` + ``batch_per_block``
  per VA block + ``batch_per_page`` per page + ``batch_unmap`` per VA block given
  host pages + the shootdowns; each part a counter) followed by the transfers: evictions out first when memory is full (the
  frames they free are the ones the pages in take), then one transfer per
  link direction and flow (host pages: host flow; SSD pages: read by the SSD,
  then its peer flow).  The batch ends when its last page is in; faults
  replay then.
* Prefetchers, never crossing the VA block nor the allocation: ``none``;
  ``sequential`` (the next units after the faulted one); ``tree``: the VA
  block is a binary tree whose leaves are migration units; going up from the
  faulted unit, a node whose resident (or incoming) pages are more than the
  threshold of its pages is filled whole: the driver's rule (TREE_DRIVER) fills
  each fault's largest such node counting resident and faulted pages only; the
  cumulative rule counts what a node below filled.  A block prefetches once
  ``prefetch_min_faults`` fault entries have migrated into it.
* Eviction: the head of the chunk list first: VA blocks in the order they got
  their first page on the GPU (the driver's used list, CHUNK_BY_ALLOCATION), or
  least recently migrated (CHUNK_BY_MIGRATION: a block moves to the back
  whenever pages migrate into it); blocks the current batch brings pages into
  are never victims, in whole blocks (2 MiB
  chunks) or in 4 KiB pages.  Destination: host memory, the SSD, or host
  memory while it has room and then the SSD.  Every page that leaves the GPU
  is shot down in the translator.  A ``VictimPicker`` (the replay's policy
  evictors) may name the victims instead; chunk granularity then takes the
  whole VA block of each victim, except in a block the batch migrates into.
* Room: with ``batch_pin_limit`` set (the replay sets the GPU's frames), a
  batch stops taking fault entries once the VA blocks it migrates into would
  hold more pages than that (the rest wait for the next batch), dropping the
  prefetch of the block that does not fit first; a hint's prefetch brings
  only what eviction made room for.

Residency is kept per VA block, for blocks with a page on the GPU only (a
512-bit map each, in a hash map by block number): the cost of a call is
proportional to the blocks it touches, never to the footprint.  Where pages
that are not on the GPU live is the ``TierMap``'s business (the replay's page
table implements it); the handler updates it for every page it moves.

Inputs are trusted: ``g10core.uvm`` validates them.
"""
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t, INT64_MAX
from libc.string cimport memset
from libcpp.algorithm cimport sort
from libcpp.utility cimport pair
from libcpp.vector cimport vector
from cython.operator cimport dereference as deref, preincrement as inc, predecrement as dec

from g10core.core._types cimport (cycle_t, page_t, uvm_params, uvm_move, uvm_stats, pcie_dir_stats,
                             TIER_NOT_PRESENT, TIER_SSD, TIER_HOST, TIER_GPU,
                             PREFETCH_NONE, PREFETCH_SEQUENTIAL, PREFETCH_TREE,
                             EVICT_TO_HOST, EVICT_TO_SSD, EVICT_HOST_THEN_SSD,
                             MOVE_FAULT, MOVE_PREFETCH, MOVE_HINT, MOVE_EVICT,
                             TREE_DRIVER, TREE_CUMULATIVE, CHUNK_BY_ALLOCATION, CHUNK_BY_MIGRATION,

                             HINT_ADVISE_PREFER_GPU, HINT_ADVISE_PREFER_HOST, HINT_ADVISE_ACCESSED_BY,
                             HINT_ADVISE_READ_MOSTLY)
from g10core.link._pcie cimport LinkCore, DIR_TO_DEVICE, DIR_FROM_DEVICE, FLOW_HOST, FLOW_PEER
from g10core.ssd._ssd cimport SSDCore
from g10core.tlb._tlb cimport Translator, NoTranslation

import numpy as np

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil
    int __builtin_clzll(unsigned long long) nogil

def layout():
    """The compiled codes (tests compare them with g10core.uvm's)."""
    return {
        "prefetchers": {"none": PREFETCH_NONE, "sequential": PREFETCH_SEQUENTIAL, "tree": PREFETCH_TREE},
        "evict_destinations": {"host": EVICT_TO_HOST, "ssd": EVICT_TO_SSD, "host-then-ssd": EVICT_HOST_THEN_SSD},
        "causes": {"fault": MOVE_FAULT, "prefetch": MOVE_PREFETCH, "hint": MOVE_HINT, "evict": MOVE_EVICT},
        "fault_answers": {"queued": FAULT_QUEUED, "duplicate": FAULT_DUPLICATE, "resident": FAULT_RESIDENT},
        "tiers": {"not_present": TIER_NOT_PRESENT, "ssd": TIER_SSD, "host": TIER_HOST, "gpu": TIER_GPU},
        "tree_rules": {"driver": TREE_DRIVER, "cumulative": TREE_CUMULATIVE},
        "chunk_orders": {"allocation": CHUNK_BY_ALLOCATION, "migration": CHUNK_BY_MIGRATION},
    }


MOVE_DTYPE = np.dtype([("first", np.int64), ("end", np.int64), ("src", np.int8), ("dst", np.int8),
                       ("cause", np.int8), ("done", np.int64), ("clean", np.int8)])
CAUSE_NAMES = ("fault", "prefetch", "hint", "evict")
TIER_NAMES = ("not_present", "ssd", "host", "gpu")


# ---- 512-bit block maps ------------------------------------------------------------

cdef extern from "g10core/ssd_math.h" nogil:
    # set bits of a word, inline in C: its multiply wraps on purpose, which the debug
    # build's overflow checks would raise on if it were Cython arithmetic
    int64_t g10_popcount64(uint64_t x)


# A range [lo, hi) of bits: its first word takes mask_from(lo), its last mask_to(hi), the words
# between whole.  (A mask clamped to both ends at every word cost bits_count a tenth of a
# detailed run's instructions, most of them in the tree prefetcher's counts.)

cdef inline uint64_t mask_from(int64_t lo) noexcept nogil:
    """Bits lo & 63 and up of lo's word.  (No shift here drops a set bit: the debug build's
    overflow checks would take that for an overflow.)"""
    return ~((<uint64_t>1 << (lo & 63)) - 1)


cdef inline uint64_t mask_to(int64_t hi) noexcept nogil:
    """Bits of the word of bit hi - 1 up to and including it."""
    return (<uint64_t>0xFFFFFFFFFFFFFFFF) >> (63 - ((hi - 1) & 63))


cdef inline void bits_set(uint64_t* w, int64_t lo, int64_t hi) noexcept nogil:
    cdef int64_t k, kl, kh
    if hi <= lo:
        return
    kl = lo >> 6
    kh = (hi - 1) >> 6
    if kl == kh:
        w[kl] |= mask_from(lo) & mask_to(hi)
        return
    w[kl] |= mask_from(lo)
    for k in range(kl + 1, kh):
        w[k] = <uint64_t>0xFFFFFFFFFFFFFFFF
    w[kh] |= mask_to(hi)


cdef inline void bits_clear(uint64_t* w, int64_t lo, int64_t hi) noexcept nogil:
    cdef int64_t k, kl, kh
    if hi <= lo:
        return
    kl = lo >> 6
    kh = (hi - 1) >> 6
    if kl == kh:
        w[kl] &= ~(mask_from(lo) & mask_to(hi))
        return
    w[kl] &= ~mask_from(lo)
    for k in range(kl + 1, kh):
        w[k] = 0
    w[kh] &= ~mask_to(hi)


cdef inline int64_t bits_count(const uint64_t* w, int64_t lo, int64_t hi) noexcept nogil:
    cdef int64_t k, kl, kh, n
    if hi <= lo:
        return 0
    kl = lo >> 6
    kh = (hi - 1) >> 6
    if kl == kh:
        return g10_popcount64(w[kl] & mask_from(lo) & mask_to(hi))
    n = g10_popcount64(w[kl] & mask_from(lo)) + g10_popcount64(w[kh] & mask_to(hi))
    for k in range(kl + 1, kh):
        n += g10_popcount64(w[k])
    return n


cdef inline int64_t bits_total(const uint64_t* w) noexcept nogil:
    cdef int k
    cdef int64_t n = 0
    for k in range(8):
        n += g10_popcount64(w[k])
    return n


cdef inline bint bit_test(const uint64_t* w, int64_t i) noexcept nogil:
    return (w[i >> 6] >> (i & 63)) & 1


def bits_count_py(words, int64_t lo, int64_t hi):
    """bits_count on a copy of ``words`` (8 uint64, a block map) for tests: set bits in [lo, hi)."""
    cdef uint64_t w[8]
    cdef int k
    for k in range(8):
        w[k] = words[k]
    return bits_count(w, lo, hi)


def bits_set_clear_py(words, int64_t lo, int64_t hi):
    """(bits_set, bits_clear) of [lo, hi) on copies of ``words`` (8 uint64), for tests."""
    cdef uint64_t a[8]
    cdef uint64_t c[8]
    cdef int k
    for k in range(8):
        a[k] = c[k] = words[k]
    bits_set(a, lo, hi)
    bits_clear(c, lo, hi)
    return [a[k] for k in range(8)], [c[k] for k in range(8)]


cdef inline int64_t next_set(const uint64_t* w, int64_t i, int64_t n) noexcept nogil:
    """First set bit at or after i (n when none below n)."""
    cdef int64_t k
    cdef uint64_t x
    while i < n:
        k = i >> 6
        x = w[k] >> (i & 63)
        if x:
            i += __builtin_ctzll(x)
            return i if i < n else n
        i = (k + 1) << 6
    return n


cdef inline int64_t next_clear(const uint64_t* w, int64_t i, int64_t n) noexcept nogil:
    """First clear bit at or after i (n when none below n)."""
    cdef int64_t k
    cdef uint64_t x
    while i < n:
        k = i >> 6
        x = (~w[k]) >> (i & 63)
        if x:
            i += __builtin_ctzll(x)
            return i if i < n else n
        i = (k + 1) << 6
    return n


cdef inline int64_t imax(int64_t a, int64_t b) noexcept nogil:
    return a if a > b else b


cdef inline int64_t imin(int64_t a, int64_t b) noexcept nogil:
    return a if a < b else b


# ---- where pages live ----------------------------------------------------------------

cdef class TierMap:
    """Base: every page is in host memory and nothing is recorded."""

    cdef int8_t tier_run(self, page_t page, page_t limit, page_t* run_end) noexcept nogil:
        run_end[0] = limit
        return TIER_HOST

    cdef void set_tier(self, page_t first, page_t end, int8_t tier) noexcept nogil:
        pass

    cdef page_t lpn(self, page_t page) noexcept nogil:
        return page

    def py_tier_runs(self, page_t first, page_t end):
        """[(first, end, tier)] covering [first, end)."""
        cdef page_t e
        cdef int8_t t
        out = []
        while first < end:
            t = self.tier_run(first, end, &e)
            out.append((first, e, t))
            first = e
        return out

    def py_set_tier(self, page_t first, page_t end, int8_t tier):
        self.set_tier(first, end, tier)


cdef class RunTierMap(TierMap):
    """Tiers kept as runs in an ordered map (every page starts in ``initial_tier``)."""

    def __init__(self, int initial_tier=TIER_HOST):
        self.runs.clear()
        self.runs[0] = <int8_t>initial_tier

    cdef int8_t tier_run(self, page_t page, page_t limit, page_t* run_end) noexcept nogil:
        cdef cmap[int64_t, int8_t].iterator it = self.runs.upper_bound(page)
        run_end[0] = limit if it == self.runs.end() else imin(deref(it).first, limit)
        dec(it)
        return deref(it).second

    cdef void set_tier(self, page_t first, page_t end, int8_t tier) noexcept nogil:
        cdef cmap[int64_t, int8_t].iterator it
        cdef int8_t after
        if end <= first:
            return
        # the tier in force at `end` continues after the range
        it = self.runs.upper_bound(end)
        dec(it)
        after = deref(it).second
        it = self.runs.upper_bound(first)
        while it != self.runs.end() and deref(it).first <= end:
            it = self.runs.erase(it)
        self.runs[end] = after
        self.runs[first] = tier
        # merge with equal neighbours
        it = self.runs.find(end)
        if deref(it).second == tier:
            self.runs.erase(it)
        it = self.runs.find(first)
        if it != self.runs.begin():
            dec(it)
            if deref(it).second == tier:
                self.runs.erase(self.runs.find(first))

    def n_runs(self):
        return self.runs.size()


cdef class VictimPicker:
    """Base: names no victim (the handler then overcommits)."""

    cdef bint pick(self, bint for_fault, int64_t need, int64_t block_pages, page_t* first, page_t* end,
                   int8_t* dest) noexcept nogil:
        return False


cdef inline uint64_t keep_lowest(uint64_t* w, int64_t n) noexcept nogil:
    """Clear all but the lowest n set bits of the 512-bit map w."""
    cdef int k
    cdef int64_t c
    for k in range(8):
        c = g10_popcount64(w[k])
        if n >= c:
            n -= c
            continue
        while g10_popcount64(w[k]) > n:
            w[k] &= ~((<uint64_t>1) << (63 - __builtin_clzll(w[k])))
        n = 0
    return 0


# ---- the handler -----------------------------------------------------------------------

cdef class FarFaultHandler:
    """Fault buffer, batches, prefetcher, eviction; build it through ``g10core.uvm.FaultHandler``."""

    def __init__(self, dict params, LinkCore link, SSDCore ssd=None, TierMap tiers=None,
                 Translator translator=None, VictimPicker picker=None):
        self.p = params
        for name in ("unit_pages", "block_pages"):
            if params[name] < 1 or params[name] & (params[name] - 1):
                raise ValueError(f"{name} = {params[name]}: must be a power of two")
        # pages are >= 0: a shift is their floor division, without a division's 20-40 cycles
        self.unit_shift = (<int64_t>params["unit_pages"]).bit_length() - 1
        self.block_shift = (<int64_t>params["block_pages"]).bit_length() - 1
        self.picker = picker
        self.link = link
        self.ssd = ssd
        self.tiers = tiers if tiers is not None else RunTierMap(TIER_HOST)
        self.translator = translator if translator is not None else NoTranslation()
        self.lrm_head = self.lrm_tail = -1
        self.busy_until = self.last_start = 0
        self.gpu_used = self.host_used = 0
        self.epoch = 0
        self.live_blocks = 0
        self.last_arrival = -1
        self.pass_batches = 0
        self.tp.enable = False            # set_thrashing turns it on
        self.pin_horizon = 0
        self.reset_stats()

    def __reduce__(self):
        raise TypeError("FarFaultHandler does not pickle: rebuild it from its FaultHandlerSpec")

    def reset_stats(self):
        """Zero the counters (state is kept)."""
        cdef uvm_stats z
        memset_stats(&z)
        self.st = z
        memset(&self.rs, 0, sizeof(remote_stats))

    # ---- VA-block records ----

    cdef int32_t _find(self, int64_t block) noexcept nogil:
        return g10_bi_find(self.block_index, block)

    cdef int32_t _record(self, int64_t block, int64_t alloc_lo, int64_t alloc_hi) except -1 nogil:
        """The record of ``block`` (created empty, clipped to the allocation, when missing)."""
        cdef int32_t i = self._find(block)
        cdef va_block b
        cdef int k
        if i >= 0:
            return i
        b.block = block
        b.valid_lo = imax(alloc_lo - block * self.p.block_pages, 0)
        b.valid_hi = imin(alloc_hi - block * self.p.block_pages, self.p.block_pages)
        for k in range(8):
            b.resident[k] = 0
            b.incoming[k] = 0
            b.dup[k] = 0
        b.n_resident = 0
        b.arrive = 0
        b.settled = 0
        b.epoch = -1
        b.faults_in = 0
        b.prev = b.next = -1
        if self.free_records.size():
            i = self.free_records.back()
            self.free_records.pop_back()
            self.blocks[i] = b
        else:
            i = <int32_t>self.blocks.size()
            self.blocks.push_back(b)
        g10_bi_put(self.block_index, block, i)
        self.live_blocks += 1
        self.st.blocks_created += 1
        if self.live_blocks > self.st.max_blocks:
            self.st.max_blocks = self.live_blocks
        return i

    cdef void _migrating(self, va_block* b, const uint64_t* bits) noexcept nogil:
        """Pages ``bits`` of block b start migrating in: what came before has settled (its
        latest migration's completion); the caller sets ``arrive`` once the transfer is timed."""
        cdef int k
        if b.arrive > b.settled:
            b.settled = b.arrive
        for k in range(8):
            b.incoming[k] = bits[k]

    cdef void _drop_record(self, int32_t i) noexcept nogil:
        g10_bi_erase(self.block_index, self.blocks[i].block)
        self.free_records.push_back(i)
        self.live_blocks -= 1

    cdef void _lrm_unlink(self, int32_t i) noexcept nogil:
        cdef va_block* b = &self.blocks[i]
        if b.prev >= 0:
            self.blocks[b.prev].next = b.next
        elif self.lrm_head == i:
            self.lrm_head = b.next
        else:
            return                                      # not linked
        if b.next >= 0:
            self.blocks[b.next].prev = b.prev
        else:
            self.lrm_tail = b.prev
        b.prev = b.next = -1

    cdef void _lrm_append(self, int32_t i) noexcept nogil:
        cdef va_block* b = &self.blocks[i]
        b.prev = self.lrm_tail
        b.next = -1
        if self.lrm_tail >= 0:
            self.blocks[self.lrm_tail].next = i
        else:
            self.lrm_head = i
        self.lrm_tail = i

    # ---- prefetchers ----

    cdef void _prefetch_tree(self, va_block* b, int64_t unit_off, uint64_t* occ) noexcept nogil:
        """Walk up from the faulted unit; fill every node more than the threshold occupied.
        A node holds the one below it, whose occupancy is known: only its other half is counted."""
        cdef int64_t size = self.p.unit_pages, off = unit_off, lo, hi, valid, cnt
        cdef int64_t plo = 0, phi = 0, pcnt = 0          # the node below (clipped) and its occupancy
        while size < self.p.block_pages:
            size *= 2
            off &= ~(size - 1)
            lo = imax(off, b.valid_lo)
            hi = imin(off + size, b.valid_hi)
            valid = hi - lo
            if valid <= 0:
                continue
            if phi > plo:                                 # nodes nest: [plo, phi) lies in [lo, hi)
                cnt = pcnt + bits_count(occ, lo, plo) + bits_count(occ, phi, hi)
            else:
                cnt = bits_count(occ, lo, hi)
            if cnt < valid and cnt * self.p.threshold_den > self.p.threshold_num * valid:
                bits_set(occ, lo, hi)
                cnt = valid
            plo = lo
            phi = hi
            pcnt = cnt

    cdef void _prefetch_tree_driver(self, va_block* b, size_t first, size_t end, uint64_t* occ) noexcept nogil:
        """The driver's rule (compute_prefetch_region, uvm_perf_prefetch.c): the tree counts the
        resident pages and every page this batch faults into the block (``occ`` on entry, faulted
        units grown whole); for each faulted unit (batch entries [first, end)) the largest node
        above it with count / pages strictly over the threshold is filled.  Fills are not counted
        by the nodes above them, nor by the next fault's walk."""
        cdef uint64_t fill[8]
        cdef int64_t B = self.p.block_pages, U = self.p.unit_pages, size, off, node, lo, hi, valid, best_lo, best_hi
        cdef int64_t plo, phi, pcnt, cnt
        cdef size_t j
        cdef int k
        for k in range(8):
            fill[k] = 0
        for j in range(first, end):
            off = self.batch[j].unit * U - b.block * B
            if bit_test(fill, imax(off, b.valid_lo)):
                continue            # inside a node filled for an earlier fault: the same node's answer
            size = U
            best_lo = best_hi = 0
            # the node below (clipped to the valid pages) and its count: a node's count is its
            # child's plus its other half's (occ does not change in this walk; fills go to fill)
            plo = imax(off, b.valid_lo)
            phi = imin(off + U, b.valid_hi)
            pcnt = bits_count(occ, plo, phi)
            while size < B:
                size *= 2
                node = off & ~(size - 1)
                lo = imax(node, b.valid_lo)
                hi = imin(node + size, b.valid_hi)
                valid = hi - lo
                if valid <= 0:
                    continue                            # (then so was the node below)
                if phi > plo:                           # nodes nest: [plo, phi) lies in [lo, hi)
                    cnt = pcnt + bits_count(occ, lo, plo) + bits_count(occ, phi, hi)
                else:
                    cnt = bits_count(occ, lo, hi)
                if cnt * self.p.threshold_den > self.p.threshold_num * valid:
                    best_lo = lo
                    best_hi = hi
                plo = lo
                phi = hi
                pcnt = cnt
            if best_hi > best_lo:
                bits_set(fill, best_lo, best_hi)
                if best_lo <= b.valid_lo and best_hi >= b.valid_hi:
                    break                               # the whole block: nothing more to add
        for k in range(8):
            occ[k] |= fill[k]

    cdef void _chunk_used(self, int32_t i) noexcept nogil:
        """Pages are about to migrate into block record i: its place in the chunk list.  A chunk
        joins the tail when it gets its first page; under CHUNK_BY_MIGRATION it also moves there
        on every later migration in (least recently migrated first)."""
        if self.blocks[i].n_resident == 0:
            self._lrm_append(i)
        elif self.p.chunk_order == CHUNK_BY_MIGRATION:
            self._lrm_unlink(i)
            self._lrm_append(i)

    cdef int64_t _host_blocks(self, size_t first_move) noexcept nogil:
        """VA blocks that moves[first_move:] bring host pages into (each is unmapped on the host)."""
        cdef int64_t n = 0, last = -1, blk
        cdef size_t j
        for j in range(first_move, self.moves.size()):
            if self.moves[j].src == TIER_HOST and self.moves[j].cause != MOVE_EVICT:
                blk = self.moves[j].first >> self.block_shift
                if blk != last:
                    n += 1
                    last = blk
        return n

    # ---- moves ----

    cdef int _add_tier_moves(self, page_t a, page_t end, int8_t cause, vector[uvm_move]& out) except -1 nogil:
        """Append to ``out`` a move in for pages [a, end), one per run of one source tier."""
        cdef page_t run_end
        cdef uvm_move m
        m.dst = TIER_GPU
        m.cause = cause
        m.done = -1
        m.clean = 0
        while a < end:
            m.src = self.tiers.tier_run(a, end, &run_end)
            m.first = a
            m.end = run_end
            out.push_back(m)
            a = run_end
        return 0

    cdef int _add_runs(self, int64_t base, const uint64_t* bits, int64_t n_bits, int8_t cause) except -1 nogil:
        """Append a move in for each run of set bits (pages base + i), split by source tier."""
        cdef int64_t i = next_set(bits, 0, n_bits), e
        while i < n_bits:
            e = next_clear(bits, i, n_bits)
            self._add_tier_moves(base + i, base + e, cause, self.moves)
            i = next_set(bits, e, n_bits)
        return 0

    cdef int _add_fault_runs(self, int64_t base, const uint64_t* fresh, const uint64_t* pref,
                             int64_t n_bits) except -1 nogil:
        """_add_runs(fresh, MOVE_FAULT) then _add_runs(pref, MOVE_PREFETCH) (the bits are
        disjoint), with one walk over the tier map in page order instead of two: the second
        would start over at the block's first page, where the tier map's finger is not."""
        cdef uint64_t both[8]
        cdef int64_t i, e, f, k
        for k in range(8):
            both[k] = fresh[k] | pref[k]
        self.pref_moves.clear()
        i = next_set(both, 0, n_bits)
        while i < n_bits:
            e = next_clear(both, i, n_bits)
            while i < e:                  # the fresh and the prefetched stretches of [i, e)
                if bit_test(fresh, i):
                    f = next_clear(fresh, i, e)
                    self._add_tier_moves(base + i, base + f, MOVE_FAULT, self.moves)
                else:
                    f = next_set(fresh, i, e)
                    self._add_tier_moves(base + i, base + f, MOVE_PREFETCH, self.pref_moves)
                i = f
            i = next_set(both, e, n_bits)
        self.moves.insert(self.moves.end(), self.pref_moves.begin(), self.pref_moves.end())
        return 0

    cdef cycle_t _move_in(self, size_t first_move, cycle_t t_in, cycle_t t_floor) noexcept nogil:
        """Start the transfers of moves[first_move:] that come in (at t_in); return when all are in."""
        cdef size_t j
        cdef int64_t n, host_bytes = 0, ssd_bytes = 0, lo, hi
        cdef cycle_t done = t_floor, ssd_ready = t_in, r
        cdef uvm_move* m
        cdef bint noted = False
        for j in range(first_move, self.moves.size()):
            m = &self.moves[j]
            if m.cause == MOVE_EVICT:
                continue
            n = m.end - m.first
            if m.src == TIER_HOST:
                if not self.advice.empty():
                    self._mark_duplicates(m.first, m.end)
                host_bytes += n * self.p.page_bytes
                self.st.pages_from_host += n
                self.host_used -= n
            elif m.src == TIER_SSD:
                ssd_bytes += n * self.p.page_bytes
                self.st.pages_from_ssd += n
                if self.ssd is not None:
                    if not noted:
                        noted = True
                        self._note_ssd_wait(t_in)
                    r = self.ssd.read_host(self.tiers.lpn(m.first), n, t_in)
                    if r > ssd_ready:
                        ssd_ready = r
                    # the page is on the GPU now and is written back whole when evicted (clean
                    # pages are not tracked): its flash copy is garbage from here on
                    self.ssd.trim_host(self.tiers.lpn(m.first), n)
            elif m.src == TIER_NOT_PRESENT:
                self.st.pages_zero_filled += n
            self.ranges.push_back(pair[int64_t, int64_t](m.first, m.end))
        # the tier map learns each contiguous range once (faulted units and their prefetch lie
        # side by side): one run and one arrival record per range, not per move
        sort(self.ranges.begin(), self.ranges.end())
        j = 0
        while j < self.ranges.size():
            lo = self.ranges[j].first
            hi = self.ranges[j].second
            j += 1
            while j < self.ranges.size() and self.ranges[j].first == hi:
                hi = self.ranges[j].second
                j += 1
            self.tiers.set_tier(lo, hi, TIER_GPU)
        self.ranges.clear()
        if host_bytes:
            r = self.link.submit(DIR_TO_DEVICE, FLOW_HOST, host_bytes, t_in)
            if r > done:
                done = r
        if ssd_bytes:
            r = self.link.submit(DIR_TO_DEVICE, FLOW_PEER, ssd_bytes, ssd_ready)
            if r > done:
                done = r
        if t_in > done:
            done = t_in
        for j in range(first_move, self.moves.size()):
            if self.moves[j].cause != MOVE_EVICT:
                self.moves[j].done = done
        return done

    cdef int64_t _take_pages(self, int32_t i, const uint64_t* take, int8_t forced_dest) except -1 nogil:
        """Evict the pages ``take`` of block record i (all resident); returns how many."""
        cdef va_block* b = &self.blocks[i]
        cdef int64_t B = self.p.block_pages, base = b.block * B, k, e, n, n_host, total = 0
        cdef int64_t lo = next_set(take, 0, B)
        cdef int8_t dest
        cdef uvm_move m
        cdef page_t a, r
        cdef bint clean
        if self.tp.enable:
            if forced_dest == TIER_HOST or forced_dest == TIER_SSD:
                # a user's migration (a hint's pre-eviction) takes precedence over the heuristic:
                # the driver clears the block's thrashing state (uvm_perf_thrashing.c)
                self.thrash.erase(b.block)
            else:
                self._thrash_evicted(b, take)
        while lo < B:
            e = next_clear(take, lo, B)
            n = e - lo
            m.src = TIER_GPU
            m.cause = MOVE_EVICT
            m.done = -1
            m.clean = 0
            if forced_dest == TIER_NOT_PRESENT:
                # dead data: dropped, no transfer; any SSD copy is garbage
                m.first = base + lo
                m.end = base + e
                m.dst = TIER_NOT_PRESENT
                self.moves.push_back(m)
                self.tiers.set_tier(m.first, m.end, TIER_NOT_PRESENT)
                self.st.pages_dropped += n
                self.shootdown += self.translator.invalidate(base + lo, base + e)
                total += n
                lo = next_set(take, e, B)
                continue
            # destination: the SSD when a hint says so; host memory while it has room when a hint
            # says so or under host-then-ssd (the rest to the SSD); else the rule
            if forced_dest == TIER_SSD:
                n_host = 0
            elif forced_dest == TIER_HOST or self.p.evict_destination == EVICT_HOST_THEN_SSD:
                n_host = imax(0, imin(n, self.p.host_pages - self.host_used))
            elif self.p.evict_destination == EVICT_TO_HOST:
                n_host = n
            else:
                n_host = 0
            if n_host:
                a = base + lo
                while a < base + lo + n_host:
                    # a read duplicate's host copy is still valid, so its eviction is a drop (no
                    # bytes, no traffic; readdup_clean_pages)
                    clean = bit_test(b.dup, a - base)
                    r = base + (next_clear(b.dup, a - base, lo + n_host) if clean
                                else next_set(b.dup, a - base, lo + n_host))
                    m.first = a
                    m.end = r
                    m.dst = TIER_HOST
                    m.clean = clean
                    self.moves.push_back(m)
                    self.tiers.dropping_clean = clean
                    self.tiers.set_tier(a, r, TIER_HOST)
                    self.tiers.dropping_clean = False
                    if clean:
                        self.rs.readdup_clean_pages += r - a
                    else:
                        self.out_bytes[0] += (r - a) * self.p.page_bytes
                        self.st.pages_to_host += r - a
                    a = r
                m.clean = 0
                self.host_used += n_host
            if n > n_host:
                m.first = base + lo + n_host
                m.end = base + e
                m.dst = TIER_SSD
                self.moves.push_back(m)
                self.tiers.set_tier(m.first, m.end, TIER_SSD)
                self.out_bytes[1] += (n - n_host) * self.p.page_bytes
                self.st.pages_to_ssd += n - n_host
            self.shootdown += self.translator.invalidate(base + lo, base + e)
            total += n
            lo = next_set(take, e, B)
        for k in range(8):
            b.resident[k] &= ~take[k]
            b.dup[k] &= ~take[k]
        b.n_resident -= total
        self.gpu_used -= total
        self.st.evictions += 1
        if b.n_resident == 0:
            self._lrm_unlink(i)
            self._drop_record(i)
        return total

    cdef int64_t _evict(self, int64_t need, int8_t forced_dest, cycle_t now, bint for_fault) except -1 nogil:
        """Free ``need`` frames, least recently migrated block first (or the picker's victims);
        returns pages evicted."""
        cdef int32_t i = self.lrm_head, nxt
        cdef int64_t got = 0, k, want, lo
        cdef uint64_t take[8]
        cdef va_block* b
        if self.picker is not None:
            got = self._evict_picked(need, for_fault)
            if got < need and for_fault:
                self.st.overcommit_pages += need - got
            return got
        while got < need and i >= 0:
            b = &self.blocks[i]
            nxt = b.next
            if b.epoch == self.epoch:                   # pages this batch brings in: pinned
                i = nxt
                continue
            if self.p.evict_pages >= self.p.block_pages:
                for k in range(8):
                    take[k] = b.resident[k]
            else:
                # 4 KiB granularity: the block's lowest resident pages, as many as needed
                for k in range(8):
                    take[k] = 0
                want = need - got
                lo = next_set(b.resident, 0, self.p.block_pages)
                while want > 0 and lo < self.p.block_pages:
                    take[lo >> 6] |= (<uint64_t>1) << (lo & 63)
                    want -= 1
                    lo = next_set(b.resident, lo + 1, self.p.block_pages)
            got += self._take_pages(i, take, forced_dest)
            i = nxt
        if got < need:
            self.st.overcommit_pages += need - got
        return got

    cdef int64_t _evict_picked(self, int64_t need, bint for_fault) except -1 nogil:
        """Free ``need`` frames from the picker's victims: each victim's pages, or (chunk
        granularity) its whole VA block unless the current operation migrates into it."""
        cdef int64_t got = 0, B = self.p.block_pages, base, k, n
        cdef page_t a, e
        cdef int8_t dest
        cdef int32_t rec
        cdef uint64_t take[8]
        cdef va_block* b
        while got < need:
            if not self.picker.pick(for_fault, need - got, B, &a, &e, &dest):
                break
            self.st.picked_victims += 1
            rec = self._find(a >> self.block_shift)
            if rec < 0:
                break                                   # the picker named pages not on the GPU
            b = &self.blocks[rec]
            base = b.block * B
            for k in range(8):
                take[k] = 0
            if self.p.evict_pages >= B and b.epoch != self.epoch:
                for k in range(8):
                    take[k] = b.resident[k]
            else:
                bits_set(take, a - base, e - base)
                for k in range(8):
                    take[k] &= b.resident[k]
            n = bits_total(take)
            if n == 0:
                break
            got += self._take_pages(rec, take, dest if dest == TIER_NOT_PRESENT else -1)
        return got

    cdef void _put_back(self, size_t first) noexcept nogil:
        """Return batch entries [first:] to the buffer's front (they wait for the next batch)."""
        cdef size_t j = self.batch.size()
        while j > first:
            j -= 1
            self.buffer.push_front(self.batch[j])
            self.pending.insert(self.batch[j].unit)
        self.batch.resize(first)

    cdef void _note_ssd_wait(self, cycle_t t) noexcept nogil:
        """SSD commands are about to be submitted at t: count the wait for a free queue slot
        (GC, a full write buffer or queue make the SSD hold transfers back)."""
        cdef cycle_t w = self.ssd.next_issue_time(t) - t
        if w > 0:
            self.st.ssd_throttled += 1
            self.st.ssd_wait_cycles += w

    cdef cycle_t _send_out(self, size_t first_move, cycle_t t) noexcept nogil:
        """Start the transfers of the evictions among moves[first_move:] at t; return when the
        frames are free (the data has left the GPU)."""
        cdef size_t j
        cdef cycle_t done = t, r, ack
        cdef uvm_move* m
        if self.out_bytes[0]:
            r = self.link.submit(DIR_FROM_DEVICE, FLOW_HOST, self.out_bytes[0], t)
            done = imax(done, r)
        if self.out_bytes[1]:
            r = self.link.submit(DIR_FROM_DEVICE, FLOW_PEER, self.out_bytes[1], t)
            done = imax(done, r)
            if self.ssd is not None:
                # a peer write has left the GPU once the SSD acknowledged it: a full queue or
                # write buffer (GC, flash programs behind) holds the frames; that wait is the
                # SSD's throttling of the handler
                ack = r
                for j in range(first_move, self.moves.size()):
                    m = &self.moves[j]
                    if m.cause == MOVE_EVICT and m.dst == TIER_SSD:
                        ack = imax(ack, self.ssd.write_host(self.tiers.lpn(m.first), m.end - m.first, t))
                if ack > r:
                    self.st.ssd_throttled += 1
                    self.st.ssd_wait_cycles += ack - r
                done = imax(done, ack)
        for j in range(first_move, self.moves.size()):
            if self.moves[j].cause == MOVE_EVICT:
                self.moves[j].done = t if self.moves[j].clean else done
        self.out_bytes[0] = self.out_bytes[1] = 0
        return done

    # ---- entry points ----

    cdef int raise_fault(self, page_t page, page_t alloc_lo, page_t alloc_hi, cycle_t now) noexcept nogil:
        cdef int32_t i = self._find(page >> self.block_shift)
        cdef int64_t unit = page >> self.unit_shift
        cdef fault_entry e
        self.st.faults += 1
        if i >= 0 and bit_test(self.blocks[i].resident, page - self.blocks[i].block * self.p.block_pages):
            self.st.resident_faults += 1
            self.last_arrival = self.arrival(page)
            return FAULT_RESIDENT
        if self.pending.contains(unit):
            self.st.duplicate_faults += 1
            return FAULT_DUPLICATE
        self.pending.insert(unit)
        e.unit = unit
        e.raised = now
        e.alloc_lo = alloc_lo
        e.alloc_hi = alloc_hi
        self.buffer.push_back(e)
        if <int64_t>self.buffer.size() > self.st.max_buffer:
            self.st.max_buffer = self.buffer.size()
        return FAULT_QUEUED

    cdef cycle_t next_batch_time(self) noexcept nogil:
        if self.buffer.empty():
            return -1
        return imax(self.busy_until, self.buffer.front().raised)

    cdef cycle_t service_batch(self, cycle_t now) noexcept nogil:
        cdef cycle_t start, t_drv, t_in, out_done, end
        cdef int64_t B = self.p.block_pages, U = self.p.unit_pages, blockno, off, lo, hi, n_new, n_in = 0
        cdef int64_t evicted = 0, seq_hi, k, n_pref, pinned = 0, limit = self.p.batch_pin_limit
        cdef int64_t n_blocks = 0, n_unmap = 0, c_fixed, c_block, c_page, c_unmap
        cdef size_t i, i0, j, n_batch, first_evict, first_block_move
        cdef bint driver_tree = self.p.prefetcher == PREFETCH_TREE and self.p.tree_rule == TREE_DRIVER
        cdef int32_t rec
        cdef va_block* b
        cdef uint64_t occ[8]
        cdef uint64_t faulted[8]
        cdef uint64_t fresh[8]
        cdef uint64_t pref[8]
        if self.buffer.empty():
            return now
        start = imax(imax(now, self.busy_until), self.buffer.front().raised)
        # a service pass: batches back to back (no idle handler between them), at most
        # batches_per_service of them (the driver's bottom half then yields)
        if self.pass_batches == 0 or start > self.busy_until or self.pass_batches >= self.p.batches_per_service:
            self.st.service_passes += 1
            self.pass_batches = 0
        self.pass_batches += 1
        self.last_start = start
        self.epoch += 1
        self.moves.clear()
        self.batch.clear()
        self.out_bytes[0] = self.out_bytes[1] = 0
        self.shootdown = 0
        while (not self.buffer.empty() and <int64_t>self.batch.size() < self.p.batch_faults
               and self.buffer.front().raised <= start):
            self.batch.push_back(self.buffer.front())
            self.pending.erase(self.buffer.front().unit)
            self.buffer.pop_front()
        n_batch = self.batch.size()
        sort(self.batch.begin(), self.batch.end(), g10_by_unit())
        # per VA block: the faulted units, then the prefetcher
        i = 0
        while i < n_batch:
            i0 = i
            blockno = self.batch[i].unit >> (self.block_shift - self.unit_shift)
            rec = self._record(blockno, self.batch[i].alloc_lo, self.batch[i].alloc_hi)
            b = &self.blocks[rec]
            for k in range(8):
                occ[k] = b.resident[k]
                faulted[k] = 0
            while i < n_batch and self.batch[i].unit >> (self.block_shift - self.unit_shift) == blockno:
                off = self.batch[i].unit * U - blockno * B
                lo = imax(off, b.valid_lo)
                hi = imin(off + U, b.valid_hi)
                bits_set(faulted, lo, hi)
                bits_set(occ, lo, hi)
                if self.p.prefetcher == PREFETCH_TREE and not driver_tree:
                    self._prefetch_tree(b, off, occ)
                elif self.p.prefetcher == PREFETCH_SEQUENTIAL:
                    seq_hi = imin(off + U + self.p.sequential_units * U, b.valid_hi)
                    bits_set(occ, imax(off + U, b.valid_lo), seq_hi)
                i += 1
            if self.p.prefetcher == PREFETCH_TREE:
                if b.faults_in + <int64_t>(i - i0) < self.p.prefetch_min_faults:
                    for k in range(8):              # too few faults on the block: no prefetch yet
                        occ[k] = b.resident[k] | faulted[k]
                elif driver_tree:
                    self._prefetch_tree_driver(b, i0, i, occ)
            for k in range(8):
                fresh[k] = faulted[k] & ~b.resident[k]
                pref[k] = occ[k] & ~b.resident[k] & ~faulted[k]
            if self.tp.enable and self._thrash_note(blockno, start, fresh) != THRASH_NONE:
                # no prefetch of thrashing pages; a pin leaves the host pages where they are
                # (the warps access them remotely, remote_run)
                if self.thrash[blockno].pin_until > start:
                    self._host_bits(blockno * B, fresh, B, pref)
                    for k in range(8):
                        fresh[k] &= ~pref[k]
                        faulted[k] &= ~pref[k]
                    self.rs.pinned_pages += bits_total(pref)
                else:
                    self.throttled.push_back(blockno)
                for k in range(8):
                    pref[k] = 0
                    occ[k] = b.resident[k] | fresh[k]
            n_new = bits_total(fresh)
            n_pref = bits_total(pref)
            if limit > 0 and pinned + b.n_resident + n_new + n_pref > limit:
                if pinned > 0 and pinned + b.n_resident + n_new > limit:
                    # this block's faults wait for the next batch (a batch never brings in
                    # more than the GPU holds)
                    if b.n_resident == 0:
                        self._drop_record(rec)
                    self._put_back(i0)
                    n_batch = i0
                    self.st.batches_capped += 1
                    break
                self.st.prefetch_capped += n_pref     # the faulted units only
                n_pref = 0
                for k in range(8):
                    pref[k] = 0
                    occ[k] = b.resident[k] | faulted[k]
            pinned += b.n_resident + n_new + n_pref
            n_blocks += 1
            b.faults_in += <int64_t>(i - i0)
            self.st.pages_faulted += n_new
            self.st.pages_prefetched += n_pref
            n_new += n_pref
            if n_new == 0:
                if b.n_resident == 0:
                    self._drop_record(rec)
                continue
            first_block_move = self.moves.size()
            self._add_fault_runs(blockno * B, fresh, pref, B)
            n_unmap += self._host_blocks(first_block_move)
            b = &self.blocks[rec]
            for k in range(8):
                fresh[k] |= pref[k]
            self._migrating(b, fresh)
            for k in range(8):
                b.resident[k] = occ[k]
            self._chunk_used(rec)
            b.n_resident += n_new
            b.epoch = self.epoch
            n_in += n_new
        self.gpu_used += n_in
        first_evict = self.moves.size()
        if self.gpu_used > self.p.gpu_pages:
            evicted = self._evict(self.gpu_used - self.p.gpu_pages, -1, start, True)
        # the driver's work, in parts (fault.batch_*_us), then the copies
        c_fixed = self.p.batch_fixed
        c_block = self.p.batch_per_block * n_blocks
        c_page = self.p.batch_per_page * n_in
        c_unmap = self.p.batch_unmap * n_unmap
        t_drv = start + c_fixed + c_block + c_page + c_unmap + self.shootdown
        out_done = self._send_out(first_evict, t_drv)
        t_in = out_done if evicted else t_drv
        end = imax(self._move_in(0, t_in, t_drv), out_done)
        self.st.batch_fixed_cycles += c_fixed
        self.st.batch_block_cycles += c_block
        self.st.batch_page_cycles += c_page
        self.st.batch_unmap_cycles += c_unmap
        self.st.batch_tlb_cycles += self.shootdown
        self.st.batch_transfer_cycles += end - t_drv
        self.st.batch_blocks += n_blocks
        self.st.batch_unmap_blocks += n_unmap
        for j in range(first_evict):
            if self.moves[j].cause == MOVE_EVICT:
                continue
            rec = self._find(self.moves[j].first >> self.block_shift)
            if rec >= 0:
                self.blocks[rec].arrive = end
        for j in range(self.throttled.size()):
            # a throttled fault's pages are usable once its nap is over
            rec = self._find(self.throttled[j])
            if rec >= 0 and self.blocks[rec].epoch == self.epoch:    # (not left for the next batch)
                self.blocks[rec].arrive = imax(end, self.thrash[self.throttled[j]].nap_until)
        self.throttled.clear()
        self.busy_until = end
        self.st.batches += 1
        self.st.batch_units += n_batch
        if <int64_t>n_batch > self.st.max_batch_units:
            self.st.max_batch_units = n_batch
        self.st.batch_cycles += end - start
        self.st.shootdown_cycles += self.shootdown
        for j in range(n_batch):
            self.st.fault_wait_cycles += end - self.batch[j].raised
        return end

    cdef cycle_t prefetch_range(self, page_t first, page_t end, page_t alloc_lo, page_t alloc_hi,
                                cycle_t now) noexcept nogil:
        cdef int64_t B = self.p.block_pages, blockno, lo, hi, n_new, n_in = 0, evicted = 0, k
        cdef int64_t want = 0, budget
        cdef int32_t rec
        cdef va_block* b
        cdef uint64_t sel[8]
        cdef size_t j
        cdef cycle_t t, out_done, t_in, done
        self.epoch += 1
        self.moves.clear()
        self.out_bytes[0] = self.out_bytes[1] = 0
        self.shootdown = 0
        if end <= first:
            return now
        # what is missing; the blocks already there are pinned (never this hint's victims)
        for blockno in range(first // B, (end - 1) // B + 1):
            rec = self._find(blockno)
            if rec >= 0:
                b = &self.blocks[rec]
                lo = imax(first - blockno * B, b.valid_lo)
                hi = imin(end - blockno * B, b.valid_hi)
                if hi > lo:
                    want += hi - lo - bits_count(b.resident, lo, hi)
                b.epoch = self.epoch
            else:
                lo = imax(first, imax(alloc_lo, blockno * B))
                hi = imin(end, imin(alloc_hi, (blockno + 1) * B))
                if hi > lo:
                    want += hi - lo
        if want == 0:
            return now
        if self.gpu_used + want > self.p.gpu_pages:
            evicted = self._evict(self.gpu_used + want - self.p.gpu_pages, -1, now, False)
        budget = imin(want, imax(0, self.p.gpu_pages - self.gpu_used))
        if budget < want:
            self.st.prefetch_capped += want - budget
        for blockno in range(first // B, (end - 1) // B + 1):
            if budget == 0:
                break
            rec = self._record(blockno, alloc_lo, alloc_hi)
            b = &self.blocks[rec]
            lo = imax(first - blockno * B, b.valid_lo)
            hi = imin(end - blockno * B, b.valid_hi)
            for k in range(8):
                sel[k] = 0
            bits_set(sel, lo, hi)
            for k in range(8):
                sel[k] &= ~b.resident[k]
            n_new = bits_total(sel)
            if n_new > budget:
                keep_lowest(sel, budget)
                n_new = budget
            if n_new == 0:
                if b.n_resident == 0:
                    self._drop_record(rec)
                continue
            if self.tp.enable:
                self.thrash.erase(blockno)    # a user's prefetch clears the thrashing state, as the driver
            self._add_runs(blockno * B, sel, B, MOVE_HINT)
            b = &self.blocks[rec]
            self._migrating(b, sel)
            for k in range(8):
                b.resident[k] |= sel[k]
            self._chunk_used(rec)
            b.n_resident += n_new
            b.epoch = self.epoch
            n_in += n_new
            budget -= n_new
        self.gpu_used += n_in
        self.st.pages_hinted += n_in
        t = now + self.shootdown
        out_done = self._send_out(0, t)
        t_in = out_done if evicted else t
        done = imax(self._move_in(0, t_in, t), out_done)
        for j in range(self.moves.size()):
            if self.moves[j].cause == MOVE_EVICT:
                continue
            rec = self._find(self.moves[j].first >> self.block_shift)
            if rec >= 0:
                self.blocks[rec].arrive = done
        self.st.shootdown_cycles += self.shootdown
        return done

    cdef void _blocks_in(self, page_t first, page_t end, vector[int32_t]& recs) noexcept nogil:
        """The records of the VA blocks that [first, end) touches (collected first: callers drop some)."""
        cdef int64_t B = self.p.block_pages, blockno
        cdef int32_t rec
        for blockno in range(first // B, (end - 1) // B + 1):
            rec = g10_bi_find(self.block_index, blockno)
            if rec >= 0:
                recs.push_back(rec)

    cdef int64_t _resident_in(self, int32_t i, page_t first, page_t end, uint64_t* take) noexcept nogil:
        """take = block i's resident pages inside [first, end); returns how many."""
        cdef int64_t B = self.p.block_pages, k
        cdef va_block* b = &self.blocks[i]
        for k in range(8):
            take[k] = 0
        bits_set(take, imax(first - b.block * B, 0), imin(end - b.block * B, B))
        for k in range(8):
            take[k] &= b.resident[k]
        return bits_total(take)

    cdef cycle_t evict_range(self, page_t first, page_t end, int8_t dest, cycle_t now) noexcept nogil:
        cdef vector[int32_t] recs
        cdef uint64_t take[8]
        cdef size_t j
        cdef cycle_t done
        self.moves.clear()
        self.out_bytes[0] = self.out_bytes[1] = 0
        self.shootdown = 0
        if end <= first:
            return now
        self._blocks_in(first, end, recs)
        for j in range(recs.size()):
            if self._resident_in(recs[j], first, end, take):
                self._take_pages(recs[j], take, dest)
        done = self._send_out(0, now + self.shootdown)
        self.st.shootdown_cycles += self.shootdown
        return done

    cdef cycle_t release_range(self, page_t first, page_t end) noexcept nogil:
        cdef int64_t B = self.p.block_pages, k, lo, n, e
        cdef vector[int32_t] recs
        cdef uint64_t take[8]
        cdef va_block* b
        cdef size_t j
        cdef page_t a, run_end
        cdef int8_t t
        cdef cycle_t cost = 0
        self.moves.clear()
        if end <= first:
            return 0
        # host pages of the range are released too; SSD copies are garbage (pages that came
        # back to the GPU had theirs trimmed then)
        a = first
        while a < end:
            t = self.tiers.tier_run(a, end, &run_end)
            if t == TIER_HOST:
                self.host_used -= run_end - a
            elif t == TIER_SSD and self.ssd is not None:
                self.ssd.trim_host(self.tiers.lpn(a), run_end - a)
            a = run_end
        self._blocks_in(first, end, recs)
        for j in range(recs.size()):
            b = &self.blocks[recs[j]]
            n = self._resident_in(recs[j], first, end, take)
            if n == 0:
                continue
            lo = next_set(take, 0, B)
            while lo < B:
                e = next_clear(take, lo, B)
                cost += self.translator.invalidate(b.block * B + lo, b.block * B + e)
                lo = next_set(take, e, B)
            for k in range(8):
                b.resident[k] &= ~take[k]
                b.dup[k] &= ~take[k]
            b.n_resident -= n
            self.gpu_used -= n
            if b.n_resident == 0:
                self._lrm_unlink(recs[j])
                self._drop_record(recs[j])
        self.tiers.set_tier(first, end, TIER_NOT_PRESENT)
        self.st.shootdown_cycles += cost
        return cost

    cdef cycle_t arrival(self, page_t page) noexcept nogil:
        cdef int32_t i = self._find(page >> self.block_shift)
        cdef int64_t off
        if i < 0:
            return -1
        off = page - self.blocks[i].block * self.p.block_pages
        if not bit_test(self.blocks[i].resident, off):
            return -1
        return self.blocks[i].arrive if bit_test(self.blocks[i].incoming, off) else self.blocks[i].settled

    cdef int64_t resident_run(self, page_t page, page_t limit, cycle_t* arrive) noexcept nogil:
        cdef int64_t B = self.p.block_pages
        cdef int32_t i = self._find(page >> self.block_shift)
        cdef int64_t base, off, hi
        if i < 0:
            return 0
        base = self.blocks[i].block * B
        off = page - base
        if not bit_test(self.blocks[i].resident, off):
            return 0
        hi = next_clear(self.blocks[i].resident, off, imin(limit - base, B))
        # pages of one migration: the latest one's, or those that came before it
        if bit_test(self.blocks[i].incoming, off):
            arrive[0] = self.blocks[i].arrive
            return next_clear(self.blocks[i].incoming, off, hi) - off
        arrive[0] = self.blocks[i].settled
        return next_set(self.blocks[i].incoming, off, hi) - off

    cdef int64_t buffered(self) noexcept nogil:
        return self.buffer.size()

    # ---- thrashing, remote mappings, memory advice (issue 37) ----
    #
    # The driver (uvm_perf_thrashing.c) records a page's migrations; one within the lapse of
    # the page's previous one is a thrashing event, and a page with `threshold` consecutive
    # events is thrashing.  A fault on a thrashing page throttles the faulting processor (it
    # may not touch the page for a nap) until it has been throttled `pin_threshold` times;
    # then the page is pinned where it is and the others map it remotely, for `pin` lapses.
    # The driver skips migrations caused by eviction and needs two processors on a block; a
    # trace here has one (the GPU), whose pages come back after an eviction, so a page's return
    # to the GPU within the lapse of its previous migration in is the event.  Kept per VA
    # block: the pages of a block that come back together count once.

    cdef void _thrash_evicted(self, va_block* b, const uint64_t* take) noexcept nogil:
        """Pages ``take`` of block b leave the GPU: their return will be a migration event."""
        cdef thrash_rec* r
        cdef int k
        if (self.last_start - b.arrive > self.tp.lapse
                and self.thrash.find(b.block) == self.thrash.end()):
            # it came in more than a lapse before this batch: its return cannot be an event, and
            # a block without a record has no history to keep (records stay few: memory)
            return
        r = &self.thrash[b.block]
        for k in range(8):
            r.evicted[k] |= take[k]
        # when the pages leaving came in (the block's latest migration: an upper bound per page)
        r.last_in = b.arrive

    cdef int _thrash_note(self, int64_t blockno, cycle_t start, const uint64_t* fresh) noexcept nogil:
        """A batch starting at ``start`` brings pages ``fresh`` of block ``blockno`` in: record
        the event and answer THRASH_NONE (migrate), THRASH_THROTTLE or THRASH_PIN."""
        cdef unordered_map[int64_t, thrash_rec].iterator it = self.thrash.find(blockno)
        cdef thrash_rec* r
        cdef bint back = False
        cdef int k
        if it == self.thrash.end():
            return THRASH_NONE
        r = &deref(it).second
        for k in range(8):
            if fresh[k] & r.evicted[k]:
                back = True
            r.evicted[k] &= ~fresh[k]
        if r.pin_until > start:
            return THRASH_PIN
        if not back:
            return THRASH_NONE
        if r.last_in >= 0:
            # the first return since the eviction is the event; the block's other pages that
            # come back in later batches are the same event (the driver counts per page)
            if start - r.last_in <= self.tp.lapse:
                r.events += 1
                if r.events == self.tp.threshold:
                    self.rs.thrashing_events += 1
            elif r.events >= self.tp.threshold:
                r.events = 0               # thrashing has stopped: the block starts over
            r.last_in = -1
        if r.events < self.tp.threshold:
            return THRASH_NONE
        if r.throttles >= self.tp.pin_threshold:
            r.pin_until = start + self.tp.pin if self.tp.pin > 0 else INT64_MAX
            if r.pin_until > self.pin_horizon:
                self.pin_horizon = r.pin_until
            r.throttles = 0
            r.events = 0
            self.rs.pins += 1
            return THRASH_PIN
        r.throttles += 1
        r.nap_until = start + self.tp.nap
        self.rs.throttles += 1
        return THRASH_THROTTLE

    cdef void _host_bits(self, int64_t base, const uint64_t* bits, int64_t n_bits, uint64_t* out) noexcept nogil:
        """out = the pages of ``bits`` (block pages from ``base``) that are in host memory."""
        cdef int64_t i = next_set(bits, 0, n_bits), e, a
        cdef page_t run_end
        cdef int k
        for k in range(8):
            out[k] = 0
        while i < n_bits:
            e = next_clear(bits, i, n_bits)
            a = i
            while a < e:
                if self.tiers.tier_run(base + a, base + e, &run_end) == TIER_HOST:
                    bits_set(out, a, run_end - base)
                a = run_end - base
            i = next_set(bits, e, n_bits)

    cdef int32_t _advice_at(self, page_t page, page_t* end) noexcept nogil:
        """The advice flags of the allocation holding ``page`` (0: none); ``end[0]``: its end."""
        cdef cmap[int64_t, advice_rec].iterator it
        if self.advice.empty():
            return 0
        it = self.advice.upper_bound(page)
        if it == self.advice.begin():
            return 0
        dec(it)
        if deref(it).second.end <= page:
            return 0
        end[0] = deref(it).second.end
        return deref(it).second.flags

    cdef page_t _read_mostly_run(self, page_t page, page_t end, bint* rm) noexcept nogil:
        """The run of [page, end) from ``page`` that is all in one read-mostly allocation (``rm[0]``)
        or all outside any; returns its end."""
        cdef cmap[int64_t, advice_rec].iterator it
        cdef page_t stop = end
        rm[0] = False
        if self.advice.empty():
            return end
        it = self.advice.upper_bound(page)
        if it != self.advice.end() and deref(it).first < stop:
            stop = deref(it).first                  # the next allocation with advice
        if it != self.advice.begin():
            dec(it)
            if deref(it).second.end > page:          # page lies in this allocation
                rm[0] = (deref(it).second.flags & ADVISE_READ_MOSTLY) != 0
                return imin(deref(it).second.end, end)
        return stop

    cdef void _mark_duplicates(self, page_t first, page_t end) noexcept nogil:
        """Pages [first, end) (one VA block's) come in from host memory: those of read-mostly
        allocations are read duplicates, their host copy stays valid."""
        cdef int64_t B = self.p.block_pages
        cdef page_t a = first, r, e, lo, hi
        cdef bint rm
        cdef int32_t i
        cdef size_t j
        while a < end:
            r = self._read_mostly_run(a, end, &rm)
            while rm and a < r:                      # block by block
                e = imin(r, (a // B + 1) * B)
                i = self._find(a // B)
                if i >= 0:
                    bits_set(self.blocks[i].dup, a - self.blocks[i].block * B, e - self.blocks[i].block * B)
                    for j in range(self.writing.size()):  # but not what the running kernel writes
                        lo = imax(a, self.writing[j].first)
                        hi = imin(e, self.writing[j].second)
                        if lo < hi:
                            bits_clear(self.blocks[i].dup, lo - self.blocks[i].block * B,
                                       hi - self.blocks[i].block * B)
                a = e
            a = r

    cdef void begin_kernel(self) noexcept nogil:
        """A kernel begins: the previous kernel's writes are done (note_written follows for its own)."""
        self.writing.clear()

    cdef int advise(self, page_t first, page_t end, int8_t action) except -1 nogil:
        cdef advice_rec* a
        if end <= first:
            return 0
        a = &self.advice[first]
        if a.end < end:
            a.end = end
        if action == HINT_ADVISE_PREFER_GPU:
            a.flags = (a.flags & ~ADVISE_PREFER_HOST) | ADVISE_PREFER_GPU
        elif action == HINT_ADVISE_PREFER_HOST:
            a.flags = (a.flags & ~ADVISE_PREFER_GPU) | ADVISE_PREFER_HOST
        elif action == HINT_ADVISE_ACCESSED_BY:
            a.flags |= ADVISE_ACCESSED_BY
        elif action == HINT_ADVISE_READ_MOSTLY:
            # read duplication: a page the GPU fetches from host memory from now on keeps its host
            # copy (_mark_duplicates); one already on the GPU has none (evicted, it is written back)
            a.flags |= ADVISE_READ_MOSTLY
        self.rs.advice_ranges += 1
        return 0

    cdef void note_written(self, page_t first, page_t end) noexcept nogil:
        """A kernel writes pages [first, end): the write collapses their read duplicates (the host
        copies are stale; an eviction writes back)."""
        cdef vector[int32_t] recs
        cdef uint64_t take[8]
        cdef size_t j
        cdef int k
        if self.advice.empty():
            return
        self.writing.push_back(pair[int64_t, int64_t](first, end))
        self._blocks_in(first, end, recs)
        for j in range(recs.size()):
            if self._resident_in(recs[j], first, end, take):
                for k in range(8):
                    self.blocks[recs[j]].dup[k] &= ~take[k]

    cdef bint remote_ok(self, page_t page, cycle_t now) noexcept nogil:
        cdef page_t adv_end = 0, run_end
        cdef int32_t flags = self._advice_at(page, &adv_end)
        cdef unordered_map[int64_t, thrash_rec].iterator it
        cdef int8_t tier
        if not (flags & (ADVISE_ACCESSED_BY | ADVISE_PREFER_HOST)):
            if not self.tp.enable or self.pin_horizon <= now:     # (no record pinned past now)
                return False
            it = self.thrash.find(page >> self.block_shift)
            if it == self.thrash.end() or deref(it).second.pin_until <= now:
                return False
        tier = self.tiers.tier_run(page, page + 1, &run_end)
        return tier == TIER_HOST or (tier == TIER_NOT_PRESENT and flags & ADVISE_PREFER_HOST
                                     and self.host_used < self.p.host_pages)

    cdef int64_t remote_run(self, page_t page, page_t limit, bint write, cycle_t now, cycle_t* done) noexcept nogil:
        cdef page_t adv_end = 0, run_end, hi
        cdef int32_t flags = self._advice_at(page, &adv_end)
        cdef unordered_map[int64_t, thrash_rec].iterator it
        cdef int8_t tier
        cdef int64_t n
        if flags & (ADVISE_ACCESSED_BY | ADVISE_PREFER_HOST):
            hi = imin(limit, adv_end)
        else:
            if not self.tp.enable or self.pin_horizon <= now:     # (no record pinned past now)
                return 0
            it = self.thrash.find(page >> self.block_shift)
            if it == self.thrash.end() or deref(it).second.pin_until <= now:
                return 0
            hi = imin(limit, ((page >> self.block_shift) + 1) << self.block_shift)
        if hi <= page:
            return 0
        tier = self.tiers.tier_run(page, hi, &run_end)
        if tier == TIER_NOT_PRESENT and flags & ADVISE_PREFER_HOST:
            # first touch of a host-preferred page: it is populated in host memory
            run_end = imin(run_end, page + imax(0, self.p.host_pages - self.host_used))
            if run_end <= page:
                return 0
            self.tiers.set_tier(page, run_end, TIER_HOST)
            self.host_used += run_end - page
            self.rs.remote_populated += run_end - page
            tier = TIER_HOST
        if tier != TIER_HOST:
            return 0
        n = run_end - page
        done[0] = self._remote_transfer(DIR_FROM_DEVICE if write else DIR_TO_DEVICE, n * self.p.page_bytes, now)
        self.rs.remote_accesses += 1
        self.rs.remote_pages += n
        if write:
            self.rs.remote_write_bytes += n * self.p.page_bytes
        else:
            self.rs.remote_read_bytes += n * self.p.page_bytes
        return n

    cdef cycle_t _remote_transfer(self, int direction, int64_t nbytes, cycle_t now) noexcept nogil:
        """Remote (zero-copy) bytes on the link's FIFO for ``direction``: the SMs' own loads and
        stores, many in flight, so the wire time alone (no DMA setup per transfer)."""
        cdef int64_t wire = self.link.wire_cycles(direction, FLOW_HOST, nbytes)
        cdef cycle_t start = imax(now, self.link.busy_until[direction]), done = start + wire
        cdef pcie_dir_stats* s = &self.link.st[direction]
        self.link.busy_until[direction] = done
        s.transfers += 1
        s.bytes[FLOW_HOST] += nbytes
        s.busy_cycles += wire
        s.queue_delay_cycles += start - now
        if done > s.last_completion:
            s.last_completion = done
        return done

    def set_thrashing(self, dict params):
        """The thrashing rules (``FaultHandlerSpec.thrashing_params``): enable, threshold, and
        lapse, nap, pin_threshold and pin in cycles."""
        self.tp = params

    def py_advise(self, page_t first, page_t end, int8_t action):
        return self.advise(first, end, action)

    def py_note_written(self, page_t first, page_t end):
        self.note_written(first, end)

    def py_remote_run(self, page_t page, page_t limit, bint write, cycle_t now):
        """(pages, done): what remote_run answers."""
        cdef cycle_t done = now
        cdef int64_t n = self.remote_run(page, limit, write, now, &done)
        return n, done

    def remote_stats(self):
        """Counters of thrashing, pins, remote accesses and advice."""
        return dict(self.rs)

    def pinned_blocks(self):
        """{VA block: cycle its pin ends} of the blocks pinned by thrashing (ever; compare with now)."""
        cdef unordered_map[int64_t, thrash_rec].iterator it = self.thrash.begin()
        out = {}
        while it != self.thrash.end():
            if deref(it).second.pin_until > 0:
                out[deref(it).first] = deref(it).second.pin_until
            inc(it)
        return out

    def py_remote_ok(self, page_t page, cycle_t now):
        return self.remote_ok(page, now)

    # ---- thin wrappers for the Python layer and tests (inputs validated there) ----

    def py_raise_fault(self, page_t page, page_t alloc_lo, page_t alloc_hi, cycle_t now):
        return self.raise_fault(page, alloc_lo, alloc_hi, now)

    def py_next_batch_time(self):
        return self.next_batch_time()

    def py_service_batch(self, cycle_t now):
        return self.service_batch(now)

    def py_prefetch_range(self, page_t first, page_t end, page_t alloc_lo, page_t alloc_hi, cycle_t now):
        return self.prefetch_range(first, end, alloc_lo, alloc_hi, now)

    def py_evict_range(self, page_t first, page_t end, int dest, cycle_t now):
        return self.evict_range(first, end, <int8_t>dest, now)

    def py_release_range(self, page_t first, page_t end):
        return self.release_range(first, end)

    def py_arrival(self, page_t page):
        return self.arrival(page)

    def py_resident_run(self, page_t page, page_t limit):
        """(pages on the GPU from page on, within its VA block and below limit; their arrival)."""
        cdef cycle_t arrive = -1
        cdef int64_t n = self.resident_run(page, limit, &arrive)
        return n, arrive

    def set_picker(self, VictimPicker picker):
        """Victims come from ``picker`` (None: least recently migrated blocks)."""
        self.picker = picker

    @property
    def last_arrival_cycle(self):
        return self.last_arrival

    def last_moves(self):
        """The latest operation's moves as a MOVE_DTYPE array."""
        out = np.zeros(self.moves.size(), MOVE_DTYPE)
        cdef size_t j
        cdef uvm_move* m
        for j in range(self.moves.size()):
            m = &self.moves[j]
            out[j] = (m.first, m.end, m.src, m.dst, m.cause, m.done, m.clean)
        return out

    def resident_blocks(self):
        """{block number: sorted list of its resident pages (block-relative)}."""
        out = {}
        cdef vector[int64_t] keys
        cdef size_t j
        cdef int64_t i
        cdef va_block* b
        g10_bi_keys(self.block_index, keys)
        for j in range(keys.size()):
            b = &self.blocks[g10_bi_find(self.block_index, keys[j])]
            pages = []
            for i in range(self.p.block_pages):
                if bit_test(b.resident, i):
                    pages.append(i)
            out[keys[j]] = pages
        return out

    def lrm_order(self):
        """Block numbers, least recently migrated first."""
        out = []
        cdef int32_t i = self.lrm_head
        while i >= 0:
            out.append(self.blocks[i].block)
            i = self.blocks[i].next
        return out

    def stats(self):
        d = dict(self.st)
        d["gpu_used_pages"] = self.gpu_used
        d["host_used_pages"] = self.host_used
        d["live_blocks"] = self.live_blocks
        d["buffered_faults"] = self.buffer.size()
        d["busy_until_cycle"] = self.busy_until
        d["victims"] = "lrm" if self.picker is None else type(self.picker).__name__
        return d

    @property
    def gpu_used_pages(self):
        return self.gpu_used

    @property
    def host_used_pages(self):
        return self.host_used

    @host_used_pages.setter
    def host_used_pages(self, int64_t n):
        self.host_used = n


cdef void memset_stats(uvm_stats* s) noexcept nogil:
    memset(s, 0, sizeof(uvm_stats))
