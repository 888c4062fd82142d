# cython: language_level=3
"""The event engine's queue, for Python: the same C++ heap the replay runs on.

Events are ordered by (time, priority, sequence); the sequence is the order of
scheduling, so equal keys cannot occur and a run is deterministic.
"""
cimport cython

INT64_MAX = 2 ** 63 - 1
INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1


@cython.final
cdef class EventQueue:
    """Deterministic event queue: ``push`` schedules, ``pop`` returns the earliest.

    >>> q = EventQueue()
    >>> [q.push(10, 0), q.push(5, 0), q.push(10, -1)]    # sequence numbers
    [0, 1, 2]
    >>> [q.pop()[:3] for _ in range(len(q))]            # (time, priority, sequence)
    [(5, 0, 1), (10, -1, 2), (10, 0, 0)]
    """

    def push(self, time, priority=0, kind=0, arg=0):
        """Schedules an event at ``time`` (cycles, >= 0); returns its sequence number."""
        if not 0 <= time <= INT64_MAX:
            raise ValueError(f"time must be in [0, 2**63), got {time}")
        if not INT32_MIN <= priority <= INT32_MAX or not INT32_MIN <= kind <= INT32_MAX:
            raise ValueError(f"priority and kind must fit in 32 bits, got {priority}, {kind}")
        if not -INT64_MAX - 1 <= arg <= INT64_MAX:
            raise ValueError(f"arg must fit in 64 bits, got {arg}")
        return self.q.push(time, priority, kind, arg)

    def pop(self):
        """Removes the next event; returns (time, priority, sequence, kind, arg)."""
        if self.q.empty():
            raise IndexError("pop from an empty event queue")
        cdef g10_event e = self.q.pop()
        return (e.time, e.priority, e.seq, e.kind, e.arg)

    def peek(self):
        """The next event without removing it, as ``pop`` returns it."""
        if self.q.empty():
            raise IndexError("peek into an empty event queue")
        cdef g10_event e = self.q.top()
        return (e.time, e.priority, e.seq, e.kind, e.arg)

    def clear(self):
        self.q.clear()

    def __len__(self):
        return self.q.size()

    def stats(self):
        """Counters: events scheduled and fired, the largest queue length."""
        return {"pushed": self.q.pushed(), "popped": self.q.popped(),
                "max_size": self.q.max_size(), "pending": self.q.size()}
