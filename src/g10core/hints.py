"""Hint tables as data: validation, and the HDF5 hint file ``g10core-hints``.

A hint table is a numpy array of :data:`g10core.policies.HINT_DTYPE` rows
``(kernel, tensor, action)``: when kernel ``kernel`` of an iteration begins, the
page-level replay applies ``action`` (0 to GPU, 1 to SSD, 2 to host, 3 free) to
every page of ``tensor``.  The same table is replayed every iteration.  Rows are
applied in table order, so the table must be sorted by ``kernel`` (the order within
one kernel is the order the pages are queued).  ``kernel`` may equal K, the number
of kernels: such a hint is applied at kernel 0 of the next iteration, before that
kernel's own hints (the replay walks the table cyclically, as the published
simulator does), and never in iteration 0.

File format (version 1), one HDF5 file:

* root attributes ``schema = "g10core-hints"``, ``schema_version = 1``,
  ``policy`` (who made the hints; free text), ``creator``, and the identity of the
  trace the hints belong to: ``trace_model``, ``trace_batch_size``,
  ``trace_n_kernels``, ``trace_n_tensors``, ``trace_footprint_bytes``,
  ``trace_digest`` (see :func:`trace_digest`; optional for hand-made files);
* dataset ``/hints``: compound ``kernel <i4, tensor <i4, action i1`` (any integer
  widths are accepted on read).

Write one from your own code with :func:`write_hints` (or h5py directly, following
the layout above) and replay it with ``g10sim run TRACE --hints FILE``.
"""
from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .codes import HINT_DTYPE
from .errors import HintError  # noqa: F401 (defined in errors.py; importable from here)
from .trace import Trace

SCHEMA = "g10core-hints"
SCHEMA_VERSION = 1
SUPPORTED_SCHEMA_VERSIONS = (1,)
ACTIONS = {0: "to_gpu", 1: "to_ssd", 2: "to_host", 3: "free"}


@dataclass(frozen=True, eq=False)
class HintFile:
    """A hint table with where it came from (what :func:`read_hints` returns)."""

    hints: np.ndarray
    policy: str = ""
    trace: dict = field(default_factory=dict)   # trace identity recorded in the file
    path: str | None = None


def trace_digest(trace: Trace) -> str:
    """Content hash of the parts of a trace a schedule depends on (sizes, accesses, times)."""
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
    (the replay applies rows in table order); tensor in [0, T); action in 0..3.
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
    bad = np.flatnonzero((a < 0) | (a > 3))
    if bad.size:
        raise HintError(path, f"action {int(a[bad[0]])} is not 0 (to GPU), 1 (to SSD), 2 (to host) or 3 (free)",
                        bad[0], "action")
    return h


def action_counts(hints: np.ndarray) -> dict:
    return {name: int((hints["action"] == a).sum()) for a, name in ACTIONS.items()}


def write_hints(path, hints, *, policy: str, trace: Trace | None = None, trace_path=None) -> Path:
    """Write a hint table (validated against ``trace`` when given) atomically."""
    import h5py

    from . import __version__

    path = Path(path)
    if trace is not None:
        hints = validate_hints(hints, trace.n_kernels, trace.n_tensors, path)
    else:
        hints = as_hint_table(hints, path)
    if not path.parent.is_dir():
        raise FileNotFoundError(2, "no such directory", str(path.parent))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with h5py.File(tmp, "w") as f:
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
            kw = {}
            if hints.shape[0] > 4096:
                kw = dict(chunks=(min(hints.shape[0], 1 << 16),), compression="gzip", shuffle=True)
            f.create_dataset("hints", data=hints, **kw)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def read_hints(path, trace: Trace | None = None) -> HintFile:
    """Read a hint file; with ``trace``, also check that it belongs to it (:func:`check_belongs`)."""
    import h5py

    path = Path(path)
    try:
        f = h5py.File(path, "r")
    except FileNotFoundError:
        raise FileNotFoundError(2, "no such file", str(path)) from None
    except OSError as exc:
        raise HintError(path, f"not a readable HDF5 file ({' '.join(str(exc).split())})") from None
    with f:
        schema = _text(f.attrs.get("schema", ""))
        if schema != SCHEMA:
            raise HintError(path, f"root attribute schema = {schema!r}; expected {SCHEMA!r} (a hint file "
                                  "written by `g10sim hints` or g10core.hints.write_hints)")
        version = int(f.attrs.get("schema_version", -1))
        if version not in SUPPORTED_SCHEMA_VERSIONS:
            raise HintError(path, f"schema_version {version} is not supported "
                                  f"(supported: {', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))})")
        if "hints" not in f or not isinstance(f["hints"], h5py.Dataset):
            raise HintError(path, "dataset missing")
        try:
            raw = f["hints"][()]
        except (OSError, TypeError, ValueError) as exc:
            raise HintError(path, f"cannot read ({' '.join(str(exc).split())})") from None
        ident = {}
        for key in ("model", "batch_size", "n_kernels", "n_tensors", "footprint_bytes", "digest"):
            if f"trace_{key}" in f.attrs:
                v = f.attrs[f"trace_{key}"]
                ident[key] = _text(v) if key in ("model", "digest") else int(v)
        if "trace_path" in f.attrs:
            ident["path"] = _text(f.attrs["trace_path"])
        policy = _text(f.attrs.get("policy", ""))
    hf = HintFile(hints=as_hint_table(np.atleast_1d(raw), path), policy=policy, trace=ident, path=str(path))
    if trace is not None:
        hf = check_belongs(hf, trace)
    return hf


def check_belongs(hf: HintFile, trace: Trace) -> HintFile:
    """Check that a hint file was made for ``trace``; return it with validated rows.

    The kernel and tensor counts recorded in the file must equal the trace's; a
    different recorded digest (same counts, other sizes or times) is an error too,
    since the schedule was planned for other tensors.  Files without ``trace_*``
    attributes (hand-made) are only range-checked.
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
    return HintFile(hints=hints, policy=hf.policy, trace=ident, path=path)
