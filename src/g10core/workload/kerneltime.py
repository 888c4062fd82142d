"""Kernel-time model of a captured trace: a roofline for ``t11`` and a fault-cost model for ``t10``/``t00``.

A trace needs three times per kernel (``traces/README.md``): ``t11`` with every tensor
resident, ``t10`` with the outputs page-faulting under UVM and ``t00`` with inputs and
outputs faulting.  A capture on a CPU measures none of them, so they are predicted from
what the capture knows about each kernel (:class:`KernelFeatures`): its class, its
floating-point operations, the bytes it moves, and the bytes of the tensors it reads and
writes.

``t11`` (roofline of the profiling GPU, :class:`ProfilingGPU`, with per-class efficiencies)::

    t11 = overhead_us + max(flops / (compute_efficiency * peak_flops(dtype)),
                            bytes / (memory_efficiency * memory_bandwidth))

``t10`` and ``t00`` (fault cost: a fixed cost per kernel plus the faulting bytes over an
effective fault bandwidth, per class)::

    t10 = t11 + [out_bytes > 0] * (out_fault_fixed_us + out_bytes / out_fault_GBps)
    t00 = t10 + [in_bytes > 0]  * (in_fault_fixed_us  + in_bytes  / in_fault_GBps)

so ``t00 >= t10 >= t11 > 0`` always.  The coefficients of every class are fitted on the
shipped traces' measured A100 times by :mod:`g10core.capture.calibrate` and shipped as a
versioned :class:`Calibration` (package data).  Nothing here needs torch.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path

import numpy as np

from ..files import read_text
from ..gpus import DEFAULT_GPU, gpu_model
from .trace import ACCESS_READ, ACCESS_WRITE, PAGE_SIZE_BYTES, Trace, kernel_io_bytes

# Kernel classes.  Every kernel has an operator name (for the shipped traces the kernel's
# name, e.g. ``Add_Forward``; a captured ATen kernel gets the shipped name of the same
# operation where there is one, SHIPPED_OP below) and a class.  Its coefficients are
# those of its operator when the calibration has them (enough measured kernels of it),
# else those of its class, else "default" (fitted on every kernel).
KERNEL_CLASSES = (
    "linear",            # matrix multiply with a weight: Linear forward, weight gradient
    "linear_bwd_input",  # input gradient of a Linear (grad_out @ W): a class of its own in the A100 profiles
    "bmm",               # batched matrix multiply (attention scores and context), forward and backward
    "conv_fwd",
    "conv_bwd_input",
    "conv_bwd_weight",
    "elementwise",       # pointwise arithmetic, activations, dropout, gradient accumulation, broadcasts
    "reduction",         # sums and means over a dimension, pooling forward, losses, row-wise norms
    "pool_bwd",          # pooling backward
    "norm",              # batch normalisation forward and backward
    "softmax",
    "optimizer",         # everything the optimizer step runs (parameter and state updates)
    "gather",            # embedding lookups and their scatter-add backward
    "copy",              # concatenation (layout copies such as clone are "elementwise")
    "load",              # loading the input batch
)
DEFAULT_CLASS = "default"
ALL_CLASSES = KERNEL_CLASSES + (DEFAULT_CLASS,)

# ATen operator (packet name, in-place "_" stripped) -> (class, shipped operator in the
# forward pass, shipped operator in the backward pass).  None: no shipped counterpart
# (the class's coefficients apply).  mm/addmm are decided by their operands (recorder._classify).
SHIPPED_OP = {
    "bmm": ("bmm", "BatchMatMul_Forward", "BatchMatMul_Backward"),
    "baddbmm": ("bmm", "BatchMatMul_Forward", "BatchMatMul_Backward"),
    "convolution": ("conv_fwd", "Conv2d_Forward", "Conv2d_Forward"),
    "_convolution": ("conv_fwd", "Conv2d_Forward", "Conv2d_Forward"),
    "convolution_backward": ("conv_bwd_weight", "Conv2d_Backward_Weight", "Conv2d_Backward_Weight"),
    # autograd sums the gradients of a tensor used twice with add: the artifact's Add_MultiGredient
    "add": ("elementwise", "Add_Forward", "Add_MultiGredient"),
    "sub": ("elementwise", "Subtract_Forward", "Subtract_Backward"),
    "rsub": ("elementwise", "Subtract_Forward", "Subtract_Backward"),
    "mul": ("elementwise", "Multiply_Forward", "Multiply_Backward"),
    "div": ("elementwise", "Divide_Forward", "Divide_Backward_A"),
    "pow": ("elementwise", "Power_Forward", "Power_Backward"),
    "sqrt": ("elementwise", "Sqrt_Forward", "Sqrt_Backward"),
    "rsqrt": ("elementwise", "Sqrt_Forward", "Sqrt_Backward"),
    "tanh": ("elementwise", "Tanh_Forward", "Tanh_Forward"),
    "tanh_backward": ("elementwise", "Tanh_Backward", "Tanh_Backward"),
    "relu": ("elementwise", "ReLU_Forward", "ReLU_Forward"),
    "threshold_backward": ("elementwise", "ReLU_Backward", "ReLU_Backward"),
    "gelu": ("elementwise", "Erf_Forward", "Erf_Forward"),
    "gelu_backward": ("elementwise", "Erf_Backward", "Erf_Backward"),
    "native_dropout": ("elementwise", "Dropout_Forward", "Dropout_Forward"),
    "native_dropout_backward": ("elementwise", "Dropout_Backward", "Dropout_Backward"),
    "sum": ("reduction", "Sum_Forward", "Sum_Forward"),
    "mean": ("reduction", "Sum_Forward", "Sum_Forward"),
    "amax": ("reduction", None, None),
    "max": ("reduction", None, None),
    "var_mean": ("reduction", None, None),
    "linalg_vector_norm": ("reduction", None, None),
    "native_layer_norm": ("reduction", None, None),
    "native_layer_norm_backward": ("reduction", None, None),
    "nll_loss_forward": ("reduction", "makeLoss", "makeLoss"),
    "nll_loss_backward": ("elementwise", None, None),
    "_softmax": ("softmax", "SoftmaxBasic_Forward", "SoftmaxBasic_Forward"),
    "_safe_softmax": ("softmax", "SoftmaxBasic_Forward", "SoftmaxBasic_Forward"),
    "_log_softmax": ("softmax", "SoftmaxBasic_Forward", "SoftmaxBasic_Forward"),
    "_softmax_backward_data": ("softmax", "SoftmaxBasic_Backward", "SoftmaxBasic_Backward"),
    "_log_softmax_backward_data": ("softmax", "SoftmaxBasic_Backward", "SoftmaxBasic_Backward"),
    "embedding": ("gather", "GatherV2_Forward", "GatherV2_Forward"),
    "embedding_dense_backward": ("gather", "GatherV2_Backward", "GatherV2_Backward"),
    "index_select": ("gather", "GatherV2_Forward", "GatherV2_Forward"),
    "gather": ("gather", "GatherV2_Forward", "GatherV2_Forward"),
    "index_add": ("gather", "GatherV2_Backward", "GatherV2_Backward"),
    "scatter_add": ("gather", "GatherV2_Backward", "GatherV2_Backward"),
    "cat": ("copy", "Concat_Forward", "Concat_Backward"),
    "native_batch_norm": ("norm", "BatchNorm2d_Forward", "BatchNorm2d_Forward"),
    "_native_batch_norm_legit": ("norm", "BatchNorm2d_Forward", "BatchNorm2d_Forward"),
    "_native_batch_norm_legit_functional": ("norm", "BatchNorm2d_Forward", "BatchNorm2d_Forward"),
    "native_batch_norm_backward": ("norm", "BatchNorm2d_Backward", "BatchNorm2d_Backward"),
    "max_pool2d_with_indices": ("reduction", "MaxPool2d_Forward", "MaxPool2d_Forward"),
    "max_pool2d_with_indices_backward": ("pool_bwd", "MaxPool2d_Backward", "MaxPool2d_Backward"),
    "_adaptive_avg_pool2d": ("reduction", "AdaptiveAvgPool2d_Forward", "AdaptiveAvgPool2d_Forward"),
    "_adaptive_avg_pool2d_backward": ("pool_bwd", "AdaptiveAvgPool2d_Backward", "AdaptiveAvgPool2d_Backward"),
    "avg_pool2d": ("reduction", None, None),
    # fused attention (scores, softmax and weighted sum in one kernel): batched matrix products
    "_scaled_dot_product_flash_attention": ("bmm", "BatchMatMul_Forward", "BatchMatMul_Forward"),
    "_scaled_dot_product_flash_attention_backward": ("bmm", "BatchMatMul_Backward", "BatchMatMul_Backward"),
    "_scaled_dot_product_efficient_attention": ("bmm", "BatchMatMul_Forward", "BatchMatMul_Forward"),
    "_scaled_dot_product_efficient_attention_backward": ("bmm", "BatchMatMul_Backward", "BatchMatMul_Backward"),
    "avg_pool2d_backward": ("pool_bwd", None, None),
}
# everything the optimizer step runs
OPTIMIZER_OP = ("optimizer", "Apply_Grad")
MATMUL_OPS = ("mm", "addmm")   # decided by their operands (aten_kernel_class)
# ATen operators that allocate without computing (their storage is born at its first write)
ALLOC_OPS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
                       "empty_permuted", "resize_"})
# in-place ATen operators that overwrite their target without reading it
OVERWRITE_OPS = frozenset({"copy_", "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_",
                           "exponential_", "geometric_", "log_normal_", "cauchy_", "set_"})


def aten_kernel_class(packet: str, phase: str, reads_param: bool = False,
                      makes_param_shape: bool = False) -> tuple[str, str]:
    """(class, operator name for the calibration) of an ATen kernel.

    ``packet``: the operator without namespace and overload (``addmm``, ``add_``); ``phase``:
    ``forward``, ``backward`` or ``optimizer``; ``reads_param``: it reads a parameter;
    ``makes_param_shape``: it writes a tensor shaped like a parameter (or its transpose).  A
    backward ``mm`` that reads a parameter is a Linear input gradient, one that makes a
    parameter-shaped result a weight gradient.  Shared by the meta-device recorder and the
    profile importer (:mod:`g10core.capture.profile`), so both name kernels alike.
    """
    if phase == "optimizer":
        return OPTIMIZER_OP
    backward = phase == "backward"
    if packet in MATMUL_OPS:
        if not backward:
            return ("linear", "Linear_Forward") if reads_param else ("bmm", "BatchMatMul_Forward")
        if reads_param:
            return "linear_bwd_input", "Linear_Backward_Input"
        if makes_param_shape:
            return "linear", "Linear_Backward_Weight"
        return "bmm", "BatchMatMul_Backward"
    base = packet[:-1] if packet.endswith("_") else packet   # in-place variant: same operation
    cls, fwd, bwd = SHIPPED_OP.get(base, ("elementwise", None, None))
    op = bwd if backward else fwd
    return cls, op or f"aten::{packet}"

CALIBRATION_SCHEMA = "g10core-kernel-time-calibration"
DEFAULT_CALIBRATION_FILE = "calibration_a100_g10_v1.json"


_A100 = gpu_model(DEFAULT_GPU)    # the profiling GPU's figures are the table's (g10core.gpus)


@dataclass(frozen=True)
class ProfilingGPU:
    """Peak rates of the GPU whose kernel times the trace stands for (default: the A100-40GB
    the published G10 profiles were measured on; its figures come from :mod:`g10core.gpus`)."""

    name: str = _A100.full_name
    memory_GiB: float = _A100.memory_GiB
    memory_bandwidth_GBps: float = _A100.memory_bandwidth_GBps   # 1e9 B/s
    fp64_peak_TFLOPs: float = _A100.fp64_TFLOPs
    fp32_peak_TFLOPs: float = _A100.fp32_TFLOPs                  # CUDA cores (no TF32)
    tf32_peak_TFLOPs: float = _A100.tf32_TFLOPs                  # tensor cores, used when allow_tf32
    bf16_peak_TFLOPs: float = _A100.bf16_TFLOPs
    fp16_peak_TFLOPs: float = _A100.fp16_TFLOPs
    allow_tf32: bool = False                   # fp32 matrix products on TF32 tensor cores

    @classmethod
    def of_model(cls, name: str, *, allow_tf32: bool = False) -> "ProfilingGPU":
        """The peaks of table GPU ``name`` (:data:`g10core.gpus.GPUS`)."""
        g = gpu_model(name)
        return cls(name=g.full_name, memory_GiB=g.memory_GiB, memory_bandwidth_GBps=g.memory_bandwidth_GBps,
                   fp64_peak_TFLOPs=g.fp64_TFLOPs, fp32_peak_TFLOPs=g.fp32_TFLOPs, tf32_peak_TFLOPs=g.tf32_TFLOPs,
                   bf16_peak_TFLOPs=g.bf16_TFLOPs, fp16_peak_TFLOPs=g.fp16_TFLOPs, allow_tf32=allow_tf32)

    @property
    def model(self) -> str:
        """The table name of this GPU (``A100-40GB``), or "" when it is not a table GPU's figures."""
        from ..gpus import GPUS

        for g in GPUS.values():
            if self == ProfilingGPU.of_model(g.name, allow_tf32=self.allow_tf32):
                return g.name
        return ""

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("float", float) and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"ProfilingGPU.{f.name} = {v!r}: must be a finite number > 0")

    def peak_flops_per_s(self, dtype: str, matrix: bool = False) -> float:
        """Peak FLOP/s for ``dtype`` (torch dtype name: float32, bfloat16, ...)."""
        dtype = str(dtype).replace("torch.", "")
        if dtype in ("float64", "double"):
            tf = self.fp64_peak_TFLOPs
        elif dtype in ("bfloat16",):
            tf = self.bf16_peak_TFLOPs
        elif dtype in ("float16", "half"):
            tf = self.fp16_peak_TFLOPs
        else:  # float32 and anything non-float (index arithmetic runs on the same units)
            tf = self.tf32_peak_TFLOPs if (matrix and self.allow_tf32) else self.fp32_peak_TFLOPs
        return tf * 1e12

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ClassCoefficients:
    """Fitted coefficients of one kernel class (units in the names)."""

    compute_efficiency: float = 0.5    # share of peak FLOP/s reached
    memory_efficiency: float = 0.5     # share of peak memory bandwidth reached
    overhead_us: float = 5.0           # fixed time per kernel (launch, tail)
    out_fault_fixed_us: float = 100.0  # fixed cost when the outputs fault
    out_fault_GBps: float = 3.0        # effective bandwidth of faulting outputs (1e9 B/s)
    in_fault_fixed_us: float = 100.0
    in_fault_GBps: float = 3.0
    workspace_per_input_byte: float = 0.0  # scratch bytes per byte read (cuDNN convolutions)
    n_kernels: int = 0                 # how many measured kernels the fit used

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            ok = math.isfinite(v) and (v >= 0 if f.name in ("workspace_per_input_byte", "n_kernels") else v > 0)
            if not ok:
                raise ValueError(f"ClassCoefficients.{f.name} = {v!r}: must be finite and "
                                 f"{'>= 0' if f.name in ('workspace_per_input_byte', 'n_kernels') else '> 0'}")


@dataclass(frozen=True)
class Calibration:
    """A versioned set of coefficients (per operator and per class) and the GPU they were fitted for."""

    version: str
    gpu: ProfilingGPU
    classes: dict                      # class name -> ClassCoefficients ("default" required)
    ops: dict = field(default_factory=dict)  # operator (shipped kernel name) -> ClassCoefficients
    fitted_on: tuple = ()              # trace files (names) the fit used
    notes: str = ""
    errors: dict = field(default_factory=dict)  # leave-one-model-out errors recorded with the fit

    def __post_init__(self):
        if DEFAULT_CLASS not in self.classes:
            raise ValueError(f"calibration {self.version!r}: no {DEFAULT_CLASS!r} class")
        unknown = sorted(set(self.classes) - set(ALL_CLASSES))
        if unknown:
            raise ValueError(f"calibration {self.version!r}: unknown kernel class(es) {', '.join(unknown)}")

    def coefficients(self, op: str, kernel_class: str) -> ClassCoefficients:
        """The operator's coefficients, else its class's, else the default ones."""
        return self.ops.get(op) or self.classes.get(kernel_class) or self.classes[DEFAULT_CLASS]

    def source_of(self, op: str, kernel_class: str) -> str:
        """Which entry :meth:`coefficients` uses ("op:<name>", "class:<name>" or "class:default")."""
        if op in self.ops:
            return f"op:{op}"
        return f"class:{kernel_class if kernel_class in self.classes else DEFAULT_CLASS}"

    # ---- JSON ------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "schema": CALIBRATION_SCHEMA,
            "version": self.version,
            "gpu": self.gpu.to_dict(),
            "classes": {k: asdict(self.classes[k]) for k in ALL_CLASSES if k in self.classes},
            "ops": {k: asdict(self.ops[k]) for k in sorted(self.ops)},
            "fitted_on": list(self.fitted_on),
            "notes": self.notes,
            "errors": self.errors,
        }

    @classmethod
    def from_dict(cls, d: dict, where: str = "<calibration>") -> "Calibration":
        if not isinstance(d, dict) or d.get("schema") != CALIBRATION_SCHEMA:
            raise ValueError(f"{where}: not a {CALIBRATION_SCHEMA!r} file")
        try:
            gpu = ProfilingGPU(**d["gpu"])
            classes = {k: ClassCoefficients(**v) for k, v in d["classes"].items()}
            ops = {k: ClassCoefficients(**v) for k, v in d.get("ops", {}).items()}
            return cls(version=str(d["version"]), gpu=gpu, classes=classes, ops=ops,
                       fitted_on=tuple(d.get("fitted_on", ())), notes=str(d.get("notes", "")),
                       errors=dict(d.get("errors", {})))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{where}: bad calibration ({type(exc).__name__}: {exc})") from None

    def write(self, path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return path


def load_calibration(path=None) -> Calibration:
    """The shipped calibration (package data), or the one in ``path``."""
    if path is None:
        text = resources.files(__package__).joinpath(DEFAULT_CALIBRATION_FILE).read_text()
        where = f"g10core.capture/{DEFAULT_CALIBRATION_FILE}"
    else:
        text = read_text(path, "calibration file (JSON)")
        where = str(path)
    try:
        d = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{where}: not JSON ({exc})") from None
    return Calibration.from_dict(d, where)


@dataclass(frozen=True)
class KernelFeatures:
    """What the time model needs of K kernels (numpy arrays, one row per kernel).

    ``op``/``kernel_class``: operator name and class (str); ``flops``: floating-point
    operations; ``bytes``: bytes the kernel moves to and from memory (operands read plus
    results written); ``peak_flops_per_s``: the profiling GPU's peak for the kernel's
    dtype; ``in_bytes``/``out_bytes``: bytes of the tensors it reads / writes, as the
    simulators fault them (whole tensors).
    """

    op: np.ndarray             # str
    kernel_class: np.ndarray   # str, one of ALL_CLASSES
    flops: np.ndarray          # float64
    bytes: np.ndarray          # float64
    peak_flops_per_s: np.ndarray  # float64
    in_bytes: np.ndarray       # float64
    out_bytes: np.ndarray      # float64

    def __len__(self):
        return int(self.kernel_class.shape[0])

    def subset(self, mask) -> "KernelFeatures":
        return KernelFeatures(*(getattr(self, f.name)[mask] for f in fields(self)))

    @staticmethod
    def concat(parts) -> "KernelFeatures":
        parts = list(parts)
        return KernelFeatures(*(np.concatenate([getattr(p, f.name) for p in parts])
                                for f in fields(KernelFeatures)))


def roofline_ns(feat: KernelFeatures, compute_efficiency, memory_efficiency, overhead_us,
                bandwidth_GBps: float) -> np.ndarray:
    """t11 in ns for the given (scalar or per-kernel) coefficients."""
    compute_s = feat.flops / (compute_efficiency * feat.peak_flops_per_s)
    memory_s = feat.bytes / (memory_efficiency * bandwidth_GBps * 1e9)
    return overhead_us * 1e3 + np.maximum(compute_s, memory_s) * 1e9


def fault_ns(nbytes: np.ndarray, fixed_us, GBps) -> np.ndarray:
    """Extra ns when ``nbytes`` fault (0 when nothing does)."""
    return np.where(nbytes > 0, fixed_us * 1e3 + nbytes / GBps, 0.0)


class KernelTimeModel:
    """Predicts (t11, t10, t00) in ns from :class:`KernelFeatures` with a :class:`Calibration`.

    ``gpu`` (default: the calibration's) sets the peaks of the roofline; the fitted
    efficiencies and fault costs carry over unchanged (an extrapolation for another GPU).
    """

    def __init__(self, calibration: Calibration | None = None, gpu: ProfilingGPU | None = None):
        self.calibration = load_calibration() if calibration is None else calibration
        self.gpu = self.calibration.gpu if gpu is None else gpu

    def coefficient_table(self, feat: KernelFeatures) -> dict:
        """Coefficient name -> per-kernel array (operator, else class, else default)."""
        keys = np.char.add(np.char.add(feat.op.astype(str), "\x1f"), feat.kernel_class.astype(str))
        uniq, inverse = np.unique(keys, return_inverse=True)
        chosen = [self.calibration.coefficients(*u.split("\x1f", 1)) for u in uniq.tolist()]
        return {f.name: np.array([getattr(c, f.name) for c in chosen], np.float64)[inverse]
                for f in fields(ClassCoefficients)}

    def times_ns(self, feat: KernelFeatures):
        """(t11, t10, t00) in whole ns (the published profiles' resolution); t00 >= t10 >= t11 >= 1."""
        if len(feat) == 0:
            z = np.zeros(0)
            return z, z, z
        c = self.coefficient_table(feat)
        t11 = roofline_ns(feat, c["compute_efficiency"], c["memory_efficiency"], c["overhead_us"],
                          self.gpu.memory_bandwidth_GBps)
        t11 = np.maximum(np.round(t11), 1.0)
        return (t11, *self._fault_times(c, feat, t11))

    def fault_times_ns(self, feat: KernelFeatures, t11_ns) -> tuple:
        """(t10, t00) in ns for kernels whose all-resident time ``t11_ns`` is known (measured):
        the fault-cost half of :meth:`times_ns` (only ``op``, ``kernel_class``, ``in_bytes`` and
        ``out_bytes`` of ``feat`` are used)."""
        t11 = np.asarray(t11_ns, np.float64)
        if len(feat) == 0:
            return t11.copy(), t11.copy()
        return self._fault_times(self.coefficient_table(feat), feat, t11)

    @staticmethod
    def _fault_times(c: dict, feat: KernelFeatures, t11: np.ndarray):
        t10 = t11 + np.round(fault_ns(feat.out_bytes, c["out_fault_fixed_us"], c["out_fault_GBps"]))
        t00 = t10 + np.round(fault_ns(feat.in_bytes, c["in_fault_fixed_us"], c["in_fault_GBps"]))
        return t10, t00

    def workspace_bytes(self, feat: KernelFeatures, read_bytes: np.ndarray) -> np.ndarray:
        """Scratch bytes of each kernel (cuDNN-style workspace), int64."""
        if len(feat) == 0:
            return np.zeros(0, np.int64)
        ratio = self.coefficient_table(feat)["workspace_per_input_byte"]
        return np.floor(ratio * read_bytes).astype(np.int64)


# ---- the features of a trace file (the shipped traces, or any trace by its kernel names) --------------

# Shipped kernel name -> class.  Names not listed fall back to "default".
SHIPPED_KERNEL_CLASS = {
    "Linear_Forward": "linear",
    "Linear_Backward_Weight": "linear",
    "Linear_Backward_Input": "linear_bwd_input",
    "BatchMatMul_Forward": "bmm",
    "BatchMatMul_Backward": "bmm",
    "Conv2d_Forward": "conv_fwd",
    "Conv2d_Backward_Input": "conv_bwd_input",
    "Conv2d_Backward_Weight": "conv_bwd_weight",
    "Sum_Forward": "reduction",
    "AdaptiveAvgPool2d_Forward": "reduction",
    "MaxPool2d_Forward": "reduction",
    "makeLoss": "reduction",
    "Linear_Backward_Bias": "reduction",
    "AdaptiveAvgPool2d_Backward": "pool_bwd",
    "MaxPool2d_Backward": "pool_bwd",
    "BatchNorm2d_Forward": "norm",
    "BatchNorm2d_Backward": "norm",
    "SoftmaxBasic_Forward": "softmax",
    "SoftmaxBasic_Backward": "softmax",
    "Apply_Grad": "optimizer",
    "Linear_Apply_Grad_Weight": "optimizer",
    "Linear_Apply_Grad_Bias": "optimizer",
    "Conv2d_Apply_Grad": "optimizer",
    "BatchNorm2d_Apply_Grad": "optimizer",
    "GatherV2_Forward": "gather",
    "GatherV2_Backward": "gather",
    "Concat_Forward": "copy",
    "Concat_Backward": "copy",
    "LoadData_A0": "load",
}
_ELEMENTWISE = re.compile(r"^(Add|Subtract|Multiply|Divide|Power|Sqrt|Erf|Tanh|ReLU|Scale|Dropout)_"
                          r"|^Add_MultiGredient$|^Sum_Backward$")
# attention heads of the artifact's transformers (nets/BERT_Base.txt, nets/VIT.txt)
ATTENTION_HEADS = {"bert_base": 12, "vit": 6}
SHIPPED_DTYPE_BYTES = 4   # the published graphs are fp32


def shipped_kernel_class(name: str) -> str:
    if name in SHIPPED_KERNEL_CLASS:
        return SHIPPED_KERNEL_CLASS[name]
    if _ELEMENTWISE.search(name):
        return "elementwise"
    return DEFAULT_CLASS


def shipped_features(trace: Trace, gpu: ProfilingGPU | None = None):
    """(features, measured t11, t10, t00 clamped as the simulators do, workspace bytes) of a shipped trace."""
    gpu = ProfilingGPU() if gpu is None else gpu
    K = trace.n_kernels
    size = trace.tensor_size_bytes.astype(np.float64)
    in_bytes, out_bytes = kernel_io_bytes(trace.access_offsets, trace.access_tensor, trace.access_mode, size)
    ws = trace.kernel_workspace_bytes.astype(np.float64)
    ws_tensor_bytes = np.where(ws > 0, np.ceil(ws / PAGE_SIZE_BYTES) * PAGE_SIZE_BYTES, 0.0)
    roof_bytes = in_bytes + np.maximum(out_bytes - ws_tensor_bytes, 0.0)

    ops = [str(n) for n in trace.kernel_name]
    classes = [shipped_kernel_class(n) for n in ops]
    flops = np.zeros(K)
    heads = ATTENTION_HEADS.get(trace.model, 1)
    for k in range(K):
        lo, hi = trace.access_offsets[k], trace.access_offsets[k + 1]
        t = trace.access_tensor[lo:hi]
        m = trace.access_mode[lo:hi]
        n_in = np.sort(size[t[(m & ACCESS_READ) != 0]] / SHIPPED_DTYPE_BYTES)[::-1]
        outs = list(size[t[(m & ACCESS_WRITE) != 0]])
        if ws_tensor_bytes[k] > 0 and ws_tensor_bytes[k] in outs:
            outs.remove(ws_tensor_bytes[k])
        n_out = max(outs) / SHIPPED_DTYPE_BYTES if outs else 0.0
        c = classes[k]
        if c in ("linear", "linear_bwd_input", "bmm", "conv_fwd", "conv_bwd_input", "conv_bwd_weight") and n_in.size:
            a = n_in[0]
            b = n_in[1] if n_in.size > 1 else n_in[0]
            batch = trace.batch_size * heads if c == "bmm" else 1
            flops[k] = 2.0 * math.sqrt(a * b * n_out / batch)
        else:
            flops[k] = n_out
    feat = KernelFeatures(
        op=np.array(ops, dtype=str),
        kernel_class=np.array(classes, dtype=str),
        flops=flops,
        bytes=roof_bytes,
        peak_flops_per_s=np.full(K, gpu.peak_flops_per_s("float32")),
        in_bytes=in_bytes,
        out_bytes=out_bytes,
    )
    t11 = np.maximum(trace.kernel_time_ideal_ns, 1.0)
    t10 = np.maximum(trace.kernel_time_fault_outputs_ns, t11)
    t00 = np.maximum(trace.kernel_time_fault_all_ns, t10)
    return feat, t11, t10, t00, trace.kernel_workspace_bytes.astype(np.float64)
