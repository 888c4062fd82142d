"""``g10sim sweep``: run a sweep file into a results store; its status; its rows as CSV or Parquet.

    g10sim sweep FILE.toml --out DIR [--jobs N] [--dask local|ADDRESS] [--retry-errors]
    g10sim sweep status DIR [--json PATH|-]
    g10sim sweep export DIR -o FILE.csv|FILE.parquet

A malformed sweep file is refused (one line, exit 2) before anything runs.  Exit 1 when
a run raised an error (recorded in the store; the other runs went on).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .common import (EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, OneLineParser, add_gpu_option, add_json_option,
                     check_output_path, emit_json, human, positive_int)

# the status columns that are not grid values
_ROW_FIELDS = frozenset(("run_key", "trace", "model", "batch", "policy", "time_s", "ideal_time_s",
                         "normalized_performance", "failed", "failure_reason", "error"))


def add_run_options(f: argparse.ArgumentParser, *, out_required: bool) -> None:
    """--traces, --out, --jobs, --dask, --no-progress (sweep, reproduce figN, reproduce all)."""
    f.add_argument("--traces", metavar="DIR", help="where shipped trace names resolve (default: the shipped traces/)")
    f.add_argument("--out", metavar="DIR", required=out_required,
                   help="results store (resumable: runs already there are not run again)"
                        + ("" if out_required else "; default: a temporary folder"))
    f.add_argument("--jobs", type=positive_int, metavar="N", help="worker processes (default: number of CPUs)")
    f.add_argument("--dask", metavar="local|ADDRESS",
                   help="run on dask.distributed: 'local' starts a LocalCluster of --jobs workers, an address "
                        "(tcp://host:8786) joins a scheduler (needs the 'sweep' extra)")
    f.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _run_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="g10sim sweep", description="Run a sweep file into a results store.")
    p.add_argument("file", metavar="FILE.toml", help="sweep file (format: g10core.experiments.sweep)")
    add_run_options(p, out_required=True)
    add_gpu_option(p)
    p.add_argument("--retry-errors", action="store_true", help="run again the runs that raised an error")
    add_json_option(p)
    return p


def _status_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="g10sim sweep status",
                                description="Runs planned, done and failed in a store, one row per run.")
    p.add_argument("dir", metavar="DIR", help="the store (--out of g10sim sweep)")
    add_json_option(p)
    return p


def _export_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="g10sim sweep export",
                      description="Write a store's rows as CSV (or Parquet: a name ending in .parquet, needs "
                                  "pyarrow): the status columns, the grid values, then each run's best_iteration "
                                  "and its breakdown_*_s, traffic_*_pages, faults_*_pages, prefetched_*_pages, "
                                  "hinted_*_pages and refetched_*_pages (the columns of "
                                  "g10core.experiments.sweep.to_pandas).")
    p.add_argument("dir", metavar="DIR", help="the store")
    p.add_argument("-o", "--output", metavar="FILE", required=True,
                   help="CSV to write ('-': stdout), or Parquet when FILE ends in .parquet")
    return p


def _parse(parser: argparse.ArgumentParser, argv: list[str]):
    """(args, None), or (None, exit status) when argparse printed usage or help."""
    try:
        return parser.parse_args(argv), None
    except SystemExit as exc:
        return None, (exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT)


def print_status(st: dict, *, limit: int = 40) -> None:
    errors = sum(1 for r in st["rows"] if r.get("error"))
    print(f"{st['done']} of {st['total']} runs done, {st['failed']} failed ({errors} raised an error)")
    rows = st["rows"]
    if not rows:
        return
    grid = [k for k in rows[0] if k not in _ROW_FIELDS]
    pw = max([12] + [len(r["policy"]) for r in rows[:limit]])     # (a policy file's FILE.py:NAME is long)
    print(f"  {'trace':<22} {'policy':<{pw}}" + "".join(f" {k:>24}" for k in grid) + f" {'time_s':>12}  status")
    for r in rows[:limit]:
        if r.get("error"):
            state = "error: " + r["error"]
        else:
            state = "failed: " + (r.get("failure_reason") or "") if r["failed"] else "ok"
        t = "–" if r["time_s"] is None else f"{r['time_s']:.4f}"
        print(f"  {r['trace']:<22} {r['policy']:<{pw}}" + "".join(f" {str(r.get(k, '')):>24}" for k in grid)
              + f" {t:>12}  {state[:80]}")
    if len(rows) > limit:
        print(f"  ... {len(rows) - limit} more (--json - for all, or g10sim sweep export)")


def _cmd_status(argv) -> int:
    from ..experiments.sweep import sweep_status

    a, code = _parse(_status_parser(), argv)
    if a is None:
        return code
    st = sweep_status(a.dir)
    if human(a):
        print_status(st)
    emit_json(st, a.json_path)
    return EXIT_OK


def _cmd_export(argv) -> int:
    import tempfile

    from ..experiments.sweep import export, export_csv

    a, code = _parse(_export_parser(), argv)
    if a is None:
        return code
    if a.output == "-":
        with tempfile.TemporaryDirectory() as tmp:
            sys.stdout.write(Path(export_csv(a.dir, Path(tmp) / "rows.csv")).read_text())
    else:
        check_output_path(a.output, "-o")
        export(a.dir, a.output)
        print(f"wrote {a.output}")
    return EXIT_OK


def _cmd_run(argv) -> int:
    from ..experiments.reproduce import default_jobs
    from ..experiments.sweep import load_sweep, run_sweep

    a, code = _parse(_run_parser(), argv)
    if a is None:
        return code
    sweep = load_sweep(a.file, traces_dir=a.traces, gpu=a.gpu)   # refuses a malformed file before any run
    jobs = default_jobs() if a.jobs is None else a.jobs
    t0 = time.perf_counter()
    st = run_sweep(sweep, a.out, jobs=jobs, dask=a.dask, progress=not a.no_progress, retry_errors=a.retry_errors)
    wall = time.perf_counter() - t0
    errors = [r for r in st["rows"] if r.get("error")]
    if human(a):
        print(f"{sweep.name}: {st['done']} of {st['total']} runs done, {st['failed']} failed "
              f"({len(errors)} raised an error); {wall:.1f} s wall with {jobs} job(s); store {a.out}")
        for r in errors[:3]:
            print(f"  error: {r['trace']} {r['policy']}: {r['error']}")
    emit_json(st, a.json_path)
    return EXIT_FAILURE if errors else EXIT_OK


def _cmd_sweep(args) -> int:
    argv = list(args.sweep_args)
    if not argv:
        raise ValueError("give a sweep file (g10sim sweep FILE --out DIR), or 'status DIR' / 'export DIR -o FILE'")
    if argv[0] == "status":
        return _cmd_status(argv[1:])
    if argv[0] == "export":
        return _cmd_export(argv[1:])
    return _cmd_run(argv)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep", help="run a sweep file; its status; export its rows",
        description="g10sim sweep FILE.toml --out DIR [--jobs N] [--dask local|ADDRESS]: run every "
                    "(trace, policy, grid point) of a sweep file that DIR lacks (resumable; a malformed file "
                    "is refused before any run). g10sim sweep status DIR [--json -]: runs planned, done, failed "
                    "and one row per run. g10sim sweep export DIR -o rows.csv. Exit 1 when a run raised.")
    p.add_argument("sweep_args", nargs=argparse.REMAINDER, metavar="FILE|status|export ...")
    p.set_defaults(func=_cmd_sweep, json_path=None)
