# Block manager and garbage collection of the SSD's FTL (see _ssd_gc.pyx): each plane's
# frontiers and erased-block FIFO, the victim structures (greedy buckets, FIFO, dense array
# for random / d-choices) and GC itself (victim selection, relocation of valid pages,
# erase).  Functions that read or change the mapping take the mapping unit as an argument.  The inline functions are on the write/trim path; the rest is out of line.
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from g10core.core._types cimport cycle_t, ssd_params, ssd_stats, ssd_plane, VICTIM_GREEDY
from g10core.ssd._ssd_map cimport ssd_map, blk_meta, BLOCK_CLOSED, p2l_release

cdef struct ssd_gc:
    ssd_params p               # the device's parameters (a copy; fixed)
    ssd_stats* st              # the device's counters (GC, erases, allocation failures)
    ssd_plane* planes          # per plane: frontiers, erased-block FIFO, victim state, timing
    int64_t n_blocks
    int64_t n_lists            # victim lists per plane (P + 1 greedy buckets, 1 FIFO)
    # next / prev: per block, then one sentinel node per victim list (node
    # n_blocks + plane * n_lists + list): the victim lists are circular through their sentinel
    int32_t* next              # next in its free FIFO (-1: last) or victim list
    int32_t* prev              # previous in its victim list
    int32_t* pos               # index in its plane's dense closed array (random victims)
    int32_t* dense             # per plane: closed blocks, packed (random victims)
    uint32_t* lpns             # scratch: lpns of the victim's valid pages, in block order
    # Greedy victim lists: a block goes to the head of its valid count's list at every page it
    # loses, four random lines each time, and only GC reads the lists (Base UVM on
    # Inceptionv3: 164 M such moves, 2.3 M distinct blocks between one GC and the next in a
    # plane).  While moves_deferred, a plane logs its moves (move_log) and applies, at its
    # next GC or when the log is full, each logged block's last move only, in the order of
    # those last moves: the lists come out as the moves one by one would leave them (a move
    # puts the block at its list's head, so only the last one decides its place).
    bint moves_deferred
    uint32_t* move_log         # per plane: move_log_stride (block, move count) pairs
    int64_t move_log_stride    # room of a plane's log (MOVE_LOG_CAP, less on many planes)
    int32_t move_log_cap       # entries a plane's log takes before it is applied
    int32_t* move_log_n        # per plane: entries in its log
    uint32_t* move_count       # per plane: moves logged so far (wraps; compared for equality)
    # the span of GC work (plane time) since the timeline last took it (_timeline.pyx); -1: none
    int64_t gc_first
    int64_t gc_end
    uint64_t rng[4]            # victim sampling (random, d-choices)

cdef int gc_init(ssd_gc* g, const ssd_params* p, ssd_stats* st) noexcept nogil
cdef void gc_free(ssd_gc* g) noexcept nogil
cdef int64_t host_alloc_open(ssd_gc* g, ssd_map* m, int64_t plane, cycle_t t) noexcept nogil
cdef void greedy_move_now(ssd_gc* g, ssd_map* m, int64_t plane, int32_t b) noexcept nogil
cdef void apply_moves(ssd_gc* g, ssd_map* m, int64_t plane) noexcept nogil
cdef void apply_all_moves(ssd_gc* g, ssd_map* m) noexcept nogil
cdef int32_t pick_victim(ssd_gc* g, ssd_map* m, int64_t plane) noexcept nogil
cdef int64_t collect(ssd_gc* g, ssd_map* m, int64_t plane) noexcept nogil


cdef inline int64_t host_alloc(ssd_gc* g, ssd_map* m, int64_t plane, cycle_t t) noexcept nogil:
    """The ppn of ``plane``'s next host page (-1: none).  Inlined into a write; opening
    a block (and the GC that may take) is the out-of-line part."""
    cdef ssd_plane* pl = &g.planes[plane]
    cdef int64_t ppn
    if pl.host_block < 0 or pl.host_next == g.p.pages_per_block:
        return host_alloc_open(g, m, plane, t)
    ppn = <int64_t> pl.host_block * g.p.pages_per_block + pl.host_next
    pl.host_next += 1
    return ppn

cdef inline void greedy_move(ssd_gc* g, ssd_map* m, int64_t plane, int32_t b) noexcept nogil:
    """Closed block ``b`` goes to the head of the greedy list of its valid count (at once,
    or logged while moves_deferred)."""
    cdef int32_t n
    if not g.moves_deferred:
        greedy_move_now(g, m, plane, b)
        return
    g.move_count[plane] += 1
    m.blk[b].moved = g.move_count[plane]
    n = g.move_log_n[plane]
    g.move_log[2 * (plane * g.move_log_stride + n)] = <uint32_t> b
    g.move_log[2 * (plane * g.move_log_stride + n) + 1] = g.move_count[plane]
    g.move_log_n[plane] = n + 1
    if n + 1 >= g.move_log_cap:
        apply_moves(g, m, plane)

cdef inline void block_lost(ssd_gc* g, ssd_map* m, int64_t plane, int32_t b, int32_t k) noexcept nogil:
    """``k`` pages of block ``b`` (in ``plane``) went stale, their valid bits already cleared.
    One call for k pages leaves the same state as k calls for one page in a row: a greedy
    block moves from bucket v to v - k at its head, as it would through v - 1, v - 2, ..."""
    cdef blk_meta* rec = &m.blk[b]
    cdef int32_t v = rec.valid
    cdef ssd_plane* pl
    rec.valid = v - k
    if v == k and rec.state == BLOCK_CLOSED:
        p2l_release(m, b)
    if g.p.victim_policy == VICTIM_GREEDY and rec.state == BLOCK_CLOSED:
        greedy_move(g, m, plane, b)
        pl = &g.planes[plane]
        if v - k < pl.min_valid:
            pl.min_valid = v - k
