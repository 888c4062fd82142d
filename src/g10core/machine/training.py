"""Data-parallel training on a machine: ranks that replay a trace and contend for the shared hops.

Each of the first ``n`` GPUs of a machine is a data-parallel rank that replays the whole trace under a
policy, then joins the gradient all-reduce: a tensor-level policy (:mod:`g10core.policies.tensorsim`,
its transfer log the rank's transfers) or a page-level one (Base UVM, DeepUM+, Belady, G10 on the
bandwidth models, its link channels' spans per kernel the rank's transfers, over its last reported
iteration).  The ranks' SSD and host transfers cross the machine's hops
(:mod:`g10core.machine.topology`), where they share each hop max-min fair with the transfers of the
other ranks in flight there (:mod:`g10core.machine.flows`): never "bandwidth / n".

How the ranks and the machine are coupled (a fixed point, round by round):

1. Each rank is simulated alone with its own routes' rates (:func:`~g10core.machine.single_gpu_rates`:
   its volume's RAID0 read and write, host memory to and from it).  Ranks whose configuration is
   the same share one simulation.
2. Every rank's transfer log, merged into busy periods per queue (a queue serves one transfer at a
   time, so back-to-back transfers are one stream), is replayed on the machine's flow model twice:
   all ranks together, and each rank alone.
3. A rank's contention factor per kind of transfer (SSD read, SSD write, host) is how long that kind
   was busy (the union of its busy periods' spans) with every rank in flight over how long alone (at
   least 1: the replay is of the same bytes from the same starts, so this is the loss of rate);
   the rank's next simulation runs at its alone rate / that factor.
4. Until no rate moves by more than ``tolerance`` (relative), or ``rounds`` rounds; a move against
   the previous one goes half way (in log space), which damps the see-saw (slower transfers spread
   out, so they overlap less).

The all-reduce of the gradients overlaps the backward pass as PyTorch's DistributedDataParallel
runs it (Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel Training", VLDB
2020, section 3.2; ``bucket_cap_mb`` = 25 and a first bucket of 1 MiB, the defaults of
``torch.nn.parallel.DistributedDataParallel``): the gradient tensors, in the order the rank's
backward finishes writing them, fill buckets; a bucket's all-reduce starts once its last gradient is
written and the bucket before it is reduced (one communication stream); the optimizer step waits for
the last.  Each bucket's all-reduce is a ring, 2 (n - 1) / n x its bytes over each GPU's link
(NCCL's bus bandwidth definition, NVIDIA/nccl-tests ``doc/PERFORMANCE.md``), at the machine's
published all-reduce bus bandwidth (``[nvlink] allreduce_busbw_GBps``) where it has one, else on the
flow model over the GPUs' links (the ring's n transfers at once), with no per-call latency.  A
rank's iteration is its own plus the all-reduce time left after its backward (``allreduce_exposed_s``);
``overlap=False`` runs the whole all-reduce after the iteration instead (an upper bound).

ZeRO (``zero-infinity``: stage 3; ``zero-offload``: stage 2) partitions across the ranks instead
(Rajbhandari et al., SC 2020, section 5; ZeRO-Infinity, SC 2021, section 6.1): each rank's run is one
rank of the group (``scheduler.zero_ranks`` = n, :class:`g10core.policies.tensorsim.ZeroPartition`):
its copies of parameters, gradients and optimizer state in host memory and on the SSD, and their
PCIe and SSD traffic, are 1/n; its CPU optimizer does 1/n of the work; a parameter is all-gathered
over NVLink after its shard arrives and a gradient reduce-scattered before its shard leaves, at the
machine's collective bus bandwidth (``scheduler.zero_collective_busbw_GBps``: the published
all-reduce bus bandwidth, which nccl-tests defines on the same scale as all-gather's and
reduce-scatter's, or the flow model's over the GPUs' links); no DDP all-reduce follows.

What the ranks share besides the hops: host memory (each rank's ``host.memory_GiB`` is the
machine's / n, its processes' pinned buffers side by side) and, under a policy with a CPU tier, the
CPU: the ranks' optimizer steps run at once (they follow the same collective), so each has 1/n of
the cores (DeepSpeed's CPU Adam threads per process) and of the DRAM bandwidth.

Not modelled: the collectives' share of the PCIe hops on a machine without NVLink, several nodes.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..codes import ROLE_GRADIENT
from .description import Machine
from .flows import Transfer, simulate
from .topology import Topology
from . import drop_unread, single_gpu_rates, single_gpu_sets

__all__ = ["data_parallel", "DataParallelResult", "allreduce_seconds", "gradient_buckets", "allreduce_schedule",
           "QUEUE_KIND"]

# tensorsim's queues (GPU_TO_SSD, SSD_TO_GPU, GPU_TO_HOST, HOST_TO_GPU, HOST_TO_SSD, SSD_TO_HOST) ->
# the configuration rate each runs at (ssd.bandwidth_GBps, ssd.write_bandwidth_GBps, host.bandwidth_GBps)
QUEUE_KIND = ("ssd_write", "ssd_read", "host", "host", "ssd_write", "ssd_read")
KINDS = ("ssd_read", "ssd_write", "host")
MIN_RATE_GBps = 0.1          # the configuration's least bandwidth (params.py)
# torch.nn.parallel.DistributedDataParallel's defaults: bucket_cap_mb = 25, and a first bucket of
# 1 MiB (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES) so that communication starts early
DDP_BUCKET_BYTES = 25 * 2**20
DDP_FIRST_BUCKET_BYTES = 2**20


@dataclass
class DataParallelResult:
    """A data-parallel run on a machine: per GPU and per hop.

    Attributes
    ----------
    per_gpu : list of dict
        ``gpu``, ``iteration_s`` (rank + the all-reduce left after its backward), ``rank_s``,
        ``allreduce_s`` (the all-reduce's whole time, its buckets back to back), ``allreduce_exposed_s``
        (what of it the iteration waits for), ``allreduce_buckets``, ``ideal_s``, the rates it ran at
        (``rates_GBps``), its ``contention`` factors and ``traffic_bytes``.
    hops : dict
        hop -> ``bytes``, ``busy_s`` (some transfer in flight on it) and ``bandwidth_GBps``, over one
        iteration of every rank at once.
    """

    machine: str
    trace: str
    policy: str
    n_gpus: int
    per_gpu: list
    hops: dict
    allreduce_bytes: int
    allreduce_busbw_GBps: float | None
    rounds: int
    converged: bool
    wall_s: float
    failed: bool = False
    failure_reason: str = ""
    notes: list = field(default_factory=list)
    # (hop, start s, end s, fraction in use) over the last round's replay of every rank at once
    hop_segments: list = field(default_factory=list, repr=False)
    # gpu -> [(start s, seconds)] of each bucket's all-reduce, from the start of the rank's iteration
    allreduce_spans: dict = field(default_factory=dict, repr=False)

    @property
    def iteration_s(self) -> float:
        """The slowest rank's iteration (the ranks synchronise at the all-reduce)."""
        return max((g["iteration_s"] for g in self.per_gpu), default=math.inf)

    def busiest_hop(self) -> str | None:
        """The hop busiest in proportion to its bandwidth: bytes / bandwidth, the longest."""
        if not self.hops:
            return None
        return max(self.hops, key=lambda h: (self.hops[h]["bytes"] / 1e9 / self.hops[h]["bandwidth_GBps"], h))

    def to_dict(self) -> dict:
        """Everything, JSON-able (``g10sim machine train --json``)."""
        return {"machine": self.machine, "trace": self.trace, "policy": self.policy, "n_gpus": self.n_gpus,
                "iteration_s": self.iteration_s, "per_gpu": self.per_gpu, "hops": self.hops,
                "busiest_hop": self.busiest_hop(), "allreduce_bytes": self.allreduce_bytes,
                "allreduce_busbw_GBps": self.allreduce_busbw_GBps, "rounds": self.rounds,
                "converged": self.converged, "wall_s": self.wall_s, "failed": self.failed,
                "failure_reason": self.failure_reason, "notes": self.notes}

    def to_pandas(self):
        """Two DataFrames: one row per GPU, one row per hop (pandas).

        Returns
        -------
        tuple
            ``(per_gpu, hops)``.
        """
        import pandas as pd

        gpus = pd.DataFrame([{**{k: v for k, v in g.items() if not isinstance(v, dict)},
                              **{f"rate_{k}_GBps": v for k, v in g["rates_GBps"].items()},
                              **{f"contention_{k}": v for k, v in g["contention"].items()},
                              **{f"traffic_{k}_bytes": v for k, v in g["traffic_bytes"].items()}}
                             for g in self.per_gpu])
        hops = pd.DataFrame([{"hop": h, **d} for h, d in self.hops.items()])
        return gpus, hops

    def write_timeline(self, path) -> None:
        """A Chrome / Perfetto trace: a track per GPU (its rank's iteration, then the all-reduce)
        and a counter track per hop (the fraction of its time in use), over one iteration.

        Parameters
        ----------
        path : str or path
            The JSON file to write (replaced whole).
        """
        import json

        from ..files import write_text_atomic

        ev = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "GPUs"}},
              {"name": "process_name", "ph": "M", "pid": 2, "tid": 0, "args": {"name": "hops"}}]
        for g in self.per_gpu:
            tid = g["gpu"]
            ev.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": f"GPU {tid}"}})
            ev.append({"name": f"rank ({self.policy})", "cat": "rank", "ph": "X", "pid": 1, "tid": tid, "ts": 0.0,
                       "dur": g["rank_s"] * 1e6})
            spans = self.allreduce_spans.get(tid, [])
            if spans:
                ev.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": 1000 + tid,
                           "args": {"name": f"GPU {tid} all-reduce"}})
            for b, (start, dur) in enumerate(spans):
                ev.append({"name": f"all-reduce bucket {b}", "cat": "collective", "ph": "X", "pid": 1,
                           "tid": 1000 + tid, "ts": start * 1e6, "dur": dur * 1e6})
        last: dict = {}
        for hop, t0, t1, use in sorted(self.hop_segments, key=lambda x: (x[0], x[1])):
            if last.get(hop, (None, -1.0))[1] != t0:        # idle since its last segment
                if hop in last:
                    ev.append({"name": hop, "ph": "C", "pid": 2, "ts": last[hop][1] * 1e6, "args": {"use": 0.0}})
            ev.append({"name": hop, "ph": "C", "pid": 2, "ts": t0 * 1e6, "args": {"use": round(use, 6)}})
            last[hop] = (t0, t1)
        for hop, (_t0, t1) in last.items():
            ev.append({"name": hop, "ph": "C", "pid": 2, "ts": t1 * 1e6, "args": {"use": 0.0}})
        write_text_atomic(path, json.dumps({"traceEvents": ev, "displayTimeUnit": "ms"}))

    def summary(self) -> str:
        """A few lines for people."""
        lines = [f"{self.trace} under {self.policy} on {self.machine}, {self.n_gpus} GPU(s) data parallel: "
                 f"iteration {self.iteration_s:.3f} s ({self.rounds} round(s), "
                 f"{'converged' if self.converged else 'not converged'}; {self.wall_s:.1f} s wall)"]
        if self.failed:
            lines.append(f"  failed: {self.failure_reason}")
            return "\n".join(lines)
        for g in self.per_gpu:
            c = ", ".join(f"{k} x{v:.2f}" for k, v in g["contention"].items() if v > 1.0005) or "none"
            if g.get("collective_bytes"):
                sync = (f"rank {g['rank_s']:.3f} with its all-gathers and reduce-scatters "
                        f"({g['collective_bytes'] / 1e9:.2f} GB between the GPUs)")
            else:
                sync = (f"rank {g['rank_s']:.3f} + all-reduce {g['allreduce_exposed_s']:.3f} exposed of "
                        f"{g['allreduce_s']:.3f} in {g['allreduce_buckets']} buckets")
            lines.append(f"  GPU {g['gpu']}: {g['iteration_s']:.3f} s = {sync} (ideal {g['ideal_s']:.3f}); "
                         f"SSD read {g['rates_GBps']['ssd_read']:.2f} GB/s, write {g['rates_GBps']['ssd_write']:.2f}; "
                         f"contention {c}")
        ranked = sorted(self.hops, key=lambda h: -self.hops[h]["bytes"] / 1e9 / self.hops[h]["bandwidth_GBps"])
        for h in ranked[:5]:
            d = self.hops[h]
            lines.append(f"  hop {h:24s} {d['bytes'] / 1e9:9.2f} GB, busy {d['busy_s']:.3f} s "
                         f"({d['bytes'] / 1e9 / d['bandwidth_GBps']:.3f} s at {d['bandwidth_GBps']:g} GB/s)")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def allreduce_seconds(machine: Machine, n: int, nbytes: float) -> tuple[float, float | None]:
    """Seconds of a ring all-reduce of ``nbytes`` over the first ``n`` GPUs, and the bus bandwidth used.

    Parameters
    ----------
    machine : Machine
        The machine (its ``[nvlink] allreduce_busbw_GBps``, else its links).
    n : int
        GPUs in the ring.
    nbytes : float
        Bytes each GPU reduces.

    Returns
    -------
    tuple
        ``(seconds, bus bandwidth in GB/s or None when the flow model gave it)``.
    """
    if n <= 1 or nbytes <= 0:
        return 0.0, None
    wire = 2.0 * (n - 1) / n * nbytes          # bytes each GPU sends (and receives) in a ring
    if machine.allreduce_busbw_GBps is not None:
        return wire / (machine.allreduce_busbw_GBps * 1e9), machine.allreduce_busbw_GBps
    topo = Topology(machine)
    ring = [Transfer(0.0, wire, (topo.gpu_to_gpu(i, (i + 1) % n),)) for i in range(n)]
    return max(simulate(ring).finish_s), None


def gradient_buckets(trace) -> list[tuple[int, int]]:
    """DistributedDataParallel's gradient buckets: ``(kernel, bytes)`` each, in the order they fill.

    The gradient tensors (``trace.tensor_role``) in the order the backward finishes writing them (the
    last kernel before the optimizer step that writes each, or the backward's last kernel for one it
    never writes; ties in tensor order), packed into
    buckets of :data:`DDP_FIRST_BUCKET_BYTES` then :data:`DDP_BUCKET_BYTES` (a tensor larger than a
    bucket is a bucket of its own).  ``kernel`` is the kernel after which the bucket is complete.

    Parameters
    ----------
    trace : Trace

    Returns
    -------
    list of (int, int)
        Empty when the trace has no gradient (or no roles).
    """
    from ..workload.roles import optimizer_kernels
    from ..workload.trace import ACCESS_WRITE

    if trace.tensor_role is None:
        return []
    role = np.asarray(trace.tensor_role)
    opt = optimizer_kernels(trace)
    end = int(opt[0]) if len(opt) else trace.n_kernels
    k, t, m = trace.access_kernel, np.asarray(trace.access_tensor), np.asarray(trace.access_mode)
    w = ((m & ACCESS_WRITE) != 0) & (role[t] == ROLE_GRADIENT) & (k < end)
    last = np.full(trace.n_tensors, -1, np.int64)
    np.maximum.at(last, t[w], k[w])
    # a gradient the backward never writes (written only inside the optimizer step) is reduced
    # with the last bucket, at the backward's end
    last[(role == ROLE_GRADIENT) & (last < 0)] = max(end - 1, 0)
    grads = np.flatnonzero(last >= 0)
    grads = grads[np.lexsort((grads, last[grads]))]
    sizes = np.asarray(trace.tensor_size_bytes)
    out: list[tuple[int, int]] = []
    cap, fill, ready = DDP_FIRST_BUCKET_BYTES, 0, -1
    for g in grads.tolist():
        if fill and fill + int(sizes[g]) > cap:
            out.append((ready, fill))
            cap, fill = DDP_BUCKET_BYTES, 0
        fill += int(sizes[g])
        ready = int(last[g])
    if fill:
        out.append((ready, fill))
    return out


def allreduce_schedule(machine: Machine, n: int, buckets, kernel_end_s, backward_end_s: float,
                       overlap: bool = True) -> tuple[float, float, list]:
    """When each bucket's all-reduce runs, on one communication stream.

    Parameters
    ----------
    machine : Machine
    n : int
        Ranks.
    buckets : list of (int, int)
        :func:`gradient_buckets`.
    kernel_end_s : array of float
        Each kernel's end in the rank's iteration, seconds from its start.
    backward_end_s : float
        When the rank's optimizer step would start (its iteration's end where it has none).
    overlap : bool
        False: every bucket after ``backward_end_s``, back to back (no overlap).

    Returns
    -------
    tuple
        ``(busy_s, exposed_s, spans)``: the buckets' all-reduce time, what of it ends after
        ``backward_end_s``, and ``(start_s, seconds)`` per bucket.
    """
    t, busy, spans = (0.0 if overlap else backward_end_s), 0.0, []
    for kernel, nbytes in buckets:
        dur = allreduce_seconds(machine, n, nbytes)[0]
        start = max(t, float(kernel_end_s[kernel])) if overlap else t
        spans.append((start, dur))
        t = start + dur
        busy += dur
    return busy, max(0.0, t - backward_end_s) if spans else 0.0, spans


def _collective_busbw(machine: Machine, n: int) -> float:
    """The bus bandwidth (GB/s) of a collective over the first ``n`` GPUs: the machine's published
    all-reduce figure, else what the flow model gives a ring over the GPUs' links."""
    seconds, busbw = allreduce_seconds(machine, n, 1e9)
    return busbw if busbw is not None else 2.0 * (n - 1) / n * 1e9 / seconds / 1e9


def _shared_sets(machine: Machine, n: int, preset: str, partitioned: bool, sets=()) -> list[str]:
    """What the ``n`` ranks share besides the hops, as each rank's overrides (applied after the
    user's ``sets``): host memory (1/n each) and, under ZeRO (``partitioned``), the partition and the
    CPU's cores and DRAM bandwidth (1/n each: the ranks' optimizer steps run at once).  The totals
    are the machine's, or what ``sets`` makes them (``--set host.memory_GiB=...`` is the machine's
    host memory); a collective bus bandwidth the user sets is kept."""
    if n <= 1:
        return []
    from ..policies._zero import COLLECTIVE_KEY, RANKS_KEY
    from ..simulator import resolve_config

    total = resolve_config(preset, None, single_gpu_sets(machine) + list(sets))
    out = [f"host.memory_GiB={total.host.memory_GiB / n:.9g}"]
    if partitioned:
        busbw = total.scheduler.zero_collective_busbw_GBps or _collective_busbw(machine, n)
        out += [f"{RANKS_KEY}={n}", f"{COLLECTIVE_KEY}={busbw:.9g}", f"cpu.cores={max(1, total.cpu.cores // n)}",
                f"cpu.memory_bandwidth_GBps={total.cpu.memory_bandwidth_GBps / n:.9g}"]
    return out


def _page_iteration(res):
    """A page-level run's last reported iteration: (its kernels' rows, the cycle it starts at)."""
    k = res.kernels
    it = res.reported_iterations[-1] if res.reported_iterations else int(np.max(k["iteration"]))
    rows = np.flatnonzero(np.asarray(k["iteration"]) == it)
    rows = rows[np.argsort(np.asarray(k["kernel"])[rows], kind="stable")]
    return rows, int(np.min(np.asarray(k["start_cycles"])[rows]))


def _transfer_rows(res):
    """A rank's transfers as rows of (queue, start, end, bytes) in cycles from its iteration's start,
    and the clock: a tensor-level run's transfer log, or a page-level run's link spans (per kernel
    and channel, over its last reported iteration)."""
    from ..codes import TL_CHANNELS
    from ..policies.tensorsim import COLLECTIVE, GPU_TO_HOST, GPU_TO_SSD, HOST_TO_GPU, SSD_TO_GPU

    tl = res.timeline
    hz = float(tl.get("freq_hz", 1.2e9))
    rows = tl.get("tensor_transfers")
    if rows is not None:
        return rows[rows["queue"] != COLLECTIVE], hz       # (a ZeRO collective is on NVLink)
    # each link channel (codes.TL_CHANNELS) as tensorsim's queue of the same direction and tier
    queue_of = {"host_fault": HOST_TO_GPU, "host_prefetch": HOST_TO_GPU, "ssd_fault": SSD_TO_GPU,
                "ssd_prefetch": SSD_TO_GPU, "evict_host": GPU_TO_HOST, "preevict_host": GPU_TO_HOST,
                "evict_ssd": GPU_TO_SSD, "preevict_ssd": GPU_TO_SSD}
    spans = tl.get("spans")
    dtype = np.dtype([("queue", np.int8), ("start", np.int64), ("end", np.int64), ("bytes", np.float64)])
    if spans is None or not len(spans):
        return np.zeros(0, dtype), hz
    sel, base = _page_iteration(res)
    spans = np.asarray(spans)[sel]
    out = []
    for c, ch in enumerate(TL_CHANNELS):
        col = spans[:, c]
        col = col[col["pages"] > 0]
        part = np.zeros(col.size, dtype)
        part["queue"] = queue_of[ch]
        part["start"], part["end"] = col["first"] - base, col["end"] - base
        part["bytes"] = col["pages"] * float(tl.get("page_bytes", 4096))
        out.append(part)
    return np.concatenate(out), hz


def _kernel_times(res):
    """Each trace kernel's start and end, seconds from the rank's iteration's start."""
    k = res.kernels
    if "start_s" in k:
        start = np.asarray(k["start_s"], np.float64)
        return start, start + np.asarray(k["time_s"], np.float64)
    sel, base = _page_iteration(res)
    hz = float(res.timeline.get("freq_hz", 1.2e9))
    return ((np.asarray(k["start_cycles"])[sel] - base) / hz, (np.asarray(k["end_cycles"])[sel] - base) / hz)


def _traffic_bytes(res) -> dict:
    """A rank's bytes per path (a page-level run's: its reported iterations' mean, in whole pages)."""
    if "traffic_bytes" in res.counters:
        return dict(res.counters["traffic_bytes"])
    page = int(res.timeline.get("page_bytes", 4096))
    return {k: int(v) * page for k, v in res.traffic_pages.items()}


def _busy_periods(rows, hz: float):
    """Per queue, the transfers merged into busy periods: (queue, start s, end s, bytes)."""
    out = []
    for q in np.unique(rows["queue"]):
        s = np.sort(rows[rows["queue"] == q], order="start")
        start, end, nbytes = int(s["start"][0]), int(s["end"][0]), float(s["bytes"][0])
        for r in s[1:]:
            if int(r["start"]) <= end:
                end, nbytes = max(end, int(r["end"])), nbytes + float(r["bytes"])
            else:
                out.append((int(q), start / hz, end / hz, nbytes))
                start, end, nbytes = int(r["start"]), int(r["end"]), float(r["bytes"])
        out.append((int(q), start / hz, end / hz, nbytes))
    return out


def _union(intervals) -> float:
    """The length of the union of ``(start, end)`` intervals: how long a kind of transfer was busy."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0.0)


def _routes(topo: Topology, gpu: int, queue: int) -> tuple:
    vol = topo.machine.volume_of_gpu(gpu).drives
    sock = topo.gpu_socket(gpu)
    if queue == 0:
        return tuple(topo.volume_write(gpu))
    if queue == 1:
        return tuple(topo.volume_read(gpu))
    if queue == 2:
        return (topo.gpu_to_host(gpu),)
    if queue == 3:
        return (topo.host_to_gpu(gpu),)
    if queue == 4:
        return tuple(topo.host_to_drive(d, sock) for d in vol)
    return tuple(topo.drive_to_host(d, sock) for d in vol)


def data_parallel(trace, policy: str, machine: Machine, n_gpus: int | None = None, *, preset: str = "default",
                  sets=(), rounds: int = 6, tolerance: float = 0.01, overlap: bool = True) -> DataParallelResult:
    """Train ``trace`` data parallel on the first ``n_gpus`` GPUs of ``machine`` under ``policy``.

    Parameters
    ----------
    trace : str or path or Trace
        The trace each rank replays.
    policy : str
        A policy that moves data: tensor level (``teraio``, ``zero-infinity``, ``g10-gds``, ...) or page
        level (``g10``, ``base-uvm``, ...; on the bandwidth models, not ``detailed``).
    machine : Machine
        The machine (:func:`g10core.machine.load`).
    n_gpus : int, optional
        Ranks (default: every GPU of the machine).
    preset : str
        The configuration preset.
    sets : sequence of str
        ``section.key=value`` overrides after the machine's (e.g. ``gpu.memory_GiB=40``).
    rounds : int
        At most this many rounds of the fixed point.
    tolerance : float
        Stop when no rank's rate moves by more than this (relative).
    overlap : bool
        The gradient all-reduce overlaps the backward pass, bucket by bucket (DistributedDataParallel);
        False: it follows the iteration whole (an upper bound).

    Returns
    -------
    DataParallelResult
        Per GPU and per hop.
    """
    from ..errors import MachineError
    from ..simulator import Simulator, resolve_config
    from ..workload.trace import read_trace
    from ..workload.tracestore import resolve_trace

    t0 = time.perf_counter()
    n = machine.gpus.count if n_gpus is None else int(n_gpus)
    if not 1 <= n <= machine.gpus.count:
        raise MachineError(f"{machine.path}: --gpus {n}: the machine has {machine.gpus.count} GPUs")
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    from ..policies import get as get_policy
    try:
        level = getattr(get_policy(policy), "level", "tensor")
    except KeyError as exc:              # an unknown name: bad input, one line
        raise ValueError(str(exc.args[0]) if exc.args else f"unknown policy {policy!r}") from None
    if level not in ("tensor", "page"):
        raise ValueError(f"policy {policy!r} moves no data: data-parallel runs on a machine take a policy that "
                         "does (teraio, zero-infinity, g10, base-uvm, g10-gds, ...)")
    if level == "page":
        cfg = resolve_config(preset, None, list(sets))
        if cfg.ssd.model != "bandwidth" or cfg.link.model != "slots":
            raise ValueError(f"policy {policy!r} under ssd.model = {cfg.ssd.model}, link.model = {cfg.link.model}: "
                             "a page-level rank on a machine runs on the bandwidth models (ssd.model = bandwidth, link.model = slots: its routes' rates set "
                             "ssd.bandwidth_GBps and host.bandwidth_GBps), not the detailed devices")
    topo = Topology(machine)
    gpus = list(range(n))
    from ..policies._zero import RANKS_KEY
    partitioned = n > 1 and RANKS_KEY in getattr(get_policy(policy), "reads", ())
    shared_sets = drop_unread(_shared_sets(machine, n, preset, partitioned, sets), policy, preset)
    alone = {g: single_gpu_rates(machine, g) for g in gpus}
    base = {g: {"ssd_read": alone[g]["ssd_read"], "ssd_write": alone[g]["ssd_write"],
                "host": min(alone[g]["host_to_gpu"], alone[g]["gpu_to_host"])} for g in gpus}
    rates = {g: dict(base[g]) for g in gpus}
    cache: dict = {}
    tr = trace if hasattr(trace, "n_kernels") else None

    def run_rank(g):
        r = rates[g]
        key = tuple(round(r[k], 9) for k in KINDS) + (tuple(sets),)
        if key not in cache:
            write = 0 if r["ssd_write"] == r["ssd_read"] else r["ssd_write"]
            rank_sets = drop_unread(single_gpu_sets(machine, g) + [
                f"ssd.bandwidth_GBps={r['ssd_read']:.9g}", f"host.bandwidth_GBps={r['host']:.9g}",
                f"ssd.write_bandwidth_GBps={write:.9g}"], policy, preset) + list(sets) + shared_sets
            res = Simulator(resolve_config(preset, None, rank_sets)).run(trace, policy, timeline=True)
            cache[key] = res
        return cache[key]

    converged, results, shared, done_rounds = False, {}, None, 0
    ran_with: dict = {}
    route_of: dict = {}
    last_step = {g: {k: 0.0 for k in KINDS} for g in gpus}
    contention: dict = {g: {k: 1.0 for k in KINDS} for g in gpus}
    for done_rounds in range(1, rounds + 1):
        ran_with = {g: dict(rates[g]) for g in gpus}
        results = {g: run_rank(g) for g in gpus}
        failed = [g for g in gpus if results[g].failed]
        if failed:
            res = results[failed[0]]
            return DataParallelResult(machine.name, str(getattr(trace, "name", trace)), policy, n, [], {}, 0, None,
                                      done_rounds, False, time.perf_counter() - t0, True,
                                      f"GPU {failed[0]}: {res.failure_reason}")
        periods = {}
        for g in gpus:
            rows, hz = _transfer_rows(results[g])
            periods[g] = _busy_periods(rows, hz) if len(rows) else []
        transfers, owner = [], []
        for g in gpus:
            for q, s, _e, b in periods[g]:
                if (g, q) not in route_of:
                    route_of[g, q] = _routes(topo, g, q)
                transfers.append(Transfer(s, b, route_of[g, q]))
                owner.append((g, q))
        shared = simulate(transfers, record=True)
        moved = 0.0
        for g in gpus:
            mine = [i for i, (h, _q) in enumerate(owner) if h == g]
            solo = simulate([transfers[i] for i in mine])
            spans = {k: ([], []) for k in KINDS}
            for j, i in enumerate(mine):
                k = QUEUE_KIND[owner[i][1]]
                spans[k][0].append((transfers[i].start_s, shared.finish_s[i]))
                spans[k][1].append((transfers[i].start_s, solo.finish_s[j]))
            took = {k: (_union(spans[k][0]), _union(spans[k][1])) for k in KINDS}
            new = {}
            for k in KINDS:
                factor = max(1.0, took[k][0] / took[k][1]) if took[k][1] > 0 else 1.0
                target = max(base[g][k] / factor, MIN_RATE_GBps)
                # damp only a see-saw: a move against the last one goes half way (geometric mean)
                step = math.log(target / rates[g][k])
                if step * last_step[g][k] < 0:
                    step /= 2
                last_step[g][k] = step
                new[k] = rates[g][k] * math.exp(step)
                moved = max(moved, abs(new[k] / rates[g][k] - 1))
                contention[g][k] = factor
            rates[g] = new
        if moved <= tolerance:
            converged = True
            break
    # the ranks that ran last, the rates they ran at and the contention factors the replay of that round found
    ar_bytes = 0
    if tr is None:
        tr = read_trace(resolve_trace(trace))
    if tr.tensor_role is not None and not partitioned:
        ar_bytes = int(np.sum(np.asarray(tr.tensor_size_bytes)[np.asarray(tr.tensor_role) == ROLE_GRADIENT]))
    busbw = allreduce_seconds(machine, n, ar_bytes)[1]
    buckets = gradient_buckets(tr) if n > 1 and not partitioned else []
    from ..workload.roles import optimizer_kernels
    opt = optimizer_kernels(tr)
    per_gpu, spans_of = [], {}
    for g in gpus:
        res = results[g]
        start, kernel_end = _kernel_times(res)
        backward_end = float(start[opt[0]]) if len(opt) else res.iteration_time_s
        ar_s, exposed, spans_of[g] = allreduce_schedule(machine, n, buckets, kernel_end, backward_end, overlap)
        per_gpu.append({"gpu": g, "iteration_s": res.iteration_time_s + exposed, "rank_s": res.iteration_time_s,
                        "allreduce_s": ar_s, "allreduce_exposed_s": exposed, "allreduce_buckets": len(buckets),
                        "ideal_s": res.ideal_time_s,
                        "rates_GBps": {k: round(v, 6) for k, v in ran_with[g].items()},
                        "contention": {k: round(v, 4) for k, v in contention[g].items()},
                        "traffic_bytes": _traffic_bytes(res),
                        "collective_bytes": int(res.counters.get("collective_bytes", 0)),
                        "peak_host_bytes": int(res.counters.get("peak_host_bytes", 0))})
    hops = {h: {"bytes": shared.hop_bytes[h], "busy_s": shared.hop_busy_s.get(h, 0.0),
                "bandwidth_GBps": topo.bandwidth[h]} for h in sorted(shared.hop_bytes)} if shared else {}
    segments = list(shared.segments) if shared else []
    notes = []
    if not converged:
        notes.append(f"the rates moved by more than {tolerance:g} in the last of {rounds} rounds")
    if partitioned:
        via = ("over NVLink" if machine.nvlink_GBps else
               "over the GPUs' PCIe links (beside, not sharing, the ranks' storage traffic)")
        notes.append(f"ZeRO partitions across the {n} ranks: each moves 1/{n} of the parameters, gradients and "
                     f"optimizer state over PCIe and all-gathers / reduce-scatters the rest {via} at "
                     f"{_collective_busbw(machine, n):.4g} GB/s (collective_bytes); no DDP all-reduce")
    elif n > 1 and busbw is None:
        notes.append("all-reduce on the flow model at the links' line rate (no published bus bandwidth for "
                     "this machine): a lower bound on its time")
    return DataParallelResult(machine.name, str(getattr(trace, "name", trace)), policy, n, per_gpu, hops,
                              ar_bytes, busbw, done_rounds, converged, time.perf_counter() - t0, notes=notes,
                              hop_segments=segments, allreduce_spans=spans_of)
