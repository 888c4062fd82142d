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
number the figures use is :attr:`Result.iteration_time_s`, by the configuration's
``run.iteration_rule`` (recorded as ``iteration_rule``): ``steady_mean``, the mean of
the iterations after the cold start (iteration 0; every iteration when only one ran, as
in the tensor-level simulations, whose one iteration starts from the steady state), or
``fastest``, the fastest iteration (the artifact's figure scripts take ``min(iter0,
iter1)``; the ``g10-artifact`` preset).  ``reported_iterations`` names the iterations
behind it, and ``breakdown_s`` / ``traffic_pages`` / ``faults_pages`` at the top level
are their mean.

The compute / overlap / stall breakdown follows ``run.breakdown_rule`` (recorded as
``breakdown_rule``).  ``partition``: per kernel, stall = time - ideal, overlap = the
transfer-busy time in excess of the stall (at most the ideal time), compute = ideal -
overlap; the three add up to the time exactly.  ``artifact``: the published ``Stat``
class's, compute = time - transfer-busy time, overlap = transfer + ideal - time, stall =
time - ideal, a negative overlap folded into the stall; where a kernel stalls longer than
transfers were busy (Base UVM waiting on faults), compute counts that wait again, so the
sum exceeds the time by twice the sum over such kernels of (stall - transfer-busy time)
(``breakdown_excess_s``).  A failed run (cannot fit, host memory overflow, FlashNeuron out of
memory) has ``failed=True``, a reason, no iterations and ``iteration_time_s = inf``,
written to JSON as ``null``.
"""
from __future__ import annotations

import dataclasses
import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SCHEMA = "g10core-result"
SCHEMA_VERSION = 3     # 2: iteration_rule, reported_iterations, breakdown_rule, quirks, top-level means;
                       # 3: prefetched/hinted/refetched_pages, faults_pages demand faults only (detailed)

FAULT_KEYS = ("host", "ssd", "unallocated")
# pages moved to the GPU for other causes than a demand fault, keyed like faults_pages (by source);
# with faults_pages they count every page moved in once (docs/accounting.md)
MOVED_KEYS = ("prefetched_pages", "hinted_pages", "refetched_pages")
# ``--kernels``: one row per kernel execution, the same columns for every level (NaN: not modelled);
# ``name``: the kernel's name in the trace (None where the Result does not know the trace's names)
KERNEL_TABLE_COLUMNS = (
    "iteration", "kernel", "name", "start_cycles", "end_cycles", "start_s", "end_s", "time_s", "ideal_time_s",
    "compute_s", "overlap_s", "stall_s", "translation_s", "host_faults_pages", "ssd_faults_pages",
    "unallocated_faults_pages", "in_transfer_pages", "gpu_used_pages", "host_used_pages",
    "host_prefetched_pages", "ssd_prefetched_pages", "unallocated_prefetched_pages",
    "host_hinted_pages", "ssd_hinted_pages", "unallocated_hinted_pages",
    "host_refetched_pages", "ssd_refetched_pages", "unallocated_refetched_pages",
)
TRAFFIC_KEYS = ("ssd_to_gpu", "gpu_to_ssd", "host_to_gpu", "gpu_to_host")
BREAKDOWN_KEYS = ("compute", "overlap", "stall")
TRANSLATION_KEY = ("translation",)   # a fourth part in the detailed preset (breakdown_with_translation)

# columns of the compiled replay's per-kernel rows (``_replay.Replay.run()["kernels"]``):
# the fields of struct kernel_row (_types.pxd), mirrored in types.KERNEL_ROW_DTYPE
from .codes import KERNEL_COLUMNS, KERNEL_ROW_DTYPE, MOVED_COLUMNS, MOVED_ROW_DTYPE, as_columns  # noqa: E402
from .files import write_text_atomic  # noqa: E402,F401 (importable from here)
from .params import ITERATION_RULES  # noqa: E402 (run.iteration_rule's choices)
from .timeline import WAIT_CPU, WAIT_IDLE, WAIT_OTHER, WAIT_RESOURCES, WAIT_SPAN_DTYPE, transfer_spans  # noqa: E402,F401


# ---- the artifact's statistics (moved here from testing/reference.py) -------------------

def summarize(K, t11, t00, kernels, pcie, boundaries, iterations, host_overflow=False, rule="artifact",
              translation=None):
    """Per-iteration totals and the time breakdown, the way the artifact's Stat computes them.

    ``translation``: per executed kernel, the cycles address translation added (the detailed
    preset): each kernel's breakdown then has a fourth part, ``translation``, and its other
    three split the rest of its time (:func:`breakdown`); each iteration gets a
    ``translation`` total.

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
    busy = busy_intervals(boundaries, last_end)
    per_kernel = breakdown(spans, busy, t11, rule, translation)
    if translation is not None:
        for d in its:
            d["translation"] = 0
    for (it, k, comp, ov, st, *tr) in per_kernel:
        its[it]["compute"] += comp
        its[it]["overlap"] += ov
        its[it]["stall"] += st
        if tr:
            its[it]["translation"] += tr[0]
    return dict(iterations=its, kernels=kernels, host_overflow=host_overflow,
                per_kernel_breakdown=per_kernel)


def split_span(total: int, ideal: int, transfer: int, rule: str = "partition") -> tuple[int, int, int]:
    """(compute, overlap, stall) of one span of ``total`` cycles whose ideal time is ``ideal``
    and during ``transfer`` cycles of which some transfer was in flight.

    ``partition``: stall = total - ideal; the transfer time first covers the stall, the rest
    overlaps computation (overlap = clamp(transfer - stall, 0, ideal)); compute = ideal -
    overlap.  The three add up to ``total``.  ``artifact``: the published ``Stat`` class's
    compute = total - transfer, overlap = transfer + ideal - total, stall = total - ideal,
    a negative overlap folded into the stall (then the sum exceeds ``total`` by twice it).
    """
    stall = total - ideal
    if rule == "partition":
        overlap = min(max(transfer - stall, 0), max(ideal, 0))
        return ideal - overlap, overlap, stall
    comp = total - transfer
    ov = transfer + ideal - total
    if ov < 0:
        stall -= ov
        ov = 0
    return comp, ov, stall


def busy_intervals(boundaries, last_end: int):
    """Transfer-busy intervals from the boundary markers ``(iteration, time, is_begin)``,
    taken in pairs in their order (an unpaired last marker runs to ``last_end``), as two
    int64 arrays: begins and ends."""
    t = np.asarray(boundaries, np.int64).reshape(-1, 3)[:, 1]
    if t.size % 2:
        t = np.append(t, np.int64(last_end))
    return t[0::2], t[1::2]


def _busy_per_span(spans, busy):
    """Per span [s, e), the cycles some busy interval covers: the sweep of the artifact's
    ``Stat``, computed from the busy time up to each edge where that is the same thing
    (spans in order and apart, intervals in order and disjoint, no empty span where an
    interval starts); None otherwise."""
    if not len(spans):
        return []
    se = np.asarray([(sp[0], sp[1]) for sp in spans], np.int64)
    covered = _busy_per_span_columns(se[:, 0], se[:, 1], busy)
    return None if covered is None else covered.tolist()


def _busy_per_span_columns(s, e, busy):
    """:func:`_busy_per_span` of the spans' starts ``s`` and ends ``e`` (int64 arrays, at least one
    span): an int64 array, or None."""
    bs, be = busy
    if (np.any(e < s) or np.any(s[1:] < e[:-1]) or np.any(be < bs)
            or (bs.size > 1 and np.any(bs[1:] < be[:-1]))):
        return None
    if bs.size == 0:
        return np.zeros(len(s), np.int64)
    # the sweep steps past an interval that starts at an empty span (bs is sorted: a binary
    # search per empty span, where isin would hash every interval)
    empty = s[s == e]
    if empty.size:
        i = np.minimum(np.searchsorted(bs, empty), bs.size - 1)
        if np.any(bs[i] == empty):
            return None
    before = np.concatenate(([0], np.cumsum(be - bs)))     # busy cycles of the intervals before i

    def busy_until(t):
        i = np.searchsorted(bs, t, side="right")            # intervals starting by t
        j = np.maximum(i - 1, 0)
        part = np.clip(t - bs[j], 0, be[j] - bs[j])
        return np.where(i > 0, before[j] + part, 0)
    return busy_until(e) - busy_until(s)


def breakdown(spans, busy, t11, rule="artifact", translation=None):
    """The artifact's sweep of kernel spans against transfer-busy intervals.

    Per kernel span: ``transfer`` = cycles of the span during which some transfer was
    in flight, split by :func:`split_span` under ``rule``.  ``busy``: (begins, ends) as
    :func:`busy_intervals` gives them.  ``translation`` (the detailed preset): per span,
    the cycles address translation added to it; they are the span's fourth part, and the
    other three split the rest (rows get a sixth column).
    """
    covered = _busy_per_span(spans, busy)
    if covered is None:
        covered = _busy_per_span_sweep(spans, list(zip(busy[0].tolist(), busy[1].tolist())))
    out = []
    for n, (span, acc) in enumerate(zip(spans, covered)):
        s, e, it, k = span
        if translation is None:
            comp, ov, st = split_span(e - s, int(t11[k]), acc, rule)
            out.append((it, k, comp, ov, st))
        else:
            x = int(translation[n])
            comp, ov, st = split_span(e - s - x, int(t11[k]), acc, rule)
            out.append((it, k, comp, ov, st, x))
    return out


def _busy_per_span_sweep(spans, busy):
    """The sweep itself, for spans or intervals out of order (one pass over both lists)."""
    out = []
    ti = ki = 0
    acc = 0
    while ti < len(busy) and ki < len(spans):
        bs, be = busy[ti]
        s, e = spans[ki][0], spans[ki][1]
        if s < be and bs < e:
            acc += min(e, be) - max(s, bs)
            if e < be:
                out.append(acc)
                acc = 0
                ki += 1
            else:
                ti += 1
        else:
            if s < bs:
                out.append(acc)
                acc = 0
                ki += 1
            else:
                ti += 1
    while ki < len(spans):
        out.append(acc)
        acc = 0
        ki += 1
    return out


def summarize_replay(raw: dict, t11, t00, iterations: int, rule: str = "artifact",
                     translation: bool = False) -> dict:
    """:func:`summarize` of the compiled replay's output dict (``Replay.run()``); ``translation``:
    the breakdown gets the translation part (the replay's ``translation_cycles``).

    The same numbers as :func:`summarize` (the artifact's ``Stat``, one kernel row at a time),
    computed on whole columns: integer sums per iteration, :func:`split_span` element-wise.  A
    replay of 7,500 kernels over three iterations gives 22,500 rows, whose Python loop cost
    about a tenth of a page-level LLM run.  ``kernels`` and ``per_kernel_breakdown`` are int64
    arrays here, one row per :func:`summarize` tuple.
    """
    kr = np.asarray(raw["kernels"], np.int64)
    pcie_rows = np.asarray(raw["pcie"], np.int64)
    tb = np.asarray(raw["boundaries"], np.int64).reshape(-1, 2)
    bounds = np.column_stack((np.zeros(len(tb), np.int64), tb))   # (iteration, time, is_begin)
    tr = np.asarray(raw["translation_cycles"], np.int64) if translation else None
    t11 = np.asarray(t11)
    t00 = np.asarray(t00)
    it = kr[:, 0] if kr.ndim == 2 and kr.shape[1] >= 8 else None
    if it is None or kr.shape[0] == 0 or it.min() < 0 or it.max() >= iterations or (
            pcie_rows.size and (pcie_rows.ndim != 2 or pcie_rows.shape[1] != 5)) or (
            tr is not None and len(tr) < kr.shape[0]):
        # (no rows, or rows summarize refuses: its loop, and its error)
        kernels = [tuple(r) for r in kr.tolist()]
        pcie = [(i, 0, *row) for i, row in enumerate(pcie_rows.tolist())]
        return summarize(len(t11), t11, t00, kernels, pcie, bounds, iterations, bool(raw["host_overflow"]),
                         rule, tr)
    k, e = kr[:, 1], kr[:, 3]
    start = np.concatenate((np.zeros(1, np.int64), e[:-1]))      # a kernel's span: previous end to its end

    def per_iteration(values) -> list[int]:
        out = np.zeros(iterations, np.int64)
        np.add.at(out, it, values)
        return out.tolist()

    t11k = t11[k].astype(np.int64)
    sums = {"exe_cycles": per_iteration(e - start), "ideal_cycles": per_iteration(t11k),
            "pf_cycles": per_iteration(t00[k].astype(np.int64)), "in_transfer": per_iteration(kr[:, 4]),
            "host_faults": per_iteration(kr[:, 5]), "ssd_faults": per_iteration(kr[:, 6]),
            "unalloc_faults": per_iteration(kr[:, 7])}
    moved = np.zeros((iterations, 5), np.int64)
    n = min(len(pcie_rows), iterations)
    if n:
        moved[:n] = pcie_rows[:n]
    for j, name in enumerate(("alloc", "in_ssd", "in_host", "out_ssd", "out_host")):
        sums[name] = moved[:, j].tolist()
    busy = busy_intervals(bounds, int(e[-1]))
    covered = _busy_per_span_columns(start, e, busy)
    if covered is None:
        spans = list(zip(start.tolist(), e.tolist(), it.tolist(), k.tolist()))
        covered = np.asarray(_busy_per_span_sweep(spans, list(zip(busy[0].tolist(), busy[1].tolist()))), np.int64)
    x = tr[:len(e)] if tr is not None else 0
    comp, ov, st = split_spans(e - start - x, t11k, covered, rule)
    sums.update(stall=per_iteration(st), overlap=per_iteration(ov), compute=per_iteration(comp))
    if tr is not None:
        sums["translation"] = per_iteration(x)
    keys = ("exe_cycles", "ideal_cycles", "pf_cycles", "in_transfer", "host_faults", "ssd_faults",
            "unalloc_faults", "alloc", "in_ssd", "in_host", "out_ssd", "out_host", "stall", "overlap", "compute")
    keys += ("translation",) if tr is not None else ()
    its = [{key: sums[key][i] for key in keys} for i in range(iterations)]
    cols = [it, k, comp, ov, st] + ([x] if tr is not None else [])
    return dict(iterations=its, kernels=kr, host_overflow=bool(raw["host_overflow"]),
                per_kernel_breakdown=np.column_stack(cols))


def split_spans(total, ideal, transfer, rule: str = "partition"):
    """:func:`split_span` of arrays (int64, element-wise): (compute, overlap, stall) arrays."""
    stall = total - ideal
    if rule == "partition":
        overlap = np.minimum(np.maximum(transfer - stall, 0), np.maximum(ideal, 0))
        return ideal - overlap, overlap, stall
    comp = total - transfer
    ov = transfer + ideal - total
    negative = ov < 0
    return comp, np.where(negative, 0, ov), np.where(negative, stall - ov, stall)


# ---- flat rows (DataFrames, CSV) --------------------------------------------------

# the unit endings of key names (``breakdown_s``, ``faults_pages``): a table's columns keep the unit last
UNIT_SUFFIXES = ("_pages", "_bytes", "_cycles", "_s")
ANALYSIS_HINT = "pip install 'g10core[analysis]'"


def flat_columns(d: dict) -> dict:
    """``d`` with each table (a dict value) spread into one column per entry, the unit kept last.

    ``{"time_s": 1.0, "breakdown_s": {"compute": 0.6, "stall": 0.4}, "faults_pages": {"host": 3}}``
    becomes ``{"time_s": 1.0, "breakdown_compute_s": 0.6, "breakdown_stall_s": 0.4,
    "faults_host_pages": 3}``; a key without a unit ending gives ``KEY_ENTRY``.  Columns come in
    the order ``d`` holds them.  One function for every flat table g10core writes:
    :meth:`Result.to_pandas` (``"iterations"``), ``g10sim sweep export`` and
    :func:`g10core.experiments.sweep.to_pandas`.

    Parameters
    ----------
    d : dict
        A record whose values are numbers, strings or tables (dicts of them).

    Returns
    -------
    dict
        The flat record, one column per value and per table entry.
    """
    out = {}
    for key, value in d.items():
        if not isinstance(value, dict):
            out[key] = value
            continue
        unit = next((u for u in UNIT_SUFFIXES if key.endswith(u) and len(key) > len(u)), "")
        stem = key[: len(key) - len(unit)]
        for sub, x in value.items():
            out[f"{stem}_{sub}{unit}"] = x
    return out


def import_pandas(what: str):
    """pandas, imported on first use; an ImportError of one line naming the extra when it is missing."""
    try:
        import pandas
    except ImportError:
        raise ImportError(f"{what} needs pandas: {ANALYSIS_HINT}") from None
    return pandas


# ---- result types ---------------------------------------------------------------

def finite_or_none(x) -> float | None:
    """``x`` as a float, or None where it is None, infinite or NaN (JSON has no inf: a failed run's
    time is written as null)."""
    return float(x) if x is not None and math.isfinite(x) else None


def finite_floats(obj):
    """``obj`` (dicts, lists and scalars) with every non-finite float replaced by None."""
    if isinstance(obj, float):
        return finite_or_none(obj)
    if isinstance(obj, dict):
        return {k: finite_floats(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_floats(v) for v in obj]
    return obj


def _no_pages() -> dict:
    return dict.fromkeys(FAULT_KEYS, 0)


@dataclass(frozen=True)
class IterationStats:
    """One simulated training iteration.  Seconds are GPU cycles / clock (cycles kept too).

    Every page moved to the GPU in the iteration is counted once, by source (host, ssd,
    unallocated: given a frame without a transfer) under one cause: ``faults_pages`` (a
    kernel's demand faults), ``prefetched_pages`` (the fault handler's prefetcher, detailed
    preset), ``hinted_pages`` (a policy's prefetch hint), ``refetched_pages`` (pages of the
    running kernel evicted before it ran and queued again, slot model); :attr:`moved_in_pages`
    is their sum.

    Attributes
    ----------
    index : int
        The iteration's number (0: the cold start).
    time_s, ideal_time_s : float
        Its simulated time and the sum of its kernels' ideal times, in seconds.
    faults_pages : dict
        Pages demand-faulted by source (``host``, ``ssd``, ``unallocated``), summed over kernels.
    prefetched_pages, hinted_pages, refetched_pages : dict
        Pages moved in for the other causes, by source.
    traffic_pages : dict
        Pages moved: ``ssd_to_gpu``, ``gpu_to_ssd``, ``host_to_gpu``, ``gpu_to_host``.
    breakdown_s : dict
        ``compute``, ``overlap``, ``stall`` (and ``translation`` under the detailed preset).
    in_transfer_pages : int
        Faulting pages found already in flight.
    allocated_pages : int
        Pages given a GPU frame (fetches included).
    all_fault_time_s : float or None
        The sum of t00 (every page faulting), page level.
    time_cycles, ideal_cycles : int or None
        The same times in GPU cycles.
    """

    index: int
    time_s: float
    ideal_time_s: float
    faults_pages: dict             # host, ssd, unallocated: demand-faulted pages, summed over kernels
    traffic_pages: dict            # ssd_to_gpu, gpu_to_ssd, host_to_gpu, gpu_to_host
    breakdown_s: dict              # compute, overlap, stall (and translation: the detailed preset)
    in_transfer_pages: int = 0     # faulting pages found already in flight
    allocated_pages: int = 0       # pages given a GPU frame (fetches included)
    all_fault_time_s: float | None = None   # sum of t00: every page faulting (page level)
    time_cycles: int | None = None
    ideal_cycles: int | None = None
    prefetched_pages: dict = field(default_factory=_no_pages)   # by the fault handler's prefetcher
    hinted_pages: dict = field(default_factory=_no_pages)       # by a policy's prefetch hint
    refetched_pages: dict = field(default_factory=_no_pages)    # evicted before their kernel ran, again

    @property
    def slowdown(self) -> float:
        """time_s / ideal_time_s (NaN when the ideal time is 0)."""
        return self.time_s / self.ideal_time_s if self.ideal_time_s > 0 else math.nan

    @property
    def moved_in_pages(self) -> dict:
        """Pages moved to the GPU, by source: faults + prefetched + hinted + refetched."""
        return {k: int(self.faults_pages[k]) + sum(int(getattr(self, m)[k]) for m in MOVED_KEYS)
                for k in FAULT_KEYS}

    def to_dict(self) -> dict:
        """The iteration as plain JSON-able values (non-finite numbers as None)."""
        return {
            "index": self.index,
            "time_s": self.time_s,
            "ideal_time_s": self.ideal_time_s,
            "slowdown": finite_or_none(self.slowdown),
            "time_cycles": self.time_cycles,
            "ideal_cycles": self.ideal_cycles,
            "all_fault_time_s": self.all_fault_time_s,
            "faults_pages": {k: int(self.faults_pages[k]) for k in FAULT_KEYS},
            **{m: {k: int(getattr(self, m)[k]) for k in FAULT_KEYS} for m in MOVED_KEYS},
            "in_transfer_pages": int(self.in_transfer_pages),
            "traffic_pages": {k: int(self.traffic_pages[k]) for k in TRAFFIC_KEYS},
            "allocated_pages": int(self.allocated_pages),
            "breakdown_s": {k: float(self.breakdown_s[k]) for k in BREAKDOWN_KEYS + TRANSLATION_KEY
                            if k in self.breakdown_s},
        }


@dataclass(frozen=True, eq=False, repr=False)
class Result:
    """The outcome of one run: what ran (policy, resolved config, trace), and its numbers.

    The numbers of the run are properties over :attr:`iterations` chosen by
    ``iteration_rule`` (:attr:`iteration_time_s`, :attr:`breakdown_s`, ...).

    Attributes
    ----------
    policy, level, preset : str
        The policy, its level (``page``, ``tensor`` or ``ideal``) and the preset.
    config : dict
        The resolved configuration (``SimConfig.to_dict()``); ``config_hash`` its identity.
    trace : dict
        The trace's identity: path, model, batch_size, counts, footprint, digest.
    ideal_time_s : float
        The sum of the ideal kernel times (cycle-converted).
    iterations : tuple of IterationStats
        Every simulated iteration; empty when failed.
    failed : bool
        True for a run the published simulator would abort; ``failure_reason`` says why.
    hints, counters, metadata : dict
        Where the hints came from; level-specific counters (devices, fault batches, TLB);
        wall time, peak RSS and versions.
    kernels : dict
        Per-kernel numpy arrays (page level: the columns of :data:`KERNEL_COLUMNS` plus
        ``compute/overlap/stall_cycles``; tensor level: ``start_s`` and ``time_s``, ``ideal_s``,
        and ``on_cpu`` where the CPU tier ran kernels); left
        out of the default JSON (``to_dict(kernels=True)`` puts them in).
    quirks : tuple of dict
        The artifact's hand-tuned factors that fired: ``name``, ``factor``, ``what``.
    ignored_parameters : tuple of str
        Keys set away from the reference value that this policy does not model.
    iteration_rule, breakdown_rule : str
        How the reported iteration time and breakdown are taken (default: the config's).
    kernel_names : ndarray or None
        The trace's kernel names, by kernel index (the simulator passes the trace's own array, not
        a copy); the ``name`` column of :meth:`kernel_table`.  None: unknown.
    timeline : dict
        What :meth:`write_timeline` draws beyond the kernel rows, recorded when the run was
        asked for a timeline (``Simulator.run(..., timeline=True)``; empty otherwise); left
        out of the JSON.
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
    quirks: tuple = ()             # hand-tuned factors of the artifact that fired: {name, factor, what}
    ignored_parameters: tuple = ()  # config keys set away from the reference that this policy does not model
    iteration_rule: str | None = None   # None: the config's run.iteration_rule (else steady_mean)
    breakdown_rule: str | None = None   # None: the config's run.breakdown_rule (else partition)
    kernel_names: object = None    # the trace's kernel_name array (a reference), or None
    timeline: dict = field(default_factory=dict)   # the recorder's arrays (timeline=True), not in the JSON
    # an inference trace's run (g10core.inference.metrics): time to first token, time per output token, tokens/s
    inference: dict = field(default_factory=dict)

    def __post_init__(self):
        run = (self.config or {}).get("run", {}) if isinstance(self.config, dict) else {}
        if self.iteration_rule is None:
            object.__setattr__(self, "iteration_rule", run.get("iteration_rule", "steady_mean"))
        if self.breakdown_rule is None:
            object.__setattr__(self, "breakdown_rule", run.get("breakdown_rule", "partition"))
        if self.iteration_rule not in ITERATION_RULES:
            raise ValueError(f"iteration_rule = {self.iteration_rule!r}: must be one of {', '.join(ITERATION_RULES)}")

    # ---- derived numbers ----
    @property
    def best_iteration(self) -> int | None:
        """Index of the fastest iteration, None when failed."""
        if self.failed or not self.iterations:
            return None
        return min(self.iterations, key=lambda it: (it.time_s, it.index)).index

    @property
    def reported_iterations(self) -> tuple[int, ...]:
        """The iterations behind :attr:`iteration_time_s`: the fastest one (``fastest``), or
        those after the cold start (``steady_mean``; all when only one ran)."""
        if self.failed or not self.iterations:
            return ()
        if self.iteration_rule == "fastest":
            return (self.best_iteration,)
        idx = tuple(it.index for it in self.iterations)
        return idx[1:] if len(idx) > 1 and self.level == "page" else idx

    @property
    def iteration_time_s(self) -> float:
        """Seconds per iteration by ``iteration_rule`` (the mean of the steady iterations, or the
        fastest); inf when failed."""
        rep = self.reported_iterations
        if not rep:
            return math.inf
        return sum(self.iterations[i].time_s for i in rep) / len(rep)

    def _mean_of(self, attr: str) -> dict:
        rep = self.reported_iterations
        if not rep:
            return {}
        keys = getattr(self.iterations[rep[0]], attr).keys()
        return {k: sum(getattr(self.iterations[i], attr)[k] for i in rep) / len(rep) for k in keys}

    @property
    def breakdown_s(self) -> dict:
        """compute / overlap / stall, mean over the reported iterations (``breakdown_rule``)."""
        return self._mean_of("breakdown_s")

    @property
    def traffic_pages(self) -> dict:
        """Pages moved per direction and tier, mean over the reported iterations."""
        return self._mean_of("traffic_pages")

    @property
    def faults_pages(self) -> dict:
        """Demand-faulted pages by source, mean over the reported iterations."""
        return self._mean_of("faults_pages")

    @property
    def prefetched_pages(self) -> dict:
        """Pages the fault handler's prefetcher brought, by source, mean over the reported iterations."""
        return self._mean_of("prefetched_pages")

    @property
    def hinted_pages(self) -> dict:
        """Pages a policy's prefetch hints brought, by source, mean over the reported iterations."""
        return self._mean_of("hinted_pages")

    @property
    def refetched_pages(self) -> dict:
        """Pages brought again after an eviction before their kernel ran, by source, mean over the
        reported iterations."""
        return self._mean_of("refetched_pages")

    @property
    def breakdown_excess_s(self) -> float:
        """compute + overlap + stall - iteration time (0 under ``partition``; >= 0 under ``artifact``)."""
        b = self.breakdown_s
        return sum(b.values()) - self.iteration_time_s if b else math.nan

    @property
    def slowdown(self) -> float:
        """iteration_time_s / ideal_time_s (inf when failed)."""
        return self.iteration_time_s / self.ideal_time_s if self.ideal_time_s > 0 else math.nan

    @property
    def normalized_performance(self) -> float:
        """ideal_time_s / iteration_time_s (Fig. 11's y axis); 0 when failed."""
        t = self.iteration_time_s
        return self.ideal_time_s / t if t > 0 else math.nan

    # ---- display ----
    @property
    def trace_label(self) -> str:
        """The trace as ``MODEL-bBATCH`` (the shipped traces' names), else its path."""
        t = self.trace or {}
        if t.get("model"):
            return f"{t['model']}-b{t['batch_size']}" if t.get("batch_size") is not None else str(t["model"])
        return str(t.get("path") or "?")

    def __repr__(self) -> str:
        # one line: a notebook or a list of results shows what ran and its two numbers, not the config
        return (f"Result(trace={self.trace_label!r}, policy={self.policy!r}, preset={self.preset!r}, "
                f"iteration_time_s={_num(self.iteration_time_s)}, ideal_time_s={_num(self.ideal_time_s)}, "
                f"failed={bool(self.failed)})")

    def _repr_html_(self) -> str:
        """A small summary table (Jupyter shows it for a Result that ends a cell)."""
        rows = [("trace", self.trace_label), ("policy", f"{self.policy} ({self.level} level)"),
                ("preset", self.preset)]
        if self.failed:
            rows.append(("failed", self.failure_reason or "yes"))
        else:
            rep = self.reported_iterations
            rows.append(("iteration time", f"{_num(self.iteration_time_s)} s ({self.iteration_rule}: iteration"
                                           f"{'s' if len(rep) > 1 else ''} {', '.join(map(str, rep))})"))
        rows.append(("ideal time", f"{_num(self.ideal_time_s)} s"))
        if not self.failed:
            rows.append(("slowdown", f"{_num(self.slowdown)}"))
            for label, table, unit in (("breakdown", self.breakdown_s, "s"), ("demand faults", self.faults_pages,
                                                                              "pages"),
                                       ("traffic", self.traffic_pages, "pages")):
                if table:
                    rows.append((label, ", ".join(f"{k} {_num(v)}" for k, v in table.items()) + f" {unit}"))
        body = "".join(f"<tr><th style=\"text-align:left\">{html.escape(k)}</th>"
                       f"<td style=\"text-align:left\">{html.escape(str(v))}</td></tr>" for k, v in rows)
        return f"<table class=\"g10core-result\">{body}</table>"

    # ---- tables ----
    def to_pandas(self, table: str = "kernels"):
        """One of the run's tables as a pandas DataFrame (needs the ``analysis`` extra).

        Parameters
        ----------
        table : {"kernels", "iterations"}
            ``kernels``: one row per kernel execution, the columns of :meth:`kernel_table`
            (:data:`KERNEL_TABLE_COLUMNS`: what ``g10sim run --kernels`` writes, kernel names
            included).  ``iterations``: one row per iteration, the keys of
            :meth:`IterationStats.to_dict` with each table spread into columns
            (:func:`flat_columns`: ``breakdown_compute_s``, ``traffic_ssd_to_gpu_pages``,
            ``faults_host_pages``, ``prefetched_host_pages``, ...), ``index`` named
            ``iteration``, and ``reported``: whether the iteration is one of
            :attr:`reported_iterations`.

        Returns
        -------
        pandas.DataFrame
            Empty (with its columns) for a failed run's iterations.

        Raises
        ------
        ImportError
            pandas is not installed (one line naming the extra).
        ValueError
            ``table`` is not one of the two.
        """
        if table not in ("kernels", "iterations", "inference"):
            raise ValueError(f"Result.to_pandas({table!r}): the table must be 'kernels', 'iterations' or 'inference'")
        pd = import_pandas("Result.to_pandas")
        if table == "inference":   # one row per phase of the reported batch (an inference trace's run)
            inf = self.inference or {}
            phases = inf.get("phase_s", [])
            df = pd.DataFrame({"phase": ["prefill"] + [f"decode{i}" for i in range(1, len(phases))],
                               "seconds": phases})
            for key in ("iteration", "ttft_s", "tpot_s", "tokens_per_s", "batch", "gen"):
                df[key] = inf.get(key)
            return df
        if table == "kernels":
            return pd.DataFrame(self.kernel_table(), columns=list(KERNEL_TABLE_COLUMNS))
        rows = self.iteration_rows()
        cols = list(rows[0]) if rows else list(_iteration_row(_EMPTY_ITERATION, False))
        return pd.DataFrame(rows, columns=cols)

    def iteration_rows(self) -> list[dict]:
        """Per iteration, the flat row :meth:`to_pandas` (``"iterations"``) makes (plain Python values)."""
        rep = set(self.reported_iterations)
        return [_iteration_row(it, it.index in rep) for it in self.iterations]

    # ---- writers ----
    def to_dict(self, kernels: bool = False) -> dict:
        """The result as a plain JSON-able dict (what ``g10sim run --json`` writes).

        Parameters
        ----------
        kernels : bool
            Also include ``kernels``, one row per kernel execution (``kernel_columns``).

        Returns
        -------
        dict
            Non-finite numbers become None (``null``).
        """
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
            "iteration_rule": self.iteration_rule,
            "reported_iterations": list(self.reported_iterations),
            "ideal_time_s": self.ideal_time_s,
            "slowdown": self.slowdown,
            "normalized_performance": None if self.failed else self.normalized_performance,
            "best_iteration": self.best_iteration,
            "breakdown_rule": self.breakdown_rule,
            "breakdown_s": self.breakdown_s or None,
            "breakdown_excess_s": None if self.failed else self.breakdown_excess_s,
            "traffic_pages": self.traffic_pages or None,
            "faults_pages": self.faults_pages or None,
            **{m: getattr(self, m) or None for m in MOVED_KEYS},
            "quirks": [dict(q) for q in self.quirks],
            "ignored_parameters": list(self.ignored_parameters),
            "failed": bool(self.failed),
            "failure_reason": self.failure_reason,
            "iterations": [it.to_dict() for it in self.iterations],
            "inference": self.inference or None,
            "counters": self.counters,
            "metadata": self.metadata,
        }
        if kernels:
            out["kernel_columns"] = list(KERNEL_TABLE_COLUMNS)
            out["kernels"] = {k: np.asarray(v).tolist() for k, v in self.kernel_table().items()}
        return jsonable(out)

    def kernel_table(self) -> dict:
        """Per kernel execution, the columns of :data:`KERNEL_TABLE_COLUMNS` (one schema for every
        level; NaN where a level does not model a column: the tensor level has no per-kernel
        compute/overlap split, no faults and no residency counts).  ``name`` is the kernel's name
        in the trace (:attr:`kernel_names` indexed per row; None where unknown)."""
        hz = float((self.config or {}).get("gpu", {}).get("frequency_GHz", 1.2)) * 1e9
        k = self.kernels
        n = len(next(iter(k.values()))) if k else 0
        nan = np.full(n, np.nan)
        zeros = np.zeros(n, np.int64)
        if self.level == "tensor" and n:
            start = np.asarray(k["start_s"], float)
            time = np.asarray(k["time_s"], float)
            ideal = np.asarray(k.get("ideal_s", nan), float)
            start_c = np.rint(start * hz).astype(np.int64)
            end_c = np.rint((start + time) * hz).astype(np.int64)
            cols = {"iteration": zeros, "kernel": np.arange(n), "name": self._names_of(np.arange(n)),
                    "start_cycles": start_c, "end_cycles": end_c,
                    "start_s": start, "end_s": start + time, "time_s": time, "ideal_time_s": ideal,
                    "compute_s": nan, "overlap_s": nan, "stall_s": time - ideal, "translation_s": nan,
                    "host_faults_pages": zeros, "ssd_faults_pages": zeros, "unallocated_faults_pages": zeros,
                    "in_transfer_pages": zeros, "gpu_used_pages": nan, "host_used_pages": nan,
                    **{c: zeros for c in MOVED_COLUMNS}}
            return {c: cols[c] for c in KERNEL_TABLE_COLUMNS}
        if not n:
            return {c: [] for c in KERNEL_TABLE_COLUMNS}
        start_c = np.asarray(k["start_cycles"], np.int64)
        end_c = np.asarray(k["end_cycles"], np.int64)
        ideal_c = np.asarray(k["ideal_cycles"], np.int64)
        # a kernel's time is its end minus the previous kernel's end (the artifact's Stat)
        span = np.diff(np.concatenate(([0], end_c)))
        tr = np.asarray(k.get("translation_cycles", zeros), np.int64)   # 0 without a TLB model
        if self.level == "ideal":
            comp, ov, st, tr = ideal_c, zeros, zeros, zeros
            faults = {c: zeros for c in ("host_faults_pages", "ssd_faults_pages", "unallocated_faults_pages",
                                         "in_transfer_pages") + MOVED_COLUMNS}
            used = {"gpu_used_pages": nan, "host_used_pages": nan}
        else:
            comp, ov, st = k["compute_cycles"], k["overlap_cycles"], k["stall_cycles"]
            faults = {c: np.asarray(k[c] if c in k else zeros, np.int64)
                      for c in ("host_faults_pages", "ssd_faults_pages", "unallocated_faults_pages",
                                "in_transfer_pages") + MOVED_COLUMNS}
            used = {c: np.asarray(k[c], np.int64) for c in ("gpu_used_pages", "host_used_pages")}
        cols = {"iteration": np.asarray(k["iteration"]), "kernel": np.asarray(k["kernel"]),
                "name": self._names_of(k["kernel"]), "start_cycles": start_c, "end_cycles": end_c,
                "start_s": start_c / hz, "end_s": end_c / hz,
                "time_s": span / hz, "ideal_time_s": ideal_c / hz, "compute_s": np.asarray(comp) / hz,
                "overlap_s": np.asarray(ov) / hz, "stall_s": np.asarray(st) / hz, "translation_s": tr / hz,
                **faults, **used}
        return {c: cols[c] for c in KERNEL_TABLE_COLUMNS}

    def _names_of(self, kernel) -> np.ndarray:
        """The kernel names of the kernel indices ``kernel`` (None where unknown)."""
        idx = np.asarray(kernel, np.int64)
        names = self.kernel_names
        if names is None:
            return np.full(idx.shape, None, object)
        names = np.asarray(names)
        known = (idx >= 0) & (idx < names.shape[0])
        if known.all():
            return names[idx]
        out = np.full(idx.shape, None, object)
        out[known] = names[idx[known]]
        return out

    def to_json(self, kernels: bool = False, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text, ending in a newline.

        Parameters
        ----------
        kernels : bool
            Include the per-kernel table (as :meth:`to_dict`).
        indent : int or None
            As for :func:`json.dumps` (None: one line).

        Returns
        -------
        str
        """
        return json.dumps(self.to_dict(kernels), indent=indent, allow_nan=False) + "\n"

    def write_json(self, path, kernels: bool = False) -> Path:
        """Write :meth:`to_json` to ``path`` atomically (temporary file, then rename).

        Parameters
        ----------
        path : str or path
            The file; a device or pipe is written through.
        kernels : bool
            Include the per-kernel rows.

        Returns
        -------
        Path
            The file written.
        """
        return write_text_atomic(path, self.to_json(kernels))

    def write_timeline(self, path) -> Path:
        """Write the run's timeline to ``path`` atomically, in the trace-event JSON format that
        ui.perfetto.dev and chrome://tracing open (:mod:`g10core.timeline`).

        Every result has the kernel track (and, page level, the memory counters); the transfer,
        fault-batch and garbage-collection tracks need a run made with ``timeline=True``.

        Parameters
        ----------
        path : str or path
            The file (``.json``); a device or pipe is written through.

        Returns
        -------
        Path
            The file written.
        """
        from .timeline import write_timeline

        return write_timeline(self, path)


def _num(x) -> str:
    """A number for display: 6 significant digits (inf, nan as Python spells them)."""
    return f"{x:.6g}" if isinstance(x, (int, float, np.number)) else str(x)


def _iteration_row(it: IterationStats, reported: bool) -> dict:
    d = it.to_dict()
    d = {"iteration": d.pop("index"), "reported": bool(reported), **d}
    return flat_columns(d)


# (the columns of an iterations table with no rows)
_EMPTY_ITERATION = IterationStats(index=0, time_s=0.0, ideal_time_s=0.0, faults_pages=_no_pages(),
                                  traffic_pages=dict.fromkeys(TRAFFIC_KEYS, 0),
                                  breakdown_s=dict.fromkeys(BREAKDOWN_KEYS, 0.0))


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

def _rule(common: dict) -> str:
    return common.get("breakdown_rule") or (common.get("config") or {}).get("run", {}).get("breakdown_rule",
                                                                                          "partition")


def from_replay(raw: dict, *, t11, t00, freq_hz: int, iterations: int, translation: bool = False,
                **common) -> Result:
    """A page-level Result from the compiled replay's output dict; ``translation``: the detailed
    preset's breakdown (compute + overlap + stall + translation = the iteration time)."""
    s = summarize_replay(raw, t11, t00, iterations, _rule(common), translation)
    hz = float(freq_hz)
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    moved = as_columns(raw["moved"], MOVED_ROW_DTYPE) if "moved" in raw else \
        np.zeros((rows.shape[0], len(MOVED_COLUMNS)), np.int64)
    # per iteration, the moved rows' sums (columns: cause-major, source-minor, as MOVED_COLUMNS)
    by_it = np.zeros((iterations, len(MOVED_COLUMNS)), np.int64)
    if rows.shape[0]:
        np.add.at(by_it, np.clip(rows[:, 0], 0, max(iterations - 1, 0)), moved)
    its = []
    for i, d in enumerate(s["iterations"]):
        per = {m: {src: int(by_it[i, MOVED_COLUMNS.index(f"{src}_{m}")]) for src in FAULT_KEYS}
               for m in MOVED_KEYS}
        its.append(IterationStats(
            index=i,
            time_s=d["exe_cycles"] / hz,
            ideal_time_s=d["ideal_cycles"] / hz,
            faults_pages={"host": d["host_faults"], "ssd": d["ssd_faults"], "unallocated": d["unalloc_faults"]},
            traffic_pages={"ssd_to_gpu": d["in_ssd"], "gpu_to_ssd": d["out_ssd"],
                           "host_to_gpu": d["in_host"], "gpu_to_host": d["out_host"]},
            breakdown_s={k: d[k] / hz for k in BREAKDOWN_KEYS + TRANSLATION_KEY if k in d},
            in_transfer_pages=d["in_transfer"],
            allocated_pages=d["alloc"],
            all_fault_time_s=d["pf_cycles"] / hz,
            time_cycles=int(d["exe_cycles"]),
            ideal_cycles=int(d["ideal_cycles"]),
            **per,
        ))
    kern = {name: rows[:, j].copy() for j, name in enumerate(KERNEL_COLUMNS)}
    kern.update({name: moved[:, j].copy() for j, name in enumerate(MOVED_COLUMNS)})
    kern["ideal_cycles"] = np.asarray(t11, np.int64)[np.clip(kern["kernel"], 0, max(len(t11) - 1, 0))] \
        if len(t11) else np.zeros(0, np.int64)
    pk = np.asarray(s["per_kernel_breakdown"], np.int64).reshape(-1, 6 if translation else 5)
    kern["compute_cycles"], kern["overlap_cycles"], kern["stall_cycles"] = pk[:, 2], pk[:, 3], pk[:, 4]
    if translation:
        kern["translation_cycles"] = pk[:, 5]
    return Result(level="page", iterations=tuple(its), kernels=kern,
                  ideal_time_s=int(np.sum(t11)) / hz, **common)


def stopped(raw: dict, reason: str, *, t11, t00, freq_hz: int, iterations: int, translation: bool = False,
            **common) -> Result:
    """A failed page-level Result of a replay that stopped before its end (``_replay.NoProgress``):
    ``failed``, ``failure_reason``, the iterations every kernel of which ended and, in
    ``kernels``, every kernel that ended; the iteration time is infinite, as a failed run's."""
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    K = max(len(t11), 1)
    complete = min(rows.shape[0] // K, iterations)
    ran = min(int(rows[-1, 0]) + 1, iterations) if rows.shape[0] else 0
    part = from_replay(raw, t11=t11, t00=t00, freq_hz=freq_hz, iterations=ran, translation=translation, **common)
    return dataclasses.replace(part, iterations=part.iterations[:complete], failed=True,
                               failure_reason=" ".join(str(reason).split()))


def from_tensor_level(d: dict, *, page_size_bytes: int, sim_trace=None, **common) -> Result:
    """A Result from a tensor-level simulation dict (``g10core.policies.tensorsim``); given the
    trace it ran (``sim_trace``) and a transfer log in ``d``, ``counters["waits"]`` says what each wait was for
    (:func:`tensor_waits`) and ``timeline`` holds the transfers and waits the timeline draws."""
    ideal = float(d["ideal_time_s"])
    counters = {k: d[k] for k in ("n_transfers", "n_on_demand_fetches", "peak_gpu_bytes",
                                  "gpu_capacity_bytes", "leaked_bytes", "transfer_busy_s",
                                  "failed_at_kernel", "mode", "visit_order",
                                  # runs with CPU kernels (the CPU tier)
                                  "cpu_busy_s", "gpu_wait_cpu_s", "n_cpu_kernels", "peak_host_bytes",
                                  "pinned_host_bytes", "host_capacity_bytes",
                                  # a policy on UVM (G10-GDS, G10-Host outside g10-artifact)
                                  "demand_evictions", "demand_evicted_bytes",
                                  # one rank of a ZeRO data-parallel group (scheduler.zero_ranks)
                                  "zero_ranks", "collective_bytes") if k in d}
    counters["traffic_bytes"] = {k: int(v) for k, v in d.get("traffic_bytes", {}).items()}
    if d.get("steady_state"):
        # a run from a placement (tensorsim's initial_tier): where it started, what went back
        for k in ("initial_tier_bytes", "restore_bytes", "restore_transfers"):
            if k in d:
                counters[k] = d[k]
    if "recompute" in d:
        counters["recompute"] = d["recompute"]
    if "schedule" in d:
        counters["schedule"] = d["schedule"]
    if d.get("failed"):
        return failed(d.get("failure_reason") or "tensor-level simulation failed", level="tensor",
                      ideal_time_s=ideal, counters=counters, **common)
    tb = d["traffic_bytes"]
    page = int(page_size_bytes)
    brk = {k: float(d["breakdown_s"][k]) for k in BREAKDOWN_KEYS}
    if _rule(common) == "partition" and d.get("transfer_busy_s") is not None:
        # the published definition (overlap = busy - stall) goes negative when transfers were busy
        # for less than the stall; split the whole iteration as one span instead
        ideal_s, total_s = float(d["ideal_time_s"]), float(d["time_s"])
        stall = total_s - ideal_s
        overlap = min(max(float(d["transfer_busy_s"]) - stall, 0.0), max(ideal_s, 0.0))
        brk = {"compute": ideal_s - overlap, "overlap": overlap, "stall": stall}
    it = IterationStats(
        index=0,
        time_s=float(d["time_s"]),
        ideal_time_s=ideal,
        faults_pages={k: 0 for k in FAULT_KEYS},     # no paging: tensors move whole, on schedule
        traffic_pages={k: -(-int(tb.get(k, 0)) // page) for k in TRAFFIC_KEYS},
        breakdown_s=brk,
        time_cycles=d.get("time_cycles"),
    )
    kern = {}
    if len(d.get("kernel_start_s", ())):
        kern = {"start_s": np.asarray(d["kernel_start_s"], float), "time_s": np.asarray(d["kernel_time_s"], float)}
        if "kernel_ideal_s" in d:
            kern["ideal_s"] = np.asarray(d["kernel_ideal_s"], float)
        on_cpu = np.asarray(d.get("kernel_on_cpu", ()), bool)
        if on_cpu.shape == kern["start_s"].shape and on_cpu.any():
            kern["on_cpu"] = on_cpu          # the CPU tier's kernels (the timeline's CPU track)
    tl = dict(common.pop("timeline", None) or {})
    if sim_trace is not None and "transfer_log" in d and d.get("time_cycles") is not None and len(kern):
        hz = float((common.get("config") or {}).get("gpu", {}).get("frequency_GHz", 1.2)) * 1e9
        counters["waits"], spans = tensor_waits(d, sim_trace, hz)
        tl.update({"tensor_transfers": transfer_spans(d["transfer_log"]), "freq_hz": int(round(hz)),
                   "time_cycles": int(d["time_cycles"]), **spans})
    return Result(level="tensor", iterations=(it,), ideal_time_s=ideal, counters=counters,
                  kernels=kern, timeline=tl, **common)


def ideal(t11, *, freq_hz: int, iterations: int, **common) -> Result:
    """Every tensor resident: each iteration takes the sum of the ideal kernel times."""
    cycles = int(np.sum(t11))
    t = cycles / float(freq_hz)
    t11 = np.asarray(t11, np.int64)
    start = np.concatenate(([0], np.cumsum(t11)[:-1])) if t11.size else t11
    K = t11.size
    kern = {"iteration": np.repeat(np.arange(iterations), K), "kernel": np.tile(np.arange(K), iterations),
            "start_cycles": (np.arange(iterations).repeat(K) * cycles + np.tile(start, iterations)),
            "ideal_cycles": np.tile(t11, iterations)}
    kern["end_cycles"] = kern["start_cycles"] + kern["ideal_cycles"]
    its = tuple(IterationStats(
        index=i, time_s=t, ideal_time_s=t,
        faults_pages={k: 0 for k in FAULT_KEYS}, traffic_pages={k: 0 for k in TRAFFIC_KEYS},
        breakdown_s={"compute": t, "overlap": 0.0, "stall": 0.0},
        time_cycles=cycles, ideal_cycles=cycles) for i in range(iterations))
    return Result(level="ideal", iterations=its, ideal_time_s=t, kernels=kern, **common)


def failed(reason: str, *, level: str, ideal_time_s: float, **common) -> Result:
    """A run that cannot happen or was aborted: no iterations, time infinite."""
    return Result(level=level, iterations=(), failed=True, failure_reason=" ".join(str(reason).split()),
                  ideal_time_s=float(ideal_time_s), **common)


# ---- tensor level: what each wait was for (issue 43) ----------------------------------------------

def _split(a: int, b: int, events: list, out: list, kernel: int, via: bool = False) -> int:
    """Cut [a, b) at the events (time, resource, tensor) inside it, in time order: each stretch is
    the wait for the next event's resource (the simulator waits for one thing at a time, in
    order).  Returns where the last stretch ended."""
    cur = a
    for t, res, tensor in sorted(events, key=lambda e: e[0]):
        t = min(t, b)
        if t > cur:
            out.append((cur, t, res, via, tensor, kernel))
            cur = t
    return cur


def _in_intervals(times: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per time, the index of the interval (lo, hi] holding it (intervals disjoint, sorted), or -1."""
    if not lo.size or not times.size:
        return np.full(times.size, -1, np.int64)
    i = np.searchsorted(lo, times, side="left") - 1
    ok = (i >= 0) & (times <= hi[np.maximum(i, 0)])
    return np.where(ok, i, -1)


def tensor_waits(d: dict, trace, freq_hz: float) -> tuple[dict, dict]:
    """What the GPU's and the CPU's waits of a tensor-level run were for.

    Each GPU kernel waits from the previous kernel's end until it runs (its time beyond its ideal,
    before it); the iteration's end waits for the CPU's last kernel and the transfers still
    queued.  A wait is cut at the moments the things it waits for end: a transfer of one of the
    kernel's tensors (its queue: an SSD or link direction), a CPU kernel touching one of its
    tensors; each stretch goes to the next one to end.  A stretch spent waiting for the CPU is cut
    again by what the CPU did then: computing (``CPU``) or itself waiting for a transfer of the
    tensors of its next kernel, which is then what the GPU waited for (``via_cpu``).  What no
    transfer or CPU kernel explains is ``other`` (a recompute's copies, an allocation).

    Parameters
    ----------
    d : dict
        A finished tensorsim result (``transfer_log``, ``kernel_start_s``, ``kernel_time_s``,
        ``kernel_ideal_s``, ``time_cycles``, ``gpu_end_cycles``; ``kernel_on_cpu`` with CPU kernels).
    trace : Trace
        The trace it ran (its kernels' tensors).
    freq_hz : float
        The GPU clock (cycles per second).

    Returns
    -------
    summary : dict
        Seconds: ``gpu_wait_s``, ``gpu_wait_by_resource_s`` (resource -> seconds, the CPU's own
        waits included under what it waited for), ``gpu_wait_via_cpu_s`` (the part of those the
        GPU spent waiting for a CPU kernel that was waiting for the resource),
        ``gpu_wait_tensor`` (resource -> the tensor waited for longest and its seconds);
        with CPU kernels ``cpu_wait_by_resource_s`` and ``cpu_idle_s``.
    spans : dict
        For the timeline: ``gpu_waits`` and ``cpu_pieces`` (:data:`WAIT_SPAN_DTYPE`; the CPU's
        pieces tile the iteration: its kernels, ``CPU``; its waits; ``idle``), in cycles.
    """
    hz = float(freq_hz)
    K = trace.n_kernels
    st = np.rint(np.asarray(d["kernel_start_s"], float) * hz).astype(np.int64)
    en = st + np.rint(np.asarray(d["kernel_time_s"], float) * hz).astype(np.int64)
    ideal = np.rint(np.asarray(d["kernel_ideal_s"], float) * hz).astype(np.int64)
    on_cpu = np.asarray(d.get("kernel_on_cpu", np.zeros(K, bool)), bool)
    if on_cpu.shape != (K,):
        on_cpu = np.zeros(K, bool)
    end = int(d["time_cycles"])
    gpu_end = int(d.get("gpu_end_cycles", end))
    log = transfer_spans(d.get("transfer_log", ()))          # one row per transfer
    off, acc = trace.access_offsets, trace.access_tensor
    tensors = [None] * K

    def tens(k):
        if tensors[k] is None:
            tensors[k] = set(acc[off[k]:off[k + 1]].tolist())
        return tensors[k]

    l_end = log["end"].astype(np.int64) if log.size else np.zeros(0, np.int64)
    l_q = log["queue"].astype(np.int64) if log.size else np.zeros(0, np.int64)
    l_t = log["tensor"].astype(np.int64) if log.size else np.zeros(0, np.int64)
    gpu = np.flatnonzero(~on_cpu)
    cpu = np.flatnonzero(on_cpu)

    # ---- the CPU: its kernels, its waits for their tensors, idle (tiling [0, end)) ----
    pieces: list = []
    if cpu.size:
        # a CPU kernel is queued when the GPU's loop reaches it: at the previous GPU kernel's end
        last_gpu_before = np.searchsorted(gpu, cpu) - 1
        submit = np.where(last_gpu_before >= 0, en[gpu[np.maximum(last_gpu_before, 0)]], 0)
        c_st, c_en = st[cpu], en[cpu]
        prev_f = np.concatenate(([0], c_en[:-1]))
        ready = np.minimum(np.maximum(prev_f, submit), c_st)
        hit = _in_intervals(l_end, ready, c_st)
        rows_of: dict = {}
        for r in np.flatnonzero(hit >= 0).tolist():
            rows_of.setdefault(int(hit[r]), []).append(r)
        for i, c in enumerate(cpu.tolist()):
            if ready[i] > prev_f[i]:
                pieces.append((int(prev_f[i]), int(ready[i]), WAIT_IDLE, False, -1, c))
            mine = tens(c)
            ev = [(int(l_end[r]), int(l_q[r]), int(l_t[r])) for r in rows_of.get(i, ()) if int(l_t[r]) in mine]
            cur = _split(int(ready[i]), int(c_st[i]), ev, pieces, c)
            if cur < c_st[i]:
                pieces.append((cur, int(c_st[i]), WAIT_OTHER, False, -1, c))
            if c_en[i] > c_st[i]:
                pieces.append((int(c_st[i]), int(c_en[i]), WAIT_CPU, False, -1, c))
        last_f = int(c_en[-1])
        if end > last_f:
            pieces.append((last_f, end, WAIT_IDLE, False, -1, -1))
    pieces_arr = np.array(pieces, WAIT_SPAN_DTYPE)
    p_lo, p_hi = pieces_arr["start"], pieces_arr["end"]

    def via_cpu(a: int, b: int, kernel: int, out: list) -> None:
        """The GPU waited for the CPU over [a, b): what the CPU was doing then."""
        j = max(int(np.searchsorted(p_hi, a, side="right")), 0)
        cur = a
        while j < pieces_arr.size and p_lo[j] < b:
            s, e = max(int(p_lo[j]), a), min(int(p_hi[j]), b)
            if e > s:
                r = int(pieces_arr["resource"][j])
                res = WAIT_OTHER if r == WAIT_IDLE else r
                out.append((s, e, res, res != WAIT_CPU, int(pieces_arr["tensor"][j]), kernel))
                cur = e
            j += 1
        if cur < b:
            out.append((cur, b, WAIT_OTHER, False, -1, kernel))

    # ---- the GPU: each kernel's wait before it runs, then the iteration's tail ----
    waits: list = []
    exec_end = en.copy()
    if gpu.size:
        exec_end[gpu[-1]] = min(int(en[gpu[-1]]), gpu_end)
    g_a = st[gpu] if gpu.size else np.zeros(0, np.int64)
    g_b = np.maximum(exec_end[gpu] - ideal[gpu], g_a) if gpu.size else g_a
    hit = _in_intervals(l_end, g_a, g_b)
    rows_of = {}
    for r in np.flatnonzero(hit >= 0).tolist():
        rows_of.setdefault(int(hit[r]), []).append(r)
    cpu_hit = _in_intervals(en[cpu], g_a, g_b) if cpu.size else np.zeros(0, np.int64)
    cpu_of: dict = {}
    for i in np.flatnonzero(cpu_hit >= 0).tolist():
        cpu_of.setdefault(int(cpu_hit[i]), []).append(int(cpu[i]))
    for i in np.flatnonzero(g_b > g_a).tolist():
        k = int(gpu[i])
        a, b = int(g_a[i]), int(g_b[i])
        mine = tens(k)
        ev = [(int(l_end[r]), int(l_q[r]), int(l_t[r])) for r in rows_of.get(i, ()) if int(l_t[r]) in mine]
        ev += [(int(en[c]), -1 - c, -1) for c in cpu_of.get(i, ()) if tens(c) & mine]
        stretch: list = []
        cur = _split(a, b, ev, stretch, k)
        for s, e, res, via, tensor, kk in stretch:
            if res < 0:
                via_cpu(s, e, kk, waits)        # (res = -1 - the CPU kernel)
            else:
                waits.append((s, e, res, via, tensor, kk))
        if cur < b:
            # nothing of its own ended: an allocation waiting for evictions, or recompute copies
            rest = np.flatnonzero((l_end > cur) & (l_end <= b))
            ev = [(int(l_end[r]), int(l_q[r]), int(l_t[r])) for r in rest.tolist() if l_q[r] in (0, 2)]
            cur = _split(cur, b, ev, waits, k)
            if cur < b:
                waits.append((cur, b, WAIT_OTHER, False, -1, k))
    tail = gpu_end
    if cpu.size and int(en[cpu].max()) > tail:
        via_cpu(tail, int(en[cpu].max()), -1, waits)
        tail = int(en[cpu].max())
    if end > tail:
        rest = np.flatnonzero((l_end > tail) & (l_end <= end))
        cur = _split(tail, end, [(int(l_end[r]), int(l_q[r]), int(l_t[r])) for r in rest.tolist()], waits, -1)
        if cur < end:
            waits.append((cur, end, WAIT_OTHER, False, -1, -1))
    waits_arr = np.array(waits, WAIT_SPAN_DTYPE)

    # ---- sums ----
    def seconds(arr, sel) -> dict:
        dur = (arr["end"] - arr["start"])[sel]
        res = arr["resource"][sel]
        return {WAIT_RESOURCES[r]: round(float(dur[res == r].sum()) / hz, 9) for r in np.unique(res).tolist()}

    names = trace.tensor_name
    top: dict = {}
    if waits_arr.size:
        dur = waits_arr["end"] - waits_arr["start"]
        for r in np.unique(waits_arr["resource"]).tolist():
            sel = (waits_arr["resource"] == r) & (waits_arr["tensor"] >= 0)
            if not sel.any():
                continue
            per = np.bincount(waits_arr["tensor"][sel], weights=dur[sel])
            t = int(np.argmax(per))
            top[WAIT_RESOURCES[r]] = {"tensor": str(names[t]) if t < len(names) else f"tensor {t}",
                                      "s": round(float(per[t]) / hz, 9)}
    summary = {"gpu_wait_s": round(float((waits_arr["end"] - waits_arr["start"]).sum()) / hz, 9),
               "gpu_wait_by_resource_s": seconds(waits_arr, np.ones(waits_arr.size, bool)),
               "gpu_wait_via_cpu_s": seconds(waits_arr, waits_arr["via_cpu"]),
               "gpu_wait_tensor": top}
    if cpu.size:
        waiting = (pieces_arr["resource"] != WAIT_CPU) & (pieces_arr["resource"] != WAIT_IDLE)
        summary["cpu_wait_by_resource_s"] = seconds(pieces_arr, waiting)
        idle = pieces_arr["resource"] == WAIT_IDLE
        summary["cpu_idle_s"] = round(float((pieces_arr["end"] - pieces_arr["start"])[idle].sum()) / hz, 9)
    return summary, {"gpu_waits": waits_arr, "cpu_pieces": pieces_arr}


def waits_text(w: dict) -> str:
    """One line of what the GPU waited for (``counters["waits"]``), largest first: a resource, the
    tensor it was waited for longest, and how much of it the GPU spent waiting for CPU kernels that
    were themselves waiting for that resource."""
    by = w.get("gpu_wait_by_resource_s", {})
    via = w.get("gpu_wait_via_cpu_s", {})
    top = w.get("gpu_wait_tensor", {})
    parts = []
    for res, s in sorted(by.items(), key=lambda kv: -kv[1]):
        if s < 5e-4:
            continue
        if res == "CPU":
            parts.append(f"{s:.3f} s for the CPU computing")
            continue
        if res == "other":
            parts.append(f"{s:.3f} s that no transfer or CPU kernel explains (recompute, allocation)")
            continue
        txt = f"{s:.3f} s for the {res}"
        extra = []
        if res in top:
            extra.append(f"most for {top[res]['tensor']}")
        if via.get(res, 0) >= 5e-4:
            extra.append(f"{via[res]:.3f} s of it via the CPU, whose kernels waited for it")
        parts.append(txt + (f" ({'; '.join(extra)})" if extra else ""))
    return f"the GPU waited {w.get('gpu_wait_s', 0.0):.3f} s: " + (", ".join(parts) if parts else "for nothing")
