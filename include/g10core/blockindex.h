/* The far-fault handler's VA-block index (_uvm.pyx): block number -> record.
 *
 * The handler looks a block up at every SM step, fault and arrival query; an ordered
 * map cost a ~17-level descent (cache misses) each time.  No caller needs the order
 * (range queries walk the range's block numbers), so a hash map with pooled nodes
 * (pool.h) serves it.
 */
#ifndef G10CORE_BLOCKINDEX_H
#define G10CORE_BLOCKINDEX_H

#include <algorithm>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "g10core/pool.h"

typedef std::unordered_map<int64_t, int32_t, std::hash<int64_t>, std::equal_to<int64_t>,
                           g10_pool_alloc<std::pair<const int64_t, int32_t>>> g10_blockindex;

/* The record of `block`, or -1. */
static inline int32_t g10_bi_find(const g10_blockindex &m, int64_t block) {
    g10_blockindex::const_iterator it = m.find(block);
    return it == m.end() ? -1 : it->second;
}

static inline void g10_bi_put(g10_blockindex &m, int64_t block, int32_t rec) { m[block] = rec; }

static inline void g10_bi_erase(g10_blockindex &m, int64_t block) { m.erase(block); }

/* Every indexed block number, ascending. */
static inline void g10_bi_keys(const g10_blockindex &m, std::vector<int64_t> &out) {
    out.clear();
    for (g10_blockindex::const_iterator it = m.begin(); it != m.end(); ++it) out.push_back(it->first);
    std::sort(out.begin(), out.end());
}

#endif
