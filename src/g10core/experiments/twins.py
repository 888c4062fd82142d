"""Fig. 11 on the physical twins of the paper's five workloads, beside the paper's numbers
(``g10sim reproduce fig11 --workloads physical``).

The twins themselves (what each one is and its capture) are :mod:`g10core.capture.twins`; putting
their runs beside the published cells is an experiment and lives here.
"""
from __future__ import annotations

import math

from ..capture.twins import SUFFIX
from .published import FAILS, published_seconds


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


def twin_cell(c: dict) -> str:
    """One cell of :func:`twin_comparison` as a table shows it: the twin's fraction of ideal, the
    paper's in parentheses ("fails" where the run failed, "-" where the paper has no number)."""
    twin = "fails" if c["twin_fraction_of_ideal"] is None else f"{c['twin_fraction_of_ideal']:.3f}"
    paper = "fails" if c["paper_fails"] else ("-" if c["paper_fraction_of_ideal"] is None
                                               else f"{c['paper_fraction_of_ideal']:.3f}")
    return f"{twin} ({paper})"


def format_twin_comparison(rows) -> str:
    """A Markdown table: one row per model, each policy's fraction of ideal on the twin and in the paper."""
    cells = twin_comparison(rows)
    policies = list(dict.fromkeys(c["policy"] for c in cells))
    models = list(dict.fromkeys((c["model"], c["batch"]) for c in cells))
    by = {(c["model"], c["batch"], c["policy"]): c for c in cells}

    lines = ["fraction of ideal (ideal / time) on the physical twin, the paper's in parentheses",
             "| model | batch | twin ideal s | " + " | ".join(policies) + " |",
             "|---|---:|---:|" + "---|" * len(policies)]
    for m, b in models:
        ideal = by.get((m, b, "ideal"), {}).get("twin_time_s")
        lines.append(f"| {m} | {b} | {ideal:.3f} | " if ideal else f"| {m} | {b} | - | ")
        lines[-1] += " | ".join(twin_cell(by[m, b, p]) if (m, b, p) in by else "-" for p in policies) + " |"
    g10 = [c["twin_fraction_of_ideal"] for c in cells if c["policy"] == "g10" and c["twin_fraction_of_ideal"]]
    pub = [c["paper_fraction_of_ideal"] for c in cells if c["policy"] == "g10" and c["paper_fraction_of_ideal"]]
    if g10 and pub:
        gm = math.exp(sum(map(math.log, g10)) / len(g10))
        gp = math.exp(sum(map(math.log, pub)) / len(pub))
        lines.append("")
        lines.append(f"G10's geometric mean over the models: {gm:.3f} of ideal on the twins, {gp:.3f} in the paper")
    return "\n".join(lines)
