"""Old import paths of the modules that moved into the package's wings.

``import g10core.trace`` (and ``from g10core import trace``) keeps working: it gives the
module at its new path, :mod:`g10core.workload.trace`, the very same module object, with a
:class:`DeprecationWarning` that names the new path.  Installed as a finder on
``sys.meta_path`` by ``g10core/__init__.py``; it answers only for the names in ``MOVED``.

A module split into several (``SPLIT``: ``g10core.slot_model``, whose quotas went to
:mod:`g10core.uvm.slots` and its inputs from a trace to :mod:`g10core.workload.slot_inputs`) is
answered by a module whose attributes are the parts', with a DeprecationWarning naming them.

Names that moved out of a module that stays (``MOVED_NAMES``: the runner of ``reproduce llm`` left
``g10core.capture.llm`` for ``g10core.experiments.llm``) are answered by the old module's
``__getattr__`` through :func:`moved_attribute`: the same object, with a DeprecationWarning.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import types
import warnings

PACKAGE = "g10core"

# old module name -> new module name (both below g10core)
MOVED = {
    "trace": "workload.trace",
    "h5safe": "workload.h5safe",
    "tracestore": "workload.tracestore",
    "synth": "workload.synth",
    "g10artifact": "workload.g10artifact",
    "hints": "workload.hints",
    "analysis": "workload.vitality",
    "tensorsim": "policies.tensorsim",
    "sweep": "experiments.sweep",
    "reproduce": "experiments.reproduce",
    "report": "experiments.report",
    "published": "experiments.published",
    "uvmmicro": "experiments.uvmmicro",
    "ssdbench": "experiments.ssdbench",
    # issue 44: the machine model grouped by component (compiled modules too: the alias is the
    # very extension module, so objects pickled under the old name still load)
    "pcie": "link.pcie",
    "evictors": "uvm.evictors",
    "fault_handler": "uvm.fault_handler",       # (``g10core.uvm``, its name before, is now the package)
    "_engine": "core._engine",
    "_pcie": "link._pcie",
    "_ssd": "ssd._ssd",
    "_ssd_front": "ssd._ssd_front",
    "_ssd_gc": "ssd._ssd_gc",
    "_ssd_map": "ssd._ssd_map",
    "_ssd_wbuf": "ssd._ssd_wbuf",
    "_tlb": "tlb._tlb",
    "_pagetable": "uvm._pagetable",
    "_fault": "uvm._fault",
    "_uvm": "uvm._uvm",
    "_evict": "uvm._evict",
    "_batcher": "uvm._batcher",
    "_device": "uvm._device",
    "_kernelrun": "uvm._kernelrun",
    "_timeline": "uvm._timeline",
    "_progress": "uvm._progress",
    "_replay": "uvm._replay",
    "capture.timing": "workload.kerneltime",   # the kernel-time model, below the simulator that retargets with it
    "noise": "workload.noise",                 # the kernel-time noise perturbs a workload's kernel times
    "modelled": "policies.modelled",           # which keys each policy reads: the policies' declarations
}

# old module -> the new modules it was split into, both below g10core (issue 44: the slot model's
# quotas are the machine's, its inputs from a trace the workload's).  The old path gives a module
# whose attributes are looked up in the new ones, in order; importing it warns, naming them.
SPLIT = {
    "slot_model": ("uvm.slots", "workload.slot_inputs"),
    "artifact_constants": ("uvm.slots", "workload.slot_inputs"),   # (slot_model's name before)
}


# old module -> (new module, the names that moved there), both below g10core.  The old module keeps
# what it still owns; ``from <old> import <name>`` of a moved name goes through moved_attribute.
MOVED_NAMES = {
    # issue 44: capture/ records workloads and imports nothing from experiments/; running the
    # policies on the captured traces, and comparing with the paper, are experiments
    "capture.llm": ("experiments.llm", ("MACHINES", "llm_policies", "machine_config", "run_llm_task",
                                        "llm_tasks", "reproduce_llm", "format_llm_table")),
    "capture.twins": ("experiments.twins", ("twin_comparison", "format_twin_comparison")),
}


def moved_attribute(module: str, name: str):
    """``getattr`` of a name that moved out of ``module`` (a full name, ``g10core.capture.llm``): the
    object at its new module, with a DeprecationWarning; AttributeError for any other name."""
    new, names = MOVED_NAMES.get(module.partition(".")[2], (None, ()))
    if name not in names:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    target = f"{PACKAGE}.{new}"
    warnings.warn(f"{module}.{name} has moved to {target}.{name}; import it from there (the old path will be "
                  "removed in a later release)", DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(target), name)


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``g10core.<old>`` for each old name and loads it as the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, old = fullname.partition(".")
        if prefix != PACKAGE or (old not in MOVED and old not in SPLIT):
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        old = spec.name.partition(".")[2]
        if old in SPLIT:
            self._own_spec = None
            return split_module(spec.name, [f"{PACKAGE}.{m}" for m in SPLIT[old]])
        new = f"{PACKAGE}.{MOVED[old]}"
        warnings.warn(f"{spec.name} has moved to {new}; import it from there (the old path will be removed "
                      "in a later release)", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module):
        # the import system set the alias's spec on the shared module object: give it its own back
        if self._own_spec is not None:
            module.__spec__ = self._own_spec


def split_module(name: str, parts: list[str]):
    """The module at old path ``name``, split into ``parts``: a module whose attributes are those
    of the parts (the first that has the name), the very objects; importing it warns."""
    warnings.warn(f"{name} has been split into {' and '.join(parts)}; import from there (the old path will be "
                  "removed in a later release)", DeprecationWarning, stacklevel=3)
    modules = [importlib.import_module(p) for p in parts]
    alias = types.ModuleType(name, f"Old path of {', '.join(parts)} (deprecated).")

    def __getattr__(attr):
        for m in modules:
            if hasattr(m, attr):
                return getattr(m, attr)
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    def __dir__():
        return sorted({a for m in modules for a in dir(m) if not a.startswith("__")})

    alias.__getattr__ = __getattr__
    alias.__dir__ = __dir__
    alias.__all__ = [a for a in __dir__() if not a.startswith("_")]
    return alias


def install(meta_path: list) -> None:
    """Put one finder on ``meta_path`` (idempotent)."""
    if not any(isinstance(f, MovedModuleFinder) for f in meta_path):
        meta_path.append(MovedModuleFinder())
