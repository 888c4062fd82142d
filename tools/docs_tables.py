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

The results tables quote simulation results; their numbers come from a stored file of results,
tests/data/docs_results.json, which ``--results`` re-measures through the experiments modules
(g10core.experiments.llm, g10core.experiments.reproduce) and the simulator:

    python tools/docs_tables.py --results           # re-run every results table's runs, rewrite the
                                                    # stored results and every table (3-5 minutes)
    python tools/docs_tables.py --results --check   # re-run them; exit 1 where a stored result moved

``llm-policies`` (docs/guide/post_g10.md) and ``llm-fig11-policies`` (docs/guide/capture.md): every
policy on every shipped LLM trace (``g10sim reproduce llm``); ``fig11-gpus`` (docs/gpus.md): the
Fig. 11 traces' ideal and G10 times on three GPUs; ``g10-on-uvm`` (docs/guide/policies.md): G10-GDS
and G10-Host under ``default`` with their demand evictions and host memory; ``fig11-twins``
(docs/reproduction.md): Fig. 11 on the physical twins; ``zero-llm`` and ``zero-closed-form``
(docs/guide/zero.md): ZeRO-Offload and ZeRO-Infinity on the LLM traces, and their closed form beside
the simulation; ``uvm-oversub`` (docs/guide/uvm_oversub.md): the oversubscription micro-benchmark
(``g10sim uvm-micro oversub``); ``data-parallel`` (docs/guide/machines.md): data-parallel LLaMA-7B
on a DGX A100 (``g10sim machine train``); ``ssd-plans`` (docs/guide/planner.md): the least SSD bandwidth
for G10 to reach half of ideal on llama-7b-s2048-b1 from five GPUs (``g10sim plan``); ``eviction-rules``
(docs/guide/eviction.md): the shipped example eviction rule beside Base UVM's and Belady's;
``inference-flexgen``, ``inference-zero`` and ``inference-deepnvme`` (docs/guide/inference.md): the
published inference tables beside ours (``g10sim reproduce inference``); ``inference-page`` (same
page): Base UVM, DeepUM+ and G10 on OPT-6.7B inference.
tests/test_docs_tables.py renders every
table from the stored results, re-runs a few cheap runs of each (:data:`CHEAP`) and, marked slow,
re-runs them all.
"""
from __future__ import annotations

import argparse
import json
import math
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


# ============================================================================
# Results tables: they quote simulation results, stored in RESULTS and re-measured by --results
# ============================================================================

RESULTS = ROOT / "tests" / "data" / "docs_results.json"
# the four configurations of docs/gpus.md's Fig. 11 table: the preset's machine, then --gpu NAME
FIG11_GPUS = ("", "A100-40GB", "H100-SXM", "B200")
# the workloads docs/guide/policies.md times G10-GDS and G10-Host on (the ones whose plans overfill 40 GiB)
G10_ON_UVM_WORKLOADS = (("inceptionv3", 1536), ("resnet152", 1280), ("senet154", 1024))
# a few cheap runs of each stored result set (a second or two each on two cores), which the fast
# suite re-runs to see that the stored results are still what the simulator gives
CHEAP = {
    "llm": ("gpt2-small-s1024-b5 g10", "gpt2-small-s1024-b5 zero-offload", "gpt2-medium-s1024-bf16-b4 deepum",
            "llama-1b-s2048-bf16-b1 capuchin", "gpt2-small-s1024-b16 teraio", "gpt2-small-s1024-b16 belady",
            "llama-7b-s2048-bf16-b1 flashneuron",                      # fails
            "llama-13b-s1024-bf16-b4 ideal", "llama-13b-s1024-bf16-b4 zero-offload"),   # a named machine
    "fig11-gpus": ("bert_base-b256 g10 H100-SXM", "vit-b1280 g10 preset", "vit-b1280 ideal B200",
                   "inceptionv3-b1536 g10 A100-40GB"),
    "g10-on-uvm": ("inceptionv3-b1536 g10-host", "resnet152-b1280 g10-gds"),
    "fig11-twins": ("bert_base-twin-b256 g10", "bert_base-twin-b256 ideal", "vit-twin-b1280 deepum",
                    "senet154-twin-b1024 flashneuron"),
    "zero-llm": ("gpt2-small-s1024-b5 zero-infinity host", "llama-7b-s2048-bf16-b1 zero-infinity nvme",
                 "llama-13b-s2048-bf16-b1 zero-offload"),                    # fails (host memory)
    "zero-closed-form": ("gpt2-small-s1024-b5 zero-infinity nvme",),
    "uvm-oversub": ("A100-40GB streaming page_fault x1.5", "V100-like random_warp prefetch x2",
                    "A100-40GB block_streaming zero_copy x1"),
    "data-parallel": ("teraio 1",),
    "ssd-plans": ("gpu.model=A100-80GB @ 64",),         # one run of a plan (a whole plan takes 15-20 s)
    "eviction-rules": ("bert_base-b256 base-uvm largest_tensor_first.py:score",),
    "inference-page": ("base-uvm",),
    "inference": ("deepnvme | ZeRO-Inference, 4 x Gen4 NVMe (GDS) | llama-3-70b",
                  "zero-inference-a6000 | ZeRO-Inference (int4 weights, KV offload) | opt-30b"),
}


def _seconds(x):
    """A run's seconds as stored: None for a run that failed (its time is infinite)."""
    return None if x is None or math.isinf(x) else float(x)


def _run_id(model, batch, policy, *rest) -> str:
    return " ".join([f"{model}-b{int(batch)}", policy, *rest])


def _split_trace(name: str) -> tuple[str, int]:
    model, _, batch = name.rpartition("-b")
    return model, int(batch)


def measure_llm(ids=None, jobs=None) -> list[dict]:
    """``g10sim reproduce llm``'s runs (every policy on every shipped LLM trace; ``ids``: only those)."""
    from g10core.capture.llm import LLM_WORKLOADS
    from g10core.experiments.llm import reproduce_llm

    if ids is None:
        rows = reproduce_llm(jobs=jobs, progress=False)
    else:
        rows = []
        for run in ids:
            trace, policy = run.split()
            workloads = [w for w in LLM_WORKLOADS if w.file_name == f"{trace}.h5"]
            rows += reproduce_llm(jobs=1, progress=False, workloads=workloads, policies=[policy])
    return [{"id": _run_id(r["model"], r["batch"], r["policy"]), "model": r["model"], "batch": r["batch"],
             "policy": r["policy"], "time_s": _seconds(r["time_s"]),
             "normalized_performance": r["normalized_performance"], "failed": r["failed"],
             "refused": r["refused"], "failure_reason": r["failure_reason"],
             "memory_ratio_percent": r["memory_ratio_percent"], "machine": r["machine"]} for r in rows]


def _fig11_rows(rows, *extra) -> list[dict]:
    return [{"id": _run_id(r["model"], r["batch"], r["policy"], *extra), "model": r["model"], "batch": r["batch"],
             "policy": r["policy"], "time_s": _seconds(r["time_s"]), "failed": r["failed"]} for r in rows]


def measure_fig11_gpus(ids=None, jobs=None) -> list[dict]:
    """The Fig. 11 traces' ideal and G10 times under ``default`` on the preset's machine and three GPUs."""
    from g10core.experiments.published import FIG11_WORKLOADS
    from g10core.experiments.reproduce import reproduce_fig11
    from g10core.simulator import resolve_config

    wanted = None if ids is None else [run.split() for run in ids]
    out = []
    for gpu in FIG11_GPUS:
        column = gpu or "preset"
        cfg = resolve_config("default", None, [f"gpu.model={gpu}"] if gpu else [])
        if wanted is None:
            out += _fig11_rows(reproduce_fig11(config=cfg, jobs=jobs, progress=False, workloads=FIG11_WORKLOADS,
                                               policies=("ideal", "g10")), column)
            continue
        for trace, policy, g in wanted:
            if g == column:
                out += _fig11_rows(reproduce_fig11(config=cfg, jobs=1, progress=False,
                                                   workloads=[_split_trace(trace)], policies=[policy]), column)
    return out


def measure_g10_on_uvm(ids=None, jobs=None) -> list[dict]:
    """G10-GDS and G10-Host under ``default`` on the three large CNNs, with their demand evictions and
    peak host memory (the result's counters)."""
    from g10core.simulator import Simulator, resolve_config
    from g10core.workload.tracestore import find_trace

    sim = Simulator(resolve_config("default", None, []))
    if ids is None:
        ids = [_run_id(m, b, p) for m, b in G10_ON_UVM_WORKLOADS for p in ("g10-gds", "g10-host")]
    out = []
    for run in ids:
        trace, policy = run.split()
        r = sim.run(find_trace(trace), policy)
        model, batch = _split_trace(trace)
        out.append({"id": run, "model": model, "batch": batch, "policy": policy,
                    "time_s": None if r.failed else float(r.iteration_time_s), "failed": bool(r.failed),
                    "demand_evicted_bytes": int(r.counters["demand_evicted_bytes"]),
                    "peak_host_bytes": int(r.counters["peak_host_bytes"])})
    return out


# ZeRO's host-memory variant: zero-infinity with its state in host memory instead of on NVMe
ZERO_DEVICES = {"nvme": [], "host": ["scheduler.zero_infinity_device=cpu"]}
ZERO_RUNS = (("zero-offload", ""), ("zero-infinity", "nvme"), ("zero-infinity", "host"))
# the runs docs/guide/zero.md puts beside the closed form (trace, policy, device)
ZERO_CLOSED_FORM_RUNS = (("gpt2-small-s1024-b5", "zero-offload", ""), ("gpt2-small-s1024-b5", "zero-infinity", "nvme"),
                         ("llama-1b-s2048-b2", "zero-infinity", "nvme"), ("llama-7b-s2048-b1", "zero-infinity", "nvme"),
                         ("llama-7b-s2048-b1", "zero-infinity", "host"))


def _zero_run(run: str):
    """One ZeRO run by id (``TRACE POLICY [DEVICE]``) under ``default`` on its workload's machine:
    (trace, result)."""
    from g10core.capture.llm import LLM_WORKLOADS
    from g10core.experiments.llm import machine_config
    from g10core.simulator import Simulator, resolve_config
    from g10core.workload.tracestore import find_trace

    trace, policy, *device = run.split()
    machine = next(w.machine for w in LLM_WORKLOADS if w.file_name == f"{trace}.h5")
    cfg = machine_config(resolve_config("default", None, ZERO_DEVICES[device[0]] if device else []), machine)
    return trace, cfg, Simulator(cfg).run(find_trace(trace), policy)


def measure_zero_llm(ids=None, jobs=None) -> list[dict]:
    """ZeRO-Offload and ZeRO-Infinity (NVMe, host memory) on every shipped LLM trace, with peak GPU memory."""
    if ids is None:
        ids = planned_runs("zero-llm")
    out = []
    for run in ids:
        _, _, r = _zero_run(run)
        out.append({"id": run, "time_s": None if r.failed else float(r.iteration_time_s),
                    "normalized_performance": float(r.normalized_performance), "failed": bool(r.failed),
                    "failure_reason": r.failure_reason, "peak_gpu_bytes": int(r.counters["peak_gpu_bytes"])})
    return out


def measure_zero_closed_form(ids=None, jobs=None) -> list[dict]:
    """ZeRO's traffic, recompute and CPU Adam time: the closed form
    (``g10core.policies.zero_offload.closed_form``) beside the simulation."""
    from g10core.policies.zero_offload import closed_form
    from g10core.workload.trace import read_trace
    from g10core.workload.tracestore import find_trace

    if ids is None:
        ids = planned_runs("zero-closed-form")
    out = []
    for run in ids:
        trace, cfg, r = _zero_run(run)
        closed = closed_form(read_trace(find_trace(trace)), cfg, run.split()[1])
        c = r.counters
        out.append({"id": run, "failed": bool(r.failed), "n_parameters": int(closed["n_parameters"]),
                    "checkpoint_offloaded_bytes": int(closed["checkpoint_offloaded_bytes"]),
                    "closed_traffic_bytes": {k: int(v) for k, v in closed["traffic_bytes"].items()},
                    "simulated_traffic_bytes": {k: int(v) for k, v in c["traffic_bytes"].items()},
                    "closed_recompute_s": float(closed["recompute_ideal_s"]),
                    "simulated_recompute_s": float(c["recompute"]["ideal_s"]),
                    "closed_cpu_adam_s": float(closed["cpu_adam_s"]), "simulated_cpu_busy_s": float(c["cpu_busy_s"])})
    return out


def measure_uvm_oversub(ids=None, jobs=None) -> list[dict]:
    """``g10sim uvm-micro oversub`` (scale 256, 3 loops): the steady read bandwidth of every cell."""
    from g10core.experiments.uvmmicro import oversub

    out = []
    for run in planned_runs("uvm-oversub") if ids is None else ids:
        gpu, pattern, mode, factor = run.split()
        r = oversub(gpu, pattern, mode, float(factor[1:]))
        out.append({"id": run, "bandwidth_GBps": float(r["bandwidth_GBps"])})
    return out


# docs/guide/machines.md: data-parallel LLaMA-7B on a DGX A100 (trace, machine, policies, GPU counts)
DATA_PARALLEL = ("llama-7b-s2048-bf16-b1", "dgx-a100", ("zero-infinity", "teraio", "g10-gds", "g10", "base-uvm"),
                 (1, 2, 4, 8))
DATA_PARALLEL_ROUNDS = 32       # (--rounds 32: G10, which replans at every rate, needs up to 23)


def measure_data_parallel(ids=None, jobs=None) -> list[dict]:
    """``g10sim machine train TRACE --machine dgx-a100 --policy P --gpus N`` (``default``): the slowest
    rank's times and the busiest hop."""
    from g10core.machine import load
    from g10core.machine.training import data_parallel

    trace, name, _, _ = DATA_PARALLEL
    machine = load(name)
    out = []
    for run in planned_runs("data-parallel") if ids is None else ids:
        policy, gpus = run.split()
        r = data_parallel(trace, policy, machine, int(gpus), preset="default", rounds=DATA_PARALLEL_ROUNDS).to_dict()
        slowest = max(r["per_gpu"], key=lambda g: g["iteration_s"])
        hop = r["hops"][r["busiest_hop"]]
        kind = r["busiest_hop"].partition(" ")[2]        # "flash" of "drive7 flash"
        same_kind = [h for n, h in r["hops"].items() if n.partition(" ")[2] == kind]
        out.append({"id": run, "failed": r["failed"], "iteration_s": r["iteration_s"],
                    "rank_s": slowest["rank_s"], "allreduce_s": slowest["allreduce_s"],
                    "allreduce_exposed_s": slowest["allreduce_exposed_s"],
                    "busiest_hop": r["busiest_hop"], "busiest_hop_bytes": hop["bytes"],
                    "busiest_hop_GBps": hop["bandwidth_GBps"],
                    "every_hop_of_its_kind_alike": len(same_kind) > 1 and all(h["bytes"] == hop["bytes"]
                                                                              for h in same_kind),
                    "rounds": r["rounds"], "converged": r["converged"]})
    return out


# docs/guide/planner.md: the least SSD bandwidth for G10 to reach half of ideal on llama-7b-s2048-b1,
# per GPU (the configuration each plan starts from: --set items, or --gpu NAME as gpu.model)
SSD_PLAN = ("llama-7b-s2048-b1", "g10", 0.5, "ssd.bandwidth_GBps", (0.1, 64.0))
SSD_PLAN_GPUS = ("gpu.memory_GiB=40", "gpu.memory_GiB=72", "gpu.memory_GiB=80", "gpu.model=A100-40GB",
                 "gpu.model=A100-80GB")


def measure_ssd_plans(ids=None, jobs=None) -> list[dict]:
    """``g10sim plan llama-7b-s2048-b1 --policy g10 --target 0.5 --vary ssd.bandwidth_GBps --range 0.1:64``
    from each GPU: a row per plan (its answer) and a row per run of it (``GPU @ value``).  ``ids``
    may name only runs (each re-run alone, as ``g10sim run`` with the two keys set)."""
    from g10core.experiments.plan import plan
    from g10core.simulator import Simulator, resolve_config
    from g10core.workload.tracestore import find_trace

    trace, policy, target, key, rng = SSD_PLAN
    out = []
    if ids is not None:
        for run in ids:
            start, _, value = run.partition(" @ ")
            r = Simulator(resolve_config("default", None, [start, f"{key}={value}"])).run(find_trace(trace), policy)
            out.append({"id": run, "fraction": float(r.normalized_performance)})
        return out
    for start in SSD_PLAN_GPUS:
        gpu = start.partition("=")[2] if start.startswith("gpu.model=") else None
        r = plan(trace, policy, target, {key: rng}, sets=[] if gpu else [start], gpu=gpu, jobs=1)
        out.append({"id": start, "minimum": r.minimum, "lo_is_floor": r.lo_is_floor, "met_at_lo": r.met_at_lo,
                    "bracketed": r.bracketed, "runs": len(r.runs),
                    "best_fraction": max(x["fraction"] for x in r.runs),
                    "fraction_at_minimum": next((x["fraction"] for x in r.runs if x["value"] == r.minimum), None)})
        out += [{"id": f"{start} @ {x['value']:g}", "fraction": float(x["fraction"])} for x in r.runs]
    return out


# docs/guide/eviction.md: a user's eviction rule that offers only tensors the running kernel does not use,
# beside Base UVM's own rule and Belady's (trace, policy, --eviction or "")
EVICTION_RULES = ("largest_tensor_first.py:score", "")
EVICTION_TRACES = ("bert_base-b256", "vit-b1280")


def measure_eviction_rules(ids=None, jobs=None) -> list[dict]:
    """``g10sim run TRACE --policy P [--eviction RULE]`` (``default``): seconds per iteration."""
    from g10core.simulator import Simulator, resolve_config
    from g10core.workload.tracestore import find_trace

    examples = ROOT / "src" / "g10core" / "examples"
    sim = Simulator(resolve_config("default", None, []))
    out = []
    for run in planned_runs("eviction-rules") if ids is None else ids:
        trace, policy, *rule = run.split()
        eviction = f"{examples / rule[0].partition(':')[0]}:{rule[0].partition(':')[2]}" if rule else None
        r = sim.run(find_trace(trace), policy, eviction=eviction)
        out.append({"id": run, "failed": bool(r.failed), "time_s": None if r.failed else float(r.iteration_time_s)})
    return out


def measure_fig11_twins(ids=None, jobs=None) -> list[dict]:
    """``g10sim reproduce fig11 --workloads physical``: every Fig. 11 policy on the physical twins (``default``)."""
    from g10core.capture.twins import TWIN_WORKLOADS
    from g10core.experiments.reproduce import reproduce_fig11
    from g10core.simulator import resolve_config

    cfg = resolve_config("default", None, [])
    if ids is None:
        return _fig11_rows(reproduce_fig11(config=cfg, jobs=jobs, progress=False, workloads=TWIN_WORKLOADS))
    out = []
    for run in ids:
        trace, policy = run.split()
        out += _fig11_rows(reproduce_fig11(config=cfg, jobs=1, progress=False, workloads=[_split_trace(trace)],
                                           policies=[policy]))
    return out


def planned_runs(name: str) -> list[str]:
    """The ids of every run of result set ``name`` as the code defines it now (workloads, policies,
    GPUs), without running anything: the stored results must hold exactly these."""
    from g10core.capture.llm import LLM_WORKLOADS
    from g10core.capture.twins import TWIN_WORKLOADS
    from g10core.experiments.llm import llm_policies
    from g10core.experiments.published import FIG11_POLICIES, FIG11_WORKLOADS

    if name == "llm":
        return [_run_id(w.model, w.batch, p) for w in LLM_WORKLOADS for p in llm_policies()]
    if name == "fig11-gpus":
        return [_run_id(m, b, p, g or "preset") for g in FIG11_GPUS for m, b in FIG11_WORKLOADS for p in ("ideal", "g10")]
    if name == "g10-on-uvm":
        return [_run_id(m, b, p) for m, b in G10_ON_UVM_WORKLOADS for p in ("g10-gds", "g10-host")]
    if name == "fig11-twins":
        return [_run_id(m, b, p) for m, b in TWIN_WORKLOADS for p in FIG11_POLICIES]
    if name == "zero-llm":
        return [" ".join(filter(None, (w.file_name[:-3], p, d))) for w in LLM_WORKLOADS for p, d in ZERO_RUNS]
    if name == "zero-closed-form":
        return [" ".join(filter(None, run)) for run in ZERO_CLOSED_FORM_RUNS]
    if name == "uvm-oversub":
        from g10core.experiments.uvmmicro import OVERSUB_FACTORS, OVERSUB_GPUS, OVERSUB_MODES, OVERSUB_PATTERNS

        return [f"{g} {p} {m} x{f:g}" for g in OVERSUB_GPUS for p in OVERSUB_PATTERNS for m in OVERSUB_MODES
                for f in OVERSUB_FACTORS]
    if name == "data-parallel":
        return [f"{p} {n}" for p in DATA_PARALLEL[2] for n in DATA_PARALLEL[3]]
    if name == "ssd-plans":           # the plans; their runs' values are the plan's to choose
        return list(SSD_PLAN_GPUS)
    if name == "eviction-rules":
        return [f"{t} base-uvm {EVICTION_RULES[0]}" for t in EVICTION_TRACES] + \
               [f"{t} {p}" for t in EVICTION_TRACES for p in ("base-uvm", "belady")]
    if name == "inference-page":
        return list(INFERENCE_PAGE[1])
    if name == "inference":
        from g10core.experiments.inference import CELLS

        return [_cell_id(c) for c in CELLS]
    raise KeyError(name)


def _cell_id(cell) -> str:
    return f"{cell.table} | {cell.system} | {cell.model}"


def measure_inference(ids=None, jobs=None) -> list[dict]:
    """``g10sim reproduce inference``: every published inference cell and ours (docs/guide/inference.md)."""
    from g10core.experiments.inference import CELLS, run_cell

    wanted = planned_runs("inference") if ids is None else list(ids)
    by_id = {_cell_id(c): c for c in CELLS}
    out = []
    for run in wanted:
        r = run_cell(by_id[run])
        out.append({"id": run, "batch": r["batch"], "published_tokens_per_s": r["published_tokens_per_s"],
                    "tokens_per_s": r["tokens_per_s"], "ratio": r["ratio"], "ttft_s": r["ttft_s"],
                    "tpot_s": r["tpot_s"]})
    return out


# docs/guide/inference.md: the page-level policies on an inference trace (FlexGen's T4, OPT-6.7B, prompt
# 512, 32 tokens, batch 16), run by g10sim run TRACE --policy P --gpu T4 --set run.iterations=2
INFERENCE_PAGE = (("opt-6.7b", 512, 32, 16, "T4"), ("base-uvm", "deepum", "g10"))


def measure_inference_page(ids=None, jobs=None) -> list[dict]:
    """Base UVM, DeepUM+ and G10 on OPT-6.7B inference (``default``, T4, two iterations)."""
    from g10core.config import resolve
    from g10core.simulator import Simulator
    from g10core.workload.llm import inference_trace

    (model, prompt, gen, batch, gpu), _ = INFERENCE_PAGE
    trace = inference_trace(model, prompt, gen, batch, gpu=gpu)
    sim = Simulator(resolve("default", None, [f"gpu.model={gpu}", "run.iterations=2"]))
    out = []
    for policy in planned_runs("inference-page") if ids is None else ids:
        r = sim.run(trace, policy)
        out.append({"id": policy, "failed": r.failed, "ttft_s": r.inference["ttft_s"],
                    "tpot_s": r.inference["tpot_s"], "tokens_per_s": r.inference["tokens_per_s"]})
    return out


# each stored result set: the function that measures it (all its runs, or those named)
MEASURES = {"llm": measure_llm, "fig11-gpus": measure_fig11_gpus, "g10-on-uvm": measure_g10_on_uvm,
            "fig11-twins": measure_fig11_twins, "zero-llm": measure_zero_llm,
            "zero-closed-form": measure_zero_closed_form, "uvm-oversub": measure_uvm_oversub,
            "data-parallel": measure_data_parallel, "ssd-plans": measure_ssd_plans,
            "eviction-rules": measure_eviction_rules, "inference": measure_inference,
            "inference-page": measure_inference_page}


def stored_results() -> dict:
    return json.loads(RESULTS.read_text())


def _rows(name: str) -> list[dict]:
    return stored_results()[name]["rows"]


def different_runs(stored: list[dict], fresh: list[dict]) -> list[str]:
    """The runs whose fresh result differs from the stored one (floats to 1e-9 relative), each
    as ``id: field stored -> fresh``; a run missing on either side counts."""
    by_id = {r["id"]: r for r in stored}
    out = []
    for r in fresh:
        s = by_id.get(r["id"])
        if s is None:
            out.append(f"{r['id']}: not in the stored results")
            continue
        for key in r:
            a, b = s.get(key), r[key]
            same = (math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
                    if isinstance(a, float) and isinstance(b, float) else a == b)
            if not same:
                out.append(f"{r['id']}: {key} {a!r} -> {b!r}")
    return out


def check_cheap_runs() -> list[str]:
    """Re-run :data:`CHEAP` (a few runs of each result set): the differences from the stored results."""
    stored = stored_results()
    out = []
    for name, ids in CHEAP.items():
        out += [f"{name}: {d}" for d in different_runs(stored[name]["rows"], MEASURES[name](list(ids)))]
    return out


def measure_all(jobs=None) -> dict:
    """Every stored result set, measured afresh (every run of every results table)."""
    return {name: {"rows": measure(None, jobs)} for name, measure in MEASURES.items()}


def _fraction(x) -> str:
    return f"{100 * x:.0f} %"


def _llm_table(policies=None) -> str:
    from g10core.experiments.published import POLICY_LABELS

    rows = _rows("llm")
    if policies is not None:
        rows = [r for r in rows if r["policy"] in policies]
    order = list(dict.fromkeys((r["model"], r["batch"]) for r in rows))
    shown = list(dict.fromkeys(r["policy"] for r in rows))
    by = {(r["model"], r["batch"], r["policy"]): r for r in rows}
    lines = ["| model | batch | M (footprint / GPU memory) | "
             + " | ".join(f"{POLICY_LABELS.get(p, p)}, s (% of ideal)" for p in shown) + " |",
             "|" + "---|" * (3 + len(shown))]
    for model, batch in order:
        cells = []
        for p in shown:
            r = by.get((model, batch, p))
            cells.append("-" if r is None else "refused" if r["refused"] else "fails" if r["failed"] else
                         f"{r['time_s']:.2f} ({_fraction(r['normalized_performance'])})")
        any_r = next(by[model, batch, p] for p in shown if (model, batch, p) in by)
        ratio = f"{any_r['memory_ratio_percent']:.0f} %" + (f" ({any_r['machine']})" if any_r["machine"] else "")
        lines.append(f"| {model} | {batch} | {ratio} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def llm_policies_table() -> str:
    """Every policy on every shipped LLM trace (docs/guide/post_g10.md)."""
    return _llm_table()


def llm_fig11_policies_table() -> str:
    """The seven G10-era policies on the fp32 LLM traces (docs/guide/capture.md)."""
    from g10core.capture.llm import LLM_WORKLOADS
    from g10core.experiments.published import FIG11_POLICIES

    fp32 = {w.file_name for w in LLM_WORKLOADS if w.dtype == "float32"}
    text = _llm_table(FIG11_POLICIES).split("\n")
    return "\n".join(text[:2] + [line for line in text[2:]
                                 if f"{line.split(' | ')[0][2:]}-b{line.split(' | ')[1]}.h5" in fp32])


def fig11_gpus_table() -> str:
    """Ideal / G10 seconds of the Fig. 11 traces on the preset's machine and three GPUs (docs/gpus.md)."""
    from g10core.experiments.published import FIG11_WORKLOADS

    by = {r["id"]: r for r in _rows("fig11-gpus")}

    def t(m, b, p, gpu):
        r = by[_run_id(m, b, p, gpu or "preset")]
        return r["time_s"]

    def cell(m, b, gpu):
        ideal, g10 = t(m, b, "ideal", gpu), t(m, b, "g10", gpu)
        return f"{ideal:.3f} / " + ("fails" if g10 is None else f"{g10:.3f}")

    heads = ["preset (A100-40GB, PCIe 3.0)"] + [f"`--gpu {g}`" + (" (PCIe 4.0)" if g == "A100-40GB" else "")
                                                 for g in FIG11_GPUS[1:]]
    lines = ["| trace | " + " | ".join(f"{h}: ideal / G10, s" for h in heads)
             + " | H100/A100 ideal speed-up | H100/A100 G10 speed-up |", "|---|" + "---|" * (len(heads) + 2)]
    for m, b in FIG11_WORKLOADS:
        ratios = []
        for p in ("ideal", "g10"):
            a, h = t(m, b, p, "A100-40GB"), t(m, b, p, "H100-SXM")
            ratios.append("-" if a is None or h is None else f"{a / h:.2f}x")
        lines.append(f"| {m}-b{b} | " + " | ".join(cell(m, b, g) for g in FIG11_GPUS) + " | "
                     + " | ".join(ratios) + " |")
    return "\n".join(lines)


def g10_on_uvm_table() -> str:
    """G10-GDS and G10-Host under ``default`` beside the published seconds (docs/guide/policies.md)."""
    from g10core.experiments.published import FAILS, published_seconds

    by = {r["id"]: r for r in _rows("g10-on-uvm")}

    def secs(x):
        return "fails" if x is None else f"{x:.3f}"

    def gib(n):
        return f"{n / 2**30:.1f}"

    lines = ["| workload | G10-GDS, s | G10-GDS demand-evicted, GiB | G10-Host, s | G10-Host peak in host memory, GiB "
             "| G10-Host demand-evicted, GiB | published G10-GDS, s | published G10-Host, s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m, b in G10_ON_UVM_WORKLOADS:
        gds, host = by[_run_id(m, b, "g10-gds")], by[_run_id(m, b, "g10-host")]
        pub = [published_seconds(m, b, p) for p in ("g10-gds", "g10-host")]
        pub = ["fails" if x == FAILS else "-" if x is None else f"{x:.3f}" for x in pub]
        lines.append(f"| {m}-b{b} | {secs(gds['time_s'])} | {gib(gds['demand_evicted_bytes'])} | "
                     f"{secs(host['time_s'])} | {gib(host['peak_host_bytes'])} | {gib(host['demand_evicted_bytes'])} | "
                     f"{pub[0]} | {pub[1]} |")
    return "\n".join(lines)


def fig11_twins_table() -> str:
    """Fraction of ideal on the physical twins beside the paper's (docs/reproduction.md)."""
    from g10core.experiments.twins import twin_cell, twin_comparison

    cells = twin_comparison(_rows("fig11-twins"))
    policies = list(dict.fromkeys(c["policy"] for c in cells))
    models = list(dict.fromkeys((c["model"], c["batch"]) for c in cells))
    by = {(c["model"], c["batch"], c["policy"]): c for c in cells}

    lines = ["| model | batch | twin ideal, s | " + " | ".join(f"{p}, ideal / time (paper's)" for p in policies) + " |",
             "|---|---:|---:|" + "---|" * len(policies)]
    for m, b in models:
        ideal = by[m, b, "ideal"]["twin_time_s"]
        lines.append(f"| {m} | {b} | {ideal:.3f} | " + " | ".join(twin_cell(by[m, b, p]) for p in policies) + " |")
    g10 = [c["twin_fraction_of_ideal"] for c in cells if c["policy"] == "g10"]
    paper = [c["paper_fraction_of_ideal"] for c in cells if c["policy"] == "g10"]
    time = {(c["model"], c["policy"]): c["twin_time_s"] for c in cells}
    # G10 against each prior policy where both run, on the models no policy runs at ideal (the CNNs)
    slow = [m for m, b in models if all(by[m, b, p]["twin_fraction_of_ideal"] != 1.0 for p in policies if p != "ideal")]
    over = {p: [time[m, p] / time[m, "g10"] for m in slow if time[m, p] is not None]
            for p in ("deepum", "flashneuron")}
    lines += ["", f"G10's geometric mean over the models: {_geomean(g10):.3f} of ideal on the twins, "
                  f"{_geomean(paper):.3f} in the paper. On {', '.join(slow)}: G10 "
                  f"{min(over['deepum']):.2f}-{max(over['deepum']):.2f}x DeepUM+, "
                  f"{min(over['flashneuron']):.2f}-{max(over['flashneuron']):.2f}x FlashNeuron; every policy "
                  f"but Ideal at {_percent_range([by[m, b, p]['twin_fraction_of_ideal'] for m, b in models if m in slow for p in policies if p != 'ideal'])} of ideal."]
    return "\n".join(lines)


def _zero_failure(reason: str) -> str:
    return "host memory" if "host memory" in reason else "GPU memory" if "GPU" in reason else reason


def zero_llm_table() -> str:
    """ZeRO-Offload and ZeRO-Infinity (NVMe, host memory) on the LLM traces (docs/guide/zero.md)."""
    by = {r["id"]: r for r in _rows("zero-llm")}
    traces = list(dict.fromkeys(run.split()[0] for run in planned_runs("zero-llm")))

    def cell(run, peak):
        r = by[run]
        if r["failed"]:
            return f"fails ({_zero_failure(r['failure_reason'])})"
        extra = f"; {r['peak_gpu_bytes'] / 2**30:.1f}" if peak else ""
        return f"{r['time_s']:.3f} ({r['normalized_performance']:.3f}{extra})"

    lines = ["| trace | `zero-offload`, s (ideal / time; peak GPU memory, GiB) | "
             "`zero-infinity` NVMe, s (ideal / time; peak GPU memory, GiB) | `zero-infinity` host, s (ideal / time) |",
             "|---|---|---|---|"]
    for t in traces:
        lines.append(f"| {t} | {cell(f'{t} zero-offload', True)} | {cell(f'{t} zero-infinity nvme', True)} | "
                     f"{cell(f'{t} zero-infinity host', False)} |")
    return "\n".join(lines)


def zero_closed_form_table() -> str:
    """ZeRO's closed-form traffic, recompute and CPU Adam time beside the simulation (docs/guide/zero.md)."""
    def gib(n):
        return "0" if n == 0 else f"{n / 2**30:.3f}"

    def count(n):
        return f"{n / 1e9:.3f} G" if n >= 1e9 else f"{n / 1e6:.1f} M"

    paths = (("gpu_to_host", "GPU->host"), ("host_to_gpu", "host->GPU"), ("ssd_to_host", "SSD->host"),
             ("host_to_ssd", "host->SSD"))
    lines = ["| trace | policy | N (parameters) | C, GiB | " + " | ".join(f"{label}, GiB (closed / simulated)"
                                                                         for _, label in paths)
             + " | recompute, s (closed / simulated) | CPU Adam, ms (closed / simulated busy) |",
             "|---|---|---|---|" + "---|" * (len(paths) + 2)]
    for r in _rows("zero-closed-form"):
        trace, policy, *device = r["id"].split()
        label = policy + (f" ({'NVMe' if device[0] == 'nvme' else 'host'})" if device else "")
        traffic = " | ".join(f"{gib(r['closed_traffic_bytes'][k])} / {gib(r['simulated_traffic_bytes'][k])}"
                             for k, _ in paths)
        lines.append(f"| {trace} | {label} | {count(r['n_parameters'])} | {gib(r['checkpoint_offloaded_bytes'])} | "
                     f"{traffic} | {r['closed_recompute_s']:.3f} / {r['simulated_recompute_s']:.3f} | "
                     f"{1e3 * r['closed_cpu_adam_s']:.1f} / {1e3 * r['simulated_cpu_busy_s']:.1f} |")
    return "\n".join(lines)


def uvm_oversub_table() -> str:
    """The oversubscription micro-benchmark's read bandwidths (docs/guide/uvm_oversub.md)."""
    from g10core.experiments.uvmmicro import OVERSUB_FACTORS

    by = {r["id"]: r["bandwidth_GBps"] for r in _rows("uvm-oversub")}
    lines = ["| system | pattern | mode | " + " | ".join(f"x{f:g}, GB/s" for f in OVERSUB_FACTORS) + " |",
             "|---|---|---|" + "---|" * len(OVERSUB_FACTORS)]
    for key in dict.fromkeys(run.rpartition(" ")[0] for run in planned_runs("uvm-oversub")):
        cells = [by[f"{key} x{f:g}"] for f in OVERSUB_FACTORS]
        lines.append(f"| {' | '.join(key.split())} | "
                     + " | ".join(f"{x:.0f}" if x >= 100 else f"{x:.2f}" for x in cells) + " |")
    return "\n".join(lines)


def data_parallel_table() -> str:
    """Data-parallel LLaMA-7B on a DGX A100 under five policies (docs/guide/machines.md)."""
    lines = ["| policy | GPUs | iteration, s | rank, s | all-reduce, s (after the backward / whole) | busiest hop (bytes, "
             "GB; busy at its bandwidth, s) | rounds |", "|---|---|---|---|---|---|---|"]
    for r in _rows("data-parallel"):
        policy, gpus = r["id"].split()
        if r["failed"]:
            lines.append(f"| {policy} | {gpus} | fails | | | | |")
            continue
        kind = r["busiest_hop"].partition(" ")[2]
        owner = {"drive": "drive", "sw": "switch", "gpu": "GPU"}.get(r["busiest_hop"].rstrip("0123456789 ").split()[0]
                                                                    .rstrip("0123456789"), "hop")
        hop = f"every {owner}'s {kind}" if r["every_hop_of_its_kind_alike"] else r["busiest_hop"]
        allreduce = "0" if r["allreduce_s"] == 0 else f"{r['allreduce_exposed_s']:.3f} / {r['allreduce_s']:.3f}"
        lines.append(f"| {policy} | {gpus} | {r['iteration_s']:.3f} | {r['rank_s']:.3f} | {allreduce} | "
                     f"{hop} ({r['busiest_hop_bytes'] / 1e9:.1f}, {r['busiest_hop_bytes'] / 1e9 / r['busiest_hop_GBps']:.2f}) "
                     f"| {r['rounds']}{'' if r.get('converged', True) else ', not converged'} |")
    return "\n".join(lines)


def ssd_plans_table() -> str:
    """The least SSD bandwidth for G10 to reach half of ideal on llama-7b-s2048-b1, per GPU (docs/guide/planner.md)."""
    by = {r["id"]: r for r in _rows("ssd-plans")}
    _, _, _, key, (lo, hi) = SSD_PLAN
    label = {"gpu.memory_GiB=40": ("40 GiB (`--set gpu.memory_GiB=40`, the preset)", "PCIe 3.0 x16"),
             "gpu.memory_GiB=72": ("72 GiB (`--set gpu.memory_GiB=72`)", "PCIe 3.0 x16"),
             "gpu.memory_GiB=80": ("80 GiB (`--set gpu.memory_GiB=80`)", "PCIe 3.0 x16"),
             "gpu.model=A100-40GB": ("`--gpu A100-40GB`", "PCIe 4.0 x16"),
             "gpu.model=A100-80GB": ("`--gpu A100-80GB`", "PCIe 4.0 x16")}
    lines = [f"| GPU | link | least `{key}` (GB/s) for 50 % of ideal under G10 | runs |", "|---|---|---|---|"]
    for start in SSD_PLAN_GPUS:
        r = by[start]
        if r["minimum"] is None:
            answer = f"none in {lo:g}-{hi:g} (at best {r['best_fraction']:.3f} of ideal; exit 1)"
        elif r["met_at_lo"] and r["lo_is_floor"]:
            answer = f"{r['minimum']:g}, the least value the key takes ({r['fraction_at_minimum']:.3f} of ideal there)"
        else:
            answer = f"{r['minimum']:.4g}"
        lines.append(f"| {label[start][0]} | {label[start][1]} | {answer} | {r['runs']} |")
    return "\n".join(lines)


def eviction_rules_table() -> str:
    """A user's eviction rule beside Base UVM's own and Belady's (docs/guide/eviction.md)."""
    by = {r["id"]: r for r in _rows("eviction-rules")}

    def secs(run):
        r = by[run]
        return "fails" if r["failed"] else f"{r['time_s']:.2f}"

    lines = [f"| trace | `--policy base-uvm --eviction {EVICTION_RULES[0]}`, s per iteration | "
             "`--policy base-uvm` (its `arrival` rule), s | `--policy belady`, s |", "|---|---|---|---|"]
    for t in EVICTION_TRACES:
        lines.append(f"| `{t}` | {secs(f'{t} base-uvm {EVICTION_RULES[0]}')} | {secs(f'{t} base-uvm')} | "
                     f"{secs(f'{t} belady')} |")
    return "\n".join(lines)


def _model_name(model: str) -> str:
    return model.upper().replace("LLAMA", "LLaMA")


def _inference_rows(table: str) -> list[tuple[list[str], dict]]:
    return [(r["id"].split(" | "), r) for r in _rows("inference") if r["id"].split(" | ")[0] == table]


def _tokens(x) -> str:
    return "refused" if x is None else f"{x:.3g}"


def inference_page_table() -> str:
    """The page-level policies on OPT-6.7B inference (docs/guide/inference.md)."""
    lines = ["| policy | TTFT, s | TPOT, s | tokens/s |", "|---|---|---|---|"]
    for r in _rows("inference-page"):
        lines.append(f"| {r['id']} | {r['ttft_s']:.2f} | {r['tpot_s']:.3f} | {r['tokens_per_s']:.3g} |")
    return "\n".join(lines)


def _published_inference_table(table: str, with_system: bool) -> str:
    """A published inference table beside ours: (system,) model, batch, published, ours, ratio."""
    head = ["system"] * with_system + ["model", "batch", "published", "ours", "ours / published"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (_, system, model), r in _inference_rows(table):
        cells = [system] * with_system + [_model_name(model), str(r["batch"]), f"{r['published_tokens_per_s']:g}",
                                          _tokens(r["tokens_per_s"]), f"{r['ratio']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def inference_flexgen_table() -> str:
    """FlexGen's T4 table beside ours (docs/guide/inference.md)."""
    return _published_inference_table("flexgen-t4", with_system=True)


def inference_zero_table() -> str:
    """ZeRO-Inference's A6000 table beside ours (docs/guide/inference.md)."""
    return _published_inference_table("zero-inference-a6000", with_system=False)


def inference_deepnvme_table() -> str:
    """DeepNVMe's LLaMA-3-70B drive sets beside ours (docs/guide/inference.md)."""
    from g10core.experiments.inference import CELLS
    from g10core.inference.schedule import MACHINES

    machine = {_cell_id(c): MACHINES[c.machine] for c in CELLS}
    lines = ["| drives (RAID0) | reads, GB/s | GPU | batch | published | ours | ours / published | TTFT, s | "
             "TPOT, s |", "|---|---|---|---|---|---|---|---|---|"]
    for (_, system, _), r in _inference_rows("deepnvme"):
        m = machine[r["id"]]
        drives = system.partition(", ")[2].replace(" (GDS)", "")
        lines.append(f"| {drives} | {m.disk_read_GBps:g} | {m.gpu} | {r['batch']} | {r['published_tokens_per_s']:g} | "
                     f"{_tokens(r['tokens_per_s'])} | {r['ratio']:.2f} | {r['ttft_s']:.1f} | {r['tpot_s']:.2f} |")
    return "\n".join(lines)


def _geomean(xs) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def _percent_range(fractions) -> str:
    xs = [x for x in fractions if x is not None]
    return f"{100 * min(xs):.1f}-{100 * max(xs):.1f} %"


TABLES = {
    "validation": (ROOT / "docs" / "validation.md", validation_table),
    "llm-traces": (ROOT / "traces" / "README.md", llm_traces_table),
    "twin-traces": (ROOT / "traces" / "README.md", twin_traces_table),
    "gpus": (ROOT / "docs" / "gpus.md", gpus_table),
    "calibration-errors": (ROOT / "docs" / "guide" / "capture.md", calibration_errors_table),
    "capture-families": (ROOT / "docs" / "guide" / "capture.md", capture_families_table),
    "llm-policies": (ROOT / "docs" / "guide" / "post_g10.md", llm_policies_table),
    "llm-fig11-policies": (ROOT / "docs" / "guide" / "capture.md", llm_fig11_policies_table),
    "fig11-gpus": (ROOT / "docs" / "gpus.md", fig11_gpus_table),
    "g10-on-uvm": (ROOT / "docs" / "guide" / "policies.md", g10_on_uvm_table),
    "fig11-twins": (ROOT / "docs" / "reproduction.md", fig11_twins_table),
    "zero-llm": (ROOT / "docs" / "guide" / "zero.md", zero_llm_table),
    "zero-closed-form": (ROOT / "docs" / "guide" / "zero.md", zero_closed_form_table),
    "uvm-oversub": (ROOT / "docs" / "guide" / "uvm_oversub.md", uvm_oversub_table),
    "data-parallel": (ROOT / "docs" / "guide" / "machines.md", data_parallel_table),
    "ssd-plans": (ROOT / "docs" / "guide" / "planner.md", ssd_plans_table),
    "eviction-rules": (ROOT / "docs" / "guide" / "eviction.md", eviction_rules_table),
    "inference-page": (ROOT / "docs" / "guide" / "inference.md", inference_page_table),
    "inference-flexgen": (ROOT / "docs" / "guide" / "inference.md", inference_flexgen_table),
    "inference-zero": (ROOT / "docs" / "guide" / "inference.md", inference_zero_table),
    "inference-deepnvme": (ROOT / "docs" / "guide" / "inference.md", inference_deepnvme_table),
}
# the tables that quote simulation results (they render from RESULTS)
RESULT_TABLES = ("llm-policies", "llm-fig11-policies", "fig11-gpus", "g10-on-uvm", "fig11-twins", "zero-llm",
                 "zero-closed-form", "uvm-oversub", "data-parallel", "ssd-plans",
                 "eviction-rules", "inference-page", "inference-flexgen", "inference-zero", "inference-deepnvme")


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
    p.add_argument("--results", action="store_true",
                   help="first re-run every results table's runs (about a minute on two cores) and rewrite "
                        f"{RESULTS.relative_to(ROOT)} (with --check: exit 1 where a stored result moved)")
    p.add_argument("--jobs", type=int, default=None, help="with --results: worker processes (default: CPUs)")
    args = p.parse_args(argv)
    if args.results:
        fresh = measure_all(args.jobs)
        if args.check:
            stored = stored_results()
            moved = [f"{name}: {d}" for name in fresh
                     for d in different_runs(stored.get(name, {}).get("rows", []), fresh[name]["rows"])]
            moved += [f"{name}: {len(stored[name]['rows'])} runs stored, {len(fresh[name]['rows'])} measured"
                      for name in fresh if name in stored and len(stored[name]["rows"]) != len(fresh[name]["rows"])]
            for line in moved:
                print(f"{RESULTS.relative_to(ROOT)}: {line}")
            if moved:
                return 1
        else:
            RESULTS.write_text(json.dumps(fresh, indent=1) + "\n")
            print(f"{RESULTS.relative_to(ROOT)}: rewritten")
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
