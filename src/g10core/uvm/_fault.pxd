# Fault models: how long a kernel that faulted takes beyond its ideal time.
# See _fault.pyx.
from libc.stdint cimport int8_t, int32_t, int64_t

from g10core.core._types cimport kernel_row, moved_row


cdef class FaultModel:
    # the slot model's formula: extra cycles of kernel k whose first attempt found fin/fout missing
    cdef int64_t fault_cycles(self, int64_t k, const int64_t* fin, const int64_t* fout) noexcept nogil
    cdef bint bulk_safe(self) noexcept nogil
    # An event-driven model runs kernels itself (the detailed preset's far-fault handler,
    # _kernelrun.KernelRunner): the replay then gives it the hints and each kernel, and
    # uses neither the batcher nor fault_cycles.
    cdef bint runs_kernels(self) noexcept nogil
    # a hint at the begin of a kernel of ``iteration`` (its pages count in that iteration)
    cdef int apply_hint(self, int32_t tensor, int8_t action, int64_t now, int64_t iteration) except -1 nogil
    # Run kernel k of ``iteration`` from ``now``; returns its end cycle, fills the row's fault
    # counts, ``moved`` (the pages it and its hints moved in for other causes) and
    # ``translation[0]`` (cycles address translation added).
    cdef int64_t run_kernel(self, int64_t k, int64_t iteration, int64_t now, kernel_row* row,
                            moved_row* moved, int64_t* translation) except -1 nogil


cdef class ProfileFaultModel(FaultModel):
    cdef const int64_t* t11                # per kernel, cycles
    cdef const int64_t* t10
    cdef const int64_t* t00
    cdef int64_t freq_hz
    cdef int64_t page_bytes
    cdef double bw_pcie                    # bytes per ms
    cdef double bw_ssd                     # bytes per ms
    cdef int64_t l_sys_us, l_ssd_us
    cdef bint zero_fill_alloc              # never-allocated pages cost allocation, not link time
    cdef double alloc_cycles_per_page      # (outside g10-artifact; gpu.malloc_us_per_byte)
    cdef bint link_shared_while_ssd        # host faults lose the SSD's share of the link only while it streams
    cdef object _keep


cdef class PhysicalFaultModel(FaultModel):
    cdef int64_t freq_hz                   # cycles per second
    cdef int64_t page_bytes
    cdef double bw_link                    # bytes per ms: the GPU's link (per direction)
    cdef double bw_ssd                     # bytes per ms: the SSD's reads
    cdef double bw_host                    # bytes per ms: host memory
    cdef double alloc_cycles_per_page      # zero-fill of one never-allocated page (gpu.malloc_us_per_byte)
    cdef int64_t unit_pages                # pages per migration unit (fault.migration_unit_bytes)
    cdef int64_t block_pages               # pages per VA block (fault.va_block_bytes)
    cdef int64_t batch_faults              # migration units per batch (fault.batch_faults)
    cdef int64_t batch_fixed               # cycles per batch (fault.batch_fixed_us)
    cdef int64_t batch_per_block           # cycles per VA block (fault.batch_per_block_us)
    cdef int64_t batch_per_page            # cycles per page (fault.batch_per_page_us)
    cdef int64_t batch_unmap               # cycles per host VA block (fault.batch_unmap_us)
    cdef int64_t driver_cycles(self, int64_t pages, int64_t host_pages) noexcept nogil
