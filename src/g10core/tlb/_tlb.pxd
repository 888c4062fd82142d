# Compiled address translation: the Translator interface the replay calls, the
# "no translation cost" translator, and a GPU TLB hierarchy (per-SM L1 TLBs, a
# shared L2, an optional page-walk cache, a pool of page walkers, shootdowns).
# Spec, validation and the Python handle: g10core.tlb.
from libc.stdint cimport int8_t, int32_t, int64_t
from libcpp.vector cimport vector
from g10core.core._types cimport cycle_t, page_t, tlb_params, tlb_array, tlb_stats

cimport cython


# What a lookup found (TLBHierarchy.last_level after lookup()).
cdef enum:
    LEVEL_L1 = 1               # L1 hit
    LEVEL_L2 = 2               # L1 miss, L2 hit
    LEVEL_WALK = 3             # both missed: a page walk


cdef class Translator:
    """Base class: a subclass overrides these nogil methods; the replay calls them.

    Pages are the replay's 4 KiB pages.  A kernel's tensors are given in access
    order (inputs, then outputs) as first page and page count.
    """
    # Translate the access stream of one kernel that runs from ``start`` for
    # ``duration`` cycles (its t11) and touches ``n`` tensors: tensor i is pages
    # [first[i], first[i] + count[i]).  Returns the cycles translation adds to
    # the kernel beyond what latency hiding absorbs (its slowest SM).
    cdef cycle_t translate_kernel(self, cycle_t start, cycle_t duration, const page_t* first,
                                  const page_t* count, int32_t n) noexcept nogil
    # Pages [first, end) left the GPU: remove every TLB entry that maps any of
    # them.  Returns the shootdown's cycles (the caller decides whom they stall).
    cdef cycle_t invalidate(self, page_t first, page_t end) noexcept nogil

    # The replay's calls (issue 11's Translator slot):
    # cycles translation adds to kernel k of the iteration starting at ``now`` (a
    # translator that needs the kernel's tensors gets them with attach_kernels)
    cdef int64_t kernel_cycles(self, int64_t k, int64_t now) except -1 nogil
    # pages [page, page + n) left the GPU (= invalidate)
    cdef void pages_evicted(self, int64_t page, int64_t n) noexcept nogil
    # may the replay repeat identical slots in bulk (skipping these calls)?
    cdef bint bulk_safe(self) noexcept nogil


@cython.final
cdef class NoTranslation(Translator):
    """Translation costs nothing (the g10-artifact preset)."""
    cdef int64_t kernels       # kernels seen
    cdef int64_t invalidations # invalidate calls seen


# One replica of the hierarchy: the translation pages v with v % modulus == residue.
cdef struct tlb_replica:
    tlb_params p               # this replica's (scaled) parameters
    int64_t residue            # which translation pages it simulates
    tlb_array* l1              # p.sms private L1 TLBs
    tlb_array l2               # the shared L2 TLB
    tlb_array pwc              # page-walk cache (p.pwc_sets == 0: none), keyed by v >> 9
    int64_t* walker_free       # full simulation: the cycles each walker is free again, a sorted ring
    int32_t ring_head          #   its smallest
    # sampled replicas: the walker pool as a fluid server of p.walkers walker-cycles per cycle
    double fl_backlog          # walker-cycles of walks waiting
    double fl_rate             # walker-cycles per cycle flowing in (the sum of the open segments)
    int64_t fl_time            # cycle fl_backlog was brought up to date
    int64_t* seg_end           # min-heap of the open inflow segments' ends
    double* seg_rate           # and their rates
    int32_t n_seg              # open segments
    int32_t cap_seg            # room in seg_end / seg_rate
    int32_t* region_count      # L1 and L2 entries per region of keys (NULL: not counted)
    int64_t n_regions          # regions counted
    tlb_stats st               # counters (unscaled)
    int64_t kernel_added       # the latest kernel's added cycles, this replica's estimate

# Where one SM is in its sweep of a kernel's tensors (scratch of translate_kernel).
cdef struct sm_cursor:
    int64_t n                  # 4 KiB accesses of this SM in the kernel
    int64_t nS                 # n * sms
    int64_t dq                 # duration = dq * n + dr
    int64_t dr
    int32_t seg                # tensor being swept
    int64_t seg_lo             # this SM's share of it: pages [seg_lo, seg_hi)
    int64_t seg_hi
    int64_t j_base             # index in the SM's stream of seg_lo
    int64_t lk_base            # lookups (translation-page runs) of the SM's stream before this segment
    int64_t lk_n               # lookups of the SM's whole stream
    int64_t pos                # next page to consider
    int64_t delay              # cycles the SM is behind its nominal schedule
    int64_t pipe_free          # cycle its translation pipeline takes the next lookup
    int64_t pipe_rem           # remainder of weighted latency / overlap (kept exact)
    int64_t v                  # pending lookup: translation page
    int64_t page               #   its first 4 KiB page in this run
    int64_t run                #   4 KiB accesses of the run (the first is the lookup)
    int64_t j                  #   its index in the SM's stream
    int64_t lk                 #   its index among the SM's lookups (in a full simulation)
    int64_t j_from             #   the accesses it stands for start here (0 for the SM's first)
    int64_t lk_from            #   and the lookups it stands for
    int64_t nq                 #   j * duration = nq * n + nr
    int64_t nr
    int64_t nominal            #   nominal issue cycle of the run's first access


@cython.final
cdef class TLBHierarchy(Translator):
    cdef int32_t n_rep                 # replicas (1 in full simulation)
    cdef tlb_replica* reps
    cdef int64_t modulus               # sampling modulus (1: full)
    # hierarchy-level counters (exact, not sampled)
    cdef int64_t accesses_exact        # 4 KiB accesses of every kernel translated
    cdef int64_t lookups_exact         # (SM, translation page) runs, i.e. lookups a full simulation makes
    cdef int64_t kernels
    cdef int64_t cycles_added          # sum of what translate_kernel returned
    cdef int64_t invalidate_calls
    cdef int64_t shootdowns_l1         # invalidations that found entries in some L1 (some replica)
    cdef int64_t shootdowns_l2         # ... in the L2
    cdef int64_t shootdown_cycles
    cdef int32_t last_level            # LEVEL_* of the latest lookup()
    cdef int64_t last_walk             # cycles of the latest lookup's walk (0: it did not walk)
    # the kernels kernel_cycles(k, now) translates (attach_kernels): CSR of tensors per kernel
    cdef object _kernel_arrays
    cdef const int64_t* k_first        # per tensor: first page
    cdef const int64_t* k_pages        # per tensor: pages
    cdef const int64_t* k_off          # per kernel: offsets into k_tensor (K + 1)
    cdef const int32_t* k_tensor       # tensors of each kernel, in access order
    cdef const int64_t* k_t11          # per kernel: duration (cycles)
    cdef const int64_t* k_shape        # per kernel: its reuse class (-1: always translated)
    cdef int64_t n_kernels             # K (0: nothing attached)
    # reuse: what the first translated kernel of each class added (and counted), per replica
    cdef vector[int8_t] memo_ok
    cdef vector[int64_t] memo_t11      # that kernel's duration
    cdef vector[int64_t] memo_added    # its estimate (the replicas' mean)
    cdef vector[int64_t] memo_exact    # its exact accesses and lookups (2 per class)
    cdef vector[tlb_stats] memo_st     # its counters, per replica (n_rep per class)
    cdef vector[tlb_stats] snap        # scratch: counters before a translation
    cdef int64_t reused                # kernels whose estimate was reused
    cdef int64_t tail                  # one lookup's unqueued latency (L1 + L2 + walk)
    cdef vector[int64_t] scratch_first
    cdef vector[int64_t] scratch_count
    # scratch
    cdef sm_cursor* cur
    cdef int64_t* sched_key            # SMs by the cycle of their next lookup: a sorted run
    cdef int32_t* sched_sm

    cdef int64_t _rescaled(self, int64_t added, int64_t t11_ref, int64_t t11) noexcept nogil
    cdef cycle_t lookup(self, tlb_replica* R, int32_t sm, int64_t v, cycle_t now) noexcept nogil
    cdef cycle_t _walk_wait(self, tlb_replica* R, cycle_t t) noexcept nogil
    cdef int _add_inflow(self, tlb_replica* R, cycle_t t, double work, double span) except -1 nogil
    cdef cycle_t _translate_replica(self, tlb_replica* R, cycle_t start, cycle_t duration,
                                    const page_t* first, const page_t* count, int32_t n) noexcept nogil
    cdef bint _next_lookup(self, tlb_replica* R, int32_t s, sm_cursor* c, cycle_t start, cycle_t duration,
                           const page_t* first, const page_t* count, int32_t n) noexcept nogil


@cython.final
cdef class SetAssociativeTLB:
    """One set-associative LRU TLB on its own (microbenchmarks, tests)."""
    cdef tlb_array a
    cdef int64_t hits, misses

    cdef bint _access(self, int64_t v) noexcept nogil
