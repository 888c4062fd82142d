"""`g10sim trace import-torch` / `import_profile`: a real torch.profiler profile as a trace.

The profiles are recorded here, on the CPU, of a 2-layer MLP (one AdamW training iteration after a
warm-up step), with ``torch.profiler.profile(record_shapes=True, execution_trace_observer=...)``.
A GPU profile is made from that recording the way a GPU run would look: the execution trace's
tensors moved to ``cuda:0`` and GPU kernels added to the Kineto trace (linked by External id, or
only by the CUDA launch's correlation id), with an A100's device properties.
"""
from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from g10core.capture.profile import device_gpu_model, import_profile
from g10core.cli import main
from g10core.errors import ProfileError
from g10core.workload.kerneltime import KernelFeatures, KernelTimeModel
from g10core.workload.trace import ACCESS_READ, ACCESS_WRITE, read_trace, summarize

SRC = Path(__file__).resolve().parents[1] / "src"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(execution trace, Kineto trace, the model's parameter sizes in bytes) of one MLP iteration."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile

    d = tmp_path_factory.mktemp("prof")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    step()   # the optimizer's state exists: the recorded step is a steady-state one
    et = ExecutionTraceObserver().register_callback(str(d / "mlp.et.json"))
    try:
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, execution_trace_observer=et) as prof:
            step()
        prof.export_chrome_trace(str(d / "mlp.kineto.json"))
    finally:
        et.unregister_callback()
    params = sorted(p.numel() * p.element_size() for p in model.parameters())
    return d / "mlp.et.json", d / "mlp.kineto.json", params


# ---- an independent reading of the profile (intervals of the Kineto trace, not the ET tree) ---------

def _written(schema: str) -> tuple[list, bool]:
    args = schema[schema.find("(") + 1: schema.rfind(") -> ")]
    parts = re.split(r",\s*(?![^\[(]*[\])])", args)
    returns = schema[schema.rfind(") -> ") + 5:]
    return ["!" in p.split("=")[0] for p in parts if p.strip() != "*"], ("(a" in returns and "!" not in returns)


def _reference_cpu(et_path, kineto_path):
    """(count, total ns) of the kernels a CPU-only profile should give."""
    et = json.loads(Path(et_path).read_text())
    by_rf = {}
    for n in et["nodes"]:
        attrs = {a["name"]: a["value"] for a in n["attrs"]}
        by_rf[attrs["rf_id"]] = (n, attrs.get("op_schema", ""))
    ops = [e for e in json.loads(Path(kineto_path).read_text())["traceEvents"] if e.get("cat") == "cpu_op"]

    def storages(values):
        out = []
        for v in values:
            if isinstance(v, list) and len(v) == 6 and isinstance(v[1], int) and v[3] > 0:
                out.append(v[1])
        return out

    info = []
    for e in ops:
        n, schema = by_rf[e["args"]["Record function id"]]
        written_flags, view = _written(schema)
        ins = storages(n["inputs"]["values"])
        writes = {s for i, v in enumerate(n["inputs"]["values"]) if i < len(written_flags) and written_flags[i]
                  for s in storages([v])}
        writes |= set(storages(n["outputs"]["values"])) - set(ins)
        name = e["name"]
        computing = name.startswith("aten::") and not view and not name.startswith("aten::empty") and bool(writes)
        info.append({"ts": e["ts"], "end": e["ts"] + e["dur"], "dur": e["dur"], "writes": writes,
                     "computing": computing, "rf": e["args"]["Record function id"]})
    comp = [i for i in info if i["computing"]]

    def inside(b, a):
        if b is a or not (a["ts"] <= b["ts"] and b["end"] <= a["end"]):
            return False
        same = a["ts"] == b["ts"] and a["end"] == b["end"]
        return not same or a["rf"] < b["rf"]        # the same interval: the parent starts first

    def count(ops):
        """An outermost computing operator is one kernel when what it nests writes only what it writes;
        else it is one kernel (its own time) and its nested operators count on their own."""
        n = 0
        for a in [a for a in ops if not any(inside(a, b) for b in ops)]:
            inner = [b for b in ops if inside(b, a)]
            n += 1 if all(b["writes"] <= a["writes"] for b in inner) else 1 + count(inner)
        return n

    outermost = [a for a in comp if not any(inside(a, b) for b in comp)]
    return count(comp), sum(a["dur"] for a in outermost) * 1e3


# ---- CPU profile ---------------------------------------------------------------------------------

def test_cpu_profile_kernels_and_ideal_time_equal_the_profiles_own(recorded):
    et, kin, params = recorded
    trace = import_profile(et, kin, model="mlp", batch_size=32)
    count, total_ns = _reference_cpu(et, kin)
    assert trace.n_kernels == count
    # the times are the profile's µs floats in ns: equal up to float rounding
    assert trace.kernel_time_ideal_ns.sum() == pytest.approx(total_ns, rel=1e-9)
    a = trace.attrs
    assert a["import_time_source"] == "cpu" and a["import_device"] == "cpu" and trace.profiled_gpu == ""
    assert "CPU" in trace.profiling_gpu and "CPU durations" in trace.source
    assert a["import_et_file"] == et.name and a["import_kineto_file"] == kin.name
    assert len(a["import_et_sha256"]) == 64 and a["import_operators_not_in_et"] == 0
    assert trace.model == "mlp" and trace.batch_size == 32


def test_cpu_profile_with_physical_times(recorded, tmp_path, capsys):
    # the MLP (32 x 64 -> 128 -> 10, AdamW): its linear layers' FLOPs from their shapes, every kernel
    # timed by the physical model on the named GPU, the work stored and the family said
    from g10core.workload import physical as ph
    from g10core.workload.validity import trace_family

    et, kin, _ = recorded
    measured = import_profile(et, kin, model="mlp", batch_size=32)
    trace = import_profile(et, kin, model="mlp", batch_size=32, cpu_times="physical", gpu="H100-SXM")
    assert trace.n_kernels == measured.n_kernels and np.array_equal(trace.tensor_size_bytes, measured.tensor_size_bytes)
    w = trace.kernel_work
    assert w is not None and trace.profiled_gpu == "H100-SXM" and trace_family(trace) == "imported-cpu-physical"
    assert trace.attrs["import_cpu_times"] == "physical" and "physical model physical-v1" in trace.source
    assert np.array_equal(trace.kernel_time_ideal_ns, ph.physical_model().ideal_ns(w, "H100-SXM"))
    gemm = np.flatnonzero(w.kind == ph.KIND_GEMM)
    # forward: 2 x 32 x 64 x 128 and 2 x 32 x 128 x 10 FLOPs
    assert {2 * 32 * 64 * 128, 2 * 32 * 128 * 10} <= set(w.flops[gemm].astype(int).tolist())
    assert np.all(w.unit[gemm] == ph.UNIT_CUDA_FP32)       # fp32 products: PyTorch's default, no TF32
    assert np.all(w.bytes > 0) and np.all(trace.kernel_time_ideal_ns >= 3500)
    # the same work on an A100 is slower, and the trace retargets on it like a captured one
    from g10core.workload.retarget import retarget

    moved, info = retarget(trace, "A100-40GB")
    assert info["method"].startswith("physical") and moved.ideal_time_ns > trace.ideal_time_ns
    # a GPU profile's times stay measured; a bad choice is refused by name
    with pytest.raises(ValueError, match="cpu_times"):
        import_profile(et, kin, cpu_times="fitted")
    with pytest.raises(ValueError, match="unknown GPU"):
        import_profile(et, kin, cpu_times="physical", gpu="A200")
    code, out, _ = run(capsys, "trace", "import-torch", "--et", et, "--kineto", kin, "-o", tmp_path / "p.h5",
                       "--cpu-times", "physical", "--gpu", "A100-80GB")
    assert code == 0 and "physical-v1 times on the A100-80GB" in out
    assert read_trace(tmp_path / "p.h5").kernel_work is not None


def test_cpu_profile_roles_and_sizes(recorded):
    et, kin, params = recorded
    trace = import_profile(et, kin)
    roles = json.loads(trace.attrs["import_tensor_roles"])
    assert roles["param"] == 4 and roles["grad"] == 4 and roles["optimizer_state"] >= 8
    names = trace.tensor_name.tolist()
    param_sizes = sorted(int(s) for s, n in zip(trace.tensor_size_bytes, names) if n.startswith("param:"))
    grad_sizes = sorted(int(s) for s, n in zip(trace.tensor_size_bytes, names) if n.startswith("grad:"))
    assert param_sizes == params and grad_sizes == params
    glob = {n for n, g in zip(names, trace.tensor_is_global) if g}
    assert all(n.startswith(("param:", "optimizer_state:")) for n in glob)
    # the forward matrix products read the input and a weight, write their result
    k = trace.kernel_name.tolist().index("aten::addmm")
    lo, hi = trace.access_offsets[k], trace.access_offsets[k + 1]
    acc = {names[t]: int(m) for t, m in zip(trace.access_tensor[lo:hi], trace.access_mode[lo:hi])}
    assert sum(1 for n, m in acc.items() if n.startswith("param:") and m == ACCESS_READ) == 2
    # exactly one forward tensor is written: the product.  The input it reads is "input:" in most
    # recordings, but the execution trace identifies tensors by storage, and when the batch's
    # storage reuses a freed temporary's (seen once in three CI runs) it reads as "fwd:"
    assert [m for n, m in acc.items() if n.startswith("fwd:") and m & ACCESS_WRITE] == [ACCESS_WRITE]
    assert all(m == ACCESS_READ for n, m in acc.items() if not n.startswith("param:") and not m & ACCESS_WRITE)
    # the optimizer updates every parameter in place
    upd = {names[t] for t, m in zip(trace.access_tensor, trace.access_mode)
           if m == ACCESS_READ | ACCESS_WRITE and names[t].startswith("param:")}
    assert len(upd) == 4


def test_fault_times_come_from_the_calibrated_model(recorded):
    et, kin, _ = recorded
    trace = import_profile(et, kin)
    t11, t10, t00 = trace.kernel_time_ideal_ns, trace.kernel_time_fault_outputs_ns, trace.kernel_time_fault_all_ns
    assert np.all(t00 >= t10) and np.all(t10 >= t11)
    # a kernel that writes: t10 - t11 = out_fixed + out_bytes / out_GBps of its class (rounded to ns)
    model = KernelTimeModel()
    k = trace.kernel_name.tolist().index("aten::addmm")
    lo, hi = trace.access_offsets[k], trace.access_offsets[k + 1]
    out_b = sum(int(trace.tensor_size_bytes[t]) for t, m in zip(trace.access_tensor[lo:hi],
                                                                  trace.access_mode[lo:hi]) if m & ACCESS_WRITE)
    c = model.calibration.coefficients("Linear_Forward", "linear")
    # (each time is rounded to whole ns on its own, so their difference is within 1 ns of the closed form)
    assert abs(t10[k] - t11[k] - round(c.out_fault_fixed_us * 1e3 + out_b / c.out_fault_GBps)) <= 1
    feat = KernelFeatures(op=np.array(["Linear_Forward"]), kernel_class=np.array(["linear"]), flops=np.zeros(1),
                          bytes=np.zeros(1), peak_flops_per_s=np.ones(1), in_bytes=np.zeros(1),
                          out_bytes=np.array([float(out_b)]))
    assert abs(model.fault_times_ns(feat, [t11[k]])[0][0] - t10[k]) <= 1


@pytest.mark.parametrize("policy", ["base-uvm", "belady", "deepum", "g10"])
def test_imported_profile_runs_under_every_page_policy_with_paging(recorded, tmp_path, capsys, policy):
    et, kin, _ = recorded
    out = tmp_path / "mlp.h5"
    code, stdout, err = run(capsys, "trace", "import-torch", "--et", et, "--kineto", kin, "-o", out,
                            "--json", "-")
    assert code == 0 and err == ""
    info = summarize(read_trace(out))
    # GPU memory: 30 % of the footprint, never below the largest kernel's working set
    mem = max(0.3 * info["footprint_bytes"], 1.25 * info["max_kernel_working_set_bytes"]) / 2**30
    code, stdout, err = run(capsys, "run", out, "--policy", policy, "--set", f"gpu.memory_GiB={mem:.6f}",
                            "--json", "-")
    assert code == 0, err
    result = json.loads(stdout)
    assert not result["failed"]
    traffic = result["traffic_pages"]
    assert traffic["gpu_to_host"] + traffic["gpu_to_ssd"] > 0       # pages were evicted: paging happened
    assert result["iteration_time_s"] >= 0.999 * result["ideal_time_s"]


def test_cli_human_output(recorded, tmp_path, capsys):
    et, kin, _ = recorded
    code, stdout, err = run(capsys, "trace", "import-torch", "--et", et, "--kineto", kin, "-o", tmp_path / "m.h5")
    assert code == 0 and err == ""
    assert "kernels from operator CPU durations (a CPU-only profile)" in stdout and "4 parameter" in stdout


def test_import_needs_no_torch(recorded, tmp_path):
    et, kin, _ = recorded
    code = (f"import sys; sys.modules['torch'] = None\n"
            f"from g10core.capture.profile import import_profile\n"
            f"t = import_profile({str(et)!r}, {str(kin)!r}); print(t.n_kernels)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 0


# ---- a GPU profile -------------------------------------------------------------------------------

def _gpu_pair(et_path, kin_path, d: Path):
    """A GPU-shaped pair from the CPU recording; (et, kineto, kernels added per External id, loose ns)."""
    et = json.loads(Path(et_path).read_text())
    for n in et["nodes"]:
        for side in ("inputs", "outputs"):
            for v in n[side]["values"]:
                for t in ([v] if v and not isinstance(v[0], list) else v) if isinstance(v, list) else []:
                    # device tensors to cuda:0; the wrapped Python scalars (0-dim doubles) stay on the host
                    if isinstance(t, list) and len(t) == 6 and t[5] == "cpu" and not (t[3] == 1 and t[4] == 8):
                        t[5] = "cuda:0"
    kin = json.loads(Path(kin_path).read_text())
    by_rf = {a["value"]: n for n in et["nodes"] for a in n["attrs"] if a["name"] == "rf_id"}
    added = {}
    events = kin["traceEvents"]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    launch = [e for e in ops if e["name"] in ("aten::addmm", "aten::mm", "aten::clamp_min", "aten::_log_softmax",
                                              "aten::sum", "aten::addcdiv_", "aten::lerp_")]
    corr = 1000
    for i, e in enumerate(launch):
        ext = e["args"]["External id"]
        for j in range(1 + (e["name"] == "aten::sum")):       # sum launches two kernels
            corr += 1
            dur = 1.5 + 0.25 * i + j
            args = {"device": 0, "stream": 7, "correlation": corr}
            if i % 3:                                          # some carry only the correlation id
                args["External id"] = ext
            events.append({"ph": "X", "cat": "kernel", "name": f"void k{i}_{j}", "pid": 0, "tid": 7,
                           "ts": e["ts"] + 0.5 + j, "dur": dur, "args": args})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": e["pid"],
                           "tid": e["tid"], "ts": e["ts"] + 0.1, "dur": 0.2,
                           "args": {"External id": ext, "correlation": corr}})
            added.setdefault(ext, []).append(dur)
        assert by_rf[e["args"]["Record function id"]]["name"] == e["name"]
    # GPU work no operator launched (an NCCL-like kernel outside the recorded operators)
    events.append({"ph": "X", "cat": "kernel", "name": "void loose", "pid": 0, "tid": 7, "ts": ops[-1]["ts"] + 5,
                   "dur": 3.0, "args": {"device": 0, "stream": 7, "correlation": 99999, "External id": 0}})
    kin["deviceProperties"] = [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42505273344,
                                "computeMajor": 8, "computeMinor": 0, "numSms": 108}]
    kin["cuda_driver_version"], kin["cuda_runtime_version"], kin["cupti_version"] = "12020", "12010", "18"
    (d / "gpu.et.json").write_text(json.dumps(et))
    (d / "gpu.kineto.json").write_text(json.dumps(kin))
    return d / "gpu.et.json", d / "gpu.kineto.json", added, 3.0e3


def test_gpu_profile_one_kernel_per_launching_operator(recorded, tmp_path):
    et, kin, params = recorded
    g_et, g_kin, added, loose_ns = _gpu_pair(et, kin, tmp_path)
    trace = import_profile(g_et, g_kin)
    assert trace.n_kernels == len(added) + 1                       # + the loose kernel
    expected_ns = sum(sum(v) for v in added.values()) * 1e3 + loose_ns
    assert trace.kernel_time_ideal_ns.sum() == pytest.approx(expected_ns, rel=1e-12)
    assert sorted(trace.kernel_time_ideal_ns.tolist()[:-1] + [0])[-1] > 0
    a = trace.attrs
    assert a["import_time_source"] == "gpu" and a["import_device"] == "NVIDIA A100-SXM4-40GB"
    assert trace.profiled_gpu == "A100-40GB" and a["import_cuda_driver_version"] == "12020"
    assert a["import_gpu_time_ns"] == pytest.approx(expected_ns) and a["import_unattributed_gpu_activities"] == 1
    names = trace.kernel_name.tolist()
    assert names.count("aten::addmm") == 2 and names.count("aten::mm") == 3 and "gpu:void loose" in names
    k = names.index("gpu:void loose")
    assert trace.access_offsets[k] == trace.access_offsets[k + 1]   # it touches no tensor
    # host scalars are not GPU tensors; the parameters are
    assert not any(n.startswith("input:") and s == 8 for n, s in zip(trace.tensor_name, trace.tensor_size_bytes))
    psizes = sorted(int(s) for s, n in zip(trace.tensor_size_bytes, trace.tensor_name) if n.startswith("param:"))
    assert psizes == params


@pytest.mark.parametrize("name,table", [
    ("NVIDIA A100-SXM4-40GB", "A100-40GB"), ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
    ("NVIDIA A100 80GB PCIe", "A100-80GB"), ("NVIDIA H100 80GB HBM3", "H100-SXM"), ("NVIDIA H100 PCIe", "H100-PCIe"),
    ("NVIDIA H200", "H200"), ("NVIDIA B200", "B200"), ("NVIDIA L40S", "L40S"),
    ("NVIDIA GeForce RTX 4090", "RTX-4090"), ("NVIDIA H100 NVL", ""), ("Tesla V100-SXM2-16GB", ""),
])
def test_device_names_map_to_the_gpu_table(name, table):
    assert device_gpu_model(name) == table


# ---- refused: damaged files and pairs from different runs ----------------------------------------

def _refused(capsys, et, kin, tmp_path, *words):
    code, out, err = run(capsys, "trace", "import-torch", "--et", et, "--kineto", kin, "-o", tmp_path / "x.h5")
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    assert not (tmp_path / "x.h5").exists()
    return err


def test_truncated_files_are_refused(recorded, tmp_path, capsys):
    et, kin, _ = recorded
    for good, which in ((et, "et"), (kin, "kin")):
        bad = tmp_path / f"trunc.{good.name}"
        bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
        args = (bad, kin) if which == "et" else (et, bad)
        _refused(capsys, *args, tmp_path, str(bad), "not valid JSON")


@pytest.mark.parametrize("which,edit,field", [
    ("kin", lambda k: next(e for e in k["traceEvents"] if e.get("cat") == "cpu_op")["args"].pop("Record function id"),
     "args.Record function id: missing"),
    ("kin", lambda k: k.pop("traceEvents"), "field traceEvents: missing"),
    ("kin", lambda k: next(e for e in k["traceEvents"] if e.get("cat") == "cpu_op").update(dur="x"),
     "dur: expected a number"),
    ("et", lambda e: e.pop("pid"), "field pid: missing"),
    ("et", lambda e: e["nodes"][3].pop("ctrl_deps"), "field nodes[3].ctrl_deps: missing"),
    ("et", lambda e: e["nodes"][5]["inputs"].update(values=7), "inputs.values: expected a list"),
])
def test_a_missing_or_bad_field_is_named(recorded, tmp_path, capsys, which, edit, field):
    et, kin, _ = recorded
    src = et if which == "et" else kin
    obj = json.loads(src.read_text())
    edit(obj)
    bad = tmp_path / f"bad.{src.name}"
    bad.write_text(json.dumps(obj))
    args = (bad, kin) if which == "et" else (et, bad)
    _refused(capsys, *args, tmp_path, str(bad), field)


def test_pairs_from_different_runs_are_refused(recorded, tmp_path, capsys):
    et, kin, _ = recorded
    e = json.loads(et.read_text())
    # another process
    other = copy.deepcopy(e)
    other["pid"] += 1
    (tmp_path / "pid.json").write_text(json.dumps(other))
    _refused(capsys, tmp_path / "pid.json", kin, tmp_path, "field pid", "different runs")
    # another iteration of the same process: its record-function ids are not these
    other = copy.deepcopy(e)
    for n in other["nodes"]:
        for a in n["attrs"]:
            if a["name"] == "rf_id" and a["value"]:
                a["value"] += 100000
    (tmp_path / "rf.json").write_text(json.dumps(other))
    _refused(capsys, tmp_path / "rf.json", kin, tmp_path, "Record function id", "different runs")
    # the same ids naming other operators
    other = copy.deepcopy(e)
    n = next(n for n in other["nodes"] if n["name"] == "aten::addmm")
    n["name"] = "aten::mm"
    (tmp_path / "name.json").write_text(json.dumps(other))
    _refused(capsys, tmp_path / "name.json", kin, tmp_path, "is aten::addmm here but aten::mm", "different runs")
    # other input shapes (another batch size)
    other = copy.deepcopy(e)
    n = next(n for n in other["nodes"] if n["name"] == "aten::addmm")
    n["inputs"]["shapes"][1] = [16, 64]
    (tmp_path / "dims.json").write_text(json.dumps(other))
    _refused(capsys, tmp_path / "dims.json", kin, tmp_path, "Input Dims", "different runs")


def test_profile_error_is_one_line_and_pickles():
    import pickle

    err = ProfileError("k.json", "traceEvents[3].dur", "got 'x'\nmust be a number")
    assert str(err) == "k.json: field traceEvents[3].dur: got 'x' must be a number"
    assert str(pickle.loads(pickle.dumps(err))) == str(err)
