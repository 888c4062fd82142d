"""The replay's smaller components alone: the profile fault model against its Python
specification, the no-op device and translator, the evictor registry."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from g10core.uvm import evictors
from g10core.uvm._fault import ProfileFaultModel
from g10core.config import preset
from g10core.testing.reference import ArtifactConstants, fault_model_cycles


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 10**13), min_size=3, max_size=3),
       st.lists(st.integers(0, 5000), min_size=4, max_size=4),
       st.lists(st.integers(0, 5000), min_size=4, max_size=4),
       st.sampled_from([0.8, 3.2, 6.4, 15.0]))
def test_profile_fault_model_equals_the_specification(times, fin_parts, fout_parts, ssd_GBps):
    cfg = preset("g10-artifact").with_overrides({"ssd": {"bandwidth_GBps": ssd_GBps}})
    c = ArtifactConstants.from_config(cfg)
    t11, t10, t00 = sorted(times)
    model = ProfileFaultModel({"t11": np.array([t11]), "t10": np.array([t10]), "t00": np.array([t00])},
                              {"freq_hz": c.freq_hz, "page_bytes": 4096, "bw_pcie_Bpms": c.bw_pcie_Bpms,
                               "bw_ssd_Bpms": c.bw_ssd_Bpms, "l_sys_us": c.l_sys_us, "l_ssd_us": c.l_ssd_us})

    def counts(parts):
        un, ssd, host, intr = parts
        return [un + ssd + host + intr + 7, un, ssd, host, intr]   # total >= faulted pages
    fin, fout = counts(fin_parts), counts(fout_parts)
    expected = fault_model_cycles(c, t00, t10, t11, fin[1] + fin[2] + fin[3], fin[2], fin[0],
                                  fout[1] + fout[2] + fout[3], fout[2], fout[0])
    assert model.py_fault_cycles(0, fin, fout) == expected


def test_evictor_registry_lists_each_rule_once():
    assert evictors.names() == ["arrival", "belady", "deepum"]
    assert evictors.resolve("lru") == "arrival"          # the artifact's name for it
    assert evictors.label("lru") == "arrival"
    for name in evictors.names():
        assert evictors.EVICTORS[name].description


def test_every_page_policy_names_a_registered_rule():
    from g10core import policies

    for name in policies.names():
        cls = policies.get(name)
        if cls.level == "page":
            assert evictors.resolve(cls.eviction) in evictors.names(), name


def test_a_device_schedules_its_own_events_on_the_engine_queue():
    """A device's events fire in time order with the kernel and slot events and come back to it."""
    from g10core.uvm._device import EventProbe
    from g10core.uvm._replay import Replay
    from g10core.simulator import replay_inputs
    from g10core.workload.synth import synthesize

    trace = synthesize(12, 8 << 20, pattern="training", seed=3)
    cfg = preset("g10-artifact").with_overrides({"gpu": {"memory_GiB": 4 / 1024}})
    c, a, _ = replay_inputs(trace, cfg)
    plain = Replay(c, a).run()
    probe = EventProbe(1000)
    c, a, _ = replay_inputs(trace, cfg)
    with_probe = Replay(c, a, link=probe).run()
    # the probe only listens: the timeline is the same, and every event it scheduled before
    # the run's end came back at its cycle, in time order
    assert np.array_equal(plain["kernels"], with_probe["kernels"])
    scheduled, fired = probe.events()
    end = int(with_probe["end_cycle"])
    assert len(scheduled) >= 2 * trace.n_kernels and end not in scheduled
    assert fired == sorted(t for t in scheduled if t < end)


def _exact_model(cfg, t11, t10, t00):
    c = ArtifactConstants.from_config(cfg)
    model = ProfileFaultModel({"t11": np.array([t11]), "t10": np.array([t10]), "t00": np.array([t00])},
                              {"freq_hz": c.freq_hz, "page_bytes": 4096, "bw_pcie_Bpms": c.bw_pcie_Bpms,
                               "bw_ssd_Bpms": c.bw_ssd_Bpms, "l_sys_us": c.l_sys_us, "l_ssd_us": c.l_ssd_us,
                               "zero_fill_alloc": True, "link_shared_while_ssd": True,
                               "alloc_cycles_per_page": c.alloc_cycles_per_page})
    return c, model


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 10**13), min_size=3, max_size=3),
       st.lists(st.integers(0, 5000), min_size=4, max_size=4),
       st.lists(st.integers(0, 5000), min_size=4, max_size=4),
       st.sampled_from([0.8, 3.2, 12.8, 15.754, 40.0]))
def test_profile_fault_model_equals_the_specification_under_exact_rules(times, fin_parts, fout_parts, ssd_GBps):
    cfg = preset("default").with_overrides({"ssd": {"bandwidth_GBps": ssd_GBps}})
    t11, t10, t00 = sorted(times)
    c, model = _exact_model(cfg, t11, t10, t00)

    def counts(parts):
        un, ssd, host, intr = parts
        return [un + ssd + host + intr + 7, un, ssd, host, intr]
    fin, fout = counts(fin_parts), counts(fout_parts)
    expected = fault_model_cycles(c, t00, t10, t11, fin[1] + fin[2] + fin[3], fin[2], fin[0],
                                  fout[1] + fout[2] + fout[3], fout[2], fout[0], fin[1], fout[1])
    assert model.py_fault_cycles(0, fin, fout) == expected


def test_host_faults_get_the_whole_link_once_the_ssd_stream_ends():
    """One direction, closed form: SSD bytes S at rate r, host bytes H; the host gets link - r
    while the SSD streams (S / r ms) and the whole link after."""
    from g10core.testing.reference import shared_link_times
    link, r = 10.0, 4.0                       # bytes per ms
    # the host pages finish inside the SSD's window: at link - r
    assert shared_link_times(40.0, 30.0, r, 100.0, link) == (10.0, 5.0)
    # they outlast it: 60 bytes in its 10 ms, the other 40 at the whole link
    assert shared_link_times(40.0, 100.0, r, 100.0, link) == (10.0, 14.0)
    # no SSD stream: the whole link, or the host's own bandwidth if lower
    assert shared_link_times(0.0, 50.0, r, 100.0, link) == (0.0, 5.0)
    assert shared_link_times(0.0, 50.0, r, 5.0, link) == (0.0, 10.0)
    # an SSD as fast as the link: the host waits for it, then moves (never 0 or infinite)
    assert shared_link_times(40.0, 20.0, link, 100.0, link) == (4.0, 6.0)


def test_an_ssd_as_fast_as_the_link_gives_a_finite_fault_time_under_exact_rules():
    """The published rule's host share is link - SSD = 0 there: an infinite time that the
    conversion to cycles turns into 0.  Outside g10-artifact the kernel pays its transfers."""
    f = int(1.2e9)
    cfg = preset("default").with_overrides({"ssd": {"bandwidth_GBps": 15.754}})
    c, model = _exact_model(cfg, 2 * f, 3 * f, 4 * f)   # 1 s of faults in, 1 s out (profiled)
    n = 10**8                                  # 410 GB a second: the link and the SSD limit it
    fin = [n, 0, n // 2, n // 2, 0]
    fout = [n, 0, 0, n // 2, 0]
    cyc = model.py_fault_cycles(0, fin, fout)
    # in: the SSD half streams at the whole link (P ms), the host half follows it (P ms);
    # out: the host half at the whole link (P ms)
    P = (n // 2) * 4096 / c.bw_pcie_Bpms
    assert abs(cyc - 3 * P / 1e3 * f) <= 1
    art = preset("g10-artifact").with_overrides({"ssd": {"bandwidth_GBps": 15.754}})
    ca = ArtifactConstants.from_config(art)
    assert fault_model_cycles(ca, 4 * f, 3 * f, 2 * f, n, n // 2, n, n // 2, 0, n) == 0
