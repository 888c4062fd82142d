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
import warnings
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError, G10Warning  # noqa: F401 (ConfigError: defined in errors.py; importable from here)
from .files import read_text
# Every key's declaration and the checker live in params.py, below the components whose specs are
# built from them; they are importable from here as before.
from .params import (  # noqa: F401
    _META, FTL_KEYS, CPUSpec, GPUSpec, HostSpec, LinkSpec, FaultSpec, NoiseSpec, Param, RunSpec, SchedulerSpec,
    SECTIONS, SSDTierSpec, TranslationSpec, ITERATION_RULES, BREAKDOWN_RULES, BATCH_PROFILES, check_value, param,
    param_of)
from .gpus import gpu_model
from .link.pcie import PcieSpec
from .ssd import device_spec, ssd_preset

from .params import GiB  # noqa: E402,F401

def __getattr__(name):
    # config.SSDSpec was the [ssd] section's class, named as ssd.SSDSpec (the FTL device) is
    if name == "SSDSpec":
        import warnings
        warnings.warn("g10core.config.SSDSpec is renamed SSDTierSpec (the [ssd] section); "
                      "g10core.ssd.SSDSpec is the FTL device", DeprecationWarning, stacklevel=2)
        return SSDTierSpec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The preset of `g10sim run`, `g10sim hints`, sweeps and the Python API when none is named.
DEFAULT_PRESET = "default"
# The preset that reproduces the paper (`g10sim reproduce`).
ARTIFACT_PRESET = "g10-artifact"


@dataclass(frozen=True)
class SimConfig:
    """A whole simulation configuration: a preset name and one frozen spec per section.

    Build one with :func:`preset` or :func:`resolve` (which validate it), and change it with
    :meth:`with_overrides`; every key, with its unit, default, range and meaning, is in the
    parameter reference (``g10sim config show``).

    Attributes
    ----------
    preset : str
        The preset it started from (``default``, ``g10-artifact`` or ``detailed``).
    gpu, host, cpu, ssd, link, fault, tlb, scheduler, run, noise
        The sections' frozen specs (``GPUSpec``, ``HostSpec``, ``CPUSpec``, ``SSDSpec``, ``LinkSpec``,
        ``FaultSpec``, ``TranslationSpec``, ``SchedulerSpec``, ``RunSpec``, ``NoiseSpec``).

    Examples
    --------
    >>> from g10core.config import preset
    >>> cfg = preset("default").with_overrides({"gpu": {"memory_GiB": 80}})
    >>> cfg.gpu.memory_GiB
    80.0
    >>> preset("default").with_overrides({"gpu.memory_GiB": "80"})
    Traceback (most recent call last):
    ...
    g10core.errors.ConfigError: unknown config section [gpu.memory_GiB]; known: gpu, host, cpu, ssd, link, fault, tlb, scheduler, run, noise
    """

    preset: str = DEFAULT_PRESET
    gpu: GPUSpec = field(default_factory=GPUSpec)
    host: HostSpec = field(default_factory=HostSpec)
    cpu: CPUSpec = field(default_factory=CPUSpec)
    ssd: SSDTierSpec = field(default_factory=SSDTierSpec)
    link: LinkSpec = field(default_factory=LinkSpec)
    fault: FaultSpec = field(default_factory=FaultSpec)
    tlb: TranslationSpec = field(default_factory=TranslationSpec)
    scheduler: SchedulerSpec = field(default_factory=SchedulerSpec)
    run: RunSpec = field(default_factory=RunSpec)
    noise: NoiseSpec = field(default_factory=NoiseSpec)

    def check(self) -> "SimConfig":
        """Check every field's type and range, then the rules between fields.

        Returns
        -------
        SimConfig
            ``self``, when valid.

        Raises
        ------
        ConfigError
            The first bad value, naming ``section.key``, the value and what is allowed.
        """
        for name in SECTIONS:
            check_spec(getattr(self, name), name)
        check_cross(self)
        return self

    def to_dict(self) -> dict:
        """``{"preset": ..., section: {key: value}}``: the resolved configuration a result records."""
        return dataclasses.asdict(self)

    def with_overrides(self, overrides: dict[str, dict[str, Any]], *, from_strings: bool = False) -> "SimConfig":
        """Return a copy with ``{section: {key: value}}`` applied (validated).

        Parameters
        ----------
        overrides : dict
            ``{section: {key: value}}``, as a TOML file's tables.  Values must have the key's
            type (an int is a float too; a float with an integral value is an int).
        from_strings : bool
            Parse string values instead (``--set``, a command line).

        Returns
        -------
        SimConfig
            The new, validated configuration (``self`` is unchanged).

        Raises
        ------
        ConfigError
            An unknown section or key, a value of the wrong type or out of range, or a broken
            rule between keys; the message names ``section.key``.
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
        explicit = self.explicit_keys | {f"{s}.{k}" for s, values in overrides.items() for k in values}
        cfg = replace(self, **changes)
        if "model" in overrides.get("gpu", {}):
            cfg = apply_gpu_model(cfg, explicit)
        cfg = cfg.check()
        object.__setattr__(cfg, "_explicit", frozenset(explicit))
        return cfg

    @property
    def explicit_keys(self) -> frozenset:
        """The ``section.key`` names that overrides set so far (a GPU model does not change them)."""
        return getattr(self, "_explicit", frozenset())

    @property
    def hash(self) -> str:
        """16 hex digits identifying the resolved configuration (:func:`config_hash`)."""
        return config_hash(self)


def model_values(name: str) -> dict[str, object]:
    """``section.key -> value`` that choosing GPU ``name`` (:data:`g10core.gpus.MODEL_KEYS`) puts in a
    configuration; the link's bandwidth is its PCIe generation and lanes' raw rate after line encoding
    (Gen3 x16: 15.754 GB/s, as the presets write it)."""
    g = gpu_model(name)
    bw = round(PcieSpec(generation=g.pcie_generation, lanes=g.pcie_lanes).raw_GBps, 3)
    return {"gpu.memory_GiB": g.memory_GiB, "gpu.sms": g.sms, "link.generation": g.pcie_generation,
            "link.lanes": g.pcie_lanes, "link.bandwidth_GBps": bw, "host.bandwidth_GBps": bw}


def apply_gpu_model(cfg: SimConfig, explicit=frozenset()) -> SimConfig:
    """``cfg`` with ``gpu.model``'s table values (:data:`g10core.gpus.MODEL_KEYS`) in every key not
    in ``explicit`` (the keys the user set: explicit keys win over the model's)."""
    changes: dict[str, dict] = {}
    for key, value in model_values(cfg.gpu.model).items():
        if key not in explicit:
            section, name = key.split(".")
            changes.setdefault(section, {})[name] = value
    return replace(cfg, **{s: replace(getattr(cfg, s), **kw) for s, kw in changes.items()})


def config_hash(cfg: SimConfig) -> str:
    blob = json.dumps(cfg.to_dict(), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# ---- validation from the metadata ---------------------------------------------------------

def check_spec(spec, section: str) -> None:
    """Type, range and rule of every field of one section; errors name ``section.key``."""
    for f in fields(spec):
        check_value(f"{section}.{f.name}", getattr(spec, f.name), f.metadata[_META])


def check_cross(cfg: SimConfig) -> None:
    """The rules that tie parameters together; each error names every key involved."""
    # the SSD's slot quota, the host's and the GPU's at least one page, and an allocation per
    # slot: the replay's constants (simulator.check_constants) refuse those with the keys named.
    ssd_device_spec(cfg)
    fault_handler_spec(cfg)
    tlb_spec(cfg)


def fault_handler_spec(cfg: SimConfig):
    """The far-fault handler of ``cfg`` (``fault_handler.FaultHandlerSpec``), checked: errors name ``fault.<key>``.
    With ``fault.handler = batched`` the GPU must hold two VA blocks (a batch's and a victim's)."""
    from .uvm.fault_handler import spec_from_config

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
    iterations, a breakdown that adds up, the physical fault time (``fault.handler = physical``,
    the declared default; docs/physics.md) and the fixes of ``model_fixes`` (docs/guide/presets.md)."""
    return SimConfig(preset="default")


def _artifact() -> SimConfig:
    """The published simulator as the paper ran it: its hand-tuned factors, its profile-derived
    fault time, two iterations of which the faster is reported, its breakdown and its corners."""
    return SimConfig(
        preset=ARTIFACT_PRESET,
        ssd=SSDTierSpec(duplex="full"),
        fault=FaultSpec(handler="profile"),
        scheduler=SchedulerSpec(artifact_quirks=True),
        run=RunSpec(iterations=2, iteration_rule="fastest", breakdown_rule="artifact"),
    )


def _detailed() -> SimConfig:
    """The exploration preset with the PCIe link and the SSD with its FTL as devices.  It runs every
    slot in full (no bulk repeats), so it simulates two iterations: the steady state reported is
    iteration 1 alone (``run.iterations`` raises it)."""
    return SimConfig(
        preset="detailed",
        ssd=SSDTierSpec(model="ftl"),
        link=LinkSpec(model="pcie", latency_us=PcieSpec.setup_latency_us),   # the PCIe model's measured setup
        fault=FaultSpec(handler="batched"),
        tlb=TranslationSpec(model="hierarchy"),
        run=RunSpec(iterations=2),
    )


PRESETS = {DEFAULT_PRESET: _default, ARTIFACT_PRESET: _artifact, "detailed": _detailed}


def preset(name: str) -> SimConfig:
    """The named preset's configuration, validated.

    Parameters
    ----------
    name : str
        ``default`` (exploration), ``g10-artifact`` (the paper's simulator) or ``detailed``.

    Returns
    -------
    SimConfig

    Raises
    ------
    ConfigError
        An unknown preset name.
    """
    try:
        make = PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None
    cfg = _CHECKED_PRESETS.get(make)
    if cfg is None:
        cfg = _CHECKED_PRESETS[make] = make().check()
    return cfg


# Each preset built and checked once per process, by its factory: a SimConfig is frozen, so every
# caller can share it (a run asks for two or three presets: the reference values its ignored-key
# warning compares with, the clock check; every check is a walk over every parameter).
_CHECKED_PRESETS: dict = {}


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
    """A configuration as the command line builds it: preset, TOML file, then ``--set``.

    Parameters
    ----------
    preset_name : str
        The preset to start from.
    toml_path : str or path, optional
        A TOML file of ``[section] key = value`` overrides (typed values).  A top-level
        ``preset`` in it must name ``preset_name``.
    sets : list of str, optional
        ``section.key=value`` overrides (strings, parsed), applied last.

    Returns
    -------
    SimConfig

    Raises
    ------
    ConfigError
        A bad file, key or value (the message names the file and ``section.key``).
    """
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
    """Every parameter with its value, unit, range and description (``g10sim config show``).

    Parameters
    ----------
    cfg : SimConfig, optional
        The configuration whose values are listed (default: the ``default`` preset).

    Returns
    -------
    list of dict
        One row per parameter, in declaration order: ``key`` (section.key), ``value`` (in
        ``cfg``; None = from the device preset, whose value is ``device_value`` and name
        ``from_device``, or for the batch costs from the profile ``from_profile``, whose value is
        ``profile_value``), ``default`` (the dataclass default), ``type``, ``unit``, ``range``
        (in words), ``min``, ``max``, ``min_exclusive``, ``choices``, ``doc``.
    """
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
            if p.from_profile:
                row["from_profile"] = cfg.fault.batch_profile
                row["profile_value"] = BATCH_PROFILES[cfg.fault.batch_profile][f.name]
            rows.append(row)
    return rows


def value_text(value) -> str:
    """A parameter's value as ``g10sim config show`` and the manual's parameter tables write it.

    Parameters
    ----------
    value : bool, int, float or str
        A value of :func:`parameters` (``value`` or ``device_value``).

    Returns
    -------
    str
        ``true``/``false`` for a boolean (as TOML writes it), the shortest ``%g`` form for a
        float, ``str(value)`` otherwise.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


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


def check_clock(cfg: SimConfig, *, stacklevel: int = 3) -> None:
    """Warn when ``gpu.frequency_GHz`` is set away from the presets': it is the simulation clock (the
    unit of every cycle count), not the GPU's speed, so it scales no kernel time."""
    ref = preset(DEFAULT_PRESET).gpu.frequency_GHz
    if cfg.gpu.frequency_GHz != ref:
        warnings.warn(G10Warning(
            f"gpu.frequency_GHz = {cfg.gpu.frequency_GHz:g} is the simulation clock (the unit of the cycle counts), "
            f"not the GPU's speed: kernel times do not scale with it (results move only by rounding to whole "
            f"cycles); choose the GPU with gpu.model (--gpu)"), stacklevel=stacklevel)


def slot_model_applies_advice(cfg: SimConfig) -> bool:
    """The slot model applies memory advice with exact quotas and no devices (the ``default``
    preset's model); the artifact's rules (``g10-artifact``) and the slot model with devices
    ignore it (a run warns).  The far-fault handler (``fault.handler = batched``) always applies it."""
    return not cfg.scheduler.artifact_quirks and not is_detailed(cfg)
