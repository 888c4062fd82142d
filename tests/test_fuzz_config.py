"""Configuration fuzzing: random keys with random values through the command line (issue 12).

Each example runs ``g10sim run TINY --policy P --json - --set key=value ...`` in
process (``cli.main``) with one to four overrides drawn from every configuration
key: values far outside any range (huge, tiny, negative, nan, inf, strings,
booleans, the published fuzz findings) and values inside the key's declared range
(uniform, log-uniform, at its bounds), under both presets.  The contract: exit 0
(a result), 1 (a simulation that could not complete) or 2 (bad input); at most one
line on stderr and never a traceback; a result that exits 0 has a finite,
non-negative iteration time.

``G10_FUZZ_EXAMPLES`` sets the examples per policy (default 200, what CI runs);
the longer campaign of the closing note used 2000.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from g10core.cli import main
from g10core.config import SECTIONS, param_of
from g10core.workload.synth import synthesize
from g10core.workload.trace import write_trace

from fuzzkit import error_lines

EXAMPLES = int(os.environ.get("G10_FUZZ_EXAMPLES", "200"))
POLICIES = ["base-uvm", "deepum", "g10", "ideal", "g10-gds", "flashneuron"]
# a 40-kernel training trace of 64 MiB under a GPU of 12 MiB and 30 MiB of host memory: every
# policy runs, pages move between all three tiers, and a run takes milliseconds
BASE = ["gpu.memory_GiB=0.012", "host.memory_GiB=0.03"]

KEYS = [(f"{section}.{f.name}", param_of(cls, f.name)) for section, cls in SECTIONS.items() for f in fields(cls)]

WILD = ["1e300", "-1e300", "1e-300", "0", "-0", "-1", "0.5", "3", "16", "nan", "inf", "-inf", "1.7e308",
        "1e-12", "1e9", "1e17", "1e18", "1e40", "4611686018427387904", "99999999999999999999", "2147483648",
        "abc", "", "true", "false", "yes", "d-choices:0", "zssd", "ftl", "pcie"]


def _text(x) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    return repr(x) if isinstance(x, float) else str(x)


def in_range(p) -> st.SearchStrategy[str]:
    """Values the declaration allows (and the bounds themselves, and just past them)."""
    if p.type is bool:
        return st.sampled_from(["true", "false"])
    if p.choices is not None:
        return st.sampled_from([_text(c) for c in p.choices])
    if p.type is str:          # the victim rule
        return st.sampled_from(["greedy", "fifo", "random", "d-choices:1", "d-choices:8", "d-choices:1024",
                                "d-choices:1025", "lru"])
    lo, hi = p.min, p.max
    edges = [lo, hi]
    if p.type is int:
        values = st.integers(int(lo), int(hi))
        edges += [int(lo) - 1, int(hi) + 1]
    else:
        values = st.floats(lo, hi, exclude_min=p.min_exclusive, allow_nan=False)
        if lo >= 0 and hi > 0:
            low_exp = math.log10(lo) if lo > 0 else -12.0
            values = values | st.floats(low_exp, math.log10(hi)).map(lambda e: min(10.0 ** e, hi))
        edges += [hi * (1 + 1e-9), lo - 1e-9]
    return (values | st.sampled_from(edges)).map(_text)


def assignment() -> st.SearchStrategy[str]:
    return st.sampled_from(KEYS).flatmap(
        lambda kp: (in_range(kp[1]) | st.sampled_from(WILD)).map(lambda v: f"{kp[0]}={v}"))


@pytest.fixture(scope="module")
def tiny_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "synth_training-b1.h5"
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), path)
    return str(path)


def run_once(trace: str, policy: str, preset: str, sets: list[str], capsys) -> tuple[int, str, str]:
    argv = ["run", trace, "--policy", policy, "--preset", preset, "--json", "-"]
    for s in BASE + sets:
        argv += ["--set", s]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def check_contract(code: int, out: str, err: str, what: str) -> None:
    assert code in (0, 1, 2), f"{what}: exit {code}: {err}"
    assert "Traceback" not in err and len(error_lines(err)) <= 1, f"{what}: {err}"
    if code == 0:
        result = json.loads(out)
        t = result["iteration_time_s"]
        assert isinstance(t, (int, float)) and math.isfinite(t) and t >= 0, f"{what}: iteration time {t}"
        for it in result["iterations"]:
            assert math.isfinite(it["time_s"]) and it["time_s"] >= 0, f"{what}: {it['time_s']}"


@pytest.mark.parametrize("policy", POLICIES)
def test_any_configuration_gets_a_clean_answer(policy, tiny_trace, capsys, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))      # where an internal-error report would go

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(preset=st.sampled_from(["g10-artifact", "detailed"]), sets=st.lists(assignment(), min_size=1, max_size=4))
    def one(preset, sets):
        code, out, err = run_once(tiny_trace, policy, preset, sets, capsys)
        check_contract(code, out, err, f"--policy {policy} --preset {preset} " + " ".join(f"--set {s}" for s in sets))

    one()
    assert not list(tmp_path.glob("g10sim-crash-*")), "an internal error was reported"


def test_in_range_values_of_the_published_findings_still_run(tiny_trace, capsys):
    # the bounds themselves are runnable configurations, not refusals
    for sets in (["gpu.frequency_GHz=0.1"], ["gpu.frequency_GHz=10"], ["run.iterations=1000"],
                 ["scheduler.prefetch_degree=1024"], ["fault.system_latency_us=1e6", "ssd.latency_us=1e6"],
                 ["link.bandwidth_GBps=10000", "ssd.bandwidth_GBps=10000", "host.bandwidth_GBps=10000"]):
        for policy in ("deepum", "ideal", "g10-gds"):
            code, out, err = run_once(tiny_trace, policy, "g10-artifact", sets, capsys)
            check_contract(code, out, err, f"{policy} {sets}")
            assert code == 0, f"{policy} {sets}: {err}"
