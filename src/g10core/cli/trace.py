"""``g10sim trace``: convert, inspect, validate and synthesize traces."""
from __future__ import annotations

import math
import sys
from pathlib import Path

from ..errors import ArtifactError
from ..workload.g10artifact import MODEL_NAMES, available_workloads, load_workload
from ..workload.trace import SCHEMA_VERSION, GiB, read_trace, summarize, write_trace
from ..workload.tracestore import describe_traces, resolve_trace, shipped_dir
from .common import (EXIT_BAD_INPUT, EXIT_OK, EXPECTED_ERRORS, add_json_option, emit_json, fmt_bytes,
                     fmt_seconds, human, nonnegative_int, one_line, positive_float)


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


def _info(name_or_path: str, gpu_memory_GiB: float) -> dict:
    path = resolve_trace(name_or_path)
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
        ("times", f"{i['time_family']}: {i['time_validity']}"),
        ("source", i["source"] or "-"),
        ("profiled on", i["profiling_gpu"] or "-"),
        ("GPU model", (i["profiled_gpu"] + " (g10core.gpus; runs on another gpu.model retarget the kernel times)")
         if i["profiled_gpu"] else "- (not in g10core.gpus: never retargeted)"),
    ]
    roles = ", ".join(f"{name.replace('_', ' ')} {fmt_bytes(n)}" for name, n in i["bytes_by_role"].items() if n)
    inferred = {1: " (inferred from the graph: a version-1 file)",
                2: " (temporaries inferred from the graph: a version-2 file)"}.get(i["schema_version"], "")
    rows.append(("bytes by role", (roles or "-") + inferred))
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
            trace = read_trace(resolve_trace(path))
        except EXPECTED_ERRORS as exc:
            print(f"g10sim: error: {one_line(exc)}", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        if not args.quiet:
            print(f"ok {path}: schema v{trace.attrs.get('schema_version')}, {trace.n_kernels} kernels, "
                  f"{trace.n_tensors} tensors, {trace.n_accesses} accesses")
    return status


def _cmd_trace_list(args) -> int:
    rows = describe_traces()
    if human(args):
        print(f"{'name':<20} {'model':<12} {'batch':>5} {'kernels':>7} {'tensors':>7} {'footprint':>11}")
        for r in rows:
            print(f"{r['name']:<20} {r['model']:<12} {r['batch_size']:>5} {r['n_kernels']:>7} {r['n_tensors']:>7} "
                  f"{fmt_bytes(r['footprint_bytes']):>11}" + ("" if r["shipped"] else f"  ({r['path']})"))
        print(f"{len(rows)} traces; shipped in {shipped_dir()}; a name is looked up in $G10_TRACES_DIR first")
    emit_json(rows, args.json_path)
    return EXIT_OK


def _cmd_trace_synth(args) -> int:
    from ..workload.synth import synthesize

    if (args.footprint_GiB is None) == (args.footprint_bytes is None):
        raise ValueError("give exactly one of --footprint-GiB and --footprint-bytes")
    footprint = args.footprint_bytes if args.footprint_bytes is not None else math.ceil(args.footprint_GiB * GiB)
    trace = synthesize(
        args.kernels, footprint, pattern=args.pattern, seed=args.seed, global_fraction=args.global_fraction,
        n_tensors=args.tensors, reads_per_kernel=args.reads_per_kernel,
        workspace_probability=args.workspace_probability, kernel_time_us=args.kernel_time_us,
        model=args.model, batch_size=args.batch_size, flops_per_byte=args.flops_per_byte,
        gpu=args.gpu or "A100-40GB")
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


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "trace", help="convert, inspect, validate and synthesize traces",
        description="Work with g10core's HDF5 traces (format: traces/README.md). A TRACE is a file "
                    "or a trace name (g10sim trace list).")
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

    t = sub.add_parser("list", help="the trace names: shipped traces and those in $G10_TRACES_DIR",
                       description="List every trace a command takes by name (bert_base-b256, ...): the traces "
                                   "shipped with g10core, and the <name>.h5 files of $G10_TRACES_DIR, which come "
                                   "first. Model, batch, kernels, tensors and footprint of each.")
    add_json_option(t)
    t.set_defaults(func=_cmd_trace_list)

    i = sub.add_parser("info", help="counts, footprint, memory ratio and ideal time of traces")
    i.add_argument("paths", nargs="+", metavar="TRACE", help="trace file(s) or name(s), e.g. bert_base-b256")
    i.add_argument("--gpu-memory-GiB", type=positive_float, default=40.0, metavar="GiB",
                   help="GPU memory the memory ratio is taken against (default: 40, an A100-40GB)")
    add_json_option(i)
    i.set_defaults(func=_cmd_trace_info)

    v = sub.add_parser("validate", help="check traces; exit 2 naming the first problem of a bad one")
    v.add_argument("paths", nargs="+", metavar="TRACE", help="trace file(s) or name(s)")
    v.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    v.set_defaults(func=_cmd_trace_validate)

    s = sub.add_parser("synth", help="write a seeded synthetic trace",
                       description="Generate a small valid trace with a chosen footprint and reuse pattern "
                                   "(see g10core.workload.synth).")
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
    s.add_argument("--flops-per-byte", type=positive_float, metavar="F",
                   help="physical kernel times instead of --kernel-time-us: layer kernels do F FLOPs per byte they "
                        "move as BF16 GEMMs (g10core.workload.physical), timed on --gpu")
    s.add_argument("--gpu", metavar="NAME", help="with --flops-per-byte: the GPU the times are for (default A100-40GB)")
    add_json_option(s)
    s.set_defaults(func=_cmd_trace_synth)

    from .capture import add_capture_command, add_import_command
    add_capture_command(sub)      # `trace capture` (g10core.capture; needs torch to run)
    add_import_command(sub)       # `trace import-torch` (JSON only)
    from .inference import add_trace_inference
    add_trace_inference(sub)      # `trace inference` (g10core.workload.llm)
