"""``g10sim run``: simulate one trace under one policy."""
from __future__ import annotations

import sys

from .common import (EXIT_FAILURE, EXIT_OK, Once, add_config_options, add_json_option, check_output_path,
                     config_from_args, gpu_sets, heartbeat, human, policy_help, simulation_failures)


def _cmd_run(args) -> int:
    from ..workload.hints import read_hints
    from ..policies import REGISTRY, names
    from ..experiments.report import format_run_summary
    from ..simulator import Simulator

    if args.kernels and args.json_path is None:
        raise ValueError("--kernels puts the per-kernel table into the JSON: give --json PATH (or --json -)")
    check_output_path(args.json_path, "--json")
    if args.timeline == "-":
        raise ValueError("--timeline -: give a file path (a timeline is a file for Perfetto, not text for stdout)")
    check_output_path(args.timeline, "--timeline")
    sim = Simulator(_config(args))
    hint_file = read_hints(args.hints) if args.hints else None
    policy = args.policy
    if policy is None:
        if hint_file is None:
            raise ValueError("give --policy (" + ", ".join(names()) + "), or --hints FILE to replay saved hints")
        # replay with the policy that made the hints when it takes hints, else G10's LRU fallback
        names()                                  # loads the built-in policies into REGISTRY
        made_by = REGISTRY.get(hint_file.policy)
        usable = made_by is not None and made_by.level != "ideal" and (made_by.level == "tensor" or made_by.apply_hints)
        if usable:
            policy = hint_file.policy
        elif hint_file.level == "tensor":
            raise ValueError(f"{args.hints}: tensor-level hints made by {hint_file.policy or 'an unnamed policy'}; "
                             "give --policy g10-gds, g10-host or flashneuron to replay them")
        else:
            policy = "g10"
    with simulation_failures(f"{args.trace} under {policy}"), \
            heartbeat(f"{args.trace} under {policy}", enabled=not args.no_progress):
        result = sim.run(args.trace, policy, hint_file, eviction=args.eviction, timeline=args.timeline is not None)
    if human(args):
        print(format_run_summary(result))
    if args.json_path is not None:
        if args.json_path == "-":
            sys.stdout.write(result.to_json(kernels=args.kernels))
        else:
            result.write_json(args.json_path, kernels=args.kernels)
    if args.timeline is not None:                # (a failed run's too: what ran before it failed)
        result.write_timeline(args.timeline)
        if human(args):
            print(f"wrote {args.timeline} (open it in ui.perfetto.dev or chrome://tracing)")
    if result.failed:                            # the exit-1 line, as a run that raises prints it
        reason = " ".join(str(result.failure_reason).split())
        print(f"g10sim: simulation failed: {args.trace} under {policy}: {reason}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _config(args):
    """The run's configuration; with ``--machine``, the machine's GPU 0 alone (``g10core.machine``): its keys
    go after ``--config`` and before ``--set``."""
    if getattr(args, "machine", None) is None:
        return config_from_args(args)
    from ..machine import load, single_gpu_sets
    from ..simulator import resolve_config

    if getattr(args, "gpu", None) is not None:
        raise ValueError(f"--gpu {args.gpu} and --machine {args.machine} both name the GPU; give one")
    machine = load(args.machine)
    sets = single_gpu_sets(machine, policy=args.policy, preset=args.preset)
    if machine.gpus.count > 1 and human(args):
        print(f"g10sim: note: {machine.name}: GPU 0 alone; the other {machine.gpus.count - 1} GPUs are idle "
              "(g10sim machine train runs them data parallel)", file=sys.stderr)
    return resolve_config(args.preset, args.config_file, sets + gpu_sets(args))


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="simulate one trace under one policy",
        description="Simulate TRACE under a migration policy and print the iteration time, the slowdown "
                    "against ideal, faults and traffic by tier, and the compute/overlap/stall breakdown. "
                    "Exit 0 when the run finished, 1 when it failed (the policy's schedule does not fit, "
                    "host memory overflow), 2 on bad input (a kernel whose own working set exceeds GPU "
                    "memory is refused up front: cannot fit).")
    p.add_argument("trace", metavar="TRACE", help="trace file (.h5) or name, e.g. bert_base-b256 (g10sim trace list)")
    p.add_argument("--policy", metavar="P", action=Once, help=policy_help())
    p.add_argument("--hints", metavar="FILE.h5",
                   help="replay this hint file (from `g10sim hints` or your own code) instead of the policy's "
                        "hints; without --policy, the policy that made it (or g10: LRU for the rest)")
    p.add_argument("--eviction", metavar="RULE|FILE.py:FUNC",
                   help="eviction rule replacing the policy's (page level): arrival (the artifact's 'LRU': first in, "
                        "first out by arrival; lru is accepted for it, with a warning that says so), "
                        "deepum, belady, or FILE.py:FUNC, a score function compiled with numba (see "
                        "g10core.uvm.evictors; shipped examples: farthest_next_use.py:score, "
                        "least_recently_used.py:score, largest_tensor_first.py:score)")
    add_config_options(p)
    p.add_argument("--machine", metavar="NAME|FILE.toml", action=Once,
                   help="run on GPU 0 of a machine (g10sim machine list; docs/guide/machines.md): its GPU, link, "
                        "host memory and its RAID0 volume's rates over their routes set the configuration "
                        "(after --config, before --set)")
    add_json_option(p)
    p.add_argument("--kernels", action="store_true",
                   help="put the per-kernel table into the JSON too (needs --json; the same columns for every "
                        "policy level, g10core.results.KERNEL_TABLE_COLUMNS)")
    p.add_argument("--timeline", metavar="FILE.json",
                   help="also write the run as a timeline for ui.perfetto.dev or chrome://tracing (trace-event "
                        "JSON): kernels, transfers per link direction, fault batches and SSD GC (detailed), "
                        "memory counters; `g10sim report timeline FILE.json --plot x.png` draws it")
    p.add_argument("--no-progress", action="store_true",
                   help="no heartbeat on stderr (by default a run longer than 5 s prints a line every 15 s)")
    p.set_defaults(func=_cmd_run)
