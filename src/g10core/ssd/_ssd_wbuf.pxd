# The SSD's DRAM write buffer (see _ssd_wbuf.pyx): one pool shared by all planes; a
# buffered page leaves it when its program ends.  Each plane's pages form a FIFO (a plane
# programs in order), kept as a ring of program ends that grows by doubling, and a winner
# tree over the planes, keyed by their oldest page, finds the next page to leave in
# log2(planes) branch-free steps.  wbuf_admit and wbuf_add are inline: a write calls them
# once per page.
from libc.stdint cimport int32_t, int64_t
from g10core.core._types cimport cycle_t

# One plane's buffered pages: their program ends, oldest first, in a ring.
cdef struct wbuf_ring:
    int32_t first              # ring index of the oldest page (some may have left: see wbuf_admit)
    int32_t n                  # pages in the ring
    int32_t mask               # ring size - 1 (-1: no ring yet)
    cycle_t* done              # program ends, in program order

cdef struct ssd_wbuf:
    int64_t capacity           # pages the buffer holds (write_buffer_pages)
    int64_t count              # buffered pages, counted until taken out (wbuf_admit)
    int64_t n_planes
    int64_t tree_leaves        # power of two >= n_planes
    int32_t* tree              # [1, 2 * leaves): plane with the smallest key below the node
    cycle_t* key               # per leaf: the plane's oldest page's program end (or never)
    wbuf_ring* ring            # per plane

cdef int wbuf_init(ssd_wbuf* w, int64_t n_planes, int64_t capacity) noexcept nogil
cdef void wbuf_free(ssd_wbuf* w) noexcept nogil
cdef cycle_t wbuf_admit_full(ssd_wbuf* w, cycle_t t) noexcept nogil
cdef int wbuf_add_slow(ssd_wbuf* w, int64_t plane, cycle_t done) noexcept nogil


cdef inline cycle_t wbuf_admit(ssd_wbuf* w, cycle_t t) noexcept nogil:
    """When a page whose data arrived at ``t`` finds room in the buffer.

    Pages leave lazily: ``count`` also counts pages whose program has ended, and only when
    it reaches the buffer's size are those taken out, each plane's run of them in one step.
    The answer is the one an exact count gives: a count below the size means fewer pages
    still in the buffer, and at the size the count is made exact before it is used."""
    if w.count < w.capacity:
        return t
    return wbuf_admit_full(w, t)

cdef inline int wbuf_add(ssd_wbuf* w, int64_t plane, cycle_t done) noexcept nogil:
    """``plane``'s page programmed by ``done`` joins the buffer (-1: out of memory, the page
    is not held).  Inlined into a write; a plane's first page (the winner tree learns its
    key) and a full ring are out of line."""
    cdef wbuf_ring* r = &w.ring[plane]
    if r.n == 0 or r.n > r.mask:
        return wbuf_add_slow(w, plane, done)
    r.done[(r.first + r.n) & r.mask] = done         # programs of a plane end in order
    r.n += 1
    w.count += 1
    return 0
