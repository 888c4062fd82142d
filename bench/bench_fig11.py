"""Wall time of the whole Fig. 11 reproduction (`g10sim reproduce fig11`, 35 runs).

    python bench/bench_fig11.py [--jobs N] [--repeat N]

Runs the command as a user would, in a fresh process each time (interpreter start,
imports, worker start-up and numba cache loads included), with ``--no-progress``,
and prints the wall time of each repetition and the best.  The issue's budget:
under 60 s on a 2-core machine.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: the command's default)")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    cmd = [sys.executable, "-m", "g10core", "reproduce", "fig11", "--no-progress"]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    print(f"# {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}: {' '.join(cmd[1:])}")
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            out = Path(tmp) / f"fig11-{i}.json"
            t = time.perf_counter()
            proc = subprocess.run(cmd + ["--json", str(out)], capture_output=True, text=True)
            walls.append(time.perf_counter() - t)
            if proc.returncode != 0:
                print(proc.stdout, proc.stderr, sep="\n")
                return proc.returncode
            print(f"run {i}: {walls[-1]:.1f} s wall; " + proc.stdout.strip().splitlines()[-1], flush=True)
        last = proc.stdout
    summary = [line for line in last.splitlines() if line.startswith(("G10 reaches", "G10 is up to"))]
    print("\n".join(summary))
    print(f"best of {len(walls)}: {min(walls):.1f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
