"""Speed of the SSD/FTL model (numbers recorded in bench/README.md, section "FTL").

    python bench/bench_ftl.py            # every case, a table
    python bench/bench_ftl.py --json -   # the same as JSON
    python bench/bench_ftl.py --quick    # the small cases only

For each case: a cold sequential fill, ``warmup`` passes of the workload (GC reaches steady
state), then ``measured`` timed passes of U single-page writes through the full model
(NVMe queue, link, write buffer, FTL, GC, flash timing; closed loop).  Reported: host page
writes per second of wall time and of CPU time, and flash page programs (host writes + GC
copies) per second.  Then the wall time of the default ``g10sim ssd`` run.
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from dataclasses import replace

import numpy as np

from g10core.ssd import SSD, ssd_preset
from g10core.ssdbench import run_microbenchmark

GiB = 1 << 30


def one_plane(gib):
    spec = ssd_preset("zssd")
    spec = replace(spec, n_channels=1, chips_per_channel=1, dies_per_chip=1, planes_per_die=1)
    return spec.with_user_capacity(int(gib * GiB))


CASES = [
    # name, spec factory, workload, overwrites to warm up, quick?
    ("1 plane, 1 GiB, uniform, OP 7 %", lambda: one_plane(1), "uniform", 3, True),
    ("zssd 8 GiB (g10sim ssd default), uniform, OP 7 %", lambda: ssd_preset("zssd").with_user_capacity(8 * GiB),
     "uniform", 3, True),
    ("zssd 8 GiB, uniform, OP 28 %",
     lambda: replace(ssd_preset("zssd"), overprovisioning=0.28).with_user_capacity(8 * GiB), "uniform", 3, True),
    ("zssd 8 GiB, hotcold 80/20, OP 12.5 %",
     lambda: replace(ssd_preset("zssd"), overprovisioning=0.125).with_user_capacity(8 * GiB), "hotcold", 3, True),
    ("zssd 8 GiB, sequential overwrite (GC, WAF 1)", lambda: ssd_preset("zssd").with_user_capacity(8 * GiB),
     "sequential", 2, True),
    ("zssd 64 GiB, uniform, OP 7 % (tables beyond L3)", lambda: ssd_preset("zssd").with_user_capacity(64 * GiB),
     "uniform", 2, False),
    ("mlc 64 GiB, uniform, OP 7 %", lambda: ssd_preset("mlc").with_user_capacity(64 * GiB), "uniform", 2, False),
]


def draw(kind, rng, U, n, state):
    if kind == "uniform":
        return rng.integers(0, U, n)
    if kind == "sequential":
        out = (state[0] + np.arange(n)) % U
        state[0] = int((state[0] + n) % U)
        return out
    hot = U // 5
    out = rng.integers(hot, U, n)
    h = rng.random(n) < 0.8
    out[h] = rng.integers(0, hot, int(h.sum()))
    return out


def run_case(name, make, kind, warmup, measured=2):
    spec = make()
    ssd = SSD(spec)
    U = ssd.logical_pages
    rng = np.random.default_rng(0)
    seq = [0]
    now = ssd.core.py_write(0, U, 0)
    for _ in range(warmup):
        now = ssd.run_pages(draw(kind, rng, U, U, seq), write=True, now=now)
    batches = [draw(kind, rng, U, U, seq) for _ in range(measured)]   # generated outside the timing
    ssd.reset_stats()
    w0, c0 = time.perf_counter(), time.process_time()
    for b in batches:
        now = ssd.core.run_pages(b, True, now, True)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    st = ssd.stats()
    return {
        "case": name, "logical_pages": U, "blocks_per_plane": spec.blocks_per_plane,
        "waf": st["waf"], "gc_count": st["gc_count"],
        "host_writes": st["host_write_pages"], "flash_programs": st["flash_program_pages"],
        "wall_s": wall, "cpu_s": cpu,
        "host_writes_per_s_wall": st["host_write_pages"] / wall,
        "host_writes_per_s_cpu": st["host_write_pages"] / cpu,
        "flash_programs_per_s_wall": st["flash_program_pages"] / wall,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the 64 GiB cases")
    ap.add_argument("--json", metavar="PATH|-", help="write the results as JSON")
    args = ap.parse_args(argv)
    rows = []
    for name, make, kind, warmup, quick in CASES:
        if args.quick and not quick:
            continue
        rows.append(run_case(name, make, kind, warmup))
        r = rows[-1]
        if args.json != "-":
            print(f"{r['case']:<52} WAF {r['waf']:6.3f}  host {r['host_writes_per_s_wall'] / 1e6:5.2f} M/s wall "
                  f"({r['host_writes_per_s_cpu'] / 1e6:5.2f} M/s cpu)  flash {r['flash_programs_per_s_wall'] / 1e6:6.2f} M/s",
                  flush=True)
    w0, c0 = time.perf_counter(), time.process_time()
    res = run_microbenchmark()
    default = {"wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0, "waf": res["waf"]}
    out = {
        "machine": f"{platform.processor() or platform.machine()}, {platform.system()} {platform.release()}, "
                   f"Python {platform.python_version()}",
        "cases": rows,
        "g10sim_ssd_default": default,
        "peak_rss_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if args.json == "-":
        json.dump(out, sys.stdout, indent=2)
        print()
    else:
        print(f"{'g10sim ssd (defaults)':<52} {default['wall_s']:.2f} s wall, {default['cpu_s']:.2f} s cpu "
              f"(WAF {default['waf']:.3f})")
        print(f"peak RSS {out['peak_rss_MiB']:.0f} MiB")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
