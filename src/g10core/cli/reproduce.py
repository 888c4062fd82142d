"""``g10sim reproduce``: re-run the experiments of the G10 paper (Fig. 11, Figs. 12-19, all), the
validation table and every policy on the captured LLM traces (``reproduce llm``)."""
from __future__ import annotations

from pathlib import Path

from .. import __version__
from ..config import ARTIFACT_PRESET, DEFAULT_PRESET
from . import common as cli
from .common import (EXIT_FAILURE, EXIT_OK, add_config_options, add_json_option, check_output_path,
                     config_from_args, human, positive_int, simulation_failures)
from .report import fig11_outputs, figure_outputs


def gpu_note(cfg) -> str | None:
    """One line when the run's GPU is not the paper's: the published column is the paper's A100."""
    from ..gpus import DEFAULT_GPU

    if cfg.gpu.model == DEFAULT_GPU:
        return None
    return (f"GPU {cfg.gpu.model} (gpu.model): the kernel times of traces profiled on another GPU are "
            f"retargeted to it; the published numbers are the paper's, on the {DEFAULT_GPU}")
from .sweep import add_run_options


class _Unset(str):
    """A preset name the user did not give (argparse's default): ``--workloads`` picks it."""


def _cmd_reproduce_fig11(args) -> int:
    import time

    from ..experiments.published import FIG11_POLICIES, FIG11_WORKLOADS
    from ..experiments.reproduce import default_jobs, default_traces_dir, reproduce_fig11

    physical = args.workloads == "physical"
    if isinstance(args.preset, _Unset):   # the paper's traces reproduce under g10-artifact; the twins explore under default
        args.preset = DEFAULT_PRESET if physical else ARTIFACT_PRESET
    if physical:
        from ..capture.twins import TWIN_WORKLOADS
        workloads = TWIN_WORKLOADS
    else:
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
    if human(args) and physical:
        from ..experiments.twins import format_twin_comparison

        print()
        print(format_twin_comparison(rows))
    if human(args):
        if gpu_note(cfg):
            print(gpu_note(cfg))
        print(f"{len(rows)} runs in {wall:.1f} s wall with {jobs} job(s)")
    return EXIT_OK


def _cmd_reproduce_figure(args) -> int:
    import sys
    import time

    from ..experiments.reproduce import default_jobs, reproduce_figure

    jobs = default_jobs() if args.jobs is None else args.jobs
    cfg = config_from_args(args)
    t0 = time.perf_counter()
    rows = reproduce_figure(args.figure, args.out, traces_dir=args.traces, jobs=jobs, dask=args.dask,
                            progress=not args.no_progress, config=cfg, models=args.models)
    wall = time.perf_counter() - t0
    meta = {"wall_s": wall, "jobs": jobs, "dask": args.dask, "store": args.out, "preset": cfg.preset,
            "config_hash": cfg.hash, "g10core_version": __version__}
    figure_outputs(args, args.figure, rows, meta)
    if human(args):
        if gpu_note(cfg):
            print(gpu_note(cfg))
        print(f"{len(rows)} rows in {wall:.1f} s wall with {jobs} job(s)" + (f" (store {args.out})" if args.out else ""))
    errors = [r for r in rows if r.get("error")]
    for r in errors[:3]:
        print(f"g10sim: error: {r['model']}-b{r['batch']} {r['policy']}: {r['error']}", file=sys.stderr)
    return EXIT_FAILURE if errors else EXIT_OK


def _cmd_reproduce_all(args) -> int:
    import time

    from ..experiments.report import (figure_cells, figure_summary, format_fig11_table, format_figure_summary,
                          format_figure_table, plot_figure, write_fig11_json, write_figure_json)
    from ..experiments.reproduce import default_jobs, reproduce_all
    from ..results import write_text_atomic

    jobs = default_jobs() if args.jobs is None else args.jobs
    out = Path(args.out)
    t0 = time.perf_counter()
    figures = reproduce_all(out, traces_dir=args.traces, jobs=jobs, dask=args.dask, progress=not args.no_progress)
    wall = time.perf_counter() - t0
    meta = {"wall_s": wall, "jobs": jobs, "dask": args.dask, "store": str(out), "g10core_version": __version__}
    lines = []
    for name, rows in figures.items():
        if name == "fig11":
            write_fig11_json(rows, out / "fig11.json", meta=meta)
            write_text_atomic(out / "fig11.txt", format_fig11_table(rows) + "\n")
        else:
            write_figure_json(name, rows, out / f"{name}.json", meta=meta)
            write_text_atomic(out / f"{name}.txt", format_figure_table(name, rows) + "\n")
        if not args.no_plots:
            plot_figure(name, rows, out / f"{name}.png")
        lines.append(format_figure_summary(figure_summary(name, figure_cells(name, rows))))
    if human(args):
        print("\n".join(lines))
        print(f"wrote {out}/fig11..fig19 .json, .txt{'' if args.no_plots else ', .png'}; {wall:.1f} s wall "
              f"with {jobs} job(s)")
    return EXIT_OK


def _cmd_reproduce_validation(args) -> int:
    import sys
    import time

    from ..capture import INSTALL_HINT, torch_available
    from .common import emit_json

    if not torch_available():
        raise ValueError(f"reproduce validation captures workloads and needs PyTorch: {INSTALL_HINT}")
    from ..capture.validation import MEASUREMENTS, format_ratios, format_table, ratio_table, summary, \
        validation_table

    check_output_path(args.json_path, "--json")
    t0 = time.perf_counter()
    done = []

    def progress(key):
        done.append(key)
        if not args.no_progress:
            print(f"\r{len(done)}/{len(MEASUREMENTS)} {key:<30}", end="", file=sys.stderr, flush=True)

    rows = validation_table(progress=progress)
    if not args.no_progress:
        print(file=sys.stderr)
    ratios = ratio_table()
    wall = time.perf_counter() - t0
    if human(args):
        print("Training throughput per GPU: published beside ours (physical-v1, ideal iteration)")
        print(format_table(rows))
        print()
        print(format_ratios(ratios))
        print(f"{len(rows)} settings and {len(ratios)} speed-ups in {wall:.1f} s")
    emit_json({"rows": rows, "ratios": ratios, "summary": summary(rows), "wall_s": wall,
               "g10core_version": __version__}, args.json_path)
    return EXIT_OK


def _cmd_reproduce_llm(args) -> int:
    import time

    from ..capture.llm import LLM_WORKLOADS
    from ..experiments.llm import format_llm_table, reproduce_llm
    from ..experiments.reproduce import default_jobs, default_traces_dir
    from ..results import finite_floats

    workloads = LLM_WORKLOADS
    if args.models:
        by_name = {w.file_name[:-3]: w for w in LLM_WORKLOADS}
        unknown = [m for m in args.models if m not in by_name]
        if unknown:
            raise ValueError(f"--models {unknown[0]!r}: not a shipped LLM trace; known: {', '.join(by_name)}")
        workloads = tuple(by_name[m] for m in args.models)
    policies = tuple(args.policies) if args.policies else None     # None: every registered policy
    if args.plot:
        cli.check_output_path(args.plot, "--plot")
    jobs = default_jobs() if args.jobs is None else args.jobs
    t0 = time.perf_counter()
    cfg = cli.config_from_args(args)
    rows = reproduce_llm(args.traces, jobs=jobs, progress=not args.no_progress, config=cfg, workloads=workloads,
                         policies=policies)
    wall = time.perf_counter() - t0
    meta = {"wall_s": wall, "jobs": jobs, "traces": str(args.traces or default_traces_dir()), "preset": cfg.preset,
            "config_hash": cfg.hash}
    if cli.human(args):
        print(format_llm_table(rows))
        print(f"{len(rows)} runs in {wall:.1f} s wall with {jobs} job(s)")
    # a failed run's time and ideal/time are inf in the rows: null in JSON
    cli.emit_json({"meta": meta, "rows": finite_floats(rows)}, args.json_path)
    if args.plot:
        from ..experiments.report import plot_llm

        plot_llm(rows, args.plot, title=f"LLM traces, preset {cfg.preset}: ideal / time per policy")
        if cli.human(args):
            print(f"plot written to {args.plot}")
    return cli.EXIT_OK


def add_llm_command(reproduce_subparsers) -> None:
    """``g10sim reproduce llm``: every policy on every shipped LLM trace."""
    f = reproduce_subparsers.add_parser(
        "llm", help="every policy on the captured LLM traces (GPT-2, LLaMA-style)",
        description="Run every registered policy (g10sim policies; a policy that refuses a trace, e.g. one "
                    "without the tensor roles it needs, shows as refused) on the shipped LLM traces "
                    "(<family>-<size>-s<seq>[-bf16]-b<batch>.h5: GPT-2 small/medium, LLaMA-style 1.1B, 6.7B and 13B "
                    "in fp32 and in mixed precision, and a Fuyou-style 13B fine-tuning on a named 24 GiB machine) "
                    "and print seconds per iteration and ideal / time.")
    f.add_argument("--traces", metavar="DIR", help="folder with the LLM traces (default: the shipped traces/)")
    f.add_argument("--jobs", type=cli.positive_int, metavar="N", help="worker processes (default: number of CPUs)")
    f.add_argument("--models", nargs="+", metavar="NAME", help="only these traces, e.g. gpt2-small-s1024-b5")
    f.add_argument("--policies", nargs="+", metavar="P", help="only these policies (default: every registered one)")
    f.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    f.add_argument("--plot", metavar="PATH.png", help="also draw ideal / time per trace and policy (matplotlib)")
    cli.add_config_options(f, default_preset=DEFAULT_PRESET)
    cli.add_json_option(f)
    f.set_defaults(func=_cmd_reproduce_llm)


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
    f.add_argument("--workloads", choices=("paper", "physical"), default="paper",
                   help="paper: the artifact's profiled traces (default); physical: their physical twins "
                        "(<model>-twin-b<batch>: the same models and batches captured with the physical kernel-time "
                        "model), run under the default preset unless --preset says otherwise, each cell beside the "
                        "paper's fraction of ideal")
    add_config_options(f, default_preset=ARTIFACT_PRESET)
    add_json_option(f)
    f.set_defaults(func=_cmd_reproduce_fig11, preset=_Unset(ARTIFACT_PRESET))

    from ..experiments.reproduce import FIGURES, SWEEP_FIGURES

    for name in SWEEP_FIGURES:
        g = sub.add_parser(
            name, help=FIGURES[name].title,
            description=f"{FIGURES[name].title}. Runs the sweep file shipped as g10core/experiments/sweeps/{name}.toml "
                        "(g10-artifact preset) and prints each published cell beside ours with the difference, "
                        "then the worst cell. Exit 1 when a run raised (its error is printed).")
        add_run_options(g, out_required=False)
        g.add_argument("--models", nargs="+", metavar="MODEL-bB", help="only these workloads, e.g. bert_base-b256")
        g.add_argument("--plot", metavar="PATH.png", help="also draw the figure with the paper's axes (matplotlib)")
        add_config_options(g, default_preset=ARTIFACT_PRESET)
        add_json_option(g)
        g.set_defaults(func=_cmd_reproduce_figure)
    a = sub.add_parser(
        "all", help="the whole published evaluation (1,410 runs), then Figs. 11-19",
        description="Run the published simulator's whole run set (its genconfigs.py: main, host-memory, "
                    "SSD-bandwidth and kernel-time-noise sweeps; g10core/experiments/sweeps/all.toml) into the store DIR, "
                    "resumably, then write fig11..fig19 .json, .txt (table) and .png there.")
    add_run_options(a, out_required=True)
    a.add_argument("--no-plots", action="store_true", help="write no .png")
    a.set_defaults(func=_cmd_reproduce_all, json_path=None)

    add_llm_command(sub)       # `reproduce llm`: every policy on the captured LLM traces
    from .inference import add_reproduce_inference   # `reproduce inference`: FlexGen's and ZeRO-Inference's tables
    add_reproduce_inference(sub)
    v = sub.add_parser(
        "validation", help="the physical kernel-time model beside published real-GPU training throughput",
        description="Capture each published training measurement's workload (g10core.capture.validation: "
                    "ResNet-50, ResNeXt-101, SE-ResNeXt-101, BERT-Large, GPT-3 shapes on A100s, and two H100/A100 "
                    "speed-ups) on the meta device with the physical kernel-time model and print our throughput "
                    "beside the published one, with the error. Needs PyTorch (the capture extra).")
    v.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    add_json_option(v)
    v.set_defaults(func=_cmd_reproduce_validation)
