"""``g10sim uvm-micro``: microbenchmarks of the detailed preset's UVM components
(``g10core.experiments.uvmmicro``), each with ``--json``."""
from __future__ import annotations

import argparse
from dataclasses import replace

from .common import EXIT_OK, add_json_option, emit_json, human


def _blocks(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated block numbers, e.g. 0,1,2,4") from None


def _spec(args):
    from ..uvm import FaultHandlerSpec

    over = {name: getattr(args, name) for name in ("batch_faults", "batch_fixed_us", "batch_per_page_us",
                                                    "migration_unit_bytes", "prefetch_threshold")
            if getattr(args, name, None) is not None}
    return replace(FaultHandlerSpec(), **over).check("uvm-micro")


def _cmd_prefetch(args) -> int:
    from ..experiments.uvmmicro import prefetch

    r = prefetch(args.blocks, regions=args.regions, spec=_spec(args))
    if human(args):
        print(f"tree prefetcher, {r['va_block_bytes'] // 1024} KiB VA block, "
              f"{r['migration_unit_bytes'] // 1024} KiB migration unit")
        for b, c, p in zip(r["blocks"], r["copies_bytes"], r["prefetched_bytes"]):
            print(f"  touch block {b:3d}: copies {c // 1024:5d} KiB ({(c - p) // 1024} KiB unit + "
                  f"{p // 1024} KiB prefetched)")
        print(f"  {r['regions']} consecutive VA blocks: same copies in each: {r['same_in_every_region']}, "
              f"a copy crossed a VA block: {r['crossed_va_block']}")
    emit_json(r, args.json_path)
    return EXIT_OK


def _cmd_batching(args) -> int:
    from ..experiments.uvmmicro import batching

    r = batching(args.faults, spec=_spec(args))
    if human(args):
        print(f"{r['faults']} faults on distinct cold {r['bytes_moved'] // r['faults'] // 1024} KiB units: "
              f"{r['batches']} batches of up to {r['batch_faults']} (ceil: {r['expected_batches']})")
        per_fault = r["batch_per_block_us"] + r["batch_unmap_us"] + r["bytes_moved"] // r["faults"] // 4096 * \
            r["batch_per_page_us"]
        print(f"  time {r['time_us']:.3f} us; closed form batches x {r['batch_cost_us']} us + W x {per_fault:g} us "
              f"(its VA block, unmap, pages) + W x unit / {r['link_GBps']:.3f} GB/s = {r['closed_form_us']:.3f} us")
    emit_json(r, args.json_path)
    return EXIT_OK


def _cmd_tlb(args) -> int:
    from ..experiments.uvmmicro import tlb

    r = tlb(args.entries, args.ways, args.pattern, args.pages, args.rounds)
    if human(args):
        print(f"TLB {r['entries']} entries, {r['ways']}-way ({r['sets']} sets), {r['pattern']} over "
              f"{r['pages']} pages (stride {r['stride']}), {r['rounds']} rounds")
        print(f"  hits per round {r['hits_per_round']}; steady hit rate {r['steady_hit_rate']:.6g}")
    emit_json(r, args.json_path)
    return EXIT_OK


def add_parser(subparsers) -> None:
    from ..experiments.uvmmicro import DEFAULT_BLOCKS, PATTERNS

    p = subparsers.add_parser(
        "uvm-micro", help="microbenchmarks of the far-fault handler and the TLB (detailed preset)",
        description="Closed-form checks of the detailed preset's UVM components (detailed_model.md §5).")
    sub = p.add_subparsers(dest="uvm_micro_command", metavar="BENCHMARK", required=True)

    f = sub.add_parser("prefetch", help="bytes the tree prefetcher copies at each first touch")
    f.add_argument("--blocks", type=_blocks, default=list(DEFAULT_BLOCKS), metavar="B,B,...",
                   help="64 KiB blocks of a fresh 2 MiB VA block touched in turn (default 0,1,2,4,8,16)")
    f.add_argument("--regions", type=int, default=3, help="consecutive VA blocks the pattern is repeated in")
    f.add_argument("--migration-unit-bytes", type=int, dest="migration_unit_bytes", default=None)
    f.add_argument("--prefetch-threshold", type=float, dest="prefetch_threshold", default=None)
    add_json_option(f)
    f.set_defaults(func=_cmd_prefetch)

    b = sub.add_parser("batching", help="W simultaneous faults on distinct cold units: batches and time")
    b.add_argument("--faults", type=int, required=True, metavar="W")
    b.add_argument("--batch-faults", type=int, dest="batch_faults", default=None, help="default 256")
    b.add_argument("--batch-cost-us", type=float, dest="batch_fixed_us", default=None, help="default 16 (fault.batch_fixed_us)")
    b.add_argument("--batch-per-page-us", type=float, dest="batch_per_page_us", default=None, help="default 0")
    add_json_option(b)
    b.set_defaults(func=_cmd_batching)

    t = sub.add_parser("tlb", help="steady hit rate of a cyclic sweep over one LRU TLB")
    t.add_argument("--entries", type=int, required=True, metavar="E")
    t.add_argument("--ways", type=int, required=True, metavar="A", help="A = E: fully associative")
    t.add_argument("--pattern", choices=PATTERNS, default="cyclic",
                   help="cyclic: pages 0..N-1; stride: multiples of the set count (one set)")
    t.add_argument("--pages", type=int, required=True, metavar="N")
    t.add_argument("--rounds", type=int, default=4, metavar="R")
    add_json_option(t)
    t.set_defaults(func=_cmd_tlb)
