"""The shipped LLM traces (captured by g10core.capture) and `reproduce llm` (g10core.experiments.llm; no
PyTorch needed)."""
from __future__ import annotations

import json

import pytest
from conftest import SHIPPED_LLM_NAMES

from g10core.capture.families import BertConfig, GPT2Config, LlamaConfig, parameter_count
from g10core.capture.llm import LLM_WORKLOADS
from g10core.codes import ROLE_NAMES
from g10core.config import preset
from g10core.experiments.llm import MACHINES, format_llm_table, llm_policies, machine_config, reproduce_llm
from g10core.experiments.published import FIG11_POLICIES
from g10core.workload import roles
from g10core.workload.trace import read_trace, summarize

CONFIGS = {"BertConfig": BertConfig, "GPT2Config": GPT2Config, "LlamaConfig": LlamaConfig}


def test_workload_list_is_the_shipped_files():
    assert [w.file_name for w in LLM_WORKLOADS] == [f"{n}.h5" for n in SHIPPED_LLM_NAMES]


@pytest.mark.parametrize("workload", LLM_WORKLOADS, ids=lambda w: w.file_name)
def test_llm_trace_is_valid_and_carries_its_provenance(traces_dir, workload):
    trace = read_trace(traces_dir / workload.file_name)   # validated on read
    a = trace.attrs
    assert trace.model == workload.model and trace.batch_size == workload.batch
    assert (a["capture_family"], a["capture_size"]) == (workload.family, workload.size)
    assert a["capture_seq_len"] == workload.seq_len and a["capture_batch_size"] == workload.batch
    mixed = workload.master_weights == "fp32"
    assert a["capture_dtype"] == workload.dtype and a["capture_master_weights"] == (workload.master_weights or "")
    assert a["capture_optimizer"] == ("MasterWeightAdamW" if mixed else "AdamW")
    assert a["kernel_time_model"] == "physical-v1" and json.loads(a["calibration_gpu"])["name"] == "NVIDIA A100-40GB"
    assert a["capture_attention"] == "fused" and trace.kernel_work is not None
    cfg = json.loads(a["capture_model_config"])
    config = CONFIGS[cfg.pop("class")](**cfg)
    assert a["capture_n_parameters"] == parameter_count(config)
    n = a["capture_forward_kernels"] + a["capture_backward_kernels"] + a["capture_optimizer_kernels"]
    assert n == trace.n_kernels
    # globals: parameters and AdamW's two states, fp32; mixed: bf16 parameters, fp32 master weights, m and v
    n = a["capture_n_parameters"]
    assert trace.global_bytes >= (14 if mixed else 12) * n
    # roles as recorded (format version 4): 16 bytes of model state per parameter either way
    assert a["schema_version"] == 4
    b = roles.bytes_by_role(trace)
    assert b["parameter"] == (2 if mixed else 4) * n and b["gradient"] == (2 if mixed else 4) * n
    assert b["parameter"] + b["gradient"] + b["optimizer_state"] == 16 * n
    assert b["activation"] > 0 and b["input"] > 0 and b["temporary"] > 0
    # every tensor's role is told: what stays unknown is a buffer (LLaMA's rotary table), never a temporary
    unknown = trace.tensor_name[trace.tensor_role == 0].tolist()
    assert all(n.startswith("buffer:") for n in unknown) and b["unknown"] < 2**20
    assert (trace.tensor_layer[trace.tensor_role == 1] >= 0).all()
    assert trace.profiling_gpu == "NVIDIA A100-40GB (predicted)" and "physical model physical-v1" in trace.source


def test_memory_ratios_span_a_model_that_fits_to_ten_times_the_gpu(traces_dir):
    # with fused attention (no score matrices) gpt2-small b5 fits a 40 GiB GPU: the control that every
    # policy runs at ideal; llama-7b b3 needs about ten GPUs' worth
    ratios = [summarize(read_trace(traces_dir / w.file_name))["memory_ratio_percent"] for w in LLM_WORKLOADS
              if w.dtype == "float32"]
    assert 30 <= min(ratios) < 100 and 1000 <= max(ratios) <= 1100
    assert len({round(r) for r in ratios}) == len(ratios)


@pytest.mark.parametrize("gpu_GiB,top", [(40, 2000), (80, 1000)])
def test_mixed_precision_ratios_span_a_model_that_fits_to_many_gpus(traces_dir, gpu_GiB, top):
    ratios = [summarize(read_trace(traces_dir / w.file_name), gpu_GiB)["memory_ratio_percent"]
              for w in LLM_WORKLOADS if w.master_weights and not w.machine]
    assert any(r < 100 for r in ratios) and any(top <= r <= 1.2 * top for r in ratios)
    assert {w.size for w in LLM_WORKLOADS if w.master_weights} == {"medium", "1b", "7b", "13b"}


def test_the_fuyou_setting_is_a_13b_model_on_a_24_GiB_gpu_with_256_GiB_host_memory(traces_dir):
    (w,) = [w for w in LLM_WORKLOADS if w.machine]
    assert w.machine == "fuyou-rtx4090" and w.size == "13b" and w.master_weights == "fp32"
    cfg = machine_config(preset("default"), w.machine)
    assert cfg.gpu.memory_GiB == 24.0 and cfg.host.memory_GiB == 256.0 and cfg.gpu.model == "RTX-4090"
    trace = read_trace(traces_dir / w.file_name)
    state = sum(roles.bytes_by_role(trace)[r] for r in ("parameter", "gradient", "optimizer_state"))
    # the model state (16 B per parameter) fits the host memory, not the GPU
    assert 24 * 2**30 < state < 256 * 2**30
    assert set(MACHINES) == {"fuyou-rtx4090"}


@pytest.fixture(scope="module")
def one_llm_rows(traces_dir):
    return reproduce_llm(traces_dir, jobs=1, progress=False, workloads=LLM_WORKLOADS[:1])


def test_reproduce_llm_runs_every_registered_policy(one_llm_rows):
    from g10core import policies

    assert [r["policy"] for r in one_llm_rows] == list(llm_policies())
    assert set(llm_policies()) == set(policies.names()) and list(llm_policies())[:len(FIG11_POLICIES)] == \
        list(FIG11_POLICIES)
    ideal = next(r for r in one_llm_rows if r["policy"] == "ideal")
    assert ideal["normalized_performance"] == pytest.approx(1.0)
    for r in one_llm_rows:
        assert r["model"] == "gpt2-small-s1024" and r["batch"] == 5 and r["seq_len"] == 1024
        assert 30 < r["memory_ratio_percent"] < 45 and r["published_s"] is None
        assert r["failed"] or r["time_s"] >= ideal["time_s"] * (1 - 1e-9)


def test_llm_table_has_a_row_per_trace_and_a_column_per_policy(one_llm_rows):
    text = format_llm_table(one_llm_rows)
    lines = text.splitlines()
    assert lines[0].count("|") == 3 + len(llm_policies()) + 1
    assert lines[2].startswith("| gpt2-small-s1024 | 5 | 37 % |")


def test_reproduce_llm_names_a_missing_trace(tmp_path):
    with pytest.raises(FileNotFoundError, match="LLM trace file"):
        reproduce_llm(tmp_path, progress=False)


def _cli(argv, capsys):
    from g10core.cli import main

    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _strict_json(text):
    """Parse as RFC 8259 JSON: Python's json reads Infinity and NaN by default, which no other parser does."""
    def refuse(name):
        raise AssertionError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def test_strict_json_refuses_infinity():
    with pytest.raises(AssertionError, match="Infinity"):
        _strict_json('{"time_s": Infinity}')


def test_reproduce_llm_json_with_a_failing_baseline(tmp_path, capsys):
    # FlashNeuron cannot fit llama-7b-s2048-b1 (its weights alone outgrow the GPU): its time is null in the
    # JSON, which is written (it was "Out of range float values are not JSON compliant: inf", exit 2)
    out = tmp_path / "llm.json"
    code, text, err = _cli(["reproduce", "llm", "--models", "llama-7b-s2048-b1", "--policies", "flashneuron",
                            "ideal", "--jobs", "1", "--no-progress", "--json", out], capsys)
    assert code == 0, err
    doc = _strict_json(out.read_text())
    rows = {r["policy"]: r for r in doc["rows"]}
    assert rows["flashneuron"]["failed"] and rows["flashneuron"]["time_s"] is None
    assert "leave no GPU memory" in rows["flashneuron"]["failure_reason"]
    assert rows["ideal"]["time_s"] > 0 and not rows["ideal"]["failed"]
    assert "fails" in text


@pytest.mark.slow
def test_reproduce_llm_json_of_the_issue_run_set(tmp_path, capsys):
    # the run set of issue 33's report (`--models llama-1b-s2048-b2`, every policy; at 86cc913 G10-GDS
    # and G10-Host failed on it and the JSON was refused with exit 2): strict JSON, exit 0, every row
    # either a finite time >= ideal or failed with a null time and a reason
    out = tmp_path / "llm.json"
    code, _, err = _cli(["reproduce", "llm", "--models", "llama-1b-s2048-b2", "--jobs", "1", "--no-progress",
                         "--json", out], capsys)
    assert code == 0, err
    doc = _strict_json(out.read_text())
    from g10core import policies

    assert sorted(r["policy"] for r in doc["rows"]) == policies.names()
    for r in doc["rows"]:
        if r.get("refused"):
            assert r["time_s"] is None and r["failure_reason"], r
        elif r["failed"]:
            assert r["time_s"] is None and r["failure_reason"], r
        else:
            assert r["time_s"] >= r["ideal_time_s"] * (1 - 1e-9), r


def test_reproduce_llm_runs_under_the_exploration_preset(tmp_path, capsys):
    # the paper published no LLM numbers: the default preset, where G10-GDS allocates free pages
    # (under g10-artifact's contiguous extents it cannot fit gpt2-medium-s1024-b8)
    out = tmp_path / "llm.json"
    code, _, err = _cli(["reproduce", "llm", "--models", "gpt2-medium-s1024-b8", "--policies", "g10-gds",
                         "--jobs", "1", "--no-progress", "--json", out], capsys)
    assert code == 0, err
    doc = _strict_json(out.read_text())
    assert doc["meta"]["preset"] == "default"
    (row,) = doc["rows"]
    assert not row["failed"], row["failure_reason"]
    assert row["time_s"] >= row["ideal_time_s"] * (1 - 1e-9)


def test_a_policy_that_refuses_a_trace_shows_as_refused(tmp_path, capsys, traces_dir):
    # a plug-in policy that refuses every trace (as a policy needing roles a trace lacks does): a row, not a crash
    plugin = tmp_path / "refuser.py"
    plugin.write_text(
        "from g10core.errors import InputError\n"
        "from g10core.policies.baseline import Ideal\n"
        "class Refuser(Ideal):\n"
        "    name = 'refuser'\n"
        "    description = 'refuses every trace'\n"
        "    def plan(self, trace, config=None, *, hints=None, eviction=None):\n"
        "        raise InputError(f'policy refuser cannot run on trace {trace.model}: it needs tensors of role x')\n")
    rows = reproduce_llm(traces_dir, jobs=1, progress=False, workloads=LLM_WORKLOADS[:1],
                         policies=("ideal", f"{plugin}:Refuser"))
    ref = rows[1]
    assert ref["refused"] and ref["failed"] and "it needs tensors of role x" in ref["failure_reason"]
    assert not rows[0]["refused"] and not rows[0]["failed"]
    text = format_llm_table(rows)
    assert "refused" in text and "it needs tensors of role x" in text


def test_reproduce_llm_plot_draws_every_cell(tmp_path, capsys):
    # --plot: a heat map of ideal / time, one row per trace, one column per policy
    png = tmp_path / "llm.png"
    code, out, err = _cli(["reproduce", "llm", "--models", "gpt2-small-s1024-b5", "--policies", "ideal", "g10",
                           "--jobs", "1", "--no-progress", "--plot", png], capsys)
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot written to {png}" in out
