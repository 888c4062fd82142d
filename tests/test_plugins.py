"""Policies from outside the package: ``--policy FILE.py:NAME`` and the ``g10core.policies`` entry points.

The shipped example (``g10core/examples/prefetch_next_inputs.py``) runs from the command line
by file and class name; a user's file that cannot give a policy is exit 2 with one line naming
the file and NAME; an installed plug-in is registered, a broken one is one warning line.
"""
from __future__ import annotations

import csv
import io
import json
import shutil
import sys
import warnings

import numpy as np
import pytest

from g10core import policies
from g10core.cli import main
from g10core.codes import HINT_TO_GPU
from g10core.errors import G10Warning, PolicyError
from g10core.examples import path as example_path
from g10core.workload.hints import read_hints
from g10core.workload.synth import synthesize
from g10core.workload.trace import ACCESS_READ, write_trace

GPU = ["--preset", "g10-artifact", "--set", "gpu.memory_GiB=0.012", "--set", "host.memory_GiB=0.03"]
EXAMPLE = "prefetch_next_inputs.py:PrefetchNextInputs"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("g10sim: error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "synth_training-b1.h5"
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), path)
    return path


# ---- FILE.py:NAME ------------------------------------------------------------------

@pytest.mark.parametrize("spec", [EXAMPLE, str(example_path("prefetch_next_inputs.py")) + ":PrefetchNextInputs"])
def test_the_example_policy_runs_from_the_command_line(trace_file, capsys, spec, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)          # by its bare name: found among the shipped examples
    code, out, err = run(capsys, "run", trace_file, "--policy", spec, *GPU, "--json", "-")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["policy"] == "prefetch-next-inputs" and d["level"] == "page" and d["failed"] is False
    assert d["hints"]["n_hints"] > 0
    code, out, err = run(capsys, "run", trace_file, "--policy", spec, *GPU)
    assert code == 0 and "synth_training-b1 under prefetch-next-inputs" in out


def test_the_example_prefetches_each_kernels_inputs_one_kernel_ahead(trace_file, capsys, tmp_path):
    out_h5 = tmp_path / "next.h5"
    code, out, err = run(capsys, "hints", trace_file, "--policy", EXAMPLE, "-o", out_h5, *GPU)
    assert code == 0 and err == "" and f"wrote {out_h5}" in out
    hf = read_hints(out_h5)
    assert hf.policy == EXAMPLE and hf.level == "page"
    from g10core.workload.trace import read_trace

    trace = read_trace(trace_file)
    K, off = trace.n_kernels, trace.access_offsets
    expect = []
    for k in range(K):
        nxt = (k + 1) % K
        rows = slice(off[nxt], off[nxt + 1])
        expect += [(k, int(t)) for t, m in zip(trace.access_tensor[rows], trace.access_mode[rows]) if m & ACCESS_READ]
    h = hf.hints
    assert np.all(h["action"] == HINT_TO_GPU)
    assert list(zip(h["kernel"].tolist(), h["tensor"].tolist())) == expect


def test_a_policy_file_gets_the_built_in_checks_and_is_registered_once(tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text("from g10core.policies import Policy, register\n\n"
                    "@register\nclass Mine(Policy):\n    name = 'mine'\n    eviction = 'belady'\n    apply_hints = False\n")
    cls = policies.get(f"{mine}:Mine")
    assert policies.get(f"{mine}:Mine") is cls and policies.get("mine") is cls and policies.level_of("mine") == "page"
    # an edited file is imported again; its class (registering itself again) replaces the old one
    mine.write_text(mine.read_text().replace("'belady'", "'arrival'") + "# edited\n")
    again = policies.get(f"{mine}:Mine")
    assert again is not cls and again.eviction == "arrival" and policies.get("mine") is again


@pytest.mark.parametrize("body, name, words", [
    (None, "Mine", "no such file"),
    ("x = 1\n", "Mine", "has no class 'Mine'"),
    ("class Mine:\n    name = 'mine'\n", "Mine", "Mine is not a Policy subclass"),
    ("Mine = 3\n", "Mine", "is a value of type int, not a Policy subclass"),
    ("1 / 0\n", "Mine", "cannot be imported: ZeroDivisionError: division by zero"),
    ("import sys\nsys.exit(3)\n", "Mine", "cannot be imported: SystemExit: 3"),
    ("from g10core.policies import Policy\nclass Mine(Policy):\n    name = 'g10'\n", "Mine",
     "its name 'g10' is taken by the built-in policy 'g10'"),
    ("from g10core.policies import Policy\nclass Mine(Policy):\n    name = 'mine'\n    eviction = 'lfu'\n", "Mine",
     "unknown eviction rule 'lfu'"),
    ("from g10core.policies import Policy\nclass Mine(Policy):\n    name = 'mine'\n    level = 'block'\n", "Mine",
     "level must be 'page', 'tensor' or 'ideal'"),
    ("from g10core.policies import Policy\nclass Mine(Policy):\n    pass\n", "Mine", "policy name '' missing"),
    ("x = 1\n", "not-a-name", "'not-a-name' is not a class name (expected FILE.py:NAME)"),
])
def test_a_bad_policy_file_is_exit_2_naming_file_and_name(trace_file, capsys, tmp_path, body, name, words):
    bad = tmp_path / "bad_policy.py"
    if body is not None:
        bad.write_text(body)
    spec = f"{bad}:{name}"
    with pytest.raises(PolicyError, match="^policy " + spec.replace(".", r"\.") + ": ") as info:
        policies.get(spec)
    assert words in str(info.value)
    for argv in (["run", trace_file, "--policy", spec, *GPU], ["hints", trace_file, "--policy", spec, "-o",
                                                               tmp_path / "h.h5", *GPU]):
        code, out, err = run(capsys, *argv)
        line = one_error_line(err)
        assert code == 2 and out == "" and str(bad) in line and name in line and words in line


def test_a_sweep_runs_a_policy_file_relative_to_the_sweep_file(trace_file, capsys, tmp_path):
    folder = tmp_path / "study"
    folder.mkdir()
    shutil.copyfile(trace_file, folder / "a.h5")
    shutil.copyfile(example_path("prefetch_next_inputs.py"), folder / "my.py")
    (folder / "s.toml").write_text('preset = "g10-artifact"\ntraces = ["a.h5"]\npolicies = ["base-uvm", "my.py:PrefetchNextInputs"]\n'
                                   '[set]\n"gpu.memory_GiB" = 0.012\n"host.memory_GiB" = 0.03\n')
    out = tmp_path / "out"
    code, text, err = run(capsys, "sweep", folder / "s.toml", "--out", out, "--jobs", "1", "--no-progress")
    assert code == 0, err
    assert "2 of 2 runs done, 0 failed" in text
    code, text, err = run(capsys, "sweep", "export", out, "-o", "-")
    rows = {r["policy"]: r for r in csv.DictReader(io.StringIO(text))}
    assert set(rows) == {"base-uvm", "my.py:PrefetchNextInputs"} and rows["my.py:PrefetchNextInputs"]["failed"] == "False"
    # the same run as `g10sim run`
    code, text, err = run(capsys, "run", folder / "a.h5", "--policy", f"{folder / 'my.py'}:PrefetchNextInputs", *GPU,
                          "--json", "-")
    assert float(rows["my.py:PrefetchNextInputs"]["time_s"]) == json.loads(text)["iteration_time_s"]
    # runs are keyed by the file's content: an edited policy file runs again
    key = rows["my.py:PrefetchNextInputs"]["run_key"]
    (folder / "my.py").write_text((folder / "my.py").read_text() + "\n# edited\n")
    code, text, err = run(capsys, "sweep", folder / "s.toml", "--out", out, "--jobs", "1", "--no-progress")
    keys = [json.loads(line)["run_key"] for line in (out / "runs.jsonl").read_text().splitlines()]
    assert code == 0 and len(keys) == 3 and keys[1] == key and keys[2] != key     # base-uvm did not run again


def test_a_sweep_refuses_a_bad_policy_file_naming_the_line(tmp_path, trace_file, capsys):
    shutil.copyfile(trace_file, tmp_path / "a.h5")
    (tmp_path / "s.toml").write_text('traces = ["a.h5"]\npolicies = ["g10",\n  "missing.py:Mine"]\n')
    code, out, err = run(capsys, "sweep", tmp_path / "s.toml", "--out", tmp_path / "out", "--no-progress")
    line = one_error_line(err)
    assert code == 2 and "policy 'missing.py:Mine' (line 3): no such file" in line
    assert not (tmp_path / "out" / "runs.jsonl").exists()


# ---- names: did you mean ---------------------------------------------------------------

def test_a_mistyped_policy_or_trace_name_gets_a_suggestion(trace_file, capsys):
    code, _, err = run(capsys, "run", trace_file, "--policy", "G10", *GPU)
    line = one_error_line(err)
    assert code == 2 and "unknown policy 'G10'; known: base-uvm, " in line and line.endswith("did you mean 'g10'?")
    code, _, err = run(capsys, "run", "bert-b256", "--policy", "g10")
    line = one_error_line(err)
    assert code == 2 and "bert-b256: no such trace file" in line and "did you mean 'bert_base-b256'?" in line
    code, _, err = run(capsys, "run", trace_file, "--policy", "zzzz", *GPU)
    assert code == 2 and "did you mean" not in one_error_line(err)


# ---- entry points --------------------------------------------------------------------

PLUGIN = '''\
from g10core.policies import Policy


class DemoNext(Policy):
    """Demand paging, Belady's eviction: a plug-in needs no more than a name and a level."""

    name = "demo-next"
    level = "page"
    eviction = "belady"
    apply_hints = False
'''


@pytest.fixture
def installed_plugins(tmp_path, monkeypatch):
    """A package installed on sys.path (a dist-info folder) declaring a good and two broken policies."""
    site = tmp_path / "site"
    dist = site / "g10plug_demo-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: g10plug-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[g10core.policies]\ndemo-next = g10plug_demo:DemoNext\n"
                                           "broken = g10plug_missing:Nope\nmisnamed = g10plug_demo:DemoNext\n")
    (site / "g10plug_demo.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(policies, "_PLUGINS_LOADED", False)
    yield site
    sys.modules.pop("g10plug_demo", None)


def test_an_installed_plugin_is_registered_and_a_broken_one_is_one_warning(installed_plugins):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        known = policies.names()
    assert "demo-next" in known and "broken" not in known and "misnamed" not in known
    cls = policies.get("demo-next")
    assert cls.__module__ == "g10plug_demo" and policies.level_of("demo-next") == "page"
    texts = sorted(str(w.message) for w in caught if issubclass(w.category, G10Warning))
    assert len(texts) == 2, texts
    assert texts[0].startswith("policy plug-in 'broken' (g10plug_missing:Nope, from g10plug-demo) left out: "
                               "ModuleNotFoundError")
    assert texts[1].startswith("policy plug-in 'misnamed' (g10plug_demo:DemoNext, from g10plug-demo) left out: ")
    assert "the class's name is 'demo-next'" in texts[1]
    # read once per process
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        policies.names()
    assert not again


def test_an_installed_plugin_runs_from_the_command_line(installed_plugins, trace_file, capsys):
    code, out, err = run(capsys, "run", trace_file, "--policy", "demo-next", *GPU, "--json", "-")
    assert code == 0 and json.loads(out)["policy"] == "demo-next"
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("g10sim: warning: policy plug-in '") for line in lines), err
    assert "'broken'" in lines[0] and "'misnamed'" in lines[1] and "Traceback" not in err
    # the same numbers as the built-in it copies
    code, out2, _ = run(capsys, "run", trace_file, "--policy", "belady", *GPU, "--json", "-")
    assert json.loads(out)["iteration_time_s"] == json.loads(out2)["iteration_time_s"]


def test_plugins_pass_the_registration_checks(monkeypatch):
    class EP:                         # what importlib.metadata.entry_points returns, as far as used
        def __init__(self, name, obj):
            self.name, self.value, self.dist, self._obj = name, f"pkg:{name}", None, obj

        def load(self):
            return self._obj

    from g10core.policies import Policy

    class BadEviction(Policy):
        name = "bad-eviction"
        eviction = "lfu"

    class Taken(Policy):
        name = "g10"

    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [EP("bad-eviction", BadEviction), EP("g10", Taken), EP("three", 3)])
    monkeypatch.setattr(policies, "_PLUGINS_LOADED", False)
    with pytest.warns(G10Warning) as caught:
        known = policies.names()
    assert "bad-eviction" not in known and policies.get("g10") is not Taken
    texts = sorted(str(w.message) for w in caught)
    assert "unknown eviction rule 'lfu'" in texts[0] and "'bad-eviction'" in texts[0]
    assert "is taken by the built-in policy 'g10'" in texts[1]
    assert "'three'" in texts[2] and "not a Policy subclass" in texts[2]


def test_a_sweep_warns_of_a_broken_plugin_once_not_per_worker(installed_plugins, trace_file, capfd, tmp_path):
    # (capfd: the workers are processes that write to file descriptor 2)
    shutil.copyfile(trace_file, tmp_path / "a.h5")
    (tmp_path / "s.toml").write_text('preset = "g10-artifact"\ntraces = ["a.h5"]\npolicies = ["demo-next", "base-uvm"]\n'
                                     '[set]\n"gpu.memory_GiB" = 0.012\n"host.memory_GiB" = 0.03\n')
    code, out, err = run(capfd, "sweep", tmp_path / "s.toml", "--out", tmp_path / "out", "--jobs", "2",
                         "--no-progress")
    assert code == 0 and "2 of 2 runs done, 0 failed" in out
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("g10sim: warning: policy plug-in '") for line in lines), err
