"""Turn the G10 artifact's ``example_results/`` into g10core's published-numbers tables.

    python tools/extract_published.py EXAMPLE_RESULTS_DIR src/g10core/experiments/data

``EXAMPLE_RESULTS_DIR`` is ``example_results/`` of github.com/platformxlab/G10 (commit
de2c8c6, Apache-2.0): the per-figure text files the authors' figure scripts read.
Writes ``published.csv`` (one row per published cell, the numbers unchanged) and
``published_fig12.csv`` (per-kernel slowdown quantiles of the Fig. 12 CDFs); see
``src/g10core/experiments/data/NOTICE`` for the columns and the mapping.
"""
from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import numpy as np

MODELS = {"bert": "bert_base", "vit": "vit", "inception": "inceptionv3", "resnet": "resnet152",
          "senet": "senet154"}
MODEL_PREFIX = {"BERT": "bert_base", "ViT": "vit", "Inceptionv3": "inceptionv3", "ResNet152": "resnet152",
                "SENet154": "senet154"}
CDF_MODELS = {"BERT_Base": ("bert_base", 256), "VIT": ("vit", 1280), "Inceptionv3": ("inceptionv3", 1536),
              "ResNet152": ("resnet152", 1280), "SENet154": ("senet154", 1024)}
POLICIES = {"lru": "base-uvm", "FlashNeuron": "flashneuron", "deepUM": "deepum", "prefetch_lru": "g10",
            "G10GDSSSD": "g10-gds", "G10GDSFULL": "g10-host", "ideal": "ideal"}
FIG11_BATCH = {"bert_base": 256, "vit": 1280, "inceptionv3": 1536, "resnet152": 1280, "senet154": 1024}
FIG18_BATCH = dict(FIG11_BATCH, bert_base=512)
DEFAULT = {"host_memory_GiB": "128", "ssd_bandwidth_GBps": "3.2", "pcie_bandwidth_GBps": "15.754", "sigma": "0"}
COLUMNS = ["figure", "model", "batch", "policy", "host_memory_GiB", "ssd_bandwidth_GBps", "pcie_bandwidth_GBps",
           "sigma", "metric", "value", "unit", "source"]
QUANTILES = [i / 100 for i in range(101)] + [0.995, 0.999]


def blocks(path: Path):
    """(header names, [(row label, [values])]) of one example_results text file."""
    lines = [ln.strip() for ln in path.read_text().splitlines()]
    header = [h.strip() for h in lines[0].split("|")]
    rows, label = [], None
    for ln in lines[1:]:
        if not ln:
            continue
        if label is None:
            label = ln
        else:
            rows.append((label, ln.split()))
            label = None
    return header, rows


def model_of_label(label: str):
    name, batch = label.split("|")[:2]
    return MODEL_PREFIX[name], int(batch.split("=")[1])


def cell(fig, model, batch, policy, metric, value, unit, source, **over):
    row = dict(figure=fig, model=model, batch=batch, policy=policy, metric=metric, value=value, unit=unit,
               source=source, **DEFAULT)
    row.update({k: str(v) for k, v in over.items()})
    return row


def main(src: Path, dest: Path) -> None:
    out = []
    # Fig. 11: overall performance, seconds per iteration as GPU cycles
    header, rows = blocks(src / "overall_performance/all.base.txt")
    for label, vals in rows:
        m, b = model_of_label(label)
        for pol, v in zip(header, vals):
            out.append(cell("fig11", m, b, POLICIES[pol], "time", v, "cycles", "overall_performance/all.base.txt"))
    # Fig. 13: breakdown (page level in cycles, FlashNeuron in ms, as the artifact's outputs give them)
    for metric in ("compute", "overlap", "stall"):
        header, rows = blocks(src / f"overall_breakdown/{metric}.txt")
        for label, vals in rows:
            m, b = model_of_label(label)
            for pol, v in zip(header, vals):
                unit = "ms" if pol == "FlashNeuron" else "cycles"
                out.append(cell("fig13", m, b, POLICIES[pol], metric, v, unit, f"overall_breakdown/{metric}.txt"))
    # Fig. 14: traffic, four lines per model: SSD->GPU, GPU->SSD, host->GPU, GPU->host (pages)
    lines = [ln.strip() for ln in (src / "overall_traffic/traffic.txt").read_text().splitlines() if ln.strip()]
    header = [h.strip() for h in lines[0].split("|")]
    i = 1
    while i < len(lines):
        m, b = model_of_label(lines[i])
        for j, metric in enumerate(("ssd_to_gpu", "gpu_to_ssd", "host_to_gpu", "gpu_to_host")):
            for pol, v in zip(header, lines[i + 1 + j].split()):
                out.append(cell("fig14", m, b, POLICIES[pol], metric, v, "pages", "overall_traffic/traffic.txt"))
        i += 5
    # Fig. 15: batch sizes
    for f, m in MODELS.items():
        header, rows = blocks(src / f"overall_batchsize/{f}.txt")
        for label, vals in rows:
            for pol, v in zip(header, vals):
                out.append(cell("fig15", m, int(label), POLICIES[pol], "time", v, "cycles",
                                f"overall_batchsize/{f}.txt"))
    # Fig. 16: G10 under host memory (rows: host GB; columns: batch)
    for f, m in MODELS.items():
        header, rows = blocks(src / f"sensitivity_cpumem/{f}.txt")
        for label, vals in rows:
            for b, v in zip(header, vals):
                out.append(cell("fig16", m, int(b), "g10", "time", v, "cycles", f"sensitivity_cpumem/{f}.txt",
                                host_memory_GiB=label))
    # Fig. 17: the same for DeepUM+, FlashNeuron (its 128 GB run in every row) and G10
    for pol in ("deepUM", "FlashNeuron", "prefetch_lru"):
        for f, m in MODELS.items():
            header, rows = blocks(src / f"sensitivity_cpumem_combined/{pol}/{f}.txt")
            for label, vals in rows:
                for b, v in zip(header, vals):
                    out.append(cell("fig17", m, int(b), POLICIES[pol], "time", v, "cycles",
                                    f"sensitivity_cpumem_combined/{pol}/{f}.txt", host_memory_GiB=label))
    # Fig. 18: SSD bandwidth (PCIe 32 GB/s)
    for f, m in MODELS.items():
        header, rows = blocks(src / f"sensitivity_ssdbw/{f}.txt")
        for label, vals in rows:
            for pol, v in zip(header, vals):
                out.append(cell("fig18", m, FIG18_BATCH[m], POLICIES[pol], "time", v, "cycles",
                                f"sensitivity_ssdbw/{f}.txt", ssd_bandwidth_GBps=label, pcie_bandwidth_GBps="32"))
    # Fig. 19: G10's normalised performance (ideal / time) under kernel-time noise
    header, rows = blocks(src / "sensitivity_variation/all.txt")
    for label, vals in rows:
        m, b = model_of_label(label)
        for pct, v in zip(header, vals):
            sigma = f"{int(pct.rstrip('%')) / 100:g}"
            out.append(cell("fig19", m, b, "g10", "normalized_performance", v, "ratio",
                            "sensitivity_variation/all.txt", sigma=sigma))
    with open(dest / "published.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    # Fig. 12: per-kernel slowdown of iteration 1 (page level: (end - start) / ideal of
    # sim_result.kernel; FlashNeuron: normalised stall + 1 of sim_result.kernelStall), as quantiles
    pat = re.compile(r"\d+")
    cdf = []
    for f in sorted((src / "overall_slowdown_cdf").glob("*.txt")):
        model_dir, pol = f.stem.split("-", 1)
        m, b = CDF_MODELS[model_dir]
        vals = []
        for ln in f.read_text().splitlines():
            if not ln.strip():
                continue
            if pol == "FlashNeuron":
                vals.append(float(ln) + 1)
                continue
            nums = pat.findall(ln)
            if len(nums) != 12 or int(nums[0]) != 1:
                continue
            vals.append((float(nums[3]) - float(nums[2])) / float(nums[4]))
        s = np.sort(np.asarray(vals))
        for q in QUANTILES:
            cdf.append({"model": m, "batch": b, "policy": POLICIES[pol], "quantile": f"{q:g}",
                        "slowdown": f"{s[int(round(q * (len(s) - 1)))]:.9g}", "kernels": len(s)})
    with open(dest / "published_fig12.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["model", "batch", "policy", "quantile", "slowdown", "kernels"],
                           lineterminator="\n")
        w.writeheader()
        w.writerows(cdf)
    print(f"{len(out)} cells, {len(cdf)} quantiles")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
