# The detailed preset's kernel runner: a FaultModel that runs each kernel on the GPU's
# SMs against the far-fault handler (_uvm.FarFaultHandler), with the replay's page table
# as the handler's tier map and the policy's evictor as its victim picker.  See _kernelrun.pyx.
from libc.stdint cimport int8_t, int32_t, int64_t
from libcpp.vector cimport vector

from g10core.core._types cimport cycle_t, page_t, kernel_row, moved_row, traffic_row
from g10core.uvm._pagetable cimport PageTable
from g10core.uvm._evict cimport Evictor
from g10core.uvm._fault cimport FaultModel
from g10core.tlb._tlb cimport Translator
from g10core.uvm._uvm cimport TierMap, VictimPicker, FarFaultHandler
from g10core.uvm._timeline cimport TimelineRecorder

cimport cython


@cython.final
cdef class PageTableTiers(TierMap):
    """The replay's page table as the handler's tier map: every move keeps its runs, the GPU's
    arrival list (when kept), occupancy and conservation counters, and the iteration's traffic
    exact."""
    cdef PageTable pt
    cdef const int64_t* lpn_first          # per tensor: its first logical page on the SSD
    cdef object _keep
    cdef public bint freeing               # set around a FREE hint: pages leave as freed, not dropped
    cdef public int64_t iteration          # the iteration traffic is counted in
    # keep the page table's GPU arrival list (only a policy's evictor reads it; the handler's
    # least-recently-migrated rule keeps its own block list)
    cdef public bint keep_arrivals
    cdef vector[traffic_row] traffic       # per iteration
    cdef void _set_tier_in(self, int32_t t, page_t first, page_t end, int8_t tier) noexcept nogil


@cython.final
cdef class EvictorPicker(VictimPicker):
    """A policy's evictor (_evict.Evictor over the page table) names the handler's victims."""
    cdef PageTable pt
    cdef Evictor ev


# Where one SM is in its share of the running kernel.
cdef struct sm_run:
    int64_t n                  # pages it accesses in the kernel (its shares of every tensor)
    int64_t pos                # pages accessed so far
    int32_t seg                # the tensor (index in the kernel's list) it is sweeping
    int64_t page               # the next page it accesses
    int64_t seg_hi             # end of its share of that tensor
    int64_t delay              # cycles behind its nominal schedule (faults, pages in flight)
    int64_t wait_page          # the page it faulted on (-1: not waiting on a fault)
    int64_t wait_from          # when it started waiting
    int64_t finish             # cycle it finished its share (-1: not yet)


@cython.final
cdef class KernelRunner(FaultModel):
    # ---- components ----
    cdef FarFaultHandler handler
    cdef PageTableTiers tiers
    cdef PageTable pt
    cdef Translator tr
    cdef object _spec                      # what bind() needs to build the handler
    cdef object _lpn_first                 # per tensor: first logical page on the SSD (None: = first page)
    # ---- the trace's kernels ----
    cdef const int64_t* t11
    cdef const int64_t* in_off
    cdef const int32_t* in_t
    cdef const int64_t* out_off
    cdef const int32_t* out_t
    cdef const int64_t* w_off          # every tensor each kernel writes (read_mostly collapses)
    cdef const int32_t* w_t
    cdef object _keep
    cdef int32_t sms                       # SMs sweeping each kernel's tensors
    cdef readonly int64_t max_idle_steps   # livelock guard: steps in a row with no progress
    cdef public bint livelocked            # the guard stopped the kernel (the replay reports it)
    # ---- the running kernel ----
    cdef int64_t start, work               # its start and work (t11 + translation)
    cdef vector[int32_t] kt                # its tensors, in access order
    cdef vector[sm_run] sm
    cdef vector[int64_t] heap_t            # SMs by the cycle of their next step (a min-heap)
    cdef vector[int32_t] heap_s
    cdef bint top_held                     # the root's SM is being stepped: a push takes its place
    cdef vector[int32_t] waiting           # SMs waiting on a fault
    cdef kernel_row* row
    cdef moved_row* mv                     # its pages moved in for other causes than its faults
    cdef int64_t hint_in[4]                # pages the hints at its begin brought in, by source Tier
    cdef cycle_t inflight_until            # a hint's pages may still be in flight until then
    # ---- outputs ----
    cdef vector[int64_t] busy              # (start, end) of batches and hint transfers, coalesced (note_busy)
    cdef int64_t n_fast, n_simulated, n_steps, n_batches, n_resumes, n_inflight_waits
    cdef public TimelineRecorder tl        # None: no timeline (nothing recorded)
    cdef int64_t n_kin                     # the running kernel's input tensors (kt's first n_kin)

    cdef bint _all_ready(self, int64_t k, cycle_t now) noexcept nogil
    cdef void _push(self, cycle_t t, int32_t s) noexcept nogil
    cdef int32_t _hold_top(self, cycle_t* t) noexcept nogil
    cdef void _release_top(self) noexcept nogil
    cdef void _drop_top(self) noexcept nogil
    cdef void _sift_down(self, cycle_t x, int32_t s) noexcept nogil
    cdef void _next_segment(self, sm_run* c, int32_t s) noexcept nogil
    cdef bint _next_again(self, cycle_t t, int32_t s) noexcept nogil
    cdef int _step(self, int32_t s, cycle_t t) except -1 nogil
    cdef int _batch(self, cycle_t t) except -1 nogil
    cdef void _note_moves(self, bint demand) noexcept nogil
    cdef void _tl_moves(self, int64_t kind, cycle_t start, cycle_t end, int64_t units) noexcept nogil
    cdef int64_t _remote(self, sm_run* c, cycle_t t) noexcept nogil
