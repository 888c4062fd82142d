"""PCIe link: bandwidth arithmetic, the idle-transfer closed form to the cycle, duplex, FCFS
queueing, stats and validation (detailed_model.md §3, §5).

Expected values are computed here from the PCIe specification's figures (transfer rate per
lane and line encoding per generation, TLP overheads), independently of pcie.py's tables.
"""
import math
import pickle
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from g10core.config import ConfigError
from g10core.link.pcie import FLOW_HOST, FLOW_PEER, FROM_DEVICE, TO_DEVICE, PcieLink, PcieSpec, pcie_preset

# PCIe base specification: GT/s per lane and line-code efficiency.
SPEC_RATE = {1: (Fraction(25, 10), Fraction(8, 10)), 2: (Fraction(5), Fraction(8, 10)),
             3: (Fraction(8), Fraction(128, 130)), 4: (Fraction(16), Fraction(128, 130)),
             5: (Fraction(32), Fraction(128, 130))}


def expected_effective_GBps(gen, lanes, payload, overhead, link_layer=Fraction(1, 10)):
    gts, enc = SPEC_RATE[gen]
    return gts * enc * lanes / 8 * Fraction(payload, payload + overhead) * (1 - link_layer)


def expected_idle_cycles(nbytes, eff_GBps, setup_us=Fraction(1), clock_GHz=Fraction(6, 5)):
    return math.ceil(setup_us * clock_GHz * 1000) + math.ceil(nbytes * clock_GHz / eff_GBps)


@pytest.mark.parametrize("gen,raw", [(3, 15.754), (4, 31.508), (5, 63.015)])
def test_raw_bandwidth_x16(gen, raw):
    # G10 uses Gen3 x16 = 15.754 GB/s raw (detailed_model.md §3)
    assert pcie_preset(f"gen{gen}x16").raw_GBps == pytest.approx(raw, abs=1e-3)


@pytest.mark.parametrize("gen,published", [(3, 13.0), (4, 26.0), (5, 52.0)])
def test_effective_bandwidth_matches_published_figures(gen, published):
    # "Gen3 ≈ 13.0, Gen4 ≈ 26.0, Gen5 ≈ 52.0 GB/s at 256 B max payload" (24 B writes, 20 B completions)
    spec = pcie_preset(f"gen{gen}x16")
    writes = spec.effective_GBps("from_device", "host")      # posted writes out of the device
    completions = spec.effective_GBps("to_device", "host")   # read completions into the device
    assert writes == pytest.approx(float(expected_effective_GBps(gen, 16, 256, 24)), rel=1e-12)
    assert completions == pytest.approx(float(expected_effective_GBps(gen, 16, 256, 20)), rel=1e-12)
    assert writes == pytest.approx(published, rel=0.01)
    assert completions == pytest.approx(published, rel=0.02)


def test_peer_flow_uses_the_opposite_tlps():
    # An SSD's DMA engine writes into GPU memory (posted writes) and reads out of it (completions).
    s = pcie_preset("gen3x16")
    assert s.effective_GBps("to_device", "peer") == s.effective_GBps("from_device", "host")
    assert s.effective_GBps("from_device", "peer") == s.effective_GBps("to_device", "host")


@settings(max_examples=200, deadline=None)
@given(nbytes=st.integers(0, 1 << 40), gen=st.sampled_from([1, 2, 3, 4, 5]),
       lanes=st.sampled_from([1, 2, 4, 8, 16]), payload=st.sampled_from([128, 256, 512, 4096]),
       direction=st.sampled_from([TO_DEVICE, FROM_DEVICE]), flow=st.sampled_from([FLOW_HOST, FLOW_PEER]))
def test_idle_transfer_takes_setup_plus_bytes_over_bandwidth_to_the_cycle(nbytes, gen, lanes, payload,
                                                                          direction, flow):
    link = PcieLink(PcieSpec(generation=gen, lanes=lanes, max_payload_bytes=payload))
    completions = (direction == TO_DEVICE) == (flow == FLOW_HOST)
    eff = expected_effective_GBps(gen, lanes, payload, 20 if completions else 24)
    start = 12345
    done = link.submit(direction, nbytes, start, flow=flow)
    assert done - start == expected_idle_cycles(nbytes, eff)


def test_both_directions_run_at_once():
    link = PcieLink("gen4x16")
    n = 64 << 20
    t_in = link.spec.idle_transfer_cycles(n, "to_device")
    t_out = link.spec.idle_transfer_cycles(n, "from_device")
    assert link.submit("to_device", n, 0) == t_in
    assert link.submit("from_device", n, 0) == t_out      # not delayed by the other direction
    s = link.stats()
    assert s["to_device"]["queue_delay_cycles"] == 0 and s["from_device"]["queue_delay_cycles"] == 0


def test_one_direction_is_fifo_and_setup_holds_the_queue():
    link = PcieLink("gen3x16")
    n = 1 << 20
    t = link.spec.idle_transfer_cycles(n)
    assert link.submit("to_device", n, 0) == t
    assert link.submit("to_device", n, 0, flow="peer") == t + link.spec.idle_transfer_cycles(n, "to_device", "peer")
    s = link.stats(elapsed_cycles=10 * t)["to_device"]
    assert s["transfers"] == 2 and s["bytes_host_flow"] == n and s["bytes_peer_flow"] == n
    assert s["queue_delay_cycles"] == t and s["max_queue_delay_cycles"] == t
    assert s["busy_cycles"] == link.core.py_free_at(TO_DEVICE)
    assert 0 < s["utilisation"] <= 1


def test_pipelined_setup_overlaps_the_previous_transfer():
    spec = PcieSpec(pipelined_setup=True)
    link = PcieLink(spec)
    n = 1 << 20
    wire = spec.idle_transfer_cycles(n) - spec.setup_cycles
    assert link.submit("to_device", n, 0) == spec.setup_cycles + wire
    assert link.submit("to_device", n, 0) == spec.setup_cycles + 2 * wire


def test_a_transfer_submitted_later_than_the_queue_frees_starts_at_submit():
    link = PcieLink("gen3x16")
    t = link.spec.idle_transfer_cycles(4096, "from_device")
    link.submit("from_device", 4096, 0)
    assert link.submit("from_device", 4096, 10 * t) == 11 * t


def test_busy_time_never_exceeds_elapsed_time():
    link = PcieLink("gen5x4")
    now = 0
    for i in range(200):
        now += (i * 7919) % 5000
        link.submit(i % 2, 1000 + (i * 104729) % 3_000_000, now, flow=i % 3 % 2)
    end = max(link.free_at(0), link.free_at(1))
    s = link.stats(end)
    for d in ("to_device", "from_device"):
        assert s[d]["busy_cycles"] <= end and s[d]["utilisation"] <= 1


def test_out_of_order_submits_are_counted_and_served_in_call_order():
    link = PcieLink("gen3x16")
    t = link.spec.idle_transfer_cycles(4096)
    a = link.submit("to_device", 4096, 1000)
    b = link.submit("to_device", 4096, 0)
    assert b == a + t
    assert link.stats()["to_device"]["out_of_order_submits"] == 1


def test_link_pickles_with_its_state():
    link = PcieLink("gen4x4")
    link.submit("to_device", 123456, 10)
    clone = pickle.loads(pickle.dumps(link.core))
    assert clone.stats() == link.core.stats()
    assert clone.py_submit(0, 0, 4096, 0) == link.core.py_submit(0, 0, 4096, 0)


@pytest.mark.parametrize("kw,field", [
    ({"lanes": 3}, "pcie.lanes"), ({"generation": 6}, "pcie.generation"),
    ({"max_payload_bytes": 100}, "pcie.max_payload_bytes"), ({"setup_latency_us": -1.0}, "pcie.setup_latency_us"),
    ({"link_layer_overhead": 1.0}, "pcie.link_layer_overhead"), ({"clock_GHz": 0.0}, "pcie.clock_GHz"),
    ({"write_tlp_overhead_bytes": -4}, "pcie.write_tlp_overhead_bytes"),
])
def test_bad_parameters_name_the_field(kw, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        PcieLink(PcieSpec(**kw))


def test_bad_submit_arguments_are_refused():
    link = PcieLink("gen3x16")
    with pytest.raises(ConfigError, match="direction"):
        link.submit("sideways", 10, 0)
    with pytest.raises(ConfigError, match="nbytes"):
        link.submit("to_device", -1, 0)
    with pytest.raises(ConfigError, match="now"):
        link.submit("to_device", 1, -5)
    with pytest.raises(ConfigError, match="flow"):
        link.submit("to_device", 1, 0, flow="gpu")
    with pytest.raises(ConfigError, match="unknown PCIe preset"):
        pcie_preset("gen9x32")
