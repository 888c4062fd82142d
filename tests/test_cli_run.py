"""`g10sim run` and `g10sim hints` end to end (in-process through cli.main, plus one subprocess)."""
import json
import subprocess
import sys

import h5py
import numpy as np
import pytest

from g10core.cli import main
from g10core.workload.hints import read_hints, write_hints
from g10core.workload.synth import synthesize
from g10core.workload.trace import kernel_working_set_bytes, write_trace

GPU = ["--preset", "g10-artifact", "--set", "gpu.memory_GiB=0.012", "--set", "host.memory_GiB=0.03"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "synth_training-b1.h5"
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), path)
    return path


@pytest.fixture(scope="module")
def other_trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "synth_training-b2.h5"
    write_trace(synthesize(50, 64 << 20, pattern="training", seed=2), path)
    return path


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("g10sim: error: ") and "Traceback" not in err, err
    return lines[0]


def test_run_prints_a_short_summary(trace_file, capsys):
    code, out, err = run(capsys, "run", trace_file, "--policy", "g10", *GPU)
    assert code == 0 and err == ""
    assert "synth_training-b1 under g10 (preset g10-artifact" in out
    for text in ("iteration time", "x ideal", "faults (pages)", "host", "SSD->GPU", "GPU->host",
                 "compute", "overlap", "stall", "s wall"):
        assert text in out, text


def test_run_json_to_stdout_is_only_json(trace_file, capsys):
    code, out, err = run(capsys, "run", trace_file, "--policy", "base-uvm", *GPU, "--json", "-")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["policy"] == "base-uvm" and d["preset"] == "g10-artifact" and d["failed"] is False
    assert d["trace"]["path"] == str(trace_file) and d["trace"]["n_kernels"] == 40
    assert d["iteration_time_s"] == min(it["time_s"] for it in d["iterations"])
    assert set(d["iterations"][0]["traffic_pages"]) == {"ssd_to_gpu", "gpu_to_ssd", "host_to_gpu", "gpu_to_host"}
    assert "kernels" not in d


def test_run_json_file_with_kernels(trace_file, tmp_path, capsys):
    path = tmp_path / "r.json"
    code, out, _ = run(capsys, "run", trace_file, "--policy", "deepum", *GPU, "--json", path, "--kernels")
    assert code == 0 and "iteration time" in out
    d = json.loads(path.read_text())
    assert len(d["kernels"]["end_cycles"]) == 2 * 40


def test_set_overrides_reach_the_resolved_config(trace_file, capsys):
    code, out, _ = run(capsys, "run", trace_file, "--policy", "ideal", *GPU, "--set", "ssd.bandwidth_GBps=6.4",
                       "--json", "-")
    d = json.loads(out)
    assert code == 0
    assert d["config"]["ssd"]["bandwidth_GBps"] == 6.4 and d["config"]["gpu"]["memory_GiB"] == 0.012


def test_config_file_overrides_then_set(trace_file, tmp_path, capsys):
    toml = tmp_path / "c.toml"
    toml.write_text("[gpu]\nmemory_GiB = 0.02\n[host]\nmemory_GiB = 0.05\n")
    code, out, _ = run(capsys, "run", trace_file, "--policy", "base-uvm", "--config", toml,
                       "--set", "host.memory_GiB=0.04", "--json", "-")
    d = json.loads(out)
    assert code == 0 and d["config"]["gpu"]["memory_GiB"] == 0.02 and d["config"]["host"]["memory_GiB"] == 0.04


def test_config_with_an_unknown_key_is_one_line_and_exit_2(trace_file, tmp_path, capsys):
    toml = tmp_path / "bad.toml"
    toml.write_text("[gpu]\nmemroy_GiB = 80\n")
    code, out, err = run(capsys, "run", trace_file, "--policy", "g10", "--config", toml)
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert str(toml) in line and "unknown config key gpu.memroy_GiB" in line


@pytest.mark.parametrize("content, argv, text", [
    (b'preset = "bogus"\n', [], "preset = 'bogus', but this run's preset is 'default'"),
    (b'preset = "detailed"\n[gpu]\nmemory_GiB = 0.02\n', [], "choose the preset with --preset"),
    (b"\x89HDF\r\n\x1a\n", [], "not a text file (byte 0 is not UTF-8)"),
])
def test_a_config_file_naming_another_preset_or_not_text_is_refused(trace_file, tmp_path, capsys, content, argv,
                                                                    text):
    # a preset the file names was ignored (the run used another configuration), and a binary
    # file's error did not name it
    toml = tmp_path / "c.toml"
    toml.write_bytes(content)
    code, out, err = run(capsys, "run", trace_file, "--policy", "g10", "--config", toml, *argv)
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert line.startswith(f"g10sim: error: {toml}: ") and text in line, line


def test_a_config_file_naming_the_runs_preset_applies(trace_file, tmp_path, capsys):
    toml = tmp_path / "c.toml"
    toml.write_text('preset = "detailed"\n[gpu]\nmemory_GiB = 0.02\n')
    code, out, _ = run(capsys, "run", trace_file, "--policy", "base-uvm", "--preset", "detailed", "--config", toml,
                       "--json", "-")
    d = json.loads(out)
    assert code == 0 and d["preset"] == "detailed" and d["config"]["gpu"]["memory_GiB"] == 0.02


@pytest.mark.parametrize("argv, text", [
    (["--set", "gpu.memory_GiB=-1"], "gpu.memory_GiB = -1.0: must be > 0"),
    (["--set", "gpu.memory"], "expected section.key=value"),
    (["--set", "disk.size=3"], "unknown config section [disk]"),
    (["--preset", "fast"], "unknown preset 'fast'"),
])
def test_bad_config_values_are_one_line_and_exit_2(trace_file, capsys, argv, text):
    code, _, err = run(capsys, "run", trace_file, "--policy", "g10", *argv)
    assert code == 2 and text in one_error_line(err)


def test_a_gpu_smaller_than_the_largest_kernel_is_exit_2(trace_file, capsys):
    from g10core.workload.trace import read_trace

    ws = int(kernel_working_set_bytes(read_trace(trace_file)).max())
    code, out, err = run(capsys, "run", trace_file, "--policy", "g10", "--set", f"gpu.memory_GiB={ws / 2 / 2**30}")
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert "cannot fit: kernel" in line and f"needs {ws} B" in line


def test_a_trace_that_fails_validation_is_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5 at all")
    code, _, err = run(capsys, "run", bad, "--policy", "base-uvm")
    assert code == 2 and str(bad) in one_error_line(err)
    missing = tmp_path / "missing.h5"
    code, _, err = run(capsys, "run", missing, "--policy", "base-uvm")
    assert code == 2 and "missing.h5" in one_error_line(err)


def test_unknown_policy_or_none_is_exit_2(trace_file, capsys):
    code, _, err = run(capsys, "run", trace_file, "--policy", "lru")
    assert code == 2 and "unknown policy 'lru'" in one_error_line(err)
    code, _, err = run(capsys, "run", trace_file)
    assert code == 2 and "give --policy" in one_error_line(err)


def test_a_failed_run_prints_why_and_exits_1(trace_file, capsys):
    # FlashNeuron keeps every weight resident: a GPU just above the largest kernel cannot hold them
    code, out, err = run(capsys, "run", trace_file, "--policy", "flashneuron", "--set", "gpu.memory_GiB=0.0125",
                         "--json", "-")
    d = json.loads(out)
    assert code == 1 and d["failed"] is True and d["iteration_time_s"] is None
    assert "FlashNeuron cannot fit" in d["failure_reason"]
    # and the one line of an exit 1 on stderr, as for a run that raises
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"g10sim: simulation failed: {trace_file} under flashneuron: FlashNeuron cannot fit"), err


# ---- hints ----------------------------------------------------------------------------

def test_hints_round_trip_reproduces_the_policy_run(trace_file, tmp_path, capsys):
    hfile = tmp_path / "g10.h5"
    code, out, _ = run(capsys, "hints", trace_file, "--policy", "g10", *GPU, "-o", hfile)
    assert code == 0 and f"wrote {hfile}" in out and "hints of g10 for synth_training-b1" in out
    with h5py.File(hfile) as f:
        assert f.attrs["schema"] == "g10core-hints" and f.attrs["policy"] == "g10"
        assert int(f.attrs["trace_n_kernels"]) == 40
        n = f["hints"].shape[0]
    assert n > 0
    code, out, _ = run(capsys, "run", trace_file, "--policy", "g10", *GPU, "--json", "-")
    direct = json.loads(out)
    code, out, _ = run(capsys, "run", trace_file, "--hints", hfile, *GPU, "--json", "-")
    replayed = json.loads(out)
    assert code == 0 and replayed["policy"] == "g10"
    assert replayed["hints"]["source"] == "file" and replayed["hints"]["n_hints"] == n
    assert replayed["iterations"] == direct["iterations"]


def test_tensor_level_hints_replay_with_their_policy(trace_file, tmp_path, capsys):
    hfile = tmp_path / "host.h5"
    assert run(capsys, "hints", trace_file, "--policy", "g10-host", *GPU, "-o", hfile)[0] == 0
    direct = json.loads(run(capsys, "run", trace_file, "--policy", "g10-host", *GPU, "--json", "-")[1])
    replayed = json.loads(run(capsys, "run", trace_file, "--hints", hfile, *GPU, "--json", "-")[1])
    assert replayed["policy"] == "g10-host" and replayed["level"] == "tensor"
    assert replayed["iteration_time_s"] == direct["iteration_time_s"]


def test_hints_for_another_trace_are_refused(trace_file, other_trace_file, tmp_path, capsys):
    hfile = tmp_path / "h.h5"
    assert run(capsys, "hints", trace_file, "--policy", "deepum", *GPU, "-o", hfile)[0] == 0
    code, _, err = run(capsys, "run", other_trace_file, "--hints", hfile, *GPU)
    assert code == 2 and "made for a trace with 40 kernels" in one_error_line(err)


def test_a_hand_written_hint_file_is_validated_by_row(trace_file, tmp_path, capsys):
    rows = np.zeros(3, [("kernel", "<i8"), ("tensor", "<i8"), ("action", "<i8")])  # any integer widths
    rows[:] = [(0, 1, 0), (3, 2, 1), (4, 99_999, 0)]
    hfile = tmp_path / "mine.h5"
    write_hints(hfile, rows, policy="my-policy")
    assert read_hints(hfile).policy == "my-policy"
    code, _, err = run(capsys, "run", trace_file, "--hints", hfile, *GPU)
    line = one_error_line(err)
    assert code == 2 and "row 2, field tensor: tensor 99999 is out of range" in line and str(hfile) in line
    rows[2] = (4, 2, 0)
    write_hints(hfile, rows, policy="my-policy")
    code, out, _ = run(capsys, "run", trace_file, "--hints", hfile, *GPU, "--json", "-")
    d = json.loads(out)
    assert code == 0 and d["policy"] == "g10" and d["hints"]["policy"] == "my-policy"   # LRU for the rest


def test_a_file_that_is_not_a_hint_file_is_refused(trace_file, capsys):
    code, _, err = run(capsys, "run", trace_file, "--hints", trace_file, *GPU)
    assert code == 2 and "expected 'g10core-hints'" in one_error_line(err)


def test_python_dash_m_runs_the_same_command(trace_file):
    proc = subprocess.run([sys.executable, "-m", "g10core", "run", str(trace_file), "--policy", "ideal", "--json", "-"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["level"] == "ideal"


def test_eviction_lru_is_arrival_order_and_says_so(trace_file, capsys):
    # the artifact's "LRU" is FIFO by arrival: accepted under that name, but never silently
    code, out, err = run(capsys, "run", trace_file, "--policy", "base-uvm", "--eviction", "lru", *GPU, "--json", "-")
    assert code == 0 and json.loads(out)["metadata"]["eviction_override"] == "arrival"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("g10sim: warning: eviction rule 'lru' is "), err
    assert "'arrival'" in lines[0] and "not least recently used" in lines[0] and "least_recently_used.py" in lines[0]
    code, out, err = run(capsys, "run", trace_file, "--policy", "base-uvm", "--eviction", "arrival", *GPU, "--json", "-")
    assert code == 0 and err == ""


def test_one_iteration_warns_that_it_is_the_cold_start(trace_file, capsys):
    # run.iterations = 1 reported the cold start as the iteration time, silently
    code, out, err = run(capsys, "run", trace_file, "--policy", "g10", *GPU, "--set", "run.iterations=1")
    assert code == 0
    assert err == ("g10sim: warning: run.iterations = 1: the only iteration includes the cold start (the GPU "
                   "starts empty), so the time reported is not a steady-state iteration's; give run.iterations >= 2\n")
    line = next(line for line in out.splitlines() if "iteration time" in line)
    assert "(one iteration, which includes the cold start: not a steady-state time)" in line
    code, out, err = run(capsys, "run", trace_file, "--policy", "g10", *GPU, "--set", "run.iterations=2")
    assert code == 0 and err == "" and "cold start" in out
