# Address mapping unit of the SSD's FTL (see _ssd_map.pyx): l2p in leaves, p2l per erase
# block as runs or one lpn per page, the valid-page bitmap, and the per-block records.
# The inline functions here are the write/trim/GC hot path: every module that cimports
# this file compiles them in; the rest lives in _ssd_map.pyx.
from libc.stdint cimport int8_t, int32_t, int64_t, uint32_t, uint64_t

cdef extern from "g10core/pool.h" nogil:
    cdef cppclass g10_node_pool:         # fixed-size nodes from chunks, a free list for reuse (pool.h)
        g10_node_pool()
        void* get(size_t size)
        void put(void* p)
        size_t reserved_bytes()

# What a write, a trim or GC reads and writes of one erase block, in one cache line (these
# were six arrays: a page written or trimmed touched a line of each).
cdef struct blk_meta:
    uint32_t* p2l              # runs (lpn, first page) x runs, or one lpn per page; NULL: none
    int32_t runs               # runs in p2l (P2L_DENSE: one lpn per page; P2L_UNKNOWN: not kept)
    int32_t cap                # runs p2l has room for
    int32_t valid              # valid pages
    int32_t erases             # erase count (wear)
    int8_t state               # BLOCK_FREE / OPEN / CLOSED
    uint32_t moved             # its plane's move count at its last greedy move (ssd_gc.move_log)


# Block states.
cdef enum:
    BLOCK_FREE = 0             # erased, in its plane's free FIFO
    BLOCK_OPEN = 1             # a host or GC frontier being filled
    BLOCK_CLOSED = 2           # full; a GC candidate


# l2p leaves: 1024 lpns (4 KiB) each.
cdef enum:
    L2P_SHIFT = 10
    L2P_LEAF = 1024
    L2P_MASK = 1023

# p2l run lists hold 8, then 32, then 64 runs (while that is below half a page's worth per
# page), then turn into one lpn per page.
cdef enum:
    P2L_RUNS_SMALL = 8
    P2L_RUNS_LARGE = 32
    P2L_RUNS_HUGE = 64

# blk_meta.runs of a block that keeps one lpn per page, and of one whose lpns are not kept
# (written while no GC has needed them: see ssd_map.p2l_lazy)
cdef enum:
    P2L_DENSE = -1
    P2L_UNKNOWN = -2


# The mapping, allocated where it holds something, so memory follows the live data, not
# the pages ever written: l2p in leaves of L2P_LEAF lpns, each made on its first mapping and
# freed when its last entry is unmapped; p2l per erase block, made at its first program and
# freed once it holds no valid page (GC reads a victim's p2l only where its valid bits are
# set).  Validity lives in a bitmap, so an overwrite or a GC copy never writes p2l at
# random: it is written once per program (in frontier order) and read once per GC copy.
# A block's p2l is a list of runs (lpn, first page): pages programmed in a row whose lpns
# step by n_planes (a sequential write as one plane sees it) share one run; a block with
# more runs than its list can take at 4+ pages a run (P2L_RUNS_HUGE), or whose first
# P2L_RUNS_SMALL runs are short (filled at random), switches to one lpn per page.
cdef struct ssd_map:
    int64_t logical_pages      # U: user-visible pages (lpn range)
    int64_t n_planes           # lpn % n_planes picks the plane; a run's lpns step by it
    int64_t n_blocks           # every erase block of the device
    int64_t pages_per_block
    int64_t plane_mask         # n_planes - 1 when a power of two, else -1
    int64_t page_shift         # log2(pages_per_block) when a power of two, else -1
    uint32_t** l2p_leaf        # per leaf: lpn -> ppn + 1 (0: unmapped), or NULL: none mapped
    int32_t* l2p_live          # per leaf: mapped entries
    int64_t n_leaves
    blk_meta* blk              # per block (and one spare): p2l, valid pages, erases, state
    uint64_t* valid_bits       # one bit per flash page, each block padded to 64-bit words (kept once p2l is)
    int64_t words_per_block    # ceil(pages_per_block / 64)
    int64_t bit_pad            # words_per_block * 64 - pages_per_block (bit = ppn + block * pad)
    # A block's lpns (p2l) are read only when GC copies valid pages out of it, and tensor
    # traffic often never needs that (Base UVM on Inceptionv3: 580 k GCs, none with a valid
    # page; 508 MB of per-page tables for blocks filled at random, 86 MB of runs for the
    # others, and 5 % of the run's time appending to them).  While p2l_lazy, no block keeps
    # them (P2L_UNKNOWN), nor valid bits (a page is valid when l2p maps it: keeping the bits
    # cost a miss per trimmed page, 4 % of that run); the first GC that must copy out of a
    # block rebuilds both from l2p in one pass (runs where a block's lpns allow) and clears
    # p2l_lazy.  Results are the same either way.  (Tests clear it before the first write to
    # compare; set back to True on a device that kept its bits, the bits would go stale.)
    bint p2l_lazy
    # each size from its own pool: the tables come and go millions of times, and mixed sizes
    # from one heap left it fragmented (freed memory the next size could not reuse)
    g10_node_pool* leaf_pool         # l2p leaves
    g10_node_pool* dense_pool        # p2l, one lpn per page
    g10_node_pool* runs_small_pool   # p2l, P2L_RUNS_SMALL runs
    g10_node_pool* runs_large_pool   # p2l, P2L_RUNS_LARGE runs
    g10_node_pool* runs_huge_pool    # p2l, P2L_RUNS_HUGE runs


cdef int map_init(ssd_map* m, int64_t n_planes, int64_t blocks_per_plane, int64_t pages_per_block,
                  int64_t logical_pages_per_plane) noexcept nogil
cdef void map_free(ssd_map* m) noexcept nogil
cdef uint32_t* l2p_new_leaf(ssd_map* m, int64_t lpn) noexcept nogil
cdef int p2l_new_run(ssd_map* m, int32_t b, int64_t page, uint32_t lpn) noexcept nogil
cdef int p2l_room(ssd_map* m, int32_t b, int32_t more, int64_t progress, int64_t upto,
                  int64_t page, uint32_t lpn) noexcept nogil
cdef int p2l_insert(ssd_map* m, int32_t b, int64_t page, uint32_t lpn, int64_t last) noexcept nogil
cdef uint32_t* p2l_to_dense(ssd_map* m, int32_t b, int64_t upto) noexcept nogil
cdef int64_t p2l_rebuild(ssd_map* m) noexcept nogil
cdef dict map_table_bytes(ssd_map* m)


# ---- address arithmetic (shifts when the sizes are powers of two) ---------------

cdef inline int64_t map_plane_of(const ssd_map* m, int64_t lpn) noexcept nogil:
    return (lpn & m.plane_mask) if m.plane_mask >= 0 else lpn % m.n_planes

cdef inline int64_t map_block_of(const ssd_map* m, int64_t ppn) noexcept nogil:
    return (ppn >> m.page_shift) if m.page_shift >= 0 else ppn // m.pages_per_block


# ---- l2p ---------------------------------------------------------------------

cdef inline uint32_t l2p_get(const ssd_map* m, int64_t lpn) noexcept nogil:
    """ppn + 1 of ``lpn``, 0: unmapped."""
    cdef uint32_t* leaf = m.l2p_leaf[lpn >> L2P_SHIFT]
    return leaf[lpn & L2P_MASK] if leaf != NULL else 0

cdef inline uint32_t* l2p_slot(ssd_map* m, int64_t lpn) noexcept nogil:
    """``lpn``'s l2p entry, its leaf made if there is none (NULL: out of memory).
    (Small enough to inline into a write; making a leaf is the out-of-line part.)"""
    cdef uint32_t* leaf = m.l2p_leaf[lpn >> L2P_SHIFT]
    if leaf == NULL:
        return l2p_new_leaf(m, lpn)
    return &leaf[lpn & L2P_MASK]

cdef inline void l2p_unmapped(ssd_map* m, int64_t lpn) noexcept nogil:
    """``lpn``'s entry, counted as mapped until now, was cleared: free its leaf once empty."""
    cdef int64_t k = lpn >> L2P_SHIFT
    m.l2p_live[k] -= 1
    if m.l2p_live[k] == 0:
        m.leaf_pool.put(m.l2p_leaf[k])
        m.l2p_leaf[k] = NULL


# ---- valid bits (kept once p2l_lazy is off) ---------------------------------------

cdef inline void valid_set(ssd_map* m, int64_t ppn, int64_t b) noexcept nogil:
    """Page ``ppn`` (of block ``b``) holds valid data."""
    cdef int64_t bit = ppn + b * m.bit_pad
    m.valid_bits[bit >> 6] |= (<uint64_t> 1) << (bit & 63)

cdef inline void valid_clear(ssd_map* m, int64_t ppn, int64_t b) noexcept nogil:
    """Page ``ppn`` (of block ``b``) holds stale data."""
    cdef int64_t bit = ppn + b * m.bit_pad
    m.valid_bits[bit >> 6] &= ~((<uint64_t> 1) << (bit & 63))


# ---- p2l ---------------------------------------------------------------------

cdef inline void p2l_release(ssd_map* m, int32_t b) noexcept nogil:
    """Block ``b`` holds no valid page (or was erased): its p2l is not needed."""
    cdef blk_meta* k = &m.blk[b]
    if k.p2l != NULL:
        if k.runs < 0:
            m.dense_pool.put(k.p2l)
        elif k.cap == P2L_RUNS_SMALL:
            m.runs_small_pool.put(k.p2l)
        elif k.cap == P2L_RUNS_LARGE:
            m.runs_large_pool.put(k.p2l)
        else:
            m.runs_huge_pool.put(k.p2l)
    k.p2l = NULL
    k.runs = 0
    k.cap = 0

cdef inline int p2l_append(ssd_map* m, int32_t b, int64_t page, uint32_t lpn) noexcept nogil:
    """Record that ``page`` of block ``b`` (the next one programmed there) holds ``lpn``.
    Returns -1 when out of memory."""
    cdef int32_t n = m.blk[b].runs
    cdef uint32_t* d = m.blk[b].p2l
    if n < 0:
        if n == P2L_DENSE:
            d[page] = lpn
        return 0                                   # (P2L_UNKNOWN: not kept)
    if n > 0 and <int64_t> d[2 * n - 2] + (page - <int64_t> d[2 * n - 1]) * m.n_planes == lpn:
        return 0                                   # continues the last run
    return p2l_new_run(m, b, page, lpn)
