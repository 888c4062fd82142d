"""`g10sim trace ...` end to end (in-process through cli.main, plus one real subprocess)."""
import json
import subprocess
import sys

import pytest
from conftest import SHIPPED_NAMES, assert_same_trace

from g10core import cli
from g10core.cli import build_parser, main
from g10core.workload.trace import read_trace


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---- info ---------------------------------------------------------------------------

def test_info_bert_256_json_matches_the_paper(traces_dir, capsys):
    # the acceptance numbers (G10 paper: M = 370 %; artifact: 1369 kernels, 7285 ms ideal)
    code, out, err = run(capsys, "trace", "info", str(traces_dir / "bert_base-b256.h5"), "--json", "-")
    assert code == 0 and err == ""
    info = json.loads(out)  # stdout is only the JSON
    assert info["n_kernels"] == 1369
    assert info["n_tensors"] == 1463
    assert round(info["footprint_GiB"], 1) == 148.0
    assert round(info["memory_ratio_percent"], 1) == 370.1
    assert round(info["ideal_time_s"], 3) == 7.285
    assert info["schema_version"] == 1
    assert info["gpu_memory_GiB"] == 40.0
    assert info["footprint_bytes"] == round(info["footprint_GiB"] * 2**30)
    assert 0 < info["global_bytes"] < info["footprint_bytes"]


def test_info_human_output_has_units(traces_dir, capsys):
    code, out, _ = run(capsys, "trace", "info", str(traces_dir / "bert_base-b256.h5"))
    assert code == 0
    assert "148.0 GiB" in out and "370.1 % of a 40 GiB GPU" in out and "7.285 s" in out
    assert "1369" in out and "1463 (156 global)" in out


def test_info_gpu_memory_option(traces_dir, capsys):
    code, out, _ = run(capsys, "trace", "info", str(traces_dir / "bert_base-b256.h5"),
                       "--gpu-memory-GiB", "80", "--json", "-")
    assert code == 0 and round(json.loads(out)["memory_ratio_percent"], 2) == 185.05


@pytest.mark.parametrize("value", ["0", "-1", "nan", "lots"])
def test_info_bad_gpu_memory_is_a_usage_error(traces_dir, capsys, value):
    code, _, err = run(capsys, "trace", "info", str(traces_dir / "bert_base-b256.h5"), "--gpu-memory-GiB", value)
    assert code == 2 and "--gpu-memory-GiB" in err and "Traceback" not in err


def test_info_several_traces_table_and_json_file(traces_dir, tmp_path, capsys):
    paths = [str(traces_dir / f"{n}.h5") for n in ("vit-b1280", "inceptionv3-b1536")]
    out_json = tmp_path / "info.json"
    code, out, _ = run(capsys, "trace", "info", *paths, "--json", str(out_json))
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 3 and "footprint" in lines[0]
    assert lines[1].startswith("vit-b1280.h5") and "GiB" in lines[1] and "%" in lines[1]
    infos = json.loads(out_json.read_text())
    assert [i["n_kernels"] for i in infos] == [1489, 929]
    assert not list(tmp_path.glob(".*.tmp"))


def test_info_missing_file_is_one_line(tmp_path, capsys):
    code, out, err = run(capsys, "trace", "info", str(tmp_path / "none.h5"))
    assert code == 2 and out == ""
    assert err == f"g10sim: error: {tmp_path / 'none.h5'}: no such trace file\n"


# ---- convert ---------------------------------------------------------------------------

def test_convert_one_to_a_file_and_to_a_folder(artifact_dir, tmp_path, capsys, load_shipped):
    out = tmp_path / "b.h5"
    code, text, _ = run(capsys, "trace", "convert", "--g10-artifact", str(artifact_dir),
                        "--model", "bert_base", "--batch", "256", "-o", str(out))
    assert code == 0 and text.startswith(f"wrote {out}: 1369 kernels, 1463 tensors, footprint 148.0 GiB")
    assert_same_trace(read_trace(out), load_shipped("bert_base-b256"))
    code, _, _ = run(capsys, "trace", "convert", "--g10-artifact", str(artifact_dir),
                     "--model", "vit", "--batch", "1280", "-o", str(tmp_path))
    assert code == 0 and (tmp_path / "vit-b1280.h5").is_file()


def test_convert_all(artifact_dir, tmp_path, capsys, traces_dir):
    out = tmp_path / "all"
    code, text, _ = run(capsys, "trace", "convert", "--g10-artifact", str(artifact_dir), "--all",
                        "-o", str(out), "--json", str(tmp_path / "report.json"))
    assert code == 0 and len(text.splitlines()) == 30
    assert sorted(p.stem for p in out.iterdir()) == sorted(SHIPPED_NAMES)
    report = json.loads((tmp_path / "report.json").read_text())
    assert len(report) == 30 and all(r["file_size_bytes"] > 0 for r in report)
    for name in SHIPPED_NAMES:
        assert_same_trace(read_trace(out / f"{name}.h5"), read_trace(traces_dir / f"{name}.h5"))


@pytest.mark.parametrize("extra,words", [
    (["--model", "bert_base"], "give --model and --batch, or --all"),
    (["--batch", "256"], "give --model and --batch, or --all"),
    (["--all", "--model", "vit"], "drop --model/--batch"),
    (["--model", "bert_base", "--batch", "999"], "no such workload folder"),
])
def test_convert_bad_selection(artifact_dir, tmp_path, capsys, extra, words):
    code, _, err = run(capsys, "trace", "convert", "--g10-artifact", str(artifact_dir), *extra,
                       "-o", str(tmp_path / "x.h5"))
    assert code == 2 and words in err and err.count("\n") == 1


def test_convert_not_an_artifact_folder(tmp_path, capsys):
    code, _, err = run(capsys, "trace", "convert", "--g10-artifact", str(tmp_path), "--all", "-o", str(tmp_path))
    assert code == 2 and "not a G10 artifact folder" in err


def test_convert_unknown_model_is_a_usage_error(tmp_path, capsys):
    code, _, err = run(capsys, "trace", "convert", "--g10-artifact", str(tmp_path), "--model", "gpt",
                       "--batch", "1", "-o", str(tmp_path / "x.h5"))
    assert code == 2 and "invalid choice: 'gpt'" in err


# ---- synth -----------------------------------------------------------------------------

def test_synth_writes_a_valid_deterministic_trace(tmp_path, capsys):
    args = ["trace", "synth", "--kernels", "50", "--footprint-GiB", "2", "--pattern", "random", "--seed", "4"]
    code, out, _ = run(capsys, *args, "-o", str(tmp_path / "a.h5"))
    assert code == 0 and "50 kernels" in out and "2.0 GiB" in out
    code, out, _ = run(capsys, *args, "-o", str(tmp_path / "b.h5"), "--json", "-")
    info = json.loads(out)
    assert info["n_kernels"] == 50 and info["footprint_bytes"] == 2 << 30
    a, b = read_trace(tmp_path / "a.h5"), read_trace(tmp_path / "b.h5")
    assert_same_trace(a, b)
    assert a.attrs["synth_seed"] == 4 and a.attrs["synth_pattern"] == "random"
    code, _, _ = run(capsys, "trace", "validate", str(tmp_path / "a.h5"))
    assert code == 0


@pytest.mark.parametrize("extra,words", [
    ([], "exactly one of --footprint-GiB and --footprint-bytes"),
    (["--footprint-bytes", "4096", "--footprint-GiB", "1"], "exactly one of"),
    (["--footprint-bytes", "4096"], "fewer than the"),
    (["--footprint-GiB", "1", "--global-fraction", "1.5"], "global_fraction = 1.5"),
])
def test_synth_bad_arguments(tmp_path, capsys, extra, words):
    code, _, err = run(capsys, "trace", "synth", "--kernels", "20", *extra, "-o", str(tmp_path / "s.h5"))
    assert code == 2 and words in err and err.count("\n") == 1
    assert not (tmp_path / "s.h5").exists()


# ---- the command framework ---------------------------------------------------------------

def test_usage_errors_and_help(capsys):
    assert run(capsys, )[0] == 2
    assert run(capsys, "trace")[0] == 2
    code, out, _ = run(capsys, "trace", "--help")
    assert code == 0 and "convert" in out and "validate" in out and "synth" in out
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("g10sim ")


def test_a_command_group_is_one_function_and_one_list_entry(monkeypatch, capsys):
    def add_hello_parser(subparsers):
        p = subparsers.add_parser("hello", help="say hi")
        p.add_argument("--fail", choices=("value", "bug"))

        def run_hello(args):
            if args.fail == "value":
                raise ValueError("bad\nvalue")
            if args.fail == "bug":
                raise RuntimeError("a bug keeps its traceback")
            print("hi")
            return 0
        p.set_defaults(func=run_hello)

    monkeypatch.setattr(cli, "COMMAND_GROUPS", cli.COMMAND_GROUPS + [add_hello_parser])
    assert "hello" in build_parser().format_help()
    assert run(capsys, "hello") == (0, "hi\n", "")
    assert run(capsys, "hello", "--fail", "value") == (2, "", "g10sim: error: bad value\n")
    with pytest.raises(RuntimeError):    # with --debug; without it, exit 3 and a report (test_cli_errors.py)
        main(["--debug", "hello", "--fail", "bug"])


def test_python_dash_m_is_the_same_command(traces_dir, tmp_path):
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5 at all")
    ok = subprocess.run([sys.executable, "-m", "g10core", "trace", "info", str(traces_dir / "vit-b256.h5"),
                         "--json", "-"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and json.loads(ok.stdout)["n_kernels"] == 1489
    fail = subprocess.run([sys.executable, "-m", "g10core", "trace", "validate", str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert fail.returncode == 2 and fail.stdout == ""
    assert fail.stderr == f"g10sim: error: {bad}: /: cannot open as HDF5: not an HDF5 file\n"

