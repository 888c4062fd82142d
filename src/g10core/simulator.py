"""Simulator: builds the components from a config and a trace, runs, returns a Result.

This is the Python layer of the simulation: it validates every input (trace, hint
table, configuration, the working set of every kernel against GPU memory), runs the
policy (page level: derives the artifact's integer constants, lays the trace out
as flat arrays and hands them to the compiled ``_replay.Replay``; tensor level: the
policy's own simulation; ``ideal``: the sum of ideal kernel times), checks the
invariants of the outcome and returns a :class:`~g10core.results.Result`.

    >>> from g10core.simulator import Simulator
    >>> r = Simulator("g10-artifact").run("bert_base-b256", "g10")         # doctest: +SKIP
    >>> r.iteration_time_s                                                  # doctest: +SKIP
    7.311024...
"""
from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import resource
import time
import warnings

import numpy as np

from . import __version__, policies, results
from .uvm import evictors
from .uvm._replay import NoProgress, Replay
from .workload.vitality import CannotFit, check_fits  # noqa: F401 (CannotFit: part of this module's API)
from .slot_model import (UNITS_PER_CYCLE, ArtifactConstants, check_cycles_fit, kernel_cycles, liveness,
                         physical_fault_params)
from .config import ARTIFACT_PRESET, DEFAULT_PRESET, SimConfig, preset, resolve
from .errors import ConfigError, G10Warning, HintError, SimulationError  # noqa: F401 (SimulationError: API)
from .modelled import ignored_parameters, warning_text
from .workload import recompute
from .workload.hints import LEVELS, HintFile, action_counts, check_belongs, trace_digest, validate_hints
from .noise import kernel_time_ratios, noisy_kernel_cycles, resolve_seed
from .policies import HINT_FREE, IdealPlan, PagePlan, Policy, TensorPlan, TensorPolicy, empty_hints
from .results import Result
from .codes import HINT_ADVISE_PREFER_GPU, KERNEL_ROW_DTYPE, MOVED_ROW_DTYPE, TRAFFIC_ROW_DTYPE, as_columns
from .workload.trace import (ACCESS_READ, ACCESS_WRITE, PAGE_SIZE_BYTES, Trace, kernel_working_set_bytes, read_trace,
                             validate_trace)
from .workload.tracestore import resolve_trace
from .workload.retarget import retarget

GiB = 1 << 30


def ssd_first_pages(trace: Trace, flash_page_bytes: int) -> tuple[np.ndarray, int]:
    """Per tensor its first logical page on the SSD (in virtual pages) and the virtual pages
    the layout spans: the trace's own layout, except that on a device whose flash page holds
    several virtual pages (mlc: 8 KiB) each tensor starts on a flash page, so a migration unit
    (aligned in the tensor) is whole flash pages, not a partial one at each end."""
    ratio = flash_page_bytes // PAGE_SIZE_BYTES
    npages = trace.tensor_pages.astype(np.int64)
    if ratio <= 1 or flash_page_bytes % PAGE_SIZE_BYTES:
        return trace.tensor_first_page.astype(np.int64), int(npages.sum())
    first = aligned_first_pages(trace, ratio)
    return first, int((first + -(-npages // ratio) * ratio).max(initial=0))


def detailed_devices(trace: Trace, cfg):
    """The detailed preset's SSD (with its FTL) and GPU link, sized for this trace.

    Every page of the footprint gets a logical page on the SSD (its bytes: the flash pages
    that hold them when the device's page is not ``gpu.page_size_bytes``), so the SSD's
    user capacity must hold the footprint.  ``ssd.capacity_GiB`` sets it
    (an SSD that just holds the footprint is rewritten every iteration: that is where
    garbage collection shows); 0 means the device preset's capacity, or the footprint
    rounded up to 1 GiB when the preset is smaller.  (VA-block-aligned tensors, the
    detailed preset's far-fault handler, keep the trace's logical pages on the SSD.)
    """
    from .link.pcie import link_from_config
    from .ssd import ssd_from_config, ssd_spec_from_config

    _, layout_pages = ssd_first_pages(trace, ssd_spec_from_config(cfg).page_size_bytes)
    footprint = max(trace.footprint_bytes, layout_pages * PAGE_SIZE_BYTES)
    if cfg.ssd.capacity_GiB > 0:
        capacity = int(cfg.ssd.capacity_GiB * GiB)
        if capacity < footprint:
            raise ConfigError(f"ssd.capacity_GiB = {cfg.ssd.capacity_GiB:g} is smaller than the trace's footprint "
                              f"({footprint / GiB:.2f} GiB): every page needs a logical page on the SSD")
    else:
        preset_capacity = ssd_spec_from_config(cfg).user_capacity_bytes
        capacity = None if preset_capacity >= footprint else -(-footprint // GiB) * GiB
    ssd = ssd_from_config(cfg, capacity)
    # the replay numbers virtual pages; the FTL maps flash pages (mlc: 8 KiB)
    ssd.set_host_page_bytes(cfg.gpu.page_size_bytes)
    return ssd, link_from_config(cfg)


def detailed_quotas(cfg, ssd, link) -> dict:
    """Per-tick constants when the link and the SSD are devices (the ``detailed`` preset).

    A tick is the time the link takes to carry ``link.batch_pages`` pages to the GPU
    (setup latency plus bytes at its effective bandwidth), in either direction at once;
    the SSD's share of a tick follows from its own link's effective bandwidth, and a tick
    moves SSD pages only when the SSD can take new commands (see ``_replay.Replay``).
    """
    page = cfg.gpu.page_size_bytes
    batch = cfg.link.batch_pages
    tick = link.spec.idle_transfer_cycles(batch * page, "to_device", "peer")
    link_GBps = link.spec.effective_GBps("to_device", "peer")
    ssd_GBps = min(ssd.spec.link.effective_GBps("from_device", "host"), link_GBps)
    # host.bandwidth_GBps below link.bandwidth_GBps: the host flow's share (pcie.host_flow_scale)
    scale = link.spec.host_flow_scale
    host_batch = batch if scale == 1 else max(1, int(batch * scale))
    out = dict(tick_cycles=int(tick), gpu_batch=batch, host_batch=host_batch,
               ssd_batch=max(1, int(batch * ssd_GBps / link_GBps)))
    if not cfg.scheduler.artifact_quirks:
        # exact quotas: the SSD's link moves batch * ssd/link pages per slot, the fraction carried
        # (the FTL device throttles the slots it cannot serve; its reads and writes share its
        # planes and channels, so the slot cap is per direction); the host flow batch * scale
        units = max(int(tick), 1) * UNITS_PER_CYCLE
        out.update(exact=True, slot_units=units, ssd_read_units=max(1, round(units * link_GBps / (batch * ssd_GBps))),
                   host_units=max(1, units // batch if scale == 1 else int(units / (batch * scale))),
                   ssd_shared=False)
        out["ssd_write_units"] = out["ssd_read_units"]
    return out


def device_counters(raw: dict, ssd, link, consts: dict) -> dict:
    """What the detailed preset's devices saw over the whole run (both iterations)."""
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    elapsed = int(rows[-1, 3]) if rows.size else 0
    # the slot model lets a page count as arrived before its transfer completes, so the
    # link may still be busy when the last kernel ends: its utilisation is over the span
    # until it is idle too (never above 1)
    busy_until = max((d["last_completion_cycle"] for d in link.core.stats().values()), default=0)
    ssd._check_health()
    st = ssd.stats()
    ls = link.stats(max(elapsed, busy_until))
    return {
        "ssd": st,
        "link": ls,
        "ssd_summary": {
            "waf": st["waf"], "gc_count": st["gc_count"], "gc_time_s": st["gc_time_us"] / 1e6,
            "host_write_pages": st["host_write_pages"], "host_read_pages": st["host_read_pages"],
            "erase_spread": st["erase_counts"]["spread"],
            "throttled_ticks": int(raw.get("ssd_throttled_ticks", 0)),
            "user_capacity_pages": int(ssd.core.logical_pages),
        },
        # (none when nothing ran: a run stopped in its first kernel)
        "link_utilisation": {d: ls[d].get("utilisation") for d in ("to_device", "from_device")},
    }


def aligned_first_pages(trace: Trace, block_pages: int) -> np.ndarray:
    """Tensors' first pages with each tensor starting on a VA block (``cudaMallocManaged``
    alignment), in the trace's order: a VA block then belongs to one tensor, as the far-fault
    handler requires.  The address space grows by less than one block per tensor."""
    first = trace.tensor_first_page.astype(np.int64)
    npages = trace.tensor_pages.astype(np.int64)
    order = np.argsort(first, kind="stable")
    span = -(-npages[order] // block_pages) * block_pages
    out = np.empty_like(first)
    out[order] = np.concatenate(([0], np.cumsum(span)[:-1])) if len(span) else span
    return out


# ---- kernel-time noise (noise.*, Fig. 19) --------------------------------------
# Policies plan on the trace's profiled times; only the simulation runs on the perturbed
# ones, as in the published simulator.  Page level: the replay's cycles (replay_inputs, and
# the ideal policy's sum).  Tensor level: the policy's schedule is made on the trace, then
# simulated on noisy_trace (noisy_tensor_plan).

def run_kernel_cycles(trace: Trace, cfg):
    """(t11, t10, t00) in cycles that a run simulates: the profiled times with ``noise.*`` applied."""
    t11, t10, t00 = kernel_cycles(trace, cfg.gpu.frequency_GHz)
    return noisy_kernel_cycles(t11, t10, t00, sigma=cfg.noise.kernel_time_sigma,
                               seed=resolve_seed(cfg.noise.seed, trace.model))


def noisy_trace(trace: Trace, cfg) -> Trace:
    """``trace`` with each kernel's three profiled times scaled by its noise ratio (tensor level)."""
    if cfg.noise.kernel_time_sigma == 0:
        return trace
    r = kernel_time_ratios(trace.n_kernels, cfg.noise.kernel_time_sigma, resolve_seed(cfg.noise.seed, trace.model))
    return dataclasses.replace(trace, kernel_time_ideal_ns=trace.kernel_time_ideal_ns * r,
                               kernel_time_fault_all_ns=trace.kernel_time_fault_all_ns * r,
                               kernel_time_fault_outputs_ns=trace.kernel_time_fault_outputs_ns * r)


def noisy_tensor_plan(pol: TensorPolicy, trace: Trace, cfg) -> TensorPlan:
    """A tensor-level policy's plan under noise: scheduled on ``trace``, simulated on :func:`noisy_trace`."""
    from .policies import tensorsim

    def simulate() -> dict:
        try:
            hints = np.asarray(pol.schedule(trace))
        except ValueError as exc:      # the policy has no schedule: it cannot fit (FlashNeuron)
            mode = "flashneuron" if pol.name == "flashneuron" else "gds"
            return tensorsim.failed_result(" ".join(str(exc).split()), mode=mode, trace=trace, config=cfg)
        d = dict(pol.simulate(noisy_trace(trace, cfg), hints))
        d.setdefault("schedule", {"n_hints": int(hints.size), "planned_on": "the profiled kernel times"})
        return d

    return TensorPlan(simulate=simulate)


def replay_inputs(trace: Trace, cfg, hints=None, *, eviction="arrival", apply_hints=False, bulk=True,
                  devices=None, first_pages=None, advice=False):
    """(constants dict, arrays dict) for ``_replay.Replay`` (inputs already validated).

    ``eviction``: an :class:`~g10core.uvm.evictors.EvictionRule` (or a name ``evictors.resolve``
    takes), recorded as ``consts["eviction"]``;
    ``devices``: the ``(ssd, link)`` of :func:`detailed_devices` for the detailed preset;
    ``first_pages``: the tensors' first pages when not the trace's (:func:`aligned_first_pages`);
    ``advice``: the slot model applies the memory-advice hints (:func:`slot_model_applies_advice`).
    The kernel times are :func:`run_kernel_cycles` (``noise.*`` applied).
    """
    c = ArtifactConstants.from_config(cfg)
    t11, t10, t00 = run_kernel_cycles(trace, cfg)
    birth, death = liveness(trace)
    first = trace.tensor_first_page.astype(np.int64) if first_pages is None else np.asarray(first_pages, np.int64)
    npages = trace.tensor_pages.astype(np.int64)
    order = np.argsort(first, kind="stable")
    # CSR of inputs and of outputs that are not inputs, in fault-queue order
    reads = (trace.access_mode & ACCESS_READ) != 0
    k_of = trace.access_kernel
    in_t = trace.access_tensor[reads].astype(np.int32)
    out_t = trace.access_tensor[~reads].astype(np.int32)
    in_off = np.concatenate(([0], np.cumsum(np.bincount(k_of[reads], minlength=trace.n_kernels))))
    out_off = np.concatenate(([0], np.cumsum(np.bincount(k_of[~reads], minlength=trace.n_kernels))))
    # CSR of every tensor a kernel writes (outputs and tensors it reads and writes): the writes
    # that collapse read_mostly duplicates
    writes = (trace.access_mode & ACCESS_WRITE) != 0
    w_t = trace.access_tensor[writes].astype(np.int32)
    w_off = np.concatenate(([0], np.cumsum(np.bincount(k_of[writes], minlength=trace.n_kernels))))
    if hints is None or not apply_hints:
        hints = np.zeros(0, dtype=[("kernel", "<i4"), ("tensor", "<i4"), ("action", "i1")])
    consts = dict(
        pages=int(npages.sum()), kernels=trace.n_kernels, tensors=trace.n_tensors,
        iterations=cfg.run.iterations,
        gpu_pages=c.gpu_pages, host_pages=c.host_pages, tick_cycles=c.tick_cycles,
        gpu_batch=c.gpu_batch, host_batch=c.host_batch, ssd_batch=c.ssd_batch,
        alloc_batch=min(c.alloc_batch, 1 << 62), freq_hz=c.freq_hz,
        bw_pcie_Bpms=c.bw_pcie_Bpms, bw_ssd_Bpms=c.bw_ssd_Bpms,
        l_sys_us=c.l_sys_us, l_ssd_us=c.l_ssd_us,
        eviction=evictors.resolve(eviction), window=cfg.scheduler.prefetch_degree,   # a rule passes as it is
        page_bytes=cfg.gpu.page_size_bytes,
        apply_hints=bool(apply_hints), bulk=bool(bulk),
        exact=c.exact, slot_units=c.slot_units, ssd_read_units=c.ssd_read_units,
        ssd_write_units=c.ssd_write_units, host_units=c.host_units, ssd_shared=c.ssd_shared,
        alloc_cycles_per_page=c.alloc_cycles_per_page,
    )
    if cfg.fault.handler == "physical":
        # the replay builds _fault.PhysicalFaultModel from these (else the profile model)
        consts["physical_fault"] = physical_fault_params(cfg)
    if devices is not None:
        consts.update(detailed_quotas(cfg, *devices))
        consts["bulk"] = False
    if advice:
        # memory advice in the slot model (exact quotas, no devices: slot_model_applies_advice);
        # bulk repeats stop where a slot's victims or pre-evictions change between clean read
        # duplicates and others (_batcher.pyx)
        consts["advice"] = True
    arrays = dict(
        t_first=first, t_np=npages, t_global=trace.tensor_is_global.astype(np.uint8),
        t_birth=birth, t_death=death,
        s_start=first[order], s_tensor=order.astype(np.int32),
        t11=t11, t10=t10, t00=t00,
        in_off=in_off.astype(np.int64), in_t=in_t, out_off=out_off.astype(np.int64), out_t=out_t,
        w_off=w_off.astype(np.int64), w_t=w_t,
        h_kernel=np.asarray(hints["kernel"], np.int32), h_tensor=np.asarray(hints["tensor"], np.int32),
        h_action=np.asarray(hints["action"], np.int8),
    )
    return consts, arrays, (t11, t00)


def translator(cfg, trace: Trace, arrays: dict, t11):
    """The ``[tlb]`` translator (``tlb.TLB``) with the replay's kernel table attached: each
    kernel's tensors in access order (inputs, then outputs), at the replay's first pages."""
    from .tlb import TLB, spec_from_config

    tlb = TLB(spec_from_config(cfg))
    K = trace.n_kernels
    n_in, n_out = np.diff(arrays["in_off"]), np.diff(arrays["out_off"])
    off = np.concatenate(([0], np.cumsum(n_in + n_out))).astype(np.int64)
    acc = np.empty(int(off[-1]), np.int64)
    for k in range(K):
        a, b = int(arrays["in_off"][k]), int(arrays["in_off"][k + 1])
        c, d = int(arrays["out_off"][k]), int(arrays["out_off"][k + 1])
        acc[off[k]:off[k] + b - a] = arrays["in_t"][a:b]
        acc[off[k] + b - a:off[k + 1]] = arrays["out_t"][c:d]
    tlb.attach_kernels(arrays["t_first"], arrays["t_np"], off, acc, t11, reuse=cfg.tlb.reuse)
    return tlb


def fold_recompute(raw: dict, expansion, t11, freq_hz) -> tuple[dict, dict]:
    """The replay's output on a recompute-expanded trace folded back onto the trace's kernels.

    Each run of executed rows charged to one kernel (its recompute copies, then itself) becomes
    one row: the copies' start, the kernel's end and occupancy, the sums of the page counts,
    moved pages and translation cycles; a run a stopped replay cut short is dropped.  Returns
    ``(raw, counters)``, the counters holding the recompute work per iteration.
    """
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    if rows.shape[0] == 0:
        return raw, {"tensors": expansion.n_tensors, "kernels": expansion.n_kernels, "hints": expansion.n_hinted,
                     "ideal_s": 0.0, "time_s": []}
    k, it = rows[:, 1], rows[:, 0]
    starts, keep = expansion.fold_rows(k, it)
    ends = np.append(starts[1:], rows.shape[0]) - 1
    # each copy's time: its end minus the previous row's end (as summarize counts a kernel's time)
    prev_end = np.concatenate(([0], rows[:-1, 3]))
    copy = expansion.is_copy[k]
    per_it = np.zeros(int(it.max()) + 1, np.int64)
    np.add.at(per_it, it[copy], (rows[:, 3] - prev_end)[copy])
    out = rows[ends].copy()
    out[:, 1] = expansion.group[k[ends]]
    out[:, 2] = rows[starts, 2]
    sums = np.add.reduceat(rows[:, 4:8], starts, axis=0)
    out[:, 4:8] = sums
    folded = dict(raw)
    folded["kernels"] = np.ascontiguousarray(out[keep])
    if "moved" in raw:
        moved = as_columns(raw["moved"], MOVED_ROW_DTYPE)
        folded["moved"] = np.ascontiguousarray(np.add.reduceat(moved, starts, axis=0)[keep])
    if "translation_cycles" in raw:
        tr = np.asarray(raw["translation_cycles"], np.int64)
        if tr.size == rows.shape[0]:
            folded["translation_cycles"] = np.ascontiguousarray(np.add.reduceat(tr, starts)[keep])
    hz = float(freq_hz)
    counters = {"tensors": expansion.n_tensors, "kernels": expansion.n_kernels, "hints": expansion.n_hinted,
                "ideal_s": int(np.asarray(t11, np.int64)[expansion.is_copy].sum()) / hz,   # t11: the expanded trace's
                "time_s": (per_it / hz).tolist()}
    return folded, counters


def timeline_data(raw: dict, consts: dict, *, detailed: bool) -> dict:
    """What :mod:`g10core.timeline` draws, from the replay's output (``consts["timeline"]`` set):
    the recorder's arrays, the kernel rows (a failed run's too) and the constants that scale them."""
    tl = raw["timeline"]
    return {"kernel_rows": as_columns(raw["kernels"], KERNEL_ROW_DTYPE),
            "spans": tl["spans"], "ops": tl["ops"], "execs": tl["execs"],
            "traffic": as_columns(raw["pcie"], TRAFFIC_ROW_DTYPE), "model": "batches" if detailed else "slots",
            "freq_hz": int(consts["freq_hz"]), "page_bytes": int(consts.get("page_bytes", 4096)),
            "tick_cycles": int(consts["tick_cycles"]), "gpu_pages": int(consts["gpu_pages"]),
            "host_pages": int(consts["host_pages"]), "kernels_per_iteration": int(consts["kernels"]),
            "iterations": int(consts["iterations"])}


def victims_by_evictor(cfg, rule) -> bool:
    """Whether the far-fault handler asks the eviction rule ``rule`` for its victims
    (``fault.victims``: evictor, or policy with a rule other than the arrival order), rather
    than taking the head of its chunk list (``fault.chunk_order``)."""
    return cfg.fault.victims == "evictor" or (cfg.fault.victims == "policy" and not rule.arrival_order)


def kernel_runner(cfg, consts: dict, arrays: dict, devices, tlb, trace: Trace, use_evictor: bool):
    """The detailed preset's ``_kernelrun.KernelRunner``: the far-fault handler of ``[fault]`` on
    ``gpu.sms`` SMs, the devices' link and SSD, the translator; victims by the rule when
    ``use_evictor`` (:func:`victims_by_evictor`)."""
    from .uvm._kernelrun import KernelRunner
    from .uvm.fault_handler import spec_from_config

    spec = spec_from_config(cfg)
    gpu_pages, host_pages = int(consts["gpu_pages"]), int(consts["host_pages"])
    params = spec.compiled_params(gpu_pages, host_pages, batch_pin_limit=gpu_pages)
    ssd, link = devices
    runner = KernelRunner(params, link.core, ssd.core, tlb.core,
                          {k: arrays[k] for k in ("t11", "in_off", "in_t", "out_off", "out_t", "w_off", "w_t")},
                          int(cfg.gpu.sms), use_evictor, int(consts["iterations"]),
                          lpn_first=ssd_first_pages(trace, ssd.spec.page_size_bytes)[0])
    runner.set_thrashing(spec.thrashing_params())
    return runner


def handler_counters(raw: dict, runner, cfg, use_evictor: bool) -> dict:
    """What the far-fault handler and the SMs did (``fault_batches``, ``sm``)."""
    fb = dict(raw["fault_batches"])
    clock = cfg.gpu.frequency_GHz * 1000.0
    fb["mean_batch_us"] = fb["batch_cycles"] / fb["batches"] / clock if fb["batches"] else 0.0
    fb["mean_fault_wait_us"] = fb["fault_wait_cycles"] / fb["batch_units"] / clock if fb["batch_units"] else 0.0
    fb["mean_batch_units"] = fb["batch_units"] / fb["batches"] if fb["batches"] else 0.0
    fb["victims"] = ("policy evictor" if use_evictor else "chunks in allocation order"
                     if cfg.fault.chunk_order == "allocation" else "least recently migrated")
    out = {"fault_batches": fb, "sm": dict(raw["runner"])}
    handler = getattr(runner, "fault_handler", None) if runner is not None else None
    if handler is not None:
        # thrashing detection and remote (zero-copy) access (issue 37)
        rs = handler.remote_stats()
        rs["thrashing_enabled"] = bool(cfg.fault.thrashing_enable)
        out["thrashing"] = rs
    return out


# ============================================================================
# Simulator: validation, policy dispatch, invariants, Result
# ============================================================================

def _as_config(config) -> SimConfig:
    if config is None:
        return preset(DEFAULT_PRESET)
    if isinstance(config, str):
        return preset(config)
    if isinstance(config, SimConfig):
        return config.check()
    raise ConfigError(f"config: expected a SimConfig or a preset name, got {type(config).__name__}")


def resolve_config(preset_name: str = DEFAULT_PRESET, config_file=None, sets=None) -> SimConfig:
    """Preset, then a TOML file, then ``section.key=value`` overrides (``config.resolve``)."""
    return resolve(preset_name, config_file, list(sets or ()))


def is_detailed(cfg: SimConfig) -> bool:
    """The link and the SSD are devices (``link.model = pcie``, ``ssd.model = ftl``)."""
    return cfg.link.model == "pcie"


def is_batched(cfg: SimConfig) -> bool:
    """Kernels run on the far-fault handler (``fault.handler = batched``, the detailed preset)."""
    return cfg.fault.handler == "batched"


def check_supported(cfg: SimConfig) -> None:
    """Refuse combinations of component models the simulator cannot run (rather than ignore them)."""
    if (cfg.link.model == "pcie") != (cfg.ssd.model == "ftl"):
        raise ConfigError(f"link.model = {cfg.link.model!r} with ssd.model = {cfg.ssd.model!r}: the PCIe link "
                          "and the FTL SSD are modelled together (preset detailed: link.model = 'pcie', "
                          "ssd.model = 'ftl'; preset g10-artifact: 'slots' and 'bandwidth')")
    if is_batched(cfg) and not is_detailed(cfg):
        raise ConfigError("fault.handler = 'batched' with link.model = 'slots': the far-fault handler moves pages "
                          "through the PCIe link and the FTL SSD (preset detailed: link.model = 'pcie', "
                          "ssd.model = 'ftl')")


def detailed_components(cfg: SimConfig) -> list[str]:
    """The keys of ``cfg`` that select a detailed component (far-fault handler, TLB hierarchy,
    PCIe link, FTL SSD), as ``key = value``."""
    on = (("fault.handler", cfg.fault.handler, cfg.fault.handler == "batched"),
          ("tlb.model", cfg.tlb.model, cfg.tlb.model != "none"),
          ("link.model", cfg.link.model, cfg.link.model == "pcie"),
          ("ssd.model", cfg.ssd.model, cfg.ssd.model == "ftl"))
    return [f"{k} = {v!r}" for k, v, used in on if used]


def check_level_supported(cfg: SimConfig, pol) -> None:
    """Refuse a tensor-level policy under the detailed components: its simulator moves whole
    tensors over FIFOs at bandwidth and would give another preset's numbers."""
    keys = detailed_components(cfg) if pol.level == "tensor" else []
    if keys:
        raise ConfigError(f"policy {pol.name!r} is tensor level and does not run through the detailed components "
                          f"({', '.join(keys)}; preset {cfg.preset!r}): run it without them (--preset default or "
                          "g10-artifact)")


def check_constants(cfg: SimConfig, c: ArtifactConstants) -> None:
    """The derived per-tick quotas must let pages move; each error names the parameters."""
    link = f"link.bandwidth_GBps = {cfg.link.bandwidth_GBps:g} and link.batch_pages = {cfg.link.batch_pages}"
    # (exact quotas carry a fraction of a page from slot to slot: any bandwidth moves pages; under
    # detailed the devices give the per-slot quotas: at least one page each)
    if c.ssd_batch < 1 and not c.exact and not is_detailed(cfg):
        raise ConfigError(f"ssd.bandwidth_GBps = {cfg.ssd.bandwidth_GBps:g} with {link} gives "
                          f"int({cfg.link.batch_pages} * {cfg.ssd.bandwidth_GBps:g} / {cfg.link.bandwidth_GBps:g}) "
                          "= 0 SSD pages per transfer slot; raise ssd.bandwidth_GBps or link.batch_pages")
    if c.host_batch < 1 and not c.exact and not is_detailed(cfg):
        raise ConfigError(f"host.bandwidth_GBps = {cfg.host.bandwidth_GBps:g} with {link} gives 0 host pages "
                          "per transfer slot; raise host.bandwidth_GBps or link.batch_pages")
    if c.alloc_batch < 1:
        page = cfg.gpu.page_size_bytes
        malloc = round(cfg.gpu.malloc_us_per_byte * page / 1e6 * c.freq_hz)
        raise ConfigError(f"gpu.malloc_us_per_byte = {cfg.gpu.malloc_us_per_byte:g} makes one {page}-byte page "
                          f"take {malloc} cycles to allocate, longer than a transfer slot ({c.tick_cycles} cycles "
                          f"for {link}): no page could ever be allocated; lower gpu.malloc_us_per_byte or raise "
                          "link.batch_pages")
    if c.gpu_pages < 1:
        raise ConfigError(f"gpu.memory_GiB = {cfg.gpu.memory_GiB:g} is less than one "
                          f"{cfg.gpu.page_size_bytes}-byte page")
    if cfg.gpu.page_size_bytes != PAGE_SIZE_BYTES:
        raise ConfigError(f"gpu.page_size_bytes = {cfg.gpu.page_size_bytes}: traces are laid out in "
                          f"{PAGE_SIZE_BYTES}-byte pages; other page sizes are not supported yet")


COLD_START_ONLY = ("run.iterations = 1: the only iteration includes the cold start (the GPU starts empty), "
                   "so the time reported is not a steady-state iteration's; give run.iterations >= 2")


def check_hint_level(hf: HintFile, pol: Policy) -> None:
    """Refuse a hint file made for the other level: page-level hints are replayed page by page with
    an eviction fallback, a tensor-level schedule by a tensor-level simulation; the two are not
    interchangeable (page-level G10 hints under g10-host give meaningless times)."""
    if hf.level and pol.level in ("page", "tensor") and hf.level != pol.level:
        want = "g10-gds or g10-host (or flashneuron)" if hf.level == "tensor" else "g10 or deepum"
        raise HintError(hf.path, f"{hf.level}-level hints (made by {hf.policy or 'an unnamed policy'}) cannot be "
                                 f"replayed by the {pol.level}-level policy {pol.name!r}; replay them with "
                                 f"--policy {want}")
    if pol.level == "ideal":
        raise HintError(hf.path, "policy 'ideal' simulates nothing and takes no hints")


def _resolve_policy(policy, cfg) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, type) and issubclass(policy, Policy):
        return policy(cfg)
    if isinstance(policy, str):
        try:
            return policies.get(policy)(cfg)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
    raise ValueError(f"policy: expected a policy name, got {type(policy).__name__}")


def _resolve_trace(trace) -> tuple[Trace, str | None]:
    if isinstance(trace, (str, os.PathLike)):
        path = resolve_trace(trace)     # a path, or a trace name (g10core.workload.tracestore)
        return read_trace(path), os.fspath(path)
    if isinstance(trace, Trace):
        validate_trace(trace)           # in-memory traces get the same checks as files
        return trace, None
    raise ValueError(f"trace: expected a Trace or a path, got {type(trace).__name__}")


def _check_fits(trace: Trace, path: str | None, gpu_memory_bytes: int) -> None:
    """``check_fits``, naming the trace file in the refusal (a refusal names the file)."""
    try:
        check_fits(trace, gpu_memory_bytes)
    except CannotFit as exc:
        if path is None:
            raise
        raise CannotFit(exc.kernel, exc.working_set_bytes, exc.gpu_memory_bytes,
                        f"{path} ({trace.model}-b{trace.batch_size})") from None


def retarget_for(trace: Trace, cfg: SimConfig, path: str | None = None) -> tuple[Trace, dict | None]:
    """``trace`` with its kernel times moved to ``gpu.model`` (:mod:`g10core.workload.retarget`), once,
    before the run; ``(trace, None)`` when it was profiled on that GPU.  A trace of a GPU not in
    the table (``profiled_gpu = ""``) runs as it is, with a warning when ``gpu.model`` is not the
    presets' A100-40GB."""
    if not trace.profiled_gpu and cfg.gpu.model != preset(DEFAULT_PRESET).gpu.model:
        warnings.warn(G10Warning(
            f"{path or f'{trace.model}-b{trace.batch_size}'}: kernel times of a GPU not in g10core.gpus "
            f"({trace.profiling_gpu or 'unnamed'}): not retargeted to gpu.model = {cfg.gpu.model!r}"), stacklevel=3)
    return retarget(trace, cfg.gpu.model)


def check_clock(cfg: SimConfig) -> None:
    """Warn when ``gpu.frequency_GHz`` is set away from the presets': it is the simulation clock (the
    unit of every cycle count), not the GPU's speed, so it scales no kernel time."""
    ref = preset(DEFAULT_PRESET).gpu.frequency_GHz
    if cfg.gpu.frequency_GHz != ref:
        warnings.warn(G10Warning(
            f"gpu.frequency_GHz = {cfg.gpu.frequency_GHz:g} is the simulation clock (the unit of the cycle counts), "
            f"not the GPU's speed: kernel times do not scale with it (results move only by rounding to whole "
            f"cycles); choose the GPU with gpu.model (--gpu)"), stacklevel=3)


def trace_identity(trace: Trace, path: str | None) -> dict:
    ident = {"path": path}
    ident.update(trace.identity())
    ident["digest"] = trace_digest(trace)
    return ident


def _peak_rss_MB() -> float:
    """Peak resident set of this process so far, in MB (10^6 bytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def tick_budget(consts: dict, trace: Trace, t00, hint_pages: int) -> int:
    """The livelock guard of the slot model: the replay is declared stuck when no kernel has
    ended for this many slots in which the SSD could take commands.

    Slots the SSD throttles (GC, a full write buffer or queue) do not count: the transfers
    then wait on the device, which is progress, however slow the device.  A finishing run
    needs, per iteration, about one slot per slot-full of pages moved (at most the pages
    every kernel touches plus the pages hinted, at the smallest per-slot quota) plus the
    slots that pass while kernels run (at most the all-faulting time Σ t00); the budget is
    4x that for the whole run, far more than any one kernel waits, and it still ends a
    livelocked run of a real workload within minutes.
    """
    ws_pages = int(kernel_working_set_bytes(trace).sum()) // PAGE_SIZE_BYTES
    quota = max(1, min(consts["ssd_batch"], consts["host_batch"], consts["gpu_batch"]))
    if consts.get("exact"):
        # pages per slot of the slowest path, a fraction of a page when it is slower than a page per slot
        units = consts["slot_units"]
        quota = min(consts["gpu_batch"], *(units / consts[k] for k in ("ssd_read_units", "ssd_write_units",
                                                                        "host_units")))
    # Python integers: the sum of t00 may exceed int64 (the budget is capped instead)
    t00_total = sum(int(x) for x in np.asarray(t00, np.int64).tolist())
    per_iter = (int((ws_pages + hint_pages) // quota) + t00_total // max(consts["tick_cycles"], 1)
                + 4 * trace.n_kernels)
    return min(4 * consts["iterations"] * per_iter + 100_000, 1 << 62)


def _count(n: int) -> str:
    """A page count as people read it: 3.2 M, 196,608."""
    return f"{n / 1e6:.1f} M" if n >= 10_000_000 else f"{n:,}"


def no_progress_reason(info: dict, trace: Trace, rule, consts: dict, given_hints: bool = False) -> str:
    """The one line a run that stopped making progress fails with (``_replay.NoProgress.info``),
    in the user's terms: which rule, which kernel, what it kept evicting."""
    k, it = int(info["kernel"]), int(info["iteration"])
    kname = str(trace.kernel_name[k]) if 0 <= k < trace.n_kernels else "?"
    kernel = f"kernel {k} ({kname}) of iteration {it}"
    slots = int(info.get("slots_without_progress", 0))
    requeued = int(info.get("requeued_pages", 0))
    needs = (f"it needs {_count(int(info.get('kernel_pages', 0)))} pages, "
             f"{_count(int(consts['gpu_pages']))} fit on the GPU")

    def tensor(t):
        name = str(trace.tensor_name[t]) if t < trace.n_tensors else "workspace"
        return f"{t}" if name == f"tensor{t}" else f"{t} ({name})"
    by_tensor = sorted(((int(n), int(t)) for t, n in info.get("requeued_by_tensor", {}).items() if int(n) > 0),
                       reverse=True)
    named = ", ".join(tensor(t) for _n, t in by_tensor[:3]) + (
        f" and {len(by_tensor) - 3} more" if len(by_tensor) > 3 else "")
    evicted = (f"eviction rule {rule.label} evicted and re-fetched {_count(requeued)} pages of the kernel's own "
               f"tensor{'s' if len(by_tensor) > 1 else ''} {named}")
    if info.get("guard") == "wait":
        if requeued:
            what = f"{evicted} without the kernel starting"
        else:
            what = (f"under eviction rule {rule.label} the {_count(int(info.get('still_missing_pages', 0)))} "
                    f"pages it waits for did not come in")
        text = (f"{kernel} never started: {what}; the run stopped after {slots:,} transfer slots in which the "
                f"pages queued for the GPU reached no new low ({needs})")
    elif info.get("guard") == "sm_steps":
        steps = int(info.get("max_idle_steps", 0))
        text = (f"{kernel}: no SM advanced in {steps:,} SM steps and fault batches in a row under eviction rule "
                f"{rule.label} (livelock: the fault handler keeps evicting pages the SMs wait for); the run stopped")
    else:
        text = f"no kernel ended for {slots:,} transfer slots under eviction rule {rule.label}"
        if info.get("waiting"):
            text += (f": {kernel} waited for {_count(int(info.get('still_missing_pages', 0)))} of its pages"
                     + (f" while {evicted}" if requeued else "") + f" ({needs})")
        text += "; the run stopped"
    if given_hints:
        text += " (with the given hints: hints that keep evicting or freeing what a waiting kernel needs never let it start)"
    return text


# the first memory-advice hint action (5-8)
ADVICE_FIRST = HINT_ADVISE_PREFER_GPU


def slot_model_applies_advice(cfg: SimConfig) -> bool:
    """The slot model applies memory advice with exact quotas and no devices (the ``default``
    preset's model); the artifact's rules (``g10-artifact``) and the slot model with devices
    ignore it (a run warns).  The far-fault handler (``fault.handler = batched``) always applies it."""
    return not cfg.scheduler.artifact_quirks and not is_detailed(cfg)


def replay_invariant_violations(raw: dict, consts: dict, t11, *, fresh_pages: int | None,
                                exact_host: bool, host_populated: int = 0, readdup_clean: int = 0) -> list[str]:
    """What a finished page-level replay must satisfy; returns one message per broken rule.

    * every kernel of every iteration ran, in order, back to back, and no faster than
      its ideal time (a kernel starts only once all its faults are served);
    * GPU-resident pages never exceed the GPU's frames; host-resident pages never
      exceed the host line (unless ``host_overflow`` was flagged, which fails the run);
    * every tick that moved pages gave a GPU frame to each page it fetched;
    * conservation over the run, from the PCIe counters and the final residency.
      Host: pages evicted to host = pages fetched from host + pages still on host +
      pages freed there by hints (0 when no free hint is applied: ``exact_host``,
      otherwise >= 0); memory advice adds to the host pages those placed there
      (``host_populated``) and read-mostly pages evicted without a write-back
      (``readdup_clean``; neither model counts a transfer for them, so the GPU's
      balance subtracts them too).  GPU, when ``fresh_pages`` (pages allocated from nothing) is
      known: fresh + fetched = evicted + still resident.  It is known for a policy that
      never drops or frees a page (LRU, no hints): every page of every non-global
      tensor a kernel touches, once.  (The artifact's ``alloc`` counter cannot close
      the balance in general: it counts only ticks that also moved pages over PCIe.)
    """
    out = []
    K, n_iter = int(consts["kernels"]), int(consts["iterations"])
    gpu_pages, host_line = int(consts["gpu_pages"]), int(consts["host_pages"])
    overflow = bool(raw["host_overflow"])
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    n = rows.shape[0]
    if n != K * n_iter:
        out.append(f"{n} kernel executions recorded, expected {K} kernels x {n_iter} iterations "
                   "(some kernel never got its pages)")
    else:
        it_ok = rows[:, 0] == np.repeat(np.arange(n_iter), K)
        k_ok = rows[:, 1] == np.tile(np.arange(K), n_iter)
        bad = np.flatnonzero(~(it_ok & k_ok))
        if bad.size:
            r = int(bad[0])
            out.append(f"execution {r} is iteration {rows[r, 0]} kernel {rows[r, 1]}, expected "
                       f"iteration {r // K} kernel {r % K}")
    if n:
        start, end, k = rows[:, 2], rows[:, 3], rows[:, 1]
        bad = np.flatnonzero(end - start < np.asarray(t11, np.int64)[np.clip(k, 0, K - 1)])
        if bad.size:
            r = int(bad[0])
            out.append(f"execution {r} (kernel {k[r]}) took {end[r] - start[r]} cycles, less than its ideal time")
        gap = np.flatnonzero(start[1:] != end[:-1])
        if start[0] != 0 or gap.size:
            r = 0 if start[0] != 0 else int(gap[0]) + 1
            out.append(f"execution {r} starts at cycle {start[r]}, not where the previous kernel ended")
        gpu, host = rows[:, 9], rows[:, 8]
        bad = np.flatnonzero((gpu < 0) | (gpu > gpu_pages))
        if bad.size:
            r = int(bad[0])
            out.append(f"{gpu[r]} GPU-resident pages at execution {r}, capacity {gpu_pages}")
        bad = np.flatnonzero((host < 0) | ((host > host_line) & (not overflow)))
        if bad.size:
            r = int(bad[0])
            out.append(f"{host[r]} host-resident pages at execution {r}, host line {host_line}")
    final = raw["final"]
    gpu_end = gpu_pages - int(final["gpu_free"])
    host_end = int(final["host_used"])
    if not 0 <= gpu_end <= gpu_pages:
        out.append(f"{gpu_end} GPU-resident pages at the end, capacity {gpu_pages}")
    if host_end < 0 or (host_end > host_line and not overflow):
        out.append(f"{host_end} host-resident pages at the end, host line {host_line}")
    pc = as_columns(raw["pcie"], TRAFFIC_ROW_DTYPE)
    alloc, in_ssd, in_host, out_ssd, out_host = (int(x) for x in pc.sum(axis=0))
    out.extend(accounting_violations(raw, n_iter))
    over = np.flatnonzero(pc[:, 1] + pc[:, 2] > pc[:, 0])
    if over.size:
        i = int(over[0])
        out.append(f"iteration {i}: {pc[i, 1] + pc[i, 2]} pages fetched but only {pc[i, 0]} given a GPU frame")
    allocated = int(final.get("allocated_pages", -1))
    if allocated >= 0:
        # exact for every policy: the replay counts allocations, dropped and freed pages
        dropped, freed_gpu = int(final["dropped_pages"]), int(final["freed_gpu_pages"])
        balance = (allocated + in_ssd + in_host - out_ssd - out_host - readdup_clean - dropped - freed_gpu
                   - gpu_end)
        if balance != 0:
            out.append(f"GPU pages not conserved: {allocated} allocated + {in_ssd + in_host} fetched - "
                       f"{out_ssd + out_host} evicted - "
                       + (f"{readdup_clean} evicted without a write-back - " if readdup_clean else "")
                       + f"{dropped} dropped - {freed_gpu} freed - "
                       f"{gpu_end} resident = {balance} (must be 0)")
        if fresh_pages is not None and allocated != fresh_pages:
            out.append(f"GPU pages not conserved: {allocated} pages allocated, but the trace has {fresh_pages} "
                       "pages to allocate once each")
        freed_host = int(final["freed_host_pages"])
        # host_populated: pages first placed in host memory (prefer_host advice, read remotely)
        balance = out_host + readdup_clean + host_populated - in_host - freed_host - host_end
        if balance != 0:
            out.append(f"host pages not conserved: {out_host} evicted to host + "
                       + (f"{readdup_clean} evicted there without a write-back + " if readdup_clean else "")
                       + f"{host_populated} placed there - "
                       f"{in_host} fetched from host - "
                       f"{freed_host} freed - {host_end} resident = {balance} (must be 0)")
        return out
    if fresh_pages is not None:
        balance = fresh_pages + in_ssd + in_host - out_ssd - out_host - gpu_end
        if balance != 0:
            out.append(f"GPU pages not conserved: {fresh_pages} allocated + {in_ssd + in_host} fetched - "
                       f"{out_ssd + out_host} evicted - {gpu_end} resident = {balance} (must be 0)")
    freed = out_host - in_host - host_end
    if freed < 0 or (exact_host and freed != 0):
        out.append(f"host pages not conserved: {out_host} evicted to host - {in_host} fetched from host - "
                   f"{host_end} resident = {freed} (must be {'0' if exact_host else '>= 0'})")
    return out


def pages_in_by_cause(raw: dict, n_iter: int) -> dict:
    """Per iteration, the pages moved to the GPU by cause and source, from the replay's kernel rows
    (demand faults) and moved rows (prefetched, hinted, refetched): ``{cause: (n_iter, 3) array}``
    with columns host, ssd, unallocated (causes: faults, prefetched, hinted, refetched)."""
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    moved = as_columns(raw["moved"], MOVED_ROW_DTYPE)
    it = rows[:, 0]
    out = {}
    for cause, cols in (("faults", rows[:, 5:8]), ("prefetched", moved[:, 0:3]), ("hinted", moved[:, 3:6]),
                        ("refetched", moved[:, 6:9])):
        a = np.zeros((n_iter, 3), np.int64)
        ok = (it >= 0) & (it < n_iter)
        np.add.at(a, it[ok], cols[ok])
        out[cause] = a
    return out


def accounting_violations(raw: dict, n_iter: int) -> list[str]:
    """Every page moved to the GPU is counted once, under one cause (docs/accounting.md): per
    iteration, pages from host memory (from the SSD) = the causes' host (SSD) pages; over the run,
    pages given a frame without a transfer = the causes' unallocated pages; and, where the traffic
    counts every frame given (the far-fault handler; the slot model's ``alloc`` counts only slots
    that also moved pages over PCIe), per iteration all pages moved in = the causes' sum."""
    if "moved" not in raw or len(raw["moved"]) != len(raw["kernels"]):
        return []
    out = []
    by = pages_in_by_cause(raw, n_iter)
    total = sum(by.values())
    pc = as_columns(raw["pcie"], TRAFFIC_ROW_DTYPE)
    for i in range(min(n_iter, pc.shape[0])):
        for name, col, src in (("host", 2, 0), ("SSD", 1, 1)):
            if int(pc[i, col]) != int(total[i, src]):
                parts = ", ".join(f"{c} {int(a[i, src])}" for c, a in by.items())
                out.append(f"iteration {i}: {int(pc[i, col])} pages moved from {name} to the GPU, but the causes "
                           f"add up to {int(total[i, src])} ({parts})")
        if "runner" in raw and int(pc[i, 0]) != int(total[i].sum()):
            out.append(f"iteration {i}: {int(pc[i, 0])} pages given a GPU frame, but the causes add up to "
                       f"{int(total[i].sum())}")
    allocated = int(raw["final"].get("allocated_pages", -1))
    if allocated >= 0 and int(total[:, 2].sum()) != allocated:
        out.append(f"{allocated} pages allocated on the GPU, but the causes' unallocated pages add up to "
                   f"{int(total[:, 2].sum())}")
    return out


class Simulator:
    """Runs traces under policies with one resolved configuration.

    Every input is validated here, before the compiled layer sees it: bad input raises
    ``ConfigError``, ``TraceError``, ``HintError``, ``CannotFit`` or ``ValueError`` (one
    line each); a broken internal invariant raises :class:`SimulationError`.

    Parameters
    ----------
    config : SimConfig, str or None
        A resolved :class:`~g10core.config.SimConfig`, a preset name, or None for
        ``default`` (the exploration preset; ``"g10-artifact"`` reproduces the paper).

    Attributes
    ----------
    config : SimConfig
        The resolved configuration every run uses.
    constants : ArtifactConstants
        The integers the page-level replay derives from it (quotas, cycles).

    Raises
    ------
    ConfigError
        An unknown preset, or a configuration the simulator cannot run.

    Examples
    --------
    >>> from g10core.simulator import Simulator
    >>> r = Simulator("g10-artifact").run("bert_base-b256", "g10")         # doctest: +SKIP
    >>> round(r.iteration_time_s, 3)                                        # doctest: +SKIP
    7.311
    """

    def __init__(self, config=None):
        cfg = _as_config(config)
        check_supported(cfg)
        self.config = cfg
        self.constants = ArtifactConstants.from_config(cfg)
        check_constants(cfg, self.constants)

    @property
    def gpu_memory_bytes(self) -> int:
        """GPU memory in bytes (whole pages of ``gpu.page_size_bytes``)."""
        return self.constants.gpu_pages * self.config.gpu.page_size_bytes

    def run(self, trace, policy, hints=None, *, eviction=None, timeline: bool = False) -> Result:
        """Simulate ``trace`` under ``policy`` and return its result.

        Parameters
        ----------
        trace : Trace, str or path
            A :class:`~g10core.workload.trace.Trace`, a trace file path, or a trace name
            (``bert_base-b256``: ``$G10_TRACES_DIR`` first, then the shipped traces).
        policy : str
            A registered policy name (:func:`g10core.policies.names`), or ``FILE.py:NAME``.
        hints : ndarray, HintFile or None
            None (the policy makes its own), a ``HINT_DTYPE`` table, or a
            :class:`~g10core.workload.hints.HintFile`; given hints replace the policy's, which then
            only decides the eviction rule (page level) or the simulation mode (tensor level).
        eviction : str or None
            An eviction rule replacing the policy's (page level): a name of
            ``g10core.uvm.evictors`` (``arrival``, ``deepum``, ``belady``) or ``FILE.py:FUNC``, a
            score function compiled with numba.
        timeline : bool
            Record what the timeline needs (page level: transfers per kernel and link direction,
            fault batches and SSD garbage collection under ``detailed``; ``docs/guide/timeline.md``)
            so that :meth:`Result.write_timeline` can draw them; the numbers do not change.

        Returns
        -------
        Result
            The run's numbers; ``failed`` is True for a run the published simulator would
            abort (host memory overflow, FlashNeuron out of memory).

        Raises
        ------
        TraceError, HintError, ConfigError, CannotFit, EvictionRuleError, PolicyError, ValueError
            Bad input (one line naming the file, row or key).
        SimulationError
            A replay that stopped or broke an invariant.

        Warns
        -----
        G10Warning
            A key set away from the reference value that ``policy`` does not model, or hints
            replayed under other values of the keys they were planned with.
        """
        t_start = time.perf_counter()
        cfg = self.config
        trace, path = _resolve_trace(trace)
        pol = _resolve_policy(policy, cfg)
        check_level_supported(cfg, pol)
        if eviction is not None:
            if isinstance(eviction, str) and eviction in evictors.ALIAS_MEANING:
                warnings.warn(G10Warning(evictors.ALIAS_MEANING[eviction]), stacklevel=2)
            eviction = evictors.resolve(eviction)      # once: every later step reads the rule
        ident = trace_identity(trace, path)
        hint_info = {"source": "policy", "policy": pol.name}
        if isinstance(hints, HintFile):
            hints = check_belongs(hints, trace)
            if not hints.level and policies.level_of(hints.policy) in LEVELS:
                # a file that does not record its level was planned at its policy's
                hints = dataclasses.replace(hints, level=policies.level_of(hints.policy))
            check_hint_level(hints, pol)
            mismatch = hints.config_mismatch(cfg)
            hint_info = {"source": "file", "policy": hints.policy, "path": hints.path, "made_for": hints.trace,
                         "level": hints.level or None, "made_with": dict(hints.made_with),
                         "config_mismatch": {k: list(v) for k, v in mismatch.items()}}
            if mismatch:
                warnings.warn(G10Warning(
                    f"{hints.path}: hints planned for " + ", ".join(f"{k} = {a!r}" for k, (a, _b) in mismatch.items())
                    + "; this run has " + ", ".join(f"{b!r}" for _a, (_x, b) in mismatch.items())
                    + " (replayed as they are)"), stacklevel=2)
            hints = hints.hints
        elif hints is not None:
            hint_info = {"source": "array", "policy": ""}
        if hints is not None:
            hints = validate_hints(hints, trace.n_kernels, trace.n_tensors, hint_info.get("path"))
        trace, moved = retarget_for(trace, cfg, path)
        if moved is not None:
            ident["retargeted"] = moved
        check_clock(cfg)
        _check_fits(trace, path, self.gpu_memory_bytes)
        check_cycles_fit(trace, cfg, path)
        ignored = tuple(ignored_parameters(cfg, pol, eviction))
        if ignored:
            warnings.warn(G10Warning(warning_text(cfg, pol.name, list(ignored))), stacklevel=2)
        if pol.level == "page" and cfg.run.iterations == 1:
            warnings.warn(G10Warning(COLD_START_ONLY), stacklevel=2)
        common = dict(policy=pol.name, preset=cfg.preset, config=cfg.to_dict(), config_hash=cfg.hash,
                      trace=ident, quirks=tuple(pol.hand_tuned_factors(trace)), ignored_parameters=ignored,
                      iteration_rule=cfg.run.iteration_rule, breakdown_rule=cfg.run.breakdown_rule,
                      kernel_names=trace.kernel_name)     # the trace's own array: the table's name column
        if timeline:
            common["timeline"] = {}        # asked for: a page-level replay records, the others draw kernels
        meta = {}
        t0 = time.perf_counter()
        plan = pol.plan(trace, cfg, hints=hints, eviction=eviction)
        meta["plan_wall_s"] = time.perf_counter() - t0
        if isinstance(plan, TensorPlan) and hints is None and cfg.noise.kernel_time_sigma > 0:
            plan = noisy_tensor_plan(pol, trace, cfg)
        if eviction is not None:
            meta["eviction_override"] = eviction.label
            if eviction.user:
                meta["eviction_compile_s"] = eviction.score.compile_s
        if isinstance(plan, TensorPlan):
            result = self._run_tensor(trace, plan, hints, hint_info, common, meta)
        elif isinstance(plan, IdealPlan):
            t11, _t10, _t00 = run_kernel_cycles(trace, cfg)
            hint_info = {"source": "none", "policy": pol.name, "n_hints": 0}
            result = results.ideal(t11, freq_hz=self.constants.freq_hz, iterations=cfg.run.iterations,
                                   hints=hint_info, metadata=meta, **common)
        elif isinstance(plan, PagePlan):
            result = self._run_page(trace, plan, hint_info, common, meta)
        else:
            raise TypeError(f"policy {pol.name!r}: plan() returned {type(plan).__name__}, not a plan")
        meta.update(wall_s=time.perf_counter() - t_start, peak_rss_MB=_peak_rss_MB(),
                    g10core_version=__version__, python=platform.python_version(),
                    created_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
        return result

    # ---- page level -------------------------------------------------------------
    def _run_page(self, trace, plan: PagePlan, hint_info, common, meta) -> Result:
        """The page-level replay; a sampled TLB whose reported rates' 99 % bounds exceed 10 % of
        them runs again with the sub-samples they need, up to ``tlb.SUBSAMPLES_CAP`` (tlb.adapt)."""
        from .tlb import adapt_subsamples

        cfg = self.config
        result = self._run_page_with(cfg, trace, plan, hint_info, common, meta)
        runs = [cfg.tlb.sample_subsamples]
        while True:
            st = result.counters.get("tlb")
            if not st or "precision" not in st or result.failed:
                return result
            n, info = adapt_subsamples(st, cfg.tlb.sample_modulus, runs)
            if n is None:
                st["sampling"]["adaptive"] = info
                return result
            runs.append(n)
            result = self._run_page_with(cfg.with_overrides({"tlb": {"sample_subsamples": n}}), trace, plan,
                                         hint_info, common, meta)

    def _run_page_with(self, cfg, trace, plan: PagePlan, hint_info, common, meta) -> Result:
        name = common["policy"]
        hints = validate_hints(plan.hints, trace.n_kernels, trace.n_tensors, f"<hints of policy {name}>")
        hint_info.update(n_hints=int(hints.shape[0]), by_action=action_counts(hints),
                         applied=bool(plan.apply_hints))
        expansion = None
        if plan.apply_hints and recompute.has_recompute(hints):
            # recompute: replay the trace expanded with the producers' copies, fold the rows back
            expansion = recompute.expand(trace, hints, hint_info.get("path") or f"<hints of policy {name}>")
            full_trace, trace, hints = trace, expansion.trace, expansion.hints
        advice = False
        if plan.apply_hints and not is_batched(cfg) and np.any(hints["action"] >= ADVICE_FIRST):
            advice = slot_model_applies_advice(cfg)
            if not advice:
                # the artifact's rules (and the slot model with devices) have no remote access or copies
                warnings.warn(G10Warning(
                    f"{name}: memory advice (hint actions prefer_gpu, prefer_host, accessed_by, read_mostly) is "
                    "applied by the slot model with exact quotas (--preset default) and by the far-fault "
                    "handler (--preset detailed); this run "
                    f"({'scheduler.artifact_quirks = true' if cfg.scheduler.artifact_quirks else 'link.model = pcie'}"
                    ") ignores it"), stacklevel=3)
        t1 = time.perf_counter()
        first_pages = None
        if is_batched(cfg):
            first_pages = aligned_first_pages(trace, cfg.fault.va_block_bytes // PAGE_SIZE_BYTES)
        devices = detailed_devices(trace, cfg) if is_detailed(cfg) else None
        # the rule --eviction gave (resolved in run) or, by its name, the policy's own
        rule = evictors.resolve(plan.eviction)
        consts, arrays, (t11, t00) = replay_inputs(trace, cfg, hints, eviction=rule,
                                                   apply_hints=plan.apply_hints, devices=devices,
                                                   first_pages=first_pages, advice=advice)
        if expansion is not None:
            # a copy runs its producer's times, with the noise of the trace's kernel (not of its new index)
            times = run_kernel_cycles(full_trace, cfg)
            arrays["t11"], arrays["t10"], arrays["t00"] = (np.ascontiguousarray(x[expansion.source]) for x in times)
            t11, t00 = arrays["t11"], arrays["t00"]
        hinted = trace.tensor_pages[hints["tensor"]].sum() if hints.size and plan.apply_hints else 0
        consts["max_ticks"] = tick_budget(consts, trace, t00, int(hinted))
        # the recorder's transfers refer to the replay's own rows, which recompute folds: with
        # recompute the timeline has the kernels only
        consts["timeline"] = "timeline" in common and expansion is None
        tlb = translator(cfg, trace, arrays, t11)
        use_evictor = victims_by_evictor(cfg, rule)
        runner = kernel_runner(cfg, consts, arrays, devices, tlb, trace, use_evictor) if is_batched(cfg) else None
        components = {"fault_model": runner} if runner is not None else {}
        if cfg.tlb.model != "none":
            components["translator"] = tlb.core
        evictor = None
        stopped = None                  # NoProgress.info: the run stopped making progress
        try:
            evictor = consts["evictor"] = rule.evictor(consts, arrays)     # the replay runs this one
            replay = Replay(consts, arrays, *(devices or ()), **components)
            raw = replay.run()
        except NoProgress as exc:
            # a user's score function that failed is the cause to name, not the replay's state
            evictors.check_score_failures(rule, evictor)
            raw, stopped = exc.raw, dict(exc.info, state=" ".join(str(exc).split()))
        except RuntimeError as exc:
            evictors.check_score_failures(rule, evictor)
            raise SimulationError(f"{trace.model}-b{trace.batch_size} under {name}: the replay stopped: "
                                  f"{' '.join(str(exc).split())}") from exc
        evictors.check_score_failures(rule, evictor)
        meta["simulate_wall_s"] = time.perf_counter() - t1
        applied = hints if plan.apply_hints else hints[:0]
        frees = bool(np.any(applied["action"] == HINT_FREE))
        fresh = None
        if rule.arrival_order and applied.size == 0:      # (other rules drop dead pages)
            touched = np.zeros(trace.n_tensors, bool)
            touched[trace.access_tensor] = True
            fresh = int(trace.tensor_pages[touched & ~trace.tensor_is_global].sum())
        if stopped is None:
            populated = clean = 0
            if runner is not None:        # the far-fault handler: pages placed in host, read duplicates dropped
                rs = runner.fault_handler.remote_stats()
                populated, clean = rs["remote_populated"], rs["readdup_clean_pages"]
            if "advice" in raw:           # the slot model's advice: pages placed in host, evictions dropped
                populated, clean = raw["advice"]["remote_populated"], raw["advice"]["readdup_clean_pages"]
            problems = replay_invariant_violations(raw, consts, t11, fresh_pages=fresh, exact_host=not frees,
                                                   host_populated=populated, readdup_clean=clean)
            if problems:
                raise SimulationError(f"{trace.model}-b{trace.batch_size} under {name}: " + "; ".join(problems))
        recompute_counters = None
        if expansion is not None:
            raw, recompute_counters = fold_recompute(raw, expansion, t11, consts["freq_hz"])
            trace = full_trace
            t11, t00 = (np.ascontiguousarray(x) for x in (t11[~expansion.is_copy], t00[~expansion.is_copy]))
            consts = dict(consts, kernels=trace.n_kernels)
        if "timeline" in raw:
            common["timeline"] = timeline_data(raw, consts, detailed=runner is not None)
        final = raw["final"]
        counters = {"ticks": dict(raw["ticks"]), "events": dict(raw["events"]),
                    "final_gpu_used_pages": consts["gpu_pages"] - final["gpu_free"],
                    "final_host_used_pages": final["host_used"], "gpu_pages": consts["gpu_pages"],
                    "host_line_pages": consts["host_pages"], "eviction": rule.label,
                    "tick_cycles": consts["tick_cycles"]}
        if raw.get("evictor"):
            counters["evictor"] = dict(raw["evictor"])
        if recompute_counters is not None:
            counters["recompute"] = recompute_counters
        if devices is not None:
            counters.update(device_counters(raw, *devices, consts))
        if cfg.tlb.model != "none":
            counters["tlb"] = tlb.stats()
        if runner is not None:
            counters.update(handler_counters(raw, runner, cfg, use_evictor))
        if "advice" in raw:
            # the names of the far-fault handler's counters (detailed); the slot model detects no thrashing
            counters["thrashing"] = {"thrashing_events": 0, "throttles": 0, "pins": 0, "pinned_pages": 0,
                                     **raw["advice"], "thrashing_enabled": False}
        if stopped is not None:
            counters["no_progress"] = stopped
            return results.stopped(
                raw, no_progress_reason(stopped, trace, rule, consts, hint_info["source"] in ("file", "array")),
                t11=t11, t00=t00, freq_hz=self.constants.freq_hz, iterations=consts["iterations"],
                hints=hint_info, counters=counters, translation=is_detailed(cfg) or cfg.tlb.model != "none",
                metadata=meta, **common)
        if raw["host_overflow"]:
            return results.failed(
                f"host memory overflow: the evicted pages exceed host.memory_GiB = {cfg.host.memory_GiB:g} "
                f"({consts['host_pages']} pages); the published simulator aborts here",
                level="page", ideal_time_s=int(np.sum(t11)) / self.constants.freq_hz, hints=hint_info,
                counters=counters, metadata=meta, **common)
        return results.from_replay(raw, t11=t11, t00=t00, freq_hz=self.constants.freq_hz,
                                   iterations=consts["iterations"], hints=hint_info, counters=counters,
                                   translation=is_detailed(cfg) or cfg.tlb.model != "none",
                                   metadata=meta, **common)

    # ---- tensor level -----------------------------------------------------------
    def _run_tensor(self, trace, plan: TensorPlan, hints, hint_info, common, meta) -> Result:
        cfg = self.config
        t0 = time.perf_counter()
        d = plan.simulate()
        if hints is None:
            sched = d.get("schedule", {}) or {}
            hint_info["n_hints"] = int(sched.get("n_hints", sched.get("n_offloads", 0)))
        else:
            hint_info.update(n_hints=int(hints.shape[0]), by_action=action_counts(hints))
        meta["simulate_wall_s"] = time.perf_counter() - t0
        return results.from_tensor_level(d, page_size_bytes=cfg.gpu.page_size_bytes, hints=hint_info,
                                         metadata=meta, sim_trace=trace, **common)


def simulate(trace, policy: str, *, config=None, preset_name: str = DEFAULT_PRESET, config_file=None,
             sets=None, hints=None) -> Result:
    """One run, with the configuration given as a whole or as preset + TOML file + overrides.

    Parameters
    ----------
    trace : Trace, str or path
        As for :meth:`Simulator.run`.
    policy : str
        A registered policy name.
    config : SimConfig, str or None
        The configuration (or a preset name); when given, the next three are ignored.
    preset_name : str
        The preset to start from (default ``"default"``).
    config_file : str or path, optional
        A TOML file of overrides.
    sets : list of str, optional
        ``section.key=value`` overrides, as ``--set`` takes them.
    hints : ndarray or HintFile, optional
        Hints replacing the policy's.

    Returns
    -------
    Result
    """
    cfg = _as_config(config) if config is not None else resolve_config(preset_name, config_file, sets)
    return Simulator(cfg).run(trace, policy, hints)


def policy_hints(trace, policy: str, config=None) -> tuple[np.ndarray, Trace, str | None]:
    """The hint table a policy would apply to ``trace`` (for ``g10sim hints``).

    Page-level policies: their plan's hints.  Tensor-level ones: their schedule
    (``flashneuron``: its offloads; ``g10-gds``/``g10-host``: the G10 schedule variant).

    Parameters
    ----------
    trace : Trace, str or path
        As for :meth:`Simulator.run`.
    policy : str
        A registered policy name.
    config : SimConfig, str or None
        The configuration the policy plans with (None: ``default``).

    Returns
    -------
    hints : ndarray
        The validated ``HINT_DTYPE`` table.
    trace : Trace
        The trace it was planned for.
    path : str or None
        The trace's file, None for an in-memory trace.

    Raises
    ------
    ValueError
        The policy has no hint table (``base-uvm``, ``ideal``).
    """
    cfg = _as_config(config)
    sim = Simulator(cfg)
    trace, path = _resolve_trace(trace)
    pol = _resolve_policy(policy, cfg)
    source, (trace, _moved) = trace, retarget_for(trace, cfg, path)   # planned on gpu.model's kernel times
    _check_fits(trace, path, sim.gpu_memory_bytes)
    check_cycles_fit(trace, cfg, path)
    plan = pol.plan(trace, cfg) if pol.level == "page" else None
    if isinstance(plan, PagePlan):
        h = plan.hints if plan.apply_hints else empty_hints()
    elif isinstance(pol, TensorPolicy):
        h = pol.schedule(trace)
    else:
        raise ValueError(f"policy {pol.name!r} has no hint table")
    return validate_hints(h, trace.n_kernels, trace.n_tensors, f"<hints of policy {pol.name}>"), source, path
