# cython: language_level=3
"""Compiled SSD (the Python API is ``g10core.ssd``).

``SSDCore`` composes the units of the device, each in its own module with its state in a
C struct and its functions beside it (the hot ones inline in the unit's .pxd), the way
MQSim splits its FTL into an address mapping unit, a block manager with GC and a
transaction scheduler:

* ``_ssd_front``, the host interface: NVMe queue (at most ``queue_depth`` commands in
  flight; a request is split into commands of at most ``command_pages`` pages; data
  crosses the SSD's own PCIe link, a LinkCore), read / write / trim, and the flash timing
  of every page (planes' arrays and channels).  Writes are acknowledged once their pages
  sit in the DRAM write buffer, so bursts see the buffer and sustained writes the flash.
* ``_ssd_map``, the address mapping: page-level l2p in leaves of 1024 lpns, p2l per erase
  block, a valid-page bitmap, each allocated only while it maps something.  lpn %
  n_planes picks the plane (channel first, then chip, die, plane).
* ``_ssd_gc``, the block manager and GC: each plane is one GC domain with a host
  frontier, a GC frontier and a FIFO of erased blocks; after a host frontier is replaced,
  GC collects victims until the plane has ``gc_free_blocks_min`` erased blocks again.
  Victims: greedy (per-valid-count buckets, O(1)), FIFO, random, d-choices.
* ``_ssd_wbuf``, the write buffer: one pool of ``write_buffer_pages`` shared by all
  planes; a page enters when there is room (else when the earliest buffered program
  ends) and leaves when its own program ends.

Everything here trusts its inputs (ssd.py validates the spec and lpn ranges).
"""
cimport cython
from libc.stdint cimport int8_t, int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memset

from g10core.core._types cimport cycle_t, ssd_params, ssd_stats, ssd_plane, VICTIM_GREEDY
from g10core.link._pcie cimport LinkCore
from g10core.ssd._ssd_math cimport G10_HIST_BUCKETS, g10_hist_lower
from g10core.ssd._ssd_map cimport (blk_meta, L2P_LEAF, P2L_DENSE, P2L_UNKNOWN, map_init, map_free,
                               map_table_bytes)
from g10core.ssd._ssd_wbuf cimport wbuf_init, wbuf_free
from g10core.ssd._ssd_gc cimport gc_init, gc_free, apply_all_moves
from g10core.ssd._ssd_front cimport (front_init, front_free, front_read, front_write, front_trim,
                                 front_read_host, front_write_host, front_trim_host,
                                 front_next_issue_time, front_idle_at, front_run_pages)

import numpy as np


# per-block fields _blk_column can copy out
cdef enum:
    BLK_VALID = 0
    BLK_ERASES = 1
    BLK_STATE = 2


cdef class SSDCore:
    """One SSD's state; build it through ``g10core.ssd.SSD``."""

    def __cinit__(self, dict params, LinkCore link):
        self.d.p = params
        self.link = link
        self.n_blocks = self.d.p.n_planes * self.d.p.blocks_per_plane
        self.physical_pages = self.n_blocks * self.d.p.pages_per_block
        self.logical_pages = self.d.p.logical_pages_per_plane * self.d.p.n_planes
        # (each init leaves what it could not make NULL, and __dealloc__ frees the rest)
        if (map_init(&self.d.map, self.d.p.n_planes, self.d.p.blocks_per_plane, self.d.p.pages_per_block,
                     self.d.p.logical_pages_per_plane) < 0
                or wbuf_init(&self.d.buf, self.d.p.n_planes, self.d.p.write_buffer_pages) < 0
                or gc_init(&self.d.gc, &self.d.p, &self.d.st) < 0
                or front_init(&self.d.front, &self.d.p) < 0):
            raise MemoryError(f"SSD: cannot allocate the FTL tables for {self.physical_pages} flash pages")
        self.reset_stats()

    def _plane_dict(self, int64_t i):
        """Plane ``i``'s FTL and timing state (the write buffer's ring is not part of it:
        it holds pages lazily, see _ssd_wbuf.wbuf_admit)."""
        cdef ssd_plane* pl = &self.d.gc.planes[i]
        return {"host_block": pl.host_block, "host_next": pl.host_next, "gc_block": pl.gc_block,
                "gc_next": pl.gc_next, "free_head": pl.free_head, "free_tail": pl.free_tail,
                "free_count": pl.free_count, "closed_count": pl.closed_count, "min_valid": pl.min_valid,
                "channel": pl.channel, "busy_until": pl.busy_until}

    def __dealloc__(self):
        front_free(&self.d.front)
        gc_free(&self.d.gc)
        wbuf_free(&self.d.buf)
        map_free(&self.d.map)

    def __reduce__(self):
        raise TypeError("SSDCore does not pickle (its FTL tables can be gigabytes); "
                        "send the SSDSpec and rebuild the SSD in the worker")

    def reset_stats(self):
        """Zero counters and histograms (the FTL and queue state are kept)."""
        memset(&self.d.st, 0, sizeof(ssd_stats))
        self.d.st.first_submit = -1
        memset(self.d.front.hist_read, 0, G10_HIST_BUCKETS * sizeof(int64_t))
        memset(self.d.front.hist_write, 0, G10_HIST_BUCKETS * sizeof(int64_t))
        self.link.reset_stats()

    # ---- the compiled callers' interface: the host interface unit does the work ----------

    cdef cycle_t read(self, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil:
        """Read ``npages`` logical pages from ``lpn``; return the cycle the last byte reaches the host."""
        return front_read(&self.d, self.link, lpn, npages, now)

    cdef cycle_t write(self, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil:
        """Write ``npages`` logical pages from ``lpn``; return the cycle the last command is acknowledged."""
        return front_write(&self.d, self.link, lpn, npages, now)

    cdef void trim(self, int64_t lpn, int64_t npages) noexcept nogil:
        """Deallocate pages (their data is dead: GC will not copy them). Takes no time."""
        front_trim(&self.d, lpn, npages)

    cdef cycle_t read_host(self, int64_t page, int64_t npages, cycle_t now) noexcept nogil:
        """read() in pages of ``host_page_bytes`` (every flash page the range touches)."""
        return front_read_host(&self.d, self.link, page, npages, now)

    cdef cycle_t write_host(self, int64_t page, int64_t npages, cycle_t now) noexcept nogil:
        """write() in pages of ``host_page_bytes`` (every flash page the range touches)."""
        return front_write_host(&self.d, self.link, page, npages, now)

    cdef void trim_host(self, int64_t page, int64_t npages) noexcept nogil:
        """trim() in pages of ``host_page_bytes`` (only the flash pages it covers whole)."""
        front_trim_host(&self.d, page, npages)

    cdef cycle_t next_issue_time(self, cycle_t now) noexcept nogil:
        """Earliest cycle >= now at which a new command would find a free queue slot."""
        return front_next_issue_time(&self.d, now)

    cdef cycle_t idle_at(self) noexcept nogil:
        """First cycle at which every plane, channel, link direction and command is done."""
        return front_idle_at(&self.d, self.link)

    # ---- settings ------------------------------------------------------------------------

    @property
    def host_page_bytes(self):
        """The page of read_host/write_host/trim_host (the flash page by default)."""
        return self.d.front.host_page_bytes

    def set_host_page_bytes(self, int64_t nbytes):
        """The page size of read_host/write_host/trim_host callers (validated by ssd.SSD)."""
        if nbytes < 1:
            raise ValueError(f"host page of {nbytes} bytes")
        self.d.front.host_page_bytes = nbytes

    @property
    def p2l_lazy(self):
        """No block keeps its lpns until a GC copies a page (see _ssd_map.pxd; results the same)."""
        return self.d.map.p2l_lazy

    @p2l_lazy.setter
    def p2l_lazy(self, bint on):
        self.d.map.p2l_lazy = on

    def set_move_log_cap(self, int32_t n):
        """Apply a plane's logged moves once it holds ``n`` (1 to the log's room; tests)."""
        if not 1 <= n <= self.d.gc.move_log_stride:
            raise ValueError(f"move log of {n} entries: must be 1 to {self.d.gc.move_log_stride}")
        apply_all_moves(&self.d.gc, &self.d.map)
        self.d.gc.move_log_cap = n

    @property
    def greedy_moves_deferred(self):
        """Greedy-list moves are logged and applied at the plane's next GC (see _ssd_gc.pxd)."""
        return self.d.gc.moves_deferred

    @greedy_moves_deferred.setter
    def greedy_moves_deferred(self, bint on):
        apply_all_moves(&self.d.gc, &self.d.map)
        self.d.gc.moves_deferred = on and self.d.p.victim_policy == VICTIM_GREEDY

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

    def run_pages(self, const int64_t[::1] lpns, bint is_write, cycle_t now, bint closed_loop):
        """One single-page command per entry of ``lpns``.  Closed loop: each is
        issued as soon as a queue slot is free (from ``now`` on); otherwise all
        are submitted at ``now``.  Returns the last completion cycle."""
        cdef int64_t n = lpns.shape[0]
        cdef cycle_t last
        if n == 0:
            return now
        with nogil:
            last = front_run_pages(&self.d, self.link, &lpns[0], n, is_write, now, closed_loop)
        return last

    def stats(self):
        """Raw counters (pages, cycles) as a dict; ssd.SSD.stats derives the rest."""
        return dict(self.d.st)

    def histograms(self):
        """(read, write) latency histograms: counts per log-linear bucket of cycles."""
        cdef int64_t[::1] r = <int64_t[:G10_HIST_BUCKETS]> self.d.front.hist_read
        cdef int64_t[::1] w = <int64_t[:G10_HIST_BUCKETS]> self.d.front.hist_write
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
        out = map_table_bytes(&self.d.map)
        out["blocks"] = ((self.n_blocks + 1) * sizeof(blk_meta)
                         + (self.n_blocks + self.d.p.n_planes * self.d.gc.n_lists) * 2 * sizeof(int32_t)
                         + 2 * self.n_blocks * sizeof(int32_t))
        return out

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
                st[b] = self.d.map.blk[b].state
        else:
            out = np.empty(self.n_blocks, dtype=np.int32)
            v = out
            for b in range(self.n_blocks):
                v[b] = self.d.map.blk[b].valid if which == BLK_VALID else self.d.map.blk[b].erases
        return out

    def snapshot(self):
        """Copies of the FTL tables (for invariant checks in tests; small geometries only)."""
        cdef int64_t nl = self.d.p.n_planes * self.d.gc.n_lists
        apply_all_moves(&self.d.gc, &self.d.map)   # the lists as the moves leave them
        P = self.d.p.pages_per_block
        bits = np.array(<uint64_t[:self.n_blocks * self.d.map.words_per_block]> self.d.map.valid_bits, copy=True)
        valid = np.unpackbits(bits.view(np.uint8), bitorder="little").reshape(self.n_blocks, -1)[:, :P]
        cdef int64_t b, k
        l2p = np.zeros(self.logical_pages, dtype=np.uint32)
        for k in range(self.d.map.n_leaves):
            if self.d.map.l2p_leaf[k] != NULL:
                leaf = np.array(<uint32_t[:L2P_LEAF]> self.d.map.l2p_leaf[k], copy=True)
                l2p[k * L2P_LEAF:(k + 1) * L2P_LEAF] = leaf[:min(L2P_LEAF, self.logical_pages - k * L2P_LEAF)]
        if self.d.map.p2l_lazy:                              # no bit kept yet: a page is valid when l2p maps it
            assert not bits.any()
            flat = valid.reshape(-1).copy()
            flat[l2p[l2p != 0].astype(np.int64) - 1] = 1
            valid = flat.reshape(self.n_blocks, P)
        lpn = np.zeros(self.physical_pages, dtype=np.uint32)
        unknown = np.zeros(self.n_blocks, dtype=bool)   # blocks whose lpns are not kept (p2l_lazy)
        cdef int64_t o, r, runs
        for b in range(self.n_blocks):
            runs = self.d.map.blk[b].runs
            unknown[b] = runs == P2L_UNKNOWN
            if runs == P2L_DENSE:
                lpn[b * P:(b + 1) * P] = np.array(<uint32_t[:P]> self.d.map.blk[b].p2l, copy=True)
            for r in range(runs):                      # run r: pages [first, next run's first)
                o = self.d.map.blk[b].p2l[2 * r + 1]
                while o < (self.d.map.blk[b].p2l[2 * r + 3] if r + 1 < runs else P):
                    lpn[b * P + o] = (self.d.map.blk[b].p2l[2 * r] + (o - self.d.map.blk[b].p2l[2 * r + 1]) * self.d.p.n_planes) & 0xFFFFFFFF
                    o += 1
        # blocks whose lpns are not kept hold what l2p says they hold
        if unknown.any():
            mapped = np.flatnonzero(l2p)
            where = l2p[mapped].astype(np.int64) - 1
            keep = unknown[where // P]
            lpn[where[keep]] = mapped[keep].astype(np.uint32)
        nxt = np.array(<int32_t[:self.n_blocks + nl]> self.d.gc.next, copy=True)
        out = {
            "p2l_unknown_blocks": int(unknown.sum()),
            "l2p": l2p,
            "p2l": np.where(valid.reshape(-1) != 0, lpn + 1, 0).astype(np.uint32),   # lpn + 1, 0: invalid
            "valid": self._blk_column(BLK_VALID),
            "erases": self._blk_column(BLK_ERASES),
            "state": self._blk_column(BLK_STATE),
            "next": np.where(nxt[:self.n_blocks] >= self.n_blocks, -1, nxt[:self.n_blocks]),  # -1: end
            "list_head": np.where(nxt[self.n_blocks:] >= self.n_blocks, -1, nxt[self.n_blocks:]),
            "planes": [self._plane_dict(i) for i in range(self.d.p.n_planes)],
            "channel_free": [self.d.front.channel_free[i] for i in range(self.d.p.n_channels)],
        }
        return out
