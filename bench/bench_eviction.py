"""Eviction rules on the five Fig. 11 traces: faults and iteration time of base-uvm, deepum,
g10 and belady, and the user-score path (a numba callback) against the built-in Belady.

    python bench/bench_eviction.py [--json out.json]

For each trace: every policy's iteration time and faults (pages, the reported iteration
and the whole run), then ``--policy base-uvm --eviction farthest_next_use.py:score``:
its result must equal ``belady`` exactly; the wall time of both simulations (best of 2) and
the callback's compile time (first load, then from numba's cache) are printed.
"""
from __future__ import annotations

import argparse
import json
import time

TRACES = ["bert_base-b256", "vit-b1280", "inceptionv3-b1536", "resnet152-b1280", "senet154-b1024"]
POLICIES = ["base-uvm", "deepum", "g10", "belady"]


def faults(it):
    return sum(it.faults_pages.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--traces", nargs="*", default=TRACES)
    args = ap.parse_args()
    # imported here: asv imports every module of bench/ against older commits too
    from g10core.uvm import evictors
    from g10core.examples import path as example
    from g10core.simulator import Simulator

    spec = f"{example('farthest_next_use.py')}:score"
    t0 = time.perf_counter()
    rule = evictors.load_score_function(spec)
    load_s = time.perf_counter() - t0
    sim = Simulator("g10-artifact")
    rows = []
    for name in args.traces:
        path = name                                  # a shipped trace, by name
        for pol in POLICIES:
            r = sim.run(path, pol)
            row = {"trace": name, "policy": pol, "time_s": r.iteration_time_s,
                   "faults_reported_iteration": faults(r.iterations[r.reported_iteration]) if hasattr(r, "reported_iteration") else faults(min(r.iterations, key=lambda it: it.time_s)),
                   "faults_all_iterations": sum(faults(it) for it in r.iterations),
                   "wall_s": r.metadata["simulate_wall_s"]}
            rows.append(row)
            print(json.dumps(row))
        walls = {}
        results = {}
        for label, kw in (("belady", dict(policy="belady")),
                          ("user", dict(policy="base-uvm", eviction=rule))):
            best = None
            for _ in range(2):
                r = sim.run(path, kw["policy"], eviction=kw.get("eviction"))
                w = r.metadata["simulate_wall_s"]
                best = w if best is None else min(best, w)
            walls[label] = best
            results[label] = r
        same = all((a.time_s, a.faults_pages, a.traffic_pages) == (b.time_s, b.faults_pages, b.traffic_pages)
                   for a, b in zip(results["belady"].iterations, results["user"].iterations))
        row = {"trace": name, "user_equals_belady": same, "belady_wall_s": walls["belady"],
               "user_wall_s": walls["user"], "ratio": walls["user"] / walls["belady"]}
        rows.append(row)
        print(json.dumps(row))
    print(json.dumps({"callback_load_s": load_s, "compile_s": rule.compile_s}))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
