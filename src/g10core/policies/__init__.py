"""Migration policies, registered by name.

A policy is one module here plus one ``@register`` line.  Two kinds exist:

* page-level (``level = "page"``): the policy produces a hint table (numpy array of
  ``HINT_DTYPE``) from the trace; the compiled page-level replay applies the hints
  each iteration and falls back on the policy's eviction rule (``eviction``).
* tensor-level (``level = "tensor"``): the policy runs its own tensor-granularity
  simulation (``simulate``) and returns a result dict (see ``results.py``).

Policies never run per-page code: the core does that, fed by the hint arrays.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

# One migration hint: applied when kernel `kernel` (index within the iteration) begins.
HINT_DTYPE = np.dtype([("kernel", "<i4"), ("tensor", "<i4"), ("action", "i1")], align=False)
HINT_TO_GPU = 0    # prefetch; pre-allocate when the tensor is not present
HINT_TO_SSD = 1    # pre-evict to SSD
HINT_TO_HOST = 2   # pre-evict to host memory
HINT_FREE = 3      # pre-deallocate (drop without transfer)
ACTION_NAMES = {HINT_TO_GPU: "to_gpu", HINT_TO_SSD: "to_ssd", HINT_TO_HOST: "to_host", HINT_FREE: "free"}

EVICTIONS = ("lru", "deepum")


class Policy:
    """Base class; subclasses set ``name``, ``level`` and implement ``hints`` or ``simulate``."""

    name: ClassVar[str] = ""
    level: ClassVar[str] = "page"          # "page" or "tensor"
    eviction: ClassVar[str] = "lru"        # page-level fallback eviction rule
    apply_hints: ClassVar[bool] = True     # False: hints are ignored (Base UVM)
    ideal: ClassVar[bool] = False          # True: no simulation, the sum of ideal times
    description: ClassVar[str] = ""

    def __init__(self, config):
        self.config = config

    def hints(self, trace) -> np.ndarray:
        return np.zeros(0, HINT_DTYPE)

    def simulate(self, trace) -> dict:  # tensor-level policies only
        raise NotImplementedError


REGISTRY: dict[str, type[Policy]] = {}


def register(cls: type[Policy]) -> type[Policy]:
    if not cls.name or cls.name in REGISTRY:
        raise ValueError(f"policy name {cls.name!r} missing or registered twice")
    if cls.level not in ("page", "tensor"):
        raise ValueError(f"policy {cls.name}: level must be 'page' or 'tensor'")
    if cls.eviction not in EVICTIONS:
        raise ValueError(f"policy {cls.name}: eviction must be one of {EVICTIONS}")
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
