"""g10core.machine: the machine file, routes, max-min fair hop sharing, and one GPU = today's results."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from g10core.cli import main
from g10core.errors import MachineError
from g10core.machine import (Topology, Transfer, load, max_min_rates, parse, shipped, shipped_names, simulate,
                             single_gpu_sets, steady_rate_GBps)
from g10core.machine.description import pcie_raw_GBps

# A machine of one GPU and one drive with the default preset's figures (params.py): A100-40GB on
# PCIe 3.0 x16, one SSD at 3.2 GB/s (shared duplex), 128 GiB host memory at 409.6 GB/s.
ONE = """
name = "the default preset's machine"
[gpus]
model = "A100-40GB"
count = 1
link_generation = 3
link_lanes = 16
[drives]
count = 1
read_GBps = 3.2
capacity_GiB = 1024
link_generation = 4
link_lanes = 4
[[sockets]]
memory_GiB = 128
memory_bandwidth_GBps = 409.6
[[switches]]
name = "rootports"
parent = "socket0"
kind = "root-ports"
gpus = [0]
drives = [0]
"""

# Two GPUs and two drives behind each of two switches under one socket: the near/far closed forms.
TWO_SWITCHES = """
[gpus]
model = "A100-40GB"
count = 4
[drives]
count = 4
read_GBps = 3.0
write_GBps = 1.5
capacity_GiB = 1000
link_generation = 4
link_lanes = 4
[[sockets]]
memory_GiB = 512
memory_bandwidth_GBps = 200
[[switches]]
name = "a"
parent = "socket0"
uplink_generation = 3
uplink_lanes = 4
gpus = [0, 1]
drives = [0, 1]
[[switches]]
name = "b"
parent = "socket0"
uplink_generation = 3
uplink_lanes = 4
gpus = [2, 3]
drives = [2, 3]
[[volumes]]
name = "near"
drives = [0, 1]
gpus = [0, 1, 2, 3]
"""


# ---- the machine file ----------------------------------------------------------------------------

def test_every_shipped_machine_loads_with_a_source_for_its_figures():
    assert {"dgx-a100", "dgx-2", "dgx-h100", "workstation-1gpu-4ssd"} <= set(shipped_names())
    for name in shipped_names():
        m = shipped(name)
        assert m.sources, name
        assert load(name) == m
        Topology(m)                      # every hop of every route exists


def test_the_dgx_a100_has_the_gds_guides_grouping():
    m = shipped("dgx-a100")
    assert m.gpus.count == 8 and m.drives.count == 8 and len(m.switches) == 4
    assert all(len(s.gpus) == 2 and len(s.drives) == 2 for s in m.switches)


BAD = [
    # (edit of TWO_SWITCHES, words the one-line message must contain)
    (lambda t: t.replace("gpus = [2, 3]", "gpus = [2]"), ["gpu 3", "behind no switch"]),
    (lambda t: t.replace("drives = [2, 3]\n", "drives = [2]\n", 1), ["drive 3", "behind no switch"]),
    (lambda t: t.replace('name = "a"\nparent = "socket0"', 'name = "a"\nparent = "b"')
                .replace('name = "b"\nparent = "socket0"', 'name = "b"\nparent = "a"'), ["'a'", "cycle"]),
    (lambda t: t.replace('name = "b"\nparent = "socket0"', 'name = "b"\nparent = "socket1"')
                .replace("[[switches]]", "[[sockets]]\nmemory_GiB = 1\nmemory_bandwidth_GBps = 1\n[[switches]]", 1),
     ["[[volumes]] 'near'", "gpu 2", "no route to drive 0", "inter_socket"]),
    (lambda t: t.replace("read_GBps = 3.0", "read_GBps = -3.0"), ["[drives]", "read_GBps"]),
    (lambda t: t.replace("read_GBps = 3.0", 'read_GBps = "fast"'), ["[drives]", "expected a number"]),
    (lambda t: t.replace("count = 4\n[drives]", "count = 4\ncolour = 1\n[drives]"), ["[gpus]", "unknown key 'colour'"]),
    (lambda t: t.replace('parent = "socket0"', 'parent = "nowhere"', 1), ["'a'", "'nowhere'"]),
    (lambda t: t.replace("gpus = [0, 1]", "gpus = [0, 9]"), ["'a'", "9"]),
    (lambda t: t + "[\n", ["not valid TOML"]),
]


@pytest.mark.parametrize("edit,words", BAD)
def test_a_bad_machine_is_refused_with_one_line_naming_file_and_entry(edit, words):
    with pytest.raises(MachineError) as exc:
        parse(edit(TWO_SWITCHES), "bad.toml")
    msg = str(exc.value)
    assert msg.startswith("bad.toml: ") and "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)


def test_the_cli_exits_2_with_one_line_on_a_bad_machine(tmp_path, capsys):
    f = tmp_path / "m.toml"
    f.write_text(TWO_SWITCHES.replace("gpus = [2, 3]", "gpus = [2]"))
    assert main(["machine", "show", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(f) in err and "gpu 3" in err
    assert main(["run", "bert_base-b256", "--policy", "g10", "--machine", str(f)]) == 2
    assert main(["machine", "show", "no-such-machine"]) == 2


def test_a_gpu_outside_the_table_describes_a_topology_only():
    with pytest.raises(MachineError, match="V100"):
        single_gpu_sets(shipped("dgx-2"))


# ---- routes ----------------------------------------------------------------------------------------

def test_a_near_read_stays_below_the_switch_and_a_far_read_crosses_both_uplinks():
    topo = Topology(parse(TWO_SWITCHES, "two.toml"))
    near = [h for h, _ in topo.drive_to_gpu(0, 1)]
    far = [h for h, _ in topo.drive_to_gpu(0, 2)]
    assert near == ["drive0 flash", "drive0 link up", "gpu1 link down"]
    assert far == ["drive0 flash", "drive0 link up", "a uplink up", "b uplink down", "gpu2 link down"]
    # a shared-duplex drive: one flash hop, a write costs 1 / write bandwidth of it
    assert dict(topo.gpu_to_drive(1, 0))["drive0 flash"] == pytest.approx(1 / 1.5)


def test_host_routes_end_at_the_sockets_memory():
    topo = Topology(shipped("dgx-a100"))
    assert [h for h, _ in topo.host_to_gpu(5)] == ["socket1 memory", "sw2 uplink down", "gpu5 link down"]
    assert [h for h, _ in topo.host_to_gpu(5, socket=0)] == ["socket0 memory", "socket0->socket1",
                                                             "sw2 uplink down", "gpu5 link down"]


# ---- max-min fair sharing: closed forms ------------------------------------------------------------

def test_two_flows_on_one_hop_get_half_each():
    assert max_min_rates([[("h", 1 / 10)], [("h", 1 / 10)]]) == pytest.approx([5, 5])


def test_a_flow_held_back_elsewhere_leaves_the_rest_to_the_other():
    # both share h (10 GB/s); the first also crosses g (2 GB/s): 2 and 8
    assert max_min_rates([[("h", 0.1), ("g", 0.5)], [("h", 0.1)]]) == pytest.approx([2, 8])


def test_a_shared_duplex_drive_serves_reads_and_writes_from_one_budget():
    # read 3, write 1.5: r/3 + w/1.5 <= 1 with r = w (max-min equal) -> r = w = 1
    assert max_min_rates([[("d", 1 / 3)], [("d", 1 / 1.5)]]) == pytest.approx([1, 1])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
def test_raid0_of_n_drives_reads_n_times_one_up_to_the_uplink(n):
    # n drives of 3 GB/s behind switch a, read by a GPU behind switch b: min(3 n, uplink Gen3 x4)
    text = TWO_SWITCHES.replace("count = 4\nread_GBps", f"count = {n + 2}\nread_GBps") \
        .replace("drives = [0, 1]\n", f"drives = {list(range(n))}\n", 1) \
        .replace("drives = [2, 3]", f"drives = {[n, n + 1]}") \
        .replace('name = "near"\ndrives = [0, 1]', f'name = "near"\ndrives = {list(range(n))}')
    topo = Topology(parse(text, "raid.toml"))
    uplink = pcie_raw_GBps(3, 4)
    far = steady_rate_GBps([topo.volume_read(2)])[0]
    near = steady_rate_GBps([topo.volume_read(0)])[0]
    assert far == pytest.approx(min(3 * n, uplink))
    assert near == pytest.approx(min(3 * n, pcie_raw_GBps(4, 16)))


def test_two_gpus_reading_one_drive_share_it_and_the_far_one_is_not_faster():
    topo = Topology(parse(TWO_SWITCHES, "two.toml"))
    near, far = steady_rate_GBps([[topo.drive_to_gpu(0, 1)], [topo.drive_to_gpu(0, 2)]])
    assert near == pytest.approx(1.5) and far == pytest.approx(1.5)


def test_event_driven_transfers_end_at_the_closed_form_times():
    # one hop of 10 GB/s; A (10 GB) from 0, B (5 GB) from 0.5 s: A alone 0..0.5 (5 GB), then 5 GB/s
    # each: B ends at 0.5 + 1.0 = 1.5 s, A has 5 - 5 = 0 left then too -> both at 1.5 s
    route = (("h", 0.1),)
    ts = [Transfer(0.0, 10e9, (route,)), Transfer(0.5, 5e9, (route,))]
    res = simulate(ts)
    assert res.finish_s == pytest.approx([1.5, 1.5])
    assert res.hop_bytes["h"] == pytest.approx(15e9) and res.hop_busy_s["h"] == pytest.approx(1.5)
    # B smaller: B (2 GB) ends at 0.5 + 0.4, then A alone: 10 - 5 - 2 = 3 GB at 10 GB/s -> 1.2 s
    res = simulate([Transfer(0.0, 10e9, (route,)), Transfer(0.5, 2e9, (route,))])
    assert res.finish_s == pytest.approx([1.2, 0.9])


def test_a_raid0_transfer_ends_with_its_slowest_stripe():
    ts = [Transfer(0.0, 6e9, ((("d0", 1 / 3),), (("d1", 1 / 1),)))]
    assert simulate(ts).finish_s[0] == pytest.approx(3.0)       # 3 GB on the 1 GB/s drive


routes_st = st.lists(st.lists(st.tuples(st.sampled_from("abcdef"), st.floats(0.01, 10)), min_size=1, max_size=4,
                              unique_by=lambda x: x[0]), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(routes_st)
def test_max_min_rates_fill_no_hop_beyond_full_and_every_flow_has_a_full_hop(routes):
    rates = max_min_rates(routes)
    load: dict[str, float] = {}
    for route, r in zip(routes, rates):
        assert r > 0
        for hop, cost in route:
            load[hop] = load.get(hop, 0.0) + r * cost
    assert all(v <= 1 + 1e-9 for v in load.values())
    for route, r in zip(routes, rates):
        # max-min: the flow crosses a full hop on which no flow has a higher rate
        assert any(load[h] >= 1 - 1e-9 and all(r2 <= r * (1 + 1e-9) for rt2, r2 in zip(routes, rates)
                                               if any(h2 == h for h2, _ in rt2)) for h, _ in route)


# ---- one GPU and one drive: today's results --------------------------------------------------------

def _result_without_walls(res) -> dict:
    d = json.loads(res.to_json())
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if "wall" not in k and "rss" not in k and k != "created_utc"}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    return strip(d)


def test_a_one_gpu_one_drive_machine_is_the_preset(tmp_path):
    from g10core.simulator import resolve_config

    f = tmp_path / "one.toml"
    f.write_text(ONE)
    cfg = resolve_config("default", None, single_gpu_sets(load(str(f))))
    assert cfg.to_dict() == resolve_config("default", None, []).to_dict()


@pytest.mark.parametrize("trace,policy", [("bert_base-b256", "g10"), ("bert_base-b256", "base-uvm"),
                                          ("bert_base-b256", "g10-gds"), ("gpt2-small-s1024-b16", "zero-infinity"),
                                          ("llama-1b-s2048-bf16-b4", "teraio")])  # (12 GiB of GPU memory: all move)
def test_a_one_gpu_one_drive_machine_gives_todays_results(tmp_path, trace, policy):
    from g10core.simulator import Simulator, resolve_config

    f = tmp_path / "one.toml"
    f.write_text(ONE)
    small = ["gpu.memory_GiB=12"]       # every policy moves tensors to the SSD and back
    ours = Simulator(resolve_config("default", None, single_gpu_sets(load(str(f))) + small)).run(trace, policy)
    today = Simulator(resolve_config("default", None, small)).run(trace, policy)
    assert not today.failed and today.slowdown > 1          # the SSD path is exercised
    assert _result_without_walls(ours) == _result_without_walls(today)


def test_a_raid0_workstation_reads_at_the_sum_of_its_drives():
    m = shipped("workstation-1gpu-4ssd")
    sets = dict(s.split("=", 1) for s in single_gpu_sets(m))
    assert float(sets["ssd.bandwidth_GBps"]) == pytest.approx(min(4 * m.drives.read_GBps, m.gpus.link_GBps))
    assert float(sets["ssd.write_bandwidth_GBps"]) == pytest.approx(4 * m.drives.write_GBps)


# ---- the published measurements -------------------------------------------------------------------

def test_the_gds_near_read_is_the_two_drives_and_far_reads_cross_the_uplinks():
    from g10core.machine.validation import gds_near_far

    rows = gds_near_far()
    m = shipped("dgx-2")
    assert rows[0]["ours"] == pytest.approx(2 * m.drives.read_GBps * 1e9 / 2 ** 30, rel=1e-3)
    assert "uplink" not in rows[0]["route"] and "uplink" in rows[1]["route"] and "socket0->socket1" in rows[2]["route"]


def test_sharing_a_raid_across_the_dgx_a100_never_gives_a_gpu_more_than_alone():
    from g10core.machine.validation import contention_demo

    rows = contention_demo()
    per = [r["per_gpu_GBps"] for r in rows]
    assert per == sorted(per, reverse=True)
    m = shipped("dgx-a100")
    assert rows[-1]["total_GBps"] == pytest.approx(m.drives.count * m.drives.read_GBps)
    assert not math.isnan(rows[0]["per_gpu_GBps"])


# ---- data-parallel training on a machine --------------------------------------------------------

# Two GPUs, each with its own drive behind its own switch (own volume), and one socket.
OWN_DRIVES = """
[gpus]
model = "A100-40GB"
count = 2
link_generation = 3
link_lanes = 16
[drives]
count = 2
read_GBps = 3.2
capacity_GiB = 1024
link_generation = 4
link_lanes = 4
[[sockets]]
memory_GiB = 256
memory_bandwidth_GBps = 409.6
[[switches]]
name = "a"
parent = "socket0"
uplink_generation = 4
uplink_lanes = 16
gpus = [0]
drives = [0]
[[switches]]
name = "b"
parent = "socket0"
uplink_generation = 4
uplink_lanes = 16
gpus = [1]
drives = [1]
[[volumes]]
name = "a"
drives = [0]
gpus = [0]
[[volumes]]
name = "b"
drives = [1]
gpus = [1]
"""
SMALL_GPU = ["gpu.memory_GiB=12"]
TRAIN_TRACE = "llama-1b-s2048-bf16-b4"


def test_the_ring_allreduce_takes_2_n_minus_1_over_n_bytes_at_the_bus_bandwidth():
    from g10core.machine.training import allreduce_seconds

    m = shipped("dgx-a100")
    for n in (2, 4, 8):
        t, busbw = allreduce_seconds(m, n, 1e9)
        assert busbw == m.allreduce_busbw_GBps and t == pytest.approx(2 * (n - 1) / n * 1e9 / (busbw * 1e9))
    assert allreduce_seconds(m, 1, 1e9) == (0.0, None)
    # no NVLink, no published figure: the ring over PCIe; the two hops that leave a switch carry one
    # flow each way, at the uplink's rate (Gen3 x4)
    m = parse(TWO_SWITCHES, "two.toml")
    t, busbw = allreduce_seconds(m, 4, 1e9)
    assert busbw is None and t == pytest.approx(2 * 3 / 4 * 1e9 / (pcie_raw_GBps(3, 4) * 1e9))


def test_gradient_buckets_fill_as_distributed_data_parallel_fills_them():
    import numpy as np

    from g10core.codes import ROLE_GRADIENT
    from g10core.machine.training import DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES, gradient_buckets
    from g10core.workload.roles import optimizer_kernels
    from g10core.workload.trace import read_trace
    from g10core.workload.tracestore import resolve_trace

    tr = read_trace(resolve_trace(TRAIN_TRACE))
    sizes = np.asarray(tr.tensor_size_bytes)
    grads = np.asarray(tr.tensor_role) == ROLE_GRADIENT
    b = gradient_buckets(tr)
    assert sum(n for _, n in b) == int(sizes[grads].sum())          # every gradient once
    kernels = [k for k, _ in b]
    assert kernels == sorted(kernels) and kernels[-1] < optimizer_kernels(tr)[0]   # ready during the backward
    largest = int(sizes[grads].max())
    assert b[0][1] <= max(DDP_FIRST_BUCKET_BYTES, largest)
    assert all(n <= max(DDP_BUCKET_BYTES, largest) for _, n in b)


def test_the_allreduce_overlaps_the_backward_bucket_by_bucket():
    import numpy as np

    from g10core.machine.training import allreduce_schedule, allreduce_seconds

    m = shipped("dgx-a100")
    per_gb = allreduce_seconds(m, 8, 1e9)[0]
    ends = np.array([1.0, 2.0, 3.0, 4.0])
    buckets = [(0, 10**9), (1, 10**9), (3, 10**9)]        # ready at 1, 2 and 4 s
    busy, exposed, spans = allreduce_schedule(m, 8, buckets, ends, 4.0)
    assert busy == pytest.approx(3 * per_gb)
    # one stream: each starts when ready and when the one before is done
    assert spans[0][0] == 1.0 and spans[1][0] == max(2.0, 1.0 + per_gb) and spans[2][0] == max(4.0, spans[1][0] + per_gb)
    assert exposed == pytest.approx(spans[2][0] + per_gb - 4.0)
    # without overlap the whole all-reduce follows the backward
    busy2, exposed2, spans2 = allreduce_schedule(m, 8, buckets, ends, 4.0, overlap=False)
    assert busy2 == busy and exposed2 == pytest.approx(busy) and spans2[0][0] == 4.0
    # all ready long before the backward ends: nothing exposed
    assert allreduce_schedule(m, 8, [(0, 10**6)], ends, 4.0)[1] == 0.0
    assert allreduce_schedule(m, 8, [], ends, 4.0) == (0.0, 0.0, [])


def test_a_data_parallel_iteration_hides_part_of_its_allreduce():
    from g10core.machine.training import data_parallel

    m = shipped("dgx-a100")
    hidden = data_parallel(TRAIN_TRACE, "teraio", m, 2, sets=SMALL_GPU)
    whole = data_parallel(TRAIN_TRACE, "teraio", m, 2, sets=SMALL_GPU, overlap=False)
    for h, w in zip(hidden.per_gpu, whole.per_gpu):
        assert h["rank_s"] == w["rank_s"] and h["allreduce_s"] == pytest.approx(w["allreduce_s"])
        assert w["allreduce_exposed_s"] == pytest.approx(w["allreduce_s"])
        assert 0.0 <= h["allreduce_exposed_s"] < w["allreduce_exposed_s"]
        assert h["iteration_s"] == pytest.approx(h["rank_s"] + h["allreduce_exposed_s"])
    assert hidden.per_gpu[0]["allreduce_buckets"] > 1


def test_one_rank_on_a_machine_is_the_run_on_its_gpu():
    from g10core.machine.training import data_parallel
    from g10core.simulator import Simulator, resolve_config

    m = shipped("dgx-a100")
    res = data_parallel(TRAIN_TRACE, "teraio", m, 1, sets=SMALL_GPU)
    alone = Simulator(resolve_config("default", None, single_gpu_sets(m) + SMALL_GPU)).run(TRAIN_TRACE, "teraio")
    assert res.per_gpu[0]["rank_s"] == alone.iteration_time_s and res.per_gpu[0]["allreduce_s"] == 0
    assert res.converged and res.rounds == 1


def test_ranks_on_their_own_drives_do_not_slow_each_other_and_on_one_raid_they_do():
    from g10core.machine.training import data_parallel

    own = data_parallel(TRAIN_TRACE, "teraio", parse(OWN_DRIVES, "own.toml"), 2, sets=SMALL_GPU)
    one = data_parallel(TRAIN_TRACE, "teraio", parse(OWN_DRIVES, "own.toml"), 1, sets=SMALL_GPU)
    assert [g["rank_s"] for g in own.per_gpu] == [one.per_gpu[0]["rank_s"]] * 2
    assert all(v == 1.0 for g in own.per_gpu for v in g["contention"].values())
    shared_text = OWN_DRIVES.replace('[[volumes]]\nname = "a"\ndrives = [0]\ngpus = [0]\n[[volumes]]\nname = "b"\n'
                                     'drives = [1]\ngpus = [1]\n', '[[volumes]]\nname = "ab"\ndrives = [0, 1]\n'
                                     'gpus = [0, 1]\n')
    shared = data_parallel(TRAIN_TRACE, "teraio", parse(shared_text, "shared.toml"), 2, sets=SMALL_GPU)
    alone = data_parallel(TRAIN_TRACE, "teraio", parse(shared_text, "shared.toml"), 1, sets=SMALL_GPU)
    assert shared.per_gpu[0]["contention"]["ssd_read"] > 1
    assert shared.per_gpu[0]["rank_s"] > alone.per_gpu[0]["rank_s"]


def test_each_hop_carries_the_bytes_of_the_ranks_that_cross_it():
    from g10core.machine.training import data_parallel

    res = data_parallel(TRAIN_TRACE, "teraio", shipped("dgx-a100"), 2, sets=SMALL_GPU)
    for g in res.per_gpu:
        tb = g["traffic_bytes"]
        down = tb.get("ssd_to_gpu", 0) + tb.get("host_to_gpu", 0)
        assert res.hops[f"gpu{g['gpu']} link down"]["bytes"] == pytest.approx(down, rel=1e-6)
    assert res.busiest_hop() in res.hops
    d = res.to_dict()
    assert d["n_gpus"] == 2 and len(d["per_gpu"]) == 2 and json.dumps(d)


def test_a_policy_that_moves_nothing_or_a_detailed_page_level_rank_is_refused(capsys):
    assert main(["machine", "train", "bert_base-b256", "--machine", "dgx-a100", "--policy", "ideal", "--gpus", "2",
                 "--no-progress"]) == 2
    assert "moves no data" in capsys.readouterr().err
    assert main(["machine", "train", "bert_base-b256", "--machine", "dgx-a100", "--policy", "g10", "--gpus", "2",
                 "--preset", "detailed", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "ssd.model = ftl" in err and "bandwidth models" in err and "Traceback" not in err


@pytest.mark.parametrize("policy", ["base-uvm", "g10"])
def test_page_level_ranks_one_is_its_gpu_and_two_contend_only_where_they_share(policy):
    """Base UVM and G10 per GPU (their link channels' spans are the rank's transfers): one rank is
    `g10sim run` on its GPU; two ranks on their own drives run as one alone, on one RAID0 slower."""
    from g10core.machine.training import data_parallel
    from g10core.simulator import Simulator, resolve_config

    m = shipped("dgx-a100")
    one = data_parallel(TRAIN_TRACE, policy, m, 1, sets=SMALL_GPU)
    alone = Simulator(resolve_config("default", None, single_gpu_sets(m) + SMALL_GPU)).run(TRAIN_TRACE, policy)
    assert one.per_gpu[0]["rank_s"] == alone.iteration_time_s and one.converged and one.rounds == 1
    tb = one.per_gpu[0]["traffic_bytes"]
    assert tb["ssd_to_gpu"] + tb["host_to_gpu"] > 0
    own = parse(OWN_DRIVES, "own.toml")
    two_own = data_parallel(TRAIN_TRACE, policy, own, 2, sets=SMALL_GPU)
    one_own = data_parallel(TRAIN_TRACE, policy, own, 1, sets=SMALL_GPU)
    assert [g["rank_s"] for g in two_own.per_gpu] == [one_own.per_gpu[0]["rank_s"]] * 2
    # 8 ranks on the DGX A100: two GPUs per switch uplink to host memory, all on one RAID0
    eight = data_parallel(TRAIN_TRACE, policy, m, 8, sets=SMALL_GPU)
    assert max(eight.per_gpu[0]["contention"].values()) > 1
    assert eight.iteration_s > one.iteration_s
    assert eight.per_gpu[0]["allreduce_buckets"] > 1


transfers_st = st.lists(st.tuples(st.floats(0, 5), st.floats(1e6, 5e9), st.lists(
    st.lists(st.tuples(st.sampled_from("abcde"), st.floats(0.05, 5)), min_size=1, max_size=3,
             unique_by=lambda x: x[0]), min_size=1, max_size=3)), min_size=1, max_size=12)


@settings(max_examples=100, deadline=None)
@given(transfers_st)
def test_simulated_transfers_conserve_bytes_and_never_beat_their_route_alone(specs):
    from g10core.machine.flows import stripe

    ts = [Transfer(s, b, tuple(tuple(r) for r in routes)) for s, b, routes in specs]
    res = simulate(ts, record=True)
    expect: dict[str, float] = {}
    for t in ts:
        alone = max_min_rates([stripe(t.routes)])[0]
        assert res.finish_s[ts.index(t)] >= t.start_s + t.nbytes / 1e9 / alone * (1 - 1e-9)
        for route in t.routes:
            for hop, _ in route:
                expect[hop] = expect.get(hop, 0.0) + t.nbytes / len(t.routes)
    for hop, b in expect.items():
        assert res.hop_bytes[hop] == pytest.approx(b, rel=1e-9)
    # no hop is ever used beyond its time
    assert all(0 <= use <= 1 + 1e-9 and t1 >= t0 for _, t0, t1, use in res.segments)


def test_a_data_parallel_run_has_a_timeline_track_per_gpu_and_hop_and_frames(tmp_path, capsys):
    out = tmp_path / "tl.json"
    assert main(["machine", "train", TRAIN_TRACE, "--machine", "dgx-a100", "--policy", "teraio", "--gpus", "2",
                 "--set", "gpu.memory_GiB=12", "--no-progress", "--timeline", str(out), "--json",
                 str(tmp_path / "r.json")]) == 0
    ev = json.loads(out.read_text())["traceEvents"]
    gpus = {e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    assert gpus == {"GPU 0", "GPU 1", "GPU 0 all-reduce", "GPU 1 all-reduce"}
    buckets = [e for e in ev if e.get("cat") == "collective"]
    assert buckets and all(e["name"].startswith("all-reduce bucket") for e in buckets)
    hops = {e["name"] for e in ev if e.get("ph") == "C"}
    assert "gpu0 link down" in hops and "drive0 flash" in hops
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["n_gpus"] == 2 and set(d["hops"]) >= hops
    from g10core.machine.training import data_parallel
    per_gpu, per_hop = data_parallel(TRAIN_TRACE, "teraio", shipped("dgx-a100"), 2, sets=SMALL_GPU).to_pandas()
    assert len(per_gpu) == 2 and set(per_hop["hop"]) == set(d["hops"])


def test_the_machine_planner_finds_the_fewest_drives_and_more_drives_never_slow_a_run():
    from g10core.machine.planning import drive_order, fewest_drives

    m = shipped("workstation-1gpu-4ssd")
    every = fewest_drives(TRAIN_TRACE, "teraio", m, 1e-9, sets=SMALL_GPU)      # reached at once: 1 drive
    assert every.drives == 1
    plan = fewest_drives(TRAIN_TRACE, "teraio", m, 1.0, sets=SMALL_GPU)     # ideal itself: missed, all drives run
    assert plan.drives is None
    runs = fewest_drives(TRAIN_TRACE, "teraio", m, 0.999999 * plan.runs[m.drives.count][0], sets=SMALL_GPU).runs
    fractions = [runs[k][0] for k in sorted(runs)]
    assert len(runs) >= 2 and fractions == sorted(fractions)
    target = (runs[min(runs)][0] + runs[max(runs)][0]) / 2
    found = fewest_drives(TRAIN_TRACE, "teraio", m, target, sets=SMALL_GPU)
    brute = min(k for k, (f, _, _) in found.runs.items() if f >= target)
    assert found.drives == brute and all(f < target for k, (f, _, _) in found.runs.items() if k < brute)
    # the DGX A100's drives spread over its four switches before any switch gets a second
    d = shipped("dgx-a100")
    assert drive_order(d, range(8)) == [0, 2, 4, 6, 1, 3, 5, 7]


def test_the_uplink_planner_finds_the_slowest_uplink_and_faster_uplinks_never_slow_a_run(capsys):
    from dataclasses import replace

    from g10core.machine.description import pcie_raw_GBps
    from g10core.machine.planning import least_uplink, uplink_ladder
    from g10core.machine.training import data_parallel

    ladder = uplink_ladder()
    rates = [pcie_raw_GBps(*u) for u in ladder]
    assert rates == sorted(set(rates)) and ladder[0] == (3, 1) and ladder[-1] == (5, 16)
    m = shipped("dgx-a100")

    def fraction(u):
        mm = replace(m, switches=tuple(replace(s, uplink_generation=u[0], uplink_lanes=u[1]) for s in m.switches))
        r = data_parallel(TRAIN_TRACE, "teraio", mm, 1, sets=SMALL_GPU)
        return max(g["ideal_s"] for g in r.per_gpu) / r.iteration_s

    every = {u: fraction(u) for u in ladder[2:]}          # Gen3 x4 and up
    fractions = list(every.values())
    assert fractions == sorted(fractions) and fractions[0] < fractions[-1]     # the uplink binds, then not
    target = (fractions[1] + fractions[2]) / 2
    plan = least_uplink(TRAIN_TRACE, "teraio", m, target, 1, sets=SMALL_GPU)
    brute = next(u for u in ladder[2:] if every[u] >= target)
    assert plan.uplink == brute and plan.runs[brute][0] == pytest.approx(every[brute])
    assert all(f < target for u, (f, _, _) in plan.runs.items() if pcie_raw_GBps(*u) < pcie_raw_GBps(*brute))
    assert len(plan.runs) <= 4                              # a bisection, not the whole ladder
    missed = least_uplink(TRAIN_TRACE, "teraio", m, 1.0, 1, sets=SMALL_GPU)
    assert missed.uplink is None and missed.to_dict()["uplink"] is None
    # the command line: the plan as JSON; a machine with no switch uplink is refused (exit 2, one line)
    assert main(["machine", "plan", TRAIN_TRACE, "--machine", "dgx-a100", "--policy", "teraio", "--gpus", "1",
                 "--target", f"{target}", "--vary", "uplink", "--set", SMALL_GPU[0], "--no-progress",
                 "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["uplink"]["generation"], out["uplink"]["lanes"]) == brute
    assert main(["machine", "plan", TRAIN_TRACE, "--machine", "workstation-1gpu-4ssd", "--policy", "teraio",
                 "--target", "0.5", "--vary", "uplink", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no PCIe switch with an uplink" in err
