"""``g10sim machine``: machines with several GPUs, switches and drives (``g10core.machine``)."""
from __future__ import annotations

from .common import EXIT_OK, add_json_option, emit_json, human


def _cmd_list(args) -> int:
    from ..machine import shipped, shipped_names

    rows = []
    for name in shipped_names():
        m = shipped(name)
        rows.append({"name": name, "title": m.name, "gpus": f"{m.gpus.count} x {m.gpus.model}",
                     "drives": m.drives.count, "switches": len(m.switches), "sockets": len(m.sockets)})
    if human(args):
        for r in rows:
            print(f"{r['name']:24s} {r['title']}: {r['gpus']}, {r['drives']} drives, {r['switches']} switches, "
                  f"{r['sockets']} sockets")
    emit_json(rows, args.json_path)
    return EXIT_OK


def _cmd_show(args) -> int:
    from ..machine import Topology, load, single_gpu_rates

    m = load(args.machine)
    topo = Topology(m)
    gpu = args.gpu
    if not 0 <= gpu < m.gpus.count:
        raise ValueError(f"--gpu {gpu}: {m.path} has GPUs 0..{m.gpus.count - 1}")
    vol = m.volume_of_gpu(gpu)
    routes = {"volume read": [topo.describe(r) for r in topo.volume_read(gpu)],
              "volume write": [topo.describe(r) for r in topo.volume_write(gpu)],
              "host to gpu": [topo.describe(topo.host_to_gpu(gpu))],
              "gpu to host": [topo.describe(topo.gpu_to_host(gpu))]}
    out = {"machine": m.to_dict(), "gpu": gpu, "volume": vol.name, "routes": routes,
           "alone_GBps": single_gpu_rates(m, gpu), "hops_GBps": dict(topo.bandwidth)}
    if human(args):
        print(f"{m.name} ({m.path}): {m.gpus.count} x {m.gpus.model} (PCIe Gen{m.gpus.link_generation} "
              f"x{m.gpus.link_lanes}), {m.drives.count} drives ({m.drives.read_GBps:g} / {m.drives.write_GBps:g} GB/s, "
              f"{m.drives.duplex} duplex), {len(m.sockets)} sockets, {len(m.switches)} switches"
              + (f", NVLink {m.nvlink_GBps:g} GB/s per direction" if m.nvlink_GBps else ""))
        for s in m.switches:
            up = "root ports" if s.uplink_GBps is None else f"uplink Gen{s.uplink_generation} x{s.uplink_lanes}"
            print(f"  {s.name:8s} under {s.parent:8s} {up}: GPUs {list(s.gpus)}, drives {list(s.drives)}")
        print(f"GPU {gpu}, volume {vol.name!r} (RAID0 of drives {list(vol.drives)}):")
        for what, rs in routes.items():
            print(f"  {what}: {rs[0]}" + (f"  (+{len(rs) - 1} more drives)" if len(rs) > 1 else ""))
        print("  alone on the machine: " + ", ".join(f"{k} {v:g} GB/s" for k, v in out["alone_GBps"].items()))
    emit_json(out, args.json_path)
    return EXIT_OK


def _cmd_bench(args) -> int:
    from ..machine.validation import bench

    res = bench()
    if human(args):
        print("GPUDirect Storage, DGX-2 (NVIDIA GDS Benchmarking and Configuration Guide):")
        for r in res["gds_near_far"]:
            print(f"  {r['case']:58s} published {r['published']:6.2f}  ours {r['ours']:6.2f} GiB/s "
                  f"({r['difference']:+.0%})")
        print("DeepNVMe drive scaling (microsoft/DeepSpeed blogs/deepnvme), read / write GB/s:")
        for r in res["deepnvme"]:
            print(f"  {r['case']:20s} published {r['published_read']:5.1f} / {r['published_write']:5.1f}   ours (host) "
                  f"{r['ours_host_read']:6.1f} / {r['ours_host_write']:5.1f}  ({r['difference_read']:+.0%} / "
                  f"{r['difference_write']:+.0%})   ours (GDS) {r['ours_gds_read']:6.1f} / {r['ours_gds_write']:5.1f}")
        print("DGX A100, n GPUs reading the 8-drive RAID0 at once:")
        for r in res["dgx_a100_raid_read"]:
            print(f"  {r['gpus']} GPUs: {r['per_gpu_GBps']:6.2f} GB/s each, {r['total_GBps']:6.2f} in all; busiest hop "
                  f"{r['busiest_hop']}")
    emit_json(res, args.json_path)
    return EXIT_OK


def _cmd_train(args) -> int:
    from ..machine import load
    from ..machine.training import data_parallel
    from .common import EXIT_FAILURE, check_output_path, gpu_sets, heartbeat, simulation_failures
    import sys

    check_output_path(args.json_path, "--json")
    if args.timeline == "-":
        raise ValueError("--timeline -: give a file path (a timeline is a file for Perfetto, not text for stdout)")
    check_output_path(args.timeline, "--timeline")
    m = load(args.machine)
    what = f"{args.trace} under {args.policy} on {m.name}"
    with simulation_failures(what), heartbeat(what, enabled=not args.no_progress):
        res = data_parallel(args.trace, args.policy, m, args.gpus, preset=args.preset, sets=gpu_sets(args),
                            rounds=args.rounds, overlap=not args.no_allreduce_overlap)
    if human(args):
        print(res.summary())
    emit_json(res.to_dict(), args.json_path)
    if args.timeline is not None and not res.failed:
        res.write_timeline(args.timeline)
        if human(args):
            print(f"wrote {args.timeline} (open it in ui.perfetto.dev or chrome://tracing)")
    if res.failed:
        print(f"g10sim: simulation failed: {what}: {res.failure_reason}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _cmd_plan(args) -> int:
    from ..machine import load
    from ..machine.planning import fewest_drives, least_uplink
    from .common import gpu_sets, heartbeat, simulation_failures

    m = load(args.machine)
    what = f"{args.trace} under {args.policy} on {m.name}"
    planner = least_uplink if args.vary == "uplink" else fewest_drives
    with simulation_failures(what), heartbeat(what, enabled=not args.no_progress):
        plan = planner(args.trace, args.policy, m, args.target, args.gpus, preset=args.preset, sets=gpu_sets(args))
    if human(args) and args.vary == "uplink":
        from ..machine.description import pcie_raw_GBps

        for (g, n), (f, t, h) in sorted(plan.runs.items(), key=lambda kv: pcie_raw_GBps(*kv[0])):
            print(f"  uplink Gen{g} x{n:<2d} ({pcie_raw_GBps(g, n):6.2f} GB/s): {f:6.1%} of ideal, iteration {t:.3f} s, "
                  f"busiest hop {h}")
        if plan.uplink is None:
            print(f"{what}: even a Gen{max(g for g, _ in plan.runs)} x16 uplink on every switch misses "
                  f"{args.target:.0%} of ideal")
        else:
            print(f"{what}: a Gen{plan.uplink[0]} x{plan.uplink[1]} uplink ({plan.uplink_GBps:.2f} GB/s per direction) "
                  f"on every switch reaches {args.target:.0%} of ideal")
    elif human(args):
        for k, (f, t, h) in sorted(plan.runs.items()):
            print(f"  {k:3d} drives: {f:6.1%} of ideal, iteration {t:.3f} s, busiest hop {h}")
        if plan.drives is None:
            print(f"{what}: even every drive of the volume misses {args.target:.0%} of ideal")
        else:
            print(f"{what}: {plan.drives} drive(s) reach {args.target:.0%} of ideal")
    emit_json(plan.to_dict(), args.json_path)
    return EXIT_OK


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "machine", help="machines with several GPUs, PCIe switches and drives: list, show, bench",
        description="Machine descriptions (TOML; docs/guide/machines.md): the shipped ones, one machine's "
                    "switches and routes, and the flow model beside published GPUDirect Storage and DeepNVMe "
                    "measurements. `g10sim run --machine NAME|FILE` runs a trace on a machine's GPU 0.")
    sub = p.add_subparsers(dest="machine_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="the shipped machines")
    add_json_option(ls)
    ls.set_defaults(func=_cmd_list)
    show = sub.add_parser("show", help="a machine's switches, a GPU's routes and its rates alone")
    show.add_argument("machine", metavar="NAME|FILE.toml")
    show.add_argument("--gpu", type=int, default=0, metavar="N", help="the GPU whose routes to show (default 0)")
    add_json_option(show)
    show.set_defaults(func=_cmd_show)
    b = sub.add_parser("bench", help="the flow model beside the GDS guide's near/far reads and DeepNVMe's scaling")
    add_json_option(b)
    b.set_defaults(func=_cmd_bench)
    t = sub.add_parser("train", help="data-parallel training of a trace on a machine's GPUs",
                       description="Each of the first --gpus GPUs replays TRACE under a policy (tensor or page "
                                   "level); their SSD and host transfers share the machine's hops max-min fair (a "
                                   "fixed point between the ranks' simulations and the machine's flow model), then "
                                   "the gradients are all-reduced in a ring (under ZeRO the ranks partition the model "
                                   "state, all-gather parameters and reduce-scatter gradients instead). Prints each "
                                   "GPU's iteration and the busiest hops.")
    t.add_argument("trace", metavar="TRACE")
    t.add_argument("--machine", required=True, metavar="NAME|FILE.toml")
    t.add_argument("--policy", required=True, metavar="P",
                   help="a policy that moves data: teraio, zero-infinity, g10, base-uvm, g10-gds, ...")
    t.add_argument("--gpus", type=int, default=None, metavar="N", help="ranks: the first N GPUs (default: all)")
    t.add_argument("--rounds", type=int, default=6, metavar="R", help="at most R rounds of the fixed point (default 6)")
    t.add_argument("--preset", default="default", metavar="NAME")
    t.add_argument("--set", metavar="SECTION.KEY=VALUE", action="append", default=[], dest="sets",
                   help="an override after the machine's keys, e.g. --set gpu.memory_GiB=40 (repeatable)")
    t.add_argument("--no-allreduce-overlap", action="store_true",
                   help="run the gradient all-reduce after the iteration, whole (default: bucket by bucket during "
                        "the backward pass, as DistributedDataParallel does)")
    t.add_argument("--no-progress", action="store_true", help="no heartbeat line on stderr")
    t.add_argument("--timeline", metavar="FILE.json",
                   help="a Perfetto/Chrome trace: a track per GPU, a counter per hop (its fraction in use)")
    add_json_option(t)
    t.set_defaults(func=_cmd_train)
    pl = sub.add_parser("plan", help="the fewest drives, or the slowest switch uplink, for a target fraction of ideal "
                                     "(data parallel)",
                        description="Bisect the number of drives of the GPUs' RAID0 volume (spread over the switches "
                                    "first) for the fewest with which data-parallel training reaches --target of "
                                    "ideal, or (--vary uplink) the PCIe generation x lanes of every switch's uplink "
                                    "for the slowest; prints every run made.")
    pl.add_argument("trace", metavar="TRACE")
    pl.add_argument("--machine", required=True, metavar="NAME|FILE.toml")
    pl.add_argument("--policy", required=True, metavar="P")
    pl.add_argument("--target", type=float, required=True, metavar="F", help="fraction of ideal, e.g. 0.5")
    pl.add_argument("--vary", choices=("drives", "uplink"), default="drives",
                    help="what to plan: the number of drives (default) or every PCIe switch's uplink")
    pl.add_argument("--gpus", type=int, default=None, metavar="N")
    pl.add_argument("--preset", default="default", metavar="NAME")
    pl.add_argument("--set", metavar="SECTION.KEY=VALUE", action="append", default=[], dest="sets")
    pl.add_argument("--no-progress", action="store_true")
    add_json_option(pl)
    pl.set_defaults(func=_cmd_plan)
