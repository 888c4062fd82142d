# Compiled SSD: the composition of its units, the way MQSim splits src/ssd/ -- the address
# mapping (_ssd_map), the DRAM write buffer (_ssd_wbuf), the block manager with GC
# (_ssd_gc) and the host interface with the flash timing (_ssd_front).
# The replay cimports SSDCore and calls read()/write()/trim() from its nogil loop;
# lpn ranges must lie inside [0, logical_pages) (ssd.SSD checks this for Python callers).
cimport cython
from libc.stdint cimport int64_t
from g10core.core._types cimport cycle_t
from g10core.link._pcie cimport LinkCore
from g10core.ssd._ssd_front cimport ssd_dev


@cython.final
cdef class SSDCore:
    cdef readonly int64_t logical_pages    # U: user-visible pages (lpn range)
    cdef readonly int64_t physical_pages   # every flash page of the device
    cdef readonly int64_t n_blocks         # every erase block of the device
    cdef readonly LinkCore link            # the SSD's own PCIe front end
    # the device: parameters, counters and units (_ssd_front.pxd), in this object, which
    # never moves
    cdef ssd_dev d

    cdef cycle_t read(self, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil
    cdef cycle_t write(self, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil
    cdef void trim(self, int64_t lpn, int64_t npages) noexcept nogil
    cdef cycle_t read_host(self, int64_t page, int64_t npages, cycle_t now) noexcept nogil
    cdef cycle_t write_host(self, int64_t page, int64_t npages, cycle_t now) noexcept nogil
    cdef void trim_host(self, int64_t page, int64_t npages) noexcept nogil
    cdef cycle_t next_issue_time(self, cycle_t now) noexcept nogil
    cdef cycle_t idle_at(self) noexcept nogil
