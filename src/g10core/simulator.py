"""Simulator: the conductor of a run, from a config and a trace to a Result.

``Simulator.run`` reads as the data path: resolve (the trace, the policy, the eviction rule, the
hints, each validated before the compiled layer sees it), plan (the policy's), replay (page
level: the artifact's integer constants and the trace as flat arrays handed to the compiled
``uvm._replay.Replay``; tensor level: the policy's own simulation; ``ideal``: the sum of ideal
kernel times), result (a :class:`~g10core.results.Result`).  The pieces live with what they
belong to: the rules between configuration keys in :mod:`g10core.config`, the slot model's
quotas and checks in :mod:`g10core.uvm.slots` (its inputs from the trace in
:mod:`g10core.workload.slot_inputs`), the detailed machine's assembly and counters in
:mod:`g10core.uvm.detailed`, the replay's invariants in :mod:`g10core.uvm.invariants`, the TLB's
translator in :mod:`g10core.tlb`, recompute's folding in :mod:`g10core.workload.recompute`;
their names stay importable from here.

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
# the pieces of a run live with what they belong to; the names stay importable from here
from .uvm.detailed import (aligned_first_pages, detailed_devices, device_counters, handler_counters,  # noqa: F401
                           kernel_runner, ssd_first_pages, victims_by_evictor)
from .uvm.invariants import (accounting_violations, no_progress_reason, pages_in_by_cause,  # noqa: F401
                             replay_invariant_violations, run_violations)
from .tlb import translator
from .timeline import timeline_data
from .workload.vitality import CannotFit, check_fits  # noqa: F401 (CannotFit: part of this module's API)
from .uvm.slots import ArtifactConstants, check_constants, detailed_quotas, physical_fault_params  # noqa: F401
from .workload.slot_inputs import check_cycles_fit, kernel_cycles, liveness
from .config import (ARTIFACT_PRESET, DEFAULT_PRESET, SimConfig, check_clock, check_level_supported,  # noqa: F401
                     check_supported, detailed_components, is_batched, is_detailed, preset, resolve,
                     slot_model_applies_advice)
from .errors import ConfigError, G10Warning, HintError, SimulationError  # noqa: F401 (SimulationError: API)
from .policies.modelled import ignored_parameters, warning_text
from .workload import recompute
from .workload.hints import LEVELS, HintFile, action_counts, check_belongs, trace_digest, validate_hints
from .workload.recompute import fold_recompute
from .workload.noise import kernel_time_ratios, noisy_kernel_cycles, resolve_seed
from .policies import IdealPlan, PagePlan, Policy, TensorPlan, TensorPolicy, empty_hints
from .results import Result
from .codes import HINT_ADVISE_PREFER_GPU
from .workload.trace import (ACCESS_READ, ACCESS_WRITE, PAGE_SIZE_BYTES, Trace, kernel_working_set_bytes, read_trace,
                             validate_trace)
from .workload.tracestore import resolve_trace
from .workload.retarget import retarget

GiB = 1 << 30


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


def replay_counters(raw: dict, consts: dict, rule, cfg, *, recompute, devices, tlb, runner, use_evictor) -> dict:
    """A page-level run's counters: the replay's own (slots, events, final residency, the evictor's),
    recompute's, and those of the components that ran (the devices, the TLBs, the far-fault
    handler; the slot model's advice under the handler's names)."""
    final = raw["final"]
    counters = {"ticks": dict(raw["ticks"]), "events": dict(raw["events"]),
                "final_gpu_used_pages": consts["gpu_pages"] - final["gpu_free"],
                "final_host_used_pages": final["host_used"], "gpu_pages": consts["gpu_pages"],
                "host_line_pages": consts["host_pages"], "eviction": rule.label,
                "tick_cycles": consts["tick_cycles"],
                # why busy slots were or were not repeated in bulk (docs/physics.md, "Bulk repeats")
                "bulk": dict(raw.get("bulk", {}))}
    if raw.get("evictor"):
        counters["evictor"] = dict(raw["evictor"])
    if recompute is not None:
        counters["recompute"] = recompute
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
    return counters


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


def retarget_for(trace: Trace, cfg: SimConfig, path: str | None = None, *,
                 stacklevel: int = 3) -> tuple[Trace, dict | None]:
    """``trace`` with its kernel times moved to ``gpu.model`` (:mod:`g10core.workload.retarget`), once,
    before the run; ``(trace, None)`` when it was profiled on that GPU.  A trace of a GPU not in
    the table (``profiled_gpu = ""``) runs as it is, with a warning when ``gpu.model`` is not the
    presets' A100-40GB."""
    if not trace.profiled_gpu and cfg.gpu.model != preset(DEFAULT_PRESET).gpu.model:
        warnings.warn(G10Warning(
            f"{path or f'{trace.model}-b{trace.batch_size}'}: kernel times of a GPU not in g10core.gpus "
            f"({trace.profiling_gpu or 'unnamed'}): not retargeted to gpu.model = {cfg.gpu.model!r}"), stacklevel=stacklevel)
    return retarget(trace, cfg.gpu.model)


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


# the first memory-advice hint action (5-8)
ADVICE_FIRST = HINT_ADVISE_PREFER_GPU


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
        # resolve: the trace, the policy, the eviction rule and the hints, each checked once
        trace, path, pol, eviction = self._resolve(trace, policy, eviction)
        ident = trace_identity(trace, path)
        hints, hint_info = self._resolve_hints(hints, trace, pol)
        trace, common = self._prepare(trace, path, ident, pol, eviction, timeline)
        # plan
        meta = {}
        plan = self._plan(pol, trace, hints, eviction, meta)
        # replay (page level), simulate (tensor level) or sum (ideal): the result
        if isinstance(plan, TensorPlan):
            result = self._run_tensor(trace, plan, hints, hint_info, common, meta)
        elif isinstance(plan, IdealPlan):
            result = self._run_ideal(trace, pol, common, meta)
        elif isinstance(plan, PagePlan):
            result = self._run_page(trace, plan, hint_info, common, meta)
        else:
            raise TypeError(f"policy {pol.name!r}: plan() returned {type(plan).__name__}, not a plan")
        if trace.kernel_phase is not None and not result.failed:   # an inference run: its batch's metrics
            from .inference.metrics import inference_metrics

            result = dataclasses.replace(result, inference=inference_metrics(result, trace))
        meta.update(wall_s=time.perf_counter() - t_start, peak_rss_MB=_peak_rss_MB(),
                    g10core_version=__version__, python=platform.python_version(),
                    created_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
        return result

    # ---- the steps of a run -----------------------------------------------------
    def _resolve(self, trace, policy, eviction):
        """(trace, its path, policy, eviction rule or None), read and checked."""
        cfg = self.config
        trace, path = _resolve_trace(trace)
        pol = _resolve_policy(policy, cfg)
        check_level_supported(cfg, pol)
        if eviction is not None:
            if isinstance(eviction, str) and eviction in evictors.ALIAS_MEANING:
                warnings.warn(G10Warning(evictors.ALIAS_MEANING[eviction]), stacklevel=3)
            eviction = evictors.resolve(eviction)      # once: every later step reads the rule
        return trace, path, pol, eviction

    def _resolve_hints(self, hints, trace, pol):
        """(validated hint table or None, what the result says of them)."""
        cfg = self.config
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
                    + " (replayed as they are)"), stacklevel=3)
            hints = hints.hints
        elif hints is not None:
            hint_info = {"source": "array", "policy": ""}
        if hints is not None:
            hints = validate_hints(hints, trace.n_kernels, trace.n_tensors, hint_info.get("path"))
        return hints, hint_info

    def _prepare(self, trace, path, ident, pol, eviction, timeline):
        """The trace on ``gpu.model``'s kernel times, checked against the machine, and what every
        result of the run records (``common``); warns of keys the policy does not model."""
        cfg = self.config
        trace, moved = retarget_for(trace, cfg, path, stacklevel=4)
        if moved is not None:
            ident["retargeted"] = moved
        check_clock(cfg, stacklevel=4)
        _check_fits(trace, path, self.gpu_memory_bytes)
        check_cycles_fit(trace, cfg, path)
        ignored = tuple(ignored_parameters(cfg, pol, eviction))
        if ignored:
            warnings.warn(G10Warning(warning_text(cfg, pol.name, list(ignored))), stacklevel=3)
        if pol.level == "page" and cfg.run.iterations == 1:
            warnings.warn(G10Warning(COLD_START_ONLY), stacklevel=3)
        common = dict(policy=pol.name, preset=cfg.preset, config=cfg.to_dict(), config_hash=cfg.hash,
                      trace=ident, quirks=tuple(pol.hand_tuned_factors(trace)), ignored_parameters=ignored,
                      iteration_rule=cfg.run.iteration_rule, breakdown_rule=cfg.run.breakdown_rule,
                      kernel_names=trace.kernel_name)     # the trace's own array: the table's name column
        if timeline:
            common["timeline"] = {}        # asked for: a page-level replay records, the others draw kernels
        return trace, common

    def _plan(self, pol, trace, hints, eviction, meta):
        """The policy's plan (timed into ``meta``); a tensor-level plan under noise simulates on
        the perturbed kernel times."""
        cfg = self.config
        t0 = time.perf_counter()
        plan = pol.plan(trace, cfg, hints=hints, eviction=eviction)
        meta["plan_wall_s"] = time.perf_counter() - t0
        if isinstance(plan, TensorPlan) and hints is None and cfg.noise.kernel_time_sigma > 0:
            plan = noisy_tensor_plan(pol, trace, cfg)
        if eviction is not None:
            meta["eviction_override"] = eviction.label
            if eviction.user:
                meta["eviction_compile_s"] = eviction.score.compile_s
        return plan

    # ---- ideal --------------------------------------------------------------------
    def _run_ideal(self, trace, pol, common, meta) -> Result:
        cfg = self.config
        t11, _t10, _t00 = run_kernel_cycles(trace, cfg)
        hint_info = {"source": "none", "policy": pol.name, "n_hints": 0}
        return results.ideal(t11, freq_hz=self.constants.freq_hz, iterations=cfg.run.iterations,
                             hints=hint_info, metadata=meta, **common)

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
        if stopped is None:
            applied = hints if plan.apply_hints else hints[:0]
            problems = run_violations(raw, consts, t11, trace, rule, applied, runner)
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
        counters = replay_counters(raw, consts, rule, cfg, recompute=recompute_counters, devices=devices, tlb=tlb,
                                   runner=runner, use_evictor=use_evictor)
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
