"""Tables and figures of reproduction rows (``g10core.reproduce``).

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

from .published import (
    FIG11_POLICIES, HEADLINE_G10_FRACTION_OF_IDEAL, HEADLINE_SPEEDUP_OVER_BEST_PRIOR, MODEL_LABELS,
    POLICY_LABELS, PRIOR_BASELINES, STATE_OF_THE_ART,
)
from .results import jsonable, write_text_atomic

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
        for name in frac["per_model"]:
            bp = summary["best_prior"]["per_model"][name]
            best_txt = "–" if bp["speedup"] is None else f"{_fmt_x(bp['speedup'])} ({POLICY_LABELS[bp['policy']]})"
            lines.append(f"  {name:<20}" + "".join(f"{_fmt_x(summary['speedup'][p].get(name)):>12}" for p in base)
                         + f"{best_txt:>22}")
        lines.append(f"  {'max over models':<20}" + "".join(f"{_fmt_x(summary['speedup_max'][p]):>12}" for p in base))
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


def load_fig11_json(path) -> list[dict]:
    """Rows of a saved reproduction (``time_s: null`` read back as inf)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
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
    import os
    import secrets

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
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
    ax.legend(ncol=len(pols), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 1.18), frameon=False)
    title = rows_title(rows, preset) if title is None else title
    if title:
        ax.set_title(title, fontsize=9, pad=22)
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp{path.suffix or '.png'}")
    try:
        fig.savefig(tmp, format=(path.suffix.lstrip(".") or "png"))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


# ---- one run ----------------------------------------------------------------------

def _pages(n: int, page_size: int = 4096) -> str:
    gib = n * page_size / 2**30
    return f"{n:,} ({gib:.1f} GiB)" if n else "0"


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
    if result.iteration_rule == "fastest":
        which = f"iteration {rep[0]} of {n_it}, the fastest (g10-artifact rule)" if n_it > 1 else "one iteration"
    elif result.level == "page" and n_it > 1:
        which = (f"iteration {rep[0]}" if len(rep) == 1 else f"mean of iterations {rep[0]}-{rep[-1]}") + \
            f" of {n_it}, after the cold start"
    else:
        which = "one steady-state iteration" if result.level == "tensor" else f"{n_it} identical iterations"
    lines.append(f"  iteration time   {result.iteration_time_s:.3f} s ({which}); "
                 f"{result.slowdown:.3f}x ideal ({result.ideal_time_s:.3f} s)")
    per = "per iteration, " if len(rep) > 1 else ""
    if result.level == "page":
        f = result.faults_pages
        in_flight = sum(result.iterations[i].in_transfer_pages for i in rep) / len(rep)
        lines.append(f"  faults (pages)   {per}host {f['host']:,.0f}, SSD {f['ssd']:,.0f}, "
                     f"unallocated {f['unallocated']:,.0f}; {in_flight:,.0f} found in flight")
    t = {k: int(round(v)) for k, v in result.traffic_pages.items()}
    lines.append(f"  traffic (pages)  {per}SSD->GPU {_pages(t['ssd_to_gpu'], page)}, "
                 f"GPU->SSD {_pages(t['gpu_to_ssd'], page)}")
    lines.append(f"                   host->GPU {_pages(t['host_to_gpu'], page)}, GPU->host {_pages(t['gpu_to_host'], page)}")
    b = result.breakdown_s
    brk = (f"  time breakdown   compute {b['compute']:.3f} s, overlap {b['overlap']:.3f} s, stall {b['stall']:.3f} s")
    excess = result.breakdown_excess_s
    if result.breakdown_rule == "artifact" and excess > 5e-4:
        brk += f" (artifact rule: adds up to {excess:.3f} s more than the time)"
    lines.append(brk)
    if n_it > 1:
        lines.append("  per iteration    " + ", ".join(f"{it.time_s:.3f} s" for it in result.iterations)
                     + " (iteration 0 includes the cold start)")
    dev = result.counters.get("ssd_summary")
    if dev:
        waf = dev["waf"]
        waf_txt = "n/a (no writes)" if waf != waf else f"{waf:.3f}"
        lines.append(f"  SSD (whole run)  WAF {waf_txt}, {dev['gc_count']:,} GCs, GC time {dev['gc_time_s']:.3f} s, "
                     f"erase-count spread {dev['erase_spread']}; throttled {dev['throttled_ticks']:,} transfer slots")
        u = result.counters["link_utilisation"]
        lines.append(f"  PCIe link        utilisation to GPU {100 * u['to_device']:.1f} %, "
                     f"from GPU {100 * u['from_device']:.1f} %")
    lines.append(f"  run              {run_txt}")
    return "\n".join(lines)
