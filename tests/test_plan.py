"""The planner (g10core.experiments.plan, `g10sim plan`): the least value of a key that reaches a
fraction of ideal.

The search is checked on closed-form fraction curves (no simulator); the planner end to end on a
small synthetic trace whose runs take a few hundredths of a second.  On it, under G10 with 14 MiB
of GPU memory and no host memory, the fraction of ideal rises with ssd.bandwidth_GBps from 0.05
at 1 GB/s to 0.70 at 32 GB/s with the profile fault time (``fault.handler = profile``), which these
runs set: under the default physical fault time the driver's costs cap it near 0.51 from 24 GB/s
on, too flat a curve for the planner's cases around 0.5.
"""
from __future__ import annotations

import json

import pytest

from g10core.cli import main
from g10core.config import preset
from g10core.errors import ConfigError
from g10core.experiments import plan as pl
from g10core.experiments import sweep as sw
from g10core.simulator import Simulator
from g10core.workload.synth import synthesize
from g10core.workload.trace import write_trace

KEY = "ssd.bandwidth_GBps"
SETS = ["gpu.memory_GiB=0.014", "host.memory_GiB=0", "fault.handler=profile"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("plan")
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), d / "a.h5")
    return d


def fraction_at(trace, value, key=KEY, extra=None):
    """The fraction of ideal of one run, made without the planner."""
    over = {"gpu": {"memory_GiB": 0.014}, "host": {"memory_GiB": 0}, "fault": {"handler": "profile"}}
    for k, v in {key: value, **(extra or {})}.items():
        s, n = k.split(".")
        over.setdefault(s, {})[n] = v
    r = Simulator(preset("default").with_overrides(over)).run(str(trace), "g10")
    return 0.0 if r.failed else r.normalized_performance


# ---- the search on closed forms ---------------------------------------------------------------

def drive(search, f, width=1):
    """Run a search to its end on the curve ``f``; returns the values asked, in order."""
    asked = []
    while not search.done:
        values = search.propose(width)
        assert values, "a search that is not done proposes values"
        asked += values
        search.feed({v: f(v) for v in values})
    return asked


@pytest.mark.parametrize("width", [1, 3])
def test_search_finds_the_crossing_of_a_linear_curve(width):
    # f(v) = v / 20 reaches 0.5 at v = 10 exactly
    ax = pl.Axis(KEY, 1.0, 64.0, integer=False)
    s = pl._Search(ax, 0.5, 0.01, 5, 4, {})
    asked = drive(s, lambda v: v / 20, width)
    assert s.monotone and not s.met_at_lo
    lo, hi = s.bracket
    assert s.minimum == hi and hi >= 10 and lo < 10 and hi - lo <= 0.01 * hi
    assert s.scan == [1.0, 2.828, 8.0, 22.63, 64.0]     # geometric: 2^0, 2^1.5, 2^3, 2^4.5, 2^6, rounded
    assert len(asked) == len(set(asked))                   # no value run twice
    if width == 3:                                         # three points a step: fewer steps, more runs
        assert len(asked) > 5


def test_search_on_an_integer_axis_stops_at_adjacent_integers():
    ax = pl.Axis("scheduler.prefetch_degree", 1, 100, integer=True)
    s = pl._Search(ax, 0.5, 0.01, 5, 4, {})
    drive(s, lambda v: 1.0 if v >= 37 else 0.0)
    assert s.minimum == 37 and s.bracket == (36, 37)


def test_search_met_at_lo_and_unreachable():
    ax = pl.Axis(KEY, 1.0, 16.0, integer=False)
    s = pl._Search(ax, 0.5, 0.01, 5, 4, {})
    drive(s, lambda v: 0.9)
    assert (s.minimum, s.met_at_lo) == (1.0, True)
    s = pl._Search(ax, 0.95, 0.01, 5, 4, {})
    drive(s, lambda v: min(0.9, v / 10))
    assert s.minimum is None and s.bracket is None and not s.met_at_lo


def test_search_says_where_the_curve_is_not_monotone():
    # rises to 0.9 at 4, falls to 0.3 from 8 on: scan 1, 2, 4, 8, 16 -> 0.1, 0.45, 0.9, 0.3, 0.3
    def f(v):
        return 0.3 if v >= 8 else min(0.9, v * 0.225)

    ax = pl.Axis(KEY, 1.0, 16.0, integer=False)
    s = pl._Search(ax, 0.5, 0.01, 5, 4, {})
    drive(s, f)
    assert not s.monotone and s.falls[0] == (4.0, 0.9, 8.0, 0.3)
    assert s.sampled_minimum == 4.0
    assert 0.5 / 0.225 <= s.minimum <= 0.5 / 0.225 * 1.01         # refined within (2, 4]
    note = pl._notes(s, 0.5)
    assert len(note) == 1 and note[0].startswith("not monotone: the fraction of ideal falls from 0.900 at "
                                                 "ssd.bandwidth_GBps = 4 to 0.300 at 8")
    assert "the least sampled value that meets 0.5 is 4 (bracket (2, 4])" in note[0]
    assert "ssd.bandwidth_GBps = 8 falls below 0.5 again" in note[0]
    # a dip smaller than FLAT is flat, not a fall
    s = pl._Search(ax, 0.5, 0.01, 5, 4, {})
    drive(s, lambda v: 1.0 - (pl.FLAT / 2 if v > 10 else 0) if v > 3 else 0.1)
    assert s.monotone


def test_a_fall_between_the_bisections_runs_is_said():
    ax = pl.Axis(KEY, 1.0, 64.0, integer=False)

    def step(v):
        return 0.9 if v >= 10 else 0.1

    s = pl._Search(ax, 0.5, 0.01, 5, 4, {})
    drive(s, step)
    assert s.monotone and not s.run_falls and 10 <= s.minimum <= 10.1
    # the same path (it depends only on which runs meet) with one run above the minimum lower, still meeting
    dip = min(v for v in s.seen if v > s.minimum and v not in s.scan)
    below = max(v for v in s.seen if v < dip)
    s2 = pl._Search(ax, 0.5, 0.01, 5, 4, {})
    drive(s2, lambda v: 0.85 if v == dip else step(v))
    assert s2.minimum == s.minimum and not s2.falls and not s2.monotone
    assert s2.run_falls == [(below, 0.9, dip, 0.85)]
    note = pl._notes(s2, 0.5)
    assert note == [f"not monotone between the bisection's runs: the fraction of ideal falls from 0.900 at {KEY} = "
                    f"{below:g} to 0.850 at {dip:g}; every larger value run meets 0.5"]


# ---- the planner on a simulated trace ----------------------------------------------------------

def test_monotone_case_minimum_meets_and_095_of_it_does_not(folder, tmp_path):
    trace = folder / "a.h5"
    r = pl.plan(trace, "g10", 0.5, {KEY: (1, 32)}, sets=SETS, out=tmp_path / "st")
    assert r.scan_monotone and r.minimum is not None and not r.met_at_lo
    assert r.bracket[1] == r.minimum and r.minimum - r.bracket[0] <= 0.01 * r.minimum
    assert fraction_at(trace, r.minimum) >= 0.5
    assert fraction_at(trace, 0.95 * r.minimum) < 0.5
    assert fraction_at(trace, r.bracket[0]) < 0.5
    # every run is recorded with its value and fraction, the planner's numbers those of the runs
    by_value = {run["value"]: run for run in r.runs}
    assert by_value[r.minimum]["fraction"] == pytest.approx(fraction_at(trace, r.minimum), rel=1e-12)
    assert all(run["meets"] == (run["fraction"] >= 0.5) for run in r.runs)
    assert [run["value"] for run in r.runs] == sorted(by_value)
    assert all(run["new"] for run in r.runs)


def test_unreachable_range_is_one_line_exit_1_with_null_minimum_in_the_json(folder, tmp_path, capsys):
    out, store = tmp_path / "p.json", tmp_path / "st"
    code = main(["plan", str(folder / "a.h5"), "--policy", "g10", "--target", "0.99", "--vary", KEY,
                 "--range", "1:32", *sum((["--set", s] for s in SETS), []), "--jobs", "1", "--no-progress",
                 "--json", str(out), "--out", str(store)])
    text, err = capsys.readouterr()
    assert code == 1            # a result (nothing in the range reaches the target), not bad input
    doc = json.loads(out.read_text())
    assert doc["minimum"] is None and doc["bracket"] is None and doc["run_count"] == 5   # the scan alone
    assert doc["bracketed"] is False and doc["minimum_is_upper_bound"] is False
    assert (doc["key"], doc["target"]) == (KEY, 0.99) and len(doc["runs"]) == 5
    best = max(doc["runs"], key=lambda r: (r["fraction"], -r["value"]))
    line = (f"g10sim: no value of {KEY} in [1, 32] reaches the target 0.99 of ideal: the best run reaches "
            f"{best['fraction']:.3f} of ideal at {KEY} = {best['value']:g}; widen --range (a higher HI)")
    assert err.splitlines() == [line] and doc["unbracketed"] == line.removeprefix("g10sim: ")
    # the report still goes to stdout; the runs stay in the store (a second plan runs none again)
    lines = [ln for ln in text.splitlines() if "cannot reach" in ln]
    assert len(lines) == 1 and lines[0].startswith(f"the range {KEY} = 1 .. 32 cannot reach 0.99 of ideal")
    assert len((store / sw.RUNS_FILE).read_text().splitlines()) == 5
    r = pl.plan(folder / "a.h5", "g10", 0.99, {KEY: (1, 32)}, sets=SETS, out=store)    # the API does not raise
    assert r.new_runs == 0 and not r.bracketed and r.minimum is None and r.unbracketed == doc["unbracketed"]


def test_target_met_at_lo_is_one_line_exit_2_with_lo_as_an_upper_bound(folder, tmp_path, capsys):
    code = main(["plan", str(folder / "a.h5"), "--policy", "g10", "--target", "50%", "--vary", KEY,
                 "--range", "20:32", *sum((["--set", s] for s in SETS), []), "--jobs", "1", "--no-progress",
                 "--json", "-"])
    text, err = capsys.readouterr()
    doc = json.loads(text)
    assert code == 2 and doc["minimum"] == 20.0 and doc["met_at_lo"] is True and doc["target"] == 0.5
    assert doc["minimum_is_upper_bound"] is True and doc["bracketed"] is False and doc["key"] == KEY
    assert doc["bracket"] is None and doc["runs"][0]["value"] == 20.0 and doc["runs"][0]["meets"]
    assert any("already met at the low end of the range" in n for n in doc["notes"])
    line = (f"g10sim: error: --range 20:32 of {KEY} does not bracket the target 0.5: the low end, {KEY} = 20, "
            f"already reaches {doc['runs'][0]['fraction']:.3f} of ideal (the least value may be lower); "
            "widen --range (a lower LO)")
    assert err.splitlines() == [line]
    r = pl.plan(folder / "a.h5", "g10", 0.5, {KEY: (20, 32)}, sets=SETS)
    assert (r.minimum, r.minimum_is_upper_bound, r.bracketed) == (20.0, True, False)


def test_target_met_at_the_least_value_the_key_takes_is_an_answer_exit_0(folder, tmp_path, capsys):
    # ssd.bandwidth_GBps takes values from 0.1 (inclusive): met there, no lower value to try
    code = main(["plan", str(folder / "a.h5"), "--policy", "g10", "--target", "0.001", "--vary", KEY,
                 "--range", "0.1:1", *sum((["--set", s] for s in SETS), []), "--jobs", "1", "--no-progress",
                 "--json", "-"])
    text, err = capsys.readouterr()
    doc = json.loads(text)
    assert code == 0 and err == "" and doc["minimum"] == 0.1 and doc["met_at_lo"] is True
    assert doc["bracketed"] is True and doc["lo_is_floor"] is True and doc["minimum_is_upper_bound"] is False
    assert any("the least value ssd.bandwidth_GBps takes: every value meets it" in n for n in doc["notes"])
    from g10core import policies
    assert pl.check_axis(KEY, (0.1, 1), preset("default"), policies.get("g10")).floor
    assert not pl.check_axis(KEY, (0.2, 1), preset("default"), policies.get("g10")).floor


def test_a_frontier_is_refused_only_where_no_point_brackets_the_target(folder, tmp_path, capsys):
    argv = ["plan", str(folder / "a.h5"), "--policy", "g10", "--vary", "gpu.memory_GiB", "--range", "0.014:0.03",
            "--vary", KEY, "--points", "2", "--tolerance", "0.05", "--set", "host.memory_GiB=0",
            "--set", "fault.handler=profile", "--jobs", "1", "--no-progress", "--json", "-",
            "--out", str(tmp_path / "st")]
    # no point reaches 0.99 in 1 .. 8 (at best 0.24 at 0.014 GiB, 0.63 at 0.03 GiB): nothing of the frontier found
    code = main(argv + ["--target", "0.99", "--range", "1:8"])
    text, err = capsys.readouterr()
    doc = json.loads(text)
    assert code == 1 and doc["bracketed"] is False and doc["minimum"] is None
    assert [f["minimum"] for f in doc["frontier"]] == [None, None] and doc["run_count"] == 10
    best = max(doc["runs"], key=lambda r: r["fraction"])
    assert err.splitlines() == [
        f"g10sim: no value of {KEY} in [1, 8] reaches the target 0.99 of ideal at any of the 2 values of "
        f"gpu.memory_GiB in 0.014 .. 0.03: the best run reaches {best['fraction']:.3f} of ideal "
        f"at gpu.memory_GiB = 0.03, {KEY} = 8; widen --range of {KEY} (a higher HI)"]
    # not reached at 0.014 GiB (0.045 .. 0.09 in 1 .. 2), met at the low end at 0.03 GiB (0.127 at 1): refused
    code = main(argv + ["--target", "0.1", "--range", "1:2"])
    text, err = capsys.readouterr()
    doc = json.loads(text)
    assert code == 2 and doc["bracketed"] is False and [f["minimum"] for f in doc["frontier"]] == [None, 1.0]
    assert len(err.splitlines()) == 1 and "not reached at 1" in err and "met at the low end at 1" in err
    assert err.rstrip().endswith("(a lower LO and a higher HI)")
    # both points met at the low end: refused too (the least values may be lower)
    code = main(argv + ["--target", "0.01", "--range", "1:32"])
    text, err = capsys.readouterr()
    doc = json.loads(text)
    assert code == 2 and doc["bracketed"] is False and doc["minimum"] == 1.0 and doc["minimum_is_upper_bound"]
    assert len(err.splitlines()) == 1 and "met at the low end at 2" in err and "(a lower LO)" in err
    # one point bracketed (0.03 GiB: 3.464), the other not reached (0.014 GiB needs 12): a frontier (exit 0)
    code = main(argv + ["--target", "0.5", "--range", "1:11"])
    text, err = capsys.readouterr()
    doc = json.loads(text)
    reached = [f["minimum"] is not None for f in doc["frontier"]]
    assert reached == [False, True], doc["frontier"]
    assert code == 0 and doc["bracketed"] is True and doc["unbracketed"] is None and err == ""


@pytest.mark.parametrize("args, message", [
    (["--vary", "ssd.bandwdth_GBps"], "--vary ssd.bandwdth_GBps: unknown configuration key; did you mean "
                                      "'ssd.bandwidth_GBps'?"),
    (["--vary", "ssd.model"], "--vary ssd.model: not a numeric key (it takes one of bandwidth, ftl)"),
    (["--vary", "fault.prefetcher"], "--vary fault.prefetcher: not a numeric key"),
    (["--vary", "scheduler.artifact_quirks"], "--vary scheduler.artifact_quirks: not a numeric key (it is true "
                                              "or false)"),
    (["--vary", "scheduler.prefetch_degree", "--range", "1:64"],
     "--vary scheduler.prefetch_degree: policy 'g10' does not model it"),
    (["--vary", "run.iterations", "--range", "1:5"], "--vary run.iterations: a plan does not vary it"),
    (["--vary", "gpu.page_size_bytes"], "--vary gpu.page_size_bytes: a plan does not vary it"),
    (["--vary", "host.memory_GiB", "--range", "0:1"], "--vary host.memory_GiB: also given by --set"),
    (["--vary", KEY, "--range", "32:1"], f"--range 32:1 of {KEY}: LO must be less than HI"),
    (["--vary", KEY, "--range", "a:b"], f"--range 'a:b' of {KEY}: expected LO:HI"),
    (["--vary", KEY, "--range", "0.05:1"], f"--range of {KEY}: LO = 0.05 is refused: {KEY} = 0.05: must be >= 0.1"),
    (["--vary", "gpu.sms", "--range", "1.5:8"], "--range 1.5:8 of gpu.sms: gpu.sms is an integer"),
    (["--vary", KEY, "--vary", "gpu.memory_GiB", "--vary", "link.bandwidth_GBps"], "--vary: give one key"),
    (["--range", "1:2"], "--range LO:HI comes after the --vary KEY it bounds"),
    (["--vary", KEY, "--target", "1.5"], "a fraction of ideal in (0, 1]"),
])
def test_bad_keys_and_ranges_are_one_line_exit_2(folder, tmp_path, capsys, args, message):
    argv = ["plan", str(folder / "a.h5"), "--policy", "g10", *sum((["--set", s] for s in SETS), []),
            "--jobs", "1", "--no-progress", "--out", str(tmp_path / "st")]
    if "--target" not in args:
        argv += ["--target", "0.5"]
    code = main(argv + args)
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not (tmp_path / "st" / sw.RUNS_FILE).exists()          # refused before any run


@pytest.mark.parametrize("trace, message", [
    ("nosuch", "nosuch: no such trace (a path, or a shipped name: g10sim trace list)"),
    ("bert_base-b265", "did you mean 'bert_base-b256'?"),
])
def test_a_missing_trace_is_one_line_exit_2(tmp_path, capsys, trace, message):
    code = main(["plan", trace, "--policy", "g10", "--target", "0.5", "--vary", KEY, "--range", "1:32", "--jobs", "1",
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err


def test_a_run_that_raises_is_exit_1_and_kept_in_the_store(folder, tmp_path, capsys):
    pol = tmp_path / "boom.py"
    pol.write_text("from g10core.policies import Policy\n\n"
                   "class Boom(Policy):\n"
                   "    name = 'boom'\n"
                   "    def hints(self, trace):\n"
                   "        if self.config.ssd.bandwidth_GBps > 8:\n"
                   "            raise RuntimeError('no plan above 8 GB/s')\n"
                   "        return super().hints(trace)\n")
    code = main(["plan", str(folder / "a.h5"), "--policy", f"{pol}:Boom", "--target", "0.5", "--vary", KEY,
                 "--range", "1:32", *sum((["--set", s] for s in SETS), []), "--jobs", "1", "--no-progress",
                 "--out", str(tmp_path / "st")])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "simulation failed:" in err and "RuntimeError: no plan above 8 GB/s" in err and KEY in err
    assert any(r["error"] for r in sw.ResultStore(tmp_path / "st").records().values())


def test_default_range_is_value_over_16_to_times_16_from_where_the_simulator_runs():
    from g10core import policies

    # default: exact quotas carry fractions of a page, so every value from value / 16 runs
    base = preset("default")
    ax = pl.check_axis(KEY, None, base, policies.get("g10"))
    assert (ax.lo, ax.hi, ax.integer) == (0.2, 51.2, False)
    ax = pl.check_axis("gpu.memory_GiB", None, base, policies.get("g10"))
    assert (ax.lo, ax.hi) == (2.5, 640.0)
    ax = pl.check_axis("link.batch_pages", None, base, policies.get("g10"))
    assert ax.integer and (ax.lo, ax.hi) == (4, 800)
    # g10-artifact's whole-page quotas: 3.2 / 16 = 0.2 GB/s moves int(50 * 0.2 / 15.754) = 0 pages
    # per slot, so LO doubles to 0.4 (1 page); 50 / 16 -> 4 pages move no SSD page, 8 move 1
    base = preset("g10-artifact")
    assert pl.check_axis(KEY, None, base, policies.get("g10")).lo == 0.4
    assert pl.check_axis("link.batch_pages", None, base, policies.get("g10")).lo == 8


def test_a_key_tensor_level_policies_do_not_read_is_refused(folder):
    with pytest.raises(ConfigError, match="policy 'flashneuron' does not model it"):
        pl.plan(folder / "a.h5", "flashneuron", 0.5, {"link.batch_pages": (10, 100)}, sets=SETS)


def test_resumable_a_second_plan_runs_nothing_new(folder, tmp_path, capsys):
    argv = ["plan", str(folder / "a.h5"), "--policy", "g10", "--target", "0.5", "--vary", KEY, "--range", "1:32",
            *sum((["--set", s] for s in SETS), []), "--jobs", "1", "--no-progress", "--out", str(tmp_path / "st"),
            "--json", "-"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    n_lines = len((tmp_path / "st" / sw.RUNS_FILE).read_text().splitlines())
    assert first["new_runs"] == first["run_count"] == n_lines
    assert main(argv) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["new_runs"] == 0 and second["minimum"] == first["minimum"]
    assert [r["run_key"] for r in second["runs"]] == [r["run_key"] for r in first["runs"]]
    assert len((tmp_path / "st" / sw.RUNS_FILE).read_text().splitlines()) == n_lines
    # the store is a sweep store: status lists every run of the plan
    st = sw.sweep_status(tmp_path / "st")
    assert st["total"] == st["done"] == n_lines and all(KEY in row for row in st["rows"])
    # a plan with a finer tolerance reuses what it can and runs only the new points
    r = pl.plan(folder / "a.h5", "g10", 0.5, {KEY: (1, 32)}, sets=SETS, tolerance=0.002, out=tmp_path / "st")
    assert 0 < r.new_runs < len(r.runs) and r.minimum <= first["minimum"]


def test_two_keys_frontier_on_a_tiny_grid(folder, tmp_path):
    trace = folder / "a.h5"
    r = pl.plan(trace, "g10", 0.5, [("gpu.memory_GiB", (0.014, 0.03)), (KEY, (1, 32))],
                sets=["host.memory_GiB=0", "fault.handler=profile"],
                points=2, out=tmp_path / "st", tolerance=0.02)
    assert r.keys == ("gpu.memory_GiB", KEY) and len(r.frontier) == 2
    assert [f["gpu.memory_GiB"] for f in r.frontier] == [0.014, 0.03]
    for f in r.frontier:
        m, mem = f["minimum"], f["gpu.memory_GiB"]
        assert m is not None and f["bracket"][1] == m and m - f["bracket"][0] <= 0.02 * m
        assert fraction_at(trace, m, extra={"gpu.memory_GiB": mem}) >= 0.5
        assert fraction_at(trace, f["bracket"][0], extra={"gpu.memory_GiB": mem}) < 0.5
    # more GPU memory needs less SSD bandwidth; the plan's minimum is the least over the frontier
    assert r.frontier[1]["minimum"] < r.frontier[0]["minimum"]
    assert r.minimum == r.frontier[1]["minimum"] and r.minimum_at == {"gpu.memory_GiB": 0.03}
    assert {tuple(run["values"]) for run in r.runs} == {("gpu.memory_GiB", KEY)}


def test_json_schema_and_plot(folder, tmp_path, capsys):
    out, png = tmp_path / "p.json", tmp_path / "p.png"
    code = main(["plan", str(folder / "a.h5"), "--policy", "g10", "--target", "0.5", "--vary", KEY, "--range",
                 "1:32", *sum((["--set", s] for s in SETS), []), "--jobs", "1", "--no-progress", "--json", str(out),
                 "--plot", str(png)])
    text = capsys.readouterr().out
    assert code == 0 and png.stat().st_size > 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "g10core-plan" and doc["schema_version"] == 1
    assert {"minimum", "target", "key", "tolerance", "runs"} <= set(doc)
    assert (doc["key"], doc["target"], doc["tolerance"], doc["range"]) == (KEY, 0.5, 0.01, [1.0, 32.0])
    assert "frontier" not in doc and doc["run_count"] == len(doc["runs"])
    for run in doc["runs"]:
        assert set(run) >= {"value", "fraction", "meets", "failed", "run_key", "values"}
        assert run["values"] == {KEY: run["value"]}
    assert f"minimum {KEY} = {doc['minimum']:g} (to 1 %: the target is crossed in " in text
    # two keys add the frontier
    code = main(["plan", str(folder / "a.h5"), "--policy", "g10", "--target", "0.5", "--vary", "gpu.memory_GiB",
                 "--range", "0.014:0.03", "--vary", KEY, "--range", "1:32", "--points", "2", "--tolerance", "0.05",
                 "--set", "host.memory_GiB=0", "--set", "fault.handler=profile", "--jobs", "1", "--no-progress",
                 "--json", "-"])
    doc2 = json.loads(capsys.readouterr().out)
    assert code == 0 and doc2["key"] == KEY and doc2["keys"] == ["gpu.memory_GiB", KEY]
    assert len(doc2["frontier"]) == 2 and set(doc2["frontier"][0]) >= {"gpu.memory_GiB", "minimum", "bracket"}


def test_a_warning_every_run_shares_is_said_once(folder, tmp_path, capsys):
    # link.generation is not modelled by G10 under default: every run warns the same
    code = main(["plan", str(folder / "a.h5"), "--policy", "g10", "--target", "0.99", "--vary", KEY,
                 "--range", "1:32", *sum((["--set", s] for s in SETS + ["link.generation=4"]), []),
                 "--jobs", "1", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 1 and "5 runs (5 new)" in out           # 0.99 is not reached in the range
    warns = [ln for ln in err.splitlines() if ln.startswith("g10sim: warning:")]
    assert len(warns) == 1 and "link.generation" in warns[0] and len(err.splitlines()) == 2
    assert "reaches the target 0.99" in err.splitlines()[1]
