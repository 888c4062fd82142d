# cython: language_level=3
"""Block manager and garbage collection of the SSD's FTL (``SSDCore`` in _ssd.pyx composes it).

Each plane is one GC domain with a host frontier, a GC frontier and a FIFO of erased
blocks.  After a host frontier is replaced, GC collects victims until the plane has
``gc_free_blocks_min`` erased blocks again, holding the plane's array while it works.
Victims: greedy (per-valid-count buckets, O(1)), FIFO, random, d-choices.  GC copies use
copy-back inside the plane (tR + tPROG, no channel time) and go to the GC frontier (or the
host frontier with ``shared_frontier``).  ``BlockManager`` is a thin wrapper for tests.

Everything here trusts its inputs (ssd.py validates the spec).
"""
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, malloc, free

from g10core.core._types cimport VICTIM_FIFO, VICTIM_DCHOICES
from g10core.ssd._ssd_map cimport (BLOCK_FREE, BLOCK_OPEN, P2L_UNKNOWN, L2P_SHIFT, L2P_MASK,
                               map_init, map_free, map_block_of, p2l_append, p2l_rebuild)
from g10core.ssd._ssd_math cimport (g10_rng_seed, g10_rng_below, g10_prefetch_w, g10_ctz64,
                                g10_bits_set_range)


# GC copies rewrite l2p entries at random; their cache lines are requested this many
# copies ahead (far enough to hide a DRAM miss, near enough to stay in L1).
cdef enum:
    GC_PREFETCH_DISTANCE = 16

# a plane's log of deferred greedy-list moves holds up to this many before it is applied
cdef enum:
    MOVE_LOG_CAP = 256


cdef inline cycle_t _max(cycle_t a, cycle_t b) noexcept nogil:
    return a if a > b else b


cdef int gc_init(ssd_gc* g, const ssd_params* p, ssd_stats* st) noexcept nogil:
    """Every block erased and queued in address order, no victim; -1 when out of memory
    (``gc_free`` releases what was made)."""
    cdef int64_t i, b, pl, nodes
    cdef int64_t N = p.blocks_per_plane, P = p.pages_per_block
    g.p = p[0]
    g.st = st
    g.gc_first = g.gc_end = -1
    g.n_blocks = p.n_planes * N
    g.n_lists = (P + 1) if p.victim_policy == VICTIM_GREEDY else 1
    # victim lists are circular with one sentinel node each, after the blocks:
    # list l's sentinel is node n_blocks + l (so unlinking a block never branches)
    nodes = g.n_blocks + p.n_planes * g.n_lists
    g.next = <int32_t*> malloc(nodes * sizeof(int32_t))
    g.prev = <int32_t*> malloc(nodes * sizeof(int32_t))
    g.pos = <int32_t*> malloc(g.n_blocks * sizeof(int32_t))
    g.dense = <int32_t*> malloc(g.n_blocks * sizeof(int32_t))
    g.lpns = <uint32_t*> malloc(P * sizeof(uint32_t))
    g.planes = <ssd_plane*> calloc(p.n_planes, sizeof(ssd_plane))
    # 256 entries a plane (2 KiB); fewer, down to 16, on devices of over 256 planes
    g.move_log_stride = max(16, min(MOVE_LOG_CAP, (MOVE_LOG_CAP * 256) // p.n_planes))
    g.move_log = <uint32_t*> malloc(p.n_planes * g.move_log_stride * 2 * sizeof(uint32_t))
    g.move_log_n = <int32_t*> calloc(p.n_planes, sizeof(int32_t))
    g.move_count = <uint32_t*> calloc(p.n_planes, sizeof(uint32_t))
    if (g.next == NULL or g.prev == NULL or g.pos == NULL or g.dense == NULL or g.lpns == NULL
            or g.planes == NULL or g.move_log == NULL or g.move_log_n == NULL or g.move_count == NULL):
        return -1
    for i in range(p.n_planes * g.n_lists):
        g.next[g.n_blocks + i] = <int32_t> (g.n_blocks + i)
        g.prev[g.n_blocks + i] = <int32_t> (g.n_blocks + i)
    for pl in range(p.n_planes):
        g.planes[pl].host_block = -1               # (calloc: the rest 0)
        g.planes[pl].gc_block = -1
        g.planes[pl].min_valid = <int32_t> P
        g.planes[pl].channel = <int32_t> (pl % p.n_channels)
        # every block erased, queued in address order
        g.planes[pl].free_head = <int32_t> (pl * N)
        g.planes[pl].free_tail = <int32_t> (pl * N + N - 1)
        g.planes[pl].free_count = <int32_t> N
        for i in range(N):
            b = pl * N + i
            g.next[b] = <int32_t> (b + 1) if i + 1 < N else -1
            g.prev[b] = -1
            g.pos[b] = -1
    g10_rng_seed(g.rng, p.seed)
    g.moves_deferred = p.victim_policy == VICTIM_GREEDY
    g.move_log_cap = <int32_t> g.move_log_stride
    return 0


cdef void gc_free(ssd_gc* g) noexcept nogil:
    free(g.next); free(g.prev); free(g.pos); free(g.dense); free(g.lpns); free(g.planes)
    free(g.move_log); free(g.move_log_n); free(g.move_count)
    g.next = g.prev = g.pos = g.dense = g.move_log_n = NULL
    g.lpns = g.move_log = g.move_count = NULL
    g.planes = NULL


# ---- frontiers and the erased-block FIFO ---------------------------------------------

cdef int64_t host_alloc_open(ssd_gc* g, ssd_map* m, int64_t plane, cycle_t t) noexcept nogil:
    """host_alloc when ``plane`` has no host block with room: open one."""
    cdef ssd_plane* pl = &g.planes[plane]
    cdef int64_t cost, ppn
    cdef cycle_t start
    while pl.host_block < 0 or pl.host_next == g.p.pages_per_block:
        if pl.host_block >= 0:
            _close_block(g, m, plane, pl.host_block)
        pl.host_block = _take_free(g, m, plane)
        pl.host_next = 0
        if pl.host_block < 0:
            return -1
        # restore the free reserve; GC holds the plane's array while it works.  With a
        # shared frontier GC copies may fill the new host block: then go round again.
        while pl.free_count < g.p.gc_free_blocks_min:
            cost = collect(g, m, plane)
            if cost < 0:
                g.st.gc_stalls += 1
                break
            start = _max(pl.busy_until, t)
            pl.busy_until = start + cost
            g.st.gc_busy_cycles += cost
            if g.gc_first < 0 or start < g.gc_first:
                g.gc_first = start
            if start + cost > g.gc_end:
                g.gc_end = start + cost
    ppn = <int64_t> pl.host_block * g.p.pages_per_block + pl.host_next
    pl.host_next += 1
    return ppn


cdef int64_t _gc_room(ssd_gc* g, ssd_map* m, int64_t plane) noexcept nogil:
    """Make sure the frontier GC copies go to has an unwritten page; return its block
    (its next page is ``gc_next``, or ``host_next`` with a shared frontier), -1 if none."""
    cdef ssd_plane* pl = &g.planes[plane]
    cdef int32_t* block = &pl.gc_block
    cdef int32_t* nxt = &pl.gc_next
    if g.p.shared_frontier:                        # relocated pages join the host's write stream
        block = &pl.host_block
        nxt = &pl.host_next
    if block[0] < 0 or nxt[0] == g.p.pages_per_block:
        if block[0] >= 0:
            _close_block(g, m, plane, block[0])
        block[0] = _take_free(g, m, plane)
        nxt[0] = 0
    return block[0]


cdef int32_t _take_free(ssd_gc* g, ssd_map* m, int64_t plane) noexcept nogil:
    cdef ssd_plane* pl = &g.planes[plane]
    cdef int32_t b = pl.free_head
    if b < 0:
        return -1
    pl.free_head = g.next[b]
    if pl.free_head < 0:
        pl.free_tail = -1
    pl.free_count -= 1
    m.blk[b].state = BLOCK_OPEN
    g.next[b] = -1
    if m.p2l_lazy:                             # its lpns are not kept (writes skip p2l)
        m.blk[b].runs = P2L_UNKNOWN
    return b


cdef void _close_block(ssd_gc* g, ssd_map* m, int64_t plane, int32_t b) noexcept nogil:
    cdef ssd_plane* pl = &g.planes[plane]
    cdef int32_t v = m.blk[b].valid
    cdef int32_t pos
    m.blk[b].state = BLOCK_CLOSED
    pl.closed_count += 1
    if v == 0:
        p2l_release(m, b)
    if g.p.victim_policy == VICTIM_GREEDY:
        greedy_move(g, m, plane, b)
        if v < pl.min_valid:
            pl.min_valid = v
    elif g.p.victim_policy == VICTIM_FIFO:
        _list_push(g, plane, b, True)
    else:
        pos = pl.closed_count - 1
        g.dense[plane * g.p.blocks_per_plane + pos] = b
        g.pos[b] = pos


# ---- victim lists ------------------------------------------------------------------

cdef inline void _list_push(ssd_gc* g, int64_t lst, int32_t b, bint at_tail) noexcept nogil:
    cdef int32_t sentinel = <int32_t> (g.n_blocks + lst)
    cdef int32_t before, after
    if at_tail:
        before = g.prev[sentinel]
        after = sentinel
    else:
        before = sentinel
        after = g.next[sentinel]
    g.next[before] = b
    g.prev[b] = before
    g.next[b] = after
    g.prev[after] = b


cdef inline void _list_remove(ssd_gc* g, int32_t b) noexcept nogil:
    cdef int32_t pv = g.prev[b], nx = g.next[b]
    g.next[pv] = nx
    g.prev[nx] = pv
    g.prev[b] = -1
    g.next[b] = -1


cdef inline int32_t _list_first(ssd_gc* g, int64_t lst) noexcept nogil:
    """The block at the head of list ``lst``, -1 when it is empty."""
    cdef int32_t h = g.next[g.n_blocks + lst]
    return -1 if h >= g.n_blocks else h


cdef void greedy_move_now(ssd_gc* g, ssd_map* m, int64_t plane, int32_t b) noexcept nogil:
    """greedy_move without the log (out of line: the log is the usual case)."""
    if g.prev[b] >= 0:                             # (a block just closed is in no list)
        _list_remove(g, b)
    _list_push(g, plane * g.n_lists + m.blk[b].valid, b, False)


cdef void apply_moves(ssd_gc* g, ssd_map* m, int64_t plane) noexcept nogil:
    """Apply ``plane``'s logged moves: each block's last one, in their order."""
    cdef int32_t j, b
    cdef uint32_t* e = &g.move_log[2 * plane * g.move_log_stride]
    cdef int64_t lst = plane * g.n_lists
    cdef blk_meta* blk = m.blk
    for j in range(g.move_log_n[plane]):
        b = <int32_t> e[2 * j]
        if blk[b].moved != e[2 * j + 1]:
            continue                               # moved again later: that move decides
        # greedy_move_now's body, written out: gcc keeps that one a call, 1 % of Base
        # UVM Inceptionv3 here (10.33 vs 10.44 s)
        if g.prev[b] >= 0:
            _list_remove(g, b)
        _list_push(g, lst + blk[b].valid, b, False)
    g.move_log_n[plane] = 0


cdef void apply_all_moves(ssd_gc* g, ssd_map* m) noexcept nogil:
    """Every plane's logged moves applied (before the lists are read or the log changes)."""
    cdef int64_t pl
    for pl in range(g.p.n_planes):
        apply_moves(g, m, pl)


# ---- GC ------------------------------------------------------------------------------

cdef int32_t pick_victim(ssd_gc* g, ssd_map* m, int64_t plane) noexcept nogil:
    """Choose a closed block of ``plane`` and take it out of the victim structures."""
    cdef ssd_plane* pl = &g.planes[plane]
    cdef int64_t lst, base, k
    cdef int32_t v, b, cand, pos, last
    if pl.closed_count == 0:
        return -1
    if g.p.victim_policy == VICTIM_GREEDY:
        apply_moves(g, m, plane)
        lst = plane * g.n_lists
        v = pl.min_valid
        while v <= g.p.pages_per_block and _list_first(g, lst + v) < 0:
            v += 1
        pl.min_valid = v
        b = _list_first(g, lst + v)
        _list_remove(g, b)
    elif g.p.victim_policy == VICTIM_FIFO:
        b = _list_first(g, plane)
        _list_remove(g, b)
    else:
        base = plane * g.p.blocks_per_plane
        b = g.dense[base + <int64_t> g10_rng_below(g.rng, pl.closed_count)]
        if g.p.victim_policy == VICTIM_DCHOICES:
            for k in range(1, g.p.victim_choices):
                cand = g.dense[base + <int64_t> g10_rng_below(g.rng, pl.closed_count)]
                if m.blk[cand].valid < m.blk[b].valid:
                    b = cand
        pos = g.pos[b]
        last = g.dense[base + pl.closed_count - 1]
        g.dense[base + pos] = last
        g.pos[last] = pos
        g.pos[b] = -1
    pl.closed_count -= 1
    return b


cdef int64_t collect(ssd_gc* g, ssd_map* m, int64_t plane) noexcept nogil:
    """Collect one victim of ``plane``: copy its valid pages, erase it.
    Return the plane time it took (cycles), or -1 when there is no victim."""
    cdef ssd_plane* pl = &g.planes[plane]
    cdef int32_t b = pick_victim(g, m, plane)
    cdef int64_t P = g.p.pages_per_block
    cdef int64_t W = m.words_per_block
    cdef int64_t base, w, n = 0, copies = 0, j, run, dst, fb, bit
    cdef int32_t* frontier_next
    cdef uint64_t x
    cdef uint64_t* words
    cdef uint32_t* lpns = g.lpns
    cdef uint32_t** l2p = m.l2p_leaf
    cdef uint32_t* p2l
    cdef int32_t runs, r = 0
    cdef uint32_t l
    if b < 0:
        return -1
    if m.blk[b].runs == P2L_UNKNOWN and m.blk[b].valid > 0:
        g.st.alloc_failures += p2l_rebuild(m)      # the first copy out of a block without lpns
    p2l = m.blk[b].p2l
    runs = m.blk[b].runs
    # the victim's valid pages, in block order (the order they are copied in); a victim
    # without valid pages has no p2l left
    if p2l != NULL:
        for j in range(0, P if runs < 0 else 2 * runs, 16):   # written long ago
            g10_prefetch_w(&p2l[j])
    words = &m.valid_bits[<int64_t> b * W]
    for w in range(W if not m.p2l_lazy else 0):   # (lazy: the victim holds no valid page)
        x = words[w]
        words[w] = 0
        while x != 0:
            j = w * 64 + g10_ctz64(x)
            if runs < 0:
                lpns[n] = p2l[j]
            else:                                  # pages come in order: the run cursor only advances
                while r + 1 < runs and <int64_t> p2l[2 * r + 3] <= j:
                    r += 1
                lpns[n] = <uint32_t> (p2l[2 * r] + (j - <int64_t> p2l[2 * r + 1]) * g.p.n_planes)
            x &= x - 1
            n += 1
    for j in range(n if n < GC_PREFETCH_DISTANCE else GC_PREFETCH_DISTANCE):
        g10_prefetch_w(&l2p[lpns[j] >> L2P_SHIFT][lpns[j] & L2P_MASK])
    frontier_next = &pl.host_next if g.p.shared_frontier else &pl.gc_next
    # copy in runs that fit the open GC frontier
    while copies < n:
        fb = _gc_room(g, m, plane)
        if fb < 0:                                 # unreachable for a validated geometry
            g.st.alloc_failures += 1
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
            if p2l_append(m, <int32_t> fb, dst - fb * P, l) < 0:
                g.st.alloc_failures += 1           # out of memory for its p2l
            l2p[l >> L2P_SHIFT][l & L2P_MASK] = <uint32_t> (dst + 1)
            dst += 1
        bit = fb * P + frontier_next[0] + fb * m.bit_pad
        g10_bits_set_range(m.valid_bits, bit, bit + run)
        m.blk[fb].valid += <int32_t> run
        frontier_next[0] += <int32_t> run
        copies += run
    m.blk[b].valid -= <int32_t> copies
    p2l_release(m, b)
    # erase and queue at the tail of the free FIFO (rotates wear across blocks)
    m.blk[b].erases += 1
    m.blk[b].state = BLOCK_FREE
    g.next[b] = -1
    if pl.free_tail >= 0:
        g.next[pl.free_tail] = b
    else:
        pl.free_head = b
    pl.free_tail = b
    pl.free_count += 1
    g.st.gc_victims += 1
    g.st.erases += 1
    g.st.gc_copies += copies
    g.st.flash_read_pages += copies
    g.st.flash_program_pages += copies
    return copies * (g.p.t_read + g.p.t_prog) + g.p.t_erase


cdef class BlockManager:
    """A block manager with its own mapping tables, for tests: take host pages, make pages
    stale, pick victims, and read back the planes' counts (no timing, no l2p)."""
    cdef ssd_params p
    cdef ssd_stats st
    cdef ssd_map m
    cdef ssd_gc g

    def __cinit__(self, dict params):
        self.p = params
        if (map_init(&self.m, self.p.n_planes, self.p.blocks_per_plane, self.p.pages_per_block,
                     self.p.logical_pages_per_plane) < 0 or gc_init(&self.g, &self.p, &self.st) < 0):
            raise MemoryError("cannot allocate the block manager")

    def __dealloc__(self):
        gc_free(&self.g)
        map_free(&self.m)

    def __reduce__(self):
        raise TypeError("BlockManager does not pickle (a test fixture)")

    def write(self, int64_t plane):
        """Take ``plane``'s next host page and count it valid, as a write does; its ppn."""
        cdef int64_t ppn = host_alloc(&self.g, &self.m, plane, 0)
        if ppn >= 0:
            self.m.blk[map_block_of(&self.m, ppn)].valid += 1
        return ppn

    def lose(self, int64_t plane, int32_t b, int32_t k):
        """``k`` valid pages of block ``b`` went stale."""
        block_lost(&self.g, &self.m, plane, b, k)

    def victim(self, int64_t plane):
        """The block GC would collect next in ``plane`` (taken out of the victim lists; -1: none)."""
        return pick_victim(&self.g, &self.m, plane)

    def plane(self, int64_t plane):
        """(free blocks, closed blocks, host block) of ``plane``."""
        cdef ssd_plane* pl = &self.g.planes[plane]
        return pl.free_count, pl.closed_count, pl.host_block

    def valid(self, int32_t b):
        return self.m.blk[b].valid
