"""``g10sim hints``: write a policy's migration hints to a file."""
from __future__ import annotations

from .common import (EXIT_OK, Once, add_config_options, add_json_option, check_output_path, config_from_args,
                     emit_json, human, policy_help, simulation_failures)


def _cmd_hints(args) -> int:
    from ..workload.hints import action_counts, write_hints
    from ..simulator import policy_hints

    check_output_path(args.output, "-o")
    check_output_path(args.json_path, "--json")
    cfg = config_from_args(args)
    with simulation_failures(f"hints of {args.policy} for {args.trace}"):
        hints, trace, path = policy_hints(args.trace, args.policy, cfg)
    from ..policies import get

    write_hints(args.output, hints, policy=args.policy, trace=trace, trace_path=path, config=cfg,
                level=get(args.policy).level)
    counts = action_counts(hints)
    info = {"path": str(args.output), "policy": args.policy, "trace": path, "n_hints": int(hints.shape[0]),
            "by_action": counts, "preset": cfg.preset, "config_hash": cfg.hash}
    if human(args):
        print(f"wrote {args.output}: {hints.shape[0]:,} hints of {args.policy} for {trace.model}-b{trace.batch_size} "
              f"(" + ", ".join(f"{k} {v:,}" for k, v in counts.items()) + ")")
    emit_json(info, args.json_path)
    return EXIT_OK


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "hints", help="write a policy's migration hints to a file",
        description="Compute the hint table (kernel, tensor, action) a policy applies to TRACE and write it as "
                    "HDF5 (format: g10core.workload.hints); `g10sim run TRACE --hints FILE` replays it.")
    p.add_argument("trace", metavar="TRACE", help="trace file (.h5) or name, e.g. bert_base-b256 (g10sim trace list)")
    p.add_argument("--policy", metavar="P", action=Once, required=True, help=policy_help())
    p.add_argument("-o", "--output", metavar="FILE.h5", required=True, help="hint file to write")
    add_config_options(p)
    add_json_option(p)
    p.set_defaults(func=_cmd_hints)
