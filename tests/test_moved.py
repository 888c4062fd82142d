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

from g10core._moved import MOVED, MOVED_NAMES


def test_every_old_name_has_moved_and_is_free():
    from pathlib import Path

    src = Path(importlib.import_module("g10core").__file__).parent
    for old, new in MOVED.items():
        assert not (src / f"{old}.py").exists(), f"g10core/{old}.py still exists beside its alias"
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
    from g10core.evictors import resolve  # noqa: F401
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
