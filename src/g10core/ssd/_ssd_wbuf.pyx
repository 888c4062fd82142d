# cython: language_level=3
"""The SSD's DRAM write buffer (``SSDCore`` in _ssd.pyx composes it; see _ssd_wbuf.pxd).

A write is acknowledged once its pages sit in the buffer, so bursts see the buffer and
sustained writes the flash.  A page enters when there is room (else when the earliest
buffered program ends) and leaves when its own program ends.  ``WriteBuffer`` is a thin
wrapper for tests.
"""
from libc.stdint cimport int32_t, int64_t, INT64_MAX
from libc.stdlib cimport calloc, malloc, free

from g10core.core._types cimport cycle_t

# The key of a plane with nothing buffered: later than any simulated cycle.
cdef cycle_t CYCLE_NEVER = INT64_MAX


cdef int wbuf_init(ssd_wbuf* w, int64_t n_planes, int64_t capacity) noexcept nogil:
    """An empty buffer of ``capacity`` pages over ``n_planes``; -1 when out of memory."""
    cdef int64_t i
    w.capacity = capacity
    w.count = 0
    w.n_planes = n_planes
    w.tree_leaves = 1
    while w.tree_leaves < n_planes:
        w.tree_leaves *= 2
    w.tree = <int32_t*> malloc(2 * w.tree_leaves * sizeof(int32_t))
    w.key = <cycle_t*> malloc(w.tree_leaves * sizeof(cycle_t))
    w.ring = <wbuf_ring*> calloc(n_planes, sizeof(wbuf_ring))
    if w.tree == NULL or w.key == NULL or w.ring == NULL:
        return -1
    for i in range(n_planes):
        w.ring[i].mask = -1                        # no ring until its first page
    # every plane's buffer is empty: key CYCLE_NEVER, and so is every padding leaf
    for i in range(w.tree_leaves):
        w.key[i] = CYCLE_NEVER
        w.tree[w.tree_leaves + i] = <int32_t> i
    for i in range(w.tree_leaves - 1, 0, -1):
        w.tree[i] = w.tree[2 * i]
    return 0


cdef void wbuf_free(ssd_wbuf* w) noexcept nogil:
    cdef int64_t i
    if w.ring != NULL:
        for i in range(w.n_planes):
            free(w.ring[i].done)
    free(w.ring); free(w.tree); free(w.key)
    w.ring = NULL; w.tree = NULL; w.key = NULL


cdef inline void _tree_update(ssd_wbuf* w, int64_t plane) noexcept nogil:
    """Replay ``plane``'s path of the winner tree after its key changed."""
    cdef int64_t i = w.tree_leaves + plane
    cdef int32_t win = <int32_t> plane, other
    cdef cycle_t kw = w.key[plane], ko
    while i > 1:                                   # log2(leaves) steps, no data-dependent branch
        other = w.tree[i ^ 1]
        ko = w.key[other]
        if ko < kw:
            win = other
            kw = ko
        i >>= 1
        w.tree[i] = win


cdef void _retire_top(ssd_wbuf* w) noexcept nogil:
    """The earliest-programmed buffered page leaves the buffer."""
    cdef int32_t plane = w.tree[1]
    cdef wbuf_ring* r = &w.ring[plane]
    r.first = (r.first + 1) & r.mask
    r.n -= 1
    w.count -= 1
    w.key[plane] = r.done[r.first] if r.n > 0 else CYCLE_NEVER
    _tree_update(w, plane)


cdef void _retire_until(ssd_wbuf* w, int32_t plane, cycle_t t) noexcept nogil:
    """Every page of ``plane`` whose program ended by ``t`` leaves the buffer: the
    plane's ring is cut at once, with one winner-tree update for the whole run."""
    cdef wbuf_ring* r = &w.ring[plane]
    cdef int32_t n = 0
    while n < r.n and r.done[(r.first + n) & r.mask] <= t:
        n += 1
    if n == 0:
        return
    r.first = (r.first + n) & r.mask
    r.n -= n
    w.count -= n
    w.key[plane] = r.done[r.first] if r.n > 0 else CYCLE_NEVER
    _tree_update(w, plane)


cdef cycle_t wbuf_admit_full(ssd_wbuf* w, cycle_t t) noexcept nogil:
    """wbuf_admit once the count has reached the buffer's size."""
    while w.key[w.tree[1]] <= t:                   # an empty buffer's key is CYCLE_NEVER
        _retire_until(w, w.tree[1], t)
    if w.count < w.capacity:
        return t
    t = w.key[w.tree[1]]                           # full: wait for the next program to end
    _retire_top(w)
    return t


cdef int _grow(wbuf_ring* r) noexcept nogil:
    """Double ring ``r`` (it is full); -1 when out of memory."""
    cdef int64_t size = 2 * (<int64_t> r.mask + 1), i
    cdef cycle_t* d
    if size < 16:
        size = 16
    d = <cycle_t*> malloc(size * sizeof(cycle_t))
    if d == NULL:
        return -1
    for i in range(r.n):                           # unwrapped: the oldest at 0
        d[i] = r.done[(r.first + i) & r.mask]
    free(r.done)
    r.done = d
    r.first = 0
    r.mask = <int32_t> (size - 1)
    return 0


cdef int wbuf_add_slow(ssd_wbuf* w, int64_t plane, cycle_t done) noexcept nogil:
    """wbuf_add of a plane with no page in the buffer or no room in its ring."""
    cdef wbuf_ring* r = &w.ring[plane]
    if r.n > r.mask and _grow(r) < 0:
        return -1
    r.done[(r.first + r.n) & r.mask] = done        # programs of a plane end in order
    r.n += 1
    w.count += 1
    if r.n == 1:
        w.key[plane] = done
        _tree_update(w, plane)
    return 0


cdef class WriteBuffer:
    """A write buffer alone, for tests: ``admit`` then ``add`` per page, as a write does."""
    cdef ssd_wbuf w

    def __cinit__(self, int64_t n_planes, int64_t capacity):
        if wbuf_init(&self.w, n_planes, capacity) < 0:
            raise MemoryError("cannot allocate the write buffer")

    def __dealloc__(self):
        wbuf_free(&self.w)

    def __reduce__(self):
        raise TypeError("WriteBuffer does not pickle (a test fixture)")

    def admit(self, cycle_t t):
        """The cycle a page that arrived at ``t`` finds room."""
        return wbuf_admit(&self.w, t)

    def add(self, int64_t plane, cycle_t done):
        """``plane``'s page, programmed by ``done``, joins the buffer."""
        if wbuf_add(&self.w, plane, done) < 0:
            raise MemoryError("write buffer ring")

    @property
    def count(self):
        """Pages counted as buffered (pages whose program ended leave lazily)."""
        return self.w.count

    def pending(self, int64_t plane):
        """Program ends of ``plane``'s pages still in its ring, oldest first."""
        cdef wbuf_ring* r = &self.w.ring[plane]
        return [r.done[(r.first + i) & r.mask] for i in range(r.n)]
