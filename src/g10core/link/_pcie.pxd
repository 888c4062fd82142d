# Compiled PCIe link: one FIFO queue per direction, exact cycle arithmetic.
# The replay cimports LinkCore and calls submit() from its nogil loop.
from libc.stdint cimport int64_t
from g10core.core._types cimport cycle_t, pcie_params, pcie_dir_stats

cdef extern from "g10core/pcie_math.h" nogil:
    int64_t g10_ceil_muldiv(int64_t n, int64_t num, int64_t den)

# Directions, seen from the device that owns the link (the GPU for the GPU's
# link, the SSD for the SSD's own front-end link).
cdef enum:
    DIR_TO_DEVICE = 0          # host->GPU, SSD->GPU; host->SSD on the SSD's link
    DIR_FROM_DEVICE = 1        # GPU->host, GPU->SSD; SSD->host on the SSD's link

# Flows: who runs the DMA decides which TLPs carry the data (see pcie.py).
cdef enum:
    FLOW_HOST = 0              # host<->device, moved by the device's own DMA engine
    FLOW_PEER = 1              # peer<->device (GPUDirect SSD<->GPU), moved by the peer's DMA engine


cimport cython


@cython.final
cdef class LinkCore:
    cdef pcie_params p
    cdef cycle_t busy_until[2]         # per direction: when the queue is free again
    cdef pcie_dir_stats st[2]          # per direction counters

    cdef cycle_t submit(self, int direction, int flow, int64_t nbytes, cycle_t now) noexcept nogil
    cdef int64_t wire_cycles(self, int direction, int flow, int64_t nbytes) noexcept nogil
    cdef cycle_t free_at(self, int direction) noexcept nogil
