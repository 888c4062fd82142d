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
