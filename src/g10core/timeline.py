"""A run as a timeline: the trace-event JSON format that ui.perfetto.dev and chrome://tracing open.

:func:`write_timeline` (``Result.write_timeline``, ``g10sim run --timeline FILE.json``) writes
one file of the Trace Event Format's JSON object form (``{"traceEvents": [...]}``; Google's
"Trace Event Format" document, the format Chrome's trace viewer and Perfetto's JSON importer
read): complete events (``ph: "X"``, ``ts`` and ``dur`` in microseconds) for spans, counter
events (``ph: "C"``) for levels, metadata events (``ph: "M"``: ``process_name``,
``thread_name`` and their sort indices) that name the tracks.  Times are whole nanoseconds
(cycles at the GPU clock, rounded once per boundary), written as microseconds with three
decimals, so that spans that tile in cycles tile in the file too.

Tracks (``docs/guide/timeline.md`` says how exact each is):

* GPU / ``kernels``: one span per kernel execution, from the previous kernel's end to its
  own (a kernel's time as the results count it): each iteration's spans tile its time;
  GPU / ``iterations``: one span per iteration;
* PCIe link / one track per direction and cause (host->GPU faults and prefetches, SSD->GPU
  faults and prefetches, GPU->host and GPU->SSD evictions and pre-evictions): per kernel
  execution the transfers of that kind, from the first one's start to the last one's end,
  merged with the next where they touch or overlap (recorded runs only);
* fault handler (``detailed``): every fault batch; hint transfers (merged where they overlap);
* SSD (``detailed``): garbage collection per kernel execution, merged where they overlap;
* memory: counters of GPU and host memory in use and of pages in flight;
* CPU / ``kernels`` (tensor level, where the CPU tier ran kernels: ZeRO-Offload, ZeRO-Infinity):
  one span per CPU kernel from its start to its end on the CPU; the GPU track then holds the
  GPU's kernels only, each from the previous GPU kernel's end to its own;
* tensor level (every tensor-level policy): GPU / ``waits``, each stretch of the GPU's waiting
  named by what it waited for (``results.tensor_waits``: an SSD or link direction, the CPU, or
  the CPU waiting for a transfer), the iteration's tail after the GPU's last kernel included, so
  that GPU / ``kernels`` and ``waits`` together cover the iteration; CPU / ``waits`` (with CPU
  kernels): the CPU's waits for its kernels' tensors and its ``idle`` stretches, so that the CPU's
  two tracks tile the iteration; PCIe link / one track per direction (GPU->SSD, SSD->GPU,
  GPU->host, host->GPU), SSD / ``reads`` and ``writes``, host / ``SSD->host`` and ``host->SSD``:
  the transfers (``tensorsim``'s transfer log), merged where they touch.

:func:`read_timeline` reads such a file back (``g10sim report timeline``); :func:`tracks` groups
its events by track for a picture (``g10core.experiments.report.plot_timeline``).

Nothing here grows with pages: events are per kernel, per merged span and per fault batch.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .codes import KERNEL_COLUMNS, KERNEL_ROW_DTYPE, TL_CHANNELS, TL_OP_KINDS, TRAFFIC_ROW_DTYPE, as_columns
from .files import read_text, replacing

SCHEMA = "g10core-timeline"
SCHEMA_VERSION = 1
GiB = float(1 << 30)

# processes (pid) and their tracks (tid), in display order
PID_GPU, PID_LINK, PID_HANDLER, PID_SSD, PID_MEMORY, PID_CPU, PID_HOST = 1, 2, 3, 4, 5, 6, 7
PROCESS_NAMES = {PID_GPU: "GPU", PID_LINK: "PCIe link", PID_HANDLER: "fault handler", PID_SSD: "SSD",
                 PID_MEMORY: "memory", PID_CPU: "CPU", PID_HOST: "host"}
TID_CPU_KERNELS, TID_CPU_WAITS = 1, 2
TID_GPU_WAITS = 3
# tensor level: the transfer log's queues (tensorsim's order: GPU->SSD, SSD->GPU, GPU->host, host->GPU,
# host->SSD, SSD->host) on the tracks that draw them, (pid, tid, track name, sort index)
QUEUE_TRACKS = {0: ((PID_LINK, 11, "GPU->SSD", 3), (PID_SSD, 3, "writes", 2)),
                1: ((PID_LINK, 12, "SSD->GPU", 0), (PID_SSD, 2, "reads", 1)),
                2: ((PID_LINK, 13, "GPU->host", 2),),
                3: ((PID_LINK, 14, "host->GPU", 1),),
                4: ((PID_HOST, 2, "host->SSD", 1), (PID_SSD, 3, "writes", 2)),
                5: ((PID_HOST, 1, "SSD->host", 0), (PID_SSD, 2, "reads", 1)),
                6: ((PID_LINK, 15, "NVLink collectives", 4),)}
QUEUE_SPAN_NAMES = ("GPU->SSD", "SSD->GPU", "GPU->host", "host->GPU", "host->SSD", "SSD->host",
                    "all-gather / reduce-scatter")
CPU_SORT = 2         # the CPU's kernels right below the GPU's
TID_KERNELS, TID_ITERATIONS = 1, 2
TID_PHASES = 4       # an inference run's prefill and decode steps (Result.inference)
TID_BATCHES, TID_HINT_IN, TID_HINT_OUT = 1, 2, 3
TID_GC = 1
# a link track per channel (codes.TL_CHANNELS order): its name and its spans' name
CHANNEL_TRACKS = {
    "host_fault": ("host->GPU faults", "fault"),
    "host_prefetch": ("host->GPU prefetches", "prefetch"),
    "ssd_fault": ("SSD->GPU faults", "fault"),
    "ssd_prefetch": ("SSD->GPU prefetches", "prefetch"),
    "evict_host": ("GPU->host evictions", "evict"),
    "preevict_host": ("GPU->host pre-evictions", "pre-evict"),
    "evict_ssd": ("GPU->SSD evictions", "evict"),
    "preevict_ssd": ("GPU->SSD pre-evictions", "pre-evict"),
}
# link tracks in display order: into the GPU, then out of it
CHANNEL_ORDER = ("host_fault", "host_prefetch", "ssd_fault", "ssd_prefetch",
                 "evict_host", "preevict_host", "evict_ssd", "preevict_ssd")
COUNTER_GPU, COUNTER_HOST, COUNTER_INFLIGHT = "GPU memory used", "host memory used", "pages in flight"

# The resources a wait is attributed to: tensorsim's transfer queues (in its queue order), the CPU
# computing, what no transfer or CPU kernel explains (a recompute's copies, an allocation), and the
# CPU's idle stretches.
WAIT_RESOURCES = ("SSD write (GPU->SSD)", "SSD read (SSD->GPU)", "link GPU->host", "link host->GPU",
                  "SSD write (host->SSD)", "SSD read (SSD->host)", "NVLink collective", "CPU", "other", "idle")
WAIT_CPU, WAIT_OTHER, WAIT_IDLE = 7, 8, 9
WAIT_SPAN_DTYPE = np.dtype([("start", np.int64), ("end", np.int64), ("resource", np.int8),
                            ("via_cpu", np.bool_), ("tensor", np.int64), ("kernel", np.int64)])


# One row per segment of constant rate of a transfer (the tensor-level simulator's
# ``transfer_log``, policies/tensorsim.py): its id, tensor, queue (an index of CPU_QUEUE_NAMES, or 6: a ZeRO collective; the direction
# and the tier), start and end in GPU cycles, bytes moved in the segment, and on a transfer's last
# row whether its end dropped the tensor's GPU pages (an eviction that released them).
TRANSFER_LOG_DTYPE = np.dtype([("transfer", np.int64), ("tensor", np.int64), ("queue", np.int8),
                               ("start", np.int64), ("end", np.int64), ("bytes", np.float64),
                               ("released", np.bool_)])


def transfer_spans(log: np.ndarray) -> np.ndarray:
    """One row per transfer of a ``transfer_log``: its first start, last end and total bytes (rounded),
    with its tensor, queue and ``released``; ordered by transfer id (the order they started)."""
    log = np.asarray(log, TRANSFER_LOG_DTYPE)
    if log.size == 0:
        return log.copy()
    order = np.argsort(log["transfer"], kind="stable")
    lg = log[order]
    first = np.flatnonzero(np.r_[True, lg["transfer"][1:] != lg["transfer"][:-1]])
    last = np.r_[first[1:] - 1, lg.size - 1]
    out = lg[last].copy()
    out["start"] = lg["start"][first]
    out["bytes"] = np.round(np.add.reduceat(lg["bytes"], first))
    return out


def link_rate_excess(log: np.ndarray, queues, bandwidth_Bps: float, frequency_GHz: float) -> float:
    """The largest amount (B/s) by which the transfers on ``queues`` together exceed
    ``bandwidth_Bps`` at any instant of a ``transfer_log`` (<= 0: the bound holds throughout).

    A segment moves ``bytes`` evenly over ``[start, end)``; its cycles are whole, so its rate is
    computed over at least one cycle, and a segment's rounding up to a whole cycle makes it a
    little slower, never faster."""
    log = np.asarray(log, TRANSFER_LOG_DTYPE)
    sel = log[np.isin(log["queue"], list(queues)) & (log["end"] > log["start"])]
    if sel.size == 0:
        return -float(bandwidth_Bps)
    hz = frequency_GHz * 1e9
    rate = sel["bytes"] * hz / (sel["end"] - sel["start"])
    times = np.concatenate((sel["start"], sel["end"]))
    delta = np.concatenate((rate, -rate))
    order = np.lexsort((delta, times))          # at one instant, ends before starts
    level = np.cumsum(delta[order])
    return float(level.max() - bandwidth_Bps)


class Clock:
    """Cycles of a ``freq_hz`` clock to whole nanoseconds, exactly (integer arithmetic)."""

    def __init__(self, freq_hz: int):
        freq_hz = int(freq_hz)
        if freq_hz <= 0:
            raise ValueError(f"clock of {freq_hz} Hz: must be positive")
        g = math.gcd(10 ** 9, freq_hz)
        self.num, self.den = 10 ** 9 // g, freq_hz // g

    def ns(self, cycles) -> np.ndarray:
        """``round(cycles * 1e9 / freq_hz)`` (halves up), as int64 (object ints past 2**62)."""
        c = np.asarray(cycles, np.int64)
        if c.size and int(np.abs(c).max()) > (1 << 62) // max(self.num, self.den):
            return np.array([(int(x) * self.num + self.den // 2) // self.den for x in c.ravel()],
                            dtype=object).reshape(c.shape)
        return (c * self.num + self.den // 2) // self.den


def us_text(ns: int) -> str:
    """Whole nanoseconds as microseconds with three decimals (exact: no float on the way)."""
    ns = int(ns)
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def _args(d: dict) -> str:
    return json.dumps(d, separators=(",", ":"), allow_nan=False)


def _numbers(d: dict) -> str:
    """A dict of plain keys to finite ints and floats as compact JSON (json.dumps' text, faster:
    the writer makes one per span)."""
    return "{" + ",".join(f'"{k}":{v!r}' for k, v in d.items()) + "}"


def _x(name_json: str, cat: str, pid: int, tid: int, start_ns: int, end_ns: int, args: dict | None = None) -> str:
    """A complete event (ph X); ``name_json``: the name as JSON text; ``args``: numbers only."""
    a = f',"args":{_numbers(args)}' if args else ""
    return (f'{{"name":{name_json},"cat":"{cat}","ph":"X","pid":{pid},"tid":{tid},'
            f'"ts":{us_text(start_ns)},"dur":{us_text(int(end_ns) - int(start_ns))}{a}}}')


def _meta(pid: int, tid: int | None, name: str, sort_index: int) -> list[str]:
    """Metadata events naming a process (tid None) or a thread, and placing it."""
    if tid is None:
        return [_args({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}}),
                _args({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"sort_index": sort_index}})]
    return [_args({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}),
            _args({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                   "args": {"sort_index": sort_index}})]


def merge_spans(first, end, *values):
    """Spans (first, end) sorted by first and merged where one starts at or before the previous
    one's end; ``values`` (arrays beside them) are summed over each merged span.  Returns
    ``(first, end, count, *sums)`` arrays."""
    first = np.asarray(first, np.int64)
    end = np.maximum(np.asarray(end, np.int64), first)
    if not first.size:
        z = np.zeros(0, np.int64)
        return (z, z, z) + tuple(z for _ in values)
    order = np.argsort(first, kind="stable")
    first, end = first[order], end[order]
    values = [np.asarray(v, np.int64)[order] for v in values]
    reach = np.maximum.accumulate(end)
    new = np.ones(first.size, bool)
    new[1:] = first[1:] > reach[:-1]
    group = np.cumsum(new) - 1
    starts = first[new]
    last = np.append(np.flatnonzero(new)[1:] - 1, first.size - 1)
    stops = reach[last]
    count = np.bincount(group).astype(np.int64)
    sums = tuple(np.bincount(group, weights=v, minlength=starts.size).astype(np.int64) if v.size else v
                 for v in values)
    return (starts, stops, count) + sums


def _freq_hz(result) -> int:
    tl = result.timeline or {}
    if "freq_hz" in tl:
        return int(tl["freq_hz"])
    ghz = float((result.config or {}).get("gpu", {}).get("frequency_GHz", 1.2))
    return int(round(ghz * 1e9))


def _page_bytes(result) -> int:
    tl = result.timeline or {}
    if "page_bytes" in tl:
        return int(tl["page_bytes"])
    return int((result.config or {}).get("gpu", {}).get("page_size_bytes", 4096))


def _kernel_rows(result) -> dict:
    """Per kernel execution: iteration, kernel, first attempt, end (cycles), GPU and host pages
    in use at its end (-1: not modelled), pages it faulted."""
    tl = result.timeline or {}
    if "kernel_rows" in tl:
        rows = np.asarray(tl["kernel_rows"], np.int64).reshape(-1, len(KERNEL_COLUMNS))
        col = {name: rows[:, j] for j, name in enumerate(KERNEL_COLUMNS)}
    else:
        col = result.kernel_table() if result.kernels else {}
        if not len(col.get("iteration", ())):
            z = np.zeros(0, np.int64)
            return {k: z for k in ("iteration", "kernel", "start", "end", "gpu", "host", "faults")}
        col = dict(col)
        for c in ("gpu_used_pages", "host_used_pages"):
            v = np.asarray(col[c], float)
            col[c] = np.where(np.isfinite(v), v, -1).astype(np.int64)
    faults = sum(np.asarray(col[c], np.int64) for c in ("host_faults_pages", "ssd_faults_pages",
                                                         "unallocated_faults_pages"))
    return {"iteration": np.asarray(col["iteration"], np.int64), "kernel": np.asarray(col["kernel"], np.int64),
            "start": np.asarray(col["start_cycles"], np.int64), "end": np.asarray(col["end_cycles"], np.int64),
            "gpu": np.asarray(col["gpu_used_pages"], np.int64), "host": np.asarray(col["host_used_pages"], np.int64),
            "faults": np.asarray(faults, np.int64)}


def _cpu_rows(result, n: int) -> np.ndarray:
    """Per kernel row, whether it ran on the CPU tier (tensor level: ``Result.kernels["on_cpu"]``)."""
    on = (result.kernels or {}).get("on_cpu") if result.level == "tensor" else None
    if on is None or np.shape(on) != (n,):
        return np.zeros(n, bool)
    return np.asarray(on, bool)


def timeline_events(result) -> tuple[list[str], dict]:
    """The events of ``result``'s timeline as JSON texts (one per event), and ``otherData``.

    Parameters
    ----------
    result : Result
        Any result; the transfer, batch and GC tracks need one run with ``timeline=True``.

    Returns
    -------
    events : list of str
        Metadata events first, then spans and counters.
    other : dict
        What ran and how to read it (schema, policy, trace, clock, page size, notes).
    """
    tl = result.timeline or {}
    clock = Clock(_freq_hz(result))
    page = _page_bytes(result)
    names = [] if result.kernel_names is None else [str(n) for n in result.kernel_names]
    ev: list[str] = []
    recorded = "spans" in tl
    detailed = tl.get("model") == "batches"
    # ---- track names ----
    ev += _meta(PID_GPU, None, PROCESS_NAMES[PID_GPU], PID_GPU)
    ev += _meta(PID_GPU, TID_KERNELS, "kernels", 1) + _meta(PID_GPU, TID_ITERATIONS, "iterations", 0)
    k = _kernel_rows(result)
    n = k["end"].size
    on_cpu = _cpu_rows(result, n)
    if on_cpu.any():
        ev += _meta(PID_CPU, None, PROCESS_NAMES[PID_CPU], CPU_SORT)
        ev += _meta(PID_CPU, TID_CPU_KERNELS, "kernels", 0)
    tensor_tracks = "tensor_transfers" in tl
    if tensor_tracks:
        ev += _tensor_track_names(tl, on_cpu.any())
    if recorded:
        ev += _meta(PID_LINK, None, PROCESS_NAMES[PID_LINK], PID_LINK)
        for i, ch in enumerate(CHANNEL_ORDER):
            ev += _meta(PID_LINK, TL_CHANNELS.index(ch) + 1, CHANNEL_TRACKS[ch][0], i)
    if detailed:
        ev += _meta(PID_HANDLER, None, PROCESS_NAMES[PID_HANDLER], PID_HANDLER)
        ev += _meta(PID_HANDLER, TID_BATCHES, "fault batches", 0)
        ev += _meta(PID_HANDLER, TID_HINT_IN, "hint prefetches", 1)
        ev += _meta(PID_HANDLER, TID_HINT_OUT, "hint pre-evictions", 2)
        ev += _meta(PID_SSD, None, PROCESS_NAMES[PID_SSD], PID_SSD)
        ev += _meta(PID_SSD, TID_GC, "garbage collection", 0)
    ev += _meta(PID_MEMORY, None, PROCESS_NAMES[PID_MEMORY], PID_MEMORY)

    # ---- kernels: from the previous kernel's end to their own (GPU); from start to end (CPU) ----
    gpu_rows = np.flatnonzero(~on_cpu)
    g_end = k["end"][gpu_rows]
    prev_end = k["start"].copy()
    prev_end[gpu_rows] = np.concatenate(([0], g_end[:-1])) if gpu_rows.size else g_end
    a_ns, b_ns = clock.ns(prev_end), clock.ns(k["end"])
    names_json = [json.dumps(x) for x in names]
    for i in range(n):
        kk = int(k["kernel"][i])
        name = names_json[kk] if 0 <= kk < len(names) else f'"kernel {kk}"'
        args = {"iteration": int(k["iteration"][i]), "kernel": kk, "start_cycles": int(prev_end[i]),
                "end_cycles": int(k["end"][i])}
        if int(k["start"][i]) != int(prev_end[i]):
            args["first_attempt_cycles"] = int(k["start"][i])
        if k["faults"][i]:
            args["faulted_pages"] = int(k["faults"][i])
        if on_cpu[i]:
            ev.append(_x(name, "cpu_kernel", PID_CPU, TID_CPU_KERNELS, a_ns[i], b_ns[i], args))
        else:
            ev.append(_x(name, "kernel", PID_GPU, TID_KERNELS, a_ns[i], b_ns[i], args))
    iteration_ns = []
    for it in (np.unique(k["iteration"]) if n else ()):
        sel = np.flatnonzero(k["iteration"] == it)
        s, e = int(prev_end[sel].min()), int(k["end"][sel].max())
        if result.level == "tensor" and len(result.iterations) == 1 and result.iterations[0].time_cycles:
            # the run's time can go on after the last kernel (transfers draining): the iteration is the run's
            e = max(e, int(result.iterations[0].time_cycles))
        sn, en = int(clock.ns(s)), int(clock.ns(e))
        iteration_ns.append(en - sn)
        ev.append(_x(f'"iteration {int(it)}"', "iteration", PID_GPU, TID_ITERATIONS, sn, en,
                     {"iteration": int(it), "start_cycles": s, "end_cycles": e, "kernels": int(sel.size)}))
        bounds = (getattr(result, "inference", None) or {}).get("phase_first_kernel")
        if bounds:   # an inference run: each phase of the batch, prefill then every decode step
            if it == k["iteration"][0]:
                ev += _meta(PID_GPU, TID_PHASES, "prefill / decode steps", 1)
            kk = k["kernel"][sel]
            for p in range(len(bounds) - 1):
                ps = sel[(kk >= bounds[p]) & (kk < bounds[p + 1])]
                if ps.size:
                    label = "prefill" if p == 0 else f"decode {p}"
                    ev.append(_x(f'"{label}"', "phase", PID_GPU, TID_PHASES, int(clock.ns(int(prev_end[ps].min()))),
                                 int(clock.ns(int(k["end"][ps].max()))), {"iteration": int(it), "phase": p}))

    # ---- link: per channel, the executions' spans merged ----
    if recorded:
        spans = np.asarray(tl["spans"])
        for c, ch in enumerate(TL_CHANNELS):
            col = spans[:, c]
            has = col["pages"] > 0
            f, e, cnt, pages = merge_spans(col["first"][has], col["end"][has], col["pages"][has])
            fn, en = clock.ns(f), clock.ns(e)
            label = json.dumps(CHANNEL_TRACKS[ch][1])
            for j in range(f.size):
                dur_s = (int(en[j]) - int(fn[j])) * 1e-9
                mib = int(pages[j]) * page / float(1 << 20)
                args = {"pages": int(pages[j]), "MiB": round(mib, 3), "kernels": int(cnt[j])}
                if dur_s > 0:
                    args["GBps"] = round(int(pages[j]) * page / dur_s / 1e9, 3)
                ev.append(_x(label, "transfer", PID_LINK, c + 1, fn[j], en[j], args))

    # ---- fault handler and SSD (detailed) ----
    ops = np.asarray(tl.get("ops", np.zeros(0)))
    if detailed and ops.size:
        b = ops[ops["kind"] == TL_OP_KINDS.index("batch")]
        sn, en = clock.ns(b["start"]), clock.ns(b["end"])
        for j in range(b.size):
            ev.append(_x('"batch"', "fault_batch", PID_HANDLER, TID_BATCHES, sn[j], en[j],
                         {"units": int(b["units"][j]), "pages_in": int(b["pages_in"][j]),
                          "pages_out": int(b["pages_out"][j])}))
        for kind, tid, label in (("hint_prefetch", TID_HINT_IN, '"prefetch"'),
                                 ("hint_preevict", TID_HINT_OUT, '"pre-evict"')):
            h = ops[ops["kind"] == TL_OP_KINDS.index(kind)]
            h = h[h["pages_in"] + h["pages_out"] > 0]        # (hints that moved nothing over the link)
            f, e, cnt, pin, pout = merge_spans(h["start"], h["end"], h["pages_in"], h["pages_out"])
            fn, en = clock.ns(f), clock.ns(e)
            for j in range(f.size):
                ev.append(_x(label, "hint", PID_HANDLER, tid, fn[j], en[j],
                             {"hints": int(cnt[j]), "pages_in": int(pin[j]), "pages_out": int(pout[j])}))
    execs = np.asarray(tl.get("execs", np.zeros(0)))
    if detailed and execs.size:
        g = execs[execs["gc_first"] >= 0]
        f, e, cnt, blocks, copies, busy = merge_spans(g["gc_first"], g["gc_end"], g["gc_blocks"],
                                                      g["gc_copies"], g["gc_busy_cycles"])
        fn, en = clock.ns(f), clock.ns(e)
        for j in range(f.size):
            ev.append(_x('"GC"', "gc", PID_SSD, TID_GC, fn[j], en[j],
                         {"blocks": int(blocks[j]), "copied_pages": int(copies[j]),
                          "plane_busy_ms": round(int(busy[j]) / clock.den * clock.num * 1e-6, 6)}))

    if tensor_tracks:
        ev += _tensor_spans(tl, clock, names, result)

    # ---- counters ----
    ev += _memory_counters(k, ops if detailed else None, execs if (recorded and not detailed) else None,
                           clock, page, int(tl.get("kernels_per_iteration", 1)))
    other = _other_data(result, tl, clock, page, recorded, detailed, iteration_ns)
    return ev, other


def _tensor_track_names(tl: dict, with_cpu: bool) -> list[str]:
    """Track names of a tensor-level run: the GPU's waits, the CPU's waits, and the transfer tracks
    of the queues that moved something."""
    out = _meta(PID_GPU, TID_GPU_WAITS, "waits", 2)
    if with_cpu:
        out += _meta(PID_CPU, TID_CPU_WAITS, "waits", 1)
    log = np.asarray(tl["tensor_transfers"])
    used = set(np.unique(log["queue"]).tolist()) if log.size else set()
    seen = set()
    for q in sorted(used):
        for pid, tid, name, order in QUEUE_TRACKS.get(q, ()):
            if pid not in {p for p, _ in seen}:
                out += _meta(pid, None, PROCESS_NAMES[pid], pid)
            if (pid, tid) not in seen:
                out += _meta(pid, tid, name, order)
            seen.add((pid, tid))
    return out


def _tensor_spans(tl: dict, clock: Clock, kernel_names: list, result) -> list[str]:
    """A tensor-level run's waits (GPU, CPU) and transfers (link, SSD, host)."""
    out: list[str] = []
    for key, pid, tid in (("gpu_waits", PID_GPU, TID_GPU_WAITS), ("cpu_pieces", PID_CPU, TID_CPU_WAITS)):
        w = np.asarray(tl.get(key, np.zeros(0)))
        if not w.size:
            continue
        if key == "cpu_pieces":
            w = w[w["resource"] != WAIT_CPU]         # (the CPU's kernels are on its kernels track)
        sn, en = clock.ns(w["start"]), clock.ns(w["end"])
        for j in range(w.size):
            r = int(w["resource"][j])
            label = "idle" if r == WAIT_IDLE else ("CPU" if r == WAIT_CPU else f"wait: {WAIT_RESOURCES[r]}")
            if w["via_cpu"][j]:
                label += " (via the CPU)"
            args = {"start_cycles": int(w["start"][j]), "end_cycles": int(w["end"][j])}
            if w["kernel"][j] >= 0:
                args["kernel"] = int(w["kernel"][j])
            if w["tensor"][j] >= 0:
                args["tensor"] = int(w["tensor"][j])
            out.append(_x(json.dumps(label), "wait", pid, tid, sn[j], en[j], args))
    log = np.asarray(tl["tensor_transfers"])
    for q, tracks_of in QUEUE_TRACKS.items():
        sel = log[log["queue"] == q] if log.size else log
        if not sel.size:
            continue
        f, e, cnt, nbytes = merge_spans(sel["start"], sel["end"], sel["bytes"])
        fn, en = clock.ns(f), clock.ns(e)
        label = json.dumps(QUEUE_SPAN_NAMES[q])
        for pid, tid, _name, _order in tracks_of:
            for j in range(f.size):
                dur_s = (int(en[j]) - int(fn[j])) * 1e-9
                args = {"transfers": int(cnt[j]), "MiB": round(int(nbytes[j]) / float(1 << 20), 3)}
                if dur_s > 0:
                    args["GBps"] = round(int(nbytes[j]) / dur_s / 1e9, 3)
                out.append(_x(label, "transfer", pid, tid, fn[j], en[j], args))
    return out


def _step_counter(name: str, unit: str, ts_ns, values, scale: float = 1.0, digits: int = 4) -> list[str]:
    """Counter events of a level that holds from each time on (the last of equal times wins)."""
    ts = np.asarray(ts_ns, np.int64)
    v = np.asarray(values, np.int64)
    if not ts.size:
        return []
    order = np.argsort(ts, kind="stable")
    ts, v = ts[order], v[order]
    keep = np.append(ts[1:] != ts[:-1], True)
    out = []
    head = f'{{"name":{json.dumps(name)},"ph":"C","pid":{PID_MEMORY},"tid":0,"ts":'
    for t, x in zip(ts[keep].tolist(), v[keep].tolist()):
        val = round(x * scale, digits) if scale != 1.0 else int(x)
        out.append(f'{head}{us_text(t)},"args":{{"{unit}":{val!r}}}}}')
    return out


def _memory_counters(k: dict, ops, execs, clock: Clock, page: int, kernels_per_iteration: int) -> list[str]:
    out = []
    end_ns = clock.ns(k["end"]).astype(np.int64) if k["end"].size else np.zeros(0, np.int64)
    gpu_t, gpu_v = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)]
    ok = k["gpu"] >= 0
    gpu_t.append(end_ns[ok])
    gpu_v.append(k["gpu"][ok])
    if ops is not None and ops.size:
        gpu_t.append(clock.ns(ops["end"]).astype(np.int64))
        gpu_v.append(ops["gpu_used"])
    if ok.any():
        out += _step_counter(COUNTER_GPU, "GiB", np.concatenate(gpu_t), np.concatenate(gpu_v), page / GiB)
    okh = k["host"] >= 0
    if okh.any():
        out += _step_counter(COUNTER_HOST, "GiB", np.concatenate(([0], end_ns[okh])),
                             np.concatenate(([0], k["host"][okh])), page / GiB)
    if ops is not None and ops.size:
        # every batch and hint: its pages are in flight from its start to its end
        n = ops["pages_in"] + ops["pages_out"]
        t = np.concatenate((clock.ns(ops["start"]).astype(np.int64), clock.ns(ops["end"]).astype(np.int64)))
        d = np.concatenate((n, -n))
        order = np.lexsort((d, t))              # at one time, ends before starts
        t, level = t[order], np.cumsum(d[order])
        out += _step_counter(COUNTER_INFLIGHT, "pages", np.concatenate(([0], t)), np.concatenate(([0], level)))
    elif execs is not None and execs.size and k["start"].size:
        # at an execution's first attempt, the queues' level once its hints were applied
        idx = k["iteration"] * kernels_per_iteration + k["kernel"]
        starts = np.full(execs.size, -1, np.int64)
        ok = idx < execs.size
        starts[idx[ok]] = k["start"][ok]
        first = starts >= 0
        out += _step_counter(COUNTER_INFLIGHT, "pages", clock.ns(starts[first]).astype(np.int64),
                             execs["queued_pages"][first])
    return out


def _other_data(result, tl: dict, clock: Clock, page: int, recorded: bool, detailed: bool,
                iteration_ns: list) -> dict:
    from . import __version__

    ident = result.trace or {}
    return {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "g10core_version": __version__,
        "policy": result.policy, "level": result.level, "preset": result.preset,
        "trace": f"{ident.get('model', '?')}-b{ident.get('batch_size', '?')}",
        "failed": bool(result.failed), "failure_reason": result.failure_reason,
        "clock_hz": clock.den * 10 ** 9 // clock.num if clock.num else None,
        "page_bytes": page, "transfers_recorded": recorded or "tensor_transfers" in tl,
        "transfer_model": (tl.get("model", "none") if recorded else
                           "tensor transfers" if "tensor_transfers" in tl else "none"),
        "tick_cycles": tl.get("tick_cycles"), "gpu_pages": tl.get("gpu_pages"),
        "host_pages": tl.get("host_pages"),
        "iteration_time_ns": iteration_ns,
        "note": _note(result, tl),
        **({"waits": (result.counters or {}).get("waits")} if "waits" in (result.counters or {}) else {}),
    }


def _note(result, tl: dict) -> str:
    if "tensor_transfers" in tl:
        return ("times are whole ns (cycles rounded once per boundary); GPU kernel spans run from the previous "
                "GPU kernel's end to their own, GPU waits name what each stretch of waiting was for, and the two "
                "GPU tracks together cover the iteration (its tail after the last GPU kernel is a wait); CPU "
                "kernels run from their start to their end and the CPU's waits and idle stretches fill the rest; "
                "link, SSD and host spans are transfers, merged where they touch (docs/guide/timeline.md)")
    return ("times are whole ns (cycles rounded once per boundary); kernel spans run from the previous "
            "kernel's end to their own and tile each iteration; transfer spans cover, per kernel, the first "
            "to the last transfer of their kind (docs/guide/timeline.md)")


def write_timeline(result, path) -> Path:
    """Write ``result``'s timeline (:func:`timeline_events`) to ``path`` atomically.

    Parameters
    ----------
    result : Result
        The run.
    path : str or path
        The ``.json`` file; a device or pipe is written through.

    Returns
    -------
    Path
        The file written.
    """
    events, other = timeline_events(result)
    with replacing(path) as tmp:
        with open(tmp, "w") as f:
            f.write('{"displayTimeUnit":"ns","otherData":')
            f.write(_args(_finite(other)))
            f.write(',\n"traceEvents":[\n')
            for start in range(0, len(events), 4096):
                chunk = events[start:start + 4096]
                if start:
                    f.write(",\n")
                f.write(",\n".join(chunk))
            f.write("\n]}\n")
    return Path(path)


def _finite(obj):
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


# ---- reading a timeline back --------------------------------------------------------------------

REQUIRED = {"X": ("name", "ph", "ts", "dur", "pid", "tid"), "C": ("name", "ph", "ts", "pid", "args"),
            "M": ("name", "ph", "pid", "args")}


def read_timeline(path) -> dict:
    """A timeline file (:func:`write_timeline`'s, or any trace-event JSON of X, C and M events) as
    its JSON object; refuses a file that is not one, naming it and the event.

    Parameters
    ----------
    path : str or path

    Returns
    -------
    dict
        The document, with its ``traceEvents`` list.

    Raises
    ------
    ValueError
        Not JSON, no ``traceEvents`` list, or an event without the fields its phase needs.
    """
    text = read_text(path, "timeline (trace-event JSON)")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError(f"{path}: not a trace-event file (no traceEvents list)")
    for i, e in enumerate(doc["traceEvents"]):
        if not isinstance(e, dict) or "ph" not in e:
            raise ValueError(f"{path}: traceEvents[{i}] is not an event (no ph)")
        need = REQUIRED.get(e["ph"])
        if need is None:
            continue                        # phases this reader does not draw are left alone
        missing = [f for f in need if f not in e]
        if missing:
            raise ValueError(f"{path}: traceEvents[{i}] (ph {e['ph']}) has no {', '.join(missing)}")
        if e["ph"] in "XC" and not (_number(e["ts"]) and (e["ph"] == "C" or _number(e["dur"]))):
            raise ValueError(f"{path}: traceEvents[{i}] (ph {e['ph']}): ts and dur must be numbers")
    return doc


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def tracks(doc: dict) -> dict:
    """The events of a timeline grouped for drawing.

    Returns
    -------
    dict
        ``spans``: list of ``(process, track, starts_us, durations_us, names)`` in display order;
        ``counters``: ``{name: (times_us, values, unit)}``; ``other``: the file's ``otherData``.
    """
    pname, psort, tname, tsort = {}, {}, {}, {}
    spans: dict = {}
    counters: dict = {}
    for e in doc["traceEvents"]:
        ph = e.get("ph")
        if ph == "M":
            a = e.get("args") or {}
            key = (e.get("pid"), e.get("tid"))
            if e["name"] == "process_name":
                pname[e["pid"]] = str(a.get("name", e["pid"]))
            elif e["name"] == "process_sort_index":
                psort[e["pid"]] = a.get("sort_index", 0)
            elif e["name"] == "thread_name":
                tname[key] = str(a.get("name", e.get("tid")))
            elif e["name"] == "thread_sort_index":
                tsort[key] = a.get("sort_index", 0)
        elif ph == "X":
            s = spans.setdefault((e["pid"], e.get("tid")), ([], [], []))
            s[0].append(float(e["ts"]))
            s[1].append(float(e["dur"]))
            s[2].append(str(e["name"]))
        elif ph == "C":
            for unit, v in (e.get("args") or {}).items():
                c = counters.setdefault(e["name"], ([], [], unit))
                c[0].append(float(e["ts"]))
                c[1].append(float(v))
    order = sorted(spans, key=lambda k: (psort.get(k[0], k[0]), k[0], tsort.get(k, k[1] or 0), k[1] or 0))
    out = [(pname.get(p, str(p)), tname.get((p, t), str(t)), np.array(spans[(p, t)][0]),
            np.array(spans[(p, t)][1]), spans[(p, t)][2]) for (p, t) in order]
    cnt = {}
    for name, (t, v, unit) in counters.items():
        o = np.argsort(t, kind="stable")
        cnt[name] = (np.array(t)[o], np.array(v)[o], unit)
    return {"spans": out, "counters": cnt, "other": doc.get("otherData") or {}}


__all__ = ["Clock", "merge_spans", "read_timeline", "timeline_events", "tracks", "us_text", "write_timeline"]


def timeline_data(raw: dict, consts: dict, *, detailed: bool) -> dict:
    """What :mod:`g10core.timeline` draws, from the replay's output (``consts["timeline"]`` set):
    the recorder's arrays, the kernel rows (a failed run's too) and the constants that scale them."""
    tl = raw["timeline"]
    return {"kernel_rows": as_columns(raw["kernels"], KERNEL_ROW_DTYPE),
            "spans": tl["spans"], "ops": tl["ops"], "execs": tl["execs"],
            "traffic": as_columns(raw["pcie"], TRAFFIC_ROW_DTYPE), "model": "batches" if detailed else "slots",
            "freq_hz": int(consts["freq_hz"]), "page_bytes": int(consts.get("page_bytes", 4096)),
            "tick_cycles": int(consts["tick_cycles"]), "gpu_pages": int(consts["gpu_pages"]),
            "host_pages": int(consts["host_pages"]), "kernels_per_iteration": int(consts["kernels"]),
            "iterations": int(consts["iterations"])}
