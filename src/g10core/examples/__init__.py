"""Examples of a user's code that g10sim loads from a file, found here by file name when no
such file exists in the current directory:

* eviction rules for ``--eviction FILE.py:FUNC`` (see ``g10core.uvm.evictors``):
  ``g10sim run TRACE --policy base-uvm --eviction farthest_next_use.py:score``;
* policies for ``--policy FILE.py:NAME`` (see ``docs/plugins.md``):
  ``g10sim run TRACE --policy prefetch_next_inputs.py:PrefetchNextInputs``.

These files are loaded by path as a user's files are, never imported as modules of the package.
"""
from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """The path of a shipped example file."""
    return DIRECTORY / name


def shipped() -> list[str]:
    """The example files' names."""
    return sorted(p.name for p in DIRECTORY.glob("*.py") if p.name != "__init__.py")
