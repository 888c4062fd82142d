"""Simulator: builds the components from a config and a trace, runs, returns a Result.

This is the Python layer of the page-level replay: it validates every input, derives
the artifact's integer constants, lays the trace out as flat arrays and hands them to
the compiled ``_replay.Replay``.  Tensor-level policies run their own simulation.
"""
from __future__ import annotations

import numpy as np

from .reference import ArtifactConstants, kernel_cycles, liveness
from .trace import ACCESS_READ, Trace

EVICTION_CODES = {"lru": 0, "deepum": 1}


def replay_inputs(trace: Trace, cfg, hints=None, *, eviction="lru", apply_hints=False, bulk=True):
    """(constants dict, arrays dict) for ``_replay.Replay`` (inputs already validated)."""
    c = ArtifactConstants.from_config(cfg)
    t11, t10, t00 = kernel_cycles(trace, cfg.gpu.frequency_GHz)
    birth, death = liveness(trace)
    first = trace.tensor_first_page.astype(np.int64)
    npages = trace.tensor_pages.astype(np.int64)
    order = np.argsort(first, kind="stable")
    # CSR of inputs and of outputs that are not inputs, in fault-queue order
    reads = (trace.access_mode & ACCESS_READ) != 0
    k_of = trace.access_kernel
    in_t = trace.access_tensor[reads].astype(np.int32)
    out_t = trace.access_tensor[~reads].astype(np.int32)
    in_off = np.concatenate(([0], np.cumsum(np.bincount(k_of[reads], minlength=trace.n_kernels))))
    out_off = np.concatenate(([0], np.cumsum(np.bincount(k_of[~reads], minlength=trace.n_kernels))))
    if hints is None or not apply_hints:
        hints = np.zeros(0, dtype=[("kernel", "<i4"), ("tensor", "<i4"), ("action", "i1")])
    consts = dict(
        pages=int(npages.sum()), kernels=trace.n_kernels, tensors=trace.n_tensors,
        iterations=cfg.run.iterations,
        gpu_pages=c.gpu_pages, host_pages=c.host_pages, tick_cycles=c.tick_cycles,
        gpu_batch=c.gpu_batch, host_batch=c.host_batch, ssd_batch=c.ssd_batch,
        alloc_batch=min(c.alloc_batch, 1 << 62), freq_hz=c.freq_hz,
        bw_pcie_Bpms=c.bw_pcie_Bpms, bw_ssd_Bpms=c.bw_ssd_Bpms,
        l_sys_us=c.l_sys_us, l_ssd_us=c.l_ssd_us,
        eviction=EVICTION_CODES[eviction], window=cfg.scheduler.prefetch_degree,
        apply_hints=bool(apply_hints), bulk=bool(bulk),
    )
    arrays = dict(
        t_first=first, t_np=npages, t_global=trace.tensor_is_global.astype(np.uint8),
        t_birth=birth, t_death=death,
        s_start=first[order], s_tensor=order.astype(np.int32),
        t11=t11, t10=t10, t00=t00,
        in_off=in_off.astype(np.int64), in_t=in_t, out_off=out_off.astype(np.int64), out_t=out_t,
        h_kernel=np.asarray(hints["kernel"], np.int32), h_tensor=np.asarray(hints["tensor"], np.int32),
        h_action=np.asarray(hints["action"], np.int8),
    )
    return consts, arrays, (t11, t00)
