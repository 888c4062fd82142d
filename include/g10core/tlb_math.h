/* Exact integer helper for the TLB model's schedule (src/g10core/tlb/_tlb.pyx).
 * Must match the `cdef extern from "g10core/tlb_math.h"` block in _tlb.pyx.
 */
#ifndef G10CORE_TLB_MATH_H
#define G10CORE_TLB_MATH_H

#include <stdint.h>

/* q = floor(a * b / n), r = a * b mod n for a, b >= 0, n > 0, in 128 bits when needed. */
static inline void g10_muldivmod(int64_t a, int64_t b, int64_t n, int64_t *q, int64_t *r)
{
    if (a < (INT64_C(1) << 31) && b < (INT64_C(1) << 31)) {
        int64_t x = a * b;
        *q = x / n;
        *r = x % n;
        return;
    }
    unsigned __int128 x = (unsigned __int128)(uint64_t)a * (uint64_t)b;
    *q = (int64_t)(x / (uint64_t)n);
    *r = (int64_t)(x % (uint64_t)n);
}

#endif
