"""Modules that moved into the package's wings stay importable by their old names (issue 32).

Each old path gives the very module at its new path, with a DeprecationWarning naming the new
path; a new path imports without any warning.
"""
from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from g10core._moved import MOVED, MOVED_NAMES, SPLIT


def test_every_old_name_has_moved_and_is_free():
    from pathlib import Path

    src = Path(importlib.import_module("g10core").__file__).parent
    for old, new in [*MOVED.items(), *((o, n) for o, parts in SPLIT.items() for n in parts)]:
        old_path = src.joinpath(*old.split("."))
        for stale in [old_path.with_suffix(".py"), old_path.with_suffix(".pyx"), old_path / "__init__.py",
                      *old_path.parent.glob(old_path.name + ".*.so")]:
            # (an old compiled module left behind would shadow its alias: delete it after a move)
            assert not stale.exists(), f"{stale} still exists beside its alias"
        assert importlib.util.find_spec(f"g10core.{new}") is not None, new


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_is_the_new_module_with_a_deprecation_warning(old):
    # a child, so that neither path is imported yet and the warning is raised afresh
    code = f"""
import warnings, importlib, sys
warnings.simplefilter("error")
new = importlib.import_module("g10core.{MOVED[old]}")          # no warning on the new path
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import g10core.{old} as alias
assert alias is new, (alias, new)
assert alias.__spec__.name == "g10core.{MOVED[old]}", alias.__spec__.name
assert sys.modules["g10core.{old}"] is new
msgs = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
assert any("g10core.{old} has moved to g10core.{MOVED[old]}" in m for m in msgs), msgs
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_from_package_import_old_name():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from g10core import hints, trace  # noqa: F401 (the users' spelling of README's examples)
    from g10core.workload import hints as new_hints, trace as new_trace

    assert trace is new_trace and hints is new_hints
    assert trace.write_trace is new_trace.write_trace and hints.write_hints is new_hints.write_hints


def test_the_public_api_users_write_still_imports():
    with pytest.warns(DeprecationWarning, match="g10core.evictors has moved to g10core.uvm.evictors"):
        from g10core.evictors import resolve as old_resolve  # noqa: F401 (README's spelling before issue 44)
    from g10core.uvm.evictors import resolve

    assert old_resolve is resolve
    from g10core.simulator import Simulator  # noqa: F401
    from g10core.cli import main  # noqa: F401


@pytest.mark.parametrize("old, name", sorted((old, name) for old, (_, names) in MOVED_NAMES.items() for name in names))
def test_a_name_that_left_a_module_is_found_there_with_a_deprecation_warning(old, name):
    # issue 44: the runner of `reproduce llm` left capture.llm for experiments.llm (and the twins'
    # comparison with the paper capture.twins for experiments.twins); the old spelling still works
    new_module, _ = MOVED_NAMES[old]
    new = getattr(importlib.import_module(f"g10core.{new_module}"), name)
    module = importlib.import_module(f"g10core.{old}")
    with pytest.warns(DeprecationWarning, match=f"g10core.{old}.{name} has moved to g10core.{new_module}.{name}"):
        alias = getattr(module, name)
    assert alias is new and name not in vars(module)      # an alias, not a second definition


def test_a_moved_name_is_gone_from_its_old_module_and_other_names_still_fail():
    from g10core._moved import moved_attribute

    for old, (new_module, names) in MOVED_NAMES.items():
        module = importlib.import_module(f"g10core.{old}")
        assert not set(names) & set(vars(module)), f"g10core.{old} still defines {set(names) & set(vars(module))}"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        moved_attribute("g10core.capture.llm", "nope")
    import g10core.capture.llm as llm

    with pytest.raises(AttributeError):
        llm.nope  # noqa: B018


def test_from_old_module_import_moved_name_warns():
    with pytest.warns(DeprecationWarning, match="has moved to g10core.experiments.llm.reproduce_llm"):
        from g10core.capture.llm import reproduce_llm
    from g10core.experiments.llm import reproduce_llm as new

    assert reproduce_llm is new


def test_a_compiled_module_at_its_old_path_is_the_extension_module():
    # issue 44 moved the compiled machine model into packages; the alias is the extension
    # module itself (its classes are the very classes, isinstance keeps working)
    code = """
import warnings, importlib.machinery
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    from g10core._ssd import SSDCore as old
    import g10core._replay as old_replay
from g10core.ssd._ssd import SSDCore
from g10core.uvm import _replay
assert old is SSDCore and old_replay is _replay
assert _replay.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), _replay.__file__
assert SSDCore.__module__ == "g10core.ssd._ssd", SSDCore.__module__
msgs = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
assert any("g10core._ssd has moved to g10core.ssd._ssd" in m for m in msgs), msgs
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_the_old_name_of_the_fault_handler_gives_its_names_with_a_warning():
    # ``g10core.uvm`` named the far-fault handler's module before it became the UVM driver's package
    from g10core.uvm import fault_handler

    with pytest.warns(DeprecationWarning, match="g10core.uvm.FaultHandlerSpec has moved to g10core.uvm.fault_handler"):
        from g10core.uvm import FaultHandlerSpec
    assert FaultHandlerSpec is fault_handler.FaultHandlerSpec
    with pytest.raises(ImportError):
        from g10core.uvm import no_such_name  # noqa: F401
    from g10core.uvm import _replay, evictors  # noqa: F401 (its submodules import as ever, without a warning)


def test_specs_pickle_by_their_new_names_and_old_pickles_still_load():
    # a sweep sends the config and its device specs to worker processes by pickle
    import pickle

    from g10core.config import preset
    from g10core.link.pcie import PcieSpec
    from g10core.uvm.fault_handler import FaultHandlerSpec

    cfg = preset("detailed")
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    for spec in (PcieSpec(), FaultHandlerSpec()):
        text = pickle.dumps(spec, protocol=0)             # GLOBAL opcodes name "module\nclass"
        assert spec.__class__.__module__.encode() + b"\n" in text
        assert pickle.loads(text) == spec
        # a pickle written before the move names the old module: it loads through the alias
        new = type(spec).__module__
        old = {"g10core.link.pcie": "g10core.pcie", "g10core.uvm.fault_handler": "g10core.fault_handler"}[new]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert pickle.loads(text.replace(new.encode() + b"\n", old.encode() + b"\n")) == spec


@pytest.mark.parametrize("old", sorted(SPLIT))
def test_a_split_module_answers_from_its_parts_with_a_deprecation_warning(old):
    # issue 44: slot_model's quotas went to uvm/slots.py, its inputs from a trace to
    # workload/slot_inputs.py; the old path gives every name of both, the very objects
    code = f"""
import warnings, importlib
warnings.simplefilter("error")
parts = [importlib.import_module("g10core." + p) for p in {SPLIT[old]!r}]   # no warning on the new paths
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import g10core.{old} as alias
    from g10core.{old} import ArtifactConstants, kernel_cycles, check_cycles_fit
msgs = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
assert any("g10core.{old} has been split into g10core.uvm.slots and g10core.workload.slot_inputs" in m
           for m in msgs), msgs
assert ArtifactConstants is parts[0].ArtifactConstants and kernel_cycles is parts[1].kernel_cycles
assert check_cycles_fit is parts[1].check_cycles_fit and alias.MAX_RUN_KERNEL_CYCLES == 1 << 60
assert {{"ArtifactConstants", "liveness", "physical_fault_params"}} <= set(alias.__all__)
try:
    alias.nope
except AttributeError as exc:
    assert "nope" in str(exc)
else:
    raise AssertionError("an unknown name resolved")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
