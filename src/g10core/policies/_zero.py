"""What ZeRO-Offload and ZeRO-Infinity share (:mod:`g10core.policies.zero_offload`,
:mod:`g10core.policies.zero_infinity`): the roles they need, the optimizer's kernels as CPU Adam,
the layer steps of the parameter prefetch, and the closed forms of their traffic."""
from __future__ import annotations

import numpy as np

from ..codes import HINT_DTYPE, ROLE_GRADIENT, ROLE_NAMES, ROLE_OPTIMIZER_STATE, ROLE_PARAMETER
from ..errors import TensorSimError
from ..workload import roles as troles
from ..workload.trace import ACCESS_READ, ACCESS_WRITE, Trace
from . import tensorsim

# Adam per element on the CPU: m = b1 m + (1 - b1) g (3), v = b2 v + (1 - b2) g^2 (4),
# sqrt(v) + eps scaled by the bias corrections (3), the step m / denom x lr (2), and AdamW's
# decay and update of the weight (3): 15 floating-point operations.
ADAM_FLOPS_PER_ELEMENT = 15.0
FP32_BYTES = 4


def require_roles(trace: Trace, policy: str, need=(ROLE_PARAMETER, ROLE_GRADIENT, ROLE_OPTIMIZER_STATE)) -> None:
    """Refuse (TensorSimError, one line) a trace without the tensor roles ``policy`` needs."""
    role = trace.tensor_role
    missing = [ROLE_NAMES[r] for r in need if not np.any(role == r)]
    opt = troles.optimizer_kernels(trace)
    if not missing and opt.size == 0:
        missing = ["optimizer kernels"]
    if missing:
        raise TensorSimError(
            f"{policy} needs tensor roles the trace {trace.model}-b{trace.batch_size} does not have: "
            f"no {', no '.join(missing)} tensors (g10sim trace info counts bytes per role)")


class OptimizerPlan:
    """What both ZeRO policies derive from the roles: the CPU kernels, the parameter groups and
    the fused CPU Adam work.

    Attributes
    ----------
    on_cpu : ndarray of bool
        Per kernel: the optimizer kernels.
    groups : list of list of int
        The optimizer kernels of each parameter, in trace order: kernels linked through the tensors
        they share (parameter, gradient, optimizer state, the step's temporaries).
    flops, bytes : ndarray
        Per kernel, the fused CPU Adam work, on the first kernel of each group.
    n_elements : int
        Parameters (elements) the optimizer updates.
    """

    def __init__(self, trace: Trace):
        K = trace.n_kernels
        role = trace.tensor_role
        opt = troles.optimizer_kernels(trace)
        self.on_cpu = np.zeros(K, bool)
        self.on_cpu[opt] = True
        off = trace.access_offsets
        acc_t, acc_m = trace.access_tensor, trace.access_mode
        size = trace.tensor_size_bytes
        # a parameter's optimizer kernels are linked through the tensors they share (the parameter,
        # its gradient and state, the step's temporaries); union-find over the kernels
        opt_list = opt.tolist()
        parent = {k: k for k in opt_list}

        def find(k):
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k

        owner: dict[int, int] = {}
        linking = (ROLE_PARAMETER, ROLE_GRADIENT, ROLE_OPTIMIZER_STATE)
        glob = trace.tensor_is_global
        for k in opt_list:
            for t in acc_t[off[k]:off[k + 1]].tolist():
                if role[t] not in linking and glob[t]:
                    continue        # a global scalar shared by every parameter's step links nothing
                if t in owner:
                    a, b = find(owner[t]), find(k)
                    if a != b:
                        parent[max(a, b)] = min(a, b)
                else:
                    owner[t] = k
        by_root: dict[int, list[int]] = {}
        for k in opt_list:
            by_root.setdefault(find(k), []).append(k)
        self.groups: list[list[int]] = sorted(by_root.values(), key=lambda ks: ks[0])
        self.flops = np.zeros(K)
        self.bytes = np.zeros(K)
        self.n_elements = 0
        for ks in self.groups:
            read, written = set(), set()
            for k in ks:
                sl = slice(off[k], off[k + 1])
                for t, m in zip(acc_t[sl].tolist(), acc_m[sl].tolist()):
                    if role[t] not in (ROLE_PARAMETER, ROLE_GRADIENT, ROLE_OPTIMIZER_STATE):
                        continue    # the trace's temporaries stay in the CPU's registers and caches
                    if m & ACCESS_READ and t not in written:
                        read.add(t)
                    if m & ACCESS_WRITE:
                        written.add(t)
            states = [t for t in read | written if role[t] == ROLE_OPTIMIZER_STATE]
            params = [t for t in read | written if role[t] == ROLE_PARAMETER]
            basis = states or params
            n = int(size[basis[0]]) // FP32_BYTES if basis else 0
            self.n_elements += n
            self.flops[ks[0]] = ADAM_FLOPS_PER_ELEMENT * n
            self.bytes[ks[0]] = float(sum(int(size[t]) for t in read) + sum(int(size[t]) for t in written))


def tensor_uses(trace: Trace, on_cpu: np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
    """Per tensor, the GPU kernels and the CPU kernels that touch it, in order."""
    T = trace.n_tensors
    k_of = trace.access_kernel
    gpu: list[list[int]] = [[] for _ in range(T)]
    cpu: list[list[int]] = [[] for _ in range(T)]
    flags = on_cpu[k_of].tolist()
    for k, t, c in zip(k_of.tolist(), trace.access_tensor.tolist(), flags):
        (cpu if c else gpu)[t].append(k)
    return gpu, cpu


def hint_table(rows) -> np.ndarray:
    """(kernel, tensor, action) rows as a HINT_DTYPE table, stably sorted by kernel."""
    h = np.zeros(len(rows), HINT_DTYPE)
    if rows:
        h["kernel"], h["tensor"], h["action"] = zip(*rows)
    return h[np.argsort(h["kernel"], kind="stable")]


def refuse_artifact(policy: str, config) -> None:
    """The CPU tier is not in the published simulator: refuse g10-artifact's quirks (one line)."""
    if config.scheduler.artifact_quirks:
        raise TensorSimError(f"{policy} runs the optimizer on the CPU, which the published tensor-level simulator "
                             "(scheduler.artifact_quirks = true, preset g10-artifact) does not model: run it "
                             "under --preset default")


def run_plan(policy, trace: Trace, hints, on_cpu, work: tensorsim.CPUWork, initial_tier, info: dict) -> dict:
    res = tensorsim.simulate(trace, policy.config, hints, mode="gds", initial_tier=initial_tier,
                             cpu_kernels=on_cpu, cpu_work=work)
    reason = res.get("failure_reason") or ""
    if res["failed"] and reason.startswith("cannot fit: kernel"):
        res["failure_reason"] = (reason + f"; {policy.name} keeps the activations on the GPU (ZeRO's own runs "
                                 "checkpoint them, which this trace does not record)")
    return tensorsim.with_policy(res, policy.name, info)


def layer_steps(trace: Trace, on_cpu: np.ndarray) -> np.ndarray:
    """Per kernel, the index of its layer step (-1: a GPU kernel that reads no parameter, or a CPU
    kernel): a new step begins where a GPU kernel reads the parameters of another layer."""
    K = trace.n_kernels
    role, layer = trace.tensor_role, trace.tensor_layer
    off, acc = trace.access_offsets, trace.access_tensor
    step = np.full(K, -1, np.int64)
    cur, n = None, -1
    for k in range(K):
        if on_cpu[k]:
            continue
        ts = acc[off[k]:off[k + 1]]
        ps = ts[role[ts] == ROLE_PARAMETER]
        if ps.size == 0:
            continue
        lay = int(layer[ps[0]])
        if lay != cur or lay < 0:
            n += 1
            cur = lay
        step[k] = n
    return step


def param_segments(trace: Trace, on_cpu: np.ndarray) -> dict[int, list[tuple[int, int, int]]]:
    """Per parameter the GPU uses it is fetched for: ``[(prefetch kernel, first use, last use)]``.

    Uses in the same or consecutive layer steps form one segment (the parameter stays on the
    GPU between them); a segment's prefetch is at the first kernel of the layer step before its
    first use (kernel 0 for the first step).  A segment whose prefetch would come before the
    previous segment's last use + 1 joins it.
    """
    step = layer_steps(trace, on_cpu)
    K = trace.n_kernels
    first_of = {}
    for k in range(K):
        s = int(step[k])
        if s >= 0 and s not in first_of:
            first_of[s] = k
    gpu_uses, _ = tensor_uses(trace, on_cpu)
    role = trace.tensor_role
    out: dict[int, list[tuple[int, int, int]]] = {}
    for t in np.flatnonzero(role == ROLE_PARAMETER).tolist():
        uses = gpu_uses[t]
        if not uses:
            continue
        segs: list[list[int]] = []
        prev_step = None
        for k in uses:
            s = int(step[k]) if step[k] >= 0 else prev_step
            if segs and (s is None or prev_step is None or s - prev_step <= 1):
                segs[-1][2] = k
            else:
                pre = first_of.get(s - 1, 0) if s is not None and s > 0 else 0
                if segs and pre <= segs[-1][2] + 1:
                    segs[-1][2] = k
                else:
                    segs.append([pre, k, k])
            if s is not None:
                prev_step = s
        out[t] = [tuple(x) for x in segs]
    return out


def fetch_counts(trace: Trace, on_cpu: np.ndarray) -> dict[int, int]:
    """Per parameter, how many times an iteration copies it to the GPU (its segments)."""
    return {t: len(s) for t, s in param_segments(trace, on_cpu).items()}


def closed_form(trace: Trace, config, policy: str = "zero-offload", device: str | None = None) -> dict:
    """Bytes per iteration on each path and CPU Adam's time, from the parameter count and precision.

    With N parameters, parameters and gradients of p bytes each (2 in bf16/fp16 mixed precision,
    4 in fp32), fp32 optimizer state of s bytes per parameter (12 with separate master weights;
    8 in fp32, where the parameter is its own master weight) and r the times an iteration copies
    a parameter to the GPU (:func:`fetch_counts`: 1, or 2 when another layer comes between its
    forward and backward uses):

    * ``zero-offload``: GPU->host N p (gradients), host->GPU N p (updated parameters), no SSD
      traffic;
    * ``zero-infinity`` on NVMe: GPU->host N p; host->GPU r N p; SSD->host r N p + N s (the
      parameters on their way to the GPU, the state for the step; in fp32 + N p more, the
      parameter the step reads); host->SSD N s + N p (the state and the parameter written back);
    * ``zero-infinity`` in host memory: the GPU paths as on NVMe, no SSD traffic.

    CPU Adam takes max(15 N / F, 28 N / M) summed over the parameters (F = ``cpu.cores`` x
    ``cpu.fp32_GFLOPs_per_core``, M = ``cpu.memory_bandwidth_GBps``; 28 bytes per parameter in
    both precisions: mixed, the gradient (2) and parameter (2) plus the state read and written
    (2 x 12); fp32, the gradient (4) plus the state and parameter read and written (2 x 12)),
    without DMA beside it: the simulation shares host memory bandwidth with the DMA running then.

    Parameters
    ----------
    trace : Trace
        A trace with tensor roles (parameters, gradients, optimizer state).
    config : SimConfig
        Its ``[cpu]``, ``gpu.page_size_bytes`` and ``scheduler.zero_infinity_device``.
    policy : str
        ``zero-offload`` or ``zero-infinity``.
    device : str, optional
        ``nvme`` or ``cpu`` for ``zero-infinity`` (default: the configuration's).

    Returns
    -------
    dict
        ``traffic_bytes`` per path (the simulator's keys, whole pages as tensors move),
        ``cpu_adam_s``, ``n_parameters``, ``parameter_bytes``, ``gradient_bytes``,
        ``optimizer_state_bytes`` and, for ``zero-infinity``, ``mean_fetches`` (r).
    """
    if policy not in ("zero-offload", "zero-infinity"):
        raise ValueError(f"policy {policy!r}: zero-offload or zero-infinity")
    require_roles(trace, policy)
    role = trace.tensor_role
    size = trace.tensor_size_bytes.astype(np.int64)
    opt = OptimizerPlan(trace)
    gpu_uses, cpu_uses = tensor_uses(trace, opt.on_cpu)
    page = config.gpu.page_size_bytes
    paged = (size + page - 1) // page * page        # the simulator moves whole pages
    grads = [t for t in range(trace.n_tensors) if role[t] == ROLE_GRADIENT and gpu_uses[t] and cpu_uses[t]]
    params = [t for t in range(trace.n_tensors) if role[t] == ROLE_PARAMETER and cpu_uses[t]]
    states = [t for t in range(trace.n_tensors) if role[t] == ROLE_OPTIMIZER_STATE and trace.tensor_is_global[t]]
    G, P, S = (int(paged[grads].sum()), int(paged[params].sum()), int(paged[states].sum()))
    cpu = config.cpu
    F = cpu.cores * cpu.fp32_GFLOPs_per_core * 1e9
    M = cpu.memory_bandwidth_GBps * 1e9
    adam_s = float(sum(max(opt.flops[g[0]] / F, opt.bytes[g[0]] / M) for g in opt.groups))
    out = {"n_parameters": int(opt.n_elements), "parameter_bytes": P, "gradient_bytes": G,
           "optimizer_state_bytes": S, "cpu_adam_s": adam_s}
    if policy == "zero-offload":
        out["traffic_bytes"] = {"gpu_to_host": G, "host_to_gpu": P, "host_to_ssd": 0, "ssd_to_host": 0,
                                "gpu_to_ssd": 0, "ssd_to_gpu": 0}
        return out
    fetches = fetch_counts(trace, opt.on_cpu)
    up = int(sum(int(paged[t]) * fetches[t] for t in params))
    nvme = (device or config.scheduler.zero_infinity_device) == "nvme"
    # the optimizer reads the parameters it reads (fp32: its own master) and writes every one
    param_read = int(sum(int(paged[t]) for t in params if _cpu_reads(trace, t, opt.on_cpu)))
    out["mean_fetches"] = up / P if P else 0.0
    out["traffic_bytes"] = {"gpu_to_host": G, "host_to_gpu": up,
                            "ssd_to_host": (up + S + param_read) if nvme else 0,
                            "host_to_ssd": (S + P) if nvme else 0, "gpu_to_ssd": 0, "ssd_to_gpu": 0}
    return out


def _cpu_reads(trace: Trace, t: int, on_cpu: np.ndarray) -> bool:
    k_of = trace.access_kernel
    rows = np.flatnonzero((trace.access_tensor == t) & on_cpu[k_of])
    return bool(np.any(trace.access_mode[rows] & ACCESS_READ))
