"""Fit the kernel-time model (:mod:`.timing`) on the shipped traces' measured A100 times.

The 30 shipped traces of the published workloads (converted from the G10 artifact; the 8
captured LLM traces are not used) carry, for every kernel, the three times the G10 authors
measured on an A100-40GB: ``t11``, ``t10`` and ``t00``.  This module turns each shipped kernel into :class:`~.timing.KernelFeatures`
and fits the coefficients of every kernel class on them.  Only those profiled kernel
times are used, never the published simulation results.

What a shipped trace tells about a kernel, and how the features are derived
---------------------------------------------------------------------------
* class: from the kernel's name (:data:`SHIPPED_KERNEL_CLASS`, e.g. ``Linear_Forward`` ->
  ``linear``, ``Apply_Grad`` -> ``optimizer``);
* bytes (roofline): sizes of the tensors it reads plus those it writes (page-rounded, as
  stored; the workspace tensor excluded); every tensor is fp32;
* in/out bytes (fault model): sizes of the tensors it reads / writes, workspace included
  (the simulators fault it like any output);
* FLOPs of a matrix product ``C[M,N] = A[M,K] B[K,N]``: the graph gives element counts, not
  shapes, but ``nA nB nC = (M K N)^2``, so ``flops = 2 sqrt(nA nB nC)`` exactly, with A, B
  the two largest inputs (one input read twice counts twice) and C the largest output that
  is not the workspace.  A batched product over ``b`` matrices has ``nA nB nC = b^3 (MKN)^2``:
  ``flops = 2 sqrt(nA nB nC / b)``, with ``b`` = batch size x attention heads (12 for
  BERT-Base, 6 for the ViT of the artifact: the ``(99, heads, seq, 64)`` shape records of
  ``nets/BERT_Base.txt`` and ``nets/VIT.txt``).  For a convolution the same product gives
  ``2 sqrt(nX nW nY) = flops * stride / k`` (k x k kernel), exact for 1x1 and low by k/stride
  otherwise: the conv classes' efficiencies absorb that factor (no captured model here
  has convolutions);
* FLOPs of anything else: one per element of its largest output (memory-bound anyway).

Fit: per class, the three roofline coefficients minimise the robust (soft-L1) squared
log-ratio of predicted to measured ``t11``; the fault coefficients minimise the same for
``t10`` given the measured ``t11`` and for ``t00`` given the measured ``t10``.  Measured
times are clamped as the simulators clamp them (``t10 = max(t10, t11)``,
``t00 = max(t00, t10)``) and floored at 1 ns.  ``scipy`` is needed for the fit (not for
using a calibration).

:func:`leave_one_model_out` fits on four models and predicts the fifth, for each model,
and reports median and 90th-percentile relative errors of per-kernel and per-trace total
times.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..workload.kerneltime import (ATTENTION_HEADS, DEFAULT_CLASS, KERNEL_CLASSES, SHIPPED_DTYPE_BYTES,  # noqa: F401
                                   SHIPPED_KERNEL_CLASS, Calibration, ClassCoefficients, KernelFeatures, ProfilingGPU,
                                   fault_ns, roofline_ns, shipped_features, shipped_kernel_class)
from ..workload.trace import read_trace

CALIBRATION_VERSION = "a100-g10-v1"

MIN_KERNELS = 20          # an operator or class with fewer measured kernels falls back (op -> class -> default)
# Efficiencies may exceed 1: some profiled kernels move less data than the tensors they list
# (the artifact's Concat and BERT's softmax forward run in place, faster than a full pass).
MAX_EFFICIENCY = 50.0


class ShippedSet:
    """Features and measured times of a set of shipped traces, with model and trace labels."""

    def __init__(self, paths, gpu: ProfilingGPU | None = None):
        self.gpu = ProfilingGPU() if gpu is None else gpu
        parts, t11, t10, t00, ws, model, trace_id = [], [], [], [], [], [], []
        self.paths = [Path(p) for p in paths]
        self.trace_models = []
        for i, p in enumerate(self.paths):
            tr = read_trace(p)
            f, a, b, c, w = shipped_features(tr, self.gpu)
            parts.append(f)
            t11.append(a), t10.append(b), t00.append(c), ws.append(w)
            model += [tr.model] * len(f)
            trace_id.append(np.full(len(f), i, np.int32))
            self.trace_models.append(tr.model)
        self.features = KernelFeatures.concat(parts)
        self.t11 = np.concatenate(t11)
        self.t10 = np.concatenate(t10)
        self.t00 = np.concatenate(t00)
        self.workspace = np.concatenate(ws)
        self.model = np.array(model)
        self.trace_id = np.concatenate(trace_id)

    @property
    def models(self):
        return sorted(set(self.trace_models))


# ---- fitting -------------------------------------------------------------------

def _least_squares(residual, x0, lower, upper):
    from scipy.optimize import least_squares

    x0 = np.clip(np.asarray(x0, np.float64), lower, upper)
    r = least_squares(residual, x0, bounds=(lower, upper), loss="soft_l1", f_scale=0.3,
                      x_scale=1.0, max_nfev=400, method="trf")
    return r.x


def _fit_roofline(feat: KernelFeatures, t11: np.ndarray, bandwidth_GBps: float):
    """(compute_efficiency, memory_efficiency, overhead_us) minimising robust log error."""
    log_t = np.log(t11)

    def residual(x):
        ce, me, oh = np.exp(x)
        return np.log(roofline_ns(feat, ce, me, oh, bandwidth_GBps)) - log_t

    lower = np.log([1e-5, 1e-4, 0.5])
    upper = np.log([MAX_EFFICIENCY, MAX_EFFICIENCY, 1e6])
    x = _least_squares(residual, np.log([0.3, 0.5, 5.0]), lower, upper)
    return tuple(float(v) for v in np.exp(x))


def _fit_fault(nbytes: np.ndarray, base_ns: np.ndarray, target_ns: np.ndarray):
    """(fixed_us, GBps) of ``target = base + fixed + nbytes / bandwidth`` (kernels with nbytes > 0)."""
    sel = nbytes > 0
    if not sel.any():
        return 100.0, 3.0
    nb, base, log_t = nbytes[sel], base_ns[sel], np.log(target_ns[sel])

    def residual(x):
        fixed, bw = np.exp(x)
        return np.log(base + fault_ns(nb, fixed, bw)) - log_t

    lower = np.log([1e-3, 1e-2])
    upper = np.log([1e6, 1e4])
    x = _least_squares(residual, np.log([100.0, 3.0]), lower, upper)
    return tuple(float(v) for v in np.exp(x))


def _fit_class(feat, t11, t10, t00, workspace, bandwidth_GBps) -> ClassCoefficients:
    ce, me, oh = _fit_roofline(feat, t11, bandwidth_GBps)
    of, obw = _fit_fault(feat.out_bytes, t11, t10)
    inf_, ibw = _fit_fault(feat.in_bytes, t10, t00)
    ws_ratio = 0.0
    with_ws = workspace > 0
    # a class gets a workspace when most of its kernels have one (cuDNN convolutions do)
    if with_ws.mean() > 0.5 and (feat.in_bytes[with_ws] > 0).all():
        ws_ratio = float(np.median(workspace[with_ws] / feat.in_bytes[with_ws]))
    return ClassCoefficients(compute_efficiency=ce, memory_efficiency=me, overhead_us=oh,
                             out_fault_fixed_us=of, out_fault_GBps=obw,
                             in_fault_fixed_us=inf_, in_fault_GBps=ibw,
                             workspace_per_input_byte=ws_ratio, n_kernels=int(len(feat)))


def _rounded(c: ClassCoefficients) -> ClassCoefficients:
    """Six significant digits: the JSON is stable and readable."""
    def r(v):
        return float(f"{v:.6g}")
    return replace(c, **{k: r(getattr(c, k)) for k in (
        "compute_efficiency", "memory_efficiency", "overhead_us", "out_fault_fixed_us", "out_fault_GBps",
        "in_fault_fixed_us", "in_fault_GBps", "workspace_per_input_byte")})


def fit_coefficients(data: ShippedSet, mask=None):
    """(class name -> ClassCoefficients, operator -> ClassCoefficients) fitted on the kernels in
    ``mask`` (default: all); operators and classes with fewer than MIN_KERNELS kernels are left out."""
    mask = np.ones(len(data.t11), bool) if mask is None else mask
    bw = data.gpu.memory_bandwidth_GBps
    feat = data.features.subset(mask)
    t11, t10, t00, ws = data.t11[mask], data.t10[mask], data.t00[mask], data.workspace[mask]

    def fit(sel):
        return _rounded(_fit_class(feat.subset(sel), t11[sel], t10[sel], t00[sel], ws[sel], bw))

    classes = {DEFAULT_CLASS: fit(np.ones(len(feat), bool))}
    for name in KERNEL_CLASSES:
        sel = feat.kernel_class == name
        if sel.sum() >= MIN_KERNELS:
            classes[name] = fit(sel)
    ops = {}
    for name in sorted(set(feat.op.tolist())):
        sel = feat.op == name
        if sel.sum() >= MIN_KERNELS:
            ops[name] = fit(sel)
    return classes, ops


def predict(data: ShippedSet, coefficients, mask=None):
    """(t11, t10, t00) predicted in ns for the kernels in ``mask`` (the full pipeline: the
    fault times are added to the predicted t11, as for a captured trace)."""
    from ..workload.kerneltime import KernelTimeModel

    mask = np.ones(len(data.t11), bool) if mask is None else mask
    classes, ops = coefficients
    cal = Calibration(version="fit", gpu=data.gpu, classes=classes, ops=ops)
    t11, t10, t00 = KernelTimeModel(cal).times_ns(data.features.subset(mask))
    return np.maximum(t11, 1.0), np.maximum(t10, 1.0), np.maximum(t00, 1.0)


def error_summary(data: ShippedSet, mask, pred) -> dict:
    """Median / 90th-percentile relative errors, per kernel and per trace total, for t11, t10, t00."""
    out = {}
    ids = data.trace_id[mask]
    for name, p, m in zip(("t11", "t10", "t00"), pred, (data.t11[mask], data.t10[mask], data.t00[mask])):
        rel = np.abs(p - m) / m
        totals = []
        for t in np.unique(ids):
            sel = ids == t
            totals.append(abs(p[sel].sum() - m[sel].sum()) / m[sel].sum())
        totals = np.array(totals)
        out[name] = {
            "kernel_median": float(np.median(rel)),
            "kernel_p90": float(np.percentile(rel, 90)),
            "total_median": float(np.median(totals)),
            "total_p90": float(np.percentile(totals, 90)),
            "total_max": float(totals.max()),
            "n_kernels": int(rel.size),
            "n_traces": int(totals.size),
        }
    return out


def leave_one_model_out(data: ShippedSet) -> dict:
    """For each model: fit on the others, predict it; its error summary (see :func:`error_summary`)."""
    out = {}
    for model in data.models:
        test = data.model == model
        out[model] = error_summary(data, test, predict(data, fit_coefficients(data, ~test), test))
    return out


def shipped_trace_paths(traces_dir=None) -> list[Path]:
    """The shipped G10-artifact traces (``<model>-b<batch>.h5`` of the five published models)."""
    from ..workload.g10artifact import MODEL_NAMES
    from ..workload.tracestore import traces_dir as default_traces_dir

    d = default_traces_dir() if traces_dir is None else Path(traces_dir)
    paths = sorted(p for m in MODEL_NAMES.values() for p in d.glob(f"{m}-b*.h5"))
    if not paths:
        raise FileNotFoundError(2, "no shipped G10 traces (<model>-b<batch>.h5) found", str(d))
    return paths


def fit_calibration(paths=None, *, version: str = CALIBRATION_VERSION, gpu: ProfilingGPU | None = None,
                    evaluate: bool = True) -> Calibration:
    """Fit a :class:`Calibration` on the traces in ``paths`` (default: every shipped G10 trace).

    With ``evaluate``, the leave-one-model-out errors are computed and stored in it too.
    """
    paths = shipped_trace_paths() if paths is None else [Path(p) for p in paths]
    data = ShippedSet(paths, gpu)
    classes, ops = fit_coefficients(data)
    errors = {"leave_one_model_out": leave_one_model_out(data)} if evaluate else {}
    if evaluate:
        errors["in_sample"] = error_summary(data, np.ones(len(data.t11), bool), predict(data, (classes, ops)))
    notes = ("Fitted by g10core.capture.calibrate.fit_calibration on the measured A100-40GB kernel times "
             "(t11, t10, t00) of the shipped G10-artifact traces; no published simulation result is used. "
             "Errors are relative |predicted - measured| / measured, measured times clamped as the simulators "
             "clamp them.")
    return Calibration(version=version, gpu=data.gpu, classes=classes, ops=ops,
                       fitted_on=tuple(p.name for p in paths), notes=notes, errors=errors)


def format_errors(errors: dict) -> str:
    """The leave-one-model-out table (text)."""
    lines = ["| held-out model | time | kernel median | kernel p90 | total median | total p90 | kernels | traces |",
             "|---|---|---|---|---|---|---|---|"]
    for model, summ in errors.items():
        for t in ("t11", "t10", "t00"):
            s = summ[t]
            lines.append(f"| {model} | {t} | {100 * s['kernel_median']:.1f} % | {100 * s['kernel_p90']:.1f} % | "
                         f"{100 * s['total_median']:.1f} % | {100 * s['total_p90']:.1f} % | {s['n_kernels']} | "
                         f"{s['n_traces']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m g10core.capture.calibrate [--traces DIR] [-o FILE]``: fit, print the errors, write."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m g10core.capture.calibrate", description=__doc__.splitlines()[0])
    p.add_argument("--traces", help="folder of the shipped traces (default: the package's)")
    p.add_argument("-o", "--output", help="write the calibration JSON here")
    args = p.parse_args(argv)
    cal = fit_calibration(shipped_trace_paths(args.traces))
    print(format_errors(cal.errors["leave_one_model_out"]))
    if args.output:
        cal.write(args.output)
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
