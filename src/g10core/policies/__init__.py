"""Migration policies, registered by name.

A policy is one module here plus one ``@register`` line (the base classes, the plans
and the registry are in ``base.py``, so the modules this package loads never import it
back).  ``Policy.plan(trace, config)`` turns a trace into a plan, and the Simulator runs
the plan by its type (never by the policy's name):

* :class:`PagePlan`: the compiled page-level replay applies a hint table (numpy array of
  ``HINT_DTYPE``) each iteration and evicts with a registered eviction rule
  (``g10core.evictors``) or a user's compiled score function;
* :class:`TensorPlan`: a tensor-granularity simulation the policy brings along;
* :class:`IdealPlan`: no simulation, the sum of the ideal kernel times.

Policies never run per-page code: the core does that, fed by the hint arrays.
"""
from __future__ import annotations

from ..codes import (  # noqa: F401 (the hint codes, importable from here)
    ACTION_NAMES, HINT_DTYPE, HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD)
from .base import (  # noqa: F401 (the registry's API)
    REGISTRY, IdealPlan, PagePlan, Policy, TensorPlan, TensorPolicy, empty_hints, register)


def get(name: str) -> type[Policy]:
    """The policy class registered as ``name``.

    Parameters
    ----------
    name : str
        A policy name (:func:`names`).

    Returns
    -------
    type
        The :class:`Policy` subclass.

    Raises
    ------
    KeyError
        No such policy (the message lists the known ones).
    """
    _load_builtin()
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(sorted(REGISTRY))}") from None


def names() -> list[str]:
    """The registered policy names, sorted (the built-in ones loaded first).

    Returns
    -------
    list of str
        E.g. ``base-uvm``, ``belady``, ``deepum``, ``flashneuron``, ``g10``, ``g10-gds``,
        ``g10-host``, ``ideal``.
    """
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
