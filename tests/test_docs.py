"""The documentation: the generated parameter reference and README's set-up commands.

Sphinx is not run here (``.ci/run`` builds the site with ``-W``); these call the generator
the site's build calls, and read README.md as text.
"""
import importlib.util
from pathlib import Path

from g10core.config import SECTIONS, parameters

ROOT = Path(__file__).resolve().parents[1]

# README's two set-up commands: CI's checks and users copy them, so they must stay byte-identical
MAIN_JOB = ('python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test,plot]" && '
            'g10sim reproduce fig11 --json fig11.json --plot fig11.png')
TESTS = 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test,plot,sweep,capture]" && pytest'


def _g10params():
    spec = importlib.util.spec_from_file_location("g10params", ROOT / "docs" / "_ext" / "g10params.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_parameter_reference_lists_every_key():
    text = _g10params().parameter_reference()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    keys = [line.split("|")[1].strip().strip("`") for line in rows]
    expected = [r["key"] for r in parameters()]
    assert keys == expected                     # every key once, in declaration order
    for section in SECTIONS:
        assert f"## `[{section}]`" in text


def test_parameter_reference_has_unit_default_range_and_description():
    text = _g10params().parameter_reference()
    row = next(line for line in text.splitlines() if line.startswith("| `gpu.memory_GiB`"))
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    assert cells[:4] == ["`gpu.memory_GiB`", "GiB", "`40`", "`(0, 65536]`"]
    assert "GPU memory" in cells[4]
    quirks = next(line for line in text.splitlines() if line.startswith("| `scheduler.artifact_quirks`"))
    assert "g10-artifact: `true`" in quirks


def test_parameter_page_has_the_marker():
    mod = _g10params()
    assert mod.MARKER in (ROOT / "docs" / "parameters.md").read_text()


def test_readme_keeps_the_setup_commands():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert MAIN_JOB in lines
    assert TESTS in lines


# ---- the API reference's docstrings (issue 32: numpydoc docstrings on the public API) ----------

def _api_objects():
    """(dotted name, object) of every auto* directive's target in docs/api.md and of each name in
    its ``:members:`` list."""
    import importlib
    import inspect
    import re
    import warnings

    lines = (ROOT / "docs" / "api.md").read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"\.\. auto(class|function|module)::\s+(\S+)", line.strip())
        if not m:
            continue
        kind, target = m.groups()
        members, j = [], i + 1
        while j < len(lines) and lines[j].startswith("   ") and lines[j].strip():
            if lines[j].strip().startswith(":members:") or members and not lines[j].strip().startswith(":"):
                members += [x.strip() for x in lines[j].split(":members:")[-1].split(",") if x.strip()]
            j += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            if kind == "module":
                obj = importlib.import_module(target)
            else:
                mod, _, name = target.rpartition(".")
                obj = getattr(importlib.import_module(mod), name)
                out.append((target, obj))
        out += [(f"{target}.{m}", inspect.getattr_static(obj, m)) for m in members]
    return out


def test_the_api_reference_lists_what_it_should():
    names = {n for n, _ in _api_objects()}
    assert {"g10core.simulator.Simulator", "g10core.simulator.Simulator.run", "g10core.results.Result",
            "g10core.workload.trace.Trace", "g10core.config.SimConfig", "g10core.policies.Policy",
            "g10core.workload.hints.write_hints", "g10core.experiments.sweep.run_sweep",
            "g10core.errors.ConfigError"} <= names


def test_every_api_object_has_a_docstring_and_every_function_with_arguments_its_sections():
    import inspect
    import re

    section = re.compile(r"^(Parameters|Returns|Yields)\n-{3,}$", re.M)
    no_doc, no_sections = [], []
    for name, obj in _api_objects():
        if isinstance(obj, property):
            obj = obj.fget
        obj = getattr(obj, "__func__", obj)
        doc = inspect.cleandoc(obj.__doc__ or "")
        if not doc:
            no_doc.append(name)
            continue
        if inspect.isfunction(obj) and not isinstance(obj, type):
            args = [p for p in inspect.signature(obj).parameters.values() if p.name not in ("self", "cls")]
            if args and not section.search(doc):
                no_sections.append(name)
    assert not no_doc, f"documented in docs/api.md without a docstring: {no_doc}"
    assert not no_sections, f"take arguments but have no numpydoc Parameters/Returns section: {no_sections}"
