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
from ..workload import physical as _ph


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
                 workspace_fn=None, allow_tf32_matmul: bool = False, allow_tf32_conv: bool = True,
                 sms: int = 108):
        super().__init__()
        self.sms = sms             # the capture GPU's SMs: the GEMM tiles a library would pick for it
        # PyTorch's defaults on Ampere and later: cuDNN convolutions in fp32 run on TF32 tensor cores
        # (torch.backends.cudnn.allow_tf32 = True), fp32 matrix products do not
        # (torch.backends.cuda.matmul.allow_tf32 = False since PyTorch 1.12)
        self.allow_tf32_matmul = allow_tf32_matmul
        self.allow_tf32_conv = allow_tf32_conv
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
        self.kernel_unit = []      # physical.UNIT_*
        self.kernel_kind = []      # physical.KIND_*
        self.kernel_tiles = []     # GEMM output tiles (0: none)
        self.kernel_fill = []      # share of those tiles' area that is real output (tile quantization)
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
        unit, kind, tiles, fill = kernel_unit_kind_tiles(packet, cls, dtype, out, self.allow_tf32_matmul,
                                                         self.allow_tf32_conv, self.sms, flops)
        nbytes += _second_pass_bytes(packet, args)
        if kind in (_ph.KIND_ATTENTION_FWD, _ph.KIND_ATTENTION_BWD) and _is_causal(func, args, kwargs):
            flops /= 2.0   # a causal fused kernel skips the masked half of its blocks (FlashAttention)

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
        self.kernel_unit.append(unit)
        self.kernel_kind.append(kind)
        self.kernel_tiles.append(tiles)
        self.kernel_fill.append(fill)
        self.kernel_workspace.append(workspace)


# ---- the unit, kind and GEMM tiles of a kernel (the physical kernel-time model's inputs) -------------

GEMM_CLASSES = frozenset({"linear", "linear_bwd_input", "bmm", "conv_fwd", "conv_bwd_input", "conv_bwd_weight"})
ATTENTION_FWD_OPS = frozenset({"_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                               "_scaled_dot_product_cudnn_attention", "_flash_attention_forward",
                               "_efficient_attention_forward"})
ATTENTION_BWD_OPS = frozenset({p + "_backward" for p in ATTENTION_FWD_OPS})
CONV_OPS = frozenset({"convolution", "_convolution", "convolution_backward", "cudnn_convolution"})


def _shape(x):
    return tuple(x.shape) if isinstance(x, torch.Tensor) else None


def _is_causal(func, args, kwargs) -> bool:
    for i, a in enumerate(func._schema.arguments):
        if a.name == "is_causal":
            value = args[i] if i < len(args) else kwargs.get("is_causal", False)
            return bool(value)
    return False


BATCH_NORM_FWD = frozenset({"native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
                            "cudnn_batch_norm"})
BATCH_NORM_BWD = frozenset({"native_batch_norm_backward", "cudnn_batch_norm_backward"})


def _second_pass_bytes(packet: str, args) -> int:
    """Bytes a training batch normalisation reads a second time.

    Its statistics are per channel over the whole batch (N x H x W values), so the input is
    read once for them and once more to normalise it (forward), and the input and output
    gradient once for the two reductions and once more for the input gradient (backward): the
    activations, hundreds of MB, do not stay in the L2 cache (40 MiB on an A100) between the
    passes.  Layer normalisation reduces over one row, which stays on chip: one pass."""
    base = packet[:-1] if packet.endswith("_") else packet
    if base in BATCH_NORM_FWD:
        reread = args[:1]
    elif base in BATCH_NORM_BWD:
        reread = args[:2]
    else:
        return 0
    return sum(_view_bytes(t) for t in reread if isinstance(t, torch.Tensor))


def kernel_unit_kind_tiles(packet: str, cls: str, dtype: str, out, allow_tf32_matmul: bool = False,
                           allow_tf32_conv: bool = True, sms: int = 108, flops: float = 0.0) -> tuple[int, int, int, float]:
    """(unit, kind, output tiles, tile fill) of a kernel for :mod:`g10core.workload.physical`.

    ``sms``: the SMs of the GPU the library picks its tiles for (the capture's GPU); ``flops``: the
    kernel's FLOPs, from which a GEMM's reduction length follows (``flops / (2 x output elements)``)
    for split-K (:func:`g10core.workload.physical.best_tile`).
    Matrix products, convolutions and fused attention run on tensor cores in bf16 and fp16 (and
    in TF32 for fp32 convolutions, and fp32 matrix products with ``allow_tf32_matmul``); everything
    else runs on the CUDA cores.  Tiles: a GEMM's output tiles of 128 x 128 (a convolution is the
    implicit GEMM of its output pixels by its output channels; its backward that of the input
    gradient); fused attention, one tile of 128 queries (forward) or keys (backward) per head.
    The fill is the share of the tiles' area that holds real output (tile quantization: an
    output of 64 channels fills half of a 128-wide tile).
    """
    base = packet[:-1] if packet.endswith("_") else packet
    attention = 1 if base in ATTENTION_FWD_OPS else 2 if base in ATTENTION_BWD_OPS else 0
    gemm = attention == 0 and (cls in GEMM_CLASSES or base in CONV_OPS)
    if dtype in ("float64",):
        unit = _ph.UNIT_CUDA_FP64
    elif not (gemm or attention):
        unit = _ph.UNIT_CUDA_FP32
    elif dtype == "bfloat16":
        unit = _ph.UNIT_TENSOR_BF16
    elif dtype == "float16":
        unit = _ph.UNIT_TENSOR_FP16
    elif (base in CONV_OPS and allow_tf32_conv) or (base not in CONV_OPS and allow_tf32_matmul):
        unit = _ph.UNIT_TENSOR_TF32
    else:
        unit = _ph.UNIT_CUDA_FP32
    if attention:
        kind = _ph.KIND_ATTENTION_FWD if attention == 1 else _ph.KIND_ATTENTION_BWD
    else:
        kind = _ph.KIND_GEMM if gemm else _ph.KIND_OTHER
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if attention:
        o = _shape(outs[0] if attention == 1 else (outs[1] if len(outs) > 1 else None))
        if not o or len(o) != 4:
            return unit, kind, 0, 1.0
        b, h, rows, d = o     # one tile of 128 queries (forward) or keys (backward) per head
        tiles = _ph.gemm_tiles(rows, d, b * h, _ph.ATTENTION_TILE, max(d, 1))
        return unit, kind, int(tiles), float(b * h * rows / (tiles * _ph.ATTENTION_TILE))
    if not gemm:
        return unit, kind, 0, 1.0
    tensors = [x for x in outs if isinstance(x, torch.Tensor)]
    if base == "convolution_backward":
        # two GEMMs in one kernel: the input gradient (pixels x input channels) and the weight
        # gradient (output channels x input channels x kernel area, its long reduction split over
        # the SMs); their combined efficiency goes in the fill, with no separate wave term
        grad_in = outs[0] if isinstance(outs[0], torch.Tensor) else None
        grad_w = outs[1] if len(outs) > 1 and isinstance(outs[1], torch.Tensor) else None
        parts = []
        if grad_in is not None and grad_in.dim() >= 3:
            pixels = math.prod(grad_in.shape[2:]) * grad_in.shape[0]
            t, f = _ph.best_tile(pixels, grad_in.shape[1], 1, sms)
            parts.append(f * _ph.wave_fraction(t, sms))
        if grad_w is not None and grad_w.dim() >= 2:
            t, f = _ph.best_tile(grad_w.shape[0], math.prod(grad_w.shape[1:]), 1, sms, split_k=True)
            parts.append(f)
        if not parts:
            return unit, kind, 0, 1.0
        return unit, kind, 0, float(len(parts) / sum(1.0 / p for p in parts))
    s = _shape(tensors[0]) if tensors else None
    if s is None:
        return unit, kind, 0, 1.0
    if base in CONV_OPS and len(s) >= 3:        # (N, C, *spatial): output pixels x output channels
        m, n, batch = math.prod(s[2:]) * s[0], s[1], 1
    elif len(s) >= 2:
        m, n, batch = s[-2], s[-1], math.prod(s[:-2])
    else:
        m, n, batch = s[0], 1, 1
    k = int(flops / (2.0 * m * n * batch)) if m * n * batch else 0
    tiles, fill = _ph.best_tile(m, n, batch, sms, k=k)
    return unit, kind, int(tiles), float(fill)
