"""``g10sim trace capture`` and ``g10sim trace import-torch`` (importable without torch).

Two functions the ``trace`` group calls: :func:`add_capture_command` adds ``capture``,
:func:`add_import_command` adds ``import-torch``.  (``g10sim reproduce llm``, which runs the
policies on the captured LLM traces, is an experiment: :mod:`g10core.cli.reproduce`.)
"""
from __future__ import annotations

import time
from collections import Counter

from ..capture.families import DEFAULT_SIZE, FAMILIES, IMAGE_FAMILIES
from . import common as cli


def _cmd_trace_capture(args) -> int:
    from ..capture import INSTALL_HINT, torch_available

    if not torch_available():
        raise ValueError(f"trace capture needs PyTorch, which is not installed: {INSTALL_HINT}")
    from ..workload.trace import summarize, write_trace
    from ..capture.api import capture_family

    overrides = {}
    image = args.family in IMAGE_FAMILIES
    if args.attention is not None:
        if image:
            raise ValueError(f"--attention: the {args.family} family has no attention")
        overrides["attention"] = args.attention
    if args.dropout is not None:
        if args.family == "llama" or image:
            raise ValueError(f"--dropout: the {args.family} family has no dropout")
        if not 0.0 <= args.dropout < 1.0:
            raise ValueError(f"--dropout {args.dropout}: must be in [0, 1)")
        overrides["dropout"] = args.dropout
    if args.master_weights and args.dtype == "float32":
        raise ValueError("--master-weights fp32: keeps an fp32 copy of 16-bit parameters; give --dtype bfloat16 "
                         "(or float16)")
    if args.master_weights and args.optimizer not in ("adamw", "adam"):
        raise ValueError(f"--master-weights fp32: the step is adamw or adam, not {args.optimizer}")
    t0 = time.perf_counter()
    trace = capture_family(args.family, args.size, batch=args.batch, seq_len=args.seq_len, dtype=args.dtype,
                           optimizer=args.optimizer, master_weights=args.master_weights, gpu=args.gpu,
                           calibration=args.time_model, tf32=args.tf32, **overrides)
    capture_s = time.perf_counter() - t0
    path = write_trace(trace, args.output)
    info = {"path": str(path), "file_size_bytes": path.stat().st_size, "capture_s": capture_s}
    info.update(summarize(trace))
    info["attrs"] = dict(trace.attrs)
    if cli.human(args):
        a = trace.attrs
        print(f"wrote {path}: {trace.model} ({a['capture_n_parameters']:,} parameters), batch {args.batch} x "
              f"{args.seq_len}, {args.dtype}"
              f"{' + fp32 master weights' if args.master_weights else ''}, {a['capture_optimizer']}; {trace.n_kernels} kernels, "
              f"{trace.n_tensors} tensors, footprint {cli.fmt_bytes(trace.footprint_bytes)} "
              f"({info['memory_ratio_percent']:.0f} % of 40 GiB), ideal {cli.fmt_seconds(info['ideal_time_s'])} "
              f"on the {trace.profiled_gpu or 'profiling GPU'} ({a['kernel_time_model']}); captured in {capture_s:.1f} s")
    cli.emit_json(info, args.json_path)
    return cli.EXIT_OK


def add_capture_command(trace_subparsers) -> None:
    """``g10sim trace capture FAMILY [--size S] --batch B --seq-len L -o FILE``."""
    sizes = "; ".join(f"{f}: {', '.join(s)} (default {DEFAULT_SIZE[f]})" for f, s in FAMILIES.items())
    c = trace_subparsers.add_parser(
        "capture", help="capture a training iteration of a model family (needs the capture extra)",
        description="Run one training iteration (forward, loss, backward, optimizer step) of a model built "
                    "from its configuration on PyTorch's meta device and write it as a trace with each kernel's "
                    "FLOPs, bytes and unit; kernel times come from the physical kernel-time model (physical-v1: "
                    "the GPU's peaks at published achievable fractions, docs/validation.md) on --gpu. Needs "
                    "PyTorch: pip install 'g10core[capture]'.")
    c.add_argument("family", choices=sorted(FAMILIES), help="model family")
    c.add_argument("--size", metavar="S", help=f"model size ({sizes})")
    c.add_argument("--batch", type=cli.positive_int, required=True, metavar="B", help="batch size")
    c.add_argument("--seq-len", type=cli.positive_int, required=True, metavar="L",
                   help="sequence length (tokens); for resnet, resnext, se-resnext, senet: the image side (224)")
    c.add_argument("-o", "--output", metavar="PATH", required=True, help="trace file to write")
    c.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                   help="parameter and activation dtype (default float32, as the published profiles)")
    c.add_argument("--optimizer", choices=("adamw", "adam", "sgd", "sgd-momentum"), default="adamw",
                   help="optimizer of the recorded step (default adamw)")
    c.add_argument("--master-weights", choices=("fp32",), default=None,
                   help="mixed precision: with --dtype bfloat16 (or float16), keep fp32 master weights and fp32 "
                        "Adam moments in the optimizer (16 bytes of model state per parameter, as ZeRO counts it)")
    c.add_argument("--dropout", type=float, metavar="P", help="dropout probability (bert, gpt2, gpt3; default 0.1)")
    c.add_argument("--attention", choices=("fused", "eager"), default=None,
                   help="fused: one attention kernel each way, as PyTorch trains on a GPU (default); eager: scores, "
                        "softmax and weighted sum as separate kernels")
    c.add_argument("--gpu", metavar="NAME", default=None,
                   help="GPU model the kernel times are for (g10core.gpus; default A100-40GB)")
    c.add_argument("--time-model", metavar="NAME|FILE", default=None,
                   help="kernel-time model: physical-v1 (default), a100-g10-v1 (fitted on the G10 artifact's "
                        "profiles, for comparisons with the paper's traces) or a calibration JSON file")
    c.add_argument("--tf32", action="store_true",
                   help="fp32 matrix products on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32; fp32 "
                        "convolutions use TF32 either way, cuDNN's default)")
    cli.add_json_option(c)
    c.set_defaults(func=_cmd_trace_capture)


def _cmd_trace_import_torch(args) -> int:
    from ..capture.profile import import_profile
    from ..codes import ROLE_NAMES
    from ..workload.trace import summarize, write_trace

    cli.check_output_path(args.output, "-o")      # before the import: a long import, then no file
    trace = import_profile(args.et, args.kineto, model=args.model, batch_size=args.batch_size,
                           calibration=args.calibration, torch_version=args.torch_version or "",
                           cpu_times=args.cpu_times, gpu=args.gpu or "A100-40GB")
    path = write_trace(trace, args.output)
    info = {"path": str(path), "file_size_bytes": path.stat().st_size}
    info.update(summarize(trace))
    # the roles as the file stores them (the importer's own classification is attrs.import_tensor_roles)
    stored = Counter(ROLE_NAMES.get(int(code), "unknown") for code in trace.tensor_role)
    info["tensor_roles"] = {name: stored[name] for name in ROLE_NAMES.values() if stored[name]}
    info["attrs"] = dict(trace.attrs)
    if cli.human(args):
        a = trace.attrs
        on_gpu = a["import_time_source"] == "gpu"
        what = (f"GPU kernels on {a['import_device']}" if on_gpu
                else f"physical-v1 times on the {trace.profiled_gpu} (a CPU-only profile's operators)"
                if a["import_cpu_times"] == "physical" else "operator CPU durations (a CPU-only profile)")
        roles = ", ".join(f"{n} {r}" for r, n in info["tensor_roles"].items())
        print(f"wrote {path}: {trace.n_kernels} kernels from {what}, {trace.n_tensors} tensors ({roles}), "
              f"footprint {cli.fmt_bytes(trace.footprint_bytes)}, ideal {cli.fmt_seconds(info['ideal_time_s'])}"
              + (f" (the profile's GPU time: {cli.fmt_seconds(a['import_gpu_time_ns'] * 1e-9)})" if on_gpu else "")
              + f"; GPU model {trace.profiled_gpu or '- (not in g10core.gpus)'}")
        if a["import_unattributed_gpu_activities"]:
            print(f"  {a['import_unattributed_gpu_activities']} GPU activities no recorded operator launched: "
                  f"kernels of their own that touch no tensor")
    cli.emit_json(info, args.json_path)
    return cli.EXIT_OK


def add_import_command(trace_subparsers) -> None:
    """``g10sim trace import-torch --et ET.json --kineto KINETO.json -o FILE``."""
    c = trace_subparsers.add_parser(
        "import-torch", help="import a training iteration profiled with torch.profiler (no torch needed)",
        description="Turn one training iteration recorded with torch.profiler (the Kineto trace of "
                    "prof.export_chrome_trace and the execution trace of ExecutionTraceObserver, same run) into "
                    "a trace: one kernel per operator that launched GPU work, its measured time, and the tensors "
                    "the execution trace names; fault times from the calibrated fault-cost model. A CPU-only "
                    "profile gives the operators' CPU durations. Needs no PyTorch.")
    c.add_argument("--et", metavar="ET.json", required=True, help="the execution trace (JSON, or .json.gz)")
    c.add_argument("--kineto", metavar="KINETO.json", required=True,
                   help="the Kineto trace of the same run (JSON, or .json.gz)")
    c.add_argument("-o", "--output", metavar="PATH", required=True, help="trace file to write")
    c.add_argument("--model", metavar="NAME", help="model name to record (default: the execution trace's file name)")
    c.add_argument("--batch-size", type=cli.positive_int, default=1, metavar="B",
                   help="batch size to record (the profile does not say; default 1)")
    c.add_argument("--torch-version", metavar="V", help="PyTorch version of the run, when the files do not say")
    c.add_argument("--calibration", metavar="FILE", help="fault-cost calibration JSON (default: the shipped one)")
    c.add_argument("--cpu-times", choices=("measured", "physical"), default="measured",
                   help="a CPU-only profile: the operators' CPU durations (default), or each kernel's time from the "
                        "physical kernel-time model on --gpu, from its FLOPs and bytes")
    c.add_argument("--gpu", metavar="NAME", help="with --cpu-times physical: the GPU the times are for (default "
                                                 "A100-40GB)")
    cli.add_json_option(c)
    c.set_defaults(func=_cmd_trace_import_torch)
