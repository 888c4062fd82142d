"""``g10sim reproduce``: re-run the experiments of the G10 paper."""
from __future__ import annotations

from .. import __version__
from ..config import ARTIFACT_PRESET
from .common import (EXIT_OK, add_config_options, add_json_option, check_output_path, config_from_args, human,
                     positive_int,
                     simulation_failures)
from .report import fig11_outputs


def _cmd_reproduce_fig11(args) -> int:
    import time

    from ..published import FIG11_POLICIES, FIG11_WORKLOADS
    from ..reproduce import default_jobs, default_traces_dir, reproduce_fig11

    workloads = FIG11_WORKLOADS
    if args.models:
        workloads = []
        for item in args.models:
            model, sep, batch = item.rpartition("-b")
            if not sep or not model or not batch.isdigit():
                raise ValueError(f"--models {item!r}: expected MODEL-bBATCH, e.g. bert_base-b256")
            workloads.append((model, int(batch)))
    policies = args.policies or FIG11_POLICIES
    check_output_path(args.json_path, "--json")
    check_output_path(args.plot, "--plot")
    jobs = default_jobs() if args.jobs is None else args.jobs
    t0 = time.perf_counter()
    cfg = config_from_args(args)
    with simulation_failures("reproduce fig11"):
        rows = reproduce_fig11(args.traces, jobs=jobs, progress=not args.no_progress, config=cfg,
                               workloads=workloads, policies=policies)
    wall = time.perf_counter() - t0
    meta = {"wall_s": wall, "jobs": jobs, "traces": str(args.traces or default_traces_dir()),
            "preset": cfg.preset, "config": cfg.to_dict(), "config_hash": cfg.hash, "g10core_version": __version__}
    fig11_outputs(args, rows, meta)
    if human(args):
        print(f"{len(rows)} runs in {wall:.1f} s wall with {jobs} job(s)")
    return EXIT_OK


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("reproduce", help="reproduce the paper's figures",
                              description="Re-run the experiments of the G10 paper and compare with its numbers.")
    sub = p.add_subparsers(dest="figure", metavar="FIGURE", required=True)
    f = sub.add_parser(
        "fig11", help="Fig. 11: five models x seven policies, normalised performance",
        description="Run the five models at their Fig. 11 batch size (bert_base-b256, vit-b1280, "
                    "inceptionv3-b1536, resnet152-b1280, senet154-b1024) under base-uvm, flashneuron, deepum, "
                    "g10-gds, g10-host, g10 and ideal; print time per iteration, ideal/time, the published "
                    "value and the difference, G10's geometric-mean fraction of ideal and its speedups.")
    f.add_argument("--traces", metavar="DIR", help="folder with <model>-b<batch>.h5 (default: the traces by name: "
                                                   "$G10_TRACES_DIR, then the shipped ones)")
    f.add_argument("--plot", metavar="PATH.png", help="also draw the bar chart (matplotlib)")
    f.add_argument("--jobs", type=positive_int, metavar="N", help="worker processes (default: number of CPUs)")
    f.add_argument("--models", nargs="+", metavar="MODEL-bB", help="only these workloads, e.g. bert_base-b256")
    f.add_argument("--policies", nargs="+", metavar="P", help="only these policies")
    f.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_config_options(f, default_preset=ARTIFACT_PRESET)
    add_json_option(f)
    f.set_defaults(func=_cmd_reproduce_fig11)

    from .capture import add_llm_command       # `reproduce llm`: every policy on the captured LLM traces
    add_llm_command(sub)
