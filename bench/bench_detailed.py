"""Wall time, CPU time and peak memory of the detailed preset (far-fault handler, TLBs, PCIe, FTL).

asv: ``Detailed.time_run`` (``Simulator("detailed").run``) for deepum and g10 on
bert_base-b256 and vit-b1280 (the cheap cells), ``Detailed.peakmem_run`` and
``Detailed.track_iteration_time_s`` (simulated seconds per iteration: a golden result, any
change is a change of the model).

``DetailedFig11``: every page-level Fig. 11 run under ``detailed`` (the five Fig. 11 traces
under base-uvm, belady, deepum, g10 and ideal; the tensor-level policies are refused by the
preset), each as a user runs it: ``setup_cache`` runs ``python -m g10core run TRACE --policy P
--preset detailed --json F`` in a fresh process per cell, and ``track_cpu_s`` (user + system
CPU seconds: the budget's measure, what the wall time is on an idle core), ``track_wall_s``,
``track_peak_rss_MB`` and ``track_rss_over_table_MB`` (peak RSS less the FTL's table,
``counters.ssd.table_bytes.total``: the part the 500 MB budget bounds) report them;
``peakmem_run`` is asv's own peak memory of ``Simulator("detailed").run`` in its process, and
``track_iteration_time_s`` the golden result.  Issue 44's budget: Base UVM 30 CPU s, every
other policy (Belady included) 10 CPU s; 500 MB plus the FTL's table.

Script::

    python bench/bench_detailed.py [--traces T ...] [--policies P ...] [--json FILE]
    python bench/bench_detailed.py --budget [--traces T ...] [--policies P ...] [--json FILE]

The first runs ``g10sim run TRACE --policy P --preset detailed`` (and ``--preset g10-artifact``) in a
fresh process per cell under ``/usr/bin/time -v`` and prints, per cell, both iteration times,
the detailed run's fault batches, wall and CPU (user + system) seconds, peak RSS and what it
misses of the budget: the closing table of bench/README.md ("Detailed preset, part 2").
``--budget`` runs only the detailed cells (default: the page-level policies) and prints CPU s,
wall s, peak RSS, the FTL's table and the budget of each.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIG11 = ["bert_base-b256", "vit-b1280", "inceptionv3-b1536", "resnet152-b1280", "senet154-b1024"]
POLICIES = ["base-uvm", "deepum", "g10", "belady", "flashneuron", "g10-gds", "g10-host"]
PAGE_POLICIES = ["base-uvm", "belady", "deepum", "g10", "ideal"]   # the ones `detailed` runs (the others: exit 2)
BUDGET_CPU_S = 10.0     # issues 15, 37, 44: each detailed Fig. 11 run within 10 s (user + system) ...
BUDGET_BASE_UVM_CPU_S = 30.0   # ... but Base UVM, 30 s (issues 37, 44)
BUDGET_RSS_MB = 500.0   # plus the FTL's table (counters.ssd.table_bytes.total)


def budget_cpu_s(policy: str) -> float:
    """The CPU seconds a detailed Fig. 11 run of ``policy`` may take."""
    return BUDGET_BASE_UVM_CPU_S if policy == "base-uvm" else BUDGET_CPU_S


class Detailed:
    params = (["bert_base-b256", "vit-b1280"], ["deepum", "g10"])
    param_names = ["trace", "policy"]
    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0.0
    timeout = 300

    def setup(self, trace, policy):
        from g10core.simulator import Simulator

        self.sim = Simulator("detailed")

    def time_run(self, trace, policy):
        self.sim.run(trace, policy)

    def peakmem_run(self, trace, policy):
        self.sim.run(trace, policy)

    def track_iteration_time_s(self, trace, policy):
        return self.sim.run(trace, policy).iteration_time_s

    track_iteration_time_s.unit = "s"


def measured(cmd: list[str]) -> dict:
    """Run ``cmd`` in a fresh process: exit code, wall s, CPU s (user + system, with the children
    it waited for) and peak RSS in MB (2^20 B, as /usr/bin/time's %M / 1024; the largest of the
    process and those children), from ``wait4``'s resource usage of that process alone."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"rc": proc.returncode, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
                "peak_rss_MB": usage.ru_maxrss / 1024, "stdout": out.read(), "stderr": err.read()}


def detailed_run(trace: str, policy: str) -> dict:
    """One ``g10sim run TRACE --policy P --preset detailed --json F`` in a fresh process: what
    :func:`measured` gives, the iteration time and the FTL's table in MB."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.json"
        row = measured([sys.executable, "-m", "g10core", "run", trace, "--policy", policy, "--preset",
                        "detailed", "--json", str(path)])
        doc = json.loads(path.read_text()) if path.exists() else {}
    table = ((doc.get("counters") or {}).get("ssd") or {}).get("table_bytes") or {}
    row.update(trace=trace, policy=policy, iteration_time_s=None if not doc or doc.get("failed") else
               doc["iteration_time_s"], table_MB=table.get("total", 0) / 2**20, load=os.getloadavg()[0])
    row["rss_over_table_MB"] = row["peak_rss_MB"] - row["table_MB"]
    if row["rc"] != 0:
        raise RuntimeError(f"{trace} {policy} --preset detailed: exit {row['rc']}\n{row['stderr']}")
    return row



class _ProcessUsage:
    """The wall time, CPU time and peak RSS of a measured process (:func:`measured`) that a
    benchmark class's ``setup_cache`` returns under those keys (asv skips this class: private)."""

    def track_wall_s(self, cache):
        return cache["wall_s"]

    track_wall_s.unit = "s"

    def track_cpu_s(self, cache):
        return cache["cpu_s"]

    track_cpu_s.unit = "CPU s"

    def track_peak_rss_MB(self, cache):
        return cache["peak_rss_MB"]

    track_peak_rss_MB.unit = "MB"

class DetailedFig11:
    """Every page-level Fig. 11 run under ``detailed`` (module docstring): each in a fresh process."""
    params = (FIG11, PAGE_POLICIES)
    param_names = ["trace", "policy"]
    number = 1
    repeat = 1
    warmup_time = 0.0
    timeout = 1800

    def setup_cache(self):
        return {f"{t} {p}": {k: v for k, v in detailed_run(t, p).items() if k not in ("stdout", "stderr")}
                for t in FIG11 for p in PAGE_POLICIES}

    def track_cpu_s(self, cache, trace, policy):
        return cache[f"{trace} {policy}"]["cpu_s"]

    track_cpu_s.unit = "CPU s"

    def track_wall_s(self, cache, trace, policy):
        return cache[f"{trace} {policy}"]["wall_s"]

    track_wall_s.unit = "s"

    def track_peak_rss_MB(self, cache, trace, policy):
        return cache[f"{trace} {policy}"]["peak_rss_MB"]

    track_peak_rss_MB.unit = "MB"

    def track_rss_over_table_MB(self, cache, trace, policy):
        return cache[f"{trace} {policy}"]["rss_over_table_MB"]

    track_rss_over_table_MB.unit = "MB"

    def track_iteration_time_s(self, cache, trace, policy):
        return cache[f"{trace} {policy}"]["iteration_time_s"]

    track_iteration_time_s.unit = "simulated s"

    def peakmem_run(self, cache, trace, policy):
        from g10core.simulator import Simulator

        Simulator("detailed").run(trace, policy)


def cell(trace: str, policy: str, preset: str) -> dict:
    """One ``g10sim run`` in a fresh process under /usr/bin/time -v."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        proc = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "g10core", "run", trace, "--policy",
                               policy, "--preset", preset, "--json", str(out)], capture_output=True, text=True)
        wall = re.search(r"Elapsed \(wall clock\) time .*: (?:(\d+):)?(\d+):([\d.]+)", proc.stderr)
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
        user = re.search(r"User time \(seconds\): ([\d.]+)", proc.stderr)
        system = re.search(r"System time \(seconds\): ([\d.]+)", proc.stderr)
        d = json.loads(out.read_text()) if out.exists() else {}
    h, m, s = wall.groups()
    fb = (d.get("counters") or {}).get("fault_batches") or {}
    return {"trace": trace, "policy": policy, "preset": preset, "exit": proc.returncode,
            "iteration_time_s": None if not d or d.get("failed") else d["iteration_time_s"],
            "wall_s": int(h or 0) * 3600 + int(m) * 60 + float(s), "peak_rss_MB": int(rss.group(1)) / 1024,
            "cpu_s": float(user.group(1)) + float(system.group(1)),
            "batches": fb.get("batches"), "breakdown_s": d.get("breakdown_s"),
            "table_MB": (((d.get("counters") or {}).get("ssd") or {}).get("table_bytes") or {}).get("total", 0) / 2**20}


def over_budget(row: dict) -> str:
    """What the detailed run ``row`` misses of the budget (:func:`budget_cpu_s` CPU seconds,
    BUDGET_RSS_MB plus the FTL's table), or "met" (a run refused or failed says so instead)."""
    rc = row["exit"] if "exit" in row else row["rc"]
    if rc != 0:
        return "refused" if rc == 2 else f"exit {rc}"
    missed = [name for name, over in (("time", row["cpu_s"] > budget_cpu_s(row["policy"])),
                                      ("memory", row["peak_rss_MB"] - row.get("table_MB", 0) > BUDGET_RSS_MB))
              if over]
    return " and ".join(missed) + " missed" if missed else "met"


def budget_table(traces, policies) -> list[dict]:
    """``--budget``: each detailed cell once (:func:`detailed_run`), printed as a table."""
    rows = []
    print("| trace | policy | detailed s | CPU s | wall s | peak RSS MB | FTL table MB | load | budget |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for trace in traces:
        for policy in policies:
            r = detailed_run(trace, policy)
            rows.append({k: v for k, v in r.items() if k not in ("stdout", "stderr")})
            print(f"| {trace} | {policy} | {r['iteration_time_s']:.3f} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} | "
                  f"{r['peak_rss_MB']:.0f} | {r['table_MB']:.0f} | {r['load']:.2f} | "
                  f"{budget_cpu_s(policy):.0f} s: {over_budget(r)} |", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", nargs="+", default=FIG11)
    ap.add_argument("--policies", nargs="+", default=None)
    ap.add_argument("--budget", action="store_true", help="only the detailed cells, with CPU s and the budget")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.budget:
        rows = budget_table(args.traces, args.policies or PAGE_POLICIES)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        return 0
    args.policies = args.policies or POLICIES
    rows = []
    print("| trace | policy | g10-artifact s | detailed s | batches | wall s | CPU s | peak RSS MB | budget |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for trace in args.traces:
        for policy in args.policies:
            a, d = cell(trace, policy, "g10-artifact"), cell(trace, policy, "detailed")
            rows += [a, d]
            fmt = lambda x: "failed" if x is None else f"{x:.3f}"  # noqa: E731
            detailed = "refused" if d["exit"] == 2 else fmt(d["iteration_time_s"])
            print(f"| {trace} | {policy} | {fmt(a['iteration_time_s'])} | {detailed} | "
                  f"{d['batches'] if d['batches'] is not None else '-'} | {d['wall_s']:.1f} | {d['cpu_s']:.1f} | "
                  f"{d['peak_rss_MB']:.0f} | {over_budget(d)} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
