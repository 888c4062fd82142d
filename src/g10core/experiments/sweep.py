"""Sweeps: grids of runs on local processes or a Dask cluster, with a resumable results store.

A **sweep file** (TOML) names traces, policies and configuration values::

    name = "ssd-bandwidth"
    preset = "default"                           # optional (default: the exploration preset, "default")
    traces = ["bert_base-b512", "my/trace.h5"]    # shipped trace names or paths
    policies = ["base-uvm", "g10"]               # names, or FILE.py:NAME (a Policy subclass in a file)
    record = ["kernel_slowdown"]                  # optional extras per run (see RECORDABLE)
    [set]                                         # fixed overrides, dotted config keys
    "link.bandwidth_GBps" = 32
    "host.bandwidth_GBps" = 32
    [grid]                                        # dotted config key -> values (the product is run)
    "ssd.bandwidth_GBps" = [6.4, 12.8, 19.2, 25.6, 32]

``[[block]]`` tables split a sweep into parts that differ (each may give ``traces``,
``policies``, ``set``, ``grid``, ``record`` and a ``name``; what a block leaves out it
inherits from the top level, ``set`` and ``grid`` key by key).  Dotted keys may be
written quoted (``"ssd.bandwidth_GBps" = ...``) or bare (``ssd.bandwidth_GBps = ...``).
:func:`load_sweep` refuses a malformed file before anything runs, with one line naming
the file, the key and its line: an unknown key or section, a value the configuration
refuses, an empty grid or grid list, a key both set and swept, an unknown policy or a
policy file that cannot give one, a missing or unreadable trace, a configuration the
simulator cannot run.  A policy ``FILE.py:NAME`` is found relative to the sweep file's
folder, then the working folder; its runs are keyed by the file's content (an edited
policy file runs again).

**Runs.**  Every run is (trace, policy, resolved configuration).  Its ``run_key`` hashes
the resolved configuration (``SimConfig.to_dict()``), the trace's content digest, the
policy and the g10core version: the same run in another sweep (or another folder name
for the trace) has the same key, and a new version of g10core runs everything again.

**Execution.**  :func:`run_sweep` is one loop over a ``concurrent.futures`` executor:
local processes by default (``jobs`` workers, spawned), the calling process for
``jobs=1``, or ``dask.distributed`` (``dask="local"`` starts a ``LocalCluster``; an
address joins a running scheduler; ``Client.get_executor()``; the ``sweep`` extra).  A
task carries the resolved configuration as a dict and the trace's path, never an open
file; it returns a small row.  The driver is the only writer of the store.  A worker
keeps the traces it has read and the page-level plans it has made (a plan does not
depend on ``noise.*``, which is applied after planning) for later tasks.  A run that
raises is recorded with its error and the sweep goes on; a tqdm bar on stderr shows
runs done, failed and the ETA.

**Store** (``DIR``): ``runs.jsonl`` holds one JSON object per finished run, appended
with a single ``write`` then ``flush`` and ``fsync``; ``plan.json`` the runs the last
sweep in ``DIR`` asked for (written atomically); ``.lock`` an exclusive ``flock`` held
by the one driver writing ``DIR``.  Why one appended file: a run is either wholly
in the file or not at all.  SIGKILL can stop the driver in the middle of a ``write``,
leaving a torn last line; readers ignore any line that does not parse, and the next
driver cuts the file back to its last complete line before appending, so the torn run
is simply missing and runs again.  A line counts once it is complete, and the driver
writes a run's line once, after the run finished, so a sweep killed at any point and
started again runs exactly what is missing and ends with every run present once.
(One file per run, written by rename, is as safe, but costs a file and a directory
entry per run and a directory scan per status; one file is also what ``status``,
``export`` and a ``tail -f`` want.)
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import csv
import fcntl
import hashlib
import io
import itertools
import json
import math
import multiprocessing
import os
import re
import signal
import socket
import sys
import time
import tomllib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..config import DEFAULT_PRESET, SECTIONS, ConfigError, SimConfig, preset
from ..errors import SweepError, did_you_mean  # noqa: F401 (SweepError: defined in errors.py; importable from here)
from ..files import read_text
from ..gpus import MODEL_KEYS
from ..results import MOVED_KEYS, finite_or_none, flat_columns, import_pandas
from ..workload import tracestore

PLAN_SCHEMA = "g10core-sweep-plan"
RECORD_SCHEMA_VERSION = 2     # 2: prefetched/hinted/refetched_pages of the best iteration
RUNS_FILE = "runs.jsonl"
PLAN_FILE = "plan.json"
LOCK_FILE = ".lock"

TOP_KEYS = ("name", "description", "preset", "traces", "policies", "set", "grid", "record", "block")
BLOCK_KEYS = ("name", "traces", "policies", "set", "grid", "record")
# extras a sweep may ask each run to record (beyond the always-present numbers)
RECORDABLE = {
    "kernel_slowdown": "per kernel of iteration 1 (the published Fig. 12's), time / ideal time",
}
# the columns of a status row besides the grid values (and of the CSV export)
ROW_FIELDS = ("run_key", "trace", "model", "batch", "policy", "time_s", "ideal_time_s",
              "normalized_performance", "failed", "failure_reason", "error")
# relative cost of a run by policy (times the trace's footprint), so that long runs start first
# (CPU seconds measured on the 1,410 published runs: G10's replay is 4-6x Base UVM's)
_POLICY_COST = {"g10": 5.0, "base-uvm": 1.0, "deepum": 0.7, "g10-gds": 0.5, "g10-host": 0.5,
                "flashneuron": 0.1, "ideal": 0.01}


# ============================================================================
# The sweep file
# ============================================================================

@dataclass(frozen=True)
class Run:
    """One run of a sweep (plain data; the task a worker gets is :meth:`task`).

    Attributes
    ----------
    run_key : str
        The run's identity (:func:`run_key`): configuration, trace digest, policy, version.
    trace, trace_path, trace_digest : str
        The trace as the sweep file names it, its resolved path and its content digest.
    model, batch, policy : str, int, str
        What runs.
    grid : dict
        Dotted key -> value: this run's grid point.
    config, config_hash : dict, str
        The resolved configuration and its hash.
    """

    run_key: str
    trace: str                 # as the sweep file names it (shipped name or path)
    trace_path: str            # resolved path
    trace_digest: str
    model: str
    batch: int
    policy: str
    grid: dict                 # dotted key -> value, the grid point of this run
    config: dict               # resolved SimConfig.to_dict()
    config_hash: str
    record: tuple = ()         # extras (RECORDABLE)
    block: str = ""
    cost: float = 1.0          # relative expected run time (for ordering only)
    policy_spec: str = ""      # a user's policy file: FILE.py:NAME with the file's absolute path

    def task(self) -> dict:
        return {"run_key": self.run_key, "trace": self.trace, "trace_path": self.trace_path,
                "trace_digest": self.trace_digest, "model": self.model, "batch": self.batch,
                "policy": self.policy, "policy_spec": self.policy_spec or self.policy, "grid": dict(self.grid),
                "config": self.config, "config_hash": self.config_hash, "record": list(self.record)}

    def plan_entry(self) -> dict:
        return {"run_key": self.run_key, "trace": self.trace, "model": self.model, "batch": self.batch,
                "policy": self.policy, "grid": dict(self.grid), "config_hash": self.config_hash,
                "record": list(self.record), "block": self.block}


@dataclass(frozen=True)
class Sweep:
    """A validated, expanded sweep: every run, in file order (duplicates dropped).

    Attributes
    ----------
    name, source, preset : str
        The sweep's name, its file, and the preset its runs start from.
    grid_keys : tuple of str
        Every dotted key any block sweeps, in order of appearance.
    runs : tuple of Run
        The runs.
    """

    name: str
    source: str                 # the file (or "<sweep>")
    preset: str
    grid_keys: tuple            # every dotted key any block sweeps, in order of appearance
    runs: tuple                 # of Run
    description: str = ""

    def __len__(self) -> int:
        return len(self.runs)


def run_key(config: dict, trace_digest: str, policy: str, version: str = __version__) -> str:
    """Identity of a run: hash of its resolved config, trace digest, policy and g10core version."""
    blob = json.dumps({"config": config, "trace_digest": trace_digest, "policy": policy, "version": version},
                      sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


def config_from_dict(d: dict) -> SimConfig:
    """Rebuild a :class:`SimConfig` from ``SimConfig.to_dict()`` (validated like any override).

    The keys that differ from the preset's own values are applied as overrides (a key left
    at its preset default, e.g. an FTL parameter meaning "the device's value", is not).
    """
    base = preset(d.get("preset", DEFAULT_PRESET))
    ref = base.to_dict()
    diff = {}
    for section, values in d.items():
        if not isinstance(values, dict):
            continue
        changed = {k: v for k, v in values.items() if ref.get(section, {}).get(k, object()) != v}
        if changed:
            diff[section] = changed
    if "model" in diff.get("gpu", {}):
        # the model's keys as recorded (a key the run set explicitly back to the preset's value would
        # otherwise take the model's value again)
        for key in MODEL_KEYS:
            section, name = key.split(".")
            if name in d.get(section, {}):
                diff.setdefault(section, {})[name] = d[section][name]
    cfg = base.with_overrides(diff) if diff else base
    if cfg.to_dict() != d:
        raise SweepError(f"a run's configuration does not rebuild to itself (g10core {__version__}): "
                         f"{json.dumps(d, sort_keys=True)[:200]}")
    return cfg


def default_traces_dir() -> Path:
    """``$G10_TRACES_DIR``, else the traces shipped in the package (:mod:`g10core.workload.tracestore`)."""
    return tracestore.traces_dir()


def default_jobs() -> int:
    """Worker processes by default: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)




def resolve_trace_name(name: str, base_dir: Path, traces_dir: Path | None) -> Path | None:
    """A path (absolute, or relative to the sweep file's folder, then the working folder)
    or a shipped trace name (``bert_base-b256`` -> ``<traces>/bert_base-b256.h5``); None if absent."""
    p = Path(name)
    candidates = [p] if p.is_absolute() else [base_dir / p, p]
    if "/" not in name:
        if traces_dir is not None:
            candidates.append(traces_dir / f"{name}.h5")
        found = tracestore.find_trace(name)      # $G10_TRACES_DIR, then the shipped traces
        if found is not None:
            candidates.append(found)
    for c in candidates:
        if c.is_file():
            return c
    return None


class _Text:
    """Finds the line of a key or value in a sweep file's text, for error messages."""

    def __init__(self, text: str | None):
        self.lines = (text or "").splitlines()

    def line_of(self, needle: str, *, key: bool = True) -> int | None:
        bare = needle.split(".")[-1] if key else needle
        pats = ([re.compile(r'^\s*"?' + re.escape(needle) + r'"?\s*='),
                 re.compile(r'^\s*' + re.escape(bare) + r'\s*=')] if key
                else [re.compile(re.escape(json.dumps(needle))), re.compile(re.escape(f"'{needle}'"))])
        for pat in pats:
            for i, line in enumerate(self.lines):
                if pat.search(line):
                    return i + 1
        return None


def _where(text: _Text, needle: str, *, key: bool = True) -> str:
    line = text.line_of(needle, key=key)
    return f" (line {line})" if line else ""


def _where_header(text: _Text, table: str) -> str:
    pat = re.compile(r"^\s*\[\s*(block\s*\.\s*)?" + re.escape(table) + r"\s*\]")
    for i, line in enumerate(text.lines):
        if pat.search(line):
            return f" (line {i + 1})"
    return ""


def _flatten(table: dict, prefix: str = "") -> dict:
    """``{"ssd": {"bandwidth_GBps": [..]}}`` and ``{"ssd.bandwidth_GBps": [..]}`` -> dotted keys."""
    out = {}
    for k, v in table.items():
        name = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict):
            out.update(_flatten(v, name))
        else:
            out[name] = v
    return out


def _nest(dotted: dict) -> dict:
    out: dict = {}
    for k, v in dotted.items():
        section, _, name = k.partition(".")
        out.setdefault(section, {})[name] = v
    return out


def load_sweep(path, *, traces_dir=None, base_config: SimConfig | None = None, gpu: str | None = None) -> Sweep:
    """Read, validate and expand a sweep file (:class:`SweepError` names what is wrong).

    Parameters
    ----------
    path : str or path
        The sweep file (TOML; the module docstring gives its keys).
    traces_dir : str or path, optional
        Where trace names resolve (default: ``$G10_TRACES_DIR``, then the shipped traces).
    base_config : SimConfig, optional
        Start from this configuration instead of the file's ``preset``.
    gpu : str, optional
        ``gpu.model`` of every run (``g10sim sweep --gpu``; a ``[set]`` or ``[grid]`` key wins).

    Returns
    -------
    Sweep

    Raises
    ------
    SweepError
        A malformed file, one line naming the file, the key and its line.
    """
    path = Path(path)
    try:
        text = read_text(path, "sweep file (TOML)", SweepError)
    except FileNotFoundError:
        raise SweepError(f"{path}: no such sweep file") from None
    except OSError as exc:
        raise SweepError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"{path}: not valid TOML: {exc}") from None
    return parse_sweep(doc, source=str(path), base_dir=path.parent, text=text, traces_dir=traces_dir,
                       base_config=base_config, gpu=gpu)


def parse_sweep(doc: dict, *, source: str = "<sweep>", base_dir=".", text: str | None = None,
                traces_dir=None, base_config: SimConfig | None = None, gpu: str | None = None) -> Sweep:
    """Validate and expand a parsed sweep document (see the module docstring).

    Parameters
    ----------
    doc : dict
        The parsed TOML.
    source : str
        The file's name, for messages; ``base_dir`` resolves relative trace paths and
        ``text`` (the file's text) gives messages their line numbers.

    Returns
    -------
    Sweep

    Raises
    ------
    SweepError
        What is wrong, naming the key.
    """
    from .. import policies as registry
    from ..config import check_level_supported
    from ..simulator import Simulator

    src = _Text(text)
    base_dir = Path(base_dir)
    traces_dir = None if traces_dir is None else Path(traces_dir)

    def fail(msg: str):
        raise SweepError(f"{source}: {msg}")

    for k in doc:
        if k not in TOP_KEYS:
            fail(f"unknown key {k!r}{_where(src, k)}; known: {', '.join(TOP_KEYS)}")
    for k in ("name", "description", "preset"):
        if k in doc and not isinstance(doc[k], str):
            fail(f"{k!r}{_where(src, k)} must be a string")
    if base_config is not None:
        base = base_config
    else:
        try:
            base = preset(doc.get("preset", DEFAULT_PRESET))
        except ConfigError as exc:
            fail(f"preset{_where(src, 'preset')}: {exc}")
    if gpu is not None:
        base = base.with_overrides({"gpu": {"model": gpu}})   # a ConfigError: bad input (exit 2), one line
    blocks_raw = doc.get("block")
    if blocks_raw is None:
        blocks_raw = [{}]
    elif not isinstance(blocks_raw, list) or not blocks_raw or not all(isinstance(b, dict) for b in blocks_raw):
        fail("'block' must be one or more [[block]] tables")
    top = {k: doc[k] for k in ("traces", "policies", "set", "grid", "record") if k in doc}
    known_policies = registry.names()
    policy_specs: dict[str, tuple[str, str]] = {}   # as written -> (what a worker loads, its name in run keys)

    def resolve_policy(p: str, where_block: str) -> tuple[str, str]:
        """A registered name, or ``FILE.py:NAME`` (relative to the sweep file's folder, then the
        working folder), loaded now so that a bad one is refused before anything runs."""
        if not registry.is_file_spec(p):
            if p not in known_policies:
                hint = did_you_mean(p, known_policies)
                fail(f"{where_block}: unknown policy {p!r}{_where(src, p, key=False)}; known: "
                     f"{', '.join(known_policies)}, or FILE.py:NAME" + (f"; {hint}" if hint else ""))
            return p, p
        path_text, _, class_name = p.rpartition(":")
        path = Path(path_text).expanduser()
        if not path.is_absolute() and (base_dir / path).is_file():
            path = base_dir / path
        spec = f"{path.resolve() if path.is_file() else path}:{class_name}"
        try:
            registry.get(spec)
        except ValueError as exc:
            reason = " ".join(str(exc).split())
            reason = reason[len(f"policy {spec}: "):] if reason.startswith(f"policy {spec}: ") else reason
            fail(f"{where_block}: policy {p!r}{_where(src, p, key=False)}: {reason}")
        # runs are keyed by the file's content, as traces are: an edited policy runs again
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        return spec, f"file:{digest}:{class_name}"

    trace_cache: dict[str, tuple] = {}
    runs: list[Run] = []
    seen: set[str] = set()
    grid_keys: list[str] = []
    configs_checked: set[str] = set()
    levels_checked: set[tuple[str, str]] = set()
    for bi, braw in enumerate(blocks_raw):
        label = f"[[block]] {bi + 1}" + (f" ({braw['name']})" if isinstance(braw.get("name"), str) else "")
        where_block = label if "block" in doc else "top level"
        for k in braw:
            if k not in BLOCK_KEYS:
                fail(f"{label}: unknown key {k!r}{_where(src, k)}; known: {', '.join(BLOCK_KEYS)}")
        b = dict(top)
        for k in ("traces", "policies", "record"):
            if k in braw:
                b[k] = braw[k]
        sets, grid = {}, {}
        for table_name, into in (("set", sets), ("grid", grid)):
            for part in (top.get(table_name), braw.get(table_name)):
                if part is None:
                    continue
                if not isinstance(part, dict):
                    fail(f"{where_block}: '{table_name}' must be a [{table_name}] table of dotted config keys")
                into.update(_flatten(part))
        empty_here = "grid" in braw and not braw["grid"]
        empty_top = "grid" in top and not top["grid"] and not grid
        if empty_here or empty_top:
            fail(f"{where_block}: empty grid{_where_header(src, 'grid')}: give at least one "
                 "'section.key' = [values], or leave [grid] out")
        # traces and policies
        traces = b.get("traces")
        if not isinstance(traces, list) or not traces or not all(isinstance(t, str) and t for t in traces):
            fail(f"{where_block}: 'traces'{_where(src, 'traces')} must be a non-empty list of trace names or paths")
        pols = b.get("policies")
        if not isinstance(pols, list) or not pols or not all(isinstance(p, str) for p in pols):
            fail(f"{where_block}: 'policies'{_where(src, 'policies')} must be a non-empty list of policy names")
        for p in pols:
            if p not in policy_specs:
                policy_specs[p] = resolve_policy(p, where_block)
        record = b.get("record", [])
        if not isinstance(record, list) or not all(isinstance(r, str) for r in record):
            fail(f"{where_block}: 'record'{_where(src, 'record')} must be a list of names")
        for r in record:
            if r not in RECORDABLE:
                fail(f"{where_block}: 'record' names {r!r}{_where(src, r, key=False)}; known: "
                     f"{', '.join(RECORDABLE)}")
        # set and grid: every key and value checked against the configuration
        for k in sets:
            if k in grid:
                fail(f"{where_block}: {k!r}{_where(src, k)} is both in [set] and in [grid]")
        for table_name, table in (("set", sets), ("grid", grid)):
            for k, v in table.items():
                section, dot, name = k.partition(".")
                if not dot or not name or "." in name:
                    fail(f"[{table_name}] key {k!r}{_where(src, k)}: expected section.key, e.g. host.memory_GiB")
                if section not in SECTIONS:
                    fail(f"[{table_name}] key {k!r}{_where(src, k)}: unknown config section {section!r}; "
                         f"known: {', '.join(SECTIONS)}")
                values = v if table_name == "grid" else [v]
                if table_name == "grid":
                    if not isinstance(v, list):
                        fail(f"[grid] {k!r}{_where(src, k)} must be a list of values")
                    if not v:
                        fail(f"[grid] {k!r}{_where(src, k)} is an empty list (empty grid)")
                    if len({json.dumps(x) for x in v}) != len(v):
                        fail(f"[grid] {k!r}{_where(src, k)} repeats a value")
                for x in values:
                    if isinstance(x, (list, dict)):
                        fail(f"[{table_name}] {k!r}{_where(src, k)}: values must be numbers, strings or booleans")
                    try:
                        base.with_overrides({section: {name: x}})
                    except ConfigError as exc:
                        fail(f"[{table_name}] {k!r}{_where(src, k)}: {exc}")
        try:
            block_base = base.with_overrides(_nest(sets)) if sets else base
        except ConfigError as exc:
            fail(f"{where_block}: [set]: {exc}")
        for k in grid:
            if k not in grid_keys:
                grid_keys.append(k)
        # traces: each read once (digest, model, batch, footprint)
        resolved = []
        for t in traces:
            if t not in trace_cache:
                p = resolve_trace_name(t, base_dir, traces_dir)
                if p is None:
                    hint = did_you_mean(t, tracestore.available_traces()) if "/" not in t else ""
                    fail(f"{where_block}: trace {t!r}{_where(src, t, key=False)} not found (a path, relative to "
                         f"the sweep file or the working folder, or a shipped name like bert_base-b256)"
                         + (f"; {hint}" if hint else ""))
                try:
                    trace_cache[t] = _trace_identity(p)
                except Exception as exc:  # noqa: BLE001 - any unreadable trace is bad input here
                    fail(f"trace {t!r}{_where(src, t, key=False)}: {' '.join(str(exc).split())}")
            resolved.append((t, *trace_cache[t]))
        keys = list(grid)
        points = [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))] if keys else [{}]
        block_name = braw.get("name", "") if isinstance(braw.get("name", ""), str) else ""
        for point in points:
            try:
                cfg = block_base.with_overrides(_nest(point)) if point else block_base
            except ConfigError as exc:
                fail(f"{where_block}: grid point {json.dumps(point)}: {exc}")
            if cfg.hash not in configs_checked:
                try:
                    Simulator(cfg)      # a configuration the simulator refuses, refused now
                except ConfigError as exc:
                    fail(f"{where_block}: grid point {json.dumps(point)}: {exc}")
                configs_checked.add(cfg.hash)
            for pol in pols:                # a policy the configuration cannot run (run refuses it)
                if (cfg.hash, pol) not in levels_checked:
                    try:
                        check_level_supported(cfg, registry.get(policy_specs[pol][0])(cfg))
                    except ConfigError as exc:
                        fail(f"{where_block}: " + (f"grid point {json.dumps(point)}: " if point else "") + str(exc))
                    levels_checked.add((cfg.hash, pol))
            cd = cfg.to_dict()
            for (tname, tpath, digest, model, batch, footprint) in resolved:
                for pol in pols:
                    key = run_key(cd, digest, policy_specs[pol][1])
                    if key in seen:
                        continue
                    seen.add(key)
                    runs.append(Run(run_key=key, trace=tname, trace_path=str(tpath), trace_digest=digest,
                                    model=model, batch=batch, policy=pol, grid=dict(point), config=cd,
                                    config_hash=cfg.hash, record=tuple(record), block=block_name,
                                    cost=_POLICY_COST.get(pol, 1.0) * (footprint + 1),
                                    policy_spec=policy_specs[pol][0] if policy_specs[pol][0] != pol else ""))
    name = doc.get("name") or Path(source).stem
    return Sweep(name=name, source=source, preset=base.preset, grid_keys=tuple(grid_keys), runs=tuple(runs),
                 description=doc.get("description", ""))


_IDENTITY_CACHE: dict = {}


def _trace_identity(path: Path) -> tuple:
    """(path, digest, model, batch, footprint bytes) of a trace file, cached by file identity."""
    from ..workload.hints import trace_digest
    from ..workload.trace import read_trace

    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _IDENTITY_CACHE:
        tr = read_trace(path)
        _IDENTITY_CACHE[key] = (path, trace_digest(tr), tr.model, int(tr.batch_size), tr.footprint_bytes)
    return _IDENTITY_CACHE[key]


# ============================================================================
# Workers
# ============================================================================

class WorkerCache:
    """What a worker process keeps between tasks: traces read, and page-level plans made.

    Traces are keyed by file identity (path, size, mtime); plans by (trace digest,
    policy, the configuration without ``noise.*``): a plan is made on the profiled
    times, the noise applies only to the simulation.  Both are small LRUs.
    """

    def __init__(self, traces: int = 8, plans: int = 64):
        self.traces: OrderedDict = OrderedDict()
        self.plans: OrderedDict = OrderedDict()
        self.max_traces, self.max_plans = traces, plans
        self.hits = {"trace": 0, "plan": 0}

    def trace(self, path: str):
        from ..workload.trace import read_trace

        st = os.stat(path)
        key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        if key in self.traces:
            self.traces.move_to_end(key)
            self.hits["trace"] += 1
            return self.traces[key]
        tr = read_trace(path)
        self.traces[key] = tr
        if len(self.traces) > self.max_traces:
            self.traces.popitem(last=False)
        return tr

    def policy(self, name: str, cfg: SimConfig, config: dict, digest: str):
        """The policy object, its ``hints`` memoised for this trace and plan-relevant config."""
        from .. import policies

        pol = policies.get(name)(cfg)
        if pol.level != "page" or not getattr(pol, "apply_hints", False):
            return pol
        plan_config = {k: v for k, v in config.items() if k != "noise"}
        key = (digest, name, json.dumps(plan_config, sort_keys=True))
        make = pol.hints
        cache = self

        def hints(trace):
            if key in cache.plans:
                cache.plans.move_to_end(key)
                cache.hits["plan"] += 1
                return cache.plans[key].copy()
            h = make(trace)
            cache.plans[key] = h.copy()
            if len(cache.plans) > cache.max_plans:
                cache.plans.popitem(last=False)
            return h

        pol.hints = hints
        return pol


_WORKER_CACHE: WorkerCache | None = None


def worker_cache() -> WorkerCache:
    """This process's cache (made on first use; each worker process has its own)."""
    global _WORKER_CACHE
    if _WORKER_CACHE is None:
        _WORKER_CACHE = WorkerCache()
    return _WORKER_CACHE



def execute_run(task: dict) -> dict:
    """Run one task and return its record (a worker's entry point).

    Never raises for a run's own failure: an exception is recorded as ``error``
    ("Type: message") with ``failed = true``.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    rec = {"run_key": task["run_key"], "trace": task["trace"], "model": task["model"],
           "batch": int(task["batch"]), "policy": task["policy"], "grid": task["grid"],
           "config_hash": task["config_hash"], "trace_digest": task["trace_digest"]}
    phases: dict = {}
    try:
        rec.update(_simulate(task, phases))
        rec["error"] = None
    except Exception as exc:  # noqa: BLE001 - recorded, the sweep goes on
        rec.update(time_s=None, ideal_time_s=None, normalized_performance=None, failed=True,
                   failure_reason=None, error=f"{type(exc).__name__}: {' '.join(str(exc).split())}")
    rec["meta"] = {"wall_s": round(time.perf_counter() - t0, 4), "cpu_s": round(time.process_time() - c0, 4),
                   "phases_s": phases, "worker": f"{socket.gethostname()}:{os.getpid()}",
                   "g10core_version": __version__, "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    rec["schema_version"] = RECORD_SCHEMA_VERSION
    return rec


def _simulate(task: dict, phases: dict) -> dict:
    """The numbers of one run; ``phases`` gets where its time went (seconds, for benchmarks)."""
    from ..workload.vitality import CannotFit
    from ..simulator import Simulator, run_kernel_cycles

    cache = worker_cache()
    t0 = time.perf_counter()
    cfg = config_from_dict(task["config"])
    trace = cache.trace(task["trace_path"])
    sim = Simulator(cfg)
    pol = cache.policy(task.get("policy_spec") or task["policy"], cfg, task["config"], task["trace_digest"])
    phases["setup"] = round(time.perf_counter() - t0, 4)
    try:
        r = sim.run(trace, pol)
        for key, phase in (("plan_wall_s", "plan"), ("simulate_wall_s", "simulate"), ("wall_s", "run")):
            if key in r.metadata:
                phases[phase] = round(r.metadata[key], 4)
    except CannotFit as exc:
        t11 = run_kernel_cycles(trace, cfg)[0]
        return {"time_s": None, "ideal_time_s": int(t11.sum()) / sim.constants.freq_hz,
                "normalized_performance": 0.0, "failed": True, "failure_reason": " ".join(str(exc).split())}
    out = {"time_s": finite_or_none(r.iteration_time_s), "ideal_time_s": float(r.ideal_time_s),
           "normalized_performance": 0.0 if r.failed else finite_or_none(r.normalized_performance),
           "failed": bool(r.failed), "failure_reason": r.failure_reason}
    best = r.best_iteration
    if best is not None:
        it = r.iterations[best]
        out.update(best_iteration=best, breakdown_s={k: float(v) for k, v in it.breakdown_s.items()},
                   traffic_pages={k: int(v) for k, v in it.traffic_pages.items()},
                   faults_pages={k: int(v) for k, v in it.faults_pages.items()},
                   **{m: {k: int(v) for k, v in getattr(it, m).items()} for m in MOVED_KEYS})
    if "kernel_slowdown" in task.get("record", ()) and not r.failed:
        out["kernel_slowdown"] = _kernel_slowdown(r, trace, cfg)
    return out


def _kernel_slowdown(r, trace, cfg) -> list:
    """Per kernel, time / ideal time: iteration 1 at page level (as the published Fig. 12 reads
    ``sim_result.kernel``), the one iteration at tensor level; rounded to 7 significant digits."""
    import numpy as np

    from ..simulator import run_kernel_cycles

    t11 = run_kernel_cycles(trace, cfg)[0].astype(np.float64)
    if r.level == "page":
        k = r.kernels
        sel = k["iteration"] == min(1, int(k["iteration"].max()))
        dur = (k["end_cycles"][sel] - k["start_cycles"][sel]).astype(np.float64)
        ideal = t11[k["kernel"][sel]]
    elif r.level == "tensor" and "time_s" in r.kernels:
        dur = np.asarray(r.kernels["time_s"], np.float64)
        ideal = t11 / float(int(cfg.gpu.frequency_GHz * 1e9))
    else:
        return []
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(ideal > 0, dur / ideal, np.nan)
    return [None if not math.isfinite(x) else float(f"{x:.7g}") for x in s.tolist()]


def _worker_init():
    # Ctrl-C goes to the whole process group: the driver decides, and stops us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a broken policy plug-in: the driver said so once when it read the sweep file
    import warnings

    from ..errors import G10Warning

    # a worker's runs share their configuration but the grid's keys: each warning once per worker, in
    # one line as the command line prints it (not Python's two-line form naming this file)
    warnings.filterwarnings("once", category=G10Warning)
    warnings.showwarning = _show_worker_warning
    warnings.filterwarnings("ignore", message="policy plug-in", category=G10Warning)   # (first: inserted last)


def _show_worker_warning(message, category, filename, lineno, file=None, line=None):
    import warnings

    from ..errors import G10Warning

    if issubclass(category, G10Warning):
        print(f"g10sim: warning: {' '.join(str(message).split())}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


# ============================================================================
# The store
# ============================================================================

class ResultStore:
    """A sweep's folder: ``runs.jsonl`` (append-only), ``plan.json``, ``.lock`` (module docstring).

    ``ResultStore(DIR, writer=True)`` takes the folder's lock (a second driver is
    refused) and repairs a torn last line; readers (``writer=False``) never write.

    Parameters
    ----------
    path : str or path
        The folder.
    writer : bool
        Open it to append (the one driver); a reader refuses a folder that is not a store.

    Raises
    ------
    SweepError
        Not a sweep folder (reader), or another driver holds it (writer).
    """

    def __init__(self, path, *, writer: bool = False):
        self.path = Path(path)
        self.writer = writer
        self._lock_fd = None
        self._fh = None
        if writer:
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock()
            self._repair()
        elif not self.path.is_dir():
            raise SweepError(f"{self.path}: no such sweep folder")
        elif not (self.path / PLAN_FILE).is_file() and not (self.path / RUNS_FILE).is_file():
            # (a folder of something else read as an empty store: "0 of 0 runs done", exit 0)
            raise SweepError(f"{self.path}: not a sweep folder (no {PLAN_FILE} or {RUNS_FILE}; "
                             "g10sim sweep FILE.toml --out DIR makes one)")

    # ---- writer side ----
    def _lock(self):
        fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SweepError(f"{self.path}: another sweep is writing this folder (its lock {LOCK_FILE} is held)") \
                from None
        self._lock_fd = fd

    def _repair(self):
        """Cut a torn last line (a driver killed inside a write) so appends start on a fresh line."""
        f = self.path / RUNS_FILE
        if not f.exists():
            return
        with open(f, "rb+") as fh:
            data = fh.read()
            if not data or data.endswith(b"\n"):
                return
            cut = data.rfind(b"\n") + 1
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())

    def append(self, record: dict) -> None:
        """One complete line per call: write, flush, fsync."""
        if not self.writer:
            raise SweepError(f"{self.path}: opened read-only")
        if self._fh is None:
            self._fh = open(self.path / RUNS_FILE, "ab")
        line = (json.dumps(_jsonable(record), separators=(",", ":"), allow_nan=False) + "\n").encode()
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def write_plan(self, sweep: Sweep) -> None:
        from ..results import write_text_atomic

        doc = {"schema": PLAN_SCHEMA, "schema_version": 1, "name": sweep.name, "source": sweep.source,
               "preset": sweep.preset, "grid_keys": list(sweep.grid_keys), "g10core_version": __version__,
               "runs": [r.plan_entry() for r in sweep.runs]}
        write_text_atomic(self.path / PLAN_FILE, json.dumps(_jsonable(doc), indent=1) + "\n")

    def close(self):
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- reader side ----
    def records(self) -> dict:
        """run_key -> its record (the last complete line of a key wins); torn lines ignored."""
        out: dict = {}
        f = self.path / RUNS_FILE
        if not f.exists():
            return out
        with open(f, "rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break                   # torn last line: not a run
                try:
                    rec = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("run_key"), str):
                    out[rec["run_key"]] = rec
        return out

    def plan(self) -> dict | None:
        f = self.path / PLAN_FILE
        if not f.exists():
            return None
        try:
            doc = json.loads(f.read_text())
        except json.JSONDecodeError as exc:
            raise SweepError(f"{f}: not valid JSON ({exc})") from None
        if not isinstance(doc, dict) or doc.get("schema") != PLAN_SCHEMA:
            raise SweepError(f"{f}: not a g10core sweep plan")
        return doc

    def status(self) -> dict:
        """``{"total", "done", "failed", "rows"}`` for the runs the last sweep planned.

        ``done`` counts the planned runs recorded (failed ones included), ``failed`` those
        that failed (a failed simulation, or an exception: ``error``); one row per recorded
        run, in plan order: :data:`ROW_FIELDS` and the grid values under their dotted keys.
        """
        recs = self.records()
        plan = self.plan()
        if plan is None:
            entries = [{"run_key": k, "grid": r.get("grid", {})} for k, r in recs.items()]
            grid_keys = list(dict.fromkeys(k for e in entries for k in e["grid"]))
        else:
            entries = plan["runs"]
            grid_keys = plan.get("grid_keys", [])
        rows = []
        for e in entries:
            rec = recs.get(e["run_key"])
            if rec is not None:
                rows.append(status_row(rec, grid_keys))
        return {"total": len(entries), "done": len(rows), "failed": sum(1 for r in rows if r["failed"]),
                "rows": rows}

    def export_rows(self) -> tuple[list, list]:
        """``(columns, rows)``: one flat row per recorded run, in plan order, for ``export`` and
        :func:`to_pandas`: :data:`ROW_FIELDS` with the grid keys as columns after ``policy``, then
        :func:`metric_columns` (``best_iteration``, ``breakdown_*_s``, ``traffic_*_pages``,
        ``faults_*_pages``, ``prefetched_*_pages``, ...; absent for a failed run), then
        :func:`store_columns` (``config_hash``, ``trace_digest``, the run's ``meta`` and the record's
        ``schema_version``): every value ``runs.jsonl`` holds is a column."""
        st = self.status()
        plan = self.plan()
        grid_keys = plan.get("grid_keys", []) if plan else sorted({k for r in st["rows"] for k in r}
                                                                   - set(ROW_FIELDS))
        recs = self.records()
        metrics = [{**metric_columns(recs[r["run_key"]]), **store_columns(recs[r["run_key"]])} for r in st["rows"]]
        cols = list(ROW_FIELDS[:5]) + list(grid_keys) + list(ROW_FIELDS[5:])
        cols += list(dict.fromkeys(k for m in metrics for k in m))
        rows = []
        for r, m in zip(st["rows"], metrics):
            both = {**r, **m}
            rows.append({k: both.get(k) for k in cols})
        return cols, rows

    def export_csv(self, dest) -> Path:
        """The rows of :meth:`export_rows` as CSV (an empty cell for a missing value), written atomically.

        Parameters
        ----------
        dest : str or path
            The CSV file to write.

        Returns
        -------
        Path
            The file written.
        """
        from ..results import write_text_atomic

        cols, rows = self.export_rows()
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
        return write_text_atomic(dest, buf.getvalue())

    def to_pandas(self):
        """The rows of :meth:`export_rows` as a pandas DataFrame (module function :func:`to_pandas`)."""
        pd = import_pandas("g10core.experiments.sweep.to_pandas")
        cols, rows = self.export_rows()
        return pd.DataFrame(rows, columns=cols)

    def export_parquet(self, dest) -> Path:
        """:meth:`to_pandas` written as Parquet (pyarrow), atomically.

        Parameters
        ----------
        dest : str or path
            The Parquet file to write.

        Returns
        -------
        Path
            The file written.

        Raises
        ------
        SweepError
            pandas or pyarrow is not installed (one line: what to install, or write CSV).
        """
        from ..files import replacing

        try:
            import pyarrow  # noqa: F401 (pandas' Parquet engine)
        except ImportError:
            raise SweepError(f"{dest}: writing Parquet needs pyarrow (pip install pyarrow); "
                             "or write CSV (a name that does not end in .parquet)") from None
        try:
            df = self.to_pandas()
        except ImportError as exc:
            raise SweepError(f"{dest}: writing Parquet: {exc}") from None
        with replacing(dest, ".parquet") as tmp:
            df.to_parquet(tmp, engine="pyarrow", index=False)
        return Path(dest)


# the tables of a record spread into columns (flat_columns: breakdown_compute_s, faults_host_pages, ...)
METRIC_FIELDS = ("breakdown_s", "traffic_pages", "faults_pages") + MOVED_KEYS


def metric_columns(rec: dict) -> dict:
    """A record's per-iteration numbers as flat columns: ``best_iteration`` (the iteration they are
    of), ``breakdown_compute_s``, ..., ``traffic_ssd_to_gpu_pages``, ..., ``faults_host_pages``, ...,
    ``prefetched_host_pages``, ... (:func:`g10core.results.flat_columns`, the function that flattens
    :meth:`g10core.results.Result.to_pandas`'s iterations; in the order of :data:`METRIC_FIELDS`;
    none for a run that failed or raised; the moved-page tables only in records written since
    they were added)."""
    out = {"best_iteration": rec["best_iteration"]} if "best_iteration" in rec else {}
    out.update(flat_columns({f: rec[f] for f in METRIC_FIELDS if isinstance(rec.get(f), dict)}))
    return out


def store_columns(rec: dict) -> dict:
    """What else a record holds, as flat columns: ``config_hash`` and ``trace_digest`` (what the run
    key is made of: a sweep run with ``--gpu`` or ``[set]`` keys differs from another only there),
    the run's ``meta`` (``wall_s``, ``cpu_s``, ``phases_*_s``, ``worker``, ``g10core_version``,
    ``finished_utc``; a run that raised before it ran has only the version) and the record's
    ``schema_version``."""
    out = {k: rec.get(k) for k in ("config_hash", "trace_digest")}
    out.update(flat_columns(rec.get("meta") or {}))
    out["schema_version"] = rec.get("schema_version")
    return out


def status_row(rec: dict, grid_keys=()) -> dict:
    """A record as a status row: ROW_FIELDS, then each grid value under its dotted key."""
    row = {k: rec.get(k) for k in ROW_FIELDS}
    grid = rec.get("grid", {}) or {}
    for k in grid_keys:
        if k in grid:
            row[k] = grid[k]
    for k, v in grid.items():
        row.setdefault(k, v)
    return row


def _jsonable(obj):
    from ..results import jsonable

    return jsonable(obj)


def sweep_status(path) -> dict:
    """The status of a sweep folder (read only): ``{"total", "done", "failed", "rows"}``.

    Parameters
    ----------
    path : str or path
        The sweep's output folder.

    Returns
    -------
    dict
        As :meth:`ResultStore.status`.

    Raises
    ------
    SweepError
        Not a sweep folder.
    """
    return ResultStore(path).status()


def export_csv(path, dest) -> Path:
    """Write a sweep folder's runs to ``dest`` as CSV (one row per run, grid keys as columns).

    Returns
    -------
    Path
        The file written.
    """
    return ResultStore(path).export_csv(dest)


def export(path, dest) -> Path:
    """Write a sweep folder's runs to ``dest``: Parquet when its name ends in ``.parquet`` (needs
    pandas and pyarrow), CSV otherwise; the columns of :func:`to_pandas` either way.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    SweepError
        Not a sweep folder, or Parquet asked for without pyarrow (one line).
    """
    store = ResultStore(path)
    if str(dest).lower().endswith(".parquet"):
        return store.export_parquet(dest)
    return store.export_csv(dest)


def to_pandas(path):
    """A sweep folder's runs as a pandas DataFrame (needs the ``analysis`` extra).

    One row per recorded run, in plan order; the columns ``g10sim sweep export`` writes: the
    status columns (``run_key``, ``trace``, ``model``, ``batch``, ``policy``), each grid key
    (``ssd.bandwidth_GBps``, ...), ``time_s``, ``ideal_time_s``, ``normalized_performance``,
    ``failed``, ``failure_reason``, ``error``, then ``best_iteration`` and that iteration's
    ``breakdown_*_s``, ``traffic_*_pages``, ``faults_*_pages``, ``prefetched_*_pages``,
    ``hinted_*_pages`` and ``refetched_*_pages`` (missing values: None / NaN).

    Parameters
    ----------
    path : str or path
        The store (``--out`` of ``g10sim sweep``, or :func:`run_sweep`'s ``out``).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    SweepError
        Not a sweep folder.
    ImportError
        pandas is not installed (one line naming the extra).
    """
    return ResultStore(path).to_pandas()


# ============================================================================
# Executors and the driver
# ============================================================================

class InlineExecutor(cf.Executor):
    """Runs each task in the calling process when it is submitted (``jobs=1``)."""

    def submit(self, fn, /, *args, **kwargs):
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            if isinstance(exc, KeyboardInterrupt):
                raise
            fut.set_exception(exc)
        return fut


@contextlib.contextmanager
def make_executor(jobs: int = 1, dask: str | None = None):
    """A ``concurrent.futures`` executor: local processes, this process, or Dask.

    ``dask``: None (local), ``"local"`` (a ``LocalCluster`` of ``jobs`` single-threaded
    worker processes) or a scheduler address (``tcp://host:8786``).
    """
    if dask is not None:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise SweepError("--dask needs dask.distributed: pip install 'g10core[sweep]'") from None
        cluster = None
        if dask == "local":
            cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=40)
            client = Client(cluster)
        else:
            try:
                client = Client(dask, timeout=30)
            except OSError as exc:
                raise SweepError(f"--dask {dask}: cannot reach the scheduler ({' '.join(str(exc).split())})") \
                    from None
        try:
            yield client.get_executor(pure=False)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return
    if jobs <= 1:
        yield InlineExecutor()
        return
    ctx = multiprocessing.get_context("spawn")      # no inherited threads or HDF5 state
    ex = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init)
    try:
        yield ex
    except BaseException:
        _stop(ex)
        raise
    ex.shutdown(wait=True)


def _stop(ex) -> None:
    """Cancel what has not started and end local workers now (Ctrl-C, a dead worker)."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    for proc in procs:
        with contextlib.suppress(OSError, AttributeError):
            proc.terminate()
    ex.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(timeout=5)


def missing_runs(sweep: Sweep, records: dict, *, retry_errors: bool = False) -> list:
    """The runs of ``sweep`` the store lacks (a record without a requested extra counts as missing)."""
    out = []
    for r in sweep.runs:
        rec = records.get(r.run_key)
        if rec is None or (retry_errors and rec.get("error")):
            out.append(r)
        elif any(x not in rec for x in r.record) and not rec.get("failed"):
            out.append(r)
    return out


def run_sweep(sweep: Sweep, out, *, jobs: int | None = None, dask: str | None = None, progress: bool = True,
              retry_errors: bool = False, executor: cf.Executor | None = None) -> dict:
    """Run what ``out`` lacks of ``sweep`` and return :meth:`ResultStore.status`.

    Each finished run is appended to the store at once; Ctrl-C (or any error of the
    driver) keeps what finished, and running again runs only what is missing.

    Parameters
    ----------
    sweep : Sweep
        From :func:`load_sweep`.
    out : str or path
        The store's folder (created if missing).
    jobs : int, optional
        Local worker processes (default: the CPUs; 1 runs in this process) or Dask
        workers for ``dask="local"``.
    dask : str, optional
        ``"local"`` (a LocalCluster) or a scheduler's address.
    progress : bool
        Show a progress bar on stderr.
    retry_errors : bool
        Run again the runs recorded with an error.
    executor : concurrent.futures.Executor, optional
        Run on this executor (from :func:`make_executor`) instead of starting one: a caller
        that runs sweep after sweep (the planner) keeps its workers, and their caches, across
        them.  ``jobs`` and ``dask`` are then ignored.

    Returns
    -------
    dict
        ``{"total", "done", "failed", "rows"}`` (:meth:`ResultStore.status`).

    Raises
    ------
    SweepError
        Another driver holds the folder, or a worker process died.

    Examples
    --------
    >>> from g10core.sweep import load_sweep, run_sweep
    >>> run_sweep(load_sweep("ssd.toml"), "runs/ssd", jobs=2)["done"]     # doctest: +SKIP
    20
    """
    from tqdm import tqdm

    jobs = default_jobs() if jobs is None else int(jobs)
    if jobs < 1:
        raise SweepError(f"jobs = {jobs}: must be >= 1")
    with ResultStore(out, writer=True) as store:
        store.write_plan(sweep)
        todo = missing_runs(sweep, store.records(), retry_errors=retry_errors)
        todo.sort(key=lambda r: -r.cost)                 # long runs first
        failed = sum(1 for r in store.status()["rows"] if r["failed"])
        bar = tqdm(total=len(sweep.runs), initial=len(sweep.runs) - len(todo), desc=sweep.name, unit="run",
                   file=sys.stderr, disable=not progress or not todo, dynamic_ncols=True, leave=False)
        bar.set_postfix_str(f"failed {failed}", refresh=False)
        try:
            if todo:
                workers = 1 if (dask is None and jobs == 1) else min(jobs, len(todo)) if dask is None else jobs
                with (contextlib.nullcontext(executor) if executor is not None
                      else make_executor(workers, dask)) as ex:
                    for run, fut in _finished(ex, todo):
                        try:
                            rec = fut.result()
                        except cf.process.BrokenProcessPool:
                            raise SweepError("a worker process died (out of memory, or killed); the runs that "
                                             "finished are kept: run the sweep again to resume") from None
                        except Exception as exc:  # noqa: BLE001 - e.g. a task lost by Dask
                            rec = _error_record(run, exc)
                        store.append(rec)
                        failed += bool(rec.get("failed"))
                        bar.set_postfix_str(f"failed {failed}, last {run.trace} {run.policy}", refresh=False)
                        bar.update()
        finally:
            bar.close()
        return store.status()


def _finished(ex, todo):
    """(run, future) of ``todo``'s runs as they finish.  The inline executor runs a task when it
    is submitted, so its runs go one at a time: submitting them all first ran the whole sweep
    before the first run was stored, and Ctrl-C lost every one."""
    if isinstance(ex, InlineExecutor):
        for r in todo:
            yield r, ex.submit(execute_run, r.task())
        return
    futures = {ex.submit(execute_run, r.task()): r for r in todo}
    for fut in cf.as_completed(futures):
        yield futures[fut], fut


def _error_record(run: Run, exc: BaseException) -> dict:
    return {"run_key": run.run_key, "trace": run.trace, "model": run.model, "batch": run.batch,
            "policy": run.policy, "grid": run.grid, "config_hash": run.config_hash,
            "trace_digest": run.trace_digest, "time_s": None, "ideal_time_s": None,
            "normalized_performance": None, "failed": True, "failure_reason": None,
            "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}",
            "meta": {"g10core_version": __version__}, "schema_version": RECORD_SCHEMA_VERSION}


def records_for(sweep: Sweep, out) -> list:
    """The store's records of ``sweep``'s runs, in sweep order (runs not recorded left out)."""
    recs = ResultStore(out).records()
    return [recs[r.run_key] for r in sweep.runs if r.run_key in recs]
