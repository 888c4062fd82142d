"""The published G10 numbers the reproduction is checked against (one place).

Fig. 11: :data:`FIG11_SECONDS` is ``shared/reference/g10_artifact_model.md`` §7, the seconds
per iteration of Fig. 11 of the G10 paper (Zhang et al., MICRO 2023) as the authors'
expected-results files give them (``shared/g10_artifact/expected/`` holds the raw outputs
of the published simulator for some of them); ResNet152-1280 and SENet154-1024, which
that table lacks, come from the artifact's ``example_results`` (below).  ``FAILS`` marks
a policy the paper reports as unable to run the workload.

Figs. 11-19: ``data/published.csv`` holds every cell of the artifact's
``example_results/`` (github.com/platformxlab/G10, Apache-2.0; ``data/NOTICE`` says how
it was made), the numbers unchanged, and ``data/published_fig12.csv`` quantiles of its
per-kernel slowdown files.  :func:`published_cells` and :func:`published_fig12` read them.
A published value of ``inf`` is a run the artifact's figure scripts found no valid
output for: a run that failed, or one that never finished.
"""
from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from importlib import resources

FAILS = "fails"

# Fig. 11: the five models at the batch size the figure uses.
FIG11_WORKLOADS: tuple[tuple[str, int], ...] = (
    ("bert_base", 256),
    ("vit", 1280),
    ("inceptionv3", 1536),
    ("resnet152", 1280),
    ("senet154", 1024),
)

# Policies in the order of the paper's bars (prior work, G10 variants, G10, Ideal).
FIG11_POLICIES: tuple[str, ...] = (
    "base-uvm", "flashneuron", "deepum", "g10-gds", "g10-host", "g10", "ideal",
)

# The baselines the paper calls prior work.
PRIOR_BASELINES: tuple[str, ...] = ("base-uvm", "flashneuron", "deepum")
# The prior systems of the headline speedup.  We read "up to 1.75x faster than the best
# prior baseline" as the largest speedup over FlashNeuron or DeepUM+ (Base UVM is the
# no-policy baseline): with the published simulator that is SENet154-1024 vs FlashNeuron.
STATE_OF_THE_ART: tuple[str, ...] = ("flashneuron", "deepum")

POLICY_LABELS = {
    "base-uvm": "Base UVM", "flashneuron": "FlashNeuron", "deepum": "DeepUM+",
    "g10-gds": "G10-GDS", "g10-host": "G10-Host", "g10": "G10", "ideal": "Ideal",
}

MODEL_LABELS = {
    "bert_base": "BERT", "vit": "ViT", "inceptionv3": "Inceptionv3",
    "resnet152": "ResNet152", "senet154": "SENet154",
}

# Seconds per iteration (g10_artifact_model.md §7).
FIG11_SECONDS: dict[tuple[str, int], dict[str, float | str]] = {
    ("bert_base", 256): {
        "base-uvm": 19.650, "flashneuron": 10.216, "deepum": 9.160, "g10-gds": 9.043,
        "g10-host": 7.989, "g10": 7.311, "ideal": 7.285,
    },
    ("vit", 1280): {
        "base-uvm": 24.600, "flashneuron": FAILS, "deepum": 7.558, "g10-gds": 6.576,
        "g10-host": 6.234, "g10": 5.540, "ideal": 3.716,
    },
    ("inceptionv3", 1536): {
        "base-uvm": 280.991, "flashneuron": FAILS, "deepum": 88.669, "g10-gds": 80.341,
        "g10-host": 65.370, "g10": 61.086, "ideal": 59.694,
    },
}

# Headline claims of the paper about Fig. 11 (same source).
HEADLINE_G10_FRACTION_OF_IDEAL = 0.903      # geometric mean over the five models
HEADLINE_SPEEDUP_OVER_BEST_PRIOR = 1.75     # "up to", over the best prior baseline


def published_seconds(model: str, batch: int, policy: str) -> float | str | None:
    """Published seconds per iteration of Fig. 11, :data:`FAILS`, or None when not published."""
    value = FIG11_SECONDS.get((model, int(batch)), {}).get(policy)
    if value is not None:
        return value
    for c in published_cells("fig11"):
        if (c.model, c.batch, c.policy) == (model, int(batch), policy) and c.metric == "time":
            return FAILS if c.fails else c.seconds
    return None


# ---- every figure (data/published.csv) ----------------------------------------------

GPU_FREQUENCY_HZ = 1.2e9        # the artifact's cycle unit (GPU_frequency_GHz 1.2)
# the swept parameter of each figure, by the name rows use
FIGURE_PARAMS = {"fig16": "host_memory_GiB", "fig17": "host_memory_GiB", "fig18": "ssd_bandwidth_GBps",
                 "fig19": "sigma"}
# the batch each model runs at in Fig. 18 (the rest of Fig. 11-14 and 19: FIG11_WORKLOADS)
FIG18_WORKLOADS: tuple[tuple[str, int], ...] = (
    ("bert_base", 512), ("vit", 1280), ("inceptionv3", 1536), ("resnet152", 1280), ("senet154", 1024))
# the four batch sizes per model of Figs. 16 and 17
FIG16_BATCHES = {"bert_base": (256, 384, 512, 640), "vit": (768, 1024, 1280, 1536),
                 "inceptionv3": (512, 1024, 1280, 1536), "resnet152": (768, 1024, 1280, 1536),
                 "senet154": (256, 512, 768, 1024)}
# the batch each model's panel of the published Fig. 17 draws
FIG17_PANEL_BATCH = {"bert_base": 256, "vit": 1024, "inceptionv3": 1280, "resnet152": 1280, "senet154": 1024}


@dataclass(frozen=True)
class Cell:
    """One published number (a row of ``data/published.csv``)."""

    figure: str
    model: str
    batch: int
    policy: str
    host_memory_GiB: float
    ssd_bandwidth_GBps: float
    pcie_bandwidth_GBps: float
    sigma: float
    metric: str        # time | compute | overlap | stall | ssd_to_gpu | gpu_to_ssd | host_to_gpu |
                       # gpu_to_host | normalized_performance
    value: float       # as published (inf: no result)
    unit: str          # cycles | ms | pages | ratio
    source: str        # the example_results file

    @property
    def fails(self) -> bool:
        """The artifact has no number here (its run failed or never finished)."""
        return not math.isfinite(self.value)

    @property
    def seconds(self) -> float:
        """The value in seconds (time-like metrics)."""
        if self.unit == "cycles":
            return self.value / GPU_FREQUENCY_HZ
        if self.unit == "ms":
            return self.value / 1e3
        raise ValueError(f"{self.figure} {self.metric}: {self.unit} is not a time")

    @property
    def comparable(self) -> float:
        """The value in the unit g10core reports: seconds, pages or a ratio."""
        return self.seconds if self.unit in ("cycles", "ms") else self.value

    def param(self, name: str) -> float:
        return getattr(self, name)


def _data_file(name: str):
    return resources.files("g10core.experiments").joinpath("data", name)


@functools.lru_cache(maxsize=1)
def _all_cells() -> tuple:
    with _data_file("published.csv").open("r", newline="") as fh:
        out = []
        for r in csv.DictReader(fh):
            out.append(Cell(figure=r["figure"], model=r["model"], batch=int(r["batch"]), policy=r["policy"],
                            host_memory_GiB=float(r["host_memory_GiB"]),
                            ssd_bandwidth_GBps=float(r["ssd_bandwidth_GBps"]),
                            pcie_bandwidth_GBps=float(r["pcie_bandwidth_GBps"]), sigma=float(r["sigma"]),
                            metric=r["metric"], value=float(r["value"]), unit=r["unit"], source=r["source"]))
    return tuple(out)


def published_cells(figure: str) -> tuple:
    """Every published :class:`Cell` of ``figure`` (``"fig11"`` ... ``"fig19"``; none for fig12)."""
    return tuple(c for c in _all_cells() if c.figure == figure)


@functools.lru_cache(maxsize=1)
def published_fig12() -> dict:
    """Fig. 12: ``{(model, batch, policy): (quantiles, slowdowns, n_kernels)}``.

    Per-kernel slowdown (kernel time / ideal time) of iteration 1 of the published runs,
    sorted; the value at quantile q is the sorted list's entry ``round(q * (n - 1))``.
    """
    rows: dict = {}
    with _data_file("published_fig12.csv").open("r", newline="") as fh:
        for r in csv.DictReader(fh):
            key = (r["model"], int(r["batch"]), r["policy"])
            q, v, n = rows.setdefault(key, ([], [], int(r["kernels"])))
            q.append(float(r["quantile"]))
            v.append(float(r["slowdown"]))
    return {k: (tuple(q), tuple(v), n) for k, (q, v, n) in rows.items()}
