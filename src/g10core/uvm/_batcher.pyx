# cython: language_level=3
"""The transfer batcher: queues of page runs and the slot that serves them.

A slot (the published simulator's batcher tick) fires every ``tick`` cycles whether or
not there is work.  Each slot moves at most ``gpu_batch`` pages into and as many out of
the GPU; SSD pages are capped at ``ssd_batch`` per direction, host pages at
``host_batch``, frames given at ``alloc_batch``.  Order inside a slot: pre-evictions
(SSD, then host), fault fetches (SSD, then host), fault allocations, prefetches (SSD,
then host), pre-allocations.  A page moved in a slot is there at once.  When the GPU is
full, the evictor names victims; they go to their natural destination unless a spent
quota or the host line forces the other tier.

Work is done in chunks of pages that are provably treated alike; the per-page scalar
bookkeeping (quotas, the host-full flag, the forced source/destination) is stepped page
by page, but only inside a slot (a few tens of pages).  Identical consecutive slots are
repeated in bulk (``try_bulk``): the slot just done recorded what it did, and if the same
start state recurs and the next pages are treated alike, the next n slots do exactly the
same; their effect is applied at once (or slot by slot when streams interleave).  Every
rule mirrors ``testing/reference.py``, the page-by-page specification; tests require identical
results.

Memory advice (issue 37; exact quotas only, the ``default`` preset): a per-tensor byte of advice
bits.  ``prefer_host`` / ``accessed_by`` tensors' host pages are not queued as faults
(``kernel_check`` counts them at a kernel's first attempt, ``ready`` accepts them) and the kernel
reads them over the link (``kernel_runs`` adds their time and books it as a debt on the host
path's budget; the kernel's writes collapse read duplicates); an unwritten ``read_mostly`` tensor's pages evicted
to host are a drop (no slot time, no ``gpu_to_host`` traffic: ``clean``; advice given while the
tensor not wholly in host memory makes it clean only at a kernel begin that finds it there:
``settle_read_mostly``).  Bulk repeats stay on
with advice: a slot's remote time is a debt on the host path's budget carry, which the budget walk
of ``try_bulk_exact`` follows as any carry; a repeat's victims are all clean or none (the slot's
``rec_vclean``, part of its shape; the evictor's ``victim_span`` stops at a tensor whose
``clean_t`` differs); a slot that drops clean pre-evictions is not repeated, and ``queue_span`` stops
a repeat of the host pre-eviction queue before a clean tensor's run.  ``kernel_check`` and
``kernel_runs`` (remote pages, host placement, written tensors) run at kernel events, where the
table of recorded slots starts again.
``testing/reference.py`` has no advice: ``tests/test_advice_default.py`` checks it against
closed forms.
"""
from libc.stdint cimport int8_t, int32_t, int64_t
from libcpp.vector cimport vector
from libcpp.deque cimport deque

from ..core._types cimport (queue_run, victim_t, traffic_row,
                      TIER_NONE, TIER_NOT_PRESENT, TIER_SSD, TIER_HOST, TIER_GPU,
                      HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE,
                      HINT_ADVISE_PREFER_GPU, HINT_ADVISE_PREFER_HOST, HINT_ADVISE_ACCESSED_BY,
                      HINT_ADVISE_READ_MOSTLY,
                      Q_FAULT_SSD, Q_FAULT_HOST, Q_FAULT_ALLOC, Q_PREFETCH_SSD, Q_PREFETCH_HOST,
                      Q_PREALLOC, Q_EVICT_SSD, Q_EVICT_HOST, N_QUEUES,
                      TL_N, TL_HOST_FAULT, TL_HOST_PREFETCH, TL_SSD_FAULT, TL_SSD_PREFETCH,
                      TL_EVICT_HOST, TL_PREEVICT_HOST, TL_EVICT_SSD, TL_PREEVICT_SSD)

import numpy as np

BULK_REASONS = (
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
    'the next slot has other budgets (exact quotas)',
    'ticks repeated as merged streams (count of repeats)',
    'ticks repeated tick by tick (count of repeats)',
    'repeats of slots with and without victims (count of repeats)',
    'repeats of several pre-eviction streams merged (count of repeats)',
)

cdef int64_t BIG = (<int64_t>1) << 62      # "no limit"
cdef int64_t HUGE_N = (<int64_t>1) << 40   # bounds above this are "not yet bounded"


cdef inline int8_t queue_tier(int8_t q) noexcept nogil:
    """The tier a fetch queue's pages come from (TIER_NONE: allocations)."""
    if q == Q_FAULT_SSD or q == Q_PREFETCH_SSD:
        return TIER_SSD
    if q == Q_FAULT_HOST or q == Q_PREFETCH_HOST:
        return TIER_HOST
    return TIER_NONE


cdef inline int fault_queue_of(int8_t tier) noexcept nogil:
    return Q_FAULT_HOST if tier == TIER_HOST else (Q_FAULT_SSD if tier == TIER_SSD else Q_FAULT_ALLOC)


cdef class Batcher:
    """Queues and slots.  ``quotas``: tick_cycles, gpu_batch, host_batch, ssd_batch,
    alloc_batch (validated by the Python layer); ``link``/``ssd``: Devices; ``arrays``: the
    replay's kernel table (``in_off``, ``in_t``, ``out_off``, ``out_t``, ``w_off``, ``w_t``), read
    when ``quotas["advice"]`` (memory advice)."""

    def __init__(self, PageTable pt, Evictor ev, Device link, Device ssd, dict quotas,
                 int64_t iterations, bint debug_log=False, dict arrays=None):
        self.pt = pt
        self.ev = ev
        self.link = link
        self.ssd = ssd
        # the slot model's devices do nothing: skip their hooks (calls per chunk and slot)
        self.devices = type(link) is not Device or type(ssd) is not Device
        self.tick = quotas["tick_cycles"]
        self.gpu_batch = quotas["gpu_batch"]
        self.host_batch = quotas["host_batch"]
        self.ssd_batch = quotas["ssd_batch"]
        self.alloc_batch = quotas["alloc_batch"]
        self.ssd_q = self.ssd_batch
        self.ssd_throttled = False
        self.qs.resize(N_QUEUES)
        cdef int i, b
        self.exact = quotas.get("exact", False)
        self.ssd_shared = False
        self.ssd_write_share = BIG
        for i in range(N_PK):
            self.cost[i] = 1
            self.bucket[i] = i
            self.cap[i] = self.carry[i] = self.avail[i] = self.used[i] = 0
            self.rec_key[i] = self.rec_used[i] = 0
        if self.exact:
            self.slot_units = quotas["slot_units"]
            self.cost[PK_SSD_IN] = quotas["ssd_read_units"]
            self.cost[PK_SSD_OUT] = quotas["ssd_write_units"]
            self.cost[PK_HOST_IN] = self.cost[PK_HOST_OUT] = quotas["host_units"]
            if quotas["ssd_shared"]:
                self.bucket[PK_SSD_OUT] = PK_SSD_IN
                self.ssd_shared = True
            for i in range(N_PK):
                if self.cost[i] - 1 > self.cap[self.bucket[i]]:
                    self.cap[self.bucket[i]] = self.cost[i] - 1
            for i in range(N_PK):
                self.carry[i] = self.cap[i]       # a path that was idle before the run
        for i in range(N_PK):                     # the (at most two) page costs on each budget
            self.bc1[i] = self.bc2[i] = -1
        for i in range(N_PK):
            b = self.bucket[i]
            if self.bc1[b] < 0 or self.bc1[b] == self.cost[i]:
                self.bc1[b] = self.cost[i]
            elif self.bc2[b] < 0 or self.bc2[b] == self.cost[i]:
                self.bc2[b] = self.cost[i]
        self.n_rec = self.n_shape = self.n_shape_v = 0
        self.shp_real = False
        for i in range(N_QUEUES):
            self.qlen[i] = 0
        cdef traffic_row zero
        zero.alloc = zero.ssd_to_gpu = zero.host_to_gpu = zero.gpu_to_ssd = zero.gpu_to_host = 0
        self.traffic.assign(iterations + 1, zero)
        self.iteration = 0
        self.tb = 0
        self.waiting = self.started = False
        self.transferring = False
        self.replaying = False
        self.n_slots_detailed = self.n_slots_bulk = self.n_slots_idle = 0
        for i in range(B_COUNT):
            self.bulk_stat[i] = 0
        self.debug_log = debug_log
        for i in range(4):
            self.in_fault[i] = self.in_hint[i] = 0
        self.requeued_pages = 0
        keep = {"rq_pages": np.zeros(max(pt.n_tensors, 1), np.int64),
                "rq_mark": np.full(max(pt.n_tensors, 1), -1, np.int64)}
        cdef int64_t[::1] v64
        v64 = keep["rq_pages"]; self.rq_pages = &v64[0]
        v64 = keep["rq_mark"]; self.rq_mark = &v64[0]
        # memory advice: only when the run applies advice hints (exact quotas, no devices)
        self.advice_on = quotas.get("advice", False)
        self.page_bytes = quotas.get("page_bytes", 4096)
        for i in range(N_AS):
            self.adv_st[i] = 0
        cdef int8_t[::1] v8
        cdef int64_t[::1] o64
        cdef int32_t[::1] t32
        self.rm_read = self.rm_write = 0
        self.k_in_off = self.k_out_off = self.k_w_off = NULL
        self.k_in_t = self.k_out_t = self.k_w_t = NULL
        if self.advice_on:
            if not self.exact:
                raise ValueError("memory advice needs exact quotas (the g10-artifact rules ignore it)")
            keep["adv"] = np.zeros(max(pt.n_tensors, 1), np.int8)
            keep["clean_t"] = np.zeros(max(pt.n_tensors, 1), np.int8)
            v8 = keep["adv"]; self.adv = &v8[0]
            v8 = keep["clean_t"]; self.clean_t = &v8[0]
            ev.span_cl = self.clean_t     # a bulk repeat's victims: all clean, or none (try_bulk_exact)
            for name in ("in", "out", "w"):
                keep[name + "_off"] = np.ascontiguousarray(arrays[name + "_off"], np.int64)
                t = np.ascontiguousarray(arrays[name + "_t"], np.int32)
                keep[name + "_t"] = t if t.size else np.zeros(1, np.int32)
            o64 = keep["in_off"]; self.k_in_off = &o64[0]
            o64 = keep["out_off"]; self.k_out_off = &o64[0]
            o64 = keep["w_off"]; self.k_w_off = &o64[0]
            t32 = keep["in_t"]; self.k_in_t = &t32[0]
            t32 = keep["out_t"]; self.k_out_t = &t32[0]
            t32 = keep["w_t"]; self.k_w_t = &t32[0]
        else:
            self.adv = self.clean_t = NULL
        self._keep = keep
        self.rq_wait = 0
        self.pf_cpu = self.pf_ssd = self.pre_cpu = self.pre_ssd = 0
        self.tl = None

    # ======================================================================
    # queues
    # ======================================================================
    cdef int push(self, int q, int64_t start, int64_t count, int32_t t, int8_t src) except -1 nogil:
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

    cdef int pop(self, int q, int64_t k) except -1 nogil:
        cdef queue_run* f = &self.qs[q].front()
        f.start += k
        f.count -= k
        self.qlen[q] -= k
        if f.count == 0:
            self.qs[q].pop_front()
        return 0

    cdef bint faults_empty(self) noexcept nogil:
        return self.qlen[Q_FAULT_SSD] == 0 and self.qlen[Q_FAULT_HOST] == 0 and self.qlen[Q_FAULT_ALLOC] == 0

    cdef int64_t queued(self) noexcept nogil:
        """Pages in all queues."""
        cdef int64_t s = 0
        cdef int i
        for i in range(N_QUEUES):
            s += self.qlen[i]
        return s

    cdef void note_requeue(self, int32_t t, int64_t k) noexcept nogil:
        """k pages of tensor t (the running kernel's) were evicted and re-queued as faults."""
        self.requeued_pages += k
        if self.rq_mark[t] != self.rq_wait:
            self.rq_mark[t] = self.rq_wait
            self.rq_pages[t] = 0
        self.rq_pages[t] += k

    def requeued_in_wait(self):
        """{tensor: pages re-queued} during the current wait (``rq_wait``)."""
        cdef int64_t t
        return {t: self.rq_pages[t] for t in range(self.pt.n_tensors) if self.rq_mark[t] == self.rq_wait}

    cdef bint all_empty(self) noexcept nogil:
        cdef int i
        for i in range(N_QUEUES):
            if self.qlen[i]:
                return False
        return True

    cdef int apply_hint(self, int32_t t, int8_t action) except -1 nogil:
        """A hint at kernel begin (the artifact's guidedTransfer): pages in transfer are left alone."""
        cdef int64_t s, e
        cdef int8_t l
        cdef vector[int64_t] segs
        if self.advice_on and action >= HINT_ADVISE_PREFER_GPU:
            # (a restart re-applies a kernel's hints when the table holds only that kernel's:
            # advice is applied, and counted, once)
            return 0 if self.waiting else self.advise(t, action)
        if action == HINT_TO_GPU and self.exact:
            self.keep_queued_evictions(t, Q_EVICT_SSD)
            self.keep_queued_evictions(t, Q_EVICT_HOST)
        self.pt.idle_runs(t, segs)
        cdef size_t i = 0
        while i < segs.size():
            s = segs[i]
            e = segs[i + 1]
            l = <int8_t>segs[i + 2]
            i += 3
            if action == HINT_TO_GPU:
                if l == TIER_NOT_PRESENT:
                    self.push(Q_PREALLOC, s, e - s, t, TIER_NOT_PRESENT)
                elif l == TIER_SSD:
                    self.push(Q_PREFETCH_SSD, s, e - s, t, TIER_SSD)
                elif l == TIER_HOST:
                    self.push(Q_PREFETCH_HOST, s, e - s, t, TIER_HOST)
                else:
                    continue
                self.pt.assign(t, s, e, l, 1)
            elif action == HINT_TO_SSD or action == HINT_TO_HOST:
                if l == TIER_GPU:
                    self.push(Q_EVICT_SSD if action == HINT_TO_SSD else Q_EVICT_HOST, s, e - s, t, TIER_GPU)
                    self.pt.assign(t, s, e, TIER_GPU, 1)
            elif action == HINT_FREE:
                if l == TIER_GPU:
                    self.pt.depart(s, e - s)
                    self.pt.gpu_free += e - s
                    self.pt.n_freed_gpu += e - s
                elif l == TIER_HOST:
                    self.pt.host_used -= e - s
                    self.pt.n_freed_host += e - s
                if self.devices:
                    self.ssd.pages_freed(s, e - s)
                    self.link.pages_freed(s, e - s)
                self.pt.assign(t, s, e, TIER_NOT_PRESENT, 0)
        return 0

    cdef int keep_queued_evictions(self, int32_t t, int q) except -1 nogil:
        """Tensor t is wanted on the GPU again (a prefetch hint): its pages still queued in
        pre-eviction queue q never left the GPU, so they stay (exact quotas only: the artifact
        leaves pages in transfer alone; docs/physics.md, the SSD's duplex rule)."""
        cdef size_t j, n = self.qs[q].size()
        cdef queue_run r
        cdef bint any_t = False
        for j in range(n):
            if self.qs[q][j].tensor == t:
                any_t = True
                break
        if not any_t:
            return 0
        cdef deque[queue_run] kept
        for j in range(n):
            r = self.qs[q][j]
            if r.tensor == t:
                self.pt.assign(t, r.start, r.start + r.count, TIER_GPU, 0)
                self.qlen[q] -= r.count
            else:
                kept.push_back(r)
        self.qs[q].swap(kept)
        self.n_rec = 0
        return 0

    cdef int fault_tensor(self, int32_t t, int64_t* info) except -1 nogil:
        """Queue every missing page of t; info: total, never allocated, SSD, host, in transfer."""
        cdef int64_t s, e
        cdef int8_t l
        cdef vector[int64_t] segs
        info[0] += self.pt.t_np[t]
        info[4] += self.pt.idle_runs(t, segs)
        cdef size_t i = 0
        while i < segs.size():
            s = segs[i]
            e = segs[i + 1]
            l = <int8_t>segs[i + 2]
            i += 3
            if l == TIER_GPU:
                continue
            if l == TIER_HOST and self.advice_on and self.adv[t] & (ADV_PREFER_HOST | ADV_ACCESSED_BY):
                continue                    # mapped remotely: read over the link, not migrated
            if l == TIER_NOT_PRESENT:
                info[1] += e - s
            elif l == TIER_SSD:
                info[2] += e - s
            else:
                info[3] += e - s
            self.push(fault_queue_of(l), s, e - s, t, l)
            self.pt.assign(t, s, e, l, 1)
        return 0

    # ======================================================================
    # memory advice (issue 37): _uvm.pyx's meanings, per tensor
    # ======================================================================
    cdef int advise(self, int32_t t, int8_t action) except -1 nogil:
        """Advice on tensor t (it stays until other advice replaces it); nothing moves now."""
        if action == HINT_ADVISE_PREFER_GPU:
            self.adv[t] = (self.adv[t] & ~ADV_PREFER_HOST) | ADV_PREFER_GPU
        elif action == HINT_ADVISE_PREFER_HOST:
            self.adv[t] = (self.adv[t] & ~ADV_PREFER_GPU) | ADV_PREFER_HOST
        elif action == HINT_ADVISE_ACCESSED_BY:
            self.adv[t] |= ADV_ACCESSED_BY
        elif action == HINT_ADVISE_READ_MOSTLY:
            self.adv[t] |= ADV_READ_MOSTLY
            # read duplication keeps a host copy of a page the GPU fetches from host memory from
            # now on; a page already on the GPU (written there, or migrated before the advice), on
            # the SSD or never populated has none, so the tensor is clean (its evictions to host are
            # drops) only once all its pages are in host memory, checked here and at each kernel
            # begin (rm_pending; docs/guide/thrashing.md)
            if self.all_in_host(t):
                self.clean_t[t] = 1
                self.adv[t] &= ~ADV_RM_PENDING          # (settle_read_mostly drops it from its list)
            else:
                self.clean_t[t] = 0
                self.wait_until_left(t)
        self.adv_st[AS_ADVICE_RANGES] += 1
        return 0

    cdef int64_t remote_tensor(self, int32_t t, bint write) except -1 nogil:
        """A kernel's first attempt reads (``write``: writes) tensor t: the pages the GPU maps
        remotely (prefer_host, accessed_by: t's pages in host memory, and under prefer_host its
        never-touched pages, placed in host memory while it has room), counted; returns them."""
        cdef vector[int64_t] segs
        cdef int64_t s, e, m, n = 0
        cdef int8_t l
        cdef size_t i = 0
        if not self.advice_on or not (self.adv[t] & (ADV_PREFER_HOST | ADV_ACCESSED_BY)):
            return 0
        self.pt.idle_runs(t, segs)
        while i < segs.size():
            s = segs[i]
            e = segs[i + 1]
            l = <int8_t>segs[i + 2]
            i += 3
            if l == TIER_NOT_PRESENT and self.adv[t] & ADV_PREFER_HOST:
                # first touch of a host-preferred page: populated in host memory
                m = self.pt.host_line - self.pt.host_used
                if m > e - s:
                    m = e - s
                if m <= 0:
                    continue                # host memory is full: it faults in as usual
                e = s + m
                self.pt.assign(t, s, e, TIER_HOST, 0)
                self.pt.host_used += m
                self.adv_st[AS_REMOTE_POPULATED] += m
                l = TIER_HOST
            if l == TIER_HOST:
                n += e - s
                self.adv_st[AS_REMOTE_ACCESSES] += 1
        self.adv_st[AS_REMOTE_PAGES] += n
        self.adv_st[AS_REMOTE_WRITE_BYTES if write else AS_REMOTE_READ_BYTES] += n * self.page_bytes
        return n

    cdef int remote_ready(self, int32_t t) except -1 nogil:
        """1 when every page of t is on the GPU (not in transfer) or, under prefer_host or
        accessed_by, in host memory (mapped remotely)."""
        cdef vector[int64_t] segs
        cdef size_t i = 0
        cdef int8_t l
        if not (self.adv[t] & (ADV_PREFER_HOST | ADV_ACCESSED_BY)):
            return 0
        if self.pt.idle_runs(t, segs):
            return 0
        while i < segs.size():
            l = <int8_t>segs[i + 2]
            if l != TIER_GPU and l != TIER_HOST:
                return 0
            i += 3
        return 1

    cdef int64_t remote_cycles(self, int64_t read_pages, int64_t write_pages) except -1 nogil:
        """A kernel that starts reads ``read_pages`` and writes ``write_pages`` remotely: the
        cycles they add to it, each page at the host path's rate (``host_units``, a direction
        each); the path is busy for that time, so its budget carries the debt (no migration on
        it until the slots have paid it back)."""
        cdef int64_t upc = self.slot_units // self.tick     # units per cycle
        cdef int64_t ur = read_pages * self.cost[PK_HOST_IN], uw = write_pages * self.cost[PK_HOST_OUT]
        self.carry[self.bucket[PK_HOST_IN]] -= ur
        self.carry[self.bucket[PK_HOST_OUT]] -= uw
        return (ur + upc - 1) // upc + (uw + upc - 1) // upc

    cdef int kernel_check(self, int64_t k) except -1 nogil:
        """faults_empty(), at kernel k's begin; with advice, at its first attempt, its pages the
        GPU maps remotely are placed and counted once (they are not faults)."""
        cdef int64_t j
        if self.advice_on and not self.waiting:
            if self.rm_pending.size():
                self.settle_read_mostly()
            self.rm_read = self.rm_write = 0
            for j in range(self.k_in_off[k], self.k_in_off[k + 1]):
                self.rm_read += self.remote_tensor(self.k_in_t[j], False)
            for j in range(self.k_out_off[k], self.k_out_off[k + 1]):
                self.rm_write += self.remote_tensor(self.k_out_t[j], True)
        return self.faults_empty()

    cdef int64_t kernel_runs(self, int64_t k) except -1 nogil:
        """Kernel k runs: the cycles its remote pages add (0 without advice); its writes collapse
        read duplicates."""
        cdef int64_t j, cyc
        if not self.advice_on:
            return 0
        cyc = self.remote_cycles(self.rm_read, self.rm_write)
        self.rm_read = self.rm_write = 0
        for j in range(self.k_w_off[k], self.k_w_off[k + 1]):
            self.note_written(self.k_w_t[j])
        return cyc

    cdef bint all_in_host(self, int32_t t) except -1 nogil:
        """Every page of t is in host memory (none on the GPU, in transfer, on the SSD or unpopulated)."""
        cdef vector[int64_t] segs
        cdef size_t i = 0
        if self.pt.idle_runs(t, segs):
            return False
        while i < segs.size():
            if segs[i + 2] != TIER_HOST:
                return False
            i += 3
        return True

    cdef int settle_read_mostly(self) except -1 nogil:
        """At a kernel's begin (never inside a bulk repeat): a waiting read_mostly tensor all of whose
        pages are in host memory now is clean (the pages it fetches from there keep their copy)."""
        cdef size_t j = 0
        cdef int32_t t
        while j < self.rm_pending.size():
            t = self.rm_pending[j]
            if not self.adv[t] & ADV_RM_PENDING:          # cleared meanwhile: drop it from the list
                self.rm_pending[j] = self.rm_pending.back()
                self.rm_pending.pop_back()
            elif self.all_in_host(t):
                self.adv[t] &= ~ADV_RM_PENDING
                self.clean_t[t] = 1
                self.rm_pending[j] = self.rm_pending.back()
                self.rm_pending.pop_back()
            else:
                j += 1
        return 0

    def advice_stats(self):
        """The remote-access and read-duplication counters (the names detailed's handler uses)."""
        return {"remote_accesses": self.adv_st[AS_REMOTE_ACCESSES], "remote_pages": self.adv_st[AS_REMOTE_PAGES],
                "remote_read_bytes": self.adv_st[AS_REMOTE_READ_BYTES],
                "remote_write_bytes": self.adv_st[AS_REMOTE_WRITE_BYTES],
                "remote_populated": self.adv_st[AS_REMOTE_POPULATED],
                "readdup_clean_pages": self.adv_st[AS_READDUP_CLEAN],
                "advice_ranges": self.adv_st[AS_ADVICE_RANGES]}

    # ======================================================================
    # victims
    # ======================================================================
    cdef int take_victims(self, victim_t* v, int64_t k, int8_t dest, bint is_pf,
                          int64_t appended) except -1 nogil:
        """Evict victims [v.page, v.page+k) to dest (the artifact's processEvict, k times).

        The caller has already done the scalar bookkeeping (host pages, slot counters).
        ``appended`` is the first page the same chunk appends to the list (-1: none): page
        by page, the artifact appends each fetched page right after its victim, so when
        the last victim is the list's tail the cursor lands on the chunk's first page.
        """
        cdef int64_t last = v.page + k - 1, nxt
        cdef bint requeue = self.pt.pinned_now(v.tensor)
        nxt = self.pt.next_page(last)
        if nxt < 0 and k >= 2 and appended >= 0:
            nxt = appended
        if not self.replaying:
            if self.tick_victims == 0:
                self.rec_vdest = v.dest
                self.rec_vpf = is_pf
                self.rec_vreq = requeue
                self.rec_vclean = self.clean(v.tensor)
            elif (v.dest != self.rec_vdest or is_pf != self.rec_vpf or requeue != self.rec_vreq
                  or self.clean(v.tensor) != self.rec_vclean):
                self.rec_vdest = -2          # mixed: a bulk repeat cannot copy this slot
        self.victim_src |= self.ev.taken(v, k, is_pf, nxt)
        if not self.replaying:
            self.record_op(OP_VICTIMS, -1, dest, k)
            if self.n_sq_v and self.sq_vdest[self.n_sq_v - 1] == dest:
                self.sq_vk[self.n_sq_v - 1] += k
            elif self.n_sq_v == SEQ_MAX:
                self.seq_overflow = True
            else:
                self.sq_vdest[self.n_sq_v] = dest
                self.sq_vk[self.n_sq_v] = k
                self.n_sq_v += 1
        self.pt.assign(v.tensor, v.page, v.page + k, dest, 1 if requeue else 0)
        if requeue:
            self.push(fault_queue_of(dest), v.page, k, v.tensor, dest)
            self.note_requeue(v.tensor, k)
        if dest == TIER_NOT_PRESENT:
            self.pt.n_dropped += k
        if self.devices:
            self.ssd.pages_out(v.page, k, dest, self.tb)
            self.link.pages_out(v.page, k, dest, self.tb)
        if self.debug_log:
            self.log.push_back(1); self.log.push_back(self.tb); self.log.push_back(v.page)
            self.log.push_back(k); self.log.push_back(dest)
        self.pt.depart(v.page, k)
        self.pt.gpu_free += k
        self.tick_victims += k
        v.page += k
        v.seglen -= k
        return 0

    cdef void record_op(self, int8_t kind, int8_t q, int8_t dest, int64_t k) noexcept nogil:
        """Add k pages to the slot's total for one stream (kind, queue, destination)."""
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
    # per-slot scalar bookkeeping (the artifact's recordFetch / recordEvict)
    # ======================================================================
    cdef void rec_evict(self, int8_t dest) noexcept nogil:
        if dest == TIER_SSD:
            self.out_ssd += 1
            self.out_n += 1
            if self.exact:
                self.used[self.bucket[PK_SSD_OUT]] += self.cost[PK_SSD_OUT]
            elif self.out_ssd == self.ssd_q:
                self.forced_evict = TIER_HOST
        elif dest == TIER_HOST:
            self.out_cpu += 1
            self.out_n += 1
            if self.exact:
                self.used[self.bucket[PK_HOST_OUT]] += self.cost[PK_HOST_OUT]
            elif self.out_cpu == self.host_batch or self.pt.host_full():
                self.forced_evict = TIER_SSD

    cdef void rec_fetch(self, int8_t src) noexcept nogil:
        if src == TIER_SSD:
            self.in_ssd += 1
            if self.exact:
                self.used[self.bucket[PK_SSD_IN]] += self.cost[PK_SSD_IN]
            elif self.in_ssd == self.ssd_q:
                self.forced_fetch = TIER_HOST
        else:
            self.in_cpu += 1
            if self.exact:
                self.used[self.bucket[PK_HOST_IN]] += self.cost[PK_HOST_IN]
            elif self.in_cpu == self.host_batch:
                self.forced_fetch = TIER_SSD
        self.alloc_n += 1
        self.in_n += 1

    cdef bint room(self) noexcept nogil:
        if self.pt.gpu_free > 0:
            return True
        if self.exact:
            # a victim must be able to leave: to host memory while it has room, else to the SSD;
            # a busy path makes it wait for the next slot (it does not spill to the other tier)
            if self.pt.host_full():
                return self.out_n < self.gpu_batch and self.fits(PK_SSD_OUT)
            return self.out_n < self.gpu_batch and self.fits(PK_HOST_OUT)
        if self.pt.host_full():
            return self.out_n < self.gpu_batch and self.out_ssd < self.ssd_q
        return self.out_n < self.gpu_batch

    # ======================================================================
    # exact quotas: each path's budget of slot time (docs/physics.md)
    # ======================================================================
    cdef inline bint fits(self, int pk) noexcept nogil:
        """One more page on path pk fits in the slot's budget."""
        return self.used[self.bucket[pk]] + self.cost[pk] <= self.avail[self.bucket[pk]]

    cdef bint can_in(self, int8_t src) noexcept nogil:
        """One more page may come in from src (SSD or host) in this slot."""
        if self.exact:
            return self.fits(PK_SSD_IN if src == TIER_SSD else PK_HOST_IN)
        if src == TIER_SSD:
            return self.in_ssd < self.ssd_q
        return self.in_cpu < self.host_batch

    cdef int8_t exact_victim_dest(self) noexcept nogil:
        """Where a live victim goes: host memory while it has room, else the SSD (``room`` checked the budget)."""
        return TIER_SSD if self.pt.host_full() else TIER_HOST

    cdef int8_t exact_pre_dest(self, int q) noexcept nogil:
        """Where the next pre-evicted page of queue q goes (-1: none can leave this slot)."""
        if self.out_n >= self.gpu_batch:
            return -1
        if q == Q_EVICT_SSD:
            return TIER_SSD if self.write_fits() else -1
        if not self.pt.host_full():
            return TIER_HOST if self.fits(PK_HOST_OUT) else -1
        return TIER_SSD if self.write_fits() else -1

    cdef inline bint write_fits(self) noexcept nogil:
        """One more pre-evicted page fits on the SSD's write path, within the writes' fair share."""
        return (self.fits(PK_SSD_OUT)
                and self.used[self.bucket[PK_SSD_OUT]] + self.cost[PK_SSD_OUT] <= self.ssd_write_share)

    cdef void fair_ssd_share(self) noexcept nogil:
        """A shared SSD serves its two directions fairly (docs/physics.md, the SSD's duplex rule):
        while SSD reads wait, the slot's pre-evictions to the SSD get half the SSD budget first,
        the reads then take what is left, and the pre-evictions the rest after them (max-min
        fair: half each when both are backlogged, the rest to the one that needs it).  An NVMe
        controller serves its submission queues round robin by default (NVM Express 1.3, 4.11
        Command Arbitration; Linux commit 3b6592f70ad7 splits reads and writes into separate
        queues so that writes cannot flood the reads), and the UVM driver issues evictions and
        prefetches as separate operations, so neither direction waits for the other's backlog.  The share is half of
        the budget as the slot's decisions see it (``budget_key``), so slots of one key still
        do the same (a bulk repeat copies them)."""
        cdef int b = self.bucket[PK_SSD_IN]
        cdef int64_t key
        self.ssd_write_share = BIG
        if self.ssd_shared and (self.qlen[Q_FAULT_SSD] or self.qlen[Q_PREFETCH_SSD]):
            key = self.budget_key(b, self.avail[b])
            if self.bc2[b] < 0:
                key *= self.bc1[b]          # (one page cost: the key counts pages)
            self.ssd_write_share = key // 2

    cdef int64_t budget_key(self, int b, int64_t a) noexcept nogil:
        """Budget a as the slot's decisions see it: they only compare a with sums of the costs
        of the paths on b, so the largest such sum <= a (the number of pages, one cost)."""
        cdef int64_t c1 = self.bc1[b], c2 = self.bc2[b], w, best = 0, x
        if a < 0:
            return -1
        if c1 < 0:
            return 0
        if c2 < 0:
            return a // c1
        w = 0
        while w * c2 <= a:
            x = w * c2 + ((a - w * c2) // c1) * c1
            if x > best:
                best = x
            w += 1
        return best

    cdef void budgets_begin(self) noexcept nogil:
        """A slot's budgets: the carry (at most cap) plus the slot's time; none for a throttled SSD."""
        cdef int i
        cdef int64_t c
        for i in range(N_PK):
            c = self.carry[i]
            if c > self.cap[i]:
                c = self.cap[i]
            self.avail[i] = c + self.slot_units
            self.used[i] = 0
        if self.ssd_throttled:
            self.avail[self.bucket[PK_SSD_IN]] = -1
            self.avail[self.bucket[PK_SSD_OUT]] = -1

    cdef void budgets_end(self) noexcept nogil:
        cdef int i
        for i in range(N_PK):
            if self.ssd_throttled and (i == self.bucket[PK_SSD_IN] or i == self.bucket[PK_SSD_OUT]):
                continue                  # the SSD was busy with itself: its carry waits
            self.carry[i] = self.avail[i] - self.used[i]

    # ======================================================================
    # bringing pages into the GPU, a chunk at a time
    # ======================================================================
    cdef int64_t bring_in(self, int q, int64_t kmax, int kind, bint is_pf) except -2 nogil:
        """Move up to kmax pages from the front run of queue q into GPU frames.

        kind: 0 = page-fault fetch, 1 = allocation, 2 = prefetch.  Returns the pages
        moved (>= 1), 0 if the loop condition failed before the first page, or -1 if
        the evictor found no victim and may stall.  Pages are taken while every one of
        them is treated exactly as the first: same victim segment and destination,
        loop condition true, no break condition before the last one.
        """
        cdef queue_run f = self.qs[q].front()
        cdef int8_t src = f.src
        cdef int64_t k = 0, room_k
        cdef victim_t v
        cdef int8_t d0 = -2, d
        cdef bint need_victim = self.pt.gpu_free == 0
        cdef bint pf_eff = is_pf
        cdef bint v_clean = False
        if kmax > f.count:
            kmax = f.count
        if need_victim:
            if not pf_eff and self.pt.pinned_now(f.tensor):
                pf_eff = True
            v = self.ev.find_victim(pf_eff)
            if not v.found:
                if self.ev.may_stall(pf_eff):
                    return -1
                with gil:
                    raise RuntimeError("no eviction candidate in GPU memory")
            if kmax > v.seglen:
                kmax = v.seglen
            v_clean = self.clean(v.tensor)
        elif kmax > self.pt.gpu_free:
            kmax = self.pt.gpu_free
        # step the scalar state page by page (cheap) to find how many pages share a treatment
        while k < kmax:
            if k > 0:
                # the caller's loop condition, re-checked for page k
                if kind == 0:
                    if not (self.in_n < self.gpu_batch and self.alloc_n < self.alloc_batch and self.room()
                            and (not self.exact or self.can_in(src))):
                        break
                elif kind == 1:
                    if not (self.room() and self.alloc_n < self.alloc_batch):
                        break
                elif not (self.can_in(src) and self.in_n < self.gpu_batch and self.room()):
                    break
            if need_victim:
                d = v.dest
                if self.exact:
                    if d != TIER_NOT_PRESENT:
                        d = self.exact_victim_dest()
                elif d != TIER_NOT_PRESENT and self.forced_evict != TIER_NONE:
                    d = self.forced_evict
                if k == 0:
                    d0 = d
                elif d != d0:
                    break
                if d == TIER_HOST:
                    self.pt.host_used += 1
                    if self.pt.host_used > self.host_peak:
                        self.host_peak = self.pt.host_used
                    if self.pt.host_used > self.pt.host_line:
                        self.pt.host_overflow = True
                if d == TIER_HOST and v_clean:
                    self.adv_st[AS_READDUP_CLEAN] += 1     # its host copy is valid: a drop, no write-back
                else:
                    self.rec_evict(d)
            if src == TIER_HOST:
                self.pt.host_used -= 1
                if self.forced_evict == TIER_SSD:
                    self.forced_evict = TIER_NONE
            if kind == 1:
                self.alloc_n += 1
            else:
                self.rec_fetch(src)
            k += 1
            if kind == 0 and self.forced_fetch != TIER_NONE and self.forced_fetch != src:
                break
            if kind == 1 and src != TIER_HOST and (not need_victim or d0 == TIER_NOT_PRESENT):
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
        # host_used and the slot counters are final; now move the pages themselves
        if need_victim:
            self.take_victims(&v, k, d0, pf_eff, f.start)
        self.pt.gpu_free -= k
        if src == TIER_NOT_PRESENT:
            self.pt.n_allocated += k
        if self.devices:
            self.ssd.pages_in(f.start, k, src, self.tb)
            self.link.pages_in(f.start, k, src, self.tb)
        if self.debug_log:
            self.log.push_back(2); self.log.push_back(self.tb); self.log.push_back(f.start)
            self.log.push_back(k); self.log.push_back(src)
        self.pt.assign(f.tensor, f.start, f.start + k, TIER_GPU, 0)
        self.pt.arrive(f.start, k, f.tensor)
        self.pop(q, k)
        self.consumed[q] += k
        if q <= Q_FAULT_ALLOC:
            self.in_fault[src] += k
        else:
            self.in_hint[src] += k
            if kind != 1:                   # (rec_fetch counted them in in_cpu / in_ssd)
                if src == TIER_SSD:
                    self.pf_ssd += k
                else:
                    self.pf_cpu += k
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
            self.rec_in_req = self.pt.pinned_now(f.tensor)
        elif self.rec_in_req != self.pt.pinned_now(f.tensor):
            self.rec_in_req = -2
        return k

    # ======================================================================
    # the queues a slot serves
    # ======================================================================
    cdef int evict_queue(self, int q, int8_t default_dest) except -1 nogil:
        """Pre-evictions from queue q (the artifact's processPreevict, one queue)."""
        cdef queue_run f
        cdef int8_t d
        cdef int64_t k, kmax, n
        cdef bint requeue, f_clean
        while self.qlen[q]:
            if self.exact:
                f = self.qs[q].front()
                d = self.exact_pre_dest(q)
                if d < 0:
                    break
                kmax = f.count
                if kmax > self.gpu_batch - self.out_n:
                    kmax = self.gpu_batch - self.out_n
                f_clean = d == TIER_HOST and self.clean(f.tensor)
                k = 0
                while k < kmax and self.exact_pre_dest(q) == d:
                    if d == TIER_HOST:
                        self.pt.host_used += 1
                        if self.pt.host_used > self.host_peak:
                            self.host_peak = self.pt.host_used
                    if not f_clean:
                        self.rec_evict(d)
                    k += 1
                self.evicted(q, &f, d, k)
                if f_clean:
                    # read duplicates with a valid host copy: dropped, no write-back (bulk
                    # repeats copy no such slot: queue_span stops before them)
                    self.adv_st[AS_READDUP_CLEAN] += k
                    self.pre_cpu -= k
                    self.irregular = True
                continue
            if q == Q_EVICT_SSD:
                if not (self.out_ssd < self.ssd_q and self.out_n < self.gpu_batch):
                    break
            elif not (((self.pt.host_full() and self.out_ssd < self.ssd_q)
                       or (not self.pt.host_full() and self.out_cpu < self.host_batch))
                      and self.out_n < self.gpu_batch):
                break
            f = self.qs[q].front()
            d = default_dest if self.forced_evict == TIER_NONE else <int8_t>self.forced_evict
            # how many pages go out with this destination before a quota or the host line flips it
            kmax = f.count
            if d == TIER_SSD:
                n = self.ssd_q - self.out_ssd
            else:
                n = self.host_batch - self.out_cpu
                if self.pt.host_line - self.pt.host_used < n:
                    n = self.pt.host_line - self.pt.host_used
                if n <= 0:
                    n = 1
            if kmax > n:
                kmax = n
            if kmax > self.gpu_batch - self.out_n:
                kmax = self.gpu_batch - self.out_n
            k = 0
            while k < kmax:
                if k > 0:
                    if q == Q_EVICT_SSD:
                        if not (self.out_ssd < self.ssd_q and self.out_n < self.gpu_batch):
                            break
                    elif not (((self.pt.host_full() and self.out_ssd < self.ssd_q)
                               or (not self.pt.host_full() and self.out_cpu < self.host_batch))
                              and self.out_n < self.gpu_batch):
                        break
                    if (default_dest if self.forced_evict == TIER_NONE else self.forced_evict) != d:
                        break
                if d == TIER_HOST:
                    self.pt.host_used += 1
                    if self.pt.host_used > self.host_peak:
                        self.host_peak = self.pt.host_used
                self.rec_evict(d)
                k += 1
            self.evicted(q, &f, d, k)
        return 0

    cdef int evicted(self, int q, queue_run* fp, int8_t d, int64_t k) except -1 nogil:
        """k pre-evicted pages from the front of queue q leave for d (the slot counters are done)."""
        cdef queue_run f = fp[0]
        cdef bint requeue
        if d == TIER_HOST and self.pt.host_used > self.pt.host_line:
            self.pt.host_overflow = True
        requeue = self.pt.pinned_now(f.tensor)
        if self.devices:
            self.ssd.pages_out(f.start, k, d, self.tb)
            self.link.pages_out(f.start, k, d, self.tb)
        self.pt.assign(f.tensor, f.start, f.start + k, d, 1 if requeue else 0)
        if requeue:
            self.push(fault_queue_of(d), f.start, k, f.tensor, d)
            self.note_requeue(f.tensor, k)
            self.irregular = True
            self.bulk_stat[B_PREEVICT_REQUEUE] += 1
        self.pt.depart(f.start, k)
        self.pt.gpu_free += k
        self.pop(q, k)
        self.consumed[q] += k
        if d == TIER_SSD:
            self.pre_ssd += k
        else:
            self.pre_cpu += k
        self.record_op(OP_PREEVICT, q, d, k)
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
        if src == TIER_SSD and self.ssd_throttled:
            return 0                        # the SSD takes no command this slot
        while (self.in_n < self.gpu_batch and self.alloc_n < self.alloc_batch and self.room()
               and self.qlen[q] and (not self.exact or self.can_in(src))):
            r = self.bring_in(q, self.gpu_batch, 0, True)
            if r <= 0:
                with gil:
                    raise RuntimeError("page-fault fetch found no frame")
            if self.forced_fetch != TIER_NONE and self.forced_fetch != src:
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
        while (self.can_in(TIER_SSD) and self.in_n < self.gpu_batch and self.room()
               and self.qlen[Q_PREFETCH_SSD]):
            f = self.qs[Q_PREFETCH_SSD].front()
            if f.src == TIER_SSD:
                r = self.bring_in(Q_PREFETCH_SSD, self.gpu_batch, 2, False)
                if r < 0:
                    self.stalled = True
                    return 0
            else:  # the page is on the host now: hand it to the host prefetch queue
                self.pop(Q_PREFETCH_SSD, f.count)
                self.push(Q_PREFETCH_HOST, f.start, f.count, f.tensor, f.src)
                self.irregular = True
                self.bulk_stat[B_REDIRECT] += 1
        while (self.can_in(TIER_HOST) and self.in_n < self.gpu_batch and self.room()
               and self.qlen[Q_PREFETCH_HOST]):
            f = self.qs[Q_PREFETCH_HOST].front()
            if f.src == TIER_HOST:
                r = self.bring_in(Q_PREFETCH_HOST, self.gpu_batch, 2, False)
                if r < 0:
                    self.stalled = True
                    return 0
            else:
                self.pop(Q_PREFETCH_HOST, f.count)
                self.push(Q_PREFETCH_SSD, f.start, f.count, f.tensor, f.src)
                self.irregular = True
                self.bulk_stat[B_REDIRECT] += 1
        return 0

    # ======================================================================
    # the slot
    # ======================================================================
    cdef int slot(self, int64_t now) except -1 nogil:
        """One slot at `now` (the artifact's BatcherEvent::execute)."""
        cdef int i
        cdef traffic_row* st
        self.tb = now
        self.alloc_n = self.in_n = self.out_n = 0
        self.in_ssd = self.in_cpu = self.out_ssd = self.out_cpu = 0
        self.pf_cpu = self.pf_ssd = self.pre_cpu = self.pre_ssd = 0
        self.forced_fetch = TIER_NONE
        self.forced_evict = TIER_NONE
        self.host_peak = self.pt.host_used
        self.irregular = False
        self.stalled = False
        self.tick_victims = 0
        self.victim_src = 0
        self.n_ops = 0
        self.n_sq_v = self.n_sq_in = self.n_sq_pre = 0
        self.seq_overflow = False
        self.rec_in_req = -1
        self.tick_host0 = self.pt.host_used
        self.tick_free0 = self.pt.gpu_free
        for i in range(N_QUEUES):
            self.consumed[i] = 0
            self.qlen0[i] = self.qlen[i]
        self.ssd_q = self.ssd.slot_quota(now, self.tick, self.ssd_batch) if self.devices else self.ssd_batch
        # (a zero quota from the slot model itself is the artifact's: its counters never
        # reach it, so SSD fault fetches are not capped; only a device's zero throttles)
        self.ssd_throttled = self.ssd_q == 0 and self.ssd_batch > 0
        if self.exact:
            self.budgets_begin()
        if not self.all_empty():
            if self.pt.host_full():
                self.forced_evict = TIER_SSD
            if self.exact:
                self.fair_ssd_share()
            self.evict_queue(Q_EVICT_SSD, TIER_SSD)
            self.evict_queue(Q_EVICT_HOST, TIER_HOST)
            self.pf_fetch(Q_FAULT_SSD, TIER_SSD)
            self.pf_fetch(Q_FAULT_HOST, TIER_HOST)
            self.alloc_queue(Q_FAULT_ALLOC, True)
            self.prefetch()
            if self.ssd_write_share != BIG:
                # the reads have had their share: the writes take what they left
                self.ssd_write_share = BIG
                self.evict_queue(Q_EVICT_SSD, TIER_SSD)
                self.evict_queue(Q_EVICT_HOST, TIER_HOST)
            self.alloc_queue(Q_PREALLOC, False)
            if (self.ev.lockup_fallback() and self.waiting and not self.started
                    and self.in_n + self.out_n == 0 and self.pt.pinned_in_transfer() > 0):
                self.irregular = True
                self.bulk_stat[B_LOCKUP] += 1
                self.pf_fetch(Q_PREFETCH_SSD, TIER_SSD)
                self.pf_fetch(Q_PREFETCH_HOST, TIER_HOST)
                self.alloc_queue(Q_PREALLOC, True)
            if not self.transferring:
                self.bounds.push_back(now)
                self.bounds.push_back(1)
                self.transferring = True
        elif self.transferring:
            self.bounds.push_back(now)
            self.bounds.push_back(0)
            self.transferring = False
        if self.devices:
            self.link.slot_end(now)
            self.ssd.slot_end(now)
        if self.exact:
            for i in range(N_PK):
                self.rec_key[i] = self.budget_key(i, self.avail[i])
                self.rec_used[i] = self.used[i]
            self.budgets_end()
            if self.debug_log:
                self.log.push_back(4); self.log.push_back(now); self.log.push_back(self.avail[0])
                self.log.push_back(self.avail[1]); self.log.push_back(self.n_ops)
                self.log.push_back(5); self.log.push_back(now); self.log.push_back(self.avail[2])
                self.log.push_back(self.avail[3]); self.log.push_back(self.pt.gpu_free)
        if self.in_n or self.out_n:
            st = &self.traffic[self.iteration]
            st.alloc += self.alloc_n
            st.ssd_to_gpu += self.in_ssd
            st.host_to_gpu += self.in_cpu
            st.gpu_to_ssd += self.out_ssd
            st.gpu_to_host += self.out_cpu
            if self.tl is not None:
                self.tl_slots(now, 1)
        self.tb = now + self.tick        # the next slot (moved by a bulk repeat or an idle skip)
        self.n_slots_detailed += 1
        return 0

    cdef int skip_idle(self, int64_t next_kernel) except -1 nogil:
        """All queues are empty and nothing waits: jump to the first slot after the next kernel event."""
        cdef int64_t m
        if next_kernel < 0 or not self.all_empty() or self.waiting:
            return 0
        if self.tb >= next_kernel:
            return 0
        m = (next_kernel - self.tb + self.tick - 1) // self.tick   # slots strictly before it
        # those slots are idle; the last of them schedules the slot at or after next_kernel
        self.tb += m * self.tick
        self.n_slots_idle += m
        if self.exact and m > 0:
            self.idle_budgets(m)
            self.n_rec = 0
        return 0

    cdef void idle_budgets(self, int64_t m) noexcept nogil:
        """Each path's carry after m slots that spent nothing (what budgets_begin/end would give)."""
        cdef int i
        cdef int64_t c
        for i in range(N_PK):
            c = self.carry[i]
            if c > self.cap[i]:
                c = self.cap[i]
            if m > 1 and self.slot_units > 0 and (self.cap[i] - c) // self.slot_units < m - 1:
                self.carry[i] = self.cap[i] + self.slot_units
            else:
                self.carry[i] = c + m * self.slot_units
                if self.carry[i] > self.cap[i] + self.slot_units:
                    self.carry[i] = self.cap[i] + self.slot_units

    # ======================================================================
    # bulk repeats of identical slots
    # ======================================================================
    cdef void note(self, int reason) noexcept nogil:
        """Count a reason a slot was or was not repeated in bulk."""
        self.bulk_stat[reason] += 1

    cdef int64_t queue_span(self, int q, int64_t need, int8_t src, bint check_req, bint req) noexcept nogil:
        """Pages at the front of queue q (up to need) that share the front's treatment."""
        cdef int64_t got = 0
        cdef size_t j = 0
        cdef queue_run* r
        while j < self.qs[q].size() and got < need:
            r = &self.qs[q][j]
            if r.src != src:
                break
            if check_req and self.pt.pinned_now(r.tensor) != req:
                break
            if q == Q_EVICT_HOST and self.clean(r.tensor):
                break                       # a clean pre-eviction (memory advice) is a drop: evict_queue
            got += r.count
            j += 1
        return got if got < need else need

    cdef int64_t bulk_before_ready(self, int q, int64_t n, int64_t c) noexcept nogil:
        """Slots (<= n) after which the waiting kernel still has a page in transfer (c pages a slot at most)."""
        cdef int64_t R = self.pt.pinned_in_transfer(), seen = 0, req = 0, take
        cdef size_t j = 0
        cdef queue_run* r
        if R == 0 or c == 0:
            return 0
        # walk the queue in steps of whole slots (c pages each)
        while j < self.qs[q].size() and seen < n * c:
            r = &self.qs[q][j]
            take = r.count
            if seen + take > n * c:
                take = n * c - seen
            if self.pt.pinned_now(r.tensor):
                if req + take >= R:
                    # the slot that brings in the R-th required page is the last candidate
                    return (seen + (R - req) - 1) // c
                req += take
            seen += take
            j += 1
        return n

    cdef int record_entry(self) except -1 nogil:
        """Keep the slot just done in the table of its shape (exact quotas); returns its index.

        Slots of one shape do the same operations on the same queues and destinations with
        the same flags; only their counts differ, and those follow from the budgets the
        slot's decisions see (``rec_key``).  A slot that moved nothing (no budget had room for
        what waits) joins any shape with the same queues waiting.  A slot of another shape
        starts a new table.  The shape's fields (``shp_*``) are what the repeat reads."""
        cdef int64_t sh[OPS_MAX * 3 + SEQ_MAX * 4 + 16]
        cdef int64_t sv[OPS_MAX * 2 + SEQ_MAX + 8]
        cdef int n = 0, nv = 0, i, e, q, q_in = -1, n_in = 0, k
        cdef int64_t mask_c = 0, mask_q = 0, blocked = 0, d_free
        cdef int8_t d_vict = -1
        cdef bint has_v = False
        cdef bint same, nothing = self.n_ops == 0 and not self.stalled
        for q in range(N_QUEUES):
            if self.consumed[q]:
                mask_c |= (<int64_t>1) << q
            if self.qlen0[q]:
                mask_q |= (<int64_t>1) << q
        # what a slot that moves nothing decides by, besides its budgets: which queues wait, free
        # frames or not (room), host memory full or not (the victims' tier)
        if self.tick_free0 > 0:
            mask_q |= (<int64_t>1) << N_QUEUES
        if self.tick_host0 >= self.pt.host_line:
            mask_q |= (<int64_t>1) << (N_QUEUES + 1)
        if self.n_rec and mask_q != self.shp_qlen0_mask:
            self.n_rec = 0
        if not nothing:
            # the shape in two parts: what every slot of it does (sh), and its victims (sv).  A
            # slot without victims shares the table of one with them when all else is the same
            # (a page more in than frames free takes one victim: a shared SSD's turning budget
            # gives 5 pages in beside 6 with one victim); only victims of no running kernel mix
            # so (the running kernel's are re-queued and change a queue)
            has_v = self.tick_victims > 0
            k = 0
            for i in range(self.n_ops):
                if self.op_kind[i] == OP_VICTIMS:
                    d_vict = self.op_dest[i] if d_vict == -1 or d_vict == self.op_dest[i] else -3
                    sv[nv] = self.op_q[i]; sv[nv + 1] = self.op_dest[i]; nv += 2
                else:
                    k += 1
                    if self.op_kind[i] == OP_IN:
                        n_in += 1
                        q_in = self.op_q[i]
            sh[n] = k; n += 1
            for i in range(self.n_ops):
                if self.op_kind[i] != OP_VICTIMS:
                    sh[n] = self.op_kind[i]; sh[n + 1] = self.op_q[i]; sh[n + 2] = self.op_dest[i]; n += 3
            sv[nv] = self.n_sq_v; nv += 1
            for i in range(self.n_sq_v):
                sv[nv] = self.sq_vdest[i]; nv += 1
            sh[n] = self.n_sq_in; n += 1
            for i in range(self.n_sq_in):
                sh[n] = self.sq_inq[i]; n += 1
            sh[n] = self.n_sq_pre; n += 1
            for i in range(self.n_sq_pre):
                sh[n] = self.sq_preq[i] * 16 + self.sq_predest[i]; n += 1
            d_free = self.pt.gpu_free - self.tick_free0
            # queues left waiting because their path's budget is spent (more free frames would not serve them)
            for q in range(N_QUEUES):
                if q != Q_FAULT_SSD and q != Q_PREFETCH_SSD and q != Q_FAULT_HOST and q != Q_PREFETCH_HOST:
                    continue
                if self.qlen[q] and self.consumed[q] == 0 and not self.fits(
                        PK_SSD_IN if q == Q_FAULT_SSD or q == Q_PREFETCH_SSD else PK_HOST_IN):
                    blocked |= (<int64_t>1) << q
            sh[n] = mask_c
            # frames freed or not: a slot that frees frames may serve a queue that waits for them.
            # Slots that keep or spend frames share a table (a slot of 6 pages in and 5 out beside
            # one of 5 and 5), and so do slots that move host memory either way: try_bulk_exact
            # bounds a repeat by its entries' extremes
            sh[n + 1] = d_free > 0
            sh[n + 2] = self.rec_in_req; sh[n + 3] = self.stalled
            sh[n + 4] = self.in_n > 0 or self.out_n > 0
            sh[n + 5] = blocked
            n += 6
            sv[nv] = q_in >= 0 and self.tick_victims == self.consumed[q_in]
            sv[nv + 1] = self.rec_vdest * 2 + self.rec_vclean; sv[nv + 2] = self.rec_vpf
            sv[nv + 3] = self.rec_vreq; sv[nv + 4] = self.victim_src
            nv += 5
            same = self.n_rec > 0 and (not self.shp_real or n == self.n_shape)
            if same and self.shp_real:
                for i in range(n):
                    if sh[i] != self.shape[i]:
                        same = False
                        break
                if same and has_v and self.shp_victims:
                    if nv != self.n_shape_v:
                        same = False
                    else:
                        for i in range(nv):
                            if sv[i] != self.shape_v[i]:
                                same = False
                                break
                elif same and has_v != self.shp_victims:
                    same = not (self.rec_vreq if has_v else self.shp_vreq)
            if not same:
                self.n_rec = 0
            if not self.shp_real or not same:
                self.shp_real = True
                self.n_shape = n
                for i in range(n):
                    self.shape[i] = sh[i]
                self.shp_n_sq_in = self.n_sq_in
                self.shp_n_sq_pre = self.n_sq_pre
                for i in range(SEQ_MAX):
                    self.shp_sq_inq[i] = self.sq_inq[i]
                    self.shp_sq_preq[i] = self.sq_preq[i]
                    self.shp_sq_predest[i] = self.sq_predest[i]
                self.shp_in_req = self.rec_in_req
                self.shp_n_in = n_in
                self.shp_q_in = q_in
                self.shp_frees = d_free > 0
                self.shp_consumed_mask = mask_c
                self.shp_blocked_mask = blocked
                self.shp_victims = False
            if has_v and not self.shp_victims or not same:
                # the shape's victims: this slot's (none, or the first slot of the table with them)
                self.n_shape_v = nv
                for i in range(nv):
                    self.shape_v[i] = sv[i]
                self.shp_n_sq_v = self.n_sq_v
                for i in range(SEQ_MAX):
                    self.shp_sq_vdest[i] = self.sq_vdest[i]
                self.shp_vdest = self.rec_vdest
                self.shp_vclean = self.rec_vclean
                self.shp_vpf = self.rec_vpf
                self.shp_vreq = self.rec_vreq
                self.shp_victims = has_v
                self.shp_d_vict = d_vict
                # several pre-eviction streams and nothing else: pages only leave, and where they
                # leave from does not depend on the order (try_bulk says why)
                self.shp_single = ((n_in <= 1 and d_vict != -3 and self.n_sq_pre <= 1)
                                   or (n_in == 0 and not has_v and not self.debug_log))
                self.shp_cycle = q_in >= 0 and self.tick_victims == self.consumed[q_in]
        if self.n_rec == 0:
            self.shp_qlen0_mask = mask_q
            if nothing:
                self.shp_real = False
        for e in range(self.n_rec):
            same = True
            for i in range(N_PK):
                if self.ent_key[e][i] != self.rec_key[i]:
                    same = False
            if same:
                break
        else:
            if self.n_rec == NREC:
                # a fifth key: start again from this slot
                self.n_rec = 0
                if nothing:
                    self.shp_real = False
            e = self.n_rec
            self.n_rec += 1
        for i in range(N_PK):
            self.ent_key[e][i] = self.rec_key[i]
            self.ent_used[e][i] = self.rec_used[i]
        for i in range(SEQ_MAX):
            self.ent_sqv[e][i] = self.sq_vk[i] if not nothing and i < self.n_sq_v else 0
            self.ent_sqin[e][i] = self.sq_ink[i] if not nothing and i < self.n_sq_in else 0
            self.ent_sqpre[e][i] = self.sq_prek[i] if not nothing and i < self.n_sq_pre else 0
        for q in range(N_QUEUES):
            self.ent_consumed[e][q] = self.consumed[q]
        self.ent_nothing[e] = nothing
        self.ent_v[e] = self.tick_victims
        self.ent_dfree[e] = self.pt.gpu_free - self.tick_free0
        self.ent_free0[e] = self.tick_free0
        self.ent_dhost[e] = self.pt.host_used - self.tick_host0
        self.ent_peak[e] = self.host_peak - self.tick_host0
        for i in range(5):
            self.ent_traffic[e][i] = 0
        if self.in_n or self.out_n:
            self.ent_traffic[e][0] = self.alloc_n
            self.ent_traffic[e][1] = self.in_ssd
            self.ent_traffic[e][2] = self.in_cpu
            self.ent_traffic[e][3] = self.out_ssd
            self.ent_traffic[e][4] = self.out_cpu
        return e

    cdef int stream_budget(self, int8_t tier, bint out) noexcept nogil:
        """The budget a stream of pages to (out) or from ``tier`` draws on (-1: none)."""
        if tier == TIER_SSD:
            return self.bucket[PK_SSD_OUT if out else PK_SSD_IN]
        if tier == TIER_HOST:
            return self.bucket[PK_HOST_OUT if out else PK_HOST_IN]
        return -1

    cdef bint victims_follow_counts(self) noexcept nogil:
        """Whether a table whose slots take victims or not (record_entry) may repeat: true when
        they all take some or none; else when every slot kept its free frames, started with
        as many as there are now, took as victims the pages it brought in beyond those and the
        frames its pre-evictions freed, and moved on each stream as many pages as any other
        slot with the same budget on that stream's path.  Then a slot's victims follow from
        its budget key as its counts do.  (A slot that found 40 frames in a pre-eviction
        stream whose queue, not its budget, set the count once stood for slots that needed
        victims: tests/test_bulk_tables.py.)"""
        cdef int e, i, f, b
        cdef int64_t pin, ppre, need
        cdef bint some = False, none = False
        for e in range(self.n_rec):
            if self.ent_nothing[e]:
                continue
            if self.ent_v[e] > 0:
                some = True
            else:
                none = True
        if not (some and none):
            return True
        for e in range(self.n_rec):
            if self.ent_nothing[e]:
                continue
            if self.ent_dfree[e] != 0 or self.ent_free0[e] != self.pt.gpu_free:
                return False
            # each stream's pages follow from its own path's budget: two slots with the same
            # budget on that path moved as many (else the queue, not the key, decided them)
            for f in range(e):
                if self.ent_nothing[f]:
                    continue
                for i in range(self.shp_n_sq_pre):
                    b = self.stream_budget(self.shp_sq_predest[i], True)
                    if ((b < 0 or self.ent_key[e][b] == self.ent_key[f][b])
                            and self.ent_sqpre[e][i] != self.ent_sqpre[f][i]):
                        return False
                for i in range(self.shp_n_sq_in):
                    b = self.stream_budget(queue_tier(self.shp_sq_inq[i]), False)
                    if ((b < 0 or self.ent_key[e][b] == self.ent_key[f][b])
                            and self.ent_sqin[e][i] != self.ent_sqin[f][i]):
                        return False
            pin = ppre = 0
            for i in range(SEQ_MAX):
                pin += self.ent_sqin[e][i]
                ppre += self.ent_sqpre[e][i]
            need = pin - self.ent_free0[e] - ppre
            if need < 0:
                need = 0
            if self.ent_v[e] != need:
                return False
        return True

    cdef int try_bulk_exact(self, int64_t next_kernel) except -1 nogil:
        """``try_bulk`` under exact quotas: the slots ahead differ in their budgets, so they
        repeat the recorded slot of their budget key (``record_entry``'s table); every bound
        below takes the most a slot of the table moves, and the budgets are walked (in closed
        form where ``closed_walk`` applies, else slot by slot; a slot whose key the table
        lacks ends the repeat and runs in full)."""
        cdef int64_t n = BIG, m, c, span, need, vmax = 0, vmin = BIG, dmax = 0, pmax = 0
        cdef int64_t cmax[N_QUEUES]
        cdef int64_t counts[NREC]
        cdef int64_t cw[N_PK]
        cdef int64_t walked
        cdef int q, q_in, cycle = -1, e, b
        cdef int dfree = 0, dhost = 0         # signs of the table's free-frame and host-page changes
        cdef bint pf_nonempty = False, in_pf, single, real
        cdef int64_t free_bit
        cdef vector[int64_t] seq
        if self.victim_src == 3 or (self.tick_victims and self.rec_vdest == -2) or self.seq_overflow:
            self.bulk_stat[B_MIXED_VICTIMS] += 1
            self.n_rec = 0
            return 0
        if self.stalled and (self.victim_src & 1 or self.pt.cursor >= 0):
            self.bulk_stat[B_STALL_MOVES] += 1
            self.n_rec = 0
            return 0
        self.record_entry()
        real = self.shp_real
        q_in = self.shp_q_in if real else -1
        single = self.shp_single if real else True
        for q in range(N_QUEUES):
            cmax[q] = 0
        for e in range(self.n_rec):
            for q in range(N_QUEUES):
                if self.ent_consumed[e][q] > cmax[q]:
                    cmax[q] = self.ent_consumed[e][q]
            if self.ent_v[e] > vmax:
                vmax = self.ent_v[e]
            if not self.ent_nothing[e] and self.ent_v[e] < vmin:
                vmin = self.ent_v[e]
            if self.ent_dhost[e] > dmax:
                dmax = self.ent_dhost[e]
            if self.ent_peak[e] > pmax:
                pmax = self.ent_peak[e]
            # the most extreme entry decides: any slot that spends frames bounds the repeat by
            # them, any that adds host pages by the host line
            if self.ent_dfree[e] < 0:
                dfree = -1
            if self.ent_dhost[e] > 0:
                dhost = 1
            elif self.ent_dhost[e] < 0 and dhost == 0:
                dhost = -1
        if self.shp_frees:
            dfree = 1
        if self.shp_victims and not self.victims_follow_counts():
            self.bulk_stat[B_MIXED_VICTIMS] += 1
            self.n_rec = 0
            return 0
        if real and self.shp_victims and self.shp_vreq:
            if self.shp_d_vict == -3:
                self.bulk_stat[B_REQUEUE] += 1
                return 0
            q = fault_queue_of(self.shp_d_vict)
            if single and q == q_in and self.shp_cycle:
                cycle = q      # every slot of the shape gives back what it takes
            elif not (q == q_in and single) and not ((self.shp_qlen0_mask >> q) & 1
                                                      and not (self.shp_consumed_mask >> q) & 1):
                self.bulk_stat[B_REQUEUE] += 1
                return 0
        if next_kernel >= 0:
            if self.tb >= next_kernel:
                self.bulk_stat[B_KERNEL_NEXT] += 1
                return 0
            m = (next_kernel - self.tb + self.tick - 1) // self.tick
            if m < n:
                n = m
        for q in range(N_QUEUES):
            c = cmax[q]
            if c == 0 or q == cycle:
                continue
            if self.qlen[q] <= c:
                self.bulk_stat[B_QUEUE_DRAINS] += 1
                return 0
            m = (self.qlen[q] - 1) // c
            if m < n:
                n = m
            need = n * c + 1
            if q >= Q_EVICT_SSD:
                span = self.queue_span(q, need, TIER_GPU, True, False)
            else:
                in_pf = q == Q_FAULT_SSD or q == Q_FAULT_HOST or q == Q_FAULT_ALLOC
                if self.ev.fault_changes_victims() and not in_pf and self.shp_in_req == -2:
                    self.bulk_stat[B_MIXED_PAGES] += 1
                    return 0
                span = self.queue_span(q, need, self.qs[q].front().src,
                                       self.ev.fault_changes_victims() and not in_pf, self.shp_in_req == 1)
            m = (span - 1) // c
            if m < n:
                n = m
        if self.waiting:
            for q in range(3):
                if self.qlen[q] and (cmax[q] == 0 or q == cycle or self.qlen[q] > n * cmax[q]):
                    pf_nonempty = True
            if not pf_nonempty and real and self.shp_n_in == 1:
                m = self.bulk_before_ready(q_in, n, cmax[q_in])
                if m < n:
                    n = m
                pf_nonempty = n >= 1
            elif not pf_nonempty and (not real or self.shp_n_in == 0) and self.pt.pinned_in_transfer() > 0:
                # nothing comes in (a shared SSD spent on pre-evictions): the pages it waits for
                # stay in transfer, and a pre-evicted one would be re-queued (an irregular slot)
                pf_nonempty = True
            if not pf_nonempty:
                self.bulk_stat[B_KERNEL_READY] += 1
                return 0
        # free frames (the shape fixes the sign of their change)
        if real and dfree < 0:
            if self.shp_victims or self.pt.gpu_free < 1:
                self.bulk_stat[B_FRAMES_RUN_OUT] += 1
                return 0
            c = 0
            for e in range(self.n_rec):
                if -self.ent_dfree[e] > c:
                    c = -self.ent_dfree[e]
            m = (self.pt.gpu_free - 1) // c
            if m < n:
                n = m
        elif real and dfree > 0:
            if self.shp_n_in:
                self.bulk_stat[B_FRAMES_FREED_IN] += 1
                return 0
            for q in range(N_QUEUES):
                if (not (self.shp_consumed_mask >> q) & 1 and self.qlen[q]
                        and not (self.shp_blocked_mask >> q) & 1):
                    self.bulk_stat[B_FRAMES_FREED_BLOCKED] += 1
                    return 0
        # host pages
        if real and dhost != 0:
            if (self.tick_host0 >= self.pt.host_line or self.host_peak >= self.pt.host_line
                    or self.pt.host_used + pmax >= self.pt.host_line):
                self.bulk_stat[B_HOST_LINE] += 1
                return 0
            if dhost > 0:
                m = (self.pt.host_line - 1 - self.pt.host_used - pmax) // dmax + 1
                if m < n:
                    n = m
        # walk the budgets: each slot repeats the table's slot of its key.  A slot may walk
        # n = min(the bounds above, the victims' span), but the span costs a step per arrival
        # run up to what it is asked for, and with short slots the walk often stops long before
        # n: so walk first and ask the evictor only for the victims of the slots walked (the
        # walk is a prefix: walking fewer slots gives the same first slots, see walk_budgets)
        free_bit = (self.shp_qlen0_mask >> N_QUEUES) & 1
        self.ev.span_want = self.shp_vclean      # (memory advice: victims as clean as the recorded ones)
        if vmax > 0 and 1 <= n < HUGE_N:
            walked = self.walk_budgets(n, counts, cw, &seq, single, free_bit)
            need = (walked if walked > 0 else 1) * vmax + 1
            span = self.ev.victim_span(self.shp_vpf, need, self.shp_vreq, self.shp_vdest)
            m = (span - 1) // vmax if span > 0 else 0
            if m < 1:
                self.bulk_stat[B_LESS_THAN_ONE] += 1
                return 0
            if m < walked:
                walked = self.walk_budgets(m, counts, cw, &seq, single, free_bit)
        else:
            if vmax > 0:
                need = n * vmax + 1 if n < HUGE_N else BIG
                span = self.ev.victim_span(self.shp_vpf, need, self.shp_vreq, self.shp_vdest)
                m = (span - 1) // vmax if span > 0 else 0
                if m < n:
                    n = m
            if n < 1 or n >= HUGE_N:
                self.bulk_stat[B_LESS_THAN_ONE] += 1
                return 0
            walked = self.walk_budgets(n, counts, cw, &seq, single, free_bit)
        if walked < 1:
            self.bulk_stat[B_BUDGETS] += 1
            return 0
        for b in range(N_PK):
            self.carry[b] = cw[b]
        if self.debug_log:
            self.log.push_back(3); self.log.push_back(self.tb); self.log.push_back(walked)
            self.log.push_back(q_in * 1000 + (cmax[q_in] if q_in >= 0 else 0))
            self.log.push_back(vmax * 10 + self.stalled)
        if self.shp_victims and vmin == 0:
            self.bulk_stat[B_MIXED_TABLE] += 1
        if single:
            self.apply_entries(counts, NULL, walked)
            self.bulk_stat[B_MERGED] += 1
            if self.shp_n_sq_pre > 1:
                self.bulk_stat[B_PRE_MERGED] += 1
        else:
            self.apply_entries(counts, seq.data(), walked)
            self.bulk_stat[B_TICKWISE] += 1
        return 0

    cdef int64_t walk_budgets(self, int64_t n, int64_t* counts, int64_t* cw, vector[int64_t]* seq,
                              bint single, int64_t free_bit) noexcept nogil:
        """The budget walk of ``try_bulk_exact`` over at most n slots from the carry: ``counts``
        (slots of each table entry), ``cw`` (the carry after them) and, for a table that is
        not single, ``seq`` (the entries slot by slot); returns the slots walked.  The walk
        is a prefix: it stops at min(n, S) for an S that does not depend on n, with the same
        first slots (``closed_walk`` applies or not whatever n is)."""
        cdef int64_t walked, cc, m
        cdef int64_t a[N_PK]
        cdef int e, b
        cdef bint same, closed, nothing_ok, stable
        for e in range(NREC):
            counts[e] = 0
        seq.clear()
        for b in range(N_PK):
            cw[b] = self.carry[b]
        # a slot that moved nothing did so with the GPU full, or not: it repeats only while that
        # holds (a slot of the shape that frees frames ends it)
        nothing_ok = (self.pt.gpu_free > 0) == free_bit
        stable = nothing_ok
        for e in range(self.n_rec):
            if self.ent_nothing[e] and not nothing_ok:
                stable = False
            if not free_bit and self.ent_dfree[e] > 0:
                for b in range(self.n_rec):
                    if self.ent_nothing[b]:
                        stable = False
        walked = self.closed_walk(n, counts, cw) if single and stable else 0
        closed = walked > 0
        while walked < n and walked < WALK_MAX and not closed:
            for b in range(N_PK):
                cc = cw[b]
                if cc > self.cap[b]:
                    cc = self.cap[b]
                a[b] = cc + self.slot_units
            for e in range(self.n_rec):
                same = True
                for b in range(N_PK):
                    if self.budget_key(b, a[b]) != self.ent_key[e][b]:
                        same = False
                        break
                if same:
                    break
            else:
                break
            if self.ent_nothing[e] and not nothing_ok:
                break
            if not free_bit and self.ent_dfree[e] > 0:
                nothing_ok = False
            same = True
            for b in range(N_PK):
                cc = a[b] - self.ent_used[e][b]
                if cc != cw[b]:
                    same = False
                cw[b] = cc
            if same and single:
                # a fixed point: every slot left is this one
                m = (n if n < WALK_MAX else WALK_MAX) - walked
                counts[e] += m
                walked += m
                break
            counts[e] += 1
            walked += 1
            if not single:
                seq.push_back(e)
                if walked >= TICKWISE_MAX:
                    break
        return walked

    cdef int64_t closed_walk(self, int64_t n, int64_t* counts, int64_t* cw) noexcept nogil:
        """The budget walk of ``try_bulk_exact`` in closed form, for its common case (0: it does not
        apply, walk slot by slot).  One budget varies, the others stay full (each slot leaves them
        at least their cap); the varying one has one page cost c, and every slot spends it in
        whole units of M = m c (m = 1: pages; m = 2: a page in and its victim out on a shared
        SSD, each checked before either is spent), floor((A + s) / M) units of a budget A, with
        s = M - c.  Then y = carry + s turns by the slot's length T modulo M, and n slots spend
        floor((y + n T) / M) units: the slots of each unit count follow without a step per slot."""
        cdef int64_t T = self.slot_units, kk, c, M, s, c0, y0, S, tot, n_hi, ylast, u, u_lo, k, klo, khi
        cdef int b, e, f, vb = -1, m, e_lo, e_hi, e_last, i
        cdef bint st, ok
        cdef int64_t units[NREC]
        for b in range(N_PK):
            st = cw[b] >= self.cap[b]
            if st:
                kk = self.budget_key(b, self.cap[b] + T)
                for e in range(self.n_rec):
                    if self.ent_used[e][b] > T or self.ent_key[e][b] != kk:
                        st = False
                        break
            if not st:
                if vb >= 0:
                    return 0
                vb = b
        if vb < 0 or self.bc2[vb] >= 0:
            return 0
        c = self.bc1[vb]
        if c <= 0 or self.cap[vb] != c - 1:
            return 0
        c0 = cw[vb] if cw[vb] < self.cap[vb] else self.cap[vb]
        for m in range(1, 5):
            M = m * c
            s = M - c
            y0 = c0 + s
            if y0 < 0 or y0 >= M:
                continue
            ok = True
            for e in range(self.n_rec):
                k = self.ent_key[e][vb]
                # a budget below 0 (a page over, carried) fits nothing: key -1, no unit (A + s >= 0)
                units[e] = (k * c + s) // M if k >= 0 else 0
                if self.ent_used[e][vb] != units[e] * M:
                    ok = False
                    break
            if not ok:
                continue
            # every key the turning budget reaches is in the table
            klo = (T - s) // c if T >= s else -1
            khi = (T - s + M - 1) // c if T - s + M - 1 >= 0 else -1
            for k in range(klo, khi + 1):
                for e in range(self.n_rec):
                    if self.ent_key[e][vb] == k:
                        break
                else:
                    ok = False
                if not ok:
                    break
            if not ok:
                continue
            # slots that spend the same units move the same pages
            for e in range(self.n_rec):
                for f in range(e):
                    if units[f] != units[e]:
                        continue
                    for i in range(SEQ_MAX):
                        if (self.ent_sqv[e][i] != self.ent_sqv[f][i] or self.ent_sqin[e][i] != self.ent_sqin[f][i]
                                or self.ent_sqpre[e][i] != self.ent_sqpre[f][i]):
                            ok = False
                    for i in range(5):
                        if self.ent_traffic[e][i] != self.ent_traffic[f][i]:
                            ok = False
            if not ok:
                continue
            break
        else:
            return 0
        u_lo = T // M
        e_lo = e_hi = -1
        for e in range(self.n_rec):
            if units[e] == u_lo:
                e_lo = e
            if units[e] == u_lo + 1:
                e_hi = e
        if e_lo < 0 or (T % M and e_hi < 0):
            return 0
        if n > ((<int64_t>1) << 62) // T - 1:
            n = ((<int64_t>1) << 62) // T - 1
        if n < 1:
            return 0
        S = y0 + n * T
        tot = S // M
        n_hi = tot - n * u_lo
        if n_hi < 0 or n_hi > n or (n_hi and e_hi < 0):
            return 0
        counts[e_lo] += n - n_hi
        if n_hi:
            counts[e_hi] += n_hi
        # the last slot's entry leaves the full budgets their carry
        ylast = (y0 + (n - 1) * T) % M
        e_last = e_hi if (ylast + T) // M > u_lo else e_lo
        for b in range(N_PK):
            if b != vb:
                cw[b] = self.cap[b] + T - self.ent_used[e_last][b]
        cw[vb] = S % M - s
        return n

    # ---- a bulk repeat's streams (apply_entries, try_bulk): what the recorded slots did, n pages
    # at once; ``tl``: the timeline's pages per channel, or NULL (try_bulk feeds it per slot shape)

    cdef int bulk_victims(self, int8_t d, int64_t left, bint vpf, int64_t* tl) except -1 nogil:
        """``left`` victim pages leave the GPU for ``d``, as the evictor names them."""
        cdef victim_t v
        cdef int64_t k
        while left > 0:
            v = self.ev.find_victim(vpf)
            if not v.found or v.seglen <= 0:
                with gil:
                    raise RuntimeError("internal: bulk repeat ran out of victims")
            k = v.seglen if v.seglen < left else left
            if d == TIER_HOST:
                self.pt.host_used += k
                if self.clean(v.tensor):
                    self.adv_st[AS_READDUP_CLEAN] += k     # drops, as bring_in counts them
            if tl != NULL:
                if d == TIER_HOST:
                    tl[TL_EVICT_HOST] += k
                elif d == TIER_SSD:
                    tl[TL_EVICT_SSD] += k
            self.take_victims(&v, k, d, vpf, -1)
            left -= k
        return 0

    cdef int bulk_in(self, int q, int64_t left, int64_t* tl) except -1 nogil:
        """``left`` pages from the front of queue ``q`` arrive on the GPU."""
        cdef queue_run f
        cdef int64_t k
        cdef bint fault = q <= Q_FAULT_ALLOC
        while left > 0:
            if self.qs[q].empty():
                with gil:
                    raise RuntimeError(f"internal: bulk repeat emptied queue {q}")
            f = self.qs[q].front()
            k = f.count if f.count < left else left
            if f.src == TIER_HOST:
                self.pt.host_used -= k
            elif f.src == TIER_NOT_PRESENT:
                self.pt.n_allocated += k
            self.pt.gpu_free -= k
            if self.debug_log:
                self.log.push_back(2); self.log.push_back(self.tb); self.log.push_back(f.start)
                self.log.push_back(k); self.log.push_back(f.src)
            self.pt.assign(f.tensor, f.start, f.start + k, TIER_GPU, 0)
            self.pt.arrive(f.start, k, f.tensor)
            self.pop(q, k)
            if fault:
                self.in_fault[f.src] += k
            else:
                self.in_hint[f.src] += k
            if tl != NULL:
                if f.src == TIER_HOST:
                    tl[TL_HOST_FAULT if fault else TL_HOST_PREFETCH] += k
                elif f.src == TIER_SSD:
                    tl[TL_SSD_FAULT if fault else TL_SSD_PREFETCH] += k
            left -= k
        return 0

    cdef int bulk_preevict(self, int q, int8_t d, int64_t left, int64_t* tl) except -1 nogil:
        """``left`` pages from the front of pre-eviction queue ``q`` leave the GPU for ``d``."""
        cdef queue_run f
        cdef int64_t k
        while left > 0:
            if self.qs[q].empty():
                with gil:
                    raise RuntimeError(f"internal: bulk repeat emptied queue {q}")
            f = self.qs[q].front()
            k = f.count if f.count < left else left
            if d == TIER_HOST:
                self.pt.host_used += k
            if tl != NULL:
                tl[TL_PREEVICT_HOST if d == TIER_HOST else TL_PREEVICT_SSD] += k
            self.pt.assign(f.tensor, f.start, f.start + k, d, 0)
            self.pt.depart(f.start, k)
            self.pt.gpu_free += k
            self.pop(q, k)
            left -= k
        return 0

    cdef int apply_entries(self, int64_t* counts, int64_t* seq, int64_t n_slots) except -1 nogil:
        """Apply n_slots slots of the table: merged (seq NULL: counts[e] slots of entry e, each
        stream's pages at once) or slot by slot in the order seq gives."""
        cdef int64_t r, t, reps
        cdef int i, e
        cdef traffic_row* st
        cdef int64_t vk[SEQ_MAX]
        cdef int64_t ink[SEQ_MAX]
        cdef int64_t prek[SEQ_MAX]
        cdef int64_t tl_pages[TL_N]          # the timeline's pages per channel (when recording)
        cdef int64_t start = self.tb
        for i in range(TL_N):
            tl_pages[i] = 0
        self.replaying = True
        reps = 1 if seq == NULL else n_slots
        for r in range(reps):
            for i in range(SEQ_MAX):
                vk[i] = ink[i] = prek[i] = 0
            if seq == NULL:
                for e in range(self.n_rec):
                    for i in range(self.shp_n_sq_v):
                        vk[i] += counts[e] * self.ent_sqv[e][i]
                    for i in range(self.shp_n_sq_in):
                        ink[i] += counts[e] * self.ent_sqin[e][i]
                    for i in range(self.shp_n_sq_pre):
                        prek[i] += counts[e] * self.ent_sqpre[e][i]
            else:
                e = <int>seq[r]
                for i in range(self.shp_n_sq_v):
                    vk[i] = self.ent_sqv[e][i]
                for i in range(self.shp_n_sq_in):
                    ink[i] = self.ent_sqin[e][i]
                for i in range(self.shp_n_sq_pre):
                    prek[i] = self.ent_sqpre[e][i]
            for i in range(self.shp_n_sq_v):
                self.bulk_victims(self.shp_sq_vdest[i], vk[i], self.shp_vpf, tl_pages)
            for i in range(self.shp_n_sq_in):
                self.bulk_in(self.shp_sq_inq[i], ink[i], tl_pages)
            for i in range(self.shp_n_sq_pre):
                self.bulk_preevict(self.shp_sq_preq[i], self.shp_sq_predest[i], prek[i], tl_pages)
        self.replaying = False
        st = &self.traffic[self.iteration]
        for e in range(self.n_rec):
            if seq == NULL:
                t = counts[e]
            else:
                t = 0
                for r in range(n_slots):
                    if seq[r] == e:
                        t += 1
            st.alloc += t * self.ent_traffic[e][0]
            st.ssd_to_gpu += t * self.ent_traffic[e][1]
            st.host_to_gpu += t * self.ent_traffic[e][2]
            st.gpu_to_ssd += t * self.ent_traffic[e][3]
            st.gpu_to_host += t * self.ent_traffic[e][4]
        self.tb += n_slots * self.tick
        self.n_slots_bulk += n_slots
        if self.tl is not None:
            for i in range(TL_N):
                if tl_pages[i]:
                    self.tl.add(i, start, self.tb, tl_pages[i])
        return 0

    cdef int try_bulk(self, int64_t next_kernel) except -1 nogil:
        """Repeat the slot just done as many times as provably identical, in one pass.

        A slot is a deterministic function of its start state: the scalar state (host
        pages, free frames, quotas, which queues are empty) and the treatment of the
        pages at the queues' fronts and at the victim position.  The slot just done
        recorded what it did: per stream totals (``op_*``) and, in order, which queues
        brought how many pages in (``sq_in*``) and how many victims went where
        (``sq_v*``).  If the same start state recurs (or stays clear of every
        threshold) and the next pages are treated alike, the next n slots do exactly
        the same; their effect is applied here: all at once when each kind of
        operation has a single stream, slot by slot otherwise (the arrival order of
        pages inside a slot interleaves the streams).
        """
        cdef int64_t n = BIG, m, d_free, d_host, c, span, need, V = self.tick_victims
        cdef int i, q, q_in = -1, n_in = 0, cycle = -1
        cdef int8_t d_vict = -1
        cdef bint pf_nonempty = False, in_pf, single
        if self.exact:
            return self.try_bulk_exact(next_kernel)
        # (GPU pages in transfer only matter for victims: the evictor's span accounts for them)
        if self.victim_src == 3 or (V and self.rec_vdest == -2) or self.seq_overflow:
            self.bulk_stat[B_MIXED_VICTIMS] += 1
            return 0
        if self.stalled and (self.victim_src & 1 or self.pt.cursor >= 0):
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
            elif self.op_kind[i] == OP_VICTIMS:
                d_vict = self.op_dest[i] if d_vict == -1 or d_vict == self.op_dest[i] else -3
        # Streams of pre-evictions alone (no page in, no victim) also merge: a page leaves the
        # same tier for the same destination whichever stream goes first, the queues are
        # distinct, and the arrival order of the pages that stay does not change.  The evictor's
        # cursor goes to the head when its page leaves, and stays at the head from then on,
        # whatever the order.  With the debug log on, the slots are applied one by one, so the
        # log keeps the order a slot gives.
        single = ((n_in <= 1 and d_vict != -3 and self.n_sq_pre <= 1)
                  or (n_in == 0 and V == 0 and not self.debug_log))
        if V and self.rec_vreq:
            # re-queued victims must join a queue whose treatment they cannot change:
            # the queue being drained, or one that stays non-empty and untouched
            if d_vict == -3:
                self.bulk_stat[B_REQUEUE] += 1
                return 0
            q = fault_queue_of(d_vict)
            if single and q == q_in and V == self.consumed[q_in]:
                # it gets back per slot exactly what it gives: its pages form one stream
                cycle = q
            elif not (q == q_in and single) and not (self.qlen0[q] > 0 and self.consumed[q] == 0):
                self.bulk_stat[B_REQUEUE] += 1
                return 0
        # time: only slots strictly before the next kernel event
        if next_kernel >= 0:
            if self.tb >= next_kernel:
                self.bulk_stat[B_KERNEL_NEXT] += 1
                return 0
            m = (next_kernel - self.tb + self.tick - 1) // self.tick
            if m < n:
                n = m
        # queues: every consumed queue stays non-empty, with pages treated alike
        for q in range(N_QUEUES):
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
            if q >= Q_EVICT_SSD:
                span = self.queue_span(q, need, TIER_GPU, True, False)   # a pinned page would be re-queued
            else:
                in_pf = q == Q_FAULT_SSD or q == Q_FAULT_HOST or q == Q_FAULT_ALLOC
                if self.ev.fault_changes_victims() and not in_pf and self.rec_in_req == -2:
                    self.bulk_stat[B_MIXED_PAGES] += 1     # the running kernel's pages and others: victims differ
                    return 0
                span = self.queue_span(q, need, self.qs[q].front().src,
                                       self.ev.fault_changes_victims() and not in_pf, self.rec_in_req == 1)
            m = (span - 1) // c
            if m < n:
                n = m
        # a waiting kernel must not become ready inside the bulk
        if self.waiting:
            for q in range(3):
                if self.qlen[q] and (self.consumed[q] == 0 or q == cycle or self.qlen[q] > n * self.consumed[q]):
                    pf_nonempty = True
            if not pf_nonempty and n_in == 1:
                # it waits for pages still queued for prefetch: stop before the last of them lands
                m = self.bulk_before_ready(q_in, n, self.consumed[q_in])
                if m < n:
                    n = m
                pf_nonempty = n >= 1
            if not pf_nonempty:
                self.bulk_stat[B_KERNEL_READY] += 1
                return 0
        # free frames and host pages
        d_free = self.pt.gpu_free - self.tick_free0
        d_host = self.pt.host_used - self.tick_host0
        if d_free < 0:
            if V > 0 or self.pt.gpu_free < 1:
                self.bulk_stat[B_FRAMES_RUN_OUT] += 1
                return 0
            m = (self.pt.gpu_free - 1) // (-d_free)
            if m < n:
                n = m
        elif d_free > 0:
            if n_in:
                self.bulk_stat[B_FRAMES_FREED_IN] += 1
                return 0
            for q in range(N_QUEUES):
                if self.consumed[q] == 0 and self.qlen[q]:
                    self.bulk_stat[B_FRAMES_FREED_BLOCKED] += 1
                    return 0
        if d_host != 0:
            if self.tick_host0 >= self.pt.host_line or self.host_peak >= self.pt.host_line:
                self.bulk_stat[B_HOST_LINE] += 1
                return 0
            if d_host > 0:
                m = (self.pt.host_line - 1 - self.host_peak) // d_host
                if m < n:
                    n = m
        # victims
        if V > 0:
            need = n * V + 1 if n < HUGE_N else BIG
            span = self.ev.victim_span(self.rec_vpf, need, self.rec_vreq, self.rec_vdest)
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
            self.apply_bulk(n, 1)
            self.bulk_stat[B_MERGED] += 1
            if self.n_sq_pre > 1:
                self.bulk_stat[B_PRE_MERGED] += 1
        else:
            self.apply_bulk(1, n)
            self.bulk_stat[B_TICKWISE] += 1
        return 0

    cdef int apply_bulk(self, int64_t scale, int64_t repeat) except -1 nogil:
        """Apply the recorded slot `repeat` times, each with its page counts times `scale`."""
        cdef int64_t r, t
        cdef int i
        cdef traffic_row* st
        self.replaying = True
        for r in range(repeat):
            # victims, in their recorded order and destinations
            for i in range(self.n_sq_v):
                self.bulk_victims(self.sq_vdest[i], scale * self.sq_vk[i], self.rec_vpf, NULL)
            # pages brought in, queue by queue in their recorded order
            for i in range(self.n_sq_in):
                self.bulk_in(self.sq_inq[i], scale * self.sq_ink[i], NULL)
            # pre-evictions
            for i in range(self.n_sq_pre):
                self.bulk_preevict(self.sq_preq[i], self.sq_predest[i], scale * self.sq_prek[i], NULL)
        self.replaying = False
        t = scale * repeat
        if self.in_n or self.out_n:
            st = &self.traffic[self.iteration]
            st.alloc += t * self.alloc_n
            st.ssd_to_gpu += t * self.in_ssd
            st.host_to_gpu += t * self.in_cpu
            st.gpu_to_ssd += t * self.out_ssd
            st.gpu_to_host += t * self.out_cpu
            if self.tl is not None:
                self.tl_slots(self.tb, t)
        self.tb += t * self.tick
        self.n_slots_bulk += t
        return 0

    cdef void tl_slots(self, int64_t start, int64_t n) noexcept nogil:
        """The timeline: ``n`` slots like the current one from ``start`` moved its pages."""
        cdef int64_t end = start + n * self.tick
        self.tl.add(TL_HOST_FAULT, start, end, n * (self.in_cpu - self.pf_cpu))
        self.tl.add(TL_HOST_PREFETCH, start, end, n * self.pf_cpu)
        self.tl.add(TL_SSD_FAULT, start, end, n * (self.in_ssd - self.pf_ssd))
        self.tl.add(TL_SSD_PREFETCH, start, end, n * self.pf_ssd)
        self.tl.add(TL_EVICT_HOST, start, end, n * (self.out_cpu - self.pre_cpu))
        self.tl.add(TL_PREEVICT_HOST, start, end, n * self.pre_cpu)
        self.tl.add(TL_EVICT_SSD, start, end, n * (self.out_ssd - self.pre_ssd))
        self.tl.add(TL_PREEVICT_SSD, start, end, n * self.pre_ssd)

    # ======================================================================
    # Python access
    # ======================================================================
    def queue_lengths(self):
        return [self.qlen[i] for i in range(N_QUEUES)]

    def queues(self):
        """Each queue's runs as (first page, pages, tensor, source tier)."""
        cdef size_t j
        out = []
        for q in range(N_QUEUES):
            out.append([(self.qs[q][j].start, self.qs[q][j].count, self.qs[q][j].tensor, self.qs[q][j].src)
                        for j in range(self.qs[q].size())])
        return out

    def traffic_rows(self, int64_t iterations):
        """Per iteration traffic as (alloc, ssd->gpu, host->gpu, gpu->ssd, gpu->host) rows."""
        cdef int64_t i
        out = np.zeros((iterations, 5), np.int64)
        for i in range(iterations):
            out[i, 0] = self.traffic[i].alloc
            out[i, 1] = self.traffic[i].ssd_to_gpu
            out[i, 2] = self.traffic[i].host_to_gpu
            out[i, 3] = self.traffic[i].gpu_to_ssd
            out[i, 4] = self.traffic[i].gpu_to_host
        return out

    def boundaries(self):
        return np.array(self.bounds, dtype=np.int64).reshape(-1, 2)

    def debug_rows(self):
        return np.array(self.log, dtype=np.int64).reshape(-1, 5)

    def bulk_reasons(self):
        return {BULK_REASONS[i]: self.bulk_stat[i] for i in range(B_COUNT) if self.bulk_stat[i]}

    def slot_counts(self):
        return {"detailed": self.n_slots_detailed, "bulk": self.n_slots_bulk, "idle": self.n_slots_idle}
