"""Microbenchmarks of the detailed preset's UVM components (``g10sim uvm-micro``).

Each function runs one of the checks of ``detailed_model.md`` §5 on the components alone
and returns a dict that carries the simulated figures beside the closed form they must meet:

* ``prefetch``: the bytes the tree prefetcher copies at the first touch of each listed
  64 KiB block of one fresh 2 MiB VA block (blocks 0, 1, 2, 4, 8, 16: 64 K, 64 K, 128 K,
  256 K, 512 K, 1024 K, i.e. the faulted 4 K plus 60 K, 60 K, 124 K, 252 K, 508 K, 1020 K),
  and the same pattern in consecutive VA blocks, none of which a copy crosses.
* ``batching``: W faults at once, each on a distinct cold migration unit (one per VA block,
  prefetching off): ``ceil(W / batch_faults)`` batches taking
  ``batches * batch_cost_us + W * unit_bytes / link_GBps`` (batch_cost_us = the batch's
  fixed cost plus the link's per-transfer setup, which a batch pays once per direction).
* ``tlb``: a cyclic sweep over N pages on one set-associative LRU TLB: the hit rate after
  the first round is 1 for N <= entries and 0 for N > entries when fully associative; a
  stride of the set count maps every page to one set and misses once N > ways.
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..config import ConfigError
from ..uvm.fault_handler import PAGE_BYTES, FaultHandler, FaultHandlerSpec

__all__ = ["prefetch", "batching", "tlb", "oversub", "oversub_table", "PATTERNS", "DEFAULT_BLOCKS",
           "OVERSUB_PATTERNS", "OVERSUB_MODES", "OVERSUB_FACTORS", "OVERSUB_GPUS", "OVERSUB_SOURCE",
           "OVERSUB_HARDWARE_COMMAND",
           "oversub_text", "plot_oversub"]

DEFAULT_BLOCKS = (0, 1, 2, 4, 8, 16)
PATTERNS = ("cyclic", "stride")


def _positive_int(name, v, hi=2**40):
    if isinstance(v, bool) or not isinstance(v, int) or not (1 <= v <= hi):
        raise ConfigError(f"{name} = {v!r}: must be an integer in [1, {hi}]")


def prefetch(blocks=DEFAULT_BLOCKS, *, regions: int = 3, spec: FaultHandlerSpec | None = None) -> dict:
    """Touch the first page of each listed migration unit ("block") of a fresh VA block, one at
    a time (each fault serviced before the next), and record what every touch copies."""
    spec = (spec or FaultHandlerSpec()).check()
    units = spec.block_pages // spec.unit_pages
    blocks = list(blocks)
    if not blocks:
        raise ConfigError("blocks: give at least one block")
    for b in blocks:
        if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b < units:
            raise ConfigError(f"blocks: {b!r} is not a unit of the VA block (0 .. {units - 1})")
    _positive_int("regions", regions, 4096)
    B, U = spec.block_pages, spec.unit_pages
    handler = FaultHandler(spec, gpu_pages=regions * B)
    alloc = (0, regions * B)
    per_region, crossed, t = [], False, 0
    faulted, prefetched = [], []
    for r in range(regions):
        copies = []
        for b in blocks:
            handler.fault(r * B + b * U, t, alloc)
            batches = handler.service_all(t)
            moved = sum(int((m["end"] - m["first"]).sum()) for m in (x["moves"] for x in batches))
            for x in batches:
                m = x["moves"]
                if len(m) and (m["first"].min() < r * B or m["end"].max() > (r + 1) * B):
                    crossed = True
                if r == 0:
                    is_pf = m["cause"] == 1
                    prefetched.append(int((m["end"] - m["first"])[is_pf].sum()) * PAGE_BYTES)
                    faulted.append(int((m["end"] - m["first"])[~is_pf].sum()) * PAGE_BYTES)
            copies.append(moved * PAGE_BYTES)
            t = batches[-1]["end"] if batches else t
        per_region.append(copies)
    return {
        "benchmark": "prefetch",
        "prefetcher": spec.prefetcher,
        "va_block_bytes": spec.va_block_bytes,
        "migration_unit_bytes": spec.migration_unit_bytes,
        "blocks": blocks,
        "copies_bytes": per_region[0],
        "unit_bytes": faulted,
        "prefetched_bytes": prefetched,
        "regions": regions,
        "copies_bytes_per_region": per_region,
        "same_in_every_region": all(c == per_region[0] for c in per_region),
        "crossed_va_block": crossed,
        "time_us": t / (spec.clock_GHz * 1000.0),
    }


def batching(faults: int, *, spec: FaultHandlerSpec | None = None, link=None) -> dict:
    """``faults`` faults raised at cycle 0, each on a distinct cold migration unit."""
    _positive_int("faults", faults, 1 << 20)
    spec = replace((spec or FaultHandlerSpec()), prefetcher="none").check()
    B = spec.block_pages
    handler = FaultHandler(spec, gpu_pages=faults * B, link=link)
    for i in range(faults):
        handler.fault(i * B, 0, (i * B, (i + 1) * B))
    batches = handler.service_all(0)
    end = batches[-1]["end"] if batches else 0
    link_spec = handler.link.spec
    gbps = link_spec.effective_GBps("to_device", "host")
    n_batches = len(batches)
    unit_bytes = spec.migration_unit_bytes
    batch_cost_us = spec.batch_fixed_us + link_spec.setup_latency_us
    # each fault is a VA block of its own, from host memory: its block, unmap and page parts
    per_fault_us = spec.batch_per_block_us + spec.batch_unmap_us + spec.unit_pages * spec.batch_per_page_us
    closed = n_batches * batch_cost_us + faults * per_fault_us + faults * unit_bytes / (gbps * 1e3)
    st = handler.stats()
    return {
        "benchmark": "batching",
        "faults": faults,
        "batch_faults": spec.batch_faults,
        "batches": n_batches,
        "expected_batches": math.ceil(faults / spec.batch_faults),
        "time_us": end / (spec.clock_GHz * 1000.0),
        "time_cycles": end,
        "closed_form_us": closed,
        "batch_cost_us": batch_cost_us,
        "batch_fixed_us": spec.batch_fixed_us,
        "link_setup_us": link_spec.setup_latency_us,
        "batch_per_page_us": spec.batch_per_page_us,
        "batch_per_block_us": spec.batch_per_block_us,
        "batch_unmap_us": spec.batch_unmap_us,
        "link_GBps": gbps,
        "bytes_moved": st["pages_from_host"] * PAGE_BYTES,
        "mean_fault_wait_us": st["mean_fault_wait_us"],
    }


def tlb(entries: int, ways: int, pattern: str = "cyclic", pages: int = 64, rounds: int = 4) -> dict:
    """Sweep ``pages`` pages ``rounds`` times over one LRU TLB of ``entries`` entries in sets of
    ``ways``; ``pattern`` "cyclic" visits pages 0..N-1, "stride" visits multiples of the set
    count (all in set 0)."""
    from ..tlb._tlb import SetAssociativeTLB
    _positive_int("entries", entries, 1 << 20)
    _positive_int("ways", ways, entries)
    if entries % ways:
        raise ConfigError(f"entries = {entries}: must be a multiple of ways = {ways}")
    if pattern not in PATTERNS:
        raise ConfigError(f"pattern = {pattern!r}: must be one of {', '.join(PATTERNS)}")
    _positive_int("pages", pages, 1 << 26)
    _positive_int("rounds", rounds, 1 << 20)
    if rounds < 2:
        raise ConfigError("rounds = 1: the steady hit rate needs at least 2 rounds (the first warms up)")
    if pages * rounds > 1 << 31:
        raise ConfigError(f"pages * rounds = {pages * rounds}: at most 2**31 accesses")
    t = SetAssociativeTLB(entries, ways)
    stride = 1 if pattern == "cyclic" else t.sets
    hits = [int(h) for h in t.cyclic(pages, rounds, stride)]
    return {
        "benchmark": "tlb",
        "entries": entries,
        "ways": ways,
        "sets": t.sets,
        "pattern": pattern,
        "stride": stride,
        "pages": pages,
        "rounds": rounds,
        "hits_per_round": hits,
        "first_round_hit_rate": hits[0] / pages,
        "steady_hit_rate": sum(hits[1:]) / (pages * (rounds - 1)),
    }


# ---- NVIDIA's oversubscription micro-benchmark (uvm-micro oversub) ---------------------------------
#
# The developer blog "Improving GPU Memory Oversubscription Performance" (NVIDIA, 2021) and its
# code sample (NVIDIA-developer-blog/code-samples, posts/unified-memory-oversubscription,
# uvm_oversubs.cu) read a managed allocation of `factor` x GPU memory with one kernel, repeated
# (-lc, default 3), and report the read bandwidth; access patterns streaming (grid-stride),
# block_streaming (each thread block a contiguous chunk) and random_warp (each warp a random
# page); modes page_fault (demand paging), zero_copy (data in host memory, read over the link)
# and prefetch.  Here one loop is one iteration of a synthetic trace replayed page by page under
# the detailed preset (the far-fault handler on the SMs, the PCIe link), scaled down in memory.

OVERSUB_PATTERNS = ("streaming", "block_streaming", "random_warp")
OVERSUB_MODES = ("page_fault", "zero_copy", "prefetch")
OVERSUB_FACTORS = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)

# The two systems: an A100-40GB on PCIe 4.0 x16 (gpus.py) and a V100-like GPU on PCIe 3.0 x16
# (V100 SXM2/PCIe 16 GB: 80 SMs, 900 GB/s HBM2 - NVIDIA Tesla V100 GPU Architecture whitepaper).
OVERSUB_GPUS = {
    "A100-40GB": {"memory_GiB": 40.0, "sms": 108, "hbm_GBps": 1555.0, "link_generation": 4, "lanes": 16},
    "V100-like": {"memory_GiB": 16.0, "sms": 80, "hbm_GBps": 900.0, "link_generation": 3, "lanes": 16},
}

# The blog publishes its bandwidths only as figures (images): no text copy exists, so the table
# stands on the model alone; the sample regenerates them on a GPU (docs/guide/uvm_oversub.md,
# "The hardware's figures": OVERSUB_HARDWARE_COMMAND).
OVERSUB_SOURCE = ("NVIDIA developer blog, Improving GPU Memory Oversubscription Performance (2021), "
                  "https://developer.nvidia.com/blog/improving-gpu-memory-oversubscription-performance/; code sample "
                  "NVIDIA-developer-blog/code-samples, posts/unified-memory-oversubscription/uvm_oversubs.cu")
# How the sample measures a cell on a real GPU (its README and Makefile): one line per cell,
# "Read,<mode>,<pattern>,<factor>,2MB,blocksize=128,loop_count=3, <ms> ms, <bw> GB/s" where bw is
# GiB (2^30 B) per second of kernel time, the mean over the loops, the cold first one included.
OVERSUB_HARDWARE_COMMAND = (
    "git clone https://github.com/NVIDIA-developer-blog/code-samples && "
    "cd code-samples/posts/unified-memory-oversubscription && make && "
    "for a in streaming block_streaming random_warp; do "
    "for m in page_fault zero_copy prefetch_once_and_hints; do "
    "for p in 0.5 0.75 1.0 1.25 1.5 1.75 2.0; do ./uvm_oversubs -a $a -m $m -p $p -lc 3; done; done; done")

_MiB = 1 << 20


def _oversub_trace(alloc_pages: int, slice_pages: int, sms: int, pattern: str, hbm_GBps: float, seed: int):
    """One loop over an allocation of ``alloc_pages``: kernels each reading ``slice_pages`` of it.

    streaming: each kernel's slice as chunks of ``sms`` x 64 KiB, all SMs on one chunk at a time
    (a grid-stride front); block_streaming: the slice as one tensor, each SM a contiguous share;
    random_warp: chunks of ``sms`` x 4 KiB (each SM one page of each), dealt to kernels and
    visited in a seeded random order."""
    from ..workload.trace import ACCESS_READ, PAGE_SIZE_BYTES, Trace, validate_trace

    chunk = {"streaming": sms * 16, "block_streaming": slice_pages, "random_warp": sms}[pattern]
    chunk = max(1, min(chunk, slice_pages))
    n_chunks = -(-alloc_pages // chunk)
    sizes = np.full(n_chunks, chunk, np.int64)
    sizes[-1] = alloc_pages - chunk * (n_chunks - 1)
    order = np.arange(n_chunks)
    if pattern == "random_warp":
        order = np.random.default_rng(seed).permutation(n_chunks)
    per_kernel = max(1, slice_pages // chunk)
    groups = [order[i:i + per_kernel] for i in range(0, n_chunks, per_kernel)]
    K = len(groups)
    offsets = np.zeros(K + 1, np.int64)
    offsets[1:] = np.cumsum([len(g) for g in groups])
    # t11: the kernel's bytes at the GPU's memory bandwidth (everything resident)
    t11 = np.array([sizes[g].sum() * PAGE_SIZE_BYTES / hbm_GBps for g in groups], np.float64)
    trace = Trace(
        model=f"oversub_{pattern}", batch_size=1,
        tensor_size_bytes=sizes * PAGE_SIZE_BYTES, tensor_is_global=np.zeros(n_chunks, bool),
        tensor_name=np.array([f"chunk{i}" for i in range(n_chunks)], dtype=str),
        kernel_name=np.array([f"read{k}" for k in range(K)], dtype=str),
        kernel_time_ideal_ns=t11, kernel_time_fault_all_ns=t11 * 2, kernel_time_fault_outputs_ns=t11,
        kernel_workspace_bytes=np.zeros(K, np.int64), access_offsets=offsets,
        access_tensor=np.concatenate(groups).astype(np.int32),
        access_mode=np.full(int(offsets[-1]), ACCESS_READ, np.uint8),
        source=f"g10core.experiments.uvmmicro.oversub({pattern})", profiling_gpu="synthetic")
    validate_trace(trace)
    return trace, groups


def _oversub_hints(groups, mode: str):
    """zero_copy: prefer_host + accessed_by on every chunk at kernel 0 (data in host memory, read
    over the link); prefetch: each kernel's chunks to the GPU when the kernel before begins
    (cudaMemPrefetchAsync one slice ahead; the first at its own begin); page_fault: none."""
    from ..codes import HINT_ADVISE_ACCESSED_BY, HINT_ADVISE_PREFER_HOST, HINT_DTYPE, HINT_TO_GPU

    rows = []
    if mode == "zero_copy":
        for g in groups:
            for t in g:
                rows.append((0, int(t), HINT_ADVISE_PREFER_HOST))
                rows.append((0, int(t), HINT_ADVISE_ACCESSED_BY))
    elif mode == "prefetch":
        for t in groups[0]:
            rows.append((0, int(t), HINT_TO_GPU))
        for k in range(1, len(groups)):
            for t in groups[k]:
                rows.append((k - 1, int(t), HINT_TO_GPU))
    rows.sort(key=lambda r: r[0])
    return np.array(rows, HINT_DTYPE) if rows else None


def oversub(gpu: str = "A100-40GB", pattern: str = "streaming", mode: str = "page_fault", factor: float = 1.5,
            *, scale: int = 256, loops: int = 3, seed: int = 0, sets=()) -> dict:
    """One cell of the oversubscription benchmark: the read bandwidth of ``loops`` passes over
    ``factor`` x GPU memory (the GPU's memory divided by ``scale``: costs are per page and per
    batch, so the bandwidth does not depend on it once the allocation spans many VA blocks).

    Returns a dict with the steady bandwidth (GB/s: bytes of one pass / the mean time of the
    passes after the first) and the first pass's, the fault batches, thrashing counters and the
    remote bytes."""
    from ..config import preset
    from ..simulator import Simulator
    from ..workload.trace import PAGE_SIZE_BYTES

    if gpu not in OVERSUB_GPUS:
        raise ConfigError(f"gpu = {gpu!r}: must be one of {', '.join(OVERSUB_GPUS)}")
    if pattern not in OVERSUB_PATTERNS:
        raise ConfigError(f"pattern = {pattern!r}: must be one of {', '.join(OVERSUB_PATTERNS)}")
    if mode not in OVERSUB_MODES:
        raise ConfigError(f"mode = {mode!r}: must be one of {', '.join(OVERSUB_MODES)}")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0.05 <= factor <= 8:
        raise ConfigError(f"factor = {factor!r}: must be a number in [0.05, 8]")
    _positive_int("scale", scale, 1 << 16)
    _positive_int("loops", loops, 100)
    if loops < 2:
        raise ConfigError("loops = 1: the steady bandwidth needs at least 2 loops (the first is the cold one)")
    g = OVERSUB_GPUS[gpu]
    gpu_bytes = int(g["memory_GiB"] * (1 << 30)) // scale
    gpu_bytes -= gpu_bytes % (2 * _MiB)
    if gpu_bytes < 8 * _MiB:
        raise ConfigError(f"scale = {scale}: leaves {gpu_bytes >> 20} MiB of GPU memory; at least 8 MiB")
    gpu_pages = gpu_bytes // PAGE_SIZE_BYTES
    alloc_pages = max(1, int(round(factor * gpu_pages)))
    slice_pages = max(512, gpu_pages // 4)
    trace, groups = _oversub_trace(alloc_pages, slice_pages, g["sms"], pattern, g["hbm_GBps"], seed)
    cfg = preset("detailed").with_overrides({
        "gpu": {"memory_GiB": gpu_bytes / (1 << 30), "sms": g["sms"]},
        "link": {"generation": g["link_generation"], "lanes": g["lanes"]},
        "host": {"memory_GiB": max(1.0, 4 * alloc_pages * PAGE_SIZE_BYTES / (1 << 30))},
        "run": {"iterations": loops}})
    if sets:
        cfg = cfg.with_overrides(dict(s.split("=", 1) for s in sets))
    hints = _oversub_hints(groups, mode)
    r = Simulator(cfg).run(trace, "g10" if hints is not None else "base-uvm", hints=hints)
    if r.failed:
        raise ConfigError(f"{gpu} {pattern} {mode} x{factor}: the simulation failed: {r.failure_reason}")
    nbytes = alloc_pages * PAGE_SIZE_BYTES
    times = [it.time_s for it in r.iterations]
    steady = sum(times[1:]) / len(times[1:])
    th = r.counters.get("thrashing", {})
    fb = r.counters.get("fault_batches", {})
    return {
        "benchmark": "oversub", "gpu": gpu, "pattern": pattern, "mode": mode, "factor": factor,
        "scale": scale, "loops": loops, "gpu_bytes": gpu_bytes, "alloc_bytes": nbytes,
        "kernels_per_loop": trace.n_kernels,
        "bandwidth_GBps": nbytes / steady / 1e9, "first_loop_GBps": nbytes / times[0] / 1e9,
        "loop_times_s": times, "link_GBps": _link_GBps(cfg), "hbm_GBps": g["hbm_GBps"],
        "fault_batches": int(fb.get("batches", 0)), "pages_from_host": int(fb.get("pages_from_host", 0)),
        "pages_to_host": int(fb.get("pages_to_host", 0)),
        "thrashing_events": int(th.get("thrashing_events", 0)), "throttles": int(th.get("throttles", 0)),
        "pins": int(th.get("pins", 0)), "remote_read_bytes": int(th.get("remote_read_bytes", 0)),
    }


def _link_GBps(cfg) -> float:
    from ..link.pcie import link_spec_from_config
    return link_spec_from_config(cfg).effective_GBps("to_device", "host")


def oversub_table(gpus=tuple(OVERSUB_GPUS), patterns=OVERSUB_PATTERNS, modes=OVERSUB_MODES,
                  factors=OVERSUB_FACTORS, *, scale: int = 256, loops: int = 3, seed: int = 0, sets=(),
                  progress=None) -> dict:
    """Every cell of ``gpus`` x ``patterns`` x ``modes`` x ``factors`` (``oversub``), as rows."""
    rows = []
    for gname in gpus:
        for pat in patterns:
            for mode in modes:
                for f in factors:
                    rows.append(oversub(gname, pat, mode, f, scale=scale, loops=loops, seed=seed, sets=sets))
                    if progress is not None:
                        progress(rows[-1])
    return {"benchmark": "oversub", "rows": rows, "source": OVERSUB_SOURCE,
            "hardware_command": OVERSUB_HARDWARE_COMMAND}


def oversub_text(result: dict) -> str:
    """The table: per GPU, a row per (pattern, mode), a column per factor, GB/s."""
    rows = result["rows"]
    out = []
    for gname in dict.fromkeys(r["gpu"] for r in rows):
        mine = [r for r in rows if r["gpu"] == gname]
        factors = list(dict.fromkeys(r["factor"] for r in mine))
        g = OVERSUB_GPUS[gname]
        out.append(f"{gname}: {g['memory_GiB']:g} GiB / {mine[0]['scale']} scale, PCIe {g['link_generation']}.0 "
                   f"x{g['lanes']} ({mine[0]['link_GBps']:.1f} GB/s effective), HBM {g['hbm_GBps']:g} GB/s; "
                   "read bandwidth GB/s, steady loops")
        out.append(f"  {'pattern':16s} {'mode':11s}" + "".join(f"{'x' + format(f, 'g'):>9s}" for f in factors))
        for pat in dict.fromkeys(r["pattern"] for r in mine):
            for mode in dict.fromkeys(r["mode"] for r in mine):
                cells = []
                for f in factors:
                    r = next((x for x in mine if (x["pattern"], x["mode"], x["factor"]) == (pat, mode, f)), None)
                    cells.append("" if r is None else f"{r['bandwidth_GBps']:.2f}")
                out.append(f"  {pat:16s} {mode:11s}" + "".join(f"{c:>9s}" for c in cells))
    return "\n".join(out)


def plot_oversub(result: dict, path):
    """Bandwidth against oversubscription factor, a panel per GPU and pattern, a line per mode
    (log scale); PNG, written atomically."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .report import _save

    rows = result["rows"]
    gpus = list(dict.fromkeys(r["gpu"] for r in rows))
    pats = list(dict.fromkeys(r["pattern"] for r in rows))
    fig = Figure(figsize=(3.2 * len(pats), 2.6 * len(gpus)), dpi=150)
    FigureCanvasAgg(fig)
    for i, gname in enumerate(gpus):
        for j, pat in enumerate(pats):
            ax = fig.add_subplot(len(gpus), len(pats), i * len(pats) + j + 1)
            for mode in dict.fromkeys(r["mode"] for r in rows):
                pts = sorted((r["factor"], r["bandwidth_GBps"]) for r in rows
                             if (r["gpu"], r["pattern"], r["mode"]) == (gname, pat, mode))
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=mode)
            ax.set_yscale("log")
            ax.set_title(f"{gname}, {pat}", fontsize=8)
            ax.set_xlabel("oversubscription factor", fontsize=7)
            ax.set_ylabel("GB/s", fontsize=7)
            ax.tick_params(labelsize=6)
            ax.grid(True, which="both", linewidth=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=6)
    fig.tight_layout()
    return _save(fig, Path(path))
