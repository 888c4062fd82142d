"""Sanity sweeps as tests (issue 13): in the exploration preset, more GPU memory, host memory,
SSD bandwidth or link bandwidth never makes a run slower, except where
``tests/sanity_allowlist.toml`` documents why (see ``tests/sanity_sweep.py``).

The default suite runs the fast subset (BERT-256, every policy, three points per resource);
the slow test runs the full grid (the five Fig. 11 traces).
"""
import math

import pytest

import sanity_sweep as S


def _unexplained(found, allowed):
    return [str(v) for v in found if v.entry not in allowed]


def test_the_allowlist_is_well_formed_and_every_entry_has_a_cause():
    allowed = S.load_allowlist()
    known = S.known_resources()
    for (preset, trace, policy, resource, lower, higher), cause in allowed.items():
        assert trace in S.FIG11_TRACES + S.WIDE_TRACES and policy in S.POLICIES and resource in known
        assert preset in S.WIDE_PRESETS
        values = known[resource][1] + S.WIDE_RESOURCES.get(resource, (None, ()))[1]
        assert lower in values and higher in values and lower < higher
        assert len(cause.split()) >= 8, cause


def test_violations_are_steps_to_more_of_a_resource_that_slow_a_run():
    rows = [{"time_s": t} for t in (5.0, 4.0, 4.5, float("inf"), float("inf"))]
    keys = {("t", "p", "k", v): i for i, v in enumerate((1.0, 2.0, 3.0, 4.0, 5.0))}
    found = S.violations(rows, keys, traces=("t",), policies=("p",), resources={"r": ("k", (1.0, 2.0, 3.0, 4.0, 5.0))})
    # 2 -> 3 slower, 3 -> 4 fails where 3 ran; 4 -> 5 both fail: not a violation
    assert [(v.lower, v.higher) for v in found] == [(2.0, 3.0), (3.0, 4.0)]


def test_fast_sanity_sweep_in_the_exploration_preset(traces_dir):
    found, rows, _ = S.sweep("default", traces=S.FAST_TRACES, resources=S.FAST_RESOURCES, jobs=1,
                             traces_dir=traces_dir)
    assert all(r["time_s"] > 0 for r in rows)
    assert _unexplained(found, S.load_allowlist()) == []


@pytest.mark.slow
def test_full_sanity_sweep_in_the_exploration_preset(traces_dir):
    found, rows, index = S.sweep("default", jobs=2, traces_dir=traces_dir)
    # every (trace, policy, resource point) ran; points equal to the preset's value are shared
    assert len(index) == len(rows) + len(S.FIG11_TRACES) * len(S.POLICIES) * sum(len(v) for _, v in S.RESOURCES.values())
    assert all(r["time_s"] > 0 for r in rows)
    assert _unexplained(found, S.load_allowlist()) == []


def test_gpu_resources_move_one_key_on_each_model():
    res = S.gpu_resources(("A100-40GB", "H100-PCIe"))
    assert res["gpu_memory@H100-PCIe"] == ("gpu.memory_GiB", (64.0, 80.0, 96.0, 128.0), ("gpu.model=H100-PCIe",))
    assert res["gpu_memory@A100-40GB"][1] == (32.0, 40.0, 48.0, 64.0)
    assert res["host_memory@A100-40GB"][1] == S.GPU_HOST_MEMORY_GiB
    ts, index = S.tasks("default", ("bert_base-b256",), ("g10",), res)
    # one run per point, the model selected on every one; each model at its own memory and 128 GiB of
    # host memory is one configuration, run once for both of its axes
    assert len(ts) == 4 + 8 + 4 + 8 - 2
    assert {t.config.gpu.model for t in ts} == {"A100-40GB", "H100-PCIe"}
    h100 = ts[index[("bert_base-b256", "g10", S.axis(res["host_memory@H100-PCIe"]), 16.0)]].config
    assert (h100.gpu.model, h100.gpu.memory_GiB, h100.host.memory_GiB) == ("H100-PCIe", 80.0, 16.0)


def test_fast_sanity_sweep_of_memory_on_another_gpu(traces_dir):
    """Host and GPU memory on the H100-PCIe under G10, G10-GDS and G10-Host (BERT-256)."""
    g = S.GPU_FAST
    res = S.gpu_resources(g["gpus"])
    found, rows, index = S.sweep("default", traces=g["traces"], policies=g["policies"], resources=res, jobs=1,
                                 traces_dir=traces_dir)
    assert all(r["time_s"] > 0 for r in rows)
    assert _unexplained(found, S.load_allowlist()) == []
    trows = S.step_table(found, rows, index, g["traces"], g["policies"], res, "default")
    assert sum(r["checked"] for r in trows) > 0


def test_fast_slice_of_the_wide_sweep(traces_dir):
    # ResNet152-b256 (SSD and host traffic every iteration) under G10 and Base UVM, the link 4-256 GB/s
    # and the SSD 0.4-64 GB/s: where the published quotas rounded (the SSD's 2.54 pages a slot at 63 GB/s)
    found, rows, index = S.sweep("default", jobs=1, traces_dir=traces_dir, **S.WIDE_FAST)
    assert all(math.isfinite(r["time_s"]) and r["time_s"] > 0 for r in rows)
    assert _unexplained(found, S.load_allowlist()) == []
    trows = S.step_table(found, rows, index, S.WIDE_FAST["traces"], S.WIDE_FAST["policies"],
                         S.WIDE_FAST["resources"], "default")
    # every neighbouring pair of points was checked, for both policies
    assert [r["checked"] for r in trows] == [2 * (len(v) - 1) for _, v in S.WIDE_FAST["resources"].values()]


# The wide grid itself (link 4-256 GB/s, SSD 0.4-64 GB/s, GPU 16-192 GiB, host 0-1024 GiB on the five
# WIDE_TRACES under default and detailed: 1,705 runs, about 90 minutes of CPU) is a script, not a test:
# `python tests/sanity_sweep.py --wide --json FILE` (docs/physics.md, "Sanity sweeps"); it fails on
# any step the allow-list does not explain.  The test suite runs its fast slice above.
