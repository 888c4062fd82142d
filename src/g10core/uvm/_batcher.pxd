# The transfer batcher: eight queues of page runs and the slot that serves them with
# per-slot quotas, plus the recorder that repeats identical slots in bulk.
# See _batcher.pyx.
from libc.stdint cimport int8_t, int32_t, int64_t
from libcpp.deque cimport deque
from libcpp.vector cimport vector

from g10core.core._types cimport queue_run, victim_t, traffic_row, N_QUEUES
from g10core.uvm._pagetable cimport PageTable
from g10core.uvm._evict cimport Evictor
from g10core.uvm._device cimport Device
from g10core.uvm._timeline cimport TimelineRecorder

# the paths of exact quotas (op kinds; with a shared SSD, SSD writes draw on PK_SSD_IN's budget)
cdef enum:
    PK_SSD_IN = 0
    PK_SSD_OUT = 1
    PK_HOST_IN = 2
    PK_HOST_OUT = 3
    N_PK = 4
    WALK_MAX = 16777216    # slots one bulk repeat walks at most (2^24; exact quotas; a literal: the
                           # debug build's overflow check cannot evaluate a shift in an enum)
    TICKWISE_MAX = 65536   # ... when it applies them slot by slot (2^16)

# exact quotas: slots of one shape recorded with different budgets (bulk repeats)
cdef enum:
    NREC = 4

# recorded slot operations (for bulk repeats)
cdef enum:
    OPS_MAX = 48
    SEQ_MAX = 32
    OP_VICTIMS = 1
    OP_IN = 2
    OP_PREEVICT = 3

# Why a busy slot was or was not repeated in bulk (``stats()['bulk']``).
cdef enum:                     # BulkReason
    B_IRREGULAR
    B_NOTHING
    B_KERNEL_NEXT
    B_QUEUE_DRAINS
    B_KERNEL_READY
    B_FRAMES_RUN_OUT
    B_FRAMES_FREED_IN
    B_FRAMES_FREED_BLOCKED
    B_HOST_LINE
    B_LESS_THAN_ONE
    B_MIXED_VICTIMS
    B_STALL_MOVES
    B_REQUEUE
    B_MIXED_PAGES
    B_OPS_OVERFLOW
    B_PREEVICT_REQUEUE
    B_REDIRECT
    B_LOCKUP
    B_RESTART
    B_BUDGETS
    B_MERGED
    B_TICKWISE
    B_MIXED_TABLE
    B_PRE_MERGED
    B_COUNT

# Memory advice in the slot model (issue 37): a tensor's advice bits, and its counters.
cdef enum:
    ADV_PREFER_GPU = 1
    ADV_PREFER_HOST = 2
    ADV_ACCESSED_BY = 4
    ADV_READ_MOSTLY = 8
    ADV_RM_PENDING = 16            # read_mostly given while pages were on the GPU: clean once none is
    AS_REMOTE_ACCESSES = 0         # host runs of a tensor a kernel read or wrote over the link
    AS_REMOTE_PAGES = 1
    AS_REMOTE_READ_BYTES = 2
    AS_REMOTE_WRITE_BYTES = 3
    AS_REMOTE_POPULATED = 4        # never-touched pages placed in host memory (prefer_host)
    AS_READDUP_CLEAN = 5           # read_mostly pages evicted to host without a write-back
    AS_ADVICE_RANGES = 6           # advice hints applied
    N_AS = 7

cimport cython


@cython.final
cdef class Batcher:
    cdef PageTable pt
    cdef Evictor ev
    cdef Device link                       # the GPU's link (a no-op Device in the slot model)
    cdef Device ssd                        # the SSD (a no-op Device in the slot model)
    cdef bint devices                      # False: both are no-op Devices

    # ---- per-slot quotas (pages) ----
    cdef readonly int64_t tick             # slot period, cycles
    cdef int64_t gpu_batch                 # pages in, and pages out, per slot
    cdef int64_t host_batch                # host pages per slot and direction
    cdef int64_t ssd_batch                 # SSD pages per slot and direction
    cdef int64_t alloc_batch               # frames given (allocations and fetches) per slot
    cdef int64_t ssd_q                     # SSD pages per direction in the current slot
    cdef bint ssd_throttled                # the SSD takes no command in the current slot
    # ---- exact quotas (outside g10-artifact): a budget of slot time per path ----
    cdef bint exact                        # else the artifact's whole-page quotas and forced tiers
    cdef int64_t slot_units                # a slot's time, units
    cdef int64_t cost[N_PK]                # one page's time on each path, units
    cdef int bucket[N_PK]                  # the budget each path draws on
    cdef int64_t cap[N_PK]                 # carry kept at most (under one page of the costliest path on it)
    cdef int64_t bc1[N_PK], bc2[N_PK]      # the page costs on each budget (-1: none)
    cdef int64_t carry[N_PK]               # budget left at the end of the last slot (may be < 0: one page over)
    cdef int64_t avail[N_PK]               # the current slot's budget
    cdef int64_t used[N_PK]                # spent in the current slot
    cdef int64_t rec_key[N_PK]             # the recorded slot's budgets as its decisions see them
    cdef int64_t rec_used[N_PK]            # what it spent
    cdef bint ssd_shared                   # SSD reads and writes draw on one budget (ssd.duplex = shared)
    cdef int64_t ssd_write_share           # units GPU->SSD writes may spend before the slot's reads (BIG: no limit)
    # slots of the current shape (same operations, queues, destinations and flags), one per
    # budget key: what each moved, spent and changed (try_bulk_exact)
    cdef int64_t shape[OPS_MAX * 3 + SEQ_MAX * 4 + 16]
    cdef int n_shape
    cdef int64_t shape_v[OPS_MAX * 2 + SEQ_MAX + 8]   # its victims' part (record_entry)
    cdef int n_shape_v
    cdef bint shp_real                     # the table has a slot that moved something (else: only idle ones)
    cdef int shp_n_sq_v, shp_n_sq_in, shp_n_sq_pre, shp_n_in, shp_q_in
    cdef int8_t shp_sq_vdest[SEQ_MAX]
    cdef int8_t shp_sq_inq[SEQ_MAX]
    cdef int8_t shp_sq_preq[SEQ_MAX]
    cdef int8_t shp_sq_predest[SEQ_MAX]
    cdef int8_t shp_vdest, shp_d_vict, shp_in_req
    cdef int8_t shp_vclean                 # its victims are clean read duplicates (memory advice)
    cdef bint shp_vpf, shp_vreq, shp_victims, shp_single, shp_cycle
    cdef bint shp_frees                    # its slots free frames (else they keep or spend them)
    cdef int64_t shp_qlen0_mask            # queues not empty at the start of the table's slots
    cdef int64_t shp_consumed_mask         # queues they take pages from
    cdef int64_t shp_blocked_mask          # queues they leave because their budget is spent
    cdef int64_t ent_key[NREC][N_PK]
    cdef int64_t ent_used[NREC][N_PK]
    cdef int64_t ent_sqv[NREC][SEQ_MAX]
    cdef int64_t ent_sqin[NREC][SEQ_MAX]
    cdef int64_t ent_sqpre[NREC][SEQ_MAX]
    cdef int64_t ent_consumed[NREC][N_QUEUES]
    cdef bint ent_nothing[NREC]            # a slot that moved nothing (it joins any shape)
    cdef int64_t ent_v[NREC]               # victims
    cdef int64_t ent_dfree[NREC]           # change of free frames
    cdef int64_t ent_free0[NREC]           # free frames at its start
    cdef int64_t ent_dhost[NREC]           # change of host pages
    cdef int64_t ent_peak[NREC]            # highest host pages above the start
    cdef int64_t ent_traffic[NREC][5]      # alloc, ssd->gpu, host->gpu, gpu->ssd, gpu->host counted

    # ---- queues ----
    cdef vector[deque[queue_run]] qs
    cdef int64_t qlen[N_QUEUES]

    # ---- the current slot ----
    cdef public int64_t tb                 # time of the current (or next) slot
    cdef int64_t alloc_n, in_n, out_n, in_ssd, in_cpu, out_ssd, out_cpu
    cdef int forced_fetch, forced_evict    # Tier forced by a spent quota (TIER_NONE: none)
    cdef int64_t host_peak                 # highest host_used seen inside the slot
    cdef public bint irregular             # the slot did something a bulk repeat cannot copy
    cdef public int n_rec                  # slots in the table of the current shape (exact quotas)
    cdef bint stalled                      # no victim outside the eviction window this slot
    cdef int64_t consumed[N_QUEUES]        # pages taken from each queue in the slot
    cdef int64_t tick_victims              # victims taken in the slot
    cdef int victim_src                    # 0 none, 1 cursor, 2 head, 3 both
    cdef public bint waiting               # a kernel waits for its faults (the artifact's has_resched)
    cdef public bint started               # ... and its restart event is scheduled

    # ---- the slot's operations, for bulk repeats ----
    cdef int n_ops
    cdef int8_t op_kind[OPS_MAX]
    cdef int8_t op_q[OPS_MAX]
    cdef int8_t op_dest[OPS_MAX]
    cdef int64_t op_k[OPS_MAX]
    cdef int8_t rec_vdest                  # natural destination of the slot's first victims (-2: mixed)
    cdef bint rec_vpf                      # were they chosen as page-fault victims
    cdef bint rec_vreq                     # did they belong to the running kernel
    cdef int8_t rec_vclean                 # were they clean read duplicates (memory advice: clean())
    cdef int8_t rec_in_req                 # did the pages brought in (-1 none yet, -2 mixed)
    cdef int n_sq_v, n_sq_in, n_sq_pre
    cdef int8_t sq_vdest[SEQ_MAX]
    cdef int64_t sq_vk[SEQ_MAX]
    cdef int8_t sq_inq[SEQ_MAX]
    cdef int64_t sq_ink[SEQ_MAX]
    cdef int8_t sq_preq[SEQ_MAX]
    cdef int8_t sq_predest[SEQ_MAX]
    cdef int64_t sq_prek[SEQ_MAX]
    cdef bint seq_overflow
    cdef bint replaying                    # inside apply_bulk: do not record
    cdef int64_t tick_host0, tick_free0
    cdef int64_t qlen0[N_QUEUES]

    # ---- outputs ----
    cdef vector[traffic_row] traffic       # per iteration
    cdef public int64_t iteration          # the iteration traffic is counted in
    cdef vector[int64_t] bounds            # (cycle, 1 busy / 0 idle) of transfer-busy periods
    cdef bint transferring
    cdef public int64_t n_slots_detailed, n_slots_bulk, n_slots_idle
    cdef int64_t bulk_stat[B_COUNT]
    cdef public bint debug_log
    cdef vector[int64_t] log               # debug rows (kind, slot, first page, pages, tier)
    # pages brought in since the replay last took them (take_moved), by source Tier: from the
    # fault queues (the kernels' faults and re-queued victims) and from the hint queues
    cdef int64_t in_fault[4]
    cdef int64_t in_hint[4]
    cdef public int64_t requeued_pages     # pages of the running kernel evicted and re-queued as faults
    # the slot's pages by cause (the timeline splits the traffic with them): brought in from the
    # hint queues (prefetches) and sent out from the pre-eviction queues, by tier
    cdef int64_t pf_cpu, pf_ssd, pre_cpu, pre_ssd
    cdef public TimelineRecorder tl        # None: no timeline (nothing recorded)
    # per tensor, pages re-queued during the replay's current wait (rq_wait: its number; a
    # count whose mark is older belongs to an earlier wait): what a stopped run names
    cdef public int64_t rq_wait
    cdef int64_t* rq_pages
    cdef int64_t* rq_mark
    cdef object _keep
    # ---- memory advice (issue 37): exact quotas only (simulator.replay_inputs sets c["advice"]) ----
    cdef readonly bint advice_on           # the run applies advice hints (else they are never read)
    cdef int8_t* adv                       # per tensor: ADV_* bits
    cdef int8_t* clean_t                   # per tensor: read_mostly and no kernel wrote it since (clean())
    # read_mostly tensors not wholly in host memory when advised, or written since: each becomes
    # clean at the first kernel begin that finds all its pages there (kernel_check)
    cdef vector[int32_t] rm_pending
    cdef int64_t page_bytes
    cdef int64_t adv_st[N_AS]
    cdef int64_t rm_read, rm_write         # the waiting (or starting) kernel's remote pages
    cdef const int64_t* k_in_off           # the replay's kernel table (advice runs only)
    cdef const int32_t* k_in_t
    cdef const int64_t* k_out_off
    cdef const int32_t* k_out_t
    cdef const int64_t* k_w_off            # every tensor each kernel writes
    cdef const int32_t* k_w_t

    # queues
    cdef int push(self, int q, int64_t start, int64_t count, int32_t t, int8_t src) except -1 nogil
    cdef int pop(self, int q, int64_t k) except -1 nogil
    cdef bint faults_empty(self) noexcept nogil
    cdef bint all_empty(self) noexcept nogil
    cdef int apply_hint(self, int32_t t, int8_t action) except -1 nogil
    cdef int64_t queued(self) noexcept nogil
    cdef void note_requeue(self, int32_t t, int64_t k) noexcept nogil
    cdef int fault_tensor(self, int32_t t, int64_t* info) except -1 nogil

    # memory advice (the slot model's meanings of _uvm.pyx's advice, per tensor)
    cdef int advise(self, int32_t t, int8_t action) except -1 nogil
    cdef int64_t remote_tensor(self, int32_t t, bint write) except -1 nogil
    cdef int remote_ready(self, int32_t t) except -1 nogil
    cdef int64_t remote_cycles(self, int64_t read_pages, int64_t write_pages) except -1 nogil
    cdef int kernel_check(self, int64_t k) except -1 nogil
    cdef int64_t kernel_runs(self, int64_t k) except -1 nogil
    cdef int settle_read_mostly(self) except -1 nogil
    cdef bint all_in_host(self, int32_t t) except -1 nogil
    cdef inline int ready(self, int32_t t) except -1 nogil:
        """1 when t's pages are all on the GPU (not in transfer), or mapped remotely (advice)."""
        if self.pt.cnt_ready[t] == self.pt.t_np[t]:
            return 1
        return self.remote_ready(t) if self.advice_on else 0
    cdef inline bint clean(self, int32_t t) noexcept nogil:
        """t's pages have a valid host copy (read_mostly, unwritten): evicting one to host is a drop."""
        return self.advice_on and self.clean_t[t] != 0
    cdef inline void note_written(self, int32_t t) noexcept nogil:
        """A kernel writes t: the write collapses its read duplicates (under read_mostly, the pages
        fetched once all have left the GPU are duplicates again: rm_pending)."""
        if self.advice_on:
            self.clean_t[t] = 0
            if self.adv[t] & ADV_READ_MOSTLY:
                self.wait_until_left(t)
    cdef inline void wait_until_left(self, int32_t t) noexcept nogil:
        """t (read_mostly) has pages without a host copy: not clean until all are in host memory."""
        if not self.adv[t] & ADV_RM_PENDING:
            self.adv[t] |= ADV_RM_PENDING
            self.rm_pending.push_back(t)

    # the slot
    cdef int slot(self, int64_t now) except -1 nogil
    cdef int try_bulk(self, int64_t next_kernel) except -1 nogil
    cdef void note(self, int reason) noexcept nogil
    cdef int skip_idle(self, int64_t next_kernel) except -1 nogil

    # internals
    cdef int take_victims(self, victim_t* v, int64_t k, int8_t dest, bint is_pf, int64_t appended) except -1 nogil
    cdef void record_op(self, int8_t kind, int8_t q, int8_t dest, int64_t k) noexcept nogil
    cdef void rec_evict(self, int8_t dest) noexcept nogil
    cdef void rec_fetch(self, int8_t src) noexcept nogil
    cdef bint room(self) noexcept nogil
    cdef bint fits(self, int pk) noexcept nogil
    cdef bint can_in(self, int8_t src) noexcept nogil
    cdef int8_t exact_victim_dest(self) noexcept nogil
    cdef int8_t exact_pre_dest(self, int q) noexcept nogil
    cdef bint write_fits(self) noexcept nogil
    cdef int keep_queued_evictions(self, int32_t t, int q) except -1 nogil
    cdef void fair_ssd_share(self) noexcept nogil
    cdef int64_t budget_key(self, int b, int64_t a) noexcept nogil
    cdef void budgets_begin(self) noexcept nogil
    cdef void budgets_end(self) noexcept nogil
    cdef int64_t bring_in(self, int q, int64_t kmax, int kind, bint is_pf) except -2 nogil
    cdef int evict_queue(self, int q, int8_t default_dest) except -1 nogil
    cdef int evicted(self, int q, queue_run* fp, int8_t d, int64_t k) except -1 nogil
    cdef int pf_fetch(self, int q, int8_t src) except -1 nogil
    cdef int alloc_queue(self, int q, bint is_pf) except -1 nogil
    cdef int prefetch(self) except -1 nogil
    cdef int64_t queue_span(self, int q, int64_t need, int8_t src, bint check_req, bint req) noexcept nogil
    cdef int64_t bulk_before_ready(self, int q, int64_t n, int64_t c) noexcept nogil
    cdef int apply_bulk(self, int64_t scale, int64_t repeat) except -1 nogil
    cdef void tl_slots(self, int64_t start, int64_t n) noexcept nogil
    cdef int record_entry(self) except -1 nogil
    cdef int stream_budget(self, int8_t tier, bint out) noexcept nogil
    cdef bint victims_follow_counts(self) noexcept nogil
    cdef int try_bulk_exact(self, int64_t next_kernel) except -1 nogil
    cdef int64_t walk_budgets(self, int64_t n, int64_t* counts, int64_t* cw, vector[int64_t]* seq,
                              bint single, int64_t free_bit) noexcept nogil
    cdef int64_t closed_walk(self, int64_t n, int64_t* counts, int64_t* cw) noexcept nogil
    cdef int apply_entries(self, int64_t* counts, int64_t* seq, int64_t n_seq) except -1 nogil
    cdef int bulk_victims(self, int8_t d, int64_t left, bint vpf, int64_t* tl) except -1 nogil
    cdef int bulk_in(self, int q, int64_t left, int64_t* tl) except -1 nogil
    cdef int bulk_preevict(self, int q, int8_t d, int64_t left, int64_t* tl) except -1 nogil
    cdef void idle_budgets(self, int64_t m) noexcept nogil
