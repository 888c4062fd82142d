"""g10core: a cycle-approximate simulator of a unified GPU memory and storage system.

The public API lives in the Python layer (``trace``, ``config``, ``simulator``,
``results``); the compiled modules (``_*.pyx``) are internal.
"""
__version__ = "0.1.0"

try:  # the compiled layer must be built before anything else works
    from . import _traceidx  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only on a broken install
    raise ImportError(
        "g10core's compiled extensions are not built. Install the package with "
        "`pip install -e .` (or rebuild in place with "
        "`python setup.py build_ext --inplace`) from the repository root."
    ) from exc
