"""``capture()``: one training iteration of a PyTorch model as a :class:`~g10core.workload.trace.Trace` (needs torch)."""
from __future__ import annotations

import json
import os
from dataclasses import replace

import numpy as np
import torch

from ..workload.roles import infer_roles
from ..workload.trace import Trace, kernel_io_bytes, validate_trace
from .recorder import CaptureError, KernelRecorder, storage_key
from ..workload.kerneltime import Calibration, KernelFeatures, KernelTimeModel, ProfilingGPU, load_calibration
from ..workload import physical as _ph
from ..gpus import DEFAULT_GPU, GPUModel, gpu_model

META = torch.device("meta")


def _to_meta(x):
    """A meta tensor of the same shape, dtype and requires_grad (values are not needed)."""
    if not isinstance(x, torch.Tensor):
        return x
    if x.device == META:
        return x
    return torch.empty_like(x, device=META).requires_grad_(x.requires_grad)


def resolve_calibration(calibration) -> Calibration:
    """A :class:`Calibration` as given, the one in a JSON file (path), or the shipped one (None)."""
    if calibration is None or isinstance(calibration, Calibration):
        return load_calibration() if calibration is None else calibration
    if isinstance(calibration, (str, os.PathLike)):
        return load_calibration(calibration)
    raise ValueError(f"calibration: expected a Calibration, a path or None, got {type(calibration).__name__}")


CALIBRATION_NAME = "a100-g10-v1"   # the shipped fitted calibration, selectable by name


def resolve_time_model(time_model):
    """The kernel-time model a capture predicts with.

    ``None``, ``"physical"`` or ``"physical-v1"``: the physical model
    (:func:`g10core.workload.physical.physical_model`, the default); a
    :class:`~g10core.workload.physical.PhysicalModel` as given; ``"a100-g10-v1"``: the calibration
    fitted on the G10 artifact's A100 profiles (for comparisons with the paper's traces); a
    :class:`Calibration`, or the path of a calibration JSON file.
    """
    if time_model is None or (isinstance(time_model, str) and time_model in ("physical", _ph.PHYSICAL_VERSION)):
        return _ph.physical_model()
    if isinstance(time_model, _ph.PhysicalModel):
        return time_model
    if isinstance(time_model, str) and time_model == CALIBRATION_NAME:
        return load_calibration()
    if isinstance(time_model, (str, os.PathLike)) and not os.path.exists(time_model):
        raise ValueError(f"time model {str(time_model)!r}: neither {_ph.PHYSICAL_VERSION}, {CALIBRATION_NAME} nor an "
                         f"existing calibration file")
    return resolve_calibration(time_model)


def resolve_gpu(gpu) -> GPUModel:
    """The table GPU a capture's times are for: None (A100-40GB), a name, a GPUModel or a ProfilingGPU."""
    if gpu is None:
        return gpu_model(DEFAULT_GPU)
    if isinstance(gpu, GPUModel):
        return gpu
    if isinstance(gpu, ProfilingGPU):
        if not gpu.model:
            raise ValueError(f"gpu: {gpu.name!r} is not a GPU of g10core.gpus; the physical kernel-time model "
                             "needs a table GPU (its SMs and peaks)")
        return gpu_model(gpu.model)
    if isinstance(gpu, str):
        return gpu_model(gpu)
    raise ValueError(f"gpu: expected a GPU name, a GPUModel or a ProfilingGPU, got {type(gpu).__name__}")


def _make_optimizer(optimizer, params, master_weights=None):
    if master_weights is not None:
        from .mixed import MASTER_DTYPES, MasterWeightAdamW

        if master_weights not in MASTER_DTYPES:
            raise ValueError(f"master_weights = {master_weights!r}: fp32 or None")
        if optimizer not in (None, "adamw", "adam"):
            raise ValueError(f"master weights: optimizer = {optimizer!r}; with fp32 master weights the step is "
                             "adamw or adam")
        low = {p.dtype for p in params} - {torch.bfloat16, torch.float16}
        if low:
            raise ValueError(f"master weights keep an fp32 copy of 16-bit parameters; the model's parameters "
                             f"are {', '.join(sorted(str(d).replace('torch.', '') for d in low))} (capture with "
                             "dtype bfloat16 or float16)")
        return MasterWeightAdamW(params, lr=1e-4, weight_decay=0.0 if optimizer == "adam" else 0.01,
                                 master_dtype=MASTER_DTYPES[master_weights])
    if optimizer is None or optimizer == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01)
    if optimizer == "adam":
        return torch.optim.Adam(params, lr=1e-4)
    if optimizer == "sgd":  # plain SGD: one update kernel per parameter, no state
        return torch.optim.SGD(params, lr=1e-3)
    if optimizer == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    if isinstance(optimizer, str):
        raise ValueError(f"optimizer = {optimizer!r}: one of adamw, adam, sgd, sgd-momentum, or a callable params -> Optimizer")
    if isinstance(optimizer, torch.optim.Optimizer):
        return optimizer
    if callable(optimizer):
        opt = optimizer(params)
        if not isinstance(opt, torch.optim.Optimizer):
            raise ValueError(f"optimizer factory returned {type(opt).__name__}, not a torch.optim.Optimizer")
        return opt
    raise ValueError(f"optimizer: expected a name, an Optimizer or a callable, got {type(optimizer).__name__}")


def _default_loss(output, *targets):
    """The output itself when it is a scalar; else the mean of its first tensor."""
    if isinstance(output, (tuple, list)):
        output = output[0]
    if isinstance(output, dict):
        output = next(iter(output.values()))
    if output.dim() == 0:
        return output
    return output.float().mean()


def capture(model: torch.nn.Module, example_inputs, loss_fn=None, optimizer=None, *, targets=(),
            name: str | None = None, batch_size: int | None = None, gpu: ProfilingGPU | None = None,
            calibration=None, attrs: dict | None = None, source: str | None = None,
            master_weights: str | None = None, tf32: bool = False) -> Trace:
    """Capture one training iteration (forward, loss, backward, optimizer step) as a Trace.

    ``model``: any ``nn.Module``; build it on the meta device (``with torch.device("meta"):``)
    so no weights are allocated.  A model with real weights is run through
    ``torch.func.functional_call`` with meta copies of its parameters and buffers (its
    own tensors are not touched, the optimizer then updates the copies).
    ``example_inputs``: a tensor, a tuple of positional inputs, or a dict of keyword
    inputs (moved to meta: only shapes and dtypes matter).  ``loss_fn(output, *targets)``
    returns the scalar loss (default: the output if it is a scalar, else its mean).
    ``optimizer``: ``"adamw"`` (default), ``"adam"``, ``"sgd"``, a callable that takes
    the parameter list and returns an optimizer, or an optimizer over the (meta) model's
    parameters.  Its state is initialised by one step before the recorded iteration, so
    the recorded step is a steady-state one.  ``master_weights="fp32"``: mixed precision
    (a model in bfloat16 or float16; the step is AdamW, or Adam, over fp32 master weights and
    moments, :class:`~g10core.capture.mixed.MasterWeightAdamW`: 16 bytes of model state per
    parameter).

    Tensor roles (``Trace.tensor_role``) are exact: parameters, gradients, optimizer state
    (moments, master weights), inputs and workspaces as recorded; activations are the tensors
    a forward kernel makes that a backward kernel reads, temporaries the other tensors written
    and last read within one recorded phase (:mod:`g10core.workload.roles`).

    ``tf32``: fp32 matrix products run on TF32 tensor cores too (``torch.backends.cuda.matmul.
    allow_tf32``; False, PyTorch's default since 1.12; fp32 convolutions use TF32 either way, as
    cuDNN's default ``torch.backends.cudnn.allow_tf32 = True``).

    Global tensors: parameters, buffers and optimizer state.  Kernel times come from
    the calibrated model (``calibration``: a :class:`~.timing.Calibration` or a path;
    default the shipped one) on ``gpu`` (default: the calibration's GPU).  The trace is
    validated before it is returned; the same call gives the same trace.
    """
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    model_of_time = resolve_time_model(calibration)
    if isinstance(model_of_time, _ph.PhysicalModel):
        table_gpu = resolve_gpu(gpu)
        time_model = model_of_time
        profiling = ProfilingGPU.of_model(table_gpu.name)
        workspace_model = KernelTimeModel(load_calibration(), profiling)   # cuDNN workspace sizes only
    else:
        time_model = KernelTimeModel(model_of_time, gpu)
        table_gpu = None
        profiling = time_model.gpu
        workspace_model = time_model

    if isinstance(example_inputs, dict):
        args, kwargs = (), {k: _to_meta(v) for k, v in example_inputs.items()}
    elif isinstance(example_inputs, (tuple, list)):
        args, kwargs = tuple(_to_meta(v) for v in example_inputs), {}
    else:
        args, kwargs = (_to_meta(example_inputs),), {}
    targets = tuple(_to_meta(t) for t in (targets if isinstance(targets, (tuple, list)) else (targets,)))
    loss_fn = _default_loss if loss_fn is None else loss_fn

    # parameters and buffers on meta (the model's own, or meta copies for functional_call)
    named_params = dict(model.named_parameters())
    named_buffers = dict(model.named_buffers())
    on_meta = all(p.device == META for p in named_params.values()) and \
        all(b.device == META for b in named_buffers.values())
    if on_meta:
        params, buffers = named_params, named_buffers

        def run(*a, **kw):
            return model(*a, **kw)
    else:
        if isinstance(optimizer, torch.optim.Optimizer):
            raise ValueError("optimizer: an optimizer instance needs a model on the meta device; "
                             "pass a name or a factory instead")
        params = {n: torch.nn.Parameter(_to_meta(p.detach()), requires_grad=p.requires_grad)
                  for n, p in named_params.items()}
        buffers = {n: _to_meta(b) for n, b in named_buffers.items()}

        def run(*a, **kw):
            return torch.func.functional_call(model, {**params, **buffers}, a, kw, tie_weights=True)
    trainable = []
    seen = set()
    for p in params.values():  # tied weights appear once
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            trainable.append(p)
    if not trainable:
        raise ValueError("model has no trainable parameters")
    opt = _make_optimizer(optimizer, trainable, master_weights)

    # warm-up step: the optimizer creates its state (a steady-state iteration has it already)
    for p in trainable:
        p.grad = torch.zeros_like(p)
    opt.step()
    opt.zero_grad(set_to_none=True)

    roles = {}
    param_name = {}
    for n, p in params.items():
        roles.setdefault(storage_key(p), (f"param:{n}", True))
        param_name.setdefault(id(p), n)
    for n, b in buffers.items():
        roles.setdefault(storage_key(b), (f"buffer:{n}", True))
    for p in trainable:
        for key, v in opt.state.get(p, {}).items():
            if isinstance(v, torch.Tensor) and v.device == META:
                roles.setdefault(storage_key(v), (f"optim:{key}:{param_name[id(p)]}", True))
    for i, t in enumerate(list(args) + list(kwargs.values())):
        if isinstance(t, torch.Tensor):
            roles.setdefault(storage_key(t), (f"input:{i}", False))
    for i, t in enumerate(targets):
        if isinstance(t, torch.Tensor):
            roles.setdefault(storage_key(t), (f"target:{i}", False))

    def workspace(op, cls, read_bytes):
        feat = KernelFeatures(op=np.array([op]), kernel_class=np.array([cls]), flops=np.zeros(1),
                              bytes=np.zeros(1), peak_flops_per_s=np.ones(1), in_bytes=np.zeros(1),
                              out_bytes=np.zeros(1))
        return int(workspace_model.workspace_bytes(feat, np.array([float(read_bytes)]))[0])

    rec = KernelRecorder(META, roles, {storage_key(p) for p in trainable},
                         {tuple(p.shape) for p in trainable}, workspace, allow_tf32_matmul=bool(tf32),
                         sms=(table_gpu.sms if table_gpu is not None else gpu_model(DEFAULT_GPU).sms))
    try:
        with rec:
            rec.set_phase("forward")
            out = run(*args, **kwargs)
            loss = loss_fn(out, *targets)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise ValueError("loss_fn must return a scalar tensor")
            rec.set_phase("backward")
            loss.backward()
            for p in trainable:  # name the gradients before the step consumes them
                if p.grad is not None:
                    tid = rec.tensor_id.get(storage_key(p.grad))
                    if tid is not None and not rec.tensor_global[tid]:
                        rec.tensor_name[tid] = f"grad:{param_name[id(p)]}"
            rec.set_phase("optimizer")
            opt.step()
            opt.zero_grad(set_to_none=True)
    except NotImplementedError as exc:
        raise CaptureError(f"an operator has no meta implementation or needs tensor values "
                           f"(data-dependent control flow cannot be captured): {exc}") from exc
    except RuntimeError as exc:
        if "meta" in str(exc) or "data-dependent" in str(exc) or "item()" in str(exc):
            raise CaptureError(f"the iteration cannot run on the meta device: {exc}") from exc
        raise
    if not rec.kernel_name:
        raise CaptureError("the iteration ran no kernel")

    trace = _build_trace(rec, time_model, model, name, batch_size, args, kwargs, table_gpu, profiling)
    if source:
        trace = replace(trace, source=source)
    n_params = sum(p.numel() for p in trainable)
    provenance = {
        "capture_tool": "g10core.capture.capture",
        "capture_torch_version": torch.__version__.split("+")[0],
        "capture_optimizer": type(opt).__name__,
        "capture_master_weights": master_weights or "",
        "capture_tf32_matmul": bool(tf32),
        "capture_optimizer_defaults": json.dumps({k: v for k, v in opt.defaults.items()
                                                  if isinstance(v, (int, float, bool, str, type(None)))},
                                                 sort_keys=True),
        "capture_n_parameters": int(n_params),
        "capture_parameter_bytes": int(sum(p.numel() * p.element_size() for p in trainable)),
        "capture_forward_kernels": int(rec.phase_start["backward"]),
        "capture_backward_kernels": int(rec.phase_start["optimizer"] - rec.phase_start["backward"]),
        "capture_optimizer_kernels": int(len(rec.kernel_name) - rec.phase_start["optimizer"]),
        "calibration_version": _time_model_version(time_model),
        "kernel_time_model": _time_model_version(time_model),
        "calibration_gpu": json.dumps(profiling.to_dict(), sort_keys=True),
    }
    trace.attrs.update(provenance)
    trace.attrs.update(attrs or {})
    # roles from the recorder's names and the recorded phases (now in attrs)
    role, layer = infer_roles(trace)
    trace = replace(trace, tensor_role=role, tensor_layer=layer)
    validate_trace(trace)
    return trace


def _time_model_version(time_model) -> str:
    return time_model.version if isinstance(time_model, _ph.PhysicalModel) else time_model.calibration.version


def _build_trace(rec: KernelRecorder, time_model, model, name, batch_size, args, kwargs,
                 table_gpu: GPUModel | None, profiling: ProfilingGPU) -> Trace:
    size = np.array(rec.tensor_size, np.int64)
    offsets = np.array(rec.access_offsets, np.int64)
    a_tensor = np.array(rec.access_tensor, np.int32)
    a_mode = np.array(rec.access_mode, np.uint8)
    in_bytes, out_bytes = kernel_io_bytes(offsets, a_tensor, a_mode, size)
    work = _ph.KernelWork(
        flops=np.array(rec.kernel_flops, np.float64),
        bytes=np.array(rec.kernel_bytes, np.float64),
        unit=np.array(rec.kernel_unit, np.uint8),
        kind=np.array(rec.kernel_kind, np.uint8),
        tiles=np.array(rec.kernel_tiles, np.int64),
        fill=np.array(rec.kernel_fill, np.float32),
    )
    if isinstance(time_model, _ph.PhysicalModel):
        t11 = time_model.ideal_ns(work, table_gpu)
        t10, t00 = _ph.fault_times_ns(t11, in_bytes, out_bytes, _ph.link_GBps(table_gpu))
        how = f"kernel times from the physical model {time_model.version} on the {table_gpu.full_name}"
        profiled_gpu = table_gpu.name
    else:
        feat = KernelFeatures(
            op=np.array(rec.kernel_op, dtype=str),
            kernel_class=np.array(rec.kernel_class, dtype=str),
            flops=work.flops,
            bytes=work.bytes,
            peak_flops_per_s=np.array([time_model.gpu.peak_flops_per_s(d, matrix=c in (
                "linear", "linear_bwd_input", "bmm", "conv_fwd", "conv_bwd_input", "conv_bwd_weight"))
                for d, c in zip(rec.kernel_dtype, rec.kernel_class)], np.float64),
            in_bytes=in_bytes,
            out_bytes=out_bytes,
        )
        t11, t10, t00 = time_model.times_ns(feat)
        how = f"kernel times predicted by the calibrated model {time_model.calibration.version}"
        profiled_gpu = time_model.gpu.model   # the table GPU the calibration's roofline is for ("" if none)
    if batch_size is None:
        first = next((t for t in list(args) + list(kwargs.values()) if isinstance(t, torch.Tensor) and t.dim()), None)
        batch_size = int(first.shape[0]) if first is not None else 1
    return Trace(
        model=name or type(model).__name__.lower(),
        batch_size=int(batch_size),
        tensor_size_bytes=size,
        tensor_is_global=np.array(rec.tensor_global, bool),
        tensor_name=np.array(rec.tensor_name, dtype=str),
        kernel_name=np.array(rec.kernel_name, dtype=str),
        kernel_time_ideal_ns=t11,
        kernel_time_fault_all_ns=t00,
        kernel_time_fault_outputs_ns=t10,
        kernel_workspace_bytes=np.array(rec.kernel_workspace, np.int64),
        access_offsets=offsets,
        access_tensor=a_tensor,
        access_mode=a_mode,
        source=f"g10core.capture: one training iteration of {type(model).__name__} recorded on the meta device; {how}",
        profiling_gpu=f"{profiling.name} (predicted)",
        profiled_gpu=profiled_gpu,
        attrs={},
        kernel_work=work,
    )


def capture_family(family: str, size: str | None = None, *, batch: int, seq_len: int, dtype: str = "float32",
                   optimizer="adamw", calibration=None, gpu: ProfilingGPU | None = None, name: str | None = None,
                   master_weights: str | None = None, tf32: bool = False, **overrides) -> Trace:
    """Capture one of the built-in model families (:mod:`.families`) at ``batch`` x ``seq_len``.

    ``master_weights="fp32"`` with ``dtype="bfloat16"``: mixed precision (see :func:`capture`).
    For the image families (``resnet``, ``resnext``, ``se-resnext``, ``senet``) ``seq_len`` is the
    side of the square input image (224 for ImageNet).  ``calibration``: the kernel-time model
    (default ``physical-v1``; ``"a100-g10-v1"`` the calibration fitted on the G10 artifact's
    profiles); ``gpu``: the GPU the times are for (default the A100-40GB).  Attention is fused
    unless ``attention="eager"`` is given.
    ``overrides`` change configuration fields (e.g. ``dropout=0.0``, ``layers=2``).  The
    trace's model name is ``name`` (default ``<family>-<size>``, ``bert-base`` for BERT); its attributes
    record the configuration and the capture settings.
    """
    from .families import DEFAULT_SIZE, IMAGE_FAMILIES, config_json
    from .models import family_workload

    size = DEFAULT_SIZE.get(family) if size is None else size
    model, inputs, targets, loss_fn, config = family_workload(family, size, batch, seq_len, dtype, **overrides)
    name = name or (family if family == "bert-base" else f"{family}-{size}")
    model_kind = "image" if family in IMAGE_FAMILIES else "sequence"
    attrs = {
        "capture_family": family,
        "capture_size": str(size),
        "capture_model_config": config_json(config),
        "capture_batch_size": int(batch),
        "capture_seq_len": int(seq_len),
        "capture_dtype": dtype,
        "capture_attention": getattr(config, "attention", "none"),
    }
    trace = capture(model, inputs, loss_fn, optimizer, targets=targets, name=name, batch_size=batch,
                    gpu=gpu, calibration=calibration, attrs=attrs, master_weights=master_weights, tf32=tf32)
    opt = trace.attrs["capture_optimizer"]
    shape = f"images {seq_len} x {seq_len}" if model_kind == "image" else f"sequence length {seq_len}"
    attention = "" if model_kind == "image" else f", {config.attention} attention"
    version = trace.attrs["kernel_time_model"]
    how = (f"the physical model {version} on the {trace.profiling_gpu.replace(' (predicted)', '')}"
           if version.startswith("physical") else f"calibration {version} (fitted on the G10 artifact's A100 profiles)")
    source = (f"g10core.capture: {family} {size} ({type(model).__name__}, {trace.attrs['capture_n_parameters']:,} "
              f"parameters), batch {batch}, {shape}, {dtype}"
              f"{f' with {master_weights} master weights' if master_weights else ''}{attention}, {opt}; one training "
              f"iteration recorded on the meta device with torch {trace.attrs['capture_torch_version']}; kernel times "
              f"from {how}")
    return replace(trace, source=source)
