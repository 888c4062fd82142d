"""Migration policies, registered by name.

A policy is one module here plus one ``@register`` line (the base class and the
registry are in ``base.py``, so the modules this package loads never import it
back).  Two kinds exist:

* page-level (``level = "page"``): the policy produces a hint table (numpy array of
  ``HINT_DTYPE``) from the trace; the compiled page-level replay applies the hints
  each iteration and falls back on the policy's eviction rule (``eviction``).
* tensor-level (``level = "tensor"``): the policy runs its own tensor-granularity
  simulation (``simulate``) and returns a result dict (see ``results.py``).

Policies never run per-page code: the core does that, fed by the hint arrays.
"""
from __future__ import annotations

from ..codes import (  # noqa: F401 (the hint codes, importable from here)
    ACTION_NAMES, HINT_DTYPE, HINT_FREE, HINT_TO_GPU, HINT_TO_HOST, HINT_TO_SSD)
from .base import EVICTIONS, REGISTRY, Policy, empty_hints, register  # noqa: F401 (the registry's API)


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
