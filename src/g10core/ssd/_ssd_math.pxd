# The SSD's small inline helpers (include/g10core/ssd_math.h): latency-histogram buckets,
# the seeded random stream of GC victim sampling, prefetch and bit steps.  Declarations
# only (no module of its own): the SSD units cimport what they use.
from libc.stdint cimport int64_t, uint64_t

cdef extern from "g10core/ssd_math.h" nogil:
    int G10_HIST_BUCKETS
    int g10_hist_bucket(int64_t v)
    int64_t g10_hist_lower(int b)
    void g10_rng_seed(uint64_t* s, uint64_t seed)
    uint64_t g10_rng_below(uint64_t* s, uint64_t n)
    void g10_prefetch_w(const void* p)
    int g10_ctz64(uint64_t x)
    void g10_bits_set_range(uint64_t* w, int64_t lo, int64_t hi)
