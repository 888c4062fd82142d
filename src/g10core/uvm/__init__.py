"""The unified-memory driver and the replay that runs a plan on it.

The page table (``_pagetable``), the evictors (``_evict``, with their Python face and the
eviction rules in ``evictors``), the far-fault handler of the detailed preset (``_uvm``: fault
buffer, batches, tree prefetcher; its spec and Python handle in ``fault_handler``), the fault
model of the slot presets (``_fault``), the batcher that moves a slot's pages (``_batcher``),
the devices on the transfer path (``_device``), the kernel runner (``_kernelrun``), the
timeline recorder (``_timeline``), the progress guard (``_progress``) and the event-driven
replay (``_replay``).

``g10core.uvm`` was, for one release, the old name of ``g10core.uvm.fault_handler``: its
public names still resolve here, with a DeprecationWarning (until the next release).
"""
from __future__ import annotations

import warnings

_SUBMODULES = ("evictors", "fault_handler")   # (a submodule's name is looked up here before it is imported)


def __getattr__(name: str):
    if not name.startswith("_") and name not in _SUBMODULES:
        from .fault_handler import __all__ as moved

        if name in moved:
            from . import fault_handler
            warnings.warn(f"g10core.uvm.{name} has moved to g10core.uvm.fault_handler.{name}; import it from "
                          "there (the old path will be removed in a later release)", DeprecationWarning, stacklevel=2)
            return getattr(fault_handler, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
