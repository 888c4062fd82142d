"""``g10sim plan``: the least value of a configuration key that reaches a fraction of ideal.

    g10sim plan TRACE --policy P --target FRACTION --vary KEY [--range LO:HI]
                [--vary KEY2 [--range LO:HI]] [--points N] [--tolerance T] [--samples N]
                [--preset ...] [--config ...] [--set ...] [--gpu NAME]
                [--json FILE] [--plot FILE] [--jobs N] [--dask ADDRESS] [--out STORE]

Exit 0 with an answer; 1 when no value in the range reaches the target (a result: one line naming
the range and the best fraction reached; the report, ``--json`` and ``--plot`` are still written,
with ``minimum: null``, ``bracketed: false``, and the store keeps the runs), or when a run raised;
2 for a key or range a plan cannot use (one line naming the key, before any run), or a range
whose low end already reaches the target (the least value may be lower: a lower LO).
"""
from __future__ import annotations

import argparse
import sys
import warnings

from ..errors import G10Warning
from .common import (EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Once, add_config_options, add_json_option,
                     check_output_path, emit_json, human, number_arg, policy_help, positive_int)


class _Vary(argparse.Action):
    """--vary KEY: a new axis (its range: the next --range)."""

    def __call__(self, parser, namespace, value, option_string=None):
        axes = list(getattr(namespace, self.dest, None) or [])
        axes.append([value, None])
        setattr(namespace, self.dest, axes)


class _Range(argparse.Action):
    """--range LO:HI: the range of the --vary before it."""

    def __call__(self, parser, namespace, value, option_string=None):
        axes = getattr(namespace, "vary", None)
        if not axes:
            parser.error("--range LO:HI comes after the --vary KEY it bounds")
        if axes[-1][1] is not None:
            parser.error(f"--vary {axes[-1][0]}: two --range; give one")
        axes[-1][1] = value


def _fraction(text: str) -> float:
    def convert(t: str) -> float:
        t = t.strip()
        return float(t[:-1]) / 100 if t.endswith("%") else float(t)
    return number_arg(text, convert, "a fraction (0.8, or 80%)", lambda v: 0 < v <= 1,
                      "a fraction of ideal in (0, 1], e.g. 0.8 or 80%")


def _tolerance(text: str) -> float:
    return number_arg(text, float, "a number", lambda v: 0 < v < 1, "a relative width in (0, 1), e.g. 0.01")


def _cmd_plan(args) -> int:
    from ..experiments.plan import format_plan, plan, plot_plan
    from ..experiments.reproduce import default_jobs

    check_output_path(args.json_path, "--json")
    check_output_path(args.plot, "--plot")
    if not args.vary:
        raise ValueError("give --vary KEY (e.g. --vary ssd.bandwidth_GBps --range 1:64)")
    log = None if args.no_progress else (lambda line: print(line, file=sys.stderr, flush=True))
    with warnings.catch_warnings():
        # every run of a plan has the same configuration but one key: say a warning once, not per run
        warnings.simplefilter("once", G10Warning)
        r = plan(args.trace, args.policy, args.target, [tuple(v) for v in args.vary], preset=args.preset,
                 config_file=args.config_file, sets=args.sets, gpu=args.gpu, tolerance=args.tolerance,
                 samples=args.samples, points=args.points, out=args.out,
                 jobs=default_jobs() if args.jobs is None else args.jobs, dask=args.dask,
                 progress=not args.no_progress, log=log, traces_dir=args.traces)
    if args.plot:
        plot_plan(r, args.plot)
    if human(args):
        print(format_plan(r))
        if args.plot:
            print(f"wrote {args.plot}")
    emit_json(r.to_dict(), args.json_path)
    if not r.bracketed:
        line = ' '.join(r.unbracketed.split())
        if r.minimum is None:
            # no value reaches the target: that is the result (written above), not bad input
            print(f"g10sim: {line}", file=sys.stderr)
            return EXIT_FAILURE
        # met at the low end: the range given hides the least value (a lower LO)
        print(f"g10sim: error: {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "plan", help="the least value of a key (SSD bandwidth, memory, ...) that reaches a fraction of ideal",
        description="Find the least value of --vary KEY in --range LO:HI for which TRACE under --policy reaches "
                    "--target of ideal (ideal time / time), by a scan of the range then bisection to --tolerance "
                    "(1 % of the value); a non-monotone scan is said in one line. Two --vary: the frontier, the "
                    "least second key for each of --points values of the first. Runs go through the sweep "
                    "executors into --out STORE (resumable). Exit 0 with an answer; 1 when no value in the range "
                    "reaches the target (for a frontier, at no point; one line on stderr naming the best fraction "
                    "reached, the report and --json still written with minimum null and bracketed false), or when "
                    "a run raised; 2 for a key or range a plan cannot use, or a range whose low end already "
                    "reaches the target (the report and --json still written: LO with minimum_is_upper_bound).")
    p.add_argument("trace", metavar="TRACE",
                   help="trace file (.h5) or name, e.g. llama-7b-s2048-b1 (g10sim trace list)")
    p.add_argument("--policy", metavar="P", action=Once, required=True, help=policy_help())
    p.add_argument("--target", metavar="FRACTION", type=_fraction, required=True,
                   help="fraction of ideal to reach, e.g. 0.8 or 80%%")
    p.add_argument("--vary", metavar="KEY", action=_Vary, dest="vary", default=[],
                   help="the configuration key to minimise, e.g. ssd.bandwidth_GBps; a second --vary KEY2 makes a "
                        "frontier (KEY on a grid, the least KEY2 for each)")
    p.add_argument("--range", metavar="LO:HI", action=_Range, dest="range_unused",
                   help="the range of the --vary before it (default: its value / 16 to x 16, within its allowed range, LO "
                        "doubled until the simulator can run it)")
    p.add_argument("--tolerance", type=_tolerance, default=0.01, metavar="T",
                   help="stop when the bracket is narrower than T of its upper end (default 0.01: 1 %%)")
    p.add_argument("--samples", type=positive_int, default=5, metavar="N",
                   help="values of the first scan across the range, ends included (default 5)")
    p.add_argument("--points", type=positive_int, default=5, metavar="N",
                   help="values of the first key of a frontier (default 5)")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the runs and the answer (matplotlib)")
    p.add_argument("--traces", metavar="DIR", help="where trace names resolve (default: the shipped traces)")
    p.add_argument("--out", metavar="STORE",
                   help="results store (resumable: runs already there are not run again; g10sim sweep status "
                        "reads it); default: a temporary folder")
    p.add_argument("--jobs", type=positive_int, metavar="N",
                   help="worker processes (default: number of CPUs); each step runs up to N points at once")
    p.add_argument("--dask", metavar="local|ADDRESS",
                   help="run on dask.distributed: 'local' starts a LocalCluster of --jobs workers, an address "
                        "(tcp://host:8786) joins a scheduler (needs the 'sweep' extra)")
    p.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    add_config_options(p)
    add_json_option(p)
    p.set_defaults(func=_cmd_plan)
