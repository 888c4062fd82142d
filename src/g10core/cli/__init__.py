"""The ``g10sim`` command (also ``python -m g10core``).

One module per command group (``trace``, ``run``, ``hints``, ``reproduce``,
``report``, ``ssd``, ``config``, ``uvm-micro``, ``sweep``, ``plan``, ``policies``), each with a function
``add_parser(subparsers)`` that adds its sub-commands, each with
``set_defaults(func=...)``; the function gets the
parsed arguments and returns the exit status.  A new group is one module plus
one entry in :data:`COMMAND_GROUPS`.  Commands are thin: they parse, call a
library function the tests also call, and print.  Human output carries units;
``--json PATH|-`` writes the same numbers machine-readably (``-``: stdout only).
What the groups share (argument types, ``--json``, config options, exit codes)
is in :mod:`g10core.cli.common`, re-exported here.

No traceback reaches a user.  Bad input (a broken trace or config, a missing
file, an invalid value) prints one line ``g10sim: error: ...`` on stderr and
exits 2; a simulation that could not complete (``SimulationError``, or any
``RuntimeError`` out of a simulation) prints one line ``g10sim: simulation
failed: ...`` and exits 1; anything else is a bug in g10core: one line
``g10sim: internal error: ...`` naming a report file (traceback, command line,
version) under the system's temporary folder, and exit 3.  ``--debug`` (anywhere
on the command line; or ``G10SIM_TRACEBACK=1``) shows the traceback instead.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import traceback
import warnings

# g10sim does no linear algebra: numpy's OpenBLAS gets one thread, not one per core that
# spins ~0.1 s of CPU after numpy's import in every process (a sweep starts thousands).
# Set before numpy loads (g10core's __init__ does not import it); a user's setting stands.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .. import __version__
from . import config, hints, inference, machine, plan, policies, report, reproduce, run, ssd, sweep, trace, uvm_micro
from ..errors import G10Warning, SimulationError
from .common import (  # noqa: F401 (the helpers every command group uses, importable from here)
    EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INTERNAL, EXIT_OK, EXPECTED_ERRORS, OneLineParser, add_config_options,
    add_json_option, config_from_args, emit_json, fmt_bytes, fmt_seconds, human, nonnegative_int, one_line, policy_help,
    positive_float, positive_int, simulation_failures)

# One entry per command group; each adds its sub-commands to the top-level parser.
COMMAND_GROUPS = [
    trace.add_parser,
    run.add_parser,
    hints.add_parser,
    reproduce.add_parser,
    report.add_parser,
    ssd.add_parser,
    config.add_parser,
    uvm_micro.add_parser,
    sweep.add_parser,
    plan.add_parser,
    policies.add_parser,
    inference.add_parser,
    machine.add_parser,
]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="g10sim",
        description="g10core: a cycle-approximate simulator of a unified GPU memory and storage system "
                    "(G10, MICRO 2023).")
    parser.add_argument("--version", action="version", version=f"g10sim {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an error instead of one line (anywhere on the "
                             "command line; also G10SIM_TRACEBACK=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_group in COMMAND_GROUPS:
        add_group(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``g10sim`` with ``argv`` (default: the command line); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = _take_debug_flag(argv) or os.environ.get("G10SIM_TRACEBACK") == "1"
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors (argparse printed them)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", G10Warning)
            warnings.showwarning = _show_warning
            return int(args.func(args) or EXIT_OK)
    except KeyboardInterrupt:
        print("g10sim: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if isinstance(exc, BrokenPipeError):
            return _broken_pipe()
        if debug:
            raise
        if isinstance(exc, EXPECTED_ERRORS):
            print(f"g10sim: error: {one_line(exc)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if isinstance(exc, SimulationError):
            print(f"g10sim: simulation failed: {one_line(exc)}", file=sys.stderr)
            return EXIT_FAILURE
        print(f"g10sim: internal error: {type(exc).__name__}: {one_line(exc)}; this is a bug in g10core: "
              f"{_write_report(exc, argv)}; rerun with --debug to see the traceback", file=sys.stderr)
        return EXIT_INTERNAL


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A G10Warning as one line on stderr (others as Python prints them)."""
    if issubclass(category, G10Warning):
        print(f"g10sim: warning: {' '.join(str(message).split())}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _take_debug_flag(argv: list[str]) -> bool:
    """Remove every ``--debug`` before a ``--`` from ``argv``; was there one?"""
    end = argv.index("--") if "--" in argv else len(argv)
    found = "--debug" in argv[:end]
    argv[:end] = [a for a in argv[:end] if a != "--debug"]
    return found


def _write_report(exc: BaseException, argv: list[str]) -> str:
    """Write the traceback, command line and versions to a new file; returns what to tell the user."""
    text = "".join([
        "g10sim internal error report\n",
        f"version: g10core {__version__}\n",
        f"python: {platform.python_version()} ({sys.executable})\n",
        f"platform: {platform.platform()}\n",
        f"time: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}\n",
        f"cwd: {os.getcwd()}\n",
        f"argv: {['g10sim', *argv]!r}\n\n",
        *traceback.format_exception(exc),
    ])
    try:
        fd, path = tempfile.mkstemp(prefix="g10sim-crash-", suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
    except OSError as err:
        return f"could not write a report ({one_line(err)})"
    return f"a full report (traceback, command line, version) is in {path}"


def _broken_pipe() -> int:
    """The reader of our stdout went away (``| head``): stop quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_OK
