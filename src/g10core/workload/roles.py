"""Tensor roles: which tensors of an iteration are parameters, gradients, optimizer state, ...

A trace of format version 2 stores each tensor's role (``Trace.tensor_role``, a code of
:data:`g10core.codes.ROLE_NAMES`) and, for parameters, gradients and optimizer state, the
index of the layer the parameter belongs to (``Trace.tensor_layer``, -1 for none).  Captured
traces record them exactly; for a trace read from a version-1 file (the converted G10
artifact traces, synthetic traces, old captures) :func:`infer_roles` derives them from the
access graph where it can and leaves the rest ``unknown``.  A version-2 file stored no
temporaries (format 3 added the role): its tensors stored ``unknown`` that the rules below call
temporaries read as temporaries (:func:`refine_temporaries`).

The rules (``b`` = :func:`forward_backward_boundary`, the first backward kernel; the
optimizer kernels are the phase a capture recorded, else the kernels from ``b`` on that
write a global tensor):

* a global tensor written only by optimizer kernels is a **parameter** when a forward or
  backward kernel reads it, else **optimizer state** (Adam's m and v, fp32 master weights);
  a global written by another kernel (a batch-norm running mean) or never written stays
  unknown;
* a non-global tensor written by a backward kernel and read by an optimizer kernel is a
  **gradient**;
* a non-global tensor first written by a forward kernel and read by a backward kernel is an
  **activation** (what the backward pass needs from the forward one; a forward temporary
  that dies before the loss is not one);
* a non-global tensor only its own kernel writes, of that kernel's profiled workspace size
  (page-rounded), is a **workspace**;
* a non-global tensor a forward kernel reads before any kernel writes it, or that a forward
  kernel reading no tensor writes (a data-loading kernel), is an **input** (the batch: token
  ids, images, labels);
* a non-global tensor none of the rules above names is a **temporary** when it is written, and
  read if at all, within one phase (every access by forward kernels, before ``b``; or every one
  by backward kernels, from ``b`` on and not the optimizer's; or every one by optimizer kernels)
  and no kernel reads it before one writes it: a forward temporary that dies before the loss (a
  tensor backward needs is an activation), a backward temporary (the gradient of an
  activation; one the optimizer reads is a gradient), an optimizer temporary (a widened
  gradient, Adam's denominator), or an output no kernel reads.  Without ``b`` (no loss kernel,
  no recorded phases) there are no phases and no temporaries.

What stays ``unknown`` is what these rules cannot tell: a global written outside the optimizer
(a batch-norm running mean) or never written (a buffer, a constant), a tensor that lives across
phases without being an activation or a gradient (read before the loss and written again after
it), and everything in a trace without a forward/backward boundary.

Tensors named by :mod:`g10core.capture` (``param:``, ``grad:``, ``optim:``, ``input:``,
``target:``, ``workspace:``, ``buffer:``; the imported profiles' ``optimizer_state:``) take
the role their name records, the unnamed ones (``fwd:``/``bwd:``/``opt:`` + the kernel that
made them) what the graph tells of them with the recorded phases (activation, workspace,
temporary), and parameters the layer their module path gives (the first
numbered component: ``model.layers.3`` is one layer), numbered in forward order.  Without
names, a layer is the set of parameters a forward kernel reads first, numbered in forward
order; a gradient and an optimizer state take the layer of the parameter the optimizer
updates with them (tensors linked through one optimizer kernel), -1 when that is not one
layer.

Policies read roles only through ``trace.tensor_role`` / ``trace.tensor_layer`` and the
functions here.
"""
from __future__ import annotations

import re

import numpy as np

from ..codes import (ROLE_ACTIVATION, ROLE_GRADIENT, ROLE_INPUT, ROLE_NAMES, ROLE_OPTIMIZER_STATE,
                     ROLE_PARAMETER, ROLE_TEMPORARY, ROLE_UNKNOWN, ROLE_WORKSPACE)

PAGE_SIZE_BYTES = 4096
ACCESS_READ = 1
ACCESS_WRITE = 2
LOSS_KERNEL_NAME = "makeLoss"   # the G10 artifact's loss kernel (as policies.flashneuron.loss_kernel)

# Name prefixes g10core.capture (and capture.profile) give tensors -> role.
NAME_PREFIX_ROLES = {
    "param": ROLE_PARAMETER,
    "grad": ROLE_GRADIENT,
    "optim": ROLE_OPTIMIZER_STATE,
    "optimizer_state": ROLE_OPTIMIZER_STATE,
    "input": ROLE_INPUT,
    "target": ROLE_INPUT,
    "workspace": ROLE_WORKSPACE,
    "buffer": ROLE_UNKNOWN,
}
_PREFIX = re.compile(r"^([a-z_]+):")


def role_code(name: str) -> int:
    """The code of a role name (``"parameter"`` -> ``codes.ROLE_PARAMETER``); ValueError if unknown."""
    for code, n in ROLE_NAMES.items():
        if n == name:
            return code
    raise ValueError(f"role {name!r}: one of {', '.join(ROLE_NAMES.values())}")


def _phase_attrs(trace) -> tuple[int, int] | None:
    """(first backward kernel, first optimizer kernel) a capture recorded, or None."""
    a = trace.attrs
    try:
        fwd, bwd = int(a["capture_forward_kernels"]), int(a["capture_backward_kernels"])
    except (KeyError, TypeError, ValueError):
        return None
    if 0 <= fwd <= fwd + bwd <= trace.n_kernels:
        return fwd, fwd + bwd
    return None


def _loss_kernel(trace) -> int:
    """policies.flashneuron.loss_kernel's rule: the first ``makeLoss``, else the first kernel
    whose name contains "loss" (any case); -1 if none."""
    names = trace.kernel_name
    exact = np.flatnonzero(names == LOSS_KERNEL_NAME)
    if exact.size:
        return int(exact[0])
    for k, name in enumerate(names.tolist()):
        if "loss" in str(name).lower():
            return k
    return -1


def forward_backward_boundary(trace) -> int:
    """Index of the first backward kernel, or -1 when the trace does not tell.

    A captured trace records its phases (``capture_forward_kernels``); otherwise the loss
    kernel by :func:`g10core.policies.flashneuron.loss_kernel`'s rule (the G10 artifact's
    ``makeLoss`` writes the loss gradient, so it counts as the first backward kernel).

    Parameters
    ----------
    trace : Trace

    Returns
    -------
    int
        The kernel index, or -1.
    """
    phases = _phase_attrs(trace)
    if phases is not None:
        return phases[0]
    return _loss_kernel(trace)


def _graph_optimizer_kernels(trace, boundary: int) -> np.ndarray:
    """bool per kernel: the optimizer step as the graph shows it (see the module docstring)."""
    K = trace.n_kernels
    phases = _phase_attrs(trace)
    opt = np.zeros(K, bool)
    if phases is not None:
        opt[phases[1]:] = True
        return opt
    if boundary < 0:
        return opt
    k = trace.access_kernel
    w = ((trace.access_mode & ACCESS_WRITE) != 0) & trace.tensor_is_global[trace.access_tensor] & (k >= boundary)
    opt[k[w]] = True
    return opt


def optimizer_kernels(trace) -> np.ndarray:
    """Indices (int64, ascending) of the optimizer step's kernels.

    A captured trace: its recorded optimizer phase.  Otherwise the kernels that write a
    parameter or optimizer state (by ``trace.tensor_role``; plain SGD has no state, its step
    writes the parameters).

    Parameters
    ----------
    trace : Trace

    Returns
    -------
    numpy.ndarray
        int64 kernel indices, ascending (empty when no kernel updates a parameter or state).
    """
    phases = _phase_attrs(trace)
    if phases is not None:
        return np.arange(phases[1], trace.n_kernels, dtype=np.int64)
    role = trace.tensor_role
    updated = (role == ROLE_PARAMETER) | (role == ROLE_OPTIMIZER_STATE)
    w = ((trace.access_mode & ACCESS_WRITE) != 0) & updated[trace.access_tensor]
    return np.unique(trace.access_kernel[w]).astype(np.int64)


def bytes_by_role(trace) -> dict[str, int]:
    """Bytes (``tensor_size_bytes``, not page-rounded) per role name, every role listed (0 if none).

    Parameters
    ----------
    trace : Trace

    Returns
    -------
    dict of str to int
        Role name (``g10core.codes.ROLE_NAMES``) -> bytes.
    """
    sums = np.bincount(trace.tensor_role.astype(np.int64), weights=trace.tensor_size_bytes.astype(np.float64),
                       minlength=len(ROLE_NAMES))
    # float sums of int64 sizes are exact below 2**53; add exactly instead where they are not
    out = {}
    for code, name in ROLE_NAMES.items():
        sel = trace.tensor_role == code
        out[name] = int(trace.tensor_size_bytes[sel].sum()) if sums[code] >= 2 ** 53 else int(sums[code])
    return out


def first_kernel(k: np.ndarray, t: np.ndarray, T: int, none: int) -> np.ndarray:
    """Per tensor (``T`` of them), the smallest kernel of the accesses ``(k, t)``; ``none`` for a
    tensor not among them.

    Parameters
    ----------
    k, t : numpy.ndarray
        Kernel and tensor of each access (same length).
    T : int
        Number of tensors.
    none : int
        The value of a tensor with no access.

    Returns
    -------
    numpy.ndarray
        int64, one per tensor.
    """
    out = np.full(T, none, np.int64)
    np.minimum.at(out, t, k)
    return out


def _any(t: np.ndarray, T: int) -> np.ndarray:
    return np.bincount(t, minlength=T) > 0


def _graph_roles(trace, loads: bool = True) -> tuple[np.ndarray, np.ndarray]:
    T, K = trace.n_tensors, trace.n_kernels
    b = forward_backward_boundary(trace)
    opt = _graph_optimizer_kernels(trace, b)
    k = trace.access_kernel.astype(np.int64)
    t = trace.access_tensor.astype(np.int64)
    m = trace.access_mode
    rd = (m & ACCESS_READ) != 0
    wr = (m & ACCESS_WRITE) != 0
    ko = opt[k]
    bwd = (k >= b) & ~ko if b >= 0 else np.zeros(k.shape, bool)
    glob = trace.tensor_is_global

    written_opt = _any(t[wr & ko], T)
    written_other = _any(t[wr & ~ko], T)
    read_other = _any(t[rd & ~ko], T)
    read_opt = _any(t[rd & ko], T)
    written_bwd = _any(t[wr & bwd], T)
    read_bwd = _any(t[rd & bwd], T)
    first_write = first_kernel(k[wr], t[wr], T, K)
    first_read = first_kernel(k[rd], t[rd], T, K)
    n_access = np.bincount(t, minlength=T)

    role = np.full(T, ROLE_UNKNOWN, np.int8)
    fwd_end = b if b >= 0 else K
    role[~glob & (first_read < first_write) & (first_read < fwd_end)] = ROLE_INPUT
    if b >= 0:
        role[~glob & (first_write < b) & (first_write <= first_read) & read_bwd] = ROLE_ACTIVATION
        role[~glob & written_bwd & read_opt] = ROLE_GRADIENT
    # a tensor a forward kernel that reads nothing makes is loaded data (the artifact's LoadData kernels)
    # (not in a captured trace: its inputs are named, and a kernel such as arange makes data, not input)
    if loads:
        reads_none = np.bincount(k[rd], minlength=K) == 0
        first_writer = np.minimum(first_write, K - 1)
        role[~glob & (first_write < fwd_end) & reads_none[first_writer] & (first_write <= first_read)] = ROLE_INPUT
    # workspace: written only, by one kernel with a profiled workspace of its (page-rounded) size
    only = np.flatnonzero((n_access == 1) & ~glob & _any(t[wr & ~rd], T) & ~_any(t[rd], T))
    if only.size:
        kk = first_write[only]
        ws = trace.kernel_workspace_bytes[kk]
        pages = -(-trace.tensor_size_bytes[only] // PAGE_SIZE_BYTES)
        hit = (ws > 0) & (-(-ws // PAGE_SIZE_BYTES) == pages)
        role[only[hit]] = ROLE_WORKSPACE
    updated = glob & written_opt & ~written_other
    role[updated & read_other] = ROLE_PARAMETER
    role[updated & ~read_other] = ROLE_OPTIMIZER_STATE
    # temporary: what is left of the non-globals, when all its accesses lie in one phase
    if b >= 0:
        phase = np.where(opt, 2, np.where(np.arange(K) >= b, 1, 0)).astype(np.int8)[k]
        lo = np.full(T, 3, np.int8)
        hi = np.full(T, -1, np.int8)
        np.minimum.at(lo, t, phase)
        np.maximum.at(hi, t, phase)
        written = first_write < K
        role[(role == ROLE_UNKNOWN) & ~glob & written & (lo == hi) & (first_write <= first_read)] = ROLE_TEMPORARY

    # layers: parameters first read by one kernel form a layer, numbered in kernel order
    layer = np.full(T, -1, np.int32)
    params = np.flatnonzero(role == ROLE_PARAMETER)
    if params.size:
        first_access = np.minimum(first_read, first_write)[params]
        _, rank = np.unique(first_access, return_inverse=True)
        layer[params] = rank.astype(np.int32)
    _link_layers(trace, role, layer, opt)
    return role, layer


def _link_layers(trace, role, layer, opt) -> None:
    """Gradients and optimizer state take the layer of the parameters that share optimizer
    kernels with them (a union-find over the optimizer kernels' accesses); -1 when the
    parameters so linked are not of one layer."""
    T = trace.n_tensors
    k = trace.access_kernel
    sel = opt[k] & np.isin(role[trace.access_tensor], (ROLE_PARAMETER, ROLE_GRADIENT, ROLE_OPTIMIZER_STATE))
    if not sel.any():
        return
    parent = np.arange(T)

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    ks, ts = k[sel].tolist(), trace.access_tensor[sel].tolist()
    first_of_kernel = {}
    for kk, tt in zip(ks, ts):
        r = first_of_kernel.setdefault(kk, tt)
        a, c = find(r), find(tt)
        if a != c:
            parent[c] = a
    comp_layer = {}
    for tt in set(ts):
        if role[tt] == ROLE_PARAMETER:
            root = find(tt)
            comp_layer[root] = layer[tt] if comp_layer.get(root, layer[tt]) == layer[tt] else -1
    for tt in set(ts):
        if role[tt] in (ROLE_GRADIENT, ROLE_OPTIMIZER_STATE):
            layer[tt] = comp_layer.get(find(tt), -1)


def _param_group(name: str) -> str:
    """The layer key of a parameter's module path: up to its first numbered component, else its module."""
    parts = name.split(".")
    for i, p in enumerate(parts):
        if p.isdigit():
            return ".".join(parts[:i + 1])
    return ".".join(parts[:-1]) or name


def _named_roles(trace, prefixes: list) -> tuple[np.ndarray, np.ndarray] | None:
    """Roles and layers from the capture's tensor names, or None when the trace has none."""
    if "param" not in prefixes:
        return None
    graph_role, graph_layer = _graph_roles(trace, loads=False)
    T = trace.n_tensors
    role = np.full(T, ROLE_UNKNOWN, np.int8)
    # tensors the capture did not name: only what the graph alone tells (activations, workspaces,
    # temporaries: with the recorded phases, exact)
    keep = np.isin(graph_role, (ROLE_ACTIVATION, ROLE_WORKSPACE, ROLE_TEMPORARY))
    role[keep] = graph_role[keep]
    layer = np.full(T, -1, np.int32)
    names = trace.tensor_name.tolist()
    param_of = {}       # parameter name -> tensor id
    owner = {}          # gradient / state tensor -> parameter name
    for i, (p, name) in enumerate(zip(prefixes, names)):
        if p not in NAME_PREFIX_ROLES:
            continue
        role[i] = NAME_PREFIX_ROLES[p]
        rest = name[len(p) + 1:]
        if p == "param":
            param_of[rest] = i
        elif p == "grad":
            owner[i] = rest
        elif p == "optim":
            owner[i] = rest.split(":", 1)[1] if ":" in rest else rest
    if param_of and not all(re.fullmatch(r"s\d+", n) for n in param_of):
        first_access = np.full(T, trace.n_kernels, np.int64)
        np.minimum.at(first_access, trace.access_tensor.astype(np.int64), trace.access_kernel.astype(np.int64))
        groups = {}
        for n, i in param_of.items():
            g = _param_group(n)
            groups[g] = min(groups.get(g, trace.n_kernels), int(first_access[i]))
        order = {g: r for r, g in enumerate(sorted(groups, key=lambda g: (groups[g], g)))}
        for n, i in param_of.items():
            layer[i] = order[_param_group(n)]
        for i, n in owner.items():
            if n in param_of:
                layer[i] = layer[param_of[n]]
    else:   # names without module paths (imported profiles): the graph's layers
        sel = np.isin(role, (ROLE_PARAMETER, ROLE_GRADIENT, ROLE_OPTIMIZER_STATE))
        layer[sel] = np.where(graph_role[sel] == role[sel], graph_layer[sel], -1)
    return role, layer


def infer_roles(trace) -> tuple[np.ndarray, np.ndarray]:
    """Each tensor's role and layer, from the capture's names or the access graph.

    Parameters
    ----------
    trace : Trace
        A valid trace (its stored roles, if any, are not looked at).

    Returns
    -------
    (role, layer) : (ndarray of int8, ndarray of int32)
        T rows each: a :data:`g10core.codes.ROLE_NAMES` code (``ROLE_UNKNOWN`` where neither
        the names nor the graph tell) and the layer index of a parameter, its gradient and its
        optimizer state (-1 for other tensors and where unknown).  Cost O(A log A).

    Examples
    --------
    >>> from g10core.workload.roles import infer_roles, bytes_by_role
    >>> role, layer = infer_roles(trace)                                 # doctest: +SKIP
    """
    prefixes = [(mm.group(1) if (mm := _PREFIX.match(n)) else "") for n in trace.tensor_name.tolist()]
    named = _named_roles(trace, prefixes)
    if named is not None:
        return named
    return _graph_roles(trace)


def refine_temporaries(trace, role: np.ndarray) -> np.ndarray:
    """``role`` with each ``unknown`` tensor that :func:`infer_roles` calls a temporary made one.

    For roles read from a version-2 file, which had no temporary role: every other stored role
    is kept as it is.

    Parameters
    ----------
    trace : Trace
        The trace the roles are of (its own ``tensor_role`` is not looked at).
    role : ndarray of int8
        T role codes.

    Returns
    -------
    ndarray of int8
        A new array (``role`` is not changed).
    """
    role = np.array(role, np.int8, copy=True)
    inferred, _ = infer_roles(trace)
    role[(role == ROLE_UNKNOWN) & (inferred == ROLE_TEMPORARY)] = ROLE_TEMPORARY
    return role
