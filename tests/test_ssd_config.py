"""The detailed preset's SSD and link fields of SimConfig, and the builders that turn a SimConfig
into the compiled SSD (ssd_from_config) and PCIe link (link_from_config).

Expected figures come from outside this code: Samsung Z-SSD SZ985 (12 us read, 16 us write for
an idle 4 KiB access), MQSim's MLC device (8 KiB pages), the G10 artifact's constants
(g10_artifact_model.md) and the PCIe figures of detailed_model.md §3.
"""
import math

import pytest

from g10core.config import ConfigError, preset, resolve
from g10core.link.pcie import PcieSpec, link_from_config, link_spec_from_config
from g10core.ssd import SSD, ssd_from_config, ssd_preset, ssd_spec_from_config

GiB = 1 << 30


def test_detailed_preset_resolves_with_the_ftl_device_and_gen3_x16():
    cfg = preset("detailed")
    assert cfg.ssd.model == "ftl" and cfg.ssd.device == "zssd"
    assert cfg.link.model == "pcie"
    assert (cfg.link.generation, cfg.link.lanes, cfg.link.max_payload_bytes) == (3, 16, 256)


def test_g10_artifact_numbers_are_untouched():
    # g10_artifact_model.md: 15.754 GB/s GPU link in 50-page slots, 3.2 GB/s SSD, l_ssd 20 us,
    # l_sys 45 us, 1.2 GHz
    cfg = preset("g10-artifact")
    assert cfg.link.model == "slots" and cfg.link.bandwidth_GBps == 15.754 and cfg.link.batch_pages == 50
    assert cfg.ssd.model == "bandwidth" and cfg.ssd.bandwidth_GBps == 3.2 and cfg.ssd.latency_us == 20.0
    assert cfg.fault.system_latency_us == 45.0 and cfg.gpu.frequency_GHz == 1.2


@pytest.mark.parametrize("item,key", [
    ("ssd.device=optane", "ssd.device"),
    ("ssd.device=", "ssd.device"),
    ("link.generation=6", "link.generation"),
    ("link.generation=0", "link.generation"),
    ("link.generation=3.5", "link.generation"),
    ("link.generation=true", "link.generation"),
    ("link.lanes=3", "link.lanes"),
    ("link.lanes=32", "link.lanes"),
    ("link.max_payload_bytes=100", "link.max_payload_bytes"),
    ("link.max_payload_bytes=8192", "link.max_payload_bytes"),
])
def test_bad_values_name_the_key(item, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        resolve("detailed", sets=[item])


def test_toml_overrides_of_the_new_keys(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[ssd]\ndevice = "mlc"\n[link]\ngeneration = 4\nlanes = 8\nmax_payload_bytes = 512\n')
    cfg = resolve("detailed", toml_path=path)
    assert cfg.ssd.device == "mlc"
    assert (cfg.link.generation, cfg.link.lanes, cfg.link.max_payload_bytes) == (4, 8, 512)
    path.write_text("[link]\nlanes = 12\n")
    with pytest.raises(ConfigError, match=r"run\.toml.*link\.lanes"):
        resolve("detailed", toml_path=path)


def test_ssd_from_config_builds_the_named_preset():
    ssd = ssd_from_config(preset("detailed"), user_capacity_bytes=GiB)
    assert isinstance(ssd, SSD)
    assert ssd.spec == ssd_preset("zssd").with_user_capacity(GiB)
    mlc = ssd_spec_from_config(resolve("detailed", sets=["ssd.device=mlc"]), user_capacity_bytes=GiB)
    assert mlc.page_size_bytes == 8192 and mlc.t_program_us == 750.0      # MQSim's MLC device
    assert mlc.user_capacity_bytes >= GiB


def test_ssd_from_config_without_capacity_is_the_full_device():
    # zssd: an 800 GB SZ985-like device; its tables are allocated lazily, so building it is cheap
    spec = ssd_spec_from_config(preset("detailed"))
    assert spec == ssd_preset("zssd")
    assert 790e9 < spec.user_capacity_bytes < 810e9


@pytest.mark.parametrize("clock_GHz", [1.2, 1.5])
def test_the_ssd_runs_on_the_gpu_clock_and_keeps_sz985_latencies(clock_GHz):
    cfg = resolve("detailed", sets=[f"gpu.frequency_GHz={clock_GHz}"])
    ssd = ssd_from_config(cfg, user_capacity_bytes=GiB)
    assert ssd.spec.clock_GHz == clock_GHz and ssd.spec.link.clock_GHz == clock_GHz
    per_us = clock_GHz * 1000
    assert ssd.write(0, 1, 0) / per_us == pytest.approx(16.0, abs=0.01)
    t = 10**8
    assert (ssd.read(0, 1, t) - t) / per_us == pytest.approx(12.0, abs=0.01)


def test_ssd_from_config_refuses_a_bad_capacity():
    with pytest.raises(ConfigError, match="user_capacity_bytes"):
        ssd_from_config(preset("detailed"), user_capacity_bytes=1.5e9)
    with pytest.raises(ConfigError, match="capacity"):
        ssd_from_config(preset("detailed"), user_capacity_bytes=0)


def test_link_from_config_is_gen3_x16_with_the_configured_setup():
    cfg = preset("detailed")
    spec = link_spec_from_config(cfg)
    assert spec == PcieSpec(generation=3, lanes=16, max_payload_bytes=256, setup_latency_us=cfg.link.latency_us)
    # "Gen3 ≈ 13.0 GB/s at 256 B max payload" (detailed_model.md §3)
    assert spec.effective_GBps("to_device", "host") == pytest.approx(13.0, rel=0.02)
    link = link_from_config(cfg)
    n = 1 << 20
    # idle link: setup + N / effective, to the cycle; computed here from the spec's figures:
    # 8 GT/s x 16 lanes x 128/130, 256 B payloads in 276 B posted writes, 10 % link-layer traffic
    eff_Bpus = 8e3 * 16 * 128 / 130 / 8 * 256 / (256 + 24) * 0.9
    setup = math.ceil(cfg.link.latency_us * 1200)
    assert link.submit("from_device", n, 0) == setup + math.ceil(n / eff_Bpus * 1200 - 1e-9)


@pytest.mark.parametrize("gen,published", [(4, 26.0), (5, 52.0)])
def test_link_generation_lanes_and_payload_reach_the_model(gen, published):
    cfg = resolve("detailed", sets=[f"link.generation={gen}", "gpu.frequency_GHz=1.5"])
    spec = link_spec_from_config(cfg)
    assert spec.clock_GHz == 1.5
    assert spec.effective_GBps("from_device", "host") == pytest.approx(published, rel=0.02)
    x4 = link_spec_from_config(resolve("detailed", sets=[f"link.generation={gen}", "link.lanes=4"]))
    assert x4.raw_GBps == pytest.approx(spec.raw_GBps / 4)
    big = link_spec_from_config(resolve("detailed", sets=["link.max_payload_bytes=512"]))
    assert big.effective_GBps() > link_spec_from_config(preset("detailed")).effective_GBps()
