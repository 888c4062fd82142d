"""A plug-in's exception is the plug-in's: exit 2, one line naming its file, ``Class.method`` and
the exception (``PluginError``), the traceback under ``--debug``; never "a bug in g10core" (exit 3)
nor "simulation failed" (exit 1)."""
from __future__ import annotations

import textwrap

import pytest

from g10core.uvm import evictors
from g10core.cli import main
from g10core.errors import EvictionRuleError, PluginError, ScoreFunctionError
from g10core.simulator import Simulator
from g10core.workload.synth import synthesize
from g10core.workload.trace import write_trace

GPU = ["--preset", "g10-artifact", "--set", "gpu.memory_GiB=0.012", "--set", "host.memory_GiB=0.03"]

PLUGIN = textwrap.dedent('''
    import numpy as np
    from g10core.policies import Policy, TensorPolicy, empty_hints


    class BadInit(Policy):
        name = "bad-init"

        def __init__(self, config=None):
            super().__init__(config)
            raise KeyError("no config today")


    class BadHints(Policy):
        name = "bad-hints"

        def hints(self, trace):
            return int("x")


    class BadPlan(Policy):
        name = "bad-plan"

        def plan(self, trace, config=None, *, hints=None, eviction=None):
            raise RuntimeError("cannot plan")


    class BadFactors(Policy):
        name = "bad-factors"

        def hand_tuned_factors(self, trace):
            raise AttributeError("no factors")


    class BadSimulate(TensorPolicy):
        name = "bad-simulate"

        def simulate(self, trace, hints=None):
            raise ZeroDivisionError("division by zero")

        def schedule(self, trace):
            raise IndexError("no schedule")


    class BadHintsSubclass(BadHints):
        name = "bad-hints-subclass"

        def hints(self, trace):
            return super().hints(trace)
''')

# class -> (method named, exception named)
CASES = {
    "BadInit": ("BadInit.__init__", "KeyError: 'no config today'"),
    "BadHints": ("BadHints.hints", "ValueError: invalid literal for int() with base 10: 'x'"),
    "BadPlan": ("BadPlan.plan", "RuntimeError: cannot plan"),
    "BadFactors": ("BadFactors.hand_tuned_factors", "AttributeError: no factors"),
    "BadSimulate": ("BadSimulate.simulate", "ZeroDivisionError: division by zero"),
    # the innermost plug-in method that raised is named, once
    "BadHintsSubclass": ("BadHints.hints", "ValueError: invalid literal"),
}


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "synth_training-b1.h5"
    write_trace(synthesize(40, 64 << 20, pattern="training", seed=1), path)
    return path


@pytest.fixture
def plugin_file(tmp_path):
    path = tmp_path / "my_policy.py"
    path.write_text(PLUGIN)
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("cls", list(CASES))
def test_a_plugins_exception_is_exit_2_naming_file_class_method_and_exception(trace_file, plugin_file, capsys, cls):
    method, exception = CASES[cls]
    code, out, err = run(capsys, "run", trace_file, "--policy", f"{plugin_file}:{cls}", *GPU)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "bug in g10core" not in err, err
    assert lines[0].startswith(f"g10sim: error: plug-in my_policy.py: {method} raised {exception}"), lines[0]


def test_the_plugins_traceback_is_shown_under_debug(trace_file, plugin_file, capsys):
    with pytest.raises(PluginError) as info:
        main(["run", str(trace_file), "--policy", f"{plugin_file}:BadHints", "--debug", *GPU])
    # the plug-in's own frame is in the chained traceback
    cause = info.value.__cause__
    assert isinstance(cause, ValueError)
    frames = []
    tb = cause.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    assert str(plugin_file) in frames


def test_hints_of_a_plugin_whose_schedule_raises_is_exit_2(trace_file, plugin_file, capsys, tmp_path):
    code, out, err = run(capsys, "hints", trace_file, "--policy", f"{plugin_file}:BadSimulate", "-o",
                         tmp_path / "h.h5", *GPU)
    assert code == 2 and err.strip() == ("g10sim: error: plug-in my_policy.py: BadSimulate.schedule raised "
                                         "IndexError: no schedule"), err


def test_the_python_api_raises_a_plugin_error_with_its_parts(trace_file, plugin_file):
    with pytest.raises(PluginError) as info:
        Simulator("g10-artifact").run(trace_file, f"{plugin_file}:BadPlan")
    e = info.value
    assert (e.path, e.what, e.error, e.reason) == ("my_policy.py", "BadPlan.plan", "RuntimeError", "cannot plan")
    assert isinstance(e, ValueError) and isinstance(e.__cause__, RuntimeError)
    import pickle

    assert str(pickle.loads(pickle.dumps(e))) == str(e)       # sweep workers send errors back


def test_a_class_defined_in_python_is_guarded_too(trace_file):
    from g10core.policies import Policy

    class Inline(Policy):
        name = "inline-bad"

        def hints(self, trace):
            raise LookupError("nothing")

    with pytest.raises(PluginError, match=r"^plug-in test_cli_plugin_errors.py: .*Inline.hints raised LookupError: "
                                          r"nothing$"):
        Simulator("g10-artifact").run(trace_file, Inline)


def test_builtin_policies_are_not_wrapped():
    from g10core import policies

    for name in policies.names():
        cls = policies.get(name)
        if cls.__module__.startswith("g10core."):
            for method in ("__init__", "hints", "plan", "simulate", "schedule"):
                assert not getattr(getattr(cls, method, None), "__g10core_guarded__", False), (name, method)


def test_an_eviction_rule_builder_a_plugin_registers_is_guarded(trace_file, tmp_path, capsys):
    def broken_builder(page_table, consts, arrays):
        raise TypeError("no evictor")

    evictors.register("broken-builder-test", "a plug-in's rule whose builder raises", broken_builder)
    try:
        with pytest.raises(PluginError, match=r"^plug-in test_cli_plugin_errors.py: .*broken_builder raised "
                                              r"TypeError: no evictor$"):
            Simulator("g10-artifact").run(trace_file, "base-uvm", eviction="broken-builder-test")
    finally:
        del evictors.EVICTORS["broken-builder-test"]


def test_a_failing_score_function_is_a_plugin_error(tmp_path):
    pytest.importorskip("numba")
    from g10core.config import preset

    trace = synthesize(64, 256 << 20, pattern="training", seed=0)
    path = tmp_path / "rule.py"
    path.write_text("def score(a, b, c, d, e, f, g):\n    return f // (b - b)\n")
    cfg = preset("g10-artifact").with_overrides({"gpu": {"memory_GiB": int(trace.tensor_pages.sum() * 0.4)
                                                         * 4096 / 2**30}, "run": {"iterations": 2}})
    with pytest.raises(ScoreFunctionError) as info:
        Simulator(cfg).run(trace, "base-uvm", eviction=f"{path}:score")
    e = info.value
    assert isinstance(e, PluginError) and isinstance(e, EvictionRuleError)
    assert (e.path, e.what, e.error) == ("rule.py", "score", "ZeroDivisionError")
    assert str(e).startswith(f"--eviction {path}:score: score(now_kernel=")
