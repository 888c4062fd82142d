/* Event queue of the compiled engine (_engine.pxd / _engine.pyx).
 *
 * A binary min-heap of events keyed by (time, priority, sequence).  The sequence is
 * assigned by push() from a counter that only grows, so the key is a total order and
 * a run is deterministic: events at the same time and priority fire in the order
 * they were scheduled (first scheduled, first fired).  Must match the declarations in
 * src/g10core/core/_engine.pxd.
 */
#ifndef G10CORE_EVENTQ_H
#define G10CORE_EVENTQ_H

#include <algorithm>
#include <cstdint>
#include <vector>

struct g10_event {
    int64_t time;      /* cycle at which it fires */
    int32_t priority;  /* lower fires first among events at the same time */
    int32_t kind;      /* what it is; the owner's enum */
    int64_t seq;       /* scheduling order, unique */
    int64_t arg;       /* one payload word (a kernel index, a request id, ...) */
};

/* "a fires after b": std heaps are max-heaps, so this makes the earliest key the top. */
struct g10_event_after {
    bool operator()(const g10_event &a, const g10_event &b) const {
        if (a.time != b.time) return a.time > b.time;
        if (a.priority != b.priority) return a.priority > b.priority;
        return a.seq > b.seq;
    }
};

class g10_event_queue {
public:
    g10_event_queue() : next_seq_(0), pushed_(0), popped_(0), max_size_(0) {}

    /* Schedules an event; returns its sequence number. */
    int64_t push(int64_t time, int32_t priority, int32_t kind, int64_t arg) {
        g10_event e = {time, priority, kind, next_seq_++, arg};
        heap_.push_back(e);
        std::push_heap(heap_.begin(), heap_.end(), g10_event_after());
        ++pushed_;
        if (heap_.size() > max_size_) max_size_ = heap_.size();
        return e.seq;
    }
    /* The next event; the queue must not be empty. */
    const g10_event &top() const { return heap_.front(); }
    /* Removes and returns the next event; the queue must not be empty. */
    g10_event pop() {
        std::pop_heap(heap_.begin(), heap_.end(), g10_event_after());
        g10_event e = heap_.back();
        heap_.pop_back();
        ++popped_;
        return e;
    }
    bool empty() const { return heap_.empty(); }
    size_t size() const { return heap_.size(); }
    /* Drops every pending event and restarts the sequence (a new run). */
    void clear() { heap_.clear(); next_seq_ = 0; pushed_ = popped_ = 0; max_size_ = 0; }
    int64_t next_seq() const { return next_seq_; }
    int64_t pushed() const { return pushed_; }
    int64_t popped() const { return popped_; }
    size_t max_size() const { return max_size_; }

private:
    std::vector<g10_event> heap_;
    int64_t next_seq_;
    int64_t pushed_, popped_;
    size_t max_size_;
};

#endif
