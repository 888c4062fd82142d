"""Benchmark of the figure reproductions (``g10sim reproduce figN`` / ``all``) on the sweep store.

    python bench/bench_sweeps.py                       # fig15 .. fig19, each into a fresh store
    python bench/bench_sweeps.py --figures fig19 --jobs 2
    python bench/bench_sweeps.py --all --out DIR       # the whole 1,410-run evaluation (resumable)
    python bench/bench_sweeps.py --from-store DIR      # only the accounting of a finished store

For each figure: wall time of the reproduction (fresh temporary store, ``--jobs`` local
worker processes), the CPU seconds its runs took (sum over workers), where they went
(planning, simulation, the rest: trace reading, setup, results), the slowest runs, the
CPU seconds per policy and model, the machine's load average before and after, and the
comparison with the published cells (worst cell).  ``--json FILE`` writes it all.
Wall time is recorded here, never asserted in a test.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from g10core.experiments import reproduce
from g10core.experiments.report import figure_cells, figure_summary, format_figure_summary  # noqa: E402
from g10core.experiments.sweep import ResultStore, run_sweep  # noqa: E402

FIGURES = ("fig15", "fig16", "fig17", "fig18", "fig19")
TARGET_S = {"fig15": 30, "fig16": 90, "fig17": 150, "fig18": 60, "fig19": 30, "all": 600}


def accounting(sweep, records) -> dict:
    """CPU seconds of a sweep's runs: total, by phase, by policy and model, the slowest runs."""
    recs = [records[r.run_key] for r in sweep.runs if r.run_key in records]
    cpu = [float(r.get("meta", {}).get("cpu_s") or 0.0) for r in recs]
    phases = defaultdict(float)
    by_policy, by_model = defaultdict(float), defaultdict(float)
    for r, c in zip(recs, cpu):
        ph = r.get("meta", {}).get("phases_s", {})
        run = ph.get("run", 0.0)
        phases["plan"] += ph.get("plan", 0.0)
        phases["simulate"] += ph.get("simulate", 0.0)
        phases["setup (trace, config)"] += ph.get("setup", 0.0)
        phases["rest of run (checks, results)"] += max(0.0, run - ph.get("plan", 0.0) - ph.get("simulate", 0.0))
        by_policy[r["policy"]] += c
        by_model[r["model"]] += c
    slow = sorted(zip(cpu, recs), key=lambda x: -x[0])[:8]
    return {
        "runs": len(recs), "cpu_s": round(sum(cpu), 2),
        "wall_phases_s": {k: round(v, 2) for k, v in phases.items()},
        "cpu_by_policy_s": {k: round(v, 2) for k, v in sorted(by_policy.items(), key=lambda x: -x[1])},
        "cpu_by_model_s": {k: round(v, 2) for k, v in sorted(by_model.items(), key=lambda x: -x[1])},
        "slowest": [{"trace": r["trace"], "policy": r["policy"], "grid": r.get("grid"), "cpu_s": c,
                     "wall_s": r.get("meta", {}).get("wall_s")} for c, r in slow],
        "longest_run_cpu_s": round(max(cpu), 2) if cpu else 0.0,
    }


def bench_figure(name: str, jobs: int, out: Path | None) -> dict:
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        store = Path(out) if out else Path(tmp)
        sweep = reproduce.figure_sweep(name)
        t0 = time.perf_counter()
        run_sweep(sweep, store, jobs=jobs, progress=sys.stderr.isatty())
        wall = time.perf_counter() - t0
        records = ResultStore(store).records()
        acc = accounting(sweep, records)
        summaries = {}
        for fig in (reproduce.FIGURES if name == "all" else [name]):
            rows, _missing = reproduce.rows_from_store(fig, store)
            summaries[fig] = figure_summary(fig, figure_cells(fig, rows))
    return {"figure": name, "jobs": jobs, "wall_s": round(wall, 2), "target_s": TARGET_S.get(name),
            "loadavg_before": load0, "loadavg_after": os.getloadavg(), **acc, "published": summaries}


def from_store(path: Path) -> dict:
    records = ResultStore(path).records()
    out = {}
    for name in (*FIGURES, "fig12", "fig13", "fig14", "all"):
        sweep = reproduce.figure_sweep(name)
        acc = accounting(sweep, records)
        acc["ideal_2_core_wall_s"] = round(max(acc["cpu_s"] / 2, acc["longest_run_cpu_s"]), 1)
        out[name] = acc
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--figures", nargs="+", default=list(FIGURES), choices=list(reproduce.SWEEP_FIGURES))
    ap.add_argument("--all", action="store_true", help="the whole evaluation (all.toml) instead")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", help="store folder for --all (default: a temporary one)")
    ap.add_argument("--from-store", metavar="DIR", help="only account the runs already in DIR, per figure")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    if args.from_store:
        result = from_store(Path(args.from_store))
        for name, acc in result.items():
            print(f"{name:>6}: {acc['runs']:5d} runs, {acc['cpu_s']:8.1f} CPU s (ideal on 2 cores "
                  f"{acc['ideal_2_core_wall_s']:.0f} s); by policy {acc['cpu_by_policy_s']}")
    else:
        result = []
        for name in (["all"] if args.all else args.figures):
            r = bench_figure(name, args.jobs, Path(args.out) if args.out else None)
            result.append(r)
            print(f"{name}: {r['wall_s']:.1f} s wall (target {r['target_s']} s) with {args.jobs} jobs, "
                  f"{r['runs']} runs, {r['cpu_s']:.1f} CPU s; load {r['loadavg_before'][0]:.1f} -> "
                  f"{r['loadavg_after'][0]:.1f}; phases {r['wall_phases_s']}")
            for s in r["published"].values():
                print("   " + format_figure_summary(s))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
