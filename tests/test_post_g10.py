"""The offloading policies after G10 (issue 35): vdnn, vdnn-conv, capuchin, ssdtrain, teraio.

Each runs end to end on a small hand-made trace with roles, its schedule's defining property is
checked against hand-computed values, and a trace without the roles it needs is refused in one
line (exit 2 through the CLI).
"""
import numpy as np
import pytest

from g10core import config as C
from g10core import policies
from g10core.cli import main
from g10core.codes import (HINT_FREE, HINT_RECOMPUTE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD, ROLE_ACTIVATION, ROLE_GRADIENT, ROLE_INPUT,
                           ROLE_PARAMETER, ROLE_UNKNOWN)
from g10core.errors import InputError
from g10core.policies import offload
from g10core.policies.ssdtrain import backward_layer_starts, kernel_layers, ssdtrain_schedule
from g10core.policies.vdnn import is_conv_kernel, vdnn_schedule
from g10core.workload.trace import ACCESS_READ as R, ACCESS_WRITE as W, Trace, write_trace

MiB = 1 << 20
N = 4                     # layers
# tensor ids: x 0, W0..W3 1..4, a0..a3 5..8 (layer outputs), m0..m3 9..12 (masks only the backward reads),
# dl 13 (loss gradient), da0..da2 14..16, g0..g3 17..20 (weight gradients)
X, Wt, A, M, DL, DA, G = 0, 1, 5, 9, 13, 14, 17
FWD_NAMES = ["aten::mm", "aten::gelu", "aten::mm", "aten::gelu"]
F_MS, LOSS_MS, B_MS = 1.0, 0.1, 2.0


def layered_trace(roles=True) -> Trace:
    """Four layers: f_i reads a_{i-1} (x for i = 0) and W_i, writes a_i and m_i; the loss reads a_3;
    b_i reads da_i (dl for i = 3), a_{i-1}, m_i and W_i, writes da_{i-1} and g_i.  Kernels: f0..f3 = 0..3,
    makeLoss = 4, b3..b0 = 5..8."""
    sizes = [4 * MiB] + [8 * MiB] * N + [64 * MiB] * N + [16 * MiB] * N + [64 * MiB] + [64 * MiB] * (N - 1) \
        + [8 * MiB] * N
    T = len(sizes)
    glob = np.zeros(T, bool)
    glob[Wt:Wt + N] = True
    kernels = []
    for i in range(N):
        src = X if i == 0 else A + i - 1
        kernels.append((FWD_NAMES[i], F_MS, [(src, R), (Wt + i, R), (A + i, W), (M + i, W)]))
    kernels.append(("makeLoss", LOSS_MS, [(A + N - 1, R), (DL, W)]))
    for i in reversed(range(N)):
        grad_in = DL if i == N - 1 else DA + i
        acc = [(grad_in, R), (X if i == 0 else A + i - 1, R), (M + i, R), (Wt + i, R)]
        if i > 0:
            acc.append((DA + i - 1, W))
        acc.append((G + i, W))
        kernels.append((f"Backward{i}", B_MS, acc))
    acc = [a for _, _, accs in kernels for a in accs]
    K = len(kernels)
    role = np.full(T, ROLE_UNKNOWN, np.int8)
    layer = np.full(T, -1, np.int32)
    if roles:
        role[X] = ROLE_INPUT
        role[Wt:Wt + N] = ROLE_PARAMETER
        role[G:G + N] = ROLE_GRADIENT
        layer[Wt:Wt + N] = layer[G:G + N] = np.arange(N)
        role[A:A + N] = role[M:M + N] = ROLE_ACTIVATION
    ms = np.array([k[1] for k in kernels])
    return Trace(model="layered", batch_size=1, tensor_size_bytes=np.array(sizes, np.int64), tensor_is_global=glob,
                 tensor_name=np.array([f"t{t}" for t in range(T)]), kernel_name=np.array([k[0] for k in kernels]),
                 kernel_time_ideal_ns=ms * 1e6, kernel_time_fault_all_ns=ms * 3e6,
                 kernel_time_fault_outputs_ns=ms * 2e6, kernel_workspace_bytes=np.zeros(K, np.int64),
                 access_offsets=np.cumsum([0] + [len(k[2]) for k in kernels]).astype(np.int64),
                 access_tensor=np.array([t for t, _ in acc], np.int32),
                 access_mode=np.array([m for _, m in acc], np.uint8), source="hand-made", profiling_gpu="none",
                 tensor_role=role, tensor_layer=layer)


def cfg(**sets):
    items = [f"{k.replace('__', '.')}={v}" for k, v in {"gpu__memory_GiB": 1, **sets}.items()]
    return C.resolve("default", sets=items)


def rows(hints):
    return sorted((int(h["kernel"]), int(h["tensor"]), int(h["action"])) for h in hints)


def test_saved_activations_of_the_layered_trace():
    tr = layered_trace()
    s = offload.saved_activations(tr, 4)
    # a0..a3 and m0..m3; x is an input, the weights are parameters
    assert s.tensor.tolist() == [A, A + 1, A + 2, A + 3, M, M + 1, M + 2, M + 3]
    assert s.last_forward.tolist() == [1, 2, 3, 3, 0, 1, 2, 3]
    assert s.back_access.tolist() == [7, 6, 5, 4, 8, 7, 6, 5]       # b_{i+1} = 8 - i - 1 reads a_i
    assert s.forward_read.tolist() == [True, True, True, False] + [False] * 4
    assert s.producer.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]


def test_vdnn_offloads_exactly_the_forward_inputs_and_prefetches_one_layer_ahead():
    tr = layered_trace()
    plan = vdnn_schedule(tr, cfg())
    # X of f1, f2, f3: a0, a1, a2 (a3 and the masks are not a forward layer's input); each leaves after
    # its last forward reader and comes back at the backward kernel before its first backward reader
    assert rows(plan["hints"]) == sorted([(2, A, HINT_TO_HOST), (6, A, HINT_TO_GPU),
                                          (3, A + 1, HINT_TO_HOST), (5, A + 1, HINT_TO_GPU),
                                          (4, A + 2, HINT_TO_HOST)])   # a2: b3 (5) follows the loss at once
    assert plan["info"]["n_offloaded"] == 3 and plan["info"]["offloaded_bytes"] == 3 * 64 * MiB
    conv = vdnn_schedule(tr, cfg(), conv_only=True)
    # vDNN-conv: only the inputs of the matrix-product layers f0 and f2 (x is an input, a1 is f2's)
    assert sorted({int(t) for t in conv["hints"]["tensor"]}) == [A + 1]
    assert is_conv_kernel("aten::addmm") and is_conv_kernel("Conv2d_Forward") and is_conv_kernel("aten::bmm")
    assert not is_conv_kernel("aten::gelu") and not is_conv_kernel("aten::mean")


def test_vdnn_end_to_end_moves_what_it_planned():
    res = policies.get("vdnn")(cfg()).simulate(layered_trace())
    assert not res["failed"], res["failure_reason"]
    # One FIFO to host; a 64 MiB offload takes 4.26 ms at 15.754 GB/s.  a0 leaves at 2 ms (until
    # 6.26 ms); a1 (queued at 3 ms) and a2 (at 4 ms) wait behind it, and their readers come first:
    # b3 (4.1 ms) reads a2, b2 (6.1 ms) reads a1, so both queued offloads are cancelled (an offload
    # that has not started is not run for a tensor a kernel needs now).  Only a0 moves, and comes back.
    assert res["traffic_bytes"]["gpu_to_host"] == 64 * MiB
    assert res["n_cancelled_transfers"] == 2
    assert res["traffic_bytes"]["host_to_gpu"] == 64 * MiB
    assert res["time_s"] >= res["ideal_time_s"]
    assert res["policy"] == "vdnn" and res["schedule"]["n_offloaded"] == 3


def test_ssdtrain_layers_and_forwarding_count():
    tr = layered_trace()
    kl = kernel_layers(tr)
    assert kl.tolist() == [0, 1, 2, 3, 3, 3, 2, 1, 0]       # the loss takes the layer before it
    # backward segments: [4, 5] layer 3, [6] layer 2, [7] layer 1, [8] layer 0
    assert backward_layer_starts(kl, 4).tolist() == [4, 4, 4, 6, 7]
    # SSD 32 GB/s under a 64 GB/s link: a 64 MiB write takes 2.097 ms, a 16 MiB one 0.524 ms.  Kernels start
    # at 0, 1, 2, 3, 4, 4.1, 6.1, 8.1, 10.1 ms.  Writes in order of last forward use:
    #   m0 [1, 1.524] before its prefetch at k7 (8.1): offloaded
    #   a0 [2, 4.097] before k6 (6.1): offloaded;  m1 [4.097, 4.621] before k6: offloaded
    #   a1 [4.621, 6.718] after its prefetch at k4 (4.0): forwarded; so are m2, a2, m3 (later still)
    #   a3: read by the loss right after its last forward use: forwarded
    plan = ssdtrain_schedule(tr, cfg(ssd__bandwidth_GBps=32, link__bandwidth_GBps=64))
    assert plan["info"]["n_forwarded"] == 5 and sorted(plan["forwarded"]) == sorted([A + 1, M + 2, A + 2, A + 3,
                                                                                      M + 3])
    assert rows(plan["hints"]) == sorted([(1, M, HINT_TO_SSD), (7, M, HINT_TO_GPU), (2, A, HINT_TO_SSD),
                                          (6, A, HINT_TO_GPU), (2, M + 1, HINT_TO_SSD), (6, M + 1, HINT_TO_GPU)])
    # a slow SSD forwards more: at 3.2 GB/s the first write (m0, 5.2 ms) ends before k7 only
    slow = ssdtrain_schedule(tr, cfg())
    assert slow["info"]["n_offloaded"] == 1 and slow["info"]["n_forwarded"] == 7
    res = policies.get("ssdtrain")(cfg(ssd__bandwidth_GBps=32, link__bandwidth_GBps=64)).simulate(tr)
    assert not res["failed"], res["failure_reason"]
    assert res["traffic_bytes"]["gpu_to_ssd"] == (64 + 16 + 16) * MiB
    assert res["traffic_bytes"]["gpu_to_host"] == 0


@pytest.mark.parametrize("name", ["vdnn", "vdnn-conv", "ssdtrain"])
def test_a_trace_without_roles_is_refused_in_one_line(name):
    tr = layered_trace(roles=False)
    with pytest.raises(InputError, match=rf"policy '{name}' cannot run on trace layered-b1: it needs tensors of "
                                         r"role activation"):
        policies.get(name)(cfg()).simulate(tr)


def test_ssdtrain_without_parameter_layers_is_refused():
    tr = layered_trace()
    tr.tensor_layer[:] = -1
    with pytest.raises(InputError, match="it needs the layer of its parameters"):
        policies.get("ssdtrain")(cfg()).simulate(tr)


def test_cli_refusal_exits_2(tmp_path, capsys):
    path = tmp_path / "layered-b1.h5"
    write_trace(layered_trace(roles=False), path)
    code = main(["run", str(path), "--policy", "vdnn", "--set", "gpu.memory_GiB=1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "needs tensors of role activation" in err and "Traceback" not in err


def test_refused_under_detailed_as_the_tensor_level_policies_are(tmp_path, capsys):
    path = tmp_path / "layered-b1.h5"
    write_trace(layered_trace(), path)
    code = main(["run", str(path), "--policy", "ssdtrain", "--preset", "detailed"])
    err = capsys.readouterr().err
    assert code == 2 and "is tensor level and does not run through the detailed components" in err


# ---- Capuchin ---------------------------------------------------------------------------------------------

def test_capuchin_swaps_hidden_ones_first_then_the_cheaper_of_recompute_and_swap():
    from g10core.policies.capuchin import capuchin_choose

    # five kernels, resident bytes 5, 9, 9, 9, 5 against a capacity of 6: kernels 1-3 need 3 bytes less
    def cand(rc3):
        return {"tensor": np.array([10, 11, 12, 13]), "evicted": np.zeros(4, np.int64),
                "back": np.full(4, 4), "producer": np.zeros(4, np.int64), "size": np.array([1, 1, 2, 1]),
                "free_time_s": np.array([0.5, 2.0, -1.0, -0.2]), "recompute_s": np.array([1.0, 1.0, 0.5, rc3])}
    # phase 1: the swaps that hide, largest free time first: 11 (FT 2.0), 10 (FT 0.5); one byte short.
    # phase 2: largest MSPS is 13 (1 B / 0.1 s = 10 B/s, beside 12's 2 / 0.5 = 4); its recompute (0.1 s)
    # costs less than the cheapest swap (13's own, 0.2 s over its free time): recompute 13
    live = np.array([5, 9, 9, 9, 5], np.int64)
    got = capuchin_choose(cand(0.1), live, 6)
    assert list(got.items()) == [(11, "swap"), (10, "swap"), (13, "recompute")]
    assert live.tolist() == [5, 6, 6, 6, 5]
    # a recompute dearer (0.3 s) than that swap: 13 is swapped instead
    got = capuchin_choose(cand(0.3), np.array([5, 9, 9, 9, 5], np.int64), 6)
    assert list(got.items()) == [(11, "swap"), (10, "swap"), (13, "swap")]


def test_capuchin_swaps_share_the_link():
    from g10core.policies.capuchin import capuchin_choose

    # four kernels, 4 bytes over the capacity in kernels 1-2; two candidates idle there, each hidden alone
    # (FT 1.0 and 0.5 s) but each needing 1 s out and 1 s in, where the link has 0.3 s left per kernel
    cand = {"tensor": np.array([10, 11]), "evicted": np.zeros(2, np.int64), "back": np.full(2, 3),
            "producer": np.zeros(2, np.int64), "size": np.array([2, 2]), "free_time_s": np.array([1.0, 0.5]),
            "swap_s": np.array([2.0, 2.0]), "recompute_s": np.array([np.inf, 0.5])}
    assert list(capuchin_choose(cand, np.array([5, 10, 10, 5]), 6).items()) == [(10, "swap"), (11, "swap")]
    link = (np.array([1, 0.3, 0.3, 1]), np.array([1, 0.3, 0.3, 1]))
    # neither hides: each swap lacks 1 - 0.6 s in each direction (0.8 s); 11's recompute (0.5 s) is cheaper,
    # 10 is not recomputable and is swapped, taking what the link has left
    got = capuchin_choose(cand, np.array([5, 10, 10, 5]), 6, link=link)
    assert list(got.items()) == [(11, "recompute"), (10, "swap")]
    assert link[0][1:3].tolist() == [0, 0] and link[1][1:3].tolist() == [0, 0]


def test_capuchin_candidates_costs_on_the_layered_trace():
    from g10core.policies.capuchin import capuchin_candidates

    c = capuchin_candidates(layered_trace(), cfg(host__bandwidth_GBps=16, link__bandwidth_GBps=32))
    i = c["tensor"].tolist().index(A)
    # a0: idle from k2 (2 ms) to its back access b1 = k7 (8.1 ms); swaps out and in at 16 GB/s
    swap_in = 64 * MiB / 16e9
    assert c["swap_in_s"][i] == pytest.approx(swap_in)
    assert c["free_time_s"][i] == pytest.approx(6.1e-3 - 2 * swap_in)
    # its producer f0 reads x and W0, both still there at k7: recompute costs f0's 1 ms
    assert c["recompute_s"][i] == pytest.approx(1e-3, rel=1e-6)


def test_capuchin_end_to_end_swaps_and_recomputes():
    # 0.35 GiB (358 MiB) against a 428 MiB peak, a 4 GB/s host path: m0 (16 MiB, idle k1-k8) is swapped and
    # hides; a0's swap (64 MiB, 16.8 ms each way) cannot hide in its 6.1 ms gap, and re-running f0 (1 ms)
    # costs less: a0 is freed after f1 and recomputed at b1
    tr = layered_trace()
    c = cfg(gpu__memory_GiB=0.35, host__bandwidth_GBps=4, link__bandwidth_GBps=32)
    pol = policies.get("capuchin")(c)
    plan = pol.make_plan(tr)
    assert plan["choice"] == {M: "swap", A: "recompute"}
    assert rows(plan["hints"]) == sorted([(1, M, HINT_TO_HOST), (plan["hints"]["kernel"][
        (plan["hints"]["tensor"] == M) & (plan["hints"]["action"] == HINT_TO_GPU)][0], M, HINT_TO_GPU),
        (2, A, HINT_FREE), (7, A, HINT_RECOMPUTE)])
    res = pol.simulate(tr)
    assert not res["failed"], res["failure_reason"]
    assert res["time_s"] >= res["ideal_time_s"] + 1e-3 * (1 - 1e-9)      # f0 runs again
    assert res["traffic_bytes"]["gpu_to_host"] == 16 * MiB


# ---- TERAIO -----------------------------------------------------------------------------------------------

def test_teraio_offloads_the_longest_inactive_periods_first():
    from g10core.policies.teraio import teraio_schedule

    tr = layered_trace()
    tl = offload.Timeline(tr, cfg())
    peak = int(offload.live_bytes(tr, tl).max())
    # 20 MiB short at the peak (kernel 5): the longest idle periods (9.1 ms, k1 to k8) are x's, W0's and m0's;
    # taken in that order (ties by tensor id) they free 4 + 8 + 16 MiB.  At 32 GB/s each write ends within
    # k1 and each read fits in k7 (0.91 ms of SSD time in each); at 3.2 GB/s m0's round trip (10.5 ms)
    # would not fit its 9.1 ms
    gib = (peak - 20 * MiB) / (1 << 30)
    fast = {"gpu__memory_GiB": gib, "ssd__bandwidth_GBps": 32, "link__bandwidth_GBps": 64}
    plan = teraio_schedule(tr, cfg(**fast))
    assert [c[0] for c in plan["chosen"]] == [X, Wt, M]
    assert all((c[1], c[2]) == (1, 8) for c in plan["chosen"])
    assert plan["info"]["peak_bytes_planned"] <= plan["info"]["gpu_capacity_bytes"]
    assert rows(plan["hints"]) == sorted([(1, X, HINT_TO_SSD), (1, Wt, HINT_TO_SSD), (1, M, HINT_TO_SSD),
                                          (7, X, HINT_TO_GPU), (7, Wt, HINT_TO_GPU), (7, M, HINT_TO_GPU)])
    assert (plan["planned_live_bytes"] == offload.live_bytes(tr, tl) - np.array([0, 0, 28, 28, 28, 28, 28, 0, 0]) * MiB).all()
    res = policies.get("teraio")(cfg(**fast)).simulate(tr)
    assert not res["failed"], res["failure_reason"]
    assert res["traffic_bytes"]["gpu_to_ssd"] == 28 * MiB


def test_teraio_needs_no_roles_and_does_nothing_when_the_model_fits():
    res = policies.get("teraio")(cfg()).simulate(layered_trace(roles=False))
    assert not res["failed"] and res["schedule"]["n_offloads"] == 0
    assert res["time_s"] == pytest.approx(res["ideal_time_s"])


# ---- a captured model -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def captured_gpt2():
    pytest.importorskip("torch")
    from g10core.capture import capture_family

    return capture_family("gpt2", "small", batch=2, seq_len=32, layers=2, hidden=64, heads=4, vocab_size=500)


@pytest.mark.parametrize("name", ["vdnn", "vdnn-conv", "ssdtrain"])
def test_activation_offloaders_on_a_captured_model(captured_gpt2, name):
    # they offload whether or not the model fits (as published): what they write goes out and is moved
    pol = policies.get(name)(C.preset("default"))
    plan = pol.make_plan(captured_gpt2)
    offloads = plan["hints"][np.isin(plan["hints"]["action"], [HINT_TO_HOST, HINT_TO_SSD])]
    assert offloads.size > 0
    # every offloaded tensor is an activation the backward pass reads
    assert (captured_gpt2.tensor_role[offloads["tensor"]] == ROLE_ACTIVATION).all()
    res = pol.simulate(captured_gpt2)
    assert not res["failed"], res["failure_reason"]
    moved = res["traffic_bytes"]["gpu_to_host"] + res["traffic_bytes"]["gpu_to_ssd"]
    assert moved == plan["info"]["offloaded_bytes"]


def test_teraio_on_a_captured_model_short_of_memory(captured_gpt2):
    tl = offload.Timeline(captured_gpt2, C.preset("default"))
    peak = int(offload.live_bytes(captured_gpt2, tl).max())
    c = cfg(gpu__memory_GiB=0.93 * peak / (1 << 30))
    res = policies.get("teraio")(c).simulate(captured_gpt2)
    assert not res["failed"], res["failure_reason"]
    assert res["schedule"]["n_offloads"] > 0 and res["traffic_bytes"]["gpu_to_ssd"] > 0
    assert res["schedule"]["peak_bytes_planned"] <= res["schedule"]["gpu_capacity_bytes"]
