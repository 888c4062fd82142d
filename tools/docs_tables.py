"""Regenerate the documentation tables that quote the shipped captured traces and the validation.

    python tools/docs_tables.py                 # rewrite every table below in place
    python tools/docs_tables.py --check         # exit 1 (naming the file) where a table differs

Each table sits between two marker lines in its Markdown file::

    <!-- generated: NAME (tools/docs_tables.py) -->
    ...
    <!-- end generated: NAME -->

The tables (NAME): ``validation`` (docs/validation.md: g10core.capture.validation's table, from the
golden predictions tests/data/validation_expected.json, which tests/test_validation.py checks
against a fresh run), ``llm-traces`` and ``twin-traces`` (the traces README: each shipped capture's
kernels, footprint, memory ratio and ideal time, read from the files), ``gpus`` (docs/gpus.md: the
table g10core.gpus.GPUS, with each model's PCIe link as g10core.link.pcie computes it),
``calibration-errors`` (docs/guide/capture.md: the leave-one-model-out errors the shipped calibration
a100-g10-v1 records) and ``capture-families`` (docs/guide/capture.md: g10core.capture.families'
families, sizes and parameter counts).  Needs no torch.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "validation_expected.json"
MARK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) \(tools/docs_tables.py\) -->\n)(?P<body>.*?)"
                  r"(<!-- end generated: (?P=name) -->)", re.S)


def validation_table() -> str:
    from g10core.capture.validation import MEASUREMENTS, format_table

    g = json.loads(GOLDEN.read_text())
    rows = []
    for m in MEASUREMENTS:
        r = g["rows"][m.key]
        rows.append({"key": m.key, "gpu": m.gpu, "precision": m.precision, "batch": m.batch, "seq_len": m.seq_len,
                     "measured": m.measured, "predicted": r["predicted"], "error": r["error"], "unit": m.unit})
    return format_table(rows)


def llm_traces_table() -> str:
    from g10core.capture.llm import LLM_WORKLOADS
    from g10core.workload.trace import read_trace, summarize
    from g10core.workload.tracestore import shipped_dir

    names = {("gpt2", "small"): "GPT-2 small", ("gpt2", "medium"): "GPT-2 medium",
             ("llama", "1b"): "LLaMA-style 1.1B (TinyLlama shape, GQA 32/4)",
             ("llama", "7b"): "LLaMA-style 6.7B (LLaMA-2-7B shape)", ("llama", "13b"): "LLaMA-style 13.0B (LLaMA-2-13B shape)"}
    lines = ["| trace | model | dtype | parameters | kernels | tensors | footprint | M (40 GiB) | M (80 GiB) | ideal |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    seen = set()
    for w in LLM_WORKLOADS:
        t = read_trace(shipped_dir() / w.file_name)
        s40, s80 = summarize(t, 40), summarize(t, 80)
        n = t.attrs["capture_n_parameters"]
        key = (w.family, w.size, w.dtype)
        model = "same" if key in seen else names[w.family, w.size]
        seen.add(key)
        m80 = f"{s80['memory_ratio_percent']:.0f} %"
        if w.machine:
            m80 += f" (on {w.machine}: {summarize(t, 24)['memory_ratio_percent']:.0f} % of 24 GiB)"
        lines.append(f"| `{w.file_name[:-3]}` | {model} | {'fp32' if w.dtype == 'float32' else 'bf16'} | "
                     f"{n / 1e6:.0f} M |" if n < 1e9 else
                     f"| `{w.file_name[:-3]}` | {model} | {'fp32' if w.dtype == 'float32' else 'bf16'} | "
                     f"{n / 1e9:.2f} G |")
        lines[-1] += (f" {t.n_kernels} | {t.n_tensors} | {s40['footprint_GiB']:.1f} GiB | "
                      f"{s40['memory_ratio_percent']:.0f} % | {m80} | {s40['ideal_time_s']:.3f} s |")
    return "\n".join(lines)


def twin_traces_table() -> str:
    from g10core.capture.twins import TWINS
    from g10core.workload.trace import read_trace, summarize
    from g10core.workload.tracestore import shipped_dir

    lines = ["| workload | twin | kernels | footprint | parameters | global | ideal |", "|---|---|---|---|---|---|---|"]
    for t in TWINS:
        a, b = read_trace(shipped_dir() / f"{t.model}-b{t.batch}.h5"), read_trace(shipped_dir() / t.file_name)
        sa, sb = summarize(a), summarize(b)
        pa, pb = (s["bytes_by_role"]["parameter"] / 2**30 for s in (sa, sb))
        lines.append(f"| `{t.model}-b{t.batch}` | {t.note} | {a.n_kernels} / {b.n_kernels} | "
                     f"{sa['footprint_GiB']:.1f} / {sb['footprint_GiB']:.1f} GiB | {pa:.3f} / {pb:.3f} GiB | "
                     f"{sa['global_GiB']:.1f} / {sb['global_GiB']:.1f} GiB | "
                     f"{sa['ideal_time_s']:.3f} / {sb['ideal_time_s']:.3f} s |")
    return "\n".join(lines)


def _number(x) -> str:
    return "-" if x is None else f"{x:g}"


def gpus_table() -> str:
    from g10core.gpus import GPUS
    from g10core.link.pcie import PcieSpec

    lines = ["| model | memory (GiB) | SMs | memory bandwidth (GB/s) | FP32 | TF32 | FP16/BF16 | FP8 | PCIe link | "
             "link GB/s per direction |", "|---|---|---|---|---|---|---|---|---|---|"]
    for g in GPUS.values():
        fp16 = _number(g.fp16_TFLOPs) if g.fp16_TFLOPs == g.bf16_TFLOPs else \
            f"{_number(g.fp16_TFLOPs)} / {_number(g.bf16_TFLOPs)}"
        link = PcieSpec(generation=g.pcie_generation, lanes=g.pcie_lanes).raw_GBps
        lines.append(f"| {g.name} | {_number(g.memory_GiB)} | {g.sms} | {_number(g.memory_bandwidth_GBps)} | "
                     f"{_number(g.fp32_TFLOPs)} | {_number(g.tf32_TFLOPs)} | {fp16} | {_number(g.fp8_TFLOPs)} | "
                     f"Gen{g.pcie_generation} x{g.pcie_lanes} | {round(link, 3):.3f} |")
    return "\n".join(lines)


def calibration_errors_table() -> str:
    from g10core.capture.calibrate import format_errors
    from g10core.workload.kerneltime import load_calibration

    # the errors the shipped calibration records (fitted with it), not a refit's
    return format_errors(load_calibration().errors["leave_one_model_out"])


def capture_families_table() -> str:
    from g10core.capture.families import DEFAULT_SIZE, FAMILIES, IMAGE_FAMILIES, parameter_count

    lines = ["| family | size | parameters | input |", "|---|---|---|---|"]
    for family, sizes in FAMILIES.items():
        for size, config in sizes.items():
            n = parameter_count(config)
            count = f"{n / 1e9:.3f} G" if n >= 1e9 else f"{n / 1e6:.1f} M"
            default = " (default)" if DEFAULT_SIZE[family] == size and len(sizes) > 1 else ""
            lines.append(f"| `{family}` | `{size}`{default} | {count} | "
                         f"{'image (--seq-len is its side)' if family in IMAGE_FAMILIES else 'tokens'} |")
    return "\n".join(lines)


TABLES = {
    "validation": (ROOT / "docs" / "validation.md", validation_table),
    "llm-traces": (ROOT / "traces" / "README.md", llm_traces_table),
    "twin-traces": (ROOT / "traces" / "README.md", twin_traces_table),
    "gpus": (ROOT / "docs" / "gpus.md", gpus_table),
    "calibration-errors": (ROOT / "docs" / "guide" / "capture.md", calibration_errors_table),
    "capture-families": (ROOT / "docs" / "guide" / "capture.md", capture_families_table),
}


def render(text: str, path: Path) -> str:
    def one(m):
        name = m["name"]
        if name not in TABLES:
            raise SystemExit(f"{path}: unknown generated table {name!r}")
        return m.group(1) + TABLES[name][1]().rstrip("\n") + "\n" + m.group(4)
    return MARK.sub(one, text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 where a table is stale")
    args = p.parse_args(argv)
    stale = []
    for path in dict.fromkeys(path for path, _ in TABLES.values()):
        text = path.read_text()
        new = render(text, path)
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new)
    for path in stale:
        print(f"{path.relative_to(ROOT)}: {'stale' if args.check else 'rewritten'}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
