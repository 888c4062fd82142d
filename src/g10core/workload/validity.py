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
``imported-gpu`` / ``imported-cpu`` / ``imported-cpu-physical``
    A torch.profiler recording: a GPU profile's kernel times are that GPU's (as measured); a
    CPU profile's are operator CPU durations, not GPU times, unless imported with
    ``--cpu-times physical`` (the physical model on a named GPU).
``inference-physical``
    An analytical inference run (:mod:`g10core.workload.llm`): the work of each kernel written
    down from the model's configuration, timed by the physical model.
``synthetic``
    Generated traces: their times are what their generator was told; ``synthetic-physical``:
    generated work (bytes, FLOPs per byte) timed by the physical model.
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
    "imported-cpu-physical": "imported from a CPU-only profile, timed by the physical model on the named GPU from "
                             "each operator's FLOPs and bytes (docs/validation.md): a real GPU's seconds, within the "
                             "model's errors",
    "synthetic": "synthetic: times are the generator's parameters, not a GPU's",
    "synthetic-physical": "synthetic work (bytes and FLOPs per byte as asked) timed by the physical model on the "
                          "named GPU: physical seconds of a made-up workload",
    "inference-physical": "an analytical LLM inference run (g10core.workload.llm): each kernel's FLOPs and bytes from "
                          "the model's configuration, timed by the physical model on the named GPU",
    "unknown": "of unknown origin: its times are whatever the file says",
}


def trace_family(trace) -> str:
    """One of :data:`FAMILY_LINES`'s keys for ``trace`` (from its attributes and source)."""
    a = trace.attrs
    if "capture_tool" in a:
        version = str(a.get("kernel_time_model") or a.get("calibration_version", ""))
        return "physical" if version.startswith("physical") else "calibrated"
    if "import_time_source" in a:
        if a["import_time_source"] == "gpu":
            return "imported-gpu"
        return "imported-cpu-physical" if a.get("import_cpu_times") == "physical" else "imported-cpu"
    if "inference_model" in a:
        return "inference-physical"
    if any(k.startswith("synth_") for k in a):
        return "synthetic-physical" if "synth_flops_per_byte" in a else "synthetic"
    if "G10 artifact" in trace.source:
        return "artifact"
    return "unknown"


def validity_line(trace) -> str:
    """One line: what the trace's absolute times mean."""
    return FAMILY_LINES[trace_family(trace)]
