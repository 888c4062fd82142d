# Devices behind the transfer path: one interface for the GPU's link and the SSD.
# The base class is "no device" (the slot model of the g10-artifact preset: every
# method does nothing); LinkDevice and SSDDevice drive the compiled PCIe link and FTL
# of the detailed preset.  See _device.pyx.
from libc.stdint cimport int8_t, int64_t
from libcpp.vector cimport vector

from g10core.core._engine cimport g10_event_queue
from g10core.link._pcie cimport LinkCore
from g10core.ssd._ssd cimport SSDCore


cdef class Device:
    cdef g10_event_queue* queue            # the engine's queue (set by attach; NULL before)
    cdef int64_t index                     # this device's number in the replay's event arguments

    cdef void attach(self, g10_event_queue* queue, int64_t index) noexcept
    cdef void schedule(self, int64_t time, int64_t payload) noexcept nogil
    cdef int64_t slot_quota(self, int64_t now, int64_t tick, int64_t quota) noexcept nogil
    cdef void pages_out(self, int64_t page, int64_t k, int8_t dest, int64_t now) noexcept nogil
    cdef void pages_in(self, int64_t page, int64_t k, int8_t src, int64_t now) noexcept nogil
    cdef void pages_freed(self, int64_t page, int64_t k) noexcept nogil
    cdef void slot_end(self, int64_t now) noexcept nogil
    cdef void kernel_begin(self, int64_t kernel, int64_t now) noexcept nogil
    cdef int on_event(self, int64_t now, int64_t arg) except -1 nogil
    cdef bint bulk_safe(self) noexcept nogil


cdef class LinkDevice(Device):
    cdef LinkCore core
    cdef object _link                      # the pcie.PcieLink that owns core
    cdef int64_t page_bytes
    cdef int64_t pending[2][2]             # the slot's bytes per (direction, flow), submitted at its end


cdef class SSDDevice(Device):
    cdef SSDCore core
    cdef object _ssd                       # the ssd.SSD that owns core
    cdef public int64_t throttled_slots    # slots in which the SSD could not take a command


cdef class EventProbe(Device):
    cdef int64_t delay                     # cycles after a kernel begins at which it fires
    cdef vector[int64_t] scheduled         # cycles of the events it scheduled
    cdef vector[int64_t] fired             # cycles at which they came back
