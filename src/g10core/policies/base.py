"""The policy base classes, the plans they return, and the registry policy modules add
themselves to.

Policy modules import from here, never from the package: the package loads them
(``policies.get`` / ``names``), so importing it back would be an import cycle.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from ..codes import HINT_DTYPE


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

    def hand_tuned_factors(self, trace) -> list[dict]:
        """The published artifact's hand-tuned factors this run applies (``scheduler.artifact_quirks``),
        each ``{"name", "factor", "what"}``; a Result records them as ``quirks``."""
        return []

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


def check(cls) -> None:
    """Refuse a class that cannot be registered (ValueError): not a :class:`Policy` subclass, no
    ``name``, a ``level`` other than page, tensor or ideal, or (page level) an ``eviction`` rule
    that :mod:`g10core.evictors` does not know.  Built-in and plug-in policies get these checks."""
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise ValueError(f"{getattr(cls, '__name__', type(cls).__name__)} is not a Policy subclass "
                         "(g10core.policies.Policy)")
    if not cls.name or not isinstance(cls.name, str):
        raise ValueError(f"policy name {cls.name!r} missing")
    if cls.level not in ("page", "tensor", "ideal"):
        raise ValueError(f"policy {cls.name}: level must be 'page', 'tensor' or 'ideal'")
    if cls.level == "page":
        from .. import evictors

        evictors.resolve(cls.eviction)      # a registered rule, or registration fails


def register(cls: type[Policy]) -> type[Policy]:
    """Add a policy class to the registry under its ``name`` (:func:`check` first)."""
    held = REGISTRY.get(getattr(cls, "name", None))
    if held is not None and (held.__module__, held.__qualname__) != (cls.__module__, cls.__qualname__):
        # (the same class of a module run again, e.g. a user's changed file, replaces the old one)
        raise ValueError(f"policy name {cls.name!r} missing or registered twice")
    check(cls)
    REGISTRY[cls.name] = cls
    return cls



def empty_hints() -> np.ndarray:
    return np.zeros(0, HINT_DTYPE)
