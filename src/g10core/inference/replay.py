"""ZeRO-Inference and Accelerate as plans replayed by the tensor-level simulator (a cross-check of the
closed form).

:func:`zero_inference_plan` writes ZeRO-Inference's weight streaming as hints on an inference
trace, as :mod:`g10core.policies.zero_infinity` does for training: every weight starts in host
memory (``cpu``) or on the SSD (``nvme``); a layer step's weights are fetched one layer step
ahead (at the first kernel of the step before: SSD to host, then host to GPU) and dropped from
the GPU after the step's last kernel (their home copy stays current).  The KV cache stays on the
GPU.  :func:`zero_inference_replay` runs the plan in :func:`g10core.policies.tensorsim.simulate`
(mode ``gds``: transfer queues, the GPU link and SSD bandwidths, capacities), where the closed
form (:func:`g10core.inference.schedule.run_inference`) takes each layer step as the longer of
its copy and its compute; docs/guide/inference.md sets the two side by side.  Accelerate's device
map (:func:`accelerate_plan`) is replayed the same way, each offloaded layer's weights fetched when
the layer runs, with no prefetch.

Not a registered policy: the policy registry's runs (``reproduce llm``) are training iterations.
"""
from __future__ import annotations

import numpy as np

from ..codes import HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, ROLE_PARAMETER, TIER_GPU, TIER_HOST, TIER_NOT_PRESENT, TIER_SSD
from ..workload.trace import Trace
from .schedule import kernel_layers


def zero_inference_plan(trace: Trace, device: str = "cpu") -> dict:
    """``{"hints", "initial_tier", "info"}`` of ZeRO-Inference on ``device`` (``cpu`` or ``nvme``)."""
    if device not in ("cpu", "nvme"):
        raise ValueError(f"device = {device!r}: cpu or nvme")
    n_layers = int(trace.tensor_layer.max()) + 1
    return layer_offload_plan(trace, np.full(n_layers, 2 if device == "nvme" else 1), prefetch=True,
                              info={"device": device})


def accelerate_plan(trace: Trace, machine) -> dict:
    """Accelerate's device map (:func:`g10core.inference.schedule.accelerate_device_map`) as hints: an
    offloaded layer's weights are fetched when the layer runs (no prefetch) and dropped after it."""
    from .schedule import accelerate_device_map, layer_stats

    where = accelerate_device_map(layer_stats(trace), machine)
    return layer_offload_plan(trace, where, prefetch=False,
                              info={"layers_on": {n: int((where == i).sum()) for i, n in enumerate(("gpu", "cpu",
                                                                                                     "disk"))}})


def layer_offload_plan(trace: Trace, where: np.ndarray, prefetch: bool, info: dict | None = None) -> dict:
    """Hints that stream the weights of each layer whose ``where`` is 1 (host memory) or 2 (SSD) to the GPU
    for each of its layer steps: fetched at the first kernel of the step before (``prefetch``) or of the
    step itself, dropped from the GPU after the step's last kernel; layers with 0 stay on the GPU."""
    if trace.kernel_phase is None:
        raise ValueError(f"{trace.model}: not an inference trace (no kernel phases)")
    from ..policies.offload import hint_table

    K = trace.n_kernels
    step = trace.kernel_phase.astype(np.int64) * (int(trace.tensor_layer.max()) + 2) + kernel_layers(trace)
    starts = np.flatnonzero(np.concatenate(([True], step[1:] != step[:-1])))
    ends = np.concatenate((starts[1:], [K])) - 1
    params = trace.tensor_role == ROLE_PARAMETER
    by_layer: dict = {}
    for t in np.flatnonzero(params).tolist():
        by_layer.setdefault(int(trace.tensor_layer[t]), []).append(t)
    layer_of_step = kernel_layers(trace)[starts]
    rows = []
    for i, (k0, k1) in enumerate(zip(starts.tolist(), ends.tolist())):
        layer = int(layer_of_step[i])
        if where[layer] == 0:
            continue
        pre = int(starts[i - 1]) if (prefetch and i > 0) else k0
        for t in by_layer.get(layer, []):
            if where[layer] == 2:
                rows.append((pre, t, HINT_TO_HOST))      # SSD -> host staging
            rows.append((pre, t, HINT_TO_GPU))
            if k1 + 1 < K:
                rows.append((k1 + 1, t, HINT_FREE))      # the GPU copy goes; the home copy stays current
    tier = np.where(trace.tensor_is_global, TIER_GPU, TIER_NOT_PRESENT).astype(np.int8)
    home = np.array([TIER_GPU, TIER_HOST, TIER_SSD], np.int8)[np.asarray(where, np.int64)]
    tier[params] = home[trace.tensor_layer[params]]
    hints = hint_table(rows)
    return {"hints": hints, "initial_tier": tier,
            "info": {**(info or {}), "layer_steps": int(starts.size), "n_hints": int(hints.size)}}


def zero_inference_replay(trace: Trace, config, device: str = "cpu") -> dict:
    """Run :func:`zero_inference_plan` in the tensor-level simulator; its result dict (``time_s``, ...)."""
    return replay_plan(trace, config, zero_inference_plan(trace, device), "zero-inference")


def accelerate_replay(trace: Trace, config, machine) -> dict:
    """Run :func:`accelerate_plan` in the tensor-level simulator."""
    return replay_plan(trace, config, accelerate_plan(trace, machine), "accelerate")


def replay_plan(trace: Trace, config, plan: dict, policy: str) -> dict:
    """A plan (``hints``, ``initial_tier``, ``info``) run by :func:`g10core.policies.tensorsim.simulate`."""
    from ..policies import tensorsim

    # the CPU tier's semantics (no kernel runs on the CPU): a weight's home copy in host memory or on the
    # SSD stays current, so ``free`` drops only its GPU copy and the next step's ``to_gpu`` fetches it again
    res = tensorsim.simulate(trace, config, plan["hints"], mode="gds", initial_tier=plan["initial_tier"],
                             cpu_kernels=np.zeros(trace.n_kernels, bool), host_overflow="ssd", policy=policy)
    res["plan"] = plan["info"]
    return res
