"""`g10sim trace capture` and `g10sim reproduce llm` end to end."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from g10core.cli import main
from g10core.experiments.published import FIG11_POLICIES
from g10core.workload.trace import read_trace


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_capture_writes_a_valid_trace_with_provenance(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "gpt2.h5"
    code, stdout, err = run(capsys, "trace", "capture", "gpt2", "--size", "small", "--batch", "1",
                            "--seq-len", "16", "--optimizer", "sgd", "--dropout", "0", "-o", str(out), "--json", "-")
    assert code == 0 and err == ""
    info = json.loads(stdout)
    trace = read_trace(out)
    assert info["n_kernels"] == trace.n_kernels and info["path"] == str(out)
    assert trace.model == "gpt2-small" and trace.batch_size == 1
    assert trace.attrs["capture_seq_len"] == 16 and trace.attrs["capture_optimizer"] == "SGD"
    assert json.loads(trace.attrs["capture_model_config"])["dropout"] == 0.0
    assert "aten::native_dropout" not in set(trace.kernel_name.tolist())
    assert trace.attrs["capture_n_parameters"] == 124_439_808


def test_capture_human_output_has_units(tmp_path, capsys):
    pytest.importorskip("torch")
    code, stdout, _ = run(capsys, "trace", "capture", "bert-base", "--batch", "1", "--seq-len", "8", "--optimizer",
                          "sgd", "-o", str(tmp_path / "b.h5"))
    assert code == 0
    assert "bert-base (109,483,778 parameters)" in stdout and "GiB" in stdout and "(physical-v1)" in stdout


@pytest.mark.parametrize("argv,words", [
    (["gpt2", "--size", "xl"], "unknown size 'xl'"),
    (["gpt2", "--seq-len", "4096"], "learned positions up to 1024"),
    (["llama", "--dropout", "0.1"], "no dropout"),
    (["bert-base", "--dropout", "1.5"], "must be in [0, 1)"),
])
def test_capture_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, words):
    pytest.importorskip("torch")
    base = ["trace", "capture", *argv[:1], "--batch", "1", "-o", str(tmp_path / "x.h5")]
    if "--seq-len" not in argv:
        base += ["--seq-len", "8"]
    code, _, err = run(capsys, *base, *argv[1:])
    assert code == 2 and words in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x.h5").exists()


def test_capture_unknown_family_is_a_usage_error(tmp_path, capsys):
    code, _, err = run(capsys, "trace", "capture", "no-such-family", "--batch", "1", "--seq-len", "8", "-o",
                       str(tmp_path / "x.h5"))
    assert code == 2 and "invalid choice" in err


def test_capture_without_torch_says_how_to_install(tmp_path):
    # a fresh interpreter in which `import torch` fails
    code = ("import sys; sys.modules['torch'] = None\n"
            "from g10core.cli import main\n"
            f"sys.exit(main(['trace', 'capture', 'gpt2', '--batch', '1', '--seq-len', '8', '-o', "
            f"{str(tmp_path / 'x.h5')!r}]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "pip install 'g10core[capture]'" in proc.stderr
    assert proc.stdout == ""


def test_reproduce_llm_one_trace_json(traces_dir, capsys):
    code, stdout, err = run(capsys, "reproduce", "llm", "--models", "gpt2-small-s1024-b5", "--jobs", "1",
                            "--no-progress", "--traces", str(traces_dir), "--json", "-")
    assert code == 0, err
    doc = json.loads(stdout)
    rows = doc["rows"]
    from g10core.experiments.llm import llm_policies

    assert [r["policy"] for r in rows] == list(llm_policies())     # every registered policy
    assert [r["policy"] for r in rows][:len(FIG11_POLICIES)] == list(FIG11_POLICIES)
    assert all(r["refused"] is False for r in rows)
    assert all(r["model"] == "gpt2-small-s1024" and r["batch"] == 5 for r in rows)
    assert doc["meta"]["preset"] == "default"      # issue 33: LLMs have no published numbers


def test_reproduce_llm_table_and_bad_model(traces_dir, capsys):
    code, stdout, _ = run(capsys, "reproduce", "llm", "--models", "gpt2-small-s1024-b5", "--policies", "ideal",
                          "g10", "--jobs", "1", "--no-progress", "--traces", str(traces_dir))
    assert code == 0 and "| gpt2-small-s1024 | 5 | 37 % |" in stdout and "2 runs in" in stdout
    code, _, err = run(capsys, "reproduce", "llm", "--models", "gpt3-b1", "--no-progress")
    assert code == 2 and "not a shipped LLM trace" in err
