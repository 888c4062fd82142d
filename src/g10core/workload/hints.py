"""Hint tables as data: validation, and the HDF5 hint file ``g10core-hints``.

A hint table is a numpy array of :data:`g10core.policies.HINT_DTYPE` rows
``(kernel, tensor, action)``: when kernel ``kernel`` of an iteration begins, the
page-level replay applies ``action`` (0 to GPU, 1 to SSD, 2 to host, 3 free) to
every page of ``tensor``; action 4 (recompute) regenerates a tensor dropped by an
earlier free by re-running the kernel that wrote it (:mod:`g10core.workload.recompute`);
memory advice (schema_version 2): 5 prefer_gpu, 6 prefer_host, 7 accessed_by, 8 read_mostly.
The action codes and names are :data:`g10core.codes.ACTION_NAMES`.  The same table is replayed every iteration.  Rows are
applied in table order, so the table must be sorted by ``kernel`` (the order within
one kernel is the order the pages are queued).  ``kernel`` may equal K, the number
of kernels: such a hint is applied at kernel 0 of the next iteration, before that
kernel's own hints (the replay walks the table cyclically, as the published
simulator does), and never in iteration 0.

File format (version 2; version-1 files are still read), one HDF5 file:

* root attributes ``schema = "g10core-hints"``, ``schema_version = 2`` (version 2 allows
  every action of :data:`g10core.codes.ACTION_NAMES`; a version-1 file only actions 0-3,
  and a version-1 file with another action is refused),
  ``policy`` (who made the hints; free text), ``creator``, and the identity of the
  trace the hints belong to: ``trace_model``, ``trace_batch_size``,
  ``trace_n_kernels``, ``trace_n_tensors``, ``trace_footprint_bytes``,
  ``trace_digest`` (see :func:`trace_digest`; optional for hand-made files);
* what they were planned for (optional; ``g10sim hints`` writes them): ``policy_level``
  (``page``: replayed page by page by a page-level policy; ``tensor``: a tensor-level
  schedule), ``config_preset``, ``config_hash`` and ``config_keys``, a JSON object of the
  values of :data:`PLAN_KEYS` (the parameters a schedule depends on).  Replaying hints
  under another value of one of those keys warns, naming it; a file of the other level
  than the replaying policy's is refused;
* dataset ``/hints``: compound ``kernel <i4, tensor <i4, action i1`` (any integer
  widths are accepted on read).

Write one from your own code with :func:`write_hints` (or h5py directly, following
the layout above) and replay it with ``g10sim run TRACE --hints FILE``.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..codes import ACTION_NAMES, HINT_DTYPE
from ..errors import HintError  # noqa: F401 (defined in errors.py; importable from here)
from ..files import NOT_A_REGULAR_FILE, is_special_file, replacing
from .h5safe import H5_ERRORS, LIBVER, CorruptHDF5, check_global_heaps, h5_reason, read_safely
from .trace import Trace

SCHEMA = "g10core-hints"
SCHEMA_VERSION = 2
SUPPORTED_SCHEMA_VERSIONS = (1, 2)
# the actions of schema version 1; action_counts always lists them (later ones when used)
ACTIONS = {0: "to_gpu", 1: "to_ssd", 2: "to_host", 3: "free"}
V1_MAX_ACTION = 3
V1_ACTIONS = tuple(ACTIONS)
LEVELS = ("page", "tensor")

# The parameters a schedule is planned from (G10's scheduler, DeepUM+'s window, FlashNeuron's line):
# replaying hints under another value of one of them warns.
PLAN_KEYS = (
    "gpu.memory_GiB", "gpu.frequency_GHz", "gpu.malloc_us_per_byte", "host.memory_GiB", "host.bandwidth_GBps",
    "ssd.bandwidth_GBps", "ssd.latency_us", "link.bandwidth_GBps", "fault.system_latency_us",
    "scheduler.delta", "scheduler.target_fraction", "scheduler.prefetch_degree", "scheduler.artifact_quirks",
)


def plan_keys(config) -> dict:
    """The values of :data:`PLAN_KEYS` in a SimConfig (or its ``to_dict()``)."""
    d = config if isinstance(config, dict) else config.to_dict()
    out = {}
    for key in PLAN_KEYS:
        section, name = key.split(".")
        out[key] = d.get(section, {}).get(name)
    return out


@dataclass(frozen=True, eq=False)
class HintFile:
    """A hint table with where it came from (what :func:`read_hints` returns).

    Attributes
    ----------
    hints : ndarray
        The ``HINT_DTYPE`` table.
    policy : str
        Who made the hints.
    trace : dict
        The identity of the trace recorded in the file (counts, digest, model, batch).
    path : str or None
        The file.
    level : str
        ``page``, ``tensor`` or ``""`` (not recorded).
    made_with : dict
        What they were planned for: ``preset``, ``config_hash``, ``keys`` (PLAN_KEYS values).
    """

    hints: np.ndarray
    policy: str = ""
    trace: dict = field(default_factory=dict)   # trace identity recorded in the file
    path: str | None = None
    level: str = ""                              # "page", "tensor" or "" (not recorded)
    made_with: dict = field(default_factory=dict)   # preset, config_hash, keys (PLAN_KEYS values)

    def config_mismatch(self, config) -> dict:
        """``{key: (planned, now)}`` for each recorded :data:`PLAN_KEYS` value that ``config`` differs in.

        Parameters
        ----------
        config : SimConfig
            The configuration a replay would run with.

        Returns
        -------
        dict
            Empty when the file records no keys or every recorded key matches.
        """
        keys = self.made_with.get("keys") or {}
        now = plan_keys(config)
        return {k: (v, now[k]) for k, v in keys.items() if k in now and v != now[k]}


def trace_digest(trace: Trace) -> str:
    """Content hash of the parts of a trace a schedule depends on (sizes, accesses, times).

    Returns
    -------
    str
        16 hex digits.
    """
    h = hashlib.sha256()
    for arr in (trace.tensor_size_bytes, trace.tensor_is_global, trace.access_offsets, trace.access_tensor,
                trace.access_mode, trace.kernel_time_ideal_ns, trace.kernel_time_fault_all_ns,
                trace.kernel_time_fault_outputs_ns):
        a = np.ascontiguousarray(arr)
        h.update(str(a.dtype).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def as_hint_table(hints, path=None) -> np.ndarray:
    """Any array with integer fields ``kernel``, ``tensor``, ``action`` as a HINT_DTYPE copy."""
    if isinstance(hints, np.ndarray) and hints.dtype == HINT_DTYPE and hints.ndim == 1:
        return hints
    names = getattr(getattr(hints, "dtype", None), "names", None) or ()
    if not isinstance(hints, np.ndarray) or hints.ndim != 1 or not set(HINT_DTYPE.names) <= set(names):
        got = f"{type(hints).__name__} {getattr(hints, 'dtype', '')} {getattr(hints, 'shape', '')}".strip()
        raise HintError(path, f"must be a 1-D table with integer fields kernel, tensor, action; got {got}")
    out = np.empty(hints.shape[0], HINT_DTYPE)
    for name in HINT_DTYPE.names:
        col = hints[name]
        if col.dtype.kind not in "iu":
            raise HintError(path, f"must be integers, got {col.dtype}", field=name)
        info = np.iinfo(HINT_DTYPE[name])
        bad = np.flatnonzero((col < info.min) | (col > info.max))
        if bad.size:
            raise HintError(path, f"got {int(col[bad[0]])}; does not fit in {HINT_DTYPE[name]}", bad[0], name)
        out[name] = col
    return out


def validate_hints(hints, n_kernels: int, n_tensors: int, path=None) -> np.ndarray:
    """Check a hint table against a trace's counts; return it as HINT_DTYPE.

    kernel in [0, K] (K: applied at the next iteration's kernel 0), non-decreasing
    (the replay applies rows in table order); tensor in [0, T); action one of
    :data:`g10core.codes.ACTION_NAMES`.

    Parameters
    ----------
    hints : ndarray
        A 1-D table with integer fields ``kernel``, ``tensor``, ``action``.
    n_kernels, n_tensors : int
        The trace's K and T.
    path : str or path, optional
        Where the table came from, for the message.

    Returns
    -------
    ndarray
        The table as ``HINT_DTYPE``.

    Raises
    ------
    HintError
        The first bad row, naming the row and field.
    """
    h = as_hint_table(hints, path)
    k = h["kernel"].astype(np.int64)
    bad = np.flatnonzero((k < 0) | (k > n_kernels))
    if bad.size:
        raise HintError(path, f"kernel {int(k[bad[0]])} is out of range [0, {n_kernels}] "
                              f"(the trace has {n_kernels} kernels)", bad[0], "kernel")
    down = np.flatnonzero(np.diff(k) < 0)
    if down.size:
        r = int(down[0]) + 1
        raise HintError(path, f"kernel {int(k[r])} comes after kernel {int(k[r - 1])}: rows must be sorted by "
                              "kernel (they are applied in table order)", r, "kernel")
    t = h["tensor"].astype(np.int64)
    bad = np.flatnonzero((t < 0) | (t >= n_tensors))
    if bad.size:
        raise HintError(path, f"tensor {int(t[bad[0]])} is out of range [0, {n_tensors}) "
                              f"(the trace has {n_tensors} tensors)", bad[0], "tensor")
    a = h["action"]
    bad = np.flatnonzero(~np.isin(a, list(ACTION_NAMES)))
    if bad.size:
        known = ", ".join(f"{code} ({name})" for code, name in sorted(ACTION_NAMES.items()))
        raise HintError(path, f"action {int(a[bad[0]])} is not one of {known}", bad[0], "action")
    return h


def action_counts(hints: np.ndarray) -> dict:
    """Rows per action name: the four version-1 actions always, a later one where the table uses it."""
    out = {name: int((hints["action"] == a).sum()) for a, name in ACTIONS.items()}
    for a, name in ACTION_NAMES.items():
        if a not in ACTIONS and (n := int((hints["action"] == a).sum())):
            out[name] = n
    return out


def write_hints(path, hints, *, policy: str, trace: Trace | None = None, trace_path=None, config=None,
                level: str | None = None) -> Path:
    """Write a hint table (validated against ``trace`` when given) atomically.

    ``config`` (a SimConfig): the configuration the hints were planned for (recorded: preset,
    hash, :data:`PLAN_KEYS`); ``level``: ``page`` or ``tensor``, how they are meant to be replayed
    (default: not recorded; a replay then takes the level of the registered policy named
    ``policy``, if any, as ``g10sim hints`` records it).

    Parameters
    ----------
    path : str or path
        The file to write (its folder must exist).
    hints : ndarray
        A table with integer fields ``kernel``, ``tensor``, ``action``.
    policy : str
        Who made them (free text).
    trace : Trace, optional
        The trace they belong to: the table is validated against it and its counts and
        digest are recorded, so replaying the file on another trace is refused.
    trace_path : str or path, optional
        Recorded as ``trace_path``.
    config : SimConfig, optional
        The configuration they were planned for.
    level : str, optional
        ``page`` or ``tensor``.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    HintError
        A bad table.
    ValueError
        An unknown level.

    Examples
    --------
    >>> write_hints("mine.h5", table, policy="mine", trace=trace)     # doctest: +SKIP
    """
    level = level or ""
    if level and level not in LEVELS:
        raise ValueError(f"level = {level!r}: must be one of {', '.join(LEVELS)}")
    import h5py

    from .. import __version__

    path = Path(path)
    if trace is not None:
        hints = validate_hints(hints, trace.n_kernels, trace.n_tensors, path)
    else:
        hints = as_hint_table(hints, path)
    if not path.parent.is_dir():
        raise FileNotFoundError(2, "no such directory", str(path.parent))
    with replacing(path) as tmp, h5py.File(tmp, "w", libver=LIBVER) as f:
        f.attrs["schema"] = SCHEMA
        f.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
        f.attrs["policy"] = str(policy)
        f.attrs["creator"] = f"g10core {__version__}"
        if trace is not None:
            f.attrs["trace_model"] = trace.model
            f.attrs["trace_batch_size"] = np.int64(trace.batch_size)
            f.attrs["trace_n_kernels"] = np.int64(trace.n_kernels)
            f.attrs["trace_n_tensors"] = np.int64(trace.n_tensors)
            f.attrs["trace_footprint_bytes"] = np.int64(trace.footprint_bytes)
            f.attrs["trace_digest"] = trace_digest(trace)
        if trace_path is not None:
            f.attrs["trace_path"] = os.fspath(trace_path)
        if level:
            f.attrs["policy_level"] = level
        if config is not None:
            f.attrs["config_preset"] = str(config.preset)
            f.attrs["config_hash"] = str(config.hash)
            f.attrs["config_keys"] = json.dumps(plan_keys(config), sort_keys=True)
        kw = {}
        if hints.shape[0] > 0:          # chunked, for the checksum (HDF5 cannot chunk an empty table)
            kw = dict(chunks=(min(hints.shape[0], 1 << 16),), fletcher32=True)
        if hints.shape[0] > 4096:
            kw.update(compression="gzip", shuffle=True)
        f.create_dataset("hints", data=hints, **kw)
    return path


def _attr_text(f, path, name: str, default: str | None = None) -> str:
    """Root attribute ``name`` as a string; anything else is a HintError naming it."""
    if name not in f.attrs:
        if default is None:
            raise HintError(path, f"root attribute {name} is missing")
        return default
    value = f.attrs[name]
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise HintError(path, f"root attribute {name} = {value!r}: not UTF-8 text") from None
    if isinstance(value, str):
        return value
    raise HintError(path, f"root attribute {name} = {_show(value)}: must be a string")


def _attr_int(f, path, name: str) -> int:
    """Root attribute ``name`` as an integer (an integer number or its decimal text)."""
    value = f.attrs[name]
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bytes, str)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if text.strip().lstrip("+-").isdigit():
            return int(text)
    elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise HintError(path, f"root attribute {name} = {_show(value)}: must be an integer")


def _show(value) -> str:
    """A short, one-line description of an attribute value for an error message."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def read_hints(path, trace: Trace | None = None) -> HintFile:
    """Read a hint file; with ``trace``, also check that it belongs to it (:func:`check_belongs`).

    A file that is not a hint file, a damaged HDF5 file, or an attribute of the wrong
    type is a :class:`HintError` naming the file (and the attribute).

    Parameters
    ----------
    path : str or path
        A hint file.
    trace : Trace, optional
        The trace it will be replayed on.

    Returns
    -------
    HintFile

    Raises
    ------
    HintError
        Not a hint file, damaged, or (with ``trace``) made for another trace.
    FileNotFoundError
        No such file.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(2, "no such file", str(path))
    if path.is_dir():
        raise HintError(path, "is a directory, not a hint file")
    if is_special_file(path):
        raise HintError(path, f"{NOT_A_REGULAR_FILE}, not a hint file")
    if path.stat().st_size == 0:
        raise HintError(path, "empty file (0 bytes), not an HDF5 hint file")
    try:
        check_global_heaps(path)        # a damaged global heap can hang h5py (g10core.workload.h5safe)
    except CorruptHDF5 as exc:
        raise HintError(path, str(exc)) from None
    except OSError as exc:
        raise HintError(path, f"cannot read the file ({exc.strerror or exc})") from None
    try:
        raw, policy, ident, level, made_with = read_safely(_read_file, path)   # a child if no checksums
    except CorruptHDF5 as exc:
        raise HintError(path, str(exc)) from None
    hf = HintFile(hints=as_hint_table(np.atleast_1d(raw), path), policy=policy, trace=ident, path=str(path),
                  level=level, made_with=made_with)
    if trace is not None:
        hf = check_belongs(hf, trace)
    return hf


def _read_file(path: Path):
    import h5py

    try:
        f = h5py.File(path, "r", locking=False)
    except H5_ERRORS as exc:
        raise HintError(path, f"not a readable HDF5 file ({h5_reason(exc)})") from None
    try:
        with f:
            return _read_open(f, path)
    except HintError:
        raise
    except H5_ERRORS as exc:
        raise HintError(path, f"corrupt HDF5 file ({h5_reason(exc)})") from None


def _read_open(f, path):
    import h5py

    schema = _attr_text(f, path, "schema", default="")
    if schema != SCHEMA:
        raise HintError(path, f"root attribute schema = {schema!r}; expected {SCHEMA!r} (a hint file "
                              "written by `g10sim hints` or g10core.workload.hints.write_hints)")
    if "schema_version" not in f.attrs:
        raise HintError(path, "root attribute schema_version is missing")
    version = _attr_int(f, path, "schema_version")
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise HintError(path, f"schema_version {version} is not supported "
                              f"(supported: {', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))})")
    if "hints" not in f or not isinstance(f["hints"], h5py.Dataset):
        raise HintError(path, "dataset missing")
    try:
        raw = f["hints"][()]
    except H5_ERRORS as exc:
        raise HintError(path, f"cannot read ({h5_reason(exc)})") from None
    names = getattr(getattr(raw, "dtype", None), "names", None) or ()
    if version == 1 and "action" in names:
        acts = np.atleast_1d(raw)["action"]
        bad = np.flatnonzero((acts < 0) | (acts > V1_MAX_ACTION)) if acts.dtype.kind in "iu" else np.zeros(0, int)
        if bad.size:
            raise HintError(path, f"action {int(acts[bad[0]])}: schema_version 1 allows actions 0-{V1_MAX_ACTION} "
                                  f"only (write schema_version 2 for {ACTION_NAMES.get(int(acts[bad[0]]), 'it')})",
                            bad[0], "action")
    ident = {}
    for key in ("model", "batch_size", "n_kernels", "n_tensors", "footprint_bytes", "digest"):
        name = f"trace_{key}"
        if name in f.attrs:
            ident[key] = _attr_text(f, path, name) if key in ("model", "digest") else _attr_int(f, path, name)
    if "trace_path" in f.attrs:
        ident["path"] = _attr_text(f, path, "trace_path")
    policy = _attr_text(f, path, "policy", default="")
    level = _attr_text(f, path, "policy_level", default="")
    if level and level not in LEVELS:
        raise HintError(path, f"root attribute policy_level = {level!r}; expected one of {', '.join(LEVELS)}")
    made_with = {}
    for key in ("preset", "hash"):
        if f"config_{key}" in f.attrs:
            made_with["config_hash" if key == "hash" else key] = _attr_text(f, path, f"config_{key}")
    if "config_keys" in f.attrs:
        try:
            keys = json.loads(_attr_text(f, path, "config_keys"))
        except json.JSONDecodeError:
            keys = None
        if not isinstance(keys, dict):
            raise HintError(path, "root attribute config_keys is not a JSON object of section.key: value")
        made_with["keys"] = keys
    return raw, policy, ident, level, made_with


def check_belongs(hf: HintFile, trace: Trace) -> HintFile:
    """Check that a hint file was made for ``trace``; return it with validated rows.

    The kernel and tensor counts recorded in the file must equal the trace's; a
    different recorded digest (same counts, other sizes or times) is an error too,
    since the schedule was planned for other tensors.  Files without ``trace_*``
    attributes (hand-made) are only range-checked.

    Returns
    -------
    HintFile
        ``hf`` with its rows validated against ``trace``.

    Raises
    ------
    HintError
        Made for another trace, or a row out of range.
    """
    ident, path = hf.trace, hf.path
    for key, have in (("n_kernels", trace.n_kernels), ("n_tensors", trace.n_tensors)):
        if key in ident and ident[key] != have:
            raise HintError(path, f"made for a trace with {ident[key]} {key[2:]} "
                                  f"({ident.get('model', '?')}-b{ident.get('batch_size', '?')}), "
                                  f"but this trace ({trace.model}-b{trace.batch_size}) has {have}")
    if "digest" in ident and ident["digest"] != trace_digest(trace):
        raise HintError(path, f"made for another trace ({ident.get('model', '?')}-b"
                              f"{ident.get('batch_size', '?')}, digest {ident['digest']}) with the same counts "
                              f"as this one ({trace.model}-b{trace.batch_size}, digest {trace_digest(trace)})")
    hints = validate_hints(hf.hints, trace.n_kernels, trace.n_tensors, path)
    return HintFile(hints=hints, policy=hf.policy, trace=ident, path=path, level=hf.level,
                    made_with=hf.made_with)

