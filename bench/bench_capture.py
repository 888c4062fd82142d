"""Wall time and peak memory of capturing a training iteration (default: the ~7B LLaMA-style decoder).

    /usr/bin/time -v python bench/bench_capture.py [--family llama --size 7b --batch 8 --seq-len 2048]
                                                   [--repeat N] [--output FILE.h5] [--json FILE|-]

Each repeat is a fresh ``python`` process (its peak RSS is that capture's alone) that
imports g10core.capture, builds the model on the meta device and captures one iteration
(forward, loss, backward, AdamW step), then writes the trace.  Reported per repeat:
``capture_s`` (build + record + time model + validation), ``write_s``, ``process_s``
(the whole process, interpreter start and torch import included) and ``peak_rss_MB``
(``ru_maxrss``, 10^6 B).  The issue's budget for llama 7b at batch 8 x 2048: under 5
minutes and under 4 GB.  ``/usr/bin/time -v`` around the script gives the parent's own
numbers; the children's peaks are the ones printed.
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

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from g10core.capture import capture_family
from g10core.workload.trace import write_trace
import_s = time.perf_counter() - t0
family, size, batch, seq_len, out = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
t = time.perf_counter()
trace = capture_family(family, size, batch=batch, seq_len=seq_len)
capture_s = time.perf_counter() - t
t = time.perf_counter()
write_trace(trace, out)
write_s = time.perf_counter() - t
print(json.dumps({"import_s": import_s, "capture_s": capture_s, "write_s": write_s,
                  "n_kernels": trace.n_kernels, "n_tensors": trace.n_tensors, "n_accesses": trace.n_accesses,
                  "footprint_GiB": trace.footprint_bytes / 2**30, "ideal_time_s": trace.ideal_time_ns * 1e-9,
                  "n_parameters": trace.attrs["capture_n_parameters"],
                  "peak_rss_MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6}))
"""


def one(args, out: Path) -> dict:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(REPO / "src"), args.family, args.size,
                           str(args.batch), str(args.seq_len), str(out)], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"capture failed: exit {proc.returncode}\n{proc.stderr}")
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row["process_s"] = wall
    row["file_bytes"] = out.stat().st_size
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="llama")
    ap.add_argument("--size", default="7b")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=1, help="fresh processes; all are printed")
    ap.add_argument("--output", type=Path, help="keep the trace here (default: a temporary file)")
    ap.add_argument("--json", help="also write the rows as JSON to this file ('-': stdout)")
    args = ap.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = args.output or Path(tmp) / "capture.h5"
        for _ in range(args.repeat):
            rows.append(one(args, out))
    print(f"{args.family} {args.size}, batch {args.batch} x {args.seq_len} "
          f"({platform.processor() or platform.machine()}, python {platform.python_version()})")
    for r in rows:
        print(f"  capture {r['capture_s']:.1f} s, write {r['write_s']:.2f} s, process {r['process_s']:.1f} s, "
              f"peak RSS {r['peak_rss_MB']:.0f} MB; {r['n_kernels']} kernels, {r['n_tensors']} tensors, "
              f"{r['n_parameters']:,} parameters, footprint {r['footprint_GiB']:.1f} GiB, "
              f"ideal {r['ideal_time_s']:.1f} s, file {r['file_bytes'] / 1e3:.0f} kB")
    if args.json:
        text = json.dumps(rows, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
