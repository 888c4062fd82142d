"""`g10sim uvm-micro oversub`: NVIDIA's oversubscription micro-benchmark (issue 37), small."""
from __future__ import annotations

import json

import pytest

from g10core.cli import main
from g10core.experiments.uvmmicro import OVERSUB_GPUS, oversub


def run_cli(capsys, *args):
    code = main(["uvm-micro", "oversub", *args, "--json", "-"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_the_command_reports_each_cell_with_its_closed_forms(capsys):
    code, r = run_cli(capsys, "--gpu", "A100-40GB", "--pattern", "streaming", "--mode", "zero_copy,prefetch,page_fault",
                      "--factor", "0.5,2", "--scale", "1024")
    assert code == 0 and len(r["rows"]) == 6
    cell = {(x["mode"], x["factor"]): x for x in r["rows"]}
    link, hbm = cell["zero_copy", 0.5]["link_GBps"], OVERSUB_GPUS["A100-40GB"]["hbm_GBps"]
    # zero-copy: every loop reads every byte over the link (and the SMs then work at HBM speed):
    # between 1 / (1/link + 1/hbm) and the link's rate, whatever the factor
    for f in (0.5, 2):
        bw = cell["zero_copy", f]["bandwidth_GBps"]
        assert 0.99 / (1 / link + 1 / hbm) <= bw <= link * 1.0001
        assert cell["zero_copy", f]["remote_read_bytes"] == 3 * cell["zero_copy", f]["alloc_bytes"]
    # half the GPU prefetched or faulted once: the steady loops read HBM, bytes / t11
    for mode in ("prefetch", "page_fault"):
        assert cell[mode, 0.5]["bandwidth_GBps"] == pytest.approx(hbm, rel=1e-3)
    # twice the GPU: every loop moves the data over the link again, so no faster than it
    for mode in ("prefetch", "page_fault"):
        assert cell[mode, 2.0]["bandwidth_GBps"] <= link * 1.0001
        assert cell[mode, 2.0]["pages_to_host"] > 0
    # demand paging pays its fault batches: slower than prefetching the same bytes
    assert cell["page_fault", 2.0]["bandwidth_GBps"] < cell["prefetch", 2.0]["bandwidth_GBps"]


def test_bad_arguments_are_one_line_exit_2(capsys):
    assert main(["uvm-micro", "oversub", "--mode", "teleport"]) == 2
    assert "teleport" in capsys.readouterr().err
    assert main(["uvm-micro", "oversub", "--factor", "0"]) == 2


def test_the_v100_like_system_is_slower_on_its_gen3_link():
    a = oversub("A100-40GB", "block_streaming", "zero_copy", 1.5, scale=1024)
    v = oversub("V100-like", "block_streaming", "zero_copy", 1.5, scale=1024)
    assert v["link_GBps"] < a["link_GBps"] and v["bandwidth_GBps"] < a["bandwidth_GBps"]
