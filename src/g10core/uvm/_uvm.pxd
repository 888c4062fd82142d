# Compiled far-fault handler of the detailed preset: fault buffer serviced in batches,
# deduplication per migration unit, prefetchers (none, sequential, tree) inside the
# 2 MiB VA block, least-recently-migrated eviction in 4 KiB pages or whole VA blocks,
# host/SSD destinations, transfers through the PCIe link (and the SSD).
# Spec, validation and the Python handle: g10core.uvm.fault_handler.
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from libcpp.deque cimport deque
from libcpp.map cimport map as cmap
from libcpp.unordered_map cimport unordered_map
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from g10core.core._types cimport cycle_t, page_t, uvm_params, uvm_move, uvm_stats
from g10core.link._pcie cimport LinkCore
from g10core.ssd._ssd cimport SSDCore
from g10core.tlb._tlb cimport Translator

cdef extern from "g10core/unitset.h":
    cdef cppclass g10_unitset:         # units in the fault buffer (a flat hash set)
        bint contains(int64_t unit) noexcept nogil
        void insert(int64_t unit) noexcept nogil   # (grows to a few KB at most)
        void erase(int64_t unit) noexcept nogil
        size_t size() noexcept nogil
    cdef cppclass g10_by_unit:          # the batch's order: by unit
        g10_by_unit() noexcept nogil

cdef extern from "g10core/blockindex.h":
    cdef cppclass g10_blockindex:      # block number -> record (a paged directory)
        pass
    int32_t g10_bi_find(const g10_blockindex& m, int64_t block) noexcept nogil
    void g10_bi_put(g10_blockindex& m, int64_t block, int32_t rec) noexcept nogil
    void g10_bi_erase(g10_blockindex& m, int64_t block) noexcept nogil
    void g10_bi_keys(const g10_blockindex& m, vector[int64_t]& out) except + nogil

cimport cython

# raise_fault's answers.
cdef enum:
    FAULT_QUEUED = 0           # a new fault entry: its unit waits in the buffer
    FAULT_DUPLICATE = 1        # its unit already waits in the buffer (deduplicated)
    FAULT_RESIDENT = 2         # the page is resident or in flight: wait for arrival(page)

# A VA block's residency, kept only for blocks with a page on the GPU or in flight to it.
cdef struct va_block:
    int64_t block              # block number (first page / block_pages)
    int64_t valid_lo           # the allocation's pages inside the block: [valid_lo, valid_hi),
    int64_t valid_hi           #   relative to the block's first page
    uint64_t resident[8]       # bit i: page i of the block is on the GPU or in flight to it
    uint64_t incoming[8]       # the pages of the block's latest migration in
    uint64_t dup[8]            # read duplicates: fetched from host memory under read_mostly and not
                               #   written since, so their host copy is valid (eviction: a drop)
    int64_t n_resident         # bits set
    int64_t arrive             # cycle the block's latest migration in completes (its pages usable)
    int64_t settled            # cycle every earlier migration into the block had completed
    int64_t epoch              # the batch (or hint) that last migrated into it
    int64_t faults_in          # fault entries that migrated into it (the prefetcher's minimum)
    int32_t prev               # least-recently-migrated list: older neighbour (-1: head)
    int32_t next               #   newer neighbour (-1: tail)

# One fault buffer entry (a migration unit).
cdef struct fault_entry:
    int64_t unit               # migration unit number (page / unit_pages)
    int64_t raised             # cycle the (first) fault on it was raised
    int64_t alloc_lo           # the faulting allocation's pages: [alloc_lo, alloc_hi)
    int64_t alloc_hi


# Thrashing detection (uvm_perf_thrashing.c), kept per VA block from its first eviction on.
cdef struct thrash_rec:
    uint64_t evicted[8]        # pages evicted since they last came in (their return is a migration event)
    int64_t last_in            # cycle the block's latest migration in completed
    int64_t events             # consecutive thrashing events (each within the lapse of the one before)
    int64_t throttles          # throttles since the block was last pinned
    int64_t pin_until          # its host pages are mapped remotely until then (0: not pinned)
    int64_t nap_until          # a throttled migration's pages are usable from then

# The thrashing rules in cycles (fault.thrashing_*; set_thrashing).
cdef struct thrash_params:
    bint enable
    int64_t threshold          # events that make a block thrashing
    int64_t lapse              # cycles: two migrations this close are an event
    int64_t nap                # cycles a throttled fault waits
    int64_t pin_threshold      # throttles before pinning
    int64_t pin                # cycles pages stay pinned (0: for ever)

# Memory advice on one allocation (a tensor's pages), cudaMemAdvise.
cdef struct advice_rec:
    int64_t end                # pages [key, end)
    int32_t flags              # ADVISE_* bits

# Counters of thrashing, pinning, remote access and advice.
cdef struct remote_stats:
    int64_t thrashing_events   # blocks found thrashing (events reached fault.thrashing_threshold)
    int64_t throttles          # migrations throttled (their pages usable a nap later)
    int64_t pins               # blocks pinned
    int64_t pinned_pages       # faulted host pages left in place by a pin (mapped remotely)
    int64_t remote_accesses    # remote (zero-copy) accesses: runs of pages read or written over the link
    int64_t remote_pages       # pages accessed remotely
    int64_t remote_read_bytes  # bytes read over the link by remote accesses
    int64_t remote_write_bytes # bytes written over the link by remote accesses
    int64_t remote_populated   # never-touched pages placed in host memory by prefer_host
    int64_t readdup_clean_pages  # read_mostly pages evicted without a write-back (host copy valid)
    int64_t advice_ranges      # advice hints applied

cdef enum:                     # advice bits
    ADVISE_PREFER_GPU = 1
    ADVISE_PREFER_HOST = 2
    ADVISE_ACCESSED_BY = 4
    ADVISE_READ_MOSTLY = 8

# _thrash_note's answers.
cdef enum:
    THRASH_NONE = 0
    THRASH_THROTTLE = 1
    THRASH_PIN = 2


cdef class TierMap:
    """Where the pages that are not on the GPU live (the replay's page table implements
    this; RunTierMap is a standalone one).  Tiers are _types.Tier codes."""
    # set around set_tier for read duplicates dropped to host memory: no bytes moved (no traffic)
    cdef public bint dropping_clean
    # Tier of ``page``; ``run_end[0]`` = end of the run of pages with that tier (<= limit).
    cdef int8_t tier_run(self, page_t page, page_t limit, page_t* run_end) noexcept nogil
    # Pages [first, end) are now in ``tier``.
    cdef void set_tier(self, page_t first, page_t end, int8_t tier) noexcept nogil
    # The SSD's logical page of ``page`` (base: the page itself; a move never crosses a
    # tensor, so a move's pages have consecutive logical pages).
    cdef page_t lpn(self, page_t page) noexcept nogil


@cython.final
cdef class RunTierMap(TierMap):
    cdef cmap[int64_t, int8_t] runs    # run start -> tier; a run extends to the next start


cdef class VictimPicker:
    """Names eviction victims for the handler instead of its least-recently-migrated walk
    (the replay's policy evictors: _kernelrun.EvictorPicker).  Base: none."""
    # The next victims: pages [first[0], end[0]) on the GPU, inside one VA block of
    # ``block_pages`` and at most ``need`` of them, taken at once (the picker has already
    # recorded them as taken); ``dest[0]``: TIER_NOT_PRESENT (dead data: dropped) or -1 (the
    # handler's destination rule).  ``for_fault``: the frames are for a fault batch (else a
    # hint's prefetch, which may find none).  Returns False when there is no victim.
    cdef bint pick(self, bint for_fault, int64_t need, int64_t block_pages, page_t* first, page_t* end,
                   int8_t* dest) noexcept nogil


@cython.final
cdef class FarFaultHandler:
    cdef uvm_params p
    cdef int unit_shift, block_shift   # log2 of p.unit_pages and p.block_pages (powers of two)
    cdef LinkCore link                 # the GPU's PCIe link
    cdef SSDCore ssd                   # None: SSD pages cost only their link transfer
    cdef TierMap tiers
    cdef Translator translator         # told about every page that leaves the GPU
    cdef VictimPicker picker           # None: least recently migrated blocks are the victims
    cdef g10_blockindex block_index    # block number -> record in `blocks`
    cdef vector[va_block] blocks
    cdef vector[int32_t] free_records
    cdef int32_t lrm_head, lrm_tail    # least recently migrated first
    cdef deque[fault_entry] buffer     # faults waiting, in the order raised
    cdef g10_unitset pending             # units in the buffer (deduplication)
    cdef vector[fault_entry] batch     # scratch: the batch being serviced
    cdef vector[uvm_move] moves        # what the latest batch / hint / eviction / release moved
    cdef vector[uvm_move] pref_moves   # scratch: a block's prefetch moves (_add_fault_runs)
    cdef vector[pair[int64_t, int64_t]] ranges   # scratch: the ranges a batch brings in, merged
    # the running kernel's writes (note_written since begin_kernel): pages it brings in from host
    # are not read duplicates, as it writes them
    cdef vector[pair[int64_t, int64_t]] writing
    cdef cycle_t busy_until            # the handler is servicing a batch until then
    cdef cycle_t last_start            # when the latest batch started
    cdef int64_t gpu_used              # GPU frames holding (or awaiting) a page
    cdef int64_t host_used             # host pages holding evicted pages
    cdef int64_t epoch                 # batches and hints so far (pins their blocks)
    cdef int64_t live_blocks
    cdef cycle_t last_arrival          # raise_fault(FAULT_RESIDENT): when that page arrives
    cdef int64_t out_bytes[2]          # this operation's GPU->host (0) and GPU->SSD (1) bytes
    cdef cycle_t shootdown             # this operation's shootdown cycles
    cdef uvm_stats st
    cdef int64_t pass_batches          # batches of the current service pass
    # thrashing, remote mappings and memory advice (issue 37)
    cdef thrash_params tp
    cdef unordered_map[int64_t, thrash_rec] thrash      # VA block -> its thrashing record
    cdef cycle_t pin_horizon       # the latest pin_until of any record: none is pinned from then on
                                   #   (a fault's remote_run looks no record up then)
    cdef cmap[int64_t, advice_rec] advice               # first page of an advised allocation -> advice
    cdef vector[int64_t] throttled                      # scratch: blocks throttled in this batch
    cdef remote_stats rs

    # ---- entry points the replay calls ----
    # A warp touched non-resident ``page`` of the allocation [alloc_lo, alloc_hi) at ``now``.
    cdef int raise_fault(self, page_t page, page_t alloc_lo, page_t alloc_hi, cycle_t now) noexcept nogil
    # When the next batch would start (-1: the buffer is empty).
    cdef cycle_t next_batch_time(self) noexcept nogil
    # Service one batch starting at max(now, busy, first raise); returns its end: every
    # page it moved in is on the GPU then (moves() lists them).
    cdef cycle_t service_batch(self, cycle_t now) noexcept nogil
    # A hint brings [first, end) of allocation [alloc_lo, alloc_hi) now; returns arrival.
    cdef cycle_t prefetch_range(self, page_t first, page_t end, page_t alloc_lo, page_t alloc_hi,
                                cycle_t now) noexcept nogil
    # A hint sends the resident pages of [first, end) to ``dest`` (Tier); returns completion.
    cdef cycle_t evict_range(self, page_t first, page_t end, int8_t dest, cycle_t now) noexcept nogil
    # [first, end) is freed: its GPU pages are dropped without transfer; returns shootdown cycles.
    cdef cycle_t release_range(self, page_t first, page_t end) noexcept nogil
    # Cycle a resident (or in-flight) page is usable from; -1 when it is not on the GPU.
    cdef cycle_t arrival(self, page_t page) noexcept nogil
    # Pages on the GPU (or in flight to it) from ``page`` on, up to ``limit`` and the end of
    # page's VA block; ``arrive[0]``: the cycle they are usable from (their block's latest
    # migration).  0 when ``page`` is not on the GPU.
    cdef int64_t resident_run(self, page_t page, page_t limit, cycle_t* arrive) noexcept nogil
    # Faults waiting in the buffer.
    cdef int64_t buffered(self) noexcept nogil
    # Memory advice (a HINT_ADVISE_* action) on the allocation [first, end).
    cdef int advise(self, page_t first, page_t end, int8_t action) except -1 nogil
    # A kernel writes [first, end): a read-mostly allocation's host copy is stale from now on.
    cdef void note_written(self, page_t first, page_t end) noexcept nogil
    # Pages from ``page`` on (up to ``limit``) the GPU accesses remotely at ``now`` (advice or a
    # thrashing pin; they stay in host memory): their bytes cross the link, ``done[0]`` when
    # they have.  0: ``page`` is not remotely mapped (it faults).
    cdef int64_t remote_run(self, page_t page, page_t limit, bint write, cycle_t now, cycle_t* done) noexcept nogil
    # Whether a fault on ``page`` at ``now`` would be served remotely (remote_run > 0).
    cdef bint remote_ok(self, page_t page, cycle_t now) noexcept nogil

    # ---- internals ----
    cdef int32_t _record(self, int64_t block, int64_t alloc_lo, int64_t alloc_hi) except -1 nogil
    cdef int32_t _find(self, int64_t block) noexcept nogil
    cdef void _blocks_in(self, page_t first, page_t end, vector[int32_t]& recs) noexcept nogil
    cdef int64_t _resident_in(self, int32_t i, page_t first, page_t end, uint64_t* take) noexcept nogil
    cdef void _lrm_unlink(self, int32_t i) noexcept nogil
    cdef void _lrm_append(self, int32_t i) noexcept nogil
    cdef void _drop_record(self, int32_t i) noexcept nogil
    cdef void _migrating(self, va_block* b, const uint64_t* bits) noexcept nogil
    cdef void _prefetch_tree(self, va_block* b, int64_t unit_off, uint64_t* occ) noexcept nogil
    cdef void _prefetch_tree_driver(self, va_block* b, size_t first, size_t end, uint64_t* occ) noexcept nogil
    cdef void _chunk_used(self, int32_t i) noexcept nogil
    cdef int64_t _host_blocks(self, size_t first_move) noexcept nogil
    cdef int _add_tier_moves(self, page_t a, page_t end, int8_t cause, vector[uvm_move]& out) except -1 nogil
    cdef int _add_runs(self, int64_t base, const uint64_t* bits, int64_t n_bits, int8_t cause) except -1 nogil
    cdef int _add_fault_runs(self, int64_t base, const uint64_t* fresh, const uint64_t* pref,
                             int64_t n_bits) except -1 nogil
    cdef int64_t _evict(self, int64_t need, int8_t forced_dest, cycle_t now, bint for_fault) except -1 nogil
    cdef int64_t _evict_picked(self, int64_t need, bint for_fault) except -1 nogil
    cdef void _put_back(self, size_t first) noexcept nogil
    cdef int64_t _take_pages(self, int32_t i, const uint64_t* take, int8_t forced_dest) except -1 nogil
    cdef cycle_t _move_in(self, size_t first_move, cycle_t t_in, cycle_t t_floor) noexcept nogil
    cdef cycle_t _send_out(self, size_t first_move, cycle_t t) noexcept nogil
    cdef void _note_ssd_wait(self, cycle_t t) noexcept nogil
    cdef int _thrash_note(self, int64_t blockno, cycle_t start, const uint64_t* fresh) noexcept nogil
    cdef void _thrash_evicted(self, va_block* b, const uint64_t* take) noexcept nogil
    cdef void _host_bits(self, int64_t base, const uint64_t* bits, int64_t n_bits, uint64_t* out) noexcept nogil
    cdef int32_t _advice_at(self, page_t page, page_t* end) noexcept nogil
    cdef page_t _read_mostly_run(self, page_t page, page_t end, bint* rm) noexcept nogil
    cdef void _mark_duplicates(self, page_t first, page_t end) noexcept nogil
    cdef void begin_kernel(self) noexcept nogil
    cdef cycle_t _remote_transfer(self, int direction, int64_t nbytes, cycle_t now) noexcept nogil
