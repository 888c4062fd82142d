"""Edge cases of the page-level replay that once broke it (issue 12's fuzz findings)."""
from __future__ import annotations

import numpy as np
import pytest

from g10core.cli import main
from g10core.simulator import Simulator, tick_budget
from g10core.workload.synth import synthesize
from g10core.workload.trace import Trace, write_trace

PAGE_POLICIES = ["base-uvm", "deepum", "g10", "belady"]


@pytest.mark.parametrize("policy", PAGE_POLICIES)
@pytest.mark.parametrize("seed", [5, 6])
def test_a_one_kernel_trace_runs_every_iteration(policy, seed):
    # its kernel-begin events once named the next kernel by its index, which for one kernel
    # is the same kernel: iteration 0 never ended
    trace = synthesize(1, 8192, pattern="random", seed=seed)
    result = Simulator("g10-artifact").run(trace, policy)
    assert not result.failed
    assert [it.index for it in result.iterations] == [0, 1]
    assert len(result.kernels["end_cycles"]) == 2
    for it in result.iterations:
        assert it.time_s >= it.ideal_time_s > 0


def zero_time_trace():
    t = np.zeros(1)
    return Trace(model="one", batch_size=1, tensor_size_bytes=np.array([2160], np.int64),
                 tensor_is_global=np.array([True]), tensor_name=np.array(["w"]), kernel_name=np.array(["k"]),
                 kernel_time_ideal_ns=t, kernel_time_fault_all_ns=t, kernel_time_fault_outputs_ns=t,
                 kernel_workspace_bytes=np.zeros(1, np.int64), access_offsets=np.array([0, 1], np.int64),
                 access_tensor=np.array([0], np.int32), access_mode=np.array([1], np.uint8))


def test_a_zero_time_kernel_on_a_slow_detailed_link_finishes(tmp_path, capsys):
    # one global 2,160-byte tensor, kernel time 0: once grew its kernel rows without end
    path = tmp_path / "one.h5"
    write_trace(zero_time_trace(), path)
    code = main(["run", str(path), "--policy", "g10", "--preset", "detailed", "--set", "link.bandwidth_GBps=1",
                 "--json", "-"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    import json

    d = json.loads(out)
    assert len(d["iterations"]) == 2
    util = d["counters"]["link_utilisation"]
    assert 0 < util["to_device"] <= 1.0          # the link's busy time never exceeds the span


def test_the_tick_budget_never_overflows():
    trace = synthesize(4, 1 << 20, pattern="training", seed=0)
    consts = {"ssd_batch": 10, "host_batch": 50, "gpu_batch": 50, "tick_cycles": 15599, "iterations": 2}
    t00 = np.full(4, 2**61, np.int64)                  # their sum is past int64
    budget = tick_budget(consts, trace, t00, 0)
    assert 0 < budget <= 2**62
