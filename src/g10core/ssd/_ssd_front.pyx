# cython: language_level=3
"""Host interface of the SSD (``SSDCore`` in _ssd.pyx holds the device; see _ssd_front.pxd).

The host interface drives the other units, so its functions take the whole device
(``ssd_dev``), every unit in it by value.

* NVMe: at most ``queue_depth`` commands in flight (their completion cycles: a sorted
  ring while they complete in order, else a min-heap); a request is split into commands
  of at most ``command_pages`` pages; data crosses the SSD's own PCIe link (a LinkCore).
  Writes are acknowledged once their pages sit in the DRAM write buffer.
* Flash timing: each plane's array is busy for tR / tPROG (GC's tBERS and copies are
  charged by the block manager), planes work in parallel (multi-plane operation
  idealised).  Each channel carries one page transfer per page read or programmed; its
  time is charged in request order from the request time (a token bucket per channel), so
  the channel's bandwidth is never exceeded and a backlogged plane does not hold the bus
  against idle planes on the same channel.  A read of a page whose program is still
  pending waits for it (no read hits in the buffer).

Everything here trusts its inputs (ssd.py validates the spec and lpn ranges).
"""
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport calloc, free

from g10core.core._types cimport ssd_plane
from g10core.link._pcie cimport DIR_TO_DEVICE, DIR_FROM_DEVICE, FLOW_HOST
from g10core.ssd._ssd_math cimport G10_HIST_BUCKETS, g10_hist_bucket, g10_prefetch_w
from g10core.ssd._ssd_map cimport (L2P_SHIFT, L2P_MASK, map_plane_of, map_block_of, l2p_get, l2p_slot,
                               l2p_unmapped, valid_set, valid_clear, p2l_append)
from g10core.ssd._ssd_wbuf cimport wbuf_admit, wbuf_add
from g10core.ssd._ssd_gc cimport host_alloc, block_lost


cdef inline cycle_t _max(cycle_t a, cycle_t b) noexcept nogil:
    return a if a > b else b


# trim works through this many l2p leaves (64 KiB) plane by plane at a time.
cdef enum:
    TRIM_CHUNK_LEAVES = 16


cdef int front_init(ssd_front* f, const ssd_params* p) noexcept nogil:
    """An idle host interface; -1 when out of memory (``front_free`` releases what was made)."""
    f.host_page_bytes = p.page_bytes
    f.channel_free = <cycle_t*> calloc(p.n_channels, sizeof(cycle_t))
    f.slots = <cycle_t*> calloc(p.queue_depth, sizeof(cycle_t))
    f.slot_scratch = <cycle_t*> calloc(p.queue_depth, sizeof(cycle_t))
    f.hist_read = <int64_t*> calloc(G10_HIST_BUCKETS, sizeof(int64_t))
    f.hist_write = <int64_t*> calloc(G10_HIST_BUCKETS, sizeof(int64_t))
    f.n_slots = 0
    f.slot_head = 0
    f.slots_sorted = True
    if (f.channel_free == NULL or f.slots == NULL or f.slot_scratch == NULL
            or f.hist_read == NULL or f.hist_write == NULL):
        return -1
    return 0


cdef void front_free(ssd_front* f) noexcept nogil:
    free(f.channel_free); free(f.slots); free(f.slot_scratch); free(f.hist_read); free(f.hist_write)
    f.channel_free = f.slots = f.slot_scratch = NULL
    f.hist_read = f.hist_write = NULL


# ---- NVMe queue ------------------------------------------------------------------
# In-flight commands: their completion cycles.  While completions are released in
# time order (a closed loop of writes: each is acknowledged after the previous one)
# they sit in a sorted ring, O(1) per command; the first one out of order turns the
# ring into a binary min-heap (a sorted array is one) until the queue drains.

cdef inline cycle_t _slot_min(ssd_dev* d) noexcept nogil:
    return d.front.slots[d.front.slot_head] if d.front.slots_sorted else d.front.slots[0]


cdef inline cycle_t _pop_slot(ssd_dev* d) noexcept nogil:
    cdef cycle_t top
    cdef int64_t n, i = 0, c
    cdef cycle_t last
    if d.front.slots_sorted:
        top = d.front.slots[d.front.slot_head]
        d.front.slot_head += 1
        if d.front.slot_head == d.p.queue_depth:
            d.front.slot_head = 0
        d.front.n_slots -= 1
        return top
    top = d.front.slots[0]
    n = d.front.n_slots - 1
    last = d.front.slots[n]
    d.front.n_slots = n
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and d.front.slots[c + 1] < d.front.slots[c]:
            c += 1
        if d.front.slots[c] >= last:
            break
        d.front.slots[i] = d.front.slots[c]
        i = c
    if n > 0:
        d.front.slots[i] = last
    else:
        d.front.slots_sorted = True                      # drained: back to the ring
        d.front.slot_head = 0
    return top


cdef inline bint _slot_free_at(ssd_dev* d, cycle_t now) noexcept nogil:
    """Retire the commands done by ``now``; whether a queue slot is then free."""
    while d.front.n_slots > 0 and _slot_min(d) <= now:
        _pop_slot(d)
    return d.front.n_slots < d.p.queue_depth


cdef cycle_t _acquire_slot(ssd_dev* d, cycle_t now) noexcept nogil:
    """Start cycle of a command submitted at ``now`` (waits for a free queue slot)."""
    if _slot_free_at(d, now):
        return now
    return _pop_slot(d)


cdef void _release_slot(ssd_dev* d, cycle_t done) noexcept nogil:
    cdef int64_t i, parent, qd = d.p.queue_depth
    if d.front.slots_sorted:
        i = d.front.slot_head + d.front.n_slots                # one past the newest
        if i >= qd:
            i -= qd
        if d.front.n_slots == 0 or done >= d.front.slots[i - 1 if i > 0 else qd - 1]:
            d.front.slots[i] = done
            d.front.n_slots += 1
            return
        # out of order: rotate the ring to slots[0 .. n) (sorted, hence a heap)
        for i in range(d.front.n_slots):
            parent = d.front.slot_head + i
            d.front.slot_scratch[i] = d.front.slots[parent - qd if parent >= qd else parent]
        for i in range(d.front.n_slots):
            d.front.slots[i] = d.front.slot_scratch[i]
        d.front.slot_head = 0
        d.front.slots_sorted = False
    i = d.front.n_slots
    d.front.n_slots += 1
    while i > 0:
        parent = (i - 1) // 2
        if d.front.slots[parent] <= done:
            break
        d.front.slots[i] = d.front.slots[parent]
        i = parent
    d.front.slots[i] = done


cdef cycle_t front_next_issue_time(ssd_dev* d, cycle_t now) noexcept nogil:
    """Earliest cycle >= now at which a new command would find a free queue slot."""
    if _slot_free_at(d, now):
        return now
    return _slot_min(d)


cdef cycle_t front_idle_at(ssd_dev* d, LinkCore link) noexcept nogil:
    """First cycle at which every plane, channel, link direction and command is done."""
    cdef cycle_t t = _max(link.free_at(DIR_TO_DEVICE), link.free_at(DIR_FROM_DEVICE))
    cdef int64_t i
    for i in range(d.p.n_planes):
        t = _max(t, d.gc.planes[i].busy_until)
    for i in range(d.p.n_channels):
        t = _max(t, d.front.channel_free[i])
    for i in range(d.front.n_slots):                     # ring or heap: the max of the set either way
        t = _max(t, d.front.slots[(d.front.slot_head + i) % d.p.queue_depth])
    return t


cdef inline void _note_command(ssd_dev* d, cycle_t now, cycle_t done) noexcept nogil:
    if d.st.first_submit < 0 or now < d.st.first_submit:
        d.st.first_submit = now
    if done > d.st.last_completion:
        d.st.last_completion = done


cdef inline bint _out_of_range(ssd_dev* d, int64_t lpn, int64_t npages) noexcept nogil:
    """Refuse (and count) a command outside the logical pages: the Python layer checks
    every range it takes, so this catches a compiled caller's bug, not bad input."""
    if lpn < 0 or npages < 0 or lpn + npages > d.map.logical_pages:
        d.st.range_errors += 1
        return True
    return False


# ---- a caller whose page is not the flash page (the replay's 4 KiB virtual pages on a
# device with 8 or 16 KiB flash pages): its byte range becomes the flash pages it covers.
# Reads and writes take every flash page the range touches (a partial page is programmed
# whole, as the device's read-modify-write would); a trim only pages it covers whole,
# since the rest of a partial page may still hold live data.

cdef cycle_t front_read_host(ssd_dev* d, LinkCore link, int64_t page, int64_t npages, cycle_t now) noexcept nogil:
    cdef int64_t first, end
    if d.front.host_page_bytes == d.p.page_bytes:
        return front_read(d, link, page, npages, now)
    first = page * d.front.host_page_bytes // d.p.page_bytes
    end = ((page + npages) * d.front.host_page_bytes + d.p.page_bytes - 1) // d.p.page_bytes
    return front_read(d, link, first, end - first, now)


cdef cycle_t front_write_host(ssd_dev* d, LinkCore link, int64_t page, int64_t npages, cycle_t now) noexcept nogil:
    cdef int64_t first, end
    if d.front.host_page_bytes == d.p.page_bytes:
        return front_write(d, link, page, npages, now)
    first = page * d.front.host_page_bytes // d.p.page_bytes
    end = ((page + npages) * d.front.host_page_bytes + d.p.page_bytes - 1) // d.p.page_bytes
    return front_write(d, link, first, end - first, now)


cdef void front_trim_host(ssd_dev* d, int64_t page, int64_t npages) noexcept nogil:
    cdef int64_t first, end
    if d.front.host_page_bytes == d.p.page_bytes:
        front_trim(d, page, npages)
        return
    first = (page * d.front.host_page_bytes + d.p.page_bytes - 1) // d.p.page_bytes
    end = (page + npages) * d.front.host_page_bytes // d.p.page_bytes
    if end > first:
        front_trim(d, first, end - first)


# ---- requests ----------------------------------------------------------------------

cdef cycle_t front_read(ssd_dev* d, LinkCore link, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil:
    """Read ``npages`` logical pages from ``lpn``; return the cycle the last byte reaches the host."""
    cdef int64_t i = 0, j, k
    cdef cycle_t start, t, ready, r, done, last = now
    cdef ssd_map* m = &d.map
    if _out_of_range(d, lpn, npages):
        return now
    while i < npages:
        k = npages - i
        if k > d.p.command_pages:
            k = d.p.command_pages
        start = _acquire_slot(d, now)
        t = start + d.p.read_overhead
        ready = t
        for j in range(k):
            r = _read_page(d, m, lpn + i + j, t)
            if r > ready:
                ready = r
        done = link.submit(DIR_FROM_DEVICE, FLOW_HOST, k * d.p.page_bytes, ready)
        _release_slot(d, done)
        d.front.hist_read[g10_hist_bucket(done - now)] += 1
        d.st.read_commands += 1
        _note_command(d, now, done)
        if done > last:
            last = done
        i += k
    d.st.host_read_pages += npages
    d.st.read_bytes += npages * d.p.page_bytes
    return last


cdef cycle_t front_write(ssd_dev* d, LinkCore link, int64_t lpn, int64_t npages, cycle_t now) noexcept nogil:
    """Write ``npages`` logical pages from ``lpn``; return the cycle the last command is acknowledged."""
    cdef int64_t i = 0, j, k
    cdef cycle_t start, arrive, admit, ack, last = now
    cdef ssd_map* m = &d.map
    cdef ssd_wbuf* w = &d.buf
    cdef ssd_gc* g = &d.gc
    if _out_of_range(d, lpn, npages):
        return now
    while i < npages:
        k = npages - i
        if k > d.p.command_pages:
            k = d.p.command_pages
        start = _acquire_slot(d, now)
        arrive = link.submit(DIR_TO_DEVICE, FLOW_HOST, k * d.p.page_bytes, start)
        ack = arrive
        for j in range(k):
            admit = _write_page(d, m, w, g, lpn + i + j, arrive)
            if admit > ack:
                ack = admit
        ack += d.p.write_overhead
        _release_slot(d, ack)
        d.front.hist_write[g10_hist_bucket(ack - now)] += 1
        d.st.write_commands += 1
        _note_command(d, now, ack)
        if ack > last:
            last = ack
        i += k
    d.st.host_write_pages += npages
    d.st.write_bytes += npages * d.p.page_bytes
    return last


cdef void front_trim(ssd_dev* d, int64_t lpn, int64_t npages) noexcept nogil:
    """Deallocate pages (their data is dead: GC will not copy them). Takes no time.

    Planes share no FTL state, so the range is taken plane by plane (in lpn order within
    a plane, as one page at a time would), in chunks of TRIM_CHUNK lpns that stay in
    cache; a plane's pages that sit in a row in one block go stale in one step."""
    cdef ssd_map* m = &d.map
    cdef ssd_gc* g = &d.gc
    cdef int64_t i = lpn, j, k, q, stop, end = lpn + npages, npl = d.p.n_planes
    cdef int64_t ppn, plane, trimmed = 0
    cdef int32_t b, cur, run
    cdef uint32_t e
    cdef uint32_t* leaf
    cdef bint keep_bits = not m.p2l_lazy
    if _out_of_range(d, lpn, npages):
        return
    while i < end:
        stop = ((i >> L2P_SHIFT) + TRIM_CHUNK_LEAVES) << L2P_SHIFT
        if stop > end:
            stop = end
        for q in range(npl if npl < stop - i else stop - i):
            plane = map_plane_of(m, i + q)
            cur = -1
            run = 0
            j = i + q
            while j < stop:
                leaf = m.l2p_leaf[j >> L2P_SHIFT]
                if leaf == NULL:                   # a leaf not there maps nothing
                    j += npl
                    continue
                e = leaf[j & L2P_MASK]
                if e != 0:
                    ppn = <int64_t> e - 1
                    b = <int32_t> map_block_of(m, ppn)
                    if keep_bits:                  # (a miss: the page was written long ago)
                        valid_clear(m, ppn, b)
                    if b != cur:
                        if run > 0:
                            block_lost(g, m, plane, cur, run)
                        cur = b
                        run = 0
                    run += 1
                    leaf[j & L2P_MASK] = 0
                    m.l2p_live[j >> L2P_SHIFT] -= 1
                    trimmed += 1
                j += npl
            if run > 0:
                block_lost(g, m, plane, cur, run)
        for k in range(i >> L2P_SHIFT, ((stop - 1) >> L2P_SHIFT) + 1):
            if m.l2p_leaf[k] != NULL and m.l2p_live[k] == 0:
                m.leaf_pool.put(m.l2p_leaf[k])
                m.l2p_leaf[k] = NULL
        i = stop
    d.st.trimmed_pages += trimmed


# ---- flash pages -------------------------------------------------------------------

cdef cycle_t _read_page(ssd_dev* d, ssd_map* m, int64_t lpn, cycle_t t) noexcept nogil:
    """Read one page for a command that reached the flash at ``t``; return when its data
    is in the controller."""
    cdef uint32_t e = l2p_get(m, lpn)
    cdef ssd_plane* pl
    cdef cycle_t t0, bus
    if e == 0:                                     # never written: the controller returns zeros
        d.st.unmapped_read_pages += 1
        return t
    pl = &d.gc.planes[map_plane_of(m, lpn)]
    t0 = _max(t, pl.busy_until)
    pl.busy_until = t0 + d.p.t_read
    # channel time is charged in request order from the request time (module doc)
    bus = _max(d.front.channel_free[pl.channel], t) + d.p.t_xfer
    d.front.channel_free[pl.channel] = bus
    d.st.flash_read_pages += 1
    return _max(pl.busy_until + d.p.t_xfer, bus)


cdef cycle_t _write_page(ssd_dev* d, ssd_map* m, ssd_wbuf* w, ssd_gc* g, int64_t lpn,
                         cycle_t arrive) noexcept nogil:
    """Buffer, map and program one page whose data reached the SSD at ``arrive``;
    return when it is in the write buffer (the acknowledgement point)."""
    cdef int64_t plane = map_plane_of(m, lpn)
    cdef ssd_plane* pl = &d.gc.planes[plane]
    cdef cycle_t admit = wbuf_admit(w, arrive)
    cdef uint32_t* slot = l2p_slot(m, lpn)
    cdef uint32_t old
    cdef int64_t ppn, b
    cdef cycle_t bus, start
    if slot == NULL:                               # out of memory for an l2p leaf
        d.st.alloc_failures += 1
        return admit
    old = slot[0]
    if old != 0:
        _invalidate(m, g, plane, <int64_t> old - 1)
        slot[0] = 0
    else:
        m.l2p_live[lpn >> L2P_SHIFT] += 1          # counted as mapped from here (GC never frees leaves)
    ppn = host_alloc(g, m, plane, admit)
    if ppn < 0:                                    # unreachable for a validated geometry
        d.st.alloc_failures += 1
        l2p_unmapped(m, lpn)
        return admit
    b = map_block_of(m, ppn)
    if not m.p2l_lazy:                             # (while lazy, l2p alone says what is valid)
        if p2l_append(m, <int32_t> b, ppn - b * d.p.pages_per_block, <uint32_t> lpn) < 0:
            d.st.alloc_failures += 1               # out of memory for its p2l
        valid_set(m, ppn, b)
    slot[0] = <uint32_t> (ppn + 1)
    m.blk[b].valid += 1
    d.st.flash_program_pages += 1
    # channel time is charged in request order from the request time (module doc)
    bus = _max(d.front.channel_free[pl.channel], admit) + d.p.t_xfer
    d.front.channel_free[pl.channel] = bus
    start = _max(bus, pl.busy_until)
    pl.busy_until = start + d.p.t_prog
    if wbuf_add(w, plane, pl.busy_until) < 0:  # leaves the buffer when programmed
        d.st.alloc_failures += 1                   # out of memory: the page is not held
    return admit


cdef inline void _invalidate(ssd_map* m, ssd_gc* g, int64_t plane, int64_t ppn) noexcept nogil:
    """The page at ``ppn`` (in ``plane``: an lpn never leaves its plane) holds stale data."""
    cdef int32_t b = <int32_t> map_block_of(m, ppn)
    if not m.p2l_lazy:
        valid_clear(m, ppn, b)
    block_lost(g, m, plane, b, 1)


cdef inline void _prefetch_overwrite(ssd_dev* d, int64_t lpn) noexcept nogil:
    """Ask for the cache lines an overwrite of ``lpn`` will touch first (a hint only)."""
    cdef uint32_t e = l2p_get(&d.map, lpn)
    cdef int64_t b, bit
    if e != 0:
        b = map_block_of(&d.map, <int64_t> e - 1)
        bit = <int64_t> e - 1 + b * d.map.bit_pad
        g10_prefetch_w(&d.map.valid_bits[bit >> 6])
        g10_prefetch_w(&d.map.blk[b].valid)


cdef cycle_t front_run_pages(ssd_dev* d, LinkCore link, const int64_t* lpns, int64_t n, bint is_write,
                             cycle_t now, bint closed_loop) noexcept nogil:
    """One single-page command per entry of ``lpns`` (SSDCore.run_pages); returns the last
    completion cycle."""
    cdef int64_t i
    cdef cycle_t t = now, done, last = now
    cdef uint32_t** l2p = d.map.l2p_leaf
    for i in range(n):
        # an overwrite misses on l2p[lpn], then on the old page's valid bit and block:
        # fetch the first early, the others once the first has arrived
        if i + 16 < n and l2p[lpns[i + 16] >> L2P_SHIFT] != NULL:
            g10_prefetch_w(&l2p[lpns[i + 16] >> L2P_SHIFT][lpns[i + 16] & L2P_MASK])
        if i + 8 < n:
            _prefetch_overwrite(d, lpns[i + 8])
        if closed_loop:
            t = front_next_issue_time(d, t)
        if is_write:
            done = front_write(d, link, lpns[i], 1, t)
        else:
            done = front_read(d, link, lpns[i], 1, t)
        if done > last:
            last = done
    return last
