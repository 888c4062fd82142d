"""Physical twins of the G10 paper's five workloads: the same models at the same batch sizes,
captured from their definitions on the meta device with the physical kernel-time model.

The artifact's traces (``bert_base-b256``, ``vit-b1280``, ``inceptionv3-b1536``,
``resnet152-b1280``, ``senet154-b1024``) carry the published simulator's profiles: exact for
the paper's numbers, several times slower than an A100 (``docs/validity.md``).  A twin is the
same model and batch as PyTorch trains it on an A100-40GB: fp32 parameters and activations (as
the paper's), cuDNN's default TF32 convolutions, fused attention, plain SGD (the artifact's
``Apply_Grad``), every kernel's time from :mod:`g10core.workload.physical`, every tensor's role
exact.  ``g10sim reproduce fig11 --workloads physical`` runs Fig. 11's policies on them, and
:func:`g10core.experiments.twins.twin_comparison` puts each cell's fraction of ideal beside the paper's.

:func:`make_twin_traces` captures and writes them (needs torch): ``python -m
g10core.capture.twins`` rewrites the shipped files.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._moved import moved_attribute


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


# the twins as Fig. 11's workloads, (model, batch) (``g10sim reproduce fig11 --workloads physical``;
# g10core.experiments.twins puts their runs beside the paper's)
TWIN_WORKLOADS = tuple((t.name, t.batch) for t in TWINS)
SUFFIX = "-twin"


def __getattr__(name):
    # the comparison with the paper moved to g10core.experiments.twins (issue 44): the old names warn
    return moved_attribute(__name__, name)


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
