"""Benchmark of the TLB model (g10core.tlb): translation rate and the cost of sampling.

Cases:
* ``sweep``: full simulation (sample_modulus = 1) of the default hierarchy (108 SMs, 4 KiB
  pages) translating kernels that sweep cold tensors: every lookup misses both levels and
  walks, the worst case per lookup.  Rate = simulated lookups per second of CPU time.
* ``reuse``: full simulation, kernels over small tensors the L2 holds (L1/L2 hits).
* ``trace``: one iteration of a shipped trace (every kernel's tensors, t11 as duration),
  full simulation and/or the default sampling; prints the estimates beside the full
  result, and whether the full result lies within each sampled bound.

Usage: ``python bench/bench_tlb.py [--repeat 3] [--trace vit-b256 ...] [--full-trace] [--json -]``
Numbers are recorded in bench/README.md ("TLB model").
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from g10core.tlb import TLB, TLBSpec  # noqa: E402

FULL = dict(sample_modulus=1, sample_subsamples=1)


def bench_sweep(repeat: int, kernels: int = 20, pages: int = 400_000, page_size: int = 4096) -> dict:
    best = None
    for _ in range(repeat):
        tlb = TLB(TLBSpec(**FULL, page_size_bytes=page_size))
        core = tlb.core
        firsts = [np.array([k * pages * 2, k * pages * 2 + pages], np.int64) for k in range(kernels)]
        count = np.array([pages // 2, pages // 2], np.int64)
        t0 = time.process_time()
        for k in range(kernels):
            core.py_translate_kernel(k * 10**8, 10**7, firsts[k], count)
        dt = time.process_time() - t0
        best = dt if best is None else min(best, dt)
    s = tlb.stats()
    return {"case": f"sweep, {page_size // 1024} KiB pages (cold: every lookup walks)", "lookups": s["lookups"],
            "accesses": s["accesses"], "cpu_s": best, "lookups_per_s": s["lookups"] / best,
            "accesses_per_s": s["accesses"] / best, "walks": s["walks"]}


def bench_reuse(repeat: int, kernels: int = 400) -> dict:
    best = None
    rng = np.random.default_rng(0)
    sizes = rng.integers(200, 1500, 16)
    firsts = np.cumsum(np.concatenate(([0], sizes[:-1] + 64)))
    picks = [rng.choice(16, 3, replace=False) for _ in range(kernels)]
    for _ in range(repeat):
        tlb = TLB(TLBSpec(**FULL))
        core = tlb.core
        t0 = time.process_time()
        for k, p in enumerate(picks):
            core.py_translate_kernel(k * 10**6, 10**5, firsts[p].astype(np.int64), sizes[p].astype(np.int64))
        dt = time.process_time() - t0
        best = dt if best is None else min(best, dt)
    s = tlb.stats()
    return {"case": "reuse (small tensors, L1/L2 hits)", "lookups": s["lookups"], "cpu_s": best,
            "lookups_per_s": s["lookups"] / best, "l1_hit_rate": s["l1_hit_rate"],
            "l2_hit_rate": s["l2_hit_rate"]}


def run_trace(name: str, spec: TLBSpec) -> dict:
    from g10core.workload.trace import read_trace
    tr = read_trace(ROOT / "traces" / f"{name}.h5")
    first, pages = tr.tensor_first_page, tr.tensor_pages
    t11 = np.ceil(tr.kernel_time_ideal_ns * 1.2).astype(np.int64)
    off = tr.access_offsets
    per_kernel = [(first[tr.access_tensor[off[k]:off[k + 1]]].astype(np.int64),
                   pages[tr.access_tensor[off[k]:off[k + 1]]].astype(np.int64)) for k in range(tr.n_kernels)]
    tlb = TLB(spec)
    core = tlb.core
    now = 0
    t0 = time.process_time()
    for k, (f, c) in enumerate(per_kernel):
        added = core.py_translate_kernel(now, int(t11[k]), f, c)
        now += int(t11[k]) + added
    dt = time.process_time() - t0
    s = tlb.stats()
    simulated = sum(s["sampling"]["per_replica"]["lookups"]) // spec.sample_modulus
    return {"trace": name, "modulus": spec.sample_modulus, "subsamples": spec.sample_subsamples,
            "cpu_s": dt, "lookups_full": s["lookups"], "lookups_simulated": simulated,
            "ideal_cycles": int(t11.sum()), "stats": s}


KEYS = ("walks", "l2_hits", "latency_cycles", "walker_queue_cycles", "cycles_added")


def compare(full: dict, est: dict) -> dict:
    out = {}
    for k in KEYS:
        f, e, b = full["stats"][k], est["stats"][k], est["stats"]["bounds"][k]
        out[k] = {"full": f, "estimate": e, "bound": b, "within": abs(e - f) <= b,
                  "deviation": (e - f) / f if f else None}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trace", action="append", default=[], help="shipped trace name, e.g. vit-b256")
    ap.add_argument("--full-trace", action="store_true", help="also simulate each --trace fully and compare")
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--json", metavar="PATH", help="write results as JSON ('-': stdout)")
    a = ap.parse_args(argv)
    results = {"synthetic": [], "traces": []}
    if not a.skip_synthetic:
        for r in (bench_sweep(a.repeat), bench_sweep(a.repeat, page_size=65536), bench_reuse(a.repeat)):
            results["synthetic"].append(r)
            if a.json != "-":
                acc = f", {r['accesses_per_s'] / 1e6:.1f} M accesses/s" if "accesses_per_s" in r else ""
                print(f"{r['case']}: {r['lookups']:,} lookups, best {r['cpu_s']:.3f} s CPU, "
                      f"{r['lookups_per_s'] / 1e6:.1f} M lookups/s{acc}")
    for name in a.trace:
        est = run_trace(name, TLBSpec())
        entry = {"sampled": {k: v for k, v in est.items() if k != "stats"}}
        if a.json != "-":
            print(f"{name}: default sampling (modulus {est['modulus']}, {est['subsamples']} sub-samples): "
                  f"{est['cpu_s']:.2f} s CPU, {est['lookups_simulated']:,} of {est['lookups_full']:,} lookups "
                  f"simulated, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
        if a.full_trace:
            full = run_trace(name, TLBSpec(**FULL))
            entry["full"] = {k: v for k, v in full.items() if k != "stats"}
            entry["compare"] = compare(full, est)
            if a.json != "-":
                print(f"  full: {full['cpu_s']:.2f} s CPU ({full['lookups_full'] / full['cpu_s'] / 1e6:.1f} M/s)")
                for k, c in entry["compare"].items():
                    dev = "" if c["deviation"] is None else f" ({100 * c['deviation']:+.1f} %)"
                    print(f"  {k:20s} full {c['full']:.4g}  sampled {c['estimate']:.4g} +- {c['bound']:.2g}"
                          f"{dev}  {'within' if c['within'] else 'OUTSIDE'}")
        results["traces"].append(entry)
    if a.json:
        text = json.dumps(results, indent=1, default=float)
        if a.json == "-":
            print(text)
        else:
            Path(a.json).write_text(text)


if __name__ == "__main__":
    main()
