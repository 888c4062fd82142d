"""``g10sim ssd``: the steady-state SSD microbenchmark (``g10core.experiments.ssdbench``)."""
from __future__ import annotations

import sys

from ..ssd import SSD_PRESETS, ssd_preset
from ..experiments.ssdbench import DEFAULTS, run_microbenchmark
from .common import EXIT_OK, add_json_option, emit_json, human, simulation_failures


def _print(res: dict) -> None:
    d, s = res["device"], res["settings"]
    print(f"SSD microbenchmark: preset {s['preset']}, {s['workload']} writes, victim {s['victim']}, "
          f"queue depth {s['queue_depth']}")
    print(f"  device      {d['n_channels']} channels x {d['planes_per_channel']} planes, "
          f"{d['blocks_per_plane']} blocks/plane x {s['pages_per_block']} pages x {d['page_size_bytes']} B; "
          f"user {d['user_capacity_GB']:.2f} GB, raw {d['raw_capacity_GB']:.2f} GB")
    print(f"  OP          {d['op']:.4g} (alpha = T/U = {d['alpha']:.4f}; raw OP {d['op_raw']:.4f})")
    print(f"              {d['op_definition']}")
    full = ssd_preset(s["preset"]).blocks_per_plane
    if d["blocks_per_plane"] < 1000:
        print(f"  note        {d['blocks_per_plane']} blocks per plane (the full-size {s['preset']} has {full}): "
              f"greedy WAF grows with blocks per plane; raise --capacity-GiB to approach the full device")
    print(f"  warm-up     {res['warmup']}")
    print(f"  WAF         {res['waf']:.3f}")
    if "closed_form_waf" in res:
        cf = res["closed_form_waf"]
        print(f"              closed forms at this alpha: FIFO {cf['fifo']:.3f}, random victim {cf['random']:.3f}")
    print(f"  GC          {res['gc_count']} victims, {res['gc_copies']} pages copied, "
          f"{res['gc_time_us'] / 1e6:.3f} s of plane time (summed over {d['planes']} planes)")
    print(f"  write       {res['write_GBps']:.3f} GB/s, latency p50 {res['write_latency_us']['p50']:.1f} us, "
          f"p99 {res['write_latency_us']['p99']:.1f} us")
    print(f"  read        {res['read_GBps']:.3f} GB/s, latency p50 {res['read_latency_us']['p50']:.1f} us, "
          f"p99 {res['read_latency_us']['p99']:.1f} us")
    e = res["erase_counts"]
    print(f"  wear        erase counts min {e['min']} / mean {e['mean']:.2f} / max {e['max']} (std {e['std']:.2f})")
    print(f"  wall        {res['wall_s']:.2f} s ({res['simulated_page_writes_per_s']['host'] / 1e6:.1f} M host page "
          f"writes/s)")


def _cmd_ssd(args) -> int:
    say = None
    if human(args) and not args.quiet:
        say = lambda msg: print(f"  ... {msg}", file=sys.stderr, flush=True)  # noqa: E731
    with simulation_failures("SSD microbenchmark"):
        res = run_microbenchmark(preset=args.preset, op=args.op, pages_per_block=args.pages_per_block,
                                 victim=args.victim, workload=args.workload, overwrites=args.overwrites,
                                 capacity_GiB=args.capacity_GiB, queue_depth=args.queue_depth,
                                 seed=args.seed, progress=say)
    if human(args):
        _print(res)
    emit_json(res, args.json_path)
    return EXIT_OK


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "ssd", help="steady-state SSD microbenchmark: WAF, GC, bandwidth, latency",
        description="Fill the SSD model, overwrite it to steady state and measure write amplification, "
                    "GC, bandwidth and latency percentiles. OP = (T - U)/U with T the data-holding "
                    "pages (reserved free blocks excluded), so alpha = T/U = 1 + OP.")
    p.add_argument("--preset", choices=sorted(SSD_PRESETS), default=DEFAULTS["preset"],
                   help="device: zssd (Z-SSD-like, 3.2 GB/s, 12/16 us) or mlc (MQSim-like MLC) "
                        "(default: %(default)s)")
    p.add_argument("--op", type=float, default=DEFAULTS["op"], metavar="OP",
                   help="over-provisioning (T - U)/U (default: %(default)s)")
    p.add_argument("--pages-per-block", type=int, default=DEFAULTS["pages_per_block"], metavar="N",
                   help="flash pages per erase block (default: %(default)s)")
    p.add_argument("--victim", default=DEFAULTS["victim"], metavar="RULE",
                   help="GC victim rule: greedy, fifo, random or d-choices:N (default: %(default)s)")
    p.add_argument("--workload", default=DEFAULTS["workload"], metavar="W",
                   help="sequential, uniform or hotcold:H/C, e.g. hotcold:80/20 (default: %(default)s)")
    p.add_argument("--overwrites", type=int, default=DEFAULTS["overwrites"], metavar="K",
                   help="passes over the logical space after the cold fill; the last one is measured "
                        "(default: %(default)s)")
    p.add_argument("--capacity-GiB", type=float, default=DEFAULTS["capacity_GiB"], metavar="GiB",
                   help="user capacity the preset is scaled to (default: %(default)s)")
    p.add_argument("--queue-depth", type=int, default=None, metavar="QD",
                   help="NVMe queue depth (default: the preset's)")
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"], help="random seed (default: %(default)s)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    add_json_option(p)
    p.set_defaults(func=_cmd_ssd)
