"""Tables and figures of reproduction rows (``g10core.experiments.reproduce``).

* :func:`fig11_summary`: G10's fraction of ideal per model and its geometric mean,
  G10's speedup over each baseline, and over the best prior baseline per model.
* :func:`format_fig11_table`: the text table ``g10sim reproduce fig11`` prints.
* :func:`plot_fig11`: grouped bars of normalised performance (ideal / time) per
  model in the style of the paper's Fig. 11, a failed run marked "x".
* :func:`fig11_document` / :func:`load_fig11_json`: the JSON written and read back.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .published import (
    FIG11_POLICIES, HEADLINE_G10_FRACTION_OF_IDEAL, HEADLINE_SPEEDUP_OVER_BEST_PRIOR, MODEL_LABELS,
    POLICY_LABELS, PRIOR_BASELINES, STATE_OF_THE_ART,
)
from ..files import read_text, replacing, write_text_atomic
from ..results import finite_or_none, jsonable

SCHEMA = "g10core-fig11"
SCHEMA_VERSION = 1

# One colour per policy, the same in every chart whatever subset ran (policies not listed get
# OTHER_COLORS in order of appearance, after the built-in ones).
POLICY_COLORS = {
    "base-uvm": "#9e9e9e", "flashneuron": "#f2b134", "deepum": "#4daf4a", "g10-gds": "#80b1d3",
    "g10-host": "#377eb8", "g10": "#e41a1c", "ideal": "#222222", "belady": "#984ea3",
}
OTHER_COLORS = ("#a65628", "#f781bf", "#66c2a5", "#fc8d62", "#8da0cb", "#e78ac3")


def policy_color(policy: str, others: list[str] | None = None) -> str:
    """The fixed colour of ``policy`` (``others``: the unknown policies of a chart, in order)."""
    if policy in POLICY_COLORS:
        return POLICY_COLORS[policy]
    others = [p for p in (others or [policy]) if p not in POLICY_COLORS]
    i = others.index(policy) if policy in others else 0
    return OTHER_COLORS[i % len(OTHER_COLORS)]


def is_full_fig11(rows) -> bool:
    """Did ``rows`` run exactly the paper's Fig. 11 (its five workloads, its seven policies)?"""
    from .published import FIG11_WORKLOADS

    return (set(_workloads(rows)) == set(FIG11_WORKLOADS) and set(r["policy"] for r in rows) == set(FIG11_POLICIES))


def rows_title(rows, preset: str | None = None) -> str:
    """``Figure 11`` when the rows are the paper's Fig. 11, else a neutral description."""
    if is_full_fig11(rows):
        return "Figure 11" + (f" (preset {preset})" if preset else "")
    n_w, n_p = len(_workloads(rows)), len(_policies(rows))
    return (f"{n_w} workload{'s' * (n_w != 1)} x {n_p} polic{'ies' if n_p != 1 else 'y'} in the layout of Figure 11"
            + (f" (preset {preset})" if preset else ""))


def _workloads(rows) -> list[tuple[str, int]]:
    seen = []
    for r in rows:
        key = (r["model"], int(r["batch"]))
        if key not in seen:
            seen.append(key)
    return seen


def _policies(rows) -> list[str]:
    present = []
    for r in rows:
        if r["policy"] not in present:
            present.append(r["policy"])
    ordered = [p for p in FIG11_POLICIES if p in present]
    return ordered + [p for p in present if p not in ordered]


def _time(r) -> float:
    t = r.get("time_s")
    return math.inf if r.get("failed") or t is None else float(t)


def _geomean(values) -> float | None:
    values = [v for v in values if v is not None]
    if not values or any(not (v > 0 and math.isfinite(v)) for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fig11_summary(rows) -> dict:
    """Headline numbers of a Fig. 11 reproduction (None where a run failed or is missing).

    ``g10_fraction_of_ideal``: per model ideal / G10 time, and ``geomean`` over the
    models; ``speedup``: per baseline, per model, baseline time / G10 time (inf when the
    baseline failed), and ``speedup_max`` its largest finite value per baseline;
    ``best_prior``: per model, the fastest of Base UVM, FlashNeuron and DeepUM+ and G10's
    speedup over it; ``state_of_the_art``: the largest finite speedup over FlashNeuron
    or DeepUM+ and where it occurs (the paper's "up to 1.75x").
    """
    by = {(r["model"], int(r["batch"]), r["policy"]): r for r in rows}
    frac, speed, best = {}, {}, {}
    for model, batch in _workloads(rows):
        name = f"{model}-b{batch}"
        g10 = by.get((model, batch, "g10"))
        t_g10 = _time(g10) if g10 else math.inf
        ok = math.isfinite(t_g10) and t_g10 > 0
        frac[name] = g10["ideal_time_s"] / t_g10 if ok else None
        for p in _policies(rows):
            if p in ("g10", "ideal"):
                continue
            r = by.get((model, batch, p))
            speed.setdefault(p, {})[name] = (_time(r) / t_g10) if (ok and r is not None) else None
        prior = [(p, _time(by[(model, batch, p)])) for p in PRIOR_BASELINES if (model, batch, p) in by]
        prior = [(p, t) for p, t in prior if math.isfinite(t)]
        if prior and ok:
            p, t = min(prior, key=lambda x: x[1])
            best[name] = {"policy": p, "speedup": t / t_g10}
        else:
            best[name] = {"policy": None, "speedup": None}
    finite = {p: {m: v for m, v in per.items() if v is not None and math.isfinite(v)} for p, per in speed.items()}
    speed_max = {p: (max(v.values()) if v else None) for p, v in finite.items()}
    ran = set(r["policy"] for r in rows)
    sota = [(v, m, p) for p in STATE_OF_THE_ART if p in ran for m, v in finite.get(p, {}).items()]
    best_values = [b["speedup"] for b in best.values() if b["speedup"] is not None]
    top = max(sota) if sota else None
    return {
        "g10_fraction_of_ideal": {"per_model": frac, "geomean": _geomean(frac.values()),
                                  "published_geomean": HEADLINE_G10_FRACTION_OF_IDEAL},
        "is_full_fig11": is_full_fig11(rows),
        "speedup": speed,
        "speedup_max": speed_max,
        "best_prior": {"per_model": best, "max": max(best_values) if best_values else None},
        "state_of_the_art": {"baselines": [p for p in STATE_OF_THE_ART if p in ran], "max": top[0] if top else None,
                             "model": top[1] if top else None, "policy": top[2] if top else None,
                             "published_max": HEADLINE_SPEEDUP_OVER_BEST_PRIOR},
    }


def _fmt_s(t) -> str:
    if t is None:
        return "–"
    if isinstance(t, str):
        return t
    if not math.isfinite(t):
        return "fails"
    return f"{t:.3f}"


def _fmt_x(v) -> str:
    if v is None:
        return "–"
    if not math.isfinite(v):
        return "∞"
    return f"{v:.2f}x"


def format_fig11_table(rows, summary: dict | None = None, preset: str | None = None) -> str:
    """The text table: per run time, ideal/time, published, difference; then the headline (compared
    with the paper's only when the rows are the paper's whole Fig. 11)."""
    summary = fig11_summary(rows) if summary is None else summary
    full = is_full_fig11(rows)
    lines = [f"{rows_title(rows)}: seconds per iteration; perf = ideal / time (1.0 = ideal)",
             f"{'model':<12} {'batch':>5}  {'policy':<12} {'time_s':>10} {'perf':>6} "
             f"{'published_s':>11} {'diff':>9}"]
    last = None
    for r in rows:
        key = (r["model"], int(r["batch"]))
        if last is not None and key != last:
            lines.append("")
        last = key
        t = _time(r)
        pub = "fails" if r.get("published_fails") else _fmt_s(r.get("published_s"))
        if r.get("error_pct") is not None:
            diff = f"{r['error_pct']:+.2f} %"
        elif r.get("failed") and r.get("published_fails"):
            diff = "both fail"
        elif r.get("failed") != r.get("published_fails") and (r.get("published_s") or r.get("published_fails")):
            diff = "MISMATCH"
        else:
            diff = "–"
        perf = "x" if not math.isfinite(t) else f"{r['normalized_performance']:.3f}"
        lines.append(f"{r['model']:<12} {int(r['batch']):>5}  {r['policy']:<12} {_fmt_s(t):>10} {perf:>6} "
                     f"{pub:>11} {diff:>9}")
    frac = summary["g10_fraction_of_ideal"]
    lines.append("")
    g = frac["geomean"]
    if "g10" in _policies(rows):
        paper = f"; paper: {100 * frac['published_geomean']:.1f} %" if full else ""
        lines.append(f"G10 reaches {'–' if g is None else f'{100 * g:.1f} %'} of ideal (geometric mean over "
                     f"{len(frac['per_model'])} models{paper})")
    base = [p for p in summary["speedup"]]
    if base:
        lines.append("G10 speedup over each baseline (baseline time / G10 time):")
        lines.append(f"  {'model':<20}" + "".join(f"{POLICY_LABELS.get(p, p):>12}" for p in base)
                     + f"{'best prior':>22}")
        failed_runs = []        # a baseline that failed has no time: "failed*", and why in a footnote
        by = {(r["model"], int(r["batch"]), r["policy"]): r for r in rows}

        def cell(p, name):
            v = summary["speedup"][p].get(name)
            if v is not None and not math.isfinite(v):
                failed_runs.append((p, name))
                return "failed*"
            return _fmt_x(v)

        for name in frac["per_model"]:
            bp = summary["best_prior"]["per_model"][name]
            best_txt = "–" if bp["speedup"] is None else f"{_fmt_x(bp['speedup'])} ({POLICY_LABELS[bp['policy']]})"
            lines.append(f"  {name:<20}" + "".join(f"{cell(p, name):>12}" for p in base) + f"{best_txt:>22}")
        lines.append(f"  {'max over models':<20}" + "".join(f"{_fmt_x(summary['speedup_max'][p]):>12}" for p in base))
        workload_of = {f"{m}-b{b}": (m, b) for m, b in _workloads(rows)}
        for p, name in failed_runs:
            r = by.get((*workload_of[name], p), {})
            reason = " ".join(str(r.get("failure_reason") or r.get("error") or "no time recorded").split())
            lines.append(f"  * {POLICY_LABELS.get(p, p)} failed on {name}, so G10 has no speedup over it there: "
                         f"{reason}")
        sota = summary["state_of_the_art"]
        if sota["max"] is not None:
            ran = [p for p in sota["baselines"] if p in _policies(rows)]
            paper = f"; paper: up to {sota['published_max']:.2f}x" if full else ""
            lines.append(f"G10 is up to {_fmt_x(sota['max'])} faster than "
                         f"{' or '.join(POLICY_LABELS.get(p, p) for p in ran)} "
                         f"({sota['model']}, {POLICY_LABELS.get(sota['policy'], sota['policy'])}{paper}); "
                         f"over the fastest prior baseline that ran, per model: up to "
                         f"{_fmt_x(summary['best_prior']['max'])}")
    return "\n".join(lines)


def fig11_document(rows, *, meta: dict | None = None) -> dict:
    """The JSON document of a reproduction: rows, summary and how it was made."""
    return jsonable({"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "figure": "fig11",
                   "rows": rows, "summary": fig11_summary(rows), "metadata": meta or {}})


def write_fig11_json(rows, path, *, meta: dict | None = None) -> Path:
    text = json.dumps(fig11_document(rows, meta=meta), indent=2, allow_nan=False) + "\n"
    return write_text_atomic(path, text)


def _load_json(path: Path):
    """A saved reproduction's JSON document (errors name the file)."""
    try:
        return json.loads(read_text(path, "saved reproduction (JSON)"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None


def load_fig11_json(path) -> list[dict]:
    """Rows of a saved reproduction (``time_s: null`` read back as inf)."""
    path = Path(path)
    doc = _load_json(path)
    rows = doc.get("rows") if isinstance(doc, dict) else doc
    if not isinstance(rows, list) or (isinstance(doc, dict) and doc.get("schema") != SCHEMA):
        raise ValueError(f"{path}: not a g10sim reproduce fig11 JSON (schema {SCHEMA!r} with 'rows')")
    need = ("model", "batch", "policy", "time_s", "failed")
    for i, r in enumerate(rows):
        miss = [k for k in need if not isinstance(r, dict) or k not in r]
        if miss:
            raise ValueError(f"{path}: rows[{i}] lacks {', '.join(miss)}")
        if r["time_s"] is None:
            r["time_s"] = math.inf
        r.setdefault("normalized_performance", 0.0 if r["failed"] else None)
    return rows


def plot_fig11(rows, path, *, title: str | None = None, preset: str | None = None) -> Path:
    """Bar chart of ideal / time per model and policy (the paper's Fig. 11 layout), as PNG.

    Uses matplotlib's Agg canvas directly (no pyplot state, no display); written atomically.
    """
    return _save(fig11_figure(rows, title=title, preset=preset), Path(path))


def fig11_figure(rows, *, title: str | None = None, preset: str | None = None):
    """The matplotlib ``Figure`` :func:`plot_fig11` draws (on an Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    workloads = _workloads(rows)
    pols = _policies(rows)
    by = {(r["model"], int(r["batch"]), r["policy"]): r for r in rows}
    groups = [f"{MODEL_LABELS.get(m, m)}\nb{b}" for m, b in workloads] + ["GeoMean"]
    values = {p: [] for p in pols}
    for p in pols:
        for m, b in workloads:
            r = by.get((m, b, p))
            values[p].append(None if r is None or not math.isfinite(_time(r)) else r["normalized_performance"])
        ok = [v for v in values[p] if v is not None]
        values[p].append(_geomean(ok) if len(ok) == len(workloads) else None)
    fig = Figure(figsize=(max(6.0, 1.6 * len(groups)), 3.4), dpi=150)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / max(1, len(pols))
    for j, p in enumerate(pols):
        xs = [g + (j - (len(pols) - 1) / 2) * width for g in range(len(groups))]
        hs = [0.0 if v is None else v for v in values[p]]
        ax.bar(xs, hs, width * 0.95, label=POLICY_LABELS.get(p, p), color=policy_color(p, pols),
               edgecolor="black", linewidth=0.4)
        for x, v in zip(xs, values[p]):
            if v is None:
                ax.text(x, 0.015, "x", ha="center", va="bottom", color="#c00000", fontsize=9, fontweight="bold")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_ylabel("Normalized performance\n(ideal / time)", fontsize=8)
    ax.set_ylim(0, 1.15)
    ax.axhline(1.0, color="black", linewidth=0.5, linestyle=":")
    ax.tick_params(axis="y", labelsize=8)
    # the title is the legend's own title, above the legend's row, the two above the axes: an axes
    # title with a fixed pad was drawn under the legend, which is as tall as its font makes it
    title = rows_title(rows, preset) if title is None else title
    ax.legend(ncol=len(pols), fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False,
              title=title or None, title_fontsize=9)
    fig.tight_layout()
    return fig


def plot_llm(rows, path, *, title: str | None = None) -> Path:
    """Heat map of ideal / time per LLM trace (rows) and policy (columns), as PNG (``reproduce llm --plot``).

    A cell is coloured by ideal / time and labelled with it; a run that failed is marked "fails" and one
    the policy refused (the trace lacks what it needs) "refused", both in grey.  Written atomically.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    workloads = _workloads(rows)
    pols = _policies(rows)
    by = {(r["model"], int(r["batch"]), r["policy"]): r for r in rows}
    grid = np.full((len(workloads), len(pols)), np.nan)
    fig = Figure(figsize=(1.0 + 0.72 * len(pols), 1.2 + 0.32 * len(workloads)), dpi=150)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for i, (m, b) in enumerate(workloads):
        for j, p in enumerate(pols):
            r = by.get((m, b, p))
            if r is not None and not r.get("failed") and math.isfinite(_time(r)):
                grid[i, j] = r["normalized_performance"]
    image = ax.imshow(np.ma.masked_invalid(grid), vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    ax.set_facecolor("#d9d9d9")
    for i, (m, b) in enumerate(workloads):
        for j, p in enumerate(pols):
            r = by.get((m, b, p))
            if r is None:
                text = ""
            elif r.get("refused"):
                text = "refused"
            elif np.isnan(grid[i, j]):
                text = "fails"
            else:
                text = f"{grid[i, j]:.2f}"
            ax.text(j, i, text, ha="center", va="center", fontsize=5.5,
                    color="black" if np.isnan(grid[i, j]) or grid[i, j] > 0.6 else "white")
    ax.set_xticks(range(len(pols)))
    ax.set_xticklabels([POLICY_LABELS.get(p, p) for p in pols], fontsize=6, rotation=45, ha="right")
    ax.set_yticks(range(len(workloads)))
    ax.set_yticklabels([f"{m}-b{b}" for m, b in workloads], fontsize=6)
    bar = fig.colorbar(image, ax=ax, fraction=0.03, pad=0.02)
    bar.set_label("ideal / time", fontsize=6)
    bar.ax.tick_params(labelsize=6)
    ax.set_title(title or "LLM traces: normalized performance (ideal / time) per policy", fontsize=7)
    fig.tight_layout()
    return _save(fig, Path(path))


# ---- one run ----------------------------------------------------------------------

def _pages(n: int, page_size: int = 4096) -> str:
    gib = n * page_size / 2**30
    return f"{n:,} ({gib:.1f} GiB)" if n else "0"


def _m(n: float) -> str:
    """Pages in millions above 10 M (the summary's cause breakdown), else in full."""
    return f"{n / 1e6:,.2f} M" if abs(n) >= 1e7 else f"{n:,.0f}"


def _pages_in_text(result, per: str) -> str:
    """Pages moved to the GPU and their causes (every page once: docs/accounting.md)."""
    causes = (("faults_pages", "demand-faulted"), ("prefetched_pages", "prefetched by the fault handler"),
              ("hinted_pages", "brought by the policy's hints"),
              ("refetched_pages", "refetched (the waiting kernel's pages evicted before it ran)"))
    parts = [(label, sum(getattr(result, key).values())) for key, label in causes]
    total = sum(n for _, n in parts)
    shown = [f"{_m(n)} {label}" for label, n in parts if n or label == "demand-faulted"]
    return f"{per}{_m(total)} = " + " + ".join(shown)


def _cold_start_text(result) -> str | None:
    """Why iteration 0 was faster than the steady ones, from the counters: pages it allocated on
    the GPU at first touch (no transfer) where the steady iterations fetch from host or SSD."""
    its = result.iterations
    rep = [i for i in result.reported_iterations if i != 0]
    if result.level != "page" or len(its) < 2 or not rep:
        return None
    steady = sum(its[i].time_s for i in rep) / len(rep)
    if its[0].time_s >= steady:
        return None
    cold, warm = its[0].moved_in_pages, [its[i].moved_in_pages for i in rep]
    fetched0 = cold["host"] + cold["ssd"]
    fetched = sum(w["host"] + w["ssd"] for w in warm) / len(warm)
    return (f"iteration 0 ({its[0].time_s:.3f} s) is faster than the steady {steady:.3f} s: "
            f"{_m(cold['unallocated'])} of its pages were first touches (a GPU frame, no transfer) and it "
            f"fetched {_m(fetched0)} from host/SSD, where a steady iteration fetches {_m(fetched)}")


def _bounded(d: dict | None, value: float, fmt) -> str:
    """A sampled estimate with its 99 % bound relative to it, or "< limit" where the bound
    exceeds the value (a rate near 0); notes a bound over the target and what it would need."""
    if d is None or d["bound"] == 0:
        return fmt(value)
    if d["bound"] >= abs(value):
        return f"< {fmt(value + d['bound'])}"
    rel = 100 * d["relative_bound"]
    txt = f"{fmt(value)} +-{rel:.0f} %" if rel >= 1 else f"{fmt(value)} (+-<1 %)"
    if d.get("subsamples_needed") and d["subsamples_needed"] > d["subsamples"] and d["relative_bound"] > 0.1:
        txt += f" (10 % needs {d['subsamples_needed']} sub-samples)"
    return txt


def _size(n: int) -> str:
    return f"{n / 2**30:g} GiB" if n >= 2**30 else f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n / 2**10:g} KiB"


def _tlb_lines(tlb: dict, hz: float, spec: dict) -> list[str]:
    """The TLB's summary: rates with their bounds (and what tighter ones need), and what a lookup is."""
    pr = tlb.get("precision", {})
    samp = tlb.get("sampling", {})
    pct = lambda v: f"{100 * v:.1f} %" if v >= 0.001 else f"{100 * v:.2g} %"
    sec = lambda v: f"{v / hz:.4f} s"
    rates = f"L1 hit rate {_bounded(pr.get('l1_hit_rate'), tlb['l1_hit_rate'], pct)}, " \
            f"L2 {_bounded(pr.get('l2_hit_rate'), tlb['l2_hit_rate'], pct)}"
    if "pwc_hit_rate" in pr:
        rates += f", page-walk cache {_bounded(pr['pwc_hit_rate'], tlb['pwc_hit_rate'], pct)}"
    how = (f"sampled 1/{samp['modulus']} x {samp['subsamples']}, 99 % bounds" if samp.get("modulus", 1) > 1
           else "full simulation")
    ad = samp.get("adaptive") or {}
    if len(ad.get("runs", ())) > 1:
        how += f"; sub-samples adapted from {ad['runs'][0]} to bound the rates under 10 %"
    loose = [d for d in pr.values() if d["relative_bound"] is None or d["relative_bound"] > 0.1]
    if ad.get("cap_reached"):
        how += (f"; the cap of {ad['cap']} sub-samples is reached with {', '.join(ad['over_target'])} still over "
                f"10 % (tlb.sample_modulus = 1 simulates in full)")
    elif any(d["subsamples_needed"] is None and d["value"] for d in loose):
        how += "; under 10 % only with tlb.sample_modulus = 1: the sampling's systematic allowance exceeds it"
    elif loose and any(d["subsamples_needed"] for d in loose):
        how += f"; bounds under 10 % need tlb.sample_subsamples = {max(d['subsamples_needed'] or 0 for d in loose)}"
    first = (f"  TLB (whole run)  {rates}, {tlb['walks']:,.0f} walks; translation added "
             f"{_bounded(pr.get('cycles_added'), tlb['cycles_added'], sec)} ({how})")
    page = int(tlb.get("page_size_bytes", 4096))
    per_lookup = tlb["accesses"] / tlb["lookups"] if tlb.get("lookups") else 1.0
    size = {4096: "4 KiB", 65536: "64 KiB", 2097152: "2 MiB"}.get(page, f"{page} B")
    reach = int(spec.get("l2_entries", 0)) * page
    runs = ("one access per lookup" if per_lookup < 1.5 else
            f"{per_lookup:.0f} accesses per lookup, the rest L1 hits")
    second = (f"                   a lookup = an SM's first access to a {size} page as it sweeps its share of a "
              f"tensor ({runs}); each page is swept once per kernel and the L2 reaches {_size(reach)}: "
              "lookups are first touches, and miss")
    return [first, second]


def format_run_summary(result) -> str:
    """The short human summary ``g10sim run`` prints for a :class:`~g10core.results.Result`."""
    tr = result.trace
    name = f"{tr.get('model')}-b{tr.get('batch_size')}"
    head = f"{name} under {result.policy} (preset {result.preset}, config {result.config_hash})"
    h = result.hints
    if h.get("source") == "file":
        made = h.get("made_with") or {}
        made_txt = f"made by {h.get('policy') or 'an unnamed policy'}"
        if made.get("preset") or made.get("config_hash"):
            made_txt += f" under preset {made.get('preset', '?')}, config {made.get('config_hash', '?')}"
        head += f", hints from {h.get('path')} ({made_txt})"
    if result.level == "page" and result.metadata.get("eviction_override"):
        head += f", eviction {result.counters.get('eviction')}"
    page = int(result.config.get("gpu", {}).get("page_size_bytes", 4096))
    lines = [head]
    rt = tr.get("retargeted")
    if rt:
        lines.append(f"  GPU              {rt['from']} -> {rt['to']}: kernel times retargeted ({rt['method']}, "
                     f"ideal time x{rt['ideal_time_ratio']:.3f}; {rt['compute_bound_kernels']:,} compute-bound, "
                     f"{rt['memory_bound_kernels']:,} memory-bound kernels)")
    if result.quirks:
        lines.append("  hand-tuned       " + ", ".join(f"{q['name']} x{q['factor']:g}" for q in result.quirks)
                     + " (scheduler.artifact_quirks; the JSON's quirks say what each does)")
    meta = result.metadata
    hint_txt = ""
    if h.get("n_hints") and h.get("source") != "file":
        src = f"from {h['path']}" if h.get("source") == "file" else f"policy {h.get('policy')}"
        hint_txt = f", {h['n_hints']:,} hints ({src})"
    run_txt = f"{meta.get('wall_s', math.nan):.2f} s wall, peak RSS {meta.get('peak_rss_MB', math.nan):.0f} MB{hint_txt}"
    if result.failed:
        lines.append(f"  FAILED           {result.failure_reason}")
        lines.append(f"  ideal time       {result.ideal_time_s:.3f} s")
        lines.append(f"  run              {run_txt}")
        return "\n".join(lines)
    n_it = len(result.iterations)
    rep = result.reported_iterations
    if result.level == "page" and n_it == 1:     # (Simulator.run warned: COLD_START_ONLY)
        which = "one iteration, which includes the cold start: not a steady-state time"
    elif result.iteration_rule == "fastest":
        which = f"iteration {rep[0]} of {n_it}, the fastest (g10-artifact rule)" if n_it > 1 else "one iteration"
    elif result.level == "page" and n_it > 1:
        which = (f"iteration {rep[0]}" if len(rep) == 1 else f"mean of iterations {rep[0]}-{rep[-1]}") + \
            f" of {n_it}, after the cold start"
    else:
        which = ("one steady-state iteration" if result.level == "tensor" else
                 f"{n_it} identical iterations" if n_it > 1 else "one iteration")
    lines.append(f"  iteration time   {result.iteration_time_s:.3f} s ({which}); "
                 f"{result.slowdown:.3f}x ideal ({result.ideal_time_s:.3f} s)")
    inf = getattr(result, "inference", None)
    if inf:   # an inference trace: each iteration is one batch of requests, iteration 0 the warm-up
        tpot = f"{inf['tpot_s']:.4g} s" if inf.get("tpot_s") is not None else "-"
        lines.append(f"  inference        batch {inf['batch']} x {inf['gen']} tokens (iteration {inf['iteration']}): "
                     f"time to first token {inf['ttft_s']:.4g} s, time per output token {tpot}, "
                     f"{inf['tokens_per_s']:.4g} tokens/s")
    per = "per iteration, " if len(rep) > 1 else ""
    if result.level == "page":
        f = result.faults_pages
        in_flight = sum(result.iterations[i].in_transfer_pages for i in rep) / len(rep)
        lines.append(f"  faults (pages)   {per}host {f['host']:,.0f}, SSD {f['ssd']:,.0f}, "
                     f"unallocated {f['unallocated']:,.0f} (demand faults); {in_flight:,.0f} found in flight")
        lines.append("  pages to GPU     " + _pages_in_text(result, per))
    t = {k: int(round(v)) for k, v in result.traffic_pages.items()}
    lines.append(f"  traffic (pages)  {per}SSD->GPU {_pages(t['ssd_to_gpu'], page)}, "
                 f"GPU->SSD {_pages(t['gpu_to_ssd'], page)}")
    lines.append(f"                   host->GPU {_pages(t['host_to_gpu'], page)}, GPU->host {_pages(t['gpu_to_host'], page)}")
    b = result.breakdown_s
    brk = (f"  time breakdown   compute {b['compute']:.3f} s, overlap {b['overlap']:.3f} s, stall {b['stall']:.3f} s")
    if "translation" in b:
        brk += f", translation {b['translation']:.3f} s"
    excess = result.breakdown_excess_s
    if result.breakdown_rule == "artifact" and excess > 5e-4:
        brk += f" (artifact rule: adds up to {excess:.3f} s more than the time)"
    lines.append(brk)
    c = result.counters
    if "cpu_busy_s" in c:      # a run with CPU kernels (the CPU tier: zero-offload, zero-infinity)
        tb = c.get("traffic_bytes", {})
        lines.append(f"  host<->SSD       SSD->host {tb.get('ssd_to_host', 0) / 2**30:.1f} GiB, "
                     f"host->SSD {tb.get('host_to_ssd', 0) / 2**30:.1f} GiB")
        cw = [(v, k) for k, v in ((c.get("waits") or {}).get("cpu_wait_by_resource_s") or {}).items() if v >= 5e-4]
        waited = ("; it waited " + ", ".join(f"{v:.3f} s for the {k}" for v, k in sorted(cw, reverse=True))) if cw else ""
        lines.append(f"  CPU              {c['n_cpu_kernels']:,} kernels, busy {c['cpu_busy_s']:.3f} s{waited}; "
                     f"host memory peak {c['peak_host_bytes'] / 2**30:.1f} GiB "
                     f"of {c['host_capacity_bytes'] / 2**30:.0f} GiB")
        if c.get("zero_ranks", 1) > 1:   # one rank of a partitioned ZeRO group (scheduler.zero_ranks)
            lines.append(f"  ZeRO rank        one of {c['zero_ranks']}: parameters, gradients and optimizer state "
                         f"1/{c['zero_ranks']} off the GPU; all-gathers and reduce-scatters "
                         f"{c.get('collective_bytes', 0) / 2**30:.1f} GiB between the GPUs")
    if c.get("waits"):         # a tensor-level run: what each wait was for (results.tensor_waits)
        from ..results import waits_text
        lines.append("  waits            " + waits_text(c["waits"]))
    if n_it > 1:
        lines.append("  per iteration    " + ", ".join(f"{it.time_s:.3f} s" for it in result.iterations)
                     + " (iteration 0 includes the cold start)")
        cold = _cold_start_text(result)
        if cold:
            lines.append("  cold start       " + cold)
    rc = result.counters.get("recompute")
    if rc:
        t = rc["time_s"]
        t_txt = f"{t[-1]:.3f} s" if isinstance(t, list) and t else (f"{t:.3f} s" if not isinstance(t, list) else "n/a")
        lines.append(f"  recompute        {rc['tensors']:,} tensors by {rc['kernels']:,} kernels per iteration, "
                     f"{t_txt} (ideal {rc['ideal_s']:.3f} s; counted as stall)")
    dev = result.counters.get("ssd_summary")
    if dev:
        waf = dev["waf"]
        waf_txt = "n/a (no writes)" if waf != waf else f"{waf:.3f}"
        lines.append(f"  SSD (whole run)  WAF {waf_txt}, {dev['gc_count']:,} GCs, GC time {dev['gc_time_s']:.3f} s, "
                     f"erase-count spread {dev['erase_spread']}; throttled {dev['throttled_ticks']:,} transfer slots")
        u = result.counters["link_utilisation"]
        if None not in u.values():                # (None: nothing ran)
            lines.append(f"  PCIe link        utilisation to GPU {100 * u['to_device']:.1f} %, "
                         f"from GPU {100 * u['from_device']:.1f} %")
    fb = result.counters.get("fault_batches")
    if fb:
        lines.append(f"  fault batches    {fb['batches']:,} (whole run), {fb['mean_batch_units']:.1f} units and "
                     f"{fb['mean_batch_us']:.1f} us each; {fb['pages_prefetched']:,} pages prefetched for "
                     f"{fb['pages_faulted']:,} faulted; victims: {fb['victims']}")
    tlb = result.counters.get("tlb")
    if tlb and tlb.get("model") == "hierarchy":
        lines.extend(_tlb_lines(tlb, float(result.config["gpu"]["frequency_GHz"]) * 1e9,
                                result.config.get("tlb", {})))
    lines.append(f"  run              {run_txt}")
    return "\n".join(lines)


# ============================================================================
# Figs. 12-19 (rows from g10core.experiments.reproduce.figure_rows): published cells, tables, plots
# ============================================================================

FIGURE_SCHEMA = "g10core-figure"
FIGURE_SCHEMA_VERSION = 1
# a reproduced cell must be within this of the published one (percent)
TOLERANCE_PCT = {"fig19": 0.2}
DEFAULT_TOLERANCE_PCT = 1.0
FIG12_TABLE_QUANTILES = (0.5, 0.75, 0.9, 0.95, 0.99, 1.0)
TRAFFIC_LABELS = {"ssd_to_gpu": "SSD->GPU", "gpu_to_ssd": "GPU->SSD", "host_to_gpu": "host->GPU",
                  "gpu_to_host": "GPU->host"}
PARAM_LABELS = {"host_memory_GiB": "host GB", "ssd_bandwidth_GBps": "SSD GB/s", "sigma": "sigma"}


def _param_name(figure: str) -> str | None:
    from .published import FIGURE_PARAMS

    return FIGURE_PARAMS.get(figure)


def _rel_error_pct(ours: float, published: float) -> float:
    if published == 0:
        return 0.0 if ours == 0 else math.inf
    return 100.0 * (ours / published - 1.0)


def _cell_status(ours, published, tol) -> tuple[str, float | None]:
    ours_ok = ours is not None and math.isfinite(ours)
    pub_ok = math.isfinite(published)
    if ours_ok and pub_ok:
        err = _rel_error_pct(ours, published)
        return ("ok" if abs(err) <= tol else "off"), err
    if not ours_ok and not pub_ok:
        return "both fail", None
    if not ours_ok:
        return "we fail", None
    return "unpublished", None


def _breakdown_as_published(row) -> dict | None:
    """Our breakdown the way the published Fig. 13 shows it (seconds).

    The artifact's gatherKernelInfo.py moves Base UVM's overlap into its stall
    (``stall -= overlap; overlap = 0``); the same is done to ours before comparing.
    """
    b = row.get("breakdown_s")
    if not b or row.get("failed"):
        return None
    b = dict(b)
    if row["policy"] == "base-uvm":
        b["stall"] = b["stall"] - b["overlap"]
        b["overlap"] = 0.0
    return b


def quantile_of_sorted(values, q: float) -> float:
    """The published Fig. 12's value at quantile q: sorted entry ``round(q * (n - 1))``."""
    return values[int(round(q * (len(values) - 1)))]


def figure_cells(figure: str, rows) -> list[dict]:
    """Every published cell of ``figure`` beside ours.

    Each cell: ``model``, ``batch``, ``policy``, the figure's parameter, ``metric``,
    ``ours``, ``published`` (in seconds, pages or a ratio), ``error_pct``, ``status``
    (``ok``: within the tolerance; ``off``: not; ``both fail``; ``we fail``;
    ``unpublished``: the artifact has no number here (its run failed or never finished)
    but ours ran; ``missing``: not run here) and ``tolerance_pct``.
    """
    from .published import published_cells, published_fig12

    tol = TOLERANCE_PCT.get(figure, DEFAULT_TOLERANCE_PCT)
    param = _param_name(figure)
    out = []
    if figure == "fig12":
        by = {(r["model"], int(r["batch"]), r["policy"]): r for r in rows}
        for (model, batch, policy), (qs, vals, n) in sorted(published_fig12().items()):
            r = by.get((model, batch, policy))
            mine = sorted(x for x in (r or {}).get("kernel_slowdown", []) if x is not None) if r else []
            for q, v in zip(qs, vals):
                cell = {"model": model, "batch": batch, "policy": policy, "metric": f"slowdown@{q:g}",
                        "quantile": q, "published": v, "tolerance_pct": tol}
                if r is None or (not mine and not r.get("failed")):
                    cell.update(ours=None, error_pct=None, status="missing")
                else:
                    ours = quantile_of_sorted(mine, q) if mine else math.inf
                    st, err = _cell_status(ours, v, tol)
                    cell.update(ours=ours, error_pct=err, status=st)
                out.append(cell)
        return out
    key_of = (lambda r: (r["model"], int(r["batch"]), r["policy"], float(r[param]))) if param else \
        (lambda r: (r["model"], int(r["batch"]), r["policy"], None))
    by = {}
    for r in rows:
        by.setdefault(key_of(r), r)
    for c in published_cells(figure):
        pv = c.param(param) if param else None
        r = by.get((c.model, c.batch, c.policy, pv))
        cell = {"model": c.model, "batch": c.batch, "policy": c.policy, "metric": c.metric,
                "published": c.comparable, "tolerance_pct": tol}
        if param:
            cell[param] = pv
        if r is None:
            cell.update(ours=None, error_pct=None, status="missing")
            out.append(cell)
            continue
        if c.metric == "time":
            ours = r["time_s"]
        elif c.metric == "normalized_performance":
            ours = math.inf if r.get("failed") else r.get("normalized_performance")
        elif c.metric in ("compute", "overlap", "stall"):
            b = _breakdown_as_published(r)
            ours = math.inf if b is None else b[c.metric]
        else:
            t = r.get("traffic_pages")
            ours = math.inf if not t or r.get("failed") else float(t[c.metric])
        st, err = _cell_status(ours, c.comparable, tol)
        cell.update(ours=ours, error_pct=err, status=st)
        out.append(cell)
    return out


def figure_summary(figure: str, cells) -> dict:
    """Counts by status, the worst compared cell, and whether failures sit where published."""
    counts: dict = {}
    for c in cells:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    compared = [c for c in cells if c["error_pct"] is not None]
    worst = max(compared, key=lambda c: abs(c["error_pct"])) if compared else None
    return {"figure": figure, "cells": len(cells), "by_status": counts, "compared": len(compared),
            "within_tolerance": counts.get("ok", 0),
            "tolerance_pct": TOLERANCE_PCT.get(figure, DEFAULT_TOLERANCE_PCT),
            "worst": worst, "failures_match": counts.get("we fail", 0) == 0 and counts.get("unpublished", 0) == 0}


def _fmt_cell_value(metric: str, v) -> str:
    if v is None:
        return "–"
    if not math.isfinite(v):
        return "fails"
    if metric in TRAFFIC_LABELS:
        return f"{v:,.0f}"
    if metric == "normalized_performance":
        return f"{v:.5f}"
    if metric.startswith("slowdown"):
        return f"{v:.4g}"
    return f"{v:.3f}"


def _describe_cell(figure: str, c: dict) -> str:
    param = _param_name(figure)
    where = f"{c['model']}-b{c['batch']} {c['policy']}"
    if param and c.get(param) is not None:
        where += f" {PARAM_LABELS.get(param, param)}={c[param]:g}"
    return f"{where} {c['metric']}"


def format_figure_table(figure: str, rows, cells=None) -> str:
    """The text table: our numbers beside the published ones, then the comparison summary."""
    from .reproduce import FIGURES

    cells = figure_cells(figure, rows) if cells is None else cells
    param = _param_name(figure)
    unit = {"fig13": "seconds", "fig14": "pages", "fig19": "ideal / time", "fig12": "kernel time / ideal"}.get(
        figure, "seconds per iteration")
    lines = [f"{FIGURES[figure].title} ({unit}; published: github.com/platformxlab/G10 example_results)"]
    head = f"{'model':<12} {'batch':>5}  {'policy':<12}"
    if param:
        head += f" {PARAM_LABELS.get(param, param):>9}"
    head += f" {'metric':<14} {'ours':>14} {'published':>14} {'diff':>10}"
    lines.append(head)
    published_keys = set()
    last = None
    shown = sorted((c for c in cells if figure != "fig12" or c.get("quantile") in FIG12_TABLE_QUANTILES),
                   key=lambda c: _cell_order(c, param))
    ran = {(r["model"], int(r["batch"])) for r in rows}
    not_run = sum(1 for c in shown if c["status"] == "missing" and (c["model"], c["batch"]) not in ran)
    shown = [c for c in shown if c["status"] != "missing" or (c["model"], c["batch"]) in ran]
    digits = 3 if TOLERANCE_PCT.get(figure, DEFAULT_TOLERANCE_PCT) < 1 else 2
    for c in shown:
        key = (c["model"], c["batch"])
        if last is not None and key != last:
            lines.append("")
        last = key
        published_keys.add((c["model"], c["batch"], c["policy"], c.get(param) if param else None))
        if c["error_pct"] is not None:
            diff = f"{c['error_pct']:+.{digits}f} %"
            if c["status"] == "off":
                diff += " !"
        else:
            diff = {"both fail": "both fail", "we fail": "MISMATCH", "unpublished": "no pub.",
                    "missing": "not run"}[c["status"]]
        line = f"{c['model']:<12} {c['batch']:>5}  {c['policy']:<12}"
        if param:
            line += f" {c.get(param, math.nan):>9g}"
        line += (f" {c['metric']:<14} {_fmt_cell_value(c['metric'], c['ours']):>14} "
                 f"{_fmt_cell_value(c['metric'], c['published']):>14} {diff:>10}")
        lines.append(line)
    # our runs the paper has no number for (other batches, Base UVM under host memory, ...)
    extra = [r for r in rows if (r["model"], int(r["batch"]), r["policy"],
                                 float(r[param]) if param else None) not in published_keys]
    if extra and figure not in ("fig12", "fig13", "fig14"):
        lines.append("")
        lines.append(f"not in the published figure ({len(extra)} runs):")
        for r in extra:
            line = f"{r['model']:<12} {int(r['batch']):>5}  {r['policy']:<12}"
            if param:
                line += f" {float(r[param]):>9g}"
            metric = "normalized_performance" if figure == "fig19" else "time"
            v = r.get("normalized_performance") if figure == "fig19" else r["time_s"]
            line += f" {metric:<14} {_fmt_cell_value(metric, v if not r.get('failed') else math.inf):>14}"
            lines.append(line)
    s = figure_summary(figure, cells)
    lines.append("")
    if not_run:
        lines.append(f"({not_run} published cells of workloads not run here are not shown)")
    lines.append(format_figure_summary(s))
    return "\n".join(lines)


def _cell_order(c: dict, param: str | None):
    models = {m: i for i, m in enumerate(_MODEL_ORDER)}
    pols = {p: i for i, p in enumerate(FIG11_POLICIES)}
    metrics = {m: i for i, m in enumerate(("time", "normalized_performance", "overlap", "compute", "stall",
                                           *TRAFFIC_LABELS))}
    return (models.get(c["model"], 99), c["model"], c["batch"], pols.get(c["policy"], 99),
            (c.get(param) or 0.0) if param else 0.0, metrics.get(c["metric"], 99), c.get("quantile", 0.0))


def format_figure_summary(s: dict) -> str:
    by = s["by_status"]
    text = (f"{s['figure']}: {s['cells']} published cells, {s['compared']} compared, {s['within_tolerance']} within "
            f"±{s['tolerance_pct']:g} %")
    w = s["worst"]
    if w is not None:
        text += f"; worst {w['error_pct']:+.3f} % ({_describe_cell(s['figure'], w)})"
    fails = ", ".join(f"{by[k]} {k}" for k in ("both fail", "we fail", "unpublished", "missing") if by.get(k))
    if fails:
        text += f"; {fails}"
    return text


def figure_document(figure: str, rows, *, meta: dict | None = None) -> dict:
    cells = figure_cells(figure, rows)
    return jsonable({"schema": FIGURE_SCHEMA, "schema_version": FIGURE_SCHEMA_VERSION, "figure": figure,
                     "rows": rows, "cells": cells, "summary": figure_summary(figure, cells),
                     "metadata": meta or {}})


def write_figure_json(figure: str, rows, path, *, meta: dict | None = None) -> Path:
    text = json.dumps(figure_document(figure, rows, meta=meta), indent=1, allow_nan=False) + "\n"
    return write_text_atomic(path, text)


def load_figure_json(path) -> tuple[str, list[dict]]:
    """(figure, rows) of a saved ``g10sim reproduce figN --json`` file (Fig. 11 too)."""
    path = Path(path)
    doc = _load_json(path)
    if isinstance(doc, dict) and doc.get("schema") == SCHEMA:
        return "fig11", load_fig11_json(path)
    if not isinstance(doc, dict) or doc.get("schema") != FIGURE_SCHEMA or not isinstance(doc.get("rows"), list):
        raise ValueError(f"{path}: not a g10sim reproduce JSON (schema {FIGURE_SCHEMA!r} with 'rows')")
    rows = doc["rows"]
    for i, r in enumerate(rows):
        miss = [k for k in ("model", "batch", "policy", "failed") if not isinstance(r, dict) or k not in r]
        if miss:
            raise ValueError(f"{path}: rows[{i}] lacks {', '.join(miss)}")
        if r.get("time_s") is None:
            r["time_s"] = math.inf
    return doc["figure"], rows


# ---- plots -------------------------------------------------------------------------

_COLORS = {"base-uvm": "#9e9e9e", "flashneuron": "#f2b134", "deepum": "#4daf4a", "g10-gds": "#80b1d3",
           "g10-host": "#377eb8", "g10": "#e41a1c", "ideal": "#222222"}
_MARKERS = {"base-uvm": "o", "flashneuron": "s", "deepum": "^", "g10": "D", "ideal": "x"}
_MODEL_ORDER = ("bert_base", "vit", "inceptionv3", "resnet152", "senet154")
_SHORT_LABELS = {"base-uvm": "UVM", "flashneuron": "FN", "deepum": "DU+", "g10": "G10"}


def _new_figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=130)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path) -> Path:
    path = Path(path)
    with replacing(path, suffix=path.suffix or ".png") as tmp:
        fig.savefig(tmp, format=(path.suffix.lstrip(".") or "png"))
    return path


def _models(rows) -> list[str]:
    present = {r["model"] for r in rows}
    return [m for m in _MODEL_ORDER if m in present] + sorted(present - set(_MODEL_ORDER))


def _panel_axes(fig, n: int):
    return [fig.add_subplot(1, n, i + 1) for i in range(n)]



def plot_figure(figure: str, rows, path, *, title: str | None = None) -> Path:
    """Draw ``figure`` from its rows with the paper's axes (matplotlib Agg, written atomically)."""
    if figure == "fig11":
        return plot_fig11(rows, path, title=title)
    draw = {"fig12": _plot_fig12, "fig13": _plot_fig13, "fig14": _plot_fig14, "fig15": _plot_fig15,
            "fig16": _plot_fig16, "fig17": _plot_fig17, "fig18": _plot_fig18, "fig19": _plot_fig19}[figure]
    fig = draw(rows)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return _save(fig, path)


def _batch_of(rows, model: str):
    """The batch size of ``model``'s rows, for a panel's label ("" where it has none)."""
    return next((r["batch"] for r in rows if r["model"] == model), "")


def _label_first_panel(fig, models, ylabel: str, *, legend_fontsize: int) -> None:
    """The y label and the legend of a row of per-model panels, on the first panel only (none: no panel)."""
    if models:
        fig.axes[0].set_ylabel(ylabel, fontsize=8)
        fig.axes[0].legend(fontsize=legend_fontsize, frameon=False)


def _plot_fig12(rows):
    """Per model: sorted per-kernel slowdown against the share of kernels (the tail, 75-100 %), log y."""
    models = _models(rows)
    fig = _new_figure(3.0 * max(1, len(models)), 2.8)
    for ax, m in zip(_panel_axes(fig, len(models)), models):
        for p in ("base-uvm", "flashneuron", "deepum", "g10"):
            r = next((r for r in rows if r["model"] == m and r["policy"] == p), None)
            vals = sorted(x for x in (r or {}).get("kernel_slowdown", []) if x is not None)
            if len(vals) < 2:
                continue
            n = len(vals)
            share = [i / (n - 1) for i in range(n)]
            ax.plot(share, vals, color=_COLORS[p], label=POLICY_LABELS[p], linewidth=1.4)
        ax.set_yscale("log")
        ax.set_xlim(0.75, 1.0)
        ticks = [0.75, 0.8, 0.85, 0.9, 0.95, 1.0]
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{100 * t:.0f}%" for t in ticks], fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(which="major", linewidth=0.4, color="grey")
        ax.set_xlabel(f"{MODEL_LABELS.get(m, m)} (b{_batch_of(rows, m)}): kernels", fontsize=8)
    _label_first_panel(fig, models, "Kernel slowdown\n(time / ideal)", legend_fontsize=7)
    return fig


def _plot_fig13(rows):
    """Stacked bars per model and policy: compute overlapped with transfers, compute, stall; each bar = 1."""
    models = _models(rows)
    pols = [p for p in ("base-uvm", "flashneuron", "deepum", "g10") if any(r["policy"] == p for r in rows)]
    fig = _new_figure(max(6.0, 1.7 * len(models)), 3.0)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / max(1, len(pols))
    parts = (("overlap", "Compute & Data Transfer", "#4c72b0"), ("compute", "Compute", "#dd8452"),
             ("stall", "Stall", "#c44e52"))
    for j, p in enumerate(pols):
        for g, m in enumerate(models):
            r = next((r for r in rows if r["model"] == m and r["policy"] == p), None)
            x = g + (j - (len(pols) - 1) / 2) * width
            b = _breakdown_as_published(r) if r else None
            if not b:
                ax.text(x, 0.02, "x", ha="center", color="#c00000", fontsize=8, fontweight="bold")
                continue
            total = sum(max(0.0, b[k]) for k, _l, _c in parts) or 1.0
            bottom = 0.0
            for k, label, color in parts:
                h = max(0.0, b[k]) / total
                ax.bar(x, h, width * 0.92, bottom=bottom, color=color, edgecolor="white", linewidth=0.4,
                       label=label if (j == 0 and g == 0) else None)
                bottom += h
            ax.text(x, 1.01, _SHORT_LABELS.get(p, p), ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels([f"{MODEL_LABELS.get(m, m)}\nb{_batch_of(rows, m)}"
                        for m in models], fontsize=8)
    ax.set_ylim(0, 1.3)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1])
    ax.set_ylabel("Execution Time", fontsize=8)
    ax.legend(ncol=3, fontsize=7, frameon=False, loc="upper center")
    return fig


def _plot_fig14(rows):
    """Stacked bars per model and policy: GB moved SSD->GPU, GPU->SSD, host->GPU, GPU->host."""
    models = _models(rows)
    pols = [p for p in ("base-uvm", "flashneuron", "deepum", "g10") if any(r["policy"] == p for r in rows)]
    fig = _new_figure(3.0 * max(1, len(models)), 3.0)
    colors = {"ssd_to_gpu": "#1f77b4", "gpu_to_ssd": "#aec7e8", "host_to_gpu": "#ff7f0e", "gpu_to_host": "#ffbb78"}
    for ax, m in zip(_panel_axes(fig, len(models)), models):
        for j, p in enumerate(pols):
            r = next((r for r in rows if r["model"] == m and r["policy"] == p), None)
            t = (r or {}).get("traffic_pages")
            if not t or r.get("failed"):
                ax.text(j, 0, "x", ha="center", va="bottom", color="#c00000", fontsize=8, fontweight="bold")
                continue
            bottom = 0.0
            for k in TRAFFIC_LABELS:
                gb = t[k] * 4096 / 2**30
                ax.bar(j, gb, 0.7, bottom=bottom, color=colors[k], edgecolor="white", linewidth=0.4,
                       label=TRAFFIC_LABELS[k] if j == 0 else None)
                bottom += gb
        ax.set_xticks(range(len(pols)))
        ax.set_xticklabels([POLICY_LABELS[p] for p in pols], fontsize=6, rotation=30)
        ax.tick_params(axis="y", labelsize=7)
        ax.set_title(f"{MODEL_LABELS.get(m, m)} (b{_batch_of(rows, m)})", fontsize=8)
    _label_first_panel(fig, models, "Traffic (GB)", legend_fontsize=6)
    return fig


def _plot_lines(rows, x_of, y_of, *, xlabel, ylabel_of, series_of, series_label, ylim0=True):
    models = _models(rows)
    fig = _new_figure(3.0 * max(1, len(models)), 2.9)
    for ax, m in zip(_panel_axes(fig, len(models)), models):
        mine = [r for r in rows if r["model"] == m]
        series = []
        for r in mine:
            s = series_of(r)
            if s not in series:
                series.append(s)
        for i, s in enumerate(series):
            pts = sorted((x_of(r), y_of(r)) for r in mine if series_of(r) == s)
            xs = [x for x, y in pts if y is not None]
            ys = [y for x, y in pts if y is not None]
            color = _COLORS.get(s, f"C{i}")
            ax.plot(xs, ys, marker=_MARKERS.get(s, "o"), markersize=3.5, linewidth=1.2, color=color,
                    markerfacecolor="none", label=series_label(s))
            for x, y in pts:
                if y is None:
                    ax.plot([x], [0], marker="x", color="#c00000", markersize=5)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel_of(m), fontsize=8)
        batches = {r["batch"] for r in mine}
        ax.set_title(MODEL_LABELS.get(m, m) + (f" (b{batches.pop()})" if len(batches) == 1 else ""), fontsize=8)
        ax.tick_params(labelsize=7)
        if ylim0:
            ax.set_ylim(bottom=0)
        ax.legend(fontsize=6, frameon=False)
    return fig


def _time_or_none(r):
    return finite_or_none(r["time_s"]) if not r.get("failed") else None


def _plot_fig15(rows):
    """Throughput (samples per second = batch / iteration time) against batch size, per policy."""
    return _plot_lines(
        rows, lambda r: r["batch"],
        lambda r: (r["batch"] / r["time_s"]) if _time_or_none(r) else None,
        xlabel="Batch Size", ylabel_of=lambda m: "Sequence / sec" if m == "bert_base" else "Image / sec",
        series_of=lambda r: r["policy"], series_label=lambda p: POLICY_LABELS.get(p, p))


def _plot_fig16(rows):
    """Iteration time against host memory capacity, one line per batch size (G10)."""
    return _plot_lines(
        rows, lambda r: r["host_memory_GiB"], _time_or_none, xlabel="Host Memory Capacity (GB)",
        ylabel_of=lambda m: "Execution Time (sec)", series_of=lambda r: f"B={r['batch']}",
        series_label=lambda s: s)


def _plot_fig17(rows):
    """Iteration time against host memory capacity per policy, at the batch the paper draws per model."""
    from .published import FIG17_PANEL_BATCH

    chosen = []
    for m in _models(rows):
        batches = sorted({r["batch"] for r in rows if r["model"] == m})
        b = FIG17_PANEL_BATCH.get(m, batches[-1])
        if b not in batches:
            b = batches[-1]
        chosen += [r for r in rows if r["model"] == m and r["batch"] == b]
    return _plot_lines(
        chosen, lambda r: r["host_memory_GiB"], _time_or_none, xlabel="Host Memory Capacity (GB)",
        ylabel_of=lambda m: "Execution Time (sec)", series_of=lambda r: r["policy"],
        series_label=lambda p: POLICY_LABELS.get(p, p))


def _plot_fig18(rows):
    """Normalised performance (ideal / time, %) against SSD bandwidth, per policy."""
    return _plot_lines(
        [r for r in rows if r["policy"] != "ideal"], lambda r: r["ssd_bandwidth_GBps"],
        lambda r: 100.0 * r["ideal_time_s"] / r["time_s"] if _time_or_none(r) else None,
        xlabel="SSD Bandwidth (GB/s)", ylabel_of=lambda m: "Normalized Performance (%)",
        series_of=lambda r: r["policy"], series_label=lambda p: POLICY_LABELS.get(p, p))


def _plot_fig19(rows):
    """Bars per model: G10's normalised performance at each sigma over its value at sigma = 0."""
    models = _models(rows)
    sigmas = sorted({r["sigma"] for r in rows})
    fig = _new_figure(max(6.0, 1.6 * len(models)), 2.6)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / max(1, len(sigmas))
    for j, s in enumerate(sigmas):
        xs, hs = [], []
        for g, m in enumerate(models):
            base = next((r for r in rows if r["model"] == m and r["sigma"] == 0), None)
            r = next((r for r in rows if r["model"] == m and r["sigma"] == s), None)
            if not base or not r or r.get("failed") or base.get("failed"):
                continue
            xs.append(g + (j - (len(sigmas) - 1) / 2) * width)
            hs.append(r["normalized_performance"] / base["normalized_performance"])
        ax.bar(xs, hs, width * 0.92, color=f"C{j}", label="0%" if s == 0 else f"±{100 * s:.0f}%", zorder=3)
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels([f"{MODEL_LABELS.get(m, m)}\nb{_batch_of(rows, m)}"
                        for m in models], fontsize=8)
    ax.set_ylim(0.99, 1.01)
    ax.set_ylabel("Normalized\nPerformance", fontsize=8)
    ax.yaxis.grid(zorder=0, linewidth=0.4)
    ax.tick_params(axis="y", labelsize=7)
    ax.legend(ncol=len(sigmas), fontsize=7, frameon=False, loc="upper center")
    return fig


# ---- a run's timeline (g10core.timeline) as a picture -------------------------------------------

# span colours by the span's name (kernels alternate two blues, so neighbours stay apart)
_TIMELINE_COLORS = {"fault": "#e41a1c", "prefetch": "#4daf4a", "evict": "#ff7f00", "pre-evict": "#984ea3",
                    "batch": "#666666", "GC": "#a65628"}
_KERNEL_COLORS = ("#377eb8", "#9ecae1")


def timeline_summary(doc) -> str:
    """The text ``g10sim report timeline`` prints: what ran, then per track its spans and the time
    they cover, per counter its peak."""
    from ..timeline import tracks

    t = tracks(doc)
    o = t["other"]
    lines = []
    if o:
        head = f"{o.get('trace', '?')} under {o.get('policy', '?')} ({o.get('preset', '?')})"
        if o.get("failed"):
            head += f": failed: {o.get('failure_reason')}"
        lines.append(head)
        if not o.get("transfers_recorded", True):
            lines.append("  (transfers not recorded: kernels and memory only)")
    width = max([len(f"{p} / {n}") for p, n, *_ in t["spans"]] + [len(n) for n in t["counters"]] + [10])
    for p, n, starts, durs, _names in t["spans"]:
        busy = float(np.sum(durs)) if len(durs) else 0.0
        lines.append(f"  {f'{p} / {n}':<{width}}  {len(starts):>8} spans  {busy * 1e-6:>12.6f} s covered")
    for name, (_ts, v, unit) in t["counters"].items():
        lines.append(f"  {name:<{width}}  peak {float(np.max(v)) if len(v) else 0:g} {unit}")
    return "\n".join(lines)


def timeline_figure(doc, *, title: str | None = None):
    """The matplotlib ``Figure`` of a timeline document (:func:`g10core.timeline.read_timeline`):
    one row per track (kernels, iterations, link directions, batches, GC) and the memory counters
    below, on one time axis."""
    from ..timeline import tracks

    t = tracks(doc)
    spans, counters = t["spans"], t["counters"]
    end_us = max([float(np.max(s + d)) for _p, _n, s, d, _ in spans if len(s)]
                 + [float(np.max(ts)) for ts, _v, _u in counters.values() if len(ts)] + [1.0])
    scale, unit = (1e-6, "s") if end_us >= 2e6 else (1e-3, "ms") if end_us >= 2e3 else (1.0, "µs")
    rows = max(len(spans), 1)
    fig = _new_figure(10.0, 0.26 * rows + (2.2 if counters else 0.8))
    gs = fig.add_gridspec(2 if counters else 1, 1, height_ratios=[0.26 * rows, 1.6][:2 if counters else 1],
                          hspace=0.08)
    ax = fig.add_subplot(gs[0])
    labels = []
    for i, (p, n, starts, durs, names) in enumerate(spans):
        y = rows - 1 - i
        if not len(starts):
            labels.append(f"{p}: {n}")
            continue
        colors = [_TIMELINE_COLORS.get(nm) or _KERNEL_COLORS[j % 2] for j, nm in enumerate(names)]
        ax.broken_barh(list(zip(starts * scale, durs * scale)), (y - 0.38, 0.76), facecolors=colors,
                       edgecolors=colors, linewidth=0.3)
        labels.append(f"{p}: {n}")
    ax.set_yticks(range(rows))
    ax.set_yticklabels(list(reversed(labels)) if labels else [""], fontsize=7)
    ax.set_ylim(-0.6, rows - 0.4)
    ax.set_xlim(0, end_us * scale)
    ax.tick_params(axis="x", labelsize=7)
    ax.xaxis.grid(linewidth=0.3)
    ax.set_axisbelow(True)
    if counters:
        ax.tick_params(axis="x", labelbottom=False)
        cx = fig.add_subplot(gs[1], sharex=ax)
        gib = {k: v for k, v in counters.items() if v[2] == "GiB"}
        other = {k: v for k, v in counters.items() if v[2] != "GiB"}
        for j, (name, (ts, v, _u)) in enumerate(gib.items()):
            cx.step(np.append(ts, end_us) * scale, np.append(v, v[-1] if len(v) else 0), where="post",
                    color=f"C{j}", linewidth=0.9, label=f"{name} (GiB)")
        cx.set_ylabel("GiB", fontsize=7)
        cx.tick_params(labelsize=7)
        handles, names = cx.get_legend_handles_labels()
        if other:
            tx = cx.twinx()
            for j, (name, (ts, v, u)) in enumerate(other.items()):
                tx.step(np.append(ts, end_us) * scale, np.append(v, v[-1] if len(v) else 0), where="post",
                        color="#444444", linewidth=0.7, linestyle="--", label=f"{name} ({u}, right)")
            tx.set_ylabel(", ".join(sorted({u for _t, _v, u in other.values()})), fontsize=7)
            tx.tick_params(labelsize=7)
            tx.ticklabel_format(axis="y", style="plain", useOffset=False)
            h2, n2 = tx.get_legend_handles_labels()
            handles, names = handles + h2, names + n2
        if handles:
            cx.legend(handles, names, fontsize=6, frameon=False, loc="upper center", ncol=3,
                      bbox_to_anchor=(0.5, -0.32))
        cx.set_xlabel(f"time ({unit})", fontsize=8)
        cx.xaxis.grid(linewidth=0.3)
    else:
        ax.set_xlabel(f"time ({unit})", fontsize=8)
    o = t["other"]
    if title is None and o:
        title = f"{o.get('trace', '')} under {o.get('policy', '')} ({o.get('preset', '')})"
    if title:
        fig.suptitle(title, fontsize=9)
    height = fig.get_figheight()
    fig.subplots_adjust(left=0.2, right=0.93, top=1 - (0.45 if title else 0.15) / height,
                        bottom=(0.85 if counters else 0.45) / height)
    return fig


def plot_timeline(doc, path, *, title: str | None = None) -> Path:
    """Draw a timeline document (:func:`timeline_figure`) to ``path`` (matplotlib Agg, written
    atomically; the format from the suffix, PNG by default).

    Parameters
    ----------
    doc : dict
        A timeline document (:func:`g10core.timeline.read_timeline`, :meth:`Result.write_timeline`).
    path : str or path
        The image file.
    title : str, optional
        The figure's title (default: the document's trace, policy and preset).

    Returns
    -------
    Path
        The file written.
    """
    return _save(timeline_figure(doc, title=title), path)
