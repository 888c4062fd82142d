"""Which configuration keys each policy models, and the warning for those it does not.

Every key of ``config.py`` is read by some policies and not by others: the tensor-level
simulator (FlashNeuron, G10-GDS, G10-Host) moves whole tensors over two FIFOs and has no
transfer slots, fault-time model, PCIe device or FTL; FlashNeuron and G10-GDS have no host
memory; only the G10 family reads the G10 scheduler's keys and only DeepUM+ (or the
``deepum`` eviction rule) the prefetch window; ``ideal`` simulates nothing.  Where a model
should read a key it now does (``docs/guide/configuration.md``, "Which parameters each policy
models").  Each policy declares the keys it reads (``Policy.reads``: its level's by default, so a
plug-in policy inherits its base class's) and those that mean nothing to it by definition
(``Policy.not_applicable``); a run that sets a key its policy does not read to a value that
differs from the exploration preset's (or, for the keys in :data:`PRESET_KEYS`, from its own
preset's) warns, naming it (:class:`~g10core.errors.G10Warning`; ``g10sim`` prints one line
on stderr).  The result records them as ``ignored_parameters``.  Some keys are read only by
a component a run may not have (the detailed devices, the far-fault handler, the TLB):
ignored by every policy without it; the physical fault time (``fault.handler = physical``,
the ``default`` preset) reads the handler's batch costs and grouping (:data:`PHYSICAL_KEYS`).
The far-fault handler supersedes the profile fault-time model's latencies and the allocation
cost (:data:`BATCHED_SUPERSEDED_KEYS`), the physical fault time its latencies
(:data:`PHYSICAL_SUPERSEDED_KEYS`): read then only by a planner, ``Policy.plans_with``.  Some
keys mean something only while another selects their mechanism (:data:`DEPENDENT_KEYS`:
``noise.seed`` without noise, the page-walk cache's keys without the cache, ...): ignored, and
warned of, otherwise.
"""
from __future__ import annotations

from dataclasses import fields

from .. import policies
from ..config import DEFAULT_PRESET, FTL_KEYS, SECTIONS, preset
from ..uvm import evictors
from .base import WINDOW_KEY

HANDLER_KEYS = tuple(f"fault.{f.name}" for f in fields(SECTIONS["fault"])
                     if f.name not in ("system_latency_us", "handler"))
TLB_KEYS = tuple(f"tlb.{f.name}" for f in fields(SECTIONS["tlb"]) if f.name != "model")


def modelled_by() -> dict[str, tuple[str, ...]]:
    """key -> the registered policies that read it (plug-ins included), from their declarations."""
    classes = [policies.get(name) for name in policies.names()]
    return {f"{s}.{f.name}": tuple(c.name for c in classes if f"{s}.{f.name}" in c.reads)
            for s in SECTIONS for f in fields(SECTIONS[s])}


def not_applicable() -> dict[str, tuple[str, ...]]:
    """key -> the registered policies to which it means nothing by definition (no warning)."""
    classes = [policies.get(name) for name in policies.names()]
    out: dict[str, tuple[str, ...]] = {}
    for c in classes:
        for key in sorted(c.not_applicable):
            out[key] = out.get(key, ()) + (c.name,)
    return out


def __getattr__(name):
    # the tables these names held when they were written out here, now read off the registry
    if name == "MODELLED_BY":
        return modelled_by()
    if name == "NOT_APPLICABLE":
        return not_applicable()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# keys read only by the detailed devices: ignored by every policy under the slot model
PCIE_KEYS = ("link.latency_us", "link.generation", "link.lanes", "link.max_payload_bytes")
FTL_DEVICE_KEYS = ("ssd.device", "ssd.capacity_GiB") + tuple(f"ssd.{k}" for k in FTL_KEYS)
# keys read only by the slot model's SSD (ssd.model = bandwidth): the FTL device has its own timing
SLOT_SSD_KEYS = ("ssd.write_bandwidth_GBps", "ssd.duplex")

# keys the far-fault handler (fault.handler = batched) supersedes: the profile fault-time model
# (l_sys, l_ssd) and the slot model's allocation quota read them; the handler services faults in
# batches of its own cost (fault.batch_*) and allocates on first touch at no cost, so under it
# only a policy's planner reads them (Policy.plans_with: G10's lead and safe times)
BATCHED_SUPERSEDED_KEYS = ("gpu.malloc_us_per_byte", "ssd.latency_us", "fault.system_latency_us")
# the far-fault handler's keys the physical fault time (fault.handler = physical) reads too: the
# driver's batch costs and how faults group into migration units, batches and VA blocks
PHYSICAL_KEYS = ("fault.migration_unit_bytes", "fault.va_block_bytes", "fault.batch_faults", "fault.batch_profile",
                 "fault.batch_fixed_us", "fault.batch_per_block_us", "fault.batch_per_page_us", "fault.batch_unmap_us")
# keys the physical fault time supersedes: only the profile formula (l_sys, l_ssd) reads them in
# the replay, so under it only a policy's planner does (Policy.plans_with: G10's safe time)
PHYSICAL_SUPERSEDED_KEYS = ("ssd.latency_us", "fault.system_latency_us")

# keys that mean something only while another key selects their mechanism: key -> (whether
# cfg selects it, the words for when it does not); ignored (and warned of) otherwise
_RANDOM_VICTIMS = ("random", "d-choices")


def _victim_rule(cfg) -> str:
    from ..ssd import ssd_preset

    return cfg.ssd.victim_policy or ssd_preset(cfg.ssd.device).victim_policy


DEPENDENT_KEYS = {
    "noise.seed": (lambda c: c.noise.kernel_time_sigma > 0, "noise.kernel_time_sigma = 0 draws no noise"),
    "fault.sequential_units": (lambda c: c.fault.prefetcher == "sequential",
                               "only the sequential prefetcher reads it"),
    "fault.prefetch_threshold": (lambda c: c.fault.prefetcher == "tree", "only the tree prefetcher reads it"),
    "fault.prefetch_min_faults": (lambda c: c.fault.prefetcher == "tree", "only the tree prefetcher reads it"),
    "fault.prefetch_tree_rule": (lambda c: c.fault.prefetcher == "tree", "only the tree prefetcher reads it"),
    "tlb.pwc_entries": (lambda c: c.tlb.pwc_enabled, "tlb.pwc_enabled = false"),
    "tlb.pwc_ways": (lambda c: c.tlb.pwc_enabled, "tlb.pwc_enabled = false"),
    "tlb.pwc_latency_cycles": (lambda c: c.tlb.pwc_enabled, "tlb.pwc_enabled = false"),
    "tlb.walk_latency_cycles": (lambda c: c.tlb.page_size_bytes != 2097152, "2 MiB pages walk in "
                                "tlb.walk_latency_2MiB_cycles"),
    "tlb.walk_latency_2MiB_cycles": (lambda c: c.tlb.page_size_bytes == 2097152, "read only with "
                                     "tlb.page_size_bytes = 2 MiB"),
    "tlb.sample_subsamples": (lambda c: c.tlb.sample_modulus > 1, "tlb.sample_modulus = 1 samples nothing"),
    "tlb.sample_seed": (lambda c: c.tlb.sample_modulus > 1, "tlb.sample_modulus = 1 samples nothing"),
    "ssd.seed": (lambda c: _victim_rule(c).split(":")[0] in _RANDOM_VICTIMS,
                 "only the random GC victim rules (random, d-choices:N) draw"),
    "scheduler.zero_collective_busbw_GBps": (lambda c: c.scheduler.zero_ranks > 1,
                                             "scheduler.zero_ranks = 1 runs no collective"),
}

# a preset sets these as part of what it is: compared with the run's own preset
PRESET_KEYS = ("run.iterations", "scheduler.artifact_quirks", "run.iteration_rule", "run.breakdown_rule",
               "ssd.duplex", "fault.handler")


def _flat(cfg) -> dict:
    d = cfg.to_dict()
    return {f"{s}.{k}": v for s in SECTIONS for k, v in d[s].items()}


_PRESET_FLAT: dict[str, tuple] = {}     # preset name -> (its shared SimConfig, its _flat): read only


def _preset_flat(name: str) -> dict:
    """``_flat`` of preset ``name``, flattened once per process (every run compares with it)."""
    cfg = preset(name)
    cached = _PRESET_FLAT.get(name)
    if cached is None or cached[0] is not cfg:
        cached = _PRESET_FLAT[name] = (cfg, _flat(cfg))
    return cached[1]


def _policy_class(policy):
    if isinstance(policy, str):
        try:
            return policies.get(policy)
        except KeyError:
            return None
    if isinstance(policy, type) and issubclass(policy, policies.Policy):
        return policy
    return type(policy) if isinstance(policy, policies.Policy) else None


def ignored_parameters(cfg, policy, eviction=None) -> list[str]:
    """The keys whose value in ``cfg`` differs from the reference value and that ``policy`` does not
    read (see the module docstring).  ``policy``: a registered name, or a ``Policy`` class or
    instance (its declaration); a name not registered is not checked.  ``eviction``: the rule
    replacing the policy's (a rule or a name, ``evictors.resolve``); a rule with DeepUM+'s
    window (the policy's own, or this one) reads ``scheduler.prefetch_degree``."""
    cls = _policy_class(policy)
    if cls is None:
        return []
    rule = (evictors.resolve(eviction) if eviction is not None else
            evictors.resolve(cls.eviction) if cls.level == "page" else None)
    reads_keys = (cls.reads | {WINDOW_KEY}) if rule is not None and rule.window else cls.reads
    now = _flat(cfg)
    base = _preset_flat(DEFAULT_PRESET)
    own = _preset_flat(cfg.preset) if cfg.preset else base
    from_model = _from_gpu_model(cfg, now)
    out = []
    for key, value in now.items():
        ref = own[key] if key in PRESET_KEYS else base[key]
        if value == ref or key in from_model:
            continue
        reads = key in reads_keys
        if key in PCIE_KEYS and cfg.link.model != "pcie":
            reads = False
        if key in FTL_DEVICE_KEYS and cfg.ssd.model != "ftl":
            reads = False
        # (the exact quotas that read them are off under the artifact's quirks: whole pages, full duplex)
        if key in SLOT_SSD_KEYS and (cfg.ssd.model == "ftl" or cfg.fault.handler == "batched"
                                     or cfg.scheduler.artifact_quirks):
            # a planner that books by it still reads it (G10's SSD budget), except under the quirks
            reads = key in cls.plans_with and not cfg.scheduler.artifact_quirks
        if key in HANDLER_KEYS and cfg.fault.handler != "batched" and not (
                cfg.fault.handler == "physical" and key in PHYSICAL_KEYS):
            reads = False
        if key in TLB_KEYS and cfg.tlb.model == "none":
            reads = False
        if key == "gpu.sms" and cfg.fault.handler != "batched" and cfg.tlb.model == "none":
            reads = False
        if key in BATCHED_SUPERSEDED_KEYS and cfg.fault.handler == "batched" and key not in cls.plans_with:
            reads = False
        if key in PHYSICAL_SUPERSEDED_KEYS and cfg.fault.handler == "physical" and key not in cls.plans_with:
            reads = False
        if reads and key in DEPENDENT_KEYS and not DEPENDENT_KEYS[key][0](cfg):
            reads = False
        if not reads and key not in cls.not_applicable:
            out.append(key)
    return out


def _from_gpu_model(cfg, now: dict) -> frozenset[str]:
    """Keys at the value ``gpu.model`` gives them whose effect the run models through another key:
    the link's generation and lanes through ``link.bandwidth_GBps`` (their raw rate, when it is the
    model's too), the SM count through the kernel times retargeted to the model's peaks.  Not
    "ignored": a ``--gpu`` run's link is that generation's bandwidth."""
    from ..config import model_values

    try:
        given = model_values(cfg.gpu.model)
    except ValueError:
        return frozenset()
    keys = {"gpu.sms"} if now["gpu.sms"] == given["gpu.sms"] else set()
    if now["link.bandwidth_GBps"] == given["link.bandwidth_GBps"]:
        keys |= {k for k in ("link.generation", "link.lanes") if now[k] == given[k]}
    return frozenset(keys)


def warning_text(cfg, policy: str, keys: list[str]) -> str:
    now = _flat(cfg)
    vals = ", ".join(f"{k} = {now[k]!r}" for k in keys)
    return (f"policy {policy!r} does not model {vals}: the result is the same as without "
            f"{'it' if len(keys) == 1 else 'them'} (docs/guide/configuration.md: Which parameters each policy "
            "models)")
