"""Record the ATen kernels of a PyTorch training iteration on the meta device (needs torch).

:class:`KernelRecorder` is a ``TorchDispatchMode``: every ATen operator that reaches the
dispatcher passes through it, in execution order, with its arguments and results.  On
the meta device nothing is computed or allocated, but every result has its true shape,
dtype and storage, so the recorder sees exactly which storages each kernel reads and
writes and how large they are.

Rules (a trace tensor is a storage: views share their base's storage):

* an operator whose results all alias its inputs and that writes nothing (``view``,
  ``t``, ``detach``, ``expand``, ...) is not a kernel; neither is an allocation that
  computes nothing (``empty*``) nor an operator on host (CPU) tensors only (the
  optimizer's step counter);
* an argument the schema marks as written (``Tensor(a!)``) is written: read and written
  for an in-place update (``add_``, ``addcmul_``), written only for an overwrite
  (``copy_``, ``fill_``, ``zero_``, random fills, ``out=``) that covers its whole storage
  (a partial overwrite keeps the rest of the storage, so it also counts as a read);
* a result in a storage no input has is a new tensor, written by this kernel;
* every other device-tensor argument is read; host scalars passed to device kernels are
  kernel arguments, not tensors.

Each kernel is also given a class and an operator name of the shipped profiles
(:data:`SHIPPED_OP`) for the time model, its FLOPs (``torch.utils.flop_counter`` where it
has a formula; one per element of the largest result otherwise) and the bytes it moves.
"""
from __future__ import annotations

import math

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ..errors import CaptureError  # noqa: F401 (raised here; importable from here)
from ..workload.trace import ACCESS_READ, ACCESS_WRITE, PAGE_SIZE_BYTES
from ..workload.kerneltime import ALLOC_OPS as _ALLOC_OPS
from ..workload.kerneltime import OVERWRITE_OPS as _OVERWRITE_OPS
from ..workload.kerneltime import aten_kernel_class


PHASES = ("forward", "backward", "optimizer")


def storage_key(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


def _view_bytes(t: torch.Tensor) -> int:
    """Bytes a kernel touches through ``t`` (an expanded view touches its storage once)."""
    return min(t.numel() * t.element_size(), t.untyped_storage().nbytes())


class KernelRecorder(TorchDispatchMode):
    """Records kernels and the storages they touch; see the module docstring.

    ``roles``: storage key -> (tensor name, is_global) for storages that exist before
    the iteration (parameters, buffers, optimizer state, inputs); ``param_keys``: the
    parameters' storage keys; ``param_shapes``: their shapes (a backward matrix product
    that produces one is a weight gradient); ``workspace_fn(op, kernel_class, read_bytes)``
    gives a kernel's scratch bytes.
    """

    def __init__(self, device: torch.device, roles: dict, param_keys: set, param_shapes: set,
                 workspace_fn=None):
        super().__init__()
        self.device = torch.device(device)
        self.roles = roles
        self.param_keys = param_keys
        self.param_shapes = param_shapes
        self.workspace_fn = workspace_fn
        self.phase = "forward"
        self.phase_start = {"forward": 0}
        # tensors
        self.tensor_id = {}        # storage key -> tensor id
        self.tensor_size = []      # bytes
        self.tensor_name = []
        self.tensor_global = []
        self._alive = []           # storages kept alive: a freed storage's address must not be reused
        # kernels
        self.kernel_name = []
        self.kernel_op = []
        self.kernel_class = []
        self.kernel_flops = []
        self.kernel_bytes = []
        self.kernel_dtype = []
        self.kernel_workspace = []
        self.access_tensor = []
        self.access_mode = []
        self.access_offsets = [0]

    # ---- bookkeeping -----------------------------------------------------------
    def set_phase(self, phase: str):
        self.phase = phase
        self.phase_start[phase] = len(self.kernel_name)

    def _tensor(self, t: torch.Tensor, label: str, index: int = 0) -> int:
        key = storage_key(t)
        tid = self.tensor_id.get(key)
        if tid is None:
            st = t.untyped_storage()
            tid = len(self.tensor_size)
            self.tensor_id[key] = tid
            self._alive.append(st)
            name, is_global = self.roles.get(key, (None, False))
            self.tensor_size.append(max(1, int(st.nbytes())))
            suffix = f".{index}" if index else ""
            self.tensor_name.append(name or f"{label}#{len(self.kernel_name)}{suffix}")
            self.tensor_global.append(bool(is_global))
        return tid

    def _on_device(self, t) -> bool:
        return isinstance(t, torch.Tensor) and t.device == self.device

    def _classify(self, packet: str, reads_param: bool, out_shapes) -> tuple[str, str]:
        """(class, operator name for the calibration) of a kernel."""
        return aten_kernel_class(packet, self.phase, reads_param,
                                 any(s in self.param_shapes for s in out_shapes))

    # ---- the dispatch hook -----------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        try:
            self._record(func, args, kwargs, out)
        except CaptureError:
            raise
        except Exception as exc:  # a recorder bug must name the operator
            raise CaptureError(f"recording {func} failed: {type(exc).__name__}: {exc}") from exc
        return out

    def _record(self, func, args, kwargs, out):
        packet = func._overloadpacket.__name__
        if packet in _ALLOC_OPS or func.is_view:
            return
        # arguments: (tensor, written, overwrite-only) in schema order
        schema_args = func._schema.arguments
        operands = []
        for i, a in enumerate(schema_args):
            if i < len(args):
                value = args[i]
            elif a.name in kwargs:
                value = kwargs[a.name]
            else:
                continue
            written = a.alias_info is not None and a.alias_info.is_write
            overwrite = written and (a.is_out or packet in _OVERWRITE_OPS)
            for t in (value if isinstance(value, (list, tuple)) else (value,)):
                if self._on_device(t):
                    operands.append((t, written, overwrite))
        results = [t for t in tree_flatten(out)[0] if self._on_device(t)]
        if not operands and not results:
            return  # host-only (step counters) or no tensors at all

        operand_keys = {storage_key(t) for t, _, _ in operands}
        modes = {}      # storage key -> mode, in first-seen order
        tensors = {}    # storage key -> a tensor of it
        nbytes = 0
        for t, written, overwrite in operands:
            key = storage_key(t)
            if written and overwrite and t.numel() * t.element_size() >= t.untyped_storage().nbytes():
                mode = ACCESS_WRITE
            elif written:
                mode = ACCESS_READ | ACCESS_WRITE
            else:
                mode = ACCESS_READ
            if not (modes.get(key, 0) & mode == mode):
                nbytes += _view_bytes(t) * ((mode & ACCESS_READ != 0) + (mode & ACCESS_WRITE != 0))
            modes[key] = modes.get(key, 0) | mode
            tensors.setdefault(key, t)
        new_results = []
        for t in results:
            key = storage_key(t)
            if key in operand_keys or key in modes:
                continue  # a view of an operand, or the in-place result itself
            modes[key] = ACCESS_WRITE
            tensors[key] = t
            new_results.append(t)
            nbytes += _view_bytes(t)
        if not any(m & ACCESS_WRITE for m in modes.values()):
            return  # reads only and makes no new storage: a view or metadata query
        if any(key in self.param_keys for key, m in modes.items() if m & ACCESS_READ):
            reads_param = True
        else:
            reads_param = False
        out_shapes = {tuple(t.shape) for t in new_results} | {tuple(t.shape)[::-1] for t in new_results}
        cls, op = self._classify(packet, reads_param, out_shapes)

        # FLOPs: the flop counter's formula for matrix products and convolutions
        from torch.utils.flop_counter import flop_registry

        formula = flop_registry.get(func._overloadpacket)
        largest = max(tensors.values(), key=lambda x: x.numel())
        flops = float(largest.numel())
        if formula is not None:
            try:
                flops = float(formula(*args, **kwargs, out_val=out))
            except Exception:  # a formula that does not take this overload: keep the element count
                pass
        floats = [t for t in tensors.values() if t.is_floating_point()]
        dtype = str(max(floats, key=lambda x: x.numel()).dtype if floats else largest.dtype).replace("torch.", "")

        k = len(self.kernel_name)
        label = f"{'fwd' if self.phase == 'forward' else 'bwd' if self.phase == 'backward' else 'opt'}:{packet}"
        # inputs first (schema order), then outputs that are not inputs
        read_bytes = 0
        for key, mode in modes.items():
            if mode & ACCESS_READ:
                tid = self._tensor(tensors[key], label)
                self.access_tensor.append(tid)
                self.access_mode.append(mode)
                read_bytes += self.tensor_size[tid]
        n_new = 0
        for key, mode in modes.items():
            if not mode & ACCESS_READ:
                self.access_tensor.append(self._tensor(tensors[key], label, n_new))
                self.access_mode.append(mode)
                n_new += key not in self.roles
        workspace = int(self.workspace_fn(op, cls, read_bytes)) if self.workspace_fn else 0
        if workspace > 0:  # a scratch tensor only this kernel writes, page-rounded (as in the profiles)
            tid = len(self.tensor_size)
            self.tensor_size.append(-(-workspace // PAGE_SIZE_BYTES) * PAGE_SIZE_BYTES)
            self.tensor_name.append(f"workspace:{packet}#{k}")
            self.tensor_global.append(False)
            self.access_tensor.append(tid)
            self.access_mode.append(ACCESS_WRITE)
        self.access_offsets.append(len(self.access_tensor))
        self.kernel_name.append(f"aten::{packet}")
        self.kernel_op.append(op)
        self.kernel_class.append(cls)
        self.kernel_flops.append(flops if math.isfinite(flops) else 0.0)
        self.kernel_bytes.append(float(nbytes))
        self.kernel_dtype.append(dtype)
        self.kernel_workspace.append(workspace)
