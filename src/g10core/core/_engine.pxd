# Compiled event engine: a deterministic event queue keyed by (time, priority,
# sequence).  The replay embeds a g10_event_queue (no Python object in its loop);
# EventQueue is the same queue for Python (tests, tools, new components).
from libc.stdint cimport int32_t, int64_t

cdef extern from "g10core/eventq.h" nogil:
    cdef struct g10_event:
        int64_t time           # cycle at which it fires
        int32_t priority       # lower fires first among events at the same time
        int32_t kind           # what it is (the owner's enum)
        int64_t seq            # scheduling order, unique, assigned by push()
        int64_t arg            # one payload word
    cdef cppclass g10_event_queue:
        g10_event_queue()
        int64_t push(int64_t time, int32_t priority, int32_t kind, int64_t arg)
        const g10_event& top()
        g10_event pop()
        bint empty()
        size_t size()
        void clear()
        int64_t next_seq()
        int64_t pushed()
        int64_t popped()
        size_t max_size()

cimport cython


@cython.final
cdef class EventQueue:
    cdef g10_event_queue q
