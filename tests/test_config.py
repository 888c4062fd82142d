"""Parameters as data (issue 11 item 3, issue 12 item 5, issue 13's strict TOML types).

Every configuration field carries its unit, range and description; validation
comes from that declaration and names ``section.key``, the value and the range;
the published fuzz findings are refused as bad input (exit 2 naming the key);
TOML values must have the key's type; no key is dead (each is read by some run);
the FTL device's geometry and rules are ``[ssd]`` keys that default to the
``ssd.device`` preset; ``g10sim config show`` lists every parameter.
"""
from __future__ import annotations

import dataclasses
import json
import math
import sys
from dataclasses import fields

import pytest

from g10core import config as C
from g10core.cli import main
from g10core.config import SECTIONS, ConfigError, param_of, parameters, preset, resolve
from g10core.ssd import ssd_preset, ssd_spec_from_config
from g10core.errors import TensorSimError
from g10core.workload.synth import synthesize
from g10core.workload.trace import write_trace

ALL_KEYS = [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in fields(cls)]
SMALL = ["--preset", "g10-artifact", "--set", "gpu.memory_GiB=0.012", "--set", "host.memory_GiB=0.03"]


@pytest.fixture(scope="module")
def tiny_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "synth_training-b1.h5"
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), path)
    return str(path)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def declaration(key):
    section, name = key.split(".")
    return param_of(SECTIONS[section], name)


# ---- every field is declared with its unit, range and description --------------------------------

@pytest.mark.parametrize("key", ALL_KEYS)
def test_every_field_has_unit_range_and_description(key):
    p = declaration(key)
    assert p.doc and "\n" not in p.doc and len(p.doc) > 15
    assert p.type in (bool, int, float, str)
    if p.type in (int, float):
        assert p.unit, f"{key}: a number needs a unit ('1' for a pure number)"
        assert p.choices is not None or (p.min is not None and p.max is not None), f"{key}: no range"
    else:
        assert p.unit == ""
    assert p.type is bool or p.choices is not None or p.min is not None or p.validate is not None
    assert p.range_text()


@pytest.mark.parametrize("key", ALL_KEYS)
def test_defaults_are_inside_their_ranges(key):
    section, name = key.split(".")
    for name_of_preset in C.PRESETS:
        value = getattr(getattr(preset(name_of_preset), section), name)
        C.check_value(key, value, declaration(key))        # raises if not


@pytest.mark.parametrize("key", [k for k in ALL_KEYS if declaration(k).max is not None])
def test_values_past_either_bound_are_refused_naming_key_value_and_range(key):
    p = declaration(key)
    section, name = key.split(".")
    above = p.max + 1 if p.type is int else float(p.max) * 1.5 + 1
    below = p.min - 1 if p.type is int else float(p.min) - 1
    for bad in (above, below):
        with pytest.raises(ConfigError) as info:
            preset("detailed").with_overrides({section: {name: bad}})
        msg = str(info.value)
        assert msg.startswith(f"{key} = {bad!r}: must be ") and p.bound_words() in msg and "\n" not in msg


@pytest.mark.parametrize("key", [k for k in ALL_KEYS if declaration(k).max is not None])
def test_the_bounds_themselves_are_valid_values(key):
    p = declaration(key)
    section, name = key.split(".")
    inside = [p.max] + ([] if p.min_exclusive else [p.min])
    for value in inside:
        if p.validate is not None:
            value = max(512, value - value % 512)
        try:
            preset("detailed").with_overrides({section: {name: value}})
        except ConfigError as exc:
            # a bound may still break a rule between keys; then the message says which
            assert key in str(exc) and ("ssd." in str(exc) or "link." in str(exc)), str(exc)


def test_choices_and_rules_name_the_key():
    with pytest.raises(ConfigError, match=r"^link\.lanes = 3: must be one of 1, 2, 4, 8, 16$"):
        resolve("detailed", sets=["link.lanes=3"])
    with pytest.raises(ConfigError, match=r"^ssd\.victim_policy = 'lru': must be greedy"):
        resolve("detailed", sets=["ssd.victim_policy=lru"])
    with pytest.raises(ConfigError, match=r"^ssd\.page_size_bytes = 1000: must be a multiple of 512"):
        resolve("detailed", sets=["ssd.page_size_bytes=1000"])


# ---- the fuzz-found crashes are refusals (exit 2 naming the key) -----------------------------------

FUZZ_FINDINGS = [
    # (policy, overrides, the key the one-line refusal names)             what it did before
    ("g10", ["gpu.frequency_GHz=1e-12"], "gpu.frequency_GHz"),            # ZeroDivisionError
    ("g10", ["host.memory_GiB=1e300"], "host.memory_GiB"),                # OverflowError
    ("g10", ["gpu.memory_GiB=1e300"], "gpu.memory_GiB"),                  # OverflowError
    ("g10", ["link.batch_pages=1.7e308"], "link.batch_pages"),            # OverflowError
    ("g10-gds", ["gpu.memory_GiB=4611686018427387904"], "gpu.memory_GiB"),  # OverflowError (C long)
    ("g10", ["fault.system_latency_us=1e300"], "fault.system_latency_us"),  # OverflowError in Replay
    ("g10", ["ssd.latency_us=1e300"], "ssd.latency_us"),                  # OverflowError in Replay
    ("g10", ["ssd.bandwidth_GBps=1e300"], "ssd.bandwidth_GBps"),          # OverflowError in Replay
    ("g10", ["host.bandwidth_GBps=1e300"], "host.bandwidth_GBps"),        # OverflowError in Replay
    ("g10", ["link.bandwidth_GBps=1e300"], "link.bandwidth_GBps"),        # (0 SSD pages per slot)
    ("deepum", ["scheduler.prefetch_degree=1e300"], "scheduler.prefetch_degree"),  # OverflowError in Replay
    ("g10", ["run.iterations=1e17"], "run.iterations"),                   # OverflowError
    ("base-uvm", ["run.iterations=1e9"], "run.iterations"),               # a 37 GiB allocation
    ("ideal", ["run.iterations=1e40"], "run.iterations"),                 # hung
    ("deepum", ["gpu.malloc_us_per_byte=16"], "gpu.malloc_us_per_byte"),  # "the replay stopped"
    ("ideal", ["gpu.frequency_GHz=1e18"], "gpu.frequency_GHz"),           # negative time, exit 0
    # found by tests/test_fuzz_config.py: l_sys = 0 gives SSD faults no bandwidth (an infinite fault
    # time cast to int64: "took ... cycles, less than its ideal time")
    ("base-uvm", ["fault.system_latency_us=0.5"], "fault.system_latency_us"),
    # inside the old ranges: an allocation longer than a slot, so no page is ever allocated
    ("deepum", ["gpu.malloc_us_per_byte=1e-3", "link.batch_pages=5"], "gpu.malloc_us_per_byte"),
]


@pytest.mark.parametrize("policy, sets, key", FUZZ_FINDINGS)
def test_fuzz_findings_are_refused_as_bad_input(tiny_trace, capsys, policy, sets, key):
    argv = ["run", tiny_trace, "--policy", policy, *SMALL]
    for s in sets:
        argv += ["--set", s]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("g10sim: error: ") and key in lines[0], err
    assert "must be" in lines[0] or "longer than a transfer slot" in lines[0]


def test_a_large_value_written_as_text_is_shown_as_written():
    with pytest.raises(ConfigError, match=r"^link\.batch_pages = '1\.7e308': must be >= 1 and <= 65536 pages$"):
        resolve(sets=["link.batch_pages=1.7e308"])
    with pytest.raises(ConfigError, match=r"^gpu\.memory_GiB = -1\.0: must be > 0 and <= 65536 GiB$"):
        resolve(sets=["gpu.memory_GiB=-1"])


def test_fault_latencies_and_allocation_cost_at_their_limits_run(tiny_trace, capsys):
    code, out, err = run(capsys, "run", tiny_trace, "--policy", "base-uvm", *SMALL, "--json", "-",
                         "--set", "fault.system_latency_us=1", "--set", "ssd.latency_us=0",
                         "--set", "gpu.malloc_us_per_byte=1e-3", "--set", "link.batch_pages=20")
    assert code == 0 and err == ""
    assert json.loads(out)["iteration_time_s"] > 0


# ---- strict types in TOML; --set strings are parsed -------------------------------------------------

@pytest.mark.parametrize("toml, message", [
    ('[gpu]\nmemory_GiB = "80"\n', "gpu.memory_GiB = '80': expected a number, not a string"),
    ("[scheduler]\nartifact_quirks = 1\n", "scheduler.artifact_quirks = 1: expected true or false (a boolean, not a number)"),
    ('[scheduler]\nartifact_quirks = "false"\n',
     "scheduler.artifact_quirks = 'false': expected true or false (a boolean, not a string)"),
    ("[run]\niterations = true\n", "run.iterations = True: expected an integer, not a boolean"),
    ("[run]\niterations = 2.5\n", "run.iterations = 2.5: expected an integer"),
    ('[link]\nlanes = "16"\n', "link.lanes = '16': expected an integer, not a string"),
    ("[ssd]\ndevice = 3\n", "ssd.device = 3: expected a string, not a number"),
    ("[gpu]\nmemory_GiB = nan\n", "gpu.memory_GiB = nan: must be finite"),
    ("[gpu]\nmemory_GiB = inf\n", "gpu.memory_GiB = inf: must be finite"),
    ("[gpu]\nmemory_GiB = [80]\n", "gpu.memory_GiB = [80]: expected a number, not a list"),
])
def test_toml_values_must_have_the_keys_type(tmp_path, toml, message):
    path = tmp_path / "machine.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as info:
        resolve("g10-artifact", toml_path=path)
    assert str(info.value) == f"{path}: {message}"


def test_toml_numbers_convert_losslessly(tmp_path):
    path = tmp_path / "machine.toml"
    path.write_text("[gpu]\nmemory_GiB = 80\n[link]\nbatch_pages = 25.0\n[scheduler]\nartifact_quirks = false\n")
    cfg = resolve("g10-artifact", toml_path=path)
    assert cfg.gpu.memory_GiB == 80.0 and isinstance(cfg.gpu.memory_GiB, float)
    assert cfg.link.batch_pages == 25 and isinstance(cfg.link.batch_pages, int)
    assert cfg.scheduler.artifact_quirks is False


def test_set_strings_are_parsed_and_the_python_api_is_strict():
    cfg = resolve(sets=["gpu.memory_GiB=80", "run.iterations=1e2", "scheduler.artifact_quirks=no"])
    assert (cfg.gpu.memory_GiB, cfg.run.iterations, cfg.scheduler.artifact_quirks) == (80.0, 100, False)
    with pytest.raises(ConfigError, match="expected a number, not a string"):
        preset("g10-artifact").with_overrides({"gpu": {"memory_GiB": "80"}})
    assert preset("g10-artifact").with_overrides({"gpu": {"memory_GiB": "80"}}, from_strings=True).gpu.memory_GiB == 80


# ---- no dead keys -----------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["fault.model", "ssd.read_latency_us", "ssd.write_latency_us"])
def test_keys_no_code_read_are_gone(key):
    with pytest.raises(ConfigError, match=f"unknown config key {key.replace('.', r'[.]')}"):
        resolve(sets=[f"{key}=1"])


# the rules between keys that a run applies (config.py keeps them with the config; the simulator
# calls them): a key they read is read by the run
RUN_RULES = {"check_supported", "is_detailed", "is_batched", "detailed_components", "check_level_supported",
             "check_clock", "slot_model_applies_advice"}


def _tracking(cfg, reads):
    """A copy of ``cfg`` whose sections record every field read outside config.py's own checks and
    dataclasses."""
    def wrap(spec, section):
        names = {f.name for f in fields(spec)}

        class Tracking(type(spec)):
            def __getattribute__(self, name):
                if name in names:
                    code = sys._getframe(1).f_code
                    if code.co_name in RUN_RULES or not code.co_filename.endswith(("config.py", "dataclasses.py")):
                        reads.add(f"{section}.{name}")
                return object.__getattribute__(self, name)

        return Tracking(**{n: object.__getattribute__(spec, n) for n in names})

    return C.SimConfig(preset=cfg.preset, **{s: wrap(getattr(cfg, s), s) for s in SECTIONS})


def test_every_key_is_read_by_some_run(tiny_trace):
    """Each key is read by the simulator or a policy in some run (no dead keys)."""
    from g10core.simulator import Simulator, policy_hints

    reads: set[str] = set()
    for name in ("g10-artifact", "detailed"):
        cfg = _tracking(resolve(name, sets=["gpu.memory_GiB=0.012", "host.memory_GiB=0.03"]), reads)
        sim = Simulator(cfg)
        for policy in ("base-uvm", "deepum", "g10", "ideal", "flashneuron", "g10-gds", "g10-host"):
            if name == "detailed" and policy in ("flashneuron", "g10-gds", "g10-host"):
                with pytest.raises(ConfigError, match="is tensor level"):   # issue 15: refused there
                    sim.run(tiny_trace, policy)
                continue
            sim.run(tiny_trace, policy)
        policy_hints(tiny_trace, "g10-host", cfg)
    # the CPU tier's policies run under default only; zero-infinity reads its device as it plans (a
    # trace without optimizer state is then refused)
    cfg = _tracking(resolve("default", sets=["gpu.memory_GiB=0.012", "host.memory_GiB=0.03"]), reads)
    for policy in ("zero-offload", "zero-infinity"):
        try:
            Simulator(cfg).run(tiny_trace, policy)
        except TensorSimError:
            pass
    assert set(ALL_KEYS) - reads == set()


# ---- the FTL device's keys ----------------------------------------------------------------------------

def test_device_keys_default_to_the_device_preset():
    cfg = preset("detailed")
    assert all(getattr(cfg.ssd, k) is None for k in C.FTL_KEYS)
    assert ssd_spec_from_config(cfg) == ssd_preset("zssd")
    mlc = ssd_spec_from_config(resolve("detailed", sets=["ssd.device=mlc"]))
    assert mlc == ssd_preset("mlc")


def test_device_keys_reach_the_ftl_in_any_order():
    sets = ["ssd.pages_per_block=64", "ssd.victim_policy=d-choices:4", "ssd.overprovisioning=0.2",
            "ssd.t_program_us=500", "ssd.queue_depth=8", "ssd.link_lanes=8", "ssd.link_generation=4"]
    a = ssd_spec_from_config(resolve("detailed", sets=["ssd.device=mlc", *sets]))
    b = ssd_spec_from_config(resolve("detailed", sets=[*sets, "ssd.device=mlc"]))
    assert a == b
    assert (a.pages_per_block, a.victim_policy, a.overprovisioning, a.t_program_us, a.queue_depth) == \
        (64, "d-choices:4", 0.2, 500.0, 8)
    assert (a.link.lanes, a.link.generation, a.link.clock_GHz) == (8, 4, 1.2)
    assert a.page_size_bytes == 8192 and a.t_read_us == 75.0          # the rest is mlc's


def test_device_keys_change_a_detailed_run(tiny_trace, capsys):
    base = ["run", tiny_trace, "--policy", "base-uvm", "--preset", "detailed", "--json", "-",
            "--set", "gpu.memory_GiB=0.012", "--set", "host.memory_GiB=0"]
    code, out, _ = run(capsys, *base)
    assert code == 0
    fast = json.loads(out)
    code, out, _ = run(capsys, *base, "--set", "ssd.t_read_us=1000", "--set", "ssd.read_overhead_us=500")
    assert code == 0
    slow = json.loads(out)
    assert slow["config"]["ssd"]["t_read_us"] == 1000.0 and fast["config"]["ssd"]["t_read_us"] is None
    assert slow["iteration_time_s"] > fast["iteration_time_s"]


def test_device_rules_between_keys_name_them():
    with pytest.raises(ConfigError, match=r"^ssd\.blocks_per_plane = 4: GC cannot make progress with "
                                          r"gc_free_blocks_min = 3; .* \(ssd\.device = 'zssd' with "
                                          r"ssd\.blocks_per_plane, ssd\.gc_free_blocks_min\)$"):
        resolve("detailed", sets=["ssd.blocks_per_plane=4", "ssd.gc_free_blocks_min=3"])
    # the per-block tables of 2^24 blocks per plane over 128 planes would take GBs
    with pytest.raises(ConfigError, match=r"ssd\.blocks_per_plane = 16777216: .* erase blocks; at most 2\^24"):
        resolve("detailed", sets=["ssd.blocks_per_plane=16777216", "ssd.pages_per_block=1"])
    with pytest.raises(ConfigError, match=r"ssd\.max_command_bytes = 512: smaller than one page"):
        resolve("detailed", sets=["ssd.max_command_bytes=512"])
    with pytest.raises(ConfigError, match=r"ssd\.capacity_GiB = 16384 on ssd\.device = 'zssd'"):
        resolve("detailed", sets=["ssd.capacity_GiB=16384"])


# ---- g10sim config show ---------------------------------------------------------------------------------

def test_config_show_names_every_key_with_unit_range_and_description(capsys):
    code, out, err = run(capsys, "config", "show", "--preset", "detailed")
    assert code == 0 and err == ""
    lines = out.splitlines()
    for row in parameters(preset("detailed")):
        line = next(l for l in lines if l.split() and l.split()[0] == row["key"])
        assert row["range"] in line and (row["unit"] in line)
        assert row["doc"] in out
    assert "ftl" in next(l for l in lines if l.startswith("ssd.model "))
    assert "256 (zssd)" in next(l for l in lines if l.startswith("ssd.pages_per_block "))


def test_config_show_json_round_trips(capsys):
    for name, sets in (("g10-artifact", []), ("detailed", ["ssd.device=mlc", "ssd.queue_depth=4", "gpu.memory_GiB=80"])):
        argv = ["config", "show", "--preset", name, "--json", "-"]
        for s in sets:
            argv += ["--set", s]
        code, out, err = run(capsys, *argv)
        assert code == 0 and err == ""
        rows = json.loads(out)
        assert [r["key"] for r in rows] == ALL_KEYS
        for r in rows:
            assert {"key", "value", "default", "type", "unit", "range", "min", "max", "choices", "doc"} <= set(r)
        overrides: dict = {}
        for r in rows:
            if r["value"] is not None:
                section, key = r["key"].split(".")
                overrides.setdefault(section, {})[key] = r["value"]
        expected = resolve(name, sets=sets)
        assert preset(name).with_overrides(overrides) == expected
        assert preset("g10-artifact").with_overrides(overrides).to_dict() == dict(expected.to_dict(), preset="g10-artifact")
        mlc = {r["key"]: r for r in rows}["ssd.t_read_us"]
        assert mlc["value"] is None and mlc["device_value"] == (75.0 if sets else 3.0)


def test_config_show_refuses_bad_overrides(capsys):
    code, out, err = run(capsys, "config", "show", "--set", "gpu.memory_GiB=0")
    assert code == 2 and out == "" and err == "g10sim: error: gpu.memory_GiB = 0.0: must be > 0 and <= 65536 GiB\n"


def test_range_text_reads_as_intervals():
    assert declaration("gpu.memory_GiB").range_text() == "(0, 65536]"
    assert declaration("run.iterations").range_text() == "[1, 1000]"
    assert declaration("ssd.blocks_per_plane").range_text() == "[4, 2^24]"
    assert declaration("ssd.device").range_text() == "one of zssd, mlc"
    assert declaration("scheduler.artifact_quirks").range_text() == "true or false"
    assert declaration("ssd.page_size_bytes").range_text() == "[512, 2^20]; a multiple of 512"
    assert math.isclose(declaration("gpu.malloc_us_per_byte").max, 1e-3)


# ---- kernel time x frequency x iterations: the product the ranges cannot bound ------------------------

def test_kernel_times_that_overflow_the_clock_are_refused(tmp_path, capsys):
    # 40 kernels of about 1e13 us: before, ideal printed a negative iteration time with exit 0
    # and the tensor-level policies raised OverflowError
    path = tmp_path / "long.h5"
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1, kernel_time_us=1e13), path)
    for policy in ("ideal", "base-uvm", "g10-gds", "flashneuron"):
        code, out, err = run(capsys, "run", path, "--policy", policy, *SMALL)
        assert code == 2 and out == "" and len(err.splitlines()) == 1
        assert "gpu.frequency_GHz = 1.2 over run.iterations = 2" in err and "64-bit clock" in err
    code, _, err = run(capsys, "hints", path, "--policy", "g10", "-o", tmp_path / "h.h5", *SMALL)
    assert code == 2 and "64-bit clock" in err


def test_long_kernels_within_the_clock_run(tmp_path, capsys):
    path = tmp_path / "long.h5"
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1, kernel_time_us=1e9), path)
    for policy in ("ideal", "base-uvm", "g10-gds"):
        code, out, err = run(capsys, "run", path, "--policy", policy, *SMALL, "--json", "-")
        assert code == 0 and err == ""
        t = json.loads(out)["iteration_time_s"]
        assert math.isfinite(t) and t >= json.loads(out)["ideal_time_s"] > 1e4


def test_a_preset_is_built_and_checked_once_and_shared():
    # a run asks for two or three presets (reference values, the clock check): one frozen object each
    from g10core import config as config_module

    for name in config_module.PRESETS:
        assert config_module.preset(name) is config_module.preset(name)
        assert config_module.preset(name) == config_module.PRESETS[name]()     # what the factory builds
    with pytest.raises(dataclasses.FrozenInstanceError):
        config_module.preset("default").preset = "mine"
