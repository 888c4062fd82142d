"""What every command group shares: argument types, ``--json``, exit codes, formatting.

Command modules import from here (not from the package), so the package can
import every command module without an import cycle.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..errors import ArtifactError, ConfigError, SimulationError, TraceError
from ..files import is_special_file, write_text_atomic
from ..workload.trace import GiB

EXIT_OK = 0
EXIT_FAILURE = 1        # a simulation that could not complete (a failed result, or SimulationError)
EXIT_BAD_INPUT = 2      # invalid input (also argparse's usage errors)
EXIT_INTERNAL = 3       # a bug in g10core: one line, and a report file with the traceback

# What a user can cause (exit 2); a SimulationError is exit 1; anything else is a bug (exit 3).
EXPECTED_ERRORS = (TraceError, ConfigError, ArtifactError, OSError, ValueError)


def number_arg(text: str, convert, what: str, ok, need: str):
    """An option's value, converted and checked, or the one-line argparse error.

    Parameters
    ----------
    text : str
        The value as given.
    convert : callable
        ``float``, ``int`` or another str -> value function raising ValueError on bad text.
    what : str
        What the value must be, for when ``convert`` refuses it ("a number").
    ok : callable
        value -> bool: whether the converted value is allowed.
    need : str
        The allowed range in words, for when ``ok`` refuses it ("must be > 0").

    Raises
    ------
    argparse.ArgumentTypeError
        ``'TEXT' is not WHAT`` or ``'TEXT': NEED``.
    """
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{text!r}: {need}")
    return value


def positive_float(text: str) -> float:
    return number_arg(text, float, "a number", lambda v: v > 0 and math.isfinite(v), "must be > 0")


def nonnegative_int(text: str) -> int:
    return number_arg(text, int, "an integer", lambda v: v >= 0, "must be >= 0")


def positive_int(text: str) -> int:
    return number_arg(text, int, "an integer", lambda v: v >= 1, "must be >= 1")


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, as every other bad input's (exit 2): the
    usage block argparse prints first is what --help shows."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


class Once(argparse.Action):
    """An option that takes one value: given twice with different values it is refused, naming both
    (argparse's default keeps the last silently, so ``--policy g10 --policy deepum`` ran deepum)."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = getattr(namespace, "_given_once", set())
        held = getattr(namespace, self.dest, None)
        if self.dest in seen and held != values:
            parser.error(f"{option_string} given twice ({held!r} and {values!r}); give one")
        seen.add(self.dest)
        namespace._given_once = seen
        setattr(namespace, self.dest, values)


def add_json_option(parser: argparse.ArgumentParser):
    parser.add_argument("--json", metavar="PATH|-", dest="json_path",
                        help="also write the results as JSON to PATH ('-': to stdout, instead of the text)")


def _jsonable(obj):
    if hasattr(obj, "item"):  # numpy scalar
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def emit_json(obj, dest: str | None) -> None:
    """Write ``obj`` as JSON to ``dest`` ('-' = stdout; a path is replaced atomically)."""
    if dest is None:
        return
    text = json.dumps(obj, indent=2, default=_jsonable, allow_nan=False) + "\n"
    if dest == "-":
        sys.stdout.write(text)
        return
    write_text_atomic(dest, text)


def check_output_path(path, option: str) -> None:
    """Refuse an output path that cannot be written, before any work: its folder must exist and be
    writable, and the path must not be a folder (``-``, stdout, is always fine)."""
    if path is None or str(path) == "-":
        return
    if not str(path).strip():
        raise ValueError(f"{option} '': give a file path")
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{option} {path}: is a folder; give a file path")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(2, f"{option}: no such folder", str(parent))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(13, f"{option}: folder not writable", str(parent))
    if p.exists() and not os.access(p, os.W_OK):
        raise PermissionError(13, f"{option}: file not writable", str(p))
    if not is_special_file(p):
        # the output goes to a temporary file beside it: try one (root passes os.access in
        # /proc or on a read-only file system, and would learn it only after the run)
        try:
            fd, probe = tempfile.mkstemp(dir=Path(os.path.realpath(p)).parent, prefix=".g10sim-probe.")
        except OSError as exc:
            raise OSError(exc.errno, f"{option}: cannot create a file in this folder ({exc.strerror})",
                          str(parent)) from None
        os.close(fd)
        os.unlink(probe)


# A run that takes longer than HEARTBEAT_FIRST_S prints a line on stderr, then one every
# HEARTBEAT_EVERY_S: the compiled replay runs in one call without the GIL, so a thread can report.
HEARTBEAT_FIRST_S = 5.0
HEARTBEAT_EVERY_S = 15.0


@contextmanager
def heartbeat(what: str, enabled: bool = True):
    """Print ``g10sim: still running WHAT (N s)`` on stderr while the block runs past a few seconds."""
    import threading
    import time

    if not enabled:
        yield
        return
    stop = threading.Event()
    t0 = time.perf_counter()

    def beat():
        wait = HEARTBEAT_FIRST_S
        while not stop.wait(wait):
            print(f"g10sim: still running {what} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
            wait = HEARTBEAT_EVERY_S

    th = threading.Thread(target=beat, name="g10sim-heartbeat", daemon=True)
    th.start()
    try:
        yield
    finally:
        stop.set()
        th.join(timeout=1.0)


def human(args) -> bool:
    """Print the text output? Not when the JSON goes to stdout."""
    return getattr(args, "json_path", None) != "-"


def fmt_bytes(n: int | float) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def fmt_seconds(s: float) -> str:
    if s >= 1.0 or s == 0.0:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.3f} us"


def one_line(exc: BaseException) -> str:
    """An exception as one line of text (an OSError as ``file: reason``)."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


@contextmanager
def simulation_failures(what: str):
    """A RuntimeError out of a simulation becomes a :class:`SimulationError` naming ``what``.

    The command line answers it with one line and exit 1 (the run could not complete),
    not as an internal error.  ``NotImplementedError`` and ``RecursionError`` stay bugs.
    """
    try:
        yield
    except (SimulationError, NotImplementedError, RecursionError):
        raise
    except RuntimeError as exc:
        raise SimulationError(f"{what}: {one_line(exc)}") from exc


# ---- configuration options (run, hints, reproduce, ...) ------------------------

def add_config_options(parser: argparse.ArgumentParser, default_preset: str | None = None) -> None:
    """--preset, --config FILE.toml, --set section.key=value (resolved in that order)."""
    from ..config import DEFAULT_PRESET, PRESETS

    default_preset = DEFAULT_PRESET if default_preset is None else default_preset
    g = parser.add_argument_group("configuration (preset, then --config, then --set)")
    g.add_argument("--preset", default=default_preset, metavar="NAME", action=Once,
                   help=f"named configuration to start from: {', '.join(PRESETS)} (default: {default_preset}; "
                        "g10-artifact reproduces the paper with its hand-tuned factors, default explores "
                        "without them)")
    g.add_argument("--config", metavar="FILE.toml", dest="config_file",
                   help="TOML overrides, e.g. '[gpu]\\nmemory_GiB = 80' (an unknown key is an error)")
    g.add_argument("--set", metavar="SECTION.KEY=VALUE", action="append", default=[], dest="sets",
                   help="one override, e.g. --set gpu.memory_GiB=80 (repeatable)")
    add_gpu_option(g)


def add_gpu_option(parser) -> None:
    """--gpu NAME: the same as --set gpu.model=NAME (an explicit --set or config key still wins)."""
    from ..gpus import GPUS

    parser.add_argument("--gpu", metavar="NAME", action=Once,
                        help="the GPU (g10core.gpus): " + ", ".join(GPUS) + "; sets its memory and PCIe link and "
                        "retargets the kernel times (same as --set gpu.model=NAME, which may not name another; "
                        "keys set explicitly win)")


def gpu_sets(args) -> list[str]:
    """``--set`` values with ``--gpu NAME`` first (so an explicit ``--set gpu.model`` still wins)."""
    gpu = getattr(args, "gpu", None)
    if gpu is not None:
        for item in getattr(args, "sets", None) or []:
            key, _, value = item.partition("=")
            if key.strip() == "gpu.model" and value.strip() != gpu:
                raise ConfigError(f"--gpu {gpu} and --set {item.strip()} name two GPUs; give one")
    return ([f"gpu.model={gpu}"] if gpu is not None else []) + list(getattr(args, "sets", None) or [])


def config_from_args(args):
    """The configuration that ``add_config_options``' arguments name."""
    from ..simulator import resolve_config

    return resolve_config(args.preset, args.config_file, gpu_sets(args))


def policy_help() -> str:
    """``--policy``'s help: the built-in policies by level, from the registry (g10sim policies lists
    them with what each does), then the plug-ins and ``FILE.py:NAME``."""
    from .. import policies
    from ..errors import is_outside

    policies.load_builtin()     # not the installed plug-ins: a broken one would warn at every --help
    by_level: dict[str, list[str]] = {}
    for name, cls in sorted(policies.REGISTRY.items()):
        if not is_outside(cls):
            by_level.setdefault(cls.level, []).append(name)
    groups = [f"{', '.join(by_level.pop(level))} ({level} level)" for level in ("page", "tensor")
              if level in by_level]
    groups += [", ".join(names) for names in by_level.values()]
    return ("; ".join(groups) + " (g10sim policies lists them with what each does); a policy an installed "
            "package adds (entry points g10core.policies); or FILE.py:NAME, a Policy subclass in a file (shipped "
            "example: prefetch_next_inputs.py:PrefetchNextInputs; docs/plugins.md)")
