"""The ``g10sim`` command (also ``python -m g10core``).

One module per command group (``trace``, ``run``, ``hints``, ``reproduce``,
``report``, ``ssd``), each with a function ``add_parser(subparsers)`` that adds
its sub-commands, each with ``set_defaults(func=...)``; the function gets the
parsed arguments and returns the exit status.  A new group is one module plus
one entry in :data:`COMMAND_GROUPS`.  Commands are thin: they parse, call a
library function the tests also call, and print.  Human output carries units;
``--json PATH|-`` writes the same numbers machine-readably (``-``: stdout only).
What the groups share (argument types, ``--json``, config options, exit codes)
is in :mod:`g10core.cli.common`, re-exported here.

Bad input (a broken trace or config, a missing file, an invalid value) prints
one line ``g10sim: error: ...`` on stderr and exits 2, never a traceback; set
``G10SIM_TRACEBACK=1`` to see the traceback anyway.
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from . import hints, report, reproduce, run, ssd, trace
from .common import (  # noqa: F401 (the helpers every command group uses, importable from here)
    EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXPECTED_ERRORS, add_config_options, add_json_option, config_from_args,
    emit_json, fmt_bytes, fmt_seconds, human, nonnegative_int, one_line, policy_help, positive_float, positive_int)

# One entry per command group; each adds its sub-commands to the top-level parser.
COMMAND_GROUPS = [
    trace.add_parser,
    run.add_parser,
    hints.add_parser,
    reproduce.add_parser,
    report.add_parser,
    ssd.add_parser,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="g10sim",
        description="g10core: a cycle-approximate simulator of a unified GPU memory and storage system "
                    "(G10, MICRO 2023).")
    parser.add_argument("--version", action="version", version=f"g10sim {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_group in COMMAND_GROUPS:
        add_group(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``g10sim`` with ``argv`` (default: the command line); returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors (argparse printed them)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        return int(args.func(args) or EXIT_OK)
    except EXPECTED_ERRORS as exc:
        if isinstance(exc, BrokenPipeError):
            return _broken_pipe()
        if os.environ.get("G10SIM_TRACEBACK") == "1":
            raise
        print(f"g10sim: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("g10sim: interrupted", file=sys.stderr)
        return 130


def _broken_pipe() -> int:
    """The reader of our stdout went away (``| head``): stop quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_OK
