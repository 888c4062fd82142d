# cython: language_level=3
"""Fault models: the extra time a kernel takes when some of its pages fault.

``fault_cycles(k, fin, fout)`` gets, for kernel k's inputs and outputs, the pages
[total, never allocated, on the SSD, in host memory, in transfer] found at its first
attempt; the kernel then ends at the later of (start + t11 + fault_cycles) and the
arrival of its last faulted page.

* ``FaultModel``: no extra time (faults cost only the transfers themselves).
* ``ProfileFaultModel``: the published simulator's ``performance_model``, derived from
  the three profiled times (``g10_artifact_model.md`` §4; ``reference.fault_model_cycles``
  is its Python specification); ``fault.handler = profile`` (``g10-artifact``).
* ``PhysicalFaultModel``: the faulting pages over the bandwidths of their paths, the
  zero-fill of never-allocated pages, plus the driver's batch costs (docs/physics.md,
  "Fault time: the physical rule"; ``reference.physical_fault_cycles`` is its Python
  specification); ``fault.handler = physical`` (``default``).

In the slot model the pages themselves still arrive by the transfer slots: a fault model's
time is the kernel's fault-handling time, and the kernel waits for whichever is later.

An event-driven model (``runs_kernels``: ``_kernelrun.KernelRunner``, the detailed
preset's far-fault handler) runs each kernel itself instead: the replay hands it the
kernel's hints and the kernel, and its time emerges from fault batches and transfers.
"""
from libc.math cimport INFINITY, NAN
from libc.stdint cimport int8_t, int32_t, int64_t

from ..core._types cimport kernel_row, moved_row

import numpy as np


cdef inline double ieee_div(double a, double b) noexcept nogil:
    """a / b as IEEE 754 defines it, also for b == 0 (inf, or NaN for 0 / 0), in every build.

    The artifact's fault model divides by a zero bandwidth in one case (SSD faults take
    the whole link: ssd.bandwidth_GBps = link.bandwidth_GBps); spelling the result out
    keeps the debug build (``cdivision=False``, which would raise) equal to the release.
    """
    if b == 0.0:
        if a == 0.0 or a != a:
            return NAN
        return INFINITY if a > 0.0 else -INFINITY
    return a / b


cdef inline int64_t artifact_ulong_cycles(double x) noexcept nogil:
    """The artifact's ``(unsigned long)`` of a fault time in cycles, as gcc emits it on x86-64.

    A value of 2^64 or more, +inf included, converts to 0 there (``x - 2^63`` overflows
    ``cvttsd2si`` to 2^63, and the sign flip gives 0): an infinite fault time adds
    nothing and the kernel ends when its last page arrives.  Values in [2^63, 2^64)
    and NaN cannot reach here (``std::max`` drops a NaN).
    """
    if not (x < 18446744073709551616.0):
        return 0
    return <int64_t>x


cdef class FaultModel:
    """Faults cost nothing beyond their transfers."""

    cdef int64_t fault_cycles(self, int64_t k, const int64_t* fin, const int64_t* fout) noexcept nogil:
        return 0

    cdef bint bulk_safe(self) noexcept nogil:
        return True

    cdef bint runs_kernels(self) noexcept nogil:
        return False

    cdef int apply_hint(self, int32_t tensor, int8_t action, int64_t now, int64_t iteration) except -1 nogil:
        return 0

    cdef int64_t run_kernel(self, int64_t k, int64_t iteration, int64_t now, kernel_row* row,
                            moved_row* moved, int64_t* translation) except -1 nogil:
        with gil:
            raise NotImplementedError("this fault model does not run kernels")

    def stats(self):
        return {}


cdef (double, double) shared_link_times(double ssd_bytes, double host_bytes, double bw_ssd,
                                        double bw_host, double bw_link) noexcept nogil:
    """(SSD time, host time) in ms of one direction's faults sharing the link (bytes, B/ms).

    The SSD streams at min(bw_ssd, link) for ssd_bytes / that; meanwhile the host pages move
    at min(bw_host, link - SSD stream), and after it at min(bw_host, link).  Both times are
    finite for any positive bandwidths (docs/physics.md, "Fault time: the host share")."""
    cdef double r_s = bw_ssd if bw_ssd < bw_link else bw_link
    cdef double t_s = 0.0, c, h, t_h
    if ssd_bytes > 0 and r_s > 0:
        t_s = ssd_bytes / r_s
    if host_bytes <= 0:
        return t_s, 0.0
    h = bw_host if bw_host < bw_link else bw_link
    c = bw_link - r_s if t_s > 0 else bw_link
    if c > bw_host:
        c = bw_host
    if c > 0 and host_bytes <= c * t_s:
        t_h = host_bytes / c
    else:
        if c < 0:
            c = 0
        t_h = t_s + (host_bytes - c * t_s) / h
    return t_s, t_h


cdef class ProfileFaultModel(FaultModel):
    """ΔT_PF from the profiled t00/t10/t11 (``times``: dict of int64 cycle arrays;
    ``params``: freq_hz, page_bytes, bw_pcie_Bpms, bw_ssd_Bpms, l_sys_us, l_ssd_us)."""

    def __init__(self, dict times, dict params):
        keep = {name: np.ascontiguousarray(times[name], dtype=np.int64) for name in ("t11", "t10", "t00")}
        cdef int64_t[::1] v
        v = keep["t11"]; self.t11 = &v[0]
        v = keep["t10"]; self.t10 = &v[0]
        v = keep["t00"]; self.t00 = &v[0]
        self._keep = keep
        self.freq_hz = params["freq_hz"]
        self.page_bytes = params["page_bytes"]
        self.bw_pcie = params["bw_pcie_Bpms"]
        self.bw_ssd = params["bw_ssd_Bpms"]
        self.l_sys_us = params["l_sys_us"]
        self.l_ssd_us = params["l_ssd_us"]
        self.alloc_cycles_per_page = params.get("alloc_cycles_per_page", 0.0)
        self.zero_fill_alloc = params.get("zero_fill_alloc", False)
        self.link_shared_while_ssd = params.get("link_shared_while_ssd", False)

    cdef int64_t fault_cycles(self, int64_t k, const int64_t* fin, const int64_t* fout) noexcept nogil:
        # Quirk kept (it moves every published number): profiled cycles become ms through
        # an integer division by the clock in Hz, so times under one second become 0 ms.
        cdef int64_t f = self.freq_hz
        cdef double T00 = <double>((self.t00[k] // f) * 1000)
        cdef double T10 = <double>((self.t10[k] // f) * 1000)
        cdef double T11 = <double>((self.t11[k] // f) * 1000)
        # the artifact counts never-allocated pages as host transfers; outside it they move no
        # byte and cost their allocation instead (docs/physics.md)
        cdef int64_t zf = 0 if self.zero_fill_alloc else 1
        cdef int64_t in_f = zf * fin[1] + fin[2] + fin[3], out_f = zf * fout[1] + fout[2] + fout[3]
        cdef int64_t cyc, alloc
        cdef double r_in = (<double>in_f) / fin[0] if fin[0] else 0.0
        cdef double r_out = (<double>out_f) / fout[0] if fout[0] else 0.0
        cdef double rs_in = (<double>fin[2]) / in_f if in_f else 0.0
        cdef double rs_out = (<double>fout[2]) / out_f if out_f else 0.0
        cdef double s_in = <double>(fin[0] * self.page_bytes), s_out = <double>(fout[0] * self.page_bytes)
        cdef double bw_cpu_in, bw_cpu_out, bw_ssd_in, bw_ssd_out, cap, ssd_in_t, ssd_out_t, cpu_t, dms
        cdef double cpu_in_t, cpu_out_t
        if T00 <= T11:
            T00 = T11
        if T10 < T11:
            T10 = T11
        if T10 > T00:
            T10 = T00
        bw_cpu_in = 1063004400.0 if T00 == T10 else s_in / (T00 - T10)
        bw_cpu_out = 1063004400.0 if T10 == T11 else s_out / (T10 - T11)
        bw_ssd_in = bw_cpu_in * self.l_sys_us / (self.l_sys_us + self.l_ssd_us)
        bw_ssd_out = bw_cpu_out * self.l_sys_us / (self.l_sys_us + self.l_ssd_us)
        if bw_ssd_in > self.bw_ssd:
            bw_ssd_in = self.bw_ssd
        if bw_ssd_out > self.bw_ssd:
            bw_ssd_out = self.bw_ssd
        if rs_in == 0:
            bw_ssd_in = 0
        if rs_out == 0:
            bw_ssd_out = 0
        if self.link_shared_while_ssd:
            # outside g10-artifact: the SSD stream takes its share of the link only while it
            # streams; the host pages get the rest then and the whole link after (never 0)
            ssd_in_t, cpu_in_t = shared_link_times(r_in * rs_in * s_in, r_in * (1 - rs_in) * s_in,
                                                   bw_ssd_in, bw_cpu_in, self.bw_pcie)
            ssd_out_t, cpu_out_t = shared_link_times(r_out * rs_out * s_out, r_out * (1 - rs_out) * s_out,
                                                     bw_ssd_out, bw_cpu_out, self.bw_pcie)
            dms = ssd_in_t + ssd_out_t
            if cpu_in_t + cpu_out_t > dms:
                dms = cpu_in_t + cpu_out_t
            cyc = artifact_ulong_cycles(dms / 1e3 * f)
            alloc = <int64_t>(<double>(fin[1] + fout[1]) * self.alloc_cycles_per_page)
            if self.zero_fill_alloc and alloc > cyc:
                cyc = alloc
            return cyc
        cap = self.bw_pcie - (bw_ssd_in if bw_ssd_in > bw_ssd_out else bw_ssd_out)
        if bw_cpu_in > cap:
            bw_cpu_in = cap
        if bw_cpu_out > cap:
            bw_cpu_out = cap
        ssd_in_t = 0.0 if rs_in == 0 else r_in * rs_in * s_in / bw_ssd_in
        ssd_out_t = 0.0 if rs_out == 0 else r_out * rs_out * s_out / bw_ssd_out
        # When SSD faults take the whole link, cap is 0 and the host terms divide by 0:
        # +inf when host/unallocated pages fault, NaN (0/0) when none do.
        cpu_t = (ieee_div(r_in * (1 - rs_in) * s_in, bw_cpu_in)
                 + ieee_div(r_out * (1 - rs_out) * s_out, bw_cpu_out))
        dms = ssd_in_t + ssd_out_t
        if cpu_t > dms:         # std::max(ssd, cpu): a NaN cpu_t keeps the SSD time
            dms = cpu_t
        cyc = artifact_ulong_cycles(dms / 1e3 * f)
        if self.zero_fill_alloc:
            # allocation proceeds alongside the transfers (frames are given in the same slots)
            alloc = <int64_t>(<double>(fin[1] + fout[1]) * self.alloc_cycles_per_page)
            if alloc > cyc:
                cyc = alloc
        return cyc

    def py_fault_cycles(self, int64_t k, fin, fout):
        """fault_cycles for Python (tests): fin/fout are 5-sequences."""
        return _py_fault_cycles(self, k, fin, fout)


def configured_fault_model(dict c, dict arrays):
    """The slot model's fault model of the replay's constants ``c`` (``simulator.replay_inputs``).

    Parameters
    ----------
    c : dict
        The replay's constants: with ``physical_fault`` (``uvm.slots.physical_fault_params``,
        ``fault.handler = physical``) the physical model, else the profile model of ``freq_hz``,
        ``page_bytes``, ``bw_pcie_Bpms``, ``bw_ssd_Bpms``, ``l_sys_us``, ``l_ssd_us`` and, with
        ``exact`` (outside ``g10-artifact``), its zero-fill and link-share rules.
    arrays : dict
        The replay's arrays: the profiled ``t11``, ``t10``, ``t00`` (cycles) of each kernel.

    Returns
    -------
    FaultModel
        A ``PhysicalFaultModel`` or a ``ProfileFaultModel``.
    """
    if c.get("physical_fault") is not None:
        return PhysicalFaultModel(c["physical_fault"])
    return ProfileFaultModel({"t11": arrays["t11"], "t10": arrays["t10"], "t00": arrays["t00"]},
                             {"freq_hz": c["freq_hz"], "page_bytes": c.get("page_bytes", 4096),
                              "bw_pcie_Bpms": c["bw_pcie_Bpms"], "bw_ssd_Bpms": c["bw_ssd_Bpms"],
                              "l_sys_us": c["l_sys_us"], "l_ssd_us": c["l_ssd_us"],
                              "zero_fill_alloc": c.get("exact", False),
                              "link_shared_while_ssd": c.get("exact", False),
                              "alloc_cycles_per_page": c.get("alloc_cycles_per_page", 0.0)})


cdef int64_t _py_fault_cycles(FaultModel model, int64_t k, fin, fout) except? -1:
    """``model.fault_cycles`` of Python 5-sequences (the tests' entry point)."""
    cdef int64_t a[5]
    cdef int64_t b[5]
    cdef int i
    for i in range(5):
        a[i] = fin[i]
        b[i] = fout[i]
    return model.fault_cycles(k, a, b)


cdef inline int64_t ceil_div(int64_t a, int64_t b) noexcept nogil:
    """ceil(a / b) for a >= 0, b >= 1."""
    return (a + b - 1) // b


cdef class PhysicalFaultModel(FaultModel):
    """The physical fault time: a faulting kernel's pages over their paths' bandwidths, plus the
    driver's batch costs (``fault.handler = physical``; docs/physics.md, "Fault time: the
    physical rule"; ``reference.physical_fault_cycles`` is its specification).

    ``params`` (``uvm.slots.physical_fault_params``): ``freq_hz``, ``page_bytes``;
    ``bw_link_Bpms``, ``bw_ssd_Bpms``, ``bw_host_Bpms`` (bytes per ms); ``alloc_cycles_per_page``
    (zero-fill of one page, cycles); ``unit_pages`` (pages per migration unit), ``batch_faults``
    (migration units per batch), ``block_pages`` (pages per VA block); ``batch_fixed_cycles``,
    ``batch_per_block_cycles``, ``batch_per_page_cycles``, ``batch_unmap_cycles`` (the driver's
    costs in whole cycles, ``fault.batch_*``).

    Every faulting page migrates into the GPU, an output's too.  For the kernel's faulting
    pages, inputs and outputs together (``fin``/``fout``: [total, never allocated, SSD, host,
    in transfer]):

    * transfer: the SSD pages stream at min(SSD, link) while the host pages share the link with
      them, then take the whole link (``shared_link_times``); the longer of the two;
    * zero-fill: never-allocated pages cost ``alloc_cycles_per_page`` each, alongside the
      transfers (the longer of the two);
    * plus the driver: the faulting pages grouped into migration units, ``ceil(units /
      batch_faults)`` batches, ``ceil(pages / block_pages)`` VA blocks and as many host VA
      blocks for the host pages; batches x fixed + blocks x per block + pages x per page +
      host blocks x unmap.  The slot model has no prefetcher and no addresses of faults: a
      kernel's faulting pages count as if contiguous (the fewest VA blocks they can span).

    Pages in transfer add nothing: they arrive by the slots.  The result is whole cycles
    (the transfer and zero-fill part truncated), with no conversion to whole seconds.
    """

    def __init__(self, dict params):
        self.freq_hz = params["freq_hz"]
        self.page_bytes = params["page_bytes"]
        self.bw_link = params["bw_link_Bpms"]
        self.bw_ssd = params["bw_ssd_Bpms"]
        self.bw_host = params["bw_host_Bpms"]
        self.alloc_cycles_per_page = params["alloc_cycles_per_page"]
        self.unit_pages = params["unit_pages"]
        self.block_pages = params["block_pages"]
        self.batch_faults = params["batch_faults"]
        self.batch_fixed = params["batch_fixed_cycles"]
        self.batch_per_block = params["batch_per_block_cycles"]
        self.batch_per_page = params["batch_per_page_cycles"]
        self.batch_unmap = params["batch_unmap_cycles"]
        if min(self.unit_pages, self.block_pages, self.batch_faults, self.page_bytes, self.freq_hz) < 1:
            raise ValueError(f"PhysicalFaultModel: unit_pages, block_pages, batch_faults, page_bytes and freq_hz "
                             f"must be >= 1 (got {params})")
        if not (self.bw_link > 0 and self.bw_ssd > 0 and self.bw_host > 0):
            raise ValueError(f"PhysicalFaultModel: bandwidths must be > 0 (got {params})")

    cdef int64_t driver_cycles(self, int64_t pages, int64_t host_pages) noexcept nogil:
        """The driver's time for ``pages`` faulting pages, ``host_pages`` of them from host memory."""
        cdef int64_t batches = ceil_div(ceil_div(pages, self.unit_pages), self.batch_faults)
        return (batches * self.batch_fixed + ceil_div(pages, self.block_pages) * self.batch_per_block
                + pages * self.batch_per_page + ceil_div(host_pages, self.block_pages) * self.batch_unmap)

    cdef int64_t fault_cycles(self, int64_t k, const int64_t* fin, const int64_t* fout) noexcept nogil:
        cdef int64_t zero = fin[1] + fout[1], ssd = fin[2] + fout[2], host = fin[3] + fout[3]
        cdef int64_t pages = zero + ssd + host
        cdef double t_ssd, t_host, cyc, alloc
        if pages == 0:
            return 0
        t_ssd, t_host = shared_link_times(<double>(ssd * self.page_bytes), <double>(host * self.page_bytes),
                                          self.bw_ssd, self.bw_host, self.bw_link)
        if t_host > t_ssd:
            t_ssd = t_host
        cyc = t_ssd / 1e3 * <double>self.freq_hz
        alloc = <double>zero * self.alloc_cycles_per_page
        if alloc > cyc:
            cyc = alloc
        return <int64_t>cyc + self.driver_cycles(pages, host)

    def py_fault_cycles(self, int64_t k, fin, fout):
        """fault_cycles for Python (tests): fin/fout are 5-sequences."""
        return _py_fault_cycles(self, k, fin, fout)

    def py_driver_cycles(self, int64_t pages, int64_t host_pages):
        """driver_cycles for Python (tests)."""
        return self.driver_cycles(pages, host_pages)
