"""The traces shipped in traces/: complete, valid, licensed, documented, and
their memory ratios what the artifact's own tensor lists imply."""
import gzip
import json
import re

import h5py
import pytest
from conftest import SHIPPED_ALL_NAMES, SHIPPED_LLM_NAMES, SHIPPED_NAMES, SHIPPED_TWIN_NAMES, SHIPPED_WORKLOADS

from g10core.cli import main
from g10core.workload.g10artifact import ARTIFACT_FOLDERS

GiB = 2**30


def test_exactly_the_expected_files_are_shipped(traces_dir):
    names = {p.name for p in traces_dir.iterdir()}
    assert names == {f"{n}.h5" for n in SHIPPED_ALL_NAMES} | {"LICENSE", "NOTICE", "README.md"}
    assert len(SHIPPED_NAMES) == 30 and len(SHIPPED_LLM_NAMES) == 17 and len(SHIPPED_TWIN_NAMES) == 5


def test_license_and_notice(traces_dir):
    license_text = (traces_dir / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0" in license_text
    notice = (traces_dir / "NOTICE").read_text()
    for words in ("platformxlab/G10", "MICRO 2023", "Apache License, Version 2.0", "What was changed"):
        assert words in notice


def test_license_is_the_artifacts(traces_dir, artifact_dir):
    assert (traces_dir / "LICENSE").read_bytes() == (artifact_dir / "LICENSE").read_bytes()


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_shipped_trace_reads_and_validates(name, load_shipped):
    t = load_shipped(name)  # read_trace validates everything
    model, batch = name.split("-b")
    assert (t.model, t.batch_size) == (model, int(batch))
    assert t.attrs["schema_version"] == 1


def test_paper_memory_ratios(load_shipped):
    # the G10 paper's "M" = footprint / 40 GiB, as the published simulator prints it
    for name, gib, percent in (("bert_base-b128", 74.4, 186), ("bert_base-b256", 148.0, 370),
                               ("senet154-b1024", 1711, 4278)):
        t = load_shipped(name)
        assert round(t.footprint_bytes / GiB, 1 if gib < 1000 else 0) == gib
        assert round(100 * t.footprint_bytes / (40 * GiB)) == percent


def _source_footprint(artifact_dir, model, batch):
    """Sum of page-rounded sizes in tensors.config, parsed here independently of the converter."""
    path = artifact_dir / "workloads" / ARTIFACT_FOLDERS[model] / str(batch) / "tensors.config.gz"
    sizes = [int(m) for m in re.findall(r"Size in byte: (\d+)", gzip.open(path, "rt").read())]
    return sum(-(-s // 4096) * 4096 for s in sizes), len(sizes)


def test_memory_ratio_of_every_trace_matches_the_source_lists(artifact_dir, traces_dir, tmp_path, capsys):
    out = tmp_path / "info.json"
    paths = [str(traces_dir / f"{n}.h5") for n in SHIPPED_NAMES]
    assert main(["trace", "info", *paths, "--json", str(out)]) == 0
    infos = json.loads(out.read_text())
    assert [i["path"] for i in infos] == paths
    for (model, batch), info in zip(SHIPPED_WORKLOADS, infos):
        footprint, n_tensors = _source_footprint(artifact_dir, model, batch)
        assert info["n_tensors"] == n_tensors
        assert info["footprint_bytes"] == footprint
        assert info["memory_ratio_percent"] == pytest.approx(100 * footprint / (40 * GiB), rel=1e-12)
        profile = artifact_dir / "profiles" / ARTIFACT_FOLDERS[model] / f"cudnn{batch}.txt"
        assert info["n_kernels"] == len(profile.read_text().split("\n")) - 1


def test_format_readme_documents_every_dataset_field_and_attribute(traces_dir):
    readme = (traces_dir / "README.md").read_text()
    with h5py.File(traces_dir / "bert_base-b256.h5") as f:
        for attr in f.attrs:
            assert f"`{attr}`" in readme, attr
        names = []
        f.visit(names.append)
        for name in names:
            assert f"`{name.split('/')[-1]}`" in readme or f"`/{name}`" in readme, name
            obj = f[name]
            if isinstance(obj, h5py.Dataset) and obj.dtype.names:
                for fld in obj.dtype.names:
                    assert f"`{fld}`" in readme, (name, fld)
