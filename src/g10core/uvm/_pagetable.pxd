# The UVM page table of the page-level replay: where every page of the footprint
# lives, kept in runs (extents), never per page.  See _pagetable.pyx.
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t
from libcpp.vector cimport vector
from cython.operator cimport dereference as deref, predecrement as predec

from g10core.core._types cimport loc_run, lru_node, g10_removed

cdef extern from "g10core/runmap.h":
    cdef cppclass g10_run_entry:         # a run: its first page and its state
        int64_t first
        loc_run second
    cdef cppclass g10_runmap:            # first page -> run, in sorted leaves (runmap.h)
        cppclass iterator:               # dead after any change to the map but the one it returns
            iterator() noexcept nogil
            g10_run_entry& operator*() noexcept nogil
            iterator operator++() noexcept nogil
            iterator operator--() noexcept nogil
            bint operator==(iterator) noexcept nogil
            bint operator!=(iterator) noexcept nogil
            size_t leaf_index() noexcept nogil
            int position() noexcept nogil
        size_t size() noexcept nogil
        iterator begin() noexcept nogil
        iterator end() noexcept nogil
        iterator upper_bound(int64_t key) noexcept nogil
        iterator find_near(int64_t key, size_t j, int p) noexcept nogil
        void put(int64_t key, loc_run r) except + nogil
    g10_removed g10_assign_at(g10_runmap& m, g10_runmap.iterator it, int64_t a, int64_t b, int8_t loc,
                              int8_t intr, int64_t lo, int64_t hi, int8_t gpu,
                              g10_runmap.iterator* at) except + nogil

cimport cython

cdef enum:
    TENSOR_GRID_SHIFT = 9              # tensor_of's table: one entry per 512 pages (2 MiB)
    NODE_GRID_SHIFT = 9                # node_first/node_last: one entry per 512 pages (2 MiB)
    RUN_HINT_SHIFT = 9                 # run_hint_*: one entry per 512 pages (2 MiB)


@cython.final
cdef class PageTable:
    # ---- the trace's tensors (read-only, owned by _keep) ----
    cdef object _keep
    cdef readonly int64_t n_pages          # pages of the footprint
    cdef readonly int64_t n_tensors
    cdef const int64_t* t_first            # first page of each tensor
    cdef const int64_t* t_np               # pages of each tensor
    cdef const uint8_t* t_global           # 1: lives for the whole run
    cdef const int64_t* t_birth            # first kernel using it (artifact liveness)
    cdef const int64_t* t_death            # 1 + last kernel reading it; -1: never read
    cdef const int64_t* s_start            # tensors' first pages, ascending
    cdef const int32_t* s_tensor           # the tensor of each s_start
    cdef int64_t n_sorted
    cdef const int32_t* s_grid             # per 2 MiB of pages: the last tensor (index into s_*) starting by it
    cdef int64_t n_grid

    # ---- capacities and occupancy, pages ----
    cdef readonly int64_t gpu_pages        # GPU frames
    cdef readonly int64_t host_line        # host memory line
    cdef public int64_t gpu_free           # free GPU frames
    cdef public int64_t host_used          # pages in host memory
    cdef public bint host_overflow         # host_used went past host_line (the artifact aborts)

    # ---- per-tensor counters ----
    cdef int64_t* cnt_ready                # pages on the GPU and not in transfer
    cdef int64_t* cnt_intr                 # pages queued for a transfer (any tier)
    cdef public int64_t gpu_intr           # GPU pages in transfer, all tensors

    # ---- the running kernel's tensors ("pinned": evicting them re-queues them as faults) ----
    cdef int64_t* pin_mark                 # epoch at which the tensor was last pinned
    cdef public int64_t epoch              # bumped at every kernel begin
    cdef vector[int32_t] pinned            # the running kernel's tensors, inputs then outputs

    # ---- location runs: first page -> (end, tier, in transfer) ----
    cdef g10_runmap loc
    cdef g10_runmap.iterator run_finger    # the run run_at found last (callers go page by page)
    cdef bint run_finger_ok                # false before the first run_at
    # per 2 MiB of pages: where (leaf, position) run_at last searched for a run there; a
    # later search there starts from it (the runs may have moved since: find_near checks)
    cdef int32_t* run_hint_leaf
    cdef int32_t* run_hint_pos

    # ---- the GPU's pages in arrival order (the artifact's "LRU": FIFO by arrival) ----
    cdef vector[lru_node] nodes
    cdef vector[int32_t] free_nodes
    # which node holds a page: per 2 MiB of pages, the first and the last node (in page
    # order) with a page there (-1: none); the nodes between follow through pnext/pprev
    cdef int32_t* node_first
    cdef int32_t* node_last
    cdef public int32_t head, tail         # oldest and newest node (-1: empty)
    cdef int32_t finger                    # the node lru_find found last
    cdef public int64_t cursor             # victim search position (a page; -1: the list's end)
    # a node every node before which belongs to a tensor the evictor's search skips (-1: not
    # known); the evictor sets it, an unlinked node hands it to its successor (_evict.pyx)
    cdef public int32_t skip_prefix
    cdef int32_t* t_head                   # per tensor: its oldest node on the GPU (-1: none)
    cdef int32_t* t_tail                   # per tensor: its newest node
    cdef int64_t* t_arrival                # per tensor: arrival sequence when it last came to the GPU
    cdef int64_t arrivals                  # arrival sequence counter
    cdef vector[int32_t] gpu_tensors       # tensors with at least one node on the GPU
    cdef int32_t* gpu_pos                  # index in gpu_tensors (-1: absent)
    cdef int64_t node_seq                  # nodes made so far (lru_node.order)

    # ---- conservation counters ----
    cdef public int64_t n_allocated        # never-present pages given a GPU frame
    cdef public int64_t n_dropped          # GPU pages evicted without a transfer (dead data)
    cdef public int64_t n_freed_gpu        # GPU pages released by free hints
    cdef public int64_t n_freed_host       # host pages released by free hints

    # tensors
    cdef int32_t tensor_of(self, int64_t page) noexcept nogil
    cdef bint alive(self, int32_t t, int64_t k) noexcept nogil
    cdef inline bint pinned_now(self, int32_t t) noexcept nogil:
        return self.pin_mark[t] == self.epoch
    cdef inline bint host_full(self) noexcept nogil:
        return self.host_used == self.host_line
    cdef int pin(self, const int32_t* a, int64_t na, const int32_t* b, int64_t nb) except -1 nogil
    cdef int64_t pinned_in_transfer(self) noexcept nogil
    cdef inline int64_t ready_pages(self, int32_t t) noexcept nogil:
        return self.cnt_ready[t]
    cdef inline int64_t transfer_pages(self, int32_t t) noexcept nogil:
        return self.cnt_intr[t]

    # location runs
    cdef int assign(self, int32_t t, int64_t a, int64_t b, int8_t loc, int8_t intr) except -1 nogil
    cdef int assign_at(self, int32_t t, g10_runmap.iterator it, int64_t a, int64_t b, int8_t loc,
                       int8_t intr) except -1 nogil
    cdef g10_runmap.iterator run_at(self, int64_t page) noexcept nogil
    cdef int64_t idle_runs(self, int32_t t, vector[int64_t]& segs) except -1 nogil

    # arrival list
    cdef int32_t _new_node(self, int64_t start, int64_t count, int32_t t) except -1 nogil
    cdef void _tensor_link_after(self, int32_t i, int32_t after) noexcept nogil
    cdef void _tensor_unlink(self, int32_t i) noexcept nogil
    cdef void _unlink(self, int32_t i) noexcept nogil
    cdef void _grid_fill(self, int64_t g0, int64_t g1, int32_t i) noexcept nogil
    cdef void _grid_insert(self, int32_t i) noexcept nogil
    cdef void _grid_remove(self, int32_t i) noexcept nogil
    cdef void _grid_start_at(self, int32_t i, int64_t s2) noexcept nogil
    cdef void _grid_end_at(self, int32_t i, int64_t e2) noexcept nogil
    cdef int arrive(self, int64_t start, int64_t count, int32_t t) except -1 nogil
    cdef int depart(self, int64_t a, int64_t count) except -1 nogil
    cdef int _depart_from(self, int32_t i, int64_t a, int64_t take) except -1 nogil
    cdef inline int32_t node_of(self, int64_t page) noexcept nogil:
        """The node holding `page` (which must be in the list).

        Victims are taken along the list, so the node found last, or the one after it,
        usually holds the page: live nodes are disjoint, so whichever covers the page is
        the one; only otherwise are the nodes with pages in its 2 MiB walked."""
        cdef int32_t i = self.finger
        cdef const lru_node* n
        if i >= 0:
            n = &self.nodes[i]
            if n.start <= page < n.start + n.count:
                return i
            if n.next >= 0:
                n = &self.nodes[n.next]
                if n.start <= page < n.start + n.count:
                    self.finger = self.nodes[i].next
                    return self.finger
        i = self.node_first[page >> NODE_GRID_SHIFT]
        while self.nodes[i].start + self.nodes[i].count <= page:
            i = self.nodes[i].pnext
        self.finger = i
        return i
    cdef int64_t next_page(self, int64_t page) noexcept nogil
    cdef int64_t head_page(self) noexcept nogil
    cdef int64_t skip_in_transfer(self, int64_t c) except -2 nogil
    cdef int64_t idle_in_node(self, int32_t i, int64_t c) noexcept nogil
    cdef int64_t segment_end(self, int64_t v) noexcept nogil
    cdef int64_t oldest_idle_page(self, int32_t t) except -2 nogil
