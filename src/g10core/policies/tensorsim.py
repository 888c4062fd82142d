"""Tensor-level event simulator (FlashNeuron, G10-GDS, G10-Host).

The baselines that move whole tensors (GPUDirect-style, no UVM) are simulated at
tensor granularity: a kernel may start only when every tensor it touches has
contiguous GPU pages and none of them is still being fetched; transfers run one
tensor at a time in a FIFO per direction and tier (GPU->SSD, SSD->GPU,
GPU->host, host->GPU), each taking ``size / bandwidth``.  GPU memory is handed
out by one of two allocators (``TensorSimSpec.allocator``):

* ``extents``: a contiguous page space handed out first-fit (from the low end for
  tensors that stay, from the high end for tensors that will move), so
  fragmentation is modelled.  FlashNeuron manages its own pool this way (its
  fragmentation is real), and so does the published simulator for G10-GDS and
  G10-Host (``scheduler.artifact_quirks``, the ``g10-artifact`` preset).
* ``pages``: a pool of free pages (:class:`PageAllocator`).  G10-GDS and G10-Host run
  on a GPU with virtual memory, where a tensor needs free pages, not physically
  contiguous ones; this is their allocator under the other presets.

One iteration is simulated, by default with every global tensor resident at the start.
Given ``initial_tier`` (a placement per tensor: GPU, host, SSD or not present) it starts
from that placement instead and ends where it started: the steady state of repeated
iterations, with the moves back after the last kernel counted (``restore_bytes``).

Two modes, which differ in where the transfers come from:

``"flashneuron"`` (FlashNeuron, Bae et al., FAST 2021)
    The hints are FlashNeuron's offloads (``HINT_TO_SSD`` only), applied in the
    forward pass (hints at or after ``backward_start_kernel`` are ignored).
    The first backward kernel waits until every offload has finished; from
    then on, after each kernel, the simulator prefetches the offloaded tensors
    of the following kernels in order while the largest free extent minus the
    largest per-kernel working set still holds them.  Write-only tensors
    (workspaces) share one region, reserved at the start, of the size of the
    largest of them.

``"gds"`` (G10's schedule over GPUDirect storage; G10-GDS and G10-Host)
    The hints are G10's schedule: ``HINT_TO_SSD`` / ``HINT_TO_HOST`` queue a
    pre-eviction, ``HINT_TO_GPU`` queues a prefetch that is allocated (from the
    high end) as soon as a large enough extent is free.  A tensor that was
    evicted and is needed before any prefetch brought it back is fetched on
    demand.  ``HINT_FREE`` drops a tensor's pages at once (G10's schedule for
    these baselines never emits it).  Dead tensors are freed after their last
    kernel.

Time is integer GPU cycles.  The published simulator (``FlashNeuron_simulator``
in platformxlab/G10 ``src/vitality.cc``) works in double milliseconds; a
transfer here is rounded up to whole cycles, which moves an iteration by well
under a microsecond per transfer.  Its corners that change the published
numbers are reproduced when ``config.scheduler.artifact_quirks`` is set; each
is named where it is applied (search for "quirk").

A run that cannot place a tensor (no extent large enough and nothing left in
flight that would free one) stops and returns ``failed=True`` with the reason;
it never raises for a trace that does not fit.

The result is a plain dict, with the same keys whether the run finished or not:
``time_s`` (iteration time; ``inf`` when failed), ``failed``, ``failure_reason``,
``failed_at_kernel`` (-1 unless the simulation stopped), ``ideal_time_s`` (sum of
t11), ``time_cycles``, ``breakdown_s`` {``compute``, ``overlap``, ``stall``} (the
published definitions: stall = time - ideal, overlap = transfer-busy time -
stall, compute = ideal - overlap), ``transfer_busy_s`` (time during which some
transfer is in flight), ``traffic_bytes`` {``gpu_to_ssd``, ``ssd_to_gpu``,
``gpu_to_host``, ``host_to_gpu``}, per-kernel arrays ``kernel_start_s``,
``kernel_time_s`` (end - start) and ``kernel_stall_normalized`` ((end - start -
t11) / t11), and the counters ``n_transfers``, ``n_on_demand_fetches``,
``peak_gpu_bytes``, ``gpu_capacity_bytes``, ``leaked_bytes``, ``mode``,
``visit_order``, ``iterations`` (1), ``steady_state`` (a placement was given), ``initial_tier_bytes`` (bytes of global tensors per
tier at the start), ``restore_bytes`` and ``restore_transfers`` (moved after the last kernel
to restore the start placement; 0 without ``initial_tier``), and with recompute hints
``recompute`` {``tensors``, ``kernels``, ``hints``, ``ideal_s``, ``time_s``}: tensors
regenerated, recompute kernels run, recompute rows, their ideal and simulated time.

``HINT_RECOMPUTE`` (gds mode): the trace is expanded with a copy of each producer before the
kernel that asks for it (:mod:`g10core.workload.recompute`); the per-kernel arrays are folded
back (a copy's time is charged to that kernel) and the ideal time stays the trace's, so the
recompute time is stall.
"""
from __future__ import annotations

import csv
import functools
import heapq
import math
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass
from importlib import resources

import numpy as np

from ..workload import vitality
from ..workload.vitality import kernel_cycles
from ..codes import (ACTION_NAMES, HINT_DTYPE, HINT_FREE, HINT_RECOMPUTE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD,
                     TIER_GPU, TIER_HOST, TIER_NAMES, TIER_NOT_PRESENT, TIER_SSD)
from ..workload import recompute as _recompute
from ..errors import TensorSimError  # noqa: F401 (defined in errors.py; importable from here)
from ..workload.trace import Trace

GiB = 1 << 30
MODES = ("flashneuron", "gds")
# How a kernel's tensors are walked (allocated, waited for, prefetched), which
# decides placement and so fragmentation:
#   "artifact": the order of the published simulator (see libstdcxx_set_order and
#               artifact_tensor_addresses);
#   "access":   the trace's order (inputs as listed, then new outputs);
#   "reverse":  last access first.
# FlashNeuron is sensitive to it: BERT-256 takes 10.216 s ("artifact",
# "reverse") or 9.927 s ("access"); Inceptionv3-1536 fails in "artifact" and
# "access" order and fits in "reverse".  Default: "artifact" with
# scheduler.artifact_quirks, "access" without.
VISIT_ORDERS = ("artifact", "access", "reverse")

# Queue indices (one FIFO per direction and tier).
GPU_TO_SSD, SSD_TO_GPU, GPU_TO_HOST, HOST_TO_GPU = range(4)
QUEUE_NAMES = ("gpu_to_ssd", "ssd_to_gpu", "gpu_to_host", "host_to_gpu")
_SAME_DIRECTION = (GPU_TO_HOST, HOST_TO_GPU, GPU_TO_SSD, SSD_TO_GPU)   # the other tier's queue
_KERNEL_EVENT = 4


# ---- contiguous page allocator ------------------------------------------------

class _Pool:
    """What both allocators share: ``capacity_pages`` (validated), ``used_pages`` and ``free_pages``."""

    __slots__ = ("capacity_pages", "used_pages")

    def __init__(self, capacity_pages: int):
        if capacity_pages <= 0:
            raise ValueError(f"capacity_pages = {capacity_pages}: must be > 0")
        self.capacity_pages = int(capacity_pages)
        self.used_pages = 0

    @property
    def free_pages(self) -> int:
        return self.capacity_pages - self.used_pages


class ExtentAllocator(_Pool):
    """First-fit allocator of contiguous pages in ``[0, capacity_pages)``.

    Free space is a sorted list of disjoint, non-adjacent extents, so every
    operation costs O(number of free extents), never O(pages).
    ``alloc_low`` takes the lowest extent that is large enough and allocates at
    its low end; ``alloc_high`` takes the highest one and allocates at its high
    end.  ``free`` merges with the neighbours.
    """

    __slots__ = ("_starts", "_lengths")

    def __init__(self, capacity_pages: int):
        super().__init__(capacity_pages)
        self._starts = [0]
        self._lengths = [self.capacity_pages]

    @property
    def n_free_extents(self) -> int:
        return len(self._starts)

    def free_extents(self) -> list[tuple[int, int]]:
        """(start, length) of every free extent, by address."""
        return list(zip(self._starts, self._lengths))

    def largest_free(self) -> int:
        return max(self._lengths, default=0)

    def alloc_low(self, n_pages: int) -> int:
        """First page of ``n_pages`` taken from the lowest fitting extent, or -1."""
        lengths = self._lengths
        for i in range(len(lengths)):
            if lengths[i] >= n_pages:
                start = self._starts[i]
                if lengths[i] == n_pages:
                    del self._starts[i], lengths[i]
                else:
                    self._starts[i] = start + n_pages
                    lengths[i] -= n_pages
                self.used_pages += n_pages
                return start
        return -1

    def alloc_high(self, n_pages: int) -> int:
        """First page of ``n_pages`` taken from the top of the highest fitting extent, or -1."""
        lengths = self._lengths
        for i in range(len(lengths) - 1, -1, -1):
            if lengths[i] >= n_pages:
                lengths[i] -= n_pages
                start = self._starts[i] + lengths[i]
                if lengths[i] == 0:
                    del self._starts[i], lengths[i]
                self.used_pages += n_pages
                return start
        return -1

    def free(self, start: int, n_pages: int) -> None:
        """Return ``[start, start + n_pages)``, which must be allocated."""
        starts, lengths = self._starts, self._lengths
        i = bisect_left(starts, start)
        end = start + n_pages
        if (i < len(starts) and starts[i] < end) or (i > 0 and starts[i - 1] + lengths[i - 1] > start) \
                or start < 0 or end > self.capacity_pages:
            raise ValueError(f"free({start}, {n_pages}): range is not allocated")
        merge_left = i > 0 and starts[i - 1] + lengths[i - 1] == start
        merge_right = i < len(starts) and starts[i] == end
        if merge_left and merge_right:
            lengths[i - 1] += n_pages + lengths[i]
            del starts[i], lengths[i]
        elif merge_left:
            lengths[i - 1] += n_pages
        elif merge_right:
            starts[i] = start
            lengths[i] += n_pages
        else:
            starts.insert(i, start)
            lengths.insert(i, n_pages)
        self.used_pages -= n_pages


class PageAllocator(_Pool):
    """A pool of free pages: any ``n_pages`` free pages make room, wherever they lie.

    The same interface as :class:`ExtentAllocator` (a GPU with virtual memory maps a tensor's
    pages where frames are free, so it never fragments).  The "start" it returns is a token that
    ``free`` takes back, not an address.
    """

    __slots__ = ("_next_token",)

    def __init__(self, capacity_pages: int):
        super().__init__(capacity_pages)
        self._next_token = 0

    @property
    def n_free_extents(self) -> int:
        return 1 if self.free_pages else 0

    def free_extents(self) -> list[tuple[int, int]]:
        return [(0, self.free_pages)] if self.free_pages else []

    def largest_free(self) -> int:
        return self.free_pages

    def alloc_low(self, n_pages: int) -> int:
        if n_pages > self.free_pages:
            return -1
        self.used_pages += n_pages
        self._next_token += 1
        return self._next_token - 1

    alloc_high = alloc_low

    def free(self, start: int, n_pages: int) -> None:
        if not 0 <= start < self._next_token or n_pages > self.used_pages:
            raise ValueError(f"free({start}, {n_pages}): not allocated")
        self.used_pages -= n_pages


ALLOCATORS = {"extents": ExtentAllocator, "pages": PageAllocator}


# ---- spec -------------------------------------------------------------------

@dataclass(frozen=True)
class TensorSimSpec:
    """Everything the tensor-level simulator needs, resolved to its units."""

    mode: str                        # "flashneuron" or "gds"
    capacity_pages: int              # GPU pages the allocator hands out
    page_size_bytes: int
    frequency_GHz: float             # cycles per ns
    ssd_bandwidth_Bps: float         # GPU<->SSD, each direction
    host_bandwidth_Bps: float        # GPU<->host, each direction (0: no host path)
    backward_start_kernel: int = -1  # flashneuron: first backward kernel (makeLoss); -1 none
    artifact_quirks: bool = True
    visit_order: str = "artifact"    # order of a kernel's tensors: one of VISIT_ORDERS
    # > 0: the SSD and host paths of one direction share a link of this bandwidth, max-min fair,
    # decided when a transfer starts; 0: the published static split (host gets what the
    # SSD stream leaves of the link, host_bandwidth_Bps, all the time)
    link_bandwidth_Bps: float = 0.0
    allocator: str = "extents"       # GPU memory: one of ALLOCATORS (see the module docstring)

    def check(self) -> "TensorSimSpec":
        if self.allocator not in ALLOCATORS:
            raise TensorSimError(f"allocator = {self.allocator!r}: must be one of {', '.join(ALLOCATORS)}")
        if self.mode not in MODES:
            raise TensorSimError(f"mode = {self.mode!r}: must be one of {', '.join(MODES)}")
        if self.visit_order not in VISIT_ORDERS:
            raise TensorSimError(f"visit_order = {self.visit_order!r}: must be one of {', '.join(VISIT_ORDERS)}")
        if self.capacity_pages <= 0:
            raise TensorSimError(f"capacity_pages = {self.capacity_pages}: must be > 0")
        for name in ("page_size_bytes", "frequency_GHz", "ssd_bandwidth_Bps"):
            if not getattr(self, name) > 0:
                raise TensorSimError(f"{name} = {getattr(self, name)}: must be > 0")
        if not self.host_bandwidth_Bps >= 0:
            raise TensorSimError(f"host_bandwidth_Bps = {self.host_bandwidth_Bps}: must be >= 0")
        return self

    @classmethod
    def from_config(cls, config, mode: str, *, backward_start_kernel: int = -1,
                    visit_order: str | None = None) -> "TensorSimSpec":
        """Resolve a :class:`~g10core.config.SimConfig` for one mode (``visit_order`` None: the default)."""
        quirks = bool(config.scheduler.artifact_quirks)
        if visit_order is None:
            visit_order = default_visit_order(config)
        gpu = config.gpu
        # quirk: the published tensor-level simulator reads "GB/s" as 2^30 B/s
        # (its page-level simulator reads it as 1e9 B/s).
        gb = float(GiB) if quirks else 1e9
        ssd_GBps = config.ssd.bandwidth_GBps
        if not quirks:
            # SSD traffic to the GPU crosses the GPU's link too (the published simulator lets the
            # SSD stream run faster than the link)
            ssd_GBps = min(ssd_GBps, config.link.bandwidth_GBps)
        ssd_Bps = ssd_GBps * gb
        link_Bps = 0.0
        if quirks:
            # The host path gets what the GPU's link leaves beside the SSD stream, whether or not
            # the SSD is busy (the published simulator: CPU_PCIe_bandwidth - SSD_PCIe_bandwidth):
            # a faster SSD slows every host transfer down.
            host_GBps = min(config.host.bandwidth_GBps, config.link.bandwidth_GBps) - ssd_GBps
        else:
            # The host path runs at min(host, link) and shares the link with the SSD stream only
            # while both move data in the same direction (see _duration).
            host_GBps = min(config.host.bandwidth_GBps, config.link.bandwidth_GBps)
            link_Bps = config.link.bandwidth_GBps * gb
        host_Bps = max(host_GBps, 0.0) * gb
        pages = int(gpu.memory_GiB * GiB) // gpu.page_size_bytes
        if mode == "gds" and quirks:
            # quirk: the published GDS baselines size their allocator at 4x the
            # GPU; only the scheduler's target line limits memory
            # (policies.g10_tensor.gds_capacity_quirk reports it).
            pages *= 4
        # G10-GDS and G10-Host allocate on a GPU with virtual memory; the published simulator
        # (quirks) hands them contiguous extents, and FlashNeuron manages its own pool that way
        allocator = "pages" if mode == "gds" and not quirks else "extents"
        return cls(mode=mode, capacity_pages=pages, allocator=allocator, page_size_bytes=gpu.page_size_bytes,
                   frequency_GHz=gpu.frequency_GHz, ssd_bandwidth_Bps=ssd_Bps,
                   host_bandwidth_Bps=host_Bps, backward_start_kernel=int(backward_start_kernel),
                   artifact_quirks=quirks, visit_order=visit_order, link_bandwidth_Bps=link_Bps).check()


# ---- trace-derived tables ---------------------------------------------------

def liveness(trace: Trace, frequency_GHz: float = 1.2) -> tuple[np.ndarray, np.ndarray]:
    """(birth, death) per tensor, as :func:`g10core.workload.vitality.analyze` defines them (int64)."""
    vit = vitality.analyze(trace, frequency_GHz)
    return vit.birth.astype(np.int64), vit.death.astype(np.int64)


# libstdc++'s bucket counts: _Prime_rehash_policy's table for small requests,
# then the start of its prime list (kernels never hold more tensors than that).
_FAST_BUCKETS = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)
_PRIME_BUCKETS = (17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 103, 109,
                  113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313,
                  337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953, 1031)


def libstdcxx_set_order(keys: list[int], address=None) -> list[int]:
    """Iteration order of a libstdc++ ``std::unordered_set`` after inserting ``keys`` in order.

    The published simulator walks a kernel's tensors as a pointer-keyed
    ``unordered_set`` filled with its inputs, then its outputs.  libstdc++
    (GCC >= 5, max load factor 1) starts at 13 buckets, puts a new node at the
    head of its bucket's run (at the list's head when the bucket is empty) and
    rehashes at 14 elements.  The order depends on the keys only through which
    of them share a bucket, i.e. on the differences of their addresses.
    ``address[key]`` is the key's address (any origin); None hashes the keys
    themselves, which is right when the objects lie in key order at a stride
    prime to every bucket count.
    """
    n_buckets, next_resize = 1, 0
    nodes: list[int] = []
    where = (lambda key: key) if address is None else address.__getitem__

    def insert(lst, key, nb):
        b = where(key) % nb
        for i, other in enumerate(lst):   # bucket runs are contiguous: join at the run's head
            if where(other) % nb == b:
                lst.insert(i, key)
                return
        lst.insert(0, key)

    for key in dict.fromkeys(keys):
        n = len(nodes)
        if n + 1 > next_resize:
            want = max(n + 1, 0 if next_resize else 11)
            if want >= n_buckets:
                req = max(want + 1, 2 * n_buckets)
                n_buckets = (_FAST_BUCKETS[req] if req < len(_FAST_BUCKETS)
                             else next((p for p in _PRIME_BUCKETS if p >= req), req | 1))
                next_resize = n_buckets
                rehashed: list[int] = []
                for other in nodes:
                    insert(rehashed, other, n_buckets)
                nodes = rehashed
            else:
                next_resize = n_buckets
        insert(nodes, key, n_buckets)
    return nodes


# Where the published simulator's Tensor objects lie (data/artifact_tensor_layout.csv, the CNNs;
# made by tools/artifact_tensor_layout.py, which says how they were measured and why BERT and
# ViT are not in it): one Tensor object takes 112 bytes, but the front end's other allocations
# (its tensor list's growth, small vectors, freed blocks that later tensors reuse) break the
# stride, so which tensors of a kernel share a hash bucket is not a function of their ids alone
# (SENet154-1024: 96 of its 2319 kernels are walked in another order).
_TENSOR_OBJECT_BYTES = 112


@functools.lru_cache(maxsize=None)
def _artifact_layouts() -> dict:
    table: dict[str, list[tuple[int, int, int]]] = {}
    with resources.files("g10core.policies").joinpath("data", "artifact_tensor_layout.csv").open("r", newline="") as fh:
        for row in csv.DictReader(fh):
            table.setdefault(row["model"], []).append(
                (int(row["first_tensor"]), int(row["last_tensor"]), int(row["offset_bytes"])))
    return table


def artifact_tensor_addresses(model: str, n_tensors: int) -> list[int] | None:
    """Byte offset of each of the published simulator's Tensor objects from tensor 0's, by tensor id.

    None when the layout of ``model`` was not measured or covers fewer than ``n_tensors``
    tensors (a trace that is not one of the artifact's): the objects are then taken to lie
    at a fixed stride.
    """
    runs = _artifact_layouts().get(model)
    if not runs or runs[-1][1] + 1 < n_tensors:
        return None
    out = []
    for first, last, offset in runs:
        out.extend(range(offset, offset + _TENSOR_OBJECT_BYTES * (last - first + 1), _TENSOR_OBJECT_BYTES))
    return out[:n_tensors]


def visit_lists(trace: Trace, visit_order: str) -> list[list[int]]:
    """Per kernel, its distinct tensors in the order the simulator walks them."""
    lists = kernel_tensor_lists(trace)
    if visit_order == "artifact":
        address = artifact_tensor_addresses(str(trace.model), trace.n_tensors)
        return [libstdcxx_set_order(ts, address) for ts in lists]
    if visit_order == "reverse":
        return [ts[::-1] for ts in lists]
    if visit_order == "access":
        return lists
    raise TensorSimError(f"visit_order = {visit_order!r}: must be one of {', '.join(VISIT_ORDERS)}")


def kernel_tensor_lists(trace: Trace) -> list[list[int]]:
    """Per kernel, its distinct tensors in access order (inputs, then new outputs)."""
    off = trace.access_offsets
    acc = trace.access_tensor.tolist()
    out = []
    for k in range(trace.n_kernels):
        seen = dict.fromkeys(acc[off[k]:off[k + 1]])
        out.append(list(seen))
    return out


def max_working_set_pages(trace: Trace, page_size_bytes: int, *, include_globals: bool = True) -> int:
    """Largest number of pages one kernel touches (each tensor once)."""
    pages = (trace.tensor_size_bytes + page_size_bytes - 1) // page_size_bytes
    if not include_globals:
        pages = np.where(trace.tensor_is_global, 0, pages)
    # the trace's accesses hold each tensor at most once per kernel
    csum = np.concatenate(([0], np.cumsum(pages[trace.access_tensor])))
    off = trace.access_offsets
    sums = csum[off[1:]] - csum[off[:-1]]
    return int(sums.max()) if sums.size else 0


# ---- validation -------------------------------------------------------------

def check_hints(trace: Trace, hints: np.ndarray, mode: str) -> np.ndarray:
    """Validate a hint table against the trace; return it stably sorted by kernel.

    A hint at kernel ``K`` (after the last kernel: it would run at the start of
    the next iteration) is accepted and dropped, since one iteration is simulated.
    """
    hints = np.asarray(hints)
    if hints.dtype != HINT_DTYPE:
        raise TensorSimError(f"hints: dtype {hints.dtype}, expected HINT_DTYPE {HINT_DTYPE}")
    if hints.ndim != 1:
        raise TensorSimError(f"hints: expected a 1-d table, got shape {hints.shape}")
    K, T = trace.n_kernels, trace.n_tensors
    for field, hi in (("kernel", K + 1), ("tensor", T)):
        bad = np.flatnonzero((hints[field] < 0) | (hints[field] >= hi))
        if bad.size:
            r = int(bad[0])
            raise TensorSimError(f"hints row {r}: {field} {int(hints[field][r])} out of range [0, {hi})")
    allowed = (HINT_TO_SSD,) if mode == "flashneuron" else (HINT_TO_GPU, HINT_TO_SSD, HINT_TO_HOST, HINT_FREE,
                                                            HINT_RECOMPUTE)
    bad = np.flatnonzero(~np.isin(hints["action"], allowed))
    if bad.size:
        r = int(bad[0])
        names = ", ".join(ACTION_NAMES[a] for a in allowed)
        raise TensorSimError(f"hints row {r}: action {int(hints['action'][r])} not allowed in mode "
                             f"{mode!r} (allowed: {names})")
    if mode == "flashneuron":
        glob = np.flatnonzero(trace.tensor_is_global[hints["tensor"]])
        if glob.size:
            r = int(glob[0])
            raise TensorSimError(f"hints row {r}: FlashNeuron offloads activations only; "
                                 f"tensor {int(hints['tensor'][r])} is global")
    hints = hints[hints["kernel"] < K]
    return hints[np.argsort(hints["kernel"], kind="stable")]


# ---- the simulator ----------------------------------------------------------

class _CannotFit(Exception):
    """Internal: a tensor cannot be placed and nothing in flight will free room."""


class TensorLevelSimulator:
    """One iteration of a trace at tensor granularity; see the module docstring.

    Build it with a validated trace, spec and sorted hint table, then call
    :meth:`run` once.  Tests may drive the pieces directly.
    """

    def __init__(self, trace: Trace, spec: TensorSimSpec, hints: np.ndarray, initial_tier=None,
                 expansion=None):
        # recompute: the simulator runs the expanded trace (workload.recompute) and folds the
        # copies back into the kernels they were inserted before when it reports
        self.expansion = expansion
        if expansion is not None:
            trace, hints = expansion.trace, expansion.hints
        self.trace = trace
        self.spec = spec
        self.hints = hints
        K, T = trace.n_kernels, trace.n_tensors
        # steady state: the iteration starts from initial_tier and ends where it started
        self.steady = initial_tier is not None
        self.initial_tier = (np.asarray(initial_tier).astype(np.int64).tolist() if self.steady
                             else [TIER_GPU if g else TIER_NOT_PRESENT for g in trace.tensor_is_global.tolist()])
        self.start_off = [False] * T      # its data is off the GPU since the start: fetch when first placed
        self.absent = [False] * T         # no copy anywhere (a global that starts not present, or freed)
        self.restore_bytes = 0
        self.restore_transfers = 0
        page = spec.page_size_bytes
        pages = (trace.tensor_size_bytes + page - 1) // page
        self.pages = pages.tolist()
        self.size_bytes = (pages * page).tolist()     # tensors occupy and move whole pages
        self.is_global = trace.tensor_is_global.tolist()
        birth, death = liveness(trace, spec.frequency_GHz)
        self.birth = birth.tolist()
        self.death = death.tolist()
        self.kernel_cycles = kernel_cycles(trace, spec.frequency_GHz).tolist()
        self.required = visit_lists(trace, spec.visit_order)   # see VISIT_ORDERS
        # bandwidth of each queue, bytes per second
        ssd, host = spec.ssd_bandwidth_Bps, spec.host_bandwidth_Bps
        self._hz = spec.frequency_GHz * 1e9
        self._queue_Bps = (ssd, ssd, host, host)

        self.alloc = ALLOCATORS[spec.allocator](spec.capacity_pages)
        self.extent = [-1] * T            # first GPU page, -1 when not allocated
        self.fetching = [False] * T       # a fetch into the GPU is queued or running
        self.waiting = [False] * T        # a prefetch waits for an extent (gds)
        self.in_host = [False] * T        # the tensor's copy is in host memory (gds)
        evicting = (hints["action"] == HINT_TO_SSD) | (hints["action"] == HINT_TO_HOST)
        hinted = set(hints["tensor"][evicting].tolist())
        self.will_move = [t in hinted for t in range(T)]   # gets a pre-eviction: allocate from the high end
        # FlashNeuron's backward prefetch walks, per kernel, the offloaded tensors
        # it needs; a kernel whose ones all live past it can be skipped once done
        self._moving = [[t for t in ts if self.will_move[t]] for ts in self.required]
        self._moving_stay = [all(self.death[t] > k for t in ts) for k, ts in enumerate(self._moving)]
        self._ahead = 0
        self._max_local_pages = max_working_set_pages(trace, page, include_globals=False)
        self.leaked_pages = 0

        self.now = 0
        self._events: list = []           # heap of (time, seq, kind)
        self._seq = 0
        self.queues = [deque() for _ in range(4)]
        self.traffic = [0, 0, 0, 0]       # bytes per queue
        self.busy_cycles = 0              # time during which some transfer is in flight
        self.n_transfers = 0
        self.n_on_demand_fetches = 0
        self.fetch_wait: deque = deque()  # gds: prefetches waiting for an extent
        self.peak_used_pages = 0

    # -- events and queues ------------------------------------------------
    def _push_event(self, time: int, kind: int) -> None:
        heapq.heappush(self._events, (time, self._seq, kind))
        self._seq += 1

    def _duration(self, queue: int, tensor: int) -> int:
        """Cycles to move a tensor, rounded up (the epsilon absorbs float noise in exact cases)."""
        Bps = self._queue_Bps[queue]
        link = self.spec.link_bandwidth_Bps
        if link > 0:
            other = _SAME_DIRECTION[queue]
            mine, theirs = Bps, self._queue_Bps[other]
            if self.queues[other] and mine + theirs > link:
                # max-min fair share of the link with the other tier's stream, fixed at the start
                Bps = min(mine, max(link / 2, link - theirs))
            else:
                Bps = min(mine, link)
        return math.ceil(self.size_bytes[tensor] * self._hz / Bps - 1e-6)

    def _enqueue(self, queue: int, tensor: int) -> None:
        q = self.queues[queue]
        q.append(tensor)
        self.traffic[queue] += self.size_bytes[tensor]
        self.n_transfers += 1
        if queue in (SSD_TO_GPU, HOST_TO_GPU):
            self.fetching[tensor] = True
            self.start_off[tensor] = False
        if len(q) == 1:
            self._push_event(self.now + self._duration(queue, tensor), queue)

    def _serve_one(self) -> int:
        """Advance to the earliest event and apply it; return its kind."""
        time, _, kind = heapq.heappop(self._events)
        if any(self.queues):
            self.busy_cycles += time - self.now
        self.now = time
        if kind == _KERNEL_EVENT:
            return kind
        q = self.queues[kind]
        tensor = q.popleft()
        if kind == GPU_TO_SSD or kind == GPU_TO_HOST:
            self._free(tensor)
            if kind == GPU_TO_HOST:
                self.in_host[tensor] = True
        else:
            self.fetching[tensor] = False
            if kind == HOST_TO_GPU:
                self.in_host[tensor] = False
        if q:
            self._push_event(self.now + self._duration(kind, q[0]), kind)
        return kind

    # -- memory -----------------------------------------------------------
    def _place(self, tensor: int, high: bool) -> bool:
        n = self.pages[tensor]
        start = self.alloc.alloc_high(n) if high else self.alloc.alloc_low(n)
        if start < 0:
            return False
        if self.extent[tensor] >= 0:
            # quirk (gds): a prefetch of a tensor that is still resident gets a
            # second extent; the first stays allocated until the end.
            self.leaked_pages += n
        self.extent[tensor] = start
        used = self.alloc.used_pages
        if used > self.peak_used_pages:
            self.peak_used_pages = used
        return True

    def _free(self, tensor: int) -> None:
        start = self.extent[tensor]
        if start >= 0:
            self.alloc.free(start, self.pages[tensor])
            self.extent[tensor] = -1

    def _place_or_wait(self, tensor: int, high: bool, kernel: int) -> None:
        """Allocate, letting events happen until room appears; raise _CannotFit when none will."""
        if self._place(tensor, high):
            return
        while self._events:
            self._serve_one()
            if self._place(tensor, high):
                if self.spec.mode == "gds":
                    self._start_waiting_prefetches()
                return
        raise _CannotFit(self._no_room_message(tensor, kernel))

    def _no_room_message(self, tensor: int, kernel: int) -> str:
        page = self.spec.page_size_bytes
        needs = f"cannot fit: kernel {kernel} ({self.trace.kernel_name[kernel]}) needs tensor {tensor} "
        if self.spec.allocator == "pages":
            return (needs + f"({self.pages[tensor] * page} B, {self.pages[tensor]} pages) but only "
                    f"{self.alloc.free_pages} pages are free of {self.alloc.capacity_pages} and no transfer "
                    "in flight would free more")
        why = (" (FlashNeuron allocates from its own first-fit pool, whose free space fragments)"
               if self.spec.mode == "flashneuron" else "")
        return (needs + f"({self.pages[tensor] * page} B, {self.pages[tensor]} contiguous pages) but the largest "
                f"free extent is {self.alloc.largest_free()} pages ({self.alloc.free_pages} pages free of "
                f"{self.alloc.capacity_pages}) and no transfer in flight would free more" + why)

    def _wait_fetched(self, tensor: int, kernel: int) -> None:
        gds = self.spec.mode == "gds"
        while self.fetching[tensor] and self._events:
            self._serve_one()
            if gds:
                self._start_waiting_prefetches()
        if self.fetching[tensor]:  # cannot happen: a queued fetch always has an event
            raise _CannotFit(f"internal: tensor {tensor} fetch never completes (kernel {kernel})")

    def _fetch_on_demand(self, tensor: int) -> None:
        self.n_on_demand_fetches += 1
        # quirk (gds): the published simulator fetches an evicted tensor on demand
        # over the SSD path even when its copy is in host memory.
        from_host = self.in_host[tensor] and not self.spec.artifact_quirks
        self._enqueue(HOST_TO_GPU if from_host else SSD_TO_GPU, tensor)

    # -- gds prefetches ---------------------------------------------------
    def _start_waiting_prefetches(self) -> None:
        """Give the waiting prefetches at the head of the queue an extent and start them."""
        quirks = self.spec.artifact_quirks
        wait = self.fetch_wait
        while wait:
            tensor = wait[0]
            if not quirks and self.extent[tensor] >= 0:
                if self._in_out_queue(tensor):
                    return                  # its eviction is still running; fetch after it
                wait.popleft()              # still resident: nothing to fetch
                self.waiting[tensor] = False
                continue
            if self.alloc.largest_free() < self.pages[tensor] or not self._place(tensor, True):
                return
            wait.popleft()
            self.waiting[tensor] = False
            if self.absent[tensor]:
                self.absent[tensor] = False     # nothing to fetch: the prefetch only allocates
                continue
            self._enqueue(HOST_TO_GPU if self.in_host[tensor] else SSD_TO_GPU, tensor)
            if quirks:
                # quirk: the published simulator starts at most one waiting
                # prefetch per event.
                return

    def _in_out_queue(self, tensor: int) -> bool:
        return tensor in self.queues[GPU_TO_SSD] or tensor in self.queues[GPU_TO_HOST]

    def _apply_hint(self, tensor: int, action: int) -> None:
        if action in (HINT_TO_SSD, HINT_TO_HOST) and not self.spec.artifact_quirks:
            if self.extent[tensor] < 0 or self._in_out_queue(tensor):
                return   # nothing resident to evict (quirk: the published simulator moves it anyway)
        if action == HINT_TO_SSD:
            self._enqueue(GPU_TO_SSD, tensor)
        elif action == HINT_TO_HOST:
            if self.spec.host_bandwidth_Bps <= 0:
                self._enqueue(GPU_TO_SSD, tensor)   # no host path: the eviction goes to SSD
                return
            self._enqueue(GPU_TO_HOST, tensor)
            # the published simulator marks the tensor host-resident when the eviction is queued
            self.in_host[tensor] = True
        elif action == HINT_TO_GPU:
            if self.extent[tensor] >= 0 and self.is_global[tensor]:
                return
            if self.waiting[tensor] and not self.spec.artifact_quirks:
                return
            # quirk: the published simulator queues a second prefetch of a tensor
            # that already waits for one.
            self.fetch_wait.append(tensor)
            self.waiting[tensor] = True
            self._start_waiting_prefetches()
        elif action == HINT_FREE:
            # dropped: its data is gone, so its next use allocates it without a fetch
            self._free(tensor)
            self.absent[tensor] = True
            self.in_host[tensor] = False

    # -- main loop ------------------------------------------------------------
    def run(self) -> dict:
        spec, K = self.spec, self.trace.n_kernels
        fn = spec.mode == "flashneuron"
        gds = not fn
        start = [0] * K
        finish = [0] * K
        failure = None
        hint_k = self.hints["kernel"].tolist()
        hint_t = self.hints["tensor"].tolist()
        hint_a = self.hints["action"].tolist()
        h = 0
        kernel = 0
        try:
            self._initial_placement()
            backward = False
            for kernel in range(K):
                if fn and kernel == spec.backward_start_kernel:
                    backward = True
                start[kernel] = self.now
                if backward:
                    # FlashNeuron: the backward pass begins when every offload is done
                    while self.queues[GPU_TO_SSD]:
                        self._serve_one()
                while h < len(hint_k) and hint_k[h] == kernel:
                    if gds or not backward:
                        self._apply_hint(hint_t[h], hint_a[h])
                    h += 1
                for tensor in self.required[kernel]:
                    if fn:
                        self._prepare_fn(tensor, kernel)
                    else:
                        self._prepare_gds(tensor, kernel)
                self._push_event(self.now + self.kernel_cycles[kernel], _KERNEL_EVENT)
                while self._serve_one() != _KERNEL_EVENT:
                    if gds:
                        self._start_waiting_prefetches()
                if gds:
                    self._start_waiting_prefetches()
                self._release_dead(kernel)
                if fn and backward:
                    self._prefetch_ahead(kernel)
                finish[kernel] = self.now
            if not spec.artifact_quirks or self.steady:
                # The iteration is over when its transfers are: the published simulator stops at
                # the last kernel, so evictions still queued there cost nothing (with its 4x
                # allocator a 200 % trace "moves" 11 GiB in a 0.05 s iteration).
                while self._events:
                    self._serve_one()
                if self.steady:
                    self._restore_placement(K - 1)
                finish[K - 1] = self.now      # the last kernel's step ends when the link is idle
        except _CannotFit as exc:
            failure = str(exc)
        return self._result(start, finish, kernel, failure)

    def _initial_placement(self) -> None:
        T = self.trace.n_tensors
        glob = self.is_global
        tier = self.initial_tier
        for t in range(T):
            if not glob[t]:
                continue
            if tier[t] == TIER_GPU:
                # gds: globals that will be evicted go to the high end
                if not self._place(t, high=self.will_move[t] and self.spec.mode == "gds"):
                    need = sum(self.pages[u] for u in range(T) if glob[u] and tier[u] == TIER_GPU)
                    where = " placed on the GPU at the start" if self.steady else ""
                    raise _CannotFit(f"cannot fit: the global tensors{where} need {need} pages, "
                                     f"the GPU has {self.alloc.capacity_pages}")
            elif tier[t] == TIER_NOT_PRESENT:
                self.absent[t] = True
            else:
                self.start_off[t] = True
                self.in_host[t] = tier[t] == TIER_HOST
        if self.spec.mode == "flashneuron":
            # one region, as large as the largest write-only tensor, serves all of them
            wo = [t for t in range(T) if not glob[t] and self.death[t] == -1]
            if wo:
                largest = max(wo, key=lambda t: (self.pages[t], -t))
                if not self._place(largest, high=False):
                    raise _CannotFit(f"cannot fit: no room for the workspace region ({self.pages[largest]} pages) "
                                     f"after the global tensors")

    def _tier_now(self, tensor: int) -> int:
        """Where a tensor's data is once no transfer is in flight."""
        if self.extent[tensor] >= 0:
            return TIER_GPU
        if self.absent[tensor]:
            return TIER_NOT_PRESENT
        return TIER_HOST if self.in_host[tensor] else TIER_SSD

    def _drain(self) -> None:
        while self._events:
            self._serve_one()

    def _restore_placement(self, kernel: int) -> None:
        """Steady state: move every global back to the tier it started the iteration in.

        Runs after the last kernel, once the queues are idle; its transfers count in the
        iteration's time.  Evictions are queued first (they free the room that fetches need);
        a tensor that ends in the other off-GPU tier than it started in goes back through the
        GPU (a fetch, then an eviction), as the tensor-level simulator has no host<->SSD path; a
        tensor with no copy (freed) is put back at no cost.
        """
        start_bytes, start_n = sum(self.traffic), self.n_transfers
        through_gpu, fetch = [], []
        for t in range(self.trace.n_tensors):
            want = self.initial_tier[t]
            if not self.is_global[t] or want == (now := self._tier_now(t)):
                continue
            if want == TIER_NOT_PRESENT:
                self._free(t)
                self.in_host[t] = False
                self.absent[t] = True
            elif now == TIER_NOT_PRESENT:
                if want == TIER_GPU:
                    self._place_or_wait(t, True, kernel)
                else:
                    self.in_host[t] = want == TIER_HOST
                self.absent[t] = False
            elif now == TIER_GPU:
                self._evict_to(t, want)
            else:
                fetch.append(t)
                if want != TIER_GPU:
                    through_gpu.append(t)
        for t in fetch:
            self._place_or_wait(t, True, kernel)
            self._enqueue(HOST_TO_GPU if self.in_host[t] else SSD_TO_GPU, t)
        self._drain()
        for t in through_gpu:
            self._evict_to(t, self.initial_tier[t])
        self._drain()
        self.restore_bytes = sum(self.traffic) - start_bytes
        self.restore_transfers = self.n_transfers - start_n

    def _evict_to(self, tensor: int, tier: int) -> None:
        if tier == TIER_HOST:
            self._enqueue(GPU_TO_HOST, tensor)
            self.in_host[tensor] = True
        else:
            self._enqueue(GPU_TO_SSD, tensor)
            self.in_host[tensor] = False

    def _prepare_fn(self, tensor: int, kernel: int) -> None:
        if self.is_global[tensor] or self.death[tensor] == -1:
            return   # resident from the start / served by the workspace region
        if self.extent[tensor] < 0:
            if self.will_move[tensor]:
                self._place_or_wait(tensor, True, kernel)
                if self.birth[tensor] != kernel:   # offloaded earlier: fetch it back now
                    self._fetch_on_demand(tensor)
                    self._wait_fetched(tensor, kernel)
            else:
                self._place_or_wait(tensor, False, kernel)
        elif self.fetching[tensor]:
            self._wait_fetched(tensor, kernel)

    def _prepare_gds(self, tensor: int, kernel: int) -> None:
        if self.extent[tensor] < 0:
            if self.waiting[tensor]:
                self._start_waiting_prefetches()
                while self.extent[tensor] < 0 and self._events:
                    self._serve_one()
                    self._start_waiting_prefetches()
                if self.extent[tensor] < 0:
                    raise _CannotFit(self._no_room_message(tensor, kernel))
                if not self.spec.artifact_quirks:
                    self._wait_fetched(tensor, kernel)
                # quirk: the published simulator starts the kernel as soon as the
                # waiting prefetch has an extent, without waiting for its data.
            elif self.start_off[tensor] or self.absent[tensor]:
                self._place_or_wait(tensor, True, kernel)
                if self.absent[tensor]:
                    self.absent[tensor] = False     # no data yet: allocating is all
                else:
                    self._fetch_on_demand(tensor)
                    self._wait_fetched(tensor, kernel)
            elif self.will_move[tensor]:
                self._place_or_wait(tensor, True, kernel)
                # quirk: the published simulator re-allocates an evicted global
                # that no prefetch brought back without fetching its data.
                refetch = not self.is_global[tensor] or not self.spec.artifact_quirks
                if self.birth[tensor] != kernel and refetch:
                    self._fetch_on_demand(tensor)
                    self._wait_fetched(tensor, kernel)
            else:
                self._place_or_wait(tensor, False, kernel)
        elif self.fetching[tensor]:
            self._wait_fetched(tensor, kernel)

    def _release_dead(self, kernel: int) -> None:
        fn = self.spec.mode == "flashneuron"
        for tensor in self.required[kernel]:
            if self.is_global[tensor]:
                continue
            d = self.death[tensor]
            if d == kernel + 1 or (d == -1 and not fn):
                self._free(tensor)

    def _prefetch_ahead(self, kernel: int) -> None:
        """FlashNeuron's backward prefetch: offloaded tensors of the next kernels, in order, while they fit.

        The walk stops at the first tensor that does not fit in the largest free
        extent less the largest non-global working set.  ``_ahead`` skips the
        kernels whose offloaded tensors are all back and stay until they run, so
        the walk costs what it prefetches, not the rest of the iteration.
        """
        room = self.alloc.largest_free() - self._max_local_pages
        K = self.trace.n_kernels
        k = max(self._ahead, kernel + 1)
        advance = True
        while k < K:
            for tensor in self._moving[k]:
                if self.extent[tensor] < 0:
                    n = self.pages[tensor]
                    if room <= n:
                        if advance:
                            self._ahead = k
                        return
                    self._place(tensor, True)
                    self._enqueue(SSD_TO_GPU, tensor)
                    room -= n
            if advance:
                if self._moving_stay[k]:
                    self._ahead = k + 1
                else:
                    advance = False
            k += 1

    # -- result -----------------------------------------------------------------
    def _initial_tier_bytes(self) -> dict:
        """Bytes of the global tensors in each tier at the iteration's start."""
        out = {name: 0 for name in TIER_NAMES.values()}
        for t in range(self.trace.n_tensors):
            if self.is_global[t]:
                out[TIER_NAMES[self.initial_tier[t]]] += self.size_bytes[t]
        return out

    def _fold(self, start, finish, last_kernel):
        """Recompute: per trace kernel, (start, finish, ideal cycles, last kernel, recompute counters)."""
        exp = self.expansion
        cyc = np.array(self.kernel_cycles, np.int64)
        if exp is None:
            return start, finish, cyc.tolist(), last_kernel, None
        own = np.flatnonzero(~exp.is_copy)
        first = np.searchsorted(exp.group, np.arange(own.size))     # a kernel's group starts at its first copy
        st = np.asarray(start, np.int64)
        fi = np.asarray(finish, np.int64)
        copy_cycles = int((fi - st)[exp.is_copy].sum())
        counters = {"tensors": exp.n_tensors, "kernels": exp.n_kernels, "hints": exp.n_hinted,
                    "ideal_s": int(cyc[exp.is_copy].sum()) / (self.spec.frequency_GHz * 1e9),
                    "time_s": copy_cycles / (self.spec.frequency_GHz * 1e9)}
        return (st[first].tolist(), fi[own].tolist(), cyc[own].tolist(),
                int(exp.group[last_kernel]) if last_kernel >= 0 else last_kernel, counters)

    def _result(self, start, finish, last_kernel, failure) -> dict:
        hz = self.spec.frequency_GHz * 1e9
        start, finish, kernel_cycles_, last_kernel, recompute_counters = self._fold(start, finish, last_kernel)
        ideal = int(sum(kernel_cycles_))
        page = self.spec.page_size_bytes
        counters = {
            "traffic_bytes": dict(zip(QUEUE_NAMES, map(int, self.traffic))),
            "n_transfers": self.n_transfers,
            "n_on_demand_fetches": self.n_on_demand_fetches,
            "peak_gpu_bytes": self.peak_used_pages * page,
            "gpu_capacity_bytes": self.spec.capacity_pages * page,
            "leaked_bytes": self.leaked_pages * page,
            "visit_order": self.spec.visit_order,
            "steady_state": self.steady,
            "initial_tier_bytes": self._initial_tier_bytes(),
            "restore_bytes": int(self.restore_bytes),
            "restore_transfers": int(self.restore_transfers),
        }
        if recompute_counters is not None:
            counters["recompute"] = recompute_counters
        if failure is not None:
            return _failure(failure, self.spec.mode, ideal / hz, failed_at_kernel=int(last_kernel), **counters)
        total = self.now
        stall = total - ideal
        overlap = self.busy_cycles - stall
        compute = ideal - overlap
        st = np.array(start, np.int64)
        fi = np.array(finish, np.int64)
        kc = np.array(kernel_cycles_, np.int64)
        norm = np.where(kc > 0, (fi - st - kc) / np.maximum(kc, 1), 0.0)
        return {
            "time_s": total / hz,
            "failed": False,
            "failure_reason": None,
            "failed_at_kernel": -1,
            "mode": self.spec.mode,
            "iterations": 1,
            "ideal_time_s": ideal / hz,
            "time_cycles": int(total),
            "breakdown_s": {"compute": compute / hz, "overlap": overlap / hz, "stall": stall / hz},
            "transfer_busy_s": self.busy_cycles / hz,
            "kernel_start_s": st / hz,
            "kernel_time_s": (fi - st) / hz,
            "kernel_ideal_s": kc / hz,
            "kernel_stall_normalized": norm,
            **counters,
        }


def _failure(reason: str, mode: str, ideal_time_s: float, **fields) -> dict:
    """A run that did not finish: the keys of a finished one, time infinite, the rest NaN or empty."""
    out = {
        "time_s": math.inf,
        "failed": True,
        "failure_reason": reason,
        "failed_at_kernel": -1,
        "mode": mode,
        "iterations": 1,
        "ideal_time_s": ideal_time_s,
        "time_cycles": None,
        "breakdown_s": {"compute": math.nan, "overlap": math.nan, "stall": math.nan},
        "transfer_busy_s": math.nan,
        "kernel_start_s": np.zeros(0),
        "kernel_time_s": np.zeros(0),
        "kernel_ideal_s": np.zeros(0),
        "kernel_stall_normalized": np.zeros(0),
        "traffic_bytes": {name: 0 for name in QUEUE_NAMES},
        "n_transfers": 0,
        "n_on_demand_fetches": 0,
        "peak_gpu_bytes": 0,
        "gpu_capacity_bytes": 0,
        "leaked_bytes": 0,
        "visit_order": None,
        "steady_state": False,
        "initial_tier_bytes": {name: 0 for name in TIER_NAMES.values()},
        "restore_bytes": 0,
        "restore_transfers": 0,
    }
    out.update(fields)
    return out


def failed_result(reason: str, *, mode: str, trace: Trace, config, **extra) -> dict:
    """The result of a run that cannot happen (same keys as a finished run's, time infinite)."""
    cycles = int(kernel_cycles(trace, config.gpu.frequency_GHz).sum())
    return _failure(reason, mode, cycles / (config.gpu.frequency_GHz * 1e9), **extra)


def working_set_check(trace: Trace, config) -> str | None:
    """Why no schedule can run ``trace`` on this GPU (one kernel alone does not fit), or None."""
    page = config.gpu.page_size_bytes
    need = max_working_set_pages(trace, page) * page
    have = int(config.gpu.memory_GiB * GiB) // page * page
    if need > have:
        return (f"cannot fit: one kernel alone touches {need} B of tensors, more than the "
                f"{have} B of GPU memory (gpu.memory_GiB = {config.gpu.memory_GiB})")
    return None


def default_visit_order(config) -> str:
    return "artifact" if config.scheduler.artifact_quirks else "access"


def check_initial_tier(trace: Trace, initial_tier, spec: TensorSimSpec) -> np.ndarray:
    """Validate a per-tensor start placement; return it as int8 (see :func:`simulate`)."""
    tier = np.asarray(initial_tier)
    T = trace.n_tensors
    if tier.shape != (T,) or tier.dtype.kind not in "iu":
        raise TensorSimError(f"initial_tier: expected {T} integer tier codes, got shape {tier.shape} "
                             f"of {tier.dtype}")
    codes = tuple(TIER_NAMES)
    bad = np.flatnonzero(~np.isin(tier, codes))
    if bad.size:
        t = int(bad[0])
        raise TensorSimError(f"initial_tier[{t}] = {int(tier[t])}: not a tier code "
                             f"({', '.join(f'{c} {n}' for c, n in TIER_NAMES.items())})")
    glob = trace.tensor_is_global
    # a tensor born in the iteration starts not present, whatever the array says of it
    tier = np.where(glob, tier, TIER_NOT_PRESENT).astype(np.int8)
    off = np.flatnonzero(glob & (tier != TIER_GPU))
    if off.size and spec.mode == "flashneuron":
        raise TensorSimError(f"initial_tier[{int(off[0])}] = {TIER_NAMES[int(tier[off[0]])]}: FlashNeuron keeps "
                             "every global tensor on the GPU")
    host = np.flatnonzero(tier == TIER_HOST)
    if host.size and spec.host_bandwidth_Bps <= 0:
        raise TensorSimError(f"initial_tier[{int(host[0])}] = host, but there is no host path "
                             "(host bandwidth 0)")
    return tier


def simulate(trace: Trace, config, hints: np.ndarray, *, mode: str,
             backward_start_kernel: int = -1, visit_order: str | None = None, initial_tier=None) -> dict:
    """Simulate one iteration of ``trace`` at tensor level under ``hints``.

    ``config`` is a :class:`~g10core.config.SimConfig` (preset ``g10-artifact``
    reproduces the published tensor-level simulator).  ``mode`` is
    ``"flashneuron"`` (``backward_start_kernel`` = index of the first backward
    kernel) or ``"gds"``; ``visit_order`` is one of :data:`VISIT_ORDERS` (None:
    ``"artifact"`` with ``scheduler.artifact_quirks``, else ``"access"``).

    ``initial_tier`` (int8 per tensor, :data:`g10core.codes.TIER_GPU` / ``TIER_HOST`` /
    ``TIER_SSD`` / ``TIER_NOT_PRESENT``) is where each global tensor is when the iteration
    starts; None: every global tensor on the GPU, and the iteration ends where its
    transfers leave it (the behaviour before placements existed).  Given a placement, the
    simulated iteration is a steady-state one: a global that starts off the GPU is fetched by
    a ``to_gpu`` hint or on demand; one that starts not present is allocated at its first
    use without a transfer; after the last kernel every global is moved back to where it
    started, and that time counts.  Entries of non-global tensors are ignored (they are born
    in the iteration).
    Returns a plain dict; see the module docstring.
    """
    if not isinstance(trace, Trace):
        raise TensorSimError(f"trace: expected a g10core.workload.trace.Trace, got {type(trace).__name__}")
    if mode not in MODES:
        raise TensorSimError(f"mode = {mode!r}: must be one of {', '.join(MODES)}")
    if mode == "flashneuron" and not (0 <= backward_start_kernel <= trace.n_kernels):
        raise TensorSimError(f"backward_start_kernel = {backward_start_kernel}: must be in [0, {trace.n_kernels}]")
    spec = TensorSimSpec.from_config(config, mode, backward_start_kernel=backward_start_kernel,
                                     visit_order=visit_order)
    hints = check_hints(trace, hints, mode)
    if initial_tier is not None:
        initial_tier = check_initial_tier(trace, initial_tier, spec)
    expansion = _recompute.expand(trace, hints) if _recompute.has_recompute(hints) else None
    reason = working_set_check(trace, config)
    if reason is not None:
        return failed_result(reason, mode=mode, trace=trace, config=config)
    return TensorLevelSimulator(trace, spec, hints, initial_tier, expansion).run()


def with_policy(result: dict, name: str, schedule: dict) -> dict:
    """``result`` (a tensor-level simulation's dict) tagged with the policy and its schedule."""
    result = dict(result)
    result["policy"] = name
    result["schedule"] = schedule
    return result
