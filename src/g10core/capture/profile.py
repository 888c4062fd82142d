"""Import a training iteration recorded with ``torch.profiler`` as a g10core trace (JSON only; no torch).

Two files of the same run go in:

* the **Kineto trace** (``prof.export_chrome_trace(...)``): Chrome trace events, with the CPU
  operators (``cat == "cpu_op"``: name, ``ts``/``dur`` in µs, ``args["External id"]``,
  ``args["Record function id"]``, ``args["Input Dims"]`` with ``record_shapes=True``) and, on a
  GPU, the GPU activities (``cat`` ``kernel``, ``gpu_memcpy``, ``gpu_memset``) linked to the
  operator that launched them by ``args["External id"]`` (or through the CUDA runtime call with
  the same ``args["correlation"]``), plus ``deviceProperties`` and the CUDA versions;
* the **execution trace** (``torch.profiler.ExecutionTraceObserver``): every operator as a node
  (``id`` in the order operators start, ``ctrl_deps`` its parent, ``attrs`` ``rf_id`` and
  ``op_schema``) with its inputs and outputs; a tensor is ``[tensor id, storage id, offset,
  numel, itemsize, device]`` with its shape and strides.

The operator of a Kineto event is the execution-trace node with the same record-function id.

**Kernels.** On a GPU profile, one kernel per operator that launched GPU work, named after the
operator, its ideal time the sum of its GPU activities' durations, in the order the first of
them started; GPU work no operator claims (a launch outside any recorded operator) becomes a
kernel of its own that touches no tensor.  On a CPU-only profile there is no launch to follow:
a kernel is the outermost operator that computes something (it writes a tensor and is not a
view or a bare allocation) whose nested operators write only what it writes (``aten::linear``
with the ``addmm`` and bias copy inside it is one kernel; ``cross_entropy_loss``, whose
``log_softmax`` writes a tensor of its own, is split into its parts), its time the operator's
CPU duration; the trace says so (``import_time_source = "cpu"``).

**Tensors.** A trace tensor is one lifetime of a device storage: the execution trace names a
storage by its address, which the allocator reuses, so a storage starts a new tensor where an
operator (the innermost one) returns it without having been given it.  Its size is the largest
extent any view of it reaches.  A kernel reads its operator's tensor inputs and writes the
arguments its schema marks as written (``Tensor(a!)``; an overwrite such as ``copy_`` or
``fill_`` of the whole storage only writes) and the outputs it allocated.  Roles: a tensor
passed to ``AccumulateGrad`` is a gradient; one that existed before the iteration is a
parameter (read in the forward pass, updated by ``Optimizer.step``), optimizer state (only
touched by the step), a buffer (updated outside the step) or an input (never written); the
rest are activations and temporaries.  Parameters, optimizer state, buffers and gradients
kept across iterations are global.

**Physical times for a CPU profile** (``cpu_times="physical"``, ``--cpu-times physical``): a
CPU profile's operator durations are a CPU's, not a GPU's; this option times each kernel with the
physical kernel-time model (:mod:`g10core.workload.physical`) on ``gpu`` instead, from its work as
the execution trace records it (:func:`cpu_kernel_work`): the bytes of the tensors it reads and
writes, the FLOPs of a matrix product, linear layer, convolution or fused attention from its
tensors' shapes (``2 x output elements x reduction length``, as ``torch.utils.flop_counter``
counts them), one per output element otherwise, the unit its dtype and kind run on, and the GEMM
tiles of its output.  The work is stored (``/kernel_work``), so the trace retargets like a
captured one.

**Fault times.** ``t10`` and ``t00`` add the calibrated fault cost of the kernel's output and
input bytes to its measured time (:meth:`g10core.workload.kerneltime.KernelTimeModel.fault_times_ns`,
the same model :func:`g10core.capture.capture` uses).

A damaged file, a missing field, or two files from different runs (another process id; the
Kineto operators' record-function ids not in the execution trace or naming other operators;
other input shapes) is a :class:`~g10core.errors.ProfileError` naming the file and the field.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import G10Warning, ProfileError
from ..files import is_special_file
from ..gpus import GPUS
from ..workload.kerneltime import (ALLOC_OPS, OVERWRITE_OPS, Calibration, KernelFeatures, KernelTimeModel,
                                   aten_kernel_class, load_calibration)
from ..workload.trace import ACCESS_READ, ACCESS_WRITE, Trace, kernel_io_bytes, validate_trace

GPU_ACTIVITY = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
ROLES = ("param", "grad", "optimizer_state", "buffer", "input", "activation")
GLOBAL_ROLES = frozenset({"param", "optimizer_state", "buffer"})
OPTIMIZER_STEP_PREFIX = "Optimizer.step#"
BACKWARD_PREFIX = "autograd::engine::evaluate_function"
ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"
BACKWARD_SCOPE = 1          # RecordScope.BACKWARD_FUNCTION in the node's "scope" attribute


# ---- reading the files --------------------------------------------------------------------

def _load_json(path) -> tuple[dict, str]:
    """(parsed object, sha256 of the bytes); gzip-compressed files (``.json.gz``) are read too."""
    path = Path(path)
    if is_special_file(path):
        raise ProfileError(path, None, "not a regular file")
    data = path.read_bytes()          # a missing file: FileNotFoundError (exit 2 naming it)
    digest = hashlib.sha256(data).hexdigest()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise ProfileError(path, None, f"damaged gzip file ({exc})") from None
    try:
        obj = json.loads(data)
    except UnicodeDecodeError as exc:
        raise ProfileError(path, None, f"not a text file (byte {exc.start} is not UTF-8)") from None
    except json.JSONDecodeError as exc:
        raise ProfileError(path, None, f"not valid JSON, truncated or damaged: {exc.msg} (line {exc.lineno}, "
                                       f"column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ProfileError(path, None, f"expected a JSON object, got {type(obj).__name__}")
    return obj, digest


def _need(path, obj: dict, key: str, kinds, where: str = ""):
    """``obj[key]`` of one of ``kinds``; ProfileError naming ``where + key`` otherwise."""
    name = f"{where}{key}"
    if key not in obj:
        raise ProfileError(path, name, "missing")
    value = obj[key]
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise ProfileError(path, name, f"expected {_kind_text(kinds)}, got {value!r}")
    if not isinstance(value, kinds):
        raise ProfileError(path, name, f"expected {_kind_text(kinds)}, got {type(value).__name__} {value!r:.60}")
    return value


def _kind_text(kinds) -> str:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    words = {int: "an integer", float: "a number", str: "a string", list: "a list", dict: "an object"}
    if float in kinds:
        kinds = tuple(k for k in kinds if k is not int)     # an integer is a number
    return " or ".join(dict.fromkeys(words.get(k, k.__name__) for k in kinds))


@dataclass
class _Tensor:
    """One tensor argument as the execution trace records it."""

    storage: int
    extent_bytes: int     # offset + the farthest element any index reaches, times the item size
    shape: tuple
    device: str


@dataclass
class _Node:
    """One execution-trace node (an operator or a scope)."""

    id: int
    name: str
    parent: int
    rf_id: int | None
    scope: int
    schema: str
    inputs: list          # per argument: a list of _Tensor (empty for a non-tensor argument)
    outputs: list
    input_shapes: list    # per argument, as recorded (for the cross-check with Kineto's Input Dims)
    input_types: list
    children: list = field(default_factory=list)
    last: int = 0         # the largest node id in this node's subtree (ids are in start order)
    phase: str = "forward"
    accumulate_grad: bool = False   # inside an AccumulateGrad node


def _tensor_of(path, where: str, value, shape, stride) -> _Tensor | None:
    if not (isinstance(value, list) and len(value) == 6):
        raise ProfileError(path, where, f"a tensor must be [tensor id, storage id, offset, numel, itemsize, "
                                        f"device], got {value!r:.80}")
    _tid, storage, offset, numel, itemsize, device = value
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (storage, offset, numel, itemsize)) \
            or not isinstance(device, str):
        raise ProfileError(path, where, f"a tensor must be [tensor id, storage id, offset, numel, itemsize, "
                                        f"device] of integers and a string, got {value!r:.80}")
    if numel <= 0 or itemsize <= 0 or not device:      # undefined or empty tensor: nothing to page
        return None
    if min(offset, numel, itemsize) < 0:
        raise ProfileError(path, where, f"negative offset, numel or itemsize in {value!r:.80}")
    dims = tuple(shape) if isinstance(shape, list) and all(isinstance(d, int) for d in shape) else None
    steps = tuple(stride) if isinstance(stride, list) and all(isinstance(d, int) for d in stride) else None
    if dims is not None and steps is not None and len(dims) == len(steps):
        if any(d == 0 for d in dims):
            return None
        last = sum((d - 1) * abs(s) for d, s in zip(dims, steps))
        extent = offset + last + 1
    else:
        extent = offset + numel
    return _Tensor(storage, int(extent) * itemsize, dims or (), device)


def _tensors(path, where: str, values, types, shapes, strides) -> list:
    """Per argument, the tensors it holds (a tensor list holds several)."""
    if not isinstance(values, list):
        raise ProfileError(path, f"{where}.values", f"expected a list, got {type(values).__name__}")
    types = types if isinstance(types, list) else []
    shapes = shapes if isinstance(shapes, list) else []
    strides = strides if isinstance(strides, list) else []
    out = []
    for i, value in enumerate(values):
        kind = types[i] if i < len(types) and isinstance(types[i], str) else ""
        shape = shapes[i] if i < len(shapes) else None
        stride = strides[i] if i < len(strides) else None
        here = []
        if kind.startswith("Tensor("):
            t = _tensor_of(path, f"{where}.values[{i}]", value, shape, stride)
            here = [t] if t else []
        elif kind.startswith("GenericList[") and "Tensor(" in kind and isinstance(value, list):
            for j, v in enumerate(value):
                sh = shape[j] if isinstance(shape, list) and j < len(shape) else None
                st = stride[j] if isinstance(stride, list) and j < len(stride) else None
                if isinstance(v, list) and len(v) == 6:
                    t = _tensor_of(path, f"{where}.values[{i}][{j}]", v, sh, st)
                    if t:
                        here.append(t)
        out.append(here)
    return out


def _read_et(path) -> tuple[dict, dict, str]:
    """(header, nodes by id, sha256) of an execution trace."""
    et, digest = _load_json(path)
    pid = _need(path, et, "pid", int)
    raw = _need(path, et, "nodes", list)
    if not raw:
        raise ProfileError(path, "nodes", "empty: the execution trace recorded no operator")
    nodes = {}
    for i, n in enumerate(raw):
        w = f"nodes[{i}]."
        if not isinstance(n, dict):
            raise ProfileError(path, f"nodes[{i}]", f"expected an object, got {type(n).__name__}")
        nid = _need(path, n, "id", int, w)
        name = _need(path, n, "name", str, w)
        parent = _need(path, n, "ctrl_deps", int, w)
        attrs = {}
        for j, a in enumerate(_need(path, n, "attrs", list, w)):
            if not isinstance(a, dict) or "name" not in a or "value" not in a:
                raise ProfileError(path, f"{w}attrs[{j}]", "expected an object with name and value")
            attrs[a["name"]] = a["value"]
        rf = attrs.get("rf_id")
        if rf is not None and (not isinstance(rf, int) or isinstance(rf, bool)):
            raise ProfileError(path, f"{w}attrs.rf_id", f"expected an integer, got {rf!r:.40}")
        ins = _need(path, n, "inputs", dict, w)
        outs = _need(path, n, "outputs", dict, w)
        for side, obj in (("inputs", ins), ("outputs", outs)):
            _need(path, obj, "values", list, f"{w}{side}.")
        if nid in nodes:
            raise ProfileError(path, f"{w}id", f"node id {nid} appears twice")
        schema = attrs.get("op_schema", "")
        scope = attrs.get("scope", 0)
        nodes[nid] = _Node(
            id=nid, name=name, parent=parent, rf_id=rf, scope=scope if isinstance(scope, int) else 0,
            schema=schema if isinstance(schema, str) else "",
            inputs=_tensors(path, f"{w}inputs", ins["values"], ins.get("types"), ins.get("shapes"),
                            ins.get("strides")),
            outputs=_tensors(path, f"{w}outputs", outs["values"], outs.get("types"), outs.get("shapes"),
                             outs.get("strides")),
            input_shapes=ins.get("shapes") if isinstance(ins.get("shapes"), list) else [],
            input_types=ins.get("types") if isinstance(ins.get("types"), list) else [])
    _link_tree(path, nodes)
    header = {"pid": pid, "schema": str(et.get("schema", "")), "time": str(et.get("time", "")),
              "torch_version": str(et.get("torch_version", et.get("pytorch_version", "")))}
    return header, nodes, digest


def _link_tree(path, nodes: dict) -> None:
    """Children, subtree ends, phases; a parent chain that loops is damage."""
    roots = []
    for n in nodes.values():
        if n.parent == n.id or n.parent not in nodes:
            roots.append(n.id)
        else:
            nodes[n.parent].children.append(n.id)
    for n in nodes.values():
        n.children.sort()
    seen = 0
    order = []   # pre-order from the roots
    stack = sorted(roots, reverse=True)
    while stack:
        i = stack.pop()
        order.append(i)
        seen += 1
        stack.extend(reversed(nodes[i].children))
    if seen != len(nodes):
        bad = min(set(nodes) - set(order))
        raise ProfileError(path, f"node {bad} ctrl_deps", "its parent chain loops (damaged execution trace)")
    for i in order:                       # phases flow down the tree
        n = nodes[i]
        p = nodes.get(n.parent) if n.parent != n.id else None
        phase = p.phase if p else "forward"
        if n.name.startswith(OPTIMIZER_STEP_PREFIX):
            phase = "optimizer"
        elif phase == "forward" and (n.name.startswith(BACKWARD_PREFIX) or n.scope == BACKWARD_SCOPE):
            phase = "backward"
        n.phase = phase
        n.accumulate_grad = (p.accumulate_grad if p else False) or n.name == ACCUMULATE_GRAD
    for i in reversed(order):             # subtree ends, bottom up
        n = nodes[i]
        n.last = max([n.id] + [nodes[c].last for c in n.children])


def _read_kineto(path) -> tuple[dict, list, list, str]:
    """(header, CPU operators, GPU activities, sha256) of a Kineto trace."""
    k, digest = _load_json(path)
    events = _need(path, k, "traceEvents", list)
    ops, gpu, launches = [], [], {}
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            raise ProfileError(path, f"traceEvents[{i}]", f"expected an object, got {type(e).__name__}")
        cat = e.get("cat")
        if cat not in ("cpu_op", *GPU_ACTIVITY, *LAUNCH_CATEGORIES) or e.get("ph", "X") != "X":
            continue
        w = f"traceEvents[{i}]."
        name = _need(path, e, "name", str, w)
        ts = _need(path, e, "ts", (int, float), w)
        dur = _need(path, e, "dur", (int, float), w)
        if not (np.isfinite(ts) and np.isfinite(dur) and dur >= 0):
            raise ProfileError(path, f"{w}dur", f"got {dur!r}; must be a finite duration >= 0 (µs)")
        args = _need(path, e, "args", dict, w)
        ext = args.get("External id")
        if ext is not None and (not isinstance(ext, int) or isinstance(ext, bool)):
            raise ProfileError(path, f"{w}args.External id", f"expected an integer, got {ext!r:.40}")
        if cat == "cpu_op":
            rf = _need(path, args, "Record function id", int, f"{w}args.")
            _need(path, args, "External id", int, f"{w}args.")
            ops.append({"index": i, "name": name, "ts": float(ts), "dur": float(dur), "pid": e.get("pid"),
                        "ext": ext, "rf": rf, "dims": args.get("Input Dims")})
        elif cat in GPU_ACTIVITY:
            corr = args.get("correlation")
            if ext is None and corr is None:
                raise ProfileError(path, f"{w}args.External id", "missing, and no correlation either: the GPU "
                                                                 "activity cannot be matched to its operator")
            gpu.append({"index": i, "name": name, "cat": cat, "ts": float(ts), "dur": float(dur), "ext": ext,
                        "corr": corr, "device": args.get("device", e.get("pid"))})
        elif args.get("correlation") is not None and ext is not None:
            launches[args["correlation"]] = ext
    for g in gpu:   # an activity without its own External id takes its launch's
        if not g["ext"] and g["corr"] in launches:
            g["ext"] = launches[g["corr"]]
    devices = k.get("deviceProperties") if isinstance(k.get("deviceProperties"), list) else []
    header = {
        "devices": [d for d in devices if isinstance(d, dict)],
        "cuda_driver_version": str(k.get("cuda_driver_version", "")),
        "cuda_runtime_version": str(k.get("cuda_runtime_version", "")),
        "cupti_version": str(k.get("cupti_version", "")),
        "schemaVersion": str(k.get("schemaVersion", "")),
        "torch_version": str(k.get("torch_version", k.get("pytorch_version", ""))),
        "trace_id": str(k.get("trace_id", "")),
    }
    if not ops:
        raise ProfileError(path, "traceEvents", "no CPU operator (cat \"cpu_op\"): not a torch.profiler trace, or "
                                                "recorded without ProfilerActivity.CPU")
    return header, ops, gpu, digest


# ---- the two files must be of the same run -----------------------------------------------

def _check_same_run(et_path, kineto_path, et_header: dict, nodes: dict, ops: list) -> tuple[dict, int]:
    """Kineto operator -> its node ({ext: node id}) and the number of operators not in the ET."""
    pids = Counter(o["pid"] for o in ops)
    if et_header["pid"] not in pids:
        other = pids.most_common(1)[0][0]
        raise ProfileError(et_path, "pid", f"process {et_header['pid']}, but the operators of {kineto_path} ran in "
                                           f"process {other}: the two files are from different runs")
    by_rf = {n.rf_id: n for n in nodes.values()
             if n.rf_id is not None and not n.name.startswith("[pytorch|profiler|execution_trace|")}
    found, missing = {}, 0
    for o in ops:
        n = by_rf.get(o["rf"])
        if n is None:
            missing += 1
            continue
        if n.name != o["name"]:
            raise ProfileError(kineto_path, f"traceEvents[{o['index']}].args.Record function id",
                               f"{o['rf']} is {o['name']} here but {n.name} in {et_path}: the two files are from "
                               f"different runs")
        dims = o["dims"]
        if isinstance(dims, list):
            for j, (kind, shape) in enumerate(zip(n.input_types, n.input_shapes)):
                if (isinstance(kind, str) and kind.startswith("Tensor(") and j < len(dims)
                        and isinstance(shape, list) and shape != dims[j]):
                    raise ProfileError(kineto_path, f"traceEvents[{o['index']}].args.Input Dims",
                                       f"input {j} of {o['name']} is {dims[j]} here but {shape} in {et_path}: the "
                                       f"two files are from different runs")
        found[o["ext"]] = n.id
    if len(found) * 2 < len(ops):
        raise ProfileError(kineto_path, "traceEvents[*].args.Record function id",
                           f"only {len(found)} of its {len(ops)} operators are in {et_path}: the two files are from "
                           f"different runs (or the execution trace stopped early)")
    return found, missing


# ---- what an operator reads and writes ------------------------------------------------------

def _schema_args(schema: str) -> tuple[list, str]:
    """(per argument: written?, the return type text) from an ATen schema string."""
    start = schema.find("(")
    arrow = schema.rfind(" -> ")
    if start < 0 or arrow < 0:
        return [], ""
    body = schema[start + 1: schema.rfind(")", 0, arrow)]
    args, depth, cur = [], 0, ""
    for ch in body:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur.strip())
    written = []
    for a in args:
        if a == "*":
            continue
        kind = a.split("=")[0].rsplit(" ", 1)[0]
        written.append("!" in kind)
    return written, schema[arrow + 4:]


def _packet(name: str) -> str:
    """``aten::add_`` -> ``add_``."""
    return name.split("::", 1)[1].split(".", 1)[0] if "::" in name else name


class _Operand:
    __slots__ = ("storage", "mode", "extent", "shape")

    def __init__(self, storage, mode, extent, shape):
        self.storage, self.mode, self.extent, self.shape = storage, mode, extent, shape


def _operands(n: _Node, on_device) -> list:
    """(storage, mode, extent, shape) of the device tensors ``n`` touches: inputs first (schema order),
    then the outputs it allocated; in-place/overwritten arguments carry their write bit."""
    written, _ = _schema_args(n.schema)
    packet = _packet(n.name)
    if not written and packet.endswith("_") and n.inputs and n.inputs[0]:
        written = [True]     # no schema recorded: ATen's in-place convention (the first argument)
    modes, info = {}, {}
    for i, ts in enumerate(n.inputs):
        w = i < len(written) and written[i]
        for t in ts:
            if not on_device(t.device):
                continue
            if w and packet in OVERWRITE_OPS:
                mode = ACCESS_WRITE
            elif w:
                mode = ACCESS_READ | ACCESS_WRITE
            else:
                mode = ACCESS_READ
            modes[t.storage] = modes.get(t.storage, 0) | mode
            info.setdefault(t.storage, t)
    inputs = set(modes)
    for ts in n.outputs:
        for t in ts:
            if on_device(t.device) and t.storage not in inputs:
                modes[t.storage] = modes.get(t.storage, 0) | ACCESS_WRITE
                info.setdefault(t.storage, t)
    # an overwrite of part of a storage keeps the rest: it is read as well (as the recorder does)
    out = []
    for s, m in modes.items():
        t = info[s]
        out.append(_Operand(s, m, t.extent_bytes, t.shape))
    return out


def _is_view_or_alloc(n: _Node) -> bool:
    packet = _packet(n.name)
    if packet in ALLOC_OPS:
        return True
    written, returns = _schema_args(n.schema)
    return "(a" in returns and not any(written) and "!" not in returns


# ---- the import -------------------------------------------------------------------------------

def device_gpu_model(name: str, total_memory_bytes: int | float | None = None) -> str:
    """The :data:`g10core.gpus.GPUS` name of a CUDA device name (``"NVIDIA A100-SXM4-40GB"`` ->
    ``"A100-40GB"``), or "" when the table has no such GPU."""
    s = " ".join(str(name).lower().replace("-", " ").split())
    mem_GiB = (total_memory_bytes or 0) / 2**30
    if "a100" in s:
        return "A100-80GB" if ("80gb" in s.replace(" ", "") or mem_GiB > 60) else "A100-40GB"
    if "h100" in s:
        if "nvl" in s:
            return ""
        return "H100-PCIe" if "pcie" in s else "H100-SXM"
    if "h200" in s:
        return "" if "nvl" in s else "H200"
    if "b200" in s:
        return "B200"
    if "l40s" in s:
        return "L40S"
    if "4090" in s and "rtx" in s:
        return "RTX-4090"
    return ""


# ---- the work of a CPU profile's kernels (cpu_times="physical") --------------------------------------

_GEMM_REDUCTION_ARG = {"mm": 0, "matmul": 0, "bmm": 0, "linear": 0, "addmm": 1, "baddbmm": 1, "addbmm": 1}
_CONV = {"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "cudnn_convolution", "mkldnn_convolution"}
_ATTENTION = {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
              "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention_for_cpu"}


def _dtype_of(kind: str) -> str:
    k = kind.lower()
    if "bfloat16" in k:
        return "bfloat16"
    if "half" in k or "float16" in k:
        return "float16"
    if "double" in k or "float64" in k:
        return "float64"
    return "float32"


def cpu_kernel_work(n: _Node, operands: list, sms: int, tf32: bool = False) -> tuple:
    """(flops, bytes, unit, kind, tiles, fill) of one CPU-profile kernel (node ``n``, its device
    ``operands`` as ``(key, mode, shape, extent_bytes)``) for the physical model; see the module docstring."""
    from ..workload import physical as ph

    nbytes = float(sum(e * ((m & ACCESS_READ != 0) + (m & ACCESS_WRITE != 0)) for _, m, _, e in operands))
    packet = _packet(n.name).rstrip("_")
    ins = [ts[0] for ts in n.inputs if ts]
    outs = [t for ts in n.outputs for t in ts]
    first_kind = next((k for k, ts in zip(n.input_types, n.inputs) if ts), "")
    dtype = _dtype_of(first_kind)
    numel = max((math.prod(t.shape) for t in outs if t.shape), default=0)
    out = max((t for t in outs if t.shape), key=lambda t: math.prod(t.shape), default=None)
    flops, kind, m, cols, batch = float(numel), ph.KIND_OTHER, 0, 0, 0
    if packet in _GEMM_REDUCTION_ARG and out is not None:
        i = _GEMM_REDUCTION_ARG[packet]
        a = ins[i] if i < len(ins) else None
        if a is not None and a.shape:
            flops, kind = 2.0 * numel * a.shape[-1], ph.KIND_GEMM
            shape = out.shape if len(out.shape) >= 2 else (1,) + tuple(out.shape)
            m, cols, batch = shape[-2], shape[-1], math.prod(shape[:-2])
    elif packet in _CONV and out is not None and len(ins) >= 2 and len(ins[1].shape) >= 3:
        flops, kind = 2.0 * numel * math.prod(ins[1].shape[1:]), ph.KIND_GEMM
        m, cols, batch = out.shape[0] * math.prod(out.shape[2:]), out.shape[1], 1
    elif packet == "convolution_backward" and len(ins) >= 3 and len(ins[2].shape) >= 3:
        # grad_output, input, weight: the input and the weight gradient, each a GEMM of the forward's FLOPs
        grad_out, x, w = ins[0], ins[1], ins[2]
        made = [t for t in outs if t.shape in (tuple(x.shape), tuple(w.shape))]
        flops, kind = 2.0 * math.prod(grad_out.shape) * math.prod(w.shape[1:]) * max(1, len(made)), ph.KIND_GEMM
        m, cols, batch = math.prod(w.shape[1:]), w.shape[0], 1      # the weight gradient: its long reduction is split
    elif packet in _ATTENTION and len(ins) >= 3 and len(ins[0].shape) == 4 and len(ins[1].shape) == 4:
        b, h, lq, d = ins[0].shape
        flops, kind = 4.0 * b * h * lq * ins[1].shape[2] * d, ph.KIND_ATTENTION_FWD
    if kind == ph.KIND_OTHER:
        unit = ph.UNIT_CUDA_FP64 if dtype == "float64" else ph.UNIT_CUDA_FP32
    else:
        unit = {"bfloat16": ph.UNIT_TENSOR_BF16, "float16": ph.UNIT_TENSOR_FP16, "float64": ph.UNIT_CUDA_FP64}.get(
            dtype, ph.UNIT_TENSOR_TF32 if (packet in _CONV or packet == "convolution_backward" or tf32) else ph.UNIT_CUDA_FP32)
    if kind == ph.KIND_GEMM and packet == "convolution_backward":
        tiles, fill = ph.best_tile(m, cols, batch, sms, split_k=True)
        tiles = 0
    elif kind == ph.KIND_GEMM:
        k = int(flops / (2.0 * m * cols * batch)) if m * cols * batch else 0
        tiles, fill = ph.best_tile(m, cols, batch, sms, k=k)
    else:
        tiles, fill = 0, 1.0
    return flops, nbytes, unit, kind, tiles, fill


CPU_TIMES = ("measured", "physical")


def import_profile(et_path, kineto_path, *, model: str | None = None, batch_size: int = 1,
                   calibration=None, torch_version: str = "", cpu_times: str = "measured",
                   gpu: str = "A100-40GB") -> Trace:
    """A training iteration recorded with ``torch.profiler`` as a :class:`~g10core.workload.trace.Trace`.

    Parameters
    ----------
    et_path : str or path
        The execution trace (``torch.profiler.ExecutionTraceObserver``), JSON or gzip'd JSON.
    kineto_path : str or path
        The Kineto trace of the same run (``prof.export_chrome_trace``), JSON or gzip'd JSON.
    model : str, optional
        The trace's model name (default: the execution trace's file name without extensions).
    batch_size : int
        The batch size to record (the files do not say; default 1).
    calibration : Calibration or path, optional
        The fault-cost coefficients (default: the shipped calibration).
    torch_version : str
        The PyTorch version of the run, recorded in the trace when the files do not name it.
    cpu_times : {"measured", "physical"}
        For a CPU-only profile: the operators' CPU durations (default), or each kernel's time
        from the physical kernel-time model on ``gpu`` (module docstring).  A GPU profile's
        times are always its measured ones.
    gpu : str
        With ``cpu_times="physical"``: the :mod:`g10core.gpus` model the times are for.

    Returns
    -------
    Trace
        Validated; its root attributes record the device, the CUDA driver, the two files'
        names and sha256, and how the times were measured.

    Raises
    ------
    ProfileError
        A damaged file, a missing field, or two files from different runs (one line naming the
        file and the field).

    Notes
    -----
    Needs no torch: both files are JSON.  See the module docstring for the rules.
    """
    if cpu_times not in CPU_TIMES:
        raise ValueError(f"cpu_times = {cpu_times!r}: one of {', '.join(CPU_TIMES)}")
    if cpu_times == "physical" and gpu not in GPUS:
        from ..gpus import unknown_text
        raise ValueError(f"gpu: {unknown_text(gpu)}")
    target_gpu = gpu
    et_header, nodes, et_sha = _read_et(et_path)
    k_header, ops, gpu, k_sha = _read_kineto(kineto_path)
    if cpu_times == "physical" and gpu:
        raise ProfileError(kineto_path, "traceEvents", "--cpu-times physical is for a CPU-only profile; this one has "
                                                       "GPU kernels, whose measured times are imported")
    found, unmatched = _check_same_run(et_path, kineto_path, et_header, nodes, ops)
    if calibration is not None and not isinstance(calibration, Calibration):
        calibration = load_calibration(calibration)      # a path (capture.api's rule, without torch)
    time_model = KernelTimeModel(calibration)
    on_gpu = bool(gpu)
    if on_gpu:
        def on_device(dev: str) -> bool:
            return dev.startswith("cuda")
    else:
        def on_device(dev: str) -> bool:
            return dev == "cpu"

    dur_of = {found[o["ext"]]: o["dur"] for o in ops if o["ext"] in found}

    # ---- kernels: (node id or None, name, ideal ns, order key)
    kernels = []
    if on_gpu:
        devs = Counter(g["device"] for g in gpu)
        if len(devs) > 1:
            raise ProfileError(kineto_path, "traceEvents[*].args.device",
                               f"GPU work on devices {sorted(map(str, devs))}: import one device's (one rank's) "
                               f"profile")
        per_node, loose = {}, []
        for g in sorted(gpu, key=lambda g: g["ts"]):
            nid = found.get(g["ext"]) if g["ext"] else None    # External id 0: launched outside any operator
            if nid is None:
                loose.append(g)
                continue
            entry = per_node.setdefault(nid, [g["ts"], 0.0, 0])
            entry[1] += g["dur"]
            entry[2] += 1
        for nid, (ts, dur, _count) in per_node.items():
            kernels.append((nid, nodes[nid].name, dur * 1e3, (ts, 0)))
        for g in loose:
            kernels.append((None, f"gpu:{g['name']}", g["dur"] * 1e3, (g["ts"], 0)))
        kernels.sort(key=lambda k: k[3])
        gpu_total_ns = sum(g["dur"] for g in gpu) * 1e3
        loose_ns = sum(g["dur"] for g in loose) * 1e3
    else:
        gpu_total_ns = loose_ns = 0.0
        loose = []
        writes_cache = {}

        def writes(nid):
            if nid not in writes_cache:
                writes_cache[nid] = {o.storage for o in _operands(nodes[nid], on_device) if o.mode & ACCESS_WRITE}
            return writes_cache[nid]

        def working(nid):
            n = nodes[nid]
            return n.name.startswith("aten::") and not _is_view_or_alloc(n) and bool(writes(nid))

        def subtree(nid):
            stack = list(nodes[nid].children)
            while stack:
                c = stack.pop()
                yield c
                stack.extend(nodes[c].children)

        def self_ns(nid):
            return dur_of.get(nid, 0.0) - sum(dur_of.get(c, 0.0) for c in nodes[nid].children)

        def visit(nid) -> float:
            """Emit the kernels of ``nid``'s subtree; return the time they take (ns)."""
            if nid in dur_of and working(nid):
                inner = [c for c in subtree(nid) if working(c)]
                if all(writes(c) <= writes(nid) for c in inner):
                    heaviest = max([nid] + [c for c in inner if c in dur_of], key=self_ns)
                    kernels.append((nid, nodes[heaviest].name, dur_of[nid] * 1e3, (nid, 0)))
                    return dur_of[nid] * 1e3
                # nested operators make tensors of their own: they are kernels, and this operator
                # is one for the rest of its time (after them: it finishes with their results)
                nested = sum(visit(c) for c in nodes[nid].children)
                own = max(dur_of[nid] * 1e3 - nested, 0.0)
                kernels.append((nid, nodes[nid].name, own, (nodes[nid].last, 1)))
                return nested + own
            return sum(visit(c) for c in nodes[nid].children)

        for r in sorted(i for i, n in nodes.items() if n.parent == n.id or n.parent not in nodes):
            visit(r)
        kernels.sort(key=lambda k: k[3])
    if not kernels:
        raise ProfileError(kineto_path, "traceEvents", "no operator computed anything on the device: nothing to "
                                                       "import")

    # ---- tensors: storage lifetimes (a storage id is an address, reused after a free)
    producers = {}       # storage -> node ids that return it without being given it
    for nid in sorted(nodes):
        n = nodes[nid]
        ins = {t.storage for ts in n.inputs for t in ts}
        for t in {t.storage for ts in n.outputs for t in ts if on_device(t.device)} - ins:
            producers.setdefault(t, []).append(nid)
    births = {}          # storage -> sorted node ids where a new tensor of it starts
    for storage, ps in producers.items():
        # the innermost producer allocated it (an operator returns what its nested operators made)
        births[storage] = [p for i, p in enumerate(ps) if not (i + 1 < len(ps) and ps[i + 1] <= nodes[p].last)]

    def lifetime(storage, at, output):
        """The tensor (storage, birth or -1 for one that existed before) ``storage`` is at node ``at``."""
        b = births.get(storage, ())
        limit = nodes[at].last if output else at - 1
        best = -1
        for x in b:
            if x <= limit:
                best = x
            else:
                break
        return storage, best

    extent = {}          # lifetime -> bytes
    for nid in sorted(nodes):
        n = nodes[nid]
        for side, lists in ((False, n.inputs), (True, n.outputs)):
            for ts in lists:
                for t in ts:
                    if on_device(t.device):
                        key = lifetime(t.storage, nid, side)
                        extent[key] = max(extent.get(key, 0), t.extent_bytes)

    # per kernel: its operands as lifetimes
    k_ops = []
    for nid, _name, _t, _ in kernels:
        if nid is None:
            k_ops.append([])
            continue
        n = nodes[nid]
        ins = {t.storage for ts in n.inputs for t in ts}
        row = []
        for o in _operands(n, on_device):
            key = lifetime(o.storage, nid, o.storage not in ins)
            mode = o.mode
            if mode == ACCESS_WRITE and o.storage in ins and o.extent < extent.get(key, 0):
                mode = ACCESS_READ | ACCESS_WRITE   # a partial overwrite keeps the rest of the storage
            row.append((key, mode, o.shape))
        k_ops.append(row)

    # roles
    grads = set()
    for n in nodes.values():
        if n.accumulate_grad:
            for side, lists in ((False, n.inputs), (True, n.outputs)):
                for ts in lists:
                    for t in ts:
                        if on_device(t.device):
                            grads.add(lifetime(t.storage, n.id, side))
    touched = {}   # lifetime -> set of (phase, mode bits) over kernels
    for (nid, *_), row in zip(kernels, k_ops):
        phase = nodes[nid].phase if nid is not None else "forward"
        for key, mode, _ in row:
            touched.setdefault(key, set()).add((phase, mode))

    def role(key):
        born = key[1] >= 0
        if key in grads:
            return "grad"
        if born:
            return "activation"
        acts = touched.get(key, set())
        written = {p for p, m in acts if m & ACCESS_WRITE}
        read_fwd = any(p == "forward" and m & ACCESS_READ for p, m in acts)
        if "optimizer" in written:
            return "param" if read_fwd else "optimizer_state"
        if written:
            return "buffer"
        return "input"

    tensor_id, sizes, names, is_global, roles = {}, [], [], [], []
    param_shapes = set()
    for row in k_ops:
        for key, _, shape in row:
            if shape and role(key) == "param":
                param_shapes.add(tuple(shape))
                param_shapes.add(tuple(shape)[::-1])
    a_tensor, a_mode, offsets = [], [], [0]
    k_class, k_op = [], []
    phases = set()
    for k, ((nid, name, _t, _), row) in enumerate(zip(kernels, k_ops)):
        phase = nodes[nid].phase if nid is not None else "forward"
        phases.add(phase)
        packet = _packet(name)
        n_new = 0
        reads = [(key, m, sh) for key, m, sh in row if m & ACCESS_READ]
        writes_only = [(key, m, sh) for key, m, sh in row if not m & ACCESS_READ]
        for key, mode, _ in reads + writes_only:
            tid = tensor_id.get(key)
            if tid is None:
                tid = tensor_id[key] = len(sizes)
                r = role(key)
                roles.append(r)
                sizes.append(max(1, extent.get(key, 1)))
                is_global.append(r in GLOBAL_ROLES or (r == "grad" and key[1] < 0))
                label = {"forward": "fwd", "backward": "bwd", "optimizer": "opt"}[phase]
                suffix = f".{n_new}" if n_new else ""
                names.append(f"{r}:s{key[0]}" if r != "activation" else f"{label}:{packet}#{k}{suffix}")
                n_new += r == "activation"
            a_tensor.append(tid)
            a_mode.append(mode)
        offsets.append(len(a_tensor))
        reads_param = any(roles[tensor_id[key]] == "param" for key, _, _ in reads)
        makes_param = any(tuple(sh) in param_shapes for _, _, sh in writes_only if sh)
        cls, op = aten_kernel_class(packet, phase, reads_param, makes_param) if nid is not None else ("default", name)
        k_class.append(cls)
        k_op.append(op)
    if not sizes:
        raise ProfileError(et_path, "nodes[*].inputs", "no tensor on the profiled device: nothing to page")
    inference = "backward" not in phases
    if inference:
        # an inference (forward-only) profile: one forward pass, marked as the prefill of an inference trace
        # (format 5); the decode steps of a generate() call are not told apart from it
        warnings.warn(G10Warning(
            f"{Path(et_path).name}: the profile has no backward pass (no operator ran under autograd's backward): "
            "an inference profile, imported as one forward pass (trace format 5: every kernel in phase 0, prefill; "
            "decode steps are not told apart; `g10sim trace inference` writes prefill and decode steps)"),
            stacklevel=2)

    size = np.array(sizes, np.int64)
    offsets = np.array(offsets, np.int64)
    a_tensor = np.array(a_tensor, np.int32)
    a_mode = np.array(a_mode, np.uint8)
    in_bytes, out_bytes = kernel_io_bytes(offsets, a_tensor, a_mode, size)

    K = len(kernels)
    feat = KernelFeatures(op=np.array(k_op, dtype=str), kernel_class=np.array(k_class, dtype=str),
                          flops=np.zeros(K), bytes=np.zeros(K), peak_flops_per_s=np.ones(K),
                          in_bytes=in_bytes, out_bytes=out_bytes)
    t11 = np.array([t for _, _, t, _ in kernels], np.float64)
    t10, t00 = time_model.fault_times_ns(feat, t11)
    work = None
    if cpu_times == "physical":
        from ..workload import physical as ph

        g = GPUS[target_gpu]
        rows = []
        for (nid, _name, _t, _), row in zip(kernels, k_ops):
            ops_ = [(key, mode, shape, extent.get(key, 0)) for key, mode, shape in row]
            rows.append(cpu_kernel_work(nodes[nid], ops_, g.sms))
        cols = list(zip(*rows))
        work = ph.KernelWork(np.array(cols[0], np.float64), np.array(cols[1], np.float64), np.array(cols[2], np.uint8),
                             np.array(cols[3], np.uint8), np.array(cols[4], np.int64), np.array(cols[5], np.float32))
        t11 = ph.physical_model().ideal_ns(work, g)
        t10, t00 = ph.fault_times_ns(t11, feat.in_bytes, feat.out_bytes, ph.link_GBps(g))

    # ---- provenance
    if on_gpu:
        dev_id = next(iter(Counter(g["device"] for g in gpu)))
        props = next((d for d in k_header["devices"] if d.get("id") == dev_id), None) or \
            (k_header["devices"][0] if k_header["devices"] else {})
        device = str(props.get("name", "")) or "an unnamed CUDA device"
        profiled = device_gpu_model(device, props.get("totalGlobalMem"))
        profiling_gpu = f"{device} (measured)"
    elif work is not None:
        device, profiled = "cpu", target_gpu
        profiling_gpu = f"NVIDIA {target_gpu} (predicted by physical-v1 from a CPU profile's operators)"
    else:
        device, profiled, profiling_gpu = "cpu", "", "CPU (measured: operator CPU durations, no GPU in the profile)"
    assert profiled == "" or profiled in GPUS
    et_name, k_name = Path(et_path).name, Path(kineto_path).name
    version = et_header["torch_version"] or k_header["torch_version"] or str(torch_version)
    what = ("GPU kernel durations (summed per launching operator)" if on_gpu
            else "operator CPU durations (a CPU-only profile: no GPU kernel was recorded)")
    source = (f"g10core.capture.import_profile: one training iteration recorded with torch.profiler "
              f"({k_name}, execution trace {et_name}) on {device}; ideal times are the measured {what}; fault times "
              f"from calibration {time_model.calibration.version}")
    if work is not None:
        source = (f"g10core.capture.import_profile: one training iteration recorded with torch.profiler ({k_name}, "
                  f"execution trace {et_name}) on a CPU; kernel times from the physical model physical-v1 on the "
                  f"NVIDIA {target_gpu} (each operator's FLOPs and bytes), not the CPU durations")
    role_counts = Counter(roles)
    attrs = {
        "import_tool": "g10core.capture.import_profile",
        "import_device": device,
        "import_time_source": "gpu" if on_gpu else "cpu",
        "import_cpu_times": "measured" if work is None else "physical",
        "import_cuda_driver_version": k_header["cuda_driver_version"],
        "import_cuda_runtime_version": k_header["cuda_runtime_version"],
        "import_cupti_version": k_header["cupti_version"],
        "import_torch_version": version or "unknown (not in the files)",
        "import_et_file": et_name,
        "import_et_sha256": et_sha,
        "import_et_schema": et_header["schema"],
        "import_kineto_file": k_name,
        "import_kineto_sha256": k_sha,
        "import_kineto_trace_id": k_header["trace_id"],
        "import_pid": int(et_header["pid"]),
        "import_operators": len(ops),
        "import_operators_not_in_et": int(unmatched),
        "import_gpu_activities": len(gpu),
        "import_gpu_time_ns": float(round(gpu_total_ns)),
        "import_unattributed_gpu_activities": len(loose),
        "import_unattributed_gpu_time_ns": float(round(loose_ns)),
        "import_tensor_roles": json.dumps({r: role_counts.get(r, 0) for r in ROLES}),
        "calibration_version": time_model.calibration.version if work is None else "physical-v1",
    }
    if work is not None:
        attrs["kernel_time_model"] = "physical-v1"
    name = model or Path(et_path).name.split(".")[0] or "profile"
    trace = Trace(
        model=name, batch_size=int(batch_size),
        tensor_size_bytes=size, tensor_is_global=np.array(is_global, bool), tensor_name=np.array(names, dtype=str),
        kernel_name=np.array([n for _, n, _, _ in kernels], dtype=str),
        kernel_time_ideal_ns=t11, kernel_time_fault_all_ns=t00, kernel_time_fault_outputs_ns=t10,
        kernel_workspace_bytes=np.zeros(K, np.int64),
        access_offsets=offsets, access_tensor=a_tensor, access_mode=a_mode,
        source=source, profiling_gpu=profiling_gpu, profiled_gpu=profiled, attrs=attrs, kernel_work=work,
        kernel_phase=np.zeros(K, np.int32) if inference else None)
    validate_trace(trace)
    return trace


__all__ = ["import_profile", "device_gpu_model", "ProfileError"]
