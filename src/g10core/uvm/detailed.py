"""The detailed preset's machine, assembled for a trace, and what its devices counted.

The SSD (with its FTL) and the GPU's PCIe link sized for a trace's footprint, the tensors' pages
laid out on VA blocks and on the SSD's flash pages, the far-fault handler's kernel runner on
them, and, after the run, the devices' and the handler's counters for the result.
"""
from __future__ import annotations

import numpy as np

from ..codes import KERNEL_ROW_DTYPE, PAGE_SIZE_BYTES, as_columns
from ..errors import ConfigError
from ..params import GiB


def ssd_first_pages(trace, flash_page_bytes: int) -> tuple[np.ndarray, int]:
    """Per tensor its first logical page on the SSD (in virtual pages) and the virtual pages
    the layout spans: the trace's own layout, except that on a device whose flash page holds
    several virtual pages (mlc: 8 KiB) each tensor starts on a flash page, so a migration unit
    (aligned in the tensor) is whole flash pages, not a partial one at each end."""
    ratio = flash_page_bytes // PAGE_SIZE_BYTES
    npages = trace.tensor_pages.astype(np.int64)
    if ratio <= 1 or flash_page_bytes % PAGE_SIZE_BYTES:
        return trace.tensor_first_page.astype(np.int64), int(npages.sum())
    first = aligned_first_pages(trace, ratio)
    return first, int((first + -(-npages // ratio) * ratio).max(initial=0))


def aligned_first_pages(trace, block_pages: int) -> np.ndarray:
    """Tensors' first pages with each tensor starting on a VA block (``cudaMallocManaged``
    alignment), in the trace's order: a VA block then belongs to one tensor, as the far-fault
    handler requires.  The address space grows by less than one block per tensor."""
    first = trace.tensor_first_page.astype(np.int64)
    npages = trace.tensor_pages.astype(np.int64)
    order = np.argsort(first, kind="stable")
    span = -(-npages[order] // block_pages) * block_pages
    out = np.empty_like(first)
    out[order] = np.concatenate(([0], np.cumsum(span)[:-1])) if len(span) else span
    return out


def detailed_devices(trace, cfg):
    """The detailed preset's SSD (with its FTL) and GPU link, sized for this trace.

    Every page of the footprint gets a logical page on the SSD (its bytes: the flash pages
    that hold them when the device's page is not ``gpu.page_size_bytes``), so the SSD's
    user capacity must hold the footprint.  ``ssd.capacity_GiB`` sets it
    (an SSD that just holds the footprint is rewritten every iteration: that is where
    garbage collection shows); 0 means the device preset's capacity, or the footprint
    rounded up to 1 GiB when the preset is smaller.  (VA-block-aligned tensors, the
    detailed preset's far-fault handler, keep the trace's logical pages on the SSD.)
    """
    from ..link.pcie import link_from_config
    from ..ssd import ssd_from_config, ssd_spec_from_config

    _, layout_pages = ssd_first_pages(trace, ssd_spec_from_config(cfg).page_size_bytes)
    footprint = max(trace.footprint_bytes, layout_pages * PAGE_SIZE_BYTES)
    if cfg.ssd.capacity_GiB > 0:
        capacity = int(cfg.ssd.capacity_GiB * GiB)
        if capacity < footprint:
            raise ConfigError(f"ssd.capacity_GiB = {cfg.ssd.capacity_GiB:g} is smaller than the trace's footprint "
                              f"({footprint / GiB:.2f} GiB): every page needs a logical page on the SSD")
    else:
        preset_capacity = ssd_spec_from_config(cfg).user_capacity_bytes
        capacity = None if preset_capacity >= footprint else -(-footprint // GiB) * GiB
    ssd = ssd_from_config(cfg, capacity)
    # the replay numbers virtual pages; the FTL maps flash pages (mlc: 8 KiB)
    ssd.set_host_page_bytes(cfg.gpu.page_size_bytes)
    return ssd, link_from_config(cfg)


def device_counters(raw: dict, ssd, link, consts: dict) -> dict:
    """What the detailed preset's devices saw over the whole run (both iterations)."""
    rows = as_columns(raw["kernels"], KERNEL_ROW_DTYPE)
    elapsed = int(rows[-1, 3]) if rows.size else 0
    # the slot model lets a page count as arrived before its transfer completes, so the
    # link may still be busy when the last kernel ends: its utilisation is over the span
    # until it is idle too (never above 1)
    busy_until = max((d["last_completion_cycle"] for d in link.core.stats().values()), default=0)
    ssd._check_health()
    st = ssd.stats()
    ls = link.stats(max(elapsed, busy_until))
    return {
        "ssd": st,
        "link": ls,
        "ssd_summary": {
            "waf": st["waf"], "gc_count": st["gc_count"], "gc_time_s": st["gc_time_us"] / 1e6,
            "host_write_pages": st["host_write_pages"], "host_read_pages": st["host_read_pages"],
            "erase_spread": st["erase_counts"]["spread"],
            "throttled_ticks": int(raw.get("ssd_throttled_ticks", 0)),
            "user_capacity_pages": int(ssd.core.logical_pages),
        },
        # (none when nothing ran: a run stopped in its first kernel)
        "link_utilisation": {d: ls[d].get("utilisation") for d in ("to_device", "from_device")},
    }


def victims_by_evictor(cfg, rule) -> bool:
    """Whether the far-fault handler asks the eviction rule ``rule`` for its victims
    (``fault.victims``: evictor, or policy with a rule other than the arrival order), rather
    than taking the head of its chunk list (``fault.chunk_order``)."""
    return cfg.fault.victims == "evictor" or (cfg.fault.victims == "policy" and not rule.arrival_order)


def kernel_runner(cfg, consts: dict, arrays: dict, devices, tlb, trace, use_evictor: bool):
    """The detailed preset's ``_kernelrun.KernelRunner``: the far-fault handler of ``[fault]`` on
    ``gpu.sms`` SMs, the devices' link and SSD, the translator; victims by the rule when
    ``use_evictor`` (:func:`victims_by_evictor`)."""
    from ._kernelrun import KernelRunner
    from .fault_handler import spec_from_config

    spec = spec_from_config(cfg)
    gpu_pages, host_pages = int(consts["gpu_pages"]), int(consts["host_pages"])
    params = spec.compiled_params(gpu_pages, host_pages, batch_pin_limit=gpu_pages)
    ssd, link = devices
    runner = KernelRunner(params, link.core, ssd.core, tlb.core,
                          {k: arrays[k] for k in ("t11", "in_off", "in_t", "out_off", "out_t", "w_off", "w_t")},
                          int(cfg.gpu.sms), use_evictor, int(consts["iterations"]),
                          lpn_first=ssd_first_pages(trace, ssd.spec.page_size_bytes)[0])
    runner.set_thrashing(spec.thrashing_params())
    return runner


def handler_counters(raw: dict, runner, cfg, use_evictor: bool) -> dict:
    """What the far-fault handler and the SMs did (``fault_batches``, ``sm``)."""
    fb = dict(raw["fault_batches"])
    clock = cfg.gpu.frequency_GHz * 1000.0
    fb["mean_batch_us"] = fb["batch_cycles"] / fb["batches"] / clock if fb["batches"] else 0.0
    fb["mean_fault_wait_us"] = fb["fault_wait_cycles"] / fb["batch_units"] / clock if fb["batch_units"] else 0.0
    fb["mean_batch_units"] = fb["batch_units"] / fb["batches"] if fb["batches"] else 0.0
    fb["victims"] = ("policy evictor" if use_evictor else "chunks in allocation order"
                     if cfg.fault.chunk_order == "allocation" else "least recently migrated")
    out = {"fault_batches": fb, "sm": dict(raw["runner"])}
    handler = getattr(runner, "fault_handler", None) if runner is not None else None
    if handler is not None:
        # thrashing detection and remote (zero-copy) access (issue 37)
        rs = handler.remote_stats()
        rs["thrashing_enabled"] = bool(cfg.fault.thrashing_enable)
        out["thrashing"] = rs
    return out
