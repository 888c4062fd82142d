"""The physical model's validation table: it cannot drift, and the docs page shows what the code computes.

The golden numbers (tests/data/validation_expected.json) are our predictions at the commit that
introduced physical-v1.  A change that moves the model on purpose regenerates them with

    python -c "import tests.test_validation as t; t.regenerate()"

and records the move (rows before and after) in the changelog.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from g10core.capture.validation import MEASUREMENTS, RATIOS, format_table, summary

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "data" / "validation_expected.json"
DOC = ROOT / "docs" / "validation.md"


def golden() -> dict:
    return json.loads(GOLDEN.read_text())


def regenerate() -> None:
    from g10core.capture.validation import ratio_table, validation_table

    rows, ratios = validation_table(), ratio_table()
    doc = golden()
    doc["rows"] = {r["key"]: {"measured": r["measured"], "predicted": r["predicted"], "error": r["error"]}
                   for r in rows}
    doc["ratios"] = {r["key"]: {"measured": r["measured"], "predicted": r["predicted"], "error": r["error"]}
                     for r in ratios}
    doc["summary"] = summary(rows)
    GOLDEN.write_text(json.dumps(doc, indent=1) + "\n")


def test_every_measurement_is_cited_and_in_the_golden_file():
    g = golden()
    assert set(g["rows"]) == {m.key for m in MEASUREMENTS} and set(g["ratios"]) == {r.key for r in RATIOS}
    assert len(MEASUREMENTS) >= 10
    for m in MEASUREMENTS:
        assert len(m.source) > 40 and m.measured > 0 and m.gpu and m.batch >= 1
        assert g["rows"][m.key]["measured"] == m.measured


def _doc_rows(text: str) -> dict:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 8 and cells[0] in {m.key for m in MEASUREMENTS}:
            rows[cells[0]] = (float(cells[5].replace(",", "")), float(cells[6].replace(",", "")),
                              float(cells[7].replace(" %", "")))
    return rows


def test_the_docs_table_is_the_golden_table():
    rows = _doc_rows(DOC.read_text())
    g = golden()["rows"]
    assert set(rows) == set(g)
    for key, (published, ours, error) in rows.items():
        assert published == pytest.approx(g[key]["measured"], rel=1e-4, abs=0.5)
        assert ours == pytest.approx(g[key]["predicted"], rel=1e-4, abs=0.51)
        assert error == pytest.approx(100 * g[key]["error"], abs=0.051)
    s = golden()["summary"]
    line = f"median |error| {100 * s['median_abs_error']:.1f} %, largest {100 * s['max_abs_error']:.1f} %"
    assert line in DOC.read_text()


def test_generated_docs_tables_are_current():
    # tools/docs_tables.py rewrites the tables that quote the golden predictions and the shipped captures
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_tables.py"), "--check"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_table_has_not_moved():
    # captures all 17 workloads and runs the two speed-ups (about 25 s)
    from g10core.capture.validation import ratio_table, validation_table

    g = golden()
    rows = validation_table()
    for r in rows:
        assert r["predicted"] == pytest.approx(g["rows"][r["key"]]["predicted"], rel=0.005), r["key"]
    for r in ratio_table():
        assert r["predicted"] == pytest.approx(g["ratios"][r["key"]]["predicted"], rel=0.005), r["key"]
    s = summary(rows)
    assert s["over_40_percent"] == g["summary"]["over_40_percent"]
    text = format_table(rows)
    assert re.search(r"median \|error\| \d+\.\d %", text)
