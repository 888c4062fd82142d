"""PCIe link model: spec, presets, validation and the Python handle on the compiled link.

The link is full duplex: one first-come-first-served queue per direction.
Directions are named from the device that owns the link (the GPU for the
GPU's x16 link, the SSD for its own x4 front end): ``to_device`` and
``from_device``.

Effective bandwidth of a direction::

    raw_GBps   = GT/s * encoding * lanes / 8          (Gen3+: 128b/130b, Gen1/2: 8b/10b)
    effective  = raw_GBps * payload / (payload + tlp_overhead) * (1 - link_layer_overhead)

``tlp_overhead`` depends on which TLPs carry the data, which depends on who
runs the DMA.  Flow ``host`` (host<->device copies moved by the device's own
DMA engine, e.g. ``cudaMemcpy`` / UVM migrations by the GPU's copy engines):
data into the device arrives as read completions (20 B each), data out of it
leaves as posted writes (24 B).  Flow ``peer`` (SSD<->GPU GPUDirect, moved by
the SSD's DMA engine): the other way round.  Gen3 x16 at 256 B payload gives
12.96 GB/s on writes and 13.15 GB/s on completions (detailed_model.md §3:
"Gen3 ≈ 13.0, Gen4 ≈ 26.0, Gen5 ≈ 52.0").

Timing of one transfer of N bytes submitted at cycle ``now``::

    start = max(now, queue free)            # FCFS per direction, both flows in one queue
    done  = start + setup + ceil(N * clock / effective)

so an N-byte transfer on an idle link takes exactly ``setup + N / effective``
(rounded up to a cycle).  ``pipelined_setup=True`` lets a queued transfer's
setup overlap the previous transfer's data (``done = max(now + setup, queue
free) + wire``).  Arbitration: transfers are served whole in the order they
are submitted; host and peer flows interleave at the granularity the caller
submits them (submit SSD streams in chunks to share the link finely).  Calls
whose ``now`` goes backwards are still served in call order and counted as
``out_of_order_submits``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from fractions import Fraction

from ..errors import ConfigError
from ..params import LANES, PAYLOADS, check_fields, default_of, from_key, param

__all__ = [
    "PcieSpec", "PcieLink", "PCIE_PRESETS", "pcie_preset", "link_spec_from_config", "link_from_config",
    "TO_DEVICE", "FROM_DEVICE", "FLOW_HOST", "FLOW_PEER",
]

TO_DEVICE = 0      # host->GPU, SSD->GPU (GPU link); host->SSD (SSD link)
FROM_DEVICE = 1    # GPU->host, GPU->SSD (GPU link); SSD->host (SSD link)
FLOW_HOST = 0      # moved by the device's own DMA engine
FLOW_PEER = 1      # moved by a peer's DMA engine (GPUDirect SSD<->GPU)

_DIRECTIONS = {"to_device": TO_DEVICE, "from_device": FROM_DEVICE, TO_DEVICE: TO_DEVICE,
               FROM_DEVICE: FROM_DEVICE}
_FLOWS = {"host": FLOW_HOST, "peer": FLOW_PEER, FLOW_HOST: FLOW_HOST, FLOW_PEER: FLOW_PEER}

# Transfer rate per lane (GT/s) and line encoding, per PCIe generation.
GENERATIONS = {
    1: (Fraction(5, 2), Fraction(8, 10)),
    2: (Fraction(5), Fraction(8, 10)),
    3: (Fraction(8), Fraction(128, 130)),
    4: (Fraction(16), Fraction(128, 130)),
    5: (Fraction(32), Fraction(128, 130)),
}


def _exact(x) -> Fraction:
    """The decimal a user wrote (1.2, 0.1) as an exact fraction."""
    return Fraction(str(x)) if isinstance(x, float) else Fraction(x)


@dataclass(frozen=True)
class PcieSpec:
    """One PCIe link. Every field has its unit in its name; ``check()`` validates.

    ``generation``, ``lanes``, ``max_payload_bytes`` and ``setup_latency_us`` are the GPU link's
    ``link.*`` keys (``link.latency_us``), ``clock_GHz`` is ``gpu.frequency_GHz``, as ``config.py``
    declares them (unit, range, description); the other fields are the link's own."""
    generation: int = from_key("link.generation")
    lanes: int = from_key("link.lanes")
    max_payload_bytes: int = from_key("link.max_payload_bytes")
    write_tlp_overhead_bytes: int = param(
        24, unit="B", min=0, doc="framing + sequence + header + LCRC of a posted write")
    completion_tlp_overhead_bytes: int = param(
        20, unit="B", min=0, doc="framing + sequence + header + LCRC of a read completion with data")
    link_layer_overhead: float = param(
        0.10, unit="1", min=0, max=1, max_exclusive=True,
        doc="fraction of the wire taken by DLLPs (ACK, flow control) and SKP ordered sets")
    # per transfer: UVM copy 0.9 us, cudaMemcpy 1.35 us (the detailed preset's link.latency_us)
    setup_latency_us: float = from_key("link.latency_us", default=1.0)
    pipelined_setup: bool = param(
        False, doc="the setup of a queued transfer overlaps the previous transfer's data")
    clock_GHz: float = from_key("gpu.frequency_GHz")
    # what a configuration's bandwidth keys make of the device (link_spec_from_config, ssd.py):
    # 1 and 0 leave the link as generation and lanes give it
    bandwidth_scale: float = param(
        1.0, unit="1", min=0, max=1e6, min_exclusive=True,
        doc="multiplies the raw bandwidth generation and lanes give (link.bandwidth_GBps / 15.754 on the "
            "GPU's link, ssd.bandwidth_GBps / 3.2 on the SSD's)")
    host_flow_scale: float = param(
        1.0, unit="1", min=0, max=1, min_exclusive=True,
        doc="the host flow's share of its bandwidth (host<->device copies; min(1, host.bandwidth_GBps / "
            "link.bandwidth_GBps) on the GPU's link)")

    def check(self, prefix: str = "pcie", by_key: bool = False) -> "PcieSpec":
        """Validate every field; errors name ``<prefix>.<field>`` (``by_key``: the configuration's keys)."""
        check_fields(self, prefix, by_key)
        return self

    # ---- derived figures (exact fractions; floats for display) ----

    def raw_GBps_exact(self) -> Fraction:
        gts, enc = GENERATIONS[self.generation]
        return gts * enc * self.lanes / 8 * _exact(self.bandwidth_scale)

    @property
    def raw_GBps(self) -> float:
        """Raw bandwidth per direction after line encoding (Gen3 x16: 15.754 GB/s)."""
        return float(self.raw_GBps_exact())

    def tlp_overhead_bytes(self, direction, flow) -> int:
        d, f = _direction(direction), _flow(flow)
        # The device's DMA engine reads into the device (completions) and writes out
        # of it (posted writes); a peer's DMA engine does the opposite.
        completions = (d == TO_DEVICE) == (f == FLOW_HOST)
        return self.completion_tlp_overhead_bytes if completions else self.write_tlp_overhead_bytes

    def effective_GBps_exact(self, direction="to_device", flow="host") -> Fraction:
        mps = self.max_payload_bytes
        eff = Fraction(mps, mps + self.tlp_overhead_bytes(direction, flow))
        out = self.raw_GBps_exact() * eff * (1 - _exact(self.link_layer_overhead))
        if self.host_flow_scale != 1 and _flow(flow) == FLOW_HOST:
            out *= _exact(self.host_flow_scale)
        return out

    def effective_GBps(self, direction="to_device", flow="host") -> float:
        """Payload bandwidth of one direction for one flow, GB/s (1e9 B/s)."""
        return float(self.effective_GBps_exact(direction, flow))

    def cycles_per_byte_exact(self, direction="to_device", flow="host") -> Fraction:
        return _exact(self.clock_GHz) / self.effective_GBps_exact(direction, flow)

    @property
    def setup_cycles(self) -> int:
        return math.ceil(_exact(self.setup_latency_us) * _exact(self.clock_GHz) * 1000)

    def idle_transfer_cycles(self, nbytes: int, direction="to_device", flow="host") -> int:
        """Cycles an N-byte transfer takes on an idle link: setup + ceil(N / effective)."""
        return self.setup_cycles + math.ceil(nbytes * self.cycles_per_byte_exact(direction, flow))

    def to_dict(self) -> dict:
        return asdict(self)


def _direction(d) -> int:
    try:
        return _DIRECTIONS[d]
    except (KeyError, TypeError):
        raise ConfigError(f"direction = {d!r}: must be 'to_device' (0) or 'from_device' (1)") from None


def _flow(f) -> int:
    try:
        return _FLOWS[f]
    except (KeyError, TypeError):
        raise ConfigError(f"flow = {f!r}: must be 'host' (0) or 'peer' (1)") from None


def _as_int64_fraction(fr: Fraction, what: str) -> tuple[int, int]:
    """Numerator/denominator that fit int64 (the compiled layer multiplies in 128 bits)."""
    if fr.numerator >= 2**62 or fr.denominator >= 2**62:
        fr = fr.limit_denominator(2**40)
        if fr.numerator >= 2**62:
            raise ConfigError(f"{what}: cycles per byte {float(fr)} is too large to represent")
    return fr.numerator, fr.denominator


PCIE_PRESETS = {
    f"gen{g}x{n}": PcieSpec(generation=g, lanes=n) for g in (3, 4, 5) for n in (16, 4)
}


def pcie_preset(name: str, **overrides) -> PcieSpec:
    """A preset link (``gen3x16``, ``gen4x16``, ``gen5x16``, ``gen3x4``, ``gen4x4``, ``gen5x4``)."""
    try:
        spec = PCIE_PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown PCIe preset {name!r}; known: {', '.join(PCIE_PRESETS)}") from None
    if overrides:
        check_override_keys(spec, overrides, "pcie")
        spec = replace(spec, **overrides)
    return spec.check()


def check_override_keys(spec, overrides: dict, what: str) -> None:
    """Refuse an override of a preset (``pcie_preset``, ``ssd_preset``) that names no field of its spec.

    Parameters
    ----------
    spec : dataclass instance
        The preset's spec.
    overrides : dict
        field name -> value.
    what : str
        The spec's name in the message (``pcie``, ``ssd``).

    Raises
    ------
    ConfigError
        ``unknown WHAT parameter 'K'; known: ...`` for the first unknown name.
    """
    known = set(asdict(spec))
    for k in overrides:
        if k not in known:
            raise ConfigError(f"unknown {what} parameter {k!r}; known: {', '.join(sorted(known))}")


def link_spec_from_config(cfg) -> PcieSpec:
    """The GPU's PCIe link of a ``SimConfig`` as the detailed model's ``PcieSpec``.

    Reads ``link.generation``, ``link.lanes``, ``link.max_payload_bytes``, ``link.latency_us``
    (the per-transfer setup) and ``gpu.frequency_GHz`` (the clock); TLP and link-layer
    overheads are PcieSpec's defaults.  Two keys of the bandwidth model act on the device
    (docs/guide/configuration.md, "Bandwidth keys under detailed"):

    - ``link.bandwidth_GBps`` scales the raw bandwidth by ``link.bandwidth_GBps / 15.754``
      (its default, which is Gen3 x16's raw bandwidth): with the default generation and lanes
      the raw bandwidth becomes ``link.bandwidth_GBps``; the TLP and link-layer overheads
      still apply (payload about 0.82 of raw).  At 15.754 the link is as generation and lanes
      give it.
    - ``host.bandwidth_GBps`` below ``link.bandwidth_GBps`` slows the host flow (host<->GPU
      copies) in each direction to ``host.bandwidth_GBps / link.bandwidth_GBps`` of what the
      link carries, the ratio of host pages to link pages in a slot of the slot model
      (``link.batch_pages * host / link``).  At or above ``link.bandwidth_GBps`` it changes
      nothing: the link is the narrower path.
    """
    cfg.check()
    spec = PcieSpec(generation=cfg.link.generation, lanes=cfg.link.lanes,
                    max_payload_bytes=cfg.link.max_payload_bytes, setup_latency_us=cfg.link.latency_us,
                    clock_GHz=cfg.gpu.frequency_GHz,
                    bandwidth_scale=bandwidth_scale(cfg.link.bandwidth_GBps, "link.bandwidth_GBps"),
                    host_flow_scale=host_flow_scale(cfg))
    return spec.check("link", by_key=True)


def host_flow_scale(cfg) -> float:
    """min(1, host.bandwidth_GBps / link.bandwidth_GBps): the host flow's share of the GPU link's
    bandwidth under ``detailed`` (the slot model's host pages per link page)."""
    host, link = cfg.host.bandwidth_GBps, cfg.link.bandwidth_GBps
    return 1.0 if host >= link else float(_exact(host) / _exact(link))


def bandwidth_scale(value: float, key: str) -> float:
    """``value / default`` of bandwidth key ``key``: what it multiplies a device link's raw
    bandwidth by under ``detailed`` (exactly 1 at the default)."""
    ref = default_of(key)
    return 1.0 if value == ref else float(_exact(value) / _exact(ref))


def link_from_config(cfg) -> "PcieLink":
    """A ``PcieLink`` (compiled core included) for the GPU's link of a ``SimConfig``."""
    return PcieLink(link_spec_from_config(cfg))


class PcieLink:
    """A full-duplex link built from a ``PcieSpec``; ``.core`` is the compiled
    ``LinkCore`` the replay cimports and drives from nogil code."""

    def __init__(self, spec: PcieSpec | str = "gen3x16"):
        from ._pcie import LinkCore
        if isinstance(spec, str):
            spec = pcie_preset(spec)
        self.spec = spec.check()
        num, den = [], []
        for d in (TO_DEVICE, FROM_DEVICE):
            for f in (FLOW_HOST, FLOW_PEER):
                n_, d_ = _as_int64_fraction(spec.cycles_per_byte_exact(d, f), "pcie")
                num.append(n_)
                den.append(d_)
        self.core = LinkCore(num, den, spec.setup_cycles, spec.pipelined_setup)

    def submit(self, direction, nbytes: int, now: int, flow="host") -> int:
        """Queue ``nbytes`` in ``direction`` at cycle ``now``; return the completion cycle."""
        d, f = _direction(direction), _flow(flow)
        if isinstance(nbytes, bool) or int(nbytes) != nbytes or nbytes < 0:
            raise ConfigError(f"nbytes = {nbytes!r}: must be an integer >= 0")
        if isinstance(now, bool) or int(now) != now or now < 0:
            raise ConfigError(f"now = {now!r}: must be an integer cycle >= 0")
        if nbytes >= 2**50:
            raise ConfigError(f"nbytes = {nbytes}: larger than 1 PiB; split the transfer")
        return self.core.py_submit(d, f, int(nbytes), int(now))

    def free_at(self, direction) -> int:
        """Cycle at which ``direction``'s queue is next free."""
        return self.core.py_free_at(_direction(direction))

    def reset(self):
        self.core.reset()

    def reset_stats(self):
        self.core.reset_stats()

    def stats(self, elapsed_cycles: int | None = None) -> dict:
        """Counters per direction; with ``elapsed_cycles`` also utilisation and time in us."""
        out = self.core.stats()
        per_us = self.spec.clock_GHz * 1000.0
        for d, s in out.items():
            s["busy_us"] = s["busy_cycles"] / per_us
            s["queue_delay_us"] = s["queue_delay_cycles"] / per_us
            s["mean_queue_delay_us"] = (s["queue_delay_us"] / s["transfers"]) if s["transfers"] else 0.0
            if elapsed_cycles:
                s["utilisation"] = s["busy_cycles"] / elapsed_cycles
        out["spec"] = self.spec.to_dict()
        out["effective_GBps"] = {
            f"{dn}_{fn}": self.spec.effective_GBps(dn, fn)
            for dn in ("to_device", "from_device") for fn in ("host", "peer")}
        return out

    def __repr__(self):
        s = self.spec
        return (f"PcieLink(Gen{s.generation} x{s.lanes}, raw {s.raw_GBps:.3f} GB/s, "
                f"effective {s.effective_GBps('to_device'):.2f}/{s.effective_GBps('from_device'):.2f} GB/s, "
                f"setup {s.setup_latency_us} us)")
