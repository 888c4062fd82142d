"""Fixtures shared by the whole suite.

* ``repo_root``, ``traces_dir``: paths in the checkout.
* ``load_shipped("bert_base-b256")``: a shipped trace, read once per session.
  The arrays are shared between tests: do not modify them (copy first).
* ``small_trace``: a 64-kernel synthetic training trace (256 MiB footprint).
* ``host_overflow``: every replay of the test reports a host-memory overflow (the published
  simulator's abort, forced).
* ``SHIPPED_WORKLOADS``, ``SHIPPED_NAMES``, ``SHIPPED_LLM_NAMES``, ``SHIPPED_TWIN_NAMES``, ``SHIPPED_ALL_NAMES``,
  ``assert_same_trace``: plain names,
  ``from conftest import ...``.
* ``artifact_dir`` (and ``artifact_path()`` for module-level use): the published G10
  inputs the tests compare with: the copy of the parts the tests read that ships in
  ``tests/fixtures/g10_artifact.tar.xz`` (the artifact's content; unpacked once per
  session into a temporary folder), so every test runs the same way on a fresh clone
  and in CI; or the full artifact where ``$G10_ARTIFACT_DIR`` points to one.
"""
from __future__ import annotations

import atexit
import gzip
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# Every model x batch of the artifact's workloads/ (its README), shipped in traces/ (g10core/workload/traces/ once installed).
SHIPPED_WORKLOADS = (
    [("bert_base", b) for b in (128, 256, 384, 512, 640, 768, 1024)]
    + [("vit", b) for b in (256, 512, 768, 1024, 1280, 1536)]
    + [("inceptionv3", b) for b in (512, 768, 1024, 1152, 1280, 1536, 1792)]
    + [("resnet152", b) for b in (256, 512, 768, 1024, 1280, 1536)]
    + [("senet154", b) for b in (256, 512, 768, 1024)]
)
SHIPPED_NAMES = [f"{m}-b{b}" for m, b in SHIPPED_WORKLOADS]

# The LLM traces captured by g10core.capture, shipped next to them (<family>-<size>-s<seq>-b<batch>).
SHIPPED_LLM_NAMES = [
    "gpt2-small-s1024-b5", "gpt2-small-s1024-b16", "gpt2-medium-s1024-b8", "gpt2-medium-s1024-b16",
    "llama-1b-s2048-b2", "llama-1b-s2048-b4", "llama-7b-s2048-b1", "llama-7b-s2048-b3",
    # mixed precision (bf16, fp32 master weights and Adam moments)
    "gpt2-medium-s1024-bf16-b4", "gpt2-medium-s1024-bf16-b16", "llama-1b-s2048-bf16-b1", "llama-1b-s2048-bf16-b4",
    "llama-7b-s2048-bf16-b1", "llama-7b-s2048-bf16-b6", "llama-13b-s2048-bf16-b1", "llama-13b-s2048-bf16-b8",
    "llama-13b-s1024-bf16-b4",
]
# the physical twins of the five Fig. 11 workloads (g10core.capture.twins)
SHIPPED_TWIN_NAMES = ["bert_base-twin-b256", "vit-twin-b1280", "inceptionv3-twin-b1536", "resnet152-twin-b1280",
                      "senet154-twin-b1024"]
# every shipped trace
SHIPPED_ALL_NAMES = SHIPPED_NAMES + SHIPPED_LLM_NAMES + SHIPPED_TWIN_NAMES


TRACE_ARRAY_FIELDS = [
    "tensor_size_bytes", "tensor_is_global", "tensor_name", "kernel_name", "kernel_time_ideal_ns",
    "kernel_time_fault_all_ns", "kernel_time_fault_outputs_ns", "kernel_workspace_bytes",
    "access_offsets", "access_tensor", "access_mode", "tensor_role", "tensor_layer",
]


def assert_same_trace(a, b):
    """Two traces hold the same data (dtypes included); plain function: ``from conftest import``."""
    for name in TRACE_ARRAY_FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        assert np.array_equal(x, y), name
    for name in ("model", "batch_size", "source", "profiling_gpu", "hints_policy"):
        assert getattr(a, name) == getattr(b, name), name
    if a.hints is None:
        assert b.hints is None
    else:
        assert b.hints is not None and a.hints.dtype == b.hints.dtype
        assert a.hints.tobytes() == b.hints.tobytes()


FIXTURES = REPO_ROOT / "tests" / "fixtures"
ARTIFACT_ARCHIVE = FIXTURES / "g10_artifact.tar.xz"
ARTIFACT_MANIFEST = FIXTURES / "MANIFEST.json"
_unpacked: list[Path] = []


def _is_artifact(path: Path) -> bool:
    return (path / "workloads").is_dir() and (path / "profiles").is_dir()


def unpack_artifact_fixture() -> Path:
    """tests/fixtures/g10_artifact.tar.xz unpacked in the artifact's layout (once per session)."""
    if _unpacked:
        return _unpacked[0]
    root = Path(tempfile.mkdtemp(prefix="g10-artifact-fixture-"))
    atexit.register(shutil.rmtree, root, True)
    manifest = json.loads(ARTIFACT_MANIFEST.read_text())
    gzipped = {entry["stored_as"]: name for name, entry in manifest.items() if entry["gzip"]}
    with tarfile.open(ARTIFACT_ARCHIVE, "r:xz") as tar:
        for member in tar:
            data = tar.extractfile(member).read()
            name = gzipped.get(member.name, member.name)
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(".gz"):
                data = gzip.compress(data, compresslevel=1, mtime=0)
            target.write_bytes(data)
    _unpacked.append(root)
    return root


def artifact_path() -> Path:
    """The published G10 inputs: ``$G10_ARTIFACT_DIR`` when set, else the shipped fixture."""
    env = os.environ.get("G10_ARTIFACT_DIR", "").strip()
    return Path(env) if env else unpack_artifact_fixture()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    """The shipped traces (the top-level traces/; package data g10core/workload/traces once installed)."""
    from g10core.workload.tracestore import shipped_dir

    return shipped_dir()


@pytest.fixture(scope="session")
def artifact_dir() -> Path:
    path = artifact_path()
    if not _is_artifact(path):
        pytest.fail(f"the published G10 inputs are not at {path} "
                    "($G10_ARTIFACT_DIR: the folder with workloads/ and profiles/)")
    return path


@pytest.fixture(scope="session")
def load_shipped(traces_dir):
    from g10core.workload.trace import read_trace

    cache = {}

    def load(name: str):
        if name not in cache:
            cache[name] = read_trace(traces_dir / f"{name}.h5")
        return cache[name]

    return load


@pytest.fixture(scope="session")
def small_trace():
    from g10core.workload.synth import synthesize

    return synthesize(64, 256 << 20, pattern="training", seed=0)


@pytest.fixture
def host_overflow(monkeypatch):
    """Force the published simulator's host-memory abort: every replay of this test reports
    ``host_overflow`` (the flag the compiled replay sets when host memory runs out), so a
    test reaches that failure without a configuration that really overflows."""
    from g10core import simulator

    real = simulator.Replay

    class Overflowing:
        def __init__(self, consts, arrays):
            self.inner = real(consts, arrays)

        def run(self):
            raw = self.inner.run()
            raw["host_overflow"] = True
            return raw

    monkeypatch.setattr(simulator, "Replay", Overflowing)


@pytest.fixture(autouse=True)
def registry_restored(monkeypatch):
    """Each test's plug-in policies leave the registry after it (and the entry points are read
    again), so a policy a test loads from a file is never listed in another test's messages."""
    from g10core import policies

    policies._load_builtin()
    saved = dict(policies.REGISTRY)
    monkeypatch.setattr(policies, "_PLUGINS_LOADED", policies._PLUGINS_LOADED)
    yield
    policies.REGISTRY.clear()
    policies.REGISTRY.update(saved)
