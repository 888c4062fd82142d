"""Captured BERT-Base (batch 256, sequence 128) against the shipped bert_base-b256 trace."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from g10core.capture.compare import bert_comparison, format_comparison  # noqa: E402
from g10core.workload.trace import validate_trace  # noqa: E402


@pytest.fixture(scope="module")
def comparison(traces_dir):
    return bert_comparison(traces_dir / "bert_base-b256.h5", variants=("published-graph",))


def test_footprint_and_ideal_time_within_a_factor_1_5_of_the_shipped_trace(comparison):
    r = comparison["ratios"]["published-graph"]
    assert 1 / 1.5 <= r["footprint_GiB"] <= 1.5
    assert 1 / 1.5 <= r["memory_ratio_percent"] <= 1.5
    assert 1 / 1.5 <= r["ideal_time_s"] <= 1.5


def test_parameters_are_bert_base(comparison):
    trace = comparison["traces"]["published-graph"]
    validate_trace(trace)
    assert trace.attrs["capture_n_parameters"] == 109_483_778          # BERT-Base + 2-label head
    assert trace.attrs["capture_parameter_bytes"] == 4 * 109_483_778
    assert trace.batch_size == 256 and trace.attrs["capture_seq_len"] == 128
    # plain SGD: one update kernel per parameter tensor, no optimizer state
    assert trace.attrs["capture_optimizer_kernels"] == 201 and trace.attrs["capture_optimizer"] == "SGD"
    assert int(trace.tensor_is_global.sum()) == 201


def test_every_metric_has_a_reason_and_the_table_prints(comparison):
    metrics = [r["metric"] for r in comparison["metrics"]]
    assert metrics == ["parameter_GiB", "global_GiB", "n_kernels", "n_tensors", "footprint_GiB",
                       "memory_ratio_percent", "ideal_time_s"]
    assert all(len(r["reason"]) > 40 and "{" not in r["reason"] for r in comparison["metrics"])
    shipped = {r["metric"]: r["shipped"] for r in comparison["metrics"]}
    assert shipped["n_kernels"] == 1369 and shipped["n_tensors"] == 1463
    assert round(shipped["ideal_time_s"], 3) == 7.285
    text = format_comparison(comparison)
    assert text.count("\n") == 8 and "capture published-graph" in text
