"""The physical fault time (``fault.handler = physical``, the ``default`` preset; issue 42).

``_fault.PhysicalFaultModel`` against its specification (``reference.physical_fault_cycles``):
the closed forms of docs/physics.md ("Fault time: the physical rule") one term at a time, the
compiled model equal to the specification on any page counts, the handler chosen by the
configuration, and a run of sub-second kernels whose faulting kernels move with the link where
the profile rule's hard-coded fault bandwidth does not.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g10core.uvm._fault import PhysicalFaultModel
from g10core.uvm._replay import Replay
from g10core.config import preset, resolve
from g10core.uvm.fault_handler import spec_from_config
from g10core.simulator import replay_inputs
from g10core.uvm.slots import physical_fault_params
from g10core.testing.reference import physical_fault_cycles, shared_link_times
from g10core.workload.synth import synthesize

PAGE = 4096
# the driver's costs off: the fault time is the transfers' (or the zero-fill's) alone
NO_DRIVER = {"batch_fixed_us": 0.0, "batch_per_block_us": 0.0, "batch_per_page_us": 0.0, "batch_unmap_us": 0.0}


def config(link=15.754, host=15.754, ssd=3.2, malloc=8.14e-7, **fault):
    return preset("default").with_overrides({
        "link": {"bandwidth_GBps": link}, "host": {"bandwidth_GBps": host}, "ssd": {"bandwidth_GBps": ssd},
        "gpu": {"malloc_us_per_byte": malloc}, "fault": fault})


def model(cfg):
    return PhysicalFaultModel(physical_fault_params(cfg))


def seconds_to_cycles(cfg, s):
    return s * int(cfg.gpu.frequency_GHz * 1e9)


# ---- the closed forms ---------------------------------------------------------------------------

@pytest.mark.parametrize("link, host", [(15.754, 15.754), (8.0, 15.754), (63.0, 15.754), (4.0, 2.0)])
def test_host_pages_move_at_the_slower_of_host_memory_and_the_link(link, host):
    cfg = config(link, host, **NO_DRIVER)
    n = 123_457
    want = seconds_to_cycles(cfg, n * PAGE / (min(link, host) * 1e9))
    got = model(cfg).py_fault_cycles(0, [n, 0, 0, n, 0], [0] * 5)
    assert abs(got - want) <= 1


@pytest.mark.parametrize("link, ssd", [(15.754, 3.2), (2.0, 3.2), (15.754, 15.754), (8.0, 40.0)])
def test_ssd_pages_move_at_the_slower_of_the_ssd_and_the_link(link, ssd):
    cfg = config(link, ssd=ssd, **NO_DRIVER)
    n = 98_765
    want = seconds_to_cycles(cfg, n * PAGE / (min(link, ssd) * 1e9))
    # an output on the SSD faults and migrates in too: inputs and outputs add up
    got = model(cfg).py_fault_cycles(0, [n, 0, n - 1000, 0, 0], [1000, 0, 1000, 0, 0])
    assert abs(got - want) <= 1


@pytest.mark.parametrize("host_pages", [10_000, 200_000])
def test_host_and_ssd_pages_share_the_link_while_the_ssd_streams(host_pages):
    """link L, SSD stream r = min(SSD, L) for S bytes (S / r s); the host pages H get min(host, L - r)
    during it and min(host, L) after: H / (L - r) if they fit in the SSD's time, else
    S / r + (H - (L - r) S / r) / min(host, L).  The fault time is the longer of the two."""
    link, host, ssd = 15.754e9, 12.0e9, 3.2e9          # bytes per second
    cfg = config(link / 1e9, host / 1e9, ssd / 1e9, **NO_DRIVER)
    s_pages = 50_000
    S, H = s_pages * PAGE, host_pages * PAGE
    t_s = S / ssd
    c = min(link - ssd, host)
    t_h = H / c if H <= c * t_s else t_s + (H - c * t_s) / min(host, link)
    got = model(cfg).py_fault_cycles(0, [s_pages, 0, s_pages, host_pages // 2, 0],
                                     [host_pages - host_pages // 2, 0, 0, host_pages - host_pages // 2, 0])
    assert abs(got - seconds_to_cycles(cfg, max(t_s, t_h))) <= 1
    assert (t_h > t_s) == (host_pages == 200_000)      # both orders are covered


@pytest.mark.parametrize("malloc, ssd_pages", [(8.14e-7, 0), (8.14e-7, 5_000), (2e-5, 5_000), (0.0, 0)])
def test_never_allocated_pages_cost_their_zero_fill_alongside_the_transfers(malloc, ssd_pages):
    cfg = config(malloc=malloc, **NO_DRIVER)
    zero = 400_000
    fill = zero * PAGE * malloc / 1e6                 # seconds: no byte crosses the link
    transfer = ssd_pages * PAGE / (cfg.ssd.bandwidth_GBps * 1e9)
    got = model(cfg).py_fault_cycles(0, [zero + ssd_pages, zero, ssd_pages, 0, 0], [0] * 5)
    assert abs(got - seconds_to_cycles(cfg, max(fill, transfer))) <= 1


def test_the_driver_time_by_hand():
    """120 faulting pages (50 never allocated, 30 on the SSD, 40 in host memory) with 16-page
    migration units, 3 units a batch and 16-page VA blocks: 8 units in 3 batches, 8 VA blocks,
    3 of them holding host pages."""
    cfg = config(batch_faults=3, va_block_bytes=65536, migration_unit_bytes=65536,
                 batch_fixed_us=16.0, batch_per_block_us=13.0, batch_per_page_us=0.2, batch_unmap_us=12.8)
    cyc = spec_from_config(cfg).cycles               # whole cycles, rounded up as the handler does
    f = cfg.gpu.frequency_GHz * 1e3                    # cycles per us
    assert cyc(16.0) == math.ceil(16.0 * f) and cyc(0.2) == math.ceil(0.2 * f)
    m = model(cfg)
    by_hand = 3 * cyc(16.0) + 8 * cyc(13.0) + 120 * cyc(0.2) + 3 * cyc(12.8)
    assert m.py_driver_cycles(120, 40) == by_hand
    fin, fout = [100, 30, 30, 20, 0], [40, 20, 0, 20, 0]
    transfer = physical_fault_cycles(physical_fault_params(config(batch_faults=3, va_block_bytes=65536,
                                                                 **NO_DRIVER)), fin, fout)
    assert m.py_fault_cycles(0, fin, fout) == transfer + by_hand
    # one page past nine full units (three full batches, nine full VA blocks): a fourth batch, a tenth block
    assert m.py_driver_cycles(16 * 9 + 1, 0) - m.py_driver_cycles(16 * 9, 0) == cyc(16.0) + cyc(13.0) + cyc(0.2)


def test_pages_in_transfer_and_resident_pages_add_nothing():
    m = model(config())
    assert m.py_fault_cycles(0, [500, 0, 0, 0, 300], [200, 0, 0, 0, 200]) == 0
    assert m.py_fault_cycles(0, [500, 0, 0, 10, 300], [0] * 5) == m.py_fault_cycles(0, [10, 0, 0, 10, 0], [0] * 5)


def test_the_fault_time_is_not_truncated_to_whole_seconds():
    """One host page: a fraction of a microsecond of transfer, never 0 (the profile rule's whole
    seconds made every sub-second time 0 ms)."""
    cfg = config(**NO_DRIVER)
    assert model(cfg).py_fault_cycles(0, [1, 0, 0, 1, 0], [0] * 5) == int(
        PAGE / (cfg.link.bandwidth_GBps * 1e6) / 1e3 * int(cfg.gpu.frequency_GHz * 1e9)) > 0


# ---- compiled against the specification ---------------------------------------------------------

# up to 10^8 pages of each kind (400 GB; SENet154-b1024's whole footprint is 4.6e8 pages)
counts = st.tuples(st.integers(0, 10**8), st.integers(0, 10**8), st.integers(0, 10**8), st.integers(0, 10**6))


def as_row(parts):
    zero, ssd, host, intr = parts
    return [zero + ssd + host + intr + 3, zero, ssd, host, intr]


@settings(max_examples=400, deadline=None)
@given(counts, counts, st.sampled_from([0.1, 3.2, 15.754, 63.0, 10000.0]),
       st.sampled_from([0.1, 3.2, 15.754, 128.0]), st.sampled_from([0.1, 3.2, 12.8, 15.754, 10000.0]),
       st.sampled_from([0.0, 8.14e-7, 1e-3]), st.sampled_from([0.5, 1.2, 1.41, 2.0]),
       st.integers(1, 65536), st.sampled_from([4096, 16384, 65536]), st.sampled_from([65536, 524288, 2097152]),
       st.sampled_from([(16.0, 13.0, 0.2, 12.8), (0.0, 0.0, 0.0, 0.0), (45.0, 0.0, 0.0, 0.0), (1e6, 1e6, 1e3, 1e6)]))
def test_compiled_equals_the_specification(fin, fout, link, host, ssd, malloc, ghz, batch, unit, block, costs):
    cfg = config(link, host, ssd, malloc, batch_faults=batch, migration_unit_bytes=unit, va_block_bytes=block,
                 batch_fixed_us=costs[0], batch_per_block_us=costs[1], batch_per_page_us=costs[2],
                 batch_unmap_us=costs[3]).with_overrides({"gpu": {"frequency_GHz": ghz}})
    p = physical_fault_params(cfg)
    fin, fout = as_row(fin), as_row(fout)
    assert PhysicalFaultModel(p).py_fault_cycles(0, fin, fout) == physical_fault_cycles(p, fin, fout)


@settings(max_examples=200, deadline=None)
@given(counts, counts)
def test_inputs_and_outputs_fault_alike(fin, fout):
    """Every faulting page migrates in: only the sums over inputs and outputs count."""
    m = model(config())
    fin, fout = as_row(fin), as_row(fout)
    both = [a + b for a, b in zip(fin, fout)]
    assert m.py_fault_cycles(0, fin, fout) == m.py_fault_cycles(0, both, [0] * 5) == \
        m.py_fault_cycles(0, [0] * 5, both)


def test_the_specification_uses_the_shared_link_helper():
    """The transfer term is ``shared_link_times``' longer time, in cycles (no driver, no zero-fill)."""
    cfg = config(**NO_DRIVER)
    p = physical_fault_params(cfg)
    t = shared_link_times(7000.0 * PAGE, 9000.0 * PAGE, p["bw_ssd_Bpms"], p["bw_host_Bpms"], p["bw_link_Bpms"])
    assert physical_fault_cycles(p, [16000, 0, 7000, 9000, 0], [0] * 5) == int(max(t) / 1e3 * p["freq_hz"])


# ---- the configuration chooses it -----------------------------------------------------------------

def test_each_preset_has_its_fault_handler():
    assert preset("default").fault.handler == "physical"
    assert preset("g10-artifact").fault.handler == "profile"
    assert preset("detailed").fault.handler == "batched"
    assert resolve("default", None, ["fault.handler=profile"]).fault.handler == "profile"


def test_the_replay_builds_the_configured_model():
    trace = synthesize(12, 8 << 20, pattern="training", seed=3)
    for handler in ("physical", "profile"):
        cfg = resolve("default", None, ["gpu.memory_GiB=0.004", f"fault.handler={handler}"])
        c, a, _ = replay_inputs(trace, cfg)
        assert ("physical_fault" in c) == (handler == "physical")
        assert type(Replay(c, a).fault_model).__name__ == {"physical": "PhysicalFaultModel",
                                                             "profile": "ProfileFaultModel"}[handler]


# ---- a run of sub-second kernels moves with the link --------------------------------------------

def _faulting_kernels(trace, handler, link):
    """Iteration 1's faulting kernels of Base UVM under ``default``: (kernel rows, t11, params)."""
    cfg = resolve("default", None, ["gpu.memory_GiB=0.03", "host.memory_GiB=1", f"fault.handler={handler}",
                                    f"link.bandwidth_GBps={link}", f"host.bandwidth_GBps={link}"])
    c, a, (t11, _t00) = replay_inputs(trace, cfg)
    k = Replay(c, a).run()["kernels"]     # iteration, kernel, start, end, in transfer, host, SSD, unallocated, ...
    rows = k[(k[:, 0] == 1) & (k[:, 5] + k[:, 6] + k[:, 7] > 0)]
    return rows, t11, physical_fault_params(cfg)


def _rule(p, row):
    return physical_fault_cycles(p, [0, int(row[7]), int(row[6]), int(row[5]), 0], [0] * 5)


@pytest.mark.parametrize("links", [(4.0, 8.0), (2000.0, 4000.0)])
def test_a_run_whose_fault_times_are_under_1s_moves_with_the_link(links):
    """Kernels of about 100 us (every profiled time under 1 s, which the profile rule's whole
    seconds make 0 ms), 64 MiB through a 30 MiB GPU, host memory as fast as the link.

    Under ``physical`` each faulting kernel waits at least its ideal time plus its fault time, and
    the faulting kernels take longer on the slower link.  Above the profile rule's hard-coded
    1,063,004,400 B/ms (the 2000 and 4000 GB/s links) its faulting kernels take the same time on
    both links, while those of ``physical`` move by exactly the rule's transfer term."""
    trace = synthesize(40, 64 << 20, pattern="training", seed=1)
    assert trace.kernel_time_fault_all_ns.max() < 1e9
    slow, fast = (_faulting_kernels(trace, "physical", link) for link in links)
    for rows, t11, p in (slow, fast):
        assert len(rows) > 10
        for row in rows:
            assert row[3] - row[2] >= t11[row[1]] + _rule(p, row)
    took = [int((rows[:, 3] - rows[:, 2]).sum()) for rows, _, _ in (slow, fast)]
    assert took[0] > took[1]
    if links[0] > 1063.0044:
        # the same faults at both links; every faulting kernel ends at its ideal + fault time
        assert np.array_equal(slow[0][:, [1, 5, 6, 7]], fast[0][:, [1, 5, 6, 7]])
        moved = sum(_rule(slow[2], r) - _rule(fast[2], r) for r in slow[0])
        assert took[0] - took[1] == moved > 0
        profile = [_faulting_kernels(trace, "profile", link)[0] for link in links]
        assert np.array_equal(profile[0][:, [1, 5, 6, 7]], profile[1][:, [1, 5, 6, 7]])
        assert np.array_equal(profile[0][:, 3] - profile[0][:, 2], profile[1][:, 3] - profile[1][:, 2])
