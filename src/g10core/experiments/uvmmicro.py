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

from ..config import ConfigError
from ..uvm import PAGE_BYTES, FaultHandler, FaultHandlerSpec

__all__ = ["prefetch", "batching", "tlb", "PATTERNS", "DEFAULT_BLOCKS"]

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
    from .._tlb import SetAssociativeTLB
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
