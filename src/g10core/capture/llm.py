"""The shipped LLM traces (captured GPT-2 and LLaMA-style decoders): what each one is, and their capture.

:data:`LLM_WORKLOADS` lists the captured traces shipped next to the G10-artifact ones:
GPT-2 small and medium and LLaMA-style decoders of 1.1B and 6.7B parameters in fp32 with
AdamW, and GPT-2 medium and LLaMA-style decoders of 1.1B, 6.7B and 13B parameters in mixed
precision (``-bf16``: bfloat16 parameters, gradients and activations, fp32 master weights and
Adam moments), at batch sizes and sequence lengths whose footprints span about 100 % to
2,000 % of a 40 GiB and of an 80 GiB GPU; one of them is run on a named machine
(:data:`g10core.experiments.llm.MACHINES`: the Fuyou-style fine-tuning of a 13B model on one
24 GiB GPU).  :func:`make_llm_traces` captures and writes them (needs torch).  Running the
policies on them (``g10sim reproduce llm``) is an experiment: :mod:`g10core.experiments.llm`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._moved import moved_attribute

DTYPE_SUFFIX = {"float32": "", "bfloat16": "-bf16", "float16": "-fp16"}


@dataclass(frozen=True)
class LLMWorkload:
    """One shipped LLM trace: model family and size, sequence length, batch, precision, and the
    named machine (:data:`g10core.experiments.llm.MACHINES`; "" for the run's own configuration)
    ``reproduce llm`` runs it on."""

    family: str
    size: str
    seq_len: int
    batch: int
    dtype: str = "float32"
    master_weights: str | None = None      # "fp32": mixed precision (capture.mixed)
    machine: str = ""

    @property
    def model(self) -> str:
        """The trace's model name (also the file name without ``-b<batch>.h5``); ``-bf16``: mixed precision."""
        return f"{self.family}-{self.size}-s{self.seq_len}{DTYPE_SUFFIX[self.dtype]}"

    @property
    def file_name(self) -> str:
        return f"{self.model}-b{self.batch}.h5"


LLM_WORKLOADS: tuple[LLMWorkload, ...] = (
    LLMWorkload("gpt2", "small", 1024, 5),
    LLMWorkload("gpt2", "small", 1024, 16),
    LLMWorkload("gpt2", "medium", 1024, 8),
    LLMWorkload("gpt2", "medium", 1024, 16),
    LLMWorkload("llama", "1b", 2048, 2),
    LLMWorkload("llama", "1b", 2048, 4),
    LLMWorkload("llama", "7b", 2048, 1),
    LLMWorkload("llama", "7b", 2048, 3),
    # mixed precision: bf16 parameters, gradients, activations; fp32 master weights and Adam moments
    LLMWorkload("gpt2", "medium", 1024, 4, "bfloat16", "fp32"),
    LLMWorkload("gpt2", "medium", 1024, 16, "bfloat16", "fp32"),
    LLMWorkload("llama", "1b", 2048, 1, "bfloat16", "fp32"),
    LLMWorkload("llama", "1b", 2048, 4, "bfloat16", "fp32"),
    LLMWorkload("llama", "7b", 2048, 1, "bfloat16", "fp32"),
    LLMWorkload("llama", "7b", 2048, 6, "bfloat16", "fp32"),
    LLMWorkload("llama", "13b", 2048, 1, "bfloat16", "fp32"),
    LLMWorkload("llama", "13b", 2048, 8, "bfloat16", "fp32"),
    # Fuyou-style fine-tuning: a 13B model on one 24 GiB GPU, 256 GiB host memory, one SSD
    LLMWorkload("llama", "13b", 1024, 4, "bfloat16", "fp32", machine="fuyou-rtx4090"),
)


def make_llm_traces(out_dir=None, workloads=LLM_WORKLOADS, *, calibration=None, progress=None) -> list[Path]:
    """Capture every workload and write ``<out_dir>/<model>-b<batch>.h5`` (default: the shipped traces' folder)."""
    from ..workload.trace import write_trace
    from ..workload.tracestore import traces_dir
    from .api import capture_family

    out_dir = traces_dir() if out_dir is None else Path(out_dir)
    paths = []
    for w in workloads:
        # the model name carries the sequence length: traces of one model at two lengths differ
        trace = capture_family(w.family, w.size, batch=w.batch, seq_len=w.seq_len, calibration=calibration,
                               name=w.model, dtype=w.dtype, master_weights=w.master_weights)
        paths.append(write_trace(trace, out_dir / w.file_name))
        if progress:
            progress(w, paths[-1])
    return paths


def __getattr__(name):
    # the runner of ``reproduce llm`` moved to g10core.experiments.llm (issue 44): the old names warn
    return moved_attribute(__name__, name)


def main(argv=None) -> int:
    """``python -m g10core.capture.llm [-o DIR]``: capture and write the shipped LLM traces."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m g10core.capture.llm", description=main.__doc__)
    p.add_argument("-o", "--output", help="folder (default: the shipped traces' folder)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="only these traces (file names without .h5)")
    args = p.parse_args(argv)
    workloads = LLM_WORKLOADS
    if args.only:
        by_name = {w.file_name[:-3]: w for w in LLM_WORKLOADS}
        unknown = [n for n in args.only if n not in by_name]
        if unknown:
            p.error(f"--only {unknown[0]}: not a shipped LLM trace; known: {', '.join(by_name)}")
        workloads = tuple(by_name[n] for n in args.only)

    def report(w, path):
        print(f"{path} ({w.family} {w.size}, seq {w.seq_len}, batch {w.batch}, {w.dtype}"
              f"{' + ' + w.master_weights + ' master weights' if w.master_weights else ''})", flush=True)
    make_llm_traces(args.output, workloads, progress=report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
