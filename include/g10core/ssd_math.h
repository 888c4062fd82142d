/* Small inline helpers for the SSD model: latency-histogram buckets and a
 * seeded random stream for GC victim sampling.
 * Must match the `cdef extern from "g10core/ssd_math.h"` block in src/g10core/ssd/_ssd_math.pxd.
 */
#ifndef G10CORE_SSD_MATH_H
#define G10CORE_SSD_MATH_H

#include <stdint.h>

/* Log-linear histogram: values below 64 get one bucket each, larger values
 * 64 buckets per power of two (relative resolution 1/64).  Bucket count for
 * any int64 value >= 0: G10_HIST_BUCKETS. */
#define G10_HIST_SUB_BITS 6
#define G10_HIST_BUCKETS (58 * 64)

static inline int g10_hist_bucket(int64_t v)
{
    if (v < 64) return v < 0 ? 0 : (int)v;
    int e = 63 - __builtin_clzll((uint64_t)v);          /* floor(log2 v) >= 6 */
    int shift = e - G10_HIST_SUB_BITS;
    return (shift + 1) * 64 + (int)((v >> shift) - 64);
}

/* Smallest value that falls in bucket b. */
static inline int64_t g10_hist_lower(int b)
{
    if (b < 64) return b;
    int g = b / 64;
    return (int64_t)(64 + b % 64) << (g - 1);
}

/* xoshiro256** (Blackman & Vigna), seeded through splitmix64. */
static inline uint64_t g10_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t g10_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void g10_rng_seed(uint64_t s[4], uint64_t seed)
{
    for (int i = 0; i < 4; i++) s[i] = g10_splitmix64(&seed);
}

static inline uint64_t g10_rng_next(uint64_t s[4])
{
    uint64_t result = g10_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = g10_rotl(s[3], 45);
    return result;
}

/* Uniform integer in [0, n) (Lemire's multiply-shift; bias < n / 2^64). */
static inline uint64_t g10_rng_below(uint64_t s[4], uint64_t n)
{
    return (uint64_t)(((unsigned __int128)g10_rng_next(s) * n) >> 64);
}

/* Hint that *p will be written soon (no fault on any address). */
static inline void g10_prefetch_w(const void *p) { __builtin_prefetch(p, 1, 3); }

/* Index of the lowest set bit of x (x != 0). */
static inline int g10_ctz64(uint64_t x) { return __builtin_ctzll(x); }

/* Set bits of x, in a few branch-free steps (the builtin is a libgcc call unless the
 * compiler may assume a popcnt instruction).  Where setup.py allows popcnt (x86-64, unless
 * G10_NO_POPCNT=1), gcc compiles these steps to that one instruction. */
static inline int64_t g10_popcount64(uint64_t x)
{
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
    return (int64_t)((x * UINT64_C(0x0101010101010101)) >> 56);
}

/* Set bits [lo, hi) of the bitmap w (lo <= hi). */
static inline void g10_bits_set_range(uint64_t *w, int64_t lo, int64_t hi)
{
    while (lo < hi) {
        int64_t word = lo >> 6, bit = lo & 63;
        int64_t n = 64 - bit < hi - lo ? 64 - bit : hi - lo;
        uint64_t mask = (n == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << n) - 1)) << bit;
        w[word] |= mask;
        lo += n;
    }
}

#endif
