/* Ordered map of page runs for the page-level replay (_pagetable.pyx).
 *
 * Must match the declarations in src/g10core/core/_types.pxd ("page-level replay" section) and
 * _pagetable.pxd: g10_loc_run is a run's state; g10_runmap maps a run's first page to it.
 * A run covers consecutive pages of one tensor with one location and in-transfer flag; runs
 * never cross a tensor boundary [lo, hi).
 *
 * Runs are split and merged tens of millions of times in a run and looked up more often
 * still, mostly a few runs from the last one.  A std::map cost a ~20-level descent of cache
 * misses per lookup and a pointer chase per step (Belady SENet154: 12 % of the profile).
 * Here the entries live in sorted leaves of up to kCap, found by a binary search over the
 * leaves' first keys (a small contiguous array; the leaf found last, or the next one, is
 * tried first), and a step is an index increment.
 *
 * An iterator is a (leaf, position) pair: any change to the map may move entries, so the
 * iterators a caller holds are dead after one, except the one a change returns.
 */
#ifndef G10CORE_RUNMAP_H
#define G10CORE_RUNMAP_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>


struct g10_loc_run {
    int64_t end;   /* one past the last page */
    int8_t loc;    /* Tier */
    int8_t intr;   /* queued for a transfer */
};

/* An entry: the names std::map's value type had, so callers read it->first, it->second. */
struct g10_run_entry {
    int64_t first;         /* the run's first page (the key) */
    g10_loc_run second;
};

class g10_runmap {
    /* 256 runs, 6 KB.  A split or a dropped leaf moves the leaves' arrays, O(leaves): with
     * fast links the runs fragment into millions (slots of a few pages alternate host and
     * SSD) and 64-run leaves spent 40 % of resnet152-b256 Base UVM at 256 GB/s moving them
     * (7.3 s wall; 3.9 s at 256 runs); on the published traces 256 is as fast as 64 (16 and
     * 32 were slower; a debug build with 4-run leaves took minutes on one published trace). */
    static constexpr int kCap = 256;
    static constexpr int kNear = 4;              /* find_near's steps before it searches */
    struct leaf {
        int n = 0;
        g10_run_entry e[kCap];
    };

public:
    class iterator {
    public:
        iterator() : m_(nullptr), l_(nullptr), j_(0), p_(0) {}
        g10_run_entry &operator*() const { return l_->e[p_]; }
        g10_run_entry *operator->() const { return &l_->e[p_]; }
        iterator &operator++() {
            if (++p_ == l_->n) {
                ++j_;
                p_ = 0;
                l_ = j_ < m_->leaves_.size() ? m_->leaves_[j_] : nullptr;
            }
            return *this;
        }
        iterator &operator--() {
            if (p_ == 0) {
                --j_;
                l_ = m_->leaves_[j_];
                p_ = l_->n;
            }
            --p_;
            return *this;
        }
        bool operator==(const iterator &o) const { return j_ == o.j_ && p_ == o.p_; }
        std::size_t leaf_index() const { return j_; }
        int position() const { return p_; }
        bool operator!=(const iterator &o) const { return !(*this == o); }

    private:
        friend class g10_runmap;
        iterator(const g10_runmap *m, std::size_t j, int p)
            : m_(m), l_(j < m->leaves_.size() ? m->leaves_[j] : nullptr), j_(j), p_(p) {}
        const g10_runmap *m_;
        leaf *l_;
        std::size_t j_;
        int p_;
    };

    g10_runmap() : size_(0) {}
    ~g10_runmap() {
        for (leaf *L : leaves_) delete L;
    }
    g10_runmap(const g10_runmap &) = delete;
    g10_runmap &operator=(const g10_runmap &) = delete;

    std::size_t size() const { return size_; }
    iterator begin() const { return iterator(this, 0, 0); }
    iterator end() const { return iterator(this, leaves_.size(), 0); }

    /* The first entry whose key is > key. */
    iterator upper_bound(int64_t key) const {
        if (leaves_.empty()) return end();
        std::size_t j = leaf_for(key);
        const leaf &L = *leaves_[j];
        int p = upper_in_leaf(L, key);
        if (p == L.n) return iterator(this, j + 1, 0);
        return iterator(this, j, p);
    }

    /* The run holding key (a key at or after the first entry's), given where a run near it
     * was once: leaf j, position p (any values; a change to the map may have moved it).  If
     * leaf j still holds key's range, its runs from p are tried a few steps either way
     * before a search; otherwise the leaves are searched. */
    iterator find_near(int64_t key, std::size_t j, int p) const {
        std::size_t n = leaves_.size();
        if (j < n && first_[j] <= key && (j + 1 == n || key < first_[j + 1])) {
            const leaf &L = *leaves_[j];
            if (p >= L.n) p = L.n - 1;
            if (p < 0) p = 0;
            for (int k = 0; k < kNear; ++k) {
                if (key < L.e[p].first) {
                    --p;                                   /* (p > 0: L.e[0].first <= key) */
                } else if (p + 1 < L.n && L.e[p + 1].first <= key) {
                    ++p;
                } else {
                    return iterator(this, j, p);
                }
            }
            return iterator(this, j, upper_in_leaf(L, key) - 1);
        }
        iterator it = upper_bound(key);
        --it;
        return it;
    }

    /* The entry with this key (which must be present). */
    iterator find_present(int64_t key) const {
        std::size_t j = leaf_for(key);
        const leaf &L = *leaves_[j];
        int p = static_cast<int>(std::lower_bound(L.e, L.e + L.n, key, entry_less) - L.e);
        return iterator(this, j, p);
    }

    /* Add an entry for key (not present), wherever it sorts. */
    void put(int64_t key, const g10_loc_run &r) {
        g10_run_entry e = {key, r};
        iterator at = upper_bound(key);
        insert_at(at.j_, at.p_, e);
    }

    /* Replace the n_old entries from `from` on by the k (1..3) entries repl[], which sort
     * where they were; returns the iterator of repl[ret]. */
    iterator replace(iterator from, int n_old, const g10_run_entry *repl, int k, int ret) {
        std::size_t j = from.j_;
        int p = from.p_;
        leaf &L = *leaves_[j];
        if (p + n_old <= L.n && L.n - n_old + k <= kCap &&
            (L.n - n_old + k >= kCap / 4 || leaves_.size() == 1)) {
            /* the common case: one leaf, no split, no merge */
            if (k != n_old) {
                std::memmove(L.e + p + k, L.e + p + n_old, sizeof(g10_run_entry) * (L.n - p - n_old));
                L.n += k - n_old;
                size_ += k - n_old;
            }
            std::memcpy(L.e + p, repl, sizeof(g10_run_entry) * k);
            if (p == 0) first_[j] = L.e[0].first;
            return iterator(this, j, p + ret);
        }
        /* take the old entries out, leaf by leaf; the leaves they empty are consecutive and
         * leave together (one erase: dropping them one by one cost O(leaves) each, quadratic
         * when a long range replaces many short runs) */
        std::size_t drop_lo = 0, drop_n = 0;
        while (n_old > 0) {
            leaf &M = *leaves_[j];
            int m = std::min(n_old, M.n - p);
            std::memmove(M.e + p, M.e + p + m, sizeof(g10_run_entry) * (M.n - p - m));
            M.n -= m;
            n_old -= m;
            size_ -= m;
            if (M.n == 0) {
                if (drop_n == 0) drop_lo = j;
                ++drop_n;
                ++j;
                p = 0;
                continue;
            }
            if (p == 0) first_[j] = M.e[0].first;
            if (p == M.n && n_old > 0) {
                ++j;
                p = 0;
            }
        }
        if (drop_n) {
            drop_range(drop_lo, drop_n);
            j -= drop_n;          /* j named the leaf after them */
        }
        /* then put the new ones in where the old ones began (insert_at takes the map's end
         * and an empty map) */
        for (int i = 0; i < k; ++i) {
            insert_at(j, p, repl[i]);
            iterator at = find_present(repl[i].first);   /* a split may have moved it */
            j = at.j_;
            p = at.p_ + 1;
        }
        shrink_around(repl[0].first);
        return find_present(repl[ret].first);
    }

private:
    static bool key_less(int64_t key, const g10_run_entry &e) { return key < e.first; }
    static bool entry_less(const g10_run_entry &e, int64_t key) { return e.first < key; }

    /* The leaf whose range holds key: the last whose first key is <= key (leaf 0 below all).
     * Callers go in page order, so the leaf found last (hint_), or the next one, is tried
     * before the binary search; hint_ is left on the answer. */
    std::size_t leaf_for(int64_t key) const {
        std::size_t h = hint_, n = first_.size();
        if (h < n && first_[h] <= key) {
            if (h + 1 == n || key < first_[h + 1]) return h;
            if (h + 2 == n || key < first_[h + 2]) return hint_ = h + 1;
        }
        std::size_t j = std::upper_bound(first_.begin(), first_.end(), key) - first_.begin();
        return hint_ = j ? j - 1 : 0;
    }

    /* The position of the first entry of L with a key > key. */
    static int upper_in_leaf(const leaf &L, int64_t key) {
        return static_cast<int>(std::upper_bound(L.e, L.e + L.n, key, key_less) - L.e);
    }

    /* Insert e at position p of leaf j (p may be its count: at its end). */
    void insert_at(std::size_t j, int p, const g10_run_entry &e) {
        if (leaves_.empty()) {
            leaves_.push_back(new leaf());
            first_.push_back(e.first);
            j = 0;
            p = 0;
        } else if (j == leaves_.size()) {
            j = leaves_.size() - 1;
            p = leaves_[j]->n;
        }
        if (leaves_[j]->n == kCap) {
            int half = kCap / 2;
            split(j);
            if (p > half) {
                ++j;
                p -= half;
            }
        }
        leaf &L = *leaves_[j];
        std::memmove(L.e + p + 1, L.e + p, sizeof(g10_run_entry) * (L.n - p));
        L.e[p] = e;
        ++L.n;
        ++size_;
        if (p == 0) first_[j] = e.first;
    }

    /* Leaves below a quarter full near key merge with a neighbour where both fit in half. */
    void shrink_around(int64_t key) {
        if (leaves_.empty()) return;
        std::size_t j = leaf_for(key);
        shrink(j + 1);
        shrink(j);
        if (j > 0) shrink(j - 1);
    }

    void shrink(std::size_t j) {
        if (j >= leaves_.size() || leaves_[j]->n >= kCap / 4) return;
        if (j + 1 < leaves_.size() && leaves_[j]->n + leaves_[j + 1]->n <= kCap / 2)
            merge(j);
        else if (j > 0 && leaves_[j]->n + leaves_[j - 1]->n <= kCap / 2)
            merge(j - 1);
    }

    void split(std::size_t j) {
        leaf &L = *leaves_[j];
        leaf *R = new leaf();
        int half = kCap / 2;
        R->n = L.n - half;
        std::memcpy(R->e, L.e + half, sizeof(g10_run_entry) * R->n);
        L.n = half;
        first_.insert(first_.begin() + j + 1, R->e[0].first);
        leaves_.insert(leaves_.begin() + j + 1, R);
    }

    /* Leaf j + 1's entries join leaf j. */
    void merge(std::size_t j) {
        leaf &L = *leaves_[j];
        leaf &R = *leaves_[j + 1];
        std::memcpy(L.e + L.n, R.e, sizeof(g10_run_entry) * R.n);
        L.n += R.n;
        drop(j + 1);
    }

    void drop(std::size_t j) { drop_range(j, 1); }

    /* Leaves j .. j + n - 1 leave the map (their entries are gone or moved). */
    void drop_range(std::size_t j, std::size_t n) {
        for (std::size_t i = j; i < j + n; ++i) delete leaves_[i];
        first_.erase(first_.begin() + j, first_.begin() + j + n);
        leaves_.erase(leaves_.begin() + j, leaves_.begin() + j + n);
    }

    std::vector<int64_t> first_;                 /* each leaf's first key, ascending */
    mutable std::size_t hint_ = 0;               /* the leaf leaf_for found last */
    std::vector<leaf *> leaves_;                 /* owned (raw: an erase is one memmove) */
    std::size_t size_;
};

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

static inline bool g10_same_state(const g10_loc_run &r, int8_t loc, int8_t intr) {
    return r.loc == loc && r.intr == intr;
}

/* Set pages [a, b) (inside one tensor's [lo, hi)) to (loc, intr), keeping runs maximal, when
 * the caller holds `it`, the run that contains page a.  Returns what the old states of those
 * pages were, for the per-tensor counters; `*at` is then the run that holds [a, b) (the
 * only live iterator after the change).  The runs the range touches are replaced at once
 * by at most three: the left part of the first kept in its old state, the new run (merged
 * with equal neighbours inside the tensor), the right part of the last. */
static inline g10_removed g10_assign_at(g10_runmap &m, g10_runmap::iterator it, int64_t a, int64_t b,
                                        int8_t loc, int8_t intr, int64_t lo, int64_t hi, int8_t gpu,
                                        g10_runmap::iterator *at) {
    g10_removed rem = {0, 0, 0};
    if (g10_same_state(it->second, loc, intr) && it->second.end >= b) {
        g10_count(&rem, it->second, b - a, gpu);   /* unchanged: the caller adds it back */
        *at = it;
        return rem;
    }
    g10_run_entry repl[3];
    int k = 0, ret, n_old = 0;
    g10_runmap::iterator from = it;
    g10_run_entry mid = {a, {b, loc, intr}};
    if (it->first < a) {                            /* keep the left part in its old state */
        if (g10_same_state(it->second, loc, intr))
            mid.first = it->first;
        else
            repl[k++] = {it->first, {a, it->second.loc, it->second.intr}};
    } else if (a > lo && it != m.begin()) {         /* or merge with an equal run before */
        g10_runmap::iterator pv = it;
        --pv;
        if (pv->second.end == a && g10_same_state(pv->second, loc, intr)) {
            mid.first = pv->first;
            from = pv;
            ++n_old;
        }
    }
    g10_runmap::iterator cur = it, stop = m.end();
    g10_loc_run last = it->second;
    while (cur != stop && cur->first < b) {         /* the runs [a, b) overlaps */
        int64_t s = std::max(cur->first, a), e = cur->second.end;
        g10_count(&rem, cur->second, std::min(e, b) - s, gpu);
        last = cur->second;
        ++n_old;
        ++cur;
    }
    g10_run_entry right = {b, last};
    bool has_right = last.end > b;
    if (has_right && g10_same_state(last, loc, intr)) {
        mid.second.end = last.end;                  /* the right part is in the new state */
        has_right = false;
    }
    if (!has_right && b < hi && cur != stop && cur->first == b && g10_same_state(cur->second, loc, intr)) {
        mid.second.end = cur->second.end;           /* merge with an equal run after */
        ++n_old;
    }
    ret = k;
    repl[k++] = mid;
    if (has_right) repl[k++] = right;
    *at = m.replace(from, n_old, repl, k, ret);
    return rem;
}

#endif
