# Fault models: how long a kernel that faulted takes beyond its ideal time.
# See _fault.pyx.
from libc.stdint cimport int64_t


cdef class FaultModel:
    cdef int64_t fault_cycles(self, int64_t k, const int64_t* fin, const int64_t* fout) noexcept nogil
    cdef bint bulk_safe(self) noexcept nogil


cdef class ProfileFaultModel(FaultModel):
    cdef const int64_t* t11                # per kernel, cycles
    cdef const int64_t* t10
    cdef const int64_t* t00
    cdef int64_t freq_hz
    cdef int64_t page_bytes
    cdef double bw_pcie                    # bytes per ms
    cdef double bw_ssd                     # bytes per ms
    cdef int64_t l_sys_us, l_ssd_us
    cdef object _keep
