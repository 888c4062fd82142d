"""Recompute hints (issue 35): the trace expansion, both simulators, the closed form."""
from __future__ import annotations

import numpy as np
import pytest

from g10core.codes import ACTION_NAMES, HINT_FREE, HINT_RECOMPUTE, HINT_TO_SSD
from g10core.config import preset
from g10core.errors import HintError
from g10core.policies import tensorsim
from g10core.simulator import Simulator
from g10core.workload import recompute
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE

from test_tensorsim import HZ, hints, make_trace

MS = 1e-3
A, B, C, W = 0, 1, 2, 3          # tensor ids of unit_trace


def unit_trace(size=4096 * 16):
    # k0: W -> A (1 ms); k1: A -> B (2 ms); k2: B -> C (3 ms); k3: A, C -> (4 ms)
    return make_trace([size, size, size, size], [False, False, False, True],
                      [(1.0, [W], [A]), (2.0, [A], [B]), (3.0, [B], [C]), (4.0, [A, C], [])])


def test_the_action_has_its_code_and_name():
    assert HINT_RECOMPUTE == 4 and ACTION_NAMES[4] == "recompute"


def test_expand_inserts_a_copy_of_the_producer_before_the_kernel():
    tr = unit_trace()
    exp = recompute.expand(tr, hints((2, A, HINT_FREE), (3, A, HINT_RECOMPUTE)))
    assert exp.trace.n_kernels == 5
    assert exp.trace.kernel_name.tolist() == ["k0", "k1", "k2", "recompute:k0", "k3"]
    assert exp.group.tolist() == [0, 1, 2, 3, 3] and exp.source.tolist() == [0, 1, 2, 0, 3]
    assert exp.is_copy.tolist() == [False, False, False, True, False]
    # the copy reads the producer's inputs and writes the regenerated tensor only
    assert exp.trace.kernel_inputs(3).tolist() == [W] and exp.trace.kernel_outputs(3).tolist() == [A]
    assert exp.trace.kernel_time_ideal_ns[3] == tr.kernel_time_ideal_ns[0]
    # hints re-indexed (the free stays at k2), recompute rows gone
    assert exp.hints.tolist() == [(2, A, HINT_FREE)]
    assert (exp.n_tensors, exp.n_kernels, exp.n_hinted) == (1, 1, 1)


def test_a_chain_recomputes_each_producer_once_in_trace_order():
    # C's producer k2 reads B, dropped too: k1 runs first (it reads A, resident), then k2
    tr = make_trace([4096] * 4, [False, False, False, True],
                    [(1.0, [W], [A]), (2.0, [A], [B]), (3.0, [B], [C]), (1.0, [W], []), (4.0, [A, B, C], [])])
    h = hints((3, B, HINT_FREE), (3, C, HINT_FREE), (4, C, HINT_RECOMPUTE), (4, B, HINT_RECOMPUTE))
    exp = recompute.expand(tr, h)
    assert exp.trace.kernel_name.tolist() == ["k0", "k1", "k2", "k3", "recompute:k1", "recompute:k2", "k4"]
    assert exp.n_tensors == 2 and exp.n_kernels == 2 and exp.n_hinted == 2


@pytest.mark.parametrize("rows, match", [
    (((3, A, HINT_RECOMPUTE),), "row 0, .*not dropped"),                       # never freed
    (((0, A, HINT_FREE), (3, A, HINT_RECOMPUTE)), "row 1, .*not dropped"),     # k1 touched it after the free
    (((2, W, HINT_FREE), (3, W, HINT_RECOMPUTE)), "row 1, .*no kernel before kernel 3 writes tensor 3"),
    (((4, A, HINT_RECOMPUTE),), "row 0, .*recompute at kernel 4"),
])
def test_impossible_recomputes_are_refused_naming_the_row(rows, match):
    with pytest.raises(HintError, match=match):
        recompute.expand(unit_trace(), hints(*rows))


def test_tensor_level_free_and_recompute_add_exactly_the_producers_ideal_time():
    tr = unit_trace()
    cfg = preset("default")
    base = tensorsim.simulate(tr, cfg, hints((2, A, HINT_FREE)), mode="gds")
    res = tensorsim.simulate(tr, cfg, hints((2, A, HINT_FREE), (3, A, HINT_RECOMPUTE)), mode="gds")
    assert base["time_s"] == pytest.approx(10 * MS, abs=1 / HZ)
    assert res["time_cycles"] - base["time_cycles"] == round(1 * MS * HZ)      # exactly k0's t11
    assert res["ideal_time_s"] == base["ideal_time_s"]                         # the trace's ideal
    assert res["breakdown_s"]["stall"] == pytest.approx(1 * MS, abs=1 / HZ)
    assert len(res["kernel_time_s"]) == 4                                      # the trace's kernels
    assert res["kernel_time_s"][3] == pytest.approx(5 * MS, abs=1 / HZ)        # the copy charged to k3
    assert res["recompute"] == {"tensors": 1, "kernels": 1, "hints": 1, "ideal_s": pytest.approx(1 * MS, abs=1 / HZ),
                                "time_s": pytest.approx(1 * MS, abs=1 / HZ)}


def test_tensor_level_recompute_faults_a_dropped_input_in_from_the_ssd():
    # W evicted to SSD at k1 and not prefetched: the copy of k0 at k3 fetches it on demand
    tr = unit_trace(size=1 << 22)           # its eviction (1.3 ms) ends before k3
    cfg = preset("default")
    res = tensorsim.simulate(tr, cfg, hints((1, W, HINT_TO_SSD), (2, A, HINT_FREE), (3, A, HINT_RECOMPUTE)),
                             mode="gds")
    assert not res["failed"] and res["n_on_demand_fetches"] == 1
    assert res["traffic_bytes"]["ssd_to_gpu"] == 1 << 22


def page_run(trace, h, preset_name="default", policy="g10"):
    cfg = preset(preset_name).with_overrides({"run": {"iterations": 2}})
    return Simulator(cfg).run(trace, policy, hints=h)


@pytest.mark.parametrize("preset_name", ["default", "detailed"])
def test_page_level_recompute_is_the_hand_expanded_trace_folded(preset_name):
    tr = unit_trace()
    h = hints((2, A, HINT_FREE), (3, A, HINT_RECOMPUTE))
    res = page_run(tr, h, preset_name)
    exp = recompute.expand(tr, h)
    by_hand = page_run(exp.trace, exp.hints, preset_name)
    assert not res.failed and not by_hand.failed
    for a, b in zip(res.iterations, by_hand.iterations):
        assert a.time_cycles == b.time_cycles
        assert a.traffic_pages == b.traffic_pages and a.faults_pages == b.faults_pages
    # ideal stays the trace's; rows keep the trace's kernel count
    assert res.iterations[0].ideal_time_s == pytest.approx(10 * MS, abs=1 / HZ)
    assert res.kernels["kernel"].tolist() == [0, 1, 2, 3] * 2
    rc = res.counters["recompute"]
    assert (rc["tensors"], rc["kernels"], rc["hints"]) == (1, 1, 1)
    assert rc["ideal_s"] == pytest.approx(1 * MS, abs=1 / HZ) and len(rc["time_s"]) == 2


def test_page_level_free_and_recompute_add_the_producers_time_and_the_refill():
    # iteration 1: next to a free alone (after which k3 faults A in as new pages), the pair adds
    # exactly k0's t11; next to no hints at all, the copy also carries A's zero-fill
    tr = unit_trace()
    none = page_run(tr, hints())
    free = page_run(tr, hints((2, A, HINT_FREE)))
    res = page_run(tr, hints((2, A, HINT_FREE), (3, A, HINT_RECOMPUTE)))
    assert res.iterations[1].time_cycles - free.iterations[1].time_cycles == round(1 * MS * HZ)
    refill = free.iterations[1].time_cycles - none.iterations[1].time_cycles
    assert refill > 0
    copy = res.counters["recompute"]["time_s"][1]
    assert round(copy * HZ) == round(1 * MS * HZ) + refill
    assert res.iterations[1].time_cycles - none.iterations[1].time_cycles == round(copy * HZ)


# ---- hint files and the command line --------------------------------------------------

def _hand_made(path, rows, version):
    import h5py
    with h5py.File(path, "w") as f:                 # as the format page tells a user to write one
        f.attrs["schema"] = "g10core-hints"
        f.attrs["schema_version"] = version
        f.attrs["policy"] = "mine"
        f.create_dataset("hints", data=hints(*rows))
    return path


def test_version_2_files_hold_recompute_and_version_1_files_still_read(tmp_path):
    from g10core.workload.hints import SCHEMA_VERSION, read_hints, write_hints
    tr = unit_trace()
    rows = ((2, A, HINT_FREE), (3, A, HINT_RECOMPUTE))
    new = write_hints(tmp_path / "new.h5", hints(*rows), policy="mine", trace=tr)
    assert SCHEMA_VERSION == 2
    assert read_hints(new, tr).hints.tolist() == list(rows)
    old = _hand_made(tmp_path / "old.h5", ((2, A, HINT_FREE),), 1)
    assert read_hints(old, tr).hints.tolist() == [(2, A, HINT_FREE)]
    with pytest.raises(HintError, match="row 1.*schema_version 1 allows actions 0-3 only"):
        read_hints(_hand_made(tmp_path / "bad.h5", rows, 1), tr)
    with pytest.raises(HintError, match="action 9 is not one of"):
        write_hints(tmp_path / "x.h5", hints((0, A, 9)), policy="mine", trace=tr)


def test_the_command_line_replays_recompute_hints_and_refuses_a_bad_one(tmp_path, capsys):
    import json
    from g10core.cli import main
    from g10core.workload.trace import write_trace
    trace = write_trace(unit_trace(), tmp_path / "unit.h5")
    good = _hand_made(tmp_path / "good.h5", ((2, A, HINT_FREE), (3, A, HINT_RECOMPUTE)), 2)
    for policy in ("g10", "g10-host"):
        out = tmp_path / f"{policy}.json"
        assert main(["run", str(trace), "--policy", policy, "--hints", str(good), "--json", str(out)]) == 0
        d = json.loads(out.read_text())
        assert d["counters"]["recompute"]["kernels"] == 1
        assert d["hints"]["by_action"]["recompute"] == 1
    capsys.readouterr()
    bad = _hand_made(tmp_path / "bad.h5", ((3, A, HINT_RECOMPUTE),), 2)
    assert main(["run", str(trace), "--policy", "g10", "--hints", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.h5" in err[0] and "row 0" in err[0] and "not dropped" in err[0]


def test_a_free_followed_by_a_transfer_hint_is_not_a_drop():
    # a free that drops only the GPU copy of a tensor a later hint fetches again (the CPU tier's
    # ZeRO policies free a parameter's GPU copy and fetch it back): a producer reading it uses it
    tr = make_trace([4096] * 4, [False, False, False, True],
                    [(1.0, [W], [A]), (2.0, [A, W], [B]), (3.0, [B], [C]), (1.0, [C], []), (4.0, [A, B], [])])
    h = hints((2, W, HINT_FREE), (3, B, HINT_FREE), (3, W, HINT_TO_SSD), (4, B, HINT_RECOMPUTE))
    exp = recompute.expand(tr, h)
    assert exp.n_tensors == 1 and exp.source[exp.is_copy].tolist() == [1]     # k1 only: W is not regenerated
    with pytest.raises(HintError, match="no kernel before kernel 1 writes tensor 3"):
        recompute.expand(tr, hints((2, W, HINT_FREE), (3, B, HINT_FREE), (4, B, HINT_RECOMPUTE)))
