"""Wall time and peak memory of OPT-175B inference under every policy (issue 45's budget).

The run of issue 45: OPT-175B, prompt 512, 32 generated tokens, batch 64 (FlexGen's), one T4
16 GB (``g10sim trace inference --model opt-175b --prompt 512 --gen 32 --batch 64 --gpu T4``).
The page-level policies replay it with ``--gpu T4 --set run.iterations=2`` (a warm-up batch,
then the measured one), G10's tensor-level variants with ``--gpu T4``; the systems run each
OPT-175B cell of ``g10sim reproduce inference`` (FlexGen, FlexGen with compression, Accelerate
and ZeRO-Inference on FlexGen's T4, ZeRO-Inference on the A6000: each cell's own batch and
placement, its trace built in the run); FlexGen's policy search searches its placements and
batch sizes for the same model and lengths on the T4.  The budget: each run within 10 s and
1 GB on two cores, the search within 30 s.

asv: ``PageLevel.time_run`` and ``track_peak_rss_MB`` (base-uvm, deepum, belady, g10, and G10's
tensor-level variants g10-host and g10-gds), ``Systems.time_run`` (the OPT-175B cells),
``FlexGenSearch.time_search``.

Script::

    python bench/bench_inference.py [--repeat N] [--json FILE]

Each run is a fresh ``python`` process that builds the trace (or reads it from a temporary
file), then times the run alone: ``run_s`` (best of ``--repeat``), ``cpu_s`` (user + system of
that run) and ``peak_rss_MB`` (the process's ``ru_maxrss``, 10^6 B; largest over the repeats).
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL, PROMPT, GEN, BATCH, GPU = "opt-175b", 512, 32, 64, "T4"
PAGE_POLICIES = ["base-uvm", "deepum", "belady", "g10", "g10-host", "g10-gds"]   # Simulator.run's policies
MACHINE = "flexgen-t4"


def system_cells() -> dict:
    """The OPT-175B cells of the published inference tables, by a name for each."""
    from g10core.experiments.inference import CELLS

    return {f"{c.system} ({c.machine})": c for c in CELLS if c.model == MODEL}

CHILD = r"""
import json, resource, sys, time
kind, path, name = sys.argv[1], sys.argv[2], sys.argv[3]
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
if kind == "search":
    from g10core.inference.schedule import MACHINES
    from g10core.inference.search import search_flexgen
    c, t = cpu(), time.perf_counter()
    r = search_flexgen(name, int(sys.argv[4]), int(sys.argv[5]), MACHINES[sys.argv[6]])
    out = {"tokens_per_s": r.tokens_per_s}
elif kind == "page":
    from g10core.workload.trace import read_trace
    from g10core.config import resolve
    from g10core.simulator import Simulator
    trace = read_trace(path)
    sim = Simulator(resolve(sets=json.loads(sys.argv[4])))
    c, t = cpu(), time.perf_counter()
    r = sim.run(trace, name)
    out = {"tokens_per_s": r.inference.get("tokens_per_s"), "ticks": r.counters.get("ticks")}
else:
    from g10core.experiments.inference import CELLS, run_cell
    cell = [c for c in CELLS if c.model == "opt-175b" and f"{c.system} ({c.machine})" == name][0]
    c, t = cpu(), time.perf_counter()
    out = {"tokens_per_s": run_cell(cell)["tokens_per_s"]}
out.update(run_s=time.perf_counter() - t, cpu_s=cpu() - c,
           peak_rss_MB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6)
print(json.dumps(out))
"""


def page_sets(policy: str) -> list[str]:
    """The ``--set`` values of a Simulator run: the T4, and a warm-up batch at the page level
    (G10's tensor-level variants have no iterations to set)."""
    return ["gpu.model=T4"] + ([] if policy.startswith("g10-") else ["run.iterations=2"])


def write_trace_file(folder) -> Path:
    """Issue 45's OPT-175B trace, written to ``folder`` (0.5 s)."""
    from g10core.workload.llm import inference_trace
    from g10core.workload.trace import write_trace

    path = Path(folder) / f"{MODEL}-p{PROMPT}-g{GEN}-b{BATCH}-{GPU}.h5"
    write_trace(inference_trace(MODEL, PROMPT, GEN, BATCH, gpu=GPU), path)
    return path


def one(kind: str, path: Path | None, name: str) -> dict:
    """One run in a fresh process: its JSON line."""
    extra = ([str(PROMPT), str(GEN), MACHINE] if kind == "search"
             else [json.dumps(page_sets(name))] if kind == "page" else [])
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, str(path or ""), name, *extra],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} {name}: exit {proc.returncode}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---- asv ----------------------------------------------------------------------------------

class PageLevel:
    params = PAGE_POLICIES
    param_names = ["policy"]
    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0.0
    timeout = 600

    def setup_cache(self):
        return str(write_trace_file(tempfile.mkdtemp(prefix="g10-bench-inference-")))

    def setup(self, path, policy):
        from g10core.config import resolve
        from g10core.simulator import Simulator
        from g10core.workload.trace import read_trace

        self.trace = read_trace(path)
        self.sim = Simulator(resolve(sets=page_sets(policy)))

    def time_run(self, path, policy):
        self.sim.run(self.trace, policy)

    def track_peak_rss_MB(self, path, policy):
        return one("page", Path(path), policy)["peak_rss_MB"]

    track_peak_rss_MB.unit = "MB"


class Systems:
    try:
        params = list(system_cells())
    except ImportError:              # a commit without the inference tables
        params = []
    param_names = ["cell"]
    number = 1
    repeat = (1, 5, 30.0)
    warmup_time = 0.0
    timeout = 300

    def time_run(self, cell):
        from g10core.experiments.inference import run_cell

        run_cell(system_cells()[cell])


class FlexGenSearch:
    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0.0
    timeout = 300

    def time_search(self):
        from g10core.inference.schedule import MACHINES
        from g10core.inference.search import search_flexgen

        search_flexgen(MODEL, PROMPT, GEN, MACHINES[MACHINE])


# ---- script -------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="processes per run; the best run_s is kept")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args(argv)

    print(f"# {platform.node()} {platform.processor() or platform.machine()}, Python {platform.python_version()}; "
          f"{MODEL} prompt {PROMPT}, {GEN} tokens, batch {BATCH}, {GPU}")
    print(f"{'kind':<7} {'policy':<66} {'tokens/s':>9} {'run_s':>7} {'cpu_s':>7} {'peak_RSS_MB':>11}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="g10-bench-inference-") as folder:
        path = write_trace_file(folder)
        cases = ([("page", p) for p in PAGE_POLICIES] + [("system", c) for c in system_cells()]
                 + [("search", MODEL)])
        for kind, name in cases:
            t = time.perf_counter()
            runs = [one(kind, path, name) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r["run_s"])
            row = {"kind": kind, "policy": name, "tokens_per_s": best["tokens_per_s"], "run_s": best["run_s"],
                   "cpu_s": best["cpu_s"], "peak_rss_MB": max(r["peak_rss_MB"] for r in runs),
                   "runs_s": [r["run_s"] for r in runs], "ticks": best.get("ticks"),
                   "wall_all_s": time.perf_counter() - t}
            rows.append(row)
            tps = "-" if row["tokens_per_s"] is None else f"{row['tokens_per_s']:.4g}"
            print(f"{kind:<7} {name:<66} {tps:>9} {row['run_s']:>7.2f} {row['cpu_s']:>7.2f} "
                  f"{row['peak_rss_MB']:>11.0f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
