"""Wall time and peak memory of one simulation per Fig. 11 trace and policy.

asv: ``Replay.time_run`` (``Simulator.run`` on a path: read, validation, hints, replay,
invariant checks, Result) for base-uvm, deepum and g10 on bert_base-b256 and
resnet152-b1280; ``Replay.peakmem_run``; ``Replay.track_peak_rss_MB`` (the run alone in a
fresh process, as the budget below counts it) and ``Replay.track_iteration_time_s`` (the
simulated seconds per iteration: a golden result, any change is a change of the model).

Script::

    python bench/bench_replay.py [--policies base-uvm deepum ideal] [--traces DIR] [--repeat N] [--json FILE]

Each run is a fresh ``python`` process (so its peak RSS is that run's alone) that
imports g10core, reads the trace and calls ``Simulator.run``.  Reported per run:
``run_s`` (the ``Simulator.run`` call; best of ``--repeat`` processes), ``process_s``
(the whole process, interpreter start and imports included) and ``peak_rss_MB``
(``ru_maxrss`` of the process, 10^6 B; largest over the repeats).  The budget: 2 s and
300 MB per run for base-uvm, deepum and ideal.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

# this checkout's traces, wherever its commit kept them (top-level traces/ since issue 44)
CHECKOUT_TRACES = next((p for p in (Path(__file__).resolve().parents[1] / d for d in ("traces", "src/g10core/workload/traces", "src/g10core/traces")) if p.is_dir()), Path("."))
FIG11_WORKLOADS = [("bert_base", 256), ("vit", 1280), ("inceptionv3", 1536), ("resnet152", 1280),
                   ("senet154", 1024)]


def trace_file(name: str) -> Path:
    """A shipped trace by name (the installed package's, else this checkout's copy)."""
    try:
        from g10core.workload.tracestore import resolve_trace
    except ImportError:                      # a commit before traces were package data
        return CHECKOUT_TRACES / f"{name}.h5"
    return resolve_trace(name)


CHILD = r"""
import json, resource, sys, time
from g10core.simulator import Simulator
path, policy = sys.argv[1], sys.argv[2]
sim = Simulator("g10-artifact")
t = time.perf_counter()
r = sim.run(path, policy)
run_s = time.perf_counter() - t
print(json.dumps({"run_s": run_s, "iteration_time_s": None if r.failed else r.iteration_time_s,
                  "failed": r.failed, "ticks": r.counters.get("ticks"),
                  "peak_rss_MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6}))
"""


def one(path: Path, policy: str) -> dict:
    """One run in a fresh process: its JSON line plus the process wall time."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), policy], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{path.name} {policy}: exit {proc.returncode}\n{proc.stderr}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = wall
    return out


# ---- asv ----------------------------------------------------------------------------------

class Replay:
    params = (["bert_base-b256", "resnet152-b1280"], ["base-uvm", "deepum", "g10"])
    param_names = ["trace", "policy"]
    number = 1
    repeat = (1, 5, 30.0)
    warmup_time = 0.0
    timeout = 300

    def setup(self, trace, policy):
        from g10core.simulator import Simulator

        self.path = trace_file(trace)
        self.sim = Simulator("g10-artifact")

    def time_run(self, trace, policy):
        self.sim.run(self.path, policy)

    def peakmem_run(self, trace, policy):
        self.sim.run(self.path, policy)

    def track_peak_rss_MB(self, trace, policy):
        return one(self.path, policy)["peak_rss_MB"]

    track_peak_rss_MB.unit = "MB"

    def track_iteration_time_s(self, trace, policy):
        return self.sim.run(self.path, policy).iteration_time_s

    track_iteration_time_s.unit = "simulated s"


# ---- script -------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", nargs="+", default=["base-uvm", "deepum", "ideal"])
    ap.add_argument("--traces", type=Path, help="folder of <model>-b<batch>.h5 (default: the shipped traces)")
    ap.add_argument("--repeat", type=int, default=3, help="processes per run; the best run_s is kept")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args(argv)

    print(f"# {platform.node()} {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"{'trace':<20} {'policy':<12} {'iter_s':>9} {'run_s':>7} {'process_s':>9} {'peak_RSS_MB':>11} "
          f"{'ticks (detailed/bulk/idle)':>28}")
    rows = []
    for model, batch in FIG11_WORKLOADS:
        name = f"{model}-b{batch}"
        path = args.traces / f"{name}.h5" if args.traces else trace_file(name)
        for policy in args.policies:
            runs = [one(path, policy) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r["run_s"])
            row = {"trace": path.name, "policy": policy, "iteration_time_s": best["iteration_time_s"],
                   "run_s": best["run_s"], "process_s": min(r["process_s"] for r in runs),
                   "peak_rss_MB": max(r["peak_rss_MB"] for r in runs), "ticks": best["ticks"]}
            rows.append(row)
            ticks = row["ticks"] or {}
            tick_txt = "/".join(str(ticks.get(k, "-")) for k in ("detailed", "bulk", "idle")) if ticks else "-"
            it = "fails" if row["iteration_time_s"] is None else f"{row['iteration_time_s']:.3f}"
            print(f"{path.stem:<20} {policy:<12} {it:>9} {row['run_s']:>7.2f} {row['process_s']:>9.2f} "
                  f"{row['peak_rss_MB']:>11.0f} {tick_txt:>28}", flush=True)
    worst_run = max(rows, key=lambda r: r["run_s"])
    worst_rss = max(rows, key=lambda r: r["peak_rss_MB"])
    print(f"slowest: {worst_run['trace']} {worst_run['policy']} {worst_run['run_s']:.2f} s; "
          f"largest: {worst_rss['trace']} {worst_rss['policy']} {worst_rss['peak_rss_MB']:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
