"""The physical kernel-time model (``physical-v1``): a kernel's time from its work on the GPU's units.

A kernel's *work* (:class:`KernelWork`, stored per kernel by trace format 4) is what the
capture knows about it exactly: its floating-point operations (``torch.utils.flop_counter``'s
formulas for matrix products, convolutions and fused attention; one per element of its largest
result otherwise), the bytes it reads and writes, the unit that runs its arithmetic (CUDA
cores in fp32 or fp64; tensor cores in TF32, FP16 or BF16), what kind of kernel it is (a GEMM,
a fused attention forward or backward, anything else) and, for a GEMM-like kernel, how many
output tiles it splits into.  Its ideal time on GPU ``g`` (every operand resident) is a
roofline with achievable fractions of peak and a launch overhead::

    t11 = launch + max(flops / (fill * wave(tiles, g.sms) * fraction(kind, unit) * peak(g, unit)),
                       bytes / (memory_fraction * g.memory_bandwidth))

    wave(tiles, sms) = tiles / (ceil(tiles / sms) * sms)      (1 when tiles = 0)

``wave`` is wave quantization: a GEMM split into ``tiles`` output tiles runs in
``ceil(tiles / sms)`` waves of one tile per SM, the last one partly idle; ``fill`` is tile
quantization: the share of those tiles' area that holds real output (an output 64 channels
wide fills half of a 128-wide tile).  Both are from NVIDIA's *Matrix Multiplication
Background User's Guide* ("Tile Quantization", "Wave Quantization").  Every constant is a published
measurement, cited in :data:`SOURCES` and on the docs' validation page; none was fitted to
the training throughputs the validation table compares with, and no fraction exceeds 1.

What a captured trace stores of the times: ``t11`` as above, and ``t10``/``t00`` (outputs,
and inputs too, faulting from host memory under UVM) as ``t11`` plus the faulting bytes over
the GPU's PCIe link; only the ``profile`` fault handler reads those two.  Nothing here needs
torch: the tiles and units are decided at capture (:mod:`g10core.capture.recorder`) and the
model runs on the stored work, so retargeting a trace to another GPU re-runs it there
(:mod:`g10core.workload.retarget`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from ..gpus import GPUModel, gpu_model

# The unit that runs a kernel's arithmetic (trace format 4, /kernel_work field ``unit``).
UNIT_CUDA_FP32 = 0
UNIT_CUDA_FP64 = 1
UNIT_TENSOR_TF32 = 2
UNIT_TENSOR_FP16 = 3
UNIT_TENSOR_BF16 = 4
UNIT_NAMES = {UNIT_CUDA_FP32: "cuda_fp32", UNIT_CUDA_FP64: "cuda_fp64", UNIT_TENSOR_TF32: "tensor_tf32",
              UNIT_TENSOR_FP16: "tensor_fp16", UNIT_TENSOR_BF16: "tensor_bf16"}
# the GPUModel field of each unit's dense peak
UNIT_PEAK_FIELD = {UNIT_CUDA_FP32: "fp32_TFLOPs", UNIT_CUDA_FP64: "fp64_TFLOPs", UNIT_TENSOR_TF32: "tf32_TFLOPs",
                   UNIT_TENSOR_FP16: "fp16_TFLOPs", UNIT_TENSOR_BF16: "bf16_TFLOPs"}

# What kind of kernel it is (/kernel_work field ``kind``): its achievable fraction of peak.
KIND_OTHER = 0            # pointwise, reductions, normalisation, copies, optimizer updates
KIND_GEMM = 1             # matrix products and convolutions (implicit GEMM)
KIND_ATTENTION_FWD = 2    # fused (flash / memory-efficient) attention, forward
KIND_ATTENTION_BWD = 3    # its backward
KIND_NAMES = {KIND_OTHER: "other", KIND_GEMM: "gemm", KIND_ATTENTION_FWD: "attention_fwd",
              KIND_ATTENTION_BWD: "attention_bwd"}

PHYSICAL_VERSION = "physical-v1"
# fused attention works on tiles of this many queries (forward) or keys (backward) per head: see SOURCES
ATTENTION_TILE = 128


@dataclass(frozen=True)
class KernelWork:
    """The work of K kernels (numpy arrays, one row per kernel); see the module docstring."""

    flops: np.ndarray     # float64, >= 0
    bytes: np.ndarray     # float64, >= 0: read plus written
    unit: np.ndarray      # uint8, UNIT_*
    kind: np.ndarray      # uint8, KIND_*
    tiles: np.ndarray     # int64, >= 0: output tiles of a GEMM-like kernel (0: no wave quantization)
    fill: np.ndarray      # float32, (0, 1]: share of the tiles' area that is real output (tile quantization)

    def __len__(self):
        return int(self.flops.shape[0])

    @classmethod
    def empty(cls, n: int = 0) -> "KernelWork":
        return cls(np.zeros(n), np.zeros(n), np.zeros(n, np.uint8), np.zeros(n, np.uint8), np.zeros(n, np.int64),
                   np.ones(n, np.float32))

    def columns(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class PhysicalModel:
    """Achievable fractions of peak and the launch overhead (each one a cited measurement).

    Parameters
    ----------
    tensor_core_fraction : float
        Share of the dense tensor-core peak a large GEMM reaches (cuBLAS), for a GPU that
        ``tensor_core_fraction_by_gpu`` does not name.
    tensor_core_fraction_by_gpu : dict
        The measured share per table GPU.
    cuda_core_fraction : float
        Share of the CUDA-core peak a large fp32 (or fp64) GEMM reaches.
    attention_fwd_fraction, attention_bwd_fraction : float
        Share of the tensor-core peak fused attention reaches, forward and backward.
    attention_fraction_by_gpu : dict
        Per table GPU where a measurement exists, both passes' share (the A100 figures above do
        not carry over to a GPU whose peak FlashAttention-2 does not reach).
    memory_fraction : float
        Share of the HBM bandwidth a streaming kernel reaches.
    launch_overhead_us : float
        Time of a kernel that does nothing: launch and drain.
    """

    version: str = PHYSICAL_VERSION
    tensor_core_fraction: float = 0.803
    tensor_core_fraction_by_gpu: dict = field(default_factory=lambda: {
        "A100-40GB": 0.869, "A100-80GB": 0.869, "H100-SXM": 0.803, "H200": 0.803})
    cuda_core_fraction: float = 0.60
    attention_fwd_fraction: float = 0.73
    attention_bwd_fraction: float = 0.50
    attention_fraction_by_gpu: dict = field(default_factory=lambda: {"H100-SXM": 0.339, "H200": 0.339})
    memory_fraction: float = 0.886
    launch_overhead_us: float = 3.5
    sources: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        values = {name: getattr(self, name) for name in (
            "tensor_core_fraction", "cuda_core_fraction", "attention_fwd_fraction", "attention_bwd_fraction",
            "memory_fraction")}
        values.update({f"tensor_core_fraction_by_gpu[{k!r}]": v for k, v in self.tensor_core_fraction_by_gpu.items()})
        values.update({f"attention_fraction_by_gpu[{k!r}]": v for k, v in self.attention_fraction_by_gpu.items()})
        for name, v in values.items():
            if not (isinstance(v, (int, float)) and 0 < v <= 1):
                raise ValueError(f"PhysicalModel.{name} = {v!r}: a fraction of peak must be in (0, 1]")
        if not (math.isfinite(self.launch_overhead_us) and self.launch_overhead_us >= 0):
            raise ValueError(f"PhysicalModel.launch_overhead_us = {self.launch_overhead_us!r}: must be >= 0")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["sources"] = dict(self.sources)
        return d

    # ---- the model --------------------------------------------------------------
    def gemm_fraction(self, gpu: GPUModel) -> float:
        """The share of its dense tensor-core peak a large GEMM reaches on ``gpu``."""
        return self.tensor_core_fraction_by_gpu.get(gpu.name, self.tensor_core_fraction)

    def fraction(self, kind: np.ndarray, unit: np.ndarray, gpu: GPUModel) -> np.ndarray:
        """Achievable fraction of the unit's peak, per kernel."""
        tensor = unit >= UNIT_TENSOR_TF32
        gemm = np.where(tensor, self.gemm_fraction(gpu), self.cuda_core_fraction)
        fwd = self.attention_fraction_by_gpu.get(gpu.name, self.attention_fwd_fraction)
        bwd = self.attention_fraction_by_gpu.get(gpu.name, self.attention_bwd_fraction)
        return np.select([kind == KIND_ATTENTION_FWD, kind == KIND_ATTENTION_BWD, kind == KIND_GEMM],
                         [fwd, bwd, gemm], self.cuda_core_fraction)

    @staticmethod
    def peak_flops_per_s(gpu: GPUModel, unit: np.ndarray) -> np.ndarray:
        """Dense peak FLOP/s of each kernel's unit on ``gpu``."""
        peaks = np.array([getattr(gpu, UNIT_PEAK_FIELD[u]) for u in sorted(UNIT_PEAK_FIELD)], np.float64) * 1e12
        return peaks[unit.astype(np.intp)]

    @staticmethod
    def wave_efficiency(tiles: np.ndarray, sms: int) -> np.ndarray:
        """tiles / (waves x SMs): the share of the SMs' tile slots a GEMM fills (1 without tiles)."""
        t = tiles.astype(np.float64)
        waves = np.ceil(t / sms)
        return np.where(t > 0, t / np.maximum(waves * sms, 1.0), 1.0)

    def parts_s(self, work: KernelWork, gpu: GPUModel | str):
        """(compute s, memory s) of every kernel on ``gpu``, without the launch overhead."""
        gpu = gpu_model(gpu) if isinstance(gpu, str) else gpu
        rate = (self.fraction(work.kind, work.unit, gpu) * self.peak_flops_per_s(gpu, work.unit)
                * self.wave_efficiency(work.tiles, gpu.sms) * work.fill.astype(np.float64))
        compute_s = work.flops / rate
        memory_s = work.bytes / (self.memory_fraction * gpu.memory_bandwidth_GBps * 1e9)
        return compute_s, memory_s

    def ideal_ns(self, work: KernelWork, gpu: GPUModel | str) -> np.ndarray:
        """t11 of every kernel on ``gpu``, in whole ns (>= 1)."""
        if len(work) == 0:
            return np.zeros(0)
        compute_s, memory_s = self.parts_s(work, gpu)
        t = self.launch_overhead_us * 1e3 + np.maximum(compute_s, memory_s) * 1e9
        return np.maximum(np.round(t), 1.0)



def fault_times_ns(t11: np.ndarray, in_bytes: np.ndarray, out_bytes: np.ndarray, link_GBps: float):
    """(t10, t00) in whole ns: ``t11`` plus the faulting outputs' (and inputs') bytes over the link."""
    t10 = t11 + np.round(out_bytes / link_GBps)
    t00 = t10 + np.round(in_bytes / link_GBps)
    return t10, t00


def link_GBps(gpu: GPUModel) -> float:
    """Raw bandwidth per direction of ``gpu``'s PCIe link (the table's generation and lanes), GB/s."""
    from ..link.pcie import PcieSpec

    return PcieSpec(generation=gpu.pcie_generation, lanes=gpu.pcie_lanes).raw_GBps


# Where each constant comes from.  Measurements only: none of them was fitted to the training
# throughputs of the validation table (g10core.capture.validation).
SOURCES: dict = {
    "tensor_core_fraction_by_gpu": (
        "Maximum achievable matmul FLOPS (BF16, best shape, mean of 100 iterations after 50 warm-up): A100 SXM "
        "271.2 of 312 TFLOP/s (86.9 %), H100 SXM 794.5 of 989 (80.3 %; 'H200 is the same'); S. Bekman, "
        "Machine Learning Engineering (stas00/ml-engineering), compute/accelerator/README.md, 'Maximum Achievable "
        "Matmul FLOPS comparison table'"),
    "tensor_core_fraction": (
        "GPUs without a measurement take the lowest measured share above (H100 SXM, 80.3 %)"),
    "cuda_core_fraction": (
        "cuBLAS SGEMM at 4092^2 on an RTX A6000: 23,249.6 GFLOP/s of its 38.7 TFLOP/s FP32 peak (60 %); "
        "siboehm/SGEMM_CUDA README.md (no A100 or H100 SGEMM measurement was found)"),
    "attention_fwd_fraction": (
        "FlashAttention-2 reaches 50-73 % of the A100's peak (Dao 2023, arXiv 2307.08691, abstract); the forward "
        "pass is the faster one: the top of the range"),
    "attention_bwd_fraction": "the same range's bottom, for the backward pass (Dao 2023)",
    "attention_fraction_by_gpu": (
        "FlashAttention-2 on an H100 without Hopper-specific instructions: 'up to 335 TFLOPs/s' (Dao 2023, "
        "section 4.1), 33.9 % of the H100 SXM's 989.5 dense BF16 TFLOP/s; the H200 has the same GH100 chip"),
    "memory_fraction": (
        "BabelStream Triad on an A100-SXM4-40GB: 1,377,426 MB/s of 1,555 GB/s (88.6 %); argonne-lcf/"
        "ALCFBeginnersGuide, polaris/02_profiling.md"),
    "launch_overhead_us": (
        "cudaLaunchKernel on an A100 host (Nsight Systems, 501 calls): mean 3,502.7 ns; argonne-lcf/"
        "ALCFBeginnersGuide, polaris/02_profiling.md.  The host issues one kernel per launch at best, so no "
        "kernel of a stream of kernels takes less"),
    "tiles": (
        "cuBLAS's typical tiles, 256 x 128 (most efficient) down to 64 x 64 (NVIDIA's Matrix Multiplication "
        "Background User's Guide, DU-09799-001, 'Typical Tile Dimensions in cuBLAS and Performance'), the one taken "
        "at capture (best_tile); fused attention works on tiles of 128 queries (forward) or keys (backward) per head"),
}


def physical_model() -> PhysicalModel:
    """The shipped ``physical-v1`` model."""
    return PhysicalModel(sources=SOURCES)


# cuBLAS's typical tiles, most efficient first (NVIDIA, Matrix Multiplication Background User's Guide,
# "Typical Tile Dimensions in cuBLAS and Performance")
CUBLAS_TILES = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64))


def wave_fraction(tiles: int, sms: int) -> float:
    """tiles / (ceil(tiles / sms) x sms): the share of the SMs' tile slots the tiles fill."""
    if tiles <= 0:
        return 1.0
    return tiles / (-(-tiles // sms) * sms)


MIN_SPLIT_DEPTH = 64   # split-K: the least reduction length one split keeps (an assumption, see best_tile)


def best_tile(m: int, n: int, batch: int, sms: int, split_k: bool = False, k: int = 0) -> tuple[int, float]:
    """(parallel tiles, fill) of an m x n GEMM (``batch`` of them) with reduction length ``k``.

    The tile is the one from :data:`CUBLAS_TILES` that does the work in the fewest tile-waves: the
    library's choice, read as the one with the least padded work per SM; ``fill`` is the real output
    over the tiles' area.  When the output's tiles alone do not fill the GPU and ``k`` is long, the
    reduction is split over the idle SMs (split-K, as cuBLAS and CUTLASS do for skinny products),
    each split at least :data:`MIN_SPLIT_DEPTH` deep (our assumption: no published figure gives the
    libraries' heuristic), and the returned tile count includes the splits, so the wave term sees
    them.  ``split_k``: the reduction is known to be split over the SMs whatever its length (a weight
    gradient's long reduction): no wave term, the fullest tile.  The first of the most efficient
    tiles wins a tie.
    """
    if m <= 0 or n <= 0 or batch <= 0:
        return 0, 1.0
    best = None
    for tm, tn in CUBLAS_TILES:
        tiles = gemm_tiles(m, n, batch, tm, tn)
        fill = batch * m * n / (tiles * tm * tn)
        if not split_k and tiles < sms and k > MIN_SPLIT_DEPTH:
            tiles *= max(1, min(sms // tiles, -(-k // MIN_SPLIT_DEPTH)))
        score = fill if split_k else fill * wave_fraction(tiles, sms)
        if best is None or score > best[0] + 1e-12:
            best = (score, tiles, fill)
    return best[1], best[2]


def gemm_tiles(m: int, n: int, batch: int, tile_m: int, tile_n: int) -> int:
    """Output tiles of a (batched) m x n GEMM: ``batch * ceil(m / tile_m) * ceil(n / tile_n)``."""
    if m <= 0 or n <= 0 or batch <= 0:
        return 0
    return int(batch) * (-(-int(m) // tile_m)) * (-(-int(n) // tile_n))
