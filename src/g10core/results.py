"""Results of a simulation: :class:`Result`, its per-iteration :class:`IterationStats`, writers.

A :class:`Result` is built by :class:`g10core.simulator.Simulator` from one of three
sources, all reduced to the same shape:

* the compiled page-level replay (Base UVM, DeepUM+, G10): per-kernel rows, the
  per-iteration PCIe counters and the transfer-busy boundaries, turned into the
  artifact's per-iteration totals and stall/overlap/compute breakdown by
  :func:`summarize` (the semantics of the published simulator's ``Stat`` class);
* a tensor-level simulation (FlashNeuron, G10-GDS, G10-Host): one iteration;
* ``ideal``: the sum of the ideal kernel times, no simulation.

Units are in every key name (``time_s``, ``faults_pages``, ``breakdown_s``).  The
number the figures use is :attr:`Result.iteration_time_s`: the fastest iteration
(the artifact's figure scripts take ``min(iter0, iter1)``; iteration 0 carries the
cold start).  A failed run (cannot fit, host memory overflow, FlashNeuron out of
memory) has ``failed=True``, a reason, no iterations and ``iteration_time_s = inf``,
written to JSON as ``null``.
"""
from __future__ import annotations

import json
import math
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SCHEMA = "g10core-result"
SCHEMA_VERSION = 1

FAULT_KEYS = ("host", "ssd", "unallocated")
TRAFFIC_KEYS = ("ssd_to_gpu", "gpu_to_ssd", "host_to_gpu", "gpu_to_host")
BREAKDOWN_KEYS = ("compute", "overlap", "stall")

# columns of the compiled replay's per-kernel rows (``_replay.Replay.run()["kernels"]``):
# the fields of struct kernel_row (_types.pxd), mirrored in types.KERNEL_ROW_DTYPE
from .codes import KERNEL_COLUMNS, KERNEL_ROW_DTYPE, as_columns  # noqa: E402


# ---- the artifact's statistics (moved here from reference.py) -------------------

def summarize(K, t11, t00, kernels, pcie, boundaries, iterations, host_overflow=False):
    """Per-iteration totals and the time breakdown, the way the artifact's Stat computes them.

    ``kernels``: rows ``(iteration, kernel, start, end, in_transfer, host, ssd,
    unallocated, ...)`` in execution order; ``pcie``: rows ``(iteration, time, alloc,
    in_ssd, in_host, out_ssd, out_host)`` (per tick or already summed per iteration);
    ``boundaries``: ``(iteration, time, is_begin)`` markers of transfer-busy periods.
    A kernel's time is its end minus the previous kernel's end.
    """
    its = []
    last_end = 0
    for it in range(iterations):
        its.append(dict(exe_cycles=0, ideal_cycles=0, pf_cycles=0, in_transfer=0, host_faults=0,
                        ssd_faults=0, unalloc_faults=0, alloc=0, in_ssd=0, in_host=0,
                        out_ssd=0, out_host=0, stall=0, overlap=0, compute=0))
    spans = []
    for (it, k, s, e, intr, cpu, ssd, un, *_rest) in kernels:
        d = its[it]
        d["exe_cycles"] += e - last_end
        spans.append((last_end, e, it, k))
        last_end = e
        d["ideal_cycles"] += int(t11[k])
        d["pf_cycles"] += int(t00[k])
        d["in_transfer"] += intr
        d["host_faults"] += cpu
        d["ssd_faults"] += ssd
        d["unalloc_faults"] += un
    for (it, _t, alloc, in_ssd, in_cpu, out_ssd, out_cpu) in pcie:
        if it >= iterations:
            continue
        d = its[it]
        d["alloc"] += alloc
        d["in_ssd"] += in_ssd
        d["in_host"] += in_cpu
        d["out_ssd"] += out_ssd
        d["out_host"] += out_cpu
    # transfer busy intervals from the boundary markers
    busy = []
    begin = None
    for (_it, t, is_begin) in boundaries:
        if begin is None:
            begin = t
        else:
            busy.append((begin, t))
            begin = None
    if begin is not None:
        busy.append((begin, last_end))
    per_kernel = breakdown(spans, busy, t11)
    for (it, k, comp, ov, st) in per_kernel:
        its[it]["compute"] += comp
        its[it]["overlap"] += ov
        its[it]["stall"] += st
    return dict(iterations=its, kernels=kernels, host_overflow=host_overflow,
                per_kernel_breakdown=per_kernel)


def breakdown(spans, busy, t11):
    """The artifact's sweep of kernel spans against transfer-busy intervals.

    Per kernel span: ``transfer`` = cycles of the span during which some transfer was
    in flight; compute = total - transfer, overlap = transfer + ideal - total,
    stall = total - ideal (an overlap below zero is folded into the stall).
    """
    out = []
    ti = ki = 0
    acc = 0

    def close(span):
        nonlocal acc
        s, e, it, k = span
        total = e - s
        ideal = int(t11[k])
        comp = total - acc
        ov = acc + ideal - total
        st = total - ideal
        if ov < 0:
            st -= ov
            ov = 0
        out.append((it, k, comp, ov, st))
        acc = 0

    while ti < len(busy) and ki < len(spans):
        bs, be = busy[ti]
        s, e = spans[ki][0], spans[ki][1]
        if s < be and bs < e:
            acc += min(e, be) - max(s, bs)
            if e < be:
                close(spans[ki])
                ki += 1
            else:
                ti += 1
        else:
            if s < bs:
                close(spans[ki])
                ki += 1
            else:
                ti += 1
    while ki < len(spans):
        close(spans[ki])
        ki += 1
    return out


def summarize_replay(raw: dict, t11, t00, iterations: int) -> dict:
    """:func:`summarize` of the compiled replay's output dict (``Replay.run()``)."""
    kernels = [tuple(r) for r in np.asarray(raw["kernels"], np.int64).tolist()]
    pcie = [(i, 0, *row) for i, row in enumerate(np.asarray(raw["pcie"], np.int64).tolist())]
    bounds = [(0, t, b) for t, b in np.asarray(raw["boundaries"], np.int64).reshape(-1, 2).tolist()]
    return summarize(len(t11), t11, t00, kernels, pcie, bounds, iterations, bool(raw["host_overflow"]))


# ---- result types ---------------------------------------------------------------

def _finite_or_none(x):
    return float(x) if x is not None and math.isfinite(x) else None


@dataclass(frozen=True)
class IterationStats:
    """One simulated training iteration.  Seconds are GPU cycles / clock (cycles kept too)."""

    index: int
    time_s: float
    ideal_time_s: float
    faults_pages: dict             # host, ssd, unallocated: pages faulted, summed over kernels
    traffic_pages: dict            # ssd_to_gpu, gpu_to_ssd, host_to_gpu, gpu_to_host
    breakdown_s: dict              # compute, overlap, stall
    in_transfer_pages: int = 0     # faulting pages found already in flight
    allocated_pages: int = 0       # pages given a GPU frame (fetches included)
    all_fault_time_s: float | None = None   # sum of t00: every page faulting (page level)
    time_cycles: int | None = None
    ideal_cycles: int | None = None

    @property
    def slowdown(self) -> float:
        return self.time_s / self.ideal_time_s if self.ideal_time_s > 0 else math.nan

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "time_s": self.time_s,
            "ideal_time_s": self.ideal_time_s,
            "slowdown": _finite_or_none(self.slowdown),
            "time_cycles": self.time_cycles,
            "ideal_cycles": self.ideal_cycles,
            "all_fault_time_s": self.all_fault_time_s,
            "faults_pages": {k: int(self.faults_pages[k]) for k in FAULT_KEYS},
            "in_transfer_pages": int(self.in_transfer_pages),
            "traffic_pages": {k: int(self.traffic_pages[k]) for k in TRAFFIC_KEYS},
            "allocated_pages": int(self.allocated_pages),
            "breakdown_s": {k: float(self.breakdown_s[k]) for k in BREAKDOWN_KEYS},
        }


@dataclass(frozen=True, eq=False)
class Result:
    """The outcome of one run: what ran (policy, resolved config, trace), and its numbers.

    ``kernels`` holds per-kernel numpy arrays (page level: the columns of
    :data:`KERNEL_COLUMNS` plus ``compute/overlap/stall_cycles``; tensor level:
    ``start_s`` and ``time_s``); they are left out of the default JSON
    (``to_dict(kernels=True)`` puts them in).
    """

    policy: str
    level: str                     # "page", "tensor" or "ideal"
    preset: str
    config: dict                   # the resolved configuration (SimConfig.to_dict())
    config_hash: str
    trace: dict                    # identity: path, model, batch_size, counts, footprint, digest
    ideal_time_s: float            # sum of the ideal kernel times (cycle-converted)
    iterations: tuple = ()         # of IterationStats; empty when failed
    failed: bool = False
    failure_reason: str | None = None
    hints: dict = field(default_factory=dict)      # source, policy, path, n_hints
    counters: dict = field(default_factory=dict)   # level-specific counters (ticks, transfers, ...)
    metadata: dict = field(default_factory=dict)   # wall time, peak RSS, versions
    kernels: dict = field(default_factory=dict)    # per-kernel numpy arrays

    # ---- derived numbers ----
    @property
    def best_iteration(self) -> int | None:
        """Index of the fastest iteration (the one the figures use), None when failed."""
        if self.failed or not self.iterations:
            return None
        return min(self.iterations, key=lambda it: (it.time_s, it.index)).index

    @property
    def iteration_time_s(self) -> float:
        """Seconds per iteration as the figures use it: the fastest iteration; inf when failed."""
        best = self.best_iteration
        return math.inf if best is None else self.iterations[best].time_s

    @property
    def slowdown(self) -> float:
        """iteration_time_s / ideal_time_s (inf when failed)."""
        return self.iteration_time_s / self.ideal_time_s if self.ideal_time_s > 0 else math.nan

    @property
    def normalized_performance(self) -> float:
        """ideal_time_s / iteration_time_s (Fig. 11's y axis); 0 when failed."""
        t = self.iteration_time_s
        return self.ideal_time_s / t if t > 0 else math.nan

    # ---- writers ----
    def to_dict(self, kernels: bool = False) -> dict:
        """Plain JSON-able dict; non-finite numbers become None (``null``)."""
        from . import __version__

        out = {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "g10core_version": __version__,
            "policy": self.policy,
            "level": self.level,
            "preset": self.preset,
            "config": self.config,
            "config_hash": self.config_hash,
            "trace": self.trace,
            "hints": self.hints,
            "iteration_time_s": self.iteration_time_s,
            "ideal_time_s": self.ideal_time_s,
            "slowdown": self.slowdown,
            "normalized_performance": None if self.failed else self.normalized_performance,
            "best_iteration": self.best_iteration,
            "failed": bool(self.failed),
            "failure_reason": self.failure_reason,
            "iterations": [it.to_dict() for it in self.iterations],
            "counters": self.counters,
            "metadata": self.metadata,
        }
        if kernels:
            out["kernels"] = {k: np.asarray(v).tolist() for k, v in self.kernels.items()}
        return jsonable(out)

    def to_json(self, kernels: bool = False, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(kernels), indent=indent, allow_nan=False) + "\n"

    def write_json(self, path, kernels: bool = False) -> Path:
        """Write :meth:`to_json` to ``path`` atomically (temporary file, then rename)."""
        return write_text_atomic(path, self.to_json(kernels))


def write_text_atomic(path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temporary file in the same folder and a rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def jsonable(obj):
    """numpy scalars/arrays to Python, non-finite floats to None, recursively."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


# ---- builders -----------------------------------------------------------------

def from_replay(raw: dict, *, t11, t00, freq_hz: int, iterations: int, **common) -> Result:
    """A page-level Result from the compiled replay's output dict."""
    s = summarize_replay(raw, t11, t00, iterations)
    hz = float(freq_hz)
    its = []
    for i, d in enumerate(s["iterations"]):
        its.append(IterationStats(
            index=i,
            time_s=d["exe_cycles"] / hz,
            ideal_time_s=d["ideal_cycles"] / hz,
            faults_pages={"host": d["host_faults"], "ssd": d["ssd_faults"], "unallocated": d["unalloc_faults"]},
            traffic_pages={"ssd_to_gpu": d["in_ssd"], "gpu_to_ssd": d["out_ssd"],
                           "host_to_gpu": d["in_host"], "gpu_to_host": d["out_host"]},
            breakdown_s={"compute": d["compute"] / hz, "overlap": d["overlap"] / hz, "stall": d["stall"] / hz},
            in_transfer_pages=d["in_transfer"],
            allocated_pages=d["alloc"],
            all_fault_time_s=d["pf_cycles"] / hz,
            time_cycles=int(d["exe_cycles"]),
            ideal_cycles=int(d["ideal_cycles"]),
        ))
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    kern = {name: rows[:, j].copy() for j, name in enumerate(KERNEL_COLUMNS)}
    pk = np.asarray(s["per_kernel_breakdown"], np.int64).reshape(-1, 5)
    kern["compute_cycles"], kern["overlap_cycles"], kern["stall_cycles"] = pk[:, 2], pk[:, 3], pk[:, 4]
    return Result(level="page", iterations=tuple(its), kernels=kern,
                  ideal_time_s=int(np.sum(t11)) / hz, **common)


def from_tensor_level(d: dict, *, page_size_bytes: int, **common) -> Result:
    """A Result from a tensor-level simulation dict (``g10core.tensorsim``)."""
    ideal = float(d["ideal_time_s"])
    counters = {k: d[k] for k in ("n_transfers", "n_on_demand_fetches", "peak_gpu_bytes",
                                  "gpu_capacity_bytes", "leaked_bytes", "transfer_busy_s",
                                  "failed_at_kernel", "mode", "visit_order") if k in d}
    counters["traffic_bytes"] = {k: int(v) for k, v in d.get("traffic_bytes", {}).items()}
    if "schedule" in d:
        counters["schedule"] = d["schedule"]
    if d.get("failed"):
        return failed(d.get("failure_reason") or "tensor-level simulation failed", level="tensor",
                      ideal_time_s=ideal, counters=counters, **common)
    tb = d["traffic_bytes"]
    page = int(page_size_bytes)
    it = IterationStats(
        index=0,
        time_s=float(d["time_s"]),
        ideal_time_s=ideal,
        faults_pages={k: 0 for k in FAULT_KEYS},     # no paging: tensors move whole, on schedule
        traffic_pages={k: -(-int(tb.get(k, 0)) // page) for k in TRAFFIC_KEYS},
        breakdown_s={k: float(d["breakdown_s"][k]) for k in BREAKDOWN_KEYS},
        time_cycles=d.get("time_cycles"),
    )
    kern = {}
    if len(d.get("kernel_start_s", ())):
        kern = {"start_s": np.asarray(d["kernel_start_s"], float), "time_s": np.asarray(d["kernel_time_s"], float)}
    return Result(level="tensor", iterations=(it,), ideal_time_s=ideal, counters=counters,
                  kernels=kern, **common)


def ideal(t11, *, freq_hz: int, iterations: int, **common) -> Result:
    """Every tensor resident: each iteration takes the sum of the ideal kernel times."""
    cycles = int(np.sum(t11))
    t = cycles / float(freq_hz)
    its = tuple(IterationStats(
        index=i, time_s=t, ideal_time_s=t,
        faults_pages={k: 0 for k in FAULT_KEYS}, traffic_pages={k: 0 for k in TRAFFIC_KEYS},
        breakdown_s={"compute": t, "overlap": 0.0, "stall": 0.0},
        time_cycles=cycles, ideal_cycles=cycles) for i in range(iterations))
    return Result(level="ideal", iterations=its, ideal_time_s=t, **common)


def failed(reason: str, *, level: str, ideal_time_s: float, **common) -> Result:
    """A run that cannot happen or was aborted: no iterations, time infinite."""
    return Result(level=level, iterations=(), failed=True, failure_reason=" ".join(str(reason).split()),
                  ideal_time_s=float(ideal_time_s), **common)
