# cython: language_level=3
"""The UVM page table of the page-level replay, kept in extents.

* ``loc``: an ordered map of runs (first page -> end, tier, in-transfer flag); runs never
  cross a tensor boundary, so the per-tensor counters (pages ready on the GPU, pages in
  transfer) stay exact under every assignment.
* the GPU's pages in arrival order (the artifact calls it LRU; it is FIFO by arrival,
  because a kernel that finds its pages resident does not touch it): a doubly linked list
  of runs (nodes) with an index by first page, a per-tensor chain of the same nodes (for
  evictors that pick a tensor and take its pages oldest first), and the victim search
  cursor, a page number (-1: the list's end).
* GPU frames and host pages in use, and the page-conservation counters.

Costs follow the number of runs touched, never the bytes of the footprint.  Nothing
here checks its inputs: the Python layer validated them.
"""
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t
from cython.operator cimport dereference as deref, preincrement as inc

from ..core._types cimport TIER_NOT_PRESENT, TIER_SSD, TIER_GPU

import numpy as np


cdef class PageTable:
    """Pages of every tensor: tiers in runs, the GPU's arrival order, occupancy counters.

    ``tensors``: dict of numpy arrays ``first`` (first page per tensor), ``pages``,
    ``is_global``, ``birth``, ``death`` (artifact liveness; -1: never read).  At start,
    global tensors are on the SSD and the others not present.
    """

    def __init__(self, dict tensors, int64_t gpu_pages, int64_t host_line):
        keep = {}
        def arr(name, dtype):
            a = np.ascontiguousarray(tensors[name], dtype=dtype)
            keep[name] = a
            return a
        cdef int64_t[::1] v64
        cdef int32_t[::1] v32
        cdef uint8_t[::1] vu8
        v64 = arr("first", np.int64); self.t_first = &v64[0]
        v64 = arr("pages", np.int64); self.t_np = &v64[0]
        vu8 = arr("is_global", np.uint8); self.t_global = &vu8[0]
        v64 = arr("birth", np.int64); self.t_birth = &v64[0]
        v64 = arr("death", np.int64); self.t_death = &v64[0]
        T = v64.shape[0]
        order = np.argsort(keep["first"], kind="stable")
        keep["s_start"] = np.ascontiguousarray(keep["first"][order])
        keep["s_tensor"] = order.astype(np.int32)
        v64 = keep["s_start"]; self.s_start = &v64[0]
        v32 = keep["s_tensor"]; self.s_tensor = &v32[0]
        self.n_sorted = T
        # s_grid[j]: the last tensor (sorted order) starting at or before page j << TENSOR_GRID_SHIFT
        # (0 when none): tensor_of searches only between two neighbouring entries
        grid = np.arange((int(keep["s_start"][T - 1]) >> TENSOR_GRID_SHIFT) + 2 if T else 1, dtype=np.int64)
        keep["s_grid"] = np.maximum(np.searchsorted(keep["s_start"], grid << TENSOR_GRID_SHIFT, side="right") - 1,
                                    0).astype(np.int32)
        v32 = keep["s_grid"]; self.s_grid = &v32[0]
        self.n_grid = v32.shape[0]
        self.n_tensors = T
        self.n_pages = int(keep["pages"].sum())
        for name in ("cnt_ready", "cnt_intr", "t_arrival"):
            keep[name] = np.zeros(T, np.int64)
        keep["pin_mark"] = np.full(T, -1, np.int64)
        for name in ("t_head", "t_tail", "gpu_pos"):
            keep[name] = np.full(T, -1, np.int32)
        v64 = keep["cnt_ready"]; self.cnt_ready = &v64[0]
        v64 = keep["cnt_intr"]; self.cnt_intr = &v64[0]
        v64 = keep["t_arrival"]; self.t_arrival = &v64[0]
        v64 = keep["pin_mark"]; self.pin_mark = &v64[0]
        v32 = keep["t_head"]; self.t_head = &v32[0]
        v32 = keep["t_tail"]; self.t_tail = &v32[0]
        v32 = keep["gpu_pos"]; self.gpu_pos = &v32[0]
        # one entry per 2 MiB up to the last tensor's end in each (SENet154-1024's 1.7 TiB:
        # 3.5 MB each)
        end = int((keep["first"] + keep["pages"]).max()) if T else 0
        keep["run_hint_leaf"] = np.zeros((end >> RUN_HINT_SHIFT) + 1, np.int32)
        keep["run_hint_pos"] = np.zeros((end >> RUN_HINT_SHIFT) + 1, np.int32)
        v32 = keep["run_hint_leaf"]; self.run_hint_leaf = &v32[0]
        v32 = keep["run_hint_pos"]; self.run_hint_pos = &v32[0]
        keep["node_first"] = np.full((end >> NODE_GRID_SHIFT) + 1, -1, np.int32)
        keep["node_last"] = np.full((end >> NODE_GRID_SHIFT) + 1, -1, np.int32)
        v32 = keep["node_first"]; self.node_first = &v32[0]
        v32 = keep["node_last"]; self.node_last = &v32[0]
        self._keep = keep

        self.gpu_pages = gpu_pages
        self.host_line = host_line
        self.gpu_free = gpu_pages
        self.host_used = 0
        self.host_overflow = False
        self.gpu_intr = 0
        self.epoch = 0
        self.head = self.tail = -1
        self.finger = -1
        self.cursor = -1
        self.skip_prefix = -1
        self.node_seq = 0
        self.arrivals = 0
        self.run_finger_ok = False
        self.n_allocated = self.n_dropped = self.n_freed_gpu = self.n_freed_host = 0
        cdef int64_t i, t
        cdef loc_run r
        for i in range(self.n_sorted):
            t = self.s_tensor[i]
            r.end = self.t_first[t] + self.t_np[t]
            r.loc = TIER_SSD if self.t_global[t] else TIER_NOT_PRESENT
            r.intr = 0
            self.loc.put(self.t_first[t], r)

    # ======================================================================
    # tensors
    # ======================================================================
    cdef int32_t tensor_of(self, int64_t page) noexcept nogil:
        """The tensor whose pages hold ``page``: the last one starting at or before it.  The
        coarse table narrows the search to the tensors starting near the page (a 14-step
        binary search over every tensor was ~3 % of a detailed run, a cache miss a step)."""
        cdef int64_t j = page >> TENSOR_GRID_SHIFT, lo, hi, mid
        if j < 0:
            j = 0
        if j + 1 < self.n_grid:
            lo = self.s_grid[j]
            hi = self.s_grid[j + 1] + 1
        else:
            lo = self.s_grid[self.n_grid - 1]
            hi = self.n_sorted
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            if self.s_start[mid] <= page:
                lo = mid
            else:
                hi = mid
        return self.s_tensor[lo]

    cdef bint alive(self, int32_t t, int64_t k) noexcept nogil:
        """Holds live data at kernel k (the artifact's liveness; globals always)."""
        if self.t_global[t]:
            return True
        if self.t_death[t] == -1:
            return k == self.t_birth[t]
        return self.t_birth[t] <= k < self.t_death[t]

    cdef int pin(self, const int32_t* a, int64_t na, const int32_t* b, int64_t nb) except -1 nogil:
        """The running kernel's tensors become a[0:na] and b[0:nb] (inputs, outputs)."""
        cdef int64_t j
        self.epoch += 1
        self.pinned.clear()
        for j in range(na):
            self.pin_mark[a[j]] = self.epoch
            self.pinned.push_back(a[j])
        for j in range(nb):
            self.pin_mark[b[j]] = self.epoch
            self.pinned.push_back(b[j])
        return 0

    cdef int64_t pinned_in_transfer(self) noexcept nogil:
        """Pages of the running kernel's tensors still queued for a transfer."""
        cdef int64_t s = 0
        cdef size_t j
        for j in range(self.pinned.size()):
            s += self.cnt_intr[self.pinned[j]]
        return s

    # ======================================================================
    # location runs
    # ======================================================================
    cdef int assign(self, int32_t t, int64_t a, int64_t b, int8_t loc, int8_t intr) except -1 nogil:
        """Set pages [a, b) of tensor t to (loc, intr), keeping runs maximal within t."""
        return self.assign_at(t, self.run_at(a), a, b, loc, intr)

    cdef int assign_at(self, int32_t t, g10_runmap.iterator it, int64_t a, int64_t b, int8_t loc,
                       int8_t intr) except -1 nogil:
        """assign, when the caller holds ``it``, the run that contains page a."""
        cdef int64_t lo = self.t_first[t]
        cdef g10_removed rem
        # runs split and merge, and the map's other iterators die: the finger moves to the run
        # that now holds [a, b)
        rem = g10_assign_at(self.loc, it, a, b, loc, intr, lo, lo + self.t_np[t], TIER_GPU, &self.run_finger)
        self.run_finger_ok = True
        self.cnt_ready[t] -= rem.ready
        self.cnt_intr[t] -= rem.intr
        self.gpu_intr -= rem.gpu_intr
        if intr:
            self.cnt_intr[t] += b - a
            if loc == TIER_GPU:
                self.gpu_intr += b - a
        elif loc == TIER_GPU:
            self.cnt_ready[t] += b - a
        return 0

    cdef g10_runmap.iterator run_at(self, int64_t page) noexcept nogil:
        """The run holding ``page`` (a page of a tensor).  Callers walk runs in page order,
        so the run found last, or the one after it, usually holds it: runs are disjoint,
        so whichever covers the page is the one; only otherwise is the map searched, from
        where the last search in the page's 2 MiB ended (a batch looks each of its VA blocks
        up to collect its moves, then again to apply them)."""
        cdef g10_runmap.iterator it
        cdef int64_t g
        if self.run_finger_ok:
            it = self.run_finger
            if deref(it).first <= page:
                if page < deref(it).second.end:
                    return it
                inc(it)
                if it != self.loc.end() and deref(it).first <= page < deref(it).second.end:
                    self.run_finger = it
                    return it
        g = page >> RUN_HINT_SHIFT
        it = self.loc.find_near(page, self.run_hint_leaf[g], self.run_hint_pos[g])
        self.run_hint_leaf[g] = <int32_t>it.leaf_index()
        self.run_hint_pos[g] = it.position()
        self.run_finger = it
        self.run_finger_ok = True
        return it

    cdef int64_t idle_runs(self, int32_t t, vector[int64_t]& segs) except -1 nogil:
        """(start, end, tier) triples of t's runs not in transfer; returns its pages in transfer.

        Collected first, because the caller then reassigns those runs (which edits the map).
        """
        cdef g10_runmap.iterator it = self.run_at(self.t_first[t])
        cdef int64_t b = self.t_first[t] + self.t_np[t], in_transfer = 0
        while it != self.loc.end() and deref(it).first < b:
            if deref(it).second.intr:
                in_transfer += deref(it).second.end - deref(it).first
            else:
                segs.push_back(deref(it).first)
                segs.push_back(deref(it).second.end)
                segs.push_back(deref(it).second.loc)
            inc(it)
        return in_transfer

    # ======================================================================
    # the GPU's pages in arrival order
    # ======================================================================
    cdef int32_t _new_node(self, int64_t start, int64_t count, int32_t t) except -1 nogil:
        cdef int32_t i
        cdef lru_node n
        n.start = start
        n.count = count
        n.tensor = t
        n.prev = n.next = n.tprev = n.tnext = n.pprev = n.pnext = -1
        n.order = self.node_seq
        self.node_seq += 1
        if self.free_nodes.size():
            i = self.free_nodes.back()
            self.free_nodes.pop_back()
            self.nodes[i] = n
        else:
            i = <int32_t>self.nodes.size()
            self.nodes.push_back(n)
        self._grid_insert(i)
        return i

    # The grid: per 2 MiB g of pages, node_first[g] and node_last[g] are the first and the
    # last node, in page order, with a page there (-1: none); a node's pnext/pprev link it to
    # its page-order neighbours that share one of its 2 MiB (a node spanning several is the
    # last one in its first 2 MiB, the only one in those between, and the first in its last).
    # Each change costs the 2 MiB it spans and the nodes it passes in its end ones.

    cdef void _grid_fill(self, int64_t g0, int64_t g1, int32_t i) noexcept nogil:
        """Node i is the only one with pages in the 2 MiB from g0 to before g1 (-1: none is)."""
        cdef int64_t g
        for g in range(g0, g1):
            self.node_first[g] = i
            self.node_last[g] = i

    cdef void _grid_insert(self, int32_t i) noexcept nogil:
        """Node i (its pages not in the list before) joins the grid."""
        cdef int64_t s = self.nodes[i].start, e = s + self.nodes[i].count
        cdef int64_t g0 = s >> NODE_GRID_SHIFT, g2 = (e - 1) >> NODE_GRID_SHIFT
        cdef int32_t p = self.node_last[g0], c
        # its predecessor in g0, from the last node there back: an SM faults its share of a
        # tensor in page order, so new pages mostly come after the ones already there
        while p >= 0 and self.nodes[p].start > s:
            p = self.nodes[p].pprev if p != self.node_first[g0] else -1
        c = self.nodes[p].pnext if p >= 0 else self.node_first[g0]
        if g2 != g0:
            # i covers the rest of g0 (c is -1 there) and the start of g2, so the nodes of g2
            # come after it
            self.node_last[g0] = i
            c = self.node_first[g2]
            self._grid_fill(g0 + 1, g2, i)
            self.node_first[g2] = i
            if c < 0:
                self.node_last[g2] = i
        elif c < 0:
            self.node_last[g0] = i
        self.nodes[i].pprev = p
        self.nodes[i].pnext = c
        if p >= 0:
            self.nodes[p].pnext = i
        else:
            self.node_first[g0] = i
        if c >= 0:
            self.nodes[c].pprev = i

    cdef void _grid_remove(self, int32_t i) noexcept nogil:
        """Node i (all its pages) leaves the grid."""
        cdef int64_t s = self.nodes[i].start, e = s + self.nodes[i].count
        cdef int64_t g0 = s >> NODE_GRID_SHIFT, g2 = (e - 1) >> NODE_GRID_SHIFT
        cdef int32_t p = self.nodes[i].pprev, n = self.nodes[i].pnext
        if g2 != g0:                                   # its neighbours share no 2 MiB now
            self._grid_fill(g0 + 1, g2, -1)
            self.node_first[g2] = n
            if n >= 0:
                self.nodes[n].pprev = -1
            else:
                self.node_last[g2] = -1
            n = -1
        elif n >= 0:
            self.nodes[n].pprev = p
        if p >= 0:
            self.nodes[p].pnext = n
        else:
            self.node_first[g0] = n
        if n < 0:                                      # i was g0's last
            self.node_last[g0] = p

    cdef void _grid_start_at(self, int32_t i, int64_t s2) noexcept nogil:
        """Node i starts at s2 now (inside it: its pages before s2 leave it)."""
        cdef int64_t s = self.nodes[i].start, e = s + self.nodes[i].count
        cdef int64_t g0 = s >> NODE_GRID_SHIFT, g1 = s2 >> NODE_GRID_SHIFT
        cdef int32_t p = self.nodes[i].pprev
        if g1 != g0:                                   # i was g0's last
            if p >= 0:
                self.nodes[p].pnext = -1
                self.nodes[i].pprev = -1
            else:
                self.node_first[g0] = -1
            self.node_last[g0] = p
            self._grid_fill(g0 + 1, g1, -1)
        self.nodes[i].start = s2
        self.nodes[i].count = e - s2

    cdef void _grid_end_at(self, int32_t i, int64_t e2) noexcept nogil:
        """Node i ends at e2 now (before or after its end; pages it gains are not in the list)."""
        cdef int64_t s = self.nodes[i].start, e = s + self.nodes[i].count
        cdef int64_t g2 = (e - 1) >> NODE_GRID_SHIFT, g3 = (e2 - 1) >> NODE_GRID_SHIFT
        cdef int32_t n = self.nodes[i].pnext
        if g3 < g2:                                    # it leaves 2 MiB it started after
            if n >= 0:
                self.nodes[n].pprev = -1
            else:
                self.node_last[g2] = -1
            self.nodes[i].pnext = -1
            self.node_first[g2] = n
            self._grid_fill(g3 + 1, g2, -1)
        elif g3 > g2:                                  # it covers the start of 2 MiB after its last
            n = self.node_first[g3]                    # (its pnext was -1: it would overlap)
            self._grid_fill(g2 + 1, g3, i)
            self.node_first[g3] = i
            if n < 0:
                self.node_last[g3] = i
            self.nodes[i].pnext = n
            if n >= 0:
                self.nodes[n].pprev = i
        self.nodes[i].count = e2 - s

    cdef void _tensor_link_after(self, int32_t i, int32_t after) noexcept nogil:
        """Chain node i into its tensor's nodes after node `after` (-1: as the newest)."""
        cdef int32_t t = self.nodes[i].tensor, nx
        if after < 0:
            after = self.t_tail[t]
        if after < 0:          # the tensor's first node on the GPU
            self.t_head[t] = self.t_tail[t] = i
            self.arrivals += 1
            self.t_arrival[t] = self.arrivals
            self.gpu_pos[t] = <int32_t>self.gpu_tensors.size()
            self.gpu_tensors.push_back(t)
            return
        nx = self.nodes[after].tnext
        self.nodes[i].tprev = after
        self.nodes[i].tnext = nx
        self.nodes[after].tnext = i
        if nx >= 0:
            self.nodes[nx].tprev = i
        else:
            self.t_tail[t] = i

    cdef void _tensor_unlink(self, int32_t i) noexcept nogil:
        cdef int32_t t = self.nodes[i].tensor, p = self.nodes[i].tprev, n = self.nodes[i].tnext
        cdef int32_t last
        if p >= 0:
            self.nodes[p].tnext = n
        else:
            self.t_head[t] = n
        if n >= 0:
            self.nodes[n].tprev = p
        else:
            self.t_tail[t] = p
        if self.t_head[t] < 0:          # the tensor left the GPU: swap-remove it
            last = self.gpu_tensors.back()
            self.gpu_tensors[self.gpu_pos[t]] = last
            self.gpu_pos[last] = self.gpu_pos[t]
            self.gpu_tensors.pop_back()
            self.gpu_pos[t] = -1

    cdef int arrive(self, int64_t start, int64_t count, int32_t t) except -1 nogil:
        """Pages [start, start+count) of t arrive on the GPU: append them to the list."""
        cdef int32_t i
        cdef lru_node* tl
        if self.tail >= 0:
            tl = &self.nodes[self.tail]
            if tl.start + tl.count == start and tl.tensor == t:
                self._grid_end_at(self.tail, start + count)
                return 0
        i = self._new_node(start, count, t)
        self.nodes[i].prev = self.tail
        if self.tail >= 0:
            self.nodes[self.tail].next = i
        else:
            self.head = i
        self.tail = i
        self._tensor_link_after(i, -1)
        return 0

    cdef void _unlink(self, int32_t i) noexcept nogil:
        cdef int32_t p = self.nodes[i].prev, n = self.nodes[i].next
        if i == self.skip_prefix:       # the nodes before its successor are still all skipped ones
            self.skip_prefix = n
        if p >= 0:
            self.nodes[p].next = n
        else:
            self.head = n
        if n >= 0:
            self.nodes[n].prev = p
        else:
            self.tail = p
        self._tensor_unlink(i)
        self._grid_remove(i)
        self.nodes[i].count = 0          # a free node covers no page: node_of's finger skips it
        self.free_nodes.push_back(i)

    cdef int64_t next_page(self, int64_t page) noexcept nogil:
        """The page after `page` in arrival order, or -1."""
        cdef int32_t i = self.node_of(page)
        if page + 1 < self.nodes[i].start + self.nodes[i].count:
            return page + 1
        i = self.nodes[i].next
        return self.nodes[i].start if i >= 0 else -1

    cdef int64_t head_page(self) noexcept nogil:
        return self.nodes[self.head].start if self.head >= 0 else -1

    cdef int depart(self, int64_t a, int64_t count) except -1 nogil:
        """Pages [a, a+count) (consecutive, all in the list) leave the list."""
        cdef bint hit = self.cursor >= a and self.cursor < a + count
        cdef int32_t i, nxt
        cdef int64_t take, end = a + count
        if count <= 0:
            return 0
        i = self.node_of(a)
        while True:
            if i < 0 or a < self.nodes[i].start or a >= self.nodes[i].start + self.nodes[i].count:
                with gil:
                    raise RuntimeError(f"internal: page {a} is not in the GPU page list")
            take = min(self.nodes[i].start + self.nodes[i].count, end) - a
            nxt = self.nodes[i].pnext
            self._depart_from(i, a, take)
            a += take
            if a >= end:
                break
            # the pages go on in the next node in page order (not in arrival order: the
            # finger rarely has it): i's neighbour in its last 2 MiB, or, when i ended on
            # a 2 MiB boundary, the first node of the next
            i = nxt if nxt >= 0 else self.node_first[a >> NODE_GRID_SHIFT]
        if hit:  # the artifact resets its cursor to the head when the cursor page leaves
            self.cursor = self.head_page()
        return 0

    cdef int _depart_from(self, int32_t i, int64_t a, int64_t take) except -1 nogil:
        """Pages [a, a+take) of node i (inside it) leave the list."""
        cdef int32_t j
        cdef int64_t s = self.nodes[i].start, e = s + self.nodes[i].count
        if a == s and take == e - s:
            self._unlink(i)
        elif a == s:
            self._grid_start_at(i, s + take)
        elif a + take == e:
            self._grid_end_at(i, a)
        else:                           # split: the tail part becomes a node after i
            self._grid_end_at(i, a)
            j = self._new_node(a + take, e - a - take, self.nodes[i].tensor)
            self.nodes[j].order = self.nodes[i].order     # it stands where i stood
            self.nodes[j].prev = i
            self.nodes[j].next = self.nodes[i].next
            if self.nodes[i].next >= 0:
                self.nodes[self.nodes[i].next].prev = j
            else:
                self.tail = j
            self.nodes[i].next = j
            self._tensor_link_after(j, i)
        return 0

    cdef int64_t skip_in_transfer(self, int64_t c) except -2 nogil:
        """First page at/after c (arrival order) that is not in transfer, or -1."""
        cdef int32_t i
        while c >= 0:
            i = self.node_of(c)
            c = self.idle_in_node(i, c)
            if c >= 0:
                return c
            i = self.nodes[i].next
            c = self.nodes[i].start if i >= 0 else -1
        return -1

    cdef int64_t idle_in_node(self, int32_t i, int64_t c) noexcept nogil:
        """First page at/after c (a page of node i) in node i that is not in transfer, or -1."""
        cdef int64_t e = self.nodes[i].start + self.nodes[i].count
        cdef g10_runmap.iterator it
        if self.gpu_intr == 0 or self.cnt_intr[self.nodes[i].tensor] == 0:
            return c
        while c < e:
            it = self.run_at(c)
            if not deref(it).second.intr:
                return c
            c = deref(it).second.end
        return -1

    cdef int64_t segment_end(self, int64_t v) noexcept nogil:
        """End of the run of pages from v with one treatment (same node, same location run)."""
        cdef int32_t i = self.node_of(v)
        cdef int64_t e = self.nodes[i].start + self.nodes[i].count
        cdef g10_runmap.iterator it
        if self.gpu_intr:
            it = self.run_at(v)
            if deref(it).second.end < e:
                e = deref(it).second.end
        return e

    cdef int64_t oldest_idle_page(self, int32_t t) except -2 nogil:
        """Tensor t's oldest-arrived GPU page that is not in transfer, or -1.  Its node
        becomes node_of's finger: the evictor asks for that page's node and span next."""
        cdef int32_t i = self.t_head[t]
        cdef int64_t c, e
        cdef g10_runmap.iterator it
        while i >= 0:
            c = self.nodes[i].start
            e = c + self.nodes[i].count
            if self.gpu_intr == 0 or self.cnt_intr[t] == 0:
                self.finger = i
                return c
            while c < e:
                it = self.run_at(c)
                if not deref(it).second.intr:
                    self.finger = i
                    return c
                c = deref(it).second.end
            i = self.nodes[i].tnext
        return -1

    # ======================================================================
    # Python access (tests, debugging); thin wrappers, unchecked like the rest
    # ======================================================================
    def py_assign(self, int32_t t, int64_t a, int64_t b, int8_t loc, int8_t intr):
        self.assign(t, a, b, loc, intr)

    def py_pin(self, inputs, outputs=()):
        """The running kernel's tensors become ``inputs`` and ``outputs`` (as a kernel begin pins them)."""
        cdef int32_t[::1] a = np.ascontiguousarray(list(inputs) or [0], dtype=np.int32)
        cdef int32_t[::1] b = np.ascontiguousarray(list(outputs) or [0], dtype=np.int32)
        self.pin(&a[0], len(inputs), &b[0], len(outputs))

    def py_run_at(self, int64_t page):
        """(first page, end, tier, in transfer) of the run holding ``page`` (a tensor's page)."""
        cdef g10_runmap.iterator it = self.run_at(page)
        return deref(it).first, deref(it).second.end, deref(it).second.loc, deref(it).second.intr

    def py_arrive(self, int64_t start, int64_t count, int32_t t):
        self.arrive(start, count, t)
        self.gpu_free -= count

    def py_depart(self, int64_t a, int64_t count):
        self.depart(a, count)
        self.gpu_free += count

    def py_next_page(self, int64_t page):
        """The page after ``page`` (on the list) in arrival order, or -1 (through the index)."""
        self.finger = -1
        return self.next_page(page)

    def py_oldest_idle_page(self, int32_t t):
        return self.oldest_idle_page(t)

    def py_skip_in_transfer(self, int64_t c):
        return self.skip_in_transfer(c)

    def py_tensor_of(self, int64_t page):
        return self.tensor_of(page)

    def runs(self):
        """Location runs as (first page, end, tier, in transfer)."""
        out = []
        cdef g10_runmap.iterator it = self.loc.begin()
        while it != self.loc.end():
            out.append((deref(it).first, deref(it).second.end, deref(it).second.loc, deref(it).second.intr))
            inc(it)
        return out

    def arrival_list(self):
        """The GPU's nodes oldest first, as (first page, pages, tensor)."""
        out = []
        cdef int32_t i = self.head
        while i >= 0:
            out.append((self.nodes[i].start, self.nodes[i].count, self.nodes[i].tensor))
            i = self.nodes[i].next
        return out

    def tensor_chain(self, int32_t t):
        """Tensor t's nodes on the GPU oldest first, as (first page, pages)."""
        out = []
        cdef int32_t i = self.t_head[t]
        while i >= 0:
            out.append((self.nodes[i].start, self.nodes[i].count))
            i = self.nodes[i].tnext
        return out

    def grid_state(self):
        """The node grid, nodes named by their first pages (-1: none): per 2 MiB (first
        node, last node), and {node: (pprev, pnext)} for every node in the list."""
        def first(i):
            return self.nodes[i].start if i >= 0 else -1
        grid = [(first(i), first(j)) for i, j in zip(self._keep["node_first"], self._keep["node_last"])]
        links = {}
        cdef int32_t i = self.head
        while i >= 0:
            links[self.nodes[i].start] = (first(self.nodes[i].pprev), first(self.nodes[i].pnext))
            i = self.nodes[i].next
        return grid, links

    def tensors_on_gpu(self):
        return sorted(self.gpu_tensors[i] for i in range(self.gpu_tensors.size()))

    def counts(self):
        """(ready pages, in-transfer pages) per tensor, for invariant tests."""
        return self._keep["cnt_ready"].copy(), self._keep["cnt_intr"].copy()

    def stats(self):
        return {"gpu_free": self.gpu_free, "host_used": self.host_used,
                "allocated_pages": self.n_allocated, "dropped_pages": self.n_dropped,
                "freed_gpu_pages": self.n_freed_gpu, "freed_host_pages": self.n_freed_host,
                "loc_runs": self.loc.size(), "lru_nodes": self.nodes.size() - self.free_nodes.size()}
