"""Sphinx configuration of the g10core documentation (``sphinx-build -W -b html docs OUT``).

The site is MyST Markdown; the API reference is autodoc with numpydoc, so g10core must be
importable (``pip install -e ".[docs]"``); the parameter reference is generated from
``g10core.config`` at build time (``_ext/g10params.py``).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import g10core  # noqa: E402  (autodoc imports it anyway: fail here, early, when it is not installed)

project = "g10core"
author = "The g10core developers"
copyright = "2026, The g10core developers"
version = release = g10core.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "g10params",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: anchors for headings down to ###, so [text](page.md#a-heading) links resolve
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

# autodoc + numpydoc: members in source order; numpydoc lists no members of its own
# (the API page says which ones it documents)
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "furo"
html_title = f"g10core {release}"
html_static_path: list[str] = []
