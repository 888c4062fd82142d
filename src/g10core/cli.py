"""The ``g10sim`` command (also ``python -m g10core``).

Each command group is one function ``add_<group>_parser(subparsers)`` that adds
its sub-commands, each with ``set_defaults(func=...)``; the function gets the
parsed arguments and returns the exit status.  A new group is that function plus
one entry in :data:`COMMAND_GROUPS`.  Commands are thin: they parse, call a
library function the tests also call, and print.  Human output carries units;
``--json PATH|-`` writes the same numbers machine-readably (``-``: stdout only).

Bad input (a broken trace or config, a missing file, an invalid value) prints
one line ``g10sim: error: ...`` on stderr and exits 2, never a traceback; set
``G10SIM_TRACEBACK=1`` to see the traceback anyway.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from . import __version__
from .config import ConfigError
from .g10artifact import MODEL_NAMES, ArtifactError, available_workloads, load_workload
from .trace import SCHEMA_VERSION, GiB, TraceError, read_trace, summarize, write_trace
from .ssdbench import add_ssd_parser

EXIT_OK = 0
EXIT_FAILURE = 1        # the command ran and its answer is "no" (reserved for later groups)
EXIT_BAD_INPUT = 2      # invalid input (also argparse's usage errors)

# What a user can cause; anything else is a bug and keeps its traceback.
EXPECTED_ERRORS = (TraceError, ConfigError, ArtifactError, OSError, ValueError)


# ---- shared helpers (for every command group) -------------------------------

def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r}: must be > 0")
    return value


def nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be >= 0")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be >= 1")
    return value


def add_json_option(parser: argparse.ArgumentParser):
    parser.add_argument("--json", metavar="PATH|-", dest="json_path",
                        help="also write the results as JSON to PATH ('-': to stdout, instead of the text)")


def _jsonable(obj):
    if hasattr(obj, "item"):  # numpy scalar
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def emit_json(obj, dest: str | None) -> None:
    """Write ``obj`` as JSON to ``dest`` ('-' = stdout; a path is replaced atomically)."""
    if dest is None:
        return
    text = json.dumps(obj, indent=2, default=_jsonable, allow_nan=False) + "\n"
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


def human(args) -> bool:
    """Print the text output? Not when the JSON goes to stdout."""
    return getattr(args, "json_path", None) != "-"


def fmt_bytes(n: int | float) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def fmt_seconds(s: float) -> str:
    if s >= 1.0 or s == 0.0:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.3f} us"


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


# ---- trace ------------------------------------------------------------------

def trace_file_name(model: str, batch: int) -> str:
    """File name of a converted workload, e.g. ``bert_base-b256.h5``."""
    return f"{model}-b{batch}.h5"


def _cmd_trace_convert(args) -> int:
    if args.all and (args.model or args.batch is not None):
        raise ValueError("--all converts every workload; drop --model/--batch")
    if not args.all and (args.model is None or args.batch is None):
        raise ValueError("give --model and --batch, or --all")
    artifact = Path(args.g10_artifact)
    if not (artifact / "workloads").is_dir():
        raise ArtifactError(f"{artifact}: not a G10 artifact folder (no workloads/ inside)")
    out = Path(args.output)
    if args.all:
        pairs = available_workloads(artifact)
        if not pairs:
            raise ArtifactError(f"{artifact / 'workloads'}: no workloads found")
        out.mkdir(exist_ok=True)
        targets = [(m, b, out / trace_file_name(m, b)) for m, b in pairs]
    else:
        target = out / trace_file_name(args.model, args.batch) if out.is_dir() else out
        targets = [(args.model, args.batch, target)]
    report = []
    for model, batch, path in targets:
        trace = load_workload(artifact, model, batch)
        write_trace(trace, path)
        row = {"path": str(path), "model": model, "batch_size": batch, "n_kernels": trace.n_kernels,
               "n_tensors": trace.n_tensors, "footprint_bytes": trace.footprint_bytes,
               "file_size_bytes": path.stat().st_size}
        report.append(row)
        if human(args):
            print(f"wrote {path}: {trace.n_kernels} kernels, {trace.n_tensors} tensors, "
                  f"footprint {fmt_bytes(trace.footprint_bytes)} ({fmt_bytes(row['file_size_bytes'])} file)")
    emit_json(report if args.all else report[0], args.json_path)
    return EXIT_OK


def _info(path: str, gpu_memory_GiB: float) -> dict:
    trace = read_trace(path)
    info = {"path": str(path), "file_size_bytes": Path(path).stat().st_size}
    info.update(summarize(trace, gpu_memory_GiB))
    return info


def _print_info(i: dict) -> None:
    rows = [
        ("model", f"{i['model']}, batch {i['batch_size']} (schema v{i['schema_version']})"),
        ("kernels", f"{i['n_kernels']}"),
        ("tensors", f"{i['n_tensors']} ({i['n_global_tensors']} global)"),
        ("accesses", f"{i['n_accesses']}"),
        ("footprint", f"{i['footprint_GiB']:.1f} GiB ({i['footprint_bytes']} B)"),
        ("global (weights)", f"{i['global_GiB']:.1f} GiB ({i['global_bytes']} B)"),
        ("memory ratio", f"{i['memory_ratio_percent']:.1f} % of a {i['gpu_memory_GiB']:g} GiB GPU"),
        ("largest kernel", f"{fmt_bytes(i['max_kernel_working_set_bytes'])} touched "
                           f"(kernel {i['max_kernel_working_set_kernel']})"),
        ("ideal time", f"{fmt_seconds(i['ideal_time_s'])} (sum of kernel times, all resident)"),
        ("source", i["source"] or "-"),
        ("profiled on", i["profiling_gpu"] or "-"),
    ]
    if i["n_hints"]:
        rows.append(("hints", f"{i['n_hints']} ({i['hints_policy'] or 'unnamed policy'})"))
    print(i["path"])
    for name, value in rows:
        print(f"  {name:<17} {value}")


def _cmd_trace_info(args) -> int:
    infos = [_info(p, args.gpu_memory_GiB) for p in args.paths]
    if human(args):
        if len(infos) == 1:
            _print_info(infos[0])
        else:
            print(f"{'trace':<32} {'kernels':>7} {'tensors':>7} {'footprint':>13} "
                  f"{'M (' + format(args.gpu_memory_GiB, 'g') + ' GiB)':>13} {'ideal':>10}")
            for i in infos:
                print(f"{Path(i['path']).name:<32} {i['n_kernels']:>7} {i['n_tensors']:>7} "
                      f"{i['footprint_GiB']:>9.1f} GiB {i['memory_ratio_percent']:>11.1f} % "
                      f"{i['ideal_time_s']:>8.3f} s")
    emit_json(infos[0] if len(infos) == 1 else infos, args.json_path)
    return EXIT_OK


def _cmd_trace_validate(args) -> int:
    status = EXIT_OK
    for path in args.paths:
        try:
            trace = read_trace(path)
        except EXPECTED_ERRORS as exc:
            print(f"g10sim: error: {_one_line(exc)}", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        if not args.quiet:
            print(f"ok {path}: schema v{trace.attrs.get('schema_version')}, {trace.n_kernels} kernels, "
                  f"{trace.n_tensors} tensors, {trace.n_accesses} accesses")
    return status


def _cmd_trace_synth(args) -> int:
    from .synth import synthesize

    if (args.footprint_GiB is None) == (args.footprint_bytes is None):
        raise ValueError("give exactly one of --footprint-GiB and --footprint-bytes")
    footprint = args.footprint_bytes if args.footprint_bytes is not None else math.ceil(args.footprint_GiB * GiB)
    trace = synthesize(
        args.kernels, footprint, pattern=args.pattern, seed=args.seed, global_fraction=args.global_fraction,
        n_tensors=args.tensors, reads_per_kernel=args.reads_per_kernel,
        workspace_probability=args.workspace_probability, kernel_time_us=args.kernel_time_us,
        model=args.model, batch_size=args.batch_size)
    path = Path(args.output)
    write_trace(trace, path)
    info = {"path": str(path), "file_size_bytes": path.stat().st_size}
    info.update(summarize(trace))
    info["schema_version"] = SCHEMA_VERSION
    if human(args):
        print(f"wrote {path}: {args.pattern} pattern, seed {args.seed}, {trace.n_kernels} kernels, "
              f"{trace.n_tensors} tensors, footprint {fmt_bytes(trace.footprint_bytes)}, "
              f"ideal time {fmt_seconds(info['ideal_time_s'])}")
    emit_json(info, args.json_path)
    return EXIT_OK


def add_trace_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "trace", help="convert, inspect, validate and synthesize traces",
        description="Work with g10core's HDF5 traces (format: traces/README.md).")
    sub = p.add_subparsers(dest="trace_command", metavar="SUBCOMMAND", required=True)

    c = sub.add_parser("convert", help="convert the published G10 inputs to HDF5 traces",
                       description="Join workloads/<Model>/<B>/{kernels,tensors}.config.gz with "
                                   "profiles/<Model>/cudnn<B>*.txt of the G10 artifact into traces.")
    c.add_argument("--g10-artifact", metavar="DIR", required=True,
                   help="the artifact folder (with workloads/ and profiles/)")
    which = c.add_argument_group("which workloads")
    which.add_argument("--model", choices=sorted(MODEL_NAMES.values()), help="one model (with --batch)")
    which.add_argument("--batch", type=int, metavar="B", help="its batch size")
    which.add_argument("--all", action="store_true", help="every model and batch under workloads/")
    c.add_argument("-o", "--output", metavar="PATH", required=True,
                   help="the trace file; a folder for --all (or to name the file <model>-b<batch>.h5)")
    add_json_option(c)
    c.set_defaults(func=_cmd_trace_convert)

    i = sub.add_parser("info", help="counts, footprint, memory ratio and ideal time of traces")
    i.add_argument("paths", nargs="+", metavar="PATH", help="trace file(s)")
    i.add_argument("--gpu-memory-GiB", type=positive_float, default=40.0, metavar="GiB",
                   help="GPU memory the memory ratio is taken against (default: 40, an A100-40GB)")
    add_json_option(i)
    i.set_defaults(func=_cmd_trace_info)

    v = sub.add_parser("validate", help="check traces; exit 2 naming the first problem of a bad one")
    v.add_argument("paths", nargs="+", metavar="PATH", help="trace file(s)")
    v.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    v.set_defaults(func=_cmd_trace_validate)

    s = sub.add_parser("synth", help="write a seeded synthetic trace",
                       description="Generate a small valid trace with a chosen footprint and reuse pattern "
                                   "(see g10core.synth).")
    s.add_argument("-o", "--output", metavar="PATH", required=True, help="trace file to write")
    s.add_argument("--kernels", type=int, required=True, metavar="N", help="number of kernels")
    s.add_argument("--footprint-GiB", type=positive_float, metavar="GiB", help="page-rounded footprint")
    s.add_argument("--footprint-bytes", type=int, metavar="BYTES", help="page-rounded footprint, in bytes")
    s.add_argument("--pattern", choices=("training", "random"), default="training",
                   help="training: forward/backward over layers (default); random: random reuse")
    s.add_argument("--seed", type=nonnegative_int, default=0, help="random seed (default 0)")
    s.add_argument("--global-fraction", type=float, default=0.2, metavar="F",
                   help="share of the footprint in global (weight) tensors (default 0.2)")
    s.add_argument("--tensors", type=int, metavar="T", help="random: number of tensors (default: = kernels)")
    s.add_argument("--reads-per-kernel", type=float, default=3.0, metavar="R",
                   help="random: mean tensors read per kernel (default 3)")
    s.add_argument("--workspace-probability", type=float, default=0.1, metavar="P",
                   help="training: chance a layer kernel has a workspace (default 0.1)")
    s.add_argument("--kernel-time-us", type=positive_float, default=100.0, metavar="US",
                   help="mean ideal kernel time in microseconds (default 100)")
    s.add_argument("--model", help="model name to record (default synth_<pattern>)")
    s.add_argument("--batch-size", type=int, default=1, metavar="B", help="batch size to record (default 1)")
    add_json_option(s)
    s.set_defaults(func=_cmd_trace_synth)


# ---- run, hints, reproduce, report ---------------------------------------------

def add_config_options(parser: argparse.ArgumentParser) -> None:
    """--preset, --config FILE.toml, --set section.key=value (resolved in that order)."""
    g = parser.add_argument_group("configuration (preset, then --config, then --set)")
    g.add_argument("--preset", default="g10-artifact", metavar="NAME",
                   help="named configuration to start from: g10-artifact (default) or detailed")
    g.add_argument("--config", metavar="FILE.toml", dest="config_file",
                   help="TOML overrides, e.g. '[gpu]\\nmemory_GiB = 80' (an unknown key is an error)")
    g.add_argument("--set", metavar="SECTION.KEY=VALUE", action="append", default=[], dest="sets",
                   help="one override, e.g. --set gpu.memory_GiB=80 (repeatable)")


def _config(args):
    from .simulator import resolve_config

    return resolve_config(args.preset, args.config_file, args.sets)


def _policy_help() -> str:
    return ("base-uvm, deepum, g10, ideal (page level); flashneuron, g10-gds, g10-host (tensor level); "
            "or a policy registered with g10core.policies.register")


def _cmd_run(args) -> int:
    from .hints import read_hints
    from .policies import REGISTRY, names
    from .report import format_run_summary
    from .simulator import Simulator

    sim = Simulator(_config(args))
    hint_file = read_hints(args.hints) if args.hints else None
    policy = args.policy
    if policy is None:
        if hint_file is None:
            raise ValueError("give --policy (" + ", ".join(names()) + "), or --hints FILE to replay saved hints")
        # replay with the policy that made the hints when it takes hints, else G10's LRU fallback
        names()                                  # loads the built-in policies into REGISTRY
        made_by = REGISTRY.get(hint_file.policy)
        usable = made_by is not None and not made_by.ideal and (made_by.level == "tensor" or made_by.apply_hints)
        policy = hint_file.policy if usable else "g10"
    result = sim.run(args.trace, policy, hint_file)
    if human(args):
        print(format_run_summary(result))
    if args.json_path is not None:
        if args.json_path == "-":
            sys.stdout.write(result.to_json(kernels=args.kernels))
        else:
            result.write_json(args.json_path, kernels=args.kernels)
    return EXIT_FAILURE if result.failed else EXIT_OK


def add_run_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="simulate one trace under one policy",
        description="Simulate TRACE under a migration policy and print the iteration time, the slowdown "
                    "against ideal, faults and traffic by tier, and the compute/overlap/stall breakdown. "
                    "Exit 0 when the run finished, 1 when it failed (cannot fit under the policy, host "
                    "memory overflow), 2 on bad input.")
    p.add_argument("trace", metavar="TRACE", help="trace file (.h5)")
    p.add_argument("--policy", metavar="P", help=_policy_help())
    p.add_argument("--hints", metavar="FILE.h5",
                   help="replay this hint file (from `g10sim hints` or your own code) instead of the policy's "
                        "hints; without --policy, the policy that made it (or g10: LRU for the rest)")
    add_config_options(p)
    add_json_option(p)
    p.add_argument("--kernels", action="store_true", help="put the per-kernel arrays into the JSON too")
    p.set_defaults(func=_cmd_run)


def _cmd_hints(args) -> int:
    from .hints import action_counts, write_hints
    from .simulator import policy_hints

    hints, trace, path = policy_hints(args.trace, args.policy, _config(args))
    write_hints(args.output, hints, policy=args.policy, trace=trace, trace_path=path)
    counts = action_counts(hints)
    info = {"path": str(args.output), "policy": args.policy, "trace": path, "n_hints": int(hints.shape[0]),
            "by_action": counts}
    if human(args):
        print(f"wrote {args.output}: {hints.shape[0]:,} hints of {args.policy} for {trace.model}-b{trace.batch_size} "
              f"(" + ", ".join(f"{k} {v:,}" for k, v in counts.items()) + ")")
    emit_json(info, args.json_path)
    return EXIT_OK


def add_hints_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "hints", help="write a policy's migration hints to a file",
        description="Compute the hint table (kernel, tensor, action) a policy applies to TRACE and write it as "
                    "HDF5 (format: g10core.hints); `g10sim run TRACE --hints FILE` replays it.")
    p.add_argument("trace", metavar="TRACE", help="trace file (.h5)")
    p.add_argument("--policy", metavar="P", required=True, help=_policy_help())
    p.add_argument("-o", "--output", metavar="FILE.h5", required=True, help="hint file to write")
    add_config_options(p)
    add_json_option(p)
    p.set_defaults(func=_cmd_hints)


def _fig11_outputs(args, rows, meta) -> None:
    from .report import fig11_document, format_fig11_table, plot_fig11, write_fig11_json

    if human(args):
        print(format_fig11_table(rows))
    if args.json_path == "-":
        sys.stdout.write(json.dumps(fig11_document(rows, meta=meta), indent=2, allow_nan=False) + "\n")
    elif args.json_path is not None:
        write_fig11_json(rows, args.json_path, meta=meta)
    if args.plot:
        plot_fig11(rows, args.plot)
        if human(args):
            print(f"wrote {args.plot}")


def _cmd_reproduce_fig11(args) -> int:
    import time

    from .published import FIG11_POLICIES, FIG11_WORKLOADS
    from .reproduce import default_jobs, default_traces_dir, reproduce_fig11

    workloads = FIG11_WORKLOADS
    if args.models:
        workloads = []
        for item in args.models:
            model, sep, batch = item.rpartition("-b")
            if not sep or not model or not batch.isdigit():
                raise ValueError(f"--models {item!r}: expected MODEL-bBATCH, e.g. bert_base-b256")
            workloads.append((model, int(batch)))
    policies = args.policies or FIG11_POLICIES
    jobs = default_jobs() if args.jobs is None else args.jobs
    t0 = time.perf_counter()
    cfg = _config(args)
    rows = reproduce_fig11(args.traces, jobs=jobs, progress=not args.no_progress, config=cfg,
                           workloads=workloads, policies=policies)
    wall = time.perf_counter() - t0
    meta = {"wall_s": wall, "jobs": jobs, "traces": str(args.traces or default_traces_dir()),
            "preset": cfg.preset, "config": cfg.to_dict(), "config_hash": cfg.hash, "g10core_version": __version__}
    _fig11_outputs(args, rows, meta)
    if human(args):
        print(f"{len(rows)} runs in {wall:.1f} s wall with {jobs} job(s)")
    return EXIT_OK


def _figure_outputs(args, figure: str, rows, meta) -> None:
    """Table (stdout), ``--json`` and ``--plot`` of a reproduced figure (Figs. 12-19)."""
    from .report import figure_document, format_figure_table, plot_figure, write_figure_json

    if human(args):
        print(format_figure_table(figure, rows))
    if args.json_path == "-":
        sys.stdout.write(json.dumps(figure_document(figure, rows, meta=meta), indent=1, allow_nan=False) + "\n")
    elif args.json_path is not None:
        write_figure_json(figure, rows, args.json_path, meta=meta)
    if args.plot:
        plot_figure(figure, rows, args.plot)
        if human(args):
            print(f"wrote {args.plot}")


def _cmd_reproduce_figure(args) -> int:
    import time

    from .reproduce import default_jobs, reproduce_figure

    jobs = default_jobs() if args.jobs is None else args.jobs
    cfg = _config(args)
    t0 = time.perf_counter()
    rows = reproduce_figure(args.figure, args.out, traces_dir=args.traces, jobs=jobs, dask=args.dask,
                            progress=not args.no_progress, config=cfg, models=args.models)
    wall = time.perf_counter() - t0
    meta = {"wall_s": wall, "jobs": jobs, "dask": args.dask, "store": args.out, "preset": cfg.preset,
            "config_hash": cfg.hash, "g10core_version": __version__}
    _figure_outputs(args, args.figure, rows, meta)
    if human(args):
        print(f"{len(rows)} rows in {wall:.1f} s wall with {jobs} job(s)"
              + (f" (store {args.out})" if args.out else ""))
    errors = [r for r in rows if r.get("error")]
    for r in errors[:3]:
        print(f"g10sim: error: {r['model']}-b{r['batch']} {r['policy']}: {r['error']}", file=sys.stderr)
    return EXIT_FAILURE if errors else EXIT_OK


def _cmd_reproduce_all(args) -> int:
    import time

    from .report import (
        figure_cells, figure_summary, format_fig11_table, format_figure_summary, format_figure_table, plot_figure,
        write_fig11_json, write_figure_json,
    )
    from .reproduce import default_jobs, reproduce_all
    from .results import write_text_atomic

    jobs = default_jobs() if args.jobs is None else args.jobs
    out = Path(args.out)
    t0 = time.perf_counter()
    figures = reproduce_all(out, traces_dir=args.traces, jobs=jobs, dask=args.dask, progress=not args.no_progress)
    wall = time.perf_counter() - t0
    meta = {"wall_s": wall, "jobs": jobs, "dask": args.dask, "store": str(out), "g10core_version": __version__}
    plots = not args.no_plots
    lines = []
    for name, rows in figures.items():
        if name == "fig11":
            write_fig11_json(rows, out / "fig11.json", meta=meta)
            write_text_atomic(out / "fig11.txt", format_fig11_table(rows) + "\n")
        else:
            write_figure_json(name, rows, out / f"{name}.json", meta=meta)
            write_text_atomic(out / f"{name}.txt", format_figure_table(name, rows) + "\n")
        summary = figure_summary(name, figure_cells(name, rows))
        if plots:
            plot_figure(name, rows, out / f"{name}.png")
        lines.append(format_figure_summary(summary))
    if human(args):
        print("\n".join(lines))
        print(f"wrote {out}/fig11..fig19 .json, .txt{', .png' if plots else ''}; {wall:.1f} s wall with {jobs} job(s)")
    return EXIT_OK


def _add_run_options(f, *, out_required: bool) -> None:
    f.add_argument("--traces", metavar="DIR", help="where shipped trace names resolve (default: the shipped traces/)")
    f.add_argument("--out", metavar="DIR", required=out_required,
                   help="results store (resumable; runs already there are not run again)"
                        + ("" if out_required else "; default: a temporary folder"))
    f.add_argument("--jobs", type=positive_int, metavar="N", help="worker processes (default: number of CPUs)")
    f.add_argument("--dask", metavar="local|ADDRESS",
                   help="run on dask.distributed: 'local' starts a LocalCluster of --jobs workers, an address "
                        "(tcp://host:8786) joins a scheduler (needs the 'sweep' extra)")
    f.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def add_reproduce_parser(subparsers) -> None:
    from .reproduce import FIGURES, SWEEP_FIGURES

    p = subparsers.add_parser("reproduce", help="reproduce the paper's figures",
                              description="Re-run the experiments of the G10 paper and compare with its numbers.")
    sub = p.add_subparsers(dest="figure", metavar="FIGURE", required=True)
    for name in SWEEP_FIGURES:
        f = sub.add_parser(
            name, help=FIGURES[name].title,
            description=f"{FIGURES[name].title}. Runs the sweep file shipped as g10core/sweeps/{name}.toml "
                        "(g10-artifact preset) and prints each published cell beside ours with the difference, "
                        "then the worst cell. Exit 1 when a run raised (its error is printed).")
        _add_run_options(f, out_required=False)
        f.add_argument("--models", nargs="+", metavar="MODEL-bB", help="only these workloads, e.g. bert_base-b256")
        f.add_argument("--plot", metavar="PATH.png", help="also draw the figure with the paper's axes (matplotlib)")
        add_config_options(f)
        add_json_option(f)
        f.set_defaults(func=_cmd_reproduce_figure)
    a = sub.add_parser(
        "all", help="the whole published evaluation (1,410 runs), then Figs. 11-19",
        description="Run the published simulator's whole run set (its genconfigs.py: main, host-memory, "
                    "SSD-bandwidth and kernel-time-noise sweeps; g10core/sweeps/all.toml) into the store "
                    "DIR, resumably, then write fig11..fig19 .json, .txt (table) and .png there.")
    _add_run_options(a, out_required=True)
    a.add_argument("--no-plots", action="store_true", help="write no .png")
    a.set_defaults(func=_cmd_reproduce_all, json_path=None)
    f = sub.add_parser(
        "fig11", help="Fig. 11: five models x seven policies, normalised performance",
        description="Run the five models at their Fig. 11 batch size (bert_base-b256, vit-b1280, "
                    "inceptionv3-b1536, resnet152-b1280, senet154-b1024) under base-uvm, flashneuron, deepum, "
                    "g10-gds, g10-host, g10 and ideal; print time per iteration, ideal/time, the published "
                    "value and the difference, G10's geometric-mean fraction of ideal and its speedups.")
    f.add_argument("--traces", metavar="DIR", help="folder with <model>-b<batch>.h5 (default: the shipped traces/)")
    f.add_argument("--plot", metavar="PATH.png", help="also draw the bar chart (matplotlib)")
    f.add_argument("--jobs", type=positive_int, metavar="N", help="worker processes (default: number of CPUs)")
    f.add_argument("--models", nargs="+", metavar="MODEL-bB", help="only these workloads, e.g. bert_base-b256")
    f.add_argument("--policies", nargs="+", metavar="P", help="only these policies")
    f.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_config_options(f)
    add_json_option(f)
    f.set_defaults(func=_cmd_reproduce_fig11)


def _cmd_report_fig11(args) -> int:
    from .report import load_fig11_json

    rows = load_fig11_json(args.path)
    _fig11_outputs(args, rows, {"source": str(args.path)})
    return EXIT_OK


def _cmd_report_figure(args) -> int:
    from .report import load_figure_json
    from .reproduce import rows_from_store

    path = Path(args.path)
    if path.is_dir():
        rows, missing = rows_from_store(args.figure, path)
        meta = {"source": str(path), "missing_runs": missing}
        if missing and human(args):
            print(f"note: {missing} run(s) of {args.figure} are not in {path} yet", file=sys.stderr)
    else:
        figure, rows = load_figure_json(path)
        if figure != args.figure:
            raise ValueError(f"{path}: holds {figure}, not {args.figure}")
        meta = {"source": str(path)}
    _figure_outputs(args, args.figure, rows, meta)
    return EXIT_OK


def add_report_parser(subparsers) -> None:
    from .reproduce import FIGURES, SWEEP_FIGURES

    p = subparsers.add_parser("report", help="re-print or re-plot saved results",
                              description="Print the table (and draw the chart) of a saved reproduction.")
    sub = p.add_subparsers(dest="figure", metavar="FIGURE", required=True)
    for name in SWEEP_FIGURES:
        f = sub.add_parser(name, help=f"{FIGURES[name].title}: table and plot of saved results",
                           description=f"Print the {name} table (published cells beside ours) from PATH: a "
                                       f"`g10sim reproduce {name} --json` file, or a results store "
                                       f"(`--out DIR` of reproduce {name} or reproduce all).")
        f.add_argument("path", metavar="PATH", help=f"{name}.json or a store folder")
        f.add_argument("--plot", metavar="PATH.png", help="draw the figure with the paper's axes")
        add_json_option(f)
        f.set_defaults(func=_cmd_report_figure)
    f = sub.add_parser("fig11", help="the Fig. 11 table of a `g10sim reproduce fig11 --json` file")
    f.add_argument("path", metavar="FIG11.json", help="written by g10sim reproduce fig11 --json")
    f.add_argument("--plot", metavar="PATH.png", help="also draw the bar chart")
    add_json_option(f)
    f.set_defaults(func=_cmd_report_fig11)


# ---- sweep ---------------------------------------------------------------------------

def _sweep_run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="g10sim sweep", description="Run a sweep file into a results store.")
    p.add_argument("file", metavar="FILE.toml", help="sweep file (format: g10core.sweep)")
    _add_run_options(p, out_required=True)
    p.add_argument("--retry-errors", action="store_true", help="run again the runs that raised an error")
    add_json_option(p)
    return p


def _sweep_status_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="g10sim sweep status",
                                description="Runs planned, done and failed in a store, one row per run.")
    p.add_argument("dir", metavar="DIR", help="the store (--out of g10sim sweep)")
    add_json_option(p)
    return p


def _sweep_export_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="g10sim sweep export", description="Write a store's rows as CSV.")
    p.add_argument("dir", metavar="DIR", help="the store")
    p.add_argument("-o", "--output", metavar="FILE.csv", required=True, help="CSV to write ('-': stdout)")
    return p


def _print_status(st: dict, *, limit: int = 40) -> None:
    errors = sum(1 for r in st["rows"] if r.get("error"))
    print(f"{st['done']} of {st['total']} runs done, {st['failed']} failed ({errors} raised an error)")
    rows = st["rows"]
    if not rows:
        return
    grid = [k for k in rows[0] if k not in ROW_FIELDS_SET]
    print(f"  {'trace':<22} {'policy':<12}" + "".join(f" {k:>24}" for k in grid) + f" {'time_s':>12}  status")
    for r in rows[:limit]:
        state = "error: " + r["error"] if r.get("error") else ("failed: " + (r.get("failure_reason") or "")
                                                               if r["failed"] else "ok")
        t = "–" if r["time_s"] is None else f"{r['time_s']:.4f}"
        print(f"  {r['trace']:<22} {r['policy']:<12}" + "".join(f" {str(r.get(k, '')):>24}" for k in grid)
              + f" {t:>12}  {state[:80]}")
    if len(rows) > limit:
        print(f"  ... {len(rows) - limit} more (--json - for all, or g10sim sweep export)")


ROW_FIELDS_SET = frozenset(("run_key", "trace", "model", "batch", "policy", "time_s", "ideal_time_s",
                            "normalized_performance", "failed", "failure_reason", "error"))


def _cmd_sweep(args) -> int:
    import time

    from .reproduce import default_jobs
    from .sweep import export_csv, load_sweep, run_sweep, sweep_status

    argv = list(args.sweep_args)
    if not argv:
        raise ValueError("give a sweep file (g10sim sweep FILE --out DIR), or 'status DIR' / 'export DIR -o FILE'")
    if argv[0] == "status":
        a = _parse_or_exit(_sweep_status_parser(), argv[1:])
        st = sweep_status(a.dir)
        if human(a):
            _print_status(st)
        emit_json(st, a.json_path)
        return EXIT_OK
    if argv[0] == "export":
        a = _parse_or_exit(_sweep_export_parser(), argv[1:])
        if a.output == "-":
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                sys.stdout.write(Path(export_csv(a.dir, Path(tmp) / "rows.csv")).read_text())
        else:
            export_csv(a.dir, a.output)
            print(f"wrote {a.output}")
        return EXIT_OK
    a = _parse_or_exit(_sweep_run_parser(), argv)
    sweep = load_sweep(a.file, traces_dir=a.traces)     # refuses a malformed file before any run
    jobs = default_jobs() if a.jobs is None else a.jobs
    t0 = time.perf_counter()
    st = run_sweep(sweep, a.out, jobs=jobs, dask=a.dask, progress=not a.no_progress, retry_errors=a.retry_errors)
    wall = time.perf_counter() - t0
    errors = [r for r in st["rows"] if r.get("error")]
    if human(a):
        print(f"{sweep.name}: {st['done']} of {st['total']} runs done, {st['failed']} failed "
              f"({len(errors)} raised an error); {wall:.1f} s wall with {jobs} job(s); store {a.out}")
        for r in errors[:3]:
            print(f"  error: {r['trace']} {r['policy']}: {r['error']}")
    emit_json(st, a.json_path)
    return EXIT_FAILURE if errors else EXIT_OK


class _UsageError(ValueError):
    """An argument error of a sub-command parsed by hand (argparse printed the usage)."""


def _parse_or_exit(parser: argparse.ArgumentParser, argv: list[str]):
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code in (0, None):
            raise
        raise _UsageError("") from None


def add_sweep_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep", help="run a sweep file; its status; export its rows",
        description="g10sim sweep FILE.toml --out DIR [--jobs N] [--dask local|ADDRESS]: run every "
                    "(trace, policy, grid point) of a sweep file that DIR lacks (resumable; a malformed file "
                    "is refused before any run). g10sim sweep status DIR [--json -]: runs planned, done, failed "
                    "and one row per run. g10sim sweep export DIR -o rows.csv. Exit 1 when a run raised.",
        add_help=True)
    p.add_argument("sweep_args", nargs=argparse.REMAINDER, metavar="FILE|status|export ...")
    p.set_defaults(func=_cmd_sweep, json_path=None)


# ---- the command --------------------------------------------------------------

# One entry per command group; each adds its sub-commands to the top-level parser.
COMMAND_GROUPS = [
    add_trace_parser,
    add_run_parser,
    add_hints_parser,
    add_reproduce_parser,
    add_report_parser,
    add_ssd_parser,
    add_sweep_parser,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="g10sim",
        description="g10core: a cycle-approximate simulator of a unified GPU memory and storage system "
                    "(G10, MICRO 2023).")
    parser.add_argument("--version", action="version", version=f"g10sim {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_group in COMMAND_GROUPS:
        add_group(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``g10sim`` with ``argv`` (default: the command line); returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors (argparse printed them)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        return int(args.func(args) or EXIT_OK)
    except _UsageError:
        return EXIT_BAD_INPUT
    except EXPECTED_ERRORS as exc:
        if isinstance(exc, BrokenPipeError):
            return _broken_pipe()
        if os.environ.get("G10SIM_TRACEBACK") == "1":
            raise
        print(f"g10sim: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("g10sim: interrupted", file=sys.stderr)
        return 130


def _broken_pipe() -> int:
    """The reader of our stdout went away (``| head``): stop quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_OK
