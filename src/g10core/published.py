"""The published G10 numbers the reproduction is checked against (one place).

Source: ``shared/reference/g10_artifact_model.md`` §7, which lists the seconds per
iteration of Fig. 11 of the G10 paper (Zhang et al., MICRO 2023) as the authors'
expected-results files give them (``shared/g10_artifact/expected/`` holds the raw
outputs of the published simulator for some of them).  ``FAILS`` marks a policy
the paper reports as unable to run the workload.  ResNet152-1280 and SENet154-1024
are in Fig. 11 but our reference gives no numbers for them.
"""
from __future__ import annotations

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
    """Published seconds per iteration, :data:`FAILS`, or None when not published."""
    return FIG11_SECONDS.get((model, int(batch)), {}).get(policy)
