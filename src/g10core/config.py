"""Simulation configuration: one frozen dataclass per component, units in the names.

A configuration is a preset (``g10-artifact`` or ``detailed``) with overrides.
Overrides come from a TOML file (``[gpu] memory_GiB = 80``) or ``section.key=value``
strings (``--set gpu.memory_GiB=80``).  Every unknown section or key is an error
that names it; every value is checked for type and range.  ``SimConfig.to_dict()``
is the resolved configuration a result records, and ``config_hash`` its identity.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

GiB = 1 << 30


class ConfigError(ValueError):
    """A configuration value or key is invalid; the message names it."""


# ---- component specs --------------------------------------------------------

@dataclass(frozen=True)
class GPUSpec:
    memory_GiB: float = 40.0               # GPU memory capacity (A100-40GB)
    frequency_GHz: float = 1.2             # cycle unit of the whole simulation
    page_size_bytes: int = 4096            # page (PTE) size
    malloc_us_per_byte: float = 8.14e-7    # allocation cost (4 cycles per 4 KiB page at 1.2 GHz)

    def check(self):
        _positive(self, "memory_GiB", "frequency_GHz", "page_size_bytes")
        _nonnegative(self, "malloc_us_per_byte")
        if self.page_size_bytes & (self.page_size_bytes - 1):
            raise ConfigError(f"gpu.page_size_bytes = {self.page_size_bytes}: must be a power of two")


@dataclass(frozen=True)
class HostSpec:
    memory_GiB: float = 128.0              # host memory available for evicted pages
    bandwidth_GBps: float = 15.754         # host<->GPU bandwidth (PCIe 3.0 x16 raw)

    def check(self):
        _nonnegative(self, "memory_GiB")
        _positive(self, "bandwidth_GBps")


@dataclass(frozen=True)
class SSDSpec:
    bandwidth_GBps: float = 3.2            # SSD<->GPU bandwidth, read = write (Z-SSD-like)
    latency_us: float = 20.0               # per-access latency the scheduler and fault model assume
    read_latency_us: float = 12.0          # device read latency (detailed preset)
    write_latency_us: float = 16.0         # device write latency (detailed preset)
    model: str = "bandwidth"               # "bandwidth" (g10-artifact) or "ftl" (detailed)
    device: str = "zssd"                   # ssd.py preset the FTL model builds (detailed): zssd | mlc
    capacity_GiB: float = 0.0              # user capacity of the FTL SSD (detailed); 0: the device's,
                                           # or the trace's footprint when that is larger

    def check(self):
        _positive(self, "bandwidth_GBps")
        _nonnegative(self, "latency_us", "read_latency_us", "write_latency_us", "capacity_GiB")
        _choice(self, "model", ("bandwidth", "ftl"))
        from .ssd import SSD_PRESETS               # here, not at the top: ssd.py imports this module
        _choice(self, "device", tuple(SSD_PRESETS))


@dataclass(frozen=True)
class LinkSpec:
    bandwidth_GBps: float = 15.754         # GPU's PCIe link, per direction
    batch_pages: int = 50                  # pages per transfer slot (g10-artifact batcher)
    latency_us: float = 5.0                # per-transfer latency (unused by g10-artifact)
    model: str = "slots"                   # "slots" (g10-artifact) or "pcie" (detailed)
    generation: int = 3                    # PCIe generation 1..5 (detailed)
    lanes: int = 16                        # x1, x2, x4, x8, x16 (detailed)
    max_payload_bytes: int = 256           # max TLP payload, MPS (detailed)

    def check(self):
        _positive(self, "bandwidth_GBps", "batch_pages")
        _nonnegative(self, "latency_us")
        _choice(self, "model", ("slots", "pcie"))
        from .pcie import GENERATIONS, LANES, PAYLOADS   # here, not at the top: pcie.py imports this module
        for name, allowed in (("generation", tuple(GENERATIONS)), ("lanes", LANES),
                              ("max_payload_bytes", PAYLOADS)):
            v = getattr(self, name)
            if isinstance(v, bool) or v not in allowed:
                raise ConfigError(f"link.{name} = {v!r}: must be one of {', '.join(map(str, allowed))}")


@dataclass(frozen=True)
class FaultSpec:
    system_latency_us: float = 45.0        # far-fault handling latency (l_sys)
    model: str = "profile"                 # "profile": fault time from the profiled t00/t10/t11

    def check(self):
        _nonnegative(self, "system_latency_us")
        _choice(self, "model", ("profile",))


@dataclass(frozen=True)
class SchedulerSpec:
    delta: float = 0.5                     # safety margin on migration-time estimates
    target_fraction: float = 0.99          # plan against this fraction of GPU memory
    prefetch_degree: int = 8               # DeepUM+ look-ahead, kernels
    artifact_quirks: bool = True           # copy the artifact's hand-tuned target factors

    def check(self):
        _nonnegative(self, "delta")
        _positive(self, "target_fraction", "prefetch_degree")


@dataclass(frozen=True)
class RunSpec:
    iterations: int = 2                    # training iterations simulated (iteration 0 is the cold start)

    def check(self):
        _positive(self, "iterations")


@dataclass(frozen=True)
class NoiseSpec:
    kernel_time_sigma: float = 0.0         # Fig. 19: each kernel's three times scaled by one ratio drawn
                                           # from U(1 - sigma, 1 + sigma), clipped to [0.1, 1.9], after the
                                           # policy has planned on the profiled times; 0: no noise
    seed: int = -1                         # std::mt19937 seed of the draws; -1: the published per-model
                                           # seed (BERT 15, ResNet152 10, SENet154 25, others 5489)

    def check(self):
        if not 0 <= self.kernel_time_sigma <= 1:
            raise ConfigError(f"noise.kernel_time_sigma = {self.kernel_time_sigma}: must be in [0, 1]")
        if not (self.seed == -1 or 0 <= self.seed < 2**32):
            raise ConfigError(f"noise.seed = {self.seed}: must be -1 (the published per-model seed) "
                              "or in [0, 2^32)")


SECTIONS = {
    "gpu": GPUSpec,
    "host": HostSpec,
    "ssd": SSDSpec,
    "link": LinkSpec,
    "fault": FaultSpec,
    "scheduler": SchedulerSpec,
    "run": RunSpec,
    "noise": NoiseSpec,
}


@dataclass(frozen=True)
class SimConfig:
    preset: str = "g10-artifact"
    gpu: GPUSpec = field(default_factory=GPUSpec)
    host: HostSpec = field(default_factory=HostSpec)
    ssd: SSDSpec = field(default_factory=SSDSpec)
    link: LinkSpec = field(default_factory=LinkSpec)
    fault: FaultSpec = field(default_factory=FaultSpec)
    scheduler: SchedulerSpec = field(default_factory=SchedulerSpec)
    run: RunSpec = field(default_factory=RunSpec)
    noise: NoiseSpec = field(default_factory=NoiseSpec)

    def check(self) -> "SimConfig":
        for name in SECTIONS:
            getattr(self, name).check()
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def with_overrides(self, overrides: dict[str, dict[str, Any]]) -> "SimConfig":
        """Return a copy with ``{section: {key: value}}`` applied (validated)."""
        changes = {}
        for section, values in overrides.items():
            if section == "preset":
                raise ConfigError("'preset' cannot be overridden; choose the preset by name")
            if section not in SECTIONS:
                raise ConfigError(f"unknown config section [{section}]; known: {', '.join(SECTIONS)}")
            if not isinstance(values, dict):
                raise ConfigError(f"config section [{section}] must be a table of key = value")
            spec = getattr(self, section)
            known = {f.name: f for f in fields(spec)}
            kw = {}
            for key, value in values.items():
                if key not in known:
                    raise ConfigError(
                        f"unknown config key {section}.{key}; known keys of [{section}]: {', '.join(known)}")
                kw[key] = _coerce(section, key, value, type(getattr(spec, key)))
            changes[section] = replace(spec, **kw)
        return replace(self, **changes).check()

    @property
    def hash(self) -> str:
        return config_hash(self)


def config_hash(cfg: SimConfig) -> str:
    blob = json.dumps(cfg.to_dict(), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# ---- presets ----------------------------------------------------------------

def _artifact() -> SimConfig:
    return SimConfig(preset="g10-artifact")


def _detailed() -> SimConfig:
    return SimConfig(
        preset="detailed",
        ssd=SSDSpec(model="ftl"),
        link=LinkSpec(model="pcie", latency_us=1.0),
    )


PRESETS = {"g10-artifact": _artifact, "detailed": _detailed}


def preset(name: str) -> SimConfig:
    try:
        return PRESETS[name]().check()
    except KeyError:
        raise ConfigError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None


def parse_set(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["gpu.memory_GiB=80", ...]`` -> ``{"gpu": {"memory_GiB": "80"}}`` (values coerced later)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise ConfigError(f"--set {item!r}: expected section.key=value, e.g. gpu.memory_GiB=80")
        key, value = item.split("=", 1)
        section, name = key.strip().split(".", 1)
        out.setdefault(section, {})[name] = value.strip()
    return out


def load_toml(path) -> dict[str, dict[str, Any]]:
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    if "preset" in data:
        data = dict(data)
        data.pop("preset")
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: top-level key {section!r} must be a [section] table")
    return data


def resolve(preset_name: str = "g10-artifact", toml_path=None, sets: list[str] | None = None) -> SimConfig:
    """Preset, then the TOML file, then ``--set`` overrides."""
    cfg = preset(preset_name)
    if toml_path is not None:
        try:
            cfg = cfg.with_overrides(load_toml(toml_path))
        except ConfigError as exc:
            msg = str(exc)
            raise ConfigError(msg if msg.startswith(str(toml_path)) else f"{toml_path}: {msg}") from None
    if sets:
        cfg = cfg.with_overrides(parse_set(sets))
    return cfg


# ---- validation helpers -----------------------------------------------------

def _coerce(section, key, value, typ):
    name = f"{section}.{key}"
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{name} = {value!r}: expected true or false")
    if typ is int:
        if isinstance(value, bool):
            raise ConfigError(f"{name} = {value!r}: expected an integer")
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} = {value!r}: expected an integer") from None
        if not f.is_integer():
            raise ConfigError(f"{name} = {value!r}: expected an integer")
        return int(f)
    if typ is float:
        if isinstance(value, bool):
            raise ConfigError(f"{name} = {value!r}: expected a number")
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} = {value!r}: expected a number") from None
        if not math.isfinite(f):
            raise ConfigError(f"{name} = {value!r}: must be finite")
        return f
    if typ is str:
        return str(value)
    return value


def _section_of(spec) -> str:
    for name, cls in SECTIONS.items():
        if isinstance(spec, cls):
            return name
    return type(spec).__name__


def _positive(spec, *names):
    for n in names:
        v = getattr(spec, n)
        if not (v > 0):
            raise ConfigError(f"{_section_of(spec)}.{n} = {v}: must be > 0")


def _nonnegative(spec, *names):
    for n in names:
        v = getattr(spec, n)
        if not (v >= 0):
            raise ConfigError(f"{_section_of(spec)}.{n} = {v}: must be >= 0")


def _choice(spec, name, allowed):
    v = getattr(spec, name)
    if v not in allowed:
        raise ConfigError(f"{_section_of(spec)}.{name} = {v!r}: must be one of {', '.join(allowed)}")
