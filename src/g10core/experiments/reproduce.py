"""Reproduce the paper's figures: runs, rows, and the published numbers next to them.

``reproduce_fig11`` runs the five models of Fig. 11 at their batch size under the
seven policies (35 runs) in a pool of processes and returns one row per run::

    {"model", "batch", "policy", "trace", "time_s", "ideal_time_s",
     "normalized_performance", "published_s", "published_fails", "error_pct",
     "failed", "failure_reason", "wall_s", "peak_rss_MB", "config_hash"}

``time_s`` is the result's ``iteration_time_s`` (inf when the run failed: cannot
fit, host overflow, FlashNeuron out of memory); ``normalized_performance`` is
ideal / time (0 when failed); ``error_pct`` = 100 (time / published - 1) where a
published number exists.  Tables and the bar chart are in :mod:`g10core.experiments.report`.

Workers receive the trace *path*, the policy name and the (picklable, frozen)
configuration, never an open file; the parent is the only writer of any output.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import math
import multiprocessing
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from ..workload import tracestore
from ..workload.trace import keep_read_traces, keeping_read_traces
from ..workload.vitality import CannotFit
from ..config import ARTIFACT_PRESET, SimConfig, preset
from .published import FAILS, FIG11_POLICIES, FIG11_WORKLOADS, published_seconds
from .sweep import default_jobs, default_traces_dir  # noqa: F401 (defined with the sweeps; re-exported)
# the sweeps' relative cost of a run by policy: long runs first (G10's replay is the longest of Fig. 11)
from .sweep import _POLICY_COST


def trace_file(traces_dir, model: str, batch: int) -> Path:
    return Path(traces_dir) / f"{model}-b{int(batch)}.h5"


@dataclass(frozen=True)
class RunTask:
    """One run of a reproduction: what a worker process needs (plain, picklable)."""

    model: str
    batch: int
    policy: str
    trace_path: str
    config: SimConfig


def run_task(task: RunTask) -> dict:
    """Run one task and return its row (a worker's entry point; also used in-process)."""
    from ..simulator import Simulator

    sim = Simulator(task.config)
    try:
        r = sim.run(task.trace_path, task.policy)
        time_s, ideal_s = r.iteration_time_s, r.ideal_time_s
        failed, reason = r.failed, r.failure_reason
        wall, rss = r.metadata.get("wall_s"), r.metadata.get("peak_rss_MB")
    except CannotFit as exc:
        from ..workload.slot_inputs import kernel_cycles
        from ..workload.trace import read_trace

        trace = read_trace(task.trace_path)
        ideal_s = int(kernel_cycles(trace, task.config.gpu.frequency_GHz)[0].sum()) / sim.constants.freq_hz
        time_s, failed, reason, wall, rss = math.inf, True, str(exc), None, None
    return make_row(task, time_s, ideal_s, failed, reason, wall, rss)


def make_row(task: RunTask, time_s: float, ideal_s: float, failed: bool, reason: str | None,
             wall_s: float | None, peak_rss_MB: float | None) -> dict:
    pub = published_seconds(task.model, task.batch, task.policy)
    published_s = pub if isinstance(pub, float) else None
    error = None
    if published_s is not None and not failed:
        error = 100.0 * (time_s / published_s - 1.0)
    return {
        "model": task.model,
        "batch": int(task.batch),
        "policy": task.policy,
        "trace": task.trace_path,
        "time_s": math.inf if failed else float(time_s),
        "ideal_time_s": float(ideal_s),
        "normalized_performance": 0.0 if failed or not time_s > 0 else float(ideal_s / time_s),
        "published_s": published_s,
        "published_fails": pub == FAILS,
        "error_pct": error,
        "failed": bool(failed),
        "failure_reason": reason,
        "wall_s": wall_s,
        "peak_rss_MB": peak_rss_MB,
        "config_hash": task.config.hash,
    }


def _worker_init():
    # Ctrl-C goes to the whole process group: let the parent decide, and stop us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a worker runs several policies on each trace: parse and validate each file once
    keep_read_traces()


def _cost(task: RunTask) -> float:
    try:
        size = Path(task.trace_path).stat().st_size
    except OSError:
        size = 0
    return _POLICY_COST.get(task.policy, 1.0) * (size + 1)


def run_tasks(tasks: list[RunTask], *, jobs: int | None = None, progress: bool = True,
              desc: str = "runs", runner=None) -> list[dict]:
    """Run ``tasks`` (in a process pool when jobs > 1); rows come back in task order.  ``runner``:
    a module-level function task -> row (default :func:`run_task`; it must pickle by name)."""
    runner = run_task if runner is None else runner
    from tqdm import tqdm

    jobs = default_jobs() if jobs is None else int(jobs)
    if jobs < 1:
        raise ValueError(f"jobs = {jobs}: must be >= 1")
    rows: list[dict | None] = [None] * len(tasks)
    bar = tqdm(total=len(tasks), desc=desc, unit="run", file=sys.stderr, disable=not progress,
               dynamic_ncols=True, leave=False)
    order = sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i]))   # long runs first
    try:
        if jobs == 1 or len(tasks) <= 1:
            with keeping_read_traces():
                for i in order:
                    rows[i] = runner(tasks[i])
                    bar.set_postfix_str(f"{tasks[i].model} {tasks[i].policy}", refresh=False)
                    bar.update()
        else:
            ctx = multiprocessing.get_context("spawn")    # no inherited threads or HDF5 state
            ex = cf.ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx,
                                        initializer=_worker_init)
            try:
                futures = {ex.submit(runner, tasks[i]): i for i in order}
                for fut in cf.as_completed(futures):
                    i = futures[fut]
                    rows[i] = fut.result()
                    bar.set_postfix_str(f"{tasks[i].model} {tasks[i].policy}", refresh=False)
                    bar.update()
            except BaseException:
                _stop(ex)
                raise
            ex.shutdown(wait=True)
    finally:
        bar.close()
    return rows  # type: ignore[return-value]


def _stop(ex: cf.ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (Ctrl-C, or a failed run)."""
    procs = list((getattr(ex, "_processes", None) or {}).values())   # before shutdown clears it
    for proc in procs:
        try:
            proc.terminate()
        except (OSError, AttributeError):
            pass
    ex.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.join(timeout=5)


def fig11_tasks(traces_dir=None, *, config: SimConfig | None = None, workloads=FIG11_WORKLOADS,
                policies=FIG11_POLICIES) -> list[RunTask]:
    """The runs of Fig. 11 (checks that every trace file and policy exists first)."""
    from .. import policies as registry
    from ..simulator import Simulator

    cfg = preset(ARTIFACT_PRESET) if config is None else config
    Simulator(cfg)                                   # refuse a bad or unsupported config up front
    for p in policies:
        try:
            registry.get(p)                          # (an unknown name: the known ones, and the closest)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
    if traces_dir is None:      # by name: $G10_TRACES_DIR first, then the shipped traces
        files = {(m, b): tracestore.find_trace(f"{m}-b{int(b)}") for m, b in workloads}
        missing = [f"{m}-b{int(b)}" for (m, b), path in files.items() if path is None]
        if missing:
            raise FileNotFoundError(2, f"no trace of that name ({len(missing)} missing; searched "
                                       f"{', '.join(map(str, tracestore.search_dirs()))}; "
                                       "`g10sim trace list` shows the names)", missing[0])
    else:
        files = {(m, b): trace_file(traces_dir, m, b) for m, b in workloads}
        missing = [str(path) for path in files.values() if not path.is_file()]
        if missing:
            raise FileNotFoundError(2, f"trace file(s) missing ({len(missing)}; convert them with "
                                       "`g10sim trace convert --all`, or leave out --traces to use the "
                                       "shipped ones)", missing[0])
    return [RunTask(m, int(b), p, str(files[m, b]), cfg) for m, b in workloads for p in policies]


def reproduce_fig11(traces_dir=None, *, jobs: int | None = None, progress: bool = True,
                    config: SimConfig | None = None, workloads=FIG11_WORKLOADS,
                    policies=FIG11_POLICIES) -> list[dict]:
    """Fig. 11: every workload under every policy; one row per run (module docstring)."""
    tasks = fig11_tasks(traces_dir, config=config, workloads=workloads, policies=policies)
    return run_tasks(tasks, jobs=jobs, progress=progress, desc="fig11")


# ============================================================================
# Figs. 12-19 and the whole evaluation, on the sweep store (g10core.experiments.sweep)
# ============================================================================
#
# Each figure is a sweep file shipped in ``g10core/experiments/sweeps/`` (``figNN.toml``;
# ``all.toml`` is the published simulator's whole run set, a superset of every
# figure's runs).  One code path for all of them: load the figure's sweep, run what
# the store lacks, then turn (run, record) pairs into figure rows.  Tables, the
# comparison with the published cells and the plots are in g10core.experiments.report.

@dataclass(frozen=True)
class Figure:
    """What one of the paper's figures runs and shows."""

    name: str                  # "fig16"
    title: str
    param: str | None = None   # the swept parameter's name in rows (published.FIGURE_PARAMS)
    param_key: str | None = None   # its dotted config key
    ideal_rows: bool = False   # add an "ideal" row per workload and point (Base UVM's ideal time)


FIGURES: dict[str, Figure] = {f.name: f for f in (
    Figure("fig11", "Fig. 11: normalised performance of the five models under seven policies"),
    Figure("fig12", "Fig. 12: per-kernel slowdown (CDF)"),
    Figure("fig13", "Fig. 13: time breakdown (compute, compute overlapped with transfers, stall)"),
    Figure("fig14", "Fig. 14: traffic per direction and tier"),
    Figure("fig15", "Fig. 15: batch size", ideal_rows=True),
    Figure("fig16", "Fig. 16: G10 under host memory capacity", "host_memory_GiB", "host.memory_GiB"),
    Figure("fig17", "Fig. 17: policies under host memory capacity", "host_memory_GiB", "host.memory_GiB"),
    Figure("fig18", "Fig. 18: SSD bandwidth (host and GPU PCIe at 32 GB/s)", "ssd_bandwidth_GBps",
           "ssd.bandwidth_GBps", ideal_rows=True),
    Figure("fig19", "Fig. 19: G10 under kernel-time noise", "sigma", "noise.kernel_time_sigma"),
)}
SWEEP_FIGURES = tuple(n for n in FIGURES if n != "fig11")     # shipped as sweep files


def sweep_file(name: str) -> Path:
    """A sweep file shipped with the package (``fig12`` ... ``fig19``, ``all``)."""
    from importlib import resources

    if name not in SWEEP_FIGURES and name != "all":
        raise ValueError(f"unknown figure {name!r}; known: {', '.join(SWEEP_FIGURES)}, all")
    return Path(str(resources.files("g10core.experiments").joinpath("sweeps", f"{name}.toml")))


def figure_sweep(name: str, *, traces_dir=None, config: SimConfig | None = None):
    """The validated sweep of figure ``name`` (``all``: the whole evaluation)."""
    from .sweep import load_sweep

    return load_sweep(sweep_file(name), traces_dir=traces_dir, base_config=config)


def _fig11_sweep(*, traces_dir=None, config: SimConfig | None = None):
    """Fig. 11's runs as the ``main-fig11`` block of ``all`` (six policies; Ideal is derived)."""
    sw = figure_sweep("all", traces_dir=traces_dir, config=config)
    from dataclasses import replace as _replace

    return _replace(sw, name="fig11", runs=tuple(r for r in sw.runs if r.block == "main-fig11"))


def _num(x) -> float:
    return math.inf if x is None else float(x)


def figure_rows(name: str, sweep, records: dict) -> list[dict]:
    """Rows of figure ``name`` from the store's records of ``sweep``'s runs (missing runs left out).

    Every row: ``model``, ``batch``, ``policy``, the swept parameter under its name,
    ``time_s`` (inf when failed), ``ideal_time_s``, ``normalized_performance`` (0 when
    failed), ``failed``, ``failure_reason``, ``error``, ``run_key``, ``trace``; when the run
    finished also ``breakdown_s``, ``traffic_pages`` (the iteration the figures use) and,
    for Fig. 12, ``kernel_slowdown``.  Figs. 15 and 18 add an ``ideal`` row per workload
    (and point) from the Base UVM run's ideal time, as the published figures do; Fig. 17
    repeats FlashNeuron's run (which uses no host memory) at every host size, as the
    published figure does (``replicated_from``).
    """
    fig = FIGURES[name]
    rows = []
    for run in sweep.runs:
        rec = records.get(run.run_key)
        if rec is None:
            continue
        failed = bool(rec.get("failed"))
        t = math.inf if failed else _num(rec.get("time_s"))
        row = {"model": run.model, "batch": int(run.batch), "policy": run.policy}
        if fig.param:
            row[fig.param] = float(run.grid.get(fig.param_key, _default_param(run, fig.param_key)))
        row.update(time_s=t, ideal_time_s=rec.get("ideal_time_s"),
                   normalized_performance=0.0 if failed else rec.get("normalized_performance"),
                   failed=failed, failure_reason=rec.get("failure_reason"), error=rec.get("error"),
                   run_key=run.run_key, trace=run.trace)
        for k in ("breakdown_s", "traffic_pages", "kernel_slowdown"):
            if k in rec:
                row[k] = rec[k]
        rows.append(row)
    if fig.ideal_rows:
        seen = set()
        for r in list(rows):
            key = (r["model"], r["batch"], r.get(fig.param) if fig.param else None)
            if r["policy"] == "base-uvm" and key not in seen and r["ideal_time_s"] is not None:
                seen.add(key)
                ideal = {k: r[k] for k in ("model", "batch")}
                if fig.param:
                    ideal[fig.param] = r[fig.param]
                ideal.update(policy="ideal", time_s=float(r["ideal_time_s"]), ideal_time_s=r["ideal_time_s"],
                             normalized_performance=1.0, failed=False, failure_reason=None, error=None,
                             run_key=None, trace=r["trace"], derived_from=r["run_key"])
                rows.append(ideal)
    if name == "fig17":
        hosts: dict = {}
        for r in rows:
            if r["policy"] != "flashneuron":
                hosts.setdefault(r["model"], set()).add(r[fig.param])
        out = []
        for r in rows:
            if r["policy"] != "flashneuron":
                out.append(r)
                continue
            for h in sorted(hosts.get(r["model"], {r[fig.param]})):
                out.append(r if h == r[fig.param] else dict(r, **{fig.param: h, "replicated_from": r[fig.param]}))
        rows = out
    return rows


def _default_param(run, key: str):
    section, _, field_name = key.partition(".")
    return run.config[section][field_name]


def fig11_rows_from_records(sweep, records: dict) -> list[dict]:
    """Fig. 11 rows (``make_row``'s format) from store records; Ideal from Base UVM's ideal time."""
    rows = []
    for run in sweep.runs:
        rec = records.get(run.run_key)
        if rec is None:
            continue
        task = RunTask(run.model, run.batch, run.policy, run.trace_path, preset("g10-artifact"))
        rows.append(make_row(task, _num(rec.get("time_s")), rec.get("ideal_time_s") or 0.0, bool(rec.get("failed")),
                             rec.get("failure_reason") or rec.get("error"), (rec.get("meta") or {}).get("wall_s"),
                             None) | {"config_hash": run.config_hash})
        if run.policy == "base-uvm" and rec.get("ideal_time_s") is not None:
            ideal = RunTask(run.model, run.batch, "ideal", run.trace_path, preset("g10-artifact"))
            rows.append(make_row(ideal, rec["ideal_time_s"], rec["ideal_time_s"], False, None, None, None)
                        | {"config_hash": run.config_hash})
    order = {p: i for i, p in enumerate(FIG11_POLICIES)}
    models = {m: i for i, (m, _b) in enumerate(FIG11_WORKLOADS)}
    rows.sort(key=lambda r: (models.get(r["model"], 99), r["batch"], order.get(r["policy"], 99)))
    return rows


def reproduce_figure(name: str, out=None, *, traces_dir=None, jobs: int | None = None, dask: str | None = None,
                     progress: bool = True, config: SimConfig | None = None, models=None) -> list[dict]:
    """Run figure ``name``'s sweep into the store ``out`` (a temporary folder when None); its rows.

    Resumable: runs already in ``out`` (from this figure, another one, or ``all``) are
    not run again.  ``models``: only these workloads (``["bert_base-b256", ...]``).
    """
    import tempfile
    from dataclasses import replace as _replace

    from .sweep import ResultStore, run_sweep

    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; known: {', '.join(FIGURES)}")
    sweep = (_fig11_sweep(traces_dir=traces_dir, config=config) if name == "fig11"
             else figure_sweep(name, traces_dir=traces_dir, config=config))
    if models:
        names = {f"{r.model}-b{r.batch}" for r in sweep.runs}
        unknown = [m for m in models if m not in names]
        if unknown:
            raise ValueError(f"--models {unknown[0]!r}: not a workload of {name}; its workloads: "
                             f"{', '.join(sorted(names))}")
        sweep = _replace(sweep, runs=tuple(r for r in sweep.runs if f"{r.model}-b{r.batch}" in models))
    with contextlib.ExitStack() as stack:
        if out is None:
            out = stack.enter_context(tempfile.TemporaryDirectory(prefix=f"g10sim-{name}-"))
        run_sweep(sweep, out, jobs=jobs, dask=dask, progress=progress)
        records = ResultStore(out).records()
    return fig11_rows_from_records(sweep, records) if name == "fig11" else figure_rows(name, sweep, records)


def rows_from_store(name: str, out, *, traces_dir=None) -> tuple[list[dict], int]:
    """(figure ``name``'s rows from the store ``out``, how many of its runs are missing there)."""
    from .sweep import ResultStore

    sweep = _fig11_sweep(traces_dir=traces_dir) if name == "fig11" else figure_sweep(name, traces_dir=traces_dir)
    records = ResultStore(out).records()
    missing = sum(1 for r in sweep.runs if r.run_key not in records)
    rows = fig11_rows_from_records(sweep, records) if name == "fig11" else figure_rows(name, sweep, records)
    return rows, missing


def reproduce_all(out, *, traces_dir=None, jobs: int | None = None, dask: str | None = None,
                  progress: bool = True) -> dict:
    """The published simulator's whole evaluation (``all.toml``, 1,410 runs) into ``out``.

    Resumable.  Returns ``{figure: rows}`` for Figs. 11-19, built from the store.
    """
    from .sweep import run_sweep

    sweep = figure_sweep("all", traces_dir=traces_dir)
    run_sweep(sweep, out, jobs=jobs, dask=dask, progress=progress)
    return {name: rows_from_store(name, out, traces_dir=traces_dir)[0] for name in FIGURES}
