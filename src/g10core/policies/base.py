"""The policy base class and the registry that policy modules add themselves to.

Policy modules import from here, never from the package: the package loads them
(``policies.get`` / ``names``), so importing it back would be an import cycle.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..codes import HINT_DTYPE

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


def empty_hints() -> np.ndarray:
    return np.zeros(0, HINT_DTYPE)
