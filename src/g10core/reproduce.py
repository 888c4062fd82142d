"""Reproduce the paper's figures: runs, rows, and the published numbers next to them.

``reproduce_fig11`` runs the five models of Fig. 11 at their batch size under the
seven policies (35 runs) in a pool of processes and returns one row per run::

    {"model", "batch", "policy", "trace", "time_s", "ideal_time_s",
     "normalized_performance", "published_s", "published_fails", "error_pct",
     "failed", "failure_reason", "wall_s", "peak_rss_MB", "config_hash"}

``time_s`` is the result's ``iteration_time_s`` (inf when the run failed: cannot
fit, host overflow, FlashNeuron out of memory); ``normalized_performance`` is
ideal / time (0 when failed); ``error_pct`` = 100 (time / published - 1) where a
published number exists.  Tables and the bar chart are in :mod:`g10core.report`.

Workers receive the trace *path*, the policy name and the (picklable, frozen)
configuration, never an open file; the parent is the only writer of any output.
"""
from __future__ import annotations

import concurrent.futures as cf
import math
import multiprocessing
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from . import tracestore
from .analysis import CannotFit
from .config import ARTIFACT_PRESET, SimConfig, preset
from .published import FAILS, FIG11_POLICIES, FIG11_WORKLOADS, published_seconds

# Relative cost of a run by policy, for scheduling the long runs first.
_POLICY_COST = {"deepum": 5.0, "base-uvm": 3.0, "g10": 3.0, "g10-gds": 1.0, "g10-host": 1.0,
                "flashneuron": 0.2, "ideal": 0.05}


def default_traces_dir() -> Path:
    """``$G10_TRACES_DIR``, else the traces shipped in the package (:mod:`g10core.tracestore`)."""
    return tracestore.traces_dir()


def trace_file(traces_dir, model: str, batch: int) -> Path:
    return Path(traces_dir) / f"{model}-b{int(batch)}.h5"


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


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
    from .simulator import Simulator

    sim = Simulator(task.config)
    try:
        r = sim.run(task.trace_path, task.policy)
        time_s, ideal_s = r.iteration_time_s, r.ideal_time_s
        failed, reason = r.failed, r.failure_reason
        wall, rss = r.metadata.get("wall_s"), r.metadata.get("peak_rss_MB")
    except CannotFit as exc:
        from .artifact_constants import kernel_cycles
        from .trace import read_trace

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


def _cost(task: RunTask) -> float:
    try:
        size = Path(task.trace_path).stat().st_size
    except OSError:
        size = 0
    return _POLICY_COST.get(task.policy, 1.0) * (size + 1)


def run_tasks(tasks: list[RunTask], *, jobs: int | None = None, progress: bool = True,
              desc: str = "runs") -> list[dict]:
    """Run ``tasks`` (in a process pool when jobs > 1); rows come back in task order."""
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
            for i in order:
                rows[i] = run_task(tasks[i])
                bar.set_postfix_str(f"{tasks[i].model} {tasks[i].policy}", refresh=False)
                bar.update()
        else:
            ctx = multiprocessing.get_context("spawn")    # no inherited threads or HDF5 state
            ex = cf.ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx,
                                        initializer=_worker_init)
            try:
                futures = {ex.submit(run_task, tasks[i]): i for i in order}
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
    from . import policies as registry
    from .simulator import Simulator

    cfg = preset(ARTIFACT_PRESET) if config is None else config
    Simulator(cfg)                                   # refuse a bad or unsupported config up front
    known = registry.names()
    for p in policies:
        if p not in known:
            raise ValueError(f"unknown policy {p!r}; known: {', '.join(known)}")
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
