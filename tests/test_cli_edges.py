"""Rough edges of the command line (issue 43): each one line of output or one exit status a user
reads, checked end to end through ``g10sim``."""
from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from g10core import gpus, policies
from g10core.cli import build_parser, main
from g10core.codes import ROLE_NAMES

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, err
    return lines[0]


# ---- g10sim policies, and --policy's help from the registry -------------------------------------

def test_policies_lists_every_registered_policy_one_line_each(capsys):
    code, out, err = run(capsys, "policies")
    assert code == 0 and err == ""
    lines = out.strip().splitlines()
    names = policies.names()
    assert [ln.split()[0] for ln in lines] == names
    for ln, name in zip(lines, names):
        assert ln.split()[1] == policies.get(name).level
    code, out, _ = run(capsys, "policies", "--json", "-")
    rows = json.loads(out)
    assert code == 0 and [r["name"] for r in rows] == names
    assert all(r["builtin"] and r["description"] for r in rows if r["source"].startswith("g10core."))


def test_a_plugin_shows_in_the_listing_as_one(capsys):
    class ListedPlugin(policies.Policy):
        name = "listed-plugin-test"
        description = "a test's policy"

    policies.register(ListedPlugin)
    try:
        code, out, _ = run(capsys, "policies")
        line = next(ln for ln in out.splitlines() if ln.startswith("listed-plugin-test "))
        assert code == 0 and "a test's policy [plug-in test_cli_edges:" in line
    finally:
        del policies.REGISTRY["listed-plugin-test"]


def _subparser(*path):
    parser = build_parser()
    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


@pytest.mark.parametrize("command", [("run",), ("hints",), ("plan",)])
def test_policy_help_names_every_builtin_policy(command):
    text = " ".join(_subparser(*command).format_help().split())
    builtin = [n for n in policies.names() if policies.get(n).__module__.startswith("g10core.")]
    missing = [n for n in builtin if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)]
    assert not missing, missing
    assert "g10sim policies" in text


def test_the_command_reproduce_llm_help_names_exists(capsys):
    assert "g10sim policies" in " ".join(_subparser("reproduce", "llm").format_help().split())
    assert main(["policies"]) == 0


def _all_parsers(parser, path=()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _all_parsers(sub, path + (name,))


def test_no_help_text_shows_an_escaped_percent():
    bad = [" ".join(path) for path, p in _all_parsers(build_parser()) if "%%" in p.format_help()]
    assert not bad, bad


# ---- --gpu -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, first", [("H100-80GB", "H100-"), ("h100-pcie-80gb", "H100-PCIe"),
                                         ("A100-80G", "A100-80GB"), ("RTX 4090", "RTX-4090"), ("H100", "H100-SXM")])
def test_an_unknown_gpu_suggests_its_family_first(name, first):
    close = gpus.suggestions(name)
    assert close and close[0].startswith(first), close
    fam = gpus.family(name)
    assert all(gpus.family(c) == fam for c in close) or name in gpus.ALIASES


def test_h100_80gb_is_not_offered_an_a100(capsys):
    code, out, err = run(capsys, "run", "bert_base-b256", "--policy", "ideal", "--gpu", "H100-80GB")
    line = one_error_line(err)
    assert code == 2 and "did you mean 'H100-SXM' or 'H100-PCIe'?" in line and "A100-80GB'?" not in line


def test_a_gpu_models_link_is_not_reported_as_ignored():
    from g10core.policies.modelled import ignored_parameters
    from g10core.simulator import resolve_config

    for name in gpus.GPUS:
        cfg = resolve_config("default", None, [f"gpu.model={name}"])
        ignored = ignored_parameters(cfg, "g10")
        assert not {"link.generation", "link.lanes", "gpu.sms"} & set(ignored), (name, ignored)
    # a link bandwidth set apart from the model's: the generation is then not what the run models
    cfg = resolve_config("default", None, ["gpu.model=H100-SXM", "link.bandwidth_GBps=20"])
    assert "link.generation" in ignored_parameters(cfg, "g10")
    cfg = resolve_config("default", None, ["link.generation=5"])
    assert "link.generation" in ignored_parameters(cfg, "g10")


def test_a_gpu_run_warns_of_nothing_its_model_set(capsys):
    code, out, err = run(capsys, "run", "bert_base-b256", "--policy", "g10", "--gpu", "H100-SXM",
                         "--set", "run.iterations=2", "--json", "-")
    assert code == 0 and "link.generation" not in err and "gpu.sms" not in err, err


@pytest.mark.parametrize("argv, both", [
    (["--gpu", "H100-SXM", "--set", "gpu.model=B200"], ("--gpu H100-SXM", "gpu.model=B200")),
    (["--gpu", "H100-SXM", "--gpu", "B200"], ("'H100-SXM'", "'B200'")),
    (["--policy", "g10", "--policy", "deepum"], ("'g10'", "'deepum'")),
    (["--preset", "default", "--preset", "g10-artifact"], ("'default'", "'g10-artifact'")),
])
def test_two_values_for_one_setting_are_refused_naming_both(capsys, argv, both):
    code, out, err = run(capsys, "run", "bert_base-b256", *(["--policy", "ideal"] if "--policy" not in argv else []),
                         *argv)
    line = one_error_line(err)
    assert code == 2 and out == "" and all(b in line for b in both), line


def test_the_same_value_twice_is_accepted(capsys):
    code, out, err = run(capsys, "run", "bert_base-b256", "--policy", "ideal", "--policy", "ideal",
                         "--gpu", "H100-SXM", "--set", "gpu.model=H100-SXM", "--json", "-")
    assert code == 0 and json.loads(out)["config"]["gpu"]["model"] == "H100-SXM"


def test_plan_refuses_two_policies(capsys):
    code, out, err = run(capsys, "plan", "bert_base-b256", "--policy", "g10", "--policy", "deepum",
                         "--target", "0.5", "--vary", "ssd.bandwidth_GBps")
    assert code == 2 and "--policy given twice ('g10' and 'deepum')" in one_error_line(err)


# ---- import-torch ------------------------------------------------------------------------------

def test_import_torch_checks_the_output_before_reading_the_profile(capsys, tmp_path):
    # the profile files do not exist: the refusal names the output, so it came first
    for out_path, reason in ((tmp_path / "no" / "such" / "x.h5", "no such folder"), (tmp_path, "is a folder")):
        code, out, err = run(capsys, "trace", "import-torch", "--et", tmp_path / "missing.et.json",
                             "--kineto", tmp_path / "missing.kineto.json", "-o", out_path)
        line = one_error_line(err)
        assert code == 2 and reason in line and "missing" not in line, line


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    """(ET, Kineto) of one MLP training iteration and of one forward-only (inference) pass, on the CPU."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile

    d = tmp_path_factory.mktemp("prof")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def train():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    def infer():
        with torch.no_grad():
            model(x)

    out = {}
    for name, step in (("train", train), ("infer", infer)):
        step()
        et = ExecutionTraceObserver().register_callback(str(d / f"{name}.et.json"))
        try:
            with profile(activities=[ProfilerActivity.CPU], record_shapes=True, execution_trace_observer=et) as prof:
                step()
            prof.export_chrome_trace(str(d / f"{name}.kineto.json"))
        finally:
            et.unregister_callback()
        out[name] = (d / f"{name}.et.json", d / f"{name}.kineto.json")
    return out


def test_the_import_summary_reports_the_roles_the_file_stores(profiles, tmp_path, capsys):
    from g10core.workload.trace import read_trace

    et, kin = profiles["train"]
    path = tmp_path / "m.h5"
    code, out, err = run(capsys, "trace", "import-torch", "--et", et, "--kineto", kin, "-o", path)
    assert code == 0 and err == ""
    stored = Counter(ROLE_NAMES[int(c)] for c in read_trace(path).tensor_role)
    said = dict((name, int(n)) for n, name in re.findall(r"(\d+) (\w+)", out.split(" tensors (", 1)[1].split(")")[0]))
    assert said == {k: v for k, v in stored.items() if v}
    code, out, _ = run(capsys, "trace", "import-torch", "--et", et, "--kineto", kin, "-o", path, "--json", "-")
    assert json.loads(out)["tensor_roles"] == said


def test_an_inference_profile_is_imported_with_a_warning(profiles, tmp_path, capsys):
    et, kin = profiles["infer"]
    code, out, err = run(capsys, "trace", "import-torch", "--et", et, "--kineto", kin, "-o", tmp_path / "i.h5")
    lines = err.strip().splitlines()
    assert code == 0 and len(lines) == 1 and lines[0].startswith("g10sim: warning: infer.et.json: the profile has "
                                                                 "no backward pass"), err
    assert "an inference profile, imported as one forward pass" in lines[0]
    from g10core.workload.trace import read_trace
    assert read_trace(tmp_path / "i.h5").kernel_phase.tolist() == [0] * read_trace(tmp_path / "i.h5").n_kernels
    et, kin = profiles["train"]
    code, out, err = run(capsys, "trace", "import-torch", "--et", et, "--kineto", kin, "-o", tmp_path / "t.h5")
    assert code == 0 and err == ""
    assert read_trace(tmp_path / "t.h5").kernel_phase is None


# ---- docs that quote the code -------------------------------------------------------------------

def test_the_policy_guide_lists_every_builtin_policy_at_its_level():
    text = (ROOT / "docs" / "guide" / "policies.md").read_text()
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| (`[^|]+`) \| [^|]+ \| (page|tensor|—) \|", line)
        if m:
            for name in re.findall(r"`([\w-]+)`", m[1]):
                rows[name] = m[2]
    builtin = {n: policies.get(n).level for n in policies.names() if policies.get(n).__module__.startswith("g10core.")}
    assert set(rows) == set(builtin)
    assert all(rows[n] == (lvl if lvl != "ideal" else "—") for n, lvl in builtin.items())
