"""The slot model's integers: transfer quotas and capacities, from a configuration.

These are the integers the published simulator derives, with its own conversions; every preset
uses them (not only `g10-artifact`).

The page-level replay (``simulator.py``) and its page-by-page oracle
(``testing/reference.py``) both start from these: the per-tick transfer quotas and the
capacities in pages (:class:`ArtifactConstants`), the quotas when the link and the SSD are
devices (:func:`detailed_quotas`) and the parameters of the physical fault time
(:func:`physical_fault_params`).  What the replay reads from a trace (its kernel times in
cycles, every tensor's first and last use, the check that they fit the clock) is the workload's:
:mod:`g10core.workload.slot_inputs`.  Production code takes them from here; only tests import
the oracle.  See ``shared/reference/g10_artifact_model.md`` for the conversions.
(Before issue 44 both halves were ``g10core.slot_model``; that path still imports, with a warning.)
"""
from __future__ import annotations

from dataclasses import dataclass

from ..codes import PAGE_SIZE_BYTES
from ..config import SimConfig, is_detailed
from ..errors import ConfigError

# Exact slot quotas count a path's time in units of 1/2^16 cycle: a page's cost is rounded
# by at most half a unit (under 1e-4 of it at any allowed bandwidth), a slot is an exact
# integer of units, and a slot's units (< 2^46 at the longest allowed slot) leave int64 room.
UNITS_PER_CYCLE = 1 << 16


def page_units(page_bytes: int, freq_hz: int, GBps: float) -> int:
    """Units of slot time one page takes at ``GBps`` (:data:`UNITS_PER_CYCLE` per cycle)."""
    return max(1, round(page_bytes * freq_hz * UNITS_PER_CYCLE / (GBps * 1e9)))


@dataclass(frozen=True)
class ArtifactConstants:
    """The artifact's derived integers, computed with its own conversions."""

    freq_hz: int              # GPU_frequency_Hz (unsigned long)
    gpu_pages: int            # GPU frames
    host_pages: int           # host memory line, pages
    tick_cycles: int          # batcher period
    gpu_batch: int            # pages in (and out) per tick
    host_batch: int           # host pages per tick and direction
    ssd_batch: int            # SSD pages per tick and direction
    alloc_batch: int          # allocations (and fetches) per tick
    bw_pcie_Bpms: float       # perf model PCIe bandwidth, B/ms
    bw_ssd_Bpms: float        # perf model SSD bandwidth, B/ms
    l_sys_us: int             # perf model far-fault latency (int, as the artifact passes it)
    l_ssd_us: int             # perf model SSD latency
    # Outside g10-artifact (scheduler.artifact_quirks off) the quotas are exact: each path has a
    # budget of slot time (slot_units per slot, what it leaves unused below one page carried to
    # the next slot) and a page costs its time at the path's bandwidth (docs/physics.md).
    exact: bool = False       # exact quotas and zero-fill at allocation cost (else the artifact's rules)
    slot_units: int = 0       # a slot's time in units (tick_cycles * UNITS_PER_CYCLE)
    ssd_read_units: int = 0   # one SSD->GPU page
    ssd_write_units: int = 0  # one GPU->SSD page
    host_units: int = 0       # one host<->GPU page, per direction
    ssd_shared: bool = False  # SSD reads and writes share one budget (ssd.duplex = shared)
    alloc_cycles_per_page: float = 0.0   # zero-fill of one page (gpu.malloc_us_per_byte), exact mode

    @classmethod
    def from_config(cls, cfg) -> "ArtifactConstants":
        g, h, s, link = cfg.gpu, cfg.host, cfg.ssd, cfg.link
        page = g.page_size_bytes
        freq_hz = int(g.frequency_GHz * 1e9)
        gpu_bpc = link.bandwidth_GBps * 1e9 / freq_hz
        ssd_bpc = s.bandwidth_GBps * 1e9 / freq_hz
        tick = int((link.batch_pages * page) / gpu_bpc)
        malloc_cpp = round(g.malloc_us_per_byte * page / 1e6 * freq_hz)
        exact = not cfg.scheduler.artifact_quirks
        write_GBps = s.write_bandwidth_GBps or s.bandwidth_GBps
        return cls(
            freq_hz=freq_hz,
            gpu_pages=round(g.memory_GiB / page * 1024.0 ** 3),
            host_pages=int(h.memory_GiB * 1024.0 ** 3 / page),
            tick_cycles=max(tick, 1),
            gpu_batch=link.batch_pages,
            host_batch=int(link.batch_pages / link.bandwidth_GBps * h.bandwidth_GBps),
            ssd_batch=int(link.batch_pages / link.bandwidth_GBps * s.bandwidth_GBps),
            alloc_batch=(tick // malloc_cpp) if malloc_cpp > 0 else (1 << 62),
            bw_pcie_Bpms=gpu_bpc * freq_hz / 1000,
            bw_ssd_Bpms=ssd_bpc * freq_hz / 1000,
            l_sys_us=int(cfg.fault.system_latency_us),
            l_ssd_us=int(s.latency_us),
            exact=exact,
            slot_units=max(tick, 1) * UNITS_PER_CYCLE,
            ssd_read_units=page_units(page, freq_hz, s.bandwidth_GBps),
            ssd_write_units=page_units(page, freq_hz, write_GBps),
            host_units=page_units(page, freq_hz, h.bandwidth_GBps),
            ssd_shared=s.duplex == "shared",
            alloc_cycles_per_page=zero_fill_cycles_per_page(cfg) if exact else 0.0,
        )

    def per_slot(self) -> dict:
        """Pages per slot each path moves on average: (gpu, host, ssd read, ssd write)."""
        if not self.exact:
            return {"gpu": self.gpu_batch, "host": self.host_batch, "ssd_read": self.ssd_batch,
                    "ssd_write": self.ssd_batch}
        return {"gpu": self.gpu_batch, "host": self.slot_units / self.host_units,
                "ssd_read": self.slot_units / self.ssd_read_units,
                "ssd_write": self.slot_units / self.ssd_write_units}


def zero_fill_cycles_per_page(cfg) -> float:
    """Cycles the GPU takes to allocate and zero-fill one page (``gpu.malloc_us_per_byte``).

    Parameters
    ----------
    cfg : SimConfig
        The configuration (its ``gpu`` section).

    Returns
    -------
    float
        ``malloc_us_per_byte x page_size_bytes`` in cycles of ``gpu.frequency_GHz``.
    """
    g = cfg.gpu
    return g.malloc_us_per_byte * g.page_size_bytes / 1e6 * int(g.frequency_GHz * 1e9)


def physical_fault_params(cfg) -> dict:
    """The parameters of the physical fault time (``fault.handler = physical``;
    ``_fault.PhysicalFaultModel`` and its specification ``reference.physical_fault_cycles``).

    Bandwidths in bytes per ms (``shared_link_times``' unit): the link, the SSD's reads and host
    memory; the zero-fill of a page in cycles (:func:`zero_fill_cycles_per_page`); the driver's
    batch costs in whole cycles, rounded up as the far-fault handler of the detailed preset rounds
    them (``fault_handler.FaultHandlerSpec.cycles``, from the same ``fault.batch_*`` keys), and its
    grouping: pages per migration unit, migration units per batch, pages per VA block.

    Parameters
    ----------
    cfg : SimConfig
        The configuration (its ``gpu``, ``host``, ``ssd``, ``link`` and ``fault`` sections).

    Returns
    -------
    dict
        ``freq_hz``, ``page_bytes``, ``bw_link_Bpms``, ``bw_ssd_Bpms``, ``bw_host_Bpms``,
        ``alloc_cycles_per_page``, ``unit_pages``, ``block_pages``, ``batch_faults``,
        ``batch_fixed_cycles``, ``batch_per_block_cycles``, ``batch_per_page_cycles``,
        ``batch_unmap_cycles``.
    """
    from .fault_handler import spec_from_config

    g, f = cfg.gpu, cfg.fault
    page = g.page_size_bytes
    spec = spec_from_config(cfg)
    return dict(
        freq_hz=int(g.frequency_GHz * 1e9),
        page_bytes=page,
        bw_link_Bpms=cfg.link.bandwidth_GBps * 1e6,
        bw_ssd_Bpms=cfg.ssd.bandwidth_GBps * 1e6,
        bw_host_Bpms=cfg.host.bandwidth_GBps * 1e6,
        alloc_cycles_per_page=zero_fill_cycles_per_page(cfg),
        unit_pages=max(1, -(-f.migration_unit_bytes // page)),
        block_pages=max(1, f.va_block_bytes // page),
        batch_faults=f.batch_faults,
        batch_fixed_cycles=spec.cycles(spec.batch_fixed_us),
        batch_per_block_cycles=spec.cycles(spec.batch_per_block_us),
        batch_per_page_cycles=spec.cycles(spec.batch_per_page_us),
        batch_unmap_cycles=spec.cycles(spec.batch_unmap_us),
    )


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
