# Host interface of the SSD (see _ssd_front.pyx): the NVMe queue, read/write/trim request
# handling, and the flash timing of each page (plane arrays and channels).  It drives the
# other units: the mapping (_ssd_map), the write buffer (_ssd_wbuf) and the block manager
# with GC (_ssd_gc), whose inline functions it compiles into its write path; and it
# declares the device they make up (ssd_dev), which SSDCore holds.
from libc.stdint cimport int64_t
from g10core.core._types cimport cycle_t, ssd_params, ssd_stats
from g10core.link._pcie cimport LinkCore
from g10core.ssd._ssd_map cimport ssd_map
from g10core.ssd._ssd_wbuf cimport ssd_wbuf
from g10core.ssd._ssd_gc cimport ssd_gc

cdef struct ssd_front:
    int64_t host_page_bytes    # the page of the *_host calls (flash page by default)
    cycle_t* channel_free      # per channel: bus free from here
    # in-flight command completions: a sorted ring while they come in order, else a min-heap
    cycle_t* slots
    cycle_t* slot_scratch      # queue_depth entries, for turning the ring into a heap
    int64_t n_slots
    int64_t slot_head          # ring mode: index of the earliest completion
    bint slots_sorted          # 1: ring mode, 0: heap mode
    int64_t* hist_read         # latency histograms (cycles, log-linear buckets)
    int64_t* hist_write

# One SSD: its parameters, counters and units, each unit by value.  The host interface's
# functions take the device, so the write path reaches every unit at a fixed offset from
# one pointer, as it did when the device was one struct (a pointer per unit cost 12
# instructions and 3 register spills per page written, and Base UVM Inceptionv3 some 5 %).
# The other units' functions take only the units they work on.
cdef struct ssd_dev:
    ssd_params p               # fixed after construction
    ssd_stats st               # counters (every unit adds to them)
    ssd_front front            # NVMe queue, channels, histograms
    ssd_wbuf buf               # DRAM write buffer
    ssd_map map                # l2p, p2l, valid bits, per-block records
    ssd_gc gc                  # planes (frontiers, free blocks, array time), victims, GC

cdef int front_init(ssd_front* f, const ssd_params* p) noexcept nogil
cdef void front_free(ssd_front* f) noexcept nogil
cdef cycle_t front_read(ssd_dev* d, LinkCore link, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil
cdef cycle_t front_write(ssd_dev* d, LinkCore link, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil
cdef void front_trim(ssd_dev* d, int64_t lpn, int64_t npages) noexcept nogil
cdef cycle_t front_read_host(ssd_dev* d, LinkCore link, int64_t page, int64_t npages, cycle_t now) noexcept nogil
cdef cycle_t front_write_host(ssd_dev* d, LinkCore link, int64_t page, int64_t npages, cycle_t now) noexcept nogil
cdef void front_trim_host(ssd_dev* d, int64_t page, int64_t npages) noexcept nogil
cdef cycle_t front_next_issue_time(ssd_dev* d, cycle_t now) noexcept nogil
cdef cycle_t front_idle_at(ssd_dev* d, LinkCore link) noexcept nogil
cdef cycle_t front_run_pages(ssd_dev* d, LinkCore link, const int64_t* lpns, int64_t n, bint is_write,
                             cycle_t now, bint closed_loop) noexcept nogil
