"""Speed of the SSD/FTL model (numbers recorded in bench/README.md, section "FTL").

asv: ``FTL.time_write_pass`` (one pass of U single-page writes through the whole model on
a warmed-up device: 1 plane of 1 GiB, and the zssd preset at 1 GiB, uniform, OP 7 %),
``FTL.track_waf`` (golden: the write amplification of that pass) and
``SSDCommand.time_default_run`` (``g10sim ssd`` at its defaults, 8 GiB).

Script:

    python bench/bench_ftl.py            # every case, a table
    python bench/bench_ftl.py --json -   # the same as JSON
    python bench/bench_ftl.py --quick    # the small cases only
    python bench/bench_ftl.py --repeat 3 # each case 3 times: best and median (shared machines)
    python bench/bench_ftl.py --fingerprint before.json   # no timing: see below

For each case: a cold sequential fill, ``warmup`` passes of the workload (GC reaches steady
state), then ``measured`` timed passes of U single-page writes through the full model
(NVMe queue, link, write buffer, FTL, GC, flash timing; closed loop).  Reported: host page
writes per second of wall time and of CPU time, and flash page programs (host writes + GC
copies) per second.  Then the wall time of the default ``g10sim ssd`` run.  With ``--repeat N``
every case runs N times (each on a fresh device); the table shows the best run and the median
of the host rates, since other jobs on a shared machine only ever slow a run down.

``--fingerprint PATH`` times nothing: it runs small devices of every victim rule and frontier
mode through writes (open and closed loop, single- and multi-page), trims and reads, and
writes every counter, both latency histograms, hashes of the FTL tables and each plane's
state to PATH.  Run it before and after a change that is meant to be a pure speed-up and
compare the two files: they must be identical.  (The write buffer's bookkeeping, each plane's
``buf_*`` fields, is left out: pages leave it lazily, so how many still sit in a plane's ring is
not an observable; when they are admitted is, through the acknowledgement times.)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import platform
import resource
import sys
import time
from dataclasses import replace

import numpy as np

from g10core.ssd import SSD, SSDSpec, ssd_preset
from g10core.experiments.ssdbench import run_microbenchmark

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


class FTL:
    params = ["1 plane, 1 GiB", "zssd, 1 GiB"]
    param_names = ["device"]
    number = 1
    repeat = (1, 5, 30.0)
    warmup_time = 0.0

    def setup(self, device):
        spec = one_plane(1) if device.startswith("1 plane") else ssd_preset("zssd").with_user_capacity(GiB)
        self.ssd = SSD(spec)
        U = self.ssd.logical_pages
        rng = np.random.default_rng(0)
        now = self.ssd.core.py_write(0, U, 0)
        for _ in range(2):                                   # GC in steady state
            now = self.ssd.run_pages(rng.integers(0, U, U), write=True, now=now)
        self.now = now
        self.batch = rng.integers(0, U, U)
        self.ssd.reset_stats()

    def time_write_pass(self, device):
        self.ssd.core.run_pages(self.batch, True, self.now, True)

    def track_waf(self, device):
        self.ssd.core.run_pages(self.batch, True, self.now, True)
        return self.ssd.stats()["waf"]

    track_waf.unit = "WAF"


class SSDCommand:
    number = 1
    repeat = (1, 3, 30.0)
    warmup_time = 0.0
    timeout = 300

    def time_default_run(self):
        run_microbenchmark()


def _digest(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def _fingerprint_of(ssd) -> dict:
    snap = ssd.core.snapshot()
    hr, hw = ssd.core.histograms()
    out = {"stats": ssd.core.stats(), "read_hist": _digest(hr), "write_hist": _digest(hw),
           "idle_at": ssd.idle_at(), "channel_free": snap["channel_free"],
           "planes": [{k: v for k, v in pl.items() if not k.startswith("buf_")}
                      for pl in snap["planes"]]}
    for key in ("l2p", "p2l", "valid", "erases", "state", "next", "list_head"):
        out[key] = _digest(snap[key])
    return out


def fingerprint() -> dict:
    """Every observable result of a set of small runs (see the module docstring)."""
    out = {}
    for victim in ("greedy", "fifo", "random", "d-choices:4"):
        for frontier in ("separate", "shared"):
            for ppb in (7, 64):
                spec = SSDSpec(n_channels=2, chips_per_channel=1, dies_per_chip=2, planes_per_die=1,
                               blocks_per_plane=40, pages_per_block=ppb, overprovisioning=0.125,
                               victim_policy=victim, gc_frontier=frontier, seed=3,
                               write_buffer_bytes=64 * 4096, queue_depth=8)
                ssd = SSD(spec)
                U = ssd.logical_pages
                rng = np.random.default_rng(5)
                now = ssd.core.py_write(0, U, 0)
                for k in range(4):
                    now = ssd.run_pages(rng.integers(0, U, U), write=True, now=now, closed_loop=k % 2 == 0)
                    ssd.trim(int(rng.integers(0, U - 10)), 7)
                    now = ssd.core.py_write(int(rng.integers(0, U - 40)), 33, now)
                    now = ssd.core.py_read(int(rng.integers(0, U - 40)), 33, now)
                ssd.run_pages(rng.integers(0, U, U // 3), write=False, now=now)
                out[f"{victim}/{frontier}/{ppb}"] = _fingerprint_of(ssd)
    ssd = SSD(ssd_preset("zssd").with_user_capacity(GiB // 2))
    U = ssd.logical_pages
    rng = np.random.default_rng(0)
    now = ssd.core.py_write(0, U, 0)
    for _ in range(3):
        now = ssd.run_pages(rng.integers(0, U, U), write=True, now=now)
    out["zssd 0.5 GiB"] = _fingerprint_of(ssd)
    for workload in ("uniform", "hotcold:80/20", "sequential"):
        res = run_microbenchmark(capacity_GiB=0.25, overwrites=3, workload=workload)
        res.pop("wall_s")
        res.pop("simulated_page_writes_per_s")
        out[f"g10sim ssd {workload}"] = res
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the 64 GiB cases")
    ap.add_argument("--json", metavar="PATH|-", help="write the results as JSON")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="runs per case; the best is reported, with the median host rate (default: 1)")
    ap.add_argument("--fingerprint", metavar="PATH",
                    help="time nothing; write the model's results on small runs to PATH (compare builds)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    if args.fingerprint:
        with open(args.fingerprint, "w") as fh:
            json.dump(fingerprint(), fh, indent=1, sort_keys=True, default=str)
        return 0
    rows = []
    for name, make, kind, warmup, quick in CASES:
        if args.quick and not quick:
            continue
        runs = [run_case(name, make, kind, warmup) for _ in range(args.repeat)]
        r = max(runs, key=lambda x: x["host_writes_per_s_wall"])
        r = dict(r, runs=args.repeat,
                 median_host_writes_per_s_wall=float(np.median([x["host_writes_per_s_wall"] for x in runs])))
        rows.append(r)
        if args.json != "-":
            print(f"{r['case']:<52} WAF {r['waf']:6.3f}  host {r['host_writes_per_s_wall'] / 1e6:5.2f} M/s wall "
                  f"({r['host_writes_per_s_cpu'] / 1e6:5.2f} M/s cpu, median {r['median_host_writes_per_s_wall'] / 1e6:5.2f})"
                  f"  flash {r['flash_programs_per_s_wall'] / 1e6:6.2f} M/s", flush=True)
    defaults = []
    for _ in range(args.repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        res = run_microbenchmark()
        defaults.append({"wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0, "waf": res["waf"]})
    default = min(defaults, key=lambda x: x["wall_s"])
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
