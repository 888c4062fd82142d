"""g10core: a cycle-approximate simulator of a unified GPU memory and storage system.

The public API lives in the Python layer: the simulator and its configuration at the top
(``simulator``, ``results``, ``config``), the workload in ``workload/`` (traces,
hint files, vitality analysis), the migration policies in ``policies/``, and sweeps,
reproduction and reports in ``experiments/``.  The machine model is one package per component
(``core/``, ``link/``, ``ssd/``, ``tlb/``, ``uvm/``), each holding its compiled modules
(``_*.pyx``, internal) and its Python face (the spec and handle; ``uvm.evictors``).
Modules that moved stay importable by their old names, with a DeprecationWarning
(``_moved.py``).
"""
__version__ = "0.1.0"

import importlib.util as _importlib_util
import sys as _sys

from . import _moved

_moved.install(_sys.meta_path)

# The compiled layer must be built before anything else works.  It is looked up, not
# imported: importing it imports numpy, and the g10sim command sets numpy's BLAS up
# first (cli/__init__.py).
if _importlib_util.find_spec(__name__ + ".workload._traceidx") is None:  # pragma: no cover - a broken install
    raise ImportError(
        "g10core's compiled extensions are not built. Install the package with "
        "`pip install -e .` (or rebuild in place with "
        "`python setup.py build_ext --inplace`) from the repository root."
    )
