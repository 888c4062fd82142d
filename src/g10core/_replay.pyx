# cython: language_level=3
"""Compiled page-level replay with the semantics of the published G10 simulator.

State is kept in extents, never per page of the footprint:

* ``loc``: an ordered map of runs (first page -> end, tier, in-transfer flag); runs
  never cross a tensor boundary, so per-tensor counters stay exact.
* the GPU's page list in arrival order (the artifact calls it LRU; it is FIFO by
  arrival because hits never touch it): a doubly linked list of runs plus an index
  by first page, and a cursor that is a page number (or -1 for the list's end).
* eight transfer queues of page runs.

Every rule below mirrors ``reference.py`` (the page-by-page specification); tests
require both to give identical results.  Work is done in chunks of pages that are
provably treated alike; the per-page scalar bookkeeping (quotas, the host-full
flag, the forced source/destination of a tick) is still stepped page by page,
but only inside a tick (at most a few tens of pages).  Identical consecutive ticks
are then repeated in bulk (see ``_try_bulk``).

Kernel-begin events and batcher ticks run on the engine's event queue (``_engine.pxd``,
``include/g10core/eventq.h``), ordered by (cycle, priority, sequence) as the artifact's
queue orders them; a bulk repeat moves the pending tick instead of firing each one.

The Python layer (``simulator.py``) validates every input; nothing here checks.
"""
from libc.math cimport INFINITY, NAN
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t
from libcpp.map cimport map as cmap
from libcpp.deque cimport deque
from libcpp.vector cimport vector
from libcpp.utility cimport pair
from cython.operator cimport dereference as deref, preincrement as inc, predecrement as dec

from ._types cimport loc_run, lru_node, queue_run, g10_removed
from ._ssd cimport SSDCore
from ._pcie cimport LinkCore, DIR_TO_DEVICE, DIR_FROM_DEVICE, FLOW_HOST, FLOW_PEER
from ._engine cimport g10_event, g10_event_queue

cdef extern from "g10core/pool.h":
    cdef cppclass g10_pool_alloc[T]:     # node pool (pool.h): one per map
        pass

cdef extern from "<functional>" namespace "std":
    cdef cppclass less[T]:
        pass

cdef extern from "g10core/runmap.h":
    # the same types as runmap.h's typedefs: std::maps whose nodes come from a pool
    ctypedef cmap[int64_t, loc_run, less[int64_t], g10_pool_alloc[pair[const int64_t, loc_run]]] g10_runmap
    ctypedef cmap[int64_t, int32_t, less[int64_t], g10_pool_alloc[pair[const int64_t, int32_t]]] g10_lruindex
    g10_removed g10_assign(g10_runmap& m, int64_t a, int64_t b, int8_t loc, int8_t intr,
                           int64_t lo, int64_t hi, int8_t gpu) except + nogil

import numpy as np


cdef inline double ieee_div(double a, double b) noexcept nogil:
    """a / b as IEEE 754 defines it, also for b == 0 (inf, or NaN for 0 / 0), in every build.

    The artifact's fault model divides by a zero bandwidth in one case (see
    ``Replay.fault_cycles``); spelling the result out keeps the debug build
    (``cdivision=False``, which would raise) identical to the release build.
    """
    if b == 0.0:
        if a == 0.0 or a != a:
            return NAN
        return INFINITY if a > 0.0 else -INFINITY
    return a / b


cdef inline int64_t artifact_ulong_cycles(double x) noexcept nogil:
    """The artifact's ``(unsigned long)`` of a fault time in cycles, as gcc emits it on x86-64.

    A value of 2^64 or more, +inf included, converts to 0 there (``x - 2^63`` overflows
    ``cvttsd2si`` to 2^63, and the sign flip gives 0): an infinite fault time adds
    nothing and the kernel ends when its last page arrives.  Values in [2^63, 2^64)
    (centuries of cycles) and NaN cannot reach here (``std::max`` drops a NaN).
    """
    if not (x < 18446744073709551616.0):
        return 0
    return <int64_t>x

# tiers (match _types.Tier)
DEF NP = 0
DEF SSD = 1
DEF HOST = 2
DEF GPU = 3
DEF UNKNOWN = -1

# queues
DEF Q_PF_SSD = 0
DEF Q_PF_HOST = 1
DEF Q_PF_ALLOC = 2
DEF Q_PRE_SSD = 3
DEF Q_PRE_HOST = 4
DEF Q_PREALLOC = 5
DEF Q_EV_SSD = 6
DEF Q_EV_HOST = 7
DEF NQ = 8

# hint actions (match policies.HINT_*)
DEF H_TO_GPU = 0
DEF H_TO_SSD = 1
DEF H_TO_HOST = 2
DEF H_FREE = 3

DEF EVICT_LRU = 0
DEF EVICT_DEEPUM = 1

# kernel-stat columns
DEF KS_COLS = 10


# recorded tick operations
DEF OPS_MAX = 48
DEF SEQ_MAX = 32
DEF OP_VICT = 1
DEF OP_IN = 2
DEF OP_PREEV = 3

# event kinds of the engine queue; both share one priority, so events at the same
# cycle fire in the order they were scheduled (the artifact's event-queue rule)
DEF EV_KERNEL = 0
DEF EV_TICK = 1
DEF EV_PRIORITY = 0

cdef enum:
    # why a busy tick was or was not repeated in bulk (``run()['bulk']``)
    B_IRREGULAR
    B_NOTHING
    B_KERNEL_NEXT
    B_QUEUE_DRAINS
    B_KERNEL_READY
    B_FRAMES_RUN_OUT
    B_FRAMES_FREED_IN
    B_FRAMES_FREED_BLOCKED
    B_HOST_LINE
    B_LESS_THAN_ONE
    B_MIXED_VICTIMS
    B_STALL_MOVES
    B_REQUEUE
    B_MIXED_PAGES
    B_OPS_OVERFLOW
    B_PREEVICT_REQUEUE
    B_REDIRECT
    B_LOCKUP
    B_RESTART
    B_MERGED
    B_TICKWISE
    B_COUNT

BULK_STAT_NAMES = (
    'irregular tick (see the other reasons)',
    'nothing moved',
    'a kernel event comes first',
    'a queue drains',
    'the waiting kernel could become ready',
    'free GPU frames run out',
    'frames freed while pages come in',
    'frames freed with a blocked queue',
    'host memory near its line',
    'not even one identical tick',
    'mixed victims or pages in transfer in GPU',
    'a stall that would move',
    're-queued victims change a queue',
    "running kernel's and other pages mixed",
    'too many operations in one tick',
    'pre-evicted pages re-queued as faults',
    'prefetch redirected between tiers',
    'DeepUM lock-up fallback',
    'a waiting kernel restarted',
    'ticks repeated as merged streams (count of repeats)',
    'ticks repeated tick by tick (count of repeats)',
)

cdef int64_t BIG = (<int64_t>1) << 62      # "no limit"
cdef int64_t HUGE_N = (<int64_t>1) << 40   # bounds above this are "not yet bounded"

ctypedef g10_runmap locmap_t
ctypedef g10_lruindex index_t


cdef struct victim_t:
    int64_t page               # first victim page
    int64_t seglen             # victims available from `page` with the same treatment
    int32_t tensor             # owner of the segment
    int8_t dest                # natural destination (before a forced override)
    bint found


cdef class Replay:
    # ---- constants ----
    cdef int64_t P, K, T, n_iter
    cdef int64_t gpu_pages, host_line, tick, gpu_batch, host_batch, ssd_batch, alloc_batch
    cdef int64_t ssd_q                  # SSD pages per direction in the current tick
    # detailed preset: the SSD and the GPU's PCIe link as devices (None in g10-artifact)
    cdef bint detailed
    cdef SSDCore ssd
    cdef LinkCore link
    cdef object _ssd_obj, _link_obj
    cdef int64_t ssd_throttled_ticks    # ticks in which the SSD could not take new commands
    # page conservation: with the transfer counters these close the GPU and host balances
    cdef int64_t n_allocated            # never-present pages given a GPU frame
    cdef int64_t n_dropped              # GPU pages evicted without a transfer (dead, DeepUM+)
    cdef int64_t n_freed_gpu, n_freed_host   # pages released by free hints
    cdef int64_t link_bytes[2][2]       # this tick's bytes per (direction, flow), submitted at its end
    cdef int64_t freq_hz
    cdef double bw_pcie, bw_ssd
    cdef int l_sys, l_ssd
    cdef int eviction, window
    cdef bint apply_hints, bulk_enabled
    # ---- per tensor ----
    cdef object _keep
    cdef const int64_t* t_first
    cdef const int64_t* t_np
    cdef const uint8_t* t_global
    cdef const int64_t* t_birth
    cdef const int64_t* t_death
    cdef int64_t* cnt_ready
    cdef int64_t* cnt_intr
    cdef int64_t* req_mark
    cdef int64_t* win_mark
    cdef const int64_t* s_start
    cdef const int32_t* s_tensor
    cdef int64_t n_sorted
    # ---- per kernel ----
    cdef const int64_t* k_t11
    cdef const int64_t* k_t10
    cdef const int64_t* k_t00
    cdef const int64_t* in_off
    cdef const int32_t* in_t
    cdef const int64_t* out_off
    cdef const int32_t* out_t
    # ---- hints ----
    cdef const int32_t* h_kernel
    cdef const int32_t* h_tensor
    cdef const int8_t* h_action
    cdef int64_t n_hints, hint_idx
    # ---- dynamic state ----
    cdef locmap_t loc
    cdef vector[lru_node] nodes
    cdef vector[int32_t] free_nodes
    cdef index_t lru_index
    cdef int32_t head, tail
    cdef int32_t lru_hint               # the node lru_find found last (a finger into the list)
    cdef int64_t cursor
    cdef vector[deque[queue_run]] qs
    cdef int64_t qlen[NQ]
    cdef int64_t gpu_free, host_used, gpu_intr
    cdef int64_t cur, iteration, epoch
    cdef bint has_resched, started
    cdef int64_t rs_first, rs_pf
    cdef int64_t acc_intr, acc_cpu, acc_ssd, acc_un
    # tick scalars
    cdef int64_t alloc_n, in_n, out_n, in_ssd, in_cpu, out_ssd, out_cpu
    cdef int forced_fetch, forced_evict
    cdef int64_t host_peak              # highest host_used seen inside the current tick
    cdef bint irregular                 # current tick did something a bulk repeat cannot copy
    cdef bint stalled                   # DeepUM found no victim outside its window this tick
    cdef int64_t consumed[NQ]           # pages taken from each queue in the current tick
    cdef int64_t tick_victims           # victims taken in the current tick
    cdef int victim_src                 # 0 none, 1 cursor, 2 head, 3 both
    # the current tick's operations, in order, for bulk repeats (see _try_bulk)
    cdef int n_ops
    cdef int8_t op_kind[OPS_MAX]        # OP_VICT, OP_IN, OP_PREEV
    cdef int8_t op_q[OPS_MAX]           # queue (OP_IN, OP_PREEV)
    cdef int8_t op_dest[OPS_MAX]        # destination (OP_VICT, OP_PREEV)
    cdef int64_t op_k[OPS_MAX]          # pages
    cdef int8_t rec_vdest               # natural destination of the tick's first victims
    cdef bint rec_vpf                   # were the tick's victims chosen as page-fault victims
    cdef bint rec_vreq                  # did they belong to the running kernel (re-queued as faults)
    cdef int8_t rec_in_req              # did the pages brought in belong to it (-1 none yet, -2 mixed)
    # the same operations in order, for tick-by-tick repeats
    cdef int n_sq_v, n_sq_in, n_sq_pre
    cdef int8_t sq_vdest[SEQ_MAX]
    cdef int64_t sq_vk[SEQ_MAX]
    cdef int8_t sq_inq[SEQ_MAX]
    cdef int64_t sq_ink[SEQ_MAX]
    cdef int8_t sq_preq[SEQ_MAX]
    cdef int8_t sq_predest[SEQ_MAX]
    cdef int64_t sq_prek[SEQ_MAX]
    cdef bint seq_overflow
    cdef bint replaying                 # inside _apply_bulk: do not record
    cdef int64_t tick_host0, tick_free0 # host pages and free frames when the tick began
    cdef int64_t qlen0[NQ]              # queue lengths when the tick began
    # events
    cdef g10_event_queue events         # pending kernel-begin and tick events
    cdef int64_t tb                     # time of the current (or next) tick
    cdef int64_t tk                     # time of the last kernel-begin event
    cdef int64_t k_kernel               # kernel of that event
    cdef bint transferring
    # outputs
    cdef vector[int64_t] kstats
    cdef vector[int64_t] bounds
    cdef int64_t* pcie                  # per iteration: alloc, in_ssd, in_cpu, out_ssd, out_cpu
    cdef object _pcie_arr
    cdef bint host_overflow
    cdef int64_t n_ticks_detailed, n_ticks_bulk, n_ticks_idle, max_ticks
    cdef bint debug_log                     # record every page move (tests, debugging)
    cdef int64_t bulk_stat[B_COUNT]         # diagnostics: why ticks were (not) repeated in bulk
    cdef vector[int64_t] log                # debug_log rows: (kind, tick, first page, pages, tier):
                                            # 1 victims (tier: destination), 2 pages in (tier: source),
                                            # 3 a bulk repeat (tick, repeats, queue*1000+pages, victims*10+stall)

    def __init__(self, dict c, dict arrays, ssd=None, link=None):
        """``c``: scalar constants (validated by the Python layer); ``arrays``: numpy inputs.

        ``ssd`` and ``link`` (``g10core.ssd.SSD``, ``g10core.pcie.PcieLink``) make the run
        detailed: every page moved to or from the SSD is a command to its FTL, every
        transfer is submitted to the GPU's link, and a tick moves SSD pages only when the
        SSD can take new commands (GC and a full write buffer throttle it).
        """
        self.P = c["pages"]
        self.K = c["kernels"]
        self.T = c["tensors"]
        self.n_iter = c["iterations"]
        self.gpu_pages = c["gpu_pages"]
        self.host_line = c["host_pages"]
        self.tick = c["tick_cycles"]
        self.gpu_batch = c["gpu_batch"]
        self.host_batch = c["host_batch"]
        self.ssd_batch = c["ssd_batch"]
        self.alloc_batch = c["alloc_batch"]
        self.freq_hz = c["freq_hz"]
        self.bw_pcie = c["bw_pcie_Bpms"]
        self.bw_ssd = c["bw_ssd_Bpms"]
        self.l_sys = c["l_sys_us"]
        self.l_ssd = c["l_ssd_us"]
        self.eviction = c["eviction"]
        self.window = c["window"]
        self.apply_hints = c["apply_hints"]
        self.bulk_enabled = c.get("bulk", True)
        self.detailed = ssd is not None
        self._ssd_obj = ssd
        self._link_obj = link
        if self.detailed:
            self.ssd = ssd.core
            self.link = link.core
            self.bulk_enabled = False      # device state evolves: no two ticks are alike
        self.ssd_q = self.ssd_batch
        self.ssd_throttled_ticks = 0
        self.n_allocated = self.n_dropped = self.n_freed_gpu = self.n_freed_host = 0
        self.link_bytes[0][0] = self.link_bytes[0][1] = 0
        self.link_bytes[1][0] = self.link_bytes[1][1] = 0
        self.max_ticks = c.get("max_ticks", BIG)
        self.debug_log = c.get("debug_log", False)

        keep = {}
        def arr(name, dtype):
            a = np.ascontiguousarray(arrays[name], dtype=dtype)
            keep[name] = a
            return a
        cdef int64_t[::1] v64
        cdef int32_t[::1] v32
        cdef uint8_t[::1] vu8
        cdef int8_t[::1] vi8
        v64 = arr("t_first", np.int64); self.t_first = &v64[0]
        v64 = arr("t_np", np.int64); self.t_np = &v64[0]
        vu8 = arr("t_global", np.uint8); self.t_global = &vu8[0]
        v64 = arr("t_birth", np.int64); self.t_birth = &v64[0]
        v64 = arr("t_death", np.int64); self.t_death = &v64[0]
        for name in ("cnt_ready", "cnt_intr"):
            keep[name] = np.zeros(self.T, np.int64)
        keep["req_mark"] = np.full(self.T, -1, np.int64)
        keep["win_mark"] = np.full(self.T, -1, np.int64)
        v64 = keep["cnt_ready"]; self.cnt_ready = &v64[0]
        v64 = keep["cnt_intr"]; self.cnt_intr = &v64[0]
        v64 = keep["req_mark"]; self.req_mark = &v64[0]
        v64 = keep["win_mark"]; self.win_mark = &v64[0]
        v64 = arr("s_start", np.int64); self.s_start = &v64[0]; self.n_sorted = v64.shape[0]
        v32 = arr("s_tensor", np.int32); self.s_tensor = &v32[0]
        v64 = arr("t11", np.int64); self.k_t11 = &v64[0]
        v64 = arr("t10", np.int64); self.k_t10 = &v64[0]
        v64 = arr("t00", np.int64); self.k_t00 = &v64[0]
        v64 = arr("in_off", np.int64); self.in_off = &v64[0]
        v32 = arr("in_t", np.int32); self.in_t = &v32[0] if v32.shape[0] else NULL
        v64 = arr("out_off", np.int64); self.out_off = &v64[0]
        v32 = arr("out_t", np.int32); self.out_t = &v32[0] if v32.shape[0] else NULL
        self.n_hints = arrays["h_kernel"].shape[0]
        v32 = arr("h_kernel", np.int32); self.h_kernel = &v32[0] if self.n_hints else NULL
        v32 = arr("h_tensor", np.int32); self.h_tensor = &v32[0] if self.n_hints else NULL
        vi8 = arr("h_action", np.int8); self.h_action = &vi8[0] if self.n_hints else NULL
        self._pcie_arr = np.zeros((self.n_iter + 1, 5), np.int64)
        v64 = self._pcie_arr.reshape(-1); self.pcie = &v64[0]
        self._keep = keep

        cdef int64_t t, i
        cdef loc_run r
        for i in range(self.n_sorted):
            t = self.s_tensor[i]
            r.end = self.t_first[t] + self.t_np[t]
            r.loc = SSD if self.t_global[t] else NP
            r.intr = 0
            self.loc[self.t_first[t]] = r
        self.qs.resize(NQ)
        for i in range(NQ):
            self.qlen[i] = 0
        self.head = self.tail = -1
        self.lru_hint = -1
        self.cursor = -1
        self.gpu_free = self.gpu_pages
        self.host_used = 0
        self.gpu_intr = 0
        self.cur = 0
        self.iteration = 0
        self.epoch = 0
        self.has_resched = False
        self.started = False
        self.hint_idx = 0
        self.transferring = False
        self.host_overflow = False
        self.n_ticks_detailed = self.n_ticks_bulk = self.n_ticks_idle = 0
        self.replaying = False
        for i in range(B_COUNT):
            self.bulk_stat[i] = 0

    # ======================================================================
    # small helpers
    # ======================================================================
    cdef inline int32_t tensor_of(self, int64_t page) noexcept nogil:
        cdef int64_t lo = 0, hi = self.n_sorted, mid
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            if self.s_start[mid] <= page:
                lo = mid
            else:
                hi = mid
        return self.s_tensor[lo]

    cdef inline bint host_full(self) noexcept nogil:
        return self.host_used == self.host_line

    cdef inline bint required(self, int32_t t) noexcept nogil:
        return self.req_mark[t] == self.epoch

    cdef inline bint in_window(self, int32_t t) noexcept nogil:
        return self.win_mark[t] == self.epoch

    cdef inline bint alive(self, int32_t t, int64_t k) noexcept nogil:
        if self.t_global[t]:
            return True
        if self.t_death[t] == -1:
            return k == self.t_birth[t]
        return self.t_birth[t] <= k < self.t_death[t]

    # ======================================================================
    # location runs
    # ======================================================================
    cdef inline void _count(self, int32_t t, int8_t loc, int8_t intr, int64_t n) noexcept nogil:
        if intr:
            self.cnt_intr[t] += n
            if loc == GPU:
                self.gpu_intr += n
        elif loc == GPU:
            self.cnt_ready[t] += n

    cdef int lsplit(self, int64_t x) except -1 nogil:
        if x <= 0 or x >= self.P:
            return 0
        cdef locmap_t.iterator it = self.loc.upper_bound(x)
        dec(it)
        if deref(it).first == x:
            return 0
        cdef loc_run r = deref(it).second
        deref(it).second.end = x
        self.loc[x] = r
        return 0


    cdef int lassign(self, int32_t t, int64_t a, int64_t b, int8_t loc, int8_t intr) except -1 nogil:
        """Set pages [a, b) of tensor t to (loc, intr), keeping runs maximal within t."""
        cdef int64_t lo = self.t_first[t]
        cdef g10_removed rem = g10_assign(self.loc, a, b, loc, intr, lo, lo + self.t_np[t], GPU)
        self.cnt_ready[t] -= rem.ready
        self.cnt_intr[t] -= rem.intr
        self.gpu_intr -= rem.gpu_intr
        self._count(t, loc, intr, b - a)
        return 0

    cdef inline locmap_t.iterator lfind(self, int64_t page) noexcept nogil:
        cdef locmap_t.iterator it = self.loc.upper_bound(page)
        dec(it)
        return it

    # ======================================================================
    # the GPU page list (arrival order)
    # ======================================================================
    cdef int32_t lru_new(self, int64_t start, int64_t count, int32_t t) except -1 nogil:
        cdef int32_t i
        cdef lru_node n
        n.start = start
        n.count = count
        n.tensor = t
        n.prev = -1
        n.next = -1
        if self.free_nodes.size():
            i = self.free_nodes.back()
            self.free_nodes.pop_back()
            self.nodes[i] = n
        else:
            i = <int32_t>self.nodes.size()
            self.nodes.push_back(n)
        self.lru_index[start] = i
        return i

    cdef int lru_append(self, int64_t start, int64_t count, int32_t t) except -1 nogil:
        cdef int32_t i
        cdef lru_node* tl
        if self.tail >= 0:
            tl = &self.nodes[self.tail]
            if tl.start + tl.count == start and tl.tensor == t:
                tl.count += count
                return 0
        i = self.lru_new(start, count, t)
        self.nodes[i].prev = self.tail
        if self.tail >= 0:
            self.nodes[self.tail].next = i
        else:
            self.head = i
        self.tail = i
        return 0


    cdef int lru_unlink(self, int32_t i) except -1 nogil:
        cdef int32_t p = self.nodes[i].prev, n = self.nodes[i].next
        if p >= 0:
            self.nodes[p].next = n
        else:
            self.head = n
        if n >= 0:
            self.nodes[n].prev = p
        else:
            self.tail = p
        self.lru_index.erase(self.nodes[i].start)
        self.nodes[i].count = 0          # a free node covers no page: lru_find's finger skips it
        self.free_nodes.push_back(i)
        return 0


    cdef inline int32_t lru_find(self, int64_t page) noexcept nogil:
        """The node holding `page` (which must be in the list).

        Victims are taken along the list, so the node found last, or the one after it,
        usually holds the page: live nodes are disjoint, so whichever covers the page is
        the one; only otherwise is the index searched."""
        cdef int32_t i = self.lru_hint
        cdef const lru_node* n
        if i >= 0:
            n = &self.nodes[i]
            if n.start <= page < n.start + n.count:
                return i
            if n.next >= 0:
                n = &self.nodes[n.next]
                if n.start <= page < n.start + n.count:
                    self.lru_hint = self.nodes[i].next
                    return self.lru_hint
        cdef index_t.iterator it = self.lru_index.upper_bound(page)
        dec(it)
        i = deref(it).second
        self.lru_hint = i
        return i

    cdef inline int64_t lru_next_page(self, int64_t page) noexcept nogil:
        """The page after `page` in arrival order, or -1."""
        cdef int32_t i = self.lru_find(page)
        if page + 1 < self.nodes[i].start + self.nodes[i].count:
            return page + 1
        i = self.nodes[i].next
        return self.nodes[i].start if i >= 0 else -1

    cdef inline int64_t head_page(self) noexcept nogil:
        return self.nodes[self.head].start if self.head >= 0 else -1

    cdef int lru_remove(self, int64_t a, int64_t count) except -1 nogil:
        """Remove pages [a, a+count) (consecutive pages, all in the list)."""
        cdef bint hit = self.cursor >= a and self.cursor < a + count
        cdef int32_t i, j
        cdef int64_t s, e, take, tail_start, tail_count
        while count > 0:
            i = self.lru_find(a)
            s = self.nodes[i].start
            e = s + self.nodes[i].count
            take = e - a
            if take > count:
                take = count
            if take <= 0 or a < s:
                with gil:
                    raise RuntimeError(f"internal: page {a} is not in the GPU page list")
            if a == s and take == e - s:
                self.lru_unlink(i)
            elif a == s:
                self.lru_index.erase(s)
                self.nodes[i].start = s + take
                self.nodes[i].count -= take
                self.lru_index[s + take] = i
            elif a + take == e:
                self.nodes[i].count -= take
            else:
                tail_start = a + take
                tail_count = e - tail_start
                self.nodes[i].count = a - s
                j = self.lru_new(tail_start, tail_count, self.nodes[i].tensor)
                self.nodes[j].prev = i
                self.nodes[j].next = self.nodes[i].next
                if self.nodes[i].next >= 0:
                    self.nodes[self.nodes[i].next].prev = j
                else:
                    self.tail = j
                self.nodes[i].next = j
            a += take
            count -= take
        if hit:  # the artifact resets its cursor to the head when the cursor page leaves
            self.cursor = self.head_page()

    # ======================================================================
    # queues
    # ======================================================================
        return 0


    cdef int qpush(self, int q, int64_t start, int64_t count, int32_t t, int8_t src) except -1 nogil:
        cdef queue_run r
        cdef queue_run* b
        if self.qs[q].size():
            b = &self.qs[q].back()
            if b.start + b.count == start and b.tensor == t and b.src == src:
                b.count += count
                self.qlen[q] += count
                return 0
        r.start = start
        r.count = count
        r.tensor = t
        r.src = src
        self.qs[q].push_back(r)
        self.qlen[q] += count
        return 0


    cdef int qpop(self, int q, int64_t k) except -1 nogil:
        cdef queue_run* f = &self.qs[q].front()
        f.start += k
        f.count -= k
        self.qlen[q] -= k
        if f.count == 0:
            self.qs[q].pop_front()
        return 0


    cdef inline bint pf_queues_empty(self) noexcept nogil:
        return self.qlen[Q_PF_SSD] == 0 and self.qlen[Q_PF_HOST] == 0 and self.qlen[Q_PF_ALLOC] == 0

    cdef inline bint all_queues_empty(self) noexcept nogil:
        cdef int i
        for i in range(NQ):
            if self.qlen[i]:
                return False
        return True

    # ======================================================================
    # the detailed preset's devices
    # ======================================================================
    cdef inline void device_out(self, int64_t page, int64_t k, int8_t dest) noexcept nogil:
        """Pages leave the GPU: a write to the SSD (GPUDirect) or a copy to host memory."""
        if dest == SSD:
            self.ssd.write(page, k, self.tb)
            self.link_bytes[DIR_FROM_DEVICE][FLOW_PEER] += k * 4096
        elif dest == HOST:
            self.link_bytes[DIR_FROM_DEVICE][FLOW_HOST] += k * 4096
        else:
            self.ssd.trim(page, k)       # dropped dead pages: any SSD copy is garbage

    cdef inline void device_in(self, int64_t page, int64_t k, int8_t src) noexcept nogil:
        """Pages reach the GPU: a read from the SSD or a copy from host memory."""
        if src == SSD:
            self.ssd.read(page, k, self.tb)
            self.link_bytes[DIR_TO_DEVICE][FLOW_PEER] += k * 4096
        elif src == HOST:
            self.link_bytes[DIR_TO_DEVICE][FLOW_HOST] += k * 4096

    cdef inline void device_flush(self, int64_t now) noexcept nogil:
        """A tick's transfers, one per direction and flow, go to the link."""
        cdef int d, f
        for d in range(2):
            for f in range(2):
                if self.link_bytes[d][f]:
                    self.link.submit(d, f, self.link_bytes[d][f], now)
                    self.link_bytes[d][f] = 0

    # ======================================================================
    # victim selection
    # ======================================================================
    cdef int64_t skip_intr(self, int64_t c) except -2 nogil:
        """First page at/after c (arrival order) that is not in transfer, or -1."""
        cdef int32_t i
        cdef locmap_t.iterator it
        cdef int64_t e
        while c >= 0:
            if self.gpu_intr == 0:
                return c
            it = self.lfind(c)
            if not deref(it).second.intr:
                return c
            i = self.lru_find(c)
            e = self.nodes[i].start + self.nodes[i].count
            if deref(it).second.end < e:
                c = deref(it).second.end
            else:
                i = self.nodes[i].next
                c = self.nodes[i].start if i >= 0 else -1
        return -1

    cdef inline int64_t seg_end(self, int64_t v) noexcept nogil:
        """End of the run of victims from v with one treatment (same node, same loc run)."""
        cdef int32_t i = self.lru_find(v)
        cdef int64_t e = self.nodes[i].start + self.nodes[i].count
        cdef locmap_t.iterator it
        if self.gpu_intr:
            it = self.lfind(v)
            if deref(it).second.end < e:
                e = deref(it).second.end
        return e

    cdef victim_t find_victim(self, bint is_pf) noexcept nogil:
        """Where the next victim is; the cursor moves only when the victim is taken."""
        cdef victim_t v
        cdef int64_t c
        cdef int32_t i, t
        v.found = False
        if self.eviction == EVICT_LRU:
            c = self.skip_intr(self.cursor)
            if c < 0:
                self.cursor = self.skip_intr(self.head_page())   # LRUSuggestInitialLRUBase
                c = self.skip_intr(self.cursor)
            if c < 0:
                return v
            v.page = c
            v.seglen = self.seg_end(c) - c
            v.tensor = self.nodes[self.lru_find(c)].tensor
            v.dest = HOST
            v.found = True
            return v
        # DeepUM
        if not is_pf:
            c = self.cursor
            while c >= 0:
                i = self.lru_find(c)
                if not self.in_window(self.nodes[i].tensor):
                    break
                i = self.nodes[i].next
                c = self.nodes[i].start if i >= 0 else -1
            if c < 0:
                self.cursor = -1
                return v
            self.cursor = c     # the skipped window pages stay behind the cursor
        else:
            c = self.skip_intr(self.head_page())
            if c < 0:
                return v
        t = self.nodes[self.lru_find(c)].tensor
        v.page = c
        v.seglen = self.seg_end(c) - c
        v.tensor = t
        v.dest = HOST if self.alive(t, self.cur) else NP
        v.found = True
        return v

    cdef int take_victims(self, victim_t* v, int64_t k, int8_t dest, bint is_pf,
                          int64_t appended) except -1 nogil:
        """Evict victims [v.page, v.page+k) to dest (the artifact's processEvict, k times).

        The caller has already done the scalar bookkeeping (host pages, tick counters).
        ``appended`` is the first page the same chunk appends to the list (-1: none): page
        by page, the artifact appends each fetched page right after its victim, so when
        the last victim is the list's tail the cursor lands on the chunk's first page.
        """
        cdef int64_t last = v.page + k - 1, nxt
        cdef bint requeue = self.required(v.tensor)
        cdef int q
        nxt = self.lru_next_page(last)
        if nxt < 0 and k >= 2 and appended >= 0:
            nxt = appended
        if self.replaying:
            pass
        elif self.tick_victims == 0:
            self.rec_vdest = v.dest
            self.rec_vpf = is_pf
            self.rec_vreq = requeue
        elif v.dest != self.rec_vdest or is_pf != self.rec_vpf or requeue != self.rec_vreq:
            self.rec_vdest = -2          # mixed: a bulk repeat cannot copy this tick
        if self.eviction == EVICT_LRU or not is_pf:
            self.cursor = nxt
            self.victim_src |= 1
        else:
            if self.cursor >= v.page and self.cursor <= last:
                self.cursor = nxt
            self.victim_src |= 2
        if self.replaying:
            pass
        else:
            self.record_op(OP_VICT, -1, dest, k)
            if self.n_sq_v and self.sq_vdest[self.n_sq_v - 1] == dest:
                self.sq_vk[self.n_sq_v - 1] += k
            elif self.n_sq_v == SEQ_MAX:
                self.seq_overflow = True
            else:
                self.sq_vdest[self.n_sq_v] = dest
                self.sq_vk[self.n_sq_v] = k
                self.n_sq_v += 1
        self.lassign(v.tensor, v.page, v.page + k, dest, 1 if requeue else 0)
        if requeue:
            q = Q_PF_HOST if dest == HOST else (Q_PF_SSD if dest == SSD else Q_PF_ALLOC)
            self.qpush(q, v.page, k, v.tensor, dest)
        if dest == NP:
            self.n_dropped += k
        if self.detailed:
            self.device_out(v.page, k, dest)
        if self.debug_log:
            self.log.push_back(1); self.log.push_back(self.tb); self.log.push_back(v.page)
            self.log.push_back(k); self.log.push_back(dest)
        self.lru_remove(v.page, k)
        self.gpu_free += k
        self.tick_victims += k
        v.page += k
        v.seglen -= k

    cdef inline void record_op(self, int8_t kind, int8_t q, int8_t dest, int64_t k) noexcept nogil:
        """Add k pages to the tick's total for one stream (kind, queue, destination)."""
        cdef int i
        for i in range(self.n_ops):
            if self.op_kind[i] == kind and self.op_q[i] == q and self.op_dest[i] == dest:
                self.op_k[i] += k
                return
        i = self.n_ops
        if i == OPS_MAX:
            self.irregular = True
            self.bulk_stat[B_OPS_OVERFLOW] += 1
            return
        self.op_kind[i] = kind
        self.op_q[i] = q
        self.op_dest[i] = dest
        self.op_k[i] = k
        self.n_ops += 1

    # ======================================================================
    # per-tick scalar bookkeeping (the artifact's recordFetch / recordEvict)
    # ======================================================================

    cdef inline void rec_evict(self, int8_t dest) noexcept nogil:
        if dest == SSD:
            self.out_ssd += 1
            self.out_n += 1
            if self.out_ssd == self.ssd_q:
                self.forced_evict = HOST
        elif dest == HOST:
            self.out_cpu += 1
            self.out_n += 1
            if self.out_cpu == self.host_batch or self.host_full():
                self.forced_evict = SSD

    cdef inline void rec_fetch(self, int8_t src) noexcept nogil:
        if src == SSD:
            self.in_ssd += 1
            if self.in_ssd == self.ssd_q:
                self.forced_fetch = HOST
        else:
            self.in_cpu += 1
            if self.in_cpu == self.host_batch:
                self.forced_fetch = SSD
        self.alloc_n += 1
        self.in_n += 1

    cdef inline bint room(self) noexcept nogil:
        if self.gpu_free > 0:
            return True
        if self.host_full():
            return self.out_n < self.gpu_batch and self.out_ssd < self.ssd_q
        return self.out_n < self.gpu_batch

    # ======================================================================
    # bringing pages into the GPU, a chunk at a time
    # ======================================================================
    cdef int64_t bring_in(self, int q, int64_t kmax, int kind, bint is_pf) except -2 nogil:
        """Move up to kmax pages from the front run of queue q into GPU frames.

        kind: 0 = page-fault fetch, 1 = allocation, 2 = prefetch.  Returns the pages
        moved (>= 1), 0 if the loop condition failed before the first page, or -1 if
        DeepUM found no victim (the caller stalls).  Pages are taken while every one
        of them is treated exactly as the first: same victim segment and
        destination, loop condition true, no break condition before the last one.
        """
        cdef queue_run f = self.qs[q].front()
        cdef int8_t src = f.src
        cdef int64_t k = 0, room_k
        cdef victim_t v
        cdef int8_t d0 = -2, d
        cdef bint need_victim = self.gpu_free == 0
        cdef bint pf_eff = is_pf
        if kmax > f.count:
            kmax = f.count
        if need_victim:
            if not pf_eff and self.required(f.tensor):
                pf_eff = True
            v = self.find_victim(pf_eff)
            if not v.found:
                if self.eviction == EVICT_DEEPUM and not pf_eff:
                    return -1
                with gil:
                    raise RuntimeError("no eviction candidate in GPU memory")
            if kmax > v.seglen:
                kmax = v.seglen
        elif kmax > self.gpu_free:
            kmax = self.gpu_free
        # step the scalar state page by page (cheap) to find how many pages share a treatment
        while k < kmax:
            if k > 0:
                # the caller's loop condition, re-checked for page k
                if kind == 0:
                    if not (self.in_n < self.gpu_batch and self.alloc_n < self.alloc_batch and self.room()):
                        break
                elif kind == 1:
                    if not (self.room() and self.alloc_n < self.alloc_batch):
                        break
                else:
                    if src == SSD:
                        if not (self.in_ssd < self.ssd_q and self.in_n < self.gpu_batch and self.room()):
                            break
                    elif not (self.in_cpu < self.host_batch and self.in_n < self.gpu_batch and self.room()):
                        break
            if need_victim:
                d = v.dest
                if d != NP and self.forced_evict != UNKNOWN:
                    d = self.forced_evict
                if k == 0:
                    d0 = d
                elif d != d0:
                    break
                if d == HOST:
                    self.host_used += 1
                    if self.host_used > self.host_peak:
                        self.host_peak = self.host_used
                    if self.host_used > self.host_line:
                        self.host_overflow = True
                self.rec_evict(d)
            if src == HOST:
                self.host_used -= 1
                if self.forced_evict == SSD:
                    self.forced_evict = UNKNOWN
            if kind == 1:
                self.alloc_n += 1
            else:
                self.rec_fetch(src)
            k += 1
            if kind == 0 and self.forced_fetch != UNKNOWN and self.forced_fetch != src:
                break
            if kind == 1 and src != HOST and (not need_victim or d0 == NP):
                # allocations into free frames, or over victims that are dropped (dead
                # pages leave without a transfer): nothing the loop tests changes; jump
                room_k = kmax - k
                if room_k > self.alloc_batch - self.alloc_n:
                    room_k = self.alloc_batch - self.alloc_n
                if room_k > 0:
                    self.alloc_n += room_k
                    k += room_k
                break
        if k == 0:
            return 0
        # host_used and the tick counters are final; now move the pages themselves
        if need_victim:
            self.take_victims(&v, k, d0, pf_eff, f.start)
        self.gpu_free -= k
        if src == NP:
            self.n_allocated += k
        if self.detailed:
            self.device_in(f.start, k, src)
        if self.debug_log:
            self.log.push_back(2); self.log.push_back(self.tb); self.log.push_back(f.start)
            self.log.push_back(k); self.log.push_back(src)
        self.lassign(f.tensor, f.start, f.start + k, GPU, 0)
        self.lru_append(f.start, k, f.tensor)
        self.qpop(q, k)
        self.consumed[q] += k
        self.record_op(OP_IN, q, src, k)
        if self.n_sq_in and self.sq_inq[self.n_sq_in - 1] == q:
            self.sq_ink[self.n_sq_in - 1] += k
        elif self.n_sq_in == SEQ_MAX:
            self.seq_overflow = True
        else:
            self.sq_inq[self.n_sq_in] = q
            self.sq_ink[self.n_sq_in] = k
            self.n_sq_in += 1
        if self.rec_in_req == -1:
            self.rec_in_req = self.required(f.tensor)
        elif self.rec_in_req != self.required(f.tensor):
            self.rec_in_req = -2
        return k

    # ======================================================================
    # the batcher tick
    # ======================================================================
    cdef int evict_queue(self, int q, int8_t default_dest) except -1 nogil:
        """Pre-evictions from queue q (the artifact's processPreevict, one queue)."""
        cdef queue_run f
        cdef int8_t d
        cdef int64_t k, kmax, n
        cdef bint requeue
        cdef int qq
        while self.qlen[q]:
            if q == Q_EV_SSD:
                if not (self.out_ssd < self.ssd_q and self.out_n < self.gpu_batch):
                    break
            elif not (((self.host_full() and self.out_ssd < self.ssd_q)
                       or (not self.host_full() and self.out_cpu < self.host_batch))
                      and self.out_n < self.gpu_batch):
                break
            f = self.qs[q].front()
            d = default_dest if self.forced_evict == UNKNOWN else <int8_t>self.forced_evict
            # how many pages go out with this destination before a quota or the host line flips it
            kmax = f.count
            if d == SSD:
                n = self.ssd_q - self.out_ssd
            else:
                n = self.host_batch - self.out_cpu
                if self.host_line - self.host_used < n:
                    n = self.host_line - self.host_used
                if n <= 0:
                    n = 1
            if kmax > n:
                kmax = n
            if kmax > self.gpu_batch - self.out_n:
                kmax = self.gpu_batch - self.out_n
            k = 0
            while k < kmax:
                if k > 0:
                    if q == Q_EV_SSD:
                        if not (self.out_ssd < self.ssd_q and self.out_n < self.gpu_batch):
                            break
                    elif not (((self.host_full() and self.out_ssd < self.ssd_q)
                               or (not self.host_full() and self.out_cpu < self.host_batch))
                              and self.out_n < self.gpu_batch):
                        break
                    if (default_dest if self.forced_evict == UNKNOWN else self.forced_evict) != d:
                        break
                if d == HOST:
                    self.host_used += 1
                    if self.host_used > self.host_peak:
                        self.host_peak = self.host_used
                self.rec_evict(d)
                k += 1
            if d == HOST and self.host_used > self.host_line:
                self.host_overflow = True
            requeue = self.required(f.tensor)
            if self.detailed:
                self.device_out(f.start, k, d)
            self.lassign(f.tensor, f.start, f.start + k, d, 1 if requeue else 0)
            if requeue:
                qq = Q_PF_HOST if d == HOST else (Q_PF_SSD if d == SSD else Q_PF_ALLOC)
                self.qpush(qq, f.start, k, f.tensor, d)
                self.irregular = True
                self.bulk_stat[B_PREEVICT_REQUEUE] += 1
            self.lru_remove(f.start, k)
            self.gpu_free += k
            self.qpop(q, k)
            self.consumed[q] += k
            self.record_op(OP_PREEV, q, d, k)
            if self.n_sq_pre and self.sq_preq[self.n_sq_pre - 1] == q and self.sq_predest[self.n_sq_pre - 1] == d:
                self.sq_prek[self.n_sq_pre - 1] += k
            elif self.n_sq_pre == SEQ_MAX:
                self.seq_overflow = True
            else:
                self.sq_preq[self.n_sq_pre] = q
                self.sq_predest[self.n_sq_pre] = d
                self.sq_prek[self.n_sq_pre] = k
                self.n_sq_pre += 1
        return 0

    cdef int pf_fetch(self, int q, int8_t src) except -1 nogil:
        cdef int64_t r
        if self.detailed and src == SSD and self.ssd_q == 0:
            return 0                        # detailed preset: the SSD is throttled this tick
        while (self.in_n < self.gpu_batch and self.alloc_n < self.alloc_batch and self.room()
               and self.qlen[q]):
            r = self.bring_in(q, self.gpu_batch, 0, True)
            if r <= 0:
                with gil:
                    raise RuntimeError("page-fault fetch found no frame")
            if self.forced_fetch != UNKNOWN and self.forced_fetch != src:
                break
        return 0

    cdef int alloc_queue(self, int q, bint is_pf) except -1 nogil:
        cdef int64_t r
        while self.room() and self.alloc_n < self.alloc_batch and self.qlen[q]:
            r = self.bring_in(q, self.alloc_batch, 1, is_pf)
            if r < 0:
                self.stalled = True
                break
            if r == 0:
                break
        return 0

    cdef int prefetch(self) except -1 nogil:
        cdef int64_t r
        cdef queue_run f
        while (self.in_ssd < self.ssd_q and self.in_n < self.gpu_batch and self.room()
               and self.qlen[Q_PRE_SSD]):
            f = self.qs[Q_PRE_SSD].front()
            if f.src == SSD:
                r = self.bring_in(Q_PRE_SSD, self.gpu_batch, 2, False)
                if r < 0:
                    self.stalled = True
                    return 0
            else:  # the page is on the host now: hand it to the host prefetch queue
                self.qpop(Q_PRE_SSD, f.count)
                self.qpush(Q_PRE_HOST, f.start, f.count, f.tensor, f.src)
                self.irregular = True
                self.bulk_stat[B_REDIRECT] += 1
        while (self.in_cpu < self.host_batch and self.in_n < self.gpu_batch and self.room()
               and self.qlen[Q_PRE_HOST]):
            f = self.qs[Q_PRE_HOST].front()
            if f.src == HOST:
                r = self.bring_in(Q_PRE_HOST, self.gpu_batch, 2, False)
                if r < 0:
                    self.stalled = True
                    return 0
            else:
                self.qpop(Q_PRE_HOST, f.count)
                self.qpush(Q_PRE_SSD, f.start, f.count, f.tensor, f.src)
                self.irregular = True
                self.bulk_stat[B_REDIRECT] += 1
        return 0

    cdef int64_t required_intr(self) noexcept nogil:
        cdef int64_t s = 0, j
        cdef int64_t k = self.cur
        for j in range(self.in_off[k], self.in_off[k + 1]):
            s += self.cnt_intr[self.in_t[j]]
        for j in range(self.out_off[k], self.out_off[k + 1]):
            s += self.cnt_intr[self.out_t[j]]
        return s

    cdef int do_tick(self) except -1 nogil:
        """One batcher tick at time tb (the artifact's BatcherEvent::execute)."""
        cdef int i
        cdef int64_t now = self.tb
        cdef int64_t* st
        self.alloc_n = self.in_n = self.out_n = 0
        self.in_ssd = self.in_cpu = self.out_ssd = self.out_cpu = 0
        self.forced_fetch = UNKNOWN
        self.forced_evict = UNKNOWN
        self.host_peak = self.host_used
        self.irregular = False
        self.stalled = False
        self.tick_victims = 0
        self.victim_src = 0
        self.n_ops = 0
        self.n_sq_v = self.n_sq_in = self.n_sq_pre = 0
        self.seq_overflow = False
        self.rec_in_req = -1
        self.tick_host0 = self.host_used
        self.tick_free0 = self.gpu_free
        for i in range(NQ):
            self.consumed[i] = 0
            self.qlen0[i] = self.qlen[i]
        self.ssd_q = self.ssd_batch
        if self.detailed and self.ssd.next_issue_time(now) > now + self.tick:
            self.ssd_q = 0                 # the SSD cannot accept a command in this slot
            self.ssd_throttled_ticks += 1
        if not self.all_queues_empty():
            if self.host_full():
                self.forced_evict = SSD
            self.evict_queue(Q_EV_SSD, SSD)
            self.evict_queue(Q_EV_HOST, HOST)
            self.pf_fetch(Q_PF_SSD, SSD)
            self.pf_fetch(Q_PF_HOST, HOST)
            self.alloc_queue(Q_PF_ALLOC, True)
            self.prefetch()
            self.alloc_queue(Q_PREALLOC, False)
            if (self.eviction == EVICT_DEEPUM and self.has_resched and not self.started
                    and self.in_n + self.out_n == 0 and self.required_intr() > 0):
                self.irregular = True
                self.bulk_stat[B_LOCKUP] += 1
                self.pf_fetch(Q_PRE_SSD, SSD)
                self.pf_fetch(Q_PRE_HOST, HOST)
                self.alloc_queue(Q_PREALLOC, True)
            if not self.transferring:
                self.bounds.push_back(now)
                self.bounds.push_back(1)
                self.transferring = True
        elif self.transferring:
            self.bounds.push_back(now)
            self.bounds.push_back(0)
            self.transferring = False
        if self.detailed:
            self.device_flush(now)
        if self.in_n or self.out_n:
            st = self.pcie + 5 * self.iteration
            st[0] += self.alloc_n
            st[1] += self.in_ssd
            st[2] += self.in_cpu
            st[3] += self.out_ssd
            st[4] += self.out_cpu
        # restart of a waiting kernel once everything it needs has arrived
        if self.has_resched and self.pf_queues_empty() and self.required_intr() == 0:
            self.irregular = True
            self.bulk_stat[B_RESTART] += 1
            self.events.push(now, EV_PRIORITY, EV_KERNEL, self.cur)
            self.started = True
        # the next tick is scheduled by _run, after any bulk repeat moved it
        self.tb = now + self.tick
        self.n_ticks_detailed += 1
        return 0

    # ======================================================================
    # kernel begin
    # ======================================================================
    cdef int64_t idle_runs(self, int32_t t, vector[int64_t]& segs) except -1 nogil:
        """(start, end, tier) triples of t's runs not in transfer; returns its pages in transfer.

        Collected first, because the caller then reassigns those runs (which edits the map).
        """
        cdef locmap_t.iterator it = self.lfind(self.t_first[t])
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

    cdef int apply_hint(self, int32_t t, int8_t action) except -1 nogil:
        """The artifact's guidedTransfer: pages in transfer are left alone."""
        cdef int64_t s, e
        cdef int8_t l
        cdef vector[int64_t] segs
        self.idle_runs(t, segs)
        cdef size_t i = 0
        while i < segs.size():
            s = segs[i]
            e = segs[i + 1]
            l = <int8_t>segs[i + 2]
            i += 3
            if action == H_TO_GPU:
                if l == NP:
                    self.qpush(Q_PREALLOC, s, e - s, t, NP)
                elif l == SSD:
                    self.qpush(Q_PRE_SSD, s, e - s, t, SSD)
                elif l == HOST:
                    self.qpush(Q_PRE_HOST, s, e - s, t, HOST)
                else:
                    continue
                self.lassign(t, s, e, l, 1)
            elif action == H_TO_SSD or action == H_TO_HOST:
                if l == GPU:
                    self.qpush(Q_EV_SSD if action == H_TO_SSD else Q_EV_HOST, s, e - s, t, GPU)
                    self.lassign(t, s, e, GPU, 1)
            elif action == H_FREE:
                if l == GPU:
                    self.lru_remove(s, e - s)
                    self.gpu_free += e - s
                    self.n_freed_gpu += e - s
                elif l == HOST:
                    self.host_used -= e - s
                    self.n_freed_host += e - s
                if self.detailed:
                    self.ssd.trim(s, e - s)    # the tensor is dead: its SSD copy is garbage
                self.lassign(t, s, e, NP, 0)
        return 0

    cdef int fault_tensor(self, int32_t t, int64_t* info) except -1 nogil:
        """Queue every missing page of t; info: total, np, ssd, host, in_transfer."""
        cdef int64_t s, e
        cdef int8_t l
        cdef vector[int64_t] segs
        info[0] += self.t_np[t]
        info[4] += self.idle_runs(t, segs)
        cdef size_t i = 0
        while i < segs.size():
            s = segs[i]
            e = segs[i + 1]
            l = <int8_t>segs[i + 2]
            i += 3
            if l == GPU:
                continue
            if l == NP:
                info[1] += e - s
                self.qpush(Q_PF_ALLOC, s, e - s, t, NP)
            elif l == SSD:
                info[2] += e - s
                self.qpush(Q_PF_SSD, s, e - s, t, SSD)
            else:
                info[3] += e - s
                self.qpush(Q_PF_HOST, s, e - s, t, HOST)
            self.lassign(t, s, e, l, 1)
        return 0

    cdef int64_t fault_cycles(self, int64_t k, int64_t* fin, int64_t* fout) noexcept nogil:
        """The artifact's performance_model (see reference.fault_model_cycles)."""
        cdef int64_t f = self.freq_hz
        cdef double T00 = <double>((self.k_t00[k] // f) * 1000)
        cdef double T10 = <double>((self.k_t10[k] // f) * 1000)
        cdef double T11 = <double>((self.k_t11[k] // f) * 1000)
        cdef int64_t in_f = fin[1] + fin[2] + fin[3], out_f = fout[1] + fout[2] + fout[3]
        cdef double r_in = (<double>in_f) / fin[0] if fin[0] else 0.0
        cdef double r_out = (<double>out_f) / fout[0] if fout[0] else 0.0
        cdef double rs_in = (<double>fin[2]) / in_f if in_f else 0.0
        cdef double rs_out = (<double>fout[2]) / out_f if out_f else 0.0
        cdef double s_in = <double>(fin[0] * 4096), s_out = <double>(fout[0] * 4096)
        cdef double bw_cpu_in, bw_cpu_out, bw_ssd_in, bw_ssd_out, cap, ssd_in_t, ssd_out_t, cpu_t, dms
        if T00 <= T11:
            T00 = T11
        if T10 < T11:
            T10 = T11
        if T10 > T00:
            T10 = T00
        bw_cpu_in = 1063004400.0 if T00 == T10 else s_in / (T00 - T10)
        bw_cpu_out = 1063004400.0 if T10 == T11 else s_out / (T10 - T11)
        bw_ssd_in = bw_cpu_in * self.l_sys / (self.l_sys + self.l_ssd)
        bw_ssd_out = bw_cpu_out * self.l_sys / (self.l_sys + self.l_ssd)
        if bw_ssd_in > self.bw_ssd:
            bw_ssd_in = self.bw_ssd
        if bw_ssd_out > self.bw_ssd:
            bw_ssd_out = self.bw_ssd
        if rs_in == 0:
            bw_ssd_in = 0
        if rs_out == 0:
            bw_ssd_out = 0
        cap = self.bw_pcie - (bw_ssd_in if bw_ssd_in > bw_ssd_out else bw_ssd_out)
        if bw_cpu_in > cap:
            bw_cpu_in = cap
        if bw_cpu_out > cap:
            bw_cpu_out = cap
        ssd_in_t = 0.0 if rs_in == 0 else r_in * rs_in * s_in / bw_ssd_in
        ssd_out_t = 0.0 if rs_out == 0 else r_out * rs_out * s_out / bw_ssd_out
        # When SSD faults take the whole link (ssd.bandwidth_GBps = link.bandwidth_GBps), cap is 0 and
        # the host terms divide by 0: +inf when host/unallocated pages fault, NaN (0/0) when none do.
        cpu_t = (ieee_div(r_in * (1 - rs_in) * s_in, bw_cpu_in)
                 + ieee_div(r_out * (1 - rs_out) * s_out, bw_cpu_out))
        dms = ssd_in_t + ssd_out_t
        if cpu_t > dms:         # std::max(ssd, cpu): a NaN cpu_t keeps the SSD time
            dms = cpu_t
        return artifact_ulong_cycles(dms / 1e3 * f)

    cdef int kernel_begin(self) except -1 nogil:
        """KernelBeginEvent at (tk, kernel k_kernel); returns 1 when the run is over."""
        cdef int64_t now = self.tk, k, j, m, off, kk
        cdef int32_t t
        cdef bint arrived
        cdef int64_t fin[5]
        cdef int64_t fout[5]
        cdef int64_t end
        if self.k_kernel != self.cur:
            self.cur += 1
            if self.cur == self.K:
                self.cur = 0
                self.iteration += 1
        if self.iteration >= self.n_iter:
            return 1
        k = self.cur
        self.epoch += 1
        for j in range(self.in_off[k], self.in_off[k + 1]):
            self.req_mark[self.in_t[j]] = self.epoch
        for j in range(self.out_off[k], self.out_off[k + 1]):
            self.req_mark[self.out_t[j]] = self.epoch
        if self.eviction == EVICT_DEEPUM:
            for off in range(self.window):
                kk = (k + off) % self.K
                for j in range(self.in_off[kk], self.in_off[kk + 1]):
                    self.win_mark[self.in_t[j]] = self.epoch
                for j in range(self.out_off[kk], self.out_off[kk + 1]):
                    self.win_mark[self.out_t[j]] = self.epoch
            self.cursor = self.head_page()
            while self.cursor >= 0 and self.in_window(self.nodes[self.lru_find(self.cursor)].tensor):
                m = self.lru_find(self.cursor)
                m = self.nodes[m].next
                self.cursor = self.nodes[m].start if m >= 0 else -1
        else:
            self.cursor = self.skip_intr(self.head_page())
        if self.apply_hints and self.n_hints:
            for m in range(self.n_hints):
                if self.h_kernel[self.hint_idx] % self.K != k:
                    break
                self.apply_hint(self.h_tensor[self.hint_idx], self.h_action[self.hint_idx])
                self.hint_idx += 1
                if self.hint_idx == self.n_hints:
                    self.hint_idx = 0
        arrived = self.pf_queues_empty()
        if arrived:
            for j in range(self.in_off[k], self.in_off[k + 1]):
                t = self.in_t[j]
                if self.cnt_ready[t] != self.t_np[t]:
                    arrived = False
                    break
        if arrived:
            for j in range(self.out_off[k], self.out_off[k + 1]):
                t = self.out_t[j]
                if self.cnt_ready[t] != self.t_np[t]:
                    arrived = False
                    break
        if not arrived:
            for j in range(5):
                fin[j] = 0
                fout[j] = 0
            for j in range(self.in_off[k], self.in_off[k + 1]):
                self.fault_tensor(self.in_t[j], fin)
            for j in range(self.out_off[k], self.out_off[k + 1]):
                self.fault_tensor(self.out_t[j], fout)
            if not self.has_resched:
                self.has_resched = True
                self.started = False
                self.rs_first = now
                self.rs_pf = self.k_t11[k] + self.fault_cycles(k, fin, fout)
                self.acc_intr = self.acc_cpu = self.acc_ssd = self.acc_un = 0
            elif self.started:
                with gil:
                    raise RuntimeError(f"kernel {k} restarted but pages are missing")
            self.acc_intr += fin[4] + fout[4]
            self.acc_cpu += fin[3] + fout[3]
            self.acc_ssd += fin[2] + fout[2]
            self.acc_un += fin[1] + fout[1]
            return 0
        if self.has_resched:
            end = self.rs_first + self.rs_pf
            if end < now:
                end = now
            self.kstats.push_back(self.iteration)
            self.kstats.push_back(k)
            self.kstats.push_back(self.rs_first)
            self.kstats.push_back(end)
            self.kstats.push_back(self.acc_intr)
            self.kstats.push_back(self.acc_cpu)
            self.kstats.push_back(self.acc_ssd)
            self.kstats.push_back(self.acc_un)
            self.has_resched = False
        else:
            end = now + self.k_t11[k]
            self.kstats.push_back(self.iteration)
            self.kstats.push_back(k)
            self.kstats.push_back(now)
            self.kstats.push_back(end)
            self.kstats.push_back(0)
            self.kstats.push_back(0)
            self.kstats.push_back(0)
            self.kstats.push_back(0)
        self.kstats.push_back(self.host_used)
        self.kstats.push_back(self.gpu_pages - self.gpu_free)
        self.events.push(end, EV_PRIORITY, EV_KERNEL, (k + 1) % self.K)
        return 0

    # ======================================================================
    # bulk repeats of identical ticks
    # ======================================================================
    cdef int64_t _queue_span(self, int q, int64_t need, int8_t src, bint check_req, bint req) noexcept nogil:
        """Pages at the front of queue q (up to need) that share the front's treatment."""
        cdef int64_t got = 0
        cdef size_t j = 0
        cdef queue_run* r
        while j < self.qs[q].size() and got < need:
            r = &self.qs[q][j]
            if r.src != src:
                break
            if check_req and self.required(r.tensor) != req:
                break
            got += r.count
            j += 1
        return got if got < need else need

    cdef int64_t _victim_span(self, int64_t start, int64_t need) noexcept nogil:
        """Victims available from page `start` on (arrival order) with the recorded treatment."""
        cdef int64_t got = 0, c = start
        cdef int32_t i, t
        if c < 0:
            return 0
        i = self.lru_find(c)
        while i >= 0 and got < need:
            t = self.nodes[i].tensor
            if self.required(t) != self.rec_vreq:
                break
            if self.eviction == EVICT_DEEPUM:
                if not self.rec_vpf and self.in_window(t):
                    break
                if (HOST if self.alive(t, self.cur) else NP) != self.rec_vdest:
                    break
            got += self.nodes[i].start + self.nodes[i].count - c
            i = self.nodes[i].next
            if i >= 0:
                c = self.nodes[i].start
        return got if got < need else need

    cdef int64_t _bulk_before_ready(self, int q, int64_t n) noexcept nogil:
        """Ticks (<= n) after which the waiting kernel still has a page in transfer."""
        cdef int64_t R = self.required_intr(), c = self.consumed[q], seen = 0, req = 0, take
        cdef size_t j = 0
        cdef queue_run* r
        if R == 0 or c == 0:
            return 0
        # walk the queue in steps of whole ticks (c pages each)
        while j < self.qs[q].size() and seen < n * c:
            r = &self.qs[q][j]
            take = r.count
            if seen + take > n * c:
                take = n * c - seen
            if self.required(r.tensor):
                if req + take >= R:
                    # the tick that brings in the R-th required page is the last candidate
                    return (seen + (R - req) - 1) // c
                req += take
            seen += take
            j += 1
        return n

    cdef int _try_bulk(self) except -1 nogil:
        """Repeat the tick just done as many times as provably identical, in one pass.

        A tick is a deterministic function of its start state: the scalar state (host
        pages, free frames, quotas, which queues are empty) and the treatment of the
        pages at the queues' fronts and at the victim position.  The tick just done
        recorded what it did: per stream totals (``op_*``) and, in order, which queues
        brought how many pages in (``sq_in*``) and how many victims went where
        (``sq_v*``).  If the same start state recurs (or stays clear of every
        threshold) and the next pages are treated alike, the next n ticks do exactly
        the same; their effect is applied here: all at once when each kind of
        operation has a single stream, tick by tick otherwise (the arrival order of
        pages inside a tick interleaves the streams).
        """
        cdef int64_t n = BIG, m, d_free, d_host, c, span, need, V = self.tick_victims, kt
        cdef int i, q, q_in = -1, n_in = 0, cycle = -1
        cdef int8_t d_vict = -1
        cdef bint pf_nonempty = False, in_pf, single
        if self.victim_src == 3 or self.gpu_intr or (V and self.rec_vdest == -2) or self.seq_overflow:
            self.bulk_stat[B_MIXED_VICTIMS] += 1
            return 0
        if self.stalled and (self.victim_src & 1 or self.cursor >= 0):
            # the stall recurs identically only if it happened with the cursor already at the end
            self.bulk_stat[B_STALL_MOVES] += 1
            return 0
        if self.n_ops == 0 and not self.stalled:
            self.bulk_stat[B_NOTHING] += 1
            return 0
        for i in range(self.n_ops):
            if self.op_kind[i] == OP_IN:
                n_in += 1
                q_in = self.op_q[i]
            elif self.op_kind[i] == OP_VICT:
                d_vict = self.op_dest[i] if d_vict == -1 or d_vict == self.op_dest[i] else -3
        single = n_in <= 1 and d_vict != -3 and self.n_sq_pre <= 1
        if V and self.rec_vreq:
            # re-queued victims must join a queue whose treatment they cannot change:
            # the queue being drained, or one that stays non-empty and untouched
            if d_vict == -3:
                self.bulk_stat[B_REQUEUE] += 1
                return 0
            q = Q_PF_HOST if d_vict == HOST else (Q_PF_SSD if d_vict == SSD else Q_PF_ALLOC)
            if single and q == q_in and V == self.consumed[q_in]:
                # it gets back per tick exactly what it gives: its pages form one stream
                cycle = q
            elif not (q == q_in and single) and not (self.qlen0[q] > 0 and self.consumed[q] == 0):
                self.bulk_stat[B_REQUEUE] += 1
                return 0
        # time: only ticks strictly before the next kernel event
        kt = self.next_kernel_time()
        if kt >= 0:
            if self.tb >= kt:
                self.bulk_stat[B_KERNEL_NEXT] += 1
                return 0
            m = (kt - self.tb + self.tick - 1) // self.tick
            if m < n:
                n = m
        # queues: every consumed queue stays non-empty, with pages treated alike
        for q in range(NQ):
            c = self.consumed[q]
            if c == 0 or q == cycle:
                continue
            if self.qlen[q] <= c:
                self.bulk_stat[B_QUEUE_DRAINS] += 1
                return 0
            m = (self.qlen[q] - 1) // c
            if m < n:
                n = m
            need = n * c + 1
            if q >= Q_EV_SSD:
                span = self._queue_span(q, need, GPU, True, False)   # a required page would be re-queued
            else:
                in_pf = q == Q_PF_SSD or q == Q_PF_HOST or q == Q_PF_ALLOC
                if self.eviction == EVICT_DEEPUM and not in_pf and self.rec_in_req == -2:
                    self.bulk_stat[B_MIXED_PAGES] += 1     # the running kernel's pages and others: victims differ
                    return 0
                span = self._queue_span(q, need, self.qs[q].front().src,
                                        self.eviction == EVICT_DEEPUM and not in_pf, self.rec_in_req == 1)
            m = (span - 1) // c
            if m < n:
                n = m
        # a waiting kernel must not become ready inside the bulk
        if self.has_resched:
            for q in range(3):
                if self.qlen[q] and (self.consumed[q] == 0 or q == cycle or self.qlen[q] > n * self.consumed[q]):
                    pf_nonempty = True
            if not pf_nonempty and n_in == 1:
                # it waits for pages still queued for prefetch: stop before the last of them lands
                m = self._bulk_before_ready(q_in, n)
                if m < n:
                    n = m
                pf_nonempty = n >= 1
            if not pf_nonempty:
                self.bulk_stat[B_KERNEL_READY] += 1
                return 0
        # free frames and host pages
        d_free = self.gpu_free - self.tick_free0
        d_host = self.host_used - self.tick_host0
        if d_free < 0:
            if V > 0 or self.gpu_free < 1:
                self.bulk_stat[B_FRAMES_RUN_OUT] += 1
                return 0
            m = (self.gpu_free - 1) // (-d_free)
            if m < n:
                n = m
        elif d_free > 0:
            if n_in:
                self.bulk_stat[B_FRAMES_FREED_IN] += 1
                return 0
            for q in range(NQ):
                if self.consumed[q] == 0 and self.qlen[q]:
                    self.bulk_stat[B_FRAMES_FREED_BLOCKED] += 1
                    return 0
        if d_host != 0:
            if self.tick_host0 >= self.host_line or self.host_peak >= self.host_line:
                self.bulk_stat[B_HOST_LINE] += 1
                return 0
            if d_host > 0:
                m = (self.host_line - 1 - self.host_peak) // d_host
                if m < n:
                    n = m
        # victims
        if V > 0:
            need = n * V + 1 if n < HUGE_N else BIG
            if self.rec_vpf and self.eviction == EVICT_DEEPUM:
                span = self._victim_span(self.skip_intr(self.head_page()), need)
            else:
                span = self._victim_span(self.cursor, need)
            m = (span - 1) // V if span > 0 else 0
            if m < n:
                n = m
        if n < 1 or n >= HUGE_N:
            self.bulk_stat[B_LESS_THAN_ONE] += 1
            return 0
        if self.debug_log:
            self.log.push_back(3); self.log.push_back(self.tb); self.log.push_back(n)
            self.log.push_back(q_in * 1000 + (self.consumed[q_in] if q_in >= 0 else 0))
            self.log.push_back(V * 10 + self.stalled)
        if single:
            self._apply_bulk(n, 1)
            self.bulk_stat[B_MERGED] += 1
        else:
            self._apply_bulk(1, n)
            self.bulk_stat[B_TICKWISE] += 1
        return 0

    cdef int _apply_bulk(self, int64_t scale, int64_t repeat) except -1 nogil:
        """Apply the recorded tick `repeat` times, each with its page counts times `scale`."""
        cdef int64_t left, k, r, t
        cdef int i
        cdef int8_t d
        cdef victim_t v
        cdef queue_run f
        cdef int64_t* st
        self.replaying = True
        for r in range(repeat):
            # victims, in their recorded order and destinations
            for i in range(self.n_sq_v):
                left = scale * self.sq_vk[i]
                d = self.sq_vdest[i]
                while left > 0:
                    v = self.find_victim(self.rec_vpf)
                    if not v.found or v.seglen <= 0:
                        with gil:
                            raise RuntimeError(f"internal: bulk repeat ran out of victims ({self._state()})")
                    k = v.seglen if v.seglen < left else left
                    if d == HOST:
                        self.host_used += k
                    self.take_victims(&v, k, d, self.rec_vpf, -1)
                    left -= k
            # pages brought in, queue by queue in their recorded order
            for i in range(self.n_sq_in):
                left = scale * self.sq_ink[i]
                while left > 0:
                    if self.qs[self.sq_inq[i]].empty():
                        with gil:
                            raise RuntimeError(f"internal: bulk repeat emptied queue {self.sq_inq[i]} ({self._state()})")
                    f = self.qs[self.sq_inq[i]].front()
                    k = f.count if f.count < left else left
                    if f.src == HOST:
                        self.host_used -= k
                    elif f.src == NP:
                        self.n_allocated += k
                    self.gpu_free -= k
                    if self.debug_log:
                        self.log.push_back(2); self.log.push_back(self.tb); self.log.push_back(f.start)
                        self.log.push_back(k); self.log.push_back(f.src)
                    self.lassign(f.tensor, f.start, f.start + k, GPU, 0)
                    self.lru_append(f.start, k, f.tensor)
                    self.qpop(self.sq_inq[i], k)
                    left -= k
            # pre-evictions
            for i in range(self.n_sq_pre):
                left = scale * self.sq_prek[i]
                d = self.sq_predest[i]
                while left > 0:
                    if self.qs[self.sq_preq[i]].empty():
                        with gil:
                            raise RuntimeError(f"internal: bulk repeat emptied queue {self.sq_preq[i]} ({self._state()})")
                    f = self.qs[self.sq_preq[i]].front()
                    k = f.count if f.count < left else left
                    if d == HOST:
                        self.host_used += k
                    self.lassign(f.tensor, f.start, f.start + k, d, 0)
                    self.lru_remove(f.start, k)
                    self.gpu_free += k
                    self.qpop(self.sq_preq[i], k)
                    left -= k
        self.replaying = False
        t = scale * repeat
        if self.in_n or self.out_n:
            st = self.pcie + 5 * self.iteration
            st[0] += t * self.alloc_n
            st[1] += t * self.in_ssd
            st[2] += t * self.in_cpu
            st[3] += t * self.out_ssd
            st[4] += t * self.out_cpu
        self.tb += t * self.tick
        self.n_ticks_bulk += t
        return 0

    # ======================================================================
    # main loop
    # ======================================================================
    cdef int _skip_idle(self) except -1 nogil:
        """All queues are empty and nothing waits: jump to the first tick after the next kernel event."""
        cdef int64_t m, kt = self.next_kernel_time()
        if kt < 0 or not self.all_queues_empty() or self.has_resched:
            return 0
        if self.tb >= kt:
            return 0
        m = (kt - self.tb + self.tick - 1) // self.tick   # ticks strictly before kt
        # those ticks are idle; the last of them schedules the tick at or after kt
        self.tb += m * self.tick
        self.n_ticks_idle += m
        return 0

    cdef inline int64_t next_kernel_time(self) noexcept nogil:
        """Cycle of the pending kernel-begin event, or -1.  Called between a tick's
        pop and its reschedule, when the queue holds kernel events only."""
        if self.events.empty():
            return -1
        return self.events.top().time

    cdef int _run(self) except -1 nogil:
        cdef g10_event ev
        self.events.clear()
        self.events.push(0, EV_PRIORITY, EV_KERNEL, 0)
        self.events.push(0, EV_PRIORITY, EV_TICK, 0)
        while not self.events.empty():
            ev = self.events.pop()
            if ev.kind == EV_KERNEL:
                self.tk = ev.time
                self.k_kernel = ev.arg
                if self.kernel_begin():
                    break
            else:
                self.tb = ev.time
                self.do_tick()
                if not self.transferring:
                    self._skip_idle()
                elif self.bulk_enabled:
                    if self.irregular:
                        self.bulk_stat[B_IRREGULAR] += 1
                    else:
                        self._try_bulk()
                if self.n_ticks_detailed + self.n_ticks_bulk > self.max_ticks:
                    with gil:
                        raise RuntimeError(self._state())
                self.events.push(self.tb, EV_PRIORITY, EV_TICK, 0)
        return 0

    def _state(self):
        return (f"t={self.tb} kernel={self.cur} iter={self.iteration} resched={self.has_resched} "
                f"started={self.started} pending_events={self.events.size()} next_kernel={self.next_kernel_time()} "
                f"queues={[self.qlen[i] for i in range(NQ)]} gpu_free={self.gpu_free} "
                f"host={self.host_used}/{self.host_line} gpu_intr={self.gpu_intr} req_intr={self.required_intr()}")

    def run(self):
        with nogil:
            self._run()
        ks = np.array(self.kstats, dtype=np.int64).reshape(-1, KS_COLS)
        bd = np.array(self.bounds, dtype=np.int64).reshape(-1, 2)
        return {
            "kernels": ks,
            "boundaries": bd,
            "pcie": self._pcie_arr[: self.n_iter].copy(),
            "host_overflow": bool(self.host_overflow),
            "log": np.array(self.log, dtype=np.int64).reshape(-1, 5),
            "bulk": {BULK_STAT_NAMES[i]: self.bulk_stat[i] for i in range(B_COUNT) if self.bulk_stat[i]},
            "ssd_throttled_ticks": self.ssd_throttled_ticks,
            "end_cycle": self.tk,
            "events": {"pushed": self.events.pushed(), "popped": self.events.popped(),
                       "max_pending": self.events.max_size()},
            "ticks": {"detailed": self.n_ticks_detailed, "bulk": self.n_ticks_bulk,
                      "idle": self.n_ticks_idle},
            "final": {"gpu_free": self.gpu_free, "host_used": self.host_used,
                      "allocated_pages": self.n_allocated, "dropped_pages": self.n_dropped,
                      "freed_gpu_pages": self.n_freed_gpu, "freed_host_pages": self.n_freed_host,
                      "loc_runs": self.loc.size(), "lru_nodes": self.nodes.size() - self.free_nodes.size()},
        }

    def dump(self):
        """Location runs, queue runs and the GPU page list, for tests and debugging."""
        runs = []
        cdef locmap_t.iterator it = self.loc.begin()
        while it != self.loc.end():
            runs.append((deref(it).first, deref(it).second.end, deref(it).second.loc, deref(it).second.intr))
            inc(it)
        queues = []
        cdef size_t j
        for q in range(NQ):
            queues.append([(self.qs[q][j].start, self.qs[q][j].count, self.qs[q][j].tensor, self.qs[q][j].src)
                           for j in range(self.qs[q].size())])
        lru = []
        cdef int32_t i = self.head
        while i >= 0:
            lru.append((self.nodes[i].start, self.nodes[i].count, self.nodes[i].tensor))
            i = self.nodes[i].next
        return {"runs": runs, "queues": queues, "lru": lru, "cursor": self.cursor,
                "gpu_free": self.gpu_free, "host_used": self.host_used}

    def debug_rows(self):
        return np.array(self.log, dtype=np.int64).reshape(-1, 5)

    def tensor_counts(self):
        """(ready pages, in-transfer pages) per tensor, for invariant tests."""
        return self._keep["cnt_ready"].copy(), self._keep["cnt_intr"].copy()
