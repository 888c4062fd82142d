/* Ordered map of page runs for the page-level replay (_replay.pyx).
 *
 * Must match the declarations in src/g10core/_types.pxd ("page-level replay" section):
 * g10_loc_run is the value type; g10_runmap maps a run's first page to it.  A run
 * covers consecutive pages of one tensor with one location and in-transfer flag; runs
 * never cross a tensor boundary [lo, hi).  The map draws its nodes from a pool
 * (pool.h): runs are split and merged tens of millions of times in a run.  (The GPU
 * page list's index is g10_sorted_index, sortedindex.h.)
 */
#ifndef G10CORE_RUNMAP_H
#define G10CORE_RUNMAP_H

#include <cstdint>
#include <iterator>
#include <map>

#include "g10core/pool.h"

#define G10_RUN_VER_SHIFT 9   /* run versions per 512 pages (2 MiB) */

struct g10_loc_run {
    int64_t end;   /* one past the last page */
    int8_t loc;    /* Tier */
    int8_t intr;   /* queued for a transfer */
};

typedef std::map<int64_t, g10_loc_run, std::less<int64_t>,
                 g10_pool_alloc<std::pair<const int64_t, g10_loc_run>>> g10_runmap;

/* Pages removed from each counted state by an assignment. */
struct g10_removed {
    int64_t ready;     /* GPU and not in transfer */
    int64_t intr;      /* in transfer (any tier) */
    int64_t gpu_intr;  /* GPU and in transfer */
};

static inline void g10_count(g10_removed *rem, const g10_loc_run &r, int64_t n, int8_t gpu) {
    if (r.intr) {
        rem->intr += n;
        if (r.loc == gpu) rem->gpu_intr += n;
    } else if (r.loc == gpu) {
        rem->ready += n;
    }
}

/* Set pages [a, b) (inside one tensor's [lo, hi)) to (loc, intr), keeping runs maximal.
 * Returns what the old states of those pages were, for the per-tensor counters.
 * One search, then constant work per run touched (hinted inserts). */
static inline g10_removed g10_assign_at(g10_runmap &m, g10_runmap::iterator it, int64_t a, int64_t b,
                                        int8_t loc, int8_t intr, int64_t lo, int64_t hi, int8_t gpu,
                                        uint32_t *key_ver);

static inline g10_removed g10_assign(g10_runmap &m, int64_t a, int64_t b, int8_t loc, int8_t intr,
                                     int64_t lo, int64_t hi, int8_t gpu, uint32_t *key_ver) {
    g10_runmap::iterator it = m.upper_bound(a);
    --it;
    return g10_assign_at(m, it, a, b, loc, intr, lo, hi, gpu, key_ver);
}

/* A run is about to be erased: bump the version of the 2 MiB stretch its first page lies in,
 * so that a cached iterator to it (PageTable.run_at's cache) is known dead without reading it. */
static inline void g10_run_dies(uint32_t *key_ver, g10_runmap::iterator it) {
    if (key_ver) ++key_ver[it->first >> G10_RUN_VER_SHIFT];
}

/* g10_assign when the caller already holds `it`, the run that contains page a.  `key_ver`
 * (or NULL): per 2 MiB of pages, bumped for each run erased whose first page lies there. */
static inline g10_removed g10_assign_at(g10_runmap &m, g10_runmap::iterator it, int64_t a, int64_t b,
                                        int8_t loc, int8_t intr, int64_t lo, int64_t hi, int8_t gpu,
                                        uint32_t *key_ver) {
    g10_removed rem = {0, 0, 0};
    if (it->second.loc == loc && it->second.intr == intr && it->second.end >= b) {
        g10_count(&rem, it->second, b - a, gpu);   /* unchanged: the caller adds it back */
        return rem;
    }
    if (it->first < a) {                            /* keep the left part in its old state */
        g10_loc_run left = it->second;
        it->second.end = a;
        it = m.emplace_hint(std::next(it), a, left);
    }
    g10_runmap::iterator cur = it;
    while (cur != m.end() && cur->first < b) {
        int64_t s = cur->first, e = cur->second.end;
        if (e > b) {                                /* keep the right part in its old state */
            g10_count(&rem, cur->second, b - s, gpu);
            g10_loc_run right = cur->second;
            cur->second.end = b;
            m.emplace_hint(std::next(cur), b, right);
        } else {
            g10_count(&rem, cur->second, e - s, gpu);
        }
        ++cur;
    }
    for (g10_runmap::iterator d = std::next(it); d != cur; ++d) g10_run_dies(key_ver, d);
    m.erase(std::next(it), cur);
    it->second.end = b;
    it->second.loc = loc;
    it->second.intr = intr;
    g10_runmap::iterator nx = std::next(it);
    if (nx != m.end() && nx->first == b && b < hi && nx->second.loc == loc && nx->second.intr == intr) {
        it->second.end = nx->second.end;
        g10_run_dies(key_ver, nx);
        m.erase(nx);
    }
    if (a > lo) {
        g10_runmap::iterator pv = std::prev(it);
        if (pv->second.loc == loc && pv->second.intr == intr && pv->second.end == a) {
            pv->second.end = it->second.end;
            g10_run_dies(key_ver, it);
            m.erase(it);
        }
    }
    return rem;
}

#endif
