/* A pool of fixed-size nodes, for the SSD's tables (_ssd.pyx: the l2p leaves and the dense
 * p2l tables).
 *
 * Those tables are made and freed millions of times in a run, and general-purpose
 * malloc/free cost a measurable share of it.  A pool hands out nodes of one size from
 * chunks of 4096 and keeps freed nodes on a free list; it returns its chunks to the heap
 * only when it is destroyed.
 */
#ifndef G10CORE_POOL_H
#define G10CORE_POOL_H

#include <cstddef>
#include <memory>
#include <vector>

class g10_node_pool {
public:
    explicit g10_node_pool() : node_size_(0), free_(nullptr), left_(0), next_(nullptr) {}
    g10_node_pool(const g10_node_pool &) = delete;
    g10_node_pool &operator=(const g10_node_pool &) = delete;

    /* One node of `size` bytes; every call on one pool must ask for the same size. */
    void *get(std::size_t size) {
        if (free_) {
            link *l = free_;
            free_ = l->next;
            return l;
        }
        if (left_ == 0) grow(size);
        void *p = next_;
        next_ += node_size_;
        --left_;
        return p;
    }
    void put(void *p) {
        link *l = static_cast<link *>(p);
        l->next = free_;
        free_ = l;
    }
    std::size_t node_size() const { return node_size_; }
    /* Bytes taken from the heap so far (a pool keeps what it took until it is destroyed). */
    std::size_t reserved_bytes() const { return chunks_.size() * kChunkNodes * node_size_; }

private:
    struct link { link *next; };
    static constexpr std::size_t kAlign = alignof(std::max_align_t);
    static constexpr std::size_t kChunkNodes = 4096;

    void grow(std::size_t size) {
        if (node_size_ == 0) {
            std::size_t s = size < sizeof(link) ? sizeof(link) : size;
            node_size_ = (s + kAlign - 1) / kAlign * kAlign;
        }
        chunks_.emplace_back(new char[node_size_ * kChunkNodes]);
        next_ = chunks_.back().get();
        left_ = kChunkNodes;
    }

    std::size_t node_size_;
    link *free_;
    std::size_t left_;
    char *next_;
    std::vector<std::unique_ptr<char[]>> chunks_;
};

#endif
