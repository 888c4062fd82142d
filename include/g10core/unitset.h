/* The far-fault handler's set of migration units waiting in its fault buffer (_uvm.pyx).
 *
 * Every fault asks it, inserts into it or is taken out of it (millions per run); a node-based
 * std::unordered_set cost a malloc and a free each time.  The set holds at most the
 * buffer's entries (hundreds), so an open-addressing table serves it from a few cache lines:
 * linear probing, Fibonacci hashing, at most half full, deletion by backward shift (no
 * tombstones).  Units are >= 0; -1 marks an empty slot.
 */
#ifndef G10CORE_UNITSET_H
#define G10CORE_UNITSET_H

#include <cstdint>
#include <vector>

class g10_unitset {
public:
    g10_unitset() : size_(0) { resize(8); }

    bool contains(int64_t unit) const {
        for (std::size_t i = home(unit);; i = (i + 1) & mask_) {
            if (slots_[i] == unit) return true;
            if (slots_[i] == kEmpty) return false;
        }
    }

    void insert(int64_t unit) {
        if (2 * (size_ + 1) > slots_.size()) resize(bits_ + 1);
        std::size_t i = home(unit);
        while (slots_[i] != kEmpty && slots_[i] != unit) i = (i + 1) & mask_;
        if (slots_[i] == kEmpty) ++size_;
        slots_[i] = unit;
    }

    void erase(int64_t unit) {
        std::size_t i = home(unit);
        while (slots_[i] != unit) {
            if (slots_[i] == kEmpty) return;
            i = (i + 1) & mask_;
        }
        /* pull later entries of the probe run back over the hole, where their home allows */
        for (std::size_t j = (i + 1) & mask_; slots_[j] != kEmpty; j = (j + 1) & mask_) {
            std::size_t h = home(slots_[j]);
            /* the entry at j may move to i unless its home lies cyclically in (i, j] */
            bool stays = (i < j) ? (i < h && h <= j) : (i < h || h <= j);
            if (!stays) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i] = kEmpty;
        --size_;
    }

    std::size_t size() const { return size_; }

private:
    static constexpr int64_t kEmpty = -1;

    std::size_t home(int64_t unit) const {
        return static_cast<std::size_t>((static_cast<uint64_t>(unit) * 0x9E3779B97F4A7C15ull) >> (64 - bits_));
    }

    void resize(int bits) {
        std::vector<int64_t> old;
        old.swap(slots_);
        bits_ = bits;
        slots_.assign(std::size_t(1) << bits, kEmpty);
        mask_ = slots_.size() - 1;
        size_ = 0;
        for (int64_t u : old)
            if (u != kEmpty) insert(u);
    }

    std::vector<int64_t> slots_;
    std::size_t mask_;
    int bits_;
    std::size_t size_;
};

/* The fault batch's sort order, by migration unit: a functor, so std::sort inlines the
 * comparison (through a function pointer it was a call per comparison). */
struct g10_by_unit {
    template <class E>
    bool operator()(const E &a, const E &b) const { return a.unit < b.unit; }
};

#endif
