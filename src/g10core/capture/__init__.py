"""Capture one training iteration of a PyTorch model as a g10core trace.

``capture(model, example_inputs, loss_fn, optimizer)`` runs forward, loss, backward and
the optimizer step on the meta device (nothing allocated, no weights needed) and records
every ATen kernel with the tensors it reads and writes (:mod:`.recorder`).  Kernel times
come from a roofline and fault-cost model (:mod:`.timing`) fitted on the shipped traces'
measured A100 times (:mod:`.calibrate`).  ``capture_family`` builds BERT-Base, GPT-2 and
LLaMA-style decoders from their configuration (:mod:`.families`, :mod:`.models`).

``import_profile(et_path, kineto_path)`` (:mod:`.profile`) imports a real iteration recorded
with ``torch.profiler``: measured kernel times instead of predicted ones.

Needs PyTorch (the ``capture`` extra: ``pip install 'g10core[capture]'``); the time model,
the calibration and ``import_profile`` do not (nor does ``g10sim reproduce llm``, which runs the
policies on the captured traces: :mod:`g10core.experiments.llm`).
"""
from __future__ import annotations

from ..workload.kerneltime import (Calibration, ClassCoefficients, KernelFeatures, KernelTimeModel, ProfilingGPU,
                                   load_calibration)
from .profile import import_profile

INSTALL_HINT = "pip install 'g10core[capture]' (PyTorch >= 2.4; a CPU build is enough)"

_TORCH_API = {
    "capture": "api", "capture_family": "api", "CaptureError": "recorder", "KernelRecorder": "recorder",
    "build_model": "models", "family_workload": "models",
}


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def __getattr__(name):  # the torch-dependent API is imported on first use
    if name in _TORCH_API:
        if not torch_available():
            raise ImportError(f"g10core.capture.{name} needs PyTorch: {INSTALL_HINT}")
        import importlib

        return getattr(importlib.import_module(f".{_TORCH_API[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Calibration", "ClassCoefficients", "KernelFeatures", "KernelTimeModel", "ProfilingGPU",
           "load_calibration", "import_profile", "torch_available", "INSTALL_HINT", *_TORCH_API]
