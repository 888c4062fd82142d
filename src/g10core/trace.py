"""Kernel-level traces of one DNN training iteration.

A :class:`Trace` is the in-memory form every other module consumes: numpy arrays,
one row per tensor and per kernel, and the kernel->tensor accesses as CSR.  The
HDF5 file format (schema ``g10core-trace``) is documented in ``traces/README.md``.

Virtual layout (the one the published G10 simulator uses): every tensor is rounded
up to whole pages; global tensors are laid out first, in tensor order, then every
other tensor, in tensor order; no address is reused within an iteration.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

PAGE_SIZE_BYTES = 4096

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
    profiling_gpu: str = ""
    attrs: dict = field(default_factory=dict)

    # ---- sizes -------------------------------------------------------------
    @property
    def n_kernels(self) -> int:
        return int(self.kernel_name.shape[0])

    @property
    def n_tensors(self) -> int:
        return int(self.tensor_size_bytes.shape[0])

    @property
    def n_accesses(self) -> int:
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
        return int(self.tensor_pages.sum())

    @property
    def global_bytes(self) -> int:
        return int(self.tensor_pages[self.tensor_is_global].sum()) * PAGE_SIZE_BYTES

    @property
    def ideal_time_ns(self) -> float:
        return float(self.kernel_time_ideal_ns.sum())

    # ---- accesses ----------------------------------------------------------
    def kernel_accesses(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(tensor ids, modes) of kernel ``k``, in fault-queue order."""
        lo, hi = self.access_offsets[k], self.access_offsets[k + 1]
        return self.access_tensor[lo:hi], self.access_mode[lo:hi]

    def kernel_inputs(self, k: int) -> np.ndarray:
        t, m = self.kernel_accesses(k)
        return t[(m & ACCESS_READ) != 0]

    def kernel_outputs(self, k: int) -> np.ndarray:
        """Tensors written by kernel ``k`` (including those it also reads)."""
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
