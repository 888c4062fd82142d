"""Physical twins of the G10 paper's five workloads: the same models at the same batch sizes,
captured from their definitions on the meta device with the physical kernel-time model.

The artifact's traces (``bert_base-b256``, ``vit-b1280``, ``inceptionv3-b1536``,
``resnet152-b1280``, ``senet154-b1024``) carry the published simulator's profiles: exact for
the paper's numbers, several times slower than an A100 (``docs/validity.md``).  A twin is the
same model and batch as PyTorch trains it on an A100-40GB: fp32 parameters and activations (as
the paper's), cuDNN's default TF32 convolutions, fused attention, plain SGD (the artifact's
``Apply_Grad``), every kernel's time from :mod:`g10core.workload.physical`, every tensor's role
exact.  ``g10sim reproduce fig11 --workloads physical`` runs Fig. 11's policies on them, and
:func:`twin_comparison` puts each cell's fraction of ideal beside the paper's.

:func:`make_twin_traces` captures and writes them (needs torch): ``python -m
g10core.capture.twins`` rewrites the shipped files.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..experiments.published import FAILS, published_seconds


@dataclass(frozen=True)
class Twin:
    """One of the paper's workloads (``model``, ``batch``) and the capture that stands for it."""

    model: str          # the artifact's model name
    batch: int
    family: str
    size: str
    seq_len: int        # tokens (BERT), or the image side
    note: str = ""

    @property
    def name(self) -> str:
        """The twin's model name (``bert_base-twin``); its file is ``<name>-b<batch>.h5``."""
        return f"{self.model}-twin"

    @property
    def file_name(self) -> str:
        return f"{self.name}-b{self.batch}.h5"


TWINS: tuple[Twin, ...] = (
    Twin("bert_base", 256, "bert", "base", 128, "BERT-Base, sequence length 128 (the artifact's graph)"),
    Twin("vit", 1280, "vit", "s32", 224, "ViT-S/32: 50 tokens of width 384, 6 heads (the artifact's graph)"),
    Twin("inceptionv3", 1536, "inception", "v3", 299, "Inception-v3 at 299 x 299, no auxiliary head"),
    Twin("resnet152", 1280, "resnet", "152", 224, "ResNet-152 v1.5 at 224 x 224"),
    Twin("senet154", 1024, "senet", "154", 224, "SENet-154 with ResNeXt-style bottleneck widths"),
)


def capture_twin(t: Twin, gpu: str | None = None):
    """The trace of twin ``t`` (needs torch)."""
    from .api import capture_family

    trace = capture_family(t.family, t.size, batch=t.batch, seq_len=t.seq_len, optimizer="sgd", name=t.name,
                           gpu=gpu)
    trace.attrs["twin_of"] = f"{t.model}-b{t.batch}"
    return trace


def make_twin_traces(out_dir=None, twins=TWINS, progress=None) -> list[Path]:
    """Capture every twin and write ``<out_dir>/<model>-twin-b<batch>.h5`` (default: the shipped traces' folder)."""
    from ..workload import tracestore
    from ..workload.trace import write_trace

    out_dir = tracestore.shipped_dir() if out_dir is None else Path(out_dir)
    paths = []
    for t in twins:
        paths.append(write_trace(capture_twin(t), out_dir / t.file_name))
        if progress:
            progress(t, paths[-1])
    return paths


# ---- Fig. 11 on the twins beside the paper's (``g10sim reproduce fig11 --workloads physical``) ----------

TWIN_WORKLOADS = tuple((t.name, t.batch) for t in TWINS)
SUFFIX = "-twin"


def twin_comparison(rows) -> list[dict]:
    """Per (model, policy): the twin's seconds and fraction of ideal beside the paper's fraction of ideal."""
    ideal = {(r["model"], r["batch"]): r["time_s"] for r in rows if r["policy"] == "ideal" and not r["failed"]}
    out = []
    for r in rows:
        model = r["model"][:-len(SUFFIX)] if r["model"].endswith(SUFFIX) else r["model"]
        pub = published_seconds(model, r["batch"], r["policy"])
        pub_ideal = published_seconds(model, r["batch"], "ideal")
        paper = None if pub in (None, FAILS) or pub_ideal in (None, FAILS) else pub_ideal / pub
        base = ideal.get((r["model"], r["batch"]))
        ours = None if r["failed"] or base is None or not r["time_s"] else base / r["time_s"]
        out.append({"model": model, "batch": r["batch"], "policy": r["policy"],
                    "twin_time_s": None if r["failed"] else r["time_s"], "twin_fraction_of_ideal": ours,
                    "paper_fraction_of_ideal": paper, "paper_fails": pub == FAILS})
    return out


def format_twin_comparison(rows) -> str:
    """A Markdown table: one row per model, each policy's fraction of ideal on the twin and in the paper."""
    cells = twin_comparison(rows)
    policies = list(dict.fromkeys(c["policy"] for c in cells))
    models = list(dict.fromkeys((c["model"], c["batch"]) for c in cells))
    by = {(c["model"], c["batch"], c["policy"]): c for c in cells}

    def show(c):
        twin = "fails" if c["twin_fraction_of_ideal"] is None else f"{c['twin_fraction_of_ideal']:.3f}"
        paper = "fails" if c["paper_fails"] else ("-" if c["paper_fraction_of_ideal"] is None
                                                   else f"{c['paper_fraction_of_ideal']:.3f}")
        return f"{twin} ({paper})"

    lines = ["fraction of ideal (ideal / time) on the physical twin, the paper's in parentheses",
             "| model | batch | twin ideal s | " + " | ".join(policies) + " |",
             "|---|---:|---:|" + "---|" * len(policies)]
    for m, b in models:
        ideal = by.get((m, b, "ideal"), {}).get("twin_time_s")
        lines.append(f"| {m} | {b} | {ideal:.3f} | " if ideal else f"| {m} | {b} | - | ")
        lines[-1] += " | ".join(show(by[m, b, p]) if (m, b, p) in by else "-" for p in policies) + " |"
    g10 = [c["twin_fraction_of_ideal"] for c in cells if c["policy"] == "g10" and c["twin_fraction_of_ideal"]]
    pub = [c["paper_fraction_of_ideal"] for c in cells if c["policy"] == "g10" and c["paper_fraction_of_ideal"]]
    if g10 and pub:
        gm = math.exp(sum(map(math.log, g10)) / len(g10))
        gp = math.exp(sum(map(math.log, pub)) / len(pub))
        lines.append("")
        lines.append(f"G10's geometric mean over the models: {gm:.3f} of ideal on the twins, {gp:.3f} in the paper")
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m g10core.capture.twins [-o DIR]``: capture and write the twins."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m g10core.capture.twins", description=main.__doc__)
    p.add_argument("-o", "--output", help="folder (default: the shipped traces' folder)")
    args = p.parse_args(argv)
    make_twin_traces(args.output, progress=lambda t, path: print(path, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
