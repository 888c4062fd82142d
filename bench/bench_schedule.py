"""Time the tensor vitality analysis and the G10 scheduler on the headline workloads.

asv: ``Schedule.time_plan`` (``g10core.policies.g10.plan``, analysis included) per
workload and variant (``g10`` = the artifact's prefetch_lru, ``gds`` = G10GDSSSD, ``host``
= G10GDSFULL), ``Schedule.time_analyze``, and the golden ``track_hints`` (rows of the
hint table) and ``track_greedy_steps``.

Script::

    python bench/bench_schedule.py [--repeat N] [--json FILE]

Prints, per workload and scheduler variant, the best-of-N wall time of
``analyze`` and of ``plan`` (analysis included; also its CPU time, which a busy
machine disturbs less), the greedy steps and the number of exact area sums the
cached keys needed.  The first call in the process (bert_base-256, g10) is
reported separately and excluded from the timings: it imports the compiled kernels
(``g10core.policies._g10sched``; there is no JIT compile) and warms the caches.  The traces are
the shipped ones (the converter's output of the published inputs, the same data).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

# this checkout's traces, wherever its commit kept them (top-level traces/ since issue 44)
CHECKOUT_TRACES = next((p for p in (Path(__file__).resolve().parents[1] / d for d in ("traces", "src/g10core/workload/traces", "src/g10core/traces")) if p.is_dir()), Path("."))
HEADLINE = [("bert_base", 256), ("vit", 1280), ("inceptionv3", 1536), ("resnet152", 1280), ("senet154", 1024)]
VARIANTS = ("g10", "gds", "host")


def load(model: str, batch: int):
    """A shipped trace (the installed package's, else this checkout's copy)."""
    from g10core.workload.trace import read_trace

    try:
        from g10core.workload.tracestore import resolve_trace
    except ImportError:                      # a commit before traces were package data
        return read_trace(CHECKOUT_TRACES / f"{model}-b{batch}.h5")
    return read_trace(resolve_trace(f"{model}-b{batch}"))


class Schedule:
    params = (["bert_base-b256", "resnet152-b1280", "senet154-b1024"], list(VARIANTS))
    param_names = ["trace", "variant"]
    repeat = (2, 5, 20.0)

    def setup(self, trace, variant):
        from g10core.config import preset

        model, batch = trace.split("-b")
        self.trace = load(model, int(batch))
        self.config = preset("g10-artifact")

    def time_plan(self, trace, variant):
        from g10core.policies.g10 import plan

        plan(self.trace, self.config, variant)

    def time_analyze(self, trace, variant):
        from g10core.workload.vitality import analyze

        analyze(self.trace)

    def track_hints(self, trace, variant):
        from g10core.policies.g10 import plan

        return int(plan(self.trace, self.config, variant).hints.size)

    track_hints.unit = "hints"

    def track_greedy_steps(self, trace, variant):
        from g10core.policies.g10 import plan

        return int(plan(self.trace, self.config, variant).stats["greedy_steps"])

    track_greedy_steps.unit = "steps"


def best_of(fn, repeat):
    """(best wall s, best CPU s of this process, result): CPU time is robust to a busy machine."""
    best, best_cpu, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, time.perf_counter() - t)
        best_cpu = min(best_cpu, time.process_time() - c)
    return best, best_cpu, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args(argv)
    from g10core.workload.vitality import analyze
    from g10core.config import preset
    from g10core.policies.g10 import plan

    cfg = preset("g10-artifact")
    traces = {(m, b): load(m, b) for m, b in HEADLINE}
    t = time.perf_counter()
    plan(traces[HEADLINE[0]], cfg)
    first_call = time.perf_counter() - t
    print(f"first call (kernel import + first plan): {first_call:.2f} s")

    rows = []
    print(f"{'workload':18s} {'K':>5s} {'I':>5s} {'analyze ms':>10s} {'variant':>7s} {'plan ms':>8s} "
          f"{'cpu ms':>7s} {'steps':>6s} {'sums':>6s} {'hints':>6s}")
    for (m, b), tr in traces.items():
        t_an, _, v = best_of(lambda: analyze(tr), args.repeat)
        for var in VARIANTS:
            t_pl, c_pl, s = best_of(lambda: plan(tr, cfg, var), args.repeat)
            row = dict(workload=f"{m}-{b}", kernels=tr.n_kernels, intervals=v.n_intervals,
                       analyze_ms=t_an * 1e3, variant=var, plan_ms=t_pl * 1e3, plan_cpu_ms=c_pl * 1e3,
                       greedy_steps=s.stats["greedy_steps"], area_sums=s.stats["area_sums_exact"],
                       hints=int(s.hints.size))
            rows.append(row)
            print(f"{row['workload']:18s} {tr.n_kernels:5d} {v.n_intervals:5d} {t_an * 1e3:10.1f} {var:>7s} "
                  f"{t_pl * 1e3:8.1f} {c_pl * 1e3:7.1f} {row['greedy_steps']:6d} {row['area_sums']:6d} "
                  f"{row['hints']:6d}")
    print(f"all {len(rows)} schedules: {sum(r['plan_ms'] for r in rows) / 1e3:.2f} s wall, "
          f"{sum(r['plan_cpu_ms'] for r in rows) / 1e3:.2f} s CPU")
    if args.json:
        Path(args.json).write_text(json.dumps({"first_call_s": first_call, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
