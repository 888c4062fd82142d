"""The shipped LLM traces (captured GPT-2 and LLaMA-style decoders) and ``g10sim reproduce llm``.

:data:`LLM_WORKLOADS` lists the captured traces shipped next to the G10-artifact ones:
GPT-2 small and medium and LLaMA-style decoders of 1.1B and 6.7B parameters, fp32 with
AdamW, at batch sizes and sequence lengths whose footprints span about 100 % to 2,000 %
of a 40 GiB GPU.  :func:`make_llm_traces` captures and writes them (needs torch);
:func:`reproduce_llm` runs every policy on them (no torch needed) and
:func:`format_llm_table` prints the result.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..experiments.published import FIG11_POLICIES, POLICY_LABELS


@dataclass(frozen=True)
class LLMWorkload:
    family: str
    size: str
    seq_len: int
    batch: int

    @property
    def model(self) -> str:
        """The trace's model name (also the file name without ``-b<batch>.h5``)."""
        return f"{self.family}-{self.size}-s{self.seq_len}"

    @property
    def file_name(self) -> str:
        return f"{self.model}-b{self.batch}.h5"


LLM_WORKLOADS: tuple[LLMWorkload, ...] = (
    LLMWorkload("gpt2", "small", 1024, 5),
    LLMWorkload("gpt2", "small", 1024, 16),
    LLMWorkload("gpt2", "medium", 1024, 8),
    LLMWorkload("gpt2", "medium", 1024, 16),
    LLMWorkload("llama", "1b", 2048, 2),
    LLMWorkload("llama", "1b", 2048, 4),
    LLMWorkload("llama", "7b", 2048, 1),
    LLMWorkload("llama", "7b", 2048, 3),
)


def make_llm_traces(out_dir=None, workloads=LLM_WORKLOADS, *, calibration=None, progress=None) -> list[Path]:
    """Capture every workload and write ``<out_dir>/<model>-b<batch>.h5`` (default: the shipped traces' folder)."""
    from ..experiments.reproduce import default_traces_dir
    from ..workload.trace import write_trace
    from .api import capture_family

    out_dir = default_traces_dir() if out_dir is None else Path(out_dir)
    paths = []
    for w in workloads:
        # the model name carries the sequence length: traces of one model at two lengths differ
        trace = capture_family(w.family, w.size, batch=w.batch, seq_len=w.seq_len, calibration=calibration,
                               name=w.model)
        paths.append(write_trace(trace, out_dir / w.file_name))
        if progress:
            progress(w, paths[-1])
    return paths


def llm_tasks(traces_dir=None, *, config=None, workloads=LLM_WORKLOADS, policies=FIG11_POLICIES):
    """The runs of ``reproduce llm`` (checks that every trace and policy exists first)."""
    from .. import policies as registry
    from ..config import DEFAULT_PRESET, preset
    from ..experiments.reproduce import RunTask, default_traces_dir
    from ..simulator import Simulator

    # the paper published no LLM numbers: the exploration preset, not the published simulator's quirks
    cfg = preset(DEFAULT_PRESET) if config is None else config
    Simulator(cfg)
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
    return [RunTask(w.model, w.batch, p, str(traces_dir / w.file_name), cfg) for w in workloads for p in policies]


def reproduce_llm(traces_dir=None, *, jobs=None, progress=True, config=None, workloads=LLM_WORKLOADS,
                  policies=FIG11_POLICIES) -> list[dict]:
    """Every policy on every shipped LLM trace; one row per run (as ``reproduce_fig11``), plus the
    trace's footprint, memory ratio, sequence length and parameter count."""
    from ..experiments.reproduce import run_tasks
    from ..workload.trace import read_trace, summarize

    tasks = llm_tasks(traces_dir, config=config, workloads=workloads, policies=policies)
    rows = run_tasks(tasks, jobs=jobs, progress=progress, desc="llm")
    info = {}
    for t in tasks:
        if t.trace_path not in info:
            tr = read_trace(t.trace_path)
            s = summarize(tr)
            info[t.trace_path] = {
                "footprint_GiB": s["footprint_GiB"],
                "memory_ratio_percent": s["memory_ratio_percent"],
                "seq_len": tr.attrs.get("capture_seq_len"),
                "n_parameters": tr.attrs.get("capture_n_parameters"),
                "calibration_version": tr.attrs.get("calibration_version"),
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
    policies = [p for p in FIG11_POLICIES if any(r["policy"] == p for r in rows)]
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
            elif r["failed"]:
                cells.append("fails")
            else:
                cells.append(f"{r['time_s']:.2f} s ({100 * r['normalized_performance']:.0f} %)")
        lines.append(f"| {model} | {batch} | {any_r['memory_ratio_percent']:.0f} % | " + " | ".join(cells) + " |")
    fails = sorted({(r["model"], r["batch"], r["policy"], r["failure_reason"]) for r in rows if r["failed"]})
    if fails:
        lines.append("")
        lines += [f"- {m} b{b} {POLICY_LABELS.get(p, p)} fails: {why}" for m, b, p, why in fails]
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m g10core.capture.llm [-o DIR]``: capture and write the shipped LLM traces."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m g10core.capture.llm", description=main.__doc__)
    p.add_argument("-o", "--output", help="folder (default: the shipped traces' folder)")
    args = p.parse_args(argv)

    def report(w, path):
        print(f"{path} ({w.family} {w.size}, seq {w.seq_len}, batch {w.batch})", flush=True)
    make_llm_traces(args.output, progress=report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
