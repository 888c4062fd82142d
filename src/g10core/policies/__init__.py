"""Migration policies, registered by name.

A policy is one module here plus one ``@register`` line.  ``Policy.plan(trace, config)``
turns a trace into a plan, and the Simulator runs the plan by its type (never by the
policy's name):

* :class:`PagePlan`: the compiled page-level replay applies a hint table (numpy array of
  ``HINT_DTYPE``) each iteration and evicts with a registered eviction rule
  (``g10core.evictors``) or a user's compiled score function;
* :class:`TensorPlan`: a tensor-granularity simulation the policy brings along;
* :class:`IdealPlan`: no simulation, the sum of the ideal kernel times.

Policies never run per-page code: the core does that, fed by the hint arrays.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

# One migration hint: applied when kernel `kernel` (index within the iteration) begins
# (codes and dtype defined once, in types.py, mirroring _types.pxd).
from ..types import ACTION_NAMES, HINT_DTYPE, HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD  # noqa: F401


@dataclass(frozen=True)
class PagePlan:
    """Replay pages: ``hints`` applied each iteration (when ``apply_hints``), ``eviction``
    (a rule name of ``g10core.evictors`` or a compiled ``UserScore``) for the rest."""

    hints: np.ndarray
    eviction: object = "arrival"
    apply_hints: bool = True


@dataclass(frozen=True)
class TensorPlan:
    """A tensor-level simulation: ``simulate()`` returns its result dict (``results.py``)."""

    simulate: Callable[[], dict]


@dataclass(frozen=True)
class IdealPlan:
    """No simulation: every kernel takes its ideal time."""


class Policy:
    """Base class; subclasses set ``name`` and ``level`` and implement ``plan`` (or ``hints``)."""

    name: ClassVar[str] = ""
    level: ClassVar[str] = "page"          # "page" or "tensor" (what its plans are)
    eviction: ClassVar[str] = "arrival"    # page level: the eviction rule for what hints leave
    apply_hints: ClassVar[bool] = True     # page level, False: hints are ignored (Base UVM)
    description: ClassVar[str] = ""

    def __init__(self, config=None):
        self.config = config

    def hints(self, trace) -> np.ndarray:
        """Page level: the hint table this policy applies (none by default)."""
        return np.zeros(0, HINT_DTYPE)

    def plan(self, trace, config=None, *, hints=None, eviction=None):
        """The plan for ``trace``; ``hints``: a given hint table replacing the policy's own;
        ``eviction``: an eviction rule replacing the policy's (page level)."""
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
    """A policy with its own tensor-level simulation."""

    level: ClassVar[str] = "tensor"
    apply_hints: ClassVar[bool] = True

    def schedule(self, trace) -> np.ndarray:
        """Its schedule as a hint table (``g10sim hints``); raises ValueError when it has none."""
        raise NotImplementedError

    def simulate(self, trace, hints=None) -> dict:
        raise NotImplementedError

    def plan(self, trace, config=None, *, hints=None, eviction=None):
        if config is not None and config is not self.config:
            return type(self)(config).plan(trace, hints=hints, eviction=eviction)
        if eviction is not None:
            raise ValueError(f"policy {self.name!r} moves whole tensors and has no eviction rule; "
                             "--eviction applies to page-level policies")
        return TensorPlan(simulate=lambda: self.simulate(trace, hints))


REGISTRY: dict[str, type[Policy]] = {}


def register(cls: type[Policy]) -> type[Policy]:
    if not cls.name or cls.name in REGISTRY:
        raise ValueError(f"policy name {cls.name!r} missing or registered twice")
    if cls.level not in ("page", "tensor", "ideal"):
        raise ValueError(f"policy {cls.name}: level must be 'page', 'tensor' or 'ideal'")
    if cls.level == "page":
        from .. import evictors

        evictors.resolve(cls.eviction)      # a registered rule, or registration fails
    REGISTRY[cls.name] = cls
    return cls


def get(name: str) -> type[Policy]:
    _load_builtin()
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(sorted(REGISTRY))}") from None


def names() -> list[str]:
    _load_builtin()
    return sorted(REGISTRY)


_BUILTIN = ("baseline", "g10", "flashneuron")


def _load_builtin():
    import importlib

    for mod in _BUILTIN:
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as exc:  # a module not written yet
            if exc.name != f"{__name__}.{mod}":
                raise


def empty_hints() -> np.ndarray:
    return np.zeros(0, HINT_DTYPE)
