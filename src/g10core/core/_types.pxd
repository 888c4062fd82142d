# Shared C types of g10core's compiled layer: every .pyx cimports from here.
# Keep one commented field per line; a struct that mirrors a numpy dtype has a
# test that the two layouts agree (tests/test_types.py).
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

ctypedef int64_t cycle_t       # simulated time, GPU cycles
ctypedef int64_t page_t        # page number in the virtual address space
ctypedef int32_t tensor_t      # tensor index into the trace's tensor table
ctypedef int32_t kernel_t      # kernel index into one iteration's kernel list

# Where a page lives.
cdef enum:                     # Tier
    TIER_NONE = -1             # "no tier": no forced source/destination in a transfer slot
    TIER_NOT_PRESENT = 0       # never allocated (or freed, or dropped)
    TIER_SSD = 1
    TIER_HOST = 2
    TIER_GPU = 3

# What a migration hint asks for, applied when its kernel begins.
cdef enum:                     # HintAction
    HINT_TO_GPU = 0            # prefetch, or pre-allocate when not present
    HINT_TO_SSD = 1            # pre-evict to SSD
    HINT_TO_HOST = 2           # pre-evict to host memory
    HINT_FREE = 3              # pre-deallocate (drop, no transfer)
    HINT_RECOMPUTE = 4         # regenerate a dropped tensor by re-running its producer (the
                               # simulators expand it into a kernel: workload/recompute.py)
    # memory advice (cudaMemAdvise, issue 37): the far-fault handler (detailed) applies them, and
    # the slot model with exact quotas (default) per tensor (_batcher.pyx)
    HINT_ADVISE_PREFER_GPU = 5     # preferred location the GPU (clears prefer_host)
    HINT_ADVISE_PREFER_HOST = 6    # preferred location host memory: GPU accesses map it remotely
    HINT_ADVISE_ACCESSED_BY = 7    # the GPU maps the pages wherever they are (host: remote, no migration)
    HINT_ADVISE_READ_MOSTLY = 8    # read duplication: the host copy stays valid while unwritten

# The batcher's transfer queues, in no particular order (a tick serves them in the
# artifact's order: pre-evictions, fault fetches, fault allocations, prefetches,
# pre-allocations).
cdef enum:                     # TransferQueue
    Q_FAULT_SSD = 0            # faulted pages on the SSD
    Q_FAULT_HOST = 1           # faulted pages in host memory
    Q_FAULT_ALLOC = 2          # faulted pages never allocated
    Q_PREFETCH_SSD = 3         # hinted pages on the SSD
    Q_PREFETCH_HOST = 4        # hinted pages in host memory
    Q_PREALLOC = 5             # hinted pages never allocated
    Q_EVICT_SSD = 6            # pre-evictions to the SSD
    Q_EVICT_HOST = 7           # pre-evictions to host memory
    N_QUEUES = 8

# Kinds of events on the engine's queue (_engine.pxd).  Kernel and tick events share
# one priority, so at the same cycle they fire in scheduling order (the artifact's rule).
cdef enum:                     # EventKind
    EV_KERNEL_BEGIN = 0        # arg: kernel index
    EV_SLOT = 1                # a transfer slot (the batcher's tick)
    EV_DEVICE = 2              # a device's own event; arg: device index
cdef enum:
    EV_PRIORITY = 0

# One migration hint, as stored in a hint table (numpy dtype HINT_DTYPE).
cdef packed struct hint_rec:
    int32_t kernel             # kernel index at which the hint is applied
    int32_t tensor             # tensor index
    int8_t action              # HintAction


# ---- PCIe link (_pcie.pyx; spec and validation in pcie.py) -------------------

# Resolved link parameters: every time is in cycles of the shared clock.  The
# time a transfer holds the wire is ceil(nbytes * num / den), kept as an exact
# fraction so that an idle-link transfer's time is right to the cycle.
cdef struct pcie_params:
    int64_t cpb_num[4]         # cycles per byte, numerator, index direction * 2 + flow
    int64_t cpb_den[4]         # cycles per byte, denominator (same index)
    int64_t setup_cycles       # fixed cost of every transfer (descriptor, doorbell, completion)
    int32_t pipelined_setup    # 1: setup overlaps the previous transfer's data; 0: it holds the queue

# Counters of one link direction.
cdef struct pcie_dir_stats:
    int64_t transfers          # transfers submitted
    int64_t bytes[2]           # payload bytes by flow (0 host<->device, 1 peer<->device)
    int64_t busy_cycles        # cycles the direction was occupied (setup included unless pipelined)
    int64_t queue_delay_cycles # sum over transfers of (start - submit time)
    int64_t max_queue_delay_cycles  # worst single wait
    int64_t out_of_order       # submits whose time was earlier than the previous submit's
    cycle_t last_submit        # submit time of the latest transfer
    cycle_t last_completion    # completion of the latest transfer


# ---- SSD and its FTL (_ssd.pyx; spec and validation in ssd.py) ---------------

# Resolved SSD parameters (geometry in counts, times in cycles).
cdef struct ssd_params:
    int64_t n_channels         # flash channels
    int64_t planes_per_channel # chips * dies * planes behind one channel
    int64_t n_planes           # GC domains; lpn % n_planes picks the plane (channel first)
    int64_t blocks_per_plane   # erase blocks in one plane
    int64_t pages_per_block    # flash pages per erase block
    int64_t page_bytes         # flash page = mapping unit
    int64_t logical_pages_per_plane  # U / n_planes: user-visible pages mapped to each plane
    int64_t gc_free_blocks_min # GC restores at least this many free blocks per plane (>= 2)
    int32_t victim_policy      # VictimPolicy
    int32_t victim_choices     # d of d-choices
    int32_t shared_frontier    # 1: GC copies go to the host frontier (no separate GC frontier)
    int64_t t_read             # tR: array read into the page register
    int64_t t_prog             # tPROG: page program
    int64_t t_erase            # tBERS: block erase
    int64_t t_xfer             # one page over the flash channel
    int64_t read_overhead      # controller/NVMe time per read command (latency only)
    int64_t write_overhead     # controller/NVMe time per write command (latency only)
    int64_t queue_depth        # NVMe commands in flight at most
    int64_t command_pages      # a request is split into commands of at most this many pages
    int64_t write_buffer_pages # DRAM write buffer, pages (a write is acknowledged once buffered)
    uint64_t seed              # victim-sampling random stream

# GC victim rules (ssd.py's VICTIM_POLICIES maps names onto these).
cdef enum VictimPolicy:
    VICTIM_GREEDY = 0          # fewest valid pages (O(1) with per-count buckets)
    VICTIM_FIFO = 1            # oldest closed block
    VICTIM_RANDOM = 2          # uniform among closed blocks
    VICTIM_DCHOICES = 3        # fewest valid among d random closed blocks

# Counters of an SSD (reset by reset_stats; FTL state is kept).
cdef struct ssd_stats:
    int64_t read_commands      # NVMe read commands
    int64_t write_commands     # NVMe write commands
    int64_t host_read_pages    # pages the host read
    int64_t host_write_pages   # pages the host wrote
    int64_t unmapped_read_pages  # host reads of never-written / trimmed pages (no flash access)
    int64_t trimmed_pages      # pages invalidated by trim
    int64_t flash_read_pages   # array reads: host reads + GC copy reads
    int64_t flash_program_pages  # page programs: host writes + GC copies
    int64_t gc_copies          # valid pages relocated by GC
    int64_t gc_victims         # blocks GC collected (the GC count)
    int64_t erases             # block erases
    int64_t gc_busy_cycles     # plane time spent on GC copies and erases
    int64_t read_bytes         # host read payload
    int64_t write_bytes        # host write payload
    int64_t gc_stalls          # GC found no victim (impossible for a validated geometry)
    int64_t alloc_failures     # no erased block left (impossible for a validated geometry)
    int64_t range_errors       # commands refused: pages outside [0, logical_pages) (a caller's bug)
    cycle_t first_submit       # earliest command submit time since reset (-1 if none)
    cycle_t last_completion    # latest command completion since reset

# Per-plane FTL state (one GC domain; its buffered pages are the write buffer's,
# _ssd_wbuf.pxd).  Blocks are numbered globally:
# plane p owns blocks [p * blocks_per_plane, (p + 1) * blocks_per_plane).
cdef struct ssd_plane:
    int32_t host_block         # open block taking host writes (-1: none yet)
    int32_t host_next          # next unwritten page in it
    int32_t gc_block           # open block taking GC copies (-1: none yet)
    int32_t gc_next            # next unwritten page in it
    int32_t free_head          # FIFO of erased blocks, linked through the block `next` array
    int32_t free_tail          # last erased block (-1: list empty)
    int32_t free_count         # erased blocks in the FIFO
    int32_t closed_count       # full blocks that GC may pick
    int32_t min_valid          # greedy: no closed block holds fewer valid pages than this
    int32_t channel            # flash channel the plane sits behind
    cycle_t busy_until         # the plane's array (read, program, erase) is free from here

# ---- page-level replay (_replay.pyx) ------------------------------------------
# Page state is kept in runs: a run covers consecutive pages of ONE tensor that
# share a location and an in-transfer flag.  Runs never cross tensor boundaries.
cdef extern from "g10core/runmap.h":
    # the run map and its assignment live in a C++ header (sorted leaves of runs)
    cdef struct g10_loc_run:
        int64_t end            # one past the last page of the run
        int8_t loc             # Tier
        int8_t intr            # 1: queued for a transfer (the artifact's in_transfer)
    cdef struct g10_removed:
        int64_t ready          # pages that were in GPU and not in transfer
        int64_t intr           # pages that were in transfer
        int64_t gpu_intr       # pages that were in GPU and in transfer

ctypedef g10_loc_run loc_run

# A run of the GPU's arrival-ordered page list ("LRU" in the artifact; FIFO in effect).
cdef struct lru_node:
    int64_t start              # first page
    int64_t count              # pages, consecutive, one tensor
    int32_t tensor             # owner
    int32_t prev               # previous node (older), -1 at the head
    int32_t next               # next node (newer), -1 at the tail
    int32_t tprev              # previous node of the same tensor (older), -1 at its head
    int32_t tnext              # next node of the same tensor (newer), -1 at its tail
    int32_t pprev              # the node just before it in page order if that one ends in its first 2 MiB, else -1
    int32_t pnext              # the node just after it in page order if that one starts in its last 2 MiB, else -1
    int64_t order              # creation sequence (a split-off tail keeps its node's): follows list order

# A run of pages waiting in one of the transfer queues.
cdef struct queue_run:
    int64_t start              # first page
    int64_t count              # pages, consecutive, one tensor
    int32_t tensor             # owner
    int8_t src                 # Tier the pages were in when queued

# Where the next eviction victims are (an Evictor's answer to find_victim).
cdef struct victim_t:
    int64_t page               # first victim page
    int64_t seglen             # victims available from `page` with the same treatment
    int32_t tensor             # owner of the segment
    int8_t dest                # natural destination (before a forced override): Tier
    bint found                 # 0: no victim (all GPU pages in transfer, or a window stall)

# One executed kernel, as the replay records it (numpy dtype types.KERNEL_ROW_DTYPE).
cdef struct kernel_row:
    int64_t iteration          # iteration index
    int64_t kernel             # kernel index within the iteration
    int64_t start_cycles       # when it began (its first attempt, if it faulted)
    int64_t end_cycles         # when it ended
    int64_t in_transfer_pages  # its pages found in transfer at its attempts
    int64_t host_faults_pages  # its pages faulted from host memory
    int64_t ssd_faults_pages   # its pages faulted from the SSD
    int64_t unallocated_faults_pages  # its pages allocated on first touch
    int64_t host_used_pages    # host memory in use when it ran
    int64_t gpu_used_pages     # GPU frames in use when it ran

# Pages one executed kernel moved to the GPU besides its demand faults, one row per
# kernel_row (numpy dtype codes.MOVED_ROW_DTYPE).  With the kernel_row's faults, every page
# moved to the GPU is counted once, under one cause (docs/accounting.md).
cdef struct moved_row:
    int64_t host_prefetched_pages         # from host memory by the fault handler's prefetcher (detailed)
    int64_t ssd_prefetched_pages          # ... from the SSD
    int64_t unallocated_prefetched_pages  # ... allocated on the GPU (never allocated before)
    int64_t host_hinted_pages             # from host memory by a policy's prefetch hint
    int64_t ssd_hinted_pages              # ... from the SSD
    int64_t unallocated_hinted_pages      # ... pre-allocated
    int64_t host_refetched_pages          # from host memory again: pages of the running kernel evicted
                                          # before it ran, re-queued as faults (slot model)
    int64_t ssd_refetched_pages           # ... from the SSD
    int64_t unallocated_refetched_pages   # ... allocated again (they had been dropped)

# Traffic of one iteration, in pages (numpy dtype types.TRAFFIC_ROW_DTYPE).
cdef struct traffic_row:
    int64_t alloc              # GPU frames given (allocations and fetches) in slots that moved pages
    int64_t ssd_to_gpu         # pages fetched from the SSD
    int64_t host_to_gpu        # pages fetched from host memory
    int64_t gpu_to_ssd         # pages evicted to the SSD
    int64_t gpu_to_host        # pages evicted to host memory


# ---- TLB and far-fault handler ------------------------------------------------
# (_tlb.pyx and _uvm.pyx; specs and validation in tlb.py and uvm.py)

# Resolved parameters of one TLB hierarchy replica, in cycles and entry counts.
# A replica is the whole hierarchy (every SM's L1, the L2, the page-walk cache and
# the walkers) restricted to the translation pages v with v % modulus == residue;
# full simulation is one replica with modulus 1.  Sampled replicas are scaled down
# (sets first, then ways) so that each keeps the full hierarchy's reach per page; their
# walkers run in dilated time (a walk holds one for modulus x its latency and its
# requester waits 1/modulus of the queueing it sees).
cdef struct tlb_params:
    int32_t sms                # SMs, each with a private L1
    int32_t page_shift         # log2(translation page / 4 KiB): 0, 4 (64 KiB) or 9 (2 MiB)
    int32_t l1_sets            # L1 sets (of this replica)
    int32_t l1_ways            # L1 ways
    int32_t l2_sets            # shared L2 sets
    int32_t l2_ways            # shared L2 ways
    int32_t pwc_sets           # page-walk cache sets (0: no page-walk cache)
    int32_t pwc_ways           # page-walk cache ways
    int32_t walkers            # page walkers (every replica has all of them)
    int32_t overlap            # translations an SM keeps in flight while it computes
    int64_t l1_latency         # cycles of an L1 lookup
    int64_t l2_latency         # cycles of an L2 lookup (after the L1 missed)
    int64_t pwc_latency        # cycles of a page-walk-cache lookup (before a walk)
    int64_t walk_latency       # cycles of a full page walk
    int64_t walk_last_level    # cycles of the walk's last level (what a page-walk-cache hit leaves)
    int64_t shootdown_l1       # cycles of a shootdown that finds entries in some L1
    int64_t shootdown_l2       # cycles of a shootdown that finds entries in the L2
    int64_t modulus            # sampling modulus k, a power of two (1: full simulation)
    int32_t modulus_shift      # log2(modulus)

# One set-associative TLB (or page-walk cache): LRU within each set, kept by order.
# A set is a ring of ways in recency order: logical way i (0 = most recent) is physical
# way (head + i) % ways, and ways fill .. ways-1 are empty.
cdef struct tlb_array:
    int64_t* tag               # sets * ways; -1: empty
    int64_t* ready             # cycle the entry's walk completes (a hit before then waits)
    int32_t* head              # per set: physical way of its most recent entry
    int32_t* fill              # per set: entries in use
    int32_t sets               # sets
    int32_t ways               # ways per set
    int64_t set_mask           # sets - 1 when sets is a power of two, else -1
    int64_t way_mask           # ways - 1 when ways is a power of two, else -1
    int64_t entries            # sets * ways

# Counters of one replica (unscaled: the Python layer multiplies by the modulus).
cdef struct tlb_stats:
    int64_t accesses           # 4 KiB accesses translated (lookups + the L1 hits of their runs)
    int64_t lookups            # lookups simulated (the first access of an SM's run in a translation page)
    int64_t l1_hits            # L1 hits (simulated lookups and run accesses)
    int64_t l1_misses          # L1 misses
    int64_t l2_hits            # L2 hits (pending ones included)
    int64_t l2_pending_hits    # L2 hits on an entry whose walk was still in flight (merged walks)
    int64_t l2_misses          # L2 misses = walks started
    int64_t pwc_hits           # walks whose upper levels the page-walk cache held
    int64_t pwc_misses         # walks that found no page-walk-cache entry
    int64_t walker_queue_cycles      # sum over walks of the wait for a free walker
    int64_t max_walker_queue_cycles  # worst single wait
    int64_t latency_cycles     # sum of translation latencies (lookups and run hits)
    int64_t invalidated_l1     # L1 entries removed by shootdowns
    int64_t invalidated_l2     # L2 entries removed by shootdowns
    int64_t cycles_added       # sum over kernels of this replica's estimate of the cycles translation adds
    int64_t kernels            # kernels translated


# Far-fault handler (_uvm.pyx).  Pages are the replay's 4 KiB pages.
cdef enum Prefetcher:
    PREFETCH_NONE = 0          # only the faulted migration unit moves
    PREFETCH_SEQUENTIAL = 1    # the faulted unit and the next ones in its VA block
    PREFETCH_TREE = 2          # NVIDIA-style density tree over the VA block

cdef enum EvictDestination:
    EVICT_TO_HOST = 0          # host memory, whatever its use
    EVICT_TO_SSD = 1           # the SSD
    EVICT_HOST_THEN_SSD = 2    # host memory while it has room, then the SSD

# The tree prefetcher's rule (uvm_params.tree_rule).
cdef enum TreeRule:
    TREE_DRIVER = 0            # each fault's largest node over the threshold, counting resident + faulted
    TREE_CUMULATIVE = 1        # nodes filled below count as resident above (our earlier walk)

# The order of the handler's chunk list (uvm_params.chunk_order).
cdef enum ChunkOrder:
    CHUNK_BY_ALLOCATION = 0    # a chunk joins the tail when it gets its first page (the driver)
    CHUNK_BY_MIGRATION = 1     # it moves to the tail whenever pages migrate in (least recently migrated)

# Why pages moved (uvm_move.cause).
cdef enum MoveCause:
    MOVE_FAULT = 0             # the faulted migration unit
    MOVE_PREFETCH = 1          # added by the prefetcher
    MOVE_HINT = 2              # brought or sent by a policy hint
    MOVE_EVICT = 3             # evicted to make room

# Resolved parameters of the fault handler (pages and cycles).
cdef struct uvm_params:
    int64_t unit_pages         # migration unit, pages (1..16)
    int64_t block_pages        # VA block, pages (power of two, <= 512)
    int32_t prefetcher         # Prefetcher
    int64_t sequential_units   # units after the faulted one the sequential prefetcher adds
    int64_t threshold_num      # tree: a node fills once resident * den > num * its pages
    int64_t threshold_den
    int64_t batch_faults       # distinct faults (migration units) one batch services at most
    int64_t batch_fixed        # cycles of a batch's fixed cost
    int64_t batch_per_page     # cycles per page a batch migrates
    int64_t batch_per_block    # cycles per VA block a batch services
    int64_t batch_unmap        # cycles per VA block a batch brings host pages into (host unmapping)
    int64_t batches_per_service  # batches one service pass runs back to back (counted, not timed)
    int64_t prefetch_min_faults  # tree: a block prefetches once this many fault entries migrated into it
    int32_t tree_rule          # TreeRule
    int32_t chunk_order        # ChunkOrder
    int64_t evict_pages        # eviction granularity: 1 page or block_pages
    int32_t evict_destination  # EvictDestination
    int64_t gpu_pages          # GPU frames
    int64_t host_pages         # host memory for evicted pages, pages
    int64_t page_bytes         # bytes per page (4096)
    int64_t batch_pin_limit    # a batch stops taking fault entries once the blocks it migrates into
                               # would hold more pages than this (0: no limit; the replay: GPU frames)

# One range of pages a batch or hint moved.
cdef struct uvm_move:
    int64_t first              # first page
    int64_t end                # one past the last page
    int8_t src                 # Tier the pages were in
    int8_t dst                 # Tier they went to
    int8_t cause               # MoveCause
    int64_t done               # cycle the pages are in place
    int8_t clean               # an eviction to host of read duplicates (valid host copy): a drop, no transfer

# Counters of the handler.
cdef struct uvm_stats:
    int64_t faults             # faults raised
    int64_t duplicate_faults   # faults on a unit already waiting in the buffer
    int64_t resident_faults    # faults on a page already resident or in flight (no new work)
    int64_t batches            # batches serviced
    int64_t batch_units        # fault entries (migration units) serviced
    int64_t max_batch_units    # most units in one batch
    int64_t batch_cycles       # sum over batches of (end - start)
    int64_t fault_wait_cycles  # sum over serviced faults of (batch end - raise time)
    int64_t max_buffer         # most fault entries waiting at once
    int64_t pages_faulted      # pages of faulted units that moved in
    int64_t pages_prefetched   # pages the prefetcher added
    int64_t pages_hinted       # pages hints brought in
    int64_t pages_from_host    # pages copied host -> GPU
    int64_t pages_from_ssd     # pages read SSD -> GPU
    int64_t pages_zero_filled  # never-allocated pages given a GPU frame (no transfer)
    int64_t pages_to_host      # pages evicted to host memory
    int64_t pages_to_ssd       # pages evicted to the SSD
    int64_t evictions          # eviction decisions (chunks or page groups)
    int64_t overcommit_pages   # pages migrated in with no victim left (GPU over capacity)
    int64_t pages_dropped      # GPU pages evicted without a transfer (dead data, a policy's evictor)
    int64_t batches_capped     # batches that left fault entries for the next one (batch_pin_limit)
    int64_t prefetch_capped    # prefetcher or hint pages not brought because they would not fit
    int64_t picked_victims     # victim ranges named by the policy's evictor (VictimPicker)
    int64_t ssd_throttled      # batches and hints whose SSD commands found its queue full (they waited)
    int64_t ssd_wait_cycles    # sum over those of the wait for the SSD's first free queue slot
    int64_t shootdown_cycles   # cycles shootdowns added to batches
    # a batch's time, end - start, in parts that sum to batch_cycles:
    int64_t batch_fixed_cycles     # per batch
    int64_t batch_block_cycles     # per VA block serviced
    int64_t batch_page_cycles      # per page migrated in
    int64_t batch_unmap_cycles     # per VA block given host pages (host unmapping)
    int64_t batch_tlb_cycles       # TLB shootdowns of the batch's evictions
    int64_t batch_transfer_cycles  # the copies (out, then in) after the driver's work
    int64_t batch_blocks           # VA blocks serviced by batches
    int64_t batch_unmap_blocks     # of them, blocks that got pages from host memory
    int64_t service_passes         # runs of back-to-back batches, at most batches_per_service each
    int64_t blocks_created     # VA-block records created (touched blocks)
    int64_t max_blocks         # most VA-block records alive at once


# ---- the timeline (_timeline.pyx records it when a run asks; timeline.py writes it) ----------
# Costs follow kernels and fault batches, never pages: per kernel execution one span per
# channel, per batch (detailed) one record.

# Transfers by link direction and cause (codes.TL_CHANNELS names them).
cdef enum:                     # TimelineChannel
    TL_HOST_FAULT = 0          # host -> GPU, demand faults (and re-queued victims in the slot model)
    TL_HOST_PREFETCH = 1       # host -> GPU, prefetches (a policy's hints; the detailed prefetcher)
    TL_SSD_FAULT = 2           # SSD -> GPU, demand faults
    TL_SSD_PREFETCH = 3        # SSD -> GPU, prefetches
    TL_EVICT_HOST = 4          # GPU -> host, evictions to make room
    TL_PREEVICT_HOST = 5       # GPU -> host, a policy's pre-evictions
    TL_EVICT_SSD = 6           # GPU -> SSD, evictions to make room
    TL_PREEVICT_SSD = 7        # GPU -> SSD, a policy's pre-evictions
    TL_N = 8

# One channel's transfers while one kernel execution was the current one (numpy dtype
# codes.TL_SPAN_DTYPE).
cdef struct tl_span:
    int64_t first              # cycle the first of them began (-1: none)
    int64_t end                # cycle the last of them ended
    int64_t pages              # pages moved

# One fault batch or hint operation of the detailed preset (numpy dtype codes.TL_OP_DTYPE).
cdef struct tl_op:
    int64_t exec_index         # kernel execution (iteration * kernels + kernel) it belongs to
    int64_t kind               # 0: a fault batch; 1: a hint's prefetch; 2: a hint's pre-eviction
    int64_t start              # cycle it began
    int64_t end                # cycle its last page was in place
    int64_t pages_in           # pages it moved to the GPU over the link (host or SSD)
    int64_t pages_out          # pages it moved from the GPU over the link
    int64_t units              # fault entries (migration units) a batch serviced
    int64_t gpu_used           # GPU frames in use after it

# Per kernel execution: what the SSD's garbage collection did and what waited for transfers
# (numpy dtype codes.TL_EXEC_DTYPE).
cdef struct tl_exec:
    int64_t queued_pages       # pages queued for a transfer at its first attempt, its faults included (slot model)
    int64_t gc_first           # plane cycle the first GC work began (-1: no GC)
    int64_t gc_end             # plane cycle the last GC work ended
    int64_t gc_blocks          # blocks collected
    int64_t gc_copies          # valid pages copied
    int64_t gc_busy_cycles     # plane time GC took (summed over planes)
