"""The documentation's results tables (tools/docs_tables.py): they render from the stored results
tests/data/docs_results.json, and those are still what the simulator gives.

The fast tests re-run a few cheap runs of each result set (``CHEAP``, about a second in all); the
slow one re-runs every run of every results table (1-3 minutes on two cores).  After a deliberate
model change: ``python tools/docs_tables.py --results`` (docs/development.md, Generated tables).
"""
from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "tools" / "docs_tables.py")
docs_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs_tables)

RESULT_TABLES = docs_tables.RESULT_TABLES


def _body(path: Path, name: str) -> str:
    m = next(m for m in docs_tables.MARK.finditer(path.read_text()) if m["name"] == name)
    return m["body"]


@pytest.mark.parametrize("name", RESULT_TABLES)
def test_the_page_holds_the_table_rendered_from_the_stored_results(name):
    path, make = docs_tables.TABLES[name]
    assert _body(path, name) == make().rstrip("\n") + "\n", f"{path}: run python tools/docs_tables.py"


@pytest.mark.parametrize("name", sorted(docs_tables.MEASURES))
def test_the_stored_results_hold_exactly_the_planned_runs(name):
    # a workload or policy added (or removed) since the results were stored fails here, naming it
    # (a plan's runs, "START @ VALUE", are the plan's to choose: its rows are the plans)
    stored = [r["id"] for r in docs_tables.stored_results()[name]["rows"] if " @ " not in r["id"]]
    planned = docs_tables.planned_runs(name)
    assert len(stored) == len(set(stored))
    assert sorted(set(planned) - set(stored)) == [] and sorted(set(stored) - set(planned)) == []


def test_every_result_set_has_cheap_runs_among_its_stored_ones():
    assert set(docs_tables.CHEAP) == set(docs_tables.MEASURES)
    for name, ids in docs_tables.CHEAP.items():
        assert ids and set(ids) <= {r["id"] for r in docs_tables.stored_results()[name]["rows"]}, name


def test_the_same_run_in_two_result_sets_gives_one_time():
    # ZeRO's LLM table and reproduce llm's both run zero-offload and zero-infinity (NVMe) under default
    llm = {r["id"]: r for r in docs_tables.stored_results()["llm"]["rows"]}
    zero = [r for r in docs_tables.stored_results()["zero-llm"]["rows"] if not r["id"].endswith(" host")]
    assert zero
    for r in zero:
        same = llm[" ".join(r["id"].split()[:2])]
        assert (same["time_s"], same["failed"]) == (r["time_s"], r["failed"]), r["id"]


def test_the_cheap_runs_still_give_the_stored_results():
    # a model change that moves any of these fails here; --results regenerates (docs/development.md)
    assert docs_tables.check_cheap_runs() == []


def test_a_hand_edit_between_the_markers_is_rewritten():
    path, _ = docs_tables.TABLES["g10-on-uvm"]
    text = path.read_text()
    body = _body(path, "g10-on-uvm")
    edited = text.replace(body, body.replace("| inceptionv3-b1536 | ", "| inceptionv3-b1536 | 1", 1))
    assert edited != text
    assert docs_tables.render(edited, path) == text


def test_a_moved_result_is_named():
    stored = docs_tables.stored_results()["fig11-gpus"]["rows"]
    fresh = copy.deepcopy(stored[:2])
    fresh[0]["time_s"] *= 1 + 1e-6
    fresh[1]["failed"] = not fresh[1]["failed"]
    fresh.append(dict(fresh[0], id="nowhere-b1 g10 preset"))
    moved = docs_tables.different_runs(stored, fresh)
    assert [m.split(":")[0] for m in moved] == [stored[0]["id"], stored[1]["id"], "nowhere-b1 g10 preset"]
    assert docs_tables.different_runs(stored, copy.deepcopy(stored)) == []


@pytest.mark.slow
def test_every_stored_result_is_what_the_simulator_gives():
    # every run of every results table (561 runs; 3-5 minutes on two cores)
    fresh = docs_tables.measure_all(jobs=2)
    stored = docs_tables.stored_results()
    for name, data in fresh.items():
        assert docs_tables.different_runs(stored[name]["rows"], data["rows"]) == [], name
        assert len(data["rows"]) == len(stored[name]["rows"]), name
