# Evictors: which GPU pages leave when a frame is needed.  One base class whose
# nogil methods each rule overrides (the Criterion/Splitter pattern); the batcher
# calls them and never tests which rule it has.  See _evict.pyx.
from libc.stdint cimport int8_t, int32_t, int64_t

from g10core.core._types cimport victim_t
from g10core.uvm._pagetable cimport PageTable

# A score callback: (now_kernel, tensor, resident_pages, size_pages, last_use_kernel,
# next_use_kernel, arrival_seq) -> score; the highest score is evicted first.
ctypedef double (*score_fn_t)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) noexcept nogil


cdef class Evictor:
    cdef PageTable pt
    cdef int64_t kernel                    # the running kernel (index within the iteration)
    cdef int64_t iteration
    # memory advice (the batcher's, _batcher.pyx): victim_span stops at a tensor whose byte in
    # span_cl is not span_want (NULL: no such rule), so a bulk repeat's victims are all clean
    # read duplicates, or none is
    cdef const int8_t* span_cl
    cdef int8_t span_want

    cdef inline bint span_ok(self, int32_t t) noexcept nogil:
        return self.span_cl == NULL or self.span_cl[t] == self.span_want
    cdef int kernel_begin(self, int64_t k, int64_t iteration) except -1 nogil
    cdef victim_t find_victim(self, bint is_pf) noexcept nogil
    cdef int taken(self, const victim_t* v, int64_t k, bint is_pf, int64_t next_page) noexcept nogil
    cdef bint may_stall(self, bint is_pf) noexcept nogil
    cdef bint lockup_fallback(self) noexcept nogil
    cdef bint fault_changes_victims(self) noexcept nogil
    cdef int64_t victim_span(self, bint is_pf, int64_t need, bint pinned, int8_t dest) noexcept nogil
    cdef bint bulk_safe(self) noexcept nogil


cdef class ArrivalOrderEvictor(Evictor):
    pass


cdef class DeepUMWindowEvictor(Evictor):
    cdef int64_t window                    # look-ahead, kernels
    cdef int64_t n_kernels
    cdef const int64_t* in_off             # kernels' input tensors (CSR)
    cdef const int32_t* in_t
    cdef const int64_t* out_off            # kernels' output tensors (CSR)
    cdef const int32_t* out_t
    cdef int64_t* win_mark                 # epoch at which the tensor was last in the window
    cdef int64_t epoch
    cdef int64_t walk_steps                # window nodes kernel_begin walks before it asks the tensors
    cdef object _keep

    cdef bint in_window(self, int32_t t) noexcept nogil
    cdef int32_t first_outside_window(self) noexcept nogil


cdef class ScoreEvictor(Evictor):
    cdef score_fn_t score
    cdef object _callback                  # keeps a compiled user callback alive
    cdef int64_t n_kernels, n_iterations
    cdef const int64_t* use_off            # per tensor: its uses (kernels, ascending), CSR
    cdef const int64_t* use_k
    cdef int32_t chosen                    # the tensor being evicted (-1: choose again)
    cdef int64_t n_choices                 # victim tensors chosen (stats)
    cdef int64_t n_scores                  # score evaluations (stats)
    # a score that is NaN: a user's rule raised (its wrapper returns NaN; evictors.py) or
    # returned NaN.  It counts as the lowest score until the next kernel begin, which stops
    # the run; the first one's inputs are kept for the error the Python layer raises.
    cdef int64_t n_failed
    cdef int64_t failed_args[7]
    # a user's rule: the running kernel's tensors are never scored; a fault that finds no
    # other page takes the oldest-arrived of them (Belady's score ranks them last anyway)
    cdef bint skip_running
    cdef object _keep

    cdef int32_t choose(self, bint is_pf) noexcept nogil
    cdef void _note_failure(self, int32_t t, int64_t last, int64_t nxt) noexcept nogil
    cdef int64_t next_use(self, int32_t t) noexcept nogil
    cdef int64_t last_use(self, int32_t t) noexcept nogil
