"""No traceback reaches a user (issue 12 item 8).

A failed simulation (``SimulationError``, or any ``RuntimeError`` out of a
simulation) is one line and exit 1; an unexpected error anywhere is one line
``g10sim: internal error: ...`` naming a report file (traceback, command line,
version) in the system's temporary folder, and exit 3; ``--debug`` (or
``G10SIM_TRACEBACK=1``) shows the traceback instead.  Library functions are
monkeypatched to raise; ``cli.main`` runs in-process, plus one real subprocess.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from g10core import __version__, cli, simulator
from g10core.experiments import report
from g10core.experiments import ssdbench
from g10core.cli import main
from g10core.errors import ConfigError, SimulationError
from g10core.workload.synth import synthesize
from g10core.workload.trace import write_trace

SMALL = ["--set", "gpu.memory_GiB=0.012", "--set", "host.memory_GiB=0.03"]


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "synth_training-b1.h5"
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), path)
    return str(path)


@pytest.fixture
def report_dir(tmp_path, monkeypatch):
    """Internal-error reports go here (the system temp folder, as tempfile sees it)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.delenv("G10SIM_TRACEBACK", raising=False)
    return folder


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def single_line(err: str, prefix: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith(prefix) and "Traceback" not in err, err
    return lines[0]


def boom(*args, **kwargs):
    raise ZeroDivisionError("float division by zero")


# ---- a simulation that cannot complete: exit 1 ----------------------------------------------

def test_simulation_error_is_one_line_and_exit_1(trace_file, report_dir, monkeypatch, capsys):
    def stopped(self, trace, policy, hints=None, **kw):
        raise SimulationError("synth_training-b1 under g10: the replay stopped:\n t=8044029924 kernel=0")

    monkeypatch.setattr(simulator.Simulator, "run", stopped)
    code, out, err = run(capsys, "run", trace_file, "--policy", "g10", *SMALL)
    assert code == 1 and out == ""
    line = single_line(err, "g10sim: simulation failed: ")
    assert line.endswith("the replay stopped: t=8044029924 kernel=0")
    assert list(report_dir.iterdir()) == []                     # not a bug report


def test_a_runtime_error_of_the_compiled_replay_is_exit_1(trace_file, report_dir, monkeypatch, capsys):
    class Stuck:
        def __init__(self, *args):
            pass

        def run(self):
            raise RuntimeError("no progress within 10 ticks: t=20159 kernel=0")

    monkeypatch.setattr(simulator, "Replay", Stuck)
    code, out, err = run(capsys, "run", trace_file, "--policy", "base-uvm", *SMALL)
    assert code == 1 and out == ""
    line = single_line(err, "g10sim: simulation failed: ")
    assert "base-uvm" in line and "t=20159 kernel=0" in line
    assert list(report_dir.iterdir()) == []


def test_any_runtime_error_out_of_a_run_is_exit_1_naming_trace_and_policy(trace_file, report_dir, monkeypatch,
                                                                          capsys):
    def fails(self, trace, policy, hints=None, **kw):
        raise RuntimeError("std::bad_alloc")

    monkeypatch.setattr(simulator.Simulator, "run", fails)
    code, _, err = run(capsys, "run", trace_file, "--policy", "deepum", *SMALL)
    assert code == 1
    assert single_line(err, "g10sim: simulation failed: ") == \
        f"g10sim: simulation failed: {trace_file} under deepum: std::bad_alloc"


def test_hints_and_ssd_commands_fail_the_same_way(trace_file, tmp_path, report_dir, monkeypatch, capsys):
    def fails(*args, **kwargs):
        raise RuntimeError("scheduler gave up")

    monkeypatch.setattr(simulator, "policy_hints", fails)
    code, _, err = run(capsys, "hints", trace_file, "--policy", "g10", "-o", tmp_path / "h.h5", *SMALL)
    assert code == 1 and "scheduler gave up" in single_line(err, "g10sim: simulation failed: ")
    assert not (tmp_path / "h.h5").exists()

    monkeypatch.setattr(cli.ssd, "run_microbenchmark", fails)
    code, _, err = run(capsys, "ssd", "-q")
    assert code == 1 and single_line(err, "g10sim: simulation failed: ").endswith("SSD microbenchmark: scheduler gave up")


# ---- a bug: exit 3 with a report --------------------------------------------------------------

def test_an_unexpected_error_is_exit_3_with_a_report_file(trace_file, report_dir, monkeypatch, capsys):
    monkeypatch.setattr(report, "format_run_summary", boom)
    argv = ["run", trace_file, "--policy", "g10", *SMALL]
    code, out, err = run(capsys, *argv)
    assert code == 3 and out == ""
    line = single_line(err, "g10sim: internal error: ZeroDivisionError: float division by zero; ")
    assert "bug in g10core" in line and "--debug" in line
    reports = list(report_dir.iterdir())
    assert len(reports) == 1 and reports[0].name.startswith("g10sim-crash-") and str(reports[0]) in line
    text = reports[0].read_text()
    assert f"g10core {__version__}" in text and repr(["g10sim", *argv]) in text
    assert "Traceback (most recent call last)" in text and "ZeroDivisionError: float division by zero" in text
    assert "format_run_summary" in text or "boom" in text


def test_two_crashes_write_two_reports(report_dir, monkeypatch, capsys):
    monkeypatch.setattr(ssdbench, "closed_form_waf", boom)
    monkeypatch.setattr(cli.ssd, "run_microbenchmark", boom)
    assert run(capsys, "ssd", "-q")[0] == 3
    assert run(capsys, "ssd", "-q")[0] == 3
    assert len(list(report_dir.iterdir())) == 2


def test_an_unwritable_report_still_gives_one_line(trace_file, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "does-not-exist"))
    monkeypatch.delenv("G10SIM_TRACEBACK", raising=False)
    monkeypatch.setattr(report, "format_run_summary", boom)
    code, _, err = run(capsys, "run", trace_file, "--policy", "ideal", *SMALL)
    assert code == 3 and "could not write a report" in single_line(err, "g10sim: internal error: ")


def test_an_internal_error_in_a_command_group_is_exit_3(report_dir, monkeypatch, capsys):
    def add_crash_parser(subparsers):
        p = subparsers.add_parser("crash")
        p.set_defaults(func=lambda args: {}["missing"])

    monkeypatch.setattr(cli, "COMMAND_GROUPS", cli.COMMAND_GROUPS + [add_crash_parser])
    code, _, err = run(capsys, "crash")
    assert code == 3 and single_line(err, "g10sim: internal error: KeyError: 'missing'; ")
    assert len(list(report_dir.iterdir())) == 1


# ---- --debug and G10SIM_TRACEBACK show the traceback ------------------------------------------

@pytest.mark.parametrize("where", ["first", "last"])
def test_debug_raises_instead(trace_file, report_dir, monkeypatch, capsys, where):
    monkeypatch.setattr(report, "format_run_summary", boom)
    argv = ["run", trace_file, "--policy", "g10", *SMALL]
    argv = ["--debug", *argv] if where == "first" else [*argv, "--debug"]
    with pytest.raises(ZeroDivisionError):
        main(argv)
    assert list(report_dir.iterdir()) == []


def test_debug_shows_the_traceback_of_bad_input_and_failures(trace_file, report_dir, monkeypatch, capsys):
    with pytest.raises(ConfigError, match="gpu.memory_GiB"):
        main(["--debug", "run", trace_file, "--policy", "g10", "--set", "gpu.memory_GiB=-1"])

    def stopped(self, trace, policy, hints=None, **kw):
        raise SimulationError("the replay stopped")

    monkeypatch.setattr(simulator.Simulator, "run", stopped)
    with pytest.raises(SimulationError):
        main(["run", trace_file, "--policy", "g10", "--debug"])


def test_g10sim_traceback_env_is_an_alias_of_debug(trace_file, report_dir, monkeypatch):
    monkeypatch.setattr(report, "format_run_summary", boom)
    monkeypatch.setenv("G10SIM_TRACEBACK", "1")
    with pytest.raises(ZeroDivisionError):
        main(["run", trace_file, "--policy", "g10", *SMALL])


def test_debug_after_a_double_dash_is_an_argument(capsys, report_dir):
    # "--" ends the options: there "--debug" is a positional, here an extra trace path argparse refuses
    code, _, err = run(capsys, "trace", "info", "--", "--debug")
    assert code == 2 and single_line(err, "g10sim: error: ").startswith("g10sim: error: --debug")


def test_bad_input_is_still_one_line_exit_2(trace_file, report_dir, capsys):
    code, _, err = run(capsys, "run", trace_file, "--policy", "g10", "--set", "gpu.memory_GiB=-1")
    assert code == 2 and "gpu.memory_GiB" in single_line(err, "g10sim: error: ")
    assert list(report_dir.iterdir()) == []


# ---- a real process ---------------------------------------------------------------------------

def test_a_real_process_prints_one_line_and_writes_the_report(trace_file, tmp_path):
    script = ("import sys; import g10core.experiments.report as r\n"
              "def boom(*a, **k):\n    raise MemoryError('out of memory in a test')\n"
              "r.format_run_summary = boom\n"
              "from g10core.cli import main\n"
              f"sys.exit(main(['run', {trace_file!r}, '--policy', 'ideal']))\n")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    env.pop("G10SIM_TRACEBACK", None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 3 and done.stdout == ""
    line = single_line(done.stderr, "g10sim: internal error: MemoryError: out of memory in a test; ")
    reports = list(Path(tmp_path).glob("g10sim-crash-*.txt"))
    assert len(reports) == 1 and str(reports[0]) in line
    assert "MemoryError" in reports[0].read_text()


@pytest.mark.parametrize("argv", [
    ["bogus"],
    ["run"],
    ["sweep", "x.toml", "--jobs", "abc"],
    ["uvm-micro", "tlb", "--entries", "abc", "--ways", "8", "--pages", "10"],
    ["sweep", "status"],
])
def test_a_usage_error_is_one_line_and_exit_2(capsys, argv):
    # argparse printed its usage block first: 2-8 lines where every other bad input is one
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and ": error: " in lines[0] and lines[0].endswith("--help)"), err

