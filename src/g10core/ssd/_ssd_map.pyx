# cython: language_level=3
"""Address mapping unit of the SSD's FTL (``SSDCore`` in _ssd.pyx composes it).

Page-level mapping: lpn -> ppn in leaves of 1024 lpns, ppn -> lpn per erase block (a list
of runs, or one lpn per page); each is allocated only while it maps something, so memory
follows the live data, not the pages ever written.  Which flash pages hold valid data is
a bitmap, so an overwrite writes l2p and one bit, and GC reads the victim's p2l entries in
block order.  The hot functions are inline in _ssd_map.pxd; here are the out-of-line ones
(a new leaf, a new run, a run list that grows or turns dense, the one-off rebuild of the
lazily skipped tables) and ``MappingUnit``, a thin wrapper for tests.

Everything here trusts its inputs (ssd.py validates the spec and lpn ranges).
"""
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy, memmove, memset


cdef int map_init(ssd_map* m, int64_t n_planes, int64_t blocks_per_plane, int64_t pages_per_block,
                  int64_t logical_pages_per_plane) noexcept nogil:
    """Empty tables for the geometry; -1 when out of memory (``map_free`` releases what was made)."""
    cdef int64_t P = pages_per_block
    m.n_planes = n_planes
    m.n_blocks = n_planes * blocks_per_plane
    m.pages_per_block = P
    m.logical_pages = logical_pages_per_plane * n_planes
    m.plane_mask = (n_planes - 1) if (n_planes & (n_planes - 1)) == 0 else -1
    m.page_shift = -1
    if P & (P - 1) == 0:
        m.page_shift = 0
        while (1 << m.page_shift) < P:
            m.page_shift += 1
    m.words_per_block = (P + 63) // 64
    m.bit_pad = m.words_per_block * 64 - P
    m.n_leaves = (m.logical_pages + L2P_LEAF - 1) >> L2P_SHIFT
    m.l2p_leaf = <uint32_t**> calloc(m.n_leaves + 1, sizeof(uint32_t*))
    m.l2p_live = <int32_t*> calloc(m.n_leaves + 1, sizeof(int32_t))
    m.blk = <blk_meta*> calloc(m.n_blocks + 1, sizeof(blk_meta))
    m.valid_bits = <uint64_t*> calloc(m.n_blocks * m.words_per_block, sizeof(uint64_t))
    m.leaf_pool = new g10_node_pool()
    m.dense_pool = new g10_node_pool()
    m.runs_small_pool = new g10_node_pool()
    m.runs_large_pool = new g10_node_pool()
    m.runs_huge_pool = new g10_node_pool()
    m.p2l_lazy = True
    if m.l2p_leaf == NULL or m.l2p_live == NULL or m.blk == NULL or m.valid_bits == NULL:
        return -1
    return 0


cdef void map_free(ssd_map* m) noexcept nogil:
    # leaves and p2l tables live in the pools, which free their chunks themselves
    free(m.l2p_leaf); free(m.l2p_live); free(m.blk); free(m.valid_bits)
    m.l2p_leaf = NULL; m.l2p_live = NULL; m.blk = NULL; m.valid_bits = NULL
    del m.leaf_pool
    del m.dense_pool
    del m.runs_small_pool
    del m.runs_large_pool
    del m.runs_huge_pool
    m.leaf_pool = m.dense_pool = m.runs_small_pool = m.runs_large_pool = m.runs_huge_pool = NULL


cdef uint32_t* l2p_new_leaf(ssd_map* m, int64_t lpn) noexcept nogil:
    """l2p_slot when ``lpn``'s leaf is not there: make it."""
    cdef uint32_t* leaf = <uint32_t*> m.leaf_pool.get(L2P_LEAF * sizeof(uint32_t))
    memset(leaf, 0, L2P_LEAF * sizeof(uint32_t))
    m.l2p_leaf[lpn >> L2P_SHIFT] = leaf
    return &leaf[lpn & L2P_MASK]


cdef int p2l_new_run(ssd_map* m, int32_t b, int64_t page, uint32_t lpn) noexcept nogil:
    """``p2l_append`` when ``page`` starts a run: add one (or switch to one lpn per page)."""
    cdef int32_t n
    cdef int room = p2l_room(m, b, 1, page, page, page, lpn)
    if room != 0:
        return -1 if room < 0 else 0
    n = m.blk[b].runs
    m.blk[b].p2l[2 * n] = lpn
    m.blk[b].p2l[2 * n + 1] = <uint32_t> page
    m.blk[b].runs = n + 1
    return 0


cdef int p2l_room(ssd_map* m, int32_t b, int32_t more, int64_t progress, int64_t upto,
                  int64_t page, uint32_t lpn) noexcept nogil:
    """Make room in block ``b``'s run list for ``more`` (1 or 2) runs, ``progress`` pages
    into the block: 0 when there is; 1 when the block switched to one lpn per page instead
    (pages [0, upto) filled from its runs) and ``page`` was recorded as holding ``lpn``;
    -1 when out of memory."""
    cdef uint32_t* dense
    cdef int32_t n = m.blk[b].runs, cap = m.blk[b].cap
    cdef uint32_t* d
    cdef int64_t P = m.pages_per_block
    if n + more <= cap:
        return 0
    if n == 0:
        d = <uint32_t*> m.runs_small_pool.get(2 * P2L_RUNS_SMALL * sizeof(uint32_t))
        m.blk[b].cap = P2L_RUNS_SMALL
    elif cap == P2L_RUNS_SMALL and 2 * P2L_RUNS_LARGE < P and progress >= 4 * P2L_RUNS_SMALL:
        d = <uint32_t*> m.runs_large_pool.get(2 * P2L_RUNS_LARGE * sizeof(uint32_t))
        memcpy(d, m.blk[b].p2l, 2 * n * sizeof(uint32_t))
        m.runs_small_pool.put(m.blk[b].p2l)
        m.blk[b].cap = P2L_RUNS_LARGE
    elif cap == P2L_RUNS_LARGE and 2 * P2L_RUNS_HUGE < P and progress >= 4 * P2L_RUNS_LARGE:
        # runs of 4 pages, a 2 MiB write's share of each of 128 planes, cost half of dense
        d = <uint32_t*> m.runs_huge_pool.get(2 * P2L_RUNS_HUGE * sizeof(uint32_t))
        memcpy(d, m.blk[b].p2l, 2 * n * sizeof(uint32_t))
        m.runs_large_pool.put(m.blk[b].p2l)
        m.blk[b].cap = P2L_RUNS_HUGE
    else:                                          # more runs would cost more than a page each
        # (or the first runs are short: the block is filled at random, go dense early)
        dense = p2l_to_dense(m, b, upto)
        if dense == NULL:
            return -1
        dense[page] = lpn
        return 1
    m.blk[b].p2l = d
    return 0


cdef int p2l_insert(ssd_map* m, int32_t b, int64_t page, uint32_t lpn, int64_t last) noexcept nogil:
    """The rebuild found ``page`` of block ``b`` (below ``last``, the highest page found
    there so far) holding ``lpn``: fit it in among the runs, which stay in page order.
    A run stands for the pages from its first up to the next run's first, so a page
    inside a run that does not follow it splits the run: the page's own run, then the
    rest of the old one.  Returns -1 when out of memory."""
    cdef int32_t n = m.blk[b].runs, r, need
    cdef int room
    cdef uint32_t* d = m.blk[b].p2l
    cdef int64_t end
    if n < 0:
        if n == P2L_DENSE:
            d[page] = lpn
        return 0
    r = n - 1                                      # the run holding page (-1: before them all)
    while r >= 0 and <int64_t> d[2 * r + 1] > page:
        r -= 1
    if r >= 0 and <int64_t> d[2 * r] + (page - <int64_t> d[2 * r + 1]) * m.n_planes == lpn:
        return 0                                   # the run already says so
    end = <int64_t> d[2 * r + 3] if r + 1 < n else last + 1
    need = 2 if r >= 0 and page + 1 < end else 1
    room = p2l_room(m, b, need, last, last + 1, page, lpn)
    if room != 0:
        return -1 if room < 0 else 0
    d = m.blk[b].p2l
    memmove(&d[2 * (r + 1 + need)], &d[2 * (r + 1)], 2 * (n - r - 1) * sizeof(uint32_t))
    d[2 * (r + 1)] = lpn
    d[2 * (r + 1) + 1] = <uint32_t> page
    if need == 2:                                  # the rest of run r, from page + 1
        d[2 * (r + 2)] = <uint32_t> (d[2 * r] + (page + 1 - <int64_t> d[2 * r + 1]) * m.n_planes)
        d[2 * (r + 2) + 1] = <uint32_t> (page + 1)
    m.blk[b].runs = n + need
    return 0


cdef uint32_t* p2l_to_dense(ssd_map* m, int32_t b, int64_t upto) noexcept nogil:
    """Block ``b`` (a run list) turns into one lpn per page, pages [0, upto) filled from
    its runs; returns the new table (NULL: out of memory, the runs are kept)."""
    cdef uint32_t* d = m.blk[b].p2l
    cdef uint32_t* dense = <uint32_t*> m.dense_pool.get(m.pages_per_block * sizeof(uint32_t))
    cdef int32_t n = m.blk[b].runs, r = 0
    cdef int64_t o
    if dense == NULL:
        return NULL
    for o in range(upto):
        while r + 1 < n and <int64_t> d[2 * r + 3] <= o:
            r += 1
        dense[o] = <uint32_t> (d[2 * r] + (o - <int64_t> d[2 * r + 1]) * m.n_planes)
    p2l_release(m, b)
    m.blk[b].p2l = dense
    m.blk[b].runs = P2L_DENSE
    return dense


cdef int64_t p2l_rebuild(ssd_map* m) noexcept nogil:
    """GC must copy out of a block whose lpns were not kept: give every such block its
    lpns again, from l2p (its valid pages are exactly the mapped lpns that point into
    it), and keep p2l from here on.  One pass over the l2p leaves, once per run.
    Returns the allocations that failed (0 unless out of memory).

    The pass goes in lpn order: a block's pages come in page order when its lpns rise
    with its pages (a sequential write), and are appended as a program would append
    them; a page that comes before one already found is fitted in among the runs
    (p2l_insert).  So a block gets back runs where its lpns allow, and one lpn per
    page where they do not."""
    cdef int64_t b, k, j, ppn, page, P = m.pages_per_block, failed = 0
    cdef uint32_t e
    cdef uint32_t* leaf
    # per block: the last page given back its lpn (-1: none yet; -2: kept its lpns)
    cdef int32_t* last = <int32_t*> malloc(m.n_blocks * sizeof(int32_t))
    if last == NULL:
        return 1                                   # (the run fails: ssd.SSD reports it)
    m.p2l_lazy = False
    for b in range(m.n_blocks):
        last[b] = -2
        if m.blk[b].runs == P2L_UNKNOWN:
            m.blk[b].runs = 0
            m.blk[b].cap = 0
            m.blk[b].p2l = NULL
            last[b] = -1
    for k in range(m.n_leaves):
        leaf = m.l2p_leaf[k]
        if leaf == NULL:
            continue
        for j in range(L2P_LEAF):
            e = leaf[j]
            if e == 0:
                continue
            ppn = <int64_t> e - 1
            b = map_block_of(m, ppn)
            valid_set(m, ppn, b)                   # no bit was kept while lazy
            if last[b] == -2:
                continue
            page = ppn - b * P
            if page > last[b]:
                if p2l_append(m, <int32_t> b, page, <uint32_t> ((k << L2P_SHIFT) + j)) < 0:
                    failed += 1
                last[b] = <int32_t> page
            elif p2l_insert(m, <int32_t> b, page, <uint32_t> ((k << L2P_SHIFT) + j), last[b]) < 0:
                failed += 1
    free(last)
    return failed


cdef dict map_table_bytes(ssd_map* m):
    """Heap bytes the mapping tables hold (pools keep their peak), by table."""
    return {"l2p_leaves": m.leaf_pool.reserved_bytes(),
            "l2p_index": (m.n_leaves + 1) * (sizeof(uint32_t*) + sizeof(int32_t)),
            "p2l_dense": m.dense_pool.reserved_bytes(),
            "p2l_runs": (m.runs_small_pool.reserved_bytes() + m.runs_large_pool.reserved_bytes()
                         + m.runs_huge_pool.reserved_bytes()),
            # (calloc'd, and untouched while p2l_lazy: no page is mapped in until then)
            "valid_bits": 0 if m.p2l_lazy else m.n_blocks * m.words_per_block * sizeof(uint64_t)}


cdef class MappingUnit:
    """The mapping tables of a geometry alone, for tests: map and unmap lpns, record the
    pages programmed into a block, and read back what the tables hold."""
    cdef ssd_map m

    def __cinit__(self, int64_t n_planes, int64_t blocks_per_plane, int64_t pages_per_block,
                  int64_t logical_pages_per_plane):
        if map_init(&self.m, n_planes, blocks_per_plane, pages_per_block, logical_pages_per_plane) < 0:
            raise MemoryError("cannot allocate the mapping tables")

    def __dealloc__(self):
        map_free(&self.m)

    def __reduce__(self):
        raise TypeError("MappingUnit does not pickle (a test fixture)")

    @property
    def p2l_lazy(self):
        return self.m.p2l_lazy

    @p2l_lazy.setter
    def p2l_lazy(self, bint on):
        self.m.p2l_lazy = on

    def map(self, int64_t lpn, int64_t ppn):
        """Map ``lpn`` to ``ppn`` as a host write does (the old page, if any, is replaced)."""
        cdef uint32_t* slot = l2p_slot(&self.m, lpn)
        if slot[0] == 0:
            self.m.l2p_live[lpn >> L2P_SHIFT] += 1
        slot[0] = <uint32_t> (ppn + 1)

    def unmap(self, int64_t lpn):
        """Unmap a mapped ``lpn`` as a failed write does (its leaf freed once empty)."""
        l2p_slot(&self.m, lpn)[0] = 0
        l2p_unmapped(&self.m, lpn)

    def lookup(self, int64_t lpn):
        """``lpn``'s ppn, -1 when unmapped."""
        return <int64_t> l2p_get(&self.m, lpn) - 1

    def live(self, int64_t leaf):
        """Mapped entries of l2p leaf ``leaf`` (-1: the leaf is not there)."""
        return self.m.l2p_live[leaf] if self.m.l2p_leaf[leaf] != NULL else -1

    def append(self, int32_t b, int64_t page, uint32_t lpn):
        """Record that ``page`` of block ``b`` (the next one programmed there) holds ``lpn``."""
        return p2l_append(&self.m, b, page, lpn)

    def release(self, int32_t b):
        p2l_release(&self.m, b)

    def runs(self, int32_t b):
        """Block ``b``'s run list as (lpn, first page) pairs, or "dense" / "unknown"."""
        cdef blk_meta* k = &self.m.blk[b]
        if k.runs == P2L_DENSE:
            return "dense"
        if k.runs == P2L_UNKNOWN:
            return "unknown"
        return [(k.p2l[2 * r], k.p2l[2 * r + 1]) for r in range(k.runs)]

    def capacity(self, int32_t b):
        """Runs block ``b``'s list has room for."""
        return self.m.blk[b].cap

    def table_bytes(self):
        return map_table_bytes(&self.m)
