/* The far-fault handler's VA-block index (_uvm.pyx): block number -> record.
 *
 * The handler looks a block up at every SM step, fault and arrival query.  An ordered
 * map cost a ~17-level descent of cache misses each time, and a hash table one miss per
 * lookup, since hashing scatters neighbouring blocks.  Block numbers are dense (the
 * footprint's VA, 2 MiB each) and each SM sweeps them in order, so a directory indexed by
 * the number itself serves better: pages of kChunk entries, made on first use (4 B per
 * 2 MiB of VA touched: 3.5 MB for a 1.7 TiB footprint), found through a small top array.
 * Two loads per lookup, and neighbouring blocks share cache lines.  Block numbers are >= 0;
 * -1 marks a block without a record.
 */
#ifndef G10CORE_BLOCKINDEX_H
#define G10CORE_BLOCKINDEX_H

#include <cstdint>
#include <memory>
#include <vector>

class g10_blockindex {
public:
    g10_blockindex() : size_(0) {}

    /* The record of `block`, or -1. */
    int32_t find(int64_t block) const {
        std::size_t hi = static_cast<std::size_t>(block) >> kShift;
        if (hi >= top_.size() || !top_[hi]) return -1;
        return top_[hi][block & kMask];
    }

    /* block -> rec (replacing an entry for block). */
    void put(int64_t block, int32_t rec) {
        std::size_t hi = static_cast<std::size_t>(block) >> kShift;
        if (hi >= top_.size()) top_.resize(hi + 1);
        if (!top_[hi]) {
            top_[hi].reset(new int32_t[kChunk]);
            for (int64_t k = 0; k < kChunk; ++k) top_[hi][k] = -1;
        }
        int32_t &slot = top_[hi][block & kMask];
        if (slot < 0) ++size_;
        slot = rec;
    }

    /* Remove block's entry (none: nothing happens). */
    void erase(int64_t block) {
        std::size_t hi = static_cast<std::size_t>(block) >> kShift;
        if (hi >= top_.size() || !top_[hi]) return;
        int32_t &slot = top_[hi][block & kMask];
        if (slot >= 0) --size_;
        slot = -1;
    }

    std::size_t size() const { return size_; }

    /* Every indexed block number, ascending. */
    void keys(std::vector<int64_t> &out) const {
        out.clear();
        for (std::size_t hi = 0; hi < top_.size(); ++hi)
            if (top_[hi])
                for (int64_t k = 0; k < kChunk; ++k)
                    if (top_[hi][k] >= 0) out.push_back(static_cast<int64_t>(hi << kShift) + k);
    }

private:
    static constexpr int kShift = 12;
    static constexpr int64_t kChunk = int64_t(1) << kShift;   /* 4096 blocks: 8 GiB of VA */
    static constexpr int64_t kMask = kChunk - 1;

    std::vector<std::unique_ptr<int32_t[]>> top_;
    std::size_t size_;
};

static inline int32_t g10_bi_find(const g10_blockindex &m, int64_t block) { return m.find(block); }
static inline void g10_bi_put(g10_blockindex &m, int64_t block, int32_t rec) { m.put(block, rec); }
static inline void g10_bi_erase(g10_blockindex &m, int64_t block) { m.erase(block); }
static inline void g10_bi_keys(const g10_blockindex &m, std::vector<int64_t> &out) { m.keys(out); }

#endif
