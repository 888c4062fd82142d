"""Simulation configuration: one frozen dataclass per component; every parameter is data.

Each field is declared once with :func:`param`: its default, unit, allowed range
(or choices) and a one-line description, in the dataclass field's metadata (in
the spirit of gem5's ``Param``).  Validation comes from that metadata, not from
code per section: :meth:`SimConfig.check` tests every field's type and range,
then the few rules that tie parameters together (:func:`check_cross`), and every
error names ``section.key``, the value and what is allowed.  ``g10sim config
show`` prints the same table (:func:`parameters`).

The ranges are those within which the model computes correctly: no integer
overflow of the simulator's int64 cycles, no division by zero, no allocation of
more than a few hundred MB, every transfer slot able to move a page.

A configuration is a preset (``default``, ``g10-artifact`` or ``detailed``) with overrides,
from a TOML file (``[gpu] memory_GiB = 80``; values must have the key's type:
a string is not a number, a number is not a boolean) or from ``section.key=value``
strings (``--set gpu.memory_GiB=80``; parsed, as a command line has only
strings).  Unknown sections and keys are errors that name them.
``SimConfig.to_dict()`` is the resolved configuration a result records, and
``config_hash`` its identity.

The ``[ssd]`` keys of the FTL device (geometry, flash timing, GC rules; used when
``ssd.model = "ftl"``, the ``detailed`` preset) default to ``None``: "the value of
the ``ssd.device`` preset" (``zssd`` or ``mlc``, see ``ssd.py``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

from .errors import ConfigError  # noqa: F401 (defined in errors.py; importable from here)
from .files import read_text
from .pcie import GENERATIONS, LANES, PAYLOADS
from .ssd import SSD_PRESETS, device_spec, parse_victim, ssd_preset

GiB = 1 << 30

# What one parameter is allowed to be; ``param()`` puts it in the field's metadata.
_META = "g10core.param"


@dataclass(frozen=True)
class Param:
    """The declaration of one configuration parameter (what ``config show`` lists)."""

    type: type                       # bool, int, float or str
    unit: str                        # "GiB", "GB/s", "us", "pages", "1" (a pure number); "" for str and bool
    doc: str                         # one line: what it is, which presets and policies use it
    min: float | None = None         # lowest allowed value (None: no bound)
    max: float | None = None         # highest allowed value (None: no bound)
    min_exclusive: bool = False      # the range is (min, max] instead of [min, max]
    choices: tuple | None = None     # the only allowed values (strings, or numbers)
    validate: Callable[[Any, str], None] | None = None   # extra rule: raises ConfigError naming the key
    rule: str = ""                   # that rule in words, for the range column
    from_device: bool = False        # None (the default) means: the ssd.device preset's value

    def range_text(self) -> str:
        """The allowed values in words: ``(0, 65536]``, ``one of zssd, mlc``, ``true or false``."""
        if self.type is bool:
            return "true or false"
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        if self.min is None and self.max is None:
            return self.rule or "any"
        if self.min == self.max and not self.min_exclusive:
            return f"only {_num(self.min)}"
        lo = "(" if self.min_exclusive else "["
        text = f"{lo}{_num(self.min)}, {_num(self.max)}]"
        return f"{text}; {self.rule}" if self.rule else text

    def bound_words(self) -> str:
        """The range as a sentence: ``> 0 and <= 65536``."""
        if self.min is not None and self.min == self.max and not self.min_exclusive:
            return _num(self.min)
        parts = []
        if self.min is not None:
            parts.append(f"{'>' if self.min_exclusive else '>='} {_num(self.min)}")
        if self.max is not None:
            parts.append(f"<= {_num(self.max)}")
        return " and ".join(parts)


def _num(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e16:
        x = int(x)
    if isinstance(x, int) and x >= 1 << 20 and x & (x - 1) == 0:
        return f"2^{x.bit_length() - 1}"
    return f"{x:g}" if isinstance(x, float) else str(x)


def param(default, *, unit: str = "", doc: str, min=None, max=None, min_exclusive: bool = False,
          choices=None, validate=None, rule: str = "", type=None, from_device: bool = False):
    """A dataclass field with its unit, range and description (see :class:`Param`)."""
    typ = type if type is not None else default.__class__
    if typ not in (bool, int, float, str):
        raise TypeError(f"param type must be bool, int, float or str, not {typ!r}")
    meta = Param(type=typ, unit=unit, doc=doc, min=min, max=max, min_exclusive=min_exclusive,
                 choices=None if choices is None else tuple(choices), validate=validate, rule=rule,
                 from_device=from_device)
    return field(default=default, metadata={_META: meta})


def param_of(spec_or_cls, name: str) -> Param:
    for f in fields(spec_or_cls):
        if f.name == name:
            return f.metadata[_META]
    raise KeyError(name)


# ---- rules beyond a range ---------------------------------------------------------------

def _victim_rule(value, name):
    parse_victim(value, name)


def _multiple_of_512(value, name):
    if value % 512:
        raise ConfigError(f"{name} = {value!r}: must be a multiple of 512")


def _zero_or_bandwidth(value, name):
    if 0 < value < 0.1:
        raise ConfigError(f"{name} = {value!r}: must be 0 (the read bandwidth) or at least 0.1")


def _power_of_two(value, name):
    if value & (value - 1):
        raise ConfigError(f"{name} = {value!r}: must be a power of two")


# ---- component specs --------------------------------------------------------------------

@dataclass(frozen=True)
class GPUSpec:
    memory_GiB: float = param(
        40.0, unit="GiB", min=0, max=65536, min_exclusive=True,
        doc="GPU memory capacity (A100-40GB); every preset and policy")
    frequency_GHz: float = param(
        1.2, unit="GHz", min=0.1, max=10,
        doc="GPU clock: the cycle unit of the whole simulation (kernel times, slots, devices)")
    page_size_bytes: int = param(
        4096, unit="B", min=4096, max=4096,
        doc="page (PTE) size; traces are laid out in 4 KiB pages, so only 4096 is supported")
    malloc_us_per_byte: float = param(
        8.14e-7, unit="us/B", min=0, max=1e-3,
        doc="allocation cost (4 cycles per 4 KiB page at 1.2 GHz): page-level allocations per slot, "
            "G10's pre-allocation lead time")
    sms: int = param(
        108, unit="SMs", min=1, max=4096,
        doc="streaming multiprocessors (A100: 108): each sweeps its share of a kernel's tensors and has "
            "a private L1 TLB (fault.handler = batched, tlb.model = hierarchy)")


@dataclass(frozen=True)
class HostSpec:
    memory_GiB: float = param(
        128.0, unit="GiB", min=0, max=65536,
        doc="host memory available for evicted pages (page-level policies, G10-Host)")
    bandwidth_GBps: float = param(
        15.754, unit="GB/s", min=0.1, max=10000,
        doc="host<->GPU bandwidth (PCIe 3.0 x16 raw): host pages per slot (page level), the "
            "G10 scheduler and the tensor-level host path")


@dataclass(frozen=True)
class SSDSpec:
    bandwidth_GBps: float = param(
        3.2, unit="GB/s", min=0.1, max=10000,
        doc="SSD->GPU (read) bandwidth, and the write bandwidth too unless ssd.write_bandwidth_GBps is set "
            "(Z-SSD-like): SSD pages per slot, the fault-time model, the schedulers and the tensor-level simulator "
            "(not the FTL device, whose bandwidth emerges)")
    write_bandwidth_GBps: float = param(
        0.0, unit="GB/s", min=0, max=10000, validate=_zero_or_bandwidth, rule="0, or at least 0.1",
        doc="GPU->SSD (write) bandwidth of the slot model (ssd.model = bandwidth, page level); 0: the same as "
            "ssd.bandwidth_GBps. The FTL device's write bandwidth emerges from its flash timing")
    duplex: str = param(
        "shared", choices=("shared", "full"),
        doc="whether the slot model's SSD reads and writes add up (ssd.model = bandwidth, page level): shared, "
            "reads / read bandwidth + writes / write bandwidth <= the time, as flash dies and channels serve "
            "both (default); full, each direction at its own bandwidth at once (g10-artifact, as published). "
            "The FTL device (detailed) shares its planes and channels by construction. docs/physics.md")
    latency_us: float = param(
        20.0, unit="us", min=0, max=1e6,
        doc="SSD access latency of the fault-time model (l_ssd) and the G10 scheduler's safe time")
    model: str = param(
        "bandwidth", choices=("bandwidth", "ftl"),
        doc="bandwidth: slots at ssd.bandwidth_GBps (default, g10-artifact); ftl: the ssd.device with its FTL "
            "(detailed, with link.model = pcie)")
    device: str = param(
        "zssd", choices=tuple(SSD_PRESETS),
        doc="FTL device preset (detailed): zssd (Z-SSD-like, 12/16 us) or mlc (MQSim-like MLC); gives "
            "every ssd key below that is left unset")
    capacity_GiB: float = param(
        0.0, unit="GiB", min=0, max=16384,
        doc="user capacity of the FTL device (detailed); 0: the device's, or the trace's footprint "
            "when that is larger")
    # -- the FTL device (detailed); None: the ssd.device preset's value --
    n_channels: int | None = param(
        None, type=int, unit="channels", min=1, max=128, from_device=True, doc="flash channels (detailed)")
    chips_per_channel: int | None = param(
        None, type=int, unit="chips", min=1, max=64, from_device=True, doc="flash packages (ways) per channel (detailed)")
    dies_per_chip: int | None = param(
        None, type=int, unit="dies", min=1, max=16, from_device=True, doc="dies per package (detailed)")
    planes_per_die: int | None = param(
        None, type=int, unit="planes", min=1, max=16, from_device=True,
        doc="planes per die; each plane is one GC domain (detailed)")
    blocks_per_plane: int | None = param(
        None, type=int, unit="blocks", min=4, max=1 << 24, from_device=True,
        doc="erase blocks per plane (detailed); raised to hold ssd.capacity_GiB or the footprint")
    pages_per_block: int | None = param(
        None, type=int, unit="pages", min=1, max=65536, from_device=True,
        doc="flash pages per erase block (detailed)")
    page_size_bytes: int | None = param(
        None, type=int, unit="B", min=512, max=1 << 20, from_device=True, validate=_multiple_of_512,
        rule="a multiple of 512", doc="flash page, the FTL's mapping unit (detailed)")
    overprovisioning: float | None = param(
        None, type=float, unit="1", min=0.01, max=100, from_device=True,
        doc="over-provisioning OP = (T - U) / U, T without the reserved blocks (ssd.py; detailed)")
    gc_free_blocks_min: int | None = param(
        None, type=int, unit="blocks", min=2, max=1024, from_device=True,
        doc="erased blocks each plane keeps; GC runs below it (>= 2: host and GC frontier; detailed)")
    victim_policy: str | None = param(
        None, type=str, from_device=True, validate=_victim_rule,
        rule="greedy, fifo, random or d-choices:N (N in 1..1024)",
        doc="GC victim rule: fewest valid pages, oldest, random, or fewest valid of N random (detailed)")
    gc_frontier: str | None = param(
        None, type=str, choices=("separate", "shared"), from_device=True,
        doc="GC copies fill their own block (separate) or join the host's write stream (detailed)")
    t_read_us: float | None = param(
        None, type=float, unit="us", min=0, max=1e3, from_device=True, doc="flash page read time tR (detailed)")
    t_program_us: float | None = param(
        None, type=float, unit="us", min=0, max=5000, from_device=True,
        doc="flash page program time tPROG (detailed)")
    t_erase_us: float | None = param(
        None, type=float, unit="us", min=0, max=1e5, from_device=True, doc="block erase time tBERS (detailed)")
    channel_MTps: float | None = param(
        None, type=float, unit="MT/s", min=50, max=1e5, from_device=True,
        doc="flash bus transfer rate (detailed)")
    channel_width_bits: int | None = param(
        None, type=int, unit="bit", min=8, max=64, from_device=True, doc="flash bus width (detailed)")
    read_overhead_us: float | None = param(
        None, type=float, unit="us", min=0, max=1e3, from_device=True,
        doc="controller time per read command (detailed)")
    write_overhead_us: float | None = param(
        None, type=float, unit="us", min=0, max=1e3, from_device=True,
        doc="controller time per write command, until it is acknowledged (detailed)")
    queue_depth: int | None = param(
        None, type=int, unit="commands", min=1, max=65536, from_device=True,
        doc="NVMe commands in flight at most (detailed)")
    max_command_bytes: int | None = param(
        None, type=int, unit="B", min=512, max=1 << 30, from_device=True,
        doc="a request is split into commands of at most this (MDTS; detailed)")
    write_buffer_bytes: int | None = param(
        None, type=int, unit="B", min=512, max=16 * GiB, from_device=True,
        doc="DRAM write buffer; a write is acknowledged once buffered (detailed)")
    link_generation: int | None = param(
        None, type=int, unit="gen", choices=tuple(GENERATIONS), from_device=True,
        doc="PCIe generation of the SSD's own link (detailed)")
    link_lanes: int | None = param(
        None, type=int, unit="lanes", choices=LANES, from_device=True, doc="lanes of the SSD's own PCIe link (detailed)")
    seed: int | None = param(
        None, type=int, unit="1", min=0, max=2**63 - 1, from_device=True,
        doc="seed of the random GC victim rules (detailed)")


@dataclass(frozen=True)
class LinkSpec:
    bandwidth_GBps: float = param(
        15.754, unit="GB/s", min=0.1, max=10000,
        doc="GPU's PCIe link per direction: the slot period and the fault-time model (default, g10-artifact; "
            "the detailed link's bandwidth follows from generation and lanes)")
    batch_pages: int = param(
        50, unit="pages", min=1, max=65536,
        doc="pages per transfer slot: its period is their time on the link (page-level policies)")
    latency_us: float = param(
        5.0, unit="us", min=0, max=1e4,
        doc="per-transfer setup latency of the PCIe link (detailed only; the slot model reads none, "
            "as the published simulator)")
    model: str = param(
        "slots", choices=("slots", "pcie"),
        doc="slots: bandwidth-only transfer slots (default, g10-artifact); pcie: the PCIe link model "
            "(detailed, with ssd.model = ftl)")
    generation: int = param(
        3, unit="gen", choices=tuple(GENERATIONS), doc="PCIe generation of the GPU's link (detailed)")
    lanes: int = param(16, unit="lanes", choices=LANES, doc="lanes of the GPU's link (detailed)")
    max_payload_bytes: int = param(
        256, unit="B", choices=PAYLOADS, doc="max TLP payload, MPS, of the GPU's link (detailed)")


@dataclass(frozen=True)
class FaultSpec:
    system_latency_us: float = param(
        45.0, unit="us", min=1, max=1e6,
        doc="far-fault handling latency (l_sys) of the fault-time model (in whole us, as the published "
            "simulator; SSD faults get l_sys / (l_sys + l_ssd) of the bandwidth) and the G10 scheduler's safe time")
    handler: str = param(
        "profile", choices=("profile", "batched"),
        doc="profile: a faulting kernel's time from the profiled t00/t10 formula, pages in transfer slots "
            "(g10-artifact); batched: the far-fault handler (batches, prefetch, eviction) on the SMs (detailed)")
    migration_unit_bytes: int = param(
        65536, unit="B", min=4096, max=65536, validate=_power_of_two, rule="a power of two",
        doc="a faulted page's migration unit moves whole (fault.handler = batched)")
    va_block_bytes: int = param(
        2097152, unit="B", min=65536, max=2097152, validate=_power_of_two, rule="a power of two",
        doc="VA block: the prefetch tree's root, the largest transfer, never crossed (batched)")
    prefetcher: str = param(
        "tree", choices=("none", "sequential", "tree"),
        doc="none: the faulted unit only; sequential: the next units too; tree: fill a VA-block tree node "
            "once more than fault.prefetch_threshold of it is resident (batched)")
    prefetch_threshold: float = param(
        0.5, unit="1", min=0, max=0.999, min_exclusive=True,
        doc="tree prefetcher: a node fills once more than this fraction of its pages is resident (batched)")
    sequential_units: int = param(
        1, unit="units", min=1, max=512,
        doc="sequential prefetcher: units after the faulted one that come along, never past the VA block "
            "(batched)")
    batch_faults: int = param(
        256, unit="faults", min=1, max=65536,
        doc="distinct faults (migration units) one batch services at most (batched)")
    batch_fixed_us: float = param(
        45.0, unit="us", min=0, max=1e6,
        doc="fixed driver cost of a fault batch (45: G10 parity; 16 measured) (batched)")
    batch_per_page_us: float = param(
        0.0, unit="us", min=0, max=1e3,
        doc="driver cost per 4 KiB page a batch migrates (0.2 measured) (batched)")
    eviction_granularity: str = param(
        "chunk", choices=("chunk", "page"),
        doc="evicted together: chunk, whole VA blocks (fault.va_block_bytes, the driver's 2 MiB chunks); "
            "page, 4 KiB pages (batched)")
    evict_destination: str = param(
        "host-then-ssd", choices=("host", "ssd", "host-then-ssd"),
        doc="where evicted pages go: host memory, the SSD, or host memory while it has room (batched)")
    victims: str = param(
        "policy", choices=("policy", "lrm", "evictor"),
        doc="who picks eviction victims (batched): lrm: the driver's least-recently-migrated chunks; "
            "evictor: the policy's eviction rule; policy: lrm for arrival-order policies, else the rule")


@dataclass(frozen=True)
class TranslationSpec:
    model: str = param(
        "none", choices=("none", "hierarchy"),
        doc="none: translation is free (g10-artifact); hierarchy: per-SM L1 TLBs, a shared L2, page walkers "
            "(detailed)")
    page_size_bytes: int = param(
        4096, unit="B", choices=(4096, 65536, 2097152), doc="page a TLB entry maps (tlb.model = hierarchy)")
    l1_entries: int = param(64, unit="entries", min=8, max=65536,
                            doc="L1 TLB entries per SM (a multiple of tlb.l1_ways)")
    l1_ways: int = param(8, unit="ways", min=1, max=64,
                         doc="L1 TLB associativity (= tlb.l1_entries: fully associative)")
    l1_latency_cycles: int = param(1, unit="cycles", min=0, max=1_000_000, doc="cycles of an L1 TLB lookup")
    l2_entries: int = param(2048, unit="entries", min=64, max=1 << 20,
                            doc="shared L2 TLB entries (a multiple of tlb.l2_ways, >= tlb.sample_modulus)")
    l2_ways: int = param(16, unit="ways", min=1, max=2048, doc="L2 TLB associativity")
    l2_latency_cycles: int = param(20, unit="cycles", min=0, max=1_000_000, doc="L2 TLB lookup, after an L1 miss")
    pwc_enabled: bool = param(False, doc="a page-walk cache shortens walks to their last level")
    pwc_entries: int = param(64, unit="entries", min=8, max=65536,
                             doc="page-walk cache entries (one per 512-page region)")
    pwc_ways: int = param(8, unit="ways", min=1, max=64, doc="page-walk cache associativity")
    pwc_latency_cycles: int = param(10, unit="cycles", min=0, max=1_000_000, doc="cycles of a page-walk cache lookup")
    walkers: int = param(32, unit="walkers", min=1, max=4096, doc="concurrent page walks")
    walk_latency_cycles: int = param(100, unit="cycles", min=1, max=1_000_000, doc="page walk, 4 KiB and 64 KiB pages")
    walk_latency_2MiB_cycles: int = param(66, unit="cycles", min=1, max=1_000_000, doc="page walk, 2 MiB pages")
    shootdown_l1_cycles: int = param(15, unit="cycles", min=0, max=1_000_000,
                                     doc="a shootdown that finds entries in some L1 (charged to the fault batch)")
    shootdown_l2_cycles: int = param(200, unit="cycles", min=0, max=1_000_000,
                                     doc="a shootdown that finds entries in the L2")
    overlap_translations: int = param(16, unit="translations", min=1, max=4096,
                                      doc="translations an SM keeps in flight while it computes (latency hiding)")
    sample_modulus: int = param(
        64, unit="1", min=1, max=2048, validate=_power_of_two, rule="a power of two; 1: full simulation",
        doc="simulate the translation pages v with v % modulus == r, a hierarchy scaled by 1/modulus")
    sample_subsamples: int = param(3, unit="replicas", min=2, max=64,
                                   doc="residues r simulated when sampling (<= tlb.sample_modulus; the 99 % error "
                                       "bound comes from their spread)")
    sample_seed: int = param(0, unit="1", min=0, max=2**63 - 1, doc="draws the sampled residues")
    reuse: str = param(
        "shape", choices=("none", "kernel", "shape"),
        doc="none: translate every kernel; kernel: each kernel once, reused in later iterations; shape: "
            "once per tensor-size shape, reused (rescaled by t11) for kernels of the same shape")


@dataclass(frozen=True)
class SchedulerSpec:
    delta: float = param(
        0.5, unit="1", min=0, max=10, doc="G10 scheduler's safety margin on migration-time estimates (delta)")
    target_fraction: float = param(
        0.99, unit="1", min=0, max=1, min_exclusive=True,
        doc="G10 scheduler plans against this fraction of GPU memory")
    prefetch_degree: int = param(
        8, unit="kernels", min=1, max=1024, doc="DeepUM+ look-ahead: prefetch and eviction window")
    artifact_quirks: bool = param(
        False, doc="apply the published artifact's hand-tuned factors and corners (G10's target factors, the "
                   "4x allocator of G10-GDS/Host, FlashNeuron's ViT-1024 line, libstdc++ tensor order, the slot "
                   "model's whole-page quotas per slot and zero-fill faults charged as link transfers, ...); "
                   "on only in g10-artifact, where they reproduce the paper. Off: slot quotas carry their "
                   "fractional part from slot to slot and allocations cost gpu.malloc_us_per_byte "
                   "(docs/physics.md)")


ITERATION_RULES = ("steady_mean", "fastest")
BREAKDOWN_RULES = ("partition", "artifact")


@dataclass(frozen=True)
class RunSpec:
    iterations: int = param(
        3, unit="iterations", min=1, max=1000,
        doc="training iterations simulated (iteration 0 is the cold start)")
    iteration_rule: str = param(
        "steady_mean", choices=ITERATION_RULES,
        doc="the reported iteration time: steady_mean, the mean of the iterations after the cold start "
            "(iteration 0; all of them when only one ran); fastest, the fastest iteration (the artifact's "
            "figure scripts, g10-artifact)")
    breakdown_rule: str = param(
        "partition", choices=BREAKDOWN_RULES,
        doc="compute/overlap/stall per kernel: partition, stall = time - ideal and overlap = the transfer "
            "time beyond the stall, so the three add up to the time; artifact, the published Stat class's "
            "(compute = time without transfers; adds up only where transfers cover the stall)")


@dataclass(frozen=True)
class NoiseSpec:
    kernel_time_sigma: float = param(
        0.0, unit="1", min=0, max=1,
        doc="Fig. 19 kernel-time noise: each kernel's three times scaled by one ratio drawn from "
            "U(1 - sigma, 1 + sigma), clipped to [0.1, 1.9], after the policy planned on the profiled "
            "times (as the published simulator: std::mt19937, libstdc++ uniform_real_distribution); 0: none")
    seed: int = param(
        -1, unit="1", min=-1, max=2**32 - 1,
        doc="std::mt19937 seed of the noise; -1: the published per-model seed (BERT 15, ResNet152 10, "
            "SENet154 25, the others the engine's default 5489)")


SECTIONS = {
    "gpu": GPUSpec,
    "host": HostSpec,
    "ssd": SSDSpec,
    "link": LinkSpec,
    "fault": FaultSpec,
    "tlb": TranslationSpec,
    "scheduler": SchedulerSpec,
    "run": RunSpec,
    "noise": NoiseSpec,
}

# [ssd] keys of the FTL device (ssd.device_spec maps them onto ssd.py's SSDSpec)
FTL_KEYS = tuple(f.name for f in fields(SSDSpec) if f.metadata[_META].from_device)


# The preset of `g10sim run`, `g10sim hints`, sweeps and the Python API when none is named.
DEFAULT_PRESET = "default"
# The preset that reproduces the paper (`g10sim reproduce`).
ARTIFACT_PRESET = "g10-artifact"


@dataclass(frozen=True)
class SimConfig:
    preset: str = DEFAULT_PRESET
    gpu: GPUSpec = field(default_factory=GPUSpec)
    host: HostSpec = field(default_factory=HostSpec)
    ssd: SSDSpec = field(default_factory=SSDSpec)
    link: LinkSpec = field(default_factory=LinkSpec)
    fault: FaultSpec = field(default_factory=FaultSpec)
    tlb: TranslationSpec = field(default_factory=TranslationSpec)
    scheduler: SchedulerSpec = field(default_factory=SchedulerSpec)
    run: RunSpec = field(default_factory=RunSpec)
    noise: NoiseSpec = field(default_factory=NoiseSpec)

    def check(self) -> "SimConfig":
        """Every field's type and range, then the rules between fields; returns self."""
        for name in SECTIONS:
            check_spec(getattr(self, name), name)
        check_cross(self)
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def with_overrides(self, overrides: dict[str, dict[str, Any]], *, from_strings: bool = False) -> "SimConfig":
        """Return a copy with ``{section: {key: value}}`` applied (validated).

        Values must have the key's type (an int is a float too; a float with an integral
        value is an int), as in a TOML file; ``from_strings=True`` parses strings instead
        (``--set``, a command line).
        """
        changes = {}
        for section, values in overrides.items():
            if section == "preset":
                raise ConfigError("'preset' cannot be overridden; choose the preset by name")
            if section not in SECTIONS:
                raise ConfigError(f"unknown config section [{section}]; known: {', '.join(SECTIONS)}")
            if not isinstance(values, dict):
                raise ConfigError(f"config section [{section}] must be a table of key = value")
            spec = getattr(self, section)
            known = {f.name: f.metadata[_META] for f in fields(spec)}
            kw = {}
            for key, value in values.items():
                if key not in known:
                    raise ConfigError(
                        f"unknown config key {section}.{key}; known keys of [{section}]: {', '.join(known)}")
                name = f"{section}.{key}"
                kw[key] = _coerce(name, value, known[key], from_strings)
                # a parsed --set value as parsed (-1.0), unless that is unreadable (1.7e308 as an int)
                shown = repr(value) if isinstance(value, str) and len(repr(kw[key])) > 24 else None
                check_value(name, kw[key], known[key], shown)
            changes[section] = replace(spec, **kw)
        return replace(self, **changes).check()

    @property
    def hash(self) -> str:
        return config_hash(self)


def config_hash(cfg: SimConfig) -> str:
    blob = json.dumps(cfg.to_dict(), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# ---- validation from the metadata ---------------------------------------------------------

def check_spec(spec, section: str) -> None:
    """Type, range and rule of every field of one section; errors name ``section.key``."""
    for f in fields(spec):
        check_value(f"{section}.{f.name}", getattr(spec, f.name), f.metadata[_META])


def check_value(name: str, value, p: Param, shown: str | None = None) -> None:
    """One value against its declaration; ``shown``: how the user wrote it (for the message)."""
    if value is None and p.from_device:
        return
    if shown is None:
        shown = repr(value)
    if p.type is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{name} = {shown}: expected true or false")
    elif p.type is int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ConfigError(f"{name} = {shown}: expected an integer")
    elif p.type is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError(f"{name} = {shown}: expected a number")
        if not math.isfinite(value):
            raise ConfigError(f"{name} = {shown}: must be finite")
    elif not isinstance(value, str):
        raise ConfigError(f"{name} = {shown}: expected a string")
    if p.choices is not None and value not in p.choices:
        raise ConfigError(f"{name} = {shown}: must be one of {', '.join(map(str, p.choices))}")
    if p.min is not None or p.max is not None:
        low = p.min is not None and (value <= p.min if p.min_exclusive else value < p.min)
        high = p.max is not None and value > p.max
        if low or high:
            unit = f" {p.unit}" if p.unit else ""
            raise ConfigError(f"{name} = {shown}: must be {p.bound_words()}{unit}")
    if p.validate is not None:
        p.validate(value, name)


def check_cross(cfg: SimConfig) -> None:
    """The rules that tie parameters together; each error names every key involved."""
    # the SSD's slot quota, the host's and the GPU's at least one page, and an allocation per
    # slot: the replay's constants (simulator.check_constants) refuse those with the keys named.
    ssd_device_spec(cfg)
    fault_handler_spec(cfg)
    tlb_spec(cfg)


def fault_handler_spec(cfg: SimConfig):
    """The far-fault handler of ``cfg`` (``uvm.FaultHandlerSpec``), checked: errors name ``fault.<key>``.
    With ``fault.handler = batched`` the GPU must hold two VA blocks (a batch's and a victim's)."""
    from .uvm import spec_from_config

    spec = spec_from_config(cfg)
    if cfg.fault.handler == "batched":
        pages = int(cfg.gpu.memory_GiB * GiB) // cfg.gpu.page_size_bytes
        if pages < 2 * spec.block_pages:
            raise ConfigError(f"gpu.memory_GiB = {cfg.gpu.memory_GiB:g} holds {pages} pages, fewer than two "
                              f"fault.va_block_bytes = {cfg.fault.va_block_bytes} VA blocks: the far-fault handler "
                              "(fault.handler = batched) needs room for a batch's block and a victim's")
    return spec


def tlb_spec(cfg: SimConfig):
    """The translator of ``cfg`` (``tlb.TLBSpec``), checked: errors name ``tlb.<key>`` (and ``gpu.sms``)."""
    from .tlb import spec_from_config

    return spec_from_config(cfg)


def ssd_device_spec(cfg: SimConfig, user_capacity_bytes: int | None = None):
    """The FTL device of ``cfg`` (``ssd.py``'s ``SSDSpec``), checked: the ``ssd.device`` preset on
    the simulation clock with every ``[ssd]`` device key that is set, scaled to hold
    ``user_capacity_bytes`` (else ``ssd.capacity_GiB`` when that is set).  ``check`` builds it for
    every configuration, so a bad device key is refused at once, naming the keys involved."""
    s = cfg.ssd
    explicit = [f"ssd.{k}" for k in FTL_KEYS if getattr(s, k) is not None]
    where = f"ssd.device = {s.device!r}" + (f" with {', '.join(explicit)}" if explicit else "")
    try:
        spec = device_spec(s, cfg.gpu.frequency_GHz)
        if user_capacity_bytes is None and s.capacity_GiB > 0:
            user_capacity_bytes = int(s.capacity_GiB * GiB)
            where = f"ssd.capacity_GiB = {s.capacity_GiB:g} on {where}"
        if user_capacity_bytes is not None:
            spec = spec.with_user_capacity(int(user_capacity_bytes))
    except ConfigError as exc:
        raise ConfigError(f"{exc} ({where})") from None
    return spec


# ---- presets ------------------------------------------------------------------------------

def _default() -> SimConfig:
    """Exploration: the artifact's model without its hand-tuned factors (DESIGN.md), steady-state
    iterations, a breakdown that adds up, and the fixes of ``model_fixes`` (README: Presets)."""
    return SimConfig(preset="default")


def _artifact() -> SimConfig:
    """The published simulator as the paper ran it: its hand-tuned factors, two iterations of
    which the faster is reported, its breakdown and its corners."""
    return SimConfig(
        preset=ARTIFACT_PRESET,
        ssd=SSDSpec(duplex="full"),
        scheduler=SchedulerSpec(artifact_quirks=True),
        run=RunSpec(iterations=2, iteration_rule="fastest", breakdown_rule="artifact"),
    )


def _detailed() -> SimConfig:
    """The exploration preset with the PCIe link and the SSD with its FTL as devices.  It runs every
    slot in full (no bulk repeats), so it simulates two iterations: the steady state reported is
    iteration 1 alone (``run.iterations`` raises it)."""
    return SimConfig(
        preset="detailed",
        ssd=SSDSpec(model="ftl"),
        link=LinkSpec(model="pcie", latency_us=1.0),
        fault=FaultSpec(handler="batched"),
        tlb=TranslationSpec(model="hierarchy"),
        run=RunSpec(iterations=2),
    )


PRESETS = {DEFAULT_PRESET: _default, ARTIFACT_PRESET: _artifact, "detailed": _detailed}


def preset(name: str) -> SimConfig:
    try:
        return PRESETS[name]().check()
    except KeyError:
        raise ConfigError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None


def parse_set(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["gpu.memory_GiB=80", ...]`` -> ``{"gpu": {"memory_GiB": "80"}}`` (values parsed later)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise ConfigError(f"--set {item!r}: expected section.key=value, e.g. gpu.memory_GiB=80")
        key, value = item.split("=", 1)
        section, name = key.strip().split(".", 1)
        out.setdefault(section, {})[name] = value.strip()
    return out


def load_toml(path, preset_name: str | None = None) -> dict[str, dict[str, Any]]:
    """A config file's sections.  A top-level ``preset`` (as ``config show`` writes) must name
    ``preset_name``, the preset the file is applied to, when that is given: a file only
    overrides keys, and ignoring a preset it names would run another configuration."""
    path = Path(path)
    try:
        data = tomllib.loads(read_text(path, "config file (TOML)", ConfigError))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    if "preset" in data:
        data = dict(data)
        named = data.pop("preset")
        if preset_name is not None and named != preset_name:
            raise ConfigError(f"{path}: preset = {named!r}, but this run's preset is {preset_name!r}: a config "
                              f"file only overrides keys; choose the preset with --preset")
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: top-level key {section!r} must be a [section] table")
    return data


def resolve(preset_name: str = DEFAULT_PRESET, toml_path=None, sets: list[str] | None = None) -> SimConfig:
    """Preset, then the TOML file (typed values), then ``--set`` overrides (strings)."""
    cfg = preset(preset_name)
    if toml_path is not None:
        try:
            cfg = cfg.with_overrides(load_toml(toml_path, cfg.preset))
        except ConfigError as exc:
            msg = str(exc)
            raise ConfigError(msg if msg.startswith(str(toml_path)) else f"{toml_path}: {msg}") from None
    if sets:
        cfg = cfg.with_overrides(parse_set(sets), from_strings=True)
    return cfg


# ---- coercion -------------------------------------------------------------------------------

_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def _coerce(name: str, value, p: Param, from_strings: bool):
    """``value`` as the key's type: strict for typed values, parsed for strings (``--set``)."""
    if from_strings and isinstance(value, str):
        return _parse(name, value, p)
    if p.type is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{name} = {value!r}: expected true or false (a boolean, not {_kind(value)})")
        return value
    if p.type in (int, float):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError(f"{name} = {value!r}: expected {'an integer' if p.type is int else 'a number'}, "
                              f"not {_kind(value)}")
        if p.type is int:
            if isinstance(value, numbers.Integral):
                return int(value)
            if not (math.isfinite(value) and float(value).is_integer()):
                raise ConfigError(f"{name} = {value!r}: expected an integer")
            return int(value)
        return float(value)
    if not isinstance(value, str):
        raise ConfigError(f"{name} = {value!r}: expected a string, not {_kind(value)}")
    return value


def _parse(name: str, text: str, p: Param):
    if p.type is bool:
        t = text.lower()
        if t in _TRUE or t in _FALSE:
            return t in _TRUE
        raise ConfigError(f"{name} = {text!r}: expected true or false")
    if p.type is int:
        try:
            return int(text)
        except ValueError:
            pass
        try:
            f = float(text)
        except ValueError:
            raise ConfigError(f"{name} = {text!r}: expected an integer") from None
        if not (math.isfinite(f) and f.is_integer()):
            raise ConfigError(f"{name} = {text!r}: expected an integer")
        return int(f)
    if p.type is float:
        try:
            f = float(text)
        except ValueError:
            raise ConfigError(f"{name} = {text!r}: expected a number") from None
        if not math.isfinite(f):
            raise ConfigError(f"{name} = {text!r}: must be finite")
        return f
    return text


def _kind(value) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, numbers.Number):
        return "a number"
    return f"a {type(value).__name__}"


# ---- the parameter table (g10sim config show) ------------------------------------------------

def parameters(cfg: SimConfig | None = None) -> list[dict]:
    """One row per parameter: ``key`` (section.key), ``value`` (in ``cfg``; None = from the
    device preset, whose value is ``device_value``), ``default`` (the dataclass default),
    ``unit``, ``range``, ``min``, ``max``, ``choices``, ``doc``."""
    cfg = preset(DEFAULT_PRESET) if cfg is None else cfg
    device = None
    rows = []
    for section, cls in SECTIONS.items():
        spec = getattr(cfg, section)
        for f in fields(cls):
            p: Param = f.metadata[_META]
            value = getattr(spec, f.name)
            row = {"key": f"{section}.{f.name}", "value": value, "default": f.default,
                   "type": p.type.__name__, "unit": p.unit, "range": p.range_text(),
                   "min": p.min, "max": p.max, "min_exclusive": p.min_exclusive,
                   "choices": None if p.choices is None else list(p.choices), "doc": p.doc}
            if p.from_device:
                if device is None:
                    device = ssd_preset(cfg.ssd.device)
                row["from_device"] = cfg.ssd.device
                attr = {"link_generation": "generation", "link_lanes": "lanes"}.get(f.name)
                row["device_value"] = getattr(device.link, attr) if attr else getattr(device, f.name)
            rows.append(row)
    return rows
