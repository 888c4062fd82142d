"""GPU models as data: one table of the GPUs a run can name (``gpu.model``, ``--gpu NAME``).

Each row is a :class:`GPUModel`: memory, SMs, memory bandwidth, dense peak FLOP/s per
data type (no 2:4 sparsity), the PCIe link, and the document each figure comes from.
NVIDIA's datasheets quote the tensor-core peaks "with sparsity"; the dense figures here
are half of those, as the datasheets' footnotes say.  Memory sizes are the products'
names (40 GB, 80 GB, ...) read as GiB, the unit of ``gpu.memory_GiB``.

What the table sets (:func:`apply_model`): choosing a model puts its memory, SMs and PCIe
link in ``gpu.memory_GiB``, ``gpu.sms``, ``link.generation``, ``link.lanes``,
``link.bandwidth_GBps`` and ``host.bandwidth_GBps`` (the link's raw bandwidth per direction,
:class:`~g10core.link.pcie.PcieSpec`), except the keys the user sets explicitly: those win.  The
peaks and the memory bandwidth retarget a trace's kernel times
(:mod:`g10core.workload.retarget`).  The profiling GPU of the calibrated kernel-time model
(:class:`g10core.workload.kerneltime.ProfilingGPU`) takes its A100 figures from this table.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

# The GPU the shipped traces and the G10 artifact's profiles were measured on (G10 paper, Sec. 6:
# one A100 40 GB), the GPU of every preset, and the model of a trace file that names none.
DEFAULT_GPU = "A100-40GB"

# documents the figures come from
A100_DS = "NVIDIA A100 Tensor Core GPU datasheet (dense rates; 40GB and 80GB SXM columns)"
A100_WP = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (108 SMs)"
H100_DS = "NVIDIA H100 Tensor Core GPU datasheet (SXM and PCIe columns; sparse peaks halved)"
H100_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (132 SMs SXM5, 114 SMs PCIe)"
H200_DS = "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column; sparse peaks halved)"
B200_DS = ("NVIDIA HGX B200 / DGX B200 technical specifications (individual Blackwell GPU of HGX B200: "
           "180 GB HBM3e, 7.7 TB/s, PCIe Gen5 128 GB/s; sparse peaks halved)")
B200_SMS = "148 SMs: CUDA device query of an HGX B200 (not in NVIDIA's datasheet)"
L40S_DS = "NVIDIA L40S datasheet (sparse peaks halved; PCIe Gen4 x16)"
T4_DS = ("NVIDIA T4 Tensor Core GPU datasheet: 16 GB GDDR6, 320+ GB/s (320), FP32 8.1 TFLOPS, mixed precision "
         "(FP16/FP32) 65 TFLOPS, PCIe Gen3 x16; no TF32/BF16 on Turing (their rows take the FP16/FP32 ones: "
         "a kernel of those units runs at that rate), FP64 1/32 of FP32 (Turing whitepaper)")
T4_WP = "NVIDIA Turing GPU Architecture whitepaper (TU104 in the T4: 40 SMs)"
A6000_DS = ("NVIDIA RTX A6000 datasheet: 48 GB GDDR6, 768 GB/s, 84 second-generation RT/third-generation tensor "
            "cores, FP32 38.7 TFLOPS, tensor 309.7 TFLOPS with sparsity (154.8 dense FP16/BF16, 77.4 dense TF32), "
            "PCIe Gen4 x16; FP64 1/64 of FP32 (GA102, NVIDIA Ampere GA102 GPU Architecture whitepaper)")
A6000_WP = "NVIDIA Ampere GA102 GPU Architecture whitepaper (RTX A6000: 84 SMs)"
ADA_WP = ("NVIDIA Ada GPU Architecture whitepaper, GeForce RTX 4090 column (tensor rates with FP32 "
          "accumulate, dense)")


@dataclass(frozen=True)
class GPUModel:
    """One GPU: every figure has its unit in its name; ``sources`` says where each came from."""

    name: str                       # the table key (gpu.model)
    memory_GiB: float
    sms: int
    memory_bandwidth_GBps: float    # 1e9 B/s
    fp64_TFLOPs: float              # CUDA cores
    fp32_TFLOPs: float              # CUDA cores (not tensor cores)
    tf32_TFLOPs: float              # tensor cores, dense
    fp16_TFLOPs: float              # tensor cores, dense
    bf16_TFLOPs: float              # tensor cores, dense
    fp8_TFLOPs: float | None        # tensor cores, dense; None: no FP8
    pcie_generation: int
    pcie_lanes: int
    sources: dict = field(default_factory=dict, compare=False)   # figure -> document

    @property
    def full_name(self) -> str:
        return f"NVIDIA {self.name}"

    def peak_TFLOPs(self, dtype: str) -> float | None:
        """Dense peak of ``dtype`` (fp64, fp32, tf32, fp16, bf16, fp8); None where there is none."""
        return getattr(self, f"{dtype}_TFLOPs")

    def to_dict(self) -> dict:
        return {"name": self.name, "memory_GiB": self.memory_GiB, "sms": self.sms,
                "memory_bandwidth_GBps": self.memory_bandwidth_GBps, "fp64_TFLOPs": self.fp64_TFLOPs,
                "fp32_TFLOPs": self.fp32_TFLOPs, "tf32_TFLOPs": self.tf32_TFLOPs, "fp16_TFLOPs": self.fp16_TFLOPs,
                "bf16_TFLOPs": self.bf16_TFLOPs, "fp8_TFLOPs": self.fp8_TFLOPs,
                "pcie_generation": self.pcie_generation, "pcie_lanes": self.pcie_lanes,
                "sources": dict(self.sources)}


def _src(ds: str, wp: str, **extra) -> dict:
    d = {k: ds for k in ("memory_GiB", "memory_bandwidth_GBps", "fp64_TFLOPs", "fp32_TFLOPs", "tf32_TFLOPs",
                         "fp16_TFLOPs", "bf16_TFLOPs", "fp8_TFLOPs", "pcie")}
    d["sms"] = wp
    d.update(extra)
    return d


GPUS: dict[str, GPUModel] = {g.name: g for g in (
    GPUModel("A100-40GB", 40.0, 108, 1555.0, 9.7, 19.5, 156.0, 312.0, 312.0, None, 4, 16,
             _src(A100_DS, A100_WP, fp8_TFLOPs="no FP8 on Ampere (A100 datasheet)")),
    GPUModel("A100-80GB", 80.0, 108, 2039.0, 9.7, 19.5, 156.0, 312.0, 312.0, None, 4, 16,
             _src(A100_DS, A100_WP, fp8_TFLOPs="no FP8 on Ampere (A100 datasheet)")),
    GPUModel("H100-SXM", 80.0, 132, 3350.0, 34.0, 67.0, 494.5, 989.5, 989.5, 1979.0, 5, 16,
             _src(H100_DS, H100_WP)),
    GPUModel("H100-PCIe", 80.0, 114, 2000.0, 26.0, 51.0, 378.0, 756.5, 756.5, 1513.0, 5, 16,
             _src(H100_DS, H100_WP)),
    GPUModel("H200", 141.0, 132, 4800.0, 34.0, 67.0, 494.5, 989.5, 989.5, 1979.0, 5, 16,
             _src(H200_DS, "GH100 as in H100 SXM: NVIDIA H100 Tensor Core GPU Architecture whitepaper (132 SMs)")),
    GPUModel("B200", 180.0, 148, 7700.0, 37.0, 75.0, 1100.0, 2250.0, 2250.0, 4500.0, 5, 16,
             _src(B200_DS, B200_SMS)),
    GPUModel("L40S", 48.0, 142, 864.0, 1.43, 91.6, 183.0, 362.05, 362.05, 733.0, 4, 16,
             _src(L40S_DS, "NVIDIA Ada GPU Architecture whitepaper (AD102, L40S: 142 SMs)",
                  fp64_TFLOPs="1/64 of FP32 (Ada GPU Architecture whitepaper)")),
    GPUModel("T4", 16.0, 40, 320.0, 0.25, 8.1, 8.1, 65.0, 65.0, None, 3, 16,
             _src(T4_DS, T4_WP, fp8_TFLOPs="no FP8 on Turing (T4 datasheet)",
                  tf32_TFLOPs="no TF32 on Turing: the FP32 rate", bf16_TFLOPs="no BF16 on Turing: the FP16 rate")),
    GPUModel("A6000", 48.0, 84, 768.0, 0.6, 38.7, 77.4, 154.8, 154.8, None, 4, 16,
             _src(A6000_DS, A6000_WP, fp8_TFLOPs="no FP8 on Ampere (RTX A6000 datasheet)")),
    GPUModel("RTX-4090", 24.0, 128, 1008.0, 1.29, 82.6, 82.6, 165.2, 165.2, 330.3, 4, 16,
             _src(ADA_WP, ADA_WP, fp64_TFLOPs="1/64 of FP32 (Ada GPU Architecture whitepaper)")),
)}
# other spellings a user may type: suggested, not accepted (a result records one name per GPU)
ALIASES = {"RTX A6000": "A6000", "RTX-A6000": "A6000", "Tesla T4": "T4", "RTX 4090": "RTX-4090", "RTX4090": "RTX-4090", "H100": "H100-SXM", "A100": "A100-40GB"}


def known() -> list[str]:
    return list(GPUS)


def family(name) -> str:
    """The model family a GPU name starts with (``H100`` of ``H100-80GB``, ``RTX4090`` of
    ``RTX 4090``): its leading letters and first number, upper case, a separator between them dropped."""
    m = re.match(r"\s*([A-Za-z]*)[\s_-]*([0-9]+)", str(name))
    return (m.group(1) + m.group(2)).upper() if m else ""


def suggestions(name) -> list[str]:
    """The table keys to suggest for an unknown GPU ``name``: those of its family first
    (``H100-80GB``: ``H100-SXM``, ``H100-PCIe``; a memory-size suffix is not a family), else the
    closest in spelling (an alias suggests its key)."""
    alias = {k.lower(): v for k, v in ALIASES.items()}.get(str(name).strip().lower())
    if alias:
        return [alias]
    fam = family(name)
    same = [k for k in GPUS if fam and family(k) == fam]
    if same:      # the closest in spelling first
        return sorted(same, key=lambda k: -difflib.SequenceMatcher(None, str(name).lower(), k.lower()).ratio())
    keys = {k.lower(): k for k in list(GPUS) + list(ALIASES)}
    close = difflib.get_close_matches(str(name).lower(), list(keys), n=1, cutoff=0.5)
    return [ALIASES.get(keys[c], keys[c]) for c in close]


def unknown_text(name) -> str:
    """``unknown GPU 'X'; known: ...; did you mean 'Y'?`` (one line)."""
    close = suggestions(name)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown GPU {name!r}; known: {', '.join(GPUS)}{hint}"


def gpu_model(name: str) -> GPUModel:
    """The row of ``name`` (a table key); ValueError naming the known ones otherwise."""
    if name not in GPUS:
        raise ValueError(unknown_text(name))
    return GPUS[name]


# the configuration keys a model sets (unless set explicitly)
MODEL_KEYS = ("gpu.memory_GiB", "gpu.sms", "link.generation", "link.lanes", "link.bandwidth_GBps",
              "host.bandwidth_GBps")

