"""Seeded generator of small, valid synthetic traces (tests, benchmarks, experiments).

:func:`synthesize` builds a :class:`~g10core.workload.trace.Trace` of a chosen kernel count,
exact footprint and reuse pattern.  The same arguments (seed included) give the
same trace, bit for bit, on the same numpy version.

Patterns:

``training``
    The shape of one DNN training iteration over ``L`` layers: a data-load kernel
    writes the input activation ``act_0``; forward kernel ``i`` reads ``act_{i-1}``
    and the global weight ``weight_i`` and writes ``act_i``; a loss kernel reads
    ``act_L`` and writes ``grad_L``; backward kernel ``i`` (``i = L..1``) reads
    ``grad_i``, ``act_{i-1}`` and ``weight_i``, writes ``grad_{i-1}`` (for ``i > 1``)
    and updates ``weight_i`` in place (read and write).  Activations are thus written
    in the forward pass and read back in reverse order; weights are used twice per
    iteration and live across iterations.  Some layer kernels also get a
    workspace tensor that only they write (``workspace_probability``), with the
    workspace bytes recorded as the published profiles do (page-rounded up to the
    tensor).  ``n_kernels = 2 L + 2``; an odd count adds a final optimizer kernel.

``random``
    ``n_tensors`` tensors, a ``global_fraction`` share of the bytes in global ones.
    Every non-global tensor is written once, at a random birth kernel; every
    kernel then reads about ``reads_per_kernel`` distinct tensors drawn uniformly
    from the globals and the tensors born before it (random reuse distances);
    a read global is updated in place with probability 0.2.

Times (ns, integers as in the published profiles): the ideal time ``t11`` is
lognormal around ``kernel_time_us``; ``t10 = t11 (1 + U(0.05, 1))`` and
``t00 = t10 (1 + U(0.5, 20))``, rounded, so ``t00 >= t10 >= t11 > 0`` always.
With ``flops_per_byte`` the times are physical instead (:mod:`g10core.workload.physical`):
every kernel's work is recorded (trace format 4's ``kernel_work``): its bytes are those of the
tensors it reads and writes, the layer kernels (``forward_i``, ``backward_i``; every kernel of
``random``) do ``flops_per_byte`` FLOPs per byte as GEMMs on ``gpu``'s BF16 tensor cores, the
others one FLOP per 4 bytes on the CUDA cores; ``t11`` is the model's time on ``gpu``, ``t10``
and ``t00`` add the faulting bytes over its PCIe link.
Tensor sizes are whole pages, drawn with lognormal shares so that the
page-rounded footprint equals ``footprint_bytes`` rounded up to a page.
"""
from __future__ import annotations

import math

import numpy as np

from .trace import (ACCESS_READ, ACCESS_WRITE, MAX_ITERATION_TIME_NS, PAGE_SIZE_BYTES, Trace, kernel_io_bytes,
                    validate_trace)

PATTERNS = ("training", "random")


def _check(name, value, ok: bool, must: str):
    if not ok:
        raise ValueError(f"synthesize: {name} = {value!r}: must be {must}")


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _split_pages(rng, total_pages: int, shares: np.ndarray) -> np.ndarray:
    """Integer pages per tensor, each >= 1, summing exactly to ``total_pages``."""
    n = shares.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    extra = rng.multinomial(total_pages - n, shares / shares.sum())
    return (1 + extra).astype(np.int64)


def _times(rng, n: int, kernel_time_us: float):
    sigma = 0.5
    t11 = np.maximum(1.0, np.round(kernel_time_us * 1e3 * rng.lognormal(-sigma * sigma / 2, sigma, n)))
    t10 = t11 + np.round(t11 * rng.uniform(0.05, 1.0, n))
    t00 = t10 + np.round(t10 * rng.uniform(0.5, 20.0, n))
    return t11, t10, t00


def _physical_times(b, size_bytes, flops_per_byte: float, gpu: str):
    """(t11, t10, t00, KernelWork) of the built kernels from their bytes (module docstring)."""
    from .physical import (KIND_GEMM, KIND_OTHER, UNIT_CUDA_FP32, UNIT_TENSOR_BF16, KernelWork, fault_times_ns,
                           link_GBps, physical_model)
    from ..gpus import gpu_model

    in_bytes, out_bytes = kernel_io_bytes(np.array(b.offsets, np.int64), np.array(b.a_tensor, np.int64),
                                          np.array(b.a_mode, np.uint8), size_bytes)
    nbytes = in_bytes + out_bytes
    K = nbytes.shape[0]
    layer = np.array([n.startswith(("forward_", "backward_", "kernel_")) for n in b.kernel_name], bool)
    work = KernelWork(
        flops=np.where(layer, flops_per_byte * nbytes, nbytes / 4.0),
        bytes=nbytes,
        unit=np.where(layer, UNIT_TENSOR_BF16, UNIT_CUDA_FP32).astype(np.uint8),
        kind=np.where(layer, KIND_GEMM, KIND_OTHER).astype(np.uint8),
        tiles=np.zeros(K, np.int64), fill=np.ones(K, np.float32))
    g = gpu_model(gpu)
    t11 = physical_model().ideal_ns(work, g)
    t10, t00 = fault_times_ns(t11, in_bytes, out_bytes, link_GBps(g))
    return t11, t10, t00, work


class _Builder:
    """Accumulates tensors and per-kernel accesses in fault-queue order (reads, then writes)."""

    def __init__(self):
        self.tensor_name, self.tensor_global, self.tensor_share = [], [], []
        self.kernel_name, self.kernel_workspace_tensor = [], []
        self.offsets, self.a_tensor, self.a_mode = [0], [], []

    def tensor(self, name: str, is_global: bool, share: float) -> int:
        self.tensor_name.append(name)
        self.tensor_global.append(is_global)
        self.tensor_share.append(share)
        return len(self.tensor_name) - 1

    def kernel(self, name: str, reads=(), writes=(), updates=(), workspace: int = -1):
        """``updates`` are read and written (weight updates); ``workspace`` is written only."""
        self.kernel_name.append(name)
        self.kernel_workspace_tensor.append(workspace)
        for t in reads:
            self.a_tensor.append(t)
            self.a_mode.append(ACCESS_READ)
        for t in updates:
            self.a_tensor.append(t)
            self.a_mode.append(ACCESS_READ | ACCESS_WRITE)
        for t in list(writes) + ([workspace] if workspace >= 0 else []):
            self.a_tensor.append(t)
            self.a_mode.append(ACCESS_WRITE)
        self.offsets.append(len(self.a_tensor))


def _training(rng, n_kernels: int, workspace_probability: float) -> _Builder:
    layers = (n_kernels - 2) // 2
    b = _Builder()
    act_share = rng.lognormal(0.0, 1.0, layers + 1)
    act = [b.tensor("act_0", False, act_share[0])]
    b.kernel("load_data", writes=[act[0]])
    weight = [-1]  # 1-based
    for i in range(1, layers + 1):
        weight.append(b.tensor(f"weight_{i}", True, rng.lognormal(0.0, 1.0)))
        act.append(b.tensor(f"act_{i}", False, act_share[i]))
        ws = -1
        if rng.random() < workspace_probability:
            ws = b.tensor(f"workspace_fwd_{i}", False, 0.2 * act_share[i])
        b.kernel(f"forward_{i}", reads=[act[i - 1], weight[i]], writes=[act[i]], workspace=ws)
    grad = {layers: b.tensor(f"grad_{layers}", False, act_share[layers])}
    b.kernel("loss", reads=[act[layers]], writes=[grad[layers]])
    for i in range(layers, 0, -1):
        writes = []
        if i > 1:
            grad[i - 1] = b.tensor(f"grad_{i - 1}", False, act_share[i - 1])
            writes = [grad[i - 1]]
        ws = -1
        if rng.random() < workspace_probability:
            ws = b.tensor(f"workspace_bwd_{i}", False, 0.2 * act_share[i])
        b.kernel(f"backward_{i}", reads=[grad[i], act[i - 1]], writes=writes, updates=[weight[i]],
                 workspace=ws)
    if len(b.kernel_name) < n_kernels:  # odd count: one more weight update (or a last read)
        if layers:
            b.kernel("optimizer_step", updates=[weight[1]])
        else:
            b.kernel("optimizer_step", reads=[grad[layers]])
    return b


def _random(rng, n_kernels: int, n_tensors: int, global_fraction: float, reads_per_kernel: float) -> _Builder:
    n_global = 0
    if global_fraction > 0:
        n_global = min(n_tensors - 1, max(1, round(n_tensors * global_fraction)))
    n_local = n_tensors - n_global
    b = _Builder()
    births = np.sort(rng.integers(0, n_kernels, n_local))
    # ids: globals first, then locals in birth order, so "born before k" is a prefix
    globals_ = [b.tensor(f"weight_{i}", True, rng.lognormal(0.0, 1.0)) for i in range(n_global)]
    locals_ = [b.tensor(f"tensor_{i}", False, rng.lognormal(0.0, 1.0)) for i in range(n_local)]
    born = 0  # locals born before the current kernel
    for k in range(n_kernels):
        first_new = born
        while born < n_local and births[born] == k:
            born += 1
        pool = n_global + first_new
        n_reads = min(pool, 1 + int(rng.poisson(max(0.0, reads_per_kernel - 1.0))))
        picks = rng.choice(pool, size=n_reads, replace=False) if n_reads else np.zeros(0, np.int64)
        reads, updates = [], []
        for p in picks.tolist():
            if p < n_global:
                (updates if rng.random() < 0.2 else reads).append(globals_[p])
            else:
                reads.append(locals_[p - n_global])
        b.kernel(f"kernel_{k}", reads=reads, updates=updates, writes=locals_[first_new:born])
    return b


# a synthetic footprint's largest: 4 EiB (its tensors' byte counts, summed, stay within int64)
MAX_FOOTPRINT_BYTES = 2**62


def synthesize(n_kernels: int, footprint_bytes: int, *, pattern: str = "training", seed: int = 0,
               global_fraction: float = 0.2, n_tensors: int | None = None, reads_per_kernel: float = 3.0,
               workspace_probability: float = 0.1, kernel_time_us: float = 100.0,
               model: str | None = None, batch_size: int = 1, flops_per_byte: float | None = None,
               gpu: str = "A100-40GB") -> Trace:
    """A valid synthetic trace; see the module docstring for the patterns.

    ``footprint_bytes`` is the exact page-rounded footprint (rounded up to a page).
    ``global_fraction`` is the share of it in global (weight) tensors.
    ``n_tensors`` (``random`` only; default ``n_kernels``) and ``reads_per_kernel``
    (``random`` only) shape the reuse; ``workspace_probability`` (``training`` only)
    is the chance that a layer kernel has a workspace.  ``flops_per_byte`` (> 0): physical
    kernel times on ``gpu`` (a :mod:`g10core.gpus` model) instead of the lognormal ones around
    ``kernel_time_us``.  Bad arguments raise ``ValueError`` naming the parameter.
    """
    _check("pattern", pattern, pattern in PATTERNS, f"one of {', '.join(PATTERNS)}")
    _check("n_kernels", n_kernels, _is_int(n_kernels) and n_kernels >= (2 if pattern == "training" else 1),
           "an integer >= 2 (training) or >= 1 (random)")
    # (bounds a trace's 64-bit fields can hold: they were an OverflowError, exit 3)
    _check("footprint_bytes", footprint_bytes, _is_int(footprint_bytes) and 0 < footprint_bytes <= MAX_FOOTPRINT_BYTES,
           f"an integer in 1 .. 2**{MAX_FOOTPRINT_BYTES.bit_length() - 1}")
    _check("seed", seed, _is_int(seed) and 0 <= seed < 2**63, "an integer in 0 .. 2**63 - 1")
    _check("global_fraction", global_fraction, 0.0 <= global_fraction < 1.0, "in [0, 1)")
    _check("reads_per_kernel", reads_per_kernel, reads_per_kernel >= 1.0, ">= 1")
    _check("workspace_probability", workspace_probability, 0.0 <= workspace_probability <= 1.0, "in [0, 1]")
    _check("kernel_time_us", kernel_time_us, math.isfinite(kernel_time_us) and kernel_time_us > 0, "> 0")
    if _is_int(n_kernels) and n_kernels > 0:
        # t00 is up to 42x t11 (module docstring); every time column must stay within the trace bound
        most = MAX_ITERATION_TIME_NS / (42e3 * 1.5 * n_kernels)
        _check("kernel_time_us", kernel_time_us, kernel_time_us <= most,
               f"at most {most:.3g} with {n_kernels} kernels (an iteration's all-faulting kernel times, "
               f"up to 42x the ideal ones, must add up to at most {MAX_ITERATION_TIME_NS:.0e} ns)")
    _check("batch_size", batch_size, _is_int(batch_size) and 1 <= batch_size < 2**63, "an integer in 1 .. 2**63 - 1")
    if flops_per_byte is not None:
        _check("flops_per_byte", flops_per_byte, isinstance(flops_per_byte, (int, float))
               and not isinstance(flops_per_byte, bool) and math.isfinite(flops_per_byte) and flops_per_byte > 0,
               "a finite number > 0 (or None: lognormal times)")
        from ..gpus import GPUS, unknown_text
        if gpu not in GPUS:
            raise ValueError(f"synthesize: gpu = {gpu!r}: {unknown_text(gpu)}")
    if n_tensors is None:
        n_tensors = max(2, n_kernels)
    _check("n_tensors", n_tensors, _is_int(n_tensors) and n_tensors >= 1, "an integer >= 1")

    rng = np.random.default_rng(seed)
    if pattern == "training":
        b = _training(rng, int(n_kernels), workspace_probability)
    else:
        b = _random(rng, int(n_kernels), int(n_tensors), global_fraction, reads_per_kernel)

    T = len(b.tensor_name)
    total_pages = -(-int(footprint_bytes) // PAGE_SIZE_BYTES)
    if total_pages < T:
        raise ValueError(f"synthesize: footprint_bytes = {footprint_bytes} is {total_pages} pages, fewer than "
                         f"the {T} tensors of this {pattern} trace (each needs a page)")
    is_global = np.array(b.tensor_global, bool)
    shares = np.array(b.tensor_share, np.float64)
    n_global = int(is_global.sum())
    global_pages = 0
    if n_global:
        global_pages = min(max(round(total_pages * global_fraction), n_global), total_pages - (T - n_global))
    pages = np.empty(T, np.int64)
    pages[is_global] = _split_pages(rng, global_pages, shares[is_global])
    pages[~is_global] = _split_pages(rng, total_pages - global_pages, shares[~is_global])
    size_bytes = pages * PAGE_SIZE_BYTES

    K = len(b.kernel_name)
    t11, t10, t00 = _times(rng, K, kernel_time_us)
    work = None
    if flops_per_byte is not None:
        t11, t10, t00, work = _physical_times(b, size_bytes, float(flops_per_byte), gpu)
    workspace = np.zeros(K, np.int64)
    for k, t in enumerate(b.kernel_workspace_tensor):
        if t >= 0:  # the profile's bytes, which round up to the tensor's pages
            workspace[k] = size_bytes[t] - int(rng.integers(0, PAGE_SIZE_BYTES))

    params = dict(pattern=pattern, seed=int(seed), n_kernels=int(n_kernels), footprint_bytes=int(footprint_bytes),
                  global_fraction=float(global_fraction), kernel_time_us=float(kernel_time_us))
    if pattern == "training":
        params["workspace_probability"] = float(workspace_probability)
    else:
        params.update(n_tensors=int(n_tensors), reads_per_kernel=float(reads_per_kernel))
    if flops_per_byte is not None:
        params.update(flops_per_byte=float(flops_per_byte), gpu=gpu)
    trace = Trace(
        model=model or f"synth_{pattern}",
        batch_size=int(batch_size),
        tensor_size_bytes=size_bytes,
        tensor_is_global=is_global,
        tensor_name=np.array(b.tensor_name, dtype=str),
        kernel_name=np.array(b.kernel_name, dtype=str),
        kernel_time_ideal_ns=t11,
        kernel_time_fault_all_ns=t00,
        kernel_time_fault_outputs_ns=t10,
        kernel_workspace_bytes=workspace,
        access_offsets=np.array(b.offsets, np.int64),
        access_tensor=np.array(b.a_tensor, np.int32),
        access_mode=np.array(b.a_mode, np.uint8),
        source="g10core.workload.synth.synthesize(" + ", ".join(f"{k}={v!r}" for k, v in params.items()) + ")",
        profiling_gpu="synthetic" if work is None else f"NVIDIA {gpu} (synthetic work, physical-v1 times)",
        profiled_gpu="A100-40GB" if work is None else gpu,
        attrs={f"synth_{k}": v for k, v in params.items()},
        kernel_work=work,
    )
    validate_trace(trace)
    return trace
