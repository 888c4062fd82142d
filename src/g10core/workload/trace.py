"""Kernel-level traces of one DNN training iteration.

A :class:`Trace` is the in-memory form every other module consumes: numpy arrays,
one row per tensor and per kernel, and the kernel->tensor accesses as CSR.  The
HDF5 file format (schema ``g10core-trace``) is documented in ``traces/README.md``;
:func:`write_trace` and :func:`read_trace` are its writer and reader, and
:func:`validate_trace` checks every invariant the compiled layer relies on.  Every
problem is a :class:`TraceError` naming the file, dataset, row and field.

Virtual layout (the one the published G10 simulator uses): every tensor is rounded
up to whole pages; global tensors are laid out first, in tensor order, then every
other tensor, in tensor order; no address is reused within an iteration.
"""
from __future__ import annotations

import copy
import errno
import json
import os
import re
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from ..codes import PAGE_SIZE_BYTES, ROLE_NAMES  # noqa: F401 (PAGE_SIZE_BYTES: importable from here)
from ..errors import TraceError  # noqa: F401 (defined in errors.py; importable from here)
from ..files import NOT_A_REGULAR_FILE, is_special_file, replacing
from ..gpus import DEFAULT_GPU, GPUS, unknown_text
from .h5safe import H5_ERRORS, LIBVER, CorruptHDF5, check_global_heaps, h5_reason, read_safely


# Access mode bits in ``access_mode``.
ACCESS_READ = 1   # the kernel reads the tensor (it is one of its inputs)
ACCESS_WRITE = 2  # the kernel writes the tensor (it is one of its outputs)


@dataclass(frozen=True, eq=False)
class Trace:
    """One training iteration: K kernels in order, T tensors, and who touches what.

    Accesses of kernel ``k`` are rows ``access_offsets[k]:access_offsets[k+1]`` of
    ``access_tensor``/``access_mode``: first the inputs (mode has ACCESS_READ; a
    tensor both read and written has both bits), in the order the source lists
    them, then the outputs that are not also inputs.  That order is the order in
    which the simulators queue a kernel's page faults.

    Attributes
    ----------
    model : str
        Model name, e.g. ``bert_base``.
    batch_size : int
        Training batch size.
    tensor_size_bytes, tensor_is_global, tensor_name : ndarray
        Per tensor (T rows): size in bytes (int64, > 0); lives for the whole run (bool); name.
    kernel_name, kernel_time_ideal_ns, kernel_time_fault_all_ns, kernel_time_fault_outputs_ns : ndarray
        Per kernel (K rows, in order): name; the profiled times t11 (all resident), t00 (every
        page faulting) and t10 (outputs faulting), float64 ns.
    kernel_workspace_bytes : ndarray
        Per kernel, the profiled cuDNN workspace (int64; the tensor is in the accesses).
    access_offsets, access_tensor, access_mode : ndarray
        The accesses as CSR: offsets (int64, K + 1), tensor ids (int32), ACCESS_READ |
        ACCESS_WRITE bits (uint8).
    source, profiling_gpu : str
        Where the data came from and the GPU the times were measured on.
    attrs : dict
        Free provenance attributes (HDF5 root attributes).
    hints : ndarray or None
        Optional migration hints stored with the trace (``HINT_DTYPE``); ``hints_policy`` names
        the policy that made them.
    tensor_role, tensor_layer : ndarray
        Per tensor (T rows): the role (int8, a ``g10core.codes.ROLE_NAMES`` code: parameter,
        gradient, optimizer state, activation, workspace, input, temporary, or unknown) and the
        layer a parameter, its gradient and its optimizer state belong to (int32, -1 for none).
        Stored by format version 2 (temporary: 3); left out (None), they are inferred from the graph by
        :func:`g10core.workload.roles.infer_roles` when the trace is made.
    kernel_work : KernelWork or None
        Per kernel (format version 4, optional): its FLOPs, the bytes it reads and writes, the
        unit that runs it, its kind and its GEMM tiles (:class:`g10core.workload.physical.KernelWork`),
        what the physical kernel-time model and retargeting read; None where not recorded.
    kernel_phase : ndarray or None
        Per kernel (format version 5, optional; int32): the inference phase it belongs to,
        ``PHASE_PREFILL`` (0) for the prompt's forward pass and ``i`` for decode step ``i``
        (:mod:`g10core.workload.llm`); None for a training trace.

    See Also
    --------
    read_trace, write_trace, validate_trace
    """

    model: str
    batch_size: int
    # tensors (T rows)
    tensor_size_bytes: np.ndarray          # int64, > 0
    tensor_is_global: np.ndarray           # bool: lives for the whole run (weights)
    tensor_name: np.ndarray                # str
    # kernels (K rows)
    kernel_name: np.ndarray                # str
    kernel_time_ideal_ns: np.ndarray       # float64: everything resident (t11)
    kernel_time_fault_all_ns: np.ndarray   # float64: every input and output page faults (t00)
    kernel_time_fault_outputs_ns: np.ndarray  # float64: inputs resident, outputs fault (t10)
    kernel_workspace_bytes: np.ndarray     # int64: profiled cuDNN workspace (the tensor is in the accesses)
    # kernel -> tensor accesses, CSR
    access_offsets: np.ndarray             # int64, K+1, monotone, [0] == 0, [-1] == A
    access_tensor: np.ndarray              # int32, A
    access_mode: np.ndarray                # uint8, A: ACCESS_READ | ACCESS_WRITE
    # identity and provenance (HDF5 root attributes)
    source: str = ""
    profiling_gpu: str = ""                # the GPU in words ("NVIDIA A100-40GB (predicted)")
    # the g10core.gpus model the kernel times stand for (what retargeting starts from); "": a GPU
    # not in the table (never retargeted).  A file without the attribute: A100-40GB.
    profiled_gpu: str = DEFAULT_GPU
    attrs: dict = field(default_factory=dict)
    # optional migration hints stored with the trace (``g10core.policies.HINT_DTYPE``)
    hints: np.ndarray | None = None
    hints_policy: str = ""                 # name of the policy that produced ``hints``
    # roles (format version 2): None -> inferred from the graph (roles.infer_roles)
    tensor_role: np.ndarray | None = None     # int8, T: codes.ROLE_* of each tensor
    tensor_layer: np.ndarray | None = None    # int32, T: layer of a parameter/gradient/state, -1 none
    # the work of every kernel (format version 4; workload.physical.KernelWork): FLOPs, bytes, unit,
    # kind, GEMM tiles; None: not recorded (the published profiles, imported profiles)
    kernel_work: "object | None" = None
    # the inference phase of every kernel (format version 5, optional): PHASE_PREFILL (0) for the
    # prompt's forward pass, i >= 1 for decode step i; None: not an inference trace
    kernel_phase: np.ndarray | None = None

    def __post_init__(self):
        if self.tensor_role is None or self.tensor_layer is None:
            try:
                from .roles import infer_roles

                role, layer = infer_roles(self)
            except Exception:   # a malformed trace: validate_trace names what is wrong with it
                return
            if self.tensor_role is None:
                object.__setattr__(self, "tensor_role", role)
            if self.tensor_layer is None:
                object.__setattr__(self, "tensor_layer", layer)

    # ---- sizes -------------------------------------------------------------
    @property
    def n_kernels(self) -> int:
        """K, the number of kernels."""
        return int(self.kernel_name.shape[0])

    @property
    def n_tensors(self) -> int:
        """T, the number of tensors."""
        return int(self.tensor_size_bytes.shape[0])

    @property
    def n_accesses(self) -> int:
        """A, the number of kernel -> tensor accesses."""
        return int(self.access_tensor.shape[0])

    @cached_property
    def tensor_pages(self) -> np.ndarray:
        """Pages per tensor (size rounded up to 4 KiB), int64."""
        return (self.tensor_size_bytes + PAGE_SIZE_BYTES - 1) // PAGE_SIZE_BYTES

    @cached_property
    def tensor_first_page(self) -> np.ndarray:
        """First virtual page of each tensor: [globals | the rest], each in tensor order."""
        pages = self.tensor_pages
        first = np.empty_like(pages)
        glob = self.tensor_is_global
        for mask, base in ((glob, 0), (~glob, int(pages[glob].sum()))):
            p = pages[mask]
            first[mask] = base + np.concatenate(([0], np.cumsum(p)[:-1])) if p.size else p
        return first

    @property
    def footprint_bytes(self) -> int:
        """Sum of all page-rounded tensor sizes (the paper's memory-ratio numerator)."""
        return int(self.tensor_pages.sum()) * PAGE_SIZE_BYTES

    @property
    def footprint_pages(self) -> int:
        """Sum of all tensors' pages."""
        return int(self.tensor_pages.sum())

    @property
    def global_bytes(self) -> int:
        """Page-rounded bytes of the global tensors (weights and other state kept across iterations)."""
        return int(self.tensor_pages[self.tensor_is_global].sum()) * PAGE_SIZE_BYTES

    @property
    def ideal_time_ns(self) -> float:
        """Sum of the kernels' ideal times (t11), ns."""
        return float(self.kernel_time_ideal_ns.sum())

    # ---- accesses ----------------------------------------------------------
    def kernel_accesses(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(tensor ids, modes) of kernel ``k``, in fault-queue order.

        Parameters
        ----------
        k : int
            Kernel index, ``0 <= k < n_kernels``.

        Returns
        -------
        tensors : numpy.ndarray
            Tensor ids (a view of ``access_tensor``).
        modes : numpy.ndarray
            Access modes (``ACCESS_READ``/``ACCESS_WRITE`` bits), one per tensor id.
        """
        lo, hi = self.access_offsets[k], self.access_offsets[k + 1]
        return self.access_tensor[lo:hi], self.access_mode[lo:hi]

    def kernel_inputs(self, k: int) -> np.ndarray:
        """Tensors read by kernel ``k`` (including those it also writes).

        Parameters
        ----------
        k : int
            Kernel index.

        Returns
        -------
        numpy.ndarray
            Tensor ids, in fault-queue order.
        """
        t, m = self.kernel_accesses(k)
        return t[(m & ACCESS_READ) != 0]

    def kernel_outputs(self, k: int) -> np.ndarray:
        """Tensors written by kernel ``k`` (including those it also reads).

        Parameters
        ----------
        k : int
            Kernel index.

        Returns
        -------
        numpy.ndarray
            Tensor ids, in fault-queue order.
        """
        t, m = self.kernel_accesses(k)
        return t[(m & ACCESS_WRITE) != 0]

    @cached_property
    def access_kernel(self) -> np.ndarray:
        """Kernel index of every access row, int32 (the CSR expanded)."""
        counts = np.diff(self.access_offsets)
        return np.repeat(np.arange(self.n_kernels, dtype=np.int32), counts)

    def identity(self) -> dict:
        """What a result records about the trace it ran on."""
        return {
            "model": self.model,
            "batch_size": int(self.batch_size),
            "n_kernels": self.n_kernels,
            "n_tensors": self.n_tensors,
            "footprint_bytes": self.footprint_bytes,
            "source": self.source,
        }


# ============================================================================
# HDF5 file format "g10core-trace" (documented in traces/README.md)
# ============================================================================

SCHEMA = "g10core-trace"
SCHEMA_VERSION = 5                            # what write_trace writes
SUPPORTED_SCHEMA_VERSIONS = (1, 2, 3, 4, 5)   # what read_trace reads
# Trace.kernel_phase: the prompt's forward pass; decode step i is phase i (format 5)
PHASE_PREFILL = 0
# Version history of the file format; every change of layout or meaning bumps the
# version and adds a line here and in traces/README.md.
SCHEMA_HISTORY = {
    1: "first version: /tensors, /tensor_names, /kernels (three profiled times in ns, "
       "workspace bytes), /kernel_names, /accesses/{offsets,tensor,mode} (CSR), optional /hints",
    2: "tensor roles: /tensors gains the fields role (int8, codes.ROLE_*) and layer (int32, -1 none); "
       "version-1 files are still read, their roles inferred (roles.infer_roles)",
    3: "role code 7, temporary (codes.ROLE_TEMPORARY: written, and read if at all, within one phase); "
       "same layout; a version-2 file's roles are read as stored, its unknown tensors that the rules "
       "call temporaries as temporaries (roles.refine_temporaries)",
    4: "optional /kernel_work (K rows: flops f8, bytes f8, unit u1, kind u1, tiles i8, fill f4): each kernel's work, "
       "which the physical kernel-time model (workload.physical) and retargeting read; same layout otherwise, "
       "version-3 files read unchanged",
    5: "role code 8, kv_cache (codes.ROLE_KV_CACHE); optional /kernel_phase (K rows, int32: 0 prefill, i >= 1 "
       "decode step i) marking an inference trace (workload.llm); same layout otherwise, version-4 files read "
       "unchanged",
}
# The largest role code each format version allows (version 1 stores none).
MAX_ROLE_CODE = {2: 6, 3: 7, 4: 7, 5: max(ROLE_NAMES)}

# Packed record types of the two tables (the in-memory Trace keeps them as columns).
TENSOR_DTYPE = np.dtype([("size_bytes", "<i8"), ("is_global", "u1"), ("role", "i1"), ("layer", "<i4")])
TENSOR_DTYPE_V1 = np.dtype([("size_bytes", "<i8"), ("is_global", "u1")])
KERNEL_DTYPE = np.dtype([
    ("time_ideal_ns", "<f8"),
    ("time_fault_all_ns", "<f8"),
    ("time_fault_outputs_ns", "<f8"),
    ("workspace_bytes", "<i8"),
])
# Units of every quantity in the file, stored as the JSON root attribute ``units``;
# the reader refuses a file that states other units for any of them.
UNITS = {
    "tensors.size_bytes": "bytes",
    "kernels.time_ideal_ns": "ns",
    "kernels.time_fault_all_ns": "ns",
    "kernels.time_fault_outputs_ns": "ns",
    "kernels.workspace_bytes": "bytes",
}
# units of the optional /kernel_work fields (format 4), stored with the dataset as its attribute ``units``
KERNEL_WORK_DTYPE = np.dtype([("flops", "<f8"), ("bytes", "<f8"), ("unit", "u1"), ("kind", "u1"), ("tiles", "<i8"),
                              ("fill", "<f4")])
KERNEL_WORK_UNITS = {"flops": "FLOP", "bytes": "bytes", "unit": "code", "kind": "code", "tiles": "tiles",
                     "fill": "fraction"}
# Root attributes the writer sets itself; any of these in ``Trace.attrs`` is ignored.
_RESERVED_ATTRS = ("schema", "schema_version", "model", "batch_size", "source",
                   "profiling_gpu", "profiled_gpu", "units", "creator")
# Upper bound of every kernel-time column's sum (one iteration of kernels), in ns: keeps
# every sum finite and exact enough (1e308 ns is refused here, naming the row).  Whether a
# run fits the simulators' 64-bit cycle clock depends on the configuration too (frequency x
# iterations): slot_inputs.check_cycles_fit refuses the product before a run.
MAX_ITERATION_TIME_NS = 1e21
CHUNK_BYTES = 1 << 20                   # target chunk size (never larger than the data)
_GZIP_LEVEL = 4
_IN_MEMORY = "<in-memory trace>"


# ---- validation ---------------------------------------------------------------

# Trace column -> (dataset, field, dtype, length key): where it lives in the file.
_COLUMNS = {
    "tensor_size_bytes": ("/tensors", "size_bytes", np.dtype(np.int64), "T"),
    "tensor_is_global": ("/tensors", "is_global", np.dtype(bool), "T"),
    "tensor_name": ("/tensor_names", None, "U", "T"),
    "kernel_name": ("/kernel_names", None, "U", "K"),
    "kernel_time_ideal_ns": ("/kernels", "time_ideal_ns", np.dtype(np.float64), "K"),
    "kernel_time_fault_all_ns": ("/kernels", "time_fault_all_ns", np.dtype(np.float64), "K"),
    "kernel_time_fault_outputs_ns": ("/kernels", "time_fault_outputs_ns", np.dtype(np.float64), "K"),
    "kernel_workspace_bytes": ("/kernels", "workspace_bytes", np.dtype(np.int64), "K"),
    "access_offsets": ("/accesses/offsets", None, np.dtype(np.int64), "K+1"),
    "access_tensor": ("/accesses/tensor", None, np.dtype(np.int32), "A"),
    "access_mode": ("/accesses/mode", None, np.dtype(np.uint8), "A"),
    "tensor_role": ("/tensors", "role", np.dtype(np.int8), "T"),
    "tensor_layer": ("/tensors", "layer", np.dtype(np.int32), "T"),
}


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def validate_trace(trace: Trace, path=None) -> None:
    """Check every invariant of ``trace``; raise :class:`TraceError` at the first broken one.

    ``path`` only labels the error.  Checked: identity attributes; every column's
    type, dtype, shape and length; tensor sizes > 0; times finite and >= 0;
    workspace >= 0; CSR offsets start at 0, never decrease and end at the access
    count; tensor ids in range and not repeated within a kernel; modes READ, WRITE
    or both; hints (if any) in range.  Not checked: ``t00 >= t10 >= t11`` (the
    published A100 profiles break it for up to a tenth of the kernels; the simulators
    clamp on load).  Cost O(T + K + A).

    Parameters
    ----------
    trace : Trace
        The trace to check.
    path : str or path, optional
        The file it came from, for the message.

    Raises
    ------
    TraceError
        The first broken invariant, naming the dataset, row and field.
    """
    from . import _traceidx

    def fail(dataset, reason, row=None, fld=None):
        raise TraceError(path, dataset, reason, row, fld)

    if not isinstance(trace, Trace):
        fail("/", f"expected a g10core.workload.trace.Trace, got {type(trace).__name__}")
    if not isinstance(trace.model, str) or not trace.model.strip():
        fail("/", f"must be a non-empty string, got {trace.model!r}", fld="model")
    if not _is_int(trace.batch_size) or trace.batch_size < 1:
        fail("/", f"must be an integer >= 1, got {trace.batch_size!r}", fld="batch_size")
    for name in ("source", "profiling_gpu", "profiled_gpu", "hints_policy"):
        if not isinstance(getattr(trace, name), str):
            fail("/", f"must be a string, got {type(getattr(trace, name)).__name__}", fld=name)
    if trace.profiled_gpu and trace.profiled_gpu not in GPUS:
        fail("/", f"{unknown_text(trace.profiled_gpu)} (or \"\": a GPU not in g10core.gpus)", fld="profiled_gpu")
    if not isinstance(trace.attrs, dict):
        fail("/", f"attrs must be a dict, got {type(trace.attrs).__name__}")
    for key, value in trace.attrs.items():
        if not isinstance(key, str) or not key or "/" in key:
            fail("/", f"attribute name {key!r} must be a non-empty string without '/'")
        if not isinstance(value, (str, bool, int, float, np.generic)) or isinstance(value, np.void):
            fail("/", f"attribute value must be a str, int, float or bool, got {type(value).__name__}",
                 fld=key)

    # shapes and dtypes first: the scans below (and the compiled layer) rely on them
    for col, (dataset, fld, dtype, _) in _COLUMNS.items():
        arr = getattr(trace, col)
        if not isinstance(arr, np.ndarray):
            fail(dataset, f"must be a numpy array, got {type(arr).__name__} (Trace.{col})", fld=fld)
        if arr.ndim != 1:
            fail(dataset, f"must be 1-D, got shape {arr.shape} (Trace.{col})", fld=fld)
        if dtype == "U":
            if arr.dtype.kind != "U":
                fail(dataset, f"dtype {arr.dtype}, expected a str array (Trace.{col})", fld=fld)
        elif arr.dtype != dtype:
            fail(dataset, f"dtype {arr.dtype}, expected {dtype} (Trace.{col})", fld=fld)
    T = trace.tensor_size_bytes.shape[0]
    K = trace.kernel_time_ideal_ns.shape[0]  # the tables define the counts; names must match them
    A = trace.access_tensor.shape[0]
    lengths = {"T": T, "K": K, "K+1": K + 1, "A": A}
    if T < 1:
        fail("/tensors", "a trace needs at least one tensor")
    if K < 1:
        fail("/kernels", "a trace needs at least one kernel")
    for col, (dataset, fld, _, key) in _COLUMNS.items():
        n = getattr(trace, col).shape[0]
        if n != lengths[key]:
            what = {"T": "tensors", "K": "kernels", "K+1": "kernels + 1", "A": "accesses"}[key]
            fail(dataset, f"has {n} rows, expected {lengths[key]} ({what}; Trace.{col})", fld=fld)

    # tensors
    sizes = trace.tensor_size_bytes
    bad = np.flatnonzero(sizes <= 0)
    if bad.size:
        fail("/tensors", f"got {int(sizes[bad[0]])}; must be > 0", row=bad[0], fld="size_bytes")
    if float(sizes.sum(dtype=np.float64)) >= 2.0 ** 62:
        fail("/tensors", "total footprint overflows 64-bit byte counts", fld="size_bytes")

    role = trace.tensor_role
    bad = np.flatnonzero((role < 0) | (role > max(ROLE_NAMES)))
    if bad.size:
        fail("/tensors", f"got {int(role[bad[0]])}; must be a role code 0..{max(ROLE_NAMES)} "
             f"({', '.join(f'{c} {n}' for c, n in ROLE_NAMES.items())})", row=bad[0], fld="role")
    bad = np.flatnonzero(trace.tensor_layer < -1)
    if bad.size:
        fail("/tensors", f"got {int(trace.tensor_layer[bad[0]])}; must be >= -1 (-1: no layer)",
             row=bad[0], fld="layer")

    # kernels
    for col in ("kernel_time_ideal_ns", "kernel_time_fault_all_ns", "kernel_time_fault_outputs_ns"):
        t = getattr(trace, col)
        bad = np.flatnonzero(~(np.isfinite(t) & (t >= 0)))
        if bad.size:
            fail("/kernels", f"got {float(t[bad[0]])!r}; must be finite and >= 0", row=bad[0], fld=_COLUMNS[col][1])
        with np.errstate(over="ignore"):                    # 1e308 + 1e308 = inf, above the bound
            over = np.flatnonzero(np.cumsum(t) > MAX_ITERATION_TIME_NS)
        if over.size:
            r = int(over[0])
            fail("/kernels", f"got {float(t[r])!r}; the times of kernels 0..{r} add up to more than "
                 f"{MAX_ITERATION_TIME_NS:.0e} ns, the most one iteration may take",
                 row=r, fld=_COLUMNS[col][1])
    ws = trace.kernel_workspace_bytes
    bad = np.flatnonzero(ws < 0)
    if bad.size:
        fail("/kernels", f"got {int(ws[bad[0]])}; must be >= 0", row=bad[0], fld="workspace_bytes")

    # accesses (compiled O(A) scans over contiguous views)
    offsets = np.ascontiguousarray(trace.access_offsets)
    ids = np.ascontiguousarray(trace.access_tensor)
    modes = np.ascontiguousarray(trace.access_mode)
    row = _traceidx.first_bad_offset(offsets, A)
    if row >= 0:
        v = int(offsets[row])
        if row == 0:
            why = f"got {v}; the first offset must be 0"
        elif v < offsets[row - 1]:
            why = f"got {v} after {int(offsets[row - 1])}; offsets must not decrease"
        elif v > A:
            why = f"got {v}; exceeds the number of accesses {A}"
        else:
            why = f"got {v}; the last offset must equal the number of accesses {A}"
        fail("/accesses/offsets", why, row=row)
    row = _traceidx.first_out_of_range(ids, T)
    if row >= 0:
        k = int(np.searchsorted(offsets, row, side="right")) - 1
        fail("/accesses/tensor", f"tensor id {int(ids[row])} of kernel {k} is out of range [0, {T})", row=row)
    row = _traceidx.first_bad_mode(modes)
    if row >= 0:
        fail("/accesses/mode", f"got {int(modes[row])}; must be 1 (read), 2 (write) or 3 (read and write)", row=row)
    row = _traceidx.first_repeated_access(offsets, ids, T)
    if row >= 0:
        k = int(np.searchsorted(offsets, row, side="right")) - 1
        fail("/accesses/tensor", f"tensor {int(ids[row])} appears twice in kernel {k} (merge the modes instead)",
             row=row)

    if trace.hints is not None:
        _validate_hints(trace.hints, K, T, path)
    if trace.kernel_work is not None:
        _validate_kernel_work(trace.kernel_work, K, path)
    if trace.kernel_phase is not None:
        _validate_kernel_phase(trace.kernel_phase, K, path)


def _validate_kernel_phase(phase, K: int, path) -> None:
    """/kernel_phase: K int32 rows, each >= 0, never decreasing (prefill, then decode steps in order)."""
    if not isinstance(phase, np.ndarray) or phase.ndim != 1 or phase.dtype != np.int32:
        got = f"{phase.dtype} {phase.shape}" if isinstance(phase, np.ndarray) else type(phase).__name__
        raise TraceError(path, "/kernel_phase", f"must be a 1-D int32 array, got {got} (Trace.kernel_phase)")
    if phase.shape[0] != K:
        raise TraceError(path, "/kernel_phase", f"has {phase.shape[0]} rows, expected {K} (kernels)")
    bad = np.flatnonzero(phase < 0)
    if bad.size:
        raise TraceError(path, "/kernel_phase", f"got {int(phase[bad[0]])}; must be >= 0 (0 prefill, i decode "
                         f"step i)", bad[0])
    bad = np.flatnonzero(np.diff(phase) < 0)
    if bad.size:
        r = int(bad[0]) + 1
        raise TraceError(path, "/kernel_phase", f"got {int(phase[r])} after {int(phase[r - 1])}; phases must not "
                         f"decrease (prefill, then decode steps in order)", r)


def _validate_kernel_work(work, K: int, path) -> None:
    from .physical import KIND_NAMES, UNIT_NAMES, KernelWork

    if not isinstance(work, KernelWork):
        raise TraceError(path, "/kernel_work", f"must be a KernelWork, got {type(work).__name__}")
    for fld in KERNEL_WORK_DTYPE.names:
        col = getattr(work, fld)
        want = KERNEL_WORK_DTYPE[fld]
        if not isinstance(col, np.ndarray) or col.ndim != 1 or col.dtype != want:
            got = f"{type(col).__name__} {getattr(col, 'dtype', '')} {getattr(col, 'shape', '')}"
            raise TraceError(path, "/kernel_work", f"must be a 1-D {want} array, got {got.strip()}", field=fld)
        if col.shape[0] != K:
            raise TraceError(path, "/kernel_work", f"has {col.shape[0]} rows, expected {K} (kernels)", field=fld)
    for fld in ("flops", "bytes"):
        col = getattr(work, fld)
        bad = np.flatnonzero(~(np.isfinite(col) & (col >= 0)))
        if bad.size:
            raise TraceError(path, "/kernel_work", f"got {float(col[bad[0]])!r}; must be finite and >= 0",
                             bad[0], fld)
    for fld, names in (("unit", UNIT_NAMES), ("kind", KIND_NAMES)):
        col = getattr(work, fld)
        bad = np.flatnonzero(col > max(names))
        if bad.size:
            raise TraceError(path, "/kernel_work", f"got {int(col[bad[0]])}; must be a code 0..{max(names)} "
                             f"({', '.join(f'{c} {n}' for c, n in names.items())})", bad[0], fld)
    bad = np.flatnonzero(work.tiles < 0)
    if bad.size:
        raise TraceError(path, "/kernel_work", f"got {int(work.tiles[bad[0]])}; must be >= 0", bad[0], "tiles")
    bad = np.flatnonzero(~((work.fill > 0) & (work.fill <= 1)))
    if bad.size:
        raise TraceError(path, "/kernel_work", f"got {float(work.fill[bad[0]])!r}; must be in (0, 1]", bad[0], "fill")


def _validate_hints(hints, K: int, T: int, path) -> None:
    from ..codes import HINT_DTYPE

    if not isinstance(hints, np.ndarray) or hints.ndim != 1 or hints.dtype != HINT_DTYPE:
        got = f"{type(hints).__name__} {getattr(hints, 'dtype', '')} {getattr(hints, 'shape', '')}"
        raise TraceError(path, "/hints", f"must be a 1-D array of HINT_DTYPE, got {got.strip()}")
    # kernel K itself is legal: a tensor freed after the last kernel is released when the
    # next iteration's kernel 0 begins (the published scheduler issues such hints)
    for fld, n in (("kernel", K + 1), ("tensor", T)):
        col = np.ascontiguousarray(hints[fld])
        bad = np.flatnonzero((col < 0) | (col >= n))
        if bad.size:
            raise TraceError(path, "/hints", f"got {int(col[bad[0]])}; out of range [0, {n})", bad[0], fld)
    act = hints["action"]
    bad = np.flatnonzero((act < 0) | (act > 3))
    if bad.size:
        raise TraceError(path, "/hints", f"got {int(act[bad[0]])}; must be 0 (to GPU), 1 (to SSD), "
                         "2 (to host) or 3 (free)", bad[0], "action")


# ---- writer -------------------------------------------------------------------

def _create(group, name: str, data: np.ndarray):
    """One dataset: gzip+shuffle, fletcher32, chunks of about 1 MiB (never beyond the data)."""
    n = data.shape[0]
    if n == 0:  # HDF5 cannot chunk an empty extent
        return group.create_dataset(name, data=data, track_times=False)
    rows = max(1, min(n, CHUNK_BYTES // max(1, data.dtype.itemsize)))
    return group.create_dataset(
        name, data=data, chunks=(rows,), compression="gzip", compression_opts=_GZIP_LEVEL,
        shuffle=True, fletcher32=True, track_times=False)


def _names(arr: np.ndarray):
    """str array -> fixed-length UTF-8 bytes (compresses well, no variable-length heap)."""
    import h5py

    encoded = [s.encode("utf-8") for s in arr.tolist()]
    width = max([1] + [len(b) for b in encoded])
    return np.array(encoded, dtype=h5py.string_dtype("utf-8", width))


def write_trace(trace: Trace, path) -> Path:
    """Validate ``trace`` and write it to ``path`` in format ``SCHEMA_VERSION``, atomically.

    The file is written under a temporary name in the same folder and renamed over
    ``path`` when complete, so a reader never sees a half-written trace.

    Parameters
    ----------
    trace : Trace
        The trace; validated first (:func:`validate_trace`).
    path : str or path
        The file to write (its folder must exist).

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    TraceError
        An invalid trace (nothing is written).
    FileNotFoundError
        The folder does not exist.

    Examples
    --------
    >>> from g10core.trace import read_trace, write_trace
    >>> write_trace(read_trace("old.h5"), "new.h5")    # doctest: +SKIP
    """
    import h5py

    from .. import __version__

    path = Path(path)
    validate_trace(trace, path)
    if not path.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such directory", str(path.parent))
    with replacing(path) as tmp, h5py.File(tmp, "w", libver=LIBVER) as f:
        f.attrs["schema"] = SCHEMA
        f.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
        f.attrs["model"] = trace.model
        f.attrs["batch_size"] = np.int64(trace.batch_size)
        f.attrs["source"] = trace.source
        f.attrs["profiling_gpu"] = trace.profiling_gpu
        f.attrs["profiled_gpu"] = trace.profiled_gpu
        f.attrs["units"] = json.dumps(UNITS, sort_keys=True)
        f.attrs["creator"] = f"g10core {__version__}"
        for key, value in sorted(trace.attrs.items()):
            if key not in _RESERVED_ATTRS:
                f.attrs[key] = value.item() if isinstance(value, np.generic) else value

        tensors = np.empty(trace.n_tensors, TENSOR_DTYPE)
        tensors["size_bytes"] = trace.tensor_size_bytes
        tensors["is_global"] = trace.tensor_is_global
        tensors["role"] = trace.tensor_role
        tensors["layer"] = trace.tensor_layer
        _create(f, "tensors", tensors)
        _create(f, "tensor_names", _names(trace.tensor_name))

        kernels = np.empty(trace.n_kernels, KERNEL_DTYPE)
        kernels["time_ideal_ns"] = trace.kernel_time_ideal_ns
        kernels["time_fault_all_ns"] = trace.kernel_time_fault_all_ns
        kernels["time_fault_outputs_ns"] = trace.kernel_time_fault_outputs_ns
        kernels["workspace_bytes"] = trace.kernel_workspace_bytes
        _create(f, "kernels", kernels)
        _create(f, "kernel_names", _names(trace.kernel_name))

        acc = f.create_group("accesses", track_order=False)
        _create(acc, "offsets", trace.access_offsets)
        _create(acc, "tensor", trace.access_tensor)
        _create(acc, "mode", trace.access_mode)

        if trace.hints is not None:
            ds = _create(f, "hints", trace.hints)
            ds.attrs["policy"] = trace.hints_policy
        if trace.kernel_work is not None:
            work = np.empty(trace.n_kernels, KERNEL_WORK_DTYPE)
            for fld in KERNEL_WORK_DTYPE.names:
                work[fld] = getattr(trace.kernel_work, fld)
            ds = _create(f, "kernel_work", work)
            ds.attrs["units"] = json.dumps(KERNEL_WORK_UNITS, sort_keys=True)
        if trace.kernel_phase is not None:
            _create(f, "kernel_phase", trace.kernel_phase)
    return path


# ---- reader -------------------------------------------------------------------

def _h5_reason(exc: BaseException) -> str:
    """h5py's 'Unable to ... (detail)' -> 'detail', with the common cases in plain words."""
    msg = h5_reason(exc)
    if "file signature not found" in msg:
        return "not an HDF5 file"
    m = re.search(r"truncated file: eof = (\d+).*stored_eof = (\d+)", msg)
    if m:
        return f"truncated file ({m[1]} of {m[2]} bytes)"
    return msg


def _read_attr(f, path, name: str):
    """Root attribute ``name`` as stored, bytes decoded (UTF-8, bad bytes replaced); one that
    HDF5 cannot read is a TraceError naming it."""
    try:
        value = f.attrs[name]
    except H5_ERRORS as exc:
        raise TraceError(path, "/", f"unreadable attribute ({_h5_reason(exc)})", field=name) from None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _attr(f, path, name: str, kind: type):
    if name not in f.attrs:
        raise TraceError(path, "/", "missing root attribute", field=name)
    value = _read_attr(f, path, name)
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if kind is int and _is_int(value):
        return int(value)
    if kind is str and isinstance(value, str):
        return value
    raise TraceError(path, "/", f"must be {'an integer' if kind is int else 'a string'}, got {value!r}",
                     field=name)


def _dataset(f, path, name: str):
    import h5py

    try:
        ds = f.get(name)
    except H5_ERRORS as exc:
        raise TraceError(path, "/" + name, f"unreadable ({_h5_reason(exc)})") from None
    if ds is None:
        raise TraceError(path, "/" + name, "missing dataset")
    if not isinstance(ds, h5py.Dataset):
        raise TraceError(path, "/" + name, f"is a {type(ds).__name__}, expected a dataset")
    if len(ds.shape or ()) != 1:
        raise TraceError(path, "/" + name, f"must be 1-D, got shape {ds.shape}")
    return ds


def _load(ds, path):
    try:
        return ds[()]
    except H5_ERRORS as exc:
        raise TraceError(path, ds.name, f"unreadable data ({_h5_reason(exc)})") from None


def _column(arr: np.ndarray, dataset: str, fld, want, path) -> np.ndarray:
    """Field ``fld`` of ``arr`` as dtype ``want``, refusing lossy conversions."""
    if fld is not None:
        if arr.dtype.names is None or fld not in arr.dtype.names:
            have = ", ".join(arr.dtype.names or ()) or str(arr.dtype)
            raise TraceError(path, dataset, f"missing field (the dataset has: {have})", field=fld)
        arr = arr[fld]
    want = np.dtype(want)
    if arr.dtype.names is not None or not np.can_cast(arr.dtype, want, "safe"):
        raise TraceError(path, dataset, f"dtype {arr.dtype} cannot be read as {want}", field=fld)
    return np.ascontiguousarray(arr, dtype=want)


def _string_column(ds, path) -> np.ndarray:
    import h5py

    if h5py.check_string_dtype(ds.dtype) is None:
        raise TraceError(path, ds.name, f"dtype {ds.dtype}, expected strings")
    try:
        values = ds.asstr()[()]
    except H5_ERRORS as exc:
        raise TraceError(path, ds.name, f"unreadable strings ({_h5_reason(exc)})") from None
    return np.asarray(values.tolist() if values.size else [], dtype=str)


def read_trace(path) -> Trace:
    """Read and validate a trace file; any problem is a :class:`TraceError` naming it.

    A missing file is a ``FileNotFoundError``.  The file is closed before this
    returns (h5py handles do not pickle: open traces by path in each worker).

    Parameters
    ----------
    path : str or path
        A trace file (a name such as ``bert_base-b256`` is resolved by
        ``g10core.tracestore.resolve_trace``, not here).

    Returns
    -------
    Trace
        The validated trace.

    Raises
    ------
    TraceError
        Not a trace file, damaged, or invalid (one line naming file, dataset, row, field).
    FileNotFoundError
        No such file.

    Examples
    --------
    >>> from g10core.trace import read_trace
    >>> from g10core.tracestore import resolve_trace
    >>> read_trace(resolve_trace("bert_base-b256")).n_kernels     # doctest: +SKIP
    1369
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "no such trace file", str(path))
    if path.is_dir():
        raise TraceError(path, "/", "is a directory, not a trace file")
    if is_special_file(path):
        raise TraceError(path, "/", f"{NOT_A_REGULAR_FILE}, not a trace file")
    st = path.stat()
    if st.st_size == 0:       # (h5py would say only "file signature not found")
        raise TraceError(path, "/", "empty file (0 bytes), not an HDF5 file")
    key = None
    if _kept is not None:
        key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if key in _kept:
            _kept.move_to_end(key)
            return copy.deepcopy(_kept[key])     # the caller's own arrays, as a fresh read gives
    trace = _read_checked(path)
    if key is not None:
        _kept[key] = trace
        while len(_kept) > _kept_limit:
            _kept.popitem(last=False)
        return copy.deepcopy(trace)
    return trace


# Traces read before in this process, by file identity (path, device, inode, size, mtime): kept
# only inside ``keeping_read_traces`` (a reproduction's worker runs every policy on a few traces,
# and reading, checking and validating one costs as much as a short run).  None: nothing is kept.
_kept: OrderedDict | None = None
_kept_limit = 0


@contextmanager
def keeping_read_traces(limit: int = 32):
    """Within the block, :func:`read_trace` keeps the last ``limit`` traces it read and gives a
    file read again, unchanged (same path, inode, size and modification time), as a deep copy
    of the validated trace instead of parsing it again: the same values, arrays of its own.  (The 52
    shipped traces take 54 MB in memory together.)"""
    global _kept, _kept_limit
    saved = _kept, _kept_limit
    _kept, _kept_limit = OrderedDict(), int(limit)
    try:
        yield
    finally:
        _kept, _kept_limit = saved


def keep_read_traces(limit: int = 32) -> None:
    """:func:`keeping_read_traces` for the rest of this process (a pool worker's initializer)."""
    global _kept, _kept_limit
    _kept, _kept_limit = OrderedDict(), int(limit)


def _read_checked(path: Path) -> Trace:
    """Parse, check and validate the trace file ``path`` (which exists and is not empty)."""
    try:
        check_global_heaps(path)      # before h5py parses them: a damaged one can hang it
    except CorruptHDF5 as exc:
        raise TraceError(path, "/", str(exc)) from None
    except OSError as exc:
        raise TraceError(path, "/", f"cannot read the file ({exc.strerror or exc})") from None
    try:
        fields = read_safely(_read_file, path)   # in a child process if the file has no checksums
    except CorruptHDF5 as exc:
        raise TraceError(path, "/", str(exc)) from None
    version = fields["attrs"].get("schema_version")
    trace = Trace(**fields)
    validate_trace(trace, path)
    if version == 2:   # stored before the temporary role existed: its temporaries are unknown
        from .roles import refine_temporaries

        trace = replace(trace, tensor_role=refine_temporaries(trace, trace.tensor_role))
    return trace


def _read_file(path: Path) -> dict:
    import h5py

    try:
        # no HDF5 file lock: many sweep workers read one trace, and locks fail on some network file systems
        f = h5py.File(path, "r", locking=False)
    except H5_ERRORS as exc:
        raise TraceError(path, "/", f"cannot open as HDF5: {_h5_reason(exc)}") from None
    try:
        with f:
            return _read_fields(f, path)
    except TraceError:
        raise
    except H5_ERRORS as exc:   # damaged metadata h5py reports while we walk the file
        raise TraceError(path, "/", f"corrupt HDF5 file ({_h5_reason(exc)})") from None


def _read_fields(f, path) -> dict:
    """The Trace fields of an open file (read_trace validates them)."""
    import h5py

    if "schema" not in f.attrs:
        raise TraceError(path, "/", "missing root attribute: not a g10core trace", field="schema")
    schema = _attr(f, path, "schema", str)
    if schema != SCHEMA:
        raise TraceError(path, "/", f"got {schema!r}; not a {SCHEMA!r} file", field="schema")
    version = _attr(f, path, "schema_version", int)
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        newest = max(SUPPORTED_SCHEMA_VERSIONS)
        hint = "; upgrade g10core" if version > newest else ""
        raise TraceError(path, "/", f"version {version} is not supported (this g10core reads "
                         f"{', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))}){hint}", field="schema_version")
    model = _attr(f, path, "model", str)
    batch_size = _attr(f, path, "batch_size", int)
    source = _attr(f, path, "source", str)
    profiling_gpu = _attr(f, path, "profiling_gpu", str)
    # optional (added after g10core 0.1.0): a file without it was profiled on the G10 artifact's A100-40GB
    profiled_gpu = _attr(f, path, "profiled_gpu", str) if "profiled_gpu" in f.attrs else DEFAULT_GPU
    units_text = _attr(f, path, "units", str)
    try:
        units = json.loads(units_text)
        if not isinstance(units, dict):
            raise ValueError("not an object")
    except ValueError as exc:
        raise TraceError(path, "/", f"not a JSON object ({exc})", field="units") from None
    for key, unit in UNITS.items():
        if key not in units:
            raise TraceError(path, "/", f"no unit for {key} (expected {unit!r})", field="units")
        if units[key] != unit:
            raise TraceError(path, "/", f"{key} is in {units[key]!r}, this reader expects {unit!r}",
                             field="units")
    attrs = {}
    for key in f.attrs:
        if key in _RESERVED_ATTRS and key not in ("creator", "schema_version"):
            continue  # these are Trace fields (schema_version/creator: kept for information)
        value = _read_attr(f, path, key)
        attrs[key] = value.item() if isinstance(value, np.generic) else value

    tensors = _load(_dataset(f, path, "tensors"), path)
    size_bytes = _column(tensors, "/tensors", "size_bytes", np.int64, path)
    is_global_raw = _column(tensors, "/tensors", "is_global", np.uint8, path)
    bad = np.flatnonzero(is_global_raw > 1)
    if bad.size:
        raise TraceError(path, "/tensors", f"got {int(is_global_raw[bad[0]])}; must be 0 or 1", bad[0], "is_global")
    tensor_name = _string_column(_dataset(f, path, "tensor_names"), path)
    role = layer = None   # version 1: inferred when the Trace is made
    if version >= 2:
        role = _column(tensors, "/tensors", "role", np.int8, path)
        layer = _column(tensors, "/tensors", "layer", np.int32, path)
        bad = np.flatnonzero(role > MAX_ROLE_CODE[version])
        if bad.size:
            raise TraceError(path, "/tensors", f"got {int(role[bad[0]])}; schema_version {version} allows role codes "
                             f"0..{MAX_ROLE_CODE[version]} only", bad[0], "role")

    kernels = _load(_dataset(f, path, "kernels"), path)
    cols = {fld: _column(kernels, "/kernels", fld, np.float64, path)
            for fld in ("time_ideal_ns", "time_fault_all_ns", "time_fault_outputs_ns")}
    workspace = _column(kernels, "/kernels", "workspace_bytes", np.int64, path)
    kernel_name = _string_column(_dataset(f, path, "kernel_names"), path)

    offsets = _column(_load(_dataset(f, path, "accesses/offsets"), path), "/accesses/offsets", None,
                      np.int64, path)
    a_tensor = _column(_load(_dataset(f, path, "accesses/tensor"), path), "/accesses/tensor", None,
                       np.int32, path)
    a_mode = _column(_load(_dataset(f, path, "accesses/mode"), path), "/accesses/mode", None,
                     np.uint8, path)

    hints, hints_policy = None, ""
    if "hints" in f:
        from ..codes import HINT_DTYPE

        ds = _dataset(f, path, "hints")
        raw = _load(ds, path)
        hints = np.empty(raw.shape[0], HINT_DTYPE)
        for fld in HINT_DTYPE.names:
            hints[fld] = _column(raw, "/hints", fld, HINT_DTYPE[fld], path)
        policy = ds.attrs.get("policy", "")
        hints_policy = policy.decode() if isinstance(policy, bytes) else str(policy)

    kernel_work = None
    if version >= 4 and "kernel_work" in f:
        from .physical import KernelWork

        ds = _dataset(f, path, "kernel_work")
        units_attr = ds.attrs.get("units", "")
        units_attr = units_attr.decode() if isinstance(units_attr, bytes) else str(units_attr)
        try:
            work_units = json.loads(units_attr)
        except ValueError:
            work_units = None
        if work_units != KERNEL_WORK_UNITS:
            raise TraceError(path, "/kernel_work", f"units {units_attr!r}; this reader expects "
                             f"{json.dumps(KERNEL_WORK_UNITS, sort_keys=True)}", field="units")
        raw = _load(ds, path)
        kernel_work = KernelWork(**{fld: _column(raw, "/kernel_work", fld, KERNEL_WORK_DTYPE[fld], path)
                                    for fld in KERNEL_WORK_DTYPE.names})

    kernel_phase = None
    if version >= 5 and "kernel_phase" in f:
        kernel_phase = _column(_load(_dataset(f, path, "kernel_phase"), path), "/kernel_phase", None, np.int32, path)

    return dict(
        model=model,
        batch_size=batch_size,
        tensor_size_bytes=size_bytes,
        tensor_is_global=is_global_raw.astype(bool),
        tensor_name=tensor_name,
        kernel_name=kernel_name,
        kernel_time_ideal_ns=cols["time_ideal_ns"],
        kernel_time_fault_all_ns=cols["time_fault_all_ns"],
        kernel_time_fault_outputs_ns=cols["time_fault_outputs_ns"],
        kernel_workspace_bytes=workspace,
        access_offsets=offsets,
        access_tensor=a_tensor,
        access_mode=a_mode,
        source=source,
        profiling_gpu=profiling_gpu,
        profiled_gpu=profiled_gpu,
        attrs=attrs,
        hints=hints,
        hints_policy=hints_policy,
        tensor_role=role,
        tensor_layer=layer,
        kernel_work=kernel_work,
        kernel_phase=kernel_phase,
    )


# ---- summary ------------------------------------------------------------------

GiB = 1 << 30


def kernel_io_bytes(access_offsets, access_tensor, access_mode, tensor_size_bytes) -> tuple:
    """(bytes read, bytes written) per kernel, float64: the sizes of the tensors each kernel reads
    and writes (a tensor read and written counts on both sides), O(A) over the CSR accesses."""
    offsets = np.asarray(access_offsets)
    mode = np.asarray(access_mode)
    size = np.asarray(tensor_size_bytes, np.float64)[np.asarray(access_tensor)]

    def per_kernel(values):
        cum = np.concatenate(([0.0], np.cumsum(values)))
        return cum[offsets[1:]] - cum[offsets[:-1]]

    return (per_kernel(np.where(mode & ACCESS_READ, size, 0.0)),
            per_kernel(np.where(mode & ACCESS_WRITE, size, 0.0)))


def kernel_working_set_bytes(trace: Trace) -> np.ndarray:
    """Page-rounded bytes each kernel touches (inputs + outputs), int64, O(A)."""
    pages = trace.tensor_pages[trace.access_tensor]
    cum = np.concatenate(([0], np.cumsum(pages, dtype=np.int64)))
    return (cum[trace.access_offsets[1:]] - cum[trace.access_offsets[:-1]]) * PAGE_SIZE_BYTES


def summarize(trace: Trace, gpu_memory_GiB: float = 40.0) -> dict:
    """The numbers ``g10sim trace info`` prints.

    Parameters
    ----------
    trace : Trace
        The trace.
    gpu_memory_GiB : float
        The GPU memory the memory ratio is taken against.

    Returns
    -------
    dict
        Plain JSON-able values, units in the keys (``footprint_GiB``, ``ideal_time_s``, ...).
    """
    from .roles import bytes_by_role
    from .validity import trace_family, validity_line

    if not (gpu_memory_GiB > 0 and np.isfinite(gpu_memory_GiB)):
        raise ValueError(f"gpu_memory_GiB = {gpu_memory_GiB}: must be > 0")
    ws = kernel_working_set_bytes(trace)
    k_max = int(np.argmax(ws))
    return {
        "model": trace.model,
        "batch_size": int(trace.batch_size),
        "schema_version": trace.attrs.get("schema_version"),  # None: not read from a file
        "n_kernels": trace.n_kernels,
        "n_tensors": trace.n_tensors,
        "n_global_tensors": int(trace.tensor_is_global.sum()),
        "n_accesses": trace.n_accesses,
        "footprint_bytes": trace.footprint_bytes,
        "footprint_GiB": trace.footprint_bytes / GiB,
        "global_bytes": trace.global_bytes,
        "global_GiB": trace.global_bytes / GiB,
        "gpu_memory_GiB": float(gpu_memory_GiB),
        "memory_ratio_percent": 100.0 * trace.footprint_bytes / (gpu_memory_GiB * GiB),
        "max_kernel_working_set_bytes": int(ws[k_max]),
        "max_kernel_working_set_kernel": k_max,
        "ideal_time_s": trace.ideal_time_ns * 1e-9,
        "source": trace.source,
        "profiling_gpu": trace.profiling_gpu,
        "profiled_gpu": trace.profiled_gpu,
        "time_family": trace_family(trace),
        "time_validity": validity_line(trace),
        "n_hints": 0 if trace.hints is None else int(trace.hints.shape[0]),
        "hints_policy": trace.hints_policy,
        # tensor bytes (not page-rounded) per role; a version-1 file's roles are inferred
        "bytes_by_role": bytes_by_role(trace),
    }
