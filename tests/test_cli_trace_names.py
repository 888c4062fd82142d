"""Commands take shipped traces by name from any directory; `g10sim trace list`."""
import json
import shutil

import pytest
from conftest import SHIPPED_ALL_NAMES, SHIPPED_LLM_NAMES, SHIPPED_NAMES

from g10core.workload import tracestore
from g10core.cli import main


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(tracestore.ENV_TRACES_DIR, raising=False)
    return tmp_path


def test_trace_list_json_has_every_shipped_trace(elsewhere, capsys):
    assert main(["trace", "list", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == sorted(SHIPPED_ALL_NAMES)
    bert = next(r for r in rows if r["name"] == "bert_base-b256")
    assert (bert["model"], bert["batch_size"], bert["n_kernels"], bert["n_tensors"]) == ("bert_base", 256, 1369, 1463)
    assert round(bert["footprint_bytes"] / 2**30, 1) == 148.0 and bert["shipped"] is True
    assert bert["path"] == str(tracestore.shipped_dir() / "bert_base-b256.h5")


def test_trace_list_text_and_user_traces(elsewhere, capsys, monkeypatch):
    shutil.copyfile(tracestore.shipped_dir() / "vit-b256.h5", elsewhere / "mine-b7.h5")
    monkeypatch.setenv(tracestore.ENV_TRACES_DIR, str(elsewhere))
    assert main(["trace", "list"]) == 0
    out = capsys.readouterr().out
    assert "bert_base-b256" in out and "1369" in out and "148.0 GiB" in out
    assert f"mine-b7 " in out and str(elsewhere / "mine-b7.h5") in out and f"{len(SHIPPED_ALL_NAMES) + 1} traces" in out


@pytest.mark.parametrize("argv", [["trace", "info", "bert_base-b256", "--json", "-"],
                                  ["trace", "info", "bert_base-b256.h5", "--json", "-"]])
def test_info_by_name(elsewhere, capsys, argv):
    assert main(argv) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["n_kernels"] == 1369 and info["path"] == str(tracestore.shipped_dir() / "bert_base-b256.h5")


def test_validate_run_and_hints_by_name(elsewhere, capsys):
    assert main(["trace", "validate", "vit-b256", "inceptionv3-b512"]) == 0
    assert capsys.readouterr().out.count("ok ") == 2
    assert main(["run", "bert_base-b256", "--policy", "ideal", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["iteration_time_s"] == pytest.approx(7.285, abs=1e-3)
    assert main(["hints", "bert_base-b256", "--policy", "g10", "-o", "h.h5"]) == 0
    assert "2,660 hints of g10" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["trace", "info", "nope-b1"], ["trace", "validate", "nope-b1"],
                                  ["run", "nope-b1", "--policy", "g10"], ["hints", "nope-b1", "--policy", "g10",
                                                                          "-o", "h.h5"]])
def test_an_unknown_name_is_one_line_naming_it_and_how_to_list(elsewhere, capsys, argv):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("g10sim: error: nope-b1: no such trace file")
    assert "g10sim trace list" in err and "Traceback" not in err


def test_the_docs_count_the_shipped_traces_as_trace_list_does():
    # README said "the 30 traces" where `g10sim trace list` shows 38 (30 published + 8 LLMs)
    import re
    from pathlib import Path

    total, published, llms = len(SHIPPED_ALL_NAMES), len(SHIPPED_NAMES), len(SHIPPED_LLM_NAMES)
    texts = {"README.md": (Path(__file__).resolve().parents[1] / "README.md").read_text(),
             "tracestore.py": tracestore.__doc__}
    for name, text in texts.items():
        text = " ".join(text.split())
        counts = [int(n) for n in re.findall(r"\b(\d+) (?:shipped )?traces\b(?! of the published)", text)]
        assert counts and all(n == total for n in counts), (name, counts)
        assert f"{published} published workloads" in text and f"{llms} captured LLMs" in text, name
