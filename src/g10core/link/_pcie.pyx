# cython: language_level=3
"""Compiled PCIe link (the Python API is ``g10core.link.pcie``).

Each direction is one first-come-first-served queue shared by both flows
(host<->device and peer<->device).  A transfer occupies its direction whole:
it starts when the queue is free, pays the setup latency, then holds the wire
for ``ceil(nbytes * cycles_per_byte)`` cycles, cycles_per_byte being an exact
fraction.  With ``pipelined_setup`` the setup of a queued transfer overlaps
the previous transfer's data instead.  The two directions are independent
(full duplex).  Inputs are trusted: ``pcie.PcieLink`` validates them.
"""
from libc.stdint cimport int64_t
from libc.string cimport memset

from g10core.core._types cimport cycle_t, pcie_params, pcie_dir_stats

import numpy as np

DIRECTION_NAMES = ("to_device", "from_device")
FLOW_NAMES = ("host", "peer")


cdef class LinkCore:
    """State of one full-duplex link; build it through ``g10core.link.pcie.PcieLink``."""

    def __init__(self, cpb_num, cpb_den, int64_t setup_cycles, bint pipelined_setup):
        cdef int k
        for k in range(4):
            self.p.cpb_num[k] = cpb_num[k]
            self.p.cpb_den[k] = cpb_den[k]
        self.p.setup_cycles = setup_cycles
        self.p.pipelined_setup = 1 if pipelined_setup else 0
        self.reset()

    def __reduce__(self):
        return (_rebuild, (
            [self.p.cpb_num[k] for k in range(4)], [self.p.cpb_den[k] for k in range(4)],
            self.p.setup_cycles, bool(self.p.pipelined_setup), self._state()))

    def _state(self):
        return ([self.busy_until[0], self.busy_until[1]], [self.st[0], self.st[1]])

    def _set_state(self, state):
        busy, st = state
        self.busy_until[0], self.busy_until[1] = busy
        self.st[0], self.st[1] = st

    def reset(self):
        """Idle link, zero counters."""
        self.busy_until[0] = 0
        self.busy_until[1] = 0
        self.reset_stats()

    def reset_stats(self):
        """Zero the counters; queue state (when each direction is free) is kept."""
        cdef int d
        for d in range(2):
            memset(&self.st[d], 0, sizeof(pcie_dir_stats))
            self.st[d].last_submit = -1

    cdef int64_t wire_cycles(self, int direction, int flow, int64_t nbytes) noexcept nogil:
        cdef int k = direction * 2 + flow
        return g10_ceil_muldiv(nbytes, self.p.cpb_num[k], self.p.cpb_den[k])

    cdef cycle_t free_at(self, int direction) noexcept nogil:
        return self.busy_until[direction]

    cdef cycle_t submit(self, int direction, int flow, int64_t nbytes, cycle_t now) noexcept nogil:
        """Queue one transfer submitted at ``now``; return the cycle its last byte arrives."""
        cdef pcie_dir_stats* s = &self.st[direction]
        cdef int64_t wire = self.wire_cycles(direction, flow, nbytes)
        cdef cycle_t free = self.busy_until[direction]
        cdef cycle_t start, done, wait
        if self.p.pipelined_setup:
            start = now + self.p.setup_cycles          # data could flow from here
            if free > start:
                start = free
            wait = start - now - self.p.setup_cycles
            done = start + wire
            s.busy_cycles += wire
        else:
            start = now if now > free else free
            wait = start - now
            done = start + self.p.setup_cycles + wire
            s.busy_cycles += self.p.setup_cycles + wire
        self.busy_until[direction] = done
        s.transfers += 1
        s.bytes[flow] += nbytes
        s.queue_delay_cycles += wait
        if wait > s.max_queue_delay_cycles:
            s.max_queue_delay_cycles = wait
        if now < s.last_submit:
            s.out_of_order += 1
        s.last_submit = now
        if done > s.last_completion:
            s.last_completion = done
        return done

    # ---- thin wrappers for the Python layer and tests (inputs validated there) ----

    def py_submit(self, int direction, int flow, int64_t nbytes, cycle_t now):
        return self.submit(direction, flow, nbytes, now)

    def py_wire_cycles(self, int direction, int flow, int64_t nbytes):
        return self.wire_cycles(direction, flow, nbytes)

    def py_free_at(self, int direction):
        return self.busy_until[direction]

    @property
    def setup_cycles(self):
        return self.p.setup_cycles

    def stats(self):
        """Counters per direction as a dict (cycles and bytes)."""
        out = {}
        cdef int d
        for d in range(2):
            s = self.st[d]
            out[DIRECTION_NAMES[d]] = {
                "transfers": s.transfers,
                "bytes": s.bytes[0] + s.bytes[1],
                "bytes_host_flow": s.bytes[0],
                "bytes_peer_flow": s.bytes[1],
                "busy_cycles": s.busy_cycles,
                "queue_delay_cycles": s.queue_delay_cycles,
                "max_queue_delay_cycles": s.max_queue_delay_cycles,
                "out_of_order_submits": s.out_of_order,
                "last_completion_cycle": s.last_completion,
            }
        return out


def _rebuild(num, den, setup, pipelined, state):
    core = LinkCore(num, den, setup, pipelined)
    core._set_state(state)
    return core
