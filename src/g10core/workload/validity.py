"""What a trace's absolute seconds mean: its family and one line on the questions it can answer.

Four families of traces reach the simulator (``docs/validity.md`` has the long form):

``artifact``
    The G10 artifact's profiles (its A100-40GB, fp32 CUDA cores): per-kernel times as measured
    by the published simulator's profiler, several times slower than that GPU's roofline and
    almost independent of the batch.  Exact for reproducing the paper; their absolute seconds
    and batch trends are not a real GPU's.
``physical``
    Captured on the meta device with the physical kernel-time model (``physical-v1``): each
    kernel's FLOPs and bytes on the GPU's units at published achievable fractions of peak; the
    ideal iteration is within the validation table's errors of published training throughput.
``calibrated``
    Captured with the fitted ``a100-g10-v1`` calibration (the artifact's quirks carried to new
    models): comparable with the artifact's traces, not with a real GPU.
``imported-gpu`` / ``imported-cpu``
    A torch.profiler recording: a GPU profile's kernel times are that GPU's (as measured); a
    CPU profile's are operator CPU durations, not GPU times.
``synthetic``
    Generated traces: their times are what their generator was told.
"""
from __future__ import annotations

FAMILY_LINES = {
    "artifact": "the G10 artifact's profiled times (fp32, several times slower than an A100's roofline, nearly "
                "batch-independent): exact for the paper's numbers; absolute seconds are not a real GPU's",
    "physical": "captured; physical kernel times (FLOPs and bytes on the GPU's units at published fractions of "
                "peak, docs/validation.md): absolute seconds of an ideal iteration, optimistic by the table's errors",
    "calibrated": "captured; times from the a100-g10-v1 calibration fitted on the artifact's profiles: comparable "
                  "with the paper's traces, not with a real GPU",
    "imported-gpu": "imported from a torch.profiler GPU profile: the measured kernel times of that GPU",
    "imported-cpu": "imported from a CPU-only profile: operator CPU durations, not GPU kernel times",
    "synthetic": "synthetic: times are the generator's parameters, not a GPU's",
    "unknown": "of unknown origin: its times are whatever the file says",
}


def trace_family(trace) -> str:
    """One of :data:`FAMILY_LINES`'s keys for ``trace`` (from its attributes and source)."""
    a = trace.attrs
    if "capture_tool" in a:
        version = str(a.get("kernel_time_model") or a.get("calibration_version", ""))
        return "physical" if version.startswith("physical") else "calibrated"
    if "import_time_source" in a:
        return "imported-gpu" if a["import_time_source"] == "gpu" else "imported-cpu"
    if any(k.startswith("synth_") for k in a):
        return "synthetic"
    if "G10 artifact" in trace.source:
        return "artifact"
    return "unknown"


def validity_line(trace) -> str:
    """One line: what the trace's absolute times mean."""
    return FAMILY_LINES[trace_family(trace)]
