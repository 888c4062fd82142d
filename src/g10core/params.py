"""Parameter declarations and the one checker of values against them.

Every configuration key is declared once, here, with :func:`param`: its default,
unit, allowed range (or choices), a rule beyond the range and a one-line description, in
the dataclass field's metadata.  The component specs (``tlb.TLBSpec``,
``fault_handler.FaultHandlerSpec``, ``pcie.PcieSpec``, ``ssd.SSDSpec``) take their fields from those
declarations with :func:`from_key` (default, unit, range and rule included) and declare
with :func:`param` only what no configuration key holds (the PCIe link's TLP overheads, say).
:func:`check_value` checks one value against its declaration; :func:`check_fields` checks
every field of a spec, naming each ``<prefix>.<field>`` or, built from a configuration,
by its configuration key.

The configuration's sections (``GPUSpec`` ... ``NoiseSpec``, ``SECTIONS``) are declared here,
below the components whose specs are built from them and above nothing but ``errors.py``;
``config.py`` (``SimConfig``, the presets, the rules between keys, which build the components)
imports them from here, and they stay importable from there.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Callable

from .errors import ConfigError
from .gpus import DEFAULT_GPU, GPUS, unknown_text

__all__ = ["Param", "param", "param_of", "from_key", "declaration", "default_of", "check_value",
           "check_fields", "namer", "parse_victim", "SECTIONS", "FTL_KEYS", "BATCH_PROFILES", "BATCH_COST_KEYS",
           "batch_costs", "LANES", "PAYLOADS", "VICTIM_POLICIES"]

GiB = 1 << 30
LANES = (1, 2, 4, 8, 16)                           # of a PCIe link (pcie.py)
PAYLOADS = (128, 256, 512, 1024, 2048, 4096)       # max TLP payloads, MPS (pcie.py)
# Names of the GC victim rules, as the compiled FTL numbers them.
VICTIM_POLICIES = {"greedy": 0, "fifo": 1, "random": 2, "d-choices": 3}

# Where a field keeps its declaration: the Param itself, or the configuration key that holds it.
_META = "g10core.param"
_KEY = "g10core.key"


@dataclass(frozen=True)
class Param:
    """The declaration of one parameter (what ``config show`` lists)."""

    type: type                       # bool, int, float or str
    unit: str                        # "GiB", "GB/s", "us", "pages", "1" (a pure number); "" for str and bool
    doc: str                         # one line: what it is, which presets and policies use it
    min: float | None = None         # lowest allowed value (None: no bound)
    max: float | None = None         # highest allowed value (None: no bound)
    min_exclusive: bool = False      # the range is (min, max] instead of [min, max]
    max_exclusive: bool = False      # the range is [min, max) instead of [min, max]
    choices: tuple | None = None     # the only allowed values (strings, or numbers)
    validate: Callable[[Any, str], None] | None = None   # extra rule: raises ConfigError naming the key
    rule: str = ""                   # that rule in words, for the range column
    from_device: bool = False        # None (the default) means: the ssd.device preset's value
    from_profile: bool = False       # None (the default) means: the fault.batch_profile's value
    below: str = ""                  # why the lower bound: added to the refusal of a value below it
    # The component built alone (tests' small TLBs, microbenchmarks) accepts down / up to these
    # where a configuration's range is narrower: a configuration's bounds are each valid with the
    # other keys at their defaults (l1_entries >= l1_ways = 8), the component's rules between its
    # fields (ways <= entries) hold either way.  None: the configuration's bound.
    model_min: float | None = None
    model_max: float | None = None

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
        hi = ")" if self.max_exclusive else "]"
        text = f"{lo}{_num(self.min)}, {_num(self.max)}{hi}"
        return f"{text}; {self.rule}" if self.rule else text

    def bound_words(self, alone: bool = False) -> str:
        """The range as a sentence: ``> 0 and <= 65536``; ``alone``: the component's own limits."""
        lo, hi = self.bounds(alone)
        if lo is not None and lo == hi and not self.min_exclusive:
            return _num(lo)
        parts = []
        if lo is not None:
            parts.append(f"{'>' if self.min_exclusive else '>='} {_num(lo)}")
        if hi is not None:
            parts.append(f"{'<' if self.max_exclusive else '<='} {_num(hi)}")
        return " and ".join(parts)

    def bounds(self, alone: bool = False) -> tuple:
        """(min, max) of a configuration, or with ``alone`` of the component built alone."""
        if not alone:
            return self.min, self.max
        return (self.min if self.model_min is None else self.model_min,
                self.max if self.model_max is None else self.model_max)


def _num(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e16:
        x = int(x)
    if isinstance(x, int) and x >= 1 << 20 and x & (x - 1) == 0:
        return f"2^{x.bit_length() - 1}"
    return f"{x:g}" if isinstance(x, float) else str(x)


def param(default, *, unit: str = "", doc: str, min=None, max=None, min_exclusive: bool = False,
          max_exclusive: bool = False, choices=None, validate=None, rule: str = "", type=None,
          from_device: bool = False, from_profile: bool = False, below: str = "", model_min=None,
          model_max=None):
    """A dataclass field with its unit, range and description (see :class:`Param`)."""
    typ = type if type is not None else default.__class__
    if typ not in (bool, int, float, str):
        raise TypeError(f"param type must be bool, int, float or str, not {typ!r}")
    meta = Param(type=typ, unit=unit, doc=doc, min=min, max=max, min_exclusive=min_exclusive,
                 max_exclusive=max_exclusive, choices=None if choices is None else tuple(choices),
                 validate=validate, rule=rule, from_device=from_device, from_profile=from_profile, below=below,
                 model_min=model_min, model_max=model_max)
    return field(default=default, metadata={_META: meta})


def param_of(spec_or_cls, name: str) -> Param:
    """The declaration of field ``name`` of a configuration section or a component spec."""
    for f in fields(spec_or_cls):
        if f.name == name:
            if _KEY in f.metadata:
                return declaration(f.metadata[_KEY])
            return f.metadata[_META]
    raise KeyError(name)


def declaration(key: str) -> Param:
    """The declaration of configuration key ``section.name``."""
    section, name = key.split(".")
    return param_of(SECTIONS[section], name)


def default_of(key: str):
    """The default of configuration key ``section.name``."""
    section, name = key.split(".")
    for f in fields(SECTIONS[section]):
        if f.name == name:
            return f.default
    raise KeyError(key)


def from_key(key: str, *, default=MISSING):
    """A component spec's field declared by configuration key ``key`` (``"tlb.l1_entries"``):
    its default (unless ``default`` is given: the component's own), unit, range and rule."""
    return field(default=default_of(key) if default is MISSING else default, metadata={_KEY: key})


# ---- checking ------------------------------------------------------------------------------------

def check_value(name: str, value, p: Param, shown: str | None = None, *, alone: bool = False) -> None:
    """One value against its declaration; ``shown``: how the user wrote it (for the message);
    ``alone``: a component built alone (its own limits, and no ``None`` for a device key)."""
    if value is None and (p.from_device or p.from_profile) and not alone:
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
    lo, hi = p.bounds(alone)
    if lo is not None or hi is not None:
        low = lo is not None and (value <= lo if p.min_exclusive else value < lo)
        high = hi is not None and (value >= hi if p.max_exclusive else value > hi)
        if low or high:
            unit = f" {p.unit}" if p.unit not in ("", "1") else ""     # "1": a pure number, no unit
            why = f" ({p.below})" if low and p.below else ""
            raise ConfigError(f"{name} = {shown}: must be {p.bound_words(alone)}{unit}{why}")
    if p.validate is not None:
        p.validate(value, name)


def namer(spec, prefix: str, by_key: bool = False) -> Callable[[str], str]:
    """How errors name a field of ``spec``: ``<prefix>.<field>``, or with ``by_key`` (a spec built
    from a configuration) by the configuration key the field comes from, where it has one."""
    keys = {f.name: f.metadata.get(_KEY) for f in fields(spec)}

    def name(field_name: str) -> str:
        if by_key and keys[field_name]:
            return keys[field_name]
        return f"{prefix}.{field_name}"
    return name


def check_fields(spec, prefix: str, by_key: bool = False) -> None:
    """Every declared field of a component spec against its declaration (the component's own
    limits); errors name it as :func:`namer` does."""
    name = namer(spec, prefix, by_key)
    for f in fields(spec):
        if _KEY in f.metadata or _META in f.metadata:
            check_value(name(f.name), getattr(spec, f.name), param_of(spec, f.name), alone=True)



def parse_victim(text: str, what: str = "ssd.victim_policy") -> tuple[int, int]:
    """``greedy`` | ``fifo`` | ``random`` | ``d-choices:N`` -> (policy code, d)."""
    if not isinstance(text, str):
        raise ConfigError(f"{what} = {text!r}: must be greedy, fifo, random or d-choices:N")
    name, _, arg = text.strip().partition(":")
    name = name.strip().lower()
    if name in ("greedy", "fifo", "random") and not arg:
        return VICTIM_POLICIES[name], 1
    if name in ("d-choices", "dchoices"):
        try:
            d = int(arg)
        except ValueError:
            d = 0
        if d < 1 or d > 1024:
            raise ConfigError(f"{what} = {text!r}: d-choices needs a sample size 1..1024, e.g. d-choices:8")
        return VICTIM_POLICIES["d-choices"], d
    raise ConfigError(f"{what} = {text!r}: must be greedy, fifo, random or d-choices:N")


# ---- rules beyond a range ---------------------------------------------------------------

def _victim_rule(value, name):
    parse_victim(value, name)


def _multiple_of_512(value, name):
    if value % 512:
        raise ConfigError(f"{name} = {value!r}: must be a multiple of 512")


def _gpu_rule(value, name):
    if value not in GPUS:
        raise ConfigError(f"{name} = {value!r}: {unknown_text(value)}")


def _zero_or_bandwidth(value, name):
    if 0 < value < 0.1:
        raise ConfigError(f"{name} = {value!r}: must be 0 (the read bandwidth) or at least 0.1")


def _power_of_two(value, name):
    if value & (value - 1):
        raise ConfigError(f"{name} = {value!r}: must be a power of two")


# ---- the configuration's sections --------------------------------------------------------------------

@dataclass(frozen=True)
class GPUSpec:
    model: str = param(
        DEFAULT_GPU, validate=_gpu_rule, rule="a GPU of g10core.gpus: " + ", ".join(GPUS),
        doc="the GPU (g10core.gpus): a trace profiled on another GPU has its kernel times retargeted to it; "
            "naming it sets gpu.memory_GiB, gpu.sms, link.generation, link.lanes, link.bandwidth_GBps and "
            "host.bandwidth_GBps from its table row, except the keys set explicitly (the presets: "
            "A100-40GB on the G10 paper's PCIe 3.0 x16 link)")
    memory_GiB: float = param(
        40.0, unit="GiB", min=0, max=65536, min_exclusive=True,
        doc="GPU memory capacity (A100-40GB); every preset and policy")
    frequency_GHz: float = param(
        1.2, unit="GHz", min=0.1, max=10,
        doc="the simulation clock: the unit of every cycle count (kernel times, slots, devices); it does not "
            "scale kernel times (the GPU's speed is gpu.model's), so changing it moves results only by "
            "rounding to whole cycles (a run warns)")
    page_size_bytes: int = param(
        4096, unit="B", min=4096, max=4096,
        doc="page (PTE) size; traces are laid out in 4 KiB pages, so only 4096 is supported")
    malloc_us_per_byte: float = param(
        8.14e-7, unit="us/B", min=0, max=1e-3,
        doc="allocation cost (4 cycles per 4 KiB page at 1.2 GHz): page-level allocations per slot, the "
            "zero-fill of never-allocated pages in the fault time (default: fault.handler = physical, or profile "
            "without the artifact's quirks), G10's pre-allocation lead time (fault.handler = batched allocates at "
            "no cost: the lead time only)")
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
        doc="host<->GPU bandwidth (PCIe 3.0 x16 raw): host pages per slot (page level), the physical fault "
            "time's host pages (fault.handler = physical), the G10 scheduler and the tensor-level host path; "
            "detailed: below link.bandwidth_GBps it slows the "
            "PCIe link's host flow to host / link of the link's")


@dataclass(frozen=True)
class CPUSpec:
    """The ``[cpu]`` section: the host's CPUs as a compute tier (CPU kernels of the tensor-level
    simulator: ZeRO-Offload's and ZeRO-Infinity's CPU Adam).  A CPU kernel takes
    max(flops / (cores x per-core FLOP/s of its dtype), bytes / B) (roofline), where B, the memory
    bandwidth it streams at, is bounded twice (:meth:`kernel_memory_GBps`): by its cores, each of
    which sustains ``stream_GBps_per_core`` (a core keeps only so many cache misses in flight), and by
    the sockets' DRAM, ``memory_bandwidth_GBps`` at the fraction STREAM achieves of it
    (``memory_stream_fraction``; the DRAM bandwidth is shared with the host's DMA).
    Defaults: the two AMD EPYC 7742 of a DGX A100 (NVIDIA DGX A100 User Guide, "Hardware Overview":
    2 x 64 cores; AMD's EPYC 7742 product page: 2.25 GHz base clock, 8 channels of DDR4-3200 per
    socket), the machine of the default A100 GPU.  Validation against DeepSpeed's CPU-Adam
    (docs/guide/zero.md, "CPU Adam against DeepSpeed's")."""
    cores: int = param(
        128, unit="cores", min=1, max=4096,
        doc="CPU cores that run CPU kernels (2 x AMD EPYC 7742, DGX A100): peak FLOP/s = cores x per-core "
            "FLOP/s, memory bandwidth at most cores x cpu.stream_GBps_per_core (zero-offload, zero-infinity)")
    fp32_GFLOPs_per_core: float = param(
        72.0, unit="GFLOP/s", min=0.1, max=1e5,
        doc="fp32 peak per core: 2.25 GHz x 2 AVX2 256-bit FMA units x 8 lanes x 2 FLOP (Zen 2, EPYC 7742) "
            "(zero-offload, zero-infinity: CPU Adam runs in fp32)")
    bf16_GFLOPs_per_core: float = param(
        72.0, unit="GFLOP/s", min=0.1, max=1e5,
        doc="bf16 peak per core: Zen 2 has no bf16 arithmetic and computes in fp32 after conversion, so the "
            "fp32 rate (a CPU with AMX or AVX512-BF16 is faster)")
    memory_bandwidth_GBps: float = param(
        409.6, unit="GB/s", min=0.1, max=100000,
        doc="host DRAM peak over all sockets (2 sockets x 8 channels x DDR4-3200 x 8 B); a CPU kernel and the "
            "host's DMA share memory_bandwidth_GBps x cpu.memory_stream_fraction of it, max-min fair "
            "(tensor-level simulator)")
    memory_stream_fraction: float = param(
        0.757, unit="1", min=0.01, max=1.0,
        doc="fraction of the DRAM peak that streaming code sustains: STREAM Triad on a dual EPYC 7742 with all "
            "128 cores, 309.9 GB/s of 409.6 (NRIS/Sigma2 documentation, 'Efficient use of memory bandwidth "
            "on Betzy'); CPU Adam streams like Triad (zero-offload, zero-infinity)")
    stream_GBps_per_core: float = param(
        22.0, unit="GB/s", min=0.1, max=10000,
        doc="memory bandwidth one core sustains: STREAM Triad with 1 thread on a dual EPYC 7742 (Imperial "
            "College CX3 'Rome' node, gcc -O3 -march=znver2, 800 M-element arrays: 22.0 GB/s); a CPU kernel "
            "on n cores streams at most n x this (zero-offload, zero-infinity)")

    def sustained_memory_GBps(self) -> float:
        """The DRAM bandwidth streaming code sustains over all sockets (peak x STREAM fraction)."""
        return self.memory_bandwidth_GBps * self.memory_stream_fraction

    def kernel_memory_GBps(self) -> float:
        """The memory bandwidth a CPU kernel on ``cores`` cores streams at with no DMA beside it:
        min(cores x per-core stream bandwidth, the sockets' sustained DRAM bandwidth)."""
        return min(self.cores * self.stream_GBps_per_core, self.sustained_memory_GBps())


@dataclass(frozen=True)
class SSDTierSpec:
    """The ``[ssd]`` section: the SSD tier as a run sees it (bandwidth model or FTL device).
    ``ssd.SSDSpec`` is the FTL device built from it (:func:`ssd_device_spec`)."""
    bandwidth_GBps: float = param(
        3.2, unit="GB/s", min=0.1, max=10000,
        doc="SSD->GPU (read) bandwidth, and the write bandwidth too unless ssd.write_bandwidth_GBps is set "
            "(Z-SSD-like): SSD pages per slot, the fault time (fault.handler = physical or profile), the schedulers "
            "and the tensor-level simulator; detailed: scales the FTL device's own link by value / 3.2 (its flash "
            "may still limit)")
    write_bandwidth_GBps: float = param(
        0.0, unit="GB/s", min=0, max=10000, validate=_zero_or_bandwidth, rule="0, or at least 0.1",
        doc="GPU->SSD (write) bandwidth of the slot model (ssd.model = bandwidth, page level) and of the "
            "tensor-level simulator (not under g10-artifact); 0: the same as ssd.bandwidth_GBps. The FTL "
            "device's write bandwidth emerges from its flash timing")
    duplex: str = param(
        "shared", choices=("shared", "full"),
        doc="whether the SSD's reads and writes add up (the slot model, ssd.model = bandwidth, and the "
            "tensor-level simulator): shared, reads / read bandwidth + writes / write bandwidth <= the time, "
            "as flash dies and channels serve both, the slot model serving them max-min fair (default); full, "
            "each direction at its own bandwidth at "
            "once (g10-artifact, as published). The FTL device (detailed) shares its planes and channels by "
            "construction. docs/physics.md")
    latency_us: float = param(
        20.0, unit="us", min=0, max=1e6,
        doc="SSD access latency of the profile fault-time model (l_ssd; fault.handler = profile) and the G10 "
            "scheduler's safe time (fault.handler = physical or batched: the scheduler's only; the FTL device's "
            "latency emerges)")
    model: str = param(
        "bandwidth", choices=("bandwidth", "ftl"),
        doc="bandwidth: slots at ssd.bandwidth_GBps (default, g10-artifact); ftl: the ssd.device with its FTL "
            "(detailed, with link.model = pcie)")
    device: str = param(
        "zssd", choices=("zssd", "mlc"),
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
        below="a block must hold at least one page", doc="flash pages per erase block (detailed)")
    page_size_bytes: int | None = param(
        None, type=int, unit="B", min=512, max=1 << 20, from_device=True, validate=_multiple_of_512,
        rule="a multiple of 512", doc="flash page, the FTL's mapping unit (detailed)")
    overprovisioning: float | None = param(
        None, type=float, unit="1", min=0.01, max=100, from_device=True,
        below="OP = (T - U) / U; GC needs spare pages",
        doc="over-provisioning OP = (T - U) / U, T without the reserved blocks (ssd.py; detailed)")
    gc_free_blocks_min: int | None = param(
        None, type=int, unit="blocks", min=2, max=1024, from_device=True,
        below="or GC cannot make progress: one erased block for the next host frontier, one for the GC frontier",
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
        None, type=int, unit="commands", min=1, max=65536, from_device=True,   # max: NVMe's largest I/O queue
        doc="NVMe commands in flight at most (detailed)")
    max_command_bytes: int | None = param(
        None, type=int, unit="B", min=512, max=1 << 30, from_device=True,
        doc="a request is split into commands of at most this (MDTS; detailed)")
    write_buffer_bytes: int | None = param(
        None, type=int, unit="B", min=512, max=16 * GiB, from_device=True,
        doc="DRAM write buffer; a write is acknowledged once buffered (detailed)")
    link_generation: int | None = param(
        None, type=int, unit="gen", choices=(1, 2, 3, 4, 5), from_device=True,
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
        doc="GPU's PCIe link per direction: the slot period and the fault time (default, g10-artifact); "
            "detailed: scales the raw bandwidth of link.generation x link.lanes by value / 15.754 (Gen3 x16's)")
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
        3, unit="gen", choices=(1, 2, 3, 4, 5), doc="PCIe generation of the GPU's link (detailed)")
    lanes: int = param(16, unit="lanes", choices=LANES, doc="lanes of the GPU's link (detailed)")
    max_payload_bytes: int = param(
        256, unit="B", choices=PAYLOADS, doc="max TLP payload, MPS, of the GPU's link (detailed)")


# ---- the driver's fault-batch cost profiles (fault.batch_profile) ------------------------------
#
# A batch's driver time in four parts (docs/guide/detailed.md, "The driver's fault-batch costs"):
# per batch, per VA block serviced, per 4 KiB page migrated in, per VA block given host pages
# (the host-side unmap).  A profile names one measured set; each fault.batch_*_us key left unset
# takes its profile's value, a key that is set overrides it.  Values in microseconds.
BATCH_COST_KEYS = ("batch_fixed_us", "batch_per_block_us", "batch_per_page_us", "batch_unmap_us")
BATCH_PROFILES = {
    # tallendev/uvm-eval (Allen and Ge, SC 2021), benchmarksv3/bsize-scripts/README.MD: the
    # instrumented NVIDIA 460.27.04 driver's record of one first-touch batch on a Titan V (3 faults,
    # 1 new VA block, 3 x 4 KiB pages from host memory), in ns: time 736221, service_time 534863,
    # block_gpu_state_time 112010, map_time 35196, unmap_res_time 34254 (1 VA block unmapped on
    # the CPU), pop_pages_time 315251 (root_chunk_allocs 1), batch_transfer_time 15790.
    # Absolute, not scaled: every part is the host CPU's driver work (the copy, the only GPU-side
    # part, is the link model's), and no cited ratio relates the measuring host to the modelled one.
    "uvm-eval-titanv": {
        # outside the service: fetch, sort and dedup, replay = time - service_time = 736.221 - 534.863
        # (Kim et al., ASPLOS 2020, measure preprocessing at 46.7 % of a median 313 us batch: 146 us)
        "batch_fixed_us": 201.358,
        # per VA block: its GPU mapping, one op per VA block (map_time 35.196, num_mapping_ops 1)
        "batch_per_block_us": 35.196,
        # the record's 3 pages cannot separate a per-page part: the GTX 1080 Ti nvprof fit
        # (reference/detailed_model.md section 1)
        "batch_per_page_us": 0.2,
        # the CPU unmap of the VA block's resident host pages (unmap_res_time 34.254, unmap_res_count 1)
        "batch_unmap_us": 34.254,
        # Not charged, both paid once and not per batch in the steady state the presets report:
        # pop_pages_time 315.251, the PMM's allocation of a 2 MiB root chunk from the resource
        # manager (root_chunk_allocs 1), once per root chunk of GPU memory, which the PMM keeps and
        # reuses after evictions; block_gpu_state_time 112.010, the VA block's per-GPU state with
        # the DMA mappings of its CPU pages (num_new_vablock 1), once per VA block, kept while the
        # block lives (its GPU chunks are evicted, its GPU state is not).  resident_pages_time
        # 18.104 wraps the copy (batch_transfer_time 15.790): the link model's.
    },
    # the earlier split (issue 37): 16 us per batch and 0.2 us per page, the GTX 1080 Ti nvprof fit
    # (reference/detailed_model.md section 1); 13 + 12.8 us per VA block from host memory, UVMSmart's
    # measured 45 us one-fault batch (Ganguly et al., ISCA 2019) less 16 + 16 x 0.2 us, split about
    # evenly by our guess (no measurement splits it)
    "uvmsmart-gtx1080ti": {"batch_fixed_us": 16.0, "batch_per_block_us": 13.0, "batch_per_page_us": 0.2,
                           "batch_unmap_us": 12.8},
    # G10's single far-fault latency per batch (Ganguly et al., ISCA 2019: 45 us), our first rule
    "g10-45us": {"batch_fixed_us": 45.0, "batch_per_block_us": 0.0, "batch_per_page_us": 0.0,
                 "batch_unmap_us": 0.0},
}


def batch_costs(fault) -> dict[str, float]:
    """The far-fault batch costs of a ``[fault]`` section, resolved.

    Parameters
    ----------
    fault : FaultSpec
        The section (``SimConfig.fault``).

    Returns
    -------
    dict
        ``BATCH_COST_KEYS`` -> microseconds: each key's value where it is set, else the value of
        the section's ``fault.batch_profile`` (``BATCH_PROFILES``).
    """
    profile = BATCH_PROFILES[fault.batch_profile]
    return {k: float(profile[k]) if getattr(fault, k) is None else float(getattr(fault, k))
            for k in BATCH_COST_KEYS}


@dataclass(frozen=True)
class FaultSpec:
    system_latency_us: float = param(
        45.0, unit="us", min=1, max=1e6,
        doc="far-fault handling latency (l_sys) of the profile fault-time model (fault.handler = profile; in whole "
            "us, as the published simulator; SSD faults get l_sys / (l_sys + l_ssd) of the bandwidth) and the G10 "
            "scheduler's safe time (fault.handler = physical or batched: the scheduler's only; the driver costs "
            "fault.batch_*)")
    handler: str = param(
        "physical", choices=("physical", "profile", "batched"),
        doc="physical: a faulting kernel's fault time from its faulting pages at the SSD's, host's and link's "
            "bandwidths, zero-fill at gpu.malloc_us_per_byte, plus the driver's batch costs fault.batch_* "
            "(default; docs/physics.md); profile: the published formula from the profiled t00/t10 times, in "
            "whole seconds (g10-artifact); both move pages in transfer slots; batched: the far-fault handler "
            "(batches, prefetch, eviction) on the SMs (detailed)")
    # thrashing detection and prevention: NVIDIA's open-gpu-kernel-modules,
    # kernel-open/nvidia-uvm/uvm_perf_thrashing.c, its module parameters and defaults
    thrashing_enable: bool = param(
        True, doc="thrashing detection, throttling and pinning of the far-fault handler (fault.handler = batched; "
                  "the default preset's slot model has no handler: not modelled there); uvm_perf_thrashing.c "
                  "uvm_perf_thrashing_enable = 1")
    thrashing_threshold: int = param(
        3, unit="events", min=1, max=7,
        doc="migrations of a page back to the GPU, each within fault.thrashing_lapse_us of the one before, "
            "that make it thrashing; uvm_perf_thrashing.c uvm_perf_thrashing_threshold = 3 (max 7)")
    thrashing_lapse_us: float = param(
        500.0, unit="us", min=1, max=1e7,
        doc="two migrations of a page this close are a thrashing event; uvm_perf_thrashing.c "
            "uvm_perf_thrashing_lapse_usec = 500")
    thrashing_nap: int = param(
        1, unit="lapses", min=1, max=100,
        doc="a throttled fault waits this many lapses before its pages are usable; uvm_perf_thrashing.c "
            "uvm_perf_thrashing_nap = 1 (max 100)")
    thrashing_pin_threshold: int = param(
        10, unit="throttles", min=1, max=255,
        doc="throttles of a VA block after which its thrashing pages stay where they are (host memory) and "
            "the GPU maps them remotely; uvm_perf_thrashing.c uvm_perf_thrashing_pin_threshold = 10")
    thrashing_pin: int = param(
        300, unit="lapses", min=0, max=1_000_000,
        doc="how long pages stay pinned (0: for ever); uvm_perf_thrashing.c uvm_perf_thrashing_pin = 300 "
            "(150 ms)")
    migration_unit_bytes: int = param(
        65536, unit="B", min=4096, max=65536, validate=_power_of_two, rule="a power of two",
        doc="a faulted page's migration unit moves whole (fault.handler = batched; physical: the unit its "
            "faults are counted in): the driver's big-page fault granularity growth, 64 KiB big pages "
            "(grow_fault_granularity in uvm_perf_prefetch.c); 4096: no growth")
    # max: the compiled maps hold 512 pages; min: a configuration's migration unit (its default)
    va_block_bytes: int = param(
        2097152, unit="B", min=65536, max=2097152, model_min=4096, validate=_power_of_two, rule="a power of two",
        doc="VA block: the prefetch tree's root, the largest transfer, never crossed (batched); physical: "
            "a kernel's faulting bytes over it are the VA blocks its driver time pays for")
    prefetcher: str = param(
        "tree", choices=("none", "sequential", "tree"),
        doc="none: the faulted unit only; sequential: the next units too; tree: fill a VA-block tree node "
            "once more than fault.prefetch_threshold of it is resident (batched)")
    prefetch_threshold: float = param(
        0.51, unit="1", min=0, max=0.999, min_exclusive=True,
        doc="tree prefetcher: a node fills once strictly more than this fraction of its pages is resident or "
            "faulted (batched); 0.51: the driver's uvm_perf_prefetch_threshold = 51 (uvm_perf_prefetch.c); 0.5: "
            "our earlier 'more than half'")
    prefetch_min_faults: int = param(
        1, unit="faults", min=1, max=20,
        doc="tree prefetcher: a VA block prefetches only once this many fault entries have migrated into it "
            "(batched); the driver's uvm_perf_prefetch_min_faults = 1, range 1-20 (uvm_perf_prefetch.c)")
    prefetch_tree_rule: str = param(
        "driver", choices=("driver", "cumulative"),
        doc="tree prefetcher (batched): driver, each faulted unit's largest tree node over the threshold, "
            "counting the resident and this batch's faulted pages (compute_prefetch_region in "
            "uvm_perf_prefetch.c); cumulative, our earlier walk where a node filled below counts as resident "
            "above it and each fault sees the fills of the ones before it")
    sequential_units: int = param(
        1, unit="units", min=1, max=512,
        doc="sequential prefetcher: units after the faulted one that come along, never past the VA block "
            "(batched)")
    batch_faults: int = param(
        256, unit="faults", min=1, max=65536,
        doc="distinct faults (migration units) one batch services at most (batched, physical); the driver's "
            "uvm_perf_fault_batch_count = 256 (uvm_gpu_replayable_faults.c)")
    batches_per_service: int = param(
        20, unit="batches", min=1, max=65536,
        doc="batches one service pass of the bottom half runs back to back before it yields (batched; counted "
            "as fault_batches.service_passes); the driver's uvm_perf_fault_max_batches_per_service = 20 "
            "(uvm_gpu_replayable_faults.c)")
    batch_profile: str = param(
        "uvm-eval-titanv", choices=tuple(BATCH_PROFILES),
        doc="the driver's measured batch costs the fault.batch_*_us keys left unset take (batched, physical; "
            "docs/guide/detailed.md): uvm-eval-titanv, the instrumented 460.27.04 driver's first-touch batch on a "
            "Titan V (tallendev/uvm-eval; Allen and Ge, SC 2021); uvmsmart-gtx1080ti, the earlier split (GTX 1080 "
            "Ti nvprof fit, UVMSmart's 45 us); g10-45us, G10's one 45 us constant per batch")
    batch_fixed_us: float | None = param(
        None, type=float, unit="us", min=0, max=1e6, from_profile=True,
        doc="per-batch driver cost: fetch, preprocess, replay (batched, physical); unset: fault.batch_profile's")
    batch_per_block_us: float | None = param(
        None, type=float, unit="us", min=0, max=1e6, from_profile=True,
        doc="driver cost per VA block a batch services (batched, physical); unset: fault.batch_profile's "
            "(uvm-eval-titanv: the block's GPU mapping)")
    batch_per_page_us: float | None = param(
        None, type=float, unit="us", min=0, max=1e3, from_profile=True,
        doc="driver cost per 4 KiB page a batch migrates (batched, physical); unset: fault.batch_profile's")
    batch_unmap_us: float | None = param(
        None, type=float, unit="us", min=0, max=1e6, from_profile=True,
        doc="host-side unmapping per VA block a batch brings pages from host memory into (batched, physical); "
            "unset: fault.batch_profile's")
    eviction_granularity: str = param(
        "chunk", choices=("chunk", "page"),
        doc="evicted together: chunk, whole VA blocks (fault.va_block_bytes, the driver's 2 MiB chunks); "
            "page, 4 KiB pages (batched)")
    evict_destination: str = param(
        "host-then-ssd", choices=("host", "ssd", "host-then-ssd"),
        doc="where evicted pages go: host memory, the SSD, or host memory while it has room (batched)")
    victims: str = param(
        "policy", choices=("policy", "lrm", "evictor"),
        doc="who picks eviction victims (batched): lrm: the handler's chunk list (fault.chunk_order); "
            "evictor: the policy's eviction rule; policy: lrm for arrival-order policies, else the rule")
    chunk_order: str = param(
        "allocation", choices=("allocation", "migration"),
        doc="the handler's eviction list of 2 MiB chunks (batched): allocation, a chunk joins the tail when "
            "it gets its first page and stays there (the driver's used list, pick_root_chunk_to_evict in "
            "uvm_pmm_gpu.c); migration, it moves to the tail whenever pages migrate into it (our earlier "
            "least-recently-migrated rule)")


# The ranges of [tlb] are those of tlb.TLBSpec, narrowed where a bound must be valid with the other
# keys at their defaults (tlb.l1_entries >= tlb.l1_ways = 8, tlb.sample_modulus <= tlb.l2_entries =
# 2048, tlb.sample_subsamples >= 2 as tlb.sample_modulus = 64 samples); model_min / model_max are
# what TLBSpec accepts built alone, where TLBSpec.check's rules between fields do the narrowing.
@dataclass(frozen=True)
class TranslationSpec:
    model: str = param(
        "none", choices=("none", "hierarchy"),
        doc="none: translation is free (g10-artifact); hierarchy: per-SM L1 TLBs, a shared L2, page walkers "
            "(detailed)")
    page_size_bytes: int = param(
        4096, unit="B", choices=(4096, 65536, 2097152), doc="page a TLB entry maps (tlb.model = hierarchy)")
    l1_entries: int = param(64, unit="entries", min=8, max=65536, model_min=1,
                            doc="L1 TLB entries per SM (a multiple of tlb.l1_ways)")
    l1_ways: int = param(8, unit="ways", min=1, max=64, model_max=65536,
                         doc="L1 TLB associativity (= tlb.l1_entries: fully associative)")
    l1_latency_cycles: int = param(1, unit="cycles", min=0, max=1_000_000, doc="cycles of an L1 TLB lookup")
    l2_entries: int = param(2048, unit="entries", min=64, max=1 << 20, model_min=1,
                            doc="shared L2 TLB entries (a multiple of tlb.l2_ways, >= tlb.sample_modulus)")
    l2_ways: int = param(16, unit="ways", min=1, max=2048, model_max=1 << 20, doc="L2 TLB associativity")
    l2_latency_cycles: int = param(20, unit="cycles", min=0, max=1_000_000, doc="L2 TLB lookup, after an L1 miss")
    pwc_enabled: bool = param(False, doc="a page-walk cache shortens walks to their last level")
    pwc_entries: int = param(64, unit="entries", min=8, max=65536, model_min=1,
                             doc="page-walk cache entries (one per 512-page region)")
    pwc_ways: int = param(8, unit="ways", min=1, max=64, model_max=65536, doc="page-walk cache associativity")
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
        64, unit="1", min=1, max=2048, model_max=4096, validate=_power_of_two,
        rule="a power of two; 1: full simulation",
        doc="simulate the translation pages v with v % modulus == r, a hierarchy scaled by 1/modulus")
    sample_subsamples: int = param(3, unit="replicas", min=2, max=64, model_min=1,
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
    zero_infinity_device: str = param(
        "nvme", choices=("nvme", "cpu"),
        doc="where zero-infinity keeps parameters and optimizer state between uses (DeepSpeed's "
            "offload_param.device / offload_optimizer.device): nvme, the SSD (staged through host memory); "
            "cpu, host memory")
    zero_activation_checkpointing: str = param(
        "auto", choices=("auto", "off", "recompute", "cpu"),
        doc="activation checkpointing of zero-offload and zero-infinity (DeepSpeed's activation_checkpointing): "
            "off, every activation stays on the GPU; recompute, each layer keeps its input (the checkpoint) and "
            "the rest is freed after its last forward use and recomputed at the layer's backward; cpu, as "
            "recompute, the checkpoints moved to host memory after their forward use and back one layer ahead "
            "(cpu_checkpointing); auto, recompute for zero-offload and cpu for zero-infinity (docs/guide/zero.md)")
    zero_ranks: int = param(
        1, unit="ranks", min=1, max=4096,
        doc="data-parallel ranks ZeRO partitions across (zero-infinity: stage 3; zero-offload: stage 2, whose "
            "parameters stay whole on each GPU): the run is one rank, its copies of parameters, gradients and "
            "optimizer state off the GPU and their PCIe moves 1/ranks, its CPU optimizer 1/ranks of the work, a "
            "parameter all-gathered after its shard arrives and a gradient reduce-scattered before its shard "
            "leaves (scheduler.zero_collective_busbw_GBps); g10sim machine train sets it (docs/guide/machines.md)")
    zero_collective_busbw_GBps: float = param(
        0.0, unit="GB/s", min=0, max=100000, validate=_zero_or_bandwidth, rule="0, or at least 0.1",
        doc="bus bandwidth of ZeRO's all-gather and reduce-scatter among scheduler.zero_ranks GPUs (NCCL's "
            "definition: size x (n - 1) / n / time); 0: link.bandwidth_GBps (no NVLink); g10sim machine train "
            "sets the machine's")


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
    "cpu": CPUSpec,
    "ssd": SSDTierSpec,
    "link": LinkSpec,
    "fault": FaultSpec,
    "tlb": TranslationSpec,
    "scheduler": SchedulerSpec,
    "run": RunSpec,
    "noise": NoiseSpec,
}

# [ssd] keys of the FTL device (ssd.device_spec maps them onto ssd.py's SSDSpec)
FTL_KEYS = tuple(f.name for f in fields(SSDTierSpec) if f.metadata[_META].from_device)


