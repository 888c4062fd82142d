"""Where traces are found: the ones shipped inside the package, and trace names.

The 52 shipped traces live in the repository's top-level ``traces/`` folder and are package data
of every wheel and sdist (installed as ``g10core/workload/traces/``: ``setup.py`` maps the
package ``g10core.workload.traces`` to ``traces/``), so every installed copy has them: the 30
published workloads of the G10 evaluation, 5 physical twins of them and 17 captured LLMs.
Commands and :class:`~g10core.simulator.Simulator` take either a path or a *trace name*:
``bert_base-b256`` (or ``bert_base-b256.h5``) is looked up in

1. ``$G10_TRACES_DIR`` (a folder of ``<name>.h5`` files), when set: your own traces
   by name, or replacements for shipped ones;
2. the shipped traces.

A path that exists always wins over a name.  ``g10sim trace list`` lists the names.
"""
from __future__ import annotations

import errno
import os
from importlib import resources
from pathlib import Path

from ..errors import did_you_mean

ENV_TRACES_DIR = "G10_TRACES_DIR"
SUFFIX = ".h5"


def _shipped_candidates() -> list[Path]:
    """Where the shipped traces may lie, first match wins: package data beside this module (an install
    from a wheel or an sdist: ``g10core/workload/traces``), else the top-level ``traces/`` of the source
    checkout this module runs from (``PYTHONPATH=src``, or an editable install, whose g10core is the
    checkout's ``src/g10core``)."""
    here = Path(str(resources.files("g10core.workload")))
    candidates = [here / "traces"]
    if here.parent.parent.name == "src":        # <checkout>/src/g10core/workload
        candidates.append((here.parent.parent.parent / "traces").resolve())
    return candidates


def shipped_dir() -> Path:
    """The folder of the traces shipped with the package: ``g10core/workload/traces`` in an installed
    copy, the checkout's top-level ``traces/`` when g10core runs from a source tree."""
    candidates = _shipped_candidates()
    # (neither: an install without its data; trace names then fail to resolve, naming this folder)
    return next((folder for folder in candidates if folder.is_dir()), candidates[0])


def user_dir() -> Path | None:
    """``$G10_TRACES_DIR`` as a Path, or None when it is unset or empty."""
    value = os.environ.get(ENV_TRACES_DIR, "").strip()
    return Path(value).expanduser() if value else None


def search_dirs() -> list[Path]:
    """The folders a trace name is looked up in, first match wins."""
    dirs = [shipped_dir()]
    user = user_dir()
    if user is not None:
        dirs.insert(0, user)
    return dirs


def traces_dir() -> Path:
    """The folder traces are taken from by default: ``$G10_TRACES_DIR``, else the shipped one."""
    return user_dir() or shipped_dir()


def _names_in(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(p.name[:-len(SUFFIX)] for p in folder.iterdir() if p.name.endswith(SUFFIX) and p.is_file())


def shipped_traces() -> list[str]:
    """Names of the shipped traces, sorted (``bert_base-b1024``, ``bert_base-b128``, ...)."""
    return _names_in(shipped_dir())


def available_traces() -> dict[str, Path]:
    """Every trace name that resolves, with its file: ``$G10_TRACES_DIR`` first, then the shipped ones."""
    found: dict[str, Path] = {}
    for folder in search_dirs():
        for name in _names_in(folder):
            found.setdefault(name, folder / f"{name}{SUFFIX}")
    return dict(sorted(found.items()))


def _as_name(text: str) -> str | None:
    """``bert_base-b256`` or ``bert_base-b256.h5`` -> ``bert_base-b256``; None if not a bare name."""
    if not text or "/" in text or os.sep in text or (os.altsep and os.altsep in text):
        return None
    name = text[:-len(SUFFIX)] if text.endswith(SUFFIX) else text
    return name if name not in ("", ".", "..") else None


def find_trace(name: str) -> Path | None:
    """The file of trace ``name`` in the search folders, or None."""
    bare = _as_name(name)
    if bare is None:
        return None
    for folder in search_dirs():
        candidate = folder / f"{bare}{SUFFIX}"
        if candidate.is_file():
            return candidate
    return None


def resolve_trace(name_or_path) -> Path:
    """A trace file: an existing path as given, else the file of a trace name.

    Raises ``FileNotFoundError`` naming what was asked; for a bare name, also where names
    are looked up and how to list them.
    """
    text = os.fspath(name_or_path)
    path = Path(text)
    if path.exists():
        return path
    found = find_trace(text)
    if found is not None:
        return found
    if _as_name(text) is None:             # a path with folders: it names a file, not a trace
        raise FileNotFoundError(errno.ENOENT, "no such trace file", text)
    where = "the shipped traces" if user_dir() is None else f"${ENV_TRACES_DIR} ({user_dir()}) and the shipped traces"
    hint = did_you_mean(_as_name(text), available_traces())
    raise FileNotFoundError(
        errno.ENOENT,
        f"no such trace file, and no trace of that name in {where}{'; ' + hint if hint else ''} "
        "(`g10sim trace list` shows the names)",
        text)


def describe_traces() -> list[dict]:
    """One row per trace name (``available_traces``): what ``g10sim trace list`` prints.

    Keys: ``name``, ``path``, ``shipped`` (False: from ``$G10_TRACES_DIR``), ``model``,
    ``batch_size``, ``n_kernels``, ``n_tensors``, ``footprint_bytes``.  Each file is read
    and validated; a bad one raises its ``TraceError``.
    """
    from .trace import read_trace

    shipped = shipped_dir()
    rows = []
    for name, path in available_traces().items():
        t = read_trace(path)
        rows.append({"name": name, "path": str(path), "shipped": path.parent == shipped, "model": t.model,
                     "batch_size": int(t.batch_size), "n_kernels": t.n_kernels, "n_tensors": t.n_tensors,
                     "footprint_bytes": t.footprint_bytes})
    return rows
