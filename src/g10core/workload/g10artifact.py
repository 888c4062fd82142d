"""Readers for the published G10 artifact's inputs (``shared/g10_artifact``).

The artifact (Zhang et al., "G10", MICRO 2023; Apache-2.0) ships, per model and
batch, the analysed kernel and tensor lists (``workloads/<Model>/<B>/*.config.gz``)
and the A100 kernel-time profiles (``profiles/<Model>/cudnn<B>{,PF,InputPF,Workspace}.txt``).
:func:`load_workload` joins them into a :class:`~g10core.workload.trace.Trace`.
Every parse error names the file and line.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np

from ..errors import ArtifactError  # noqa: F401 (defined in errors.py; importable from here)
from .trace import ACCESS_READ, ACCESS_WRITE, PAGE_SIZE_BYTES, Trace

# artifact folder name -> our model name (trace file names, CLI, JSON)
MODEL_NAMES = {
    "BERT_Base": "bert_base",
    "VIT": "vit",
    "Inceptionv3": "inceptionv3",
    "ResNet152": "resnet152",
    "SENet154": "senet154",
}
ARTIFACT_FOLDERS = {v: k for k, v in MODEL_NAMES.items()}

SOURCE = (
    "G10 artifact (platformxlab/G10, MICRO 2023, Apache-2.0): "
    "workloads/{folder}/{batch}/{{kernels,tensors}}.config + profiles/{folder}/cudnn{batch}*.txt"
)
PROFILING_GPU = "NVIDIA A100-40GB"

_TENSOR_RE = re.compile(
    r"tensor(\d+) Is weight \(global\)\?: ([01]), Size in byte: (\d+), Range:(\d+)--(\d+)"
)
_KERNEL_RE = re.compile(r"Kernel ID: (\d+), Name: (\S+)")
_PROFILE_RE = re.compile(r"(\d+)\s+(\S+)\s+(ms|B)\s*$")


def ms_to_cycles(ms: float, ghz: float = 1.2) -> int:
    """The artifact's conversion of a profiled time to cycles: ``(long)(ms * Hz / 1000)``."""
    return int(ms * (ghz * 1e9) / 1000.0)


def _open_text(path: Path):
    return gzip.open(path, "rt") if path.suffix == ".gz" else open(path, "rt")


def _lines(path: Path):
    """(line number, line) of a text or .gz file; a damaged file is an ArtifactError."""
    lineno = 0
    try:
        with _open_text(path) as fh:
            for lineno, line in enumerate(fh, 1):
                yield lineno, line
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{path}:{lineno + 1}: unreadable ({type(exc).__name__}: {exc})") from None


def _find(folder: Path, name: str) -> Path:
    for cand in (folder / name, folder / (name + ".gz")):
        if cand.exists():
            return cand
    raise ArtifactError(f"{folder / name}: missing (looked for {name} and {name}.gz)")


def read_tensors(path: Path):
    """Parse tensors.config -> (size_bytes int64, is_global bool, range_start int64)."""
    sizes, glob, start = [], [], []
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        m = _TENSOR_RE.match(line)
        if not m:
            raise ArtifactError(f"{path}:{lineno}: not a tensor line: {line.strip()[:80]!r}")
        tid = int(m[1])
        if tid != len(sizes):
            raise ArtifactError(f"{path}:{lineno}: tensor{tid} out of order (expected tensor{len(sizes)})")
        lo, hi = int(m[4]), int(m[5])
        if hi - lo != int(m[3]):
            raise ArtifactError(f"{path}:{lineno}: range {lo}--{hi} does not span size {m[3]}")
        sizes.append(int(m[3]))
        glob.append(m[2] == "1")
        start.append(lo)
    return np.array(sizes, np.int64), np.array(glob, bool), np.array(start, np.int64)


def read_kernels(path: Path, n_tensors: int):
    """Parse kernels.config -> (names, cycles, list of (inputs, outputs) id lists)."""
    names, cycles, accesses = [], [], []
    section = None
    for lineno, line in _lines(path):
        line = line.rstrip("\n")
        if line.startswith("Kernel ID:"):
            m = _KERNEL_RE.match(line)
            if not m or int(m[1]) != len(names):
                raise ArtifactError(f"{path}:{lineno}: bad or out-of-order kernel header {line[:80]!r}")
            names.append(m[2])
            cycles.append(None)
            accesses.append(([], []))
            section = None
        elif line.startswith("Execution Time:"):
            value = line.split(":", 1)[1].strip()
            if not names or not value.isdigit():
                raise ArtifactError(f"{path}:{lineno}: unexpected execution time line {line[:80]!r}")
            cycles[-1] = int(value)
        elif line.startswith("Input Tensors:"):
            section = 0
        elif line.startswith("Output Tensors:"):
            section = 1
        elif line.startswith("tensor"):
            m = _TENSOR_RE.match(line)
            if not m or section is None or not names:
                raise ArtifactError(f"{path}:{lineno}: unexpected tensor line {line[:80]!r}")
            tid = int(m[1])
            if tid >= n_tensors:
                raise ArtifactError(f"{path}:{lineno}: tensor{tid} is not in tensors.config ({n_tensors} tensors)")
            accesses[-1][section].append(tid)
        elif line.startswith("____"):
            section = None
    return names, cycles, accesses


def read_profile(path: Path, unit: str) -> np.ndarray:
    """Parse one per-kernel profile file; values in its unit (ms or B)."""
    values = []
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        m = _PROFILE_RE.match(line.strip())
        if not m:
            raise ArtifactError(f"{path}:{lineno}: not '<id> <value> <unit>': {line.strip()[:80]!r}")
        if int(m[1]) != len(values):
            raise ArtifactError(f"{path}:{lineno}: kernel id {int(m[1])} out of order (expected {len(values)})")
        if m[3] != unit:
            raise ArtifactError(f"{path}:{lineno}: unit {m[3]!r}, expected {unit!r}")
        try:
            values.append(float(m[2]))
        except ValueError:
            raise ArtifactError(f"{path}:{lineno}: {m[2]!r} is not a number") from None
    return np.array(values, np.float64)


def load_workload(artifact_dir, model: str, batch: int) -> Trace:
    """Join one model/batch of the artifact into a Trace (model is our name or the folder name)."""
    folder = ARTIFACT_FOLDERS.get(model, model)
    if folder not in MODEL_NAMES:
        raise ArtifactError(f"unknown model {model!r}; known: {', '.join(MODEL_NAMES.values())}")
    root = Path(artifact_dir)
    wdir = root / "workloads" / folder / str(batch)
    pdir = root / "profiles" / folder
    if not wdir.is_dir():
        raise ArtifactError(f"{wdir}: no such workload folder")

    tpath = _find(wdir, "tensors.config")
    sizes, is_global, range_start = read_tensors(tpath)
    kpath = _find(wdir, "kernels.config")
    names, cycles, acc = read_kernels(kpath, len(sizes))
    K = len(names)

    prof = {}
    for suffix, unit in (("", "ms"), ("PF", "ms"), ("InputPF", "ms"), ("Workspace", "B")):
        p = _find(pdir, f"cudnn{batch}{suffix}.txt")
        vals = read_profile(p, unit)
        if vals.shape[0] != K:
            raise ArtifactError(f"{p}: {vals.shape[0]} lines, but {kpath} has {K} kernels")
        prof[suffix] = vals

    # sanity: the layout is [globals | rest], each in id order, page aligned
    if np.any(sizes % PAGE_SIZE_BYTES):
        bad = int(np.flatnonzero(sizes % PAGE_SIZE_BYTES)[0])
        raise ArtifactError(f"{tpath}: tensor{bad} size {sizes[bad]} is not a multiple of {PAGE_SIZE_BYTES}")
    for g in (True, False):
        s = sizes[is_global == g]
        expect = np.concatenate(([0], np.cumsum(s)[:-1])) if s.size else s
        if not np.array_equal(range_start[is_global == g], expect):
            raise ArtifactError(f"{tpath}: {'global' if g else 'intermediate'} tensors are not laid out in id order")

    # the analysed "Execution Time" is the ideal profile in cycles at 1.2 GHz
    ideal_ms = prof[""]
    for k, c in enumerate(cycles):
        if c is not None and c != ms_to_cycles(ideal_ms[k]):
            raise ArtifactError(
                f"{kpath}: kernel {k} execution time {c} cycles != profile {ideal_ms[k]} ms at 1.2 GHz")

    offsets = np.zeros(K + 1, np.int64)
    a_tensor, a_mode = [], []
    for k, (ins, outs) in enumerate(acc):
        seen = {}
        for t in ins:
            if t not in seen:
                seen[t] = len(a_tensor)
                a_tensor.append(t)
                a_mode.append(ACCESS_READ)
        for t in outs:
            if t in seen:
                a_mode[seen[t]] |= ACCESS_WRITE
            else:
                seen[t] = len(a_tensor)
                a_tensor.append(t)
                a_mode.append(ACCESS_WRITE)
        offsets[k + 1] = len(a_tensor)

    # the workspace profile says the bytes, kernels.config lists the page-rounded tensor as an output
    ws = prof["Workspace"]
    if np.any((ws != np.floor(ws)) | (ws < 0)):
        k = int(np.flatnonzero((ws != np.floor(ws)) | (ws < 0))[0])
        raise ArtifactError(
            f"{pdir}/cudnn{batch}Workspace.txt: kernel {k} workspace {ws[k]} B is not a whole byte count")
    for k in np.flatnonzero(ws > 0):
        want = -(-int(ws[k]) // PAGE_SIZE_BYTES) * PAGE_SIZE_BYTES
        outs = a_tensor[offsets[k]:offsets[k + 1]]
        if not any(sizes[t] == want and a_mode[offsets[k] + i] & ACCESS_WRITE for i, t in enumerate(outs)):
            raise ArtifactError(
                f"{pdir}/cudnn{batch}Workspace.txt: kernel {k} has a {int(ws[k])} B workspace, "
                f"but {kpath} lists no output of {want} B for it")

    for suffix in ("", "PF", "InputPF"):
        ns = prof[suffix] * 1e6
        off = np.abs(ns - np.round(ns))
        if np.any(off > 1e-3):  # the profiles have 1 ns resolution (6 decimals of ms)
            k = int(np.argmax(off))
            raise ArtifactError(f"{pdir}/cudnn{batch}{suffix}.txt: kernel {k} time {prof[suffix][k]} ms is finer than 1 ns")

    def to_ns(ms):
        return np.round(ms * 1e6)
    return Trace(
        model=MODEL_NAMES[folder],
        batch_size=int(batch),
        tensor_size_bytes=sizes,
        tensor_is_global=is_global,
        tensor_name=np.array([f"tensor{i}" for i in range(len(sizes))]),
        kernel_name=np.array(names),
        kernel_time_ideal_ns=to_ns(prof[""]),
        kernel_time_fault_all_ns=to_ns(prof["PF"]),
        kernel_time_fault_outputs_ns=to_ns(prof["InputPF"]),
        kernel_workspace_bytes=prof["Workspace"].astype(np.int64),
        access_offsets=offsets,
        access_tensor=np.array(a_tensor, np.int32),
        access_mode=np.array(a_mode, np.uint8),
        source=SOURCE.format(folder=folder, batch=batch),
        profiling_gpu=PROFILING_GPU,
        profiled_gpu="A100-40GB",            # G10 paper Sec. 6: one A100 40 GB (g10core.gpus)
    )


def available_workloads(artifact_dir) -> list[tuple[str, int]]:
    """(model, batch) pairs present under ``workloads/``, sorted."""
    out = []
    for folder, name in MODEL_NAMES.items():
        d = Path(artifact_dir) / "workloads" / folder
        if d.is_dir():
            out += [(name, int(b.name)) for b in d.iterdir() if b.name.isdigit()]
    return sorted(out)
