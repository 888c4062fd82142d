/* The GPU page list's index for the page-level replay (_pagetable.pyx): a node's first
 * page -> the node, with "which node covers page p" (the last key <= p) queries.
 *
 * A std::map cost a ~17-level descent of cache misses per insert, erase and query, and
 * the detailed preset does millions of each.  Keys here live in sorted leaves of up to
 * kCap entries, found by a binary search over the leaves' first keys (a small
 * contiguous array): a few cache lines per operation.  Operations come in page order
 * (a batch's arrivals, a departure's nodes), so the leaf found last, or the next one, is
 * tried before the search.  Leaves split when full and merge
 * with a neighbour when both are small, so their count stays within 4 N / kCap + 1.
 */
#ifndef G10CORE_SORTEDINDEX_H
#define G10CORE_SORTEDINDEX_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "g10core/leaves.h"

class g10_sorted_index {
public:
    g10_sorted_index() : size_(0) {}

    std::size_t size() const { return size_; }

    /* Index key -> val (replacing an entry for key). */
    void put(int64_t key, int32_t val) {
        if (leaves_.empty()) {
            leaves_.emplace_back(new leaf());
            first_.push_back(key);
        }
        std::size_t j = leaf_for(key);
        leaf &L = *leaves_[j];
        int pos = static_cast<int>(std::lower_bound(L.key, L.key + L.n, key) - L.key);
        if (pos < L.n && L.key[pos] == key) {
            L.val[pos] = val;
            return;
        }
        std::memmove(L.key + pos + 1, L.key + pos, sizeof(int64_t) * (L.n - pos));
        std::memmove(L.val + pos + 1, L.val + pos, sizeof(int32_t) * (L.n - pos));
        L.key[pos] = key;
        L.val[pos] = val;
        ++L.n;
        ++size_;
        if (pos == 0) first_[j] = key;
        if (L.n == kCap) split(j);
    }

    /* Remove key's entry (none: nothing happens). */
    void erase(int64_t key) {
        if (leaves_.empty()) return;
        std::size_t j = leaf_for(key);
        leaf &L = *leaves_[j];
        int pos = static_cast<int>(std::lower_bound(L.key, L.key + L.n, key) - L.key);
        if (pos == L.n || L.key[pos] != key) return;
        std::memmove(L.key + pos, L.key + pos + 1, sizeof(int64_t) * (L.n - pos - 1));
        std::memmove(L.val + pos, L.val + pos + 1, sizeof(int32_t) * (L.n - pos - 1));
        --L.n;
        --size_;
        if (L.n == 0) {
            drop(j);
            return;
        }
        if (pos == 0) first_[j] = L.key[0];
        shrink(j);
    }

    /* The value of the last key <= p; `found[0]` 0 when there is none. */
    int32_t floor_val(int64_t p, int *found) const {
        if (leaves_.empty() || p < first_[0]) {
            *found = 0;
            return -1;
        }
        const leaf &L = *leaves_[leaf_for(p)];
        int pos = static_cast<int>(std::upper_bound(L.key, L.key + L.n, p) - L.key) - 1;
        *found = 1;
        return L.val[pos];
    }

    /* Take every key in [lo, hi) out, appending their values to `out` in key order (after
     * clearing it): one search, then a cut per leaf (leaves emptied are dropped, and the partly
     * emptied ones at the edges merge as erase() would). */
    void extract(int64_t lo, int64_t hi, std::vector<int32_t> &out) {
        out.clear();
        if (leaves_.empty() || lo >= hi) return;
        std::size_t j = leaf_for(lo), first = leaves_.size();
        while (j < leaves_.size()) {
            leaf &L = *leaves_[j];
            int p0 = static_cast<int>(std::lower_bound(L.key, L.key + L.n, lo) - L.key);
            int p1 = static_cast<int>(std::lower_bound(L.key + p0, L.key + L.n, hi) - L.key);
            bool rest = p1 < L.n;                     /* keys >= hi remain: nothing beyond */
            if (p0 < p1) {
                out.insert(out.end(), L.val + p0, L.val + p1);
                std::memmove(L.key + p0, L.key + p1, sizeof(int64_t) * (L.n - p1));
                std::memmove(L.val + p0, L.val + p1, sizeof(int32_t) * (L.n - p1));
                L.n -= p1 - p0;
                size_ -= static_cast<std::size_t>(p1 - p0);
                if (L.n == 0) {
                    drop(j);
                    continue;
                }
                if (p0 == 0) first_[j] = L.key[0];
                if (first == leaves_.size()) first = j;
            }
            if (rest) break;
            ++j;
        }
        if (first < leaves_.size()) {
            shrink(first + 1);
            shrink(first);
        }
    }

private:
    static constexpr int kCap = 128;
    struct leaf {
        int n = 0;
        int64_t key[kCap];
        int32_t val[kCap];
    };

    std::size_t leaf_for(int64_t key) const { return g10_leaf_for(first_, hint_, key); }

    /* A leaf below a quarter full merges with a neighbour when both fit in half a leaf. */
    void shrink(std::size_t j) {
        if (j >= leaves_.size() || leaves_[j]->n >= kCap / 4) return;
        if (j + 1 < leaves_.size() && leaves_[j]->n + leaves_[j + 1]->n <= kCap / 2)
            merge(j);
        else if (j > 0 && leaves_[j]->n + leaves_[j - 1]->n <= kCap / 2)
            merge(j - 1);
    }

    void split(std::size_t j) {
        leaf &L = *leaves_[j];
        std::unique_ptr<leaf> R(new leaf());
        int half = L.n / 2;
        R->n = L.n - half;
        std::memcpy(R->key, L.key + half, sizeof(int64_t) * R->n);
        std::memcpy(R->val, L.val + half, sizeof(int32_t) * R->n);
        L.n = half;
        first_.insert(first_.begin() + j + 1, R->key[0]);
        leaves_.insert(leaves_.begin() + j + 1, std::move(R));
    }

    /* Leaf j + 1's entries join leaf j. */
    void merge(std::size_t j) {
        leaf &L = *leaves_[j];
        leaf &R = *leaves_[j + 1];
        std::memcpy(L.key + L.n, R.key, sizeof(int64_t) * R.n);
        std::memcpy(L.val + L.n, R.val, sizeof(int32_t) * R.n);
        L.n += R.n;
        drop(j + 1);
    }

    void drop(std::size_t j) {
        first_.erase(first_.begin() + j);
        leaves_.erase(leaves_.begin() + j);
    }

    std::vector<int64_t> first_;                 /* each leaf's first key, ascending */
    mutable std::size_t hint_ = 0;               /* the leaf leaf_for found last */
    std::vector<std::unique_ptr<leaf>> leaves_;
    std::size_t size_;
};

#endif
