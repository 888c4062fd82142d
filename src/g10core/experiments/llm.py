"""``g10sim reproduce llm``: every policy on the shipped LLM traces (captured GPT-2 and LLaMA-style
decoders), and its table.

The traces and what each one is (:data:`~g10core.capture.llm.LLM_WORKLOADS`: family, size, sequence
length, batch, precision, named machine) belong to the capture that records them
(:mod:`g10core.capture.llm`); running the policies on them is an experiment and lives here.
One of them runs on a named machine (:data:`MACHINES`: the Fuyou-style fine-tuning of a 13B model
on one 24 GiB GPU).  :func:`reproduce_llm` runs every registered policy on them (no torch needed)
and :func:`format_llm_table` prints the result.
"""
from __future__ import annotations

import math
from pathlib import Path

from ..capture.llm import LLM_WORKLOADS
from ..errors import CannotFit, InputError
from .published import FIG11_POLICIES, POLICY_LABELS

# Named machine settings a workload can run on (configuration overrides on top of the run's
# preset; they win over the same keys given with --set for that workload).
MACHINES: dict[str, dict] = {
    # Fuyou (Liao et al., "Adding NVMe SSDs to Enable and Accelerate 100B Model Fine-tuning on a
    # Single GPU", arXiv 2403.06504, 2024): fine-tuning on one consumer RTX 4090 (24 GiB, PCIe
    # Gen4 x16: the g10core.gpus row sets memory, SMs and link) with limited host memory and
    # NVMe SSDs.  As the brief of issue 35 sets it: 256 GiB of host memory and one SSD, the
    # preset's SSD (ssd.bandwidth_GBps = 3.2, the G10 paper's).
    "fuyou-rtx4090": {"gpu": {"model": "RTX-4090"}, "host": {"memory_GiB": 256.0}},
}


def llm_policies() -> tuple[str, ...]:
    """Every registered policy (:func:`g10core.policies.names`): the Fig. 11 ones first, in their order,
    then the others (those added since, plug-ins) by name."""
    from .. import policies as registry

    names = registry.names()
    return tuple([p for p in FIG11_POLICIES if p in names] + [p for p in names if p not in FIG11_POLICIES])


def machine_config(cfg, machine: str):
    """``cfg`` with the named machine's overrides (:data:`MACHINES`; "" : ``cfg`` itself)."""
    if not machine:
        return cfg
    if machine not in MACHINES:
        raise ValueError(f"machine {machine!r}: not a named machine; known: {', '.join(MACHINES)}")
    return cfg.with_overrides(MACHINES[machine])


def run_llm_task(task) -> dict:
    """One run of ``reproduce llm`` (a worker's entry point): :func:`~g10core.experiments.reproduce.run_task`,
    with a policy's refusal of the trace (a trace without the roles it needs: an ``InputError``) as a
    failed row whose ``refused`` is True, not an error that stops the others."""
    from .reproduce import make_row, run_task

    try:
        row = run_task(task)
        row["refused"] = False
    except CannotFit:
        raise
    except InputError as exc:
        from ..workload.slot_inputs import kernel_cycles
        from ..workload.trace import read_trace

        trace = read_trace(task.trace_path)
        ideal_s = int(kernel_cycles(trace, task.config.gpu.frequency_GHz)[0].sum()) / (
            task.config.gpu.frequency_GHz * 1e9)
        row = make_row(task, math.inf, ideal_s, True, str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                       None, None)
        row["refused"] = True
    return row


def llm_tasks(traces_dir=None, *, config=None, workloads=LLM_WORKLOADS, policies=None):
    """The runs of ``reproduce llm`` (checks that every trace and policy exists first); ``policies``
    None: every registered one (:func:`llm_policies`)."""
    from .. import policies as registry
    from ..config import DEFAULT_PRESET, preset
    from .reproduce import RunTask, default_traces_dir
    from ..simulator import Simulator

    # the paper published no LLM numbers: the exploration preset, not the published simulator's quirks
    cfg = preset(DEFAULT_PRESET) if config is None else config
    Simulator(cfg)
    policies = llm_policies() if policies is None else tuple(policies)
    traces_dir = default_traces_dir() if traces_dir is None else Path(traces_dir)
    for p in policies:
        try:
            registry.get(p)                          # (an unknown name: the known ones, and the closest)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
    missing = [str(traces_dir / w.file_name) for w in workloads if not (traces_dir / w.file_name).is_file()]
    if missing:
        raise FileNotFoundError(2, f"LLM trace file(s) missing ({len(missing)}; make them with "
                                   "`python -m g10core.capture.llm` (needs the capture extra))", missing[0])
    configs = {w.machine: machine_config(cfg, w.machine) for w in workloads}
    for c in configs.values():
        Simulator(c)
    return [RunTask(w.model, w.batch, p, str(traces_dir / w.file_name), configs[w.machine])
            for w in workloads for p in policies]


def reproduce_llm(traces_dir=None, *, jobs=None, progress=True, config=None, workloads=LLM_WORKLOADS,
                  policies=None) -> list[dict]:
    """Every policy (default: every registered one) on every shipped LLM trace; one row per run (as
    ``reproduce_fig11``, plus ``refused``: the policy refused the trace), with the trace's footprint,
    memory ratio against the run's GPU, sequence length, parameter count, precision and machine."""
    from .reproduce import run_tasks
    from ..workload.trace import read_trace, summarize

    tasks = llm_tasks(traces_dir, config=config, workloads=workloads, policies=policies)
    rows = run_tasks(tasks, jobs=jobs, progress=progress, desc="llm", runner=run_llm_task)
    machine_of = {w.file_name: w.machine for w in workloads}
    info = {}
    for t in tasks:
        if t.trace_path not in info:
            tr = read_trace(t.trace_path)
            s = summarize(tr, t.config.gpu.memory_GiB)
            info[t.trace_path] = {
                "footprint_GiB": s["footprint_GiB"],
                "memory_ratio_percent": s["memory_ratio_percent"],
                "seq_len": tr.attrs.get("capture_seq_len"),
                "n_parameters": tr.attrs.get("capture_n_parameters"),
                "calibration_version": tr.attrs.get("calibration_version"),
                "dtype": tr.attrs.get("capture_dtype"),
                "master_weights": tr.attrs.get("capture_master_weights", ""),
                "machine": machine_of.get(Path(t.trace_path).name, ""),
                "gpu_memory_GiB": t.config.gpu.memory_GiB,
            }
    for row in rows:
        row.update(info[row["trace"]])
    return rows


def format_llm_table(rows) -> str:
    """Seconds per iteration of every policy on every trace (ideal / time in brackets)."""
    order = []
    for r in rows:
        key = (r["model"], r["batch"])
        if key not in order:
            order.append(key)
    seen = []
    for r in rows:
        if r["policy"] not in seen:
            seen.append(r["policy"])
    policies = [p for p in FIG11_POLICIES if p in seen] + [p for p in seen if p not in FIG11_POLICIES]
    head = "| model | batch | M | " + " | ".join(POLICY_LABELS.get(p, p) for p in policies) + " |"
    lines = [head, "|" + "---|" * (3 + len(policies))]
    for model, batch in order:
        rs = {r["policy"]: r for r in rows if (r["model"], r["batch"]) == (model, batch)}
        any_r = next(iter(rs.values()))
        cells = []
        for p in policies:
            r = rs.get(p)
            if r is None:
                cells.append("-")
            elif r.get("refused"):
                cells.append("refused")
            elif r["failed"]:
                cells.append("fails")
            else:
                cells.append(f"{r['time_s']:.2f} s ({100 * r['normalized_performance']:.0f} %)")
        machine = any_r.get("machine")
        ratio = f"{any_r['memory_ratio_percent']:.0f} %" + (f" ({machine})" if machine else "")
        lines.append(f"| {model} | {batch} | {ratio} | " + " | ".join(cells) + " |")
    fails = sorted({(r["model"], r["batch"], r["policy"], bool(r.get("refused")), r["failure_reason"])
                    for r in rows if r["failed"]})
    if fails:
        lines.append("")
        lines += [f"- {m} b{b} {POLICY_LABELS.get(p, p)} {'refused' if ref else 'fails'}: {why}"
                  for m, b, p, ref, why in fails]
    return "\n".join(lines)
