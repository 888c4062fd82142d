"""Retarget a trace's kernel times to another GPU: the physical model on its stored work, or the
calibrated roofline on the shipped traces' names and sizes.

A trace that records each kernel's work (trace format 4, ``Trace.kernel_work``: the captured
traces) is retargeted by the physical kernel-time model (:mod:`g10core.workload.physical`):
each kernel scales by the ratio of its physical times on the two GPUs, on the unit that runs
it (tensor cores by dtype for matrix products, convolutions and fused attention; CUDA cores
otherwise; HBM for memory-bound kernels), with wave quantization on each GPU's SMs::

    t11' = max(1, round(t11 * P_target / P_source))       (P: physical.PhysicalModel.ideal_ns)

so a trace whose times are the physical model's own gets exactly the model's times on the
target.  The rest of this docstring is the rule for traces without recorded work.

A trace's kernel times were measured (or predicted) on one GPU, its ``profiled_gpu``
(a :mod:`g10core.gpus` model; the shipped traces: the A100-40GB of the G10 artifact).  A run
on another ``gpu.model`` first rescales every kernel's ideal time ``t11``, once, in Python, into
a new :class:`~g10core.workload.trace.Trace` (nothing per page, nothing in the compiled core).

How a kernel is classified and scaled
-------------------------------------
The shipped traces carry no FLOPs or bytes per kernel, so both are derived from the trace
itself exactly as the kernel-time calibration derives them
(:func:`~g10core.workload.kerneltime.shipped_features`): the class from the kernel's name
(``Linear_Forward`` -> ``linear``, ``Add_Forward`` -> ``elementwise``, ...), the bytes from the
sizes of the tensors it reads and writes, the FLOPs of a matrix product from its operands'
element counts (``2 sqrt(nA nB nC)``), one FLOP per output element otherwise; every kernel is
fp32, as in the G10 profiles (CUDA-core fp32 peak; TF32 only if the calibration says so).
With the calibrated coefficients of the kernel's operator, else its class (efficiencies
``ce``, ``me`` and fixed overhead ``o``; :class:`~g10core.workload.kerneltime.KernelTimeModel`),
the roofline on GPU ``g`` is::

    R_g = o + max(C / P_g, M / W_g),   C = flops / ce,  M = bytes / me

with ``P_g`` the fp32 peak FLOP/s and ``W_g`` the memory bandwidth of ``g``.  A kernel is
*compute-bound* on the source GPU when ``C / P_src >= M / W_src``, else *memory-bound*.  The
retargeted ideal time keeps the measured time's deviation from the roofline (a factor) and
the fitted fixed overhead::

    t11' = max(1, round(t11 * R_target / R_source))   (whole ns)

so a compute-bound kernel without overhead scales by ``P_src / P_target``, a memory-bound one
by ``W_src / W_target``, and the fixed overhead does not scale (kernels the calibration finds
overhead-dominated barely move).  A kernel that changes sides (memory-bound on the A100,
compute-bound on a GPU with much more bandwidth) takes the max of the two.

What is not retargeted
----------------------
The fault times are profile-derived (UVM on the profiling machine: page faults over its PCIe
link and driver), not GPU-rate times: their extra over the ideal time is kept as measured,
and only their ideal part moves with ``t11``::

    t10' = max(t10, t11) + (t11' - t11)        t00' = max(t00, t10) + (t11' - t11)

Tensor sizes, accesses and workspace bytes do not change (the same program on another GPU).
The GPU's memory and PCIe link come from ``gpu.model``'s table row through the configuration
(:func:`g10core.config.apply_gpu_model`), not from here.  A trace whose ``profiled_gpu`` is
``""`` (a GPU not in the table) is never retargeted.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..gpus import gpu_model
from .kerneltime import Calibration, KernelTimeModel, ProfilingGPU, load_calibration, shipped_features
from .trace import Trace

METHOD = "calibrated roofline ratio"
PHYSICAL_METHOD = "physical model ratio (stored kernel work)"


def _roofline_parts(feat, coeffs, gpu: ProfilingGPU):
    """(compute s, memory s) of every kernel on ``gpu`` (without the overhead)."""
    peak = gpu.peak_flops_per_s("float32")
    compute_s = feat.flops / (coeffs["compute_efficiency"] * peak)
    memory_s = feat.bytes / (coeffs["memory_efficiency"] * gpu.memory_bandwidth_GBps * 1e9)
    return compute_s, memory_s


def retarget_times(trace: Trace, source: str, target: str, calibration: Calibration | None = None):
    """(t11', t10', t00', compute_bound) in ns for ``trace`` moved from GPU ``source`` to ``target``.

    ``compute_bound``: bool per kernel (on the source GPU).  See the module docstring.
    """
    if trace.kernel_work is not None:
        return _physical_retarget_times(trace, source, target)
    cal = load_calibration() if calibration is None else calibration
    src = ProfilingGPU.of_model(gpu_model(source).name, allow_tf32=cal.gpu.allow_tf32)
    tgt = ProfilingGPU.of_model(gpu_model(target).name, allow_tf32=cal.gpu.allow_tf32)
    feat, t11, t10, t00, _ws = shipped_features(trace, src)
    if len(feat) == 0:
        z = np.zeros(0)
        return z, z, z, np.zeros(0, bool)
    coeffs = KernelTimeModel(cal, src).coefficient_table(feat)
    overhead_s = coeffs["overhead_us"] * 1e-6
    c_src, m_src = _roofline_parts(feat, coeffs, src)
    c_tgt, m_tgt = _roofline_parts(feat, coeffs, tgt)
    ratio = (overhead_s + np.maximum(c_tgt, m_tgt)) / (overhead_s + np.maximum(c_src, m_src))
    new11 = np.maximum(np.round(t11 * ratio), 1.0)
    delta = new11 - t11
    return new11, t10 + delta, t00 + delta, c_src >= m_src


def _physical_retarget_times(trace: Trace, source: str, target: str):
    from .physical import physical_model

    model = physical_model()
    work = trace.kernel_work
    src, tgt = gpu_model(source), gpu_model(target)
    ratio = model.ideal_ns(work, tgt) / model.ideal_ns(work, src)
    t11 = np.maximum(trace.kernel_time_ideal_ns, 1.0)
    new11 = np.maximum(np.round(t11 * ratio), 1.0)
    delta = new11 - t11
    compute_s, memory_s = model.parts_s(work, src)
    t10 = np.maximum(trace.kernel_time_fault_outputs_ns, t11)
    t00 = np.maximum(trace.kernel_time_fault_all_ns, t10)
    return new11, t10 + delta, t00 + delta, compute_s >= memory_s


def retarget(trace: Trace, target: str, calibration: Calibration | None = None) -> tuple[Trace, dict | None]:
    """``trace`` with its kernel times moved to GPU ``target``, and what was done.

    Returns ``(trace, None)`` unchanged when ``target`` is the trace's ``profiled_gpu`` or that
    is ``""`` (a GPU not in the table).  Otherwise a new Trace (``profiled_gpu = target``) and
    ``{"from", "to", "method", "calibration", "ideal_time_ratio", "compute_bound_kernels",
    "memory_bound_kernels"}`` (``ideal_time_ratio``: new over old sum of ``t11``).
    """
    source = trace.profiled_gpu
    gpu_model(target)
    if not source or source == target:
        return trace, None
    cal = load_calibration() if calibration is None else calibration
    t11, t10, t00, compute = retarget_times(trace, source, target, cal)
    old = float(np.sum(np.maximum(trace.kernel_time_ideal_ns, 1.0)))
    new = dataclasses.replace(
        trace, kernel_time_ideal_ns=t11, kernel_time_fault_outputs_ns=t10, kernel_time_fault_all_ns=t00,
        profiled_gpu=target, profiling_gpu=f"{trace.profiling_gpu} retargeted to NVIDIA {target}".strip(),
        attrs={**trace.attrs, "retargeted_from": source})
    info = {"from": source, "to": target,
            "method": PHYSICAL_METHOD if trace.kernel_work is not None else METHOD,
            "calibration": "physical-v1" if trace.kernel_work is not None else cal.version,
            "ideal_time_ratio": float(np.sum(t11)) / old if old > 0 else 1.0,
            "compute_bound_kernels": int(np.sum(compute)), "memory_bound_kernels": int(np.sum(~compute))}
    return new, info
