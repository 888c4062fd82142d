"""`g10sim uvm-micro` microbenchmarks (g10core.experiments.uvmmicro): the closed forms of detailed_model.md §5."""
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from g10core.experiments import uvmmicro
from g10core.config import ConfigError
from g10core.params import BATCH_PROFILES
from g10core.uvm.fault_handler import FaultHandlerSpec

# the earlier split's costs are whole cycles at 1.2 GHz: the closed forms below are exact with them
EARLIER_SPLIT = BATCH_PROFILES["uvmsmart-gtx1080ti"]

K = 1024


def test_prefetch_copies_the_published_amounts():
    r = uvmmicro.prefetch([0, 1, 2, 4, 8, 16])
    # GTX 1080 Ti traces: 4K+60K, 4K+60K, 4K+124K, 4K+252K, 4K+508K, 4K+1020K bytes host->GPU
    assert r["copies_bytes"] == [64 * K, 64 * K, 128 * K, 256 * K, 512 * K, 1024 * K]
    assert r["copies_bytes"] == [4 * K + x * K for x in (60, 60, 124, 252, 508, 1020)]
    assert r["unit_bytes"] == [64 * K] * 6                 # the faulted unit moves whole
    assert r["prefetched_bytes"] == [0, 0, 64 * K, 192 * K, 448 * K, 960 * K]


def test_prefetch_pattern_in_three_regions_never_crosses_a_boundary():
    r = uvmmicro.prefetch([0, 1, 2, 4, 8, 16], regions=3)
    assert r["copies_bytes_per_region"] == [[64 * K, 64 * K, 128 * K, 256 * K, 512 * K, 1024 * K]] * 3
    assert r["same_in_every_region"] is True
    assert r["crossed_va_block"] is False


def test_prefetch_filling_a_whole_block_never_copies_more_than_the_block():
    r = uvmmicro.prefetch(list(range(32)), regions=2)
    assert sum(r["copies_bytes"]) == 2 * 1024 * K
    assert r["crossed_va_block"] is False


def effective_gen3x16_GBps():
    # PCIe 3.0: 8 GT/s, 128b/130b, 16 lanes; 256 B payload + 20 B completion overhead; 10 % DLLP
    return Fraction(8) * Fraction(128, 130) * 16 / 8 * Fraction(256, 276) * Fraction(9, 10)


@settings(max_examples=25, deadline=None)
@given(W=st.integers(1, 1500))
def test_batching_closed_form(W):
    r = uvmmicro.batching(W, spec=FaultHandlerSpec(**EARLIER_SPLIT))
    assert r["batches"] == math.ceil(W / 256)
    gbps = effective_gen3x16_GBps()
    # per batch 16 us + the link's 1 us setup; per fault (a VA block from host): 13 + 12.8 + 16 x 0.2 us
    closed_us = r["batches"] * (16 + 1) + W * Fraction(290, 10) + Fraction(W * 64 * K) / (gbps * 1000)
    assert r["link_GBps"] == pytest.approx(float(gbps), rel=1e-12)
    assert r["batch_cost_us"] == 17.0
    # exact but for rounding each batch's wire time up to a whole cycle (1/1.2 ns)
    assert 0 <= r["time_us"] - float(closed_us) <= r["batches"] / 1200 + 1e-9
    assert r["closed_form_us"] == pytest.approx(float(closed_us), rel=1e-12)


def test_batching_with_other_batch_sizes_and_costs():
    spec = FaultHandlerSpec(batch_faults=64, batch_fixed_us=16.0)
    r = uvmmicro.batching(200, spec=spec)
    assert r["batches"] == 4
    # each batch's wire time, and each fault's block and unmap parts (not whole cycles in the default
    # profile), are rounded up to a whole cycle
    assert r["time_us"] == pytest.approx(r["closed_form_us"], abs=(4 + 2 * 200) / 1200)


@settings(max_examples=60, deadline=None)
@given(E=st.integers(1, 512), N=st.integers(1, 700), R=st.integers(2, 5))
def test_tlb_fully_associative_lru_is_one_or_exactly_zero(E, N, R):
    r = uvmmicro.tlb(E, E, "cyclic", N, R)
    assert r["steady_hit_rate"] == (1.0 if N <= E else 0.0)


@pytest.mark.parametrize("ways,N,rate", [(8, 8, 1.0), (8, 9, 0.0), (4, 4, 1.0), (4, 5, 0.0), (1, 2, 0.0)])
def test_tlb_stride_into_one_set_misses_once_past_the_ways(ways, N, rate):
    r = uvmmicro.tlb(64, ways, "stride", N, 4)
    assert r["stride"] == 64 // ways
    assert r["steady_hit_rate"] == rate


def test_tlb_cyclic_on_a_set_associative_tlb_fits_when_every_set_fits():
    assert uvmmicro.tlb(64, 8, "cyclic", 64, 3)["steady_hit_rate"] == 1.0
    assert uvmmicro.tlb(64, 8, "cyclic", 72, 3)["steady_hit_rate"] == 0.0   # every set sees 9 pages


@pytest.mark.parametrize("call", [
    lambda: uvmmicro.prefetch([]),
    lambda: uvmmicro.prefetch([32]),
    lambda: uvmmicro.prefetch([0], regions=0),
    lambda: uvmmicro.batching(0),
    lambda: uvmmicro.tlb(64, 7, "cyclic", 10, 3),
    lambda: uvmmicro.tlb(64, 8, "random", 10, 3),
    lambda: uvmmicro.tlb(64, 8, "cyclic", 10, 1),
    lambda: uvmmicro.tlb(0, 1, "cyclic", 10, 3),
])
def test_bad_arguments_are_refused(call):
    with pytest.raises(ConfigError):
        call()


# ---- command line ------------------------------------------------------------------------

import json  # noqa: E402

from g10core.cli import main as g10sim  # noqa: E402


def main(argv):
    return g10sim(["uvm-micro", *argv])


def test_cli_prefetch_json(capsys):
    assert main(["prefetch", "--blocks", "0,1,2,4,8,16", "--json", "-"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["copies_bytes"] == [64 * K, 64 * K, 128 * K, 256 * K, 512 * K, 1024 * K]
    assert r["crossed_va_block"] is False


def test_cli_batching_json(capsys):
    assert main(["batching", "--faults", "600", "--json", "-"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["batches"] == 3


def test_cli_tlb_text_and_json_file(capsys, tmp_path):
    out = tmp_path / "tlb.json"
    assert main(["tlb", "--entries", "64", "--ways", "64", "--pattern", "cyclic", "--pages", "65",
                 "--rounds", "3", "--json", str(out)]) == 0
    assert "steady hit rate 0" in capsys.readouterr().out
    assert json.loads(out.read_text())["steady_hit_rate"] == 0.0


@pytest.mark.parametrize("argv", [
    ["tlb", "--entries", "64", "--ways", "7", "--pages", "10"],
    ["batching", "--faults", "0"],
    ["prefetch", "--blocks", "0,99"],
    ["prefetch", "--blocks", "zero"],
    ["batching", "--faults", "10", "--batch-faults", "0"],
])
def test_cli_bad_input_exits_2_with_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 1 and "Traceback" not in "".join(err)
