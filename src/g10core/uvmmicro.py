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

from .config import ConfigError
from .uvm import PAGE_BYTES, FaultHandler, FaultHandlerSpec

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
    closed = (n_batches * batch_cost_us + faults * spec.unit_pages * spec.batch_per_page_us
              + faults * unit_bytes / (gbps * 1e3))
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
        "link_GBps": gbps,
        "bytes_moved": st["pages_from_host"] * PAGE_BYTES,
        "mean_fault_wait_us": st["mean_fault_wait_us"],
    }


def tlb(entries: int, ways: int, pattern: str = "cyclic", pages: int = 64, rounds: int = 4) -> dict:
    """Sweep ``pages`` pages ``rounds`` times over one LRU TLB of ``entries`` entries in sets of
    ``ways``; ``pattern`` "cyclic" visits pages 0..N-1, "stride" visits multiples of the set
    count (all in set 0)."""
    from ._tlb import SetAssociativeTLB
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


# ---- command line: `g10sim uvm-micro ...` ---------------------------------------------
# A command group in cli.py's style (``add_uvm_micro_parser(subparsers)``; each command's
# ``func`` returns the exit status).  It does not import g10core.cli (no import cycle): it
# writes its JSON itself.  ``main`` runs the group on its own (tests, ``python -m``).

def _blocks(text: str) -> list[int]:
    import argparse
    try:
        return [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated block numbers, e.g. 0,1,2,4") from None


def _emit(result: dict, dest: str | None) -> None:
    import json
    import os
    import sys
    from pathlib import Path
    if dest is None:
        return
    text = json.dumps(result, indent=2, allow_nan=False) + "\n"
    if dest == "-":
        sys.stdout.write(text)
        return
    path = Path(dest)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _spec(args) -> FaultHandlerSpec:
    base = FaultHandlerSpec()
    over = {}
    for name in ("batch_faults", "batch_fixed_us", "batch_per_page_us", "migration_unit_bytes",
                 "prefetch_threshold"):
        v = getattr(args, name, None)
        if v is not None:
            over[name] = v
    return replace(base, **over).check("uvm-micro")


def _cmd_prefetch(args) -> int:
    r = prefetch(args.blocks, regions=args.regions, spec=_spec(args))
    if args.json_path != "-":
        print(f"tree prefetcher, {r['va_block_bytes'] // 1024} KiB VA block, "
              f"{r['migration_unit_bytes'] // 1024} KiB migration unit")
        for b, c, p in zip(r["blocks"], r["copies_bytes"], r["prefetched_bytes"]):
            print(f"  touch block {b:3d}: copies {c // 1024:5d} KiB ({(c - p) // 1024} KiB unit + "
                  f"{p // 1024} KiB prefetched)")
        print(f"  {r['regions']} consecutive VA blocks: same copies in each: {r['same_in_every_region']}, "
              f"a copy crossed a VA block: {r['crossed_va_block']}")
    _emit(r, args.json_path)
    return 0


def _cmd_batching(args) -> int:
    r = batching(args.faults, spec=_spec(args))
    if args.json_path != "-":
        print(f"{r['faults']} faults on distinct cold {r['bytes_moved'] // r['faults'] // 1024} KiB units: "
              f"{r['batches']} batches of up to {r['batch_faults']} (ceil: {r['expected_batches']})")
        print(f"  time {r['time_us']:.3f} us; closed form batches x {r['batch_cost_us']} us + "
              f"W x unit / {r['link_GBps']:.3f} GB/s = {r['closed_form_us']:.3f} us")
    _emit(r, args.json_path)
    return 0


def _cmd_tlb(args) -> int:
    r = tlb(args.entries, args.ways, args.pattern, args.pages, args.rounds)
    if args.json_path != "-":
        print(f"TLB {r['entries']} entries, {r['ways']}-way ({r['sets']} sets), {r['pattern']} over "
              f"{r['pages']} pages (stride {r['stride']}), {r['rounds']} rounds")
        print(f"  hits per round {r['hits_per_round']}; steady hit rate {r['steady_hit_rate']:.6g}")
    _emit(r, args.json_path)
    return 0


def add_uvm_micro_parser(subparsers) -> None:
    """Add ``uvm-micro`` and its commands (prefetch, batching, tlb) to ``subparsers``."""
    p = subparsers.add_parser(
        "uvm-micro", help="microbenchmarks of the far-fault handler and the TLB (detailed preset)",
        description="Closed-form checks of the detailed preset's UVM components (detailed_model.md §5).")
    sub = p.add_subparsers(dest="uvm_micro_command", metavar="BENCHMARK", required=True)

    def json_option(q):
        q.add_argument("--json", metavar="PATH|-", dest="json_path",
                       help="also write the results as JSON to PATH ('-': to stdout, instead of the text)")

    f = sub.add_parser("prefetch", help="bytes the tree prefetcher copies at each first touch")
    f.add_argument("--blocks", type=_blocks, default=list(DEFAULT_BLOCKS), metavar="B,B,...",
                   help="64 KiB blocks of a fresh 2 MiB VA block touched in turn (default 0,1,2,4,8,16)")
    f.add_argument("--regions", type=int, default=3, help="consecutive VA blocks the pattern is repeated in")
    f.add_argument("--migration-unit-bytes", type=int, dest="migration_unit_bytes", default=None)
    f.add_argument("--prefetch-threshold", type=float, dest="prefetch_threshold", default=None)
    json_option(f)
    f.set_defaults(func=_cmd_prefetch)

    b = sub.add_parser("batching", help="W simultaneous faults on distinct cold units: batches and time")
    b.add_argument("--faults", type=int, required=True, metavar="W")
    b.add_argument("--batch-faults", type=int, dest="batch_faults", default=None, help="default 256")
    b.add_argument("--batch-cost-us", type=float, dest="batch_fixed_us", default=None, help="default 45")
    b.add_argument("--batch-per-page-us", type=float, dest="batch_per_page_us", default=None, help="default 0")
    json_option(b)
    b.set_defaults(func=_cmd_batching)

    t = sub.add_parser("tlb", help="steady hit rate of a cyclic sweep over one LRU TLB")
    t.add_argument("--entries", type=int, required=True, metavar="E")
    t.add_argument("--ways", type=int, required=True, metavar="A", help="A = E: fully associative")
    t.add_argument("--pattern", choices=PATTERNS, default="cyclic",
                   help="cyclic: pages 0..N-1; stride: multiples of the set count (one set)")
    t.add_argument("--pages", type=int, required=True, metavar="N")
    t.add_argument("--rounds", type=int, default=4, metavar="R")
    json_option(t)
    t.set_defaults(func=_cmd_tlb)


def main(argv=None) -> int:
    """``g10sim uvm-micro`` on its own: exit 0 with a result, 2 with one line on bad input."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(prog="g10sim")
    add_uvm_micro_parser(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(["uvm-micro", *(sys.argv[1:] if argv is None else argv)])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.func(args) or 0)
    except (ConfigError, OSError, ValueError) as exc:
        print(f"g10sim: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
