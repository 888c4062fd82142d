"""Wall time, CPU time and peak memory of ``g10sim reproduce llm`` (every policy on the LLM traces).

asv: ``ReproduceLlm`` runs the reproduction once per benchmark session (``setup_cache``: a fresh
``python -m g10core reproduce llm --no-progress --json FILE`` process with the default number of
workers, as a user runs it) and reports ``track_wall_s`` (its wall time; issue 44's budget: 45 s
on two cores), ``track_cpu_s`` (user + system CPU seconds of the process and its workers: what
the wall time is on an idle machine, whatever else shares the cores), ``track_peak_rss_MB`` (the
largest resident set of the driver or any worker) and the golden ``track_runs`` /
``track_runs_failed`` (rows, and rows that failed or were refused: a change is a change of the model).

Script::

    python bench/bench_llm.py [--jobs N] [--repeat N]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

try:
    from .bench_detailed import _ProcessUsage, measured        # asv: bench/ is a package
except ImportError:
    from bench_detailed import _ProcessUsage, measured         # a script: bench/ is on sys.path

BUDGET_WALL_S = 45.0         # issue 44: `g10sim reproduce llm` within 45 s wall on two cores


def command(jobs: int | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "g10core", "reproduce", "llm", "--no-progress"]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    return cmd


def reproduce(jobs: int | None = None) -> dict:
    """One ``reproduce llm`` in a fresh process: wall_s, cpu_s, peak_rss_MB and its rows."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "llm.json"
        out = measured(command(jobs) + ["--json", str(path)])
        if out["rc"] != 0:
            raise RuntimeError(f"reproduce llm: exit {out['rc']}\n{out['stdout']}\n{out['stderr']}")
        doc = json.loads(path.read_text())
    out["rows"] = doc["rows"] if isinstance(doc, dict) else doc
    return out


# ---- asv ----------------------------------------------------------------------------------

class ReproduceLlm(_ProcessUsage):
    timeout = 900

    def setup_cache(self):
        out = reproduce()
        return {k: out[k] for k in ("wall_s", "cpu_s", "peak_rss_MB", "rows")}

    def track_runs(self, cache):
        return len(cache["rows"])

    track_runs.unit = "runs"

    def track_runs_failed(self, cache):
        return sum(bool(r.get("failed")) for r in cache["rows"])

    track_runs_failed.unit = "runs"


# ---- script -------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: the command's default)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    print(f"# {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}: "
          f"{' '.join(command(args.jobs)[1:])}")
    for i in range(args.repeat):
        load = os.getloadavg()[0]
        out = reproduce(args.jobs)
        print(f"run {i}: {out['wall_s']:.2f} s wall, {out['cpu_s']:.2f} CPU s, {out['peak_rss_MB']:.0f} MB peak, "
              f"{len(out['rows'])} rows, load {load:.2f} before (budget {BUDGET_WALL_S:.0f} s wall)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
