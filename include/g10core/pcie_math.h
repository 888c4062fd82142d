/* Exact integer helpers for the PCIe and SSD timing models.
 * Must match the `cdef extern from "g10core/pcie_math.h"` block in src/g10core/link/_pcie.pxd.
 */
#ifndef G10CORE_PCIE_MATH_H
#define G10CORE_PCIE_MATH_H

#include <stdint.h>

/* ceil(n * num / den) for n >= 0, num >= 0, den > 0, computed in 128 bits so
 * that the product cannot overflow and the result is exact to the unit. */
static inline int64_t g10_ceil_muldiv(int64_t n, int64_t num, int64_t den)
{
    if (n < (INT64_C(1) << 31) && num < (INT64_C(1) << 31))    /* the common case, 64-bit exact */
        return (n * num + den - 1) / den;
    unsigned __int128 p = (unsigned __int128)(uint64_t)n * (uint64_t)num;
    return (int64_t)((p + (uint64_t)den - 1) / (uint64_t)den);
}

#endif
