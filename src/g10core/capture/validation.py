"""The physical kernel-time model beside published training throughput of real GPUs.

:data:`MEASUREMENTS` lists published, cited training measurements (model, GPU, precision,
batch, sequence length or image size, measured throughput).  :func:`predict` captures the
same workload on the meta device (:func:`g10core.capture.capture_family`, the physical model
``physical-v1`` on the measurement's GPU) and turns its ideal iteration (every tensor resident)
into the same unit.  :func:`validation_table` does every row; ``g10sim reproduce validation``
prints it and ``docs/validation.md`` shows it with the reason for each error above 15 %.

How a prediction is made comparable:

* per GPU: throughput of a run on N GPUs is divided by N (data-parallel ranks each run the
  whole model on their share of the batch; the gradient all-reduce is not modelled, and the
  sources' runs overlap it with the backward pass);
* gradient accumulation: the sources step the optimizer once every ``accumulation`` micro-
  batches, so the step's kernels count ``1 / accumulation`` of their time;
* mixed precision ("AMP", "bf16") is captured as a 16-bit model with fp32 master weights and
  AdamW (:class:`g10core.capture.mixed.MasterWeightAdamW`), "TF32" as an fp32 model whose
  matrix products and convolutions run on TF32 tensor cores.

No constant of the model was fitted to these numbers (:mod:`g10core.workload.physical` cites
each one's own measurement).
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

DLE = "NVIDIA/DeepLearningExamples"
DLE_RESNET = (f"{DLE}, PyTorch/Classification/ConvNets/resnet50v1.5/README.md, 'Training performance: NVIDIA DGX "
              "A100 (8x A100 80GB)', 1 GPU row (batch 256 per GPU: ConvNets/configs.yml, DGXA100)")
DLE_RESNEXT = (f"{DLE}, PyTorch/Classification/ConvNets/resnext101-32x4d/README.md, 'Training performance: NVIDIA "
               "DGX A100 (8x A100 80GB)', 1 GPU row (batch 128: ConvNets/configs.yml)")
DLE_SE = (f"{DLE}, PyTorch/Classification/ConvNets/se-resnext101-32x4d/README.md, 'Training performance: NVIDIA DGX "
          "A100 (8x A100 80GB)', 1 GPU row (batch 128: ConvNets/configs.yml)")
DLE_BERT = (f"{DLE}, PyTorch/LanguageModeling/BERT/README.md, 'Pre-training NVIDIA DGX A100 (8x A100 80GB)', "
            "1 GPU rows")
DLE_SQUAD = (f"{DLE}, PyTorch/LanguageModeling/BERT/README.md, 'Fine-tuning NVIDIA DGX A100 (8x A100 80GB)', 1 GPU "
             "row (sequence length 384: scripts/run_squad.sh)")
FLASH = ("Dao-AILab/flash-attention, training/README.md, 'Training speed' (8 x A100-80GB SXM4, bf16, sequence "
         "length 2048; micro-batch per GPU from training/configs/experiment/pile/)")


@dataclass(frozen=True)
class Measurement:
    """One published training measurement and the capture that stands for it."""

    key: str
    family: str
    size: str
    gpu: str                   # g10core.gpus model
    precision: str             # "TF32", "AMP" (fp16), "bf16"
    batch: int                 # per GPU, per micro-batch
    seq_len: int               # tokens, or the image side
    measured: float            # per GPU
    unit: str                  # "images/s", "sequences/s", "tokens/s"
    source: str
    accumulation: int = 1      # micro-batches per optimizer step
    gpus: int = 1              # GPUs of the published run (the number above is per GPU)
    optimizer: str = "adamw"   # the capture's optimizer for TF32 (mixed precision: AdamW over fp32 masters)
    attention: str = "fused"   # the capture's attention (the image families: ignored)
    note: str = ""

    @property
    def dtype(self) -> str:
        return {"TF32": "float32", "AMP": "float16", "bf16": "bfloat16"}[self.precision]


MEASUREMENTS: tuple[Measurement, ...] = (
    Measurement("resnet50-tf32", "resnet", "50", "A100-80GB", "TF32", 256, 224, 938.0, "images/s", DLE_RESNET,
                optimizer="sgd-momentum"),
    Measurement("resnet50-amp", "resnet", "50", "A100-80GB", "AMP", 256, 224, 2470.0, "images/s", DLE_RESNET),
    Measurement("resnext101-tf32", "resnext", "101-32x4d", "A100-80GB", "TF32", 128, 224, 456.0, "images/s",
                DLE_RESNEXT, optimizer="sgd-momentum"),
    Measurement("resnext101-amp", "resnext", "101-32x4d", "A100-80GB", "AMP", 128, 224, 1211.0, "images/s",
                DLE_RESNEXT),
    Measurement("se-resnext101-tf32", "se-resnext", "101-32x4d", "A100-80GB", "TF32", 128, 224, 395.0, "images/s",
                DLE_SE, optimizer="sgd-momentum"),
    Measurement("se-resnext101-amp", "se-resnext", "101-32x4d", "A100-80GB", "AMP", 128, 224, 855.0, "images/s",
                DLE_SE),
    Measurement("bert-large-s128-tf32", "bert", "large", "A100-80GB", "TF32", 128, 128, 317.0, "sequences/s",
                DLE_BERT, accumulation=64, attention="eager", note="LAMB in the source; AdamW here"),
    Measurement("bert-large-s128-amp", "bert", "large", "A100-80GB", "AMP", 256, 128, 580.0, "sequences/s",
                DLE_BERT, accumulation=32, attention="eager", note="LAMB in the source; AdamW here"),
    Measurement("bert-large-s512-tf32", "bert", "large", "A100-80GB", "TF32", 16, 512, 110.0, "sequences/s",
                DLE_BERT, accumulation=256, attention="eager", note="LAMB in the source; AdamW here"),
    Measurement("bert-large-s512-amp", "bert", "large", "A100-80GB", "AMP", 32, 512, 210.0, "sequences/s",
                DLE_BERT, accumulation=128, attention="eager", note="LAMB in the source; AdamW here"),
    Measurement("bert-large-squad-tf32", "bert", "large", "A100-80GB", "TF32", 32, 384, 61.5, "sequences/s",
                DLE_SQUAD, attention="eager"),
    Measurement("bert-large-squad-amp", "bert", "large", "A100-80GB", "AMP", 32, 384, 110.5, "sequences/s",
                DLE_SQUAD, attention="eager"),
    Measurement("gpt3-125m", "gpt3", "125m", "A100-80GB", "bf16", 32, 2048, 1310e3 / 8, "tokens/s", FLASH, gpus=8),
    Measurement("gpt3-355m", "gpt3", "355m", "A100-80GB", "bf16", 32, 2048, 503e3 / 8, "tokens/s", FLASH, gpus=8),
    Measurement("gpt3-760m", "gpt3", "760m", "A100-80GB", "bf16", 16, 2048, 245e3 / 8, "tokens/s", FLASH, gpus=8,
                accumulation=2),
    Measurement("gpt3-1.3b", "gpt3", "1.3b", "A100-80GB", "bf16", 8, 2048, 169e3 / 8, "tokens/s", FLASH, gpus=8,
                accumulation=8),
    Measurement("gpt3-2.7b", "gpt3", "2.7b", "A100-80GB", "bf16", 4, 2048, 85e3 / 8, "tokens/s", FLASH, gpus=8,
                accumulation=16),
)


@dataclass(frozen=True)
class Ratio:
    """A published speed-up of one GPU over another on the same workload."""

    key: str
    measurement: str           # the key of the MEASUREMENTS row whose workload is run on both
    slower: str
    faster: str
    measured: float            # faster / slower throughput
    source: str
    note: str = ""


RATIOS: tuple[Ratio, ...] = (
    Ratio("resnet50-h100-over-a100", "resnet50-amp", "A100-80GB", "H100-SXM", 14.4 / 7.8,
          "MLPerf Training v3.0, ResNet-50, Dell: 16 x H100-SXM5-80GB 7.8 min, 16 x A100-SXM-80GB 14.4 min "
          "(a secondary analysis of the MLCommons results: silvertonconsulting.com, 2023-07-12)",
          note="time to train on 16 GPUs (data loading, communication) beside one GPU's ideal step"),
    Ratio("gpt3-h100-over-a100", "gpt3-1.3b", "A100-80GB", "H100-SXM", 2.0,
          "Lambda, 'FlashAttention-2 on Lambda Cloud: H100 vs A100' (blog): 'H100 80GB SXM5 is 2x faster than "
          "A100 80GB SXM4 when running FlashAttention-2 training'",
          note="the blog's models and sizes are not in its text; GPT3-1.3B stands for them"),
)


def capture_for(m: Measurement, gpu: str | None = None):
    """The trace that stands for ``m`` (captured on the meta device; needs torch)."""
    from .api import capture_family
    from .families import IMAGE_FAMILIES

    mixed = m.precision != "TF32"
    overrides = {} if m.family in IMAGE_FAMILIES else {"attention": m.attention}
    return capture_family(m.family, m.size, batch=m.batch, seq_len=m.seq_len, dtype=m.dtype,
                          optimizer="adamw" if mixed else m.optimizer, master_weights="fp32" if mixed else None,
                          tf32=not mixed, gpu=gpu or m.gpu, **overrides)


def step_time_s(trace, accumulation: int = 1) -> dict:
    """Forward, backward and optimizer seconds of a captured trace's ideal iteration, and the time
    of one micro-batch with the optimizer step shared by ``accumulation`` micro-batches."""
    t = trace.kernel_time_ideal_ns * 1e-9
    f = int(trace.attrs["capture_forward_kernels"])
    b = int(trace.attrs["capture_backward_kernels"])
    fwd, bwd, opt = float(t[:f].sum()), float(t[f:f + b].sum()), float(t[f + b:].sum())
    return {"forward_s": fwd, "backward_s": bwd, "optimizer_s": opt,
            "micro_batch_s": fwd + bwd + opt / accumulation}


def predict(m: Measurement, gpu: str | None = None) -> dict:
    """Our throughput for ``m`` (per GPU, in ``m.unit``) and what it is made of."""
    trace = capture_for(m, gpu)
    parts = step_time_s(trace, m.accumulation)
    items = m.batch * (m.seq_len if m.unit == "tokens/s" else 1)
    predicted = items / parts["micro_batch_s"]
    flops = float(trace.kernel_work.flops.sum()) if trace.kernel_work is not None else float("nan")
    return {**parts, "predicted": predicted, "kernels": trace.n_kernels, "flops_per_iteration": flops,
            "model_TFLOPs": flops / (parts["forward_s"] + parts["backward_s"] + parts["optimizer_s"]) / 1e12}


def validation_table(measurements=MEASUREMENTS, progress=None) -> list[dict]:
    """One row per measurement: the published number, ours, and the error (ours / published - 1)."""
    rows = []
    for m in measurements:
        p = predict(m)
        rows.append({**asdict(m), "dtype": m.dtype, **p, "error": p["predicted"] / m.measured - 1.0})
        if progress is not None:
            progress(m.key)
    return rows


def ratio_table(ratios=RATIOS) -> list[dict]:
    """One row per published GPU-to-GPU speed-up: ours (the same capture on both GPUs) beside it."""
    by_key = {m.key: m for m in MEASUREMENTS}
    rows = []
    for r in ratios:
        m = by_key[r.measurement]
        slow, fast = predict(m, r.slower)["predicted"], predict(m, r.faster)["predicted"]
        ours = fast / slow
        rows.append({**asdict(r), "predicted": ours, "error": ours / r.measured - 1.0})
    return rows


def summary(rows) -> dict:
    """Median and largest |error| of a table, and how many rows exceed 15 % and 40 %."""
    errors = [abs(r["error"]) for r in rows]
    return {"rows": len(rows), "median_abs_error": statistics.median(errors), "max_abs_error": max(errors),
            "over_15_percent": sum(e > 0.15 for e in errors), "over_40_percent": sum(e > 0.40 for e in errors)}


def format_table(rows) -> str:
    """A Markdown table of :func:`validation_table`'s rows and the summary line."""
    lines = ["| setting | GPU | precision | batch | seq / image | published | ours | error | unit |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['key']} | {r['gpu']} | {r['precision']} | {r['batch']} | {r['seq_len']} | "
                     f"{r['measured']:,.1f} | {r['predicted']:,.1f} | {100 * r['error']:+.1f} % | {r['unit']} |")
    s = summary(rows)
    lines.append("")
    lines.append(f"median |error| {100 * s['median_abs_error']:.1f} %, largest {100 * s['max_abs_error']:.1f} %; "
                 f"{s['over_15_percent']} of {s['rows']} above 15 %, {s['over_40_percent']} above 40 %")
    return "\n".join(lines)


def format_ratios(rows) -> str:
    """A Markdown table of :func:`ratio_table`'s rows."""
    lines = ["| speed-up | workload | GPUs | published | ours | error |", "|---|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['key']} | {r['measurement']} | {r['faster']} / {r['slower']} | {r['measured']:.2f} | "
                     f"{r['predicted']:.2f} | {100 * r['error']:+.1f} % |")
    return "\n".join(lines)
