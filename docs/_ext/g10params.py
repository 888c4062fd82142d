"""The parameter reference, generated from ``g10core.config`` when the site is built.

``parameter_reference()`` walks ``SimConfig``'s sections and fields through the API that
``g10sim config show`` prints (``g10core.config.parameters``) and returns MyST Markdown: one
table per section with each key's unit, default, allowed range and description, and the
presets that set it to another value.  The Sphinx hook replaces the marker line
``{MARKER}`` of a page with it (``docs/parameters.md``), so the page can never list a key
the code does not have, or miss one.
"""
from __future__ import annotations

import re

MARKER = "<!-- g10-parameter-tables -->"

# Markdown punctuation that would start emphasis, a link, raw HTML or a table cell
_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def _escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text)


def _code(text: str) -> str:
    # a code span may not hold a bare "|" inside a table row
    return "`" + str(text).replace("|", "\\|") + "`"


def parameter_reference() -> str:
    """The parameter reference as MyST Markdown: one section and table per config section.

    Returns
    -------
    str
        Markdown text: for every section of ``g10core.config.SECTIONS`` a ``##`` heading
        and a table with the columns key, unit, default, range, description and presets
        (the presets whose value differs from the default).
    """
    from g10core.config import DEFAULT_PRESET, PRESETS, SECTIONS, parameters, preset, value_text

    rows = parameters(preset(DEFAULT_PRESET))
    others = {name: {r["key"]: r for r in parameters(preset(name))} for name in PRESETS if name != DEFAULT_PRESET}
    out = []
    for section in SECTIONS:
        these = [r for r in rows if r["key"].split(".", 1)[0] == section]
        out += [f"## `[{section}]`", "", f"{len(these)} keys.", "",
                "| key | unit | default | range | description | presets |",
                "|---|---|---|---|---|---|"]
        for r in these:
            if r.get("from_device") is not None and r["value"] is None:
                default = f"from `ssd.device` ({_escape(r['from_device'])}: {_code(value_text(r['device_value']))})"
            elif r.get("from_profile") is not None and r["value"] is None:
                default = (f"from `fault.batch_profile` ({_escape(r['from_profile'])}: "
                           f"{_code(value_text(r['profile_value']))})")
            else:
                default = _code(value_text(r["value"]))
            differs = []
            for name, theirs in others.items():
                v = theirs[r["key"]]["value"]
                if v != r["value"]:
                    differs.append(f"{_escape(name)}: {_code(value_text(v))}")
            out.append("| " + " | ".join([
                _code(r["key"]), _escape(r["unit"]) if r["unit"] not in ("", "1") else "–",
                default, _code(r["range"]), _escape(r["doc"]), "; ".join(differs) or "–"]) + " |")
        out.append("")
    return "\n".join(out)


def _source_read(app, docname, source):
    if MARKER in source[0]:
        source[0] = source[0].replace(MARKER, parameter_reference())


def setup(app):
    app.connect("source-read", _source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
