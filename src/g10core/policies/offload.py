"""What the offloading policies after G10 share: tensor roles, the forward/backward split,
saved activations, and the ideal timeline they plan against.

``vdnn``, ``capuchin``, ``ssdtrain`` and ``teraio`` (one module each) plan a hint table from
the trace and run it in the tensor-level simulator (:mod:`g10core.policies.tensorsim`, mode
``"gds"``).  They read tensor roles only through ``trace.tensor_role`` / ``trace.tensor_layer``
and :mod:`g10core.workload.roles`; a trace that lacks the roles a policy needs is refused with
one line naming what is missing (an ``InputError``: ``g10sim`` exits 2).

A *saved activation* is what autograd keeps for the backward pass: a tensor of role
``activation`` that a forward kernel (before the forward/backward boundary) writes and a
backward kernel (at or after it) reads.  Its *last forward use* is the last forward kernel that
touches it, its *back access* the first backward kernel that reads it; between the two it is
idle, and that gap is what every one of these systems exploits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codes import ROLE_ACTIVATION, ROLE_NAMES, ROLE_PARAMETER
from ..errors import InputError
from ..workload import roles as _roles
from ..workload.trace import ACCESS_READ, ACCESS_WRITE, Trace
from ..workload.vitality import kernel_cycles
from . import tensorsim
from .base import TensorPolicy


def trace_label(trace: Trace) -> str:
    return f"{trace.model}-b{trace.batch_size}"


def refuse(policy: str, trace: Trace, missing: str) -> InputError:
    """The one-line refusal of a trace that lacks what ``policy`` needs (``missing``, in words)."""
    return InputError(f"policy {policy!r} cannot run on trace {trace_label(trace)}: it needs {missing}")


def require_roles(policy: str, trace: Trace, needed=(ROLE_ACTIVATION,)) -> np.ndarray:
    """``trace.tensor_role``, or the refusal when no tensor has one of the ``needed`` roles."""
    role = np.asarray(trace.tensor_role)
    absent = [ROLE_NAMES[r] for r in needed if not np.any(role == r)]
    if absent:
        raise refuse(policy, trace, f"tensors of role {' and '.join(absent)} (the trace marks none: "
                                    "roles unknown; capture it again or convert it with roles)")
    return role


def require_boundary(policy: str, trace: Trace) -> int:
    """The first backward kernel, or the refusal when the trace has no forward/backward boundary."""
    b = int(_roles.forward_backward_boundary(trace))
    if not 0 < b < trace.n_kernels:
        raise refuse(policy, trace, "a forward/backward boundary (a loss kernel: 'makeLoss' or a name "
                                    "containing 'loss'); the trace has none")
    return b


def require_layers(policy: str, trace: Trace) -> np.ndarray:
    """``trace.tensor_layer``, or the refusal when no parameter has a layer."""
    role = np.asarray(trace.tensor_role)
    layer = np.asarray(trace.tensor_layer)
    if not np.any((role == ROLE_PARAMETER) & (layer >= 0)):
        raise refuse(policy, trace, "the layer of its parameters (tensor_layer; the trace gives none)")
    return layer


@dataclass(frozen=True)
class SavedActivations:
    """The saved activations of a trace (one row each, by tensor id).

    Attributes
    ----------
    tensor : ndarray
        Tensor ids.
    last_forward : ndarray
        The last forward kernel that touches each.
    back_access : ndarray
        The first backward kernel that reads each.
    forward_read : ndarray
        Whether some forward kernel reads it (a layer's input, as vDNN means it).
    producer : ndarray
        The last forward kernel that writes it (-1: none does).
    boundary : int
        The first backward kernel.
    """

    tensor: np.ndarray
    last_forward: np.ndarray
    back_access: np.ndarray
    forward_read: np.ndarray
    producer: np.ndarray
    boundary: int


def saved_activations(trace: Trace, boundary: int) -> SavedActivations:
    """The activations a forward kernel writes and a backward kernel reads (see the module docstring)."""
    T = trace.n_tensors
    role = np.asarray(trace.tensor_role)
    kern = trace.access_kernel.astype(np.int64)
    tens = trace.access_tensor.astype(np.int64)
    mode = trace.access_mode
    fwd = kern < boundary
    read = (mode & ACCESS_READ) != 0
    write = (mode & ACCESS_WRITE) != 0
    last_fwd = np.full(T, -1, np.int64)
    np.maximum.at(last_fwd, tens[fwd], kern[fwd])
    producer = np.full(T, -1, np.int64)
    np.maximum.at(producer, tens[fwd & write], kern[fwd & write])
    fwd_read = np.zeros(T, bool)
    fwd_read[tens[fwd & read]] = True
    big = np.iinfo(np.int64).max
    back = np.full(T, big, np.int64)
    np.minimum.at(back, tens[~fwd & read], kern[~fwd & read])
    ok = (role == ROLE_ACTIVATION) & ~np.asarray(trace.tensor_is_global, bool) & (producer >= 0) & (back < big)
    t = np.flatnonzero(ok)
    return SavedActivations(tensor=t, last_forward=last_fwd[t], back_access=back[t], forward_read=fwd_read[t],
                            producer=producer[t], boundary=int(boundary))


class Timeline:
    """The ideal timeline a plan is made against: kernel k starts at ``start_s[k]`` when every
    kernel takes its ideal time (t11), and the bandwidths the tensor-level simulator moves at."""

    def __init__(self, trace: Trace, config):
        spec = tensorsim.TensorSimSpec.from_config(config, "gds")
        self.spec = spec
        hz = spec.frequency_GHz * 1e9
        self.cycles = kernel_cycles(trace, spec.frequency_GHz)
        self.kernel_s = self.cycles / hz
        self.start_s = np.concatenate(([0.0], np.cumsum(self.kernel_s)))    # K + 1 entries
        page = spec.page_size_bytes
        self.size = ((trace.tensor_size_bytes + page - 1) // page * page).astype(np.int64)
        self.ssd_Bps = spec.ssd_bandwidth_Bps
        self.host_Bps = spec.host_bandwidth_Bps
        self.capacity_bytes = int(spec.capacity_pages) * page

    def lead_kernel(self, kernel: int, seconds: float, lowest: int = 0) -> int:
        """The latest kernel j <= ``kernel`` (and >= ``lowest``) that starts at least ``seconds`` before
        ``kernel`` does: where a transfer of that length must be issued to be done in time."""
        target = self.start_s[kernel] - seconds
        j = int(np.searchsorted(self.start_s, target, side="right")) - 1
        return max(min(j, kernel), lowest)


def live_bytes(trace: Trace, timeline: Timeline) -> np.ndarray:
    """Bytes resident during each kernel when nothing moves: globals always, every other tensor from
    its birth to its death (``tensorsim.liveness``; a write-only tensor during its birth kernel)."""
    K = trace.n_kernels
    birth, death = tensorsim.liveness(trace, timeline.spec.frequency_GHz)
    size = timeline.size
    glob = np.asarray(trace.tensor_is_global, bool)
    diff = np.zeros(K + 1, np.int64)
    loc = ~glob & (birth >= 0)
    end = np.where(death[loc] == -1, birth[loc] + 1, death[loc])
    np.add.at(diff, birth[loc], size[loc])
    np.add.at(diff, end, -size[loc])
    return np.cumsum(diff)[:K] + int(size[glob].sum())


def fill(avail: np.ndarray, need: float) -> tuple[int, np.ndarray] | None:
    """Take ``need`` from ``avail`` entry by entry, in order (transfer time from the kernels' free time).

    Returns ``(index of the entry where it completes, amount taken from each entry)``, or None
    when ``avail`` does not hold ``need``.
    """
    cs = np.cumsum(avail)
    pos = int(np.searchsorted(cs, need - 1e-12))
    if pos >= avail.size:
        return None
    take = np.clip(need - (cs - avail), 0.0, avail)
    take[pos + 1:] = 0.0
    return pos, take


def hint_table(rows: list[tuple[int, int, int]]) -> np.ndarray:
    """``(kernel, tensor, action)`` rows as a ``HINT_DTYPE`` table sorted stably by kernel."""
    from ..codes import HINT_DTYPE

    h = np.zeros(len(rows), HINT_DTYPE)
    if rows:
        arr = np.asarray(rows, np.int64)
        h["kernel"], h["tensor"], h["action"] = arr[:, 0], arr[:, 1], arr[:, 2]
        h = h[np.argsort(h["kernel"], kind="stable")]
    return h


class PlannedOffloadPolicy(TensorPolicy):
    """A policy whose plan is a hint table (and, optionally, where tensors start), simulated in the
    tensor-level simulator's ``gds`` mode.  Subclasses implement :meth:`make_plan`.

    ``host_overflow`` is what an eviction to host memory does when ``host.memory_GiB`` is full
    (:func:`g10core.policies.tensorsim.simulate`): ``"fail"`` for a system that offloads to pinned
    host memory and has no tier below it (vDNN, Capuchin), ``"ssd"`` for one that spills to its SSD."""

    host_overflow = "fail"

    def make_plan(self, trace: Trace) -> dict:
        """``{"hints": HINT_DTYPE table, "initial_tier": int8 array or None, "info": dict}``;
        raises the refusal (``InputError``) for a trace without what the policy needs."""
        raise NotImplementedError

    def schedule(self, trace: Trace) -> np.ndarray:
        return self.make_plan(trace)["hints"]

    def simulate(self, trace: Trace, hints=None) -> dict:
        plan = self.make_plan(trace)        # (refuses a trace without the roles it needs)
        if hints is None:
            hints = plan["hints"]
        reason = tensorsim.working_set_check(trace, self.config)
        if reason is not None:
            failed = tensorsim.failed_result(reason, mode="gds", trace=trace, config=self.config)
            return tensorsim.with_policy(failed, self.name, plan["info"])
        kw = {}
        if plan.get("initial_tier") is not None:
            kw["initial_tier"] = plan["initial_tier"]
        res = tensorsim.simulate(trace, self.config, hints, mode="gds", host_overflow=self.host_overflow,
                                 policy=self.name, **kw)
        info = dict(plan["info"])
        info["n_hints"] = int(np.asarray(hints).size)
        return tensorsim.with_policy(res, self.name, info)


__all__ = ["PlannedOffloadPolicy", "SavedActivations", "Timeline", "fill", "hint_table", "live_bytes", "refuse",
           "require_boundary", "require_layers", "require_roles", "saved_activations", "trace_label"]
