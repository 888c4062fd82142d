"""The synthetic trace generator: deterministic, always valid, and the promised shapes."""
import numpy as np
import pytest
from conftest import TRACE_ARRAY_FIELDS
from hypothesis import given, settings
from hypothesis import strategies as st

from g10core.workload.synth import synthesize
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, validate_trace

PAGE = 4096


def _bytes_of(trace):
    return [getattr(trace, f).tobytes() for f in TRACE_ARRAY_FIELDS] + [trace.source, trace.attrs]


@pytest.mark.parametrize("pattern", ["training", "random"])
def test_same_seed_same_trace_bit_for_bit(pattern):
    a = synthesize(300, 3 << 30, pattern=pattern, seed=11)
    b = synthesize(300, 3 << 30, pattern=pattern, seed=11)
    assert _bytes_of(a) == _bytes_of(b)


@pytest.mark.parametrize("pattern", ["training", "random"])
def test_other_seed_other_trace(pattern):
    a = synthesize(300, 3 << 30, pattern=pattern, seed=11)
    b = synthesize(300, 3 << 30, pattern=pattern, seed=12)
    assert not np.array_equal(a.tensor_size_bytes, b.tensor_size_bytes)
    assert not np.array_equal(a.kernel_time_ideal_ns, b.kernel_time_ideal_ns)


@settings(max_examples=60, deadline=None)
@given(pattern=st.sampled_from(["training", "random"]), n_kernels=st.integers(2, 400),
       pages=st.integers(1000, 10**9), seed=st.integers(0, 2**63 - 1), global_fraction=st.floats(0, 0.95),
       reads=st.floats(1, 8), workspace=st.floats(0, 1))
def test_any_arguments_give_a_valid_trace_with_the_exact_footprint(pattern, n_kernels, pages, seed,
                                                                   global_fraction, reads, workspace):
    t = synthesize(n_kernels, pages * PAGE - 7, pattern=pattern, seed=seed, global_fraction=global_fraction,
                   reads_per_kernel=reads, workspace_probability=workspace)
    validate_trace(t)
    assert t.n_kernels == n_kernels
    assert t.footprint_bytes == pages * PAGE
    assert np.all(t.tensor_size_bytes % PAGE == 0)
    t11, t10, t00 = t.kernel_time_ideal_ns, t.kernel_time_fault_outputs_ns, t.kernel_time_fault_all_ns
    assert np.all(t11 > 0) and np.all(t10 >= t11) and np.all(t00 >= t10)
    n_global = int(t.tensor_is_global.sum())
    if n_global:  # the global share is the requested one, up to one page per tensor of slack
        share = t.global_bytes / t.footprint_bytes
        assert abs(share - global_fraction) <= (t.n_tensors + 1) / pages
    # every non-global tensor is written by an earlier kernel than any that reads it
    first_write = np.full(t.n_tensors, np.iinfo(np.int64).max)
    first_read = np.full(t.n_tensors, np.iinfo(np.int64).max)
    k_of = t.access_kernel
    for a in range(t.n_accesses - 1, -1, -1):
        if t.access_mode[a] & ACCESS_WRITE:
            first_write[t.access_tensor[a]] = k_of[a]
        if t.access_mode[a] & ACCESS_READ:
            first_read[t.access_tensor[a]] = k_of[a]
    local = ~t.tensor_is_global
    assert np.all(first_write[local] < first_read[local])
    # workspace bytes round up to a tensor the kernel writes
    for k in np.flatnonzero(t.kernel_workspace_bytes):
        outs = t.kernel_outputs(k)
        want = -(-int(t.kernel_workspace_bytes[k]) // PAGE) * PAGE
        assert want in t.tensor_size_bytes[outs].tolist()


def test_training_shape():
    t = synthesize(2 * 10 + 2, 1 << 30, pattern="training", seed=3, workspace_probability=0.0)
    L = 10
    names = t.kernel_name.tolist()
    assert names == (["load_data"] + [f"forward_{i}" for i in range(1, L + 1)] + ["loss"]
                     + [f"backward_{i}" for i in range(L, 0, -1)])
    tid = {n: i for i, n in enumerate(t.tensor_name.tolist())}
    writer, readers = {}, {}
    for k in range(t.n_kernels):
        for x, m in zip(*t.kernel_accesses(k)):
            if m & ACCESS_WRITE:
                writer.setdefault(int(x), k)
            if m & ACCESS_READ:
                readers.setdefault(int(x), []).append(k)
    # weights: global, read in the forward pass, read+written (updated) in the backward pass
    for i in range(1, L + 1):
        w = tid[f"weight_{i}"]
        assert t.tensor_is_global[w]
        assert readers[w] == [i, 2 * L + 2 - i]
        assert t.access_mode[(t.access_tensor == w)].tolist() == [ACCESS_READ, ACCESS_READ | ACCESS_WRITE]
    # activations: written in order in the forward pass, read back in reverse in the backward pass
    assert [writer[tid[f"act_{i}"]] for i in range(L + 1)] == list(range(L + 1))
    last_reads = [readers[tid[f"act_{i}"]][-1] for i in range(L)]
    assert last_reads == sorted(last_reads, reverse=True)
    assert not t.tensor_is_global[[tid[f"act_{i}"] for i in range(L + 1)]].any()


def test_training_odd_kernel_count_adds_an_optimizer_step():
    t = synthesize(7, 1 << 20, pattern="training")
    assert t.kernel_name[-1] == "optimizer_step" and t.n_kernels == 7


def test_random_pattern_reuse():
    t = synthesize(2000, 8 << 30, pattern="random", seed=5, reads_per_kernel=4.0, n_tensors=500)
    assert t.n_tensors == 500
    reads = (t.access_mode & ACCESS_READ) != 0
    assert 3.0 < reads.sum() / t.n_kernels <= 4.0  # capped by the pool early on
    # each non-global tensor is written exactly once
    writes = np.bincount(t.access_tensor[(t.access_mode == ACCESS_WRITE)], minlength=t.n_tensors)
    assert np.all(writes[~t.tensor_is_global] == 1)


def test_model_batch_and_provenance():
    t = synthesize(10, 1 << 24, seed=9, model="toy", batch_size=32)
    assert (t.model, t.batch_size, t.profiling_gpu) == ("toy", 32, "synthetic")
    assert t.attrs["synth_seed"] == 9 and t.attrs["synth_pattern"] == "training"
    assert "seed=9" in t.source


@pytest.mark.parametrize("kwargs,name", [
    (dict(n_kernels=1), "n_kernels"),
    (dict(footprint_bytes=0), "footprint_bytes"),
    (dict(pattern="zipf"), "pattern"),
    (dict(seed=-1), "seed"),
    (dict(global_fraction=1.0), "global_fraction"),
    (dict(reads_per_kernel=0.5), "reads_per_kernel"),
    (dict(workspace_probability=2.0), "workspace_probability"),
    (dict(kernel_time_us=0.0), "kernel_time_us"),
    (dict(batch_size=0), "batch_size"),
    (dict(pattern="random", n_tensors=0), "n_tensors"),
    # beyond what a trace's 64-bit fields hold (an OverflowError, exit 3, before)
    (dict(footprint_bytes=2**62 + 1), "footprint_bytes"),
    (dict(footprint_bytes=10**23), "footprint_bytes"),
    (dict(seed=2**63), "seed"),
    (dict(batch_size=10**23), "batch_size"),
])
def test_bad_arguments_name_the_parameter(kwargs, name):
    args = dict(n_kernels=10, footprint_bytes=1 << 24)
    args.update(kwargs)
    n, fp = args.pop("n_kernels"), args.pop("footprint_bytes")
    with pytest.raises(ValueError, match=f"synthesize: {name} = "):
        synthesize(n, fp, **args)


def test_footprint_too_small_for_the_tensors():
    with pytest.raises(ValueError, match="fewer than the"):
        synthesize(100, 10 * PAGE, pattern="training")


# ---- physical times (flops_per_byte) ---------------------------------------------------------------------

def test_physical_synthetic_times_are_the_models_on_the_recorded_work():
    from g10core.workload.physical import KIND_GEMM, physical_model
    from g10core.workload.validity import trace_family

    t = synthesize(12, 256 << 20, flops_per_byte=200.0, seed=3)
    w = t.kernel_work
    assert w is not None and trace_family(t) == "synthetic-physical" and t.profiled_gpu == "A100-40GB"
    assert np.array_equal(t.kernel_time_ideal_ns, physical_model().ideal_ns(w, "A100-40GB"))
    # a kernel's bytes are those of the tensors it reads and writes
    sizes = t.tensor_size_bytes
    for k in range(t.n_kernels):
        ts, ms = t.kernel_accesses(k)
        assert w.bytes[k] == sum(int(sizes[x]) * ((m & 1) + (m >> 1 & 1)) for x, m in zip(ts.tolist(), ms.tolist()))
    layers = w.kind == KIND_GEMM
    assert layers.sum() == 10 and np.array_equal(w.flops[layers], 200.0 * w.bytes[layers])
    # more arithmetic per byte: the compute-bound layers take longer, the others do not move
    heavier = synthesize(12, 256 << 20, flops_per_byte=2000.0, seed=3)
    assert np.all(heavier.kernel_time_ideal_ns[layers] > t.kernel_time_ideal_ns[layers])
    assert np.array_equal(heavier.kernel_time_ideal_ns[~layers], t.kernel_time_ideal_ns[~layers])
    assert np.all(t.kernel_time_fault_all_ns >= t.kernel_time_fault_outputs_ns)
    assert np.all(t.kernel_time_fault_outputs_ns >= t.kernel_time_ideal_ns)


def test_physical_synthetic_refuses_bad_arguments():
    with pytest.raises(ValueError, match="flops_per_byte"):
        synthesize(12, 256 << 20, flops_per_byte=0.0)
    with pytest.raises(ValueError, match="gpu = 'A200'"):
        synthesize(12, 256 << 20, flops_per_byte=1.0, gpu="A200")
