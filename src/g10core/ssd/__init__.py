"""SSD model with a real flash translation layer: spec, presets, validation, Python handle.

Geometry: ``n_channels`` × ``chips_per_channel`` × ``dies_per_chip`` ×
``planes_per_die`` planes, each with ``blocks_per_plane`` erase blocks of
``pages_per_block`` flash pages of ``page_size_bytes``.  The flash page is the
mapping unit: ``SSD.read``/``SSD.write`` take logical page numbers (lpn) in
flash pages; a caller with smaller pages converts its ranges.

Each plane is one GC domain.  It keeps ``gc_free_blocks_min`` (θ, at least 2)
erased blocks in reserve: after the host frontier is replaced, GC collects
victims until θ blocks are free again, so one erased block is always there for
the next host frontier and one for the GC frontier.  GC copies go to their own
frontier (``gc_frontier="separate"``, the default) or join the host's write
stream (``"shared"``: no hot/cold separation at all).  Victims: ``greedy``
(fewest valid pages), ``fifo`` (oldest), ``random``, ``d-choices:N`` (fewest
valid among N random blocks; MQSim's RGA).

Over-provisioning, the one definition used everywhere::

    OP = (T - U) / U        alpha = T / U = 1 + OP

    T = data-holding pages of a plane = (blocks_per_plane - θ - 1) * pages_per_block
    U = user-visible (logical) pages of a plane = floor(T / (1 + OP))

T leaves out the θ reserved free blocks and one more block's worth of pages:
the two open frontiers (host and GC) are half-written on average, and their
unwritten halves hold no data either.  With this accounting the steady-state
write amplification of uniform random overwrites matches the closed forms at
alpha = 1 + OP (FIFO: alpha / (alpha + W0(-alpha e^-alpha)); random victim:
alpha / (alpha - 1)) to within 1 % (tests/test_ssd_ftl.py).  The raw
over-provisioning (all physical pages over U) is reported as ``op_raw``.

Presets: ``zssd`` (Samsung Z-SSD SZ985-like, what G10 models as 3.2 GB/s and
12/16 us: Z-NAND timing, 4 KiB pages, Gen3 x4, 800 GB) and ``mlc`` (MQSim's
default MLC device, 8 KiB pages, tR 75 us / tPROG 750 us / tBERS 3.8 ms).  Z-NAND's
page is 2 or 4 KiB, not the 16 KiB of TLC of its time: that is part of how it reaches
tR = 3 us (Samsung at ISSCC 2018, as tabled in AnandTech's 983 ZET review, 2019).

Timing (times in cycles of ``clock_GHz``, the simulation clock):
read   = queue slot, read_overhead, tR, channel transfer, SSD link to host;
write  = queue slot, SSD link from host, room in the write buffer,
         write_overhead (acknowledged here); the page is then transferred and
         programmed (tPROG) in the background and leaves the buffer when its
         program ends (one buffer pool shared by all planes);
GC     = per victim, copy-back of each valid page (tR + tPROG on the plane) and
         one erase (tBERS), holding the plane while it runs (foreground GC).
Planes work in parallel; a channel's time is charged in request order from
the request time, so a plane's backlog does not block its channel for the
other planes (``_ssd_front.pyx`` has the details; ``_ssd.pyx`` lists the units).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from fractions import Fraction

import numpy as np

from ..errors import ConfigError
from ..params import VICTIM_POLICIES, check_fields, from_key, parse_victim
from ..link.pcie import PcieLink, PcieSpec, bandwidth_scale, check_override_keys

__all__ = ["SSDSpec", "SSD", "SSD_PRESETS", "ssd_preset", "device_spec", "ssd_spec_from_config",
           "ssd_from_config", "parse_victim", "percentile_us", "VICTIM_POLICIES"]

# What the compiled FTL allocates up front stays within a few hundred MB.
MAX_ERASE_BLOCKS = 1 << 24     # per-block tables, ~40 B each
MAX_BUFFER_PAGES = 1 << 22     # write-buffer entries

def _ssd_link() -> PcieSpec:
    # NVMe command costs live in the SSD's read/write overheads, not in a link setup time.
    return PcieSpec(generation=3, lanes=4, setup_latency_us=0.0)


@dataclass(frozen=True)
class SSDSpec:
    """One SSD.  Defaults are the ``zssd`` preset (Samsung Z-SSD SZ985-like).

    Each field but ``link`` is the ``[ssd]`` device key of its name (``clock_GHz``:
    ``gpu.frequency_GHz``) as ``config.py`` declares it: unit, range, rule and description
    (``g10sim config show``); the values here are the ``zssd`` device's, which a configuration's
    keys default to.  ``link`` is the SSD's own PCIe link (``ssd.link_generation``, ``ssd.link_lanes``)."""
    # geometry
    n_channels: int = from_key("ssd.n_channels", default=8)
    chips_per_channel: int = from_key("ssd.chips_per_channel", default=4)
    dies_per_chip: int = from_key("ssd.dies_per_chip", default=2)
    planes_per_die: int = from_key("ssd.planes_per_die", default=2)
    blocks_per_plane: int = from_key("ssd.blocks_per_plane", default=6383)    # 800 GB user at OP 7 %
    pages_per_block: int = from_key("ssd.pages_per_block", default=256)
    page_size_bytes: int = from_key("ssd.page_size_bytes", default=4096)
    # FTL
    overprovisioning: float = from_key("ssd.overprovisioning", default=0.07)   # OP = (T - U) / U (module doc)
    gc_free_blocks_min: int = from_key("ssd.gc_free_blocks_min", default=2)     # θ
    victim_policy: str = from_key("ssd.victim_policy", default="greedy")
    gc_frontier: str = from_key("ssd.gc_frontier", default="separate")
    # flash timing
    t_read_us: float = from_key("ssd.t_read_us", default=3.0)                  # Z-NAND ~3 us
    t_program_us: float = from_key("ssd.t_program_us", default=100.0)          # Z-NAND ~100 us
    t_erase_us: float = from_key("ssd.t_erase_us", default=1000.0)
    channel_MTps: float = from_key("ssd.channel_MTps", default=800.0)
    channel_width_bits: int = from_key("ssd.channel_width_bits", default=8)
    # controller and host interface
    read_overhead_us: float = from_key("ssd.read_overhead_us", default=2.616)   # idle 4 KiB read = 12.0 us (SZ985)
    write_overhead_us: float = from_key("ssd.write_overhead_us", default=14.754)  # idle 4 KiB write = 16.0 us (SZ985)
    queue_depth: int = from_key("ssd.queue_depth", default=64)
    max_command_bytes: int = from_key("ssd.max_command_bytes", default=131072)  # MDTS
    write_buffer_bytes: int = from_key("ssd.write_buffer_bytes", default=64 << 20)
    link: PcieSpec = field(default_factory=_ssd_link)   # the SSD's own PCIe link (Gen3 x4)
    clock_GHz: float = from_key("gpu.frequency_GHz")
    seed: int = from_key("ssd.seed", default=0)

    # ---- geometry arithmetic ----

    @property
    def planes_per_channel(self) -> int:
        return self.chips_per_channel * self.dies_per_chip * self.planes_per_die

    @property
    def n_planes(self) -> int:
        return self.n_channels * self.planes_per_channel

    @property
    def data_pages_per_plane(self) -> int:
        """T of one plane: pages that can hold data (module doc)."""
        return (self.blocks_per_plane - self.gc_free_blocks_min - 1) * self.pages_per_block

    @property
    def logical_pages_per_plane(self) -> int:
        """U of one plane: floor(T / (1 + OP)), computed exactly."""
        return int(Fraction(self.data_pages_per_plane) / (1 + Fraction(str(self.overprovisioning))))

    @property
    def logical_pages(self) -> int:
        return self.logical_pages_per_plane * self.n_planes

    @property
    def physical_pages(self) -> int:
        return self.n_planes * self.blocks_per_plane * self.pages_per_block

    @property
    def user_capacity_bytes(self) -> int:
        return self.logical_pages * self.page_size_bytes

    @property
    def raw_capacity_bytes(self) -> int:
        return self.physical_pages * self.page_size_bytes

    @property
    def alpha(self) -> float:
        """T / U as realised (1 + OP up to the rounding of U to whole pages)."""
        return self.data_pages_per_plane / self.logical_pages_per_plane

    @property
    def op_raw(self) -> float:
        """(all physical pages - U) / U: over-provisioning counted the industry's raw way."""
        return (self.physical_pages - self.logical_pages) / self.logical_pages

    def with_user_capacity(self, user_bytes: int) -> "SSDSpec":
        """The same device with blocks_per_plane scaled so that U holds ``user_bytes``."""
        if not user_bytes > 0:
            raise ConfigError(f"ssd capacity = {user_bytes!r} bytes: must be > 0")
        pages_per_plane = math.ceil(user_bytes / self.page_size_bytes / self.n_planes)
        need_T = pages_per_plane * (1 + Fraction(str(self.overprovisioning)))
        blocks = math.ceil(need_T / self.pages_per_block) + self.gc_free_blocks_min + 1
        spec = replace(self, blocks_per_plane=max(blocks, self.gc_free_blocks_min + 2))
        while spec.logical_pages * self.page_size_bytes < user_bytes:   # rounding of U
            spec = replace(spec, blocks_per_plane=spec.blocks_per_plane + 1)
        return spec.check()

    # ---- cycles ----

    def cycles(self, us: float) -> int:
        return int(round(Fraction(str(us)) * Fraction(str(self.clock_GHz)) * 1000))

    @property
    def channel_transfer_cycles(self) -> int:
        """One flash page over the channel: page bytes / (MT/s * width)."""
        bytes_per_us = Fraction(str(self.channel_MTps)) * self.channel_width_bits / 8
        return math.ceil(self.page_size_bytes / bytes_per_us * Fraction(str(self.clock_GHz)) * 1000)

    # ---- validation ----

    def check(self, prefix: str = "ssd") -> "SSDSpec":
        """Validate every field; errors name ``<prefix>.<field>``."""
        p = prefix
        check_fields(self, p)
        op = self.overprovisioning
        θ = self.gc_free_blocks_min
        if self.blocks_per_plane < θ + 2:
            raise ConfigError(
                f"{p}.blocks_per_plane = {self.blocks_per_plane}: GC cannot make progress with "
                f"gc_free_blocks_min = {θ}; need at least {θ + 2} blocks per plane "
                f"(θ reserved + host and GC frontiers)")
        if self.logical_pages_per_plane < 1:
            raise ConfigError(
                f"{p}.blocks_per_plane = {self.blocks_per_plane}: no user-visible page is left "
                f"after gc_free_blocks_min = {θ} reserved blocks and over-provisioning {op}")
        if self.physical_pages >= 2**32 - 1:
            raise ConfigError(f"{p}.blocks_per_plane = {self.blocks_per_plane}: {self.physical_pages} flash pages "
                              "in all; at most 2^32 - 2 are supported (use larger pages or fewer blocks)")
        if self.physical_pages // self.pages_per_block > MAX_ERASE_BLOCKS:
            raise ConfigError(f"{p}.blocks_per_plane = {self.blocks_per_plane}: {self.n_planes} planes of it make "
                              f"{self.physical_pages // self.pages_per_block} erase blocks; at most 2^24 are "
                              "supported (their tables take about 40 B each: use more pages per block)")
        greedy = parse_victim(self.victim_policy)[0] == VICTIM_POLICIES["greedy"]
        n_lists = self.pages_per_block + 1 if greedy else 1          # victim lists per plane
        if self.physical_pages // self.pages_per_block + self.n_planes * n_lists >= 2**31 - 1:
            raise ConfigError(f"{p}: {self.physical_pages // self.pages_per_block} erase blocks and "
                              f"{self.n_planes * n_lists} victim lists; at most 2^31 - 2 together are "
                              "supported (use more pages per block or fewer planes)")
        if self.write_buffer_bytes // self.page_size_bytes > MAX_BUFFER_PAGES:
            raise ConfigError(f"{p}.write_buffer_bytes = {self.write_buffer_bytes}: at most 2^22 pages of "
                              f"{self.page_size_bytes} B")
        if self.max_command_bytes < self.page_size_bytes:
            raise ConfigError(f"{p}.max_command_bytes = {self.max_command_bytes}: smaller than one page "
                              f"({self.page_size_bytes} B)")
        if self.write_buffer_bytes < self.page_size_bytes:
            raise ConfigError(f"{p}.write_buffer_bytes = {self.write_buffer_bytes}: smaller than one page "
                              f"({self.page_size_bytes} B)")
        if not isinstance(self.link, PcieSpec):
            raise ConfigError(f"{p}.link: must be a PcieSpec, got {type(self.link).__name__}")
        self.link.check(f"{p}.link")
        if self.link.clock_GHz != self.clock_GHz:
            raise ConfigError(f"{p}.link.clock_GHz = {self.link.clock_GHz} differs from "
                              f"{p}.clock_GHz = {self.clock_GHz}: one clock for the whole simulation")
        return self

    def compiled_params(self) -> dict:
        """The resolved parameter struct the compiled layer takes (``ssd_params``)."""
        self.check()
        code, d = parse_victim(self.victim_policy)
        return {
            "n_channels": self.n_channels,
            "planes_per_channel": self.planes_per_channel,
            "n_planes": self.n_planes,
            "blocks_per_plane": self.blocks_per_plane,
            "pages_per_block": self.pages_per_block,
            "page_bytes": self.page_size_bytes,
            "logical_pages_per_plane": self.logical_pages_per_plane,
            "gc_free_blocks_min": self.gc_free_blocks_min,
            "victim_policy": code,
            "victim_choices": d,
            "shared_frontier": 1 if self.gc_frontier == "shared" else 0,
            "t_read": self.cycles(self.t_read_us),
            "t_prog": self.cycles(self.t_program_us),
            "t_erase": self.cycles(self.t_erase_us),
            "t_xfer": self.channel_transfer_cycles,
            "read_overhead": self.cycles(self.read_overhead_us),
            "write_overhead": self.cycles(self.write_overhead_us),
            "queue_depth": self.queue_depth,
            "command_pages": self.max_command_bytes // self.page_size_bytes,
            "write_buffer_pages": self.write_buffer_bytes // self.page_size_bytes,
            "seed": self.seed,
        }

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> dict:
        """Derived figures worth printing next to a result."""
        return {
            "planes": self.n_planes,
            "logical_pages": self.logical_pages,
            "physical_pages": self.physical_pages,
            "user_capacity_GB": self.user_capacity_bytes / 1e9,
            "raw_capacity_GB": self.raw_capacity_bytes / 1e9,
            "op": self.overprovisioning,
            "op_raw": self.op_raw,
            "alpha": self.alpha,
            "op_definition": ("OP = (T - U)/U, T = (blocks_per_plane - gc_free_blocks_min - 1) * "
                              "pages_per_block per plane (reserved free blocks and the unwritten "
                              "halves of the two open frontiers excluded), alpha = T/U"),
        }


def _zssd() -> SSDSpec:
    return SSDSpec()


def _mlc() -> SSDSpec:
    # MQSim's default device (ssdconfig.xml): 8 ch x 4 chips x 2 dies x 2 planes, 2048 blocks of
    # 256 x 8 KiB pages, 333 MT/s x 8 bit channels; MLC timing of detailed_model.md §4.
    return SSDSpec(
        blocks_per_plane=2048, pages_per_block=256, page_size_bytes=8192,
        t_read_us=75.0, t_program_us=750.0, t_erase_us=3800.0,
        channel_MTps=333.0, channel_width_bits=8,
        read_overhead_us=5.0, write_overhead_us=5.0,
        queue_depth=64, write_buffer_bytes=256 << 20,
    )


SSD_PRESETS = {"zssd": _zssd, "mlc": _mlc}


def ssd_preset(name: str, **overrides) -> SSDSpec:
    """``zssd`` (Z-SSD-like: 3.2 GB/s, 12/16 us) or ``mlc`` (MQSim-like MLC baseline)."""
    try:
        spec = SSD_PRESETS[name]()
    except KeyError:
        raise ConfigError(f"unknown SSD preset {name!r}; known: {', '.join(SSD_PRESETS)}") from None
    if overrides:
        check_override_keys(spec, overrides, "ssd")
        if "clock_GHz" in overrides and "link" not in overrides:
            overrides = dict(overrides, link=replace(spec.link, clock_GHz=overrides["clock_GHz"]))
        spec = replace(spec, **overrides)
    return spec.check()


# keys of a configuration's [ssd] section that set the device's own link
_LINK_KEYS = {"link_generation": "generation", "link_lanes": "lanes"}
_NOT_DEVICE_KEYS = ("link", "clock_GHz")


def device_spec(ssd_section, clock_GHz: float) -> SSDSpec:
    """The ``ssd.device`` preset of a configuration's ``[ssd]`` section on the clock
    ``clock_GHz``, with every device key of the section that is set (not None): each
    field of :class:`SSDSpec` by its name, the SSD's link by ``link_generation`` and
    ``link_lanes``.  Checked; errors name ``ssd.<key>``."""
    base = ssd_preset(ssd_section.device)
    over = {}
    for f in fields(SSDSpec):
        if f.name not in _NOT_DEVICE_KEYS and getattr(ssd_section, f.name, None) is not None:
            over[f.name] = getattr(ssd_section, f.name)
    link_over = {attr: getattr(ssd_section, key) for key, attr in _LINK_KEYS.items()
                 if getattr(ssd_section, key, None) is not None}
    link = replace(base.link, clock_GHz=clock_GHz, **link_over)
    return replace(base, clock_GHz=clock_GHz, link=link, **over).check()


def ssd_spec_from_config(cfg, user_capacity_bytes: int | None = None) -> SSDSpec:
    """The FTL device of a ``SimConfig``: the ``ssd.device`` preset on the simulation clock
    (``gpu.frequency_GHz``) with the ``[ssd]`` device keys that are set (:func:`device_spec`),
    scaled to ``user_capacity_bytes`` when given (else the preset's full size; FTL tables cost
    memory only for pages that are written).

    Its bandwidth and latencies emerge from the preset's geometry and timing (zssd: 3.2 GB/s,
    12/16 us for an idle 4 KiB read/write).  ``ssd.bandwidth_GBps`` set away from its default
    (3.2 GB/s, what zssd's Gen3 x4 link carries) scales the SSD's own link by
    ``ssd.bandwidth_GBps / 3.2`` (``pcie.bandwidth_scale``): a faster or slower interface; the
    flash behind it (channels, planes) still limits (zssd's 8 channels at 800 MT/s x 8 bit:
    6.4 GB/s).  ``ssd.latency_us`` (the fault-time model's and the scheduler's figure) is not
    used by the device.  Its flash page (zssd 4 KiB, mlc 8 KiB) is the unit
    of ``SSD.read``/``SSD.write``; the compiled callers convert theirs (``SSD.set_host_page_bytes``).
    """
    cfg.check()
    spec = device_spec(cfg.ssd, cfg.gpu.frequency_GHz)
    scale = bandwidth_scale(cfg.ssd.bandwidth_GBps, "ssd.bandwidth_GBps")
    if scale != 1.0:
        spec = replace(spec, link=replace(spec.link, bandwidth_scale=scale)).check()
    if user_capacity_bytes is not None:
        if isinstance(user_capacity_bytes, bool) or not isinstance(user_capacity_bytes, (int, np.integer)):
            raise ConfigError(f"user_capacity_bytes = {user_capacity_bytes!r}: must be an integer number of bytes")
        spec = spec.with_user_capacity(int(user_capacity_bytes))
    return spec


def ssd_from_config(cfg, user_capacity_bytes: int | None = None) -> "SSD":
    """An ``SSD`` (compiled core included) for a ``SimConfig``; see ``ssd_spec_from_config``."""
    return SSD(ssd_spec_from_config(cfg, user_capacity_bytes))


def percentile_us(hist: np.ndarray, bounds: np.ndarray, q: float, per_us: float) -> float:
    """q-quantile (0..1) of a latency histogram, in us (bucket midpoint; resolution 1/64)."""
    total = int(hist.sum())
    if total == 0:
        return float("nan")
    rank = max(1, math.ceil(q * total))
    b = int(np.searchsorted(np.cumsum(hist), rank))
    lo, hi = bounds[b], bounds[b + 1]
    mid = lo if hi - lo <= 1 else (lo + (hi - 1)) / 2       # midpoint of the bucket
    return float(mid) / per_us


class SSD:
    """An SSD built from an ``SSDSpec``; ``.core`` is the compiled ``SSDCore`` the replay
    cimports.  Methods here validate their arguments and return completion cycles."""

    def __init__(self, spec: SSDSpec | str = "zssd"):
        from ._ssd import SSDCore
        if isinstance(spec, str):
            spec = ssd_preset(spec)
        self.spec = spec.check()
        self.link = PcieLink(spec.link)
        self.core = SSDCore(spec.compiled_params(), self.link.core)
        self.bucket_bounds = SSDCore.bucket_bounds()   # histogram bucket edges, cycles

    @property
    def logical_pages(self) -> int:
        return self.core.logical_pages

    def set_host_page_bytes(self, nbytes: int) -> None:
        """The page of the compiled callers (the replay and the far-fault handler number
        virtual pages of ``gpu.page_size_bytes``): their ranges become the flash pages they
        cover.  ``SSD.read``/``write``/``trim`` here keep taking flash pages."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or not 512 <= nbytes <= 1 << 30:
            raise ConfigError(f"host page = {nbytes!r} bytes: must be an integer in [512, 2**30]")
        self.core.set_host_page_bytes(int(nbytes))

    def _range(self, lpn, npages, now):
        for name, v in (("lpn", lpn), ("npages", npages), ("now", now)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ConfigError(f"{name} = {v!r}: must be an integer >= 0")
        if lpn + npages > self.core.logical_pages:
            raise ConfigError(f"lpn range [{lpn}, {lpn + npages}) exceeds the SSD's "
                              f"{self.core.logical_pages} logical pages")
        return int(lpn), int(npages), int(now)

    def _check_health(self):
        st = self.core.stats()
        if st["alloc_failures"] or st["gc_stalls"]:
            raise RuntimeError(f"SSD FTL ran out of erased blocks ({st['alloc_failures']} failed "
                               f"allocations, {st['gc_stalls']} GC stalls): a bug, please report it")
        if st["range_errors"]:
            raise RuntimeError(f"SSD refused {st['range_errors']} commands outside its {self.core.logical_pages} "
                               f"logical pages: a bug, please report it")

    def read(self, lpn: int, npages: int = 1, now: int = 0) -> int:
        """Read pages [lpn, lpn + npages) submitted at cycle ``now``; return the completion cycle."""
        return self.core.py_read(*self._range(lpn, npages, now))

    def write(self, lpn: int, npages: int = 1, now: int = 0) -> int:
        """Write pages [lpn, lpn + npages) submitted at ``now``; return the acknowledgement cycle."""
        done = self.core.py_write(*self._range(lpn, npages, now))
        self._check_health()
        return done

    def trim(self, lpn: int, npages: int = 1) -> None:
        """Deallocate pages (TRIM): their data is dead and GC will not copy it."""
        lpn, npages, _ = self._range(lpn, npages, 0)
        self.core.py_trim(lpn, npages)

    def run_pages(self, lpns, write: bool = True, now: int = 0, closed_loop: bool = True) -> int:
        """One single-page command per lpn (compiled loop); closed loop keeps the queue full.
        Returns the last completion cycle."""
        arr = np.ascontiguousarray(lpns, dtype=np.int64)
        if arr.ndim != 1:
            raise ConfigError("lpns: must be a 1-d array of logical page numbers")
        if arr.size and (arr.min() < 0 or arr.max() >= self.core.logical_pages):
            bad = int(np.flatnonzero((arr < 0) | (arr >= self.core.logical_pages))[0])
            raise ConfigError(f"lpns[{bad}] = {int(arr[bad])}: outside [0, {self.core.logical_pages})")
        if isinstance(now, bool) or now < 0:
            raise ConfigError(f"now = {now!r}: must be an integer >= 0")
        done = self.core.run_pages(arr, bool(write), int(now), bool(closed_loop))
        if write:
            self._check_health()
        return done

    def reset_stats(self):
        """Start a measurement window: zero counters and histograms, keep the FTL state."""
        self.core.reset_stats()

    def idle_at(self) -> int:
        """First cycle at which the device has finished everything submitted so far."""
        return self.core.py_idle_at()

    def erase_count_summary(self) -> dict:
        e = self.core.erase_counts()
        return {"min": int(e.min()), "max": int(e.max()), "mean": float(e.mean()),
                "std": float(e.std()), "spread": int(e.max() - e.min())}

    def stats(self) -> dict:
        """Counters since the last reset_stats, with derived figures (WAF, GC time, percentiles)."""
        s = self.core.stats()
        per_us = self.spec.clock_GHz * 1000.0
        hr, hw = self.core.histograms()
        window = s["last_completion"] - s["first_submit"] if s["first_submit"] >= 0 else 0
        out = {
            "host_read_pages": s["host_read_pages"],
            "host_write_pages": s["host_write_pages"],
            "flash_read_pages": s["flash_read_pages"],
            "flash_program_pages": s["flash_program_pages"],
            "gc_copies": s["gc_copies"],
            "gc_count": s["gc_victims"],
            "erases": s["erases"],
            "unmapped_read_pages": s["unmapped_read_pages"],
            "trimmed_pages": s["trimmed_pages"],
            "read_commands": s["read_commands"],
            "write_commands": s["write_commands"],
            "read_bytes": s["read_bytes"],
            "write_bytes": s["write_bytes"],
            "waf": (s["flash_program_pages"] / s["host_write_pages"]) if s["host_write_pages"] else float("nan"),
            "gc_busy_cycles": s["gc_busy_cycles"],
            "gc_time_us": s["gc_busy_cycles"] / per_us,
            "window_cycles": window,
            "read_latency_us": {f"p{q}": percentile_us(hr, self.bucket_bounds, q / 100, per_us) for q in (50, 99)},
            "write_latency_us": {f"p{q}": percentile_us(hw, self.bucket_bounds, q / 100, per_us) for q in (50, 99)},
            "latency_us": {f"p{q}": percentile_us(hr + hw, self.bucket_bounds, q / 100, per_us) for q in (50, 99)},
            "erase_counts": self.erase_count_summary(),
            "table_bytes": self.table_bytes(),
            "link": self.link.stats(window or None),
        }
        return out

    def table_bytes(self) -> dict:
        """Heap bytes the FTL's tables have reserved, by table, and their ``total``.  Pools take
        memory 4,096 nodes at a time and keep their peak, and untouched parts of a reservation
        need not be resident, so this can exceed what the tables hold now (or the process's RSS)."""
        t = self.core.table_bytes()
        t["total"] = sum(t.values())
        return t

    def __repr__(self):
        s = self.spec
        return (f"SSD({s.n_channels}ch x {s.planes_per_channel} planes/ch, {s.blocks_per_plane} blocks x "
                f"{s.pages_per_block} x {s.page_size_bytes} B, user {s.user_capacity_bytes / 1e9:.1f} GB, "
                f"OP {s.overprovisioning}, {s.victim_policy})")
