"""``g10sim trace inference`` (write an inference trace), ``g10sim inference run`` (run it under an
offloading system's schedule) and ``g10sim reproduce inference`` (the published tables beside ours)."""
from __future__ import annotations

from pathlib import Path

from .common import EXIT_OK, add_json_option, emit_json, fmt_bytes, human, positive_int


def _cmd_trace_inference(args) -> int:
    from ..codes import ROLE_KV_CACHE
    from ..workload.llm import inference_trace
    from ..workload.trace import SCHEMA_VERSION, summarize, write_trace

    trace = inference_trace(args.model, args.prompt, args.gen, args.batch, gpu=args.gpu, weights=args.weights,
                            gpu_batches=args.gpu_batches, kv_cache=args.kv_cache)
    path = Path(args.output)
    write_trace(trace, path)
    info = {"path": str(path), "file_size_bytes": path.stat().st_size}
    info.update(summarize(trace))
    info["schema_version"] = SCHEMA_VERSION
    info["kv_cache_bytes"] = int(trace.tensor_size_bytes[trace.tensor_role == ROLE_KV_CACHE].sum())
    info["phases"] = int(trace.kernel_phase.max()) + 1
    if human(args):
        print(f"wrote {path}: {args.model}, prompt {args.prompt}, {args.gen} tokens, batch {args.batch} on "
              f"{args.gpu}: {trace.n_kernels} kernels in prefill + {args.gen - 1} decode steps, weights "
              f"{fmt_bytes(trace.global_bytes)}, KV cache {fmt_bytes(info['kv_cache_bytes'])}")
    emit_json(info, args.json_path)
    return EXIT_OK


def add_trace_inference(sub) -> None:
    """``g10sim trace inference`` (added to the ``trace`` group)."""
    from ..gpus import GPUS
    from ..workload.llm import MODELS, WEIGHT_FORMATS

    s = sub.add_parser("inference", help="write the trace of an LLM inference run (prefill + decode steps)",
                       description="Write the analytical trace of one batch of requests to a decoder LM: prefill, "
                                   "then gen - 1 decode steps, kernel times from the physical model on --gpu, the KV "
                                   "cache as kv_cache tensors (g10core.workload.llm; trace format 5).")
    s.add_argument("--model", required=True, choices=list(MODELS), metavar="MODEL",
                   help=f"one of {', '.join(MODELS)}")
    s.add_argument("--prompt", type=positive_int, required=True, metavar="N", help="prompt tokens per sequence")
    s.add_argument("--gen", type=int, required=True, metavar="N", help="tokens generated per sequence (>= 1)")
    s.add_argument("--batch", type=positive_int, required=True, metavar="B", help="sequences in the batch")
    s.add_argument("--gpu", default="A100-40GB", choices=list(GPUS), metavar="NAME",
                   help="the GPU the kernel times are for (default A100-40GB)")
    s.add_argument("--weights", choices=WEIGHT_FORMATS, default="fp16", help="weight format (default fp16)")
    s.add_argument("--kv-cache", choices=WEIGHT_FORMATS, default="fp16", help="KV cache format (default fp16)")
    s.add_argument("--gpu-batches", type=positive_int, default=1, metavar="N",
                   help="GPU batches per block, FlexGen's zig-zag order (default 1; must divide --batch)")
    s.add_argument("-o", "--output", required=True, metavar="PATH", help="trace file to write")
    add_json_option(s)
    s.set_defaults(func=_cmd_trace_inference)


def _cmd_inference_run(args) -> int:
    from ..workload.trace import read_trace
    from ..workload.tracestore import resolve_trace
    from ..inference.schedule import MACHINES, Placement, run_inference

    trace = read_trace(resolve_trace(args.trace))
    placement = Placement.from_percent(*args.percent) if args.percent else None
    if args.policy != "flexgen" and (args.percent or args.no_overlap):
        raise ValueError("--percent and --no-overlap are FlexGen's (--policy flexgen)")
    result = run_inference(trace, MACHINES[args.machine], args.policy, placement=placement,
                           cpu_attention=args.cpu_attention, overlap=False if args.no_overlap else None,
                           zero_device=args.zero_device)
    if human(args):
        print(result.summary())
    emit_json(result.to_dict(), args.json_path)
    return EXIT_OK


def _cmd_inference_search(args) -> int:
    from ..inference.schedule import MACHINES
    from ..inference.search import search_flexgen

    r = search_flexgen(args.model, args.prompt, args.gen, MACHINES[args.machine], weights=args.weights,
                       kv_cache=args.kv_cache, step=args.step)
    if human(args):
        print(f"FlexGen's policy for {args.model} on {args.machine} (prompt {args.prompt}, {args.gen} tokens): "
              f"--gpu-batch-size {r.gpu_batch_size} --num-gpu-batches {r.gpu_batches} --percent "
              f"{' '.join(map(str, r.percent))}{' --cpu' if r.cpu_attention else ''}: {r.tokens_per_s:.4g} tokens/s "
              f"(batch {r.gpu_batch_size * r.gpu_batches}; {r.feasible:,} of {r.evaluated:,} candidates fit; "
              f"{r.wall_s:.1f} s)")
    emit_json(r.to_dict(), args.json_path)
    return EXIT_OK


def _cmd_inference_serve(args) -> int:
    from ..errors import InputError
    from ..inference.preemption import poisson_arrivals, read_requests, serve_with_preemption
    from ..inference.schedule import MACHINES, layer_stats
    from ..workload.trace import read_trace
    from ..workload.tracestore import resolve_trace

    trace = read_trace(resolve_trace(args.trace))
    budget = None if args.kv_budget_GB is None else args.kv_budget_GB * 1e9
    arrivals, lengths, source = None, {}, "all at once"
    if args.requests is not None:                # requests of their own lengths (and arrivals)
        lengths = read_requests(args.requests)
        arrivals = lengths.pop("arrival_s")
        if arrivals is not None:
            source = f"arriving as {args.requests} says"
    if args.request_rate is not None:            # one arrival per request
        if arrivals is not None:
            raise InputError(f"{args.requests}: has arrival_s and --request-rate draws arrivals: give one of them")
        n = len(lengths["prompt_tokens"]) if lengths else layer_stats(trace).batch
        arrivals = poisson_arrivals(n, args.request_rate, args.seed)
        source = f"arriving at {args.request_rate:g} requests/s (Poisson, seed {args.seed})"
    r = serve_with_preemption(trace, MACHINES[args.machine], kv_budget_bytes=budget, mode=args.mode,
                              seqs_per_group=args.seqs_per_group, swap_space_bytes=args.swap_space_GiB * (1 << 30),
                              arrival_s=arrivals, **lengths)
    if human(args):
        arriving = source if arrivals is None else f"{source} over {r.last_arrival_s:.4g} s"
        shape = (f"prompt {r.prompt}, {r.gen} tokens" if not lengths else
                 f"prompts {r.prompt_mean:.4g} and outputs {r.gen_mean:.4g} tokens on average ({r.output_tokens} "
                 f"output tokens; the trace's prompt {r.prompt}, {r.gen} tokens)")
        print(f"{trace.model}, {r.batch} requests {arriving}, {shape}, KV budget "
              f"{r.kv_budget_bytes / 1e9:.3g} GB ({r.mode} on preemption): {r.total_s:.4g} s, {r.tokens_per_s:.4g} "
              f"tokens/s; time to first token mean {r.ttft_s:.4g} s, p50 {r.ttft_p50_s:.4g}, p99 {r.ttft_p99_s:.4g}; "
              f"latency mean {r.latency_mean_s:.4g} s, p99 {r.latency_p99_s:.4g}; {r.preemptions} preemptions, "
              f"{r.recomputed_tokens} tokens recomputed, {r.swapped_bytes / 1e9:.3g} GB swapped")
        if r.beyond_trace_context:
            print("  note: some decode steps' mean context is past the trace's prompt and generation: they cost its "
                  "last step's time (a lower bound; capture a trace with the longest lengths)")
    emit_json(r.to_dict(), args.json_path)
    return EXIT_OK


def _cmd_inference_plan(args) -> int:
    from ..inference.plan import plan_inference
    from ..inference.schedule import MACHINES, Placement
    from ..workload.trace import read_trace
    from ..workload.tracestore import resolve_trace

    if (args.target_tokens_per_s is None) == (args.target_tpot_s is None):
        raise ValueError("give exactly one of --target-tokens-per-s and --target-tpot-s")
    trace = read_trace(resolve_trace(args.trace))
    placement = Placement.from_percent(*args.percent) if args.percent else None
    out = plan_inference(trace, MACHINES[args.machine], args.policy, args.vary, args.range[0], args.range[1],
                         target_tokens_per_s=args.target_tokens_per_s, target_tpot_s=args.target_tpot_s,
                         placement=placement, cpu_attention=args.cpu_attention, zero_device=args.zero_device)
    if human(args):
        tpot = f"{out['tpot_s']:.4g} s" if out["tpot_s"] is not None else "-"
        print(f"least {args.vary} for the target: {out['value']:.4g} {out['unit']} ({args.policy} on {args.machine}: "
              f"{out['tokens_per_s']:.4g} tokens/s, time per output token {tpot})")
    emit_json(out, args.json_path)
    return EXIT_OK


def _cmd_reproduce_inference(args) -> int:
    from ..experiments.inference import format_table, reproduce_inference

    rows = reproduce_inference(tuple(args.tables))
    if human(args):
        print(format_table(rows))
    if args.plot:
        from ..experiments.inference import plot_table

        plot_table(rows, args.plot)
    emit_json(rows, args.json_path)
    return EXIT_OK


def add_reproduce_inference(sub) -> None:
    """``g10sim reproduce inference`` (added to the ``reproduce`` group)."""
    from ..experiments.inference import TABLES

    r = sub.add_parser("inference", help="FlexGen's and ZeRO-Inference's published throughput tables beside ours",
                       description="Run every cell of FlexGen's T4 table (FMInference/FlexiGen, "
                                   "benchmark/batch_size_table.md) and ZeRO-Inference's A6000 table "
                                   "(microsoft/DeepSpeedExamples, zero_inference/README.md) and DeepNVMe's "
                                   "LLaMA-3-70B drive sets (microsoft/DeepSpeed, blogs/deepnvme) with the published batch "
                                   "and placement, and print ours beside the published tokens/s with the reason for "
                                   "each difference over 20 %.")
    r.add_argument("--tables", nargs="+", choices=TABLES, default=list(TABLES),
                   help="which tables (default all: FlexGen's T4, ZeRO-Inference's A6000, DeepNVMe's drive sets)")
    r.add_argument("--plot", metavar="PATH.png", help="also draw ours beside the published (matplotlib)")
    add_json_option(r)
    r.set_defaults(func=_cmd_reproduce_inference)


def add_parser(subparsers) -> None:
    """The ``inference`` command group."""
    from ..inference.schedule import MACHINES, POLICIES

    p = subparsers.add_parser("inference", help="run an inference trace under an offloading system's schedule",
                              description="LLM inference with weights and KV cache offloaded to host memory and SSD "
                                          "(docs/guide/inference.md).")
    sub = p.add_subparsers(dest="inference_command", metavar="COMMAND", required=True)
    r = sub.add_parser("run", help="one batch of requests: time to first token, time per output token, tokens/s")
    r.add_argument("trace", metavar="TRACE", help="an inference trace (g10sim trace inference)")
    r.add_argument("--policy", choices=POLICIES, required=True)
    r.add_argument("--machine", choices=list(MACHINES), required=True,
                   help="the machine (GPU, host memory, SSD, CPU) of a published table")
    r.add_argument("--percent", type=float, nargs=6, metavar=("WG", "WC", "CG", "CC", "HG", "HC"),
                   help="flexgen: percent of weights, KV cache and activations on GPU and CPU (the rest on disk)")
    r.add_argument("--cpu-attention", action="store_true",
                   help="attention over an offloaded KV cache on the CPU (FlexGen --cpu; ZeRO-Inference KV offload)")
    r.add_argument("--no-overlap", action="store_true", help="flexgen: no overlap of copies and compute")
    r.add_argument("--zero-device", choices=("cpu", "nvme"), default="cpu",
                   help="zero-inference: where the weights live (default cpu)")
    add_json_option(r)
    r.set_defaults(func=_cmd_inference_run)

    from ..workload.llm import MODELS, WEIGHT_FORMATS
    q = sub.add_parser("search", help="FlexGen's policy search: the placement and batch sizes its cost model "
                                      "finds fastest",
                       description="Enumerate GPU batch sizes, GPU batches per block, the weights' and KV cache's "
                                   "percentages on GPU/CPU/disk and CPU attention, under the machine's capacities, "
                                   "with FlexGen's cost model (g10core.inference.search); print the policy chosen.")
    q.add_argument("--model", required=True, choices=list(MODELS), metavar="MODEL", help=f"one of {', '.join(MODELS)}")
    q.add_argument("--prompt", type=positive_int, required=True, metavar="N")
    q.add_argument("--gen", type=int, required=True, metavar="N")
    q.add_argument("--machine", choices=list(MACHINES), required=True)
    q.add_argument("--weights", choices=WEIGHT_FORMATS, default="fp16")
    q.add_argument("--kv-cache", choices=WEIGHT_FORMATS, default="fp16")
    q.add_argument("--step", type=positive_int, default=10, metavar="PERCENT",
                   help="the percentages' grid step (default 10; a divisor of 100)")
    add_json_option(q)
    q.set_defaults(func=_cmd_inference_search)

    from ..inference.preemption import MODES
    v = sub.add_parser("serve", help="vLLM-style serving of the batch with a KV budget: preemption by swap or "
                                     "recompute",
                       description="Serve the trace's batch with its KV cache in blocks of 16 tokens limited to "
                                   "--kv-budget-GB on the GPU; when a decode step finds no free block the latest "
                                   "sequence is preempted and recovered by recomputation or swapping, vLLM's rule "
                                   "(g10core.inference.preemption).")
    v.add_argument("trace", metavar="TRACE", help="an inference trace with one GPU batch")
    v.add_argument("--machine", choices=list(MACHINES), required=True)
    v.add_argument("--kv-budget-GB", type=float, metavar="GB",
                   help="GPU memory for KV blocks (default: the GPU's memory less weights and activations)")
    v.add_argument("--mode", choices=MODES, default="auto",
                   help="auto: vLLM's rule (recompute for one sequence per group, swap for several)")
    v.add_argument("--seqs-per-group", type=positive_int, default=1, metavar="N",
                   help="sequences per request (parallel sampling / beam width; default 1)")
    v.add_argument("--swap-space-GiB", type=float, default=4.0, metavar="GiB",
                   help="host memory for swapped blocks (vLLM's default 4)")
    v.add_argument("--request-rate", type=float, default=None, metavar="R",
                   help="requests arrive over time, a Poisson process at R per second (vLLM's benchmark_serving "
                        "--request-rate); default: the whole batch at once")
    v.add_argument("--seed", type=int, default=0, metavar="S", help="the arrivals' seed (default 0)")
    v.add_argument("--requests", metavar="FILE.csv", default=None,
                   help="requests of their own lengths: a CSV with columns prompt_tokens, output_tokens and "
                        "optionally arrival_s, one row per request (default: the trace's batch, its lengths)")
    add_json_option(v)
    v.set_defaults(func=_cmd_inference_serve)

    from ..inference.plan import PLANNABLE
    pl = sub.add_parser("plan", help="the least host memory, SSD bandwidth or GPU memory for a target tokens/s or "
                                     "time per output token",
                        description="Bisect one machine figure (--vary) over --range for the least value at which "
                                    "the policy's run reaches the target (g10core.inference.plan). Exit 1 when even "
                                    "the top of the range does not.")
    pl.add_argument("trace", metavar="TRACE", help="an inference trace")
    pl.add_argument("--policy", choices=POLICIES, required=True)
    pl.add_argument("--machine", choices=list(MACHINES), required=True)
    pl.add_argument("--vary", choices=list(PLANNABLE), required=True)
    pl.add_argument("--range", type=float, nargs=2, required=True, metavar=("LO", "HI"))
    pl.add_argument("--target-tokens-per-s", type=float, metavar="X")
    pl.add_argument("--target-tpot-s", type=float, metavar="S")
    pl.add_argument("--percent", type=float, nargs=6, metavar=("WG", "WC", "CG", "CC", "HG", "HC"))
    pl.add_argument("--cpu-attention", action="store_true")
    pl.add_argument("--zero-device", choices=("cpu", "nvme"), default="cpu")
    add_json_option(pl)
    pl.set_defaults(func=_cmd_inference_plan)
