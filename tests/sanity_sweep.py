"""Sanity sweeps: more of a resource must not make a run slower.

For each policy and each Fig. 11 trace, one resource at a time is swept over a range
(every other parameter at the preset's value): GPU memory, host memory, SSD bandwidth,
link bandwidth and the GPU model (A100-40GB -> H100-SXM -> B200: faster kernels, more
memory, a faster link, all from the model's table row).  A *violation* is a step from one point to the next (more of the
resource) after which the run is slower by more than ``TOLERANCE`` (or fails where the
smaller point ran).  Each violation is either fixed in the model or listed, with its
cause, in ``tests/sanity_allowlist.toml``.

``python tests/sanity_sweep.py [--preset P] [--jobs N] [--json FILE]`` runs the full grid
and prints the table of violations per policy and resource (the issue's before/after
table: ``--preset g10-artifact`` is the behaviour of the default before the exploration
preset existed).

``--gpus A100-40GB,H100-PCIe,H100-SXM`` (or ``all``) sweeps host and GPU memory on each of
these GPU models instead (:func:`gpu_resources`: a resource ``gpu_memory@MODEL`` and
``host_memory@MODEL`` per model, the model's kernel times, link and memory from its table row,
one key moved at a time around them).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALLOWLIST = HERE / "sanity_allowlist.toml"

TOLERANCE = 1e-3          # relative: a step slower by more than 0.1 % is a violation

FIG11_TRACES = ("bert_base-b256", "vit-b1280", "inceptionv3-b1536", "resnet152-b1280", "senet154-b1024")
POLICIES = ("base-uvm", "belady", "deepum", "g10", "flashneuron", "g10-gds", "g10-host", "ideal")

# each resource: the config key and its points, increasing (the preset's value, one below and
# one above: GPU memory above 40 GiB only, as the traces' largest kernels need most of it)
RESOURCES = {
    "gpu_memory": ("gpu.memory_GiB", (40.0, 48.0, 80.0)),
    "host_memory": ("host.memory_GiB", (0.0, 128.0, 256.0)),
    "ssd_bandwidth": ("ssd.bandwidth_GBps", (0.8, 3.2, 6.4)),
    "link_bandwidth": ("link.bandwidth_GBps", (8.0, 15.754, 31.5)),
    # a faster GPU (g10core.gpus): every kernel retargeted, and the model's memory and link
    "gpu_model": ("gpu.model", ("A100-40GB", "H100-SXM", "B200")),
}

# the fast subset of the default test suite: BERT-256 under every policy
FAST_TRACES = ("bert_base-b256",)
FAST_RESOURCES = RESOURCES

# host and GPU memory on each GPU model (issue 43): GPU memory at 0.8, 1, 1.2 and 1.6 x the model's,
# host memory from none to twice the preset's, with the steps where G10's plan once switched
# between host and SSD offloads (ResNet152-b1280 on H100-PCIe, 20 -> 24 GiB; docs/physics.md)
GPU_MEMORY_FACTORS = (0.8, 1.0, 1.2, 1.6)
GPU_HOST_MEMORY_GiB = (0.0, 16.0, 24.0, 32.0, 48.0, 64.0, 128.0, 256.0)
# the fast test's slice: BERT-256 under G10's three policies on a GPU model other than the A100
GPU_FAST = {"traces": ("bert_base-b256",), "policies": ("g10", "g10-gds", "g10-host"), "gpus": ("H100-PCIe",)}


def gpu_resources(models, host_points=GPU_HOST_MEMORY_GiB) -> dict:
    """``{"gpu_memory@M": ("gpu.memory_GiB", points, ("gpu.model=M",)), "host_memory@M": ...}``
    for each GPU model ``M`` (``g10core.gpus``): the resource's key and points, and the override
    that selects the model (its kernel times, link and memory; the point then replaces one key)."""
    from g10core.gpus import gpu_model

    out = {}
    for m in models:
        mem = gpu_model(m).memory_GiB
        out[f"gpu_memory@{m}"] = ("gpu.memory_GiB", tuple(float(round(f * mem)) for f in GPU_MEMORY_FACTORS),
                                  (f"gpu.model={m}",))
        out[f"host_memory@{m}"] = ("host.memory_GiB", tuple(host_points), (f"gpu.model={m}",))
    return out


def known_resources() -> dict:
    """Every resource an allow-list entry may name: the default grid's, the wide grid's and the
    per-GPU-model memory axes of every GPU model."""
    from g10core.gpus import GPUS

    return {**RESOURCES, **gpu_resources(tuple(GPUS))}


def axis(spec) -> str:
    """The index key of a resource: its config key, with the overrides that select its GPU model."""
    key, _, *fixed = spec
    return key if not fixed or not fixed[0] else f"{key}@{','.join(fixed[0])}"

# the wide grid (issue 33), under default and detailed: the link 4-256 GB/s, the SSD 0.4-64 GB/s,
# GPU memory 16-192 GiB (below a trace's largest kernel a run is refused, which is no violation),
# host memory 0-1024 GiB
WIDE_RESOURCES = {
    "gpu_memory": ("gpu.memory_GiB", (16.0, 24.0, 32.0, 40.0, 44.0, 48.0, 56.0, 64.0, 80.0, 128.0, 192.0)),
    "host_memory": ("host.memory_GiB", (0.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)),
    "ssd_bandwidth": ("ssd.bandwidth_GBps", (0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 64.0)),
    "link_bandwidth": ("link.bandwidth_GBps", (4.0, 8.0, 15.754, 32.0, 64.0, 128.0, 256.0)),
}
WIDE_PRESETS = ("default", "detailed")
# tensor-level policies are refused under detailed (they do not run through its devices)
DETAILED_POLICIES = ("base-uvm", "belady", "deepum", "g10", "ideal")
# the wide grid's traces: two CNNs, two transformers and an LLM, each small enough that a run takes a
# second or less (the full grid under both presets: 1,705 runs, about 90 minutes of run time, 45 minutes
# of wall time with two jobs on two free cores)
WIDE_TRACES = ("bert_base-b256", "resnet152-b256", "vit-b256", "inceptionv3-b512", "gpt2-small-s1024-b5")
# ideal moves nothing (no resource can slow it): left out of the wide grid
WIDE_POLICIES = {
    "default": ("g10", "base-uvm", "deepum", "belady", "g10-gds", "g10-host", "flashneuron"),
    "detailed": ("g10", "base-uvm", "deepum", "belady"),
}
# the fast test's slice of the wide grid: the steps where the slot model's quotas once rounded (the
# link over its whole range, an SSD-heavy trace) and the SSD range, under default, for the two policies
# whose traffic is all slot quotas
WIDE_FAST = {"traces": ("resnet152-b256",), "policies": ("g10", "base-uvm"),
             "resources": {k: WIDE_RESOURCES[k] for k in ("link_bandwidth", "ssd_bandwidth")}}


@dataclass(frozen=True)
class Violation:
    preset: str
    trace: str
    policy: str
    resource: str
    key: str
    lower: float | str      # the smaller value of the resource (gpu.model: the slower GPU)
    higher: float | str     # the larger one, at which the run is slower
    time_lower_s: float
    time_higher_s: float

    @property
    def entry(self) -> tuple:
        return (self.preset, self.trace, self.policy, self.resource, self.lower, self.higher)

    def __str__(self) -> str:
        return (f"[{self.preset}] {self.trace} {self.policy}: {self.key} {_val(self.lower)} -> {_val(self.higher)} makes it slower "
                f"({_fmt(self.time_lower_s)} -> {_fmt(self.time_higher_s)})")


def _val(v) -> str:
    return v if isinstance(v, str) else f"{v:g}"


def _fmt(t: float) -> str:
    return "fails" if not math.isfinite(t) else f"{t:.4f} s"


def tasks(preset_name: str, traces=FIG11_TRACES, policies=POLICIES, resources=RESOURCES, traces_dir=None):
    """(RunTask list, index {(trace, policy, key, value): task position})."""
    from g10core.config import resolve
    from g10core.experiments.reproduce import RunTask, default_traces_dir, trace_file

    traces_dir = default_traces_dir() if traces_dir is None else Path(traces_dir)
    out, index = [], {}
    for name in traces:
        model, _, batch = name.rpartition("-b")
        path = str(trace_file(traces_dir, model, int(batch)))
        for policy in policies:
            for spec in resources.values():
                key, values, *fixed = spec
                ax = axis(spec)
                for v in values:
                    cfg = resolve(preset_name, None, [*(fixed[0] if fixed else ()),
                                                      f"{key}={_val(v) if isinstance(v, str) else repr(v)}"])
                    if refused(cfg):
                        index[(name, policy, ax, v)] = None     # no slower run: a refusal (exit 2)
                        continue
                    if (name, policy, cfg.hash) in index:
                        index[(name, policy, ax, v)] = index[(name, policy, cfg.hash)]
                        continue
                    index[(name, policy, cfg.hash)] = index[(name, policy, ax, v)] = len(out)
                    out.append(RunTask(model, int(batch), policy, path, cfg))
    return out, index


def refused(cfg) -> str | None:
    """Why the simulator refuses ``cfg`` before running (the slot model's quotas: at link.bandwidth_GBps
    = 256 a slot carries int(50 * 3.2 / 256) = 0 SSD pages), or None."""
    from g10core.errors import ConfigError
    from g10core.simulator import check_constants
    from g10core.uvm.slots import ArtifactConstants

    try:
        check_constants(cfg, ArtifactConstants.from_config(cfg))
    except ConfigError as exc:
        return str(exc)
    return None


def violations(rows, index, traces=FIG11_TRACES, policies=POLICIES, resources=RESOURCES,
               preset_name="default") -> list[Violation]:
    found = []
    for name in traces:
        for policy in policies:
            for resource, spec in resources.items():
                key, values, ax = spec[0], spec[1], axis(spec)
                ran = [v for v in values if index[(name, policy, ax, v)] is not None]
                times = [rows[index[(name, policy, ax, v)]]["time_s"] for v in ran]
                for (a, ta), (b, tb) in zip(zip(ran, times), zip(ran[1:], times[1:])):
                    slower = (math.isfinite(ta) and not math.isfinite(tb)) or \
                        (math.isfinite(tb) and tb > ta * (1 + TOLERANCE))
                    if slower:
                        found.append(Violation(preset_name, name, policy, resource, key, a, b, ta, tb))
    return found


def sweep(preset_name: str, *, traces=FIG11_TRACES, policies=POLICIES, resources=RESOURCES, jobs=1,
          progress=False, traces_dir=None):
    """Run the grid; returns (violations, rows, index)."""
    import warnings

    try:
        from g10core.errors import G10Warning
    except ImportError:            # before the exploration preset
        G10Warning = UserWarning
    from g10core.experiments.reproduce import run_tasks

    ts, index = tasks(preset_name, traces, policies, resources, traces_dir)
    warnings.simplefilter("ignore", G10Warning)   # a sweep sets host memory for SSD-only policies
    rows = run_tasks(ts, jobs=jobs, progress=progress, desc=f"sanity {preset_name}")
    return violations(rows, index, traces, policies, resources, preset_name), rows, index


def load_allowlist(path=ALLOWLIST) -> dict[tuple, str]:
    """``{(preset, trace, policy, resource, lower, higher): cause}`` of the documented allow-list
    (an entry without ``preset`` is of ``default``)."""
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    out = {}
    known = known_resources()
    for i, e in enumerate(data.get("allow", [])):
        for k in ("trace", "policy", "resource", "lower", "higher", "cause"):
            if k not in e:
                raise ValueError(f"{path}: allow[{i}] lacks {k}")
        if e["resource"] not in known:
            raise ValueError(f"{path}: allow[{i}].resource = {e['resource']!r}; known: {', '.join(RESOURCES)} "
                             "and gpu_memory@MODEL, host_memory@MODEL")
        if e.get("preset", "default") not in WIDE_PRESETS:
            raise ValueError(f"{path}: allow[{i}].preset = {e['preset']!r}; known: {', '.join(WIDE_PRESETS)}")
        if not str(e["cause"]).strip():
            raise ValueError(f"{path}: allow[{i}] has an empty cause")
        num = not isinstance(known[e["resource"]][1][0], str)
        lower, higher = (float(e["lower"]), float(e["higher"])) if num else (e["lower"], e["higher"])
        out[(e.get("preset", "default"), e["trace"], e["policy"], e["resource"], lower, higher)] = e["cause"]
    return out


def table(found: list[Violation], policies=POLICIES, resources=RESOURCES) -> dict:
    """{policy: {resource: count}}"""
    t = {p: {r: 0 for r in resources} for p in policies}
    for v in found:
        t[v.policy][v.resource] += 1
    return t


def step_table(found: list[Violation], rows, index, traces, policies, resources, preset_name: str,
               allowed: dict | None = None) -> list[dict]:
    """The sanity-sweep table, one row per (trace, resource): steps checked (pairs of neighbouring
    points, more of the resource, where the smaller ran; summed over the policies), steps slower (by
    more than ``TOLERANCE``, or failing), steps slower by any amount, the largest slowdown (relative,
    %, with the step) and the causes of the slower steps (the allow-list's, or "UNEXPLAINED")."""
    allowed = {} if allowed is None else allowed
    out = []
    for name in traces:
        for resource, spec in resources.items():
            values, ax = spec[1], axis(spec)
            checked = tiny = 0
            worst, worst_at = 0.0, ""
            for policy in policies:
                ran = [v for v in values if index[(name, policy, ax, v)] is not None]
                times = [rows[index[(name, policy, ax, v)]]["time_s"] for v in ran]
                for (a, ta), (b, tb) in zip(zip(ran, times), zip(ran[1:], times[1:])):
                    if not math.isfinite(ta):
                        continue
                    checked += 1
                    rel = math.inf if not math.isfinite(tb) else tb / ta - 1.0
                    if rel > 1e-12:
                        tiny += 1
                    if rel > worst:
                        worst, worst_at = rel, f"{policy} {_val(a)}->{_val(b)}"
            slow = [v for v in found if v.trace == name and v.resource == resource and v.preset == preset_name]
            causes = sorted({v.policy + ": " + (allowed[v.entry].split(":")[0].split(".")[0][:60] if v.entry in allowed
                                                else "UNEXPLAINED") for v in slow})
            out.append({"trace": name, "resource": resource, "preset": preset_name, "checked": checked,
                        "slower": len(slow), "slower_any": tiny,
                        "largest_pct": (100.0 * worst if math.isfinite(worst) else math.inf),
                        "largest_at": worst_at, "causes": causes})
    return out


def print_step_table(trows: list[dict]) -> None:
    wr = max([16] + [len(r["resource"]) + 2 for r in trows])
    print(f"{'trace':<22}{'resource':<{wr}}{'preset':<10}{'checked':>8}{'slower':>8}{'any':>6}  largest slowdown")
    for r in trows:
        big = "-" if not r["largest_at"] else (
            "fails" if not math.isfinite(r["largest_pct"]) else f"{r['largest_pct']:+.3f} % ({r['largest_at']})")
        print(f"{r['trace']:<22}{r['resource']:<{wr}}{r['preset']:<10}{r['checked']:>8}{r['slower']:>8}"
              f"{r['slower_any']:>6}  {big}")
        for c in r["causes"]:
            print(f"{'':<30}{c}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", help="the preset (default: default; --wide: default and detailed)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", dest="json_path")
    ap.add_argument("--fast", action="store_true", help="only the fast subset")
    ap.add_argument("--wide", action="store_true",
                    help="the wide grid (WIDE_RESOURCES on WIDE_TRACES under WIDE_PRESETS)")
    ap.add_argument("--traces", help="comma-separated trace names (default: the Fig. 11 five, --fast: BERT-256, "
                                     "--wide: WIDE_TRACES)")
    ap.add_argument("--policies", help="comma-separated policies (default: every one the preset runs)")
    ap.add_argument("--gpus", help="comma-separated GPU models, or 'all': sweep host and GPU memory on each "
                                   "(gpu_resources) instead of the default resources")
    args = ap.parse_args(argv)
    traces, resources = (FAST_TRACES, FAST_RESOURCES) if args.fast else (FIG11_TRACES, RESOURCES)
    if args.wide:
        resources, traces = WIDE_RESOURCES, (FAST_TRACES if args.fast else WIDE_TRACES)
    if args.gpus:
        from g10core.gpus import GPUS

        resources = gpu_resources(tuple(GPUS) if args.gpus == "all" else tuple(args.gpus.split(",")))
    if args.traces:
        traces = tuple(args.traces.split(","))
    presets = [args.preset] if args.preset else (list(WIDE_PRESETS) if args.wide else ["default"])
    allowed = load_allowlist() if ALLOWLIST.exists() else {}
    report, trows_all, unexplained = [], [], 0
    for preset in presets:
        if args.policies:
            pols = tuple(args.policies.split(","))
        elif args.wide:
            pols = WIDE_POLICIES[preset]
        else:
            pols = DETAILED_POLICIES if preset == "detailed" else POLICIES
        found, rows, index = sweep(preset, traces=traces, policies=pols, resources=resources, jobs=args.jobs,
                                   progress=True)
        t = table(found, policies=pols, resources=resources)
        print(f"violations per policy and resource, preset {preset} ({len(rows)} runs)")
        w = {r: max(16, len(r) + 2) for r in resources}
        print(f"{'policy':<12}" + "".join(f"{r:>{w[r]}}" for r in resources) + f"{'total':>8}")
        for p, per in t.items():
            print(f"{p:<12}" + "".join(f"{per[r]:>{w[r]}}" for r in resources) + f"{sum(per.values()):>8}")
        for v in found:
            print(("  allowed  " if v.entry in allowed else "  VIOLATION ") + str(v))
            unexplained += v.entry not in allowed
        trows = step_table(found, rows, index, traces, pols, resources, preset, allowed)
        trows_all += trows
        report.append({"preset": preset, "table": t, "steps": trows,
                       "violations": [v.__dict__ for v in found],
                       "rows": [{k: r[k] for k in ("model", "batch", "policy", "time_s", "failed", "config_hash",
                                                   "wall_s") if k in r} for r in rows]})
    print()
    print_step_table(trows_all)
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(report[0] if len(report) == 1 else report, indent=1,
                                                   default=str))
    # exit 1 on a step that the allow-list does not explain (a slower step without its measured cause)
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
