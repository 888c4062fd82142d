"""Example eviction rules for ``--eviction FILE.py:FUNC`` (see ``g10core.evictors``).

``g10sim run TRACE --policy base-uvm --eviction farthest_next_use.py:score`` finds the
files here by name when no such file exists in the current directory.
"""
from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """The path of a shipped example file."""
    return DIRECTORY / name
