"""Migration policies, registered by name.

A policy is one module here plus one ``@register`` line (the base classes, the plans
and the registry are in ``base.py``, so the modules this package loads never import it
back).  ``Policy.plan(trace, config)`` turns a trace into a plan, and the Simulator runs
the plan by its type (never by the policy's name):

* :class:`PagePlan`: the compiled page-level replay applies a hint table (numpy array of
  ``HINT_DTYPE``) each iteration and evicts with a registered eviction rule
  (``g10core.uvm.evictors``) or a user's compiled score function;
* :class:`TensorPlan`: a tensor-granularity simulation the policy brings along;
* :class:`IdealPlan`: no simulation, the sum of the ideal kernel times.

Policies never run per-page code: the core does that, fed by the hint arrays.

Policies from outside the package (``plugins.py``, guide in ``docs/plugins.md``): ``get``
takes ``FILE.py:NAME``, a class in a user's file, and the registry adds the policies of
installed packages' ``g10core.policies`` entry points the first time it is used.
"""
from __future__ import annotations

from ..codes import (  # noqa: F401 (the hint codes, importable from here)
    ACTION_NAMES, HINT_DTYPE, HINT_FREE, HINT_RECOMPUTE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD)
from ..errors import did_you_mean
from .base import (  # noqa: F401 (the registry's API)
    REGISTRY, IdealPlan, PagePlan, Policy, TensorPlan, TensorPolicy, check, empty_hints, register)
from .plugins import ENTRY_POINT_GROUP, is_file_spec  # noqa: F401 (API)


def get(name: str) -> type[Policy]:
    """The policy class registered as ``name``, or the class ``FILE.py:NAME`` names (a user's file).

    Parameters
    ----------
    name : str
        A policy name (:func:`names`), or ``FILE.py:NAME``: the :class:`Policy` subclass ``NAME``
        of a user's file.

    Returns
    -------
    type
        The :class:`Policy` subclass.

    Raises
    ------
    KeyError
        No such policy (the message lists the known ones, and the closest).
    PolicyError
        A file that cannot give a policy (the message names the file and NAME).
    """
    if is_file_spec(name):
        from .plugins import load_file

        _load()                         # (its name must not take a built-in's or a plug-in's)
        return load_file(name)
    _load()
    try:
        return REGISTRY[name]
    except KeyError:
        hint = did_you_mean(str(name), REGISTRY)
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(sorted(REGISTRY))}, or FILE.py:NAME "
                       f"(a Policy subclass in a file)" + (f"; {hint}" if hint else "")) from None


def names() -> list[str]:
    """The registered policy names, sorted (the built-in ones and the plug-ins loaded first).

    Returns
    -------
    list of str
        E.g. ``base-uvm``, ``belady``, ``deepum``, ``flashneuron``, ``g10``, ``g10-gds``,
        ``g10-host``, ``ideal``.
    """
    _load()
    return sorted(REGISTRY)


def level_of(name: str) -> str:
    """The level (``page``, ``tensor``, ``ideal``) of the registered policy ``name``; "" when none is."""
    _load()
    cls = REGISTRY.get(name)
    return cls.level if cls is not None else ""


_BUILTIN = ("baseline", "g10", "flashneuron", "g10_tensor", "zero_offload", "zero_infinity", "vdnn",
            "capuchin", "ssdtrain", "teraio")
_PLUGINS_LOADED = False      # the entry points are read once per process, at the first use


def _load():
    """The built-in policies, then (once) the installed plug-ins."""
    global _PLUGINS_LOADED
    load_builtin()
    if not _PLUGINS_LOADED:
        _PLUGINS_LOADED = True
        from .plugins import load_entry_points

        load_entry_points()


def load_builtin() -> None:
    """Import the built-in policy modules (they register themselves); not the installed plug-ins."""
    import importlib

    for mod in _BUILTIN:
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as exc:  # a module not written yet
            if exc.name != f"{__name__}.{mod}":
                raise


_load_builtin = load_builtin      # (its former private name)
