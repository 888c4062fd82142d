"""Wall time and peak memory of the detailed preset (far-fault handler, TLBs, PCIe, FTL).

asv: ``Detailed.time_run`` (``Simulator("detailed").run``) for deepum and g10 on
bert_base-b256 and vit-b1280 (the cheap cells; base-uvm and belady on the large traces take
minutes, see bench/README.md), ``Detailed.peakmem_run`` and ``Detailed.track_iteration_time_s``
(simulated seconds per iteration: a golden result, any change is a change of the model).

Script::

    python bench/bench_detailed.py [--traces T ...] [--policies P ...] [--json FILE]

Runs ``g10sim run TRACE --policy P --preset detailed`` (and ``--preset g10-artifact``) in a
fresh process per cell under ``/usr/bin/time -v`` and prints, per cell, both iteration times,
the detailed run's fault batches, wall and CPU (user + system) seconds, peak RSS and what it
misses of the budget: the closing table of bench/README.md ("Detailed preset, part 2").  The
budget: 10 s and 500 MB per detailed run on 2 cores.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

FIG11 = ["bert_base-b256", "vit-b1280", "inceptionv3-b1536", "resnet152-b1280", "senet154-b1024"]
POLICIES = ["base-uvm", "deepum", "g10", "belady", "flashneuron", "g10-gds", "g10-host"]
BUDGET_CPU_S = 10.0     # issue 15: each detailed Fig. 11 run within 10 s (user + system) and 500 MB
BUDGET_RSS_MB = 500.0


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
            "batches": fb.get("batches"), "breakdown_s": d.get("breakdown_s")}


def over_budget(row: dict) -> str:
    """What the detailed run ``row`` misses of the budget (BUDGET_CPU_S, BUDGET_RSS_MB), or "met"
    (a run refused or failed says so instead)."""
    if row["exit"] != 0:
        return "refused" if row["exit"] == 2 else f"exit {row['exit']}"
    missed = [name for name, over in (("time", row["cpu_s"] > BUDGET_CPU_S),
                                      ("memory", row["peak_rss_MB"] > BUDGET_RSS_MB)) if over]
    return " and ".join(missed) + " missed" if missed else "met"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", nargs="+", default=FIG11)
    ap.add_argument("--policies", nargs="+", default=POLICIES)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
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
