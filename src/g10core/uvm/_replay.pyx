# cython: language_level=3
"""The page-level replay: the event loop and the kernel state machine.

Everything else is a component, wired here and called through its ``.pxd`` interface:

* ``_pagetable.PageTable``: where every page lives (runs), the GPU's arrival order;
* ``_evict.Evictor``: which pages leave when a frame is needed (a rule per subclass);
* ``_batcher.Batcher``: the transfer queues and the slots that serve them, with bulk
  repeats of identical slots;
* ``_fault.FaultModel``: how long a kernel that faulted takes; an event-driven model
  (``_kernelrun.KernelRunner``, the detailed preset's far-fault handler) runs each kernel
  itself: the replay then hands it the kernel's hints and the kernel, and no slot runs;
* ``_tlb.Translator``: what address translation adds;
* ``_device.Device`` (link and SSD): what the transfers do to the devices.

Kernel-begin events and slots run on the engine's event queue (``_engine.pxd``), ordered
by (cycle, priority, sequence) as the published simulator orders them; a bulk repeat or
an idle skip moves the pending slot instead of firing each one.  At kernel begin the
kernel's hints are applied, then its pages are checked: if all are on the GPU and none in
transfer, it ends t11 later; otherwise every missing page is queued as a fault and the
kernel waits until the batcher has brought them, then ends at the later of
(first attempt + t11 + fault time) and now.

Progress guard (``_progress.ProgressGuard``): while a kernel waits, only its own evicted pages re-enter the queues, so
a slot that moves pages for good shrinks them.  The run stops when the queued pages reach
no new low for ``progress_factor`` x the slots the kernel's pages and the work queued at
its first attempt take at the smallest quota (+ ``GUARD_SLACK_SLOTS``), or when no kernel
ends for ``max_ticks`` slots (slots the SSD throttles count for neither: they wait on the
device).  It raises :class:`NoProgress` with the outputs so far; ``simulator.py`` makes it
a failed result that keeps the kernels that ended.

The Python layer (``simulator.py``) validates every input and builds the evictor (the rule
``evictors.py`` resolved); nothing here checks but that the evictor's page table is the
inputs' size.
"""
from libc.stdint cimport int8_t, int32_t, int64_t
from libc.string cimport memcpy, memset
from libcpp.vector cimport vector

from ..core._types cimport (kernel_row, moved_row, traffic_row, EV_KERNEL_BEGIN, EV_SLOT, EV_DEVICE, EV_PRIORITY,
                      TIER_NONE, TIER_NOT_PRESENT, TIER_SSD, TIER_HOST, TIER_GPU,
                      HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE, HINT_RECOMPUTE,
                      HINT_ADVISE_PREFER_GPU, HINT_ADVISE_PREFER_HOST, HINT_ADVISE_ACCESSED_BY,
                      HINT_ADVISE_READ_MOSTLY,
                      Q_FAULT_SSD, Q_FAULT_HOST, Q_FAULT_ALLOC, Q_PREFETCH_SSD, Q_PREFETCH_HOST,
                      Q_PREALLOC, Q_EVICT_SSD, Q_EVICT_HOST, N_QUEUES)
from ..core._engine cimport g10_event, g10_event_queue
from ._pagetable cimport PageTable
from ._evict cimport Evictor
from ._batcher cimport Batcher, B_RESTART, B_IRREGULAR
from ._fault cimport FaultModel
from ._fault import configured_fault_model
from ..tlb._tlb cimport Translator, NoTranslation
from ._device cimport Device, LinkDevice, SSDDevice
from ._timeline cimport TimelineRecorder
from ._progress cimport ProgressGuard
from ..ssd._ssd cimport SSDCore

import numpy as np

cdef int64_t BIG = (<int64_t>1) << 62
# slots a wait may pass without progress on top of its bound (small traces, short stalls)
GUARD_SLACK_SLOTS = 10_000
cdef int64_t C_GUARD_SLACK = GUARD_SLACK_SLOTS
cdef enum:
    STOP_WAIT = 1                          # Replay.stuck: the progress guard of a waiting kernel
    STOP_BUDGET = 2                        # ... the run's slot budget (max_ticks)
    STOP_RUNNER = 3                        # ... the guard of a fault model that runs kernels


class NoProgress(RuntimeError):
    """The replay made no progress (module docstring).  ``raw``: the outputs so far, as
    :meth:`Replay.run` returns them; ``info``: the waiting kernel, what it re-queued, the slots."""

    def __init__(self, message, raw, info):
        super().__init__(message)
        self.raw = raw
        self.info = info


def layout():
    """Codes and struct layouts as the compiled layer sees them (tests compare with codes.py)."""
    cdef kernel_row kr
    cdef moved_row mr
    cdef traffic_row tr
    base = <size_t>&kr
    tbase = <size_t>&tr
    mbase = <size_t>&mr
    return {
        "tiers": {"none": TIER_NONE, "not_present": TIER_NOT_PRESENT, "ssd": TIER_SSD, "host": TIER_HOST,
                  "gpu": TIER_GPU},
        "actions": {"to_gpu": HINT_TO_GPU, "to_ssd": HINT_TO_SSD, "to_host": HINT_TO_HOST, "free": HINT_FREE,
                    "recompute": HINT_RECOMPUTE,
                    "prefer_gpu": HINT_ADVISE_PREFER_GPU, "prefer_host": HINT_ADVISE_PREFER_HOST,
                    "accessed_by": HINT_ADVISE_ACCESSED_BY, "read_mostly": HINT_ADVISE_READ_MOSTLY},
        "queues": [Q_FAULT_SSD, Q_FAULT_HOST, Q_FAULT_ALLOC, Q_PREFETCH_SSD, Q_PREFETCH_HOST, Q_PREALLOC,
                   Q_EVICT_SSD, Q_EVICT_HOST, N_QUEUES],
        "events": {"kernel_begin": EV_KERNEL_BEGIN, "slot": EV_SLOT, "device": EV_DEVICE},
        "kernel_row": {"itemsize": sizeof(kernel_row), "offsets": [
            <size_t>&kr.iteration - base, <size_t>&kr.kernel - base, <size_t>&kr.start_cycles - base,
            <size_t>&kr.end_cycles - base, <size_t>&kr.in_transfer_pages - base,
            <size_t>&kr.host_faults_pages - base, <size_t>&kr.ssd_faults_pages - base,
            <size_t>&kr.unallocated_faults_pages - base, <size_t>&kr.host_used_pages - base,
            <size_t>&kr.gpu_used_pages - base]},
        "traffic_row": {"itemsize": sizeof(traffic_row), "offsets": [
            <size_t>&tr.alloc - tbase, <size_t>&tr.ssd_to_gpu - tbase, <size_t>&tr.host_to_gpu - tbase,
            <size_t>&tr.gpu_to_ssd - tbase, <size_t>&tr.gpu_to_host - tbase]},
        "moved_row": {"itemsize": sizeof(moved_row), "offsets": {
            "host_prefetched_pages": <size_t>&mr.host_prefetched_pages - mbase,
            "ssd_prefetched_pages": <size_t>&mr.ssd_prefetched_pages - mbase,
            "unallocated_prefetched_pages": <size_t>&mr.unallocated_prefetched_pages - mbase,
            "host_hinted_pages": <size_t>&mr.host_hinted_pages - mbase,
            "ssd_hinted_pages": <size_t>&mr.ssd_hinted_pages - mbase,
            "unallocated_hinted_pages": <size_t>&mr.unallocated_hinted_pages - mbase,
            "host_refetched_pages": <size_t>&mr.host_refetched_pages - mbase,
            "ssd_refetched_pages": <size_t>&mr.ssd_refetched_pages - mbase,
            "unallocated_refetched_pages": <size_t>&mr.unallocated_refetched_pages - mbase}},
    }


cdef class Replay:
    # ---- components ----
    cdef PageTable pt
    cdef Evictor ev
    cdef Batcher bt
    cdef FaultModel fm
    cdef Translator tr
    cdef Device link, ssd
    cdef object _devices                   # the Python ssd.SSD and pcie.PcieLink (detailed), or None
    # ---- the trace's kernels and hints ----
    cdef int64_t K, n_iter
    cdef const int64_t* k_t11
    cdef const int64_t* in_off
    cdef const int32_t* in_t
    cdef const int64_t* out_off
    cdef const int32_t* out_t
    cdef const int32_t* h_kernel
    cdef const int32_t* h_tensor
    cdef const int8_t* h_action
    cdef int64_t n_hints, hint_idx
    cdef bint apply_hints, bulk_enabled
    cdef object _keep
    # ---- the kernel state machine ----
    cdef g10_event_queue events
    cdef int64_t cur, iteration            # the running (or waiting) kernel
    cdef int64_t tk, k_kernel              # time and execution index of the last kernel-begin event
    cdef int64_t rs_first, rs_pf           # a waiting kernel's first attempt and ideal + fault time
    cdef int64_t acc_intr, acc_cpu, acc_ssd, acc_un   # its faults, accumulated over its attempts
    cdef int64_t max_slots                 # livelock guard: slots without a kernel ending
    cdef int64_t waited_slots              # slots in which the SSD took no command (device-bound)
    cdef int64_t slots_at_advance          # slot count (less waited ones) when a kernel last ended
    cdef ProgressGuard guard               # the progress guard of a waiting kernel (_progress.pyx)
    cdef int stuck                         # 0, STOP_WAIT or STOP_BUDGET
    cdef bint runs_kernels                 # the fault model runs kernels itself (no slots)
    cdef vector[kernel_row] rows
    cdef vector[moved_row] moved           # per kernel row: pages moved in for other causes
    cdef size_t n_taken                    # rows whose slot-model moves are final (take_moved)
    cdef vector[int64_t] translation       # per executed kernel: cycles address translation added
    cdef TimelineRecorder tl               # None: no timeline (c["timeline"] false)
    cdef int64_t tl_exec                   # the kernel execution the timeline counts in (-1: none yet)

    def __init__(self, dict c, dict arrays, ssd=None, link=None, FaultModel fault_model=None,
                 Translator translator=None):
        """``c``: scalar constants (validated by the Python layer) and the evictor; ``arrays``:
        numpy inputs.

        ``c["evictor"]``: the eviction rule, compiled and bound to a new page table of these
        inputs (``evictors.EvictionRule.evictor``, built by the Python layer); the replay runs
        on that page table.  Without one, the rule ``c["eviction"]`` (``simulator.replay_inputs``
        records it) builds it.
        ``ssd`` and ``link`` (``g10core.ssd.SSD``, ``g10core.link.pcie.PcieLink``) make the run
        detailed: the SSD and the GPU's link become devices on the transfer path.
        ``fault_model``: replaces the configured one (``_fault.configured_fault_model``; one that
        runs kernels is bound to this replay's page table and evictor); ``translator``: a
        ``_tlb`` translator (default: translation costs nothing).
        """
        cdef Evictor evictor = c.get("evictor")
        self.K = c["kernels"]
        self.n_iter = c["iterations"]
        if evictor is None:
            evictor = c["eviction"].evictor(c, arrays)
        if evictor.pt.n_tensors != c["tensors"] or evictor.pt.gpu_pages != c["gpu_pages"]:
            raise ValueError(f"evictor: its page table has {evictor.pt.n_tensors} tensors and "
                             f"{evictor.pt.gpu_pages} GPU pages, the replay's inputs {c['tensors']} and "
                             f"{c['gpu_pages']}")
        if evictor.pt.epoch != 0:
            raise ValueError("evictor: its page table has been replayed already (build one per replay)")
        self.ev = evictor
        self.pt = evictor.pt
        self._devices = (ssd, link) if ssd is not None and not isinstance(ssd, Device) else None
        self.link = link if isinstance(link, Device) else (
            LinkDevice(link, c.get("page_bytes", 4096)) if link is not None else Device())
        self.ssd = ssd if isinstance(ssd, Device) else (SSDDevice(ssd) if ssd is not None else Device())
        self.link.attach(&self.events, 0)
        self.ssd.attach(&self.events, 1)
        self.bt = Batcher(self.pt, self.ev, self.link, self.ssd, c, self.n_iter, c.get("debug_log", False), arrays)
        if fault_model is None:
            fault_model = configured_fault_model(c, arrays)
        self.fm = fault_model
        self.runs_kernels = self.fm.runs_kernels()
        if self.runs_kernels:
            fault_model.bind(self.pt, self.ev)
        self.tr = translator if translator is not None else NoTranslation()
        self.apply_hints = c["apply_hints"]
        self.bulk_enabled = (c.get("bulk", True) and self.ev.bulk_safe() and self.link.bulk_safe()
                             and self.ssd.bulk_safe() and self.fm.bulk_safe() and self.tr.bulk_safe())
        self.max_slots = c.get("max_ticks", BIG)
        self.waited_slots = self.slots_at_advance = 0
        self.guard = ProgressGuard(c.get("progress_factor", 8), min(c["gpu_batch"], c["host_batch"], c["ssd_batch"]),
                                   C_GUARD_SLACK)
        self.stuck = 0

        keep = {}
        def arr(name, dtype):
            a = np.ascontiguousarray(arrays[name], dtype=dtype)
            keep[name] = a
            return a
        cdef int64_t[::1] v64
        cdef int32_t[::1] v32
        cdef int8_t[::1] vi8
        v64 = arr("t11", np.int64); self.k_t11 = &v64[0]
        v64 = arr("in_off", np.int64); self.in_off = &v64[0]
        v32 = arr("in_t", np.int32); self.in_t = &v32[0] if v32.shape[0] else NULL
        v64 = arr("out_off", np.int64); self.out_off = &v64[0]
        v32 = arr("out_t", np.int32); self.out_t = &v32[0] if v32.shape[0] else NULL
        self.n_hints = arrays["h_kernel"].shape[0]
        v32 = arr("h_kernel", np.int32); self.h_kernel = &v32[0] if self.n_hints else NULL
        v32 = arr("h_tensor", np.int32); self.h_tensor = &v32[0] if self.n_hints else NULL
        vi8 = arr("h_action", np.int8); self.h_action = &vi8[0] if self.n_hints else NULL
        self._keep = keep
        self.cur = self.iteration = 0
        self.hint_idx = 0
        self.n_taken = 0
        # the timeline, only when asked: the components then record per kernel and batch
        self.tl_exec = -1
        self.tl = None
        if c.get("timeline", False):
            ssd_core = getattr(ssd, "core", None) if self._devices is not None else None
            self.tl = TimelineRecorder(self.n_iter * self.K,
                                       ssd_core if isinstance(ssd_core, SSDCore) else None)
            self.bt.tl = self.tl
            if self.runs_kernels and hasattr(self.fm, "tl"):
                self.fm.tl = self.tl

    # ======================================================================
    # kernel begin
    # ======================================================================
    cdef int kernel_begin(self) except -1 nogil:
        """A kernel-begin event at (tk, execution k_kernel); returns 1 when the run is over.

        An event's argument is the execution index (iteration * K + kernel): the next
        kernel's, or the waiting kernel's own when it restarts (also when K = 1)."""
        cdef int64_t now = self.tk, k, j, m
        cdef int32_t t
        cdef bint arrived
        cdef int64_t fin[5]
        cdef int64_t fout[5]
        cdef int64_t end
        cdef kernel_row row
        cdef moved_row mv
        cdef bint tl_new = False
        if self.k_kernel != self.iteration * self.K + self.cur:
            self.take_moved()
            self.cur += 1
            if self.cur == self.K:
                self.cur = 0
                self.iteration += 1
                self.bt.iteration = self.iteration
        if self.iteration >= self.n_iter:
            return 1
        k = self.cur
        if self.tl is not None and self.tl_exec != self.iteration * self.K + k:
            self.tl_exec = self.iteration * self.K + k
            self.tl.begin(self.tl_exec)
            tl_new = True
        self.bt.n_rec = 0                  # slots recorded before a kernel begins may not repeat after it
        self.pt.pin(self.in_t + self.in_off[k], self.in_off[k + 1] - self.in_off[k],
               self.out_t + self.out_off[k], self.out_off[k + 1] - self.out_off[k])
        self.ev.kernel_begin(k, self.iteration)
        self.link.kernel_begin(k, now)
        self.ssd.kernel_begin(k, now)
        if self.apply_hints and self.n_hints:
            for m in range(self.n_hints):
                if self.h_kernel[self.hint_idx] % self.K != k:
                    break
                if self.runs_kernels:
                    self.fm.apply_hint(self.h_tensor[self.hint_idx], self.h_action[self.hint_idx], now,
                                       self.iteration)
                else:
                    self.bt.apply_hint(self.h_tensor[self.hint_idx], self.h_action[self.hint_idx])
                self.hint_idx += 1
                if self.hint_idx == self.n_hints:
                    self.hint_idx = 0
        if self.runs_kernels:
            return self.run_by_model(k, now)
        arrived = self.bt.kernel_check(k)      # faults_empty(); memory advice: remote pages (_batcher.pyx)
        if arrived:
            for j in range(self.in_off[k], self.in_off[k + 1]):
                t = self.in_t[j]
                if not self.bt.ready(t):
                    arrived = False
                    break
        if arrived:
            for j in range(self.out_off[k], self.out_off[k + 1]):
                t = self.out_t[j]
                if not self.bt.ready(t):
                    arrived = False
                    break
        if not arrived:
            for j in range(5):
                fin[j] = 0
                fout[j] = 0
            for j in range(self.in_off[k], self.in_off[k + 1]):
                self.bt.fault_tensor(self.in_t[j], fin)
            for j in range(self.out_off[k], self.out_off[k + 1]):
                self.bt.fault_tensor(self.out_t[j], fout)
            if not self.bt.waiting:
                self.bt.waiting = True
                self.bt.started = False
                self.rs_first = now
                self.rs_pf = self.k_t11[k] + self.fm.fault_cycles(k, fin, fout)
                self.acc_intr = self.acc_cpu = self.acc_ssd = self.acc_un = 0
                self.guard.begin(self.bt, self.slots_run(), fin[0] + fout[0], fin[1] + fin[2] + fin[3] + fin[4] + fout[1] + fout[2] + fout[3]
                                + fout[4])
            elif self.bt.started:
                with gil:
                    raise RuntimeError(f"kernel {k} restarted but pages are missing")
            self.acc_intr += fin[4] + fout[4]
            self.acc_cpu += fin[3] + fout[3]
            self.acc_ssd += fin[2] + fout[2]
            self.acc_un += fin[1] + fout[1]
            if tl_new:
                self.tl_queued()
            return 0
        if tl_new:
            self.tl_queued()
        row.iteration = self.iteration
        row.kernel = k
        if self.bt.waiting:
            end = self.rs_first + self.rs_pf
            if end < now:
                end = now
            row.start_cycles = self.rs_first
            row.in_transfer_pages = self.acc_intr
            row.host_faults_pages = self.acc_cpu
            row.ssd_faults_pages = self.acc_ssd
            row.unallocated_faults_pages = self.acc_un
            self.bt.waiting = False
        else:
            end = now + self.k_t11[k]
            row.start_cycles = now
            row.in_transfer_pages = row.host_faults_pages = row.ssd_faults_pages = 0
            row.unallocated_faults_pages = 0
        j = self.tr.kernel_cycles(k, now)
        end += j + self.bt.kernel_runs(k)      # + memory advice's remote time (_batcher.pyx; 0 without)
        self.translation.push_back(j)
        memset(&mv, 0, sizeof(moved_row))          # the slots fill it (take_moved)
        return self.kernel_end(&row, &mv, end)

    cdef void tl_queued(self) noexcept nogil:
        """The timeline: pages in the transfer queues at a kernel's first attempt, once its hints
        were applied and its missing pages queued as faults."""
        self.tl.set_queued(self.bt.queued())

    cdef inline int64_t slots_run(self) noexcept nogil:
        """Slots served so far, less those the SSD throttled."""
        return self.bt.n_slots_detailed + self.bt.n_slots_bulk - self.waited_slots

    cdef int take_moved(self) except -1 nogil:
        """The slot model: the pages the slots brought in since the last kernel row began (its
        first attempt) go to that row: from the hint queues, hinted; from the fault queues, its
        faults (counted at its attempt) and pages re-queued as faults after an eviction
        (refetched: the rest).  Called when the next kernel begins (the iteration's traffic
        counter moves on then too) and at the end of the run."""
        cdef moved_row* mv
        cdef kernel_row* row
        cdef int i
        if self.runs_kernels or self.n_taken == self.rows.size():
            return 0
        self.n_taken = self.rows.size()
        mv = &self.moved.back()
        row = &self.rows.back()
        mv.host_hinted_pages += self.bt.in_hint[TIER_HOST]
        mv.ssd_hinted_pages += self.bt.in_hint[TIER_SSD]
        mv.unallocated_hinted_pages += self.bt.in_hint[TIER_NOT_PRESENT]
        mv.host_refetched_pages += self.bt.in_fault[TIER_HOST] - row.host_faults_pages
        mv.ssd_refetched_pages += self.bt.in_fault[TIER_SSD] - row.ssd_faults_pages
        mv.unallocated_refetched_pages += self.bt.in_fault[TIER_NOT_PRESENT] - row.unallocated_faults_pages
        for i in range(4):
            self.bt.in_fault[i] = self.bt.in_hint[i] = 0
        if mv.host_refetched_pages < 0 or mv.ssd_refetched_pages < 0 or mv.unallocated_refetched_pages < 0:
            with gil:
                raise RuntimeError(f"internal: kernel {row.kernel} of iteration {row.iteration} counted more "
                                   "faults than the fault queues brought in")
        return 0

    cdef int kernel_end(self, kernel_row* row, moved_row* mv, int64_t end) except -1 nogil:
        """Record the kernel that ends at ``end``; its successor begins then."""
        row.end_cycles = end
        row.host_used_pages = self.pt.host_used
        row.gpu_used_pages = self.pt.gpu_pages - self.pt.gpu_free
        self.rows.push_back(row[0])
        self.moved.push_back(mv[0])
        self.slots_at_advance = self.bt.n_slots_detailed + self.bt.n_slots_bulk - self.waited_slots
        self.events.push(end, EV_PRIORITY, EV_KERNEL_BEGIN, self.iteration * self.K + row.kernel + 1)
        return 0

    cdef int run_by_model(self, int64_t k, int64_t now) except -1 nogil:
        """Kernel k run by an event-driven fault model (its hints are applied already)."""
        cdef kernel_row row
        cdef moved_row mv
        cdef int64_t x = 0, end
        row.iteration = self.iteration
        row.kernel = k
        row.start_cycles = now
        end = self.fm.run_kernel(k, self.iteration, now, &row, &mv, &x)
        self.translation.push_back(x)
        return self.kernel_end(&row, &mv, end)

    # ======================================================================
    # the event loop
    # ======================================================================
    cdef inline int64_t next_event_time(self) noexcept nogil:
        """Cycle of the next pending event (a kernel begin, or a device's own), or -1.
        Called between a slot's pop and its reschedule: idle skips and bulk repeats of
        slots stop before it."""
        if self.events.empty():
            return -1
        return self.events.top().time

    cdef int _run(self) except -1 nogil:
        cdef g10_event ev
        self.events.clear()
        self.events.push(0, EV_PRIORITY, EV_KERNEL_BEGIN, 0)
        if not self.runs_kernels:
            self.events.push(0, EV_PRIORITY, EV_SLOT, 0)
        while not self.events.empty():
            ev = self.events.pop()
            if ev.kind == EV_KERNEL_BEGIN:
                self.tk = ev.time
                self.k_kernel = ev.arg
                if self.kernel_begin():
                    break
            elif ev.kind == EV_SLOT:
                self.bt.slot(ev.time)
                if self.bt.ssd_throttled:
                    self.waited_slots += 1
                # restart of a waiting kernel once everything it needs has arrived
                if self.bt.waiting and self.bt.faults_empty() and self.pt.pinned_in_transfer() == 0:
                    self.bt.irregular = True
                    self.bt.note(B_RESTART)
                    self.events.push(ev.time, EV_PRIORITY, EV_KERNEL_BEGIN, self.iteration * self.K + self.cur)
                    self.bt.started = True
                if not self.bt.transferring:
                    self.bt.skip_idle(self.next_event_time())
                elif self.bulk_enabled:
                    if self.bt.irregular:
                        self.bt.note(B_IRREGULAR)
                        self.bt.n_rec = 0
                    else:
                        self.bt.try_bulk(self.next_event_time())
                if self.guard.stalled(self.bt, self.slots_run()):
                    self.stuck = STOP_WAIT
                    break
                if self.slots_run() - self.slots_at_advance > self.max_slots:
                    self.stuck = STOP_BUDGET
                    break
                self.events.push(self.bt.tb, EV_PRIORITY, EV_SLOT, 0)
            elif ev.arg % 2 == 0:                  # a device's own event: payload * 2 + device
                self.link.on_event(ev.time, ev.arg // 2)
            else:
                self.ssd.on_event(ev.time, ev.arg // 2)
        return 0

    def _state(self):
        return (f"t={self.bt.tb} kernel={self.cur} iter={self.iteration} resched={self.bt.waiting} "
                f"started={self.bt.started} pending_events={self.events.size()} "
                f"next_kernel={self.next_event_time()} queues={self.bt.queue_lengths()} "
                f"gpu_free={self.pt.gpu_free} host={self.pt.host_used}/{self.pt.host_line} "
                f"gpu_intr={self.pt.gpu_intr} req_intr={self.pt.pinned_in_transfer()}")

    def run(self):
        """Replay every iteration; returns the raw outputs (``simulator.py`` turns them into a Result)."""
        state = None
        try:
            with nogil:
                self._run()
                self.take_moved()
        except RuntimeError as exc:
            # the detailed preset's kernel runner stops a kernel in which no SM advances
            if not (self.runs_kernels and getattr(self.fm, "livelocked", False)):
                raise
            self.stuck = STOP_RUNNER
            state = " ".join(str(exc).split())
        out = self._outputs()
        if self.stuck:
            raise NoProgress(state or self._state(), out, self._stuck_info())
        return out

    def _stuck_info(self):
        """What the waiting kernel was doing when the run stopped (NoProgress.info)."""
        cdef int64_t j, k = self.cur
        tensors = []
        for j in range(self.in_off[k], self.in_off[k + 1]):
            tensors.append(int(self.in_t[j]))
        for j in range(self.out_off[k], self.out_off[k + 1]):
            tensors.append(int(self.out_t[j]))
        return {
            "guard": {STOP_WAIT: "wait", STOP_BUDGET: "budget", STOP_RUNNER: "sm_steps"}[self.stuck],
            "kernel": int(k), "iteration": int(self.iteration),
            "waiting": bool(self.bt.waiting),
            "tensors": list(dict.fromkeys(tensors)),
            "kernel_pages": int(self.guard.pages), "missing_pages": int(self.guard.missing),
            "still_missing_pages": int(self.pt.pinned_in_transfer()),
            "requeued_pages": int(self.bt.requeued_pages - self.guard.requeued0) if self.bt.waiting else 0,
            "requeued_by_tensor": ({int(t): int(n) for t, n in self.bt.requeued_in_wait().items()}
                                   if self.bt.waiting else {}),
            "slots_waited": int(self.slots_run() - self.guard.slots0) if self.bt.waiting else 0,
            "slots_without_progress": int(self.slots_run() - (self.guard.slots_at_progress if self.stuck == STOP_WAIT
                                                              else self.slots_at_advance)),
            "slot_budget": int(self.guard.budget if self.stuck == STOP_WAIT else self.max_slots),
            "max_idle_steps": int(getattr(self.fm, "max_idle_steps", 0)) if self.runs_kernels else 0,
            "queued_pages": int(self.bt.queued()),
            "cycle": int(self.bt.tb),
        }

    def _outputs(self):
        """The raw outputs (``run``'s dict) of what has run."""
        from ..codes import KERNEL_ROW_DTYPE, MOVED_ROW_DTYPE, as_columns

        rows = np.zeros(self.rows.size(), KERNEL_ROW_DTYPE)
        cdef int64_t[::1] flat = rows.view(np.int64)
        if self.rows.size():
            memcpy(&flat[0], self.rows.data(), self.rows.size() * sizeof(kernel_row))
        moved = np.zeros(self.moved.size(), MOVED_ROW_DTYPE)
        flat = moved.view(np.int64)
        if self.moved.size():
            memcpy(&flat[0], self.moved.data(), self.moved.size() * sizeof(moved_row))
        cdef int64_t throttled = (<SSDDevice>self.ssd).throttled_slots if self._devices is not None else 0
        transfers = self.fm if self.runs_kernels else self.bt
        out = {
            "kernels": as_columns(rows, KERNEL_ROW_DTYPE),
            "moved": as_columns(moved, MOVED_ROW_DTYPE),
            "requeued_pages": self.bt.requeued_pages,
            "translation_cycles": np.array(self.translation, dtype=np.int64),
            "boundaries": transfers.boundaries(),
            "pcie": transfers.traffic_rows(self.n_iter),
            "host_overflow": bool(self.pt.host_overflow),
            "log": self.bt.debug_rows(),
            "bulk": self.bt.bulk_reasons(),
            "ssd_throttled_ticks": throttled,
            "end_cycle": self.tk,
            "events": {"pushed": self.events.pushed(), "popped": self.events.popped(),
                       "max_pending": self.events.max_size()},
            "ticks": self.bt.slot_counts(),
            "final": self.pt.stats(),
            "evictor": self.ev.stats(),
            # the progress guard: the largest share of its slot budget a waiting kernel used
            "guard_peak": self.guard.peak,
        }
        if self.bt.advice_on:
            out["advice"] = self.bt.advice_stats()
        if self.runs_kernels:
            out["runner"] = self.fm.stats()
            out["fault_batches"] = self.fm.handler_stats()
            # the transfer slots' worth of time batches and hints waited for the SSD's queue
            out["ssd_throttled_ticks"] = out["fault_batches"]["ssd_wait_cycles"] // max(self.bt.tick, 1)
        if self.tl is not None:
            self.tl.finish()
            out["timeline"] = self.tl.arrays()
        return out

    def dump(self):
        """Location runs, queue runs and the GPU page list, for tests and debugging."""
        return {"runs": self.pt.runs(), "queues": self.bt.queues(), "lru": self.pt.arrival_list(),
                "cursor": self.pt.cursor, "gpu_free": self.pt.gpu_free, "host_used": self.pt.host_used}

    def debug_rows(self):
        return self.bt.debug_rows()

    def tensor_counts(self):
        """(ready pages, in-transfer pages) per tensor, for invariant tests."""
        return self.pt.counts()

    @property
    def page_table(self):
        return self.pt

    @property
    def evictor(self):
        return self.ev

    @property
    def fault_model(self):
        return self.fm
