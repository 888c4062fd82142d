"""Policies from outside the package: a user's file (``FILE.py:NAME``) and installed plug-ins.

* ``FILE.py:NAME`` (``--policy``, a sweep file's ``policies``, ``Simulator.run``): the class
  ``NAME`` of the Python file, imported by :func:`g10core.files.import_user_file` (the loader
  ``--eviction FILE.py:FUNC`` uses too), checked as a built-in is (``base.check``) and registered
  under its ``name``.  A bare file name not in the working folder is looked up among the shipped
  examples (``prefetch_next_inputs.py``).
* the entry point group ``g10core.policies``: an installed package declares
  ``name = "module:Class"``; the registry loads every one the first time it is asked for a
  policy.  A plug-in that fails to load or to pass the checks is left out with one warning line
  naming it: a broken plug-in never stops a run of the other policies.

An exception in a plug-in's code while g10core calls it (its ``__init__``, ``hints``, ``plan``,
``schedule``, ``simulate``, ``hand_tuned_factors``; a class defined outside the ``g10core``
package has these methods wrapped when it is defined, :func:`.base.guard_methods`) is a
:class:`~g10core.errors.PluginError` naming the file, ``Class.method`` and the exception: the
plug-in's fault, not g10core's (exit 2, not "a bug in g10core").

``docs/plugins.md`` is the guide.
"""
from __future__ import annotations

import sys
import warnings

from ..errors import G10Warning, PolicyError
from ..files import import_user_file, is_user_file_spec
from .base import CALLED_METHODS, REGISTRY, Policy, check, guard_methods  # noqa: F401 (API)

ENTRY_POINT_GROUP = "g10core.policies"

is_file_spec = is_user_file_spec

def load_file(spec: str) -> type[Policy]:
    """The policy class ``FILE.py:NAME`` names, registered under its ``name``.

    Raises :class:`~g10core.errors.PolicyError` (bad input, exit 2), one line naming the file
    and NAME: no such file, the file raises on import, no ``NAME`` in it, ``NAME`` not a
    :class:`Policy` subclass or failing the registration checks, or its ``name`` taken by
    another policy.  The file is imported once while it is unchanged.
    """
    where = f"policy {spec}"
    module, path, name = import_user_file(spec, where, PolicyError, module_prefix="g10core_user_policy_",
                                          kind="class", form="FILE.py:NAME", reuse=True)
    cls = getattr(module, name, None)
    if cls is None:
        raise PolicyError(f"{where}: {path} has no class {name!r}")
    if not isinstance(cls, type):
        raise PolicyError(f"{where}: {name} in {path} is a value of type {type(cls).__name__}, not a Policy "
                          "subclass (g10core.policies.Policy)")
    try:
        check(cls)
    except ValueError as exc:
        raise PolicyError(f"{where}: {' '.join(str(exc).split())}") from None
    _add(cls, where)
    return cls


def _add(cls: type[Policy], where: str) -> None:
    """Register ``cls`` unless it is registered already; its name may not be another class's
    (a new version of the same file's class replaces the old one)."""
    held = REGISTRY.get(cls.name)
    if held is cls:
        return
    if held is not None and not (held.__module__ == cls.__module__ and held.__qualname__ == cls.__qualname__):
        source = getattr(sys.modules.get(held.__module__), "__file__", None) or held.__module__
        owner = f"the built-in policy {cls.name!r}" if held.__module__.startswith(__package__ + ".") else \
            f"the policy {held.__qualname__} of {source}"
        raise PolicyError(f"{where}: its name {cls.name!r} is taken by {owner}; give the class another name")
    REGISTRY[cls.name] = cls


def load_entry_points() -> None:
    """Register the policies installed packages declare in :data:`ENTRY_POINT_GROUP`; one
    :class:`~g10core.errors.G10Warning` per entry point that cannot be (module doc)."""
    from importlib.metadata import entry_points

    try:
        found = entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # noqa: BLE001 - a damaged installed distribution's metadata
        warnings.warn(G10Warning(f"policy plug-ins ({ENTRY_POINT_GROUP}) not loaded: cannot read the installed "
                                 f"packages' entry points: {type(exc).__name__}: {exc}"), stacklevel=3)
        return
    for ep in sorted(found, key=lambda e: e.name):
        where = f"policy plug-in {ep.name!r} ({ep.value}" + (f", from {ep.dist.name}" if ep.dist else "") + ")"
        try:
            cls = ep.load()
            check(cls)
            if cls.name != ep.name:
                raise ValueError(f"its entry point is named {ep.name!r} but the class's name is {cls.name!r}: "
                                 "name the entry point as the policy")
            _add(cls, where)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of a plug-in leaves it out
            text = " ".join(str(exc).split())
            if isinstance(exc, PolicyError) and text.startswith(where + ": "):
                text = text[len(where) + 2:]
            else:
                text = f"{type(exc).__name__}: {text}"
            warnings.warn(G10Warning(f"{where} left out: {text}"), stacklevel=3)
