"""The converter from the published G10 inputs, and the traces it produced.

Expected values below were read by hand from the artifact's text files
(``zcat workloads/<Model>/<B>/tensors.config.gz``, ``kernels.config.gz``, and
``profiles/<Model>/cudnn<B>{,PF,InputPF,Workspace}.txt``); times are the
profiles' milliseconds written in ns.
"""
import gzip
import shutil

import numpy as np
import pytest
from conftest import SHIPPED_NAMES, SHIPPED_WORKLOADS, assert_same_trace

from g10core.cli import main
from g10core.workload.g10artifact import ArtifactError, available_workloads, load_workload
from g10core.workload.trace import ACCESS_READ as R
from g10core.workload.trace import ACCESS_WRITE as W

# name -> counts, {tensor: (size_bytes, is_global)},
#         {kernel: (name, t11_ns, t00_ns, t10_ns, workspace_bytes)}, {kernel: [(tensor, mode)]}
HAND_CHECKED = {
    "bert_base-b256": (
        1369, 1463,
        {0: (100663296, False), 1: (8192, True), 100: (131072, False), 1462: (786432, False)},
        {0: ("GatherV2_Forward", 197632, 73269249, 15180800, 0), 10: (None, 12288, 1178624, 159744, 0),
         1368: (None, 12288, 691200, 13312, 0)},
        {0: [(2, R), (1, R), (0, W)]},
    ),
    "vit-b1280": (
        1489, 1563,
        {0: (96337920, False), 1: (770703360, False), 100: (98304000, True), 1561: (1130237952, False),
         1562: (1180569600, False)},
        {0: ("Conv2d_Forward", 18517504, 588307465, 155470848, 1130233872),
         10: (None, 14848, 817152, 141824, 0), 1488: (None, 15360, 8946176, 3138560, 0)},
        {0: [(2, R), (1, R), (1561, W), (0, W)]},  # the workspace tensor1561 is an output
    ),
    "inceptionv3-b1536": (
        929, 2171,
        {0: (1647841280, False), 1: (4364894208, False), 100: (481689600, False), 2170: (6562496512, False)},
        {0: (None, 590612915, 595940369, 621063171, 0), 10: (None, 14809088, 2935176270, 361758728, 0),
         928: (None, 10240, 766976, 11264, 0)},
        {},
    ),
    "resnet152-b1280": (
        1299, 3330,
        {0: (770703360, False), 1: (4110417920, False), 100: (1027604480, False), 3329: (5140783104, False)},
        {0: (None, 277998344, 287157753, 286245369, 0), 10: (None, 79196674, 1118606354, 365570038, 0),
         1298: (None, 11776, 1052672, 12288, 0)},
        {},
    ),
    "senet154-b1024": (
        2319, 4341,
        {0: (616562688, False), 1: (3288334336, False), 100: (262144, False), 4340: (6576820224, False)},
        # kernel 0: t00 < t11 in the profile; the trace keeps the measured values
        {0: (None, 231532349, 221280258, 203512833, 0), 10: ("MaxPool2d_Forward", 8486912, 2517085205, 253591553, 0),
         2318: (None, 9216, 820224, 11264, 0)},
        {10: [(43, R), (58, W)]},
    ),
}

# kernels per iteration, per model (line counts of the cudnn<B>.txt profiles)
KERNELS_PER_MODEL = {"bert_base": 1369, "vit": 1489, "resnet152": 1299, "inceptionv3": 929, "senet154": 2319}


def check_hand_values(trace, name):
    n_kernels, n_tensors, tensors, kernels, accesses = HAND_CHECKED[name]
    assert (trace.n_kernels, trace.n_tensors) == (n_kernels, n_tensors)
    for t, (size, is_global) in tensors.items():
        assert trace.tensor_size_bytes[t] == size, t
        assert bool(trace.tensor_is_global[t]) == is_global, t
        assert trace.tensor_name[t] == f"tensor{t}"
    for k, (kname, t11, t00, t10, ws) in kernels.items():
        if kname is not None:
            assert trace.kernel_name[k] == kname
        assert trace.kernel_time_ideal_ns[k] == t11, k
        assert trace.kernel_time_fault_all_ns[k] == t00, k
        assert trace.kernel_time_fault_outputs_ns[k] == t10, k
        assert trace.kernel_workspace_bytes[k] == ws, k
    for k, expect in accesses.items():
        ids, modes = trace.kernel_accesses(k)
        assert list(zip(ids.tolist(), modes.tolist())) == expect


@pytest.mark.parametrize("name", sorted(HAND_CHECKED))
def test_shipped_trace_hand_checked_values(name, load_shipped):
    check_hand_values(load_shipped(name), name)


@pytest.mark.parametrize("name", sorted(HAND_CHECKED))
def test_converter_hand_checked_values(name, artifact_dir):
    model, batch = name.split("-b")
    check_hand_values(load_workload(artifact_dir, model, int(batch)), name)


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_kernel_count_per_model(name, load_shipped):
    t = load_shipped(name)
    assert t.n_kernels == KERNELS_PER_MODEL[t.model]
    assert t.profiling_gpu == "NVIDIA A100-40GB" and "platformxlab/G10" in t.source


def test_available_workloads_are_the_shipped_ones(artifact_dir):
    assert available_workloads(artifact_dir) == sorted(SHIPPED_WORKLOADS)


def test_shipped_traces_are_what_the_converter_makes_now(artifact_dir, load_shipped):
    for model, batch in SHIPPED_WORKLOADS:
        assert_same_trace(load_workload(artifact_dir, model, batch), load_shipped(f"{model}-b{batch}"))


# ---- the converter refuses inconsistent inputs, naming file and line ---------------------

@pytest.fixture
def mini_artifact(artifact_dir, tmp_path):
    """BERT_Base/256 and VIT/1280 of the artifact, copied so a test can damage them."""
    for folder, batch in (("BERT_Base", 256), ("VIT", 1280)):
        w = tmp_path / "workloads" / folder / str(batch)
        w.mkdir(parents=True)
        for f in ("kernels.config.gz", "tensors.config.gz"):
            shutil.copyfile(artifact_dir / "workloads" / folder / str(batch) / f, w / f)
        p = tmp_path / "profiles" / folder
        p.mkdir(parents=True)
        for s in ("", "PF", "InputPF", "Workspace"):
            shutil.copyfile(artifact_dir / "profiles" / folder / f"cudnn{batch}{s}.txt", p / f"cudnn{batch}{s}.txt")
    return tmp_path


def _edit_gz(path, old, new):
    text = gzip.open(path, "rt").read()
    assert old in text
    with gzip.open(path, "wt") as fh:
        fh.write(text.replace(old, new, 1))


def _edit_text(path, fn):
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(fn(lines)))


def test_mini_artifact_converts(mini_artifact):
    check_hand_values(load_workload(mini_artifact, "bert_base", 256), "bert_base-b256")


def test_profile_line_count_must_equal_kernel_count(mini_artifact):
    _edit_text(mini_artifact / "profiles/BERT_Base/cudnn256PF.txt", lambda lines: lines[:-1])
    with pytest.raises(ArtifactError, match=r"cudnn256PF\.txt: 1368 lines, but .*kernels.config.gz has 1369"):
        load_workload(mini_artifact, "bert_base", 256)


def test_tensor_size_must_be_a_page_multiple(mini_artifact):
    _edit_gz(mini_artifact / "workloads/BERT_Base/256/tensors.config.gz",
             "tensor1 Is weight (global)?: 1, Size in byte: 8192, Range:0--8192",
             "tensor1 Is weight (global)?: 1, Size in byte: 8000, Range:0--8000")
    with pytest.raises(ArtifactError, match="tensor1 size 8000 is not a multiple of 4096"):
        load_workload(mini_artifact, "bert_base", 256)


def test_workspace_must_match_an_output_tensor(mini_artifact):
    # one byte more than the 275,937 pages of tensor1561: it would need another page
    _edit_text(mini_artifact / "profiles/VIT/cudnn1280Workspace.txt",
               lambda lines: ["0000 1130237953 B\n"] + lines[1:])
    with pytest.raises(ArtifactError, match="kernel 0 has a 1130237953 B workspace"):
        load_workload(mini_artifact, "vit", 1280)


def test_execution_time_must_match_the_ideal_profile(mini_artifact):
    _edit_gz(mini_artifact / "workloads/BERT_Base/256/kernels.config.gz",
             "Execution Time: 237158", "Execution Time: 237999")
    with pytest.raises(ArtifactError, match="kernel 0 execution time 237999 cycles"):
        load_workload(mini_artifact, "bert_base", 256)


def test_unknown_tensor_in_kernel_list(mini_artifact):
    _edit_gz(mini_artifact / "workloads/BERT_Base/256/kernels.config.gz",
             "tensor2 Is weight (global)?: 0, Size in byte: 131072",
             "tensor9999 Is weight (global)?: 0, Size in byte: 131072")
    with pytest.raises(ArtifactError, match=r"kernels.config.gz:5: tensor9999 is not in tensors.config"):
        load_workload(mini_artifact, "bert_base", 256)


def test_truncated_gzip_is_an_artifact_error(mini_artifact):
    path = mini_artifact / "workloads/BERT_Base/256/kernels.config.gz"
    path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(ArtifactError, match="kernels.config.gz:.*unreadable"):
        load_workload(mini_artifact, "bert_base", 256)


def test_unknown_model_and_missing_batch(mini_artifact):
    with pytest.raises(ArtifactError, match="unknown model 'gpt'"):
        load_workload(mini_artifact, "gpt", 256)
    with pytest.raises(ArtifactError, match="no such workload folder"):
        load_workload(mini_artifact, "bert_base", 999)


def test_cli_convert_reports_artifact_errors_in_one_line(mini_artifact, tmp_path, capsys):
    _edit_text(mini_artifact / "profiles/BERT_Base/cudnn256.txt", lambda lines: lines[:-1])
    out = tmp_path / "out.h5"
    assert main(["trace", "convert", "--g10-artifact", str(mini_artifact), "--model", "bert_base",
                 "--batch", "256", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cudnn256.txt: 1368 lines" in err and "Traceback" not in err
    assert not out.exists()


def test_converted_times_are_whole_nanoseconds(load_shipped):
    for name in HAND_CHECKED:
        t = load_shipped(name)
        for col in (t.kernel_time_ideal_ns, t.kernel_time_fault_all_ns, t.kernel_time_fault_outputs_ns):
            assert np.array_equal(col, np.round(col))
