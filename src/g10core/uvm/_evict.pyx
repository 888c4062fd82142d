# cython: language_level=3
"""Evictors: which GPU pages leave when the batcher needs a frame.

The batcher asks ``find_victim`` for the next victims (a segment of pages that share a
treatment), evicts some of them, and reports it with ``taken``.  Rules:

* ``ArrivalOrderEvictor`` ("arrival"): the oldest-arrived page that is not in transfer.
  This is the published simulator's "LRU": its recency list is touched only when a page
  arrives, so the order is first-in-first-out by arrival.  The search keeps a cursor
  that persists within a kernel (reset to the list's head at every kernel begin).
  Victims go to host memory (the batcher redirects them to the SSD when host memory is
  full or its slot quota is spent).
* ``DeepUMWindowEvictor`` ("deepum"): DeepUM+'s rule: skip the tensors of the next
  ``window`` kernels (and pages in transfer: pre-evictions already queued); dead pages
  are dropped without a transfer; a fault that finds no victim outside the window takes
  the oldest page; a prefetch that finds none stalls.
* ``ScoreEvictor``: the resident tensor with the highest score is evicted next (ties:
  the tensor that arrived first), its pages oldest first, until it has none left or a
  kernel begins.  Belady's MIN ("belady") is the score "next use"; a user's rule is a
  compiled callback (``evictors.py`` compiles Python functions with numba).  Pages of a
  tensor whose data is dead at the running kernel are dropped without a transfer.
  The running kernel's tensors are never offered to a user's score: evicting them only
  re-queues them as faults, and a score that prefers them (largest tensor first) evicts
  the waiting kernel's own pages for ever.  When nothing else can leave, a fault takes
  the oldest-arrived of them (their pages in transfer aside) and a prefetch stalls.
  Belady's score ranks them last by construction (their next use is now, every other
  tensor's later), so it meets the same last resort; it still scores them.

The running kernel's pages under the other rules: ``arrival`` takes the oldest page,
whichever tensor it belongs to (the published simulator's order); ``deepum``'s window
covers the running kernel (its prefetches never take its pages) but a fault takes the
oldest page, as the published simulator does.  Both take pages in arrival order, and a
page of the running kernel that leaves comes back at the back of that order.

Kernel indices given to scores count on into the next iteration (kernel k of the next
iteration is K + k); a tensor with no use left in the simulated iterations has next use
NEVER, beyond every real one.  Dead data (a tensor past its last read) has no use left
in its iteration, so it comes before every tensor still used in the iteration; its next
use is its rebirth in the next one, which keeps Belady's rule the true MIN (fewest
faults): a dead tensor kept on the GPU until its rebirth does not fault there.
"""
from libc.math cimport INFINITY
from libc.stdint cimport int8_t, int32_t, int64_t

from cython.operator cimport dereference as deref

from ..core._types cimport TIER_NOT_PRESENT, TIER_HOST
from ._pagetable cimport g10_runmap

import numpy as np

NEVER = (<int64_t>1) << 62          # the next use of a tensor never used again
cdef int64_t C_NEVER = (<int64_t>1) << 62


cdef inline victim_t at_page(PageTable pt, int64_t c, int8_t dest) noexcept nogil:
    cdef victim_t v
    v.page = c
    v.seglen = pt.segment_end(c) - c
    v.tensor = pt.nodes[pt.node_of(c)].tensor
    v.dest = dest
    v.found = True
    return v


cdef class Evictor:
    """Base of the eviction rules; ``pt`` is the page table it picks from."""

    def __init__(self, PageTable pt):
        self.pt = pt
        self.kernel = 0
        self.iteration = 0
        self.span_cl = NULL
        self.span_want = 0

    cdef int kernel_begin(self, int64_t k, int64_t iteration) except -1 nogil:
        """Kernel k begins (its tensors are already pinned in the page table)."""
        self.kernel = k
        self.iteration = iteration
        return 0

    cdef victim_t find_victim(self, bint is_pf) noexcept nogil:
        """Where the next victims are; ``is_pf``: the frame is for a faulted page."""
        cdef victim_t v
        v.found = False
        return v

    cdef int taken(self, const victim_t* v, int64_t k, bint is_pf, int64_t next_page) noexcept nogil:
        """k pages from v.page were evicted; ``next_page``: the page after them in arrival
        order.  Returns where they came from for the bulk recorder (1: the cursor, 2: the
        list's head)."""
        return 1

    cdef bint may_stall(self, bint is_pf) noexcept nogil:
        """True: finding no victim stalls the slot's transfers instead of being an error."""
        return False

    cdef bint lockup_fallback(self) noexcept nogil:
        """True: a slot that moved nothing while a kernel waits serves the prefetch queues
        as faults (DeepUM+'s lock-up fallback in the published simulator)."""
        return False

    cdef bint fault_changes_victims(self) noexcept nogil:
        """True: whether a frame is for a fault changes which page is the victim."""
        return False

    cdef int64_t victim_span(self, bint is_pf, int64_t need, bint pinned, int8_t dest) noexcept nogil:
        """Victims (up to need) the next find_victim calls yield with this treatment."""
        return 0

    cdef bint bulk_safe(self) noexcept nogil:
        return True

    def stats(self):
        return {}

    def kernel_begin_py(self, int64_t k, int64_t iteration):
        """kernel_begin for tests."""
        self.kernel_begin(k, iteration)

    def find_victim_py(self, bint is_pf):
        """find_victim for tests: the victim's first page, or -1 when there is none."""
        cdef victim_t v = self.find_victim(is_pf)
        return v.page if v.found else -1


cdef class ArrivalOrderEvictor(Evictor):
    """The oldest-arrived GPU page not in transfer (the artifact's "LRU")."""

    cdef int kernel_begin(self, int64_t k, int64_t iteration) except -1 nogil:
        self.kernel = k
        self.iteration = iteration
        self.pt.cursor = self.pt.skip_in_transfer(self.pt.head_page())
        return 0

    cdef victim_t find_victim(self, bint is_pf) noexcept nogil:
        cdef victim_t v
        cdef int64_t c = self.pt.skip_in_transfer(self.pt.cursor)
        if c < 0:
            self.pt.cursor = self.pt.skip_in_transfer(self.pt.head_page())   # the artifact's LRUSuggestInitialLRUBase
            c = self.pt.skip_in_transfer(self.pt.cursor)
        if c < 0:
            v.found = False
            return v
        return at_page(self.pt, c, TIER_HOST)

    cdef int taken(self, const victim_t* v, int64_t k, bint is_pf, int64_t next_page) noexcept nogil:
        self.pt.cursor = next_page
        return 1

    cdef int64_t victim_span(self, bint is_pf, int64_t need, bint pinned, int8_t dest) noexcept nogil:
        if self.pt.gpu_intr == 0:
            return arrival_span(self.pt, self.pt.cursor, need, pinned, self)
        return idle_span(self.pt, self.pt.skip_in_transfer(self.pt.cursor), need, pinned, self)


cdef int64_t idle_span(PageTable pt, int64_t c, int64_t need, bint pinned, Evictor ev) noexcept nogil:
    """Pages from c on (arrival order) up to the first one in transfer, whose tensors' pinned
    flag equals `pinned`: the victims find_victim yields one after another from c."""
    cdef int64_t got = 0, e, node_end
    cdef int32_t i
    cdef g10_runmap.iterator it
    while c >= 0 and got < need:
        i = pt.node_of(c)
        if pt.pinned_now(pt.nodes[i].tensor) != pinned or not ev.span_ok(pt.nodes[i].tensor):
            break
        it = pt.run_at(c)
        if deref(it).second.intr:
            break
        node_end = pt.nodes[i].start + pt.nodes[i].count
        e = deref(it).second.end
        if e > node_end:
            e = node_end
        got += e - c
        if e < node_end:
            c = e
        else:
            i = pt.nodes[i].next
            c = pt.nodes[i].start if i >= 0 else -1
    return got if got < need else need


cdef int64_t arrival_span(PageTable pt, int64_t c, int64_t need, bint pinned, Evictor ev) noexcept nogil:
    """Pages from c on (arrival order) whose tensors' pinned flag equals `pinned`."""
    cdef int64_t got = 0
    cdef int32_t i
    if c < 0:
        return 0
    i = pt.node_of(c)
    while i >= 0 and got < need:
        if pt.pinned_now(pt.nodes[i].tensor) != pinned or not ev.span_ok(pt.nodes[i].tensor):
            break
        got += pt.nodes[i].start + pt.nodes[i].count - c
        i = pt.nodes[i].next
        if i >= 0:
            c = pt.nodes[i].start
    return got if got < need else need


# window nodes kernel_begin walks from the head before it asks the tensors instead (the
# tests set fewer, to exercise both)
cdef enum:
    WINDOW_WALK_STEPS = 64


cdef class DeepUMWindowEvictor(Evictor):
    """DeepUM+: arrival order, skipping the tensors of the next ``window`` kernels."""

    def __init__(self, PageTable pt, dict kernels, int64_t window, int64_t walk_steps=WINDOW_WALK_STEPS):
        Evictor.__init__(self, pt)
        keep = {}
        cdef int64_t[::1] v64
        cdef int32_t[::1] v32
        for name, dtype in (("in_off", np.int64), ("in_t", np.int32), ("out_off", np.int64), ("out_t", np.int32)):
            keep[name] = np.ascontiguousarray(kernels[name], dtype=dtype)
        v64 = keep["in_off"]; self.in_off = &v64[0]
        v64 = keep["out_off"]; self.out_off = &v64[0]
        v32 = keep["in_t"]; self.in_t = &v32[0] if v32.shape[0] else NULL
        v32 = keep["out_t"]; self.out_t = &v32[0] if v32.shape[0] else NULL
        self.n_kernels = keep["in_off"].shape[0] - 1
        keep["win_mark"] = np.full(self.pt.n_tensors, -1, np.int64)
        v64 = keep["win_mark"]; self.win_mark = &v64[0]
        self.window = window
        self.walk_steps = walk_steps if walk_steps > 0 else 1
        self.epoch = 0
        self._keep = keep

    cdef inline bint in_window(self, int32_t t) noexcept nogil:
        return self.win_mark[t] == self.epoch

    cdef int32_t first_outside_window(self) noexcept nogil:
        """The first node, in list order, of a tensor outside the window (-1: none): the
        earliest head among those tensors' nodes (a tensor's chain is in list order)."""
        cdef int32_t best = -1, t, h
        cdef size_t j
        for j in range(self.pt.gpu_tensors.size()):
            t = self.pt.gpu_tensors[j]
            if not self.in_window(t):
                h = self.pt.t_head[t]
                if best < 0 or self.pt.nodes[h].order < self.pt.nodes[best].order:
                    best = h
        return best

    cdef int kernel_begin(self, int64_t k, int64_t iteration) except -1 nogil:
        cdef int64_t off, kk, j, steps
        cdef int32_t m
        self.kernel = k
        self.iteration = iteration
        self.epoch += 1
        for off in range(self.window):
            kk = (k + off) % self.n_kernels
            for j in range(self.in_off[kk], self.in_off[kk + 1]):
                self.win_mark[self.in_t[j]] = self.epoch
            for j in range(self.out_off[kk], self.out_off[kk + 1]):
                self.win_mark[self.out_t[j]] = self.epoch
        # the cursor goes to the first node outside the new window: a few steps from the head
        # find it when the window is short; past that, ask the tensors (a long window covers
        # most of the list, and walking it at every kernel cost 47 % of a run at degree 1024)
        m = self.pt.head
        steps = 0
        while m >= 0 and self.in_window(self.pt.nodes[m].tensor):
            steps += 1
            if steps >= self.walk_steps:
                m = self.first_outside_window()
                break
            m = self.pt.nodes[m].next
        self.pt.cursor = self.pt.nodes[m].start if m >= 0 else -1
        self.pt.skip_prefix = m if m >= 0 else self.pt.tail   # every node before it is in the window
        return 0

    cdef victim_t find_victim(self, bint is_pf) noexcept nogil:
        cdef victim_t v
        cdef int64_t c
        cdef int32_t i, t, first
        cdef bint from_head
        v.found = False
        if not is_pf:
            c = self.pt.cursor
            # A search from the head (the page table puts the cursor there when the cursor's
            # page leaves) passes only window nodes up to skip_prefix: start there.  The
            # result is the same; without it each such search walked every window node, and
            # a long window (prefetch_degree 1024) spent 88 % of a run there.
            from_head = c >= 0 and c == self.pt.head_page()
            if from_head and self.pt.skip_prefix >= 0:
                i = self.pt.skip_prefix
                c = self.pt.nodes[i].start
            else:
                i = self.pt.node_of(c) if c >= 0 else -1
            # Pages in transfer are skipped too: on the GPU, those are pages a pre-eviction
            # hint queued to leave (G10's hints under this rule; DeepUM+'s own hints only
            # prefetch, so it never meets one).  Taken as victims, they would leave twice:
            # the pre-eviction queue would later evict pages no longer on the GPU.
            first = -1             # the first node outside the window the search passes
            while i >= 0:
                if not self.in_window(self.pt.nodes[i].tensor):
                    if first < 0:
                        first = i
                    c = self.pt.idle_in_node(i, c)
                    if c >= 0:
                        break
                i = self.pt.nodes[i].next
                c = self.pt.nodes[i].start if i >= 0 else -1
            if i < 0:
                self.pt.cursor = -1
                if from_head:
                    self.pt.skip_prefix = first if first >= 0 else self.pt.tail
                return v
            if from_head:
                self.pt.skip_prefix = first
            self.pt.cursor = c     # the skipped window pages stay behind the cursor
        else:
            c = self.pt.skip_in_transfer(self.pt.head_page())
            if c < 0:
                return v
        t = self.pt.nodes[self.pt.node_of(c)].tensor
        return at_page(self.pt, c, TIER_HOST if self.pt.alive(t, self.kernel) else TIER_NOT_PRESENT)

    cdef int taken(self, const victim_t* v, int64_t k, bint is_pf, int64_t next_page) noexcept nogil:
        if not is_pf:
            self.pt.cursor = next_page
            return 1
        if self.pt.cursor >= v.page and self.pt.cursor <= v.page + k - 1:
            self.pt.cursor = next_page
        return 2

    cdef bint may_stall(self, bint is_pf) noexcept nogil:
        return not is_pf

    cdef bint lockup_fallback(self) noexcept nogil:
        return True

    cdef bint fault_changes_victims(self) noexcept nogil:
        return True

    cdef int64_t victim_span(self, bint is_pf, int64_t need, bint pinned, int8_t dest) noexcept nogil:
        cdef int64_t got = 0
        cdef int64_t c = self.pt.skip_in_transfer(self.pt.head_page()) if is_pf else self.pt.cursor
        cdef int32_t i, t
        if c < 0 or self.pt.gpu_intr:           # (its window walk does not skip pages in transfer)
            return 0
        i = self.pt.node_of(c)
        while i >= 0 and got < need:
            t = self.pt.nodes[i].tensor
            if self.pt.pinned_now(t) != pinned or not self.span_ok(t):
                break
            if not is_pf and self.in_window(t):
                break
            if (TIER_HOST if self.pt.alive(t, self.kernel) else TIER_NOT_PRESENT) != dest:
                break
            got += self.pt.nodes[i].start + self.pt.nodes[i].count - c
            i = self.pt.nodes[i].next
            if i >= 0:
                c = self.pt.nodes[i].start
        return got if got < need else need


cdef double belady_score(int64_t now, int64_t tensor, int64_t resident, int64_t size,
                         int64_t last_use, int64_t next_use, int64_t arrival) noexcept nogil:
    return <double>next_use


cdef class ScoreEvictor(Evictor):
    """Evicts the resident tensor with the highest score, its pages in arrival order.

    ``uses``: dict with ``off`` and ``kernels``, every tensor's uses in ascending kernel
    order (CSR); ``n_iterations``: iterations simulated (no use exists after the last).
    ``callback``: None for Belady's rule, else an object whose ``address`` is a C
    function with the signature of ``score_fn_t`` (a numba ``cfunc``).  ``offer_running``:
    whether the running kernel's tensors are scored (None: for Belady's rule only).
    """

    def __init__(self, PageTable pt, dict uses, int64_t n_kernels, int64_t n_iterations, callback=None,
                 offer_running=None):
        Evictor.__init__(self, pt)
        keep = {}
        cdef int64_t[::1] v64
        keep["off"] = np.ascontiguousarray(uses["off"], dtype=np.int64)
        keep["kernels"] = np.ascontiguousarray(uses["kernels"], dtype=np.int64)
        if keep["kernels"].shape[0] == 0:
            keep["kernels"] = np.zeros(1, np.int64)
        v64 = keep["off"]; self.use_off = &v64[0]
        v64 = keep["kernels"]; self.use_k = &v64[0]
        self._keep = keep
        self.n_kernels = n_kernels
        self.n_iterations = n_iterations
        self.chosen = -1
        self.n_choices = self.n_scores = self.n_failed = 0
        self._callback = callback
        # None: a user's rule is not offered the running kernel's tensors, Belady's score is
        # (it ranks them last); True offers them to a user's too (tests: the livelock it was)
        self.skip_running = (callback is not None) if offer_running is None else not offer_running
        cdef size_t address
        if callback is None:
            self.score = belady_score
        else:
            address = <size_t>int(callback.address)
            self.score = <score_fn_t>address

    cdef int kernel_begin(self, int64_t k, int64_t iteration) except -1 nogil:
        if self.n_failed:                 # a rule that fails may livelock the run: stop it here
            with gil:                     # (evictors.check_score_failures names the call)
                raise RuntimeError(f"the eviction rule's score was NaN in {self.n_failed} call(s) "
                                   "(it raised an exception or returned NaN)")
        self.kernel = k
        self.iteration = iteration
        self.chosen = -1                  # scores depend on the kernel: choose again
        return 0

    cdef int64_t next_use(self, int32_t t) noexcept nogil:
        """First use at or after the running kernel, K + k in the next iteration, or NEVER
        (no use left in the simulated iterations)."""
        cdef int64_t lo = self.use_off[t], hi = self.use_off[t + 1], mid
        if lo == hi:
            return C_NEVER
        while lo < hi:                      # first use >= kernel
            mid = (lo + hi) >> 1
            if self.use_k[mid] < self.kernel:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.use_off[t + 1]:
            return self.use_k[lo]
        if self.iteration + 1 < self.n_iterations:
            return self.n_kernels + self.use_k[self.use_off[t]]
        return C_NEVER

    cdef int64_t last_use(self, int32_t t) noexcept nogil:
        """Latest use at or before the running kernel (k - K in the previous iteration), or -NEVER."""
        cdef int64_t lo = self.use_off[t], hi = self.use_off[t + 1], mid
        if lo == hi:
            return -C_NEVER
        while lo < hi:                      # first use > kernel
            mid = (lo + hi) >> 1
            if self.use_k[mid] <= self.kernel:
                lo = mid + 1
            else:
                hi = mid
        if lo > self.use_off[t]:
            return self.use_k[lo - 1]
        if self.iteration > 0:
            return self.use_k[self.use_off[t + 1] - 1] - self.n_kernels
        return -C_NEVER

    cdef int32_t choose(self, bint is_pf) noexcept nogil:
        """The resident tensor with pages to evict and the highest score (ties: oldest arrival).

        A user's rule (``skip_running``) scores no tensor of the running kernel: a fault that
        finds no other tensor gets the oldest-arrived of them, a prefetch none (-1)."""
        cdef int32_t best = -1, running = -1, t
        cdef double s, best_s = 0.0
        cdef size_t j
        cdef int64_t last, nxt
        for j in range(self.pt.gpu_tensors.size()):
            t = self.pt.gpu_tensors[j]
            if self.pt.cnt_ready[t] == 0:
                continue
            if self.skip_running and self.pt.pinned_now(t):
                if running < 0 or self.pt.t_arrival[t] < self.pt.t_arrival[running]:
                    running = t
                continue
            last = self.last_use(t)
            nxt = self.next_use(t)
            s = self.score(self.kernel, t, self.pt.cnt_ready[t], self.pt.t_np[t], last, nxt, self.pt.t_arrival[t])
            self.n_scores += 1
            if s != s:
                self._note_failure(t, last, nxt)
                s = -INFINITY
            if best < 0 or s > best_s or (s == best_s and self.pt.t_arrival[t] < self.pt.t_arrival[best]):
                best = t
                best_s = s
        self.n_choices += 1
        if best < 0 and is_pf:
            return running
        return best

    cdef void _note_failure(self, int32_t t, int64_t last, int64_t nxt) noexcept nogil:
        """Tensor t's score (its last and next use as given) was NaN (see the .pxd): count it,
        keep the first one's inputs."""
        if self.n_failed == 0:
            self.failed_args[0] = self.kernel
            self.failed_args[1] = t
            self.failed_args[2] = self.pt.cnt_ready[t]
            self.failed_args[3] = self.pt.t_np[t]
            self.failed_args[4] = last
            self.failed_args[5] = nxt
            self.failed_args[6] = self.pt.t_arrival[t]
        self.n_failed += 1

    def first_failure(self):
        """(count, inputs) of the scores that were NaN, inputs as the score function took them
        (the first one's); None when there was none."""
        if self.n_failed == 0:
            return None
        return self.n_failed, tuple(self.failed_args[i] for i in range(7))

    cdef victim_t find_victim(self, bint is_pf) noexcept nogil:
        cdef victim_t v
        cdef int32_t t = self.chosen
        if t < 0 or self.pt.cnt_ready[t] == 0:
            t = self.choose(is_pf)
            self.chosen = t
            if t >= 0 and self.skip_running and self.pt.pinned_now(t):
                self.chosen = -1          # a last resort: choose again at the next victim
        if t < 0:
            v.found = False
            return v
        return at_page(self.pt, self.pt.oldest_idle_page(t), TIER_HOST if self.pt.alive(t, self.kernel) else TIER_NOT_PRESENT)

    cdef bint may_stall(self, bint is_pf) noexcept nogil:
        # a user's rule: a prefetch that finds only the running kernel's pages waits
        return self.skip_running and not is_pf

    cdef int64_t victim_span(self, bint is_pf, int64_t need, bint pinned, int8_t dest) noexcept nogil:
        cdef int32_t t = self.chosen
        cdef int64_t got
        if t < 0 or self.pt.pinned_now(t) != pinned or self.pt.cnt_intr[t] or not self.span_ok(t):
            return 0
        if (TIER_HOST if self.pt.alive(t, self.kernel) else TIER_NOT_PRESENT) != dest:
            return 0
        got = self.pt.cnt_ready[t]
        return got if got < need else need

    def stats(self):
        return {"victim_tensors_chosen": self.n_choices, "scores_evaluated": self.n_scores}

    def score_inputs(self, int32_t t):
        """(last_use_kernel, next_use_kernel) of tensor t now (tests)."""
        return self.last_use(t), self.next_use(t)
