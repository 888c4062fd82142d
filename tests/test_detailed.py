"""The ``detailed`` preset: the FTL SSD and the PCIe link as the replay's devices.

Checks that every page the replay moves to or from the SSD reaches the FTL as a
command and every transfer crosses the link (conservation against the replay's own
counters), that a nearly full SSD garbage-collects and throttles the transfers, and
that the configuration refuses combinations it cannot run.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from g10core.cli import main
from g10core.config import ConfigError, resolve
from g10core.simulator import simulate

PAGE = 4096


def detailed(*sets):
    # no host memory: every eviction goes to the SSD, which is rewritten every iteration
    return resolve("detailed", None, ["host.memory_GiB=0", "gpu.memory_GiB=16", "run.iterations=3", *sets])


@pytest.fixture(scope="module")
def vit_small(load_shipped):
    return load_shipped("vit-b256")       # 37.1 GiB footprint


@pytest.fixture(scope="module")
def full_ssd_run(vit_small):
    return simulate(vit_small, "base-uvm", config=detailed("ssd.capacity_GiB=38"))


def test_every_page_moved_reaches_the_devices(full_ssd_run):
    r = full_ssd_run
    assert not r.failed
    ssd, link = r.counters["ssd"], r.counters["link"]
    t = {k: sum(it.traffic_pages[k] for it in r.iterations) for k in r.iterations[0].traffic_pages}
    assert ssd["host_write_pages"] == t["gpu_to_ssd"] > 0
    assert ssd["host_read_pages"] == t["ssd_to_gpu"] > 0
    assert link["to_device"]["bytes"] == (t["ssd_to_gpu"] + t["host_to_gpu"]) * PAGE
    assert link["from_device"]["bytes"] == (t["gpu_to_ssd"] + t["gpu_to_host"]) * PAGE
    assert link["to_device"]["bytes_peer_flow"] == t["ssd_to_gpu"] * PAGE
    # the FTL's own conservation: flash programs = host writes + GC copies
    assert ssd["flash_program_pages"] == ssd["host_write_pages"] + ssd["gc_copies"]
    for d in ("to_device", "from_device"):
        assert 0 < link[d]["utilisation"] <= 1


def test_a_nearly_full_ssd_collects_garbage_and_throttles(full_ssd_run, vit_small):
    s = full_ssd_run.counters["ssd_summary"]
    assert s["gc_count"] > 0 and s["gc_time_s"] > 0
    assert s["waf"] >= 1.0
    assert s["throttled_ticks"] > 0
    roomy = simulate(vit_small, "base-uvm", config=detailed("ssd.capacity_GiB=200"))
    # most waits on the SSD are its write path's, GC or not (a roomy SSD has them too): GC adds none
    # or some (1 tick in 1.56 M with the uvmsmart-gtx1080ti batch costs, none with uvm-eval-titanv's)
    assert roomy.counters["ssd_summary"]["throttled_ticks"] <= s["throttled_ticks"]
    # the same traffic decisions need at least as long when the SSD throttles them
    assert full_ssd_run.iterations[1].time_s >= roomy.iterations[1].time_s


def test_detailed_is_slower_than_the_artifact_link(vit_small):
    # effective PCIe bandwidth (TLP and link-layer overhead) and a per-transfer setup
    art = simulate(vit_small, "base-uvm", config=resolve("g10-artifact", None, ["gpu.memory_GiB=16"]))
    det = simulate(vit_small, "base-uvm", config=resolve("detailed", None, ["gpu.memory_GiB=16"]))
    assert det.iteration_time_s > art.iteration_time_s
    assert det.counters["tick_cycles"] > art.counters["tick_cycles"]


def test_configuration_errors(vit_small):
    with pytest.raises(ConfigError, match="ssd.capacity_GiB = 10 is smaller than the trace's footprint"):
        simulate(vit_small, "base-uvm", config=detailed("ssd.capacity_GiB=10"))
    with pytest.raises(ConfigError, match="modelled together"):
        simulate(vit_small, "base-uvm", config=resolve("g10-artifact", None, ["link.model=pcie"]))
    with pytest.raises(ConfigError, match="ssd.device"):
        resolve("detailed", None, ["ssd.device=optane"])


def test_cli_reports_ssd_and_link(traces_dir, capsys):
    path = traces_dir / "vit-b256.h5"
    rc = main(["run", str(path), "--policy", "g10", "--preset", "detailed", "--set", "gpu.memory_GiB=16"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "SSD (whole run)  WAF" in out and "PCIe link        utilisation" in out
    rc = main(["run", str(path), "--policy", "g10", "--preset", "detailed", "--set", "gpu.memory_GiB=16",
               "--json", "-"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert data["preset"] == "detailed" and data["config"]["ssd"]["model"] == "ftl"
    assert set(data["counters"]["ssd_summary"]) >= {"waf", "gc_count", "gc_time_s"}
    assert np.isfinite(data["iteration_time_s"])


@pytest.mark.parametrize("sets, flash_page", [(("ssd.device=mlc",), 8192), (("ssd.page_size_bytes=16384",), 16384)])
def test_flash_pages_larger_than_a_virtual_page(vit_small, sets, flash_page):
    # the far-fault handler numbers 4 KiB virtual pages; the FTL maps flash pages.  A device
    # just big enough for the footprint has 4x (2x) fewer logical pages than the footprint has
    # virtual pages: taken as flash page numbers they ran past the FTL's tables (a segfault)
    r = simulate(vit_small, "base-uvm", config=detailed("ssd.capacity_GiB=38", *sets))
    assert not r.failed
    ssd, link = r.counters["ssd"], r.counters["link"]
    t = {k: sum(it.traffic_pages[k] for it in r.iterations) for k in r.iterations[0].traffic_pages}
    assert ssd["write_bytes"] == ssd["host_write_pages"] * flash_page
    assert ssd["read_bytes"] == ssd["host_read_pages"] * flash_page
    # tensors start on a flash page, so migration units are whole flash pages: the flash
    # bytes are the virtual pages' bytes, but for the few ranges that end inside a flash page
    for flash, moved in ((ssd["write_bytes"], t["gpu_to_ssd"]), (ssd["read_bytes"], t["ssd_to_gpu"])):
        assert moved > 0
        assert moved * PAGE <= flash <= moved * PAGE * 1.001
    assert ssd["flash_program_pages"] == ssd["host_write_pages"] + ssd["gc_copies"]
    assert link["from_device"]["bytes"] == (t["gpu_to_ssd"] + t["gpu_to_host"]) * PAGE
    assert r.counters["ssd"]["link"]["to_device"]["bytes"] == ssd["write_bytes"]


def test_cli_runs_the_mlc_device(traces_dir, capsys):
    path = traces_dir / "vit-b256.h5"
    rc = main(["run", str(path), "--policy", "deepum", "--preset", "detailed", "--set", "gpu.memory_GiB=16",
               "--set", "host.memory_GiB=0", "--set", "ssd.device=mlc", "--set", "ssd.capacity_GiB=38",
               "--json", "-", "--no-progress"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert data["counters"]["ssd"]["host_write_pages"] > 0
    assert data["config"]["ssd"]["device"] == "mlc"
