/* The far-fault handler's VA-block index (_uvm.pyx): block number -> record.
 *
 * The handler looks a block up at every SM step, fault and arrival query; an ordered
 * map cost a ~17-level descent (cache misses) each time.  No caller needs the order
 * (range queries walk the range's block numbers), so an open-addressing hash table
 * serves it: linear probing, Fibonacci hashing, at most half full, deletion by
 * backward shift (no tombstones).  Block numbers are >= 0; -1 marks an empty slot.
 */
#ifndef G10CORE_BLOCKINDEX_H
#define G10CORE_BLOCKINDEX_H

#include <algorithm>
#include <cstdint>
#include <vector>

class g10_blockindex {
public:
    g10_blockindex() : size_(0) { resize(10); }

    /* The record of `block`, or -1. */
    int32_t find(int64_t block) const {
        for (std::size_t i = home(block);; i = (i + 1) & mask_) {
            const slot &s = slots_[i];
            if (s.key == block) return s.val;
            if (s.key == kEmpty) return -1;
        }
    }

    /* block -> rec (replacing an entry for block). */
    void put(int64_t block, int32_t rec) {
        if (2 * (size_ + 1) > slots_.size()) resize(bits_ + 1);
        std::size_t i = home(block);
        while (slots_[i].key != kEmpty && slots_[i].key != block) i = (i + 1) & mask_;
        if (slots_[i].key == kEmpty) ++size_;
        slots_[i].key = block;
        slots_[i].val = rec;
    }

    /* Remove block's entry (none: nothing happens). */
    void erase(int64_t block) {
        std::size_t i = home(block);
        while (slots_[i].key != block) {
            if (slots_[i].key == kEmpty) return;
            i = (i + 1) & mask_;
        }
        /* pull later entries of the probe run back over the hole, where their home allows */
        for (std::size_t j = (i + 1) & mask_; slots_[j].key != kEmpty; j = (j + 1) & mask_) {
            std::size_t h = home(slots_[j].key);
            /* the entry at j may move to i unless its home lies cyclically in (i, j] */
            bool stays = (i < j) ? (i < h && h <= j) : (i < h || h <= j);
            if (!stays) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i].key = kEmpty;
        --size_;
    }

    std::size_t size() const { return size_; }

    /* Every indexed block number, ascending. */
    void keys(std::vector<int64_t> &out) const {
        out.clear();
        for (const slot &s : slots_)
            if (s.key != kEmpty) out.push_back(s.key);
        std::sort(out.begin(), out.end());
    }

private:
    struct slot {
        int64_t key;
        int32_t val;
    };
    static constexpr int64_t kEmpty = -1;

    std::size_t home(int64_t key) const {
        return static_cast<std::size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> (64 - bits_));
    }

    void resize(int bits) {
        std::vector<slot> old;
        old.swap(slots_);
        bits_ = bits;
        slots_.assign(std::size_t(1) << bits, slot{kEmpty, -1});
        mask_ = slots_.size() - 1;
        size_ = 0;
        for (const slot &s : old)
            if (s.key != kEmpty) put(s.key, s.val);
    }

    std::vector<slot> slots_;
    std::size_t mask_;
    int bits_;
    std::size_t size_;
};

static inline int32_t g10_bi_find(const g10_blockindex &m, int64_t block) { return m.find(block); }
static inline void g10_bi_put(g10_blockindex &m, int64_t block, int32_t rec) { m.put(block, rec); }
static inline void g10_bi_erase(g10_blockindex &m, int64_t block) { m.erase(block); }
static inline void g10_bi_keys(const g10_blockindex &m, std::vector<int64_t> &out) { m.keys(out); }

#endif
