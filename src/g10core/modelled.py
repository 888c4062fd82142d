"""Which configuration keys each policy models, and the warning for those it does not.

Every key of ``config.py`` is read by some policies and not by others: the tensor-level
simulator (FlashNeuron, G10-GDS, G10-Host) moves whole tensors over two FIFOs and has no
transfer slots, fault-time model, PCIe device or FTL; FlashNeuron and G10-GDS have no host
memory; only the G10 family reads the G10 scheduler's keys and only DeepUM+ (or the
``deepum`` eviction rule) the prefetch window; ``ideal`` simulates nothing.  Where a model
should read a key it now does (``README``: "Which parameters each policy models"); a key a
policy cannot read by its definition is listed here, and a run whose value of it differs
from the exploration preset's (or, for the keys in :data:`PRESET_KEYS`, from its own
preset's) warns, naming it (:class:`~g10core.errors.G10Warning`; ``g10sim`` prints one line
on stderr).  The result records them as ``ignored_parameters``.
"""
from __future__ import annotations

from dataclasses import fields

from .config import DEFAULT_PRESET, FTL_KEYS, SECTIONS, preset

PAGE = ("base-uvm", "belady", "deepum", "g10")
TENSOR = ("flashneuron", "g10-gds", "g10-host")
G10_FAMILY = ("g10", "g10-gds", "g10-host")
ALL = PAGE + TENSOR

# key -> the built-in policies that read it (ideal reads only gpu.frequency_GHz and run.*)
_DETAILED_ONLY = "page level, with link.model = pcie / ssd.model = ftl (preset detailed)"
MODELLED_BY: dict[str, tuple[str, ...]] = {
    "gpu.memory_GiB": ALL,
    "gpu.frequency_GHz": ALL + ("ideal",),
    "gpu.page_size_bytes": ALL + ("ideal",),           # one value only
    "gpu.malloc_us_per_byte": PAGE + ("g10-gds", "g10-host"),   # allocation per slot; G10's lead time
    "host.memory_GiB": PAGE + ("g10-host",),
    "host.bandwidth_GBps": PAGE + ("g10-host",),         # capped by link.bandwidth_GBps everywhere
    "ssd.bandwidth_GBps": ALL,
    "ssd.latency_us": PAGE + ("g10-gds", "g10-host"),   # fault-time model; G10's safe time
    "ssd.write_bandwidth_GBps": PAGE,                  # the slot model (ssd.model = bandwidth)
    "ssd.duplex": PAGE,                                # the slot model (ssd.model = bandwidth)
    "link.bandwidth_GBps": ALL,
    "link.batch_pages": PAGE,
    "link.latency_us": PAGE,                           # only with link.model = pcie
    "link.model": PAGE,
    "link.generation": PAGE,
    "link.lanes": PAGE,
    "link.max_payload_bytes": PAGE,
    "ssd.model": PAGE,
    "ssd.device": PAGE,
    "ssd.capacity_GiB": PAGE,
    "fault.system_latency_us": PAGE + ("g10-gds", "g10-host"),
    "scheduler.delta": G10_FAMILY,
    "scheduler.target_fraction": G10_FAMILY,
    "scheduler.prefetch_degree": ("deepum",),          # and any policy run with --eviction deepum
    "scheduler.artifact_quirks": ("deepum", "g10", "flashneuron", "g10-gds", "g10-host"),
    "run.iterations": PAGE + ("ideal",),               # tensor level: one steady-state iteration
    "run.iteration_rule": PAGE + TENSOR + ("ideal",),
    "run.breakdown_rule": PAGE + TENSOR + ("ideal",),
    "noise.kernel_time_sigma": ALL + ("ideal",),         # every policy runs the noisy kernel times
    "noise.seed": ALL + ("ideal",),
}
for _k in FTL_KEYS:
    MODELLED_BY[f"ssd.{_k}"] = PAGE
# the far-fault handler (fault.handler = batched) and the TLB hierarchy (tlb.model = hierarchy): page level
MODELLED_BY["fault.handler"] = PAGE
MODELLED_BY["gpu.sms"] = PAGE
HANDLER_KEYS = tuple(f"fault.{f.name}" for f in fields(SECTIONS["fault"])
                     if f.name not in ("system_latency_us", "handler"))
TLB_KEYS = tuple(f"tlb.{f.name}" for f in fields(SECTIONS["tlb"]) if f.name != "model")
for _k in HANDLER_KEYS + TLB_KEYS + ("tlb.model",):
    MODELLED_BY[_k] = PAGE

# keys that do not apply to a policy by its definition (no warning): FlashNeuron and G10-GDS
# have no host memory, whatever the machine has
NOT_APPLICABLE: dict[str, tuple[str, ...]] = {
    "host.memory_GiB": ("flashneuron", "g10-gds"),
    "host.bandwidth_GBps": ("flashneuron", "g10-gds"),
}

# keys read only by the detailed devices: ignored by every policy under the slot model
PCIE_KEYS = ("link.latency_us", "link.generation", "link.lanes", "link.max_payload_bytes")
# keys read only by the slot model's SSD (ssd.model = bandwidth): the FTL device has its own timing
SLOT_SSD_KEYS = ("ssd.write_bandwidth_GBps", "ssd.duplex")
FTL_DEVICE_KEYS = ("ssd.device", "ssd.capacity_GiB") + tuple(f"ssd.{k}" for k in FTL_KEYS)

# a preset sets these as part of what it is: compared with the run's own preset
PRESET_KEYS = ("run.iterations", "scheduler.artifact_quirks", "run.iteration_rule", "run.breakdown_rule",
               "ssd.duplex")

WHY = {
    "tensor": "the tensor-level simulator moves whole tensors over FIFOs at ssd/host/link bandwidth: no transfer "
              "slots, fault-time model, PCIe device or FTL, and one steady-state iteration",
    "flashneuron": "FlashNeuron offloads to the SSD only and plans without the G10 scheduler",
    "g10-gds": "G10-GDS moves tensors between GPU and SSD only",
    "slots": "read only by the detailed devices (link.model = pcie, ssd.model = ftl)",
    "handler": "read only by the far-fault handler (fault.handler = batched, preset detailed)",
    "tlb": "read only by the TLB hierarchy (tlb.model = hierarchy, preset detailed)",
}


def _flat(cfg) -> dict:
    d = cfg.to_dict()
    return {f"{s}.{k}": v for s in SECTIONS for k, v in d[s].items()}


def ignored_parameters(cfg, policy: str, eviction=None) -> list[str]:
    """The keys whose value in ``cfg`` differs from the reference value and that ``policy`` does not
    read (see the module docstring).  Policies not built in (no entry) are not checked."""
    if policy not in ALL:
        return []
    now = _flat(cfg)
    base = _flat(preset(DEFAULT_PRESET))
    own = _flat(preset(cfg.preset)) if cfg.preset else base
    out = []
    for key, value in now.items():
        ref = own[key] if key in PRESET_KEYS else base[key]
        if value == ref:
            continue
        readers = MODELLED_BY.get(key, ALL)
        reads = policy in readers or policy in NOT_APPLICABLE.get(key, ())
        if key == "scheduler.prefetch_degree" and eviction is not None and str(eviction) == "deepum":
            reads = True
        if key in PCIE_KEYS and cfg.link.model != "pcie":
            reads = False
        if key in FTL_DEVICE_KEYS and cfg.ssd.model != "ftl":
            reads = False
        if key in SLOT_SSD_KEYS and (cfg.ssd.model == "ftl" or cfg.fault.handler == "batched"):
            reads = False
        if key in HANDLER_KEYS and cfg.fault.handler != "batched":
            reads = False
        if key in TLB_KEYS and cfg.tlb.model == "none":
            reads = False
        if key == "gpu.sms" and cfg.fault.handler != "batched" and cfg.tlb.model == "none":
            reads = False
        if not reads:
            out.append(key)
    return out


def warning_text(cfg, policy: str, keys: list[str]) -> str:
    now = _flat(cfg)
    vals = ", ".join(f"{k} = {now[k]!r}" for k in keys)
    return (f"policy {policy!r} does not model {vals}: the result is the same as without "
            f"{'it' if len(keys) == 1 else 'them'} (README: Which parameters each policy models)")
