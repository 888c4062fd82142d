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
    from ..uvm.fault_handler import FaultHandlerSpec

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


def _names(allowed):
    def parse(text: str) -> list[str]:
        names = [x.strip() for x in text.split(",") if x.strip()]
        if names == ["all"]:
            return list(allowed)
        bad = [n for n in names if n not in allowed]
        if bad or not names:
            raise argparse.ArgumentTypeError(f"{text!r}: expected 'all' or a comma-separated list of "
                                             f"{', '.join(allowed)}")
        return names
    return parse


def _factors(text: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated numbers, e.g. 0.5,1,1.5,2") from None
    if not out or any(not 0.05 <= f <= 8 for f in out):
        raise argparse.ArgumentTypeError(f"{text!r}: factors must be in [0.05, 8]")
    return out


def _cmd_oversub(args) -> int:
    from ..experiments.uvmmicro import oversub_table, oversub_text, plot_oversub

    r = oversub_table(args.gpu, args.pattern, args.mode, args.factor, scale=args.scale, loops=args.loops,
                      seed=args.seed)
    if human(args):
        print(oversub_text(r))
        print("  the blog's figures are images only; on a GPU its sample measures them: see docs/guide/uvm_oversub.md")
    if args.plot:
        plot_oversub(r, args.plot)
    emit_json(r, args.json_path)
    return EXIT_OK


def add_parser(subparsers) -> None:
    from ..experiments.uvmmicro import (DEFAULT_BLOCKS, OVERSUB_FACTORS, OVERSUB_GPUS, OVERSUB_MODES,
                                        OVERSUB_PATTERNS, PATTERNS)

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
    b.add_argument("--batch-cost-us", type=float, dest="batch_fixed_us", default=None, help="default: fault.batch_profile's fault.batch_fixed_us")
    b.add_argument("--batch-per-page-us", type=float, dest="batch_per_page_us", default=None,
                   help="default: fault.batch_profile's fault.batch_per_page_us")
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

    o = sub.add_parser("oversub", help="NVIDIA's UVM oversubscription benchmark (read bandwidth vs. factor)",
                       description="The developer blog's uvm_oversubs benchmark (2021): read bandwidth of "
                                   "loops over factor x GPU memory, by access pattern and mode, replayed under "
                                   "the detailed preset with GPU memory scaled down (docs: guide/uvm_oversub).")
    o.add_argument("--gpu", type=_names(tuple(OVERSUB_GPUS)), default=list(OVERSUB_GPUS),
                   metavar="G,G", help=f"{', '.join(OVERSUB_GPUS)} or all (default all)")
    o.add_argument("--pattern", type=_names(OVERSUB_PATTERNS), default=list(OVERSUB_PATTERNS),
                   metavar="P,P", help=f"{', '.join(OVERSUB_PATTERNS)} or all (default all)")
    o.add_argument("--mode", type=_names(OVERSUB_MODES), default=list(OVERSUB_MODES),
                   metavar="M,M", help=f"{', '.join(OVERSUB_MODES)} or all (default all)")
    o.add_argument("--factor", type=_factors, default=list(OVERSUB_FACTORS), metavar="F,F",
                   help="oversubscription factors (default 0.5,0.75,...,2.0)")
    o.add_argument("--scale", type=int, default=256, metavar="S",
                   help="GPU memory divided by S (default 256: 160 MiB for the A100-40GB)")
    o.add_argument("--loops", type=int, default=3, metavar="L", help="kernel loops (the sample's -lc; default 3)")
    o.add_argument("--seed", type=int, default=0, help="random_warp's order")
    o.add_argument("--plot", metavar="PATH.png", help="also draw bandwidth against factor (matplotlib)")
    add_json_option(o)
    o.set_defaults(func=_cmd_oversub)
