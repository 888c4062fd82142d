/* The search shared by the replay's leaf-array indexes (sortedindex.h, runmap.h): both keep
 * their entries in sorted leaves under an ascending array of the leaves' first keys. */
#ifndef G10CORE_LEAVES_H
#define G10CORE_LEAVES_H

#include <algorithm>
#include <cstdint>
#include <vector>

/* The leaf whose range holds key: the last whose first key is <= key (leaf 0 below all).
 * Callers go in page order, so the leaf found last (`hint`), or the next one, is tried
 * before the binary search; `hint` is left on the answer. */
static inline std::size_t g10_leaf_for(const std::vector<int64_t> &first, std::size_t &hint, int64_t key) {
    std::size_t h = hint, n = first.size();
    if (h < n && first[h] <= key) {
        if (h + 1 == n || key < first[h + 1]) return h;
        if (h + 2 == n || key < first[h + 2]) return hint = h + 1;
    }
    std::size_t j = std::upper_bound(first.begin(), first.end(), key) - first.begin();
    return hint = j ? j - 1 : 0;
}

#endif
