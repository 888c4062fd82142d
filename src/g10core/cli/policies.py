"""``g10sim policies``: every registered policy, one line each (name, level, origin, description)."""
from __future__ import annotations

from .common import EXIT_OK, add_json_option, emit_json, human


def policy_rows() -> list[dict]:
    """One dict per registered policy (the built-in ones and the installed plug-ins), sorted by name:
    ``name``, ``level``, ``eviction`` (page level, else None), ``builtin``, ``source`` (the class's
    module), ``description``."""
    from .. import policies
    from ..errors import is_outside

    rows = []
    for name in policies.names():
        cls = policies.get(name)
        rows.append({"name": name, "level": cls.level, "eviction": cls.eviction if cls.level == "page" else None,
                     "builtin": not is_outside(cls), "source": f"{cls.__module__}:{cls.__qualname__}",
                     "description": " ".join(str(cls.description).split())})
    return rows


def format_policies(rows: list[dict]) -> str:
    """The listing, one line per policy (greppable): ``NAME  LEVEL  DESCRIPTION``; a plug-in's
    description ends with the class it comes from."""
    nw = max(len(r["name"]) for r in rows)
    lw = max(len(r["level"]) for r in rows)
    lines = []
    for r in rows:
        text = r["description"] or "(no description)"
        if not r["builtin"]:
            text += f" [plug-in {r['source']}]"
        lines.append(f"{r['name']:<{nw}}  {r['level']:<{lw}}  {text}")
    return "\n".join(lines)


def _cmd_policies(args) -> int:
    rows = policy_rows()
    if human(args):
        print(format_policies(rows))
    emit_json(rows, args.json_path)
    return EXIT_OK


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "policies", help="list the registered policies, one line each",
        description="List every policy --policy accepts by name: the built-in ones and those installed "
                    "packages add (entry points g10core.policies), each with its level (page: the page-level "
                    "replay runs its hints; tensor: its own tensor-level simulation; ideal) and what it does. "
                    "--json gives name, level, eviction, builtin, source and description per policy.")
    add_json_option(p)
    p.set_defaults(func=_cmd_policies)
