"""The far-fault handler of the detailed preset: spec, validation and Python handle.

Defaults are ``detailed_model.md`` §1 and the NVIDIA driver's module parameters (issue 37,
``docs/guide/detailed.md``, "The real driver's rules"): 4 KiB pages; 64 KiB migration units
(the faulted big page moves whole); 2 MiB VA blocks, the prefetch tree's root and the largest
transfer, never crossed; the tree prefetcher filling, for each fault, the largest node of
which strictly more than 51 % is resident or faulted; batches of up to 256 distinct faults,
faults raised during a batch waiting for the next; a batch's driver time in parts (per batch,
per VA block, per page, per VA block unmapped on the host: ``fault.batch_profile``'s measured
costs, ``params.BATCH_PROFILES``; the TLB shootdowns), then the copies; eviction of 2 MiB
chunks in the order their VA blocks first got pages on the GPU, to host memory while it has
room and then to the SSD.
``EARLIER_RULES`` holds the values that give our rules before the driver's.

The handler's semantics (buffer, batches, prefetchers, eviction, timing) are in
``_uvm.pyx``.  ``FaultHandler`` wraps the compiled ``FarFaultHandler`` for Python use
(tests, microbenchmarks); the replay drives the compiled object directly.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field

import numpy as np

from ..codes import TIER_GPU, TIER_HOST, TIER_NOT_PRESENT, TIER_SSD
from ..errors import ConfigError
from ..params import BATCH_PROFILES, batch_costs, check_fields, declaration, default_of, from_key, namer

__all__ = ["FaultHandlerSpec", "FaultHandler", "spec_from_config", "PREFETCHERS", "EVICT_DESTINATIONS", "TIERS", "CAUSES",
           "FAULT_QUEUED", "FAULT_DUPLICATE", "FAULT_RESIDENT", "PAGE_BYTES", "MEASURED_BATCH", "EARLIER_RULES",
           "BATCH_PARTS", "TREE_RULES", "CHUNK_ORDERS"]

PAGE_BYTES = 4096
PREFETCHERS = {"none": 0, "sequential": 1, "tree": 2}                 # _types.Prefetcher
TREE_RULES = {"driver": 0, "cumulative": 1}                            # _types.TreeRule
CHUNK_ORDERS = {"allocation": 0, "migration": 1}                       # _types.ChunkOrder
EVICT_DESTINATIONS = {"host": 0, "ssd": 1, "host-then-ssd": 2}         # _types.EvictDestination
TIERS = {"not_present": TIER_NOT_PRESENT, "ssd": TIER_SSD, "host": TIER_HOST, "gpu": TIER_GPU}
CAUSES = {"fault": 0, "prefetch": 1, "hint": 2, "evict": 3}             # _types.MoveCause
FAULT_QUEUED, FAULT_DUPLICATE, FAULT_RESIDENT = 0, 1, 2                # _uvm raise_fault answers
MAX_BLOCK_BYTES = declaration("fault.va_block_bytes").max              # the compiled maps hold 512 pages

# The measured alternative to G10's 45 µs batch (GTX 1080 Ti nvprof fit, detailed_model.md §1).
MEASURED_BATCH = {k: BATCH_PROFILES["uvmsmart-gtx1080ti"][k] for k in ("batch_fixed_us", "batch_per_page_us")}
# Our earlier rules, before the driver's (issue 37): one 45 µs constant per batch (the g10-45us
# batch profile), "more than half" with filled nodes counted above them, least recently migrated
# chunks first.
EARLIER_RULES = {**BATCH_PROFILES["g10-45us"], "prefetch_threshold": 0.5, "prefetch_tree_rule": "cumulative",
                 "chunk_order": "migration"}
# The batch costs of the declared fault.batch_profile: a FaultHandlerSpec's defaults.
_PROFILE = BATCH_PROFILES[default_of("fault.batch_profile")]
# The parts of a batch's time (fault_batches counters); they sum to batch_cycles.
BATCH_PARTS = ("batch_fixed_cycles", "batch_block_cycles", "batch_page_cycles", "batch_unmap_cycles",
               "batch_tlb_cycles", "batch_transfer_cycles")


@dataclass(frozen=True)
class FaultHandlerSpec:
    """The UVM driver's far-fault path; ``check()`` validates every field.

    Each field is the ``[fault]`` key of its name (``clock_GHz``: ``gpu.frequency_GHz``) as
    ``config.py`` declares it: default, unit, range and description (``g10sim config show``).
    ``eviction_granularity_bytes`` is derived: ``fault.eviction_granularity`` in bytes, 4096
    (``page``) or ``va_block_bytes`` (``chunk``, the default)."""
    migration_unit_bytes: int = from_key("fault.migration_unit_bytes")
    va_block_bytes: int = from_key("fault.va_block_bytes")
    prefetcher: str = from_key("fault.prefetcher")
    prefetch_threshold: float = from_key("fault.prefetch_threshold")
    prefetch_min_faults: int = from_key("fault.prefetch_min_faults")
    prefetch_tree_rule: str = from_key("fault.prefetch_tree_rule")
    sequential_units: int = from_key("fault.sequential_units")
    batch_faults: int = from_key("fault.batch_faults")
    batches_per_service: int = from_key("fault.batches_per_service")
    # the batch costs default to the declared fault.batch_profile's (the keys' own default: unset)
    batch_fixed_us: float = from_key("fault.batch_fixed_us", default=_PROFILE["batch_fixed_us"])
    batch_per_block_us: float = from_key("fault.batch_per_block_us", default=_PROFILE["batch_per_block_us"])
    batch_per_page_us: float = from_key("fault.batch_per_page_us", default=_PROFILE["batch_per_page_us"])
    batch_unmap_us: float = from_key("fault.batch_unmap_us", default=_PROFILE["batch_unmap_us"])
    chunk_order: str = from_key("fault.chunk_order")
    eviction_granularity_bytes: int = field(default_factory=lambda: default_of("fault.va_block_bytes"))
    evict_destination: str = from_key("fault.evict_destination")
    thrashing_enable: bool = from_key("fault.thrashing_enable")
    thrashing_threshold: int = from_key("fault.thrashing_threshold")
    thrashing_lapse_us: float = from_key("fault.thrashing_lapse_us")
    thrashing_nap: int = from_key("fault.thrashing_nap")
    thrashing_pin_threshold: int = from_key("fault.thrashing_pin_threshold")
    thrashing_pin: int = from_key("fault.thrashing_pin")
    clock_GHz: float = from_key("gpu.frequency_GHz")

    def check(self, prefix: str = "fault", by_key: bool = False) -> "FaultHandlerSpec":
        """Validate every field; errors name ``<prefix>.<field>`` (``by_key``: the configuration's keys)."""
        check_fields(self, prefix, by_key)
        n = namer(self, prefix, by_key)
        if self.va_block_bytes < self.migration_unit_bytes:
            raise ConfigError(f"{n('va_block_bytes')} = {self.va_block_bytes}: must be >= "
                              f"{n('migration_unit_bytes')} = {self.migration_unit_bytes}")
        units = self.va_block_bytes // self.migration_unit_bytes
        if self.sequential_units > units:
            raise ConfigError(f"{n('sequential_units')} = {self.sequential_units}: at most {n('va_block_bytes')} / "
                              f"{n('migration_unit_bytes')} = {units} units")
        g = self.eviction_granularity_bytes
        if isinstance(g, bool) or not isinstance(g, numbers.Integral) or g not in (PAGE_BYTES, self.va_block_bytes):
            raise ConfigError(f"{n('eviction_granularity_bytes')} = {g!r}: must be "
                              f"{PAGE_BYTES} (pages) or {n('va_block_bytes')} = {self.va_block_bytes} (chunks)")
        return self

    # ---- derived ----

    @property
    def unit_pages(self) -> int:
        return self.migration_unit_bytes // PAGE_BYTES

    @property
    def block_pages(self) -> int:
        return self.va_block_bytes // PAGE_BYTES

    def cycles(self, us: float) -> int:
        """Microseconds as cycles of the simulation clock (rounded up)."""
        return math.ceil(round(us * self.clock_GHz * 1000, 9))

    def compiled_params(self, gpu_pages: int, host_pages: int, batch_pin_limit: int = 0) -> dict:
        """The compiled ``uvm_params``; ``batch_pin_limit``: the most pages the VA blocks one batch
        migrates into may hold (0: no limit; the replay passes the GPU's frames)."""
        thr = _fraction(self.prefetch_threshold)
        return dict(
            unit_pages=self.unit_pages, block_pages=self.block_pages, prefetcher=PREFETCHERS[self.prefetcher],
            sequential_units=self.sequential_units, threshold_num=thr[0], threshold_den=thr[1],
            batch_faults=self.batch_faults, batch_fixed=self.cycles(self.batch_fixed_us),
            batch_per_page=self.cycles(self.batch_per_page_us),
            batch_per_block=self.cycles(self.batch_per_block_us), batch_unmap=self.cycles(self.batch_unmap_us),
            batches_per_service=self.batches_per_service, prefetch_min_faults=self.prefetch_min_faults,
            tree_rule=TREE_RULES[self.prefetch_tree_rule], chunk_order=CHUNK_ORDERS[self.chunk_order],
            evict_pages=self.eviction_granularity_bytes // PAGE_BYTES,
            evict_destination=EVICT_DESTINATIONS[self.evict_destination],
            gpu_pages=gpu_pages, host_pages=host_pages, page_bytes=PAGE_BYTES,
            batch_pin_limit=int(batch_pin_limit),
        )

    def thrashing_params(self) -> dict:
        """The compiled thrashing rules (``_uvm.thrash_params``): lapse, nap and pin in cycles."""
        lapse = self.cycles(self.thrashing_lapse_us)
        return dict(enable=bool(self.thrashing_enable), threshold=int(self.thrashing_threshold), lapse=lapse,
                    nap=lapse * int(self.thrashing_nap), pin_threshold=int(self.thrashing_pin_threshold),
                    pin=lapse * int(self.thrashing_pin))

    def to_dict(self) -> dict:
        return asdict(self)


def spec_from_config(cfg) -> FaultHandlerSpec:
    """The handler of a ``SimConfig`` (its ``[fault]`` keys on the ``gpu.frequency_GHz`` clock; the batch
    costs each key's value or its ``fault.batch_profile``'s), checked."""
    f = cfg.fault
    costs = batch_costs(f)
    return FaultHandlerSpec(
        migration_unit_bytes=f.migration_unit_bytes, va_block_bytes=f.va_block_bytes, prefetcher=f.prefetcher,
        prefetch_threshold=f.prefetch_threshold, prefetch_min_faults=f.prefetch_min_faults,
        prefetch_tree_rule=f.prefetch_tree_rule, batches_per_service=f.batches_per_service,
        batch_per_block_us=costs["batch_per_block_us"], batch_unmap_us=costs["batch_unmap_us"],
        chunk_order=f.chunk_order,
        # the sequential prefetcher never passes the VA block: more units than it holds = the rest of it
        sequential_units=min(f.sequential_units, max(1, f.va_block_bytes // f.migration_unit_bytes)),
        batch_faults=f.batch_faults, batch_fixed_us=costs["batch_fixed_us"],
        batch_per_page_us=costs["batch_per_page_us"],
        eviction_granularity_bytes=f.va_block_bytes if f.eviction_granularity == "chunk" else PAGE_BYTES,
        evict_destination=f.evict_destination,
        thrashing_enable=f.thrashing_enable, thrashing_threshold=f.thrashing_threshold,
        thrashing_lapse_us=f.thrashing_lapse_us, thrashing_nap=f.thrashing_nap,
        thrashing_pin_threshold=f.thrashing_pin_threshold, thrashing_pin=f.thrashing_pin,
        clock_GHz=cfg.gpu.frequency_GHz).check("fault", by_key=True)


def _fraction(x: float) -> tuple[int, int]:
    """x as a fraction with a small denominator (0.5 -> 1/2), exact for decimals users write."""
    from fractions import Fraction
    f = Fraction(str(x)).limit_denominator(1 << 20)
    return f.numerator, f.denominator


class FaultHandler:
    """A far-fault handler with its link (and optionally SSD, tier map and translator).

    ``gpu_pages``: GPU frames; ``host_pages``: host memory for evicted pages;
    ``initial_tier``: where pages that have never been on the GPU are (default host memory,
    as after a first touch on the CPU); ``initial_host_pages``: host pages already in use.
    ``.core`` is the compiled ``FarFaultHandler``."""

    def __init__(self, spec: FaultHandlerSpec | None = None, *, gpu_pages: int, host_pages: int = 1 << 40,
                 link=None, ssd=None, tiers=None, translator=None, initial_tier: str = "host",
                 initial_host_pages: int = 0):
        from ._uvm import FarFaultHandler, RunTierMap
        from ..link.pcie import PcieLink, PcieSpec
        self.spec = (spec or FaultHandlerSpec()).check()
        for name, v in (("gpu_pages", gpu_pages), ("host_pages", host_pages),
                        ("initial_host_pages", initial_host_pages)):
            if isinstance(v, bool) or int(v) != v or not (0 <= v < 2**50):
                raise ConfigError(f"{name} = {v!r}: must be an integer in [0, 2**50)")
        if initial_tier not in TIERS or initial_tier == "gpu":
            raise ConfigError(f"initial_tier = {initial_tier!r}: must be 'not_present', 'ssd' or 'host'")
        self.link = link if link is not None else PcieLink(PcieSpec(clock_GHz=self.spec.clock_GHz))
        self.ssd = ssd
        self.tiers = tiers if tiers is not None else RunTierMap(TIERS[initial_tier])
        self.translator = translator
        self.core = FarFaultHandler(self.spec.compiled_params(int(gpu_pages), int(host_pages)), self.link.core,
                                    ssd.core if ssd is not None else None, self.tiers,
                                    translator.core if translator is not None else None)
        self.core.host_used_pages = int(initial_host_pages)
        self.core.set_thrashing(self.spec.thrashing_params())

    # ---- the replay's calls, validated ----

    def fault(self, page: int, now: int, alloc: tuple[int, int] | None = None) -> int:
        """A warp touches ``page`` of allocation ``alloc`` = (first, end) at cycle ``now``;
        FAULT_QUEUED, FAULT_DUPLICATE or FAULT_RESIDENT."""
        lo, hi = alloc if alloc is not None else (page - page % self.spec.block_pages,
                                                  page - page % self.spec.block_pages + self.spec.block_pages)
        _check_pages(lo, hi, "alloc")
        if not lo <= page < hi:
            raise ConfigError(f"page {page}: outside its allocation [{lo}, {hi})")
        self._check_ssd(hi)
        _check_cycle(now)
        return self.core.py_raise_fault(int(page), int(lo), int(hi), int(now))

    def _check_ssd(self, end):
        # the SSD's logical page of a page is the page itself
        if self.ssd is not None and end > self.ssd.logical_pages:
            raise ConfigError(f"pages up to {end} exceed the SSD's {self.ssd.logical_pages} logical pages")

    def next_batch_time(self) -> int:
        return self.core.py_next_batch_time()

    def service_batch(self, now: int) -> int:
        """Service one batch from ``now``; returns its end cycle."""
        _check_cycle(now)
        return self.core.py_service_batch(int(now))

    def service_all(self, now: int = 0) -> list[dict]:
        """Service batches until the buffer is empty; one dict per batch (end, moves)."""
        out = []
        t = self.core.py_next_batch_time()
        while t >= 0:
            end = self.core.py_service_batch(max(int(now), t))
            out.append({"end": end, "moves": self.core.last_moves()})
            t = self.core.py_next_batch_time()
        return out

    def prefetch(self, first: int, end: int, now: int, alloc: tuple[int, int] | None = None) -> int:
        """A hint brings pages [first, end) of ``alloc`` (default: exactly that range) in."""
        lo, hi = alloc if alloc is not None else (first, end)
        _check_pages(first, end, "range")
        _check_pages(lo, hi, "alloc")
        if not (lo <= first and end <= hi):
            raise ConfigError(f"range [{first}, {end}) is not inside its allocation [{lo}, {hi})")
        self._check_ssd(hi)
        _check_cycle(now)
        return self.core.py_prefetch_range(int(first), int(end), int(lo), int(hi), int(now))

    def evict(self, first: int, end: int, dest: str, now: int) -> int:
        """A hint sends the resident pages of [first, end) to ``dest`` ('host' or 'ssd')."""
        _check_pages(first, end, "range")
        if dest not in ("host", "ssd"):
            raise ConfigError(f"dest = {dest!r}: must be 'host' or 'ssd'")
        self._check_ssd(end)
        _check_cycle(now)
        return self.core.py_evict_range(int(first), int(end), TIERS[dest], int(now))

    def release(self, first: int, end: int) -> int:
        """Pages [first, end) are freed; returns the shootdown cycles."""
        _check_pages(first, end, "range")
        return self.core.py_release_range(int(first), int(end))

    def arrival(self, page: int) -> int:
        return self.core.py_arrival(int(page))

    def advise(self, first: int, end: int, action: str) -> None:
        """Memory advice on the allocation [first, end): ``prefer_gpu``, ``prefer_host``,
        ``accessed_by`` or ``read_mostly`` (``codes.ACTION_NAMES``)."""
        from ..codes import ACTION_NAMES
        codes = {name: c for c, name in ACTION_NAMES.items() if c >= 5}
        if action not in codes:
            raise ConfigError(f"action = {action!r}: must be one of {', '.join(codes)}")
        _check_pages(first, end, "range")
        self.core.py_advise(int(first), int(end), codes[action])

    def written(self, first: int, end: int) -> None:
        """A kernel writes [first, end) (a read-mostly allocation's host copy is stale)."""
        _check_pages(first, end, "range")
        self.core.py_note_written(int(first), int(end))

    def remote(self, page: int, limit: int, now: int, write: bool = False) -> tuple[int, int]:
        """(pages, done): the pages from ``page`` (below ``limit``) the GPU accesses remotely at
        ``now`` and the cycle their bytes have crossed the link; (0, now) when ``page`` faults."""
        _check_pages(page, limit, "range")
        _check_cycle(now)
        return self.core.py_remote_run(int(page), int(limit), bool(write), int(now))

    def remote_stats(self) -> dict:
        """Thrashing events, throttles, pins, remote accesses and advice so far."""
        return self.core.remote_stats()

    def moves(self) -> np.ndarray:
        """What the latest call moved (``_uvm.MOVE_DTYPE`` rows)."""
        return self.core.last_moves()

    def stats(self) -> dict:
        s = self.core.stats()
        clock = self.spec.clock_GHz * 1000.0
        s["mean_batch_us"] = s["batch_cycles"] / s["batches"] / clock if s["batches"] else 0.0
        s["mean_fault_wait_us"] = s["fault_wait_cycles"] / s["batch_units"] / clock if s["batch_units"] else 0.0
        return s


def _check_pages(first, end, what):
    for v in (first, end):
        if isinstance(v, bool) or int(v) != v or not (0 <= v < 2**50):
            raise ConfigError(f"{what} = [{first}, {end}): pages must be integers in [0, 2**50)")
    if end < first:
        raise ConfigError(f"{what} = [{first}, {end}): end before first")


def _check_cycle(now):
    if isinstance(now, bool) or int(now) != now or not (0 <= now < 2**62):
        raise ConfigError(f"now = {now!r}: must be an integer cycle >= 0")
