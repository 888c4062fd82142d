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

Livelock guard: the run stops when no kernel has ended for ``max_ticks`` slots in which
the SSD could take commands (a slot the SSD throttles waits on the device: progress).

The Python layer (``simulator.py``) validates every input; nothing here checks.
"""
from libc.stdint cimport int8_t, int32_t, int64_t
from libc.string cimport memcpy
from libcpp.vector cimport vector

from ._types cimport (kernel_row, traffic_row, EV_KERNEL_BEGIN, EV_SLOT, EV_DEVICE, EV_PRIORITY,
                      TIER_NONE, TIER_NOT_PRESENT, TIER_SSD, TIER_HOST, TIER_GPU,
                      HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE,
                      Q_FAULT_SSD, Q_FAULT_HOST, Q_FAULT_ALLOC, Q_PREFETCH_SSD, Q_PREFETCH_HOST,
                      Q_PREALLOC, Q_EVICT_SSD, Q_EVICT_HOST, N_QUEUES)
from ._engine cimport g10_event, g10_event_queue
from ._pagetable cimport PageTable
from ._evict cimport Evictor
from ._batcher cimport Batcher, B_RESTART, B_IRREGULAR
from ._fault cimport FaultModel, ProfileFaultModel
from ._tlb cimport Translator, NoTranslation
from ._device cimport Device, LinkDevice, SSDDevice

import numpy as np

cdef int64_t BIG = (<int64_t>1) << 62


def layout():
    """Codes and struct layouts as the compiled layer sees them (tests compare with codes.py)."""
    cdef kernel_row kr
    cdef traffic_row tr
    base = <size_t>&kr
    tbase = <size_t>&tr
    return {
        "tiers": {"none": TIER_NONE, "not_present": TIER_NOT_PRESENT, "ssd": TIER_SSD, "host": TIER_HOST,
                  "gpu": TIER_GPU},
        "actions": {"to_gpu": HINT_TO_GPU, "to_ssd": HINT_TO_SSD, "to_host": HINT_TO_HOST, "free": HINT_FREE},
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
    cdef bint runs_kernels                 # the fault model runs kernels itself (no slots)
    cdef vector[kernel_row] rows
    cdef vector[int64_t] translation       # per executed kernel: cycles address translation added

    def __init__(self, dict c, dict arrays, ssd=None, link=None, FaultModel fault_model=None,
                 Translator translator=None):
        """``c``: scalar constants (validated by the Python layer); ``arrays``: numpy inputs.

        ``ssd`` and ``link`` (``g10core.ssd.SSD``, ``g10core.pcie.PcieLink``) make the run
        detailed: the SSD and the GPU's link become devices on the transfer path.
        ``c["eviction"]``: an evictor name or spec understood by ``g10core.evictors``.
        ``fault_model``: replaces the profiled fault model (one that runs kernels is bound to
        this replay's page table and evictor); ``translator``: a ``_tlb`` translator
        (default: translation costs nothing).
        """
        from .evictors import build_evictor

        self.K = c["kernels"]
        self.n_iter = c["iterations"]
        tensors = {"first": arrays["t_first"], "pages": arrays["t_np"], "is_global": arrays["t_global"],
                   "birth": arrays["t_birth"], "death": arrays["t_death"]}
        self.pt = PageTable(tensors, c["gpu_pages"], c["host_pages"])
        self.ev = build_evictor(c["eviction"], self.pt, c, arrays)
        self._devices = (ssd, link) if ssd is not None and not isinstance(ssd, Device) else None
        self.link = link if isinstance(link, Device) else (
            LinkDevice(link, c.get("page_bytes", 4096)) if link is not None else Device())
        self.ssd = ssd if isinstance(ssd, Device) else (SSDDevice(ssd) if ssd is not None else Device())
        self.link.attach(&self.events, 0)
        self.ssd.attach(&self.events, 1)
        self.bt = Batcher(self.pt, self.ev, self.link, self.ssd, c, self.n_iter, c.get("debug_log", False))
        if fault_model is None:
            fault_model = ProfileFaultModel({"t11": arrays["t11"], "t10": arrays["t10"], "t00": arrays["t00"]},
                                            {"freq_hz": c["freq_hz"], "page_bytes": c.get("page_bytes", 4096),
                                             "bw_pcie_Bpms": c["bw_pcie_Bpms"], "bw_ssd_Bpms": c["bw_ssd_Bpms"],
                                             "l_sys_us": c["l_sys_us"], "l_ssd_us": c["l_ssd_us"],
                                             "zero_fill_alloc": c.get("exact", False),
                                             "alloc_cycles_per_page": c.get("alloc_cycles_per_page", 0.0)})
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
        if self.k_kernel != self.iteration * self.K + self.cur:
            self.cur += 1
            if self.cur == self.K:
                self.cur = 0
                self.iteration += 1
                self.bt.iteration = self.iteration
        if self.iteration >= self.n_iter:
            return 1
        k = self.cur
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
                    self.fm.apply_hint(self.h_tensor[self.hint_idx], self.h_action[self.hint_idx], now)
                else:
                    self.bt.apply_hint(self.h_tensor[self.hint_idx], self.h_action[self.hint_idx])
                self.hint_idx += 1
                if self.hint_idx == self.n_hints:
                    self.hint_idx = 0
        if self.runs_kernels:
            return self.run_by_model(k, now)
        arrived = self.bt.faults_empty()
        if arrived:
            for j in range(self.in_off[k], self.in_off[k + 1]):
                t = self.in_t[j]
                if self.pt.cnt_ready[t] != self.pt.t_np[t]:
                    arrived = False
                    break
        if arrived:
            for j in range(self.out_off[k], self.out_off[k + 1]):
                t = self.out_t[j]
                if self.pt.cnt_ready[t] != self.pt.t_np[t]:
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
            elif self.bt.started:
                with gil:
                    raise RuntimeError(f"kernel {k} restarted but pages are missing")
            self.acc_intr += fin[4] + fout[4]
            self.acc_cpu += fin[3] + fout[3]
            self.acc_ssd += fin[2] + fout[2]
            self.acc_un += fin[1] + fout[1]
            return 0
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
        end += j
        self.translation.push_back(j)
        return self.kernel_end(&row, end)

    cdef int kernel_end(self, kernel_row* row, int64_t end) except -1 nogil:
        """Record the kernel that ends at ``end``; its successor begins then."""
        row.end_cycles = end
        row.host_used_pages = self.pt.host_used
        row.gpu_used_pages = self.pt.gpu_pages - self.pt.gpu_free
        self.rows.push_back(row[0])
        self.slots_at_advance = self.bt.n_slots_detailed + self.bt.n_slots_bulk - self.waited_slots
        self.events.push(end, EV_PRIORITY, EV_KERNEL_BEGIN, self.iteration * self.K + row.kernel + 1)
        return 0

    cdef int run_by_model(self, int64_t k, int64_t now) except -1 nogil:
        """Kernel k run by an event-driven fault model (its hints are applied already)."""
        cdef kernel_row row
        cdef int64_t x = 0, end
        row.iteration = self.iteration
        row.kernel = k
        row.start_cycles = now
        end = self.fm.run_kernel(k, self.iteration, now, &row, &x)
        self.translation.push_back(x)
        return self.kernel_end(&row, end)

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
                if (self.bt.n_slots_detailed + self.bt.n_slots_bulk - self.waited_slots
                        - self.slots_at_advance > self.max_slots):
                    with gil:
                        raise RuntimeError(self._state())
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
        with nogil:
            self._run()
        from .codes import KERNEL_ROW_DTYPE, as_columns

        rows = np.zeros(self.rows.size(), KERNEL_ROW_DTYPE)
        cdef int64_t[::1] flat = rows.view(np.int64)
        if self.rows.size():
            memcpy(&flat[0], self.rows.data(), self.rows.size() * sizeof(kernel_row))
        cdef int64_t throttled = (<SSDDevice>self.ssd).throttled_slots if self._devices is not None else 0
        transfers = self.fm if self.runs_kernels else self.bt
        out = {
            "kernels": as_columns(rows, KERNEL_ROW_DTYPE),
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
        }
        if self.runs_kernels:
            out["runner"] = self.fm.stats()
            out["fault_batches"] = self.fm.handler_stats()
            # the transfer slots' worth of time batches and hints waited for the SSD's queue
            out["ssd_throttled_ticks"] = out["fault_batches"]["ssd_wait_cycles"] // max(self.bt.tick, 1)
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
