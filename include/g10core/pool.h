/* A node pool for the replay's ordered maps (runmap.h).
 *
 * std::map allocates one node per run and frees it when runs merge; the replay does
 * that tens of millions of times per run, and general-purpose malloc/free was ~9 % of
 * its time.  g10_pool_alloc hands out fixed-size nodes from chunks and keeps freed
 * nodes on a free list.  Each default-constructed allocator (so each map) owns its own
 * pool; copies and rebinds share it, and it is released with the last of them.
 */
#ifndef G10CORE_POOL_H
#define G10CORE_POOL_H

#include <cstddef>
#include <memory>
#include <new>
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

template <class T>
struct g10_pool_alloc {
    typedef T value_type;
    std::shared_ptr<g10_node_pool> pool;

    g10_pool_alloc() : pool(std::make_shared<g10_node_pool>()) {}
    template <class U>
    g10_pool_alloc(const g10_pool_alloc<U> &o) noexcept : pool(o.pool) {}

    T *allocate(std::size_t n) {
        /* single nodes (all std::map asks for) come from the pool, anything else from new */
        if (n == 1 && (pool->node_size() == 0 || pool->node_size() >= sizeof(T)) &&
            alignof(T) <= alignof(std::max_align_t))
            return static_cast<T *>(pool->get(sizeof(T)));
        return static_cast<T *>(::operator new(n * sizeof(T)));
    }
    void deallocate(T *p, std::size_t n) noexcept {
        if (n == 1 && pool->node_size() >= sizeof(T) && alignof(T) <= alignof(std::max_align_t))
            pool->put(p);
        else
            ::operator delete(p);
    }
};

template <class T, class U>
bool operator==(const g10_pool_alloc<T> &a, const g10_pool_alloc<U> &b) noexcept { return a.pool == b.pool; }
template <class T, class U>
bool operator!=(const g10_pool_alloc<T> &a, const g10_pool_alloc<U> &b) noexcept { return a.pool != b.pool; }

#endif
