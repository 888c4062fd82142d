"""docs/tutorial.ipynb runs from top to bottom (nbclient, a fresh IPython kernel) and shows what it says.

Executed here rather than by the Sphinx build: a cell that raises fails this test with the cell's
traceback, and the site's build stays independent of Jupyter (the notebook is a download there).
"""
from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

import g10core

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "tutorial.ipynb"


def _outputs(cell) -> str:
    """The text and HTML a code cell showed."""
    parts = []
    for out in cell.get("outputs", ()):
        parts.append(out.get("text", ""))
        data = out.get("data", {})
        parts += [data.get("text/plain", ""), data.get("text/html", "")]
    return "\n".join(parts)


def test_tutorial_notebook_runs(tmp_path, monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")   # stored clean
    # the kernel (a subprocess, started in tmp_path) imports the g10core under test, wherever it is
    here = str(Path(g10core.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (here, os.environ.get("PYTHONPATH")))))
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    shown = [_outputs(c) for c in code]
    assert '<table class="g10core-result">' in shown[0] and "bert_base-b256" in shown[0]   # _repr_html_
    assert shown[1].startswith("Result(trace='bert_base-b256', policy='base-uvm', preset='default'")
    assert "12 of 12 runs done, 0 failed" in "\n".join(shown)
    assert any("image/png" in o.get("data", {}) for o in code[-1].outputs)                 # the plot
