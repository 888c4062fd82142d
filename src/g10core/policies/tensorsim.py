"""Tensor-level event simulator (FlashNeuron, G10-GDS, G10-Host).

The baselines that move whole tensors (GPUDirect-style, no UVM) are simulated at
tensor granularity: a kernel may start only when every tensor it touches has
contiguous GPU pages and none of them is still being fetched; transfers run one
tensor at a time in a FIFO per direction and tier (GPU->SSD, SSD->GPU,
GPU->host, host->GPU), each taking ``size / bandwidth``.  Outside ``g10-artifact`` the SSD
follows ``ssd.duplex`` and ``ssd.write_bandwidth_GBps`` as the page-level slot model does:
``shared`` (the default) serves one SSD transfer at a time over both directions, in the order
they were queued, reads at the read and writes at the write bandwidth, so reads / read
bandwidth + writes / write bandwidth never exceeds the time; ``full`` runs the two FIFOs at
once.  ``g10-artifact`` keeps the published rule: full duplex, writes at the read bandwidth.  GPU memory is handed
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

**The CPU as a compute tier** (``simulate(..., cpu_kernels=, cpu_work=)``, mode ``"gds"``
without ``scheduler.artifact_quirks``; ZeRO-Offload's and ZeRO-Infinity's CPU Adam).  The
kernels marked in ``cpu_kernels`` run on the CPU, in trace order, one at a time, on their own
timeline beside the GPU's: the GPU goes on with the next kernel at once.  A CPU kernel reads
and writes host memory only: it starts when the CPU is free and every tensor it reads has a
current copy in host memory (brought by the policy's hints, or on demand when none did: from
the GPU, or from the SSD over the host<->SSD path); a tensor it only writes is a new buffer in
host memory.  It takes max(flops / (cpu.cores x per-core FLOP/s of its dtype), bytes /
host memory bandwidth) (roofline; :class:`CPUWork`), the bandwidth at most cpu.cores x
``cpu.stream_GBps_per_core``.  Dependencies go through tensors: a GPU
kernel that touches a tensor a queued or running CPU kernel touches waits for it (the time is
``gpu_wait_cpu_s``, with the wait after the GPU's last kernel for the CPU's last), a hint on such
a tensor is applied when that CPU kernel is done, and a GPU copy the CPU rewrote is stale (fetched
again).  With CPU kernels, transfers into the GPU copy (the host or SSD copy stays, released when
it was only a staging copy), the others move; ``to_host`` / ``to_ssd`` also move a tensor between
host memory and the SSD (queues ``host_to_ssd`` / ``ssd_to_host`` at ``ssd.bandwidth_GBps``,
sharing the SSD with its GPU<->SSD stream of the same direction).  Host memory bandwidth is
shared: the DMA through host memory (GPU<->host, host<->SSD) in flight while a CPU kernel runs
gets at most max(M / 2, M - the kernel's rate) together (re-rated as any transfer, below), and a
CPU kernel that starts while such DMA runs gets max(M / 2, M - their rates), fixed for its
duration (M = ``cpu.memory_bandwidth_GBps`` x ``cpu.memory_stream_fraction``, what streaming
sustains).  Tensors in host memory and the pinned staging buffers (``CPUWork.pinned_host_bytes``)
count against ``host.memory_GiB``; a run that needs more fails.
The result gains ``cpu_busy_s`` and ``gpu_wait_cpu_s`` (also in ``breakdown_s``), the traffic
keys ``host_to_ssd`` and ``ssd_to_host``, ``peak_host_bytes``, ``pinned_host_bytes``,
``host_capacity_bytes``, ``n_cpu_kernels`` and ``kernel_on_cpu``.

**One rank of a ZeRO group** (``simulate(partition=ZeroPartition(n, ...))``, with CPU kernels).
Parameters, gradients and optimizer state have a shard of ceil(pages / n) pages off the GPU: the
copies in host memory and on the SSD, and every PCIe and SSD transfer of them, are the shard; a
seventh queue, ``COLLECTIVE`` (the GPU's NVLink, shared with nothing above), runs a parameter's
all-gather after its shard arrives (the tensor is still being fetched until it ends) and a
gradient's reduce-scatter before its shard leaves, (n - 1) / n of the tensor each; the CPU
kernels do 1/n of their work.  The result gains ``zero_ranks`` and ``collective_bytes``.

**Sharing** (every run).  A transfer in flight keeps the bytes it has moved; whenever one
starts or ends (or a CPU kernel does), every transfer in flight is re-rated max-min fair over
what it shares: each direction of the GPU's link (``spec.link_bandwidth_Bps``, outside
``g10-artifact``) between the SSD and host streams, and with CPU kernels the SSD and host memory.
A transfer whose rate changes gets a new completion event (the old one goes stale), so the cost
is per start and end, never per byte, and the rates on a shared resource never add up to more
than it has at any instant.  ``g10-artifact`` keeps the published static split (no shared link:
every rate is its queue's own, so nothing is ever re-rated).

**Capacities and lifetimes** (outside ``g10-artifact``, whose published simulator has none of
these rules).  A copy in host memory counts against ``host.memory_GiB`` from when its eviction is
queued until it is fetched back, freed or its tensor dies (``peak_host_bytes``); an eviction it
cannot hold fails the run naming the tensor or goes to the SSD (``simulate(host_overflow=)``;
``host_spills``, ``host_spilled_bytes``).  The tensors of the kernel being prepared or running
are never released: an eviction of one still queued is cancelled (``n_cancelled_transfers``),
one in flight completes as a copy and the pages stay (``n_kept_evictions``).  A tensor that
dies drops its queued transfers and waiting prefetch, and a prefetch hinted after its death is
ignored.

**Transfer log.**  The result's ``transfer_log`` (:data:`TRANSFER_LOG_DTYPE`) has a row per stretch
of constant rate of every transfer; :func:`transfer_spans` folds it to a row per transfer and
:func:`link_rate_excess` checks a bandwidth bound over it at every instant.

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
A finished run also has ``transfer_log`` (:data:`TRANSFER_LOG_DTYPE`: start and end cycles, bytes,
queue, tensor of every transfer, in the order they ended) and ``gpu_end_cycles`` (the GPU's last
kernel's end, before the queues drain): what the timeline draws and what
``results.tensor_waits`` attributes the waits to.

``HINT_RECOMPUTE`` (gds mode): the trace is expanded with a copy of each producer before the
kernel that asks for it (:mod:`g10core.workload.recompute`); the per-kernel arrays are folded
back (a copy's time is charged to that kernel) and the ideal time stays the trace's, so the
recompute time is stall.
"""
from __future__ import annotations

import csv
import dataclasses
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
                     ROLE_GRADIENT, ROLE_OPTIMIZER_STATE, ROLE_PARAMETER, TIER_GPU, TIER_HOST, TIER_NAMES,
                     TIER_NOT_PRESENT, TIER_SSD)
from ..workload import recompute as _recompute
from ..errors import TensorSimError  # noqa: F401 (defined in errors.py; importable from here)
from ..workload.trace import ACCESS_READ, ACCESS_WRITE, Trace
from ..timeline import TRANSFER_LOG_DTYPE, link_rate_excess, transfer_spans  # noqa: F401 (importable from here)

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

# Queue indices (one FIFO per direction and tier); the host<->SSD queues serve CPU kernels only.
GPU_TO_SSD, SSD_TO_GPU, GPU_TO_HOST, HOST_TO_GPU, HOST_TO_SSD, SSD_TO_HOST = range(6)
# ZeRO partitioned across data-parallel ranks (ZeroPartition): the GPUs' NVLink collectives, one at a
# time per rank (NCCL runs a rank's collectives on one stream): a parameter's all-gather after its
# shard arrives, a gradient's reduce-scatter before its shard leaves
COLLECTIVE = 6
N_QUEUES = 7
QUEUE_NAMES = ("gpu_to_ssd", "ssd_to_gpu", "gpu_to_host", "host_to_gpu")
CPU_QUEUE_NAMES = QUEUE_NAMES + ("host_to_ssd", "ssd_to_host")   # traffic keys of a run with CPU kernels
_SAME_DIRECTION = (GPU_TO_HOST, HOST_TO_GPU, GPU_TO_SSD, SSD_TO_GPU)   # the other tier's queue on the link
_SAME_SSD = {GPU_TO_SSD: HOST_TO_SSD, HOST_TO_SSD: GPU_TO_SSD, SSD_TO_GPU: SSD_TO_HOST, SSD_TO_HOST: SSD_TO_GPU}
_SSD_QUEUES = (GPU_TO_SSD, SSD_TO_GPU, HOST_TO_SSD, SSD_TO_HOST)
_TOUCHES_HOST = (GPU_TO_HOST, HOST_TO_GPU, HOST_TO_SSD, SSD_TO_HOST)   # DMA through host memory
_KERNEL_EVENT = 8          # (event kinds below it are queues)
_CPU_EVENT = 9


@dataclass(frozen=True)
class ZeroPartition:
    """ZeRO's partitioning across ``ranks`` data-parallel GPUs, as one rank sees it (Rajbhandari et al.,
    "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC 2020, section 5; ZeRO-Infinity,
    SC 2021, section 6.1, "bandwidth-centric partitioning").

    The rank owns 1/``ranks`` of every parameter, gradient and optimizer state (and of the CPU
    optimizer's temporaries): its copies off the GPU (host memory, SSD) and their moves over PCIe
    are that shard, rounded up to whole pages, and its CPU optimizer does 1/``ranks`` of the work.
    On the GPU a tensor is whole: a parameter (or any partitioned tensor a GPU kernel reads) is
    all-gathered over NVLink once its shard has arrived, and a gradient is reduce-scattered
    before its shard leaves; each collective moves (ranks - 1) / ranks x its size per GPU at
    ``collective_Bps`` (NCCL's bus bandwidth: nccl-tests ``doc/PERFORMANCE.md`` defines
    all-gather's and reduce-scatter's bus bandwidth as size x (n - 1) / n / time).

    Attributes
    ----------
    ranks : int
        Data-parallel ranks (>= 1; 1 partitions nothing).
    collective_Bps : float
        Bus bandwidth of the all-gather and reduce-scatter, bytes per second (> 0).
    """

    ranks: int
    collective_Bps: float


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
    # re-rated whenever a transfer starts or ends; 0: the published static split (host gets what the
    # SSD stream leaves of the link, host_bandwidth_Bps, all the time)
    link_bandwidth_Bps: float = 0.0
    allocator: str = "extents"       # GPU memory: one of ALLOCATORS (see the module docstring)
    # GPU->SSD bandwidth (0: ssd_bandwidth_Bps, the published rule); and whether the SSD's reads
    # and writes share its time (one transfer at a time, in the order queued) or run at once
    ssd_write_bandwidth_Bps: float = 0.0
    ssd_shared: bool = False
    # the CPU tier (read only by runs with CPU kernels): peak FLOP/s per dtype, host memory
    # bandwidth, host memory, and the SSD's own bandwidth for host<->SSD transfers
    cpu_flops: tuple = (("fp32", 0.0), ("bf16", 0.0))
    cpu_memory_Bps: float = 0.0      # the DRAM bandwidth streaming sustains, shared with the DMA
    cpu_cores_memory_Bps: float = 0.0   # what the CPU kernel's cores stream at most (0: no bound)
    host_capacity_bytes: int = 1 << 62       # host memory (from_config: host.memory_GiB); default: unbounded
    host_ssd_bandwidth_Bps: float = 0.0
    host_ssd_write_bandwidth_Bps: float = 0.0     # host->SSD (0: host_ssd_bandwidth_Bps)
    # a policy on UVM (G10-GDS, G10-Host outside g10-artifact): when nothing in flight frees
    # room, the driver evicts resident tensors in arrival order to this tier (TIER_HOST or
    # TIER_SSD) instead of the run failing; -1: off
    demand_eviction_tier: int = -1
    # an eviction to host memory that host.memory_GiB cannot hold (outside g10-artifact): TIER_SSD
    # spills it to the SSD (a policy with an SSD tier); -1: the run fails (pinned host memory only)
    host_overflow_tier: int = -1

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
        if not self.ssd_write_bandwidth_Bps >= 0:
            raise TensorSimError(f"ssd_write_bandwidth_Bps = {self.ssd_write_bandwidth_Bps}: must be >= 0")
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
        write_Bps, shared = 0.0, False
        if not quirks:
            # the SSD's write bandwidth and duplex rule, as the slot model reads them (ssd.*;
            # docs/physics.md); the published simulator writes at the read bandwidth, full duplex
            write_Bps = min(config.ssd.write_bandwidth_GBps or config.ssd.bandwidth_GBps,
                            config.link.bandwidth_GBps) * gb
            shared = config.ssd.duplex == "shared"
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
        cpu = config.cpu
        return cls(mode=mode, capacity_pages=pages, allocator=allocator, page_size_bytes=gpu.page_size_bytes,
                   frequency_GHz=gpu.frequency_GHz, ssd_bandwidth_Bps=ssd_Bps,
                   host_bandwidth_Bps=host_Bps, backward_start_kernel=int(backward_start_kernel),
                   artifact_quirks=quirks, visit_order=visit_order, link_bandwidth_Bps=link_Bps,
                   ssd_write_bandwidth_Bps=write_Bps, ssd_shared=shared,
                   cpu_flops=(("fp32", cpu.cores * cpu.fp32_GFLOPs_per_core * 1e9),
                              ("bf16", cpu.cores * cpu.bf16_GFLOPs_per_core * 1e9)),
                   cpu_memory_Bps=cpu.sustained_memory_GBps() * 1e9,
                   cpu_cores_memory_Bps=cpu.cores * cpu.stream_GBps_per_core * 1e9,
                   host_capacity_bytes=int(config.host.memory_GiB * GiB),
                   host_ssd_bandwidth_Bps=config.ssd.bandwidth_GBps * gb,
                   host_ssd_write_bandwidth_Bps=(0.0 if quirks else
                                                 (config.ssd.write_bandwidth_GBps or config.ssd.bandwidth_GBps) * gb),
                   ).check()


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
                 expansion=None, cpu: "CPUWork | None" = None, policy: str = "",
                 partition: "ZeroPartition | None" = None):
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
        hs = spec.host_ssd_bandwidth_Bps
        write = spec.ssd_write_bandwidth_Bps
        self._queue_Bps = (write or ssd, ssd, host, host, spec.host_ssd_write_bandwidth_Bps or hs, hs,
                           partition.collective_Bps if partition is not None else 1.0)
        # shared SSD: one transfer at a time over both directions, in the order queued; with CPU
        # kernels (four SSD streams) the streams share the SSD's time by rate instead (_fair_rates)
        self._ssd_shared = spec.ssd_shared and cpu is None
        self._ssd_pool_shared = spec.ssd_shared and cpu is not None
        self._ssd_serving = -1            # the SSD queue whose head is in service (shared), -1 idle
        self._queued_seq = [deque() for _ in range(4)]
        self._ssd_order = 0

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
        # demand eviction (spec.demand_eviction): the tensors with GPU pages, in the order they got
        # them (a dict keeps its insertion order; a tensor given a second extent moves to the end),
        # so that a demand eviction reads only what is resident, not every tensor
        self._resident: dict[int, None] = {}
        self.n_demand_evictions = 0
        self.demand_evicted_bytes = 0

        self.now = 0
        self._events: list = []           # heap of (time, seq, kind)
        self._seq = 0
        # the host<->SSD queues serve CPU kernels, COLLECTIVE a partitioned run (ZeroPartition)
        self.queues = [deque() for _ in range(N_QUEUES)]
        self.traffic = [0] * (6 if cpu is not None else 4)   # bytes per queue
        self.busy_cycles = 0              # time during which some transfer is in flight
        self.n_transfers = 0
        self.n_on_demand_fetches = 0
        self.fetch_wait: deque = deque()  # gds: prefetches waiting for an extent
        self.peak_used_pages = 0
        # transfers in flight (see _rerate): per queue, the head's bytes left, the cycle its rate
        # was set, its transfer id and the version of its completion event; _queue_rate its rate
        self._rem = [0.0] * N_QUEUES
        self._t0 = [0] * N_QUEUES
        self._tid = [-1] * N_QUEUES
        self._ver = [0] * N_QUEUES
        self._n_tid = 0
        self._queue_rate = [0.0] * N_QUEUES
        self._log: list = []              # (transfer, tensor, queue, start, end, bytes) per rate segment
        self._released_rows: list = []    # rows of _log whose end dropped the tensor's GPU pages
        self._n_queued = [0] * T          # transfers of the tensor queued or in flight
        # lifetimes (outside g10-artifact, whose published simulator has neither rule): nothing is
        # released under the kernel that touches it, nothing moves for a dead tensor
        self._guard = not spec.artifact_quirks
        self._running = -1                # the GPU kernel being prepared or running
        self._kernel_now = 0              # the kernel the main loop is at
        self._in_use = [-1] * T
        self._buried = [False] * T        # died (its queued transfers were dropped)
        self.n_kept_evictions = 0
        self.n_cancelled_transfers = 0
        # host memory (outside g10-artifact): copies there count against host.memory_GiB
        self.policy = policy
        self._enforce_host = not spec.artifact_quirks
        self._host_counted = [False] * T
        self.host_bytes = 0
        self.peak_host_bytes = 0
        self.n_host_spills = 0
        self.host_spilled_bytes = 0
        self.cpu = cpu
        self.cpu_mode = cpu is not None
        if self.cpu_mode:
            self._init_cpu(cpu)
        self._init_partition(partition)
        # ---- transfer log (issue 43): set in _push_event and _serve_one only ----
        self.gpu_end_cycles = -1          # the GPU's last kernel's end (before the drain)

    # -- events and queues ------------------------------------------------
    def _push_event(self, time: int, kind: int, version: int = 0) -> None:
        heapq.heappush(self._events, (time, self._seq, kind, version))
        self._seq += 1

    def _duration(self, queue: int, tensor: int) -> int:
        """Cycles to move a tensor alone on its queue at the queue's own bandwidth, rounded up."""
        return math.ceil(self._move_bytes(queue, tensor) * self._hz / self._queue_Bps[queue] - 1e-6)

    def _move_bytes(self, queue: int, tensor: int) -> int:
        """Bytes a transfer of ``tensor`` on ``queue`` moves: its copy off the GPU (a rank's shard when
        partitioned), or on COLLECTIVE what the all-gather or reduce-scatter sends per GPU."""
        return self.gather_bytes[tensor] if queue == COLLECTIVE else self.off_bytes[tensor]

    def _init_partition(self, partition: "ZeroPartition | None") -> None:
        """The rank's shards and collectives (:class:`ZeroPartition`); without one every move is whole."""
        trace, T = self.trace, self.trace.n_tensors
        self.partition = partition
        self.off_bytes = self.size_bytes          # a tensor's copy off the GPU and its moves over PCIe
        self.gather_bytes = [0] * T               # COLLECTIVE bytes per GPU (0: never gathered)
        self._then = None                         # a reduce-scattered tensor's next queue (-1: none)
        self.collective_traffic = 0
        if partition is None or partition.ranks <= 1:
            return
        n, page = int(partition.ranks), self.spec.page_size_bytes
        pages = np.asarray(self.pages, np.int64)
        role = np.asarray(trace.tensor_role)
        off = trace.access_offsets
        acc_k = np.repeat(np.arange(trace.n_kernels), np.diff(off))
        acc_t = np.asarray(trace.access_tensor, np.int64)
        on_gpu = np.zeros(T, bool)
        on_gpu[acc_t[~np.asarray(self.on_cpu, bool)[acc_k]]] = True
        touched = np.zeros(T, bool)
        touched[acc_t] = True
        glob = np.asarray(self.is_global, bool)
        # what ZeRO partitions: parameters, gradients, optimizer state, and the CPU optimizer's temporaries
        # (a gradient is born in the backward pass: not global)
        part = (glob & np.isin(role, (ROLE_PARAMETER, ROLE_OPTIMIZER_STATE))) | (role == ROLE_GRADIENT) \
            | (touched & ~on_gpu)
        self.off_bytes = np.where(part, -(-pages // n) * page, pages * page).tolist()
        self.gather_bytes = np.where(part & on_gpu, -(-(pages * page) * (n - 1) // n), 0).tolist()
        self._scatter = (part & on_gpu & (role == ROLE_GRADIENT)).tolist()
        self._then = [-1] * T

    # A transfer in flight is progress-based: the head of each queue has bytes left, a rate and the
    # cycle its rate was set.  Whenever a transfer starts or ends (or a CPU kernel, which shares
    # host memory, starts or ends) every transfer in flight is re-rated (_rerate): the rates are
    # max-min fair over the shared resources (_fair_rates), a transfer whose rate changes books
    # its progress so far, and its completion event is pushed again (the old one goes stale by
    # version).  Cost per start or end: O(number of queues), never per byte.
    def _queue_active(self, queue: int) -> bool:
        """Whether the head of ``queue`` is moving data (a shared SSD serves one of its queues)."""
        if not self.queues[queue]:
            return False
        if self._ssd_shared and (queue == GPU_TO_SSD or queue == SSD_TO_GPU):
            return self._ssd_serving == queue
        return True

    def _sharing_groups(self, active: list) -> list:
        """(members, capacity B/s, weight per member) of each shared resource two or more active
        transfers use: sum(weight x rate) over the members must stay within the capacity."""
        groups = []
        link = self.spec.link_bandwidth_Bps
        if link > 0:
            # the GPU's link, per direction, shared by the SSD and host streams
            for pair in ((GPU_TO_SSD, GPU_TO_HOST), (SSD_TO_GPU, HOST_TO_GPU)):
                groups.append((pair, link, (1.0, 1.0)))
        if self.cpu_mode:
            if self._ssd_pool_shared:
                # a shared SSD (ssd.duplex): its four streams share its time
                groups.append((_SSD_QUEUES, 1.0, tuple(1.0 / self._queue_Bps[q] for q in _SSD_QUEUES)))
            else:
                ssd = self.spec.host_ssd_bandwidth_Bps
                groups.append(((GPU_TO_SSD, HOST_TO_SSD), ssd, (1.0, 1.0)))
                groups.append(((SSD_TO_GPU, SSD_TO_HOST), ssd, (1.0, 1.0)))
            if self.cpu_running >= 0:
                # host memory: what the running CPU kernel leaves the DMA through it (at least half)
                mem = self.spec.cpu_memory_Bps
                groups.append((_TOUCHES_HOST, max(mem / 2, mem - self._cpu_rate), (1.0,) * 4))
        on = set(active)
        out = []
        for members, cap, weights in groups:
            sel = [(q, w) for q, w in zip(members, weights) if q in on]
            if len(sel) >= 2 or (sel and self.cpu_mode and members == _TOUCHES_HOST):
                out.append(([q for q, _ in sel], cap, [w for _, w in sel]))
        return out

    def _fair_rates(self, active: list) -> dict:
        """Max-min fair rates (B/s) of the active queues: progressive filling, every unfrozen rate
        raised together until a queue reaches its own bandwidth or a shared resource is full."""
        rate = {q: 0.0 for q in active}
        cap = {q: self._queue_Bps[q] for q in active}
        groups = self._sharing_groups(active)
        frozen: set = set()
        while len(frozen) < len(active):
            free = [q for q in active if q not in frozen]
            step = min(cap[q] - rate[q] for q in free)
            for members, capacity, weights in groups:
                w_free = sum(w for q, w in zip(members, weights) if q not in frozen)
                if w_free > 0:
                    used = sum(w * rate[q] for q, w in zip(members, weights))
                    step = min(step, max(capacity - used, 0.0) / w_free)
            for q in free:
                rate[q] += step
            for q in free:
                if rate[q] >= cap[q] * (1 - 1e-12):
                    frozen.add(q)
            for members, capacity, weights in groups:
                used = sum(w * rate[q] for q, w in zip(members, weights))
                if used >= capacity * (1 - 1e-12):
                    frozen.update(members)
        return rate

    def _book(self, queue: int, final: bool = False) -> None:
        """Book the head's progress since its rate was last set (a segment of the transfer log)."""
        dt = self.now - self._t0[queue]
        rem = self._rem[queue]
        moved = rem if final else min(rem, self._queue_rate[queue] * dt / self._hz)
        if dt > 0 or final:
            self._log.append((self._tid[queue], self.queues[queue][0], queue, self._t0[queue], self.now, moved))
        self._rem[queue] = rem - moved
        self._t0[queue] = self.now

    def _rerate(self) -> None:
        """Give every transfer in flight its fair rate now; reschedule those whose rate changed."""
        active = [q for q in range(N_QUEUES) if self._queue_active(q)]
        rates = self._fair_rates(active) if active else {}
        for q in range(N_QUEUES):
            new = rates.get(q, 0.0)
            if new == self._queue_rate[q]:
                continue
            if self._queue_rate[q] > 0:
                self._book(q)
            else:
                self._t0[q] = self.now
            self._queue_rate[q] = new
            self._ver[q] += 1
            if new > 0:
                if not new > 1e-9:
                    raise _CannotFit(f"internal: queue {q} got no bandwidth")
                left = math.ceil(self._rem[q] * self._hz / new - 1e-6)
                self._push_event(self.now + max(left, 0), q, self._ver[q])

    def _start_head(self, queue: int) -> None:
        """The transfer at the head of ``queue`` starts moving."""
        t = self.queues[queue][0]
        self._rem[queue] = float(self.gather_bytes[t] if queue == COLLECTIVE else self.off_bytes[t])
        self._t0[queue] = self.now
        self._tid[queue] = self._n_tid
        self._n_tid += 1
        self._rerate()

    def _enqueue(self, queue: int, tensor: int, claimed: bool = False) -> None:
        if self._then is not None and queue in (GPU_TO_HOST, GPU_TO_SSD) and self._scatter[tensor] \
                and not claimed:
            # ZeRO: the gradient is reduce-scattered over NVLink, then this rank's shard leaves
            self._then[tensor] = queue
            if queue == GPU_TO_HOST:
                self.host_in_flight[tensor] += 1
                self._host_add(tensor)              # its host buffer is claimed now, as a queued copy's is
            self._enqueue_collective(tensor)
            return
        q = self.queues[queue]
        q.append(tensor)
        if self._ssd_shared and queue in (GPU_TO_SSD, SSD_TO_GPU):
            self._queued_seq[queue].append(self._ssd_order)
            self._ssd_order += 1
            self.traffic[queue] += self.size_bytes[tensor]
            self.n_transfers += 1
            self._n_queued[tensor] += 1
            if queue == SSD_TO_GPU:
                self.fetching[tensor] = True
                self.start_off[tensor] = False
            if self._ssd_serving < 0:
                self._start_ssd(queue)
            return
        self.traffic[queue] += self.off_bytes[tensor]      # (COLLECTIVE: _enqueue_collective)
        self.n_transfers += 1
        self._n_queued[tensor] += 1
        if queue in (SSD_TO_GPU, HOST_TO_GPU):
            self.fetching[tensor] = True
            self.start_off[tensor] = False
        if self.cpu_mode and (queue == GPU_TO_HOST or queue == SSD_TO_HOST) and not claimed:
            self.host_in_flight[tensor] += 1
            self._host_add(tensor)
        if len(q) == 1:
            self._start_head(queue)

    def _enqueue_collective(self, tensor: int) -> None:
        """Queue ``tensor``'s all-gather or reduce-scatter (:class:`ZeroPartition`)."""
        q = self.queues[COLLECTIVE]
        q.append(tensor)
        self.collective_traffic += self.gather_bytes[tensor]
        self.n_transfers += 1
        self._n_queued[tensor] += 1
        if len(q) == 1:
            self._start_head(COLLECTIVE)

    def _start_ssd(self, queue: int) -> None:
        self._ssd_serving = queue
        self._start_head(queue)

    def _next_ssd(self) -> None:
        """Shared SSD: start the earliest queued SSD transfer of either direction, if any."""
        w, r = self._queued_seq[GPU_TO_SSD], self._queued_seq[SSD_TO_GPU]
        if w or r:
            self._start_ssd(GPU_TO_SSD if w and (not r or w[0] < r[0]) else SSD_TO_GPU)
        else:
            self._ssd_serving = -1
            self._rerate()

    def _serve_one(self) -> int:
        """Advance to the earliest live event and apply it; return its kind (-1: only stale events were left)."""
        while True:
            time, _, kind, version = heapq.heappop(self._events)
            if kind >= _KERNEL_EVENT or version == self._ver[kind]:
                break
            if not self._events:
                return -1               # a transfer's superseded completion: nothing happens
        if any(self.queues):
            self.busy_cycles += time - self.now
        self.now = time
        if kind == _KERNEL_EVENT:
            return kind
        if kind == _CPU_EVENT:
            self._finish_cpu()
            self._rerate()              # host memory the CPU kernel used is free for DMA
            return kind
        self._book(kind, final=True)
        self._queue_rate[kind] = 0.0
        self._ver[kind] += 1
        self._n_queued[self.queues[kind][0]] -= 1
        if self.cpu_mode:
            self._cpu_transfer_done(kind)
            return kind
        q = self.queues[kind]
        tensor = q.popleft()
        if kind == GPU_TO_SSD or kind == GPU_TO_HOST:
            if self._in_use_now(tensor):
                # the copy is done but the running kernel touches the tensor: its pages stay
                # (no release under a kernel); the copy off the GPU is dropped, the GPU one is current
                self.n_kept_evictions += 1
                if kind == GPU_TO_HOST:
                    self._host_set(tensor, False)
            else:
                self._free(tensor)
                self._released_rows.append(len(self._log) - 1)
                if kind == GPU_TO_HOST:
                    self._host_set(tensor, not self._buried[tensor])    # a dead tensor's copy is dropped
        else:
            self.fetching[tensor] = False
            if kind == HOST_TO_GPU:
                self._host_set(tensor, False)
        if self._ssd_shared and kind in (GPU_TO_SSD, SSD_TO_GPU):
            self._queued_seq[kind].popleft()
            self._next_ssd()
        elif q:
            self._start_head(kind)
        else:
            self._rerate()
        return kind

    # -- lifetimes: no release under a kernel, nothing moved for a dead tensor ---------------
    def _in_use_now(self, tensor: int) -> bool:
        """Whether the GPU kernel being prepared or running touches ``tensor`` (outside g10-artifact)."""
        return self._running >= 0 and self._in_use[tensor] == self._running

    def _hold_kernel_tensors(self, kernel: int) -> None:
        """Kernel ``kernel`` is about to be prepared: its tensors may not be released until it ends.

        An eviction of one of them still queued (not started) is cancelled: its data would be
        fetched straight back.  One already moving completes as a copy (see _serve_one).
        """
        self._running = kernel
        for t in self.required[kernel]:
            self._in_use[t] = kernel
            if self._n_queued[t] and not self.cpu_mode:     # (with CPU kernels: completes as a copy)
                self._cancel_queued(t, (GPU_TO_SSD, GPU_TO_HOST))

    def _cancel_queued(self, tensor: int, queues) -> None:
        """Drop the transfers of ``tensor`` on ``queues`` that have not started (traffic undone)."""
        for qi in queues:
            q = self.queues[qi]
            if tensor not in q:
                continue
            first = 1 if self._queue_active(qi) else 0       # the head in flight stays
            keep = deque()
            seqs = self._queued_seq[qi] if self._ssd_shared and qi in (GPU_TO_SSD, SSD_TO_GPU) else None
            keep_seq = deque()
            for i, t in enumerate(q):
                if i >= first and t == tensor:
                    self.traffic[qi] -= self._move_bytes(qi, t)
                    self.n_transfers -= 1
                    self._n_queued[t] -= 1
                    self.n_cancelled_transfers += 1
                    if qi == GPU_TO_HOST:
                        self._host_set(t, False)      # its host buffer was claimed when queued
                    elif qi in (SSD_TO_GPU, HOST_TO_GPU):
                        self.fetching[t] = False
                    continue
                keep.append(t)
                if seqs is not None:
                    keep_seq.append(seqs[i])
            self.queues[qi] = keep
            if seqs is not None:
                self._queued_seq[qi] = keep_seq
        if self._ssd_shared and self._ssd_serving < 0:
            self._next_ssd()

    def _is_dead(self, tensor: int, kernel: int) -> bool:
        """Whether a non-global tensor is past its last use when kernel ``kernel`` comes."""
        if self.is_global[tensor]:
            return False
        d = self.death[tensor]
        return (0 <= d <= kernel) if d != -1 else 0 <= self.birth[tensor] < kernel

    def _bury(self, tensor: int) -> None:
        """A tensor died: its queued transfers and waiting prefetch go, and its host copy."""
        if self._n_queued[tensor]:
            self._cancel_queued(tensor, (GPU_TO_SSD, GPU_TO_HOST, SSD_TO_GPU, HOST_TO_GPU))
        if self.waiting[tensor]:
            self.waiting[tensor] = False
            self.fetch_wait = deque(t for t in self.fetch_wait if t != tensor)
        self._buried[tensor] = True
        if self.in_host[tensor] and not self._n_queued[tensor]:
            self._host_set(tensor, False)

    # -- host memory (runs without CPU kernels; CPUWork runs count in _host_add) -----------
    def _host_set(self, tensor: int, on: bool) -> None:
        """The tensor's copy in host memory is claimed (``on``) or released; bytes held are counted."""
        self.in_host[tensor] = on
        if self.cpu_mode or on == self._host_counted[tensor]:
            return
        self._host_counted[tensor] = on
        if on:
            self.host_bytes += self.size_bytes[tensor]
            if self.host_bytes > self.peak_host_bytes:
                self.peak_host_bytes = self.host_bytes
        else:
            self.host_bytes -= self.size_bytes[tensor]

    def _host_fits(self, tensor: int) -> bool:
        """Whether host memory holds a copy of ``tensor`` besides what it holds now (always under g10-artifact)."""
        if not self._enforce_host or self._host_counted[tensor]:
            return True
        return self.host_bytes + self.size_bytes[tensor] <= self.spec.host_capacity_bytes

    def _host_full_message(self, tensor: int) -> str:
        size, held, cap = self.size_bytes[tensor], self.host_bytes, self.spec.host_capacity_bytes
        who = f"{self.policy}: " if self.policy else ""
        return (f"{who}offloading tensor {tensor} ({self.trace.tensor_name[tensor]!s}, {size / GiB:.3g} GiB) needs "
                f"host memory beyond host.memory_GiB = {cap / GiB:.4g} GiB (held: {held / GiB:.3g} GiB in "
                f"{sum(self._host_counted)} tensors); the policy offloads to pinned host memory and has no "
                "tier below it")

    def _to_host_or_spill(self, tensor: int) -> bool:
        """Room for an eviction to host memory: True, or False when it spills to the SSD
        (``spec.host_overflow_tier``); raises _CannotFit when the policy has nowhere else."""
        if self._host_fits(tensor):
            return True
        if self.spec.host_overflow_tier == TIER_SSD:
            self.n_host_spills += 1
            self.host_spilled_bytes += self.size_bytes[tensor]
            return False
        raise _CannotFit(self._host_full_message(tensor))

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
        self._resident.pop(tensor, None)
        self._resident[tensor] = None
        used = self.alloc.used_pages
        if used > self.peak_used_pages:
            self.peak_used_pages = used
        return True

    def _free(self, tensor: int) -> None:
        start = self.extent[tensor]
        if start >= 0:
            self.alloc.free(start, self.pages[tensor])
            self.extent[tensor] = -1
            self._resident.pop(tensor, None)

    def _place_or_wait(self, tensor: int, high: bool, kernel: int) -> None:
        """Allocate, letting events happen until room appears; raise _CannotFit when none will."""
        if self._place(tensor, high) or self._serve_until_placed(tensor, high):
            return
        if (self.spec.demand_eviction_tier >= 0 and self._evict_on_demand(tensor, kernel)
                and self._serve_until_placed(tensor, high)):
            return
        raise _CannotFit(self._no_room_message(tensor, kernel))

    def _serve_until_placed(self, tensor: int, high: bool) -> bool:
        """Let events happen until ``tensor`` can be placed (True) or none are left (False)."""
        while self._events:
            self._serve_one()
            if self._place(tensor, high):
                if self.spec.mode == "gds":
                    self._start_waiting_prefetches()
                return True
        return False

    def _evict_on_demand(self, tensor: int, kernel: int) -> bool:
        """Queue the evictions that make room for ``tensor`` when nothing in flight will.

        What UVM's driver does when a GPU allocation finds memory full: it evicts resident
        memory in the order it arrived (its root-chunk list; docs/guide/detailed.md), here
        whole tensors, never those of the running kernel nor one being fetched.  They go to host
        memory or the SSD (``spec.demand_eviction_tier``: G10-Host's host memory, G10-GDS's SSD),
        and are fetched on demand at their next use.  Called with the queues idle; False when the evictable tensors cannot
        free enough (the run then fails as before).
        """
        need = self.pages[tensor] - self.alloc.free_pages
        keep = set(self.required[kernel])
        keep.add(tensor)
        fetching, waiting = self.fetching, self.waiting
        victims, got = [], 0
        for t in self._resident:              # in arrival order
            if got >= need:
                break
            if t in keep or fetching[t] or waiting[t]:
                continue
            victims.append(t)
            got += self.pages[t]
        if got < need:
            return False
        tier = self.spec.demand_eviction_tier
        if tier == TIER_HOST and self.spec.host_bandwidth_Bps <= 0:
            tier = TIER_SSD                   # no host path
        for t in victims:
            self._evict_to(t, tier)
            self.start_off[t] = True          # its data is off the GPU: the next use fetches it
            self.n_demand_evictions += 1
            self.demand_evicted_bytes += self.size_bytes[t]
        return True

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
        if self.cpu_mode:
            self._cpu_mode_fetch(tensor)
            return
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
            if self.cpu_mode:
                if not self._cpu_mode_prefetch(tensor):
                    return
                continue
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
        return tensor in self.queues[GPU_TO_SSD] or tensor in self.queues[GPU_TO_HOST] or \
            (self._then is not None and self._then[tensor] >= 0)

    def _apply_hint(self, tensor: int, action: int) -> None:
        if self.cpu_mode:
            self._cpu_mode_hint(tensor, action)
            return
        if action in (HINT_TO_SSD, HINT_TO_HOST) and not self.spec.artifact_quirks:
            if self.extent[tensor] < 0 or self._in_out_queue(tensor):
                return   # nothing resident to evict (quirk: the published simulator moves it anyway)
        if action == HINT_TO_SSD:
            self._enqueue(GPU_TO_SSD, tensor)
        elif action == HINT_TO_HOST:
            if self.spec.host_bandwidth_Bps <= 0 or not self._to_host_or_spill(tensor):
                self._enqueue(GPU_TO_SSD, tensor)   # no host path (or no room there): the eviction goes to SSD
                return
            self._enqueue(GPU_TO_HOST, tensor)
            # the published simulator marks the tensor host-resident when the eviction is queued
            # (its host buffer is claimed then)
            self._host_set(tensor, True)
        elif action == HINT_TO_GPU:
            if self.extent[tensor] >= 0 and self.is_global[tensor]:
                return
            if self._guard and self._is_dead(tensor, self._kernel_now):
                return                              # past its last use: nothing to fetch
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
            self._host_set(tensor, False)

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
                self._kernel_now = kernel
                if backward:
                    # FlashNeuron: the backward pass begins when every offload is done
                    while self.queues[GPU_TO_SSD]:
                        self._serve_one()
                while h < len(hint_k) and hint_k[h] == kernel:
                    if self.cpu_mode and self.on_cpu[kernel]:
                        # a CPU kernel's hints apply when the CPU comes to it (see _try_start_cpu)
                        self._cpu_hints.setdefault(kernel, []).append((hint_t[h], hint_a[h]))
                    elif gds or not backward:
                        self._apply_hint(hint_t[h], hint_a[h])
                    h += 1
                if self.cpu_mode:
                    if self.on_cpu[kernel]:
                        self._submit_cpu(kernel)   # runs on its own timeline; start/finish set there
                        continue
                    self._wait_cpu(kernel)
                if self._guard:
                    self._hold_kernel_tensors(kernel)
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
                self._running = -1
                self._release_dead(kernel)
                if self.cpu_mode:
                    self._gpu_wrote(kernel)
                if fn and backward:
                    self._prefetch_ahead(kernel)
                finish[kernel] = self.now
            if not spec.artifact_quirks or self.steady:
                # The iteration is over when its transfers are: the published simulator stops at
                # the last kernel, so evictions still queued there cost nothing (with its 4x
                # allocator a 200 % trace "moves" 11 GiB in a 0.05 s iteration).
                gpu_end = self.gpu_end_cycles = self.now
                if self.cpu_mode:
                    # hints at kernel K: after the last kernel, still in this iteration
                    for t, a in zip(self.cpu.end_hints["tensor"].tolist(), self.cpu.end_hints["action"].tolist()):
                        self._apply_hint(t, a)
                while self._events:
                    self._serve_one()
                    if self.cpu_mode:
                        self._start_waiting_prefetches()
                if self.cpu_mode:
                    self._check_cpu_done(gpu_end)
                if self.steady:
                    self._restore_placement(K - 1)
                finish[K - 1] = self.now      # the last kernel's step ends when the link is idle
        except _CannotFit as exc:
            failure = str(exc)
        return self._result(start, finish, kernel, failure)

    def _initial_placement(self) -> None:
        if self.cpu_mode:
            self._cpu_mode_placement()
            return
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
                if tier[t] == TIER_HOST:
                    if not self._host_fits(t):
                        need = sum(self.size_bytes[u] for u in range(T) if glob[u] and tier[u] == TIER_HOST)
                        raise _CannotFit(f"cannot fit: the global tensors placed in host memory at the start need "
                                         f"{need / GiB:.3g} GiB, host.memory_GiB = "
                                         f"{self.spec.host_capacity_bytes / GiB:g} GiB")
                    self._host_set(t, True)
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
                self._host_set(t, False)
                self.absent[t] = True
            elif now == TIER_NOT_PRESENT:
                if want == TIER_GPU:
                    self._place_or_wait(t, True, kernel)
                elif want == TIER_HOST and not self._host_fits(t):
                    raise _CannotFit(self._host_full_message(t))
                else:
                    self._host_set(t, want == TIER_HOST)
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
        if tier == TIER_HOST and self._to_host_or_spill(tensor):
            self._enqueue(GPU_TO_HOST, tensor)
            self._host_set(tensor, True)
        else:
            self._enqueue(GPU_TO_SSD, tensor)
            self._host_set(tensor, False)

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
                if self.extent[tensor] < 0 and self.spec.demand_eviction_tier >= 0:
                    # its prefetch cannot get room: the kernel's access faults it in instead,
                    # evicting on demand
                    self.fetch_wait.remove(tensor)
                    self.waiting[tensor] = False
                    self._place_or_wait(tensor, True, kernel)
                    if self.absent[tensor]:
                        self.absent[tensor] = False
                    else:
                        self._fetch_on_demand(tensor)
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
                if self.cpu_mode:
                    self._host_drop(tensor)
                elif self._guard:
                    self._bury(tensor)

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

    # -- the CPU tier (runs with CPU kernels only; see CPUWork) ---------------------
    def _init_cpu(self, cpu: "CPUWork") -> None:
        trace, K, T = self.trace, self.trace.n_kernels, self.trace.n_tensors
        self.on_cpu = cpu.on_cpu.tolist()
        self._cpu_flop_rate = dict(self.spec.cpu_flops)[cpu.dtype]
        self.cpu_flops = cpu.flops.tolist()
        self.cpu_bytes = cpu.bytes.tolist()
        self.cpu_start: dict[int, int] = {}
        self.cpu_finish: dict[int, int] = {}
        self.cpu_pending = [0] * T        # queued or running CPU kernels that touch the tensor
        self.host_in_flight = [0] * T     # transfers into host memory queued or running
        self.on_ssd = [False] * T         # a current copy is on the SSD
        self.gpu_stale = [False] * T      # its GPU pages hold data a CPU kernel has since rewritten
        self.host_home = [False] * T      # lives in host memory: copies to the GPU keep it there
        self._host_counted = [False] * T
        self.pinned_host_bytes = int(cpu.pinned_host_bytes)
        self.host_bytes = self.pinned_host_bytes
        self.peak_host_bytes = self.host_bytes
        self.cpu_fifo: deque = deque()
        self.cpu_running = -1
        self._cpu_rate = 0.0              # host memory bandwidth the running CPU kernel uses, B/s
        self._cpu_end = 0
        self.cpu_busy_cycles = 0
        self.gpu_wait_cpu_cycles = 0
        self._deferred: dict[int, list] = {}
        self._cpu_hints: dict[int, list] = {}   # hints at a CPU kernel's index
        self._cpu_head = -1               # the CPU kernel whose hints and fetches were issued
        # every tensor may live off the GPU: a tensor is fetched wherever it has a copy
        self.will_move = [True] * T
        off = trace.access_offsets
        acc_k = np.repeat(np.arange(K), np.diff(off)).tolist()
        acc_t = trace.access_tensor.tolist()
        acc_m = trace.access_mode.tolist()
        self._reads = [set() for _ in range(K)]
        self._writes = [[] for _ in range(K)]
        for k, t, m in zip(acc_k, acc_t, acc_m):
            if m & ACCESS_READ:
                self._reads[k].add(t)
            if m & ACCESS_WRITE:
                self._writes[k].append(t)
        self._initial_tier = None if cpu.initial_tier is None else cpu.initial_tier.tolist()
        if self._initial_tier is not None:
            self.initial_tier = self._initial_tier     # (initial_tier_bytes)
        self._host_copies = [] if cpu.host_copies is None else np.flatnonzero(cpu.host_copies).tolist()

    def _cpu_mode_placement(self) -> None:
        """Every global tensor where ``initial_tier`` puts it (GPU by default), plus the host copies."""
        tier = self._initial_tier
        for t in range(self.trace.n_tensors):
            if not self.is_global[t]:
                continue
            where = TIER_GPU if tier is None else tier[t]
            if where == TIER_GPU:
                if not self._place(t, high=True):
                    need = sum(self.pages[u] for u in range(self.trace.n_tensors)
                               if self.is_global[u] and (tier is None or tier[u] == TIER_GPU))
                    raise _CannotFit(f"cannot fit: the global tensors placed on the GPU at the start need "
                                     f"{need} pages, the GPU has {self.alloc.capacity_pages}")
            elif where == TIER_HOST:
                self.host_home[t] = True
                self._host_add(t)
            elif where == TIER_SSD:
                self.on_ssd[t] = True
        for t in self._host_copies:
            self.host_home[t] = True
            self._host_add(t)

    def _host_add(self, tensor: int) -> None:
        """The tensor has (or is getting) a current copy in host memory, which holds its bytes."""
        self.in_host[tensor] = True
        if self._host_counted[tensor]:
            return
        self._host_counted[tensor] = True
        self.host_bytes += self.off_bytes[tensor]
        if self.host_bytes > self.peak_host_bytes:
            self.peak_host_bytes = self.host_bytes
            if self.host_bytes > self.spec.host_capacity_bytes:
                raise _CannotFit(
                    f"cannot fit in host memory: {self.host_bytes} B are needed (tensor {tensor} "
                    f"{self.trace.tensor_name[tensor]!s} arriving; {self.pinned_host_bytes} B of it pinned staging "
                    f"buffers), host.memory_GiB holds {self.spec.host_capacity_bytes} B")

    def _host_drop(self, tensor: int) -> None:
        self.in_host[tensor] = False
        if self._host_counted[tensor]:
            self._host_counted[tensor] = False
            self.host_bytes -= self.off_bytes[tensor]

    def _cpu_transfer_done(self, kind: int) -> None:
        """A transfer finished (runs with CPU kernels): transfers into the GPU copy, the others move."""
        q = self.queues[kind]
        tensor = q.popleft()
        if kind == COLLECTIVE:
            then = self._then[tensor]
            if then >= 0:                   # reduce-scattered: the rank's shard leaves now
                self._then[tensor] = -1
                self._enqueue(then, tensor, claimed=True)
            else:                           # all-gathered: the GPU copy is whole
                self.fetching[tensor] = False
                self.gpu_stale[tensor] = False
        elif kind == GPU_TO_SSD or kind == GPU_TO_HOST:
            if self._in_use_now(tensor):
                self.n_kept_evictions += 1      # a running GPU kernel touches it: the pages stay
            else:
                self._free(tensor)
                self._released_rows.append(len(self._log) - 1)
            self.gpu_stale[tensor] = False
            if kind == GPU_TO_SSD:
                self.on_ssd[tensor] = True
            else:
                self.host_in_flight[tensor] -= 1
        elif kind == HOST_TO_SSD:
            self.on_ssd[tensor] = True
            if not self.host_home[tensor] and not self.cpu_pending[tensor]:
                self._host_drop(tensor)     # the staging copy is released once written
        elif kind == SSD_TO_HOST:
            self.host_in_flight[tensor] -= 1
        else:
            if self.gather_bytes[tensor]:
                self._enqueue_collective(tensor)    # the shard is here: all-gather the rest (still fetching)
            else:
                self.fetching[tensor] = False
                self.gpu_stale[tensor] = False
            if kind == HOST_TO_GPU and not self.host_home[tensor] and not self.cpu_pending[tensor]:
                self._host_drop(tensor)     # a staging copy (ZeRO-Infinity's parameters) is released
        if q:
            self._start_head(kind)
        else:
            self._rerate()
        self._try_start_cpu()

    def _cpu_mode_hint(self, tensor: int, action: int, now: bool = False) -> None:
        """A hint (runs with CPU kernels): applied once no queued or running CPU kernel touches the tensor.

        ``to_host`` / ``to_ssd`` move the tensor's current copy there (from the GPU, or between host
        memory and the SSD), dropping the GPU pages or the host copy once done (a tensor whose copy
        there is current only drops them); ``to_gpu`` copies it to the GPU from host memory, or from
        the SSD; ``free`` drops the GPU copy, or without one the host copy.
        """
        if self.cpu_pending[tensor] and not now:
            self._deferred.setdefault(tensor, []).append(action)
            return
        on_gpu = self.extent[tensor] >= 0
        if action == HINT_TO_GPU:
            if not self.waiting[tensor]:
                self.fetch_wait.append(tensor)
                self.waiting[tensor] = True
                self._start_waiting_prefetches()
        elif action == HINT_TO_HOST:
            if on_gpu:
                if self._in_out_queue(tensor) or self.fetching[tensor]:
                    return
                if self.in_host[tensor] and not self.gpu_stale[tensor]:
                    self._free(tensor)      # the host copy is current: only the GPU pages go
                else:
                    self._enqueue(GPU_TO_HOST, tensor)
            elif not self.in_host[tensor] and self.on_ssd[tensor]:
                self._enqueue(SSD_TO_HOST, tensor)
        elif action == HINT_TO_SSD:
            if on_gpu:
                if self._in_out_queue(tensor) or self.fetching[tensor]:
                    return
                if self.on_ssd[tensor] and not self.gpu_stale[tensor]:
                    self._free(tensor)
                else:
                    self._enqueue(GPU_TO_SSD, tensor)
            elif self.in_host[tensor] and not self.host_in_flight[tensor] and tensor not in self.queues[HOST_TO_SSD]:
                if self.on_ssd[tensor]:
                    if not self.host_home[tensor]:
                        self._host_drop(tensor)
                else:
                    self._enqueue(HOST_TO_SSD, tensor)
        elif action == HINT_FREE:
            if on_gpu:
                if not self._in_out_queue(tensor) and not self.fetching[tensor]:
                    self._free(tensor)
                    self.gpu_stale[tensor] = False
            elif not self.host_home[tensor] and not self.host_in_flight[tensor]:
                self._host_drop(tensor)

    def _cpu_mode_prefetch(self, tensor: int) -> bool:
        """Start the prefetch at the head of the wait queue (runs with CPU kernels); False: it must wait."""
        if self.cpu_pending[tensor] or self.host_in_flight[tensor] or self._in_out_queue(tensor):
            return False    # a CPU kernel still uses it, its host copy is arriving, or it is leaving
        done = (self.extent[tensor] >= 0 and not self.gpu_stale[tensor]) or self.fetching[tensor] \
            or not (self.in_host[tensor] or self.on_ssd[tensor])
        if not done:
            if self.extent[tensor] < 0 and not self._place(tensor, True):
                return False
            self._enqueue(HOST_TO_GPU if self.in_host[tensor] else SSD_TO_GPU, tensor)
        self.fetch_wait.popleft()
        self.waiting[tensor] = False
        return True

    def _cpu_mode_fetch(self, tensor: int) -> None:
        """Fetch a tensor the GPU needs now from wherever it has a current copy (none: a new tensor)."""
        if self.fetching[tensor]:
            return
        while self.host_in_flight[tensor] and self._events:
            self._serve_one()               # its host copy is arriving: fetch it from there
        if self.in_host[tensor]:
            queue = HOST_TO_GPU
        elif self.on_ssd[tensor]:
            queue = SSD_TO_GPU
        else:
            self.gpu_stale[tensor] = False
            return
        self.n_on_demand_fetches += 1
        self._enqueue(queue, tensor)

    def _to_host_for_cpu(self, tensor: int) -> None:
        """Bring a tensor a CPU kernel reads into host memory, on demand if no hint did."""
        if self.in_host[tensor]:
            return                          # there, or arriving
        if self.extent[tensor] >= 0 and not self.gpu_stale[tensor]:
            self.n_on_demand_fetches += 1
            self._enqueue(GPU_TO_HOST, tensor)
        elif self.on_ssd[tensor]:
            self.n_on_demand_fetches += 1
            self._enqueue(SSD_TO_HOST, tensor)
        else:
            self._host_add(tensor)          # no copy anywhere yet: a new buffer in host memory

    def _submit_cpu(self, kernel: int) -> None:
        for t in self.required[kernel]:
            self.cpu_pending[t] += 1
        self.cpu_fifo.append(kernel)
        self._try_start_cpu()

    def _come_to(self, k: int) -> None:
        """The CPU comes to kernel ``k`` (the ones before it are done): its hints apply now (those
        of a later CPU kernel's tensors too: it comes after them) and what it reads is brought into
        host memory on demand where no hint did."""
        self._cpu_head = k
        for t, a in self._cpu_hints.pop(k, ()):
            self._cpu_mode_hint(t, a, now=True)
        reads = self._reads[k]
        for t in self.required[k]:
            if t in reads:
                self._to_host_for_cpu(t)
            else:
                self._host_add(t)           # written only: a buffer in host memory

    def _try_start_cpu(self) -> None:
        """Start the CPU's next kernel once the CPU is free and its tensors are in host memory.

        Its time is max(flops / FLOP/s, bytes / host memory bandwidth), the bandwidth being what the
        DMA transfers through host memory in flight leave (at least half), fixed when it starts.
        """
        if self.cpu_running >= 0 or not self.cpu_fifo:
            return
        k = self.cpu_fifo[0]
        if self._cpu_head != k:
            self._come_to(k)
        for t in self.required[k]:
            if self.host_in_flight[t] or not self.in_host[t]:
                return
        self.cpu_fifo.popleft()
        mem = self.spec.cpu_memory_Bps
        dma = sum(self._queue_rate[q] for q in _TOUCHES_HOST if self.queues[q])
        if dma > 0:
            mem = min(mem, max(mem / 2, mem - dma))
        if self.spec.cpu_cores_memory_Bps > 0:
            mem = min(mem, self.spec.cpu_cores_memory_Bps)    # what its cores can stream
        secs = max(self.cpu_flops[k] / self._cpu_flop_rate, self.cpu_bytes[k] / mem)
        cycles = math.ceil(secs * self._hz - 1e-6)
        self._cpu_rate = self.cpu_bytes[k] / secs if secs > 0 else 0.0
        self.cpu_running = k
        self.cpu_start[k] = self.now
        self.cpu_busy_cycles += cycles
        self._push_event(self.now + cycles, _CPU_EVENT)
        self._rerate()              # the DMA through host memory shares it with this kernel now

    def _finish_cpu(self) -> None:
        k = self.cpu_running
        self.cpu_running = -1
        self._cpu_rate = 0.0
        self.cpu_finish[k] = self._cpu_end = self.now
        for t in self._writes[k]:
            self.on_ssd[t] = False          # its SSD copy and GPU pages are now stale
            if self.extent[t] >= 0:
                self.gpu_stale[t] = True
        for t in self.required[k]:
            self.cpu_pending[t] -= 1
        for t in self.required[k]:
            if self.cpu_pending[t]:
                continue
            d = self.death[t]
            if not self.is_global[t] and (d == k + 1 or d == -1):
                self._host_drop(t)
                self._free(t)
            for action in self._deferred.pop(t, ()):
                self._cpu_mode_hint(t, action)
        self._try_start_cpu()

    def _wait_cpu(self, kernel: int) -> None:
        """A GPU kernel waits for the CPU kernels that touch its tensors; stale GPU copies are refetched."""
        t0 = self.now
        for t in self.required[kernel]:
            while self.cpu_pending[t]:
                if not self._events:
                    raise _CannotFit(self._cpu_stuck_message())
                self._serve_one()
                self._start_waiting_prefetches()
        self.gpu_wait_cpu_cycles += self.now - t0
        for t in self.required[kernel]:
            if self.extent[t] >= 0 and self.gpu_stale[t]:
                self._cpu_mode_fetch(t)

    def _gpu_wrote(self, kernel: int) -> None:
        """A GPU kernel's outputs make their host and SSD copies stale."""
        for t in self._writes[kernel]:
            self.on_ssd[t] = False
            if self.in_host[t] and not self.host_in_flight[t]:
                if self.host_home[t]:
                    self.in_host[t] = False     # its buffer stays, stale
                else:
                    self._host_drop(t)

    def _check_cpu_done(self, gpu_end: int) -> None:
        if self.cpu_fifo or self.cpu_running >= 0:
            raise _CannotFit(self._cpu_stuck_message())
        if self.cpu_finish:
            self.gpu_wait_cpu_cycles += max(0, self._cpu_end - gpu_end)

    def _cpu_stuck_message(self) -> str:
        k = self.cpu_fifo[0] if self.cpu_fifo else self.cpu_running
        missing = [t for t in self.required[k] if not self.in_host[t]]
        what = f"tensor {missing[0]} ({self.trace.tensor_name[missing[0]]!s}) never reaches host memory" \
            if missing else "it never starts"
        return f"cannot run: CPU kernel {k} ({self.trace.kernel_name[k]}) waits and {what}"

    # -- result -----------------------------------------------------------------
    def _initial_tier_bytes(self) -> dict:
        """Bytes of the global tensors in each tier at the iteration's start."""
        out = {name: 0 for name in TIER_NAMES.values()}
        for t in range(self.trace.n_tensors):
            if self.is_global[t]:
                tier = self.initial_tier[t]
                out[TIER_NAMES[tier]] += self.size_bytes[t] if tier == TIER_GPU else self.off_bytes[t]
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

    def transfer_log(self) -> np.ndarray:
        """Every transfer's segments of constant rate, in the order they ended (:data:`TRANSFER_LOG_DTYPE`).

        A transfer is the rows that share its ``transfer`` id: it starts at its first row's
        ``start`` and ends at its last row's ``end``, and its rows' ``bytes`` add up to its size.
        Times are GPU cycles.  :func:`transfer_spans` folds it to one row per transfer.
        """
        log = np.zeros(len(self._log), TRANSFER_LOG_DTYPE)
        if self._log:
            tid, ten, q, st, en, by = zip(*self._log)
            log["transfer"], log["tensor"], log["queue"] = tid, ten, q
            log["start"], log["end"], log["bytes"] = st, en, by
            log["released"][self._released_rows] = True
        return log

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
            "n_kept_evictions": int(self.n_kept_evictions),
            "n_cancelled_transfers": int(self.n_cancelled_transfers),
            "transfer_log": self.transfer_log(),
        }
        if not self.cpu_mode:
            counters.update({"peak_host_bytes": int(self.peak_host_bytes),
                             "host_capacity_bytes": int(self.spec.host_capacity_bytes),
                             "host_spills": int(self.n_host_spills),
                             "host_spilled_bytes": int(self.host_spilled_bytes)})
        if self.spec.demand_eviction_tier >= 0:
            counters["demand_evictions"] = int(self.n_demand_evictions)
            counters["demand_evicted_bytes"] = int(self.demand_evicted_bytes)
        if recompute_counters is not None:
            counters["recompute"] = recompute_counters
        if self.partition is not None:
            counters["zero_ranks"] = int(self.partition.ranks)
            counters["collective_bytes"] = int(self.collective_traffic)
        if self.cpu_mode:
            counters["traffic_bytes"] = dict(zip(CPU_QUEUE_NAMES, map(int, self.traffic)))
            counters.update({
                "cpu_busy_s": self.cpu_busy_cycles / hz,
                "gpu_wait_cpu_s": self.gpu_wait_cpu_cycles / hz,
                "n_cpu_kernels": int(sum(self.on_cpu)),
                "peak_host_bytes": int(self.peak_host_bytes),
                "pinned_host_bytes": self.pinned_host_bytes,
                "host_capacity_bytes": int(self.spec.host_capacity_bytes),
            })
            # (recompute: the CPU kernels' indices are the expanded trace's; a CPU kernel is never a copy)
            to_trace = (lambda k: k) if self.expansion is None else (lambda k: int(self.expansion.group[k]))
            for k, t in self.cpu_start.items():
                start[to_trace(k)] = t
            for k, t in self.cpu_finish.items():
                finish[to_trace(k)] = t
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
        breakdown = {"compute": compute / hz, "overlap": overlap / hz, "stall": stall / hz}
        if self.cpu_mode:
            breakdown.update(cpu_busy_s=counters["cpu_busy_s"], gpu_wait_cpu_s=counters["gpu_wait_cpu_s"])
            on_cpu = np.array(self.on_cpu, bool)
            counters["kernel_on_cpu"] = on_cpu if self.expansion is None else on_cpu[~self.expansion.is_copy]
        return {
            "time_s": total / hz,
            "failed": False,
            "failure_reason": None,
            "failed_at_kernel": -1,
            "mode": self.spec.mode,
            "iterations": 1,
            "ideal_time_s": ideal / hz,
            "time_cycles": int(total),
            "breakdown_s": breakdown,
            "transfer_busy_s": self.busy_cycles / hz,
            "kernel_start_s": st / hz,
            "kernel_time_s": (fi - st) / hz,
            "kernel_ideal_s": kc / hz,
            "kernel_stall_normalized": norm,
            **counters,
            "gpu_end_cycles": int(self.gpu_end_cycles if self.gpu_end_cycles >= 0 else total),
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
        "transfer_log": np.zeros(0, TRANSFER_LOG_DTYPE),     # (transfer log, issue 43)
        "gpu_end_cycles": None,
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
             backward_start_kernel: int = -1, visit_order: str | None = None, initial_tier=None,
             cpu_kernels=None, cpu_work: "CPUWork | None" = None, demand_eviction: str | None = None,
             host_overflow: str = "ssd", policy: str = "", partition: "ZeroPartition | None" = None) -> dict:
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

    ``cpu_kernels`` (a bool per kernel; mode ``"gds"`` without
    ``scheduler.artifact_quirks``) runs the kernels marked True on the CPU, with
    ``cpu_work`` (:class:`CPUWork`) giving their work and where the tensors start;
    see :func:`cpu_work_for` (``initial_tier`` then places the tensors as
    :class:`CPUWork` says).
    ``demand_eviction`` (``"host"`` or ``"ssd"``; mode ``"gds"`` without
    ``scheduler.artifact_quirks``, no CPU kernels): the policy runs on UVM, so a tensor that
    finds the GPU full, with nothing in flight that would free room, evicts resident tensors
    in arrival order (never the running kernel's) to that tier (the SSD where the host path
    has no bandwidth) instead of failing; the result's counters
    gain ``demand_evictions`` and ``demand_evicted_bytes``.
    ``host_overflow`` (outside ``g10-artifact``): what an eviction to host memory does when
    ``host.memory_GiB`` cannot hold it besides what is there: ``"fail"`` (a policy that offloads to
    pinned host memory and has no tier below it: the run fails naming the tensor) or ``"ssd"``
    (the default, G10's tiers: it goes to the SSD instead; counted in ``host_spills`` /
    ``host_spilled_bytes``).  ``policy`` names the policy in that failure.
    ``partition`` (:class:`ZeroPartition`; with CPU kernels): the run is one rank of a ZeRO
    data-parallel group, its shards and collectives as :class:`ZeroPartition` says, its CPU kernels'
    work divided by the ranks; the counters gain ``zero_ranks`` and ``collective_bytes``.
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
    if demand_eviction is not None:
        tiers = {"host": TIER_HOST, "ssd": TIER_SSD}
        if demand_eviction not in tiers:
            raise TensorSimError(f"demand_eviction = {demand_eviction!r}: must be None, 'host' or 'ssd'")
        if spec.allocator != "pages" or cpu_kernels is not None:
            raise TensorSimError("demand_eviction: only for mode 'gds' outside g10-artifact's quirks (a GPU "
                                 "with virtual memory) and without CPU kernels")
        spec = dataclasses.replace(spec, demand_eviction_tier=tiers[demand_eviction])
    overflow = {"fail": -1, "ssd": TIER_SSD}
    if host_overflow not in overflow:
        raise TensorSimError(f"host_overflow = {host_overflow!r}: must be 'fail' or 'ssd'")
    spec = dataclasses.replace(spec, host_overflow_tier=overflow[host_overflow])
    end_hints = None
    if cpu_kernels is not None:
        h = np.asarray(hints)
        if h.dtype == HINT_DTYPE and h.ndim == 1:
            end_hints = h[h["kernel"] == trace.n_kernels]
    hints = check_hints(trace, hints, mode)
    cpu = None
    if cpu_kernels is not None:
        if mode != "gds" or spec.artifact_quirks:
            raise TensorSimError("cpu_kernels: CPU kernels run in mode 'gds' without scheduler.artifact_quirks "
                                 f"(mode {mode!r}, artifact_quirks {spec.artifact_quirks})")
        if initial_tier is not None:
            initial_tier = check_initial_tier(trace, initial_tier, spec)
            cpu_work = dataclasses.replace(cpu_work or CPUWork(), initial_tier=initial_tier)
        cpu_work = dataclasses.replace(cpu_work or CPUWork(), end_hints=end_hints)
        cpu = cpu_work_for(trace, cpu_kernels, cpu_work)
        initial_tier = None          # the CPU tier places the tensors itself (CPUWork)
    elif cpu_work is not None:
        raise TensorSimError("cpu_work without cpu_kernels: say which kernels run on the CPU")
    elif initial_tier is not None:
        initial_tier = check_initial_tier(trace, initial_tier, spec)
    if partition is not None:
        if cpu is None:
            raise TensorSimError("partition: ZeRO's partitioning needs the CPU tier (cpu_kernels)")
        if int(partition.ranks) != partition.ranks or partition.ranks < 1:
            raise TensorSimError(f"partition.ranks = {partition.ranks!r}: must be an integer >= 1")
        if not partition.collective_Bps > 0:
            raise TensorSimError(f"partition.collective_Bps = {partition.collective_Bps!r}: must be > 0")
        if partition.ranks == 1:
            partition = None
        else:
            # each rank's CPU optimizer updates its own 1/ranks of the parameters
            cpu = dataclasses.replace(cpu, flops=cpu.flops / partition.ranks, bytes=cpu.bytes / partition.ranks)
    expansion = _recompute.expand(trace, hints) if _recompute.has_recompute(hints) else None
    if expansion is not None and cpu is not None:
        cpu = _expand_cpu_work(cpu, expansion)
    reason = working_set_check(trace, config)
    if reason is not None:
        return failed_result(reason, mode=mode, trace=trace, config=config)
    return TensorLevelSimulator(trace, spec, hints, initial_tier, expansion, cpu, policy=policy,
                                partition=partition).run()


def _expand_cpu_work(cpu: "CPUWork", exp) -> "CPUWork":
    """``cpu`` (checked against the trace) for the trace expanded with recompute copies: a copy
    runs on the GPU (its producer is a GPU kernel) and does no CPU work."""
    src, copy = exp.source, exp.is_copy
    return dataclasses.replace(cpu, on_cpu=cpu.on_cpu[src] & ~copy, flops=np.where(copy, 0.0, cpu.flops[src]),
                               bytes=np.where(copy, 0.0, cpu.bytes[src]))


@dataclass(frozen=True)
class CPUWork:
    """What the CPU kernels of a run do and where its tensors start (see :func:`simulate`).

    Attributes
    ----------
    on_cpu : ndarray of bool
        Per kernel: True runs it on the CPU (filled in by :func:`cpu_work_for`).
    flops, bytes : ndarray of float, optional
        Per kernel, the work of a CPU kernel: floating-point operations and bytes of host memory
        read plus written.  None: each kernel's accesses (a tensor read and written counts twice)
        and one operation per 4 bytes written.  A CPU kernel takes max(flops / (cpu.cores x
        cpu.<dtype>_GFLOPs_per_core), bytes / cpu.kernel_memory_GBps()) (roofline; less while DMA
        shares host memory).
    dtype : str
        ``fp32`` or ``bf16``: which peak the flops run at.
    initial_tier : ndarray of int8, optional
        Per tensor, where a global tensor is at the iteration's start (``codes.TIER_GPU`` /
        ``TIER_HOST`` / ``TIER_SSD`` / ``TIER_NOT_PRESENT``); None: every global on the GPU.  A
        tensor that starts in host memory lives there (copies to the GPU keep it).
    host_copies : ndarray of bool, optional
        Per tensor, a second, current copy in host memory at the start (the steady state of a
        tensor the CPU writes and the GPU reads: ZeRO-Offload's parameters); it lives there too.
    pinned_host_bytes : int
        Pinned staging buffers, held in host memory the whole iteration.
    end_hints : ndarray, optional
        The hints at kernel K (after the last kernel; :func:`simulate` fills it in): with CPU
        kernels they are applied after the last kernel and their transfers count in the
        iteration (without CPU kernels they are dropped).
    """

    on_cpu: np.ndarray | None = None
    flops: np.ndarray | None = None
    bytes: np.ndarray | None = None
    dtype: str = "fp32"
    initial_tier: np.ndarray | None = None
    host_copies: np.ndarray | None = None
    pinned_host_bytes: int = 0
    end_hints: np.ndarray | None = None


def cpu_kernel_bytes(trace: Trace) -> np.ndarray:
    """Per kernel, the bytes of its accesses (as the trace gives them): each read and each write once."""
    size = trace.tensor_size_bytes.astype(np.float64)
    mode = trace.access_mode.astype(np.int64)
    times = ((mode & ACCESS_READ) != 0).astype(np.float64) + ((mode & ACCESS_WRITE) != 0)
    per_access = size[trace.access_tensor] * times
    csum = np.concatenate(([0.0], np.cumsum(per_access)))
    off = trace.access_offsets
    return csum[off[1:]] - csum[off[:-1]]


def cpu_work_for(trace: Trace, cpu_kernels, work: "CPUWork | None" = None) -> CPUWork:
    """``work`` checked against ``trace`` with ``on_cpu = cpu_kernels`` and every default filled in.

    Parameters
    ----------
    trace : Trace
        The trace the CPU kernels belong to.
    cpu_kernels : array_like of bool
        One per kernel: True runs it on the CPU.
    work : CPUWork, optional
        The work and placements to check (None: every default).

    Returns
    -------
    CPUWork
        With ``on_cpu``, ``flops``, ``bytes`` and ``end_hints`` filled in.

    Raises
    ------
    TensorSimError
        An array of the wrong length or type, a negative work, an unknown dtype or tier.
    """
    K, T = trace.n_kernels, trace.n_tensors
    on_cpu = np.asarray(cpu_kernels)
    if on_cpu.dtype != bool or on_cpu.shape != (K,):
        raise TensorSimError(f"cpu_kernels: expected a bool array of {K} kernels, got {on_cpu.dtype} {on_cpu.shape}")
    work = work if work is not None else CPUWork()
    out = {}
    for name in ("flops", "bytes"):
        arr = getattr(work, name)
        if arr is None:
            continue
        arr = np.asarray(arr, np.float64)
        if arr.shape != (K,) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise TensorSimError(f"cpu_work.{name}: expected {K} finite values >= 0")
        out[name] = arr
    if "bytes" not in out:
        out["bytes"] = cpu_kernel_bytes(trace)
    if "flops" not in out:
        mode = trace.access_mode
        written = np.where((mode & ACCESS_WRITE) != 0, trace.tensor_size_bytes[trace.access_tensor], 0)
        csum = np.concatenate(([0], np.cumsum(written)))
        off = trace.access_offsets
        out["flops"] = (csum[off[1:]] - csum[off[:-1]]) / 4.0
    if work.dtype not in ("fp32", "bf16"):
        raise TensorSimError(f"cpu_work.dtype = {work.dtype!r}: must be fp32 or bf16")
    tier = work.initial_tier
    if tier is not None:
        tier = np.asarray(tier)
        if tier.shape != (T,) or not np.all(np.isin(tier, (0, TIER_SSD, TIER_HOST, TIER_GPU))):
            raise TensorSimError(f"cpu_work.initial_tier: expected {T} tiers (codes.TIER_*)")
    copies = work.host_copies
    if copies is not None:
        copies = np.asarray(copies, bool)
        if copies.shape != (T,):
            raise TensorSimError(f"cpu_work.host_copies: expected {T} bools")
    if int(work.pinned_host_bytes) < 0:
        raise TensorSimError("cpu_work.pinned_host_bytes: must be >= 0")
    end = np.zeros(0, HINT_DTYPE) if work.end_hints is None else np.asarray(work.end_hints, HINT_DTYPE)
    return CPUWork(on_cpu=on_cpu, flops=out["flops"], bytes=out["bytes"], dtype=work.dtype, initial_tier=tier,
                   host_copies=copies, pinned_host_bytes=int(work.pinned_host_bytes), end_hints=end)


def with_policy(result: dict, name: str, schedule: dict) -> dict:
    """``result`` (a tensor-level simulation's dict) tagged with the policy and its schedule."""
    result = dict(result)
    result["policy"] = name
    result["schedule"] = schedule
    return result
