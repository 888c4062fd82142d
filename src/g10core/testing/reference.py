"""Page-by-page reference of the ``g10-artifact`` page-level replay (pure Python).

This is the executable specification of what the published G10 simulator computes
for Base UVM, DeepUM+, G10 and Ideal (``shared/reference/g10_artifact_model.md`` §4).
It keeps one state byte per page and walks pages one at a time, so it costs
microseconds per page and is only usable on small traces.  The compiled replay
(``_replay.pyx``) computes the same thing on extents; tests run both on the same
inputs and require identical results.

Timing constants follow the artifact's integer conversions exactly (see
:class:`ArtifactConstants`); the quirks that move published numbers are marked.

Outside ``g10-artifact`` (``ArtifactConstants.exact``) three of them give way to the rules of
``docs/physics.md``: each path (SSD reads, SSD writes, host in, host out) has a budget of slot
time, a page costs its time at the path's bandwidth and what a slot leaves unused below one
page is carried to the next; with ``ssd.duplex = shared`` SSD reads and writes draw on one
budget, which a slot shares max-min fair between them (while SSD reads wait, pre-evictions to
the SSD first take at most half of it, the reads what is left, the pre-evictions the rest); a
prefetch hint keeps a tensor's pages still queued for pre-eviction on the GPU; victims go to host
memory while it has room, else to the SSD, and wait for the next slot when that path's budget is
spent; zero-fill faults cost their allocation, not link time.
With ``fault.handler = physical`` (the ``default`` preset) a faulting kernel's fault time is
:func:`physical_fault_cycles` instead of the profile formula.
"""
from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

from ..uvm.slots import ArtifactConstants, physical_fault_params  # noqa: F401 (re-exported)
from ..workload.slot_inputs import kernel_cycles, liveness  # noqa: F401 (re-exported)
from ..codes import HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD, TIER_NONE
from ..codes import TIER_GPU as GPU, TIER_HOST as HOST, TIER_NOT_PRESENT as NP, TIER_SSD as SSD
from ..results import breakdown, summarize  # noqa: F401 (moved to results.py; re-exported)
from ..workload.trace import ACCESS_READ, PAGE_SIZE_BYTES, Trace

UNKNOWN = TIER_NONE                      # "no forced source/destination" in a tick

EVICT_LRU, EVICT_DEEPUM = 0, 1

RD, WR, HI, HO = "ssd_in", "ssd_out", "host_in", "host_out"     # the paths of exact quotas


def shared_link_times(ssd_bytes, host_bytes, bw_ssd, bw_host, bw_link):
    """(SSD ms, host ms) of one direction's faults on a shared link (exact rules).

    The SSD streams at min(bw_ssd, link); while it does, the host pages get
    min(bw_host, link - that), and min(bw_host, link) after it."""
    r_s = min(bw_ssd, bw_link)
    t_s = ssd_bytes / r_s if ssd_bytes > 0 and r_s > 0 else 0.0
    if host_bytes <= 0:
        return t_s, 0.0
    h = min(bw_host, bw_link)
    c = min(bw_link - r_s if t_s > 0 else bw_link, bw_host)
    if c > 0 and host_bytes <= c * t_s:
        return t_s, host_bytes / c
    return t_s, t_s + (host_bytes - max(c, 0.0) * t_s) / h


def fault_model_cycles(c: ArtifactConstants, t00, t10, t11, in_faults, in_ssd, in_total,
                       out_faults, out_ssd, out_total, in_np=0, out_np=0) -> int:
    """Extra cycles a faulting kernel takes (the artifact's `performance_model`).

    Quirk (moves every published number): the artifact converts the profiled cycles to
    ms with an *integer* division by the clock in Hz, so every time below one second
    becomes 0 ms and the model reduces to bandwidth terms.
    """
    f = c.freq_hz
    T00 = float((t00 // f) * 1000)
    T10 = float((t10 // f) * 1000)
    T11 = float((t11 // f) * 1000)
    r_in = in_faults / in_total if in_total else 0.0
    r_out = out_faults / out_total if out_total else 0.0
    rs_in = in_ssd / in_faults if in_faults else 0.0
    rs_out = out_ssd / out_faults if out_faults else 0.0
    if c.exact:
        # never-allocated pages move no byte: their faults cost allocation time (below)
        in_faults -= in_np
        out_faults -= out_np
        r_in = in_faults / in_total if in_total else 0.0
        r_out = out_faults / out_total if out_total else 0.0
        rs_in = in_ssd / in_faults if in_faults else 0.0
        rs_out = out_ssd / out_faults if out_faults else 0.0
    s_in = in_total * PAGE_SIZE_BYTES
    s_out = out_total * PAGE_SIZE_BYTES
    bw_pcie, bw_ssd = c.bw_pcie_Bpms, c.bw_ssd_Bpms
    l_sys, l_ssd = c.l_sys_us, c.l_ssd_us

    if T00 <= T11:
        T00 = T11
    if T10 < T11:
        T10 = T11
    if T10 > T00:
        T10 = T00
    bw_cpu_in = 1063004400.0 if T00 == T10 else s_in / (T00 - T10)
    bw_cpu_out = 1063004400.0 if T10 == T11 else s_out / (T10 - T11)
    bw_ssd_in = min(bw_cpu_in * l_sys / (l_sys + l_ssd), bw_ssd)
    bw_ssd_out = min(bw_cpu_out * l_sys / (l_sys + l_ssd), bw_ssd)
    if rs_in == 0:
        bw_ssd_in = 0.0
    if rs_out == 0:
        bw_ssd_out = 0.0
    if c.exact:
        # the SSD stream takes its share of the link only while it streams (docs/physics.md)
        ssd_in_t, cpu_in_t = shared_link_times(r_in * rs_in * s_in, r_in * (1 - rs_in) * s_in,
                                               bw_ssd_in, bw_cpu_in, bw_pcie)
        ssd_out_t, cpu_out_t = shared_link_times(r_out * rs_out * s_out, r_out * (1 - rs_out) * s_out,
                                                 bw_ssd_out, bw_cpu_out, bw_pcie)
        delta_ms = max(ssd_in_t + ssd_out_t, cpu_in_t + cpu_out_t)
        return max(_artifact_ulong(delta_ms / 1e3 * f), int(float(in_np + out_np) * c.alloc_cycles_per_page))
    cap = bw_pcie - max(bw_ssd_in, bw_ssd_out)
    bw_cpu_in = min(bw_cpu_in, cap)
    bw_cpu_out = min(bw_cpu_out, cap)
    ssd_in_t = 0.0 if rs_in == 0 else r_in * rs_in * s_in / bw_ssd_in
    ssd_out_t = 0.0 if rs_out == 0 else r_out * rs_out * s_out / bw_ssd_out
    # SSD faults may take the whole link (ssd.bandwidth_GBps = link.bandwidth_GBps): cap is
    # then 0 and the host terms divide by zero, as IEEE 754 does it (inf, or NaN for 0 / 0)
    cpu_t = _ieee_div(r_in * (1 - rs_in) * s_in, bw_cpu_in) + _ieee_div(r_out * (1 - rs_out) * s_out, bw_cpu_out)
    delta_ms = ssd_in_t + ssd_out_t
    if cpu_t > delta_ms:            # std::max(ssd, cpu): a NaN cpu_t keeps the SSD time
        delta_ms = cpu_t
    cycles = _artifact_ulong(delta_ms / 1e3 * f)
    if c.exact:
        # allocation (zero-fill) proceeds alongside the transfers
        cycles = max(cycles, int(float(in_np + out_np) * c.alloc_cycles_per_page))
    return cycles


def physical_fault_cycles(p: dict, fin, fout) -> int:
    """Extra cycles a faulting kernel takes under the physical rule (``fault.handler = physical``).

    ``p``: ``uvm.slots.physical_fault_params``; ``fin``/``fout``: the kernel's inputs' and
    outputs' pages [total, never allocated, SSD, host, in transfer].  Every faulting page
    migrates into the GPU.  The transfers (the SSD's stream and the host pages sharing the link
    with it, :func:`shared_link_times`: the longer of the two) or the zero-fill of the
    never-allocated pages, whichever is longer, in cycles truncated; plus the driver's time in
    whole cycles: the faulting pages in migration units, batches of ``batch_faults`` units,
    VA blocks as if the pages were contiguous, and host VA blocks likewise for the host pages.
    Pages in transfer add nothing (they arrive by the slots).  docs/physics.md, "Fault time:
    the physical rule".

    Parameters
    ----------
    p : dict
        ``uvm.slots.physical_fault_params`` of the configuration.
    fin, fout : sequence of int
        The inputs' and outputs' pages: total, never allocated, SSD, host, in transfer.

    Returns
    -------
    int
        Cycles the kernel's faults add to its ideal time.
    """
    zero, ssd, host = fin[1] + fout[1], fin[2] + fout[2], fin[3] + fout[3]
    pages = zero + ssd + host
    if pages == 0:
        return 0
    page = p["page_bytes"]
    t_ssd, t_host = shared_link_times(float(ssd * page), float(host * page),
                                      p["bw_ssd_Bpms"], p["bw_host_Bpms"], p["bw_link_Bpms"])
    cycles = max(t_ssd, t_host) / 1e3 * float(p["freq_hz"])
    cycles = max(cycles, float(zero) * p["alloc_cycles_per_page"])
    units = -(-pages // p["unit_pages"])
    batches = -(-units // p["batch_faults"])
    blocks = -(-pages // p["block_pages"])
    host_blocks = -(-host // p["block_pages"])
    driver = (batches * p["batch_fixed_cycles"] + blocks * p["batch_per_block_cycles"]
              + pages * p["batch_per_page_cycles"] + host_blocks * p["batch_unmap_cycles"])
    return int(cycles) + driver


def _ieee_div(a: float, b: float) -> float:
    """``a / b`` with IEEE 754's answer for ``b == 0`` (Python would raise)."""
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.inf if a > 0 else -math.inf
    return a / b


def _artifact_ulong(x: float) -> int:
    """The artifact's ``(unsigned long)`` of a fault time in cycles, as gcc emits it on x86-64.

    2^64 or more, +inf included, becomes 0 (an infinite fault time adds nothing: the
    kernel ends when its last page arrives); [2^63, 2^64) and NaN cannot occur here.
    """
    if not x < 18446744073709551616.0:
        return 0
    return int(x)


def is_alive(trace, birth, death, t, k) -> bool:
    if trace.tensor_is_global[t]:
        return True
    if death[t] == -1:
        return k == birth[t]
    return birth[t] <= k < death[t]


class _LRU:
    """The artifact's GPU page list: appended on arrival, never touched on a hit."""

    END = -1

    def __init__(self):
        self.nxt, self.prv = {}, {}
        self.head = self.tail = self.END

    def __contains__(self, p):
        return p in self.nxt

    def append(self, p):
        self.nxt[p] = self.END
        self.prv[p] = self.tail
        if self.tail == self.END:
            self.head = p
        else:
            self.nxt[self.tail] = p
        self.tail = p

    def remove(self, p):
        n, q = self.nxt.pop(p), self.prv.pop(p)
        if q == self.END:
            self.head = n
        else:
            self.nxt[q] = n
        if n == self.END:
            self.tail = q
        else:
            self.prv[n] = q


class ReferenceReplay:
    """One replay (two iterations by default); ``run()`` returns a stats dict."""

    def __init__(self, trace: Trace, cfg, *, hints=None, apply_hints=False,
                 eviction=EVICT_LRU, iterations=None, max_kernels=None):
        self.tr = trace
        self.c = ArtifactConstants.from_config(cfg)
        # fault.handler = physical: its parameters (else the profile model's formula)
        self.physical = physical_fault_params(cfg) if cfg.fault.handler == "physical" else None
        self.iterations = cfg.run.iterations if iterations is None else iterations
        self.eviction = eviction
        self.apply_hints = apply_hints
        self.window = cfg.scheduler.prefetch_degree
        self.t11, self.t10, self.t00 = kernel_cycles(trace, cfg.gpu.frequency_GHz)
        self.birth, self.death = liveness(trace)
        K = trace.n_kernels
        self.K = K
        self.first = trace.tensor_first_page.astype(np.int64)
        self.npages = trace.tensor_pages.astype(np.int64)
        P = int(self.npages.sum())
        self.page_tensor = np.empty(P, np.int64)
        for t in range(trace.n_tensors):
            self.page_tensor[self.first[t]:self.first[t] + self.npages[t]] = t
        self.loc = bytearray(P)
        self.intr = bytearray(P)
        for t in np.flatnonzero(trace.tensor_is_global):
            self.loc[self.first[t]:self.first[t] + self.npages[t]] = bytes([SSD]) * int(self.npages[t])
        # per kernel: inputs, outputs-not-inputs, required set (fault-queue order)
        self.k_in, self.k_out = [], []
        for k in range(K):
            ts, ms = trace.kernel_accesses(k)
            self.k_in.append([int(t) for t, m in zip(ts, ms) if m & ACCESS_READ])
            self.k_out.append([int(t) for t, m in zip(ts, ms) if not m & ACCESS_READ])
        h = np.zeros(0) if hints is None else hints
        self.hints = [(int(r["kernel"]), int(r["tensor"]), int(r["action"])) for r in h]
        self.hint_idx = 0
        # state
        self.gpu_free = self.c.gpu_pages
        self.host_used = 0
        self.lru = _LRU()
        self.cursor = _LRU.END
        self.q = {name: deque() for name in
                  ("pf_ssd", "pf_cpu", "pf_alloc", "pre_ssd", "pre_cpu", "prealloc", "evict_ssd", "evict_cpu")}
        self.intr_set = set()
        self.cur = 0
        self.iteration = 0
        self.required = set()
        self.running_window = set()
        self.resched = None            # [first_time, pf_time, started, pf_infos]
        self.transferring = False
        self.boundaries = []           # (iteration, time, begin?)
        self.kernels = []              # per executed kernel: (iter, k, start, end, in_tr, cpu, ssd, unalloc)
        self.pcie = []                 # per busy tick: (iter, time, alloc, in_ssd, in_cpu, out_ssd, out_cpu)
        self.host_overflow = False
        self.max_kernels = max_kernels
        self.max_ticks = 1 << 62       # a livelock guard for tests
        # exact quotas: per path its cost of a page, the budget it draws on, the carry kept at most
        c = self.c
        self.exact = c.exact
        self.cost = {RD: c.ssd_read_units, WR: c.ssd_write_units, HI: c.host_units, HO: c.host_units}
        self.bucket = {RD: RD, WR: RD if c.ssd_shared else WR, HI: HI, HO: HO}
        self.cap = {b: max(self.cost[p] for p in self.cost if self.bucket[p] == b) - 1
                    for b in set(self.bucket.values())}
        self.carry = dict(self.cap)    # every path idle before the run
        self.avail = dict(self.cap)
        self.used = {b: 0 for b in self.cap}
        self.write_share = None        # units SSD writes may spend before the slot's reads (None: no limit)
        self.log = None                # debug: list of (kind, time, page, 1, tier)
        self.now = 0

    # ---- page helpers ------------------------------------------------------
    def pages(self, t):
        f = int(self.first[t])
        return range(f, f + int(self.npages[t]))

    def tensor_of(self, p):
        return int(self.page_tensor[p])

    def host_full(self):
        return self.host_used == self.c.host_pages

    # ---- the GPU page list (LRU in name, FIFO by arrival in effect) -------
    def _erase_gpu(self, p):
        at_cursor = self.cursor == p
        self.lru.remove(p)
        if at_cursor:                         # the artifact resets its cursor to the list head
            self.cursor = self.lru.head
        self.gpu_free += 1

    def _alloc_gpu(self, p):
        self.lru.append(p)
        self.gpu_free -= 1

    def _lru_initial_base(self):
        it = self.lru.head
        while it != _LRU.END and self.intr[it]:
            it = self.lru.nxt[it]
        self.cursor = it

    def _deepum_initial_base(self):
        it = self.lru.head
        while it != _LRU.END and self.tensor_of(it) in self.running_window:
            it = self.lru.nxt[it]
        self.cursor = it

    def select_victim(self, is_pf):
        """(page, destination) or None when DeepUM finds no victim outside its window."""
        END = _LRU.END
        if self.eviction == EVICT_LRU:
            it = self.cursor
            while it != END and self.intr[it]:
                it = self.lru.nxt[it]
            if it == END:
                self._lru_initial_base()
                it = self.cursor
                while it != END and self.intr[it]:
                    it = self.lru.nxt[it]
            assert it != END, "no eviction candidate"
            self.cursor = self.lru.nxt[it]
            return it, HOST
        if not is_pf:
            # pages in transfer (queued by a pre-eviction hint) are skipped as well: the
            # artifact never pairs DeepUM+ with pre-evictions, and a page taken here would
            # leave the GPU twice (its pre-eviction would find it gone)
            it = self.cursor
            while it != END and (self.tensor_of(it) in self.running_window or self.intr[it]):
                it = self.lru.nxt[it]
            if it == END:
                self.cursor = END
                return None
            self.cursor = self.lru.nxt[it]
        else:
            it = self.lru.head
            while it != END and self.intr[it]:
                it = self.lru.nxt[it]
            assert it != END, "no eviction candidate"
            if it == self.cursor:
                self.cursor = self.lru.nxt[it]
        t = self.tensor_of(it)
        dest = HOST if is_alive(self.tr, self.birth, self.death, t, self.cur) else NP
        return it, dest

    # ---- one tick's bookkeeping ---------------------------------------------
    def _new_tick(self):
        self.alloc_n = self.in_n = self.out_n = 0
        self.in_ssd = self.in_cpu = self.out_ssd = self.out_cpu = 0
        self.forced_fetch = UNKNOWN
        self.forced_evict = UNKNOWN
        if self.exact:
            for b in self.cap:
                self.avail[b] = min(self.carry[b], self.cap[b]) + self.c.slot_units
                self.used[b] = 0

    # ---- exact quotas ----------------------------------------------------------
    def _fits(self, path):
        b = self.bucket[path]
        return self.used[b] + self.cost[path] <= self.avail[b]

    def _spend(self, path):
        self.used[self.bucket[path]] += self.cost[path]

    def _can_in(self, src):
        if self.exact:
            return self._fits(RD if src == SSD else HI)
        return self.in_ssd < self.c.ssd_batch if src == SSD else self.in_cpu < self.c.host_batch

    def _victim_dest(self):
        """Exact quotas: a live victim goes to host memory while it has room, else to the SSD."""
        return SSD if self.host_full() else HOST

    def _pre_dest(self, queue):
        """Exact quotas: where the next pre-eviction of ``queue`` goes (None: none leaves this slot)."""
        if self.out_n >= self.c.gpu_batch:
            return None
        if queue == "evict_ssd" or self.host_full():
            write_ok = self.write_share is None or self.used[self.bucket[WR]] + self.cost[WR] <= self.write_share
            return SSD if self._fits(WR) and write_ok else None
        return HOST if self._fits(HO) else None

    def _seen_budget(self, b):
        """Budget b in units as the slot's decisions see it: the largest sum of its paths' page
        costs that fits in it."""
        a = self.avail[b]
        costs = sorted({self.cost[p] for p in self.cost if self.bucket[p] == b})
        if a < 0:
            return -costs[0]
        if len(costs) == 1:
            return a // costs[0] * costs[0]
        c1, c2 = costs
        return max(w * c2 + (a - w * c2) // c1 * c1 for w in range(a // c2 + 1))

    def _preevict_exact(self):
        """Pre-evictions: SSD queue, then host queue, each page where _pre_dest sends it."""
        q = self.q
        for name in ("evict_ssd", "evict_cpu"):
            while q[name]:
                d = self._pre_dest(name)
                if d is None:
                    break
                self.process_evict(q[name][0], d)
                q[name].popleft()

    def _record_fetch(self, src):
        c = self.c
        if self.exact:
            if src == SSD:
                self.in_ssd += 1
                self._spend(RD)
            else:
                self.in_cpu += 1
                self._spend(HI)
            self.alloc_n += 1
            self.in_n += 1
            return
        if src == SSD:
            self.in_ssd += 1
            if self.in_ssd == c.ssd_batch:
                self.forced_fetch = HOST
        else:
            self.in_cpu += 1
            if self.in_cpu == c.host_batch:
                self.forced_fetch = SSD
        self.alloc_n += 1
        self.in_n += 1

    def _record_evict(self, dest):
        c = self.c
        if self.exact:
            if dest == SSD:
                self.out_ssd += 1
                self.out_n += 1
                self._spend(WR)
            elif dest == HOST:
                self.out_cpu += 1
                self.out_n += 1
                self._spend(HO)
            return
        if dest == SSD:
            self.out_ssd += 1
            self.out_n += 1
            if self.out_ssd == c.ssd_batch:
                self.forced_evict = HOST
        elif dest == HOST:
            self.out_cpu += 1
            self.out_n += 1
            if self.out_cpu == c.host_batch or self.host_full():
                self.forced_evict = SSD

    def _room(self):
        c = self.c
        if self.gpu_free > 0:
            return True
        if self.exact:
            # the victim's path must have budget: a busy one makes it wait, it does not spill
            return self.out_n < c.gpu_batch and self._fits(WR if self.host_full() else HO)
        if self.host_full():
            return self.out_n < c.gpu_batch and self.out_ssd < c.ssd_batch
        return self.out_n < c.gpu_batch

    def process_evict(self, p, dest):
        t = self.tensor_of(p)
        if self.log is not None:
            self.log.append((1, self.now, p, 1, dest))
        if dest == HOST:
            if self.host_used >= self.c.host_pages:
                self.host_overflow = True     # the artifact would abort here
            self.host_used += 1
            self.loc[p] = HOST
        elif dest == SSD:
            self.loc[p] = SSD
        else:
            self.loc[p] = NP
        self._record_evict(dest)
        if t in self.required:
            self.q["pf_cpu" if dest == HOST else "pf_ssd" if dest == SSD else "pf_alloc"].append(p)
            self.intr[p] = 1
            self.intr_set.add(p)
        else:
            self.intr[p] = 0
        self._erase_gpu(p)

    def process_alloc(self, p, is_pf) -> bool:
        """Bring page p into a GPU frame (evicting if full); False if DeepUM stalls."""
        if self.gpu_free == 0:
            is_pf = is_pf or self.tensor_of(p) in self.required
            v = self.select_victim(is_pf)
            if v is None:
                return False
            victim, dest = v
            if self.exact:
                if dest != NP:
                    dest = self._victim_dest()
            elif dest != NP and self.forced_evict != UNKNOWN:
                dest = self.forced_evict
            self.process_evict(victim, dest)
        if self.loc[p] == HOST:
            self.host_used -= 1
            if self.forced_evict == SSD:
                self.forced_evict = UNKNOWN
        if self.log is not None:
            self.log.append((2, self.now, p, 1, self.loc[p]))
        self._alloc_gpu(p)
        self.loc[p] = GPU
        self.intr[p] = 0
        self.intr_set.discard(p)
        return True

    def process_fetch(self, p, src, is_pf) -> bool:
        if not self.process_alloc(p, is_pf):
            return False
        self._record_fetch(src)
        return True

    def batcher(self, now):
        c, q = self.c, self.q
        self._new_tick()
        busy = any(q.values())
        if busy:
            if self.exact:
                # a shared SSD with reads waiting: the writes first take at most half of it
                self.write_share = None
                if c.ssd_shared and (q["pf_ssd"] or q["pre_ssd"]):
                    self.write_share = self._seen_budget(self.bucket[RD]) // 2
                self._preevict_exact()
            else:
                self._artifact_preevict()
            # page-fault fetches: SSD, then host
            for name, src in (("pf_ssd", SSD), ("pf_cpu", HOST)):
                self._pf_fetch(q[name], src)
            # page-fault allocations
            self._alloc_queue(q["pf_alloc"], True)
            # prefetches: SSD then host
            self._prefetch()
            if self.exact and self.write_share is not None:
                # the reads have had their share: the writes take what they left
                self.write_share = None
                self._preevict_exact()
            # pre-allocations
            self._alloc_queue(q["prealloc"], False)
            if (self.eviction == EVICT_DEEPUM and self.resched is not None and not self.resched[2]
                    and self.intr_set and self.in_n + self.out_n == 0):
                self._pf_fetch(q["pre_ssd"], SSD)
                self._pf_fetch(q["pre_cpu"], HOST)
                self._alloc_queue(q["prealloc"], True)
            if not self.transferring:
                self.boundaries.append((self.iteration, now, True))
                self.transferring = True
        elif self.transferring:
            self.boundaries.append((self.iteration, now, False))
            self.transferring = False
        if self.in_n or self.out_n:
            self.pcie.append((self.iteration, now, self.alloc_n, self.in_ssd, self.in_cpu,
                              self.out_ssd, self.out_cpu))
        created = []
        if (self.resched is not None and not q["pf_alloc"] and not q["pf_cpu"]
                and not q["pf_ssd"] and not self.intr_set):
            created.append(("K", now, self.cur))
            self.resched[2] = True
            self.intr_set.clear()
        created.append(("B", now + c.tick_cycles, None))
        if self.exact:
            for b in self.cap:
                self.carry[b] = self.avail[b] - self.used[b]
        return created

    def _artifact_preevict(self):
        c, q = self.c, self.q
        if self.host_full():
            self.forced_evict = SSD
        # pre-evictions: SSD queue, then host queue
        while self.out_ssd < c.ssd_batch and self.out_n < c.gpu_batch and q["evict_ssd"]:
            p = q["evict_ssd"][0]
            self.process_evict(p, SSD if self.forced_evict == UNKNOWN else self.forced_evict)
            q["evict_ssd"].popleft()
        while (((self.host_full() and self.out_ssd < c.ssd_batch)
                or (not self.host_full() and self.out_cpu < c.host_batch))
               and self.out_n < c.gpu_batch and q["evict_cpu"]):
            p = q["evict_cpu"][0]
            self.process_evict(p, HOST if self.forced_evict == UNKNOWN else self.forced_evict)
            q["evict_cpu"].popleft()

    def _pf_fetch(self, queue, src):
        c = self.c
        while (self.in_n < c.gpu_batch and self.alloc_n < c.alloc_batch and self._room() and queue
               and (not self.exact or self._can_in(src))):
            p = queue.popleft()
            ok = self.process_fetch(p, src, True)
            assert ok
            if self.forced_fetch != UNKNOWN and self.forced_fetch != src:
                break

    def _alloc_queue(self, queue, is_pf):
        c = self.c
        while self._room() and self.alloc_n < c.alloc_batch and queue:
            if not self.process_alloc(queue[0], is_pf):
                break
            self.alloc_n += 1
            queue.popleft()

    def _prefetch(self):
        c, q = self.c, self.q
        while (self._can_in(SSD) and self.in_n < c.gpu_batch and self._room()
               and q["pre_ssd"]):
            p = q["pre_ssd"][0]
            if self.loc[p] == SSD:
                if not self.process_fetch(p, SSD, False):
                    return
            elif self.loc[p] == HOST:
                q["pre_cpu"].append(p)
            q["pre_ssd"].popleft()
        while (self._can_in(HOST) and self.in_n < c.gpu_batch and self._room()
               and q["pre_cpu"]):
            p = q["pre_cpu"][0]
            if self.loc[p] == HOST:
                if not self.process_fetch(p, HOST, False):
                    return
            elif self.loc[p] == SSD:
                q["pre_ssd"].append(p)
            q["pre_cpu"].popleft()

    # ---- kernel begin ---------------------------------------------------------
    def apply_hint(self, t, action):
        q = self.q
        if action == HINT_TO_GPU and self.exact:
            # pages of t still queued to leave never left the GPU: they stay
            for name in ("evict_ssd", "evict_cpu"):
                mine = [p for p in q[name] if self.tensor_of(p) == t]
                if mine:
                    for p in mine:
                        self.intr[p] = 0
                        self.intr_set.discard(p)
                    q[name] = type(q[name])(p for p in q[name] if self.tensor_of(p) != t)
        for p in self.pages(t):
            if self.intr[p]:
                continue
            l = self.loc[p]
            if action == HINT_TO_GPU:
                if l == NP:
                    q["prealloc"].append(p)
                elif l == SSD:
                    q["pre_ssd"].append(p)
                elif l == HOST:
                    q["pre_cpu"].append(p)
                else:
                    continue
                self.intr[p] = 1
            elif action in (HINT_TO_SSD, HINT_TO_HOST):
                if l == GPU:
                    q["evict_ssd" if action == HINT_TO_SSD else "evict_cpu"].append(p)
                    self.intr[p] = 1
            elif action == HINT_FREE:
                if l == GPU:
                    self._erase_gpu(p)
                elif l == HOST:
                    self.host_used -= 1
                self.loc[p] = NP

    def kernel_begin(self, now, k):
        if k != self.cur:
            self.cur = (self.cur + 1) % self.K
            if self.cur == 0:
                self.iteration += 1
        if self.iteration >= self.iterations:
            return None
        k = self.cur
        self.required = set(self.k_in[k]) | set(self.k_out[k])
        if self.eviction == EVICT_DEEPUM:
            self.running_window = set()
            for off in range(self.window):
                kk = (k + off) % self.K
                self.running_window |= set(self.k_in[kk]) | set(self.k_out[kk])
            self._deepum_initial_base()
        else:
            self._lru_initial_base()
        if self.apply_hints and self.hints:
            for _ in range(len(self.hints)):
                if self.hints[self.hint_idx][0] % self.K != k:
                    break
                _, t, a = self.hints[self.hint_idx]
                self.apply_hint(t, a)
                self.hint_idx = (self.hint_idx + 1) % len(self.hints)
        overtime = self.resched is not None and self.resched[0] + self.resched[1] <= now
        arrived = not (self.q["pf_cpu"] or self.q["pf_ssd"] or self.q["pf_alloc"])
        if arrived:
            for t in self.required:
                for p in self.pages(t):
                    if self.intr[p] or self.loc[p] != GPU:
                        arrived = False
                        break
                if not arrived:
                    break
        if not arrived:
            info = [0] * 9   # in_total, in_np, in_ssd, in_cpu, out_total, out_np, out_ssd, out_cpu, in_transfer
            for is_in, tensors in ((True, self.k_in[k]), (False, self.k_out[k])):
                base = 0 if is_in else 4
                for t in tensors:
                    info[base] += int(self.npages[t])
                    for p in self.pages(t):
                        if self.intr[p]:
                            info[8] += 1
                            continue
                        l = self.loc[p]
                        if l == NP:
                            info[base + 1] += 1
                            self.q["pf_alloc"].append(p)
                        elif l == SSD:
                            info[base + 2] += 1
                            self.q["pf_ssd"].append(p)
                        elif l == HOST:
                            info[base + 3] += 1
                            self.q["pf_cpu"].append(p)
                        else:
                            continue
                        self.intr[p] = 1
            for t in self.required:
                for p in self.pages(t):
                    if self.intr[p]:
                        self.intr_set.add(p)
            in_f = info[1] + info[2] + info[3]
            out_f = info[5] + info[6] + info[7]
            if self.physical is not None:
                pf_time = self.t11[k] + physical_fault_cycles(self.physical, info[0:4] + [0],
                                                              info[4:8] + [0])
            else:
                pf_time = self.t11[k] + fault_model_cycles(
                    self.c, int(self.t00[k]), int(self.t10[k]), int(self.t11[k]),
                    in_f, info[2], info[0], out_f, info[6], info[4], info[1], info[5])
            if self.resched is None:
                self.resched = [now, int(pf_time), False, []]
            assert not self.resched[2]
            self.resched[3].append(info)
            return []
        if self.resched is not None:
            end = max(self.resched[0] + self.resched[1], now)
            start = self.resched[0]
            infos = self.resched[3]
            self.resched = None
        else:
            start, end, infos = now, now + int(self.t11[k]), []
        self.kernels.append((self.iteration, k, start, end,
                             sum(i[8] for i in infos),
                             sum(i[3] + i[7] for i in infos),
                             sum(i[2] + i[6] for i in infos),
                             sum(i[1] + i[5] for i in infos),
                             self.host_used, self.c.gpu_pages - self.gpu_free))
        self.intr_set.clear()
        return [("K", end, (k + 1) % self.K)]

    # ---- main loop --------------------------------------------------------------
    def run(self):
        heap, seq = [], 0

        def push(ev):
            nonlocal seq
            heapq.heappush(heap, (ev[1], seq, ev[0], ev[2]))
            seq += 1

        push(("K", 0, 0))
        push(("B", 0, None))
        ticks = 0
        while heap:
            now, _, kind, arg = heapq.heappop(heap)
            self.now = now
            if kind == "K":
                created = self.kernel_begin(now, arg)
                if created is None or (self.max_kernels and len(self.kernels) >= self.max_kernels):
                    break
            else:
                created = self.batcher(now)
                ticks += 1
                if ticks > self.max_ticks:
                    raise RuntimeError(f"no progress after {ticks} transfer ticks (kernel {self.cur})")
            for ev in created:
                push(ev)
        return summarize(self.K, self.t11, self.t00, self.kernels, self.pcie, self.boundaries,
                         self.iterations, self.host_overflow)
