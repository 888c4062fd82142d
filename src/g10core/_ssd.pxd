# Compiled SSD: NVMe front end, page-mapped FTL with GC and wear, flash timing.
# The replay cimports SSDCore and calls read()/write()/trim() from its nogil loop;
# lpn ranges must lie inside [0, logical_pages) (ssd.SSD checks this for Python callers).
cimport cython
from libc.stdint cimport int8_t, int32_t, int64_t, uint32_t, uint64_t
from g10core._types cimport cycle_t, ssd_params, ssd_stats, ssd_plane
from g10core._pcie cimport LinkCore

cdef extern from "g10core/pool.h" nogil:
    cdef cppclass g10_node_pool:         # fixed-size nodes from chunks, a free list for reuse (pool.h)
        g10_node_pool()
        void* get(size_t size)
        void put(void* p)
        size_t reserved_bytes()

cdef extern from "g10core/ssd_math.h" nogil:
    int G10_HIST_BUCKETS
    int g10_hist_bucket(int64_t v)
    int64_t g10_hist_lower(int b)
    void g10_rng_seed(uint64_t* s, uint64_t seed)
    uint64_t g10_rng_below(uint64_t* s, uint64_t n)
    void g10_prefetch_w(const void* p)
    int g10_ctz64(uint64_t x)
    void g10_bits_set_range(uint64_t* w, int64_t lo, int64_t hi)

# What a write, a trim or GC reads and writes of one erase block, in one cache line (these
# were six arrays: a page written or trimmed touched a line of each).
cdef struct blk_meta:
    uint32_t* p2l              # runs (lpn, first page) x runs, or one lpn per page; NULL: none
    int32_t runs               # runs in p2l (P2L_DENSE: one lpn per page; P2L_UNKNOWN: not kept)
    int32_t cap                # runs p2l has room for
    int32_t valid              # valid pages
    int32_t erases             # erase count (wear)
    int8_t state               # BLOCK_FREE / OPEN / CLOSED
    uint32_t moved             # its plane's move count at its last greedy move (SSDCore.move_log)


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
# (written while no GC has needed them: see SSDCore.p2l_lazy)
cdef enum:
    P2L_DENSE = -1
    P2L_UNKNOWN = -2


@cython.final
cdef class SSDCore:
    cdef ssd_params p
    cdef readonly int64_t logical_pages    # U: user-visible pages (lpn range)
    cdef readonly int64_t physical_pages   # every flash page of the device
    cdef readonly int64_t n_blocks         # every erase block of the device
    cdef int64_t n_lists                   # victim lists per plane (P + 1 greedy buckets, 1 FIFO)
    cdef int64_t plane_mask                # n_planes - 1 when a power of two, else -1
    cdef int64_t page_shift                # log2(pages_per_block) when a power of two, else -1
    cdef readonly int64_t host_page_bytes  # the page of read_host/write_host/trim_host (flash page by default)
    # A block's lpns (p2l) are read only when GC copies valid pages out of it, and tensor
    # traffic often never needs that (Base UVM on Inceptionv3: 580 k GCs, none with a valid
    # page; 508 MB of per-page tables for blocks filled at random, 86 MB of runs for the
    # others, and 5 % of the run's time appending to them).  While p2l_lazy, no block keeps
    # them (P2L_UNKNOWN), nor valid bits (a page is valid when l2p maps it: keeping the bits
    # cost a miss per trimmed page, 4 % of that run); the first GC that must copy out of a
    # block rebuilds both from l2p in one pass (runs where a block's lpns allow) and clears
    # p2l_lazy.  Results are the same either way.  (Tests clear it before the first write to
    # compare; set back to True on a device that kept its bits, the bits would go stale.)
    cdef public bint p2l_lazy
    # Greedy victim lists: a block goes to the head of its valid count's list at every page it
    # loses, four random lines each time, and only GC reads the lists (Base UVM on
    # Inceptionv3: 164 M such moves, 2.3 M distinct blocks between one GC and the next in a
    # plane).  While moves_deferred, a plane logs its moves (move_log) and applies, at its
    # next GC or when the log is full, each logged block's last move only, in the order of
    # those last moves: the lists come out as the moves one by one would leave them (a move
    # puts the block at its list's head, so only the last one decides its place).
    cdef bint moves_deferred
    cdef uint32_t* move_log                # per plane: move_log_stride (block, move count) pairs
    cdef int64_t move_log_stride           # room of a plane's log (MOVE_LOG_CAP, less on many planes)
    cdef int32_t move_log_cap              # entries a plane's log takes before it is applied
    cdef int32_t* move_log_n               # per plane: entries in its log
    cdef uint32_t* move_count              # per plane: moves logged so far (wraps; compared for equality)

    # mapping, allocated where it holds something, so memory follows the live data, not the
    # pages ever written: l2p in leaves of L2P_LEAF lpns, each made on its first mapping and
    # freed when its last entry is unmapped; p2l per erase block, made at its first program and
    # freed once it holds no valid page (GC reads a victim's p2l only where its valid bits are
    # set).  Validity lives in a bitmap, so an overwrite or a GC copy never writes p2l at
    # random: it is written once per program (in frontier order) and read once per GC copy.
    # A block's p2l is a list of runs (lpn, first page): pages programmed in a row whose lpns
    # step by n_planes (a sequential write as one plane sees it) share one run; a block with
    # more runs than its list can take at 4+ pages a run (P2L_RUNS_HUGE), or whose first
    # P2L_RUNS_SMALL runs are short (filled at random), switches to one lpn per page.
    cdef uint32_t** l2p_leaf               # per leaf: lpn -> ppn + 1 (0: unmapped), or NULL: none mapped
    cdef int32_t* l2p_live                 # per leaf: mapped entries
    cdef int64_t n_leaves
    cdef blk_meta* blk                     # per block: p2l, valid pages, erases, state (blk_meta)
    # each size from its own pool: the tables come and go millions of times, and mixed sizes
    # from one heap left it fragmented (freed memory the next size could not reuse)
    cdef g10_node_pool leaf_pool           # l2p leaves
    cdef g10_node_pool dense_pool          # p2l, one lpn per page
    cdef g10_node_pool runs_small_pool     # p2l, P2L_RUNS_SMALL runs
    cdef g10_node_pool runs_large_pool     # p2l, P2L_RUNS_LARGE runs
    cdef g10_node_pool runs_huge_pool      # p2l, P2L_RUNS_HUGE runs
    cdef uint64_t* valid_bits              # one bit per flash page, each block padded to 64-bit words (kept once p2l is)
    cdef int64_t words_per_block           # ceil(pages_per_block / 64)
    cdef int64_t bit_pad                   # words_per_block * 64 - pages_per_block (bit = ppn + block * pad)
    cdef uint32_t* gc_lpns                 # scratch: lpns of the victim's valid pages, in block order
    # per block
    # blk_next / blk_prev: per block, then one sentinel node per victim list (node
    # n_blocks + plane * n_lists + list): the victim lists are circular through their sentinel
    cdef int32_t* blk_next                 # next in its free FIFO (-1: last) or victim list
    cdef int32_t* blk_prev                 # previous in its victim list
    cdef int32_t* blk_pos                  # index in its plane's dense closed array (random victims)
    cdef int32_t* dense                    # per plane: closed blocks, packed (random victims)
    cdef ssd_plane* planes
    # timing
    cdef cycle_t* channel_free             # per channel: bus free from here
    # write buffer: one pool shared by all planes; a buffered page leaves it when its program
    # ends.  Each plane's pages form a FIFO (a plane programs in order), kept as a ring of
    # program ends that grows by doubling (ssd_plane.buf_*), and a winner tree over the
    # planes, keyed by their oldest page, finds the next page to leave in log2(planes)
    # branch-free steps.
    cdef int64_t buf_count                 # buffered pages, counted until taken out (_buffer_admit)
    cdef int64_t tree_leaves               # power of two >= n_planes
    cdef int32_t* tree                     # [1, 2 * leaves): plane with the smallest key below the node
    cdef cycle_t* plane_key                # per leaf: the plane's oldest page's program end (or never)
    # in-flight command completions: a sorted ring while they come in order, else a min-heap
    cdef cycle_t* slots
    cdef cycle_t* slot_scratch             # queue_depth entries, for turning the ring into a heap
    cdef int64_t n_slots
    cdef int64_t slot_head                 # ring mode: index of the earliest completion
    cdef bint slots_sorted                 # 1: ring mode, 0: heap mode
    cdef uint64_t rng[4]
    cdef readonly LinkCore link            # the SSD's own PCIe front end
    # statistics
    cdef ssd_stats st
    # the span of GC work (plane time) since the timeline last took it (_timeline.pyx); -1: none
    cdef public cycle_t gc_first
    cdef public cycle_t gc_end
    cdef int64_t* hist_read                # latency histograms (cycles, log-linear buckets)
    cdef int64_t* hist_write

    cdef cycle_t read(self, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil
    cdef cycle_t write(self, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil
    cdef void trim(self, int64_t lpn, int64_t npages) noexcept nogil
    cdef cycle_t read_host(self, int64_t page, int64_t npages, cycle_t now) noexcept nogil
    cdef cycle_t write_host(self, int64_t page, int64_t npages, cycle_t now) noexcept nogil
    cdef void trim_host(self, int64_t page, int64_t npages) noexcept nogil
    cdef bint _out_of_range(self, int64_t lpn, int64_t npages) noexcept nogil
    cdef cycle_t next_issue_time(self, cycle_t now) noexcept nogil
    cdef cycle_t idle_at(self) noexcept nogil

    cdef void _prefetch_overwrite(self, int64_t lpn) noexcept nogil
    cdef uint32_t _l2p_get(self, int64_t lpn) noexcept nogil
    cdef uint32_t* _l2p_slot(self, int64_t lpn) noexcept nogil
    cdef uint32_t* _l2p_new_leaf(self, int64_t lpn) noexcept nogil
    cdef void _l2p_unmapped(self, int64_t lpn) noexcept nogil
    cdef void _p2l_release(self, int32_t b) noexcept nogil
    cdef int _p2l_append(self, int32_t b, int64_t page, uint32_t lpn) noexcept nogil
    cdef int _p2l_new_run(self, int32_t b, int64_t page, uint32_t lpn) noexcept nogil
    cdef int _p2l_room(self, int32_t b, int32_t more, int64_t progress, int64_t upto,
                       int64_t page, uint32_t lpn) noexcept nogil
    cdef int _p2l_insert(self, int32_t b, int64_t page, uint32_t lpn, int64_t last) noexcept nogil
    cdef uint32_t* _p2l_to_dense(self, int32_t b, int64_t upto) noexcept nogil
    cdef void _p2l_rebuild(self) noexcept nogil
    cdef int64_t _plane_of(self, int64_t lpn) noexcept nogil
    cdef int64_t _block_of(self, int64_t ppn) noexcept nogil
    cdef cycle_t _pop_slot(self) noexcept nogil
    cdef void _note_command(self, cycle_t now, cycle_t done) noexcept nogil
    cdef cycle_t _buffer_admit(self, cycle_t t) noexcept nogil
    cdef cycle_t _buffer_admit_full(self, cycle_t t) noexcept nogil
    cdef void _buffer_retire_top(self) noexcept nogil
    cdef void _buffer_retire_until(self, int32_t plane, cycle_t t) noexcept nogil
    cdef void _buffer_add(self, int64_t plane, cycle_t done) noexcept nogil
    cdef void _buffer_add_slow(self, int64_t plane, cycle_t done) noexcept nogil
    cdef int _buffer_grow(self, ssd_plane* pl) noexcept nogil
    cdef void _buffer_tree_update(self, int64_t plane) noexcept nogil
    cdef cycle_t _slot_min(self) noexcept nogil
    cdef cycle_t _acquire_slot(self, cycle_t now) noexcept nogil
    cdef void _release_slot(self, cycle_t done) noexcept nogil
    cdef cycle_t _read_page(self, int64_t lpn, cycle_t t) noexcept nogil
    cdef cycle_t _write_page(self, int64_t lpn, cycle_t arrive) noexcept nogil
    cdef void _invalidate(self, int64_t plane, int64_t ppn) noexcept nogil
    cdef void _block_lost(self, int64_t plane, int32_t b, int32_t k) noexcept nogil
    cdef int64_t _gc_room(self, int64_t plane) noexcept nogil
    cdef int64_t _host_alloc(self, int64_t plane, cycle_t t) noexcept nogil
    cdef int64_t _host_alloc_open(self, int64_t plane, cycle_t t) noexcept nogil
    cdef int32_t _take_free(self, int64_t plane) noexcept nogil
    cdef void _close_block(self, int64_t plane, int32_t b) noexcept nogil
    cdef void _list_push(self, int64_t lst, int32_t b, bint at_tail) noexcept nogil
    cdef void _list_remove(self, int32_t b) noexcept nogil
    cdef void _greedy_move(self, int64_t plane, int32_t b) noexcept nogil
    cdef void _greedy_move_now(self, int64_t plane, int32_t b) noexcept nogil
    cdef void _apply_moves(self, int64_t plane) noexcept nogil
    cdef void _apply_all_moves(self) noexcept nogil
    cdef int32_t _list_first(self, int64_t lst) noexcept nogil
    cdef int32_t _pick_victim(self, int64_t plane) noexcept nogil
    cdef int64_t _collect(self, int64_t plane) noexcept nogil
