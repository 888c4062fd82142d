# cython: language_level=3
"""The detailed preset's kernel runner (``detailed_model.md`` §6).

``KernelRunner`` is a ``FaultModel`` that runs kernels itself: a kernel's time emerges
from the far-fault handler (``_uvm.FarFaultHandler``: fault buffer, batches, prefetch,
eviction, transfers through the PCIe link and the SSD's FTL), not from a formula.

* The kernel's work is its ideal time t11 plus what address translation adds (the
  translator's estimate for the kernel, asked at its start), spread evenly over its
  accesses.  Its accesses are its tensors' 4 KiB pages, inputs then outputs, each tensor
  split into ``sms`` contiguous shares, SM s sweeping share s of each in page order: SM s
  accesses its page j (of n) at ``start + delay_s + j * work / n``.
* An SM does not step page by page: at each step it asks the handler how many pages from
  its position are on the GPU (up to its share's end and its VA block's end) and moves
  over them, its next step at the nominal cycle of the page after them.  A page in
  flight (a batch's or a hint's transfer not done) makes it wait until it arrives.  A
  page not on the GPU raises a fault: the SM stops until a batch has brought it; other
  SMs go on until they fault too.  Once a step has begun, its pages count as accessed
  (an eviction after that does not send the SM back).
* Batches: whenever the handler's buffer holds faults, a batch starts at the handler's
  ``next_batch_time`` (after the previous batch and the first fault it takes); it moves
  what it decided, and every SM waiting on a page it brought resumes at its end.  At one
  cycle SM steps come before a batch, so an SM resumed by a batch moves over its pages
  before the next batch can evict them.
* The kernel ends when every SM has finished its share: ``start + work + the largest
  delay``.  ``work - t11`` is the translation component and the rest beyond work is
  the kernel's stall (its slowest SM's wait).  A kernel whose tensors are all on the GPU
  with nothing in flight takes exactly ``work`` (no SM is simulated).

Nothing else acts on the system while a kernel runs (hints apply at kernel begins; the
link and the SSD compute their completions when a transfer is submitted), so a kernel
runs in one call, its steps and batches ordered by a small heap of SMs.  Costs follow
the SMs' steps (runs of resident pages, faults) and the handler's batches, never the
pages of a tensor.

``PageTableTiers`` makes the replay's page table the handler's tier map, so the per-tensor
counters, the GPU's arrival list (which the policies' evictors walk), the occupancy and
conservation counters and the per-iteration traffic stay exact.  ``EvictorPicker`` lets a
policy's evictor (DeepUM+, Belady, a user's score) name the handler's victims.

Inputs are trusted: ``simulator.py`` validated them.
"""
from libc.stdint cimport int8_t, int32_t, int64_t
from libcpp.vector cimport vector
from cython.operator cimport dereference as deref, preincrement as inc

from ..core._types cimport (cycle_t, page_t, kernel_row, moved_row, traffic_row, victim_t,
                      TIER_NOT_PRESENT, TIER_SSD, TIER_HOST, TIER_GPU,
                      HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE, HINT_ADVISE_PREFER_GPU,
                      MOVE_FAULT, MOVE_PREFETCH, MOVE_HINT, MOVE_EVICT, uvm_move,
                      TL_HOST_FAULT, TL_HOST_PREFETCH, TL_SSD_FAULT, TL_SSD_PREFETCH,
                      TL_EVICT_HOST, TL_PREEVICT_HOST, TL_EVICT_SSD, TL_PREEVICT_SSD)
from ._pagetable cimport PageTable, g10_runmap
from ._evict cimport Evictor
from ._fault cimport FaultModel
from ..tlb._tlb cimport Translator, NoTranslation
from ._uvm cimport TierMap, VictimPicker, FarFaultHandler, FAULT_RESIDENT
from ..link._pcie cimport LinkCore
from ..ssd._ssd cimport SSDCore

import numpy as np

cdef extern from "g10core/tlb_math.h" nogil:
    void g10_muldivmod(int64_t a, int64_t b, int64_t n, int64_t* q, int64_t* r)


cdef inline int64_t imax(int64_t a, int64_t b) noexcept nogil:
    return a if a > b else b


cdef inline int64_t imin(int64_t a, int64_t b) noexcept nogil:
    return a if a < b else b


# ---- the page table as the handler's tier map ------------------------------------------

cdef class PageTableTiers(TierMap):
    """Tiers from the replay's page table; every move goes through ``set_tier``."""

    def __init__(self, PageTable pt, int64_t iterations, lpn_first=None, bint keep_arrivals=True):
        """``lpn_first``: per tensor its first logical page on the SSD (None: its first page):
        the SSD holds the trace's footprint, not the VA-block padding between tensors.
        ``keep_arrivals``: keep the page table's GPU arrival list (False when no evictor reads it:
        it was ~19 % of a Base UVM run)."""
        cdef traffic_row zero
        cdef int64_t[::1] v
        self.pt = pt
        self._keep = None
        self.lpn_first = NULL
        if lpn_first is not None:
            self._keep = np.ascontiguousarray(lpn_first, dtype=np.int64)
            v = self._keep
            self.lpn_first = &v[0]
        self.freeing = False
        self.iteration = 0
        self.keep_arrivals = keep_arrivals
        zero.alloc = zero.ssd_to_gpu = zero.host_to_gpu = zero.gpu_to_ssd = zero.gpu_to_host = 0
        self.traffic.assign(iterations + 1, zero)

    cdef int8_t tier_run(self, page_t page, page_t limit, page_t* run_end) noexcept nogil:
        cdef g10_runmap.iterator it = self.pt.run_at(page)
        run_end[0] = imin(deref(it).second.end, limit)
        return deref(it).second.loc

    cdef page_t lpn(self, page_t page) noexcept nogil:
        cdef int32_t t
        if self.lpn_first == NULL:
            return page
        t = self.pt.tensor_of(page)
        return page - self.pt.t_first[t] + self.lpn_first[t]

    cdef void set_tier(self, page_t first, page_t end, int8_t tier) noexcept nogil:
        """Pages [first, end) are now in ``tier``: runs, arrival list, counters.  The range may
        span tensors (the handler merges the ranges a batch brings in, and two tensors lie
        side by side when the first ends on a VA block): each tensor's part is set apart, as
        its counters and its chain in the arrival list are its own."""
        cdef int32_t t
        cdef page_t stop
        while first < end:
            t = self.pt.tensor_of(first)
            stop = imin(end, self.pt.t_first[t] + self.pt.t_np[t])
            if stop <= first:
                return          # not a tensor's page (the handler moves allocations only)
            self._set_tier_in(t, first, stop, tier)
            first = stop

    cdef void _set_tier_in(self, int32_t t, page_t first, page_t end, int8_t tier) noexcept nogil:
        """set_tier for pages [first, end) of tensor t."""
        cdef page_t a = first, b
        cdef int64_t n
        cdef int8_t old
        cdef g10_runmap.iterator it, first_run
        cdef traffic_row* tr = &self.traffic[self.iteration]
        # the tensor's runs are contiguous, and the arrival list's updates below leave the
        # run map alone: one search, then the runs in order, and the assignment from the first
        it = self.pt.run_at(first)
        first_run = it
        while a < end:
            old = deref(it).second.loc
            b = imin(deref(it).second.end, end)
            n = b - a
            if old != tier:
                if old == TIER_GPU:
                    if self.keep_arrivals:
                        self.pt.depart(a, n)
                    self.pt.gpu_free += n
                    if tier == TIER_SSD:
                        tr.gpu_to_ssd += n
                    elif tier == TIER_HOST:
                        if not self.dropping_clean:      # read duplicates: dropped, no bytes moved
                            tr.gpu_to_host += n
                    elif self.freeing:
                        self.pt.n_freed_gpu += n
                    else:
                        self.pt.n_dropped += n
                elif old == TIER_HOST:
                    self.pt.host_used -= n
                    if tier == TIER_NOT_PRESENT and self.freeing:
                        self.pt.n_freed_host += n
                if tier == TIER_GPU:
                    if self.keep_arrivals:
                        self.pt.arrive(a, n, t)
                    self.pt.gpu_free -= n
                    tr.alloc += n
                    if old == TIER_SSD:
                        tr.ssd_to_gpu += n
                    elif old == TIER_HOST:
                        tr.host_to_gpu += n
                    else:
                        self.pt.n_allocated += n
                elif tier == TIER_HOST:
                    self.pt.host_used += n
                    if self.pt.host_used > self.pt.host_line:
                        self.pt.host_overflow = True
            a = b
            inc(it)
        self.pt.assign_at(t, first_run, first, end, tier, 0)

    def traffic_rows(self, int64_t iterations):
        """Per iteration traffic as (alloc, ssd->gpu, host->gpu, gpu->ssd, gpu->host) rows."""
        out = np.zeros((iterations, 5), np.int64)
        cdef int64_t i
        for i in range(iterations):
            out[i] = (self.traffic[i].alloc, self.traffic[i].ssd_to_gpu, self.traffic[i].host_to_gpu,
                      self.traffic[i].gpu_to_ssd, self.traffic[i].gpu_to_host)
        return out


# ---- transfer-busy periods ---------------------------------------------------------------

cdef inline void note_busy(vector[int64_t]& busy, cycle_t a, cycle_t b) noexcept nogil:
    """The link was busy over [a, b): append it to ``busy`` (start, end pairs).  An interval
    that starts inside the last one, or where it ends, joins it (busy_periods would merge
    them anyway), so the list grows with the busy periods, not the batches (SENet154 under
    Belady: 1.6 M batches, 26 MB here and ~150 MB more while they were sorted at the end).
    Empty intervals are dropped, as busy_periods drops them."""
    cdef size_t n = busy.size()
    if b <= a:
        return
    if n >= 2 and busy[n - 2] <= a <= busy[n - 1]:
        if b > busy[n - 1]:
            busy[n - 1] = b
        return
    busy.push_back(a)
    busy.push_back(b)


def busy_periods(flat):
    """Busy intervals (a flat array of start, end pairs, in any order) merged into periods
    (intervals that overlap or touch join), as (cycle, 1 begin / 0 end) rows, the batcher's
    format."""
    iv = np.asarray(flat, np.int64).reshape(-1, 2)
    iv = iv[iv[:, 1] > iv[:, 0]]
    if not iv.size:
        return np.zeros((0, 2), np.int64)
    iv = iv[np.argsort(iv[:, 0], kind="stable")]
    ends = np.maximum.accumulate(iv[:, 1])
    # a new period starts where an interval begins after every earlier one ended
    new = np.ones(len(iv), bool)
    new[1:] = iv[1:, 0] > ends[:len(ends) - 1]
    starts = iv[new, 0]
    last = np.flatnonzero(new)
    stops = ends[np.append(last[1:] - 1, len(iv) - 1)]
    out = np.empty((2 * len(starts), 2), np.int64)
    out[0::2, 0] = starts
    out[0::2, 1] = 1
    out[1::2, 0] = stops
    out[1::2, 1] = 0
    return out


def coalesced_busy_periods(const int64_t[:, ::1] intervals):
    """busy_periods of (start, end) rows recorded one by one through note_busy, as the runner
    records them (for tests: the result must not depend on the coalescing)."""
    cdef vector[int64_t] busy
    cdef Py_ssize_t i
    for i in range(intervals.shape[0]):
        note_busy(busy, intervals[i, 0], intervals[i, 1])
    return busy_periods(np.asarray(busy, np.int64)), busy.size() // 2


# ---- a policy's evictor names the victims ---------------------------------------------

cdef class EvictorPicker(VictimPicker):
    """Victims from an ``_evict.Evictor`` over the page table (its rule, its cursor)."""

    def __init__(self, PageTable pt, Evictor ev):
        self.pt = pt
        self.ev = ev

    cdef bint pick(self, bint for_fault, int64_t need, int64_t block_pages, page_t* first, page_t* end,
                   int8_t* dest) noexcept nogil:
        cdef victim_t v = self.ev.find_victim(for_fault)
        cdef int64_t k, nxt
        if not v.found or v.seglen <= 0:
            return False
        k = imin(imin(v.seglen, need), (v.page // block_pages + 1) * block_pages - v.page)
        nxt = self.pt.next_page(v.page + k - 1)
        self.ev.taken(&v, k, for_fault, nxt)
        first[0] = v.page
        end[0] = v.page + k
        dest[0] = TIER_NOT_PRESENT if v.dest == TIER_NOT_PRESENT else -1
        return True


# ---- the runner ------------------------------------------------------------------------

cdef class KernelRunner(FaultModel):
    """Kernels on SMs against the far-fault handler.

    ``params``: the handler's ``uvm_params`` (``uvm.FaultHandlerSpec.compiled_params``);
    ``link``, ``ssd``: the devices' compiled cores; ``translator``: the TLB's core (or None);
    ``arrays``: ``t11``, ``in_off``, ``in_t``, ``out_off``, ``out_t``, and ``w_off``, ``w_t`` (every
    tensor a kernel writes; default: its outputs) (the replay's);
    ``sms``: SMs per kernel; ``use_evictor``: the policy's evictor names the victims (else
    the handler's least-recently-migrated rule); ``iterations``: for the traffic table;
    ``max_idle_steps``: livelock guard; ``lpn_first``: per tensor its first logical page on
    the SSD (the trace's first page when the replay's are VA-block aligned).  ``bind`` (the replay calls it) gives it the page
    table and the evictor and builds the handler.
    """

    def __init__(self, dict params, LinkCore link, SSDCore ssd, Translator translator, dict arrays,
                 int32_t sms, bint use_evictor, int64_t iterations, int64_t max_idle_steps=1 << 20,
                 lpn_first=None):
        self._lpn_first = lpn_first
        self._spec = {"params": dict(params), "link": link, "ssd": ssd, "use_evictor": bool(use_evictor),
                      "iterations": int(iterations)}
        self.tr = translator if translator is not None else NoTranslation()
        keep = {}
        def arr(name, dtype):
            a = np.ascontiguousarray(arrays[name], dtype=dtype)
            keep[name] = a if a.size else np.zeros(1, dtype)
            return keep[name]
        cdef int64_t[::1] v64
        cdef int32_t[::1] v32
        v64 = arr("t11", np.int64); self.t11 = &v64[0]
        v64 = arr("in_off", np.int64); self.in_off = &v64[0]
        v32 = arr("in_t", np.int32); self.in_t = &v32[0]
        v64 = arr("out_off", np.int64); self.out_off = &v64[0]
        v32 = arr("out_t", np.int32); self.out_t = &v32[0]
        # the tensors each kernel writes (outputs and tensors read and written); without them, its outputs
        if "w_off" not in arrays:
            arrays = dict(arrays, w_off=arrays["out_off"], w_t=arrays["out_t"])
        v64 = arr("w_off", np.int64); self.w_off = &v64[0]
        v32 = arr("w_t", np.int32); self.w_t = &v32[0]
        self._keep = keep
        self.sms = sms
        self.max_idle_steps = max_idle_steps
        self.livelocked = False
        self.inflight_until = 0
        self.n_fast = self.n_simulated = self.n_steps = self.n_batches = 0
        self.n_resumes = self.n_inflight_waits = 0
        self.hint_in[0] = self.hint_in[1] = self.hint_in[2] = self.hint_in[3] = 0
        self.tl = None

    def bind(self, PageTable pt, Evictor ev):
        """The replay's page table and evictor: build the tier map, the picker and the handler."""
        spec = self._spec
        self.pt = pt
        self.tiers = PageTableTiers(pt, spec["iterations"], self._lpn_first, spec["use_evictor"])
        picker = EvictorPicker(pt, ev) if spec["use_evictor"] else None
        self.handler = FarFaultHandler(spec["params"], spec["link"], spec["ssd"], self.tiers, self.tr, picker)
        if spec.get("thrashing") is not None:
            self.handler.set_thrashing(spec["thrashing"])

    def set_thrashing(self, dict params):
        """The handler's thrashing rules (``uvm.FaultHandlerSpec.thrashing_params``), for ``bind``."""
        self._spec["thrashing"] = dict(params)

    @property
    def fault_handler(self):
        return self.handler

    @property
    def translator(self):
        return self.tr

    cdef bint runs_kernels(self) noexcept nogil:
        return True

    cdef bint bulk_safe(self) noexcept nogil:
        return False

    # ---- hints: the cudaMemPrefetchAsync / eviction / free paths of the handler ----

    cdef int apply_hint(self, int32_t tensor, int8_t action, int64_t now, int64_t iteration) except -1 nogil:
        cdef page_t first = self.pt.t_first[tensor], end = first + self.pt.t_np[tensor]
        cdef cycle_t done
        cdef size_t j
        # the hint is part of its kernel's iteration: its traffic counts there, with its pages
        self.tiers.iteration = iteration
        if action >= HINT_ADVISE_PREFER_GPU:
            # memory advice: the handler keeps it; nothing moves now
            self.handler.advise(first, end, action)
            return 0
        if action == HINT_TO_GPU:
            done = self.handler.prefetch_range(first, end, first, end, now)
            for j in range(self.handler.moves.size()):
                if self.handler.moves[j].cause == MOVE_HINT and self.handler.moves[j].dst == TIER_GPU:
                    self.hint_in[self.handler.moves[j].src] += self.handler.moves[j].end - self.handler.moves[j].first
        elif action == HINT_TO_SSD or action == HINT_TO_HOST:
            done = self.handler.evict_range(first, end, TIER_SSD if action == HINT_TO_SSD else TIER_HOST, now)
        else:
            self.tiers.freeing = True
            self.handler.release_range(first, end)
            self.tiers.freeing = False
            return 0
        if self.handler.moves.size():
            note_busy(self.busy, now, imax(done, now))
            if self.tl is not None:
                self._tl_moves(1 if action == HINT_TO_GPU else 2, now, imax(done, now), 0)
            if action == HINT_TO_GPU and done > self.inflight_until:
                self.inflight_until = done
        return 0

    # ---- a kernel ----

    cdef bint _all_ready(self, int64_t k, cycle_t now) noexcept nogil:
        cdef size_t i
        cdef int32_t t
        if self.inflight_until > now:
            return False
        for i in range(self.kt.size()):
            t = self.kt[i]
            if self.pt.cnt_ready[t] != self.pt.t_np[t]:
                return False
        return True

    cdef void _push(self, cycle_t t, int32_t s) noexcept nogil:
        cdef size_t i = self.heap_t.size(), p
        if self.top_held:                 # the SM being stepped goes back: reuse its place
            self.top_held = False
            self._sift_down(t, s)
            return
        self.heap_t.push_back(t)
        self.heap_s.push_back(s)
        while i > 0:
            p = (i - 1) >> 1
            if self.heap_t[p] < t or (self.heap_t[p] == t and self.heap_s[p] < s):
                break
            self.heap_t[i] = self.heap_t[p]
            self.heap_s[i] = self.heap_s[p]
            i = p
        self.heap_t[i] = t
        self.heap_s[i] = s

    cdef int32_t _hold_top(self, cycle_t* t) noexcept nogil:
        """The earliest SM (and its cycle), left at the heap's root while it steps: most steps
        end with it due again (_push), and taking the root's place then is one sift down, not
        a pop and a push.  _release_top ends the step."""
        t[0] = self.heap_t[0]
        self.top_held = True
        return self.heap_s[0]

    cdef void _release_top(self) noexcept nogil:
        """The held SM's step is over: off the heap, unless _push put it back."""
        if self.top_held:
            self.top_held = False
            self._drop_top()

    cdef void _drop_top(self) noexcept nogil:
        """Take the earliest SM off the heap."""
        cdef size_t n = self.heap_t.size() - 1
        cdef cycle_t x = self.heap_t[n]
        cdef int32_t s = self.heap_s[n]
        self.heap_t.pop_back()
        self.heap_s.pop_back()
        if n > 0:
            self._sift_down(x, s)

    cdef void _sift_down(self, cycle_t x, int32_t s) noexcept nogil:
        """Put (x, s) in the root's place and restore the heap order below it."""
        cdef size_t n = self.heap_t.size(), i = 0, c
        cdef cycle_t* ht = self.heap_t.data()
        cdef int32_t* hs = self.heap_s.data()
        # the comparisons are combined with & and |, not and/or: which child is earlier is a
        # coin toss, and a branch on it mispredicts half the time
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n:
                c += (ht[c + 1] < ht[c]) | ((ht[c + 1] == ht[c]) & (hs[c + 1] < hs[c]))
            if (ht[c] > x) | ((ht[c] == x) & (hs[c] > s)):
                break
            ht[i] = ht[c]
            hs[i] = hs[c]
            i = c
        ht[i] = x
        hs[i] = s

    cdef void _next_segment(self, sm_run* c, int32_t s) noexcept nogil:
        """Move SM s to the next tensor of which its share is not empty."""
        cdef int64_t S = self.sms, N, f
        cdef int32_t m = <int32_t>self.kt.size()
        c.seg += 1
        while c.seg < m:
            N = self.pt.t_np[self.kt[c.seg]]
            f = self.pt.t_first[self.kt[c.seg]]
            if (s + 1) * N // S > s * N // S:
                c.page = f + s * N // S
                c.seg_hi = f + (s + 1) * N // S
                return
            c.seg += 1

    cdef int _step(self, int32_t s, cycle_t t) except -1 nogil:
        """SM s at cycle t, due to access its next page: move over resident pages, or wait."""
        cdef sm_run* c = &self.sm[s]
        cdef int64_t r, q, rem
        cdef int32_t tid
        cdef cycle_t arr, t2
        cdef int code
        while True:
            arr = 0
            r = self.handler.resident_run(c.page, c.seg_hi, &arr)
            if r == 0:
                r = self._remote(c, t)            # mapped remotely: read over the link, no fault
            if r == 0:
                tid = self.kt[c.seg]
                code = self.handler.raise_fault(c.page, self.pt.t_first[tid],
                                                self.pt.t_first[tid] + self.pt.t_np[tid], t)
                if code == FAULT_RESIDENT:        # (resident_run said no: not expected)
                    c.delay += imax(self.handler.last_arrival, t) - t
                    self._push(imax(self.handler.last_arrival, t), s)
                    return 0
                c.wait_page = c.page
                c.wait_from = t
                self.waiting.push_back(s)
                return 0
            if arr > t:                           # in flight: usable once it arrives
                self.row.in_transfer_pages += r
                self.n_inflight_waits += 1
                c.delay += arr - t
                self._push(arr, s)
                return 0
            c.pos += r
            c.page += r
            if c.page >= c.seg_hi:
                self._next_segment(c, s)
            g10_muldivmod(c.pos, self.work, c.n, &q, &rem)
            t2 = self.start + c.delay + q
            if c.pos >= c.n:
                c.finish = imax(t2, t)
                return 0
            if t2 > t:
                if not self._next_again(t2, s):
                    self._push(t2, s)
                    return 0
                # its next step comes before any other SM's and any batch: take it now, as the
                # schedule would, without a trip through the heap (counted as the step it is)
                self.n_steps += 1
            t = t2

    cdef bint _next_again(self, cycle_t t, int32_t s) noexcept nogil:
        """Would SM s, the held root, due again at t, be the schedule's next step?  Only if it
        comes before the root's children (in (cycle, SM) order) and no batch is due first."""
        cdef size_t n = self.heap_t.size(), c
        cdef cycle_t tb
        if not self.top_held:
            return False
        for c in range(1, 3 if n > 2 else n):
            if self.heap_t[c] < t or (self.heap_t[c] == t and self.heap_s[c] < s):
                return False
        tb = self.handler.next_batch_time()
        return tb < 0 or t <= tb

    cdef void _note_moves(self, bint demand) noexcept nogil:
        """A batch's pages brought in, by cause and source: the faulted units' pages are the
        kernel's faults, the pages the prefetcher added are counted apart."""
        cdef size_t j
        cdef int64_t n
        cdef int8_t src
        for j in range(self.handler.moves.size()):
            if self.handler.moves[j].cause == MOVE_EVICT or self.handler.moves[j].dst != TIER_GPU:
                continue
            n = self.handler.moves[j].end - self.handler.moves[j].first
            src = self.handler.moves[j].src
            if self.handler.moves[j].cause == MOVE_FAULT:
                if src == TIER_HOST:
                    self.row.host_faults_pages += n
                elif src == TIER_SSD:
                    self.row.ssd_faults_pages += n
                else:
                    self.row.unallocated_faults_pages += n
            elif src == TIER_HOST:
                self.mv.host_prefetched_pages += n
            elif src == TIER_SSD:
                self.mv.ssd_prefetched_pages += n
            else:
                self.mv.unallocated_prefetched_pages += n

    cdef void _tl_moves(self, int64_t kind, cycle_t start, cycle_t end, int64_t units) noexcept nogil:
        """The timeline: the latest batch's (kind 0) or hint's (1: prefetch, 2: pre-eviction)
        transfers, each from ``start`` to when its pages were in place, and its record."""
        cdef size_t j
        cdef uvm_move* m
        cdef int64_t n, n_in = 0, n_out = 0
        cdef int ch
        for j in range(self.handler.moves.size()):
            m = &self.handler.moves[j]
            n = m.end - m.first
            if m.dst == TIER_GPU and (m.src == TIER_HOST or m.src == TIER_SSD):
                if m.src == TIER_HOST:
                    ch = TL_HOST_FAULT if m.cause == MOVE_FAULT else TL_HOST_PREFETCH
                else:
                    ch = TL_SSD_FAULT if m.cause == MOVE_FAULT else TL_SSD_PREFETCH
                n_in += n
            elif m.src == TIER_GPU and (m.dst == TIER_HOST or m.dst == TIER_SSD) and not m.clean:
                if m.dst == TIER_HOST:
                    ch = TL_PREEVICT_HOST if kind == 2 else TL_EVICT_HOST
                else:
                    ch = TL_PREEVICT_SSD if kind == 2 else TL_EVICT_SSD
                n_out += n
            else:
                continue                  # allocations and drops: no transfer
            self.tl.add(ch, start, imax(m.done, start), n)
        self.tl.op(kind, start, end, n_in, n_out, units, self.pt.gpu_pages - self.pt.gpu_free)

    cdef int64_t _remote(self, sm_run* c, cycle_t t) noexcept nogil:
        """SM c's pages from c.page that the GPU maps remotely (advice, or a thrashing pin):
        accessed over the link (reads for the kernel's inputs, writes for its outputs), the SM
        waiting for their bytes; returns how many (0: none, it faults)."""
        cdef cycle_t done = t
        cdef int64_t r = self.handler.remote_run(c.page, c.seg_hi, c.seg >= self.n_kin, t, &done)
        if r > 0 and done > t:
            c.delay += done - t
        return r

    cdef int _batch(self, cycle_t t) except -1 nogil:
        """Service one batch from t; SMs waiting on a page it brought resume at its end."""
        cdef cycle_t end = self.handler.service_batch(t), a
        cdef size_t i = 0
        cdef int32_t s
        cdef sm_run* c
        self.n_batches += 1
        note_busy(self.busy, self.handler.last_start, end)
        self._note_moves(True)
        if self.tl is not None:
            self._tl_moves(0, self.handler.last_start, end, self.handler.batch.size())
        while i < self.waiting.size():
            s = self.waiting[i]
            c = &self.sm[s]
            a = self.handler.arrival(c.wait_page)
            if a < 0 and self.handler.remote_ok(c.wait_page, end):
                a = end                           # pinned where it is: accessed remotely
            if a < 0:
                i += 1
                continue
            a = imax(a, end)
            c.delay += a - c.wait_from
            c.wait_page = -1
            self._push(a, s)
            self.waiting[i] = self.waiting.back()
            self.waiting.pop_back()
            self.n_resumes += 1
        return 0

    cdef int64_t run_kernel(self, int64_t k, int64_t iteration, int64_t now, kernel_row* row,
                            moved_row* moved, int64_t* translation) except -1 nogil:
        cdef int64_t j, N, x, idle = 0
        cdef int32_t s, S = self.sms
        cdef sm_run* c
        cdef cycle_t t, tb, end
        cdef bint progressed
        x = self.tr.kernel_cycles(k, now)
        translation[0] = x
        self.tiers.iteration = iteration
        self.row = row
        row.in_transfer_pages = row.host_faults_pages = row.ssd_faults_pages = row.unallocated_faults_pages = 0
        self.mv = moved
        moved.host_prefetched_pages = moved.ssd_prefetched_pages = moved.unallocated_prefetched_pages = 0
        moved.host_refetched_pages = moved.ssd_refetched_pages = moved.unallocated_refetched_pages = 0
        moved.host_hinted_pages = self.hint_in[TIER_HOST]
        moved.ssd_hinted_pages = self.hint_in[TIER_SSD]
        moved.unallocated_hinted_pages = self.hint_in[TIER_NOT_PRESENT]
        self.hint_in[0] = self.hint_in[1] = self.hint_in[2] = self.hint_in[3] = 0
        self.kt.clear()
        for j in range(self.in_off[k], self.in_off[k + 1]):
            self.kt.push_back(self.in_t[j])
        for j in range(self.out_off[k], self.out_off[k + 1]):
            self.kt.push_back(self.out_t[j])
        self.start = now
        self.work = self.t11[k] + x
        self.n_kin = self.in_off[k + 1] - self.in_off[k]
        self.handler.begin_kernel()
        for j in range(self.w_off[k], self.w_off[k + 1]):
            # a write collapses read duplicates (read_mostly advice)
            self.handler.note_written(self.pt.t_first[self.w_t[j]],
                                      self.pt.t_first[self.w_t[j]] + self.pt.t_np[self.w_t[j]])
        if self._all_ready(k, now):
            self.n_fast += 1
            return now + self.work
        self.n_simulated += 1
        self.sm.resize(S)
        self.heap_t.clear()
        self.heap_s.clear()
        self.top_held = False
        self.waiting.clear()
        for s in range(S):
            c = &self.sm[s]
            c.n = 0
            for j in range(<int64_t>self.kt.size()):
                N = self.pt.t_np[self.kt[j]]
                c.n += (s + 1) * N // S - s * N // S
            c.pos = 0
            c.seg = -1
            c.delay = 0
            c.wait_page = -1
            c.finish = -1
            self._next_segment(c, s)
            if c.n == 0:
                c.finish = now + self.work
            else:
                self._push(now, s)
        while True:
            tb = self.handler.next_batch_time()
            if self.heap_t.size() and (tb < 0 or self.heap_t[0] <= tb):
                s = self._hold_top(&t)
                j = self.sm[s].pos
                self._step(s, t)
                self._release_top()
                progressed = self.sm[s].pos != j
            elif tb >= 0:
                self._batch(tb)
                progressed = False
            else:
                break
            self.n_steps += 1
            idle = 0 if progressed else idle + 1
            if idle > self.max_idle_steps:
                self.livelocked = True
                with gil:
                    raise RuntimeError(f"kernel {k} of iteration {iteration}: no SM advanced in "
                                       f"{self.max_idle_steps} steps and batches (livelock); "
                                       f"{self.waiting.size()} SMs wait on faults, handler {self.handler.stats()}")
        if self.waiting.size():
            with gil:
                raise RuntimeError(f"kernel {k} of iteration {iteration}: {self.waiting.size()} SMs wait on "
                                   f"faults no batch will serve; handler {self.handler.stats()}")
        end = now + self.work
        for s in range(S):
            if self.sm[s].finish > end:
                end = self.sm[s].finish
        return end

    # ---- outputs ----

    def traffic_rows(self, int64_t iterations):
        return self.tiers.traffic_rows(iterations)

    def boundaries(self):
        """Transfer-busy periods (batches and hint transfers, merged) as (cycle, 1 begin / 0 end)
        rows, the batcher's format."""
        return busy_periods(np.asarray(self.busy, np.int64))

    def py_schedule(self, initial, again):
        """Test hook: the order SMs are stepped in.  SM s is first due at ``initial[s]``; each
        step makes it due again at the next cycle of ``again[s]`` (none left: it is done).
        Returns the (cycle, SM) steps in order."""
        cdef int32_t s
        cdef cycle_t t
        later = [list(a) for a in again]
        out = []
        self.heap_t.clear()
        self.heap_s.clear()
        self.top_held = False
        for s in range(len(initial)):
            self._push(initial[s], s)
        while self.heap_t.size():
            s = self._hold_top(&t)
            out.append((t, s))
            if later[s]:
                self._push(later[s].pop(0), s)
            self._release_top()
        return out

    def set_max_idle_steps(self, int64_t steps):
        """The livelock guard: SM steps and batches in a row that advance no SM (tests lower it)."""
        self.max_idle_steps = steps

    def stats(self):
        d = {"kernels_fast": self.n_fast, "kernels_simulated": self.n_simulated, "sm_steps": self.n_steps,
             "batches": self.n_batches, "sm_resumes": self.n_resumes, "inflight_waits": self.n_inflight_waits,
             "sms": self.sms}
        return d

    def handler_stats(self):
        return self.handler.stats()
