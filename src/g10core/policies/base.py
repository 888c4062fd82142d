"""The policy base classes, the plans they return, and the registry policy modules add
themselves to.

Policy modules import from here, never from the package: the package loads them
(``policies.get`` / ``names``), so importing it back would be an import cycle.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, fields
from typing import Callable, ClassVar

import numpy as np

from ..codes import HINT_DTYPE
from ..config import SECTIONS
from ..errors import guarded, is_outside


# ---- the configuration keys a policy reads (``Policy.reads``; ``policies/modelled.py`` warns of the others) ----

def section_keys(section: str) -> frozenset[str]:
    return frozenset(f"{section}.{f.name}" for f in fields(SECTIONS[section]))


ALL_KEYS = frozenset().union(*(section_keys(s) for s in SECTIONS))
HOST_KEYS = frozenset({"host.memory_GiB", "host.bandwidth_GBps"})
G10_SCHEDULER_KEYS = frozenset({"scheduler.delta", "scheduler.target_fraction"})
WINDOW_KEY = "scheduler.prefetch_degree"          # DeepUM+'s look-ahead (and the deepum eviction rule's)
QUIRKS_KEY = "scheduler.artifact_quirks"          # the published artifact's hand-tuned factors
# the host's CPUs as a compute tier: read only by the policies that run kernels on the CPU
CPU_KEYS = section_keys("cpu")
# the page-level replay reads every key but the scheduler's (those are its planners') and the CPU's
PAGE_LEVEL_KEYS = ALL_KEYS - section_keys("scheduler") - CPU_KEYS
# the tensor-level simulator (tensorsim) moves whole tensors over FIFOs at ssd/host/link
# bandwidth, the SSD's reads and writes by its duplex rule: no transfer slots, fault-time model,
# PCIe device or FTL, one steady-state iteration
TENSOR_LEVEL_KEYS = frozenset({"gpu.model", "gpu.memory_GiB", "gpu.frequency_GHz", "gpu.page_size_bytes", *HOST_KEYS,
                               "ssd.bandwidth_GBps", "ssd.write_bandwidth_GBps", "ssd.duplex",
                               "link.bandwidth_GBps", "run.iteration_rule",
                               "run.breakdown_rule"}) | section_keys("noise")
# G10's plan times its migrations with these (allocation, SSD latency, fault time: lead and safe times)
G10_TIMING_KEYS = frozenset({"gpu.malloc_us_per_byte", "ssd.latency_us", "fault.system_latency_us"})
# ... and books its SSD moves by the SSD's duplex rule (one budget for reads and writes when shared)
G10_PLANNER_KEYS = G10_TIMING_KEYS | {"ssd.duplex"}


@dataclass(frozen=True)
class PagePlan:
    """A page-level plan: the compiled replay applies ``hints`` and evicts by ``eviction``.

    Attributes
    ----------
    hints : ndarray
        The ``HINT_DTYPE`` table applied each iteration (when ``apply_hints``).
    eviction : EvictionRule or str
        A rule of ``g10core.uvm.evictors`` (an ``EvictionRule``, or its name), for what hints leave.
    apply_hints : bool
        False: the hints are ignored (Base UVM, Belady).
    """

    hints: np.ndarray
    eviction: object = "arrival"
    apply_hints: bool = True


@dataclass(frozen=True)
class TensorPlan:
    """A tensor-level plan: the policy's own simulation.

    Attributes
    ----------
    simulate : callable
        ``simulate()`` runs it and returns its result dict (``results.from_tensor_level``).
    """

    simulate: Callable[[], dict]


@dataclass(frozen=True)
class IdealPlan:
    """No simulation: every kernel takes its ideal time (the ``ideal`` policy).

    See Also
    --------
    PagePlan, TensorPlan
    """


class Policy:
    """Base class of the migration policies; register a subclass with :func:`register`.

    A page-level policy sets the class attributes below and implements :meth:`hints`; the
    inherited :meth:`plan` wraps them in a :class:`PagePlan`.  A policy that simulates on
    its own derives from :class:`TensorPolicy`.

    Parameters
    ----------
    config : SimConfig, optional
        The configuration it plans for.

    Attributes
    ----------
    name : str
        The name ``--policy`` takes (class attribute).
    level : str
        ``page``, ``tensor`` or ``ideal``: what its plans are.
    eviction : str
        Page level: the eviction rule for what the hints leave (``g10core.uvm.evictors``).
    apply_hints : bool
        Page level, False: hints are ignored (Base UVM).
    description : str
        One line for listings.

    Examples
    --------
    A policy that prefetches every input of the next kernel::

        import numpy as np
        from g10core.policies import HINT_DTYPE, HINT_TO_GPU, Policy, register

        @register
        class NextKernel(Policy):
            name = "next-kernel"
            description = "prefetch the next kernel's inputs"

            def hints(self, trace):
                K = trace.n_kernels
                rows = [(k, t, HINT_TO_GPU) for k in range(K)
                        for t in trace.kernel_inputs((k + 1) % K)]
                return np.array(rows, dtype=HINT_DTYPE)
    """

    name: ClassVar[str] = ""
    level: ClassVar[str] = "page"          # "page" or "tensor" (what its plans are)
    eviction: ClassVar[str] = "arrival"    # page level: the eviction rule for what hints leave
    apply_hints: ClassVar[bool] = True     # page level, False: hints are ignored (Base UVM)
    description: ClassVar[str] = ""
    # the configuration keys its model reads ("section.key"): a run that sets another one
    # warns that the result ignores it (``g10core.policies.modelled``); page level: all but the scheduler's
    reads: ClassVar[frozenset[str]] = PAGE_LEVEL_KEYS
    # keys that have no meaning for it by definition (FlashNeuron has no host memory): no warning
    not_applicable: ClassVar[frozenset[str]] = frozenset()
    # keys its planner reads whatever the simulation model: still read where a detailed component
    # supersedes them (G10's lead and safe times under the far-fault handler; policies/modelled.py)
    plans_with: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # a plug-in's exception names the plug-in (PluginError, exit 2), not g10core as a bug
        if is_outside(cls):
            guard_methods(cls)

    def __init__(self, config=None):
        self.config = config

    def hints(self, trace) -> np.ndarray:
        """Page level: the hint table this policy applies (none by default).

        Parameters
        ----------
        trace : Trace
            The trace to plan for.

        Returns
        -------
        ndarray
            ``HINT_DTYPE`` rows sorted by kernel (see the hint-file format).
        """
        return np.zeros(0, HINT_DTYPE)

    def hand_tuned_factors(self, trace) -> list[dict]:
        """The published artifact's hand-tuned factors this run applies (``scheduler.artifact_quirks``),
        each ``{"name", "factor", "what"}``; a Result records them as ``quirks``.

        Parameters
        ----------
        trace : Trace
            The trace the run replays.

        Returns
        -------
        list of dict
            Empty for a policy without hand-tuned factors.
        """
        return []

    def plan(self, trace, config=None, *, hints=None, eviction=None):
        """The plan the Simulator runs for ``trace``.

        Parameters
        ----------
        trace : Trace
            The trace to plan for.
        config : SimConfig, optional
            Plan for this configuration instead of the one the policy was made with.
        hints : ndarray, optional
            A given hint table replacing the policy's own.
        eviction : str or UserScore, optional
            An eviction rule replacing the policy's (page level).

        Returns
        -------
        PagePlan, TensorPlan or IdealPlan

        Raises
        ------
        ValueError
            Hints given to a policy that applies none, or an eviction rule to a tensor-level one.
        """
        if config is not None and config is not self.config:
            return type(self)(config).plan(trace, hints=hints, eviction=eviction)
        if hints is not None and not self.apply_hints:
            raise ValueError(f"policy {self.name!r} applies no hints; replay a hint table with "
                             "--policy g10 (arrival-order fallback) or deepum (window-aware eviction)")
        if hints is None:
            hints = self.hints(trace) if self.apply_hints else empty_hints()
        return PagePlan(hints=hints, eviction=self.eviction if eviction is None else eviction,
                        apply_hints=self.apply_hints)


class TensorPolicy(Policy):
    """A policy with its own tensor-level simulation (FlashNeuron, G10-GDS, G10-Host).

    Its plans are :class:`TensorPlan`: the Simulator calls :meth:`simulate`, which moves whole
    tensors over FIFOs at bandwidth; the detailed preset's components do not apply to it.

    Attributes
    ----------
    level : str
        ``"tensor"``.
    """

    level: ClassVar[str] = "tensor"
    apply_hints: ClassVar[bool] = True
    reads: ClassVar[frozenset[str]] = TENSOR_LEVEL_KEYS

    def schedule(self, trace) -> np.ndarray:
        """Its schedule as a hint table (``g10sim hints``).

        Returns
        -------
        ndarray
            ``HINT_DTYPE`` rows.

        Raises
        ------
        ValueError
            The policy has no schedule to show.
        """
        raise NotImplementedError

    def simulate(self, trace, hints=None) -> dict:
        """Run its tensor-level simulation of ``trace`` (with ``hints`` replacing its schedule).

        Returns
        -------
        dict
            The result dict that ``results.from_tensor_level`` turns into a Result.
        """
        raise NotImplementedError

    def plan(self, trace, config=None, *, hints=None, eviction=None):
        if config is not None and config is not self.config:
            return type(self)(config).plan(trace, hints=hints, eviction=eviction)
        if eviction is not None:
            raise ValueError(f"policy {self.name!r} moves whole tensors and has no eviction rule; "
                             "--eviction applies to page-level policies")
        return TensorPlan(simulate=lambda: self.simulate(trace, hints))


REGISTRY: dict[str, type[Policy]] = {}

# the methods g10core calls on a policy: a plug-in's own versions are guarded (guard_methods)
CALLED_METHODS = ("__init__", "hints", "plan", "schedule", "simulate", "hand_tuned_factors")


def guard_methods(cls) -> None:
    """Wrap the methods g10core calls (:data:`CALLED_METHODS`) that ``cls`` itself defines in
    :func:`g10core.errors.guarded`, when ``cls`` comes from outside g10core (a plug-in, a user's
    file, a notebook; ``Policy.__init_subclass__``): its exception is then a ``PluginError``
    naming it, not an error of g10core."""
    if not is_outside(cls):
        return
    for method in CALLED_METHODS:
        function = cls.__dict__.get(method)
        if inspect.isfunction(function):
            setattr(cls, method, guarded(function, cls, method))


def check(cls) -> None:
    """Refuse a class that cannot be registered (ValueError): not a :class:`Policy` subclass, no
    ``name``, a ``level`` other than page, tensor or ideal, or (page level) an ``eviction`` rule
    that :mod:`g10core.uvm.evictors` does not know.  Built-in and plug-in policies get these checks."""
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise ValueError(f"{getattr(cls, '__name__', type(cls).__name__)} is not a Policy subclass "
                         "(g10core.policies.Policy)")
    if not cls.name or not isinstance(cls.name, str):
        raise ValueError(f"policy name {cls.name!r} missing")
    if cls.level not in ("page", "tensor", "ideal"):
        raise ValueError(f"policy {cls.name}: level must be 'page', 'tensor' or 'ideal'")
    unknown = sorted((set(cls.reads) | set(cls.not_applicable)) - ALL_KEYS)
    if unknown:
        raise ValueError(f"policy {cls.name}: reads or not_applicable name unknown configuration keys: "
                         f"{', '.join(unknown)}")
    if cls.level == "page":
        from ..uvm import evictors

        evictors.resolve(cls.eviction)      # a registered rule, or registration fails


def register(cls: type[Policy]) -> type[Policy]:
    """Add a policy class to the registry under its ``name`` (:func:`check` first).

    Usable as a class decorator.

    Parameters
    ----------
    cls : type of Policy
        The class; its ``name``, ``level``, ``reads`` and ``eviction`` are checked.

    Returns
    -------
    type of Policy
        ``cls`` itself.

    Raises
    ------
    ValueError
        The name is missing or another class holds it, or a declaration is invalid
        (an unknown level, eviction rule or configuration key).
    """
    held = REGISTRY.get(getattr(cls, "name", None))
    if held is not None and (held.__module__, held.__qualname__) != (cls.__module__, cls.__qualname__):
        # (the same class of a module run again, e.g. a user's changed file, replaces the old one)
        raise ValueError(f"policy name {cls.name!r} missing or registered twice")
    check(cls)
    REGISTRY[cls.name] = cls
    return cls


def empty_hints() -> np.ndarray:
    """An empty ``HINT_DTYPE`` table."""
    return np.zeros(0, HINT_DTYPE)
