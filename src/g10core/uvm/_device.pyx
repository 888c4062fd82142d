# cython: language_level=3
"""Devices behind the transfer path, all with one interface.

The batcher tells each device what a slot does to it: pages leaving the GPU (to host
memory, to the SSD, or dropped), pages arriving, pages freed by hints, the end of the
slot; the replay tells it when a kernel begins.  A device may limit how many of its
pages a slot moves (``slot_quota``) and may say that bulk repeats of identical slots
are unsafe for it (its state evolves even when the slots look alike).

* ``Device``: no device, the slot model of the g10-artifact preset (nothing happens).
* ``LinkDevice``: the GPU's PCIe link (``_pcie.LinkCore``); a slot's traffic is one
  transfer per direction and flow (host<->GPU copies, SSD<->GPU peer traffic).
* ``SSDDevice``: the SSD with its FTL (``_ssd.SSDCore``): evictions to it are writes,
  fetches from it reads, dropped and freed pages trims; a slot moves SSD pages only
  when the SSD can take a new command (GC and a full write buffer throttle it).
"""
from libc.stdint cimport int8_t, int64_t

from ..core._types cimport TIER_NOT_PRESENT, TIER_SSD, TIER_HOST, EV_DEVICE, EV_PRIORITY
from ..link._pcie cimport DIR_TO_DEVICE, DIR_FROM_DEVICE, FLOW_HOST, FLOW_PEER


cdef class Device:
    """No device: the slot model (every hook does nothing).

    A device may put its own events on the engine's queue with ``schedule``: they fire
    in (cycle, priority, sequence) order with the replay's kernel and slot events, and
    come back through ``on_event`` with their payload.
    """

    cdef void attach(self, g10_event_queue* queue, int64_t index) noexcept:
        self.queue = queue
        self.index = index

    cdef void schedule(self, int64_t time, int64_t payload) noexcept nogil:
        """An event at `time` for this device; `payload` (>= 0) comes back to on_event."""
        self.queue.push(time, EV_PRIORITY, EV_DEVICE, payload * 2 + self.index)

    cdef int64_t slot_quota(self, int64_t now, int64_t tick, int64_t quota) noexcept nogil:
        """Pages of this device a slot starting at `now` may move per direction."""
        return quota

    cdef void pages_out(self, int64_t page, int64_t k, int8_t dest, int64_t now) noexcept nogil:
        """Pages [page, page+k) leave the GPU towards `dest` (TIER_NOT_PRESENT: dropped)."""
        pass

    cdef void pages_in(self, int64_t page, int64_t k, int8_t src, int64_t now) noexcept nogil:
        """Pages [page, page+k) arrive on the GPU from `src` (TIER_NOT_PRESENT: allocated)."""
        pass

    cdef void pages_freed(self, int64_t page, int64_t k) noexcept nogil:
        """Pages [page, page+k) were freed by a hint: any copy is garbage."""
        pass

    cdef void slot_end(self, int64_t now) noexcept nogil:
        pass

    cdef void kernel_begin(self, int64_t kernel, int64_t now) noexcept nogil:
        pass

    cdef int on_event(self, int64_t now, int64_t payload) except -1 nogil:
        """An event this device scheduled fired at `now`."""
        return 0

    cdef bint bulk_safe(self) noexcept nogil:
        return True

    def stats(self):
        return {}


cdef class LinkDevice(Device):
    """The GPU's PCIe link: each slot's traffic as one transfer per direction and flow."""

    def __init__(self, link, int64_t page_bytes):
        self._link = link
        self.core = link.core
        self.page_bytes = page_bytes
        self.pending[0][0] = self.pending[0][1] = self.pending[1][0] = self.pending[1][1] = 0

    cdef void pages_out(self, int64_t page, int64_t k, int8_t dest, int64_t now) noexcept nogil:
        if dest == TIER_SSD:
            self.pending[DIR_FROM_DEVICE][FLOW_PEER] += k * self.page_bytes
        elif dest == TIER_HOST:
            self.pending[DIR_FROM_DEVICE][FLOW_HOST] += k * self.page_bytes

    cdef void pages_in(self, int64_t page, int64_t k, int8_t src, int64_t now) noexcept nogil:
        if src == TIER_SSD:
            self.pending[DIR_TO_DEVICE][FLOW_PEER] += k * self.page_bytes
        elif src == TIER_HOST:
            self.pending[DIR_TO_DEVICE][FLOW_HOST] += k * self.page_bytes

    cdef void slot_end(self, int64_t now) noexcept nogil:
        cdef int d, f
        for d in range(2):
            for f in range(2):
                if self.pending[d][f]:
                    self.core.submit(d, f, self.pending[d][f], now)
                    self.pending[d][f] = 0

    cdef bint bulk_safe(self) noexcept nogil:
        return False          # its queues evolve: no two slots are alike

    def stats(self, int64_t elapsed_cycles=0):
        return self._link.stats(elapsed_cycles)


cdef class SSDDevice(Device):
    """The SSD with its FTL; each virtual page's bytes have their logical place on it (the
    core's *_host calls turn page ranges into the flash pages they cover)."""

    def __init__(self, ssd):
        self._ssd = ssd
        self.core = ssd.core
        self.throttled_slots = 0

    cdef int64_t slot_quota(self, int64_t now, int64_t tick, int64_t quota) noexcept nogil:
        if self.core.next_issue_time(now) > now + tick:
            self.throttled_slots += 1
            return 0          # the SSD cannot accept a command in this slot
        return quota

    cdef void pages_out(self, int64_t page, int64_t k, int8_t dest, int64_t now) noexcept nogil:
        if dest == TIER_SSD:
            self.core.write_host(page, k, now)
        elif dest == TIER_NOT_PRESENT:
            self.core.trim_host(page, k)      # dropped dead pages: any SSD copy is garbage

    cdef void pages_in(self, int64_t page, int64_t k, int8_t src, int64_t now) noexcept nogil:
        if src == TIER_SSD:
            self.core.read_host(page, k, now)

    cdef void pages_freed(self, int64_t page, int64_t k) noexcept nogil:
        self.core.trim_host(page, k)          # the tensor is dead: its SSD copy is garbage

    cdef bint bulk_safe(self) noexcept nogil:
        return False          # FTL state evolves: no two slots are alike

    def stats(self):
        return self._ssd.stats()


cdef class EventProbe(Device):
    """A device that only uses the engine's queue: at every kernel begin it schedules an
    event ``delay`` cycles later and counts the events it gets back (tests)."""

    def __init__(self, int64_t delay):
        self.delay = delay

    cdef void kernel_begin(self, int64_t kernel, int64_t now) noexcept nogil:
        self.schedule(now + self.delay, now + self.delay)
        self.scheduled.push_back(now + self.delay)

    cdef int on_event(self, int64_t now, int64_t payload) except -1 nogil:
        if payload != now:
            with gil:
                raise RuntimeError(f"event for {payload} fired at {now}")
        self.fired.push_back(now)
        return 0

    def events(self):
        """(cycles scheduled, cycles fired), in order."""
        return list(self.scheduled), list(self.fired)
