"""``g10sim ssd``: the microbenchmark library function and its command line."""
import json

import pytest

from g10core.cli import main
from g10core.config import ConfigError
from g10core.experiments.ssdbench import closed_form_waf, parse_workload, run_microbenchmark

SMALL = dict(capacity_GiB=0.25, overwrites=2)     # 128 planes x 4 blocks: seconds -> tenths


def test_sequential_workload_has_waf_one_and_reports_every_key():
    res = run_microbenchmark(workload="sequential", **SMALL)
    assert res["waf"] == 1.0
    for key in ("gc_count", "read_GBps", "write_GBps"):
        assert res[key] >= 0
    assert set(res["latency_us"]) == {"p50", "p99"}
    assert res["latency_us"]["p50"] <= res["latency_us"]["p99"]
    assert "cold sequential fill" in res["warmup"]
    assert 1.07 <= res["device"]["alpha"] < 1.08      # U = floor(T / 1.07) of a small plane


def test_uniform_run_does_gc_and_reports_the_closed_forms():
    res = run_microbenchmark(workload="uniform", victim="fifo", op=0.28, **SMALL)
    assert res["gc_count"] > 0 and res["waf"] > 1.0
    assert res["flash_program_pages"] == res["host_write_pages"] + res["gc_copies"]
    assert res["closed_form_waf"]["fifo"] == pytest.approx(2.48, abs=0.01)    # detailed_model.md §5


def test_lambert_w_of_the_closed_form_against_scipy():
    from math import exp
    from scipy.special import lambertw
    for alpha in (1.01, 1.07, 1.125, 1.28, 2.0, 5.0):
        ours = closed_form_waf(alpha)["fifo"]
        ref = alpha / (alpha + lambertw(-alpha * exp(-alpha), 0).real)
        assert ours == pytest.approx(ref, rel=1e-12)


def test_cli_json_to_stdout(capsys):
    code = main(["ssd", "--capacity-GiB", "0.25", "--overwrites", "2", "--workload", "hotcold:80/20",
                 "--victim", "d-choices:4", "--op", "0.125", "--pages-per-block", "64", "--json", "-"])
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    for key in ("waf", "gc_count", "read_GBps", "write_GBps"):
        assert isinstance(res[key], (int, float))
    assert set(res["latency_us"]) == {"p50", "p99"}
    assert res["settings"]["victim"] == "d-choices:4" and res["settings"]["pages_per_block"] == 64


def test_cli_text_output_states_warmup_and_op_definition(capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main(["ssd", "--capacity-GiB", "0.25", "--overwrites", "1", "-q", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "warm-up" in text and "OP = (T - U)/U" in text and "WAF" in text
    assert json.loads(out.read_text())["settings"]["overwrites"] == 1


@pytest.mark.parametrize("argv,needle", [
    (["--op", "0"], "overprovisioning"),
    (["--op", "-0.1"], "overprovisioning"),
    (["--victim", "oldest"], "--victim"),
    (["--workload", "hotcold:120/20"], "--workload"),
    (["--workload", "zipf"], "--workload"),
    (["--pages-per-block", "0"], "pages-per-block"),
    (["--overwrites", "0"], "--overwrites"),
    (["--capacity-GiB", "-1"], "--capacity-GiB"),
])
def test_cli_bad_flags_exit_2_naming_the_flag(argv, needle, capsys):
    assert main(["ssd", "-q"] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("g10sim: error:") and needle in err


def test_parse_workload():
    assert parse_workload("hotcold:80/20") == ("hotcold", 0.8, 0.2)
    assert parse_workload("hotcold") == ("hotcold", 0.8, 0.2)
    assert parse_workload("Uniform") == ("uniform", 0.0, 0.0)
    with pytest.raises(ConfigError):
        parse_workload("hotcold:80")
