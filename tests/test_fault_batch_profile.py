"""The driver's fault-batch costs as named, cited profiles (``fault.batch_profile``, params.BATCH_PROFILES):
the uvm-eval record they come from, keys that override them, the handlers that read them, and the
published batch times and shares they are checked against (docs/guide/detailed.md)."""
import json

import pytest

from g10core.cli import main
from g10core.config import parameters, preset
from g10core.uvm.fault_handler import BATCH_PARTS, FaultHandler, spec_from_config
from g10core.params import BATCH_COST_KEYS, BATCH_PROFILES, batch_costs, declaration
from g10core.link.pcie import PcieLink, link_spec_from_config
from g10core.uvm.slots import physical_fault_params

# tallendev/uvm-eval, benchmarksv3/bsize-scripts/README.MD: the instrumented 460.27.04 driver's
# example batch record (Titan V) and its field names, as published
RECORD = ("b,363795213599097,736221,32,9,29,3,3,1,0,0,0,3,12288,3,1,1,15790,35196,0,534863,493736,18104,315251,"
          "34254,290,124063,112010,1,1,1")
FIELDS = ("b start_time time cached_faults coalesced_faults duplicate_faults actual_faults not_already_resident "
          "num_vablock num_prefetch num_evict num_evict_ops num_transfers transfer_size num_mapped_pages "
          "num_mapping_ops root_chunk_allocs batch_transfer_time map_time unmap_time service_time make_resident_time "
          "resident_pages_time pop_pages_time unmap_res_time unmap_rdup_time rmask_get_alloc block_gpu_state_time "
          "num_new_vablock unmap_res_count num_replays").split()
# Kim et al., ASPLOS 2020: one batch takes 223-553 us on a real GPU
KIM_BATCH_US = (223.0, 553.0)
# Allen and Ge, SC 2021: the DMA copy is under 25 % of a batch; VA-block state set-up up to 64 %
ALLEN_GE_DMA_SHARE, ALLEN_GE_BLOCK_SHARE = 0.25, 0.64


def record():
    values = RECORD.split(",")
    assert len(values) == len(FIELDS)
    return {k: int(v) for k, v in zip(FIELDS[1:], values[1:])}


def test_each_profile_names_the_four_costs_and_the_key_lists_them():
    decl = declaration("fault.batch_profile")
    assert decl.choices == tuple(BATCH_PROFILES)
    assert preset("detailed").fault.batch_profile == preset("default").fault.batch_profile == "uvm-eval-titanv"
    for name, costs in BATCH_PROFILES.items():
        assert tuple(costs) == BATCH_COST_KEYS, name
        for k, v in costs.items():
            lo, hi = declaration(f"fault.{k}").min, declaration(f"fault.{k}").max
            assert lo <= v <= hi, (name, k)


def test_the_uvm_eval_profile_is_the_published_record():
    r = record()
    assert (r["num_vablock"], r["num_mapping_ops"], r["unmap_res_count"]) == (1, 1, 1)   # one VA block
    p = BATCH_PROFILES["uvm-eval-titanv"]
    assert p["batch_fixed_us"] == pytest.approx((r["time"] - r["service_time"]) / 1000)      # fetch, sort, replay
    assert p["batch_per_block_us"] == pytest.approx(r["map_time"] / 1000)                   # the GPU mapping
    assert p["batch_unmap_us"] == pytest.approx(r["unmap_res_time"] / 1000)                 # the CPU unmap
    # the first-touch costs left out (a root chunk from RM, a new block's GPU state) and the copy
    # are the rest of the service's make-resident step, to within its small remainder
    rest = r["pop_pages_time"] + r["block_gpu_state_time"] + r["resident_pages_time"] + r["unmap_res_time"]
    assert 0 <= r["make_resident_time"] - rest < 0.05 * r["time"]
    assert r["batch_transfer_time"] <= r["resident_pages_time"]


def test_the_earlier_split_is_uvmsmarts_45_us_one_fault_batch():
    # one fault, one VA block of 16 pages from host memory (Ganguly et al., ISCA 2019)
    p = BATCH_PROFILES["uvmsmart-gtx1080ti"]
    assert p["batch_fixed_us"] + p["batch_per_block_us"] + p["batch_unmap_us"] + 16 * p["batch_per_page_us"] == \
        pytest.approx(45.0)
    assert BATCH_PROFILES["g10-45us"]["batch_fixed_us"] == 45.0


def test_a_key_that_is_set_overrides_its_profile():
    cfg = preset("detailed").with_overrides({"fault": {"batch_unmap_us": 5.0}})
    spec = spec_from_config(cfg)
    titan = BATCH_PROFILES["uvm-eval-titanv"]
    assert spec.batch_unmap_us == 5.0
    assert (spec.batch_fixed_us, spec.batch_per_block_us, spec.batch_per_page_us) == \
        (titan["batch_fixed_us"], titan["batch_per_block_us"], titan["batch_per_page_us"])
    earlier = preset("detailed").with_overrides({"fault": {"batch_profile": "uvmsmart-gtx1080ti"}})
    assert batch_costs(earlier.fault) == BATCH_PROFILES["uvmsmart-gtx1080ti"]
    assert {k: getattr(spec_from_config(earlier), k) for k in BATCH_COST_KEYS} == BATCH_PROFILES["uvmsmart-gtx1080ti"]


@pytest.mark.parametrize("name", list(BATCH_PROFILES))
def test_the_physical_fault_time_reads_the_profile(name):
    cfg = preset("default").with_overrides({"fault": {"batch_profile": name}})
    p = physical_fault_params(cfg)
    spec = spec_from_config(cfg)
    for key, part in (("batch_fixed_us", "batch_fixed_cycles"), ("batch_per_block_us", "batch_per_block_cycles"),
                      ("batch_per_page_us", "batch_per_page_cycles"), ("batch_unmap_us", "batch_unmap_cycles")):
        assert p[part] == spec.cycles(BATCH_PROFILES[name][key])


def first_touch_batch(faults_in_block: int):
    """The detailed preset's handler and link, one batch of ``faults_in_block`` faults on cold 64 KiB
    units of one VA block in host memory (the uvm-eval record's shape): its parts in us."""
    cfg = preset("detailed")
    spec = spec_from_config(cfg)
    h = FaultHandler(spec, gpu_pages=4 * spec.block_pages, link=PcieLink(link_spec_from_config(cfg)))
    for i in range(faults_in_block):
        # units spread over the block: no tree node reaches the prefetch threshold
        h.fault(i * spec.block_pages // faults_in_block, 0, (0, spec.block_pages))
    end = h.service_batch(0)
    s = h.stats()
    assert s["batches"] == 1 and s["batch_blocks"] == 1 and s["pages_prefetched"] == 0
    assert end == sum(s[k] for k in BATCH_PARTS)
    us = spec.cycles(1.0)
    return {k: s[k] / us for k in BATCH_PARTS}, end / us


@pytest.mark.parametrize("faults", [1, 2, 3])
def test_a_first_touch_batch_takes_a_measured_batch_time_in_published_shares(faults):
    parts, total = first_touch_batch(faults)
    assert KIM_BATCH_US[0] <= total <= KIM_BATCH_US[1]
    assert parts["batch_transfer_cycles"] / total < ALLEN_GE_DMA_SHARE
    assert parts["batch_block_cycles"] / total <= ALLEN_GE_BLOCK_SHARE
    # the host-side work (the per-batch preprocessing, the unmap) is the larger part (Allen and Ge)
    assert parts["batch_fixed_cycles"] + parts["batch_unmap_cycles"] > total / 2


def test_config_show_names_the_profile_a_cost_comes_from(capsys):
    rows = {r["key"]: r for r in parameters(preset("detailed"))}
    row = rows["fault.batch_per_block_us"]
    assert row["value"] is None and row["from_profile"] == "uvm-eval-titanv"
    assert row["profile_value"] == BATCH_PROFILES["uvm-eval-titanv"]["batch_per_block_us"]
    assert main(["config", "show", "--preset", "detailed", "--set", "fault.batch_unmap_us=5"]) == 0
    out = capsys.readouterr().out
    assert "(uvm-eval-titanv)" in out
    line = next(x for x in out.splitlines() if x.startswith("fault.batch_unmap_us"))
    assert "uvm-eval-titanv" not in line and " 5 " in line


def test_an_unknown_profile_is_refused_naming_the_key(capsys):
    assert main(["config", "show", "--set", "fault.batch_profile=gtx480"]) == 2
    err = capsys.readouterr().err
    assert "fault.batch_profile" in err and "uvm-eval-titanv" in err and len(err.strip().splitlines()) == 1


def test_the_oversubscription_table_waits_on_no_published_figure(capsys):
    assert main(["uvm-micro", "oversub", "--gpu", "A100-40GB", "--pattern", "streaming", "--mode", "zero_copy",
                 "--factor", "0.5", "--scale", "1024", "--json", "-"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert "uvm_oversubs -a $a -m $m -p $p -lc 3" in r["hardware_command"]
    assert not any("published" in k for row in r["rows"] for k in row)
