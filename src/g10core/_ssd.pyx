# cython: language_level=3
"""Compiled SSD (the Python API is ``g10core.ssd``).

Layers, top to bottom:

* NVMe front end: at most ``queue_depth`` commands in flight (their completion
  cycles: a sorted ring while they complete in order, else a min-heap); a
  request is split into commands of at most ``command_pages`` pages; data
  crosses the SSD's own PCIe link (a LinkCore).  Writes are acknowledged once
  their pages sit in the DRAM write buffer, so bursts see the buffer and
  sustained writes the flash.
* FTL: page-level mapping (lpn -> ppn in leaves of 1024 lpns, ppn -> lpn per
  erase block; each is allocated only while it maps something, so memory
  follows the live data, not the pages ever written; which flash pages hold
  valid data is a bitmap, so an overwrite writes l2p and one bit, and GC reads
  the victim's p2l entries in block order).  lpn % n_planes picks the
  plane (channel first, then chip, die, plane); each plane is one GC domain
  with a host frontier, a GC frontier and a FIFO of erased blocks.  After a
  host frontier is replaced, GC collects victims until the plane has
  ``gc_free_blocks_min`` erased blocks again.  Victims: greedy (per-valid-count
  buckets, O(1)), FIFO, random, d-choices.
* Flash timing: each plane's array is busy for tR / tPROG / tBERS, planes work
  in parallel (multi-plane operation idealised).  Each channel carries one
  page transfer per page read or programmed; its time is charged in request
  order from the request time (a token bucket per channel), so the channel's
  bandwidth is never exceeded and a backlogged plane does not hold the bus
  against idle planes on the same channel.  GC copies use copy-back inside the
  plane (tR + tPROG, no channel time).
* Write buffer: one pool of ``write_buffer_pages`` shared by all planes; a
  page enters when there is room (else when the earliest buffered program
  ends) and leaves when its own program ends (per plane a FIFO, and a winner
  tree over the planes finds the earliest).  A read of a page whose program
  is still pending waits for it (no read hits in the buffer).

Everything here trusts its inputs (ssd.py validates the spec and lpn ranges).
"""
cimport cython
from libc.stdint cimport int8_t, int32_t, int64_t, uint32_t, uint64_t, INT64_MAX
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy, memmove, memset

from g10core._types cimport cycle_t, ssd_params, ssd_stats, ssd_plane
from g10core._types cimport VICTIM_GREEDY, VICTIM_FIFO, VICTIM_RANDOM, VICTIM_DCHOICES
from g10core._pcie cimport LinkCore, DIR_TO_DEVICE, DIR_FROM_DEVICE, FLOW_HOST

import numpy as np


cdef inline cycle_t _max(cycle_t a, cycle_t b) noexcept nogil:
    return a if a > b else b


# GC copies rewrite l2p entries at random; their cache lines are requested this many
# copies ahead (far enough to hide a DRAM miss, near enough to stay in L1).
cdef enum:
    GC_PREFETCH_DISTANCE = 16

# a plane's log of deferred greedy-list moves holds up to this many before it is applied
cdef enum:
    MOVE_LOG_CAP = 256

# trim works through this many l2p leaves (64 KiB) plane by plane at a time.
cdef enum:
    TRIM_CHUNK_LEAVES = 16

# The key of a plane with nothing buffered: later than any simulated cycle.
cdef cycle_t CYCLE_NEVER = INT64_MAX

# per-block fields _blk_column can copy out
cdef enum:
    BLK_VALID = 0
    BLK_ERASES = 1
    BLK_STATE = 2


cdef class SSDCore:
    """One SSD's state; build it through ``g10core.ssd.SSD``."""

    def __cinit__(self, dict params, LinkCore link):
        cdef int64_t i, b, pl, N, P, nodes
        self.p = params
        self.link = link
        self.gc_first = self.gc_end = -1
        P = self.p.pages_per_block
        N = self.p.blocks_per_plane
        self.n_blocks = self.p.n_planes * N
        self.physical_pages = self.n_blocks * P
        self.logical_pages = self.p.logical_pages_per_plane * self.p.n_planes
        self.host_page_bytes = self.p.page_bytes
        self.n_lists = (P + 1) if self.p.victim_policy == VICTIM_GREEDY else 1
        self.plane_mask = (self.p.n_planes - 1) if (self.p.n_planes & (self.p.n_planes - 1)) == 0 else -1
        self.page_shift = -1
        if P & (P - 1) == 0:
            self.page_shift = 0
            while (1 << self.page_shift) < P:
                self.page_shift += 1

        self.words_per_block = (P + 63) // 64
        self.bit_pad = self.words_per_block * 64 - P
        self.n_leaves = (self.logical_pages + L2P_LEAF - 1) >> L2P_SHIFT
        self.l2p_leaf = <uint32_t**> calloc(self.n_leaves + 1, sizeof(uint32_t*))
        self.l2p_live = <int32_t*> calloc(self.n_leaves + 1, sizeof(int32_t))
        self.blk = <blk_meta*> calloc(self.n_blocks + 1, sizeof(blk_meta))
        self.valid_bits = <uint64_t*> calloc(self.n_blocks * self.words_per_block, sizeof(uint64_t))
        self.gc_lpns = <uint32_t*> malloc(P * sizeof(uint32_t))
        # victim lists are circular with one sentinel node each, after the blocks:
        # list l's sentinel is node n_blocks + l (so unlinking a block never branches)
        nodes = self.n_blocks + self.p.n_planes * self.n_lists
        self.blk_next = <int32_t*> malloc(nodes * sizeof(int32_t))
        self.blk_prev = <int32_t*> malloc(nodes * sizeof(int32_t))
        self.blk_pos = <int32_t*> malloc(self.n_blocks * sizeof(int32_t))
        self.dense = <int32_t*> malloc(self.n_blocks * sizeof(int32_t))
        self.planes = <ssd_plane*> calloc(self.p.n_planes, sizeof(ssd_plane))
        self.channel_free = <cycle_t*> calloc(self.p.n_channels, sizeof(cycle_t))
        self.tree_leaves = 1
        while self.tree_leaves < self.p.n_planes:
            self.tree_leaves *= 2
        self.tree = <int32_t*> malloc(2 * self.tree_leaves * sizeof(int32_t))
        self.plane_key = <cycle_t*> malloc(self.tree_leaves * sizeof(cycle_t))
        self.slots = <cycle_t*> calloc(self.p.queue_depth, sizeof(cycle_t))
        self.slot_scratch = <cycle_t*> calloc(self.p.queue_depth, sizeof(cycle_t))
        self.hist_read = <int64_t*> calloc(G10_HIST_BUCKETS, sizeof(int64_t))
        self.hist_write = <int64_t*> calloc(G10_HIST_BUCKETS, sizeof(int64_t))
        # 256 entries a plane (2 KiB); fewer, down to 16, on devices of over 256 planes
        self.move_log_stride = max(16, min(MOVE_LOG_CAP, (MOVE_LOG_CAP * 256) // self.p.n_planes))
        self.move_log = <uint32_t*> malloc(self.p.n_planes * self.move_log_stride * 2 * sizeof(uint32_t))
        self.move_log_n = <int32_t*> calloc(self.p.n_planes, sizeof(int32_t))
        self.move_count = <uint32_t*> calloc(self.p.n_planes, sizeof(uint32_t))
        if (self.move_log == NULL or self.move_log_n == NULL or self.move_count == NULL
                or self.l2p_leaf == NULL or self.l2p_live == NULL or self.blk == NULL
                or self.valid_bits == NULL or self.gc_lpns == NULL
                or self.blk_next == NULL or self.blk_prev == NULL
                or self.blk_pos == NULL or self.dense == NULL
                or self.planes == NULL or self.channel_free == NULL
                or self.tree == NULL or self.plane_key == NULL
                or self.slots == NULL or self.slot_scratch == NULL or self.hist_read == NULL
                or self.hist_write == NULL):
            raise MemoryError(f"SSD: cannot allocate the FTL tables for {self.physical_pages} flash pages")

        for i in range(self.p.n_planes * self.n_lists):
            self.blk_next[self.n_blocks + i] = <int32_t> (self.n_blocks + i)
            self.blk_prev[self.n_blocks + i] = <int32_t> (self.n_blocks + i)
        # every plane's buffer is empty: key CYCLE_NEVER, and so is every padding leaf
        for i in range(self.tree_leaves):
            self.plane_key[i] = CYCLE_NEVER
            self.tree[self.tree_leaves + i] = <int32_t> i
        for i in range(self.tree_leaves - 1, 0, -1):
            self.tree[i] = self.tree[2 * i]
        self.slots_sorted = True
        self.slot_head = 0
        for pl in range(self.p.n_planes):
            self.planes[pl].buf_mask = -1          # no ring until its first page (calloc: the rest 0)
            self.planes[pl].host_block = -1
            self.planes[pl].gc_block = -1
            self.planes[pl].min_valid = <int32_t> P
            self.planes[pl].channel = <int32_t> (pl % self.p.n_channels)
            # every block erased, queued in address order
            self.planes[pl].free_head = <int32_t> (pl * N)
            self.planes[pl].free_tail = <int32_t> (pl * N + N - 1)
            self.planes[pl].free_count = <int32_t> N
            for i in range(N):
                b = pl * N + i
                self.blk_next[b] = <int32_t> (b + 1) if i + 1 < N else -1
                self.blk_prev[b] = -1
                self.blk_pos[b] = -1
        g10_rng_seed(self.rng, self.p.seed)
        self.p2l_lazy = True
        self.moves_deferred = self.p.victim_policy == VICTIM_GREEDY
        self.move_log_cap = <int32_t> self.move_log_stride
        self.reset_stats()

    def _plane_dict(self, int64_t i):
        """Plane ``i``'s FTL and timing state (the write buffer's ring is not part of it:
        it holds pages lazily, see _buffer_admit)."""
        cdef ssd_plane* pl = &self.planes[i]
        return {"host_block": pl.host_block, "host_next": pl.host_next, "gc_block": pl.gc_block,
                "gc_next": pl.gc_next, "free_head": pl.free_head, "free_tail": pl.free_tail,
                "free_count": pl.free_count, "closed_count": pl.closed_count, "min_valid": pl.min_valid,
                "channel": pl.channel, "busy_until": pl.busy_until}

    def __dealloc__(self):
        cdef int64_t pl
        # leaves and p2l tables live in the pools, which free their chunks themselves
        free(self.l2p_leaf); free(self.l2p_live); free(self.blk)
        free(self.valid_bits); free(self.gc_lpns)
        free(self.blk_next); free(self.blk_prev); free(self.blk_pos)
        free(self.move_log); free(self.move_log_n); free(self.move_count)
        if self.planes != NULL:
            for pl in range(self.p.n_planes):
                free(self.planes[pl].buf_done)
        free(self.dense); free(self.planes)
        free(self.channel_free); free(self.tree); free(self.plane_key)
        free(self.slots); free(self.slot_scratch); free(self.hist_read); free(self.hist_write)

    def __reduce__(self):
        raise TypeError("SSDCore does not pickle (its FTL tables can be gigabytes); "
                        "send the SSDSpec and rebuild the SSD in the worker")

    def reset_stats(self):
        """Zero counters and histograms (the FTL and queue state are kept)."""
        memset(&self.st, 0, sizeof(ssd_stats))
        self.st.first_submit = -1
        memset(self.hist_read, 0, G10_HIST_BUCKETS * sizeof(int64_t))
        memset(self.hist_write, 0, G10_HIST_BUCKETS * sizeof(int64_t))
        self.link.reset_stats()

    # ---- address arithmetic (shifts when the sizes are powers of two) -----------

    cdef int64_t _plane_of(self, int64_t lpn) noexcept nogil:
        return (lpn & self.plane_mask) if self.plane_mask >= 0 else lpn % self.p.n_planes

    cdef int64_t _block_of(self, int64_t ppn) noexcept nogil:
        return (ppn >> self.page_shift) if self.page_shift >= 0 else ppn // self.p.pages_per_block

    # ---- mapping tables (allocated where they hold something) -------------------

    cdef inline uint32_t _l2p_get(self, int64_t lpn) noexcept nogil:
        """ppn + 1 of ``lpn``, 0: unmapped."""
        cdef uint32_t* leaf = self.l2p_leaf[lpn >> L2P_SHIFT]
        return leaf[lpn & L2P_MASK] if leaf != NULL else 0

    cdef inline uint32_t* _l2p_slot(self, int64_t lpn) noexcept nogil:
        """``lpn``'s l2p entry, its leaf made if there is none (NULL: out of memory).
        (Small enough to inline into a write; making a leaf is the out-of-line part.)"""
        cdef uint32_t* leaf = self.l2p_leaf[lpn >> L2P_SHIFT]
        if leaf == NULL:
            return self._l2p_new_leaf(lpn)
        return &leaf[lpn & L2P_MASK]

    cdef uint32_t* _l2p_new_leaf(self, int64_t lpn) noexcept nogil:
        """_l2p_slot when ``lpn``'s leaf is not there: make it."""
        cdef uint32_t* leaf = <uint32_t*> self.leaf_pool.get(L2P_LEAF * sizeof(uint32_t))
        memset(leaf, 0, L2P_LEAF * sizeof(uint32_t))
        self.l2p_leaf[lpn >> L2P_SHIFT] = leaf
        return &leaf[lpn & L2P_MASK]

    cdef inline void _l2p_unmapped(self, int64_t lpn) noexcept nogil:
        """``lpn``'s entry, counted as mapped until now, was cleared: free its leaf once empty."""
        cdef int64_t k = lpn >> L2P_SHIFT
        self.l2p_live[k] -= 1
        if self.l2p_live[k] == 0:
            self.leaf_pool.put(self.l2p_leaf[k])
            self.l2p_leaf[k] = NULL

    cdef inline void _p2l_release(self, int32_t b) noexcept nogil:
        """Block ``b`` holds no valid page (or was erased): its p2l is not needed."""
        cdef uint32_t* d = self.blk[b].p2l
        if d != NULL:
            if self.blk[b].runs < 0:
                self.dense_pool.put(d)
            elif self.blk[b].cap == P2L_RUNS_SMALL:
                self.runs_small_pool.put(d)
            elif self.blk[b].cap == P2L_RUNS_LARGE:
                self.runs_large_pool.put(d)
            else:
                self.runs_huge_pool.put(d)
        self.blk[b].p2l = NULL
        self.blk[b].runs = 0
        self.blk[b].cap = 0

    cdef inline int _p2l_append(self, int32_t b, int64_t page, uint32_t lpn) noexcept nogil:
        """Record that ``page`` of block ``b`` (the next one programmed there) holds ``lpn``.
        Returns -1 when out of memory."""
        cdef int32_t n = self.blk[b].runs
        cdef uint32_t* d = self.blk[b].p2l
        if n < 0:
            if n == P2L_DENSE:
                d[page] = lpn
            return 0                                   # (P2L_UNKNOWN: not kept)
        if n > 0 and <int64_t> d[2 * n - 2] + (page - <int64_t> d[2 * n - 1]) * self.p.n_planes == lpn:
            return 0                                   # continues the last run
        return self._p2l_new_run(b, page, lpn)

    cdef int _p2l_new_run(self, int32_t b, int64_t page, uint32_t lpn) noexcept nogil:
        """``_p2l_append`` when ``page`` starts a run: add one (or switch to one lpn per page)."""
        cdef int32_t n
        cdef int room = self._p2l_room(b, 1, page, page, page, lpn)
        if room != 0:
            return -1 if room < 0 else 0
        n = self.blk[b].runs
        self.blk[b].p2l[2 * n] = lpn
        self.blk[b].p2l[2 * n + 1] = <uint32_t> page
        self.blk[b].runs = n + 1
        return 0

    cdef int _p2l_room(self, int32_t b, int32_t more, int64_t progress, int64_t upto,
                       int64_t page, uint32_t lpn) noexcept nogil:
        """Make room in block ``b``'s run list for ``more`` (1 or 2) runs, ``progress`` pages
        into the block: 0 when there is; 1 when the block switched to one lpn per page instead
        (pages [0, upto) filled from its runs) and ``page`` was recorded as holding ``lpn``;
        -1 when out of memory."""
        cdef uint32_t* dense
        cdef int32_t n = self.blk[b].runs, cap = self.blk[b].cap
        cdef uint32_t* d
        cdef int64_t P = self.p.pages_per_block
        if n + more <= cap:
            return 0
        if n == 0:
            d = <uint32_t*> self.runs_small_pool.get(2 * P2L_RUNS_SMALL * sizeof(uint32_t))
            self.blk[b].cap = P2L_RUNS_SMALL
        elif cap == P2L_RUNS_SMALL and 2 * P2L_RUNS_LARGE < P and progress >= 4 * P2L_RUNS_SMALL:
            d = <uint32_t*> self.runs_large_pool.get(2 * P2L_RUNS_LARGE * sizeof(uint32_t))
            memcpy(d, self.blk[b].p2l, 2 * n * sizeof(uint32_t))
            self.runs_small_pool.put(self.blk[b].p2l)
            self.blk[b].cap = P2L_RUNS_LARGE
        elif cap == P2L_RUNS_LARGE and 2 * P2L_RUNS_HUGE < P and progress >= 4 * P2L_RUNS_LARGE:
            # runs of 4 pages, a 2 MiB write's share of each of 128 planes, cost half of dense
            d = <uint32_t*> self.runs_huge_pool.get(2 * P2L_RUNS_HUGE * sizeof(uint32_t))
            memcpy(d, self.blk[b].p2l, 2 * n * sizeof(uint32_t))
            self.runs_large_pool.put(self.blk[b].p2l)
            self.blk[b].cap = P2L_RUNS_HUGE
        else:                                          # more runs would cost more than a page each
            # (or the first runs are short: the block is filled at random, go dense early)
            dense = self._p2l_to_dense(b, upto)
            if dense == NULL:
                return -1
            dense[page] = lpn
            return 1
        self.blk[b].p2l = d
        return 0

    cdef int _p2l_insert(self, int32_t b, int64_t page, uint32_t lpn, int64_t last) noexcept nogil:
        """The rebuild found ``page`` of block ``b`` (below ``last``, the highest page found
        there so far) holding ``lpn``: fit it in among the runs, which stay in page order.
        A run stands for the pages from its first up to the next run's first, so a page
        inside a run that does not follow it splits the run: the page's own run, then the
        rest of the old one.  Returns -1 when out of memory."""
        cdef int32_t n = self.blk[b].runs, r, need
        cdef int room
        cdef uint32_t* d = self.blk[b].p2l
        cdef int64_t end
        if n < 0:
            if n == P2L_DENSE:
                d[page] = lpn
            return 0
        r = n - 1                                      # the run holding page (-1: before them all)
        while r >= 0 and <int64_t> d[2 * r + 1] > page:
            r -= 1
        if r >= 0 and <int64_t> d[2 * r] + (page - <int64_t> d[2 * r + 1]) * self.p.n_planes == lpn:
            return 0                                   # the run already says so
        end = <int64_t> d[2 * r + 3] if r + 1 < n else last + 1
        need = 2 if r >= 0 and page + 1 < end else 1
        room = self._p2l_room(b, need, last, last + 1, page, lpn)
        if room != 0:
            return -1 if room < 0 else 0
        d = self.blk[b].p2l
        memmove(&d[2 * (r + 1 + need)], &d[2 * (r + 1)], 2 * (n - r - 1) * sizeof(uint32_t))
        d[2 * (r + 1)] = lpn
        d[2 * (r + 1) + 1] = <uint32_t> page
        if need == 2:                                  # the rest of run r, from page + 1
            d[2 * (r + 2)] = <uint32_t> (d[2 * r] + (page + 1 - <int64_t> d[2 * r + 1]) * self.p.n_planes)
            d[2 * (r + 2) + 1] = <uint32_t> (page + 1)
        self.blk[b].runs = n + need
        return 0

    cdef uint32_t* _p2l_to_dense(self, int32_t b, int64_t upto) noexcept nogil:
        """Block ``b`` (a run list) turns into one lpn per page, pages [0, upto) filled from
        its runs; returns the new table (NULL: out of memory, the runs are kept)."""
        cdef uint32_t* d = self.blk[b].p2l
        cdef uint32_t* dense = <uint32_t*> self.dense_pool.get(self.p.pages_per_block * sizeof(uint32_t))
        cdef int32_t n = self.blk[b].runs, r = 0
        cdef int64_t o
        if dense == NULL:
            return NULL
        for o in range(upto):
            while r + 1 < n and <int64_t> d[2 * r + 3] <= o:
                r += 1
            dense[o] = <uint32_t> (d[2 * r] + (o - <int64_t> d[2 * r + 1]) * self.p.n_planes)
        self._p2l_release(b)
        self.blk[b].p2l = dense
        self.blk[b].runs = P2L_DENSE
        return dense

    cdef void _p2l_rebuild(self) noexcept nogil:
        """GC must copy out of a block whose lpns were not kept: give every such block its
        lpns again, from l2p (its valid pages are exactly the mapped lpns that point into
        it), and keep p2l from here on.  One pass over the l2p leaves, once per run.

        The pass goes in lpn order: a block's pages come in page order when its lpns rise
        with its pages (a sequential write), and are appended as a program would append
        them; a page that comes before one already found is fitted in among the runs
        (_p2l_insert).  So a block gets back runs where its lpns allow, and one lpn per
        page where they do not."""
        cdef int64_t b, k, j, ppn, page, bit, P = self.p.pages_per_block
        cdef uint32_t e
        cdef uint32_t* leaf
        # per block: the last page given back its lpn (-1: none yet; -2: kept its lpns)
        cdef int32_t* last = <int32_t*> malloc(self.n_blocks * sizeof(int32_t))
        if last == NULL:
            self.st.alloc_failures += 1                # (the run fails: ssd.SSD reports it)
            return
        self.p2l_lazy = False
        for b in range(self.n_blocks):
            last[b] = -2
            if self.blk[b].runs == P2L_UNKNOWN:
                self.blk[b].runs = 0
                self.blk[b].cap = 0
                self.blk[b].p2l = NULL
                last[b] = -1
        for k in range(self.n_leaves):
            leaf = self.l2p_leaf[k]
            if leaf == NULL:
                continue
            for j in range(L2P_LEAF):
                e = leaf[j]
                if e == 0:
                    continue
                ppn = <int64_t> e - 1
                b = self._block_of(ppn)
                bit = ppn + b * self.bit_pad           # no bit was kept while lazy
                self.valid_bits[bit >> 6] |= (<uint64_t> 1) << (bit & 63)
                if last[b] == -2:
                    continue
                page = ppn - b * P
                if page > last[b]:
                    if self._p2l_append(<int32_t> b, page, <uint32_t> ((k << L2P_SHIFT) + j)) < 0:
                        self.st.alloc_failures += 1
                    last[b] = <int32_t> page
                elif self._p2l_insert(<int32_t> b, page, <uint32_t> ((k << L2P_SHIFT) + j), last[b]) < 0:
                    self.st.alloc_failures += 1
        free(last)

    # ---- write buffer ------------------------------------------------------------

    cdef inline void _buffer_tree_update(self, int64_t plane) noexcept nogil:
        """Replay ``plane``'s path of the winner tree after its key changed."""
        cdef int64_t i = self.tree_leaves + plane
        cdef int32_t w = <int32_t> plane, other
        cdef cycle_t kw = self.plane_key[plane], ko
        while i > 1:                                   # log2(leaves) steps, no data-dependent branch
            other = self.tree[i ^ 1]
            ko = self.plane_key[other]
            if ko < kw:
                w = other
                kw = ko
            i >>= 1
            self.tree[i] = w

    cdef void _buffer_retire_top(self) noexcept nogil:
        """The earliest-programmed buffered page leaves the buffer."""
        cdef int32_t plane = self.tree[1]
        cdef ssd_plane* pl = &self.planes[plane]
        pl.buf_first = (pl.buf_first + 1) & pl.buf_mask
        pl.buf_n -= 1
        self.buf_count -= 1
        self.plane_key[plane] = pl.buf_done[pl.buf_first] if pl.buf_n > 0 else CYCLE_NEVER
        self._buffer_tree_update(plane)

    cdef void _buffer_retire_until(self, int32_t plane, cycle_t t) noexcept nogil:
        """Every page of ``plane`` whose program ended by ``t`` leaves the buffer: the
        plane's ring is cut at once, with one winner-tree update for the whole run."""
        cdef ssd_plane* pl = &self.planes[plane]
        cdef int32_t n = 0
        while n < pl.buf_n and pl.buf_done[(pl.buf_first + n) & pl.buf_mask] <= t:
            n += 1
        if n == 0:
            return
        pl.buf_first = (pl.buf_first + n) & pl.buf_mask
        pl.buf_n -= n
        self.buf_count -= n
        self.plane_key[plane] = pl.buf_done[pl.buf_first] if pl.buf_n > 0 else CYCLE_NEVER
        self._buffer_tree_update(plane)

    cdef inline cycle_t _buffer_admit(self, cycle_t t) noexcept nogil:
        """When a page whose data arrived at ``t`` finds room in the buffer.

        Pages leave lazily: ``buf_count`` also counts pages whose program has ended, and
        only when it reaches the buffer's size are those taken out, each plane's run of
        them in one step.  The answer is the one an exact count gives: a count below the
        size means fewer pages still in the buffer, and at the size the count is made exact
        before it is used."""
        if self.buf_count < self.p.write_buffer_pages:
            return t
        return self._buffer_admit_full(t)

    cdef cycle_t _buffer_admit_full(self, cycle_t t) noexcept nogil:
        """_buffer_admit once the count has reached the buffer's size."""
        while self.plane_key[self.tree[1]] <= t:       # an empty buffer's key is CYCLE_NEVER
            self._buffer_retire_until(self.tree[1], t)
        if self.buf_count < self.p.write_buffer_pages:
            return t
        t = self.plane_key[self.tree[1]]               # full: wait for the next program to end
        self._buffer_retire_top()
        return t

    cdef int _buffer_grow(self, ssd_plane* pl) noexcept nogil:
        """Double ``pl``'s ring (it is full); -1 when out of memory."""
        cdef int64_t size = 2 * (<int64_t> pl.buf_mask + 1), i
        cdef cycle_t* d
        if size < 16:
            size = 16
        d = <cycle_t*> malloc(size * sizeof(cycle_t))
        if d == NULL:
            return -1
        for i in range(pl.buf_n):                      # unwrapped: the oldest at 0
            d[i] = pl.buf_done[(pl.buf_first + i) & pl.buf_mask]
        free(pl.buf_done)
        pl.buf_done = d
        pl.buf_first = 0
        pl.buf_mask = <int32_t> (size - 1)
        return 0

    cdef inline void _buffer_add(self, int64_t plane, cycle_t done) noexcept nogil:
        """``plane``'s page programmed by ``done`` joins the buffer.  Inlined into a write; a
        plane's first page (the winner tree learns its key) and a full ring are out of line."""
        cdef ssd_plane* pl = &self.planes[plane]
        if pl.buf_n == 0 or pl.buf_n > pl.buf_mask:
            self._buffer_add_slow(plane, done)
            return
        pl.buf_done[(pl.buf_first + pl.buf_n) & pl.buf_mask] = done   # programs of a plane end in order
        pl.buf_n += 1
        self.buf_count += 1

    cdef void _buffer_add_slow(self, int64_t plane, cycle_t done) noexcept nogil:
        """_buffer_add of a plane with no page in the buffer or no room in its ring."""
        cdef ssd_plane* pl = &self.planes[plane]
        if pl.buf_n > pl.buf_mask and self._buffer_grow(pl) < 0:
            self.st.alloc_failures += 1                # out of memory: the page is not held
            return
        pl.buf_done[(pl.buf_first + pl.buf_n) & pl.buf_mask] = done   # programs of a plane end in order
        pl.buf_n += 1
        self.buf_count += 1
        if pl.buf_n == 1:
            self.plane_key[plane] = done
            self._buffer_tree_update(plane)

    # ---- NVMe front end --------------------------------------------------------

    # In-flight commands: their completion cycles.  While completions are released in
    # time order (a closed loop of writes: each is acknowledged after the previous one)
    # they sit in a sorted ring, O(1) per command; the first one out of order turns the
    # ring into a binary min-heap (a sorted array is one) until the queue drains.

    cdef inline cycle_t _slot_min(self) noexcept nogil:
        return self.slots[self.slot_head] if self.slots_sorted else self.slots[0]

    cdef cycle_t _acquire_slot(self, cycle_t now) noexcept nogil:
        """Start cycle of a command submitted at ``now`` (waits for a free queue slot)."""
        while self.n_slots > 0 and self._slot_min() <= now:
            self._pop_slot()
        if self.n_slots < self.p.queue_depth:
            return now
        return self._pop_slot()

    cdef inline cycle_t _pop_slot(self) noexcept nogil:
        cdef cycle_t top
        cdef int64_t n, i = 0, c
        cdef cycle_t last
        if self.slots_sorted:
            top = self.slots[self.slot_head]
            self.slot_head += 1
            if self.slot_head == self.p.queue_depth:
                self.slot_head = 0
            self.n_slots -= 1
            return top
        top = self.slots[0]
        n = self.n_slots - 1
        last = self.slots[n]
        self.n_slots = n
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and self.slots[c + 1] < self.slots[c]:
                c += 1
            if self.slots[c] >= last:
                break
            self.slots[i] = self.slots[c]
            i = c
        if n > 0:
            self.slots[i] = last
        else:
            self.slots_sorted = True                   # drained: back to the ring
            self.slot_head = 0
        return top

    cdef void _release_slot(self, cycle_t done) noexcept nogil:
        cdef int64_t i, parent, qd = self.p.queue_depth
        if self.slots_sorted:
            i = self.slot_head + self.n_slots          # one past the newest
            if i >= qd:
                i -= qd
            if self.n_slots == 0 or done >= self.slots[i - 1 if i > 0 else qd - 1]:
                self.slots[i] = done
                self.n_slots += 1
                return
            # out of order: rotate the ring to slots[0 .. n) (sorted, hence a heap)
            for i in range(self.n_slots):
                parent = self.slot_head + i
                self.slot_scratch[i] = self.slots[parent - qd if parent >= qd else parent]
            for i in range(self.n_slots):
                self.slots[i] = self.slot_scratch[i]
            self.slot_head = 0
            self.slots_sorted = False
        i = self.n_slots
        self.n_slots += 1
        while i > 0:
            parent = (i - 1) // 2
            if self.slots[parent] <= done:
                break
            self.slots[i] = self.slots[parent]
            i = parent
        self.slots[i] = done

    cdef cycle_t next_issue_time(self, cycle_t now) noexcept nogil:
        """Earliest cycle >= now at which a new command would find a free queue slot."""
        while self.n_slots > 0 and self._slot_min() <= now:
            self._pop_slot()
        if self.n_slots < self.p.queue_depth:
            return now
        return self._slot_min()

    cdef cycle_t idle_at(self) noexcept nogil:
        """First cycle at which every plane, channel, link direction and command is done."""
        cdef cycle_t t = _max(self.link.free_at(DIR_TO_DEVICE), self.link.free_at(DIR_FROM_DEVICE))
        cdef int64_t i
        for i in range(self.p.n_planes):
            t = _max(t, self.planes[i].busy_until)
        for i in range(self.p.n_channels):
            t = _max(t, self.channel_free[i])
        for i in range(self.n_slots):                  # ring or heap: the max of the set either way
            t = _max(t, self.slots[(self.slot_head + i) % self.p.queue_depth])
        return t

    cdef inline void _note_command(self, cycle_t now, cycle_t done) noexcept nogil:
        if self.st.first_submit < 0 or now < self.st.first_submit:
            self.st.first_submit = now
        if done > self.st.last_completion:
            self.st.last_completion = done

    cdef inline bint _out_of_range(self, int64_t lpn, int64_t npages) noexcept nogil:
        """Refuse (and count) a command outside the logical pages: the Python layer checks
        every range it takes, so this catches a compiled caller's bug, not bad input."""
        if lpn < 0 or npages < 0 or lpn + npages > self.logical_pages:
            self.st.range_errors += 1
            return True
        return False

    # ---- a caller whose page is not the flash page (the replay's 4 KiB virtual pages on a
    # device with 8 or 16 KiB flash pages): its byte range becomes the flash pages it covers.
    # Reads and writes take every flash page the range touches (a partial page is programmed
    # whole, as the device's read-modify-write would); a trim only pages it covers whole,
    # since the rest of a partial page may still hold live data.

    cdef cycle_t read_host(self, int64_t page, int64_t npages, cycle_t now) noexcept nogil:
        cdef int64_t first, end
        if self.host_page_bytes == self.p.page_bytes:
            return self.read(page, npages, now)
        first = page * self.host_page_bytes // self.p.page_bytes
        end = ((page + npages) * self.host_page_bytes + self.p.page_bytes - 1) // self.p.page_bytes
        return self.read(first, end - first, now)

    cdef cycle_t write_host(self, int64_t page, int64_t npages, cycle_t now) noexcept nogil:
        cdef int64_t first, end
        if self.host_page_bytes == self.p.page_bytes:
            return self.write(page, npages, now)
        first = page * self.host_page_bytes // self.p.page_bytes
        end = ((page + npages) * self.host_page_bytes + self.p.page_bytes - 1) // self.p.page_bytes
        return self.write(first, end - first, now)

    cdef void trim_host(self, int64_t page, int64_t npages) noexcept nogil:
        cdef int64_t first, end
        if self.host_page_bytes == self.p.page_bytes:
            self.trim(page, npages)
            return
        first = (page * self.host_page_bytes + self.p.page_bytes - 1) // self.p.page_bytes
        end = (page + npages) * self.host_page_bytes // self.p.page_bytes
        if end > first:
            self.trim(first, end - first)

    def set_host_page_bytes(self, int64_t nbytes):
        """The page size of read_host/write_host/trim_host callers (validated by ssd.SSD)."""
        if nbytes < 1:
            raise ValueError(f"host page of {nbytes} bytes")
        self.host_page_bytes = nbytes

    cdef cycle_t read(self, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil:
        """Read ``npages`` logical pages from ``lpn``; return the cycle the last byte reaches the host."""
        cdef int64_t i = 0, j, k
        cdef cycle_t start, t, ready, r, done, last = now
        if self._out_of_range(lpn, npages):
            return now
        while i < npages:
            k = npages - i
            if k > self.p.command_pages:
                k = self.p.command_pages
            start = self._acquire_slot(now)
            t = start + self.p.read_overhead
            ready = t
            for j in range(k):
                r = self._read_page(lpn + i + j, t)
                if r > ready:
                    ready = r
            done = self.link.submit(DIR_FROM_DEVICE, FLOW_HOST, k * self.p.page_bytes, ready)
            self._release_slot(done)
            self.hist_read[g10_hist_bucket(done - now)] += 1
            self.st.read_commands += 1
            self._note_command(now, done)
            if done > last:
                last = done
            i += k
        self.st.host_read_pages += npages
        self.st.read_bytes += npages * self.p.page_bytes
        return last

    cdef cycle_t write(self, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil:
        """Write ``npages`` logical pages from ``lpn``; return the cycle the last command is acknowledged."""
        cdef int64_t i = 0, j, k
        cdef cycle_t start, arrive, admit, ack, last = now
        if self._out_of_range(lpn, npages):
            return now
        while i < npages:
            k = npages - i
            if k > self.p.command_pages:
                k = self.p.command_pages
            start = self._acquire_slot(now)
            arrive = self.link.submit(DIR_TO_DEVICE, FLOW_HOST, k * self.p.page_bytes, start)
            ack = arrive
            for j in range(k):
                admit = self._write_page(lpn + i + j, arrive)
                if admit > ack:
                    ack = admit
            ack += self.p.write_overhead
            self._release_slot(ack)
            self.hist_write[g10_hist_bucket(ack - now)] += 1
            self.st.write_commands += 1
            self._note_command(now, ack)
            if ack > last:
                last = ack
            i += k
        self.st.host_write_pages += npages
        self.st.write_bytes += npages * self.p.page_bytes
        return last

    cdef void trim(self, int64_t lpn, int64_t npages) noexcept nogil:
        """Deallocate pages (their data is dead: GC will not copy them). Takes no time.

        Planes share no FTL state, so the range is taken plane by plane (in lpn order within
        a plane, as one page at a time would), in chunks of TRIM_CHUNK lpns that stay in
        cache; a plane's pages that sit in a row in one block go stale in one step."""
        cdef int64_t i = lpn, j, k, q, stop, end = lpn + npages, npl = self.p.n_planes
        cdef int64_t ppn, bit, plane, trimmed = 0
        cdef int32_t b, cur, run
        cdef uint32_t e
        cdef uint32_t* leaf
        cdef bint keep_bits = not self.p2l_lazy
        if self._out_of_range(lpn, npages):
            return
        while i < end:
            stop = ((i >> L2P_SHIFT) + TRIM_CHUNK_LEAVES) << L2P_SHIFT
            if stop > end:
                stop = end
            for q in range(npl if npl < stop - i else stop - i):
                plane = self._plane_of(i + q)
                cur = -1
                run = 0
                j = i + q
                while j < stop:
                    leaf = self.l2p_leaf[j >> L2P_SHIFT]
                    if leaf == NULL:                   # a leaf not there maps nothing
                        j += npl
                        continue
                    e = leaf[j & L2P_MASK]
                    if e != 0:
                        ppn = <int64_t> e - 1
                        b = <int32_t> self._block_of(ppn)
                        if keep_bits:                  # (a miss: the page was written long ago)
                            bit = ppn + b * self.bit_pad
                            self.valid_bits[bit >> 6] &= ~((<uint64_t> 1) << (bit & 63))
                        if b != cur:
                            if run > 0:
                                self._block_lost(plane, cur, run)
                            cur = b
                            run = 0
                        run += 1
                        leaf[j & L2P_MASK] = 0
                        self.l2p_live[j >> L2P_SHIFT] -= 1
                        trimmed += 1
                    j += npl
                if run > 0:
                    self._block_lost(plane, cur, run)
            for k in range(i >> L2P_SHIFT, ((stop - 1) >> L2P_SHIFT) + 1):
                if self.l2p_leaf[k] != NULL and self.l2p_live[k] == 0:
                    self.leaf_pool.put(self.l2p_leaf[k])
                    self.l2p_leaf[k] = NULL
            i = stop
        self.st.trimmed_pages += trimmed

    # ---- flash pages -------------------------------------------------------------

    cdef cycle_t _read_page(self, int64_t lpn, cycle_t t) noexcept nogil:
        """Read one page for a command that reached the flash at ``t``; return when its data
        is in the controller."""
        cdef uint32_t e = self._l2p_get(lpn)
        cdef ssd_plane* pl
        cdef cycle_t t0, bus
        if e == 0:                                     # never written: the controller returns zeros
            self.st.unmapped_read_pages += 1
            return t
        pl = &self.planes[self._plane_of(lpn)]
        t0 = _max(t, pl.busy_until)
        pl.busy_until = t0 + self.p.t_read
        # channel time is charged in request order from the request time (module doc)
        bus = _max(self.channel_free[pl.channel], t) + self.p.t_xfer
        self.channel_free[pl.channel] = bus
        self.st.flash_read_pages += 1
        return _max(pl.busy_until + self.p.t_xfer, bus)

    cdef cycle_t _write_page(self, int64_t lpn, cycle_t arrive) noexcept nogil:
        """Buffer, map and program one page whose data reached the SSD at ``arrive``;
        return when it is in the write buffer (the acknowledgement point)."""
        cdef int64_t plane = self._plane_of(lpn)
        cdef ssd_plane* pl = &self.planes[plane]
        cdef cycle_t admit = self._buffer_admit(arrive)
        cdef uint32_t* slot = self._l2p_slot(lpn)
        cdef uint32_t old
        cdef int64_t ppn, b, bit
        cdef cycle_t bus, start
        if slot == NULL:                               # out of memory for an l2p leaf
            self.st.alloc_failures += 1
            return admit
        old = slot[0]
        if old != 0:
            self._invalidate(plane, <int64_t> old - 1)
            slot[0] = 0
        else:
            self.l2p_live[lpn >> L2P_SHIFT] += 1       # counted as mapped from here (GC never frees leaves)
        ppn = self._host_alloc(plane, admit)
        if ppn < 0:                                    # unreachable for a validated geometry
            self.st.alloc_failures += 1
            self._l2p_unmapped(lpn)
            return admit
        b = self._block_of(ppn)
        if not self.p2l_lazy:                          # (while lazy, l2p alone says what is valid)
            if self._p2l_append(<int32_t> b, ppn - b * self.p.pages_per_block, <uint32_t> lpn) < 0:
                self.st.alloc_failures += 1            # out of memory for its p2l
            bit = ppn + b * self.bit_pad
            self.valid_bits[bit >> 6] |= (<uint64_t> 1) << (bit & 63)
        slot[0] = <uint32_t> (ppn + 1)
        self.blk[b].valid += 1
        self.st.flash_program_pages += 1
        # channel time is charged in request order from the request time (module doc)
        bus = _max(self.channel_free[pl.channel], admit) + self.p.t_xfer
        self.channel_free[pl.channel] = bus
        start = _max(bus, pl.busy_until)
        pl.busy_until = start + self.p.t_prog
        self._buffer_add(plane, pl.busy_until)         # leaves the buffer when programmed
        return admit

    cdef void _invalidate(self, int64_t plane, int64_t ppn) noexcept nogil:
        """The page at ``ppn`` (in ``plane``: an lpn never leaves its plane) holds stale data."""
        cdef int32_t b = <int32_t> self._block_of(ppn)
        cdef int64_t bit
        if not self.p2l_lazy:
            bit = ppn + b * self.bit_pad
            self.valid_bits[bit >> 6] &= ~((<uint64_t> 1) << (bit & 63))
        self._block_lost(plane, b, 1)

    cdef void _block_lost(self, int64_t plane, int32_t b, int32_t k) noexcept nogil:
        """``k`` pages of block ``b`` (in ``plane``) went stale, their valid bits already cleared.
        One call for k pages leaves the same state as k calls for one page in a row: a greedy
        block moves from bucket v to v - k at its head, as it would through v - 1, v - 2, ..."""
        cdef int32_t v = self.blk[b].valid
        cdef ssd_plane* pl
        self.blk[b].valid = v - k
        if v == k and self.blk[b].state == BLOCK_CLOSED:
            self._p2l_release(b)
        if self.p.victim_policy == VICTIM_GREEDY and self.blk[b].state == BLOCK_CLOSED:
            self._greedy_move(plane, b)
            pl = &self.planes[plane]
            if v - k < pl.min_valid:
                pl.min_valid = v - k

    # ---- allocation and GC -------------------------------------------------------

    cdef inline int64_t _host_alloc(self, int64_t plane, cycle_t t) noexcept nogil:
        """The ppn of ``plane``'s next host page (-1: none).  Inlined into a write; opening
        a block (and the GC that may take) is the out-of-line part."""
        cdef ssd_plane* pl = &self.planes[plane]
        cdef int64_t ppn
        if pl.host_block < 0 or pl.host_next == self.p.pages_per_block:
            return self._host_alloc_open(plane, t)
        ppn = <int64_t> pl.host_block * self.p.pages_per_block + pl.host_next
        pl.host_next += 1
        return ppn

    cdef int64_t _host_alloc_open(self, int64_t plane, cycle_t t) noexcept nogil:
        """_host_alloc when ``plane`` has no host block with room: open one."""
        cdef ssd_plane* pl = &self.planes[plane]
        cdef int64_t cost, ppn
        cdef cycle_t start
        while pl.host_block < 0 or pl.host_next == self.p.pages_per_block:
            if pl.host_block >= 0:
                self._close_block(plane, pl.host_block)
            pl.host_block = self._take_free(plane)
            pl.host_next = 0
            if pl.host_block < 0:
                return -1
            # restore the free reserve; GC holds the plane's array while it works.  With a
            # shared frontier GC copies may fill the new host block: then go round again.
            while pl.free_count < self.p.gc_free_blocks_min:
                cost = self._collect(plane)
                if cost < 0:
                    self.st.gc_stalls += 1
                    break
                start = _max(pl.busy_until, t)
                pl.busy_until = start + cost
                self.st.gc_busy_cycles += cost
                if self.gc_first < 0 or start < self.gc_first:
                    self.gc_first = start
                if start + cost > self.gc_end:
                    self.gc_end = start + cost
        ppn = <int64_t> pl.host_block * self.p.pages_per_block + pl.host_next
        pl.host_next += 1
        return ppn

    cdef int64_t _gc_room(self, int64_t plane) noexcept nogil:
        """Make sure the frontier GC copies go to has an unwritten page; return its block
        (its next page is ``gc_next``, or ``host_next`` with a shared frontier), -1 if none."""
        cdef ssd_plane* pl = &self.planes[plane]
        if self.p.shared_frontier:                     # relocated pages join the host's write stream
            if pl.host_block < 0 or pl.host_next == self.p.pages_per_block:
                if pl.host_block >= 0:
                    self._close_block(plane, pl.host_block)
                pl.host_block = self._take_free(plane)
                pl.host_next = 0
            return pl.host_block
        if pl.gc_block < 0 or pl.gc_next == self.p.pages_per_block:
            if pl.gc_block >= 0:
                self._close_block(plane, pl.gc_block)
            pl.gc_block = self._take_free(plane)
            pl.gc_next = 0
        return pl.gc_block

    cdef int32_t _take_free(self, int64_t plane) noexcept nogil:
        cdef ssd_plane* pl = &self.planes[plane]
        cdef int32_t b = pl.free_head
        if b < 0:
            return -1
        pl.free_head = self.blk_next[b]
        if pl.free_head < 0:
            pl.free_tail = -1
        pl.free_count -= 1
        self.blk[b].state = BLOCK_OPEN
        self.blk_next[b] = -1
        if self.p2l_lazy:                              # its lpns are not kept (writes skip p2l)
            self.blk[b].runs = P2L_UNKNOWN
        return b

    cdef void _close_block(self, int64_t plane, int32_t b) noexcept nogil:
        cdef ssd_plane* pl = &self.planes[plane]
        cdef int32_t v = self.blk[b].valid
        cdef int32_t pos
        self.blk[b].state = BLOCK_CLOSED
        pl.closed_count += 1
        if v == 0:
            self._p2l_release(b)
        if self.p.victim_policy == VICTIM_GREEDY:
            self._greedy_move(plane, b)
            if v < pl.min_valid:
                pl.min_valid = v
        elif self.p.victim_policy == VICTIM_FIFO:
            self._list_push(plane, b, True)
        else:
            pos = pl.closed_count - 1
            self.dense[plane * self.p.blocks_per_plane + pos] = b
            self.blk_pos[b] = pos

    cdef inline void _greedy_move(self, int64_t plane, int32_t b) noexcept nogil:
        """Closed block ``b`` goes to the head of the greedy list of its valid count (at once,
        or logged while moves_deferred)."""
        cdef int32_t n
        if not self.moves_deferred:
            self._greedy_move_now(plane, b)
            return
        self.move_count[plane] += 1
        self.blk[b].moved = self.move_count[plane]
        n = self.move_log_n[plane]
        self.move_log[2 * (plane * self.move_log_stride + n)] = <uint32_t> b
        self.move_log[2 * (plane * self.move_log_stride + n) + 1] = self.move_count[plane]
        self.move_log_n[plane] = n + 1
        if n + 1 >= self.move_log_cap:
            self._apply_moves(plane)

    cdef void _greedy_move_now(self, int64_t plane, int32_t b) noexcept nogil:
        """_greedy_move without the log (out of line: the log is the usual case)."""
        if self.blk_prev[b] >= 0:                      # (a block just closed is in no list)
            self._list_remove(b)
        self._list_push(plane * self.n_lists + self.blk[b].valid, b, False)

    cdef void _apply_moves(self, int64_t plane) noexcept nogil:
        """Apply ``plane``'s logged moves: each block's last one, in their order."""
        cdef int32_t j, b
        cdef uint32_t* e = &self.move_log[2 * plane * self.move_log_stride]
        cdef int64_t lst = plane * self.n_lists
        for j in range(self.move_log_n[plane]):
            b = <int32_t> e[2 * j]
            if self.blk[b].moved != e[2 * j + 1]:
                continue                               # moved again later: that move decides
            # _greedy_move_now's body, written out: gcc keeps that one a call, 1 % of Base
            # UVM Inceptionv3 here (10.33 vs 10.44 s)
            if self.blk_prev[b] >= 0:
                self._list_remove(b)
            self._list_push(lst + self.blk[b].valid, b, False)
        self.move_log_n[plane] = 0

    cdef void _apply_all_moves(self) noexcept nogil:
        """Every plane's logged moves applied (before the lists are read or the log changes)."""
        cdef int64_t pl
        for pl in range(self.p.n_planes):
            self._apply_moves(pl)

    def set_move_log_cap(self, int32_t n):
        """Apply a plane's logged moves once it holds ``n`` (1 to the log's room; tests)."""
        if not 1 <= n <= self.move_log_stride:
            raise ValueError(f"move log of {n} entries: must be 1 to {self.move_log_stride}")
        self._apply_all_moves()
        self.move_log_cap = n

    @property
    def greedy_moves_deferred(self):
        """Greedy-list moves are logged and applied at the plane's next GC (see the .pxd)."""
        return self.moves_deferred

    @greedy_moves_deferred.setter
    def greedy_moves_deferred(self, bint on):
        self._apply_all_moves()
        self.moves_deferred = on and self.p.victim_policy == VICTIM_GREEDY

    cdef inline void _list_push(self, int64_t lst, int32_t b, bint at_tail) noexcept nogil:
        cdef int32_t sentinel = <int32_t> (self.n_blocks + lst)
        cdef int32_t before, after
        if at_tail:
            before = self.blk_prev[sentinel]
            after = sentinel
        else:
            before = sentinel
            after = self.blk_next[sentinel]
        self.blk_next[before] = b
        self.blk_prev[b] = before
        self.blk_next[b] = after
        self.blk_prev[after] = b

    cdef inline void _list_remove(self, int32_t b) noexcept nogil:
        cdef int32_t pv = self.blk_prev[b], nx = self.blk_next[b]
        self.blk_next[pv] = nx
        self.blk_prev[nx] = pv
        self.blk_prev[b] = -1
        self.blk_next[b] = -1

    cdef inline int32_t _list_first(self, int64_t lst) noexcept nogil:
        """The block at the head of list ``lst``, -1 when it is empty."""
        cdef int32_t h = self.blk_next[self.n_blocks + lst]
        return -1 if h >= self.n_blocks else h

    cdef int32_t _pick_victim(self, int64_t plane) noexcept nogil:
        """Choose a closed block of ``plane`` and take it out of the victim structures."""
        cdef ssd_plane* pl = &self.planes[plane]
        cdef int64_t lst, base, k
        cdef int32_t m, b, cand, pos, last
        if pl.closed_count == 0:
            return -1
        if self.p.victim_policy == VICTIM_GREEDY:
            self._apply_moves(plane)
            lst = plane * self.n_lists
            m = pl.min_valid
            while m <= self.p.pages_per_block and self._list_first(lst + m) < 0:
                m += 1
            pl.min_valid = m
            b = self._list_first(lst + m)
            self._list_remove(b)
        elif self.p.victim_policy == VICTIM_FIFO:
            b = self._list_first(plane)
            self._list_remove(b)
        else:
            base = plane * self.p.blocks_per_plane
            b = self.dense[base + <int64_t> g10_rng_below(self.rng, pl.closed_count)]
            if self.p.victim_policy == VICTIM_DCHOICES:
                for k in range(1, self.p.victim_choices):
                    cand = self.dense[base + <int64_t> g10_rng_below(self.rng, pl.closed_count)]
                    if self.blk[cand].valid < self.blk[b].valid:
                        b = cand
            pos = self.blk_pos[b]
            last = self.dense[base + pl.closed_count - 1]
            self.dense[base + pos] = last
            self.blk_pos[last] = pos
            self.blk_pos[b] = -1
        pl.closed_count -= 1
        return b

    cdef int64_t _collect(self, int64_t plane) noexcept nogil:
        """Collect one victim of ``plane``: copy its valid pages, erase it.
        Return the plane time it took (cycles), or -1 when there is no victim."""
        cdef ssd_plane* pl = &self.planes[plane]
        cdef int32_t b = self._pick_victim(plane)
        cdef int64_t P = self.p.pages_per_block
        cdef int64_t W = self.words_per_block
        cdef int64_t base, w, n = 0, copies = 0, j, run, dst, fb, bit
        cdef int32_t* frontier_next
        cdef uint64_t x
        cdef uint64_t* words
        cdef uint32_t* lpns = self.gc_lpns
        cdef uint32_t** l2p = self.l2p_leaf
        cdef uint32_t* p2l
        cdef int32_t runs, r = 0
        cdef uint32_t l
        if b < 0:
            return -1
        if self.blk[b].runs == P2L_UNKNOWN and self.blk[b].valid > 0:
            self._p2l_rebuild()                        # the first copy out of a block without lpns
        p2l = self.blk[b].p2l
        runs = self.blk[b].runs
        # the victim's valid pages, in block order (the order they are copied in); a victim
        # without valid pages has no p2l left
        if p2l != NULL:
            for j in range(0, P if runs < 0 else 2 * runs, 16):   # written long ago
                g10_prefetch_w(&p2l[j])
        words = &self.valid_bits[<int64_t> b * W]
        for w in range(W if not self.p2l_lazy else 0):   # (lazy: the victim holds no valid page)
            x = words[w]
            words[w] = 0
            while x != 0:
                j = w * 64 + g10_ctz64(x)
                if runs < 0:
                    lpns[n] = p2l[j]
                else:                                  # pages come in order: the run cursor only advances
                    while r + 1 < runs and <int64_t> p2l[2 * r + 3] <= j:
                        r += 1
                    lpns[n] = <uint32_t> (p2l[2 * r] + (j - <int64_t> p2l[2 * r + 1]) * self.p.n_planes)
                x &= x - 1
                n += 1
        for j in range(n if n < GC_PREFETCH_DISTANCE else GC_PREFETCH_DISTANCE):
            g10_prefetch_w(&l2p[lpns[j] >> L2P_SHIFT][lpns[j] & L2P_MASK])
        frontier_next = &pl.host_next if self.p.shared_frontier else &pl.gc_next
        # copy in runs that fit the open GC frontier
        while copies < n:
            fb = self._gc_room(plane)
            if fb < 0:                                 # unreachable for a validated geometry
                self.st.alloc_failures += 1
                break
            run = P - frontier_next[0]
            if run > n - copies:
                run = n - copies
            dst = fb * P + frontier_next[0]
            for j in range(copies, copies + run):
                if j + GC_PREFETCH_DISTANCE < n:
                    l = lpns[j + GC_PREFETCH_DISTANCE]
                    g10_prefetch_w(&l2p[l >> L2P_SHIFT][l & L2P_MASK])
                l = lpns[j]
                if self._p2l_append(<int32_t> fb, dst - fb * P, l) < 0:
                    self.st.alloc_failures += 1        # out of memory for its p2l
                l2p[l >> L2P_SHIFT][l & L2P_MASK] = <uint32_t> (dst + 1)
                dst += 1
            bit = fb * P + frontier_next[0] + fb * self.bit_pad
            g10_bits_set_range(self.valid_bits, bit, bit + run)
            self.blk[fb].valid += <int32_t> run
            frontier_next[0] += <int32_t> run
            copies += run
        self.blk[b].valid -= <int32_t> copies
        self._p2l_release(b)
        # erase and queue at the tail of the free FIFO (rotates wear across blocks)
        self.blk[b].erases += 1
        self.blk[b].state = BLOCK_FREE
        self.blk_next[b] = -1
        if pl.free_tail >= 0:
            self.blk_next[pl.free_tail] = b
        else:
            pl.free_head = b
        pl.free_tail = b
        pl.free_count += 1
        self.st.gc_victims += 1
        self.st.erases += 1
        self.st.gc_copies += copies
        self.st.flash_read_pages += copies
        self.st.flash_program_pages += copies
        return copies * (self.p.t_read + self.p.t_prog) + self.p.t_erase

    # ---- thin wrappers for the Python layer and tests (inputs validated there) ----

    def py_read(self, int64_t lpn, int64_t npages, cycle_t now):
        return self.read(lpn, npages, now)

    def py_write(self, int64_t lpn, int64_t npages, cycle_t now):
        return self.write(lpn, npages, now)

    def py_trim(self, int64_t lpn, int64_t npages):
        self.trim(lpn, npages)

    def py_next_issue_time(self, cycle_t now):
        return self.next_issue_time(now)

    def py_idle_at(self):
        return self.idle_at()

    cdef inline void _prefetch_overwrite(self, int64_t lpn) noexcept nogil:
        """Ask for the cache lines an overwrite of ``lpn`` will touch first (a hint only)."""
        cdef uint32_t e = self._l2p_get(lpn)
        cdef int64_t b, bit
        if e != 0:
            b = self._block_of(<int64_t> e - 1)
            bit = <int64_t> e - 1 + b * self.bit_pad
            g10_prefetch_w(&self.valid_bits[bit >> 6])
            g10_prefetch_w(&self.blk[b].valid)

    def run_pages(self, const int64_t[::1] lpns, bint is_write, cycle_t now, bint closed_loop):
        """One single-page command per entry of ``lpns``.  Closed loop: each is
        issued as soon as a queue slot is free (from ``now`` on); otherwise all
        are submitted at ``now``.  Returns the last completion cycle."""
        cdef Py_ssize_t i, n = lpns.shape[0]
        cdef cycle_t t = now, done, last = now
        with nogil:
            for i in range(n):
                # an overwrite misses on l2p[lpn], then on the old page's valid bit and block:
                # fetch the first early, the others once the first has arrived
                if i + 16 < n and self.l2p_leaf[lpns[i + 16] >> L2P_SHIFT] != NULL:
                    g10_prefetch_w(&self.l2p_leaf[lpns[i + 16] >> L2P_SHIFT][lpns[i + 16] & L2P_MASK])
                if i + 8 < n:
                    self._prefetch_overwrite(lpns[i + 8])
                if closed_loop:
                    t = self.next_issue_time(t)
                if is_write:
                    done = self.write(lpns[i], 1, t)
                else:
                    done = self.read(lpns[i], 1, t)
                if done > last:
                    last = done
        return last

    def stats(self):
        """Raw counters (pages, cycles) as a dict; ssd.SSD.stats derives the rest."""
        return dict(self.st)

    def histograms(self):
        """(read, write) latency histograms: counts per log-linear bucket of cycles."""
        cdef int64_t[::1] r = <int64_t[:G10_HIST_BUCKETS]> self.hist_read
        cdef int64_t[::1] w = <int64_t[:G10_HIST_BUCKETS]> self.hist_write
        return np.array(r, copy=True), np.array(w, copy=True)

    @staticmethod
    def bucket_bounds():
        """Lower bound (cycles) of every histogram bucket, and of the one past the last."""
        out = np.empty(G10_HIST_BUCKETS + 1, dtype=np.int64)
        cdef int b
        for b in range(G10_HIST_BUCKETS):
            out[b] = g10_hist_lower(b)
        out[G10_HIST_BUCKETS] = np.iinfo(np.int64).max
        return out

    def table_bytes(self):
        """Heap bytes the mapping tables hold (pools keep their peak), by table."""
        P = self.p.pages_per_block
        return {"l2p_leaves": self.leaf_pool.reserved_bytes(),
                "l2p_index": (self.n_leaves + 1) * (sizeof(uint32_t*) + sizeof(int32_t)),
                "p2l_dense": self.dense_pool.reserved_bytes(),
                "p2l_runs": (self.runs_small_pool.reserved_bytes() + self.runs_large_pool.reserved_bytes()
                             + self.runs_huge_pool.reserved_bytes()),
                # (calloc'd, and untouched while p2l_lazy: no page is mapped in until then)
                "valid_bits": 0 if self.p2l_lazy else self.n_blocks * self.words_per_block * sizeof(uint64_t),
                "blocks": (self.n_blocks + 1) * sizeof(blk_meta)
                          + (self.n_blocks + self.p.n_planes * self.n_lists) * 2 * sizeof(int32_t)
                          + 2 * self.n_blocks * sizeof(int32_t)}

    def erase_counts(self):
        return self._blk_column(BLK_ERASES)

    def _blk_column(self, int which):
        """One per-block field as an array (BLK_VALID, BLK_ERASES or BLK_STATE)."""
        cdef int64_t b
        cdef int32_t[::1] v
        cdef int8_t[::1] st
        if which == BLK_STATE:
            out = np.empty(self.n_blocks, dtype=np.int8)
            st = out
            for b in range(self.n_blocks):
                st[b] = self.blk[b].state
        else:
            out = np.empty(self.n_blocks, dtype=np.int32)
            v = out
            for b in range(self.n_blocks):
                v[b] = self.blk[b].valid if which == BLK_VALID else self.blk[b].erases
        return out

    def snapshot(self):
        """Copies of the FTL tables (for invariant checks in tests; small geometries only)."""
        cdef int64_t nl = self.p.n_planes * self.n_lists
        self._apply_all_moves()                        # the lists as the moves leave them
        P = self.p.pages_per_block
        bits = np.array(<uint64_t[:self.n_blocks * self.words_per_block]> self.valid_bits, copy=True)
        valid = np.unpackbits(bits.view(np.uint8), bitorder="little").reshape(self.n_blocks, -1)[:, :P]
        cdef int64_t b, k
        l2p = np.zeros(self.logical_pages, dtype=np.uint32)
        for k in range(self.n_leaves):
            if self.l2p_leaf[k] != NULL:
                leaf = np.array(<uint32_t[:L2P_LEAF]> self.l2p_leaf[k], copy=True)
                l2p[k * L2P_LEAF:(k + 1) * L2P_LEAF] = leaf[:min(L2P_LEAF, self.logical_pages - k * L2P_LEAF)]
        if self.p2l_lazy:                              # no bit kept yet: a page is valid when l2p maps it
            assert not bits.any()
            flat = valid.reshape(-1).copy()
            flat[l2p[l2p != 0].astype(np.int64) - 1] = 1
            valid = flat.reshape(self.n_blocks, P)
        lpn = np.zeros(self.physical_pages, dtype=np.uint32)
        unknown = np.zeros(self.n_blocks, dtype=bool)   # blocks whose lpns are not kept (p2l_lazy)
        cdef int64_t o, r, runs
        for b in range(self.n_blocks):
            runs = self.blk[b].runs
            unknown[b] = runs == P2L_UNKNOWN
            if runs == P2L_DENSE:
                lpn[b * P:(b + 1) * P] = np.array(<uint32_t[:P]> self.blk[b].p2l, copy=True)
            for r in range(runs):                      # run r: pages [first, next run's first)
                o = self.blk[b].p2l[2 * r + 1]
                while o < (self.blk[b].p2l[2 * r + 3] if r + 1 < runs else P):
                    lpn[b * P + o] = (self.blk[b].p2l[2 * r] + (o - self.blk[b].p2l[2 * r + 1]) * self.p.n_planes) & 0xFFFFFFFF
                    o += 1
        # blocks whose lpns are not kept hold what l2p says they hold
        if unknown.any():
            mapped = np.flatnonzero(l2p)
            where = l2p[mapped].astype(np.int64) - 1
            keep = unknown[where // P]
            lpn[where[keep]] = mapped[keep].astype(np.uint32)
        nxt = np.array(<int32_t[:self.n_blocks + nl]> self.blk_next, copy=True)
        out = {
            "p2l_unknown_blocks": int(unknown.sum()),
            "l2p": l2p,
            "p2l": np.where(valid.reshape(-1) != 0, lpn + 1, 0).astype(np.uint32),   # lpn + 1, 0: invalid
            "valid": self._blk_column(BLK_VALID),
            "erases": self._blk_column(BLK_ERASES),
            "state": self._blk_column(BLK_STATE),
            "next": np.where(nxt[:self.n_blocks] >= self.n_blocks, -1, nxt[:self.n_blocks]),  # -1: end
            "list_head": np.where(nxt[self.n_blocks:] >= self.n_blocks, -1, nxt[self.n_blocks:]),
            "planes": [self._plane_dict(i) for i in range(self.p.n_planes)],
            "channel_free": [self.channel_free[i] for i in range(self.p.n_channels)],
        }
        return out
