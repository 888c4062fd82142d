"""``g10sim config``: the configuration parameters, their values, units, ranges and meaning."""
from __future__ import annotations

from ..config import value_text
from .common import EXIT_OK, add_config_options, add_json_option, config_from_args, emit_json, human


def _value_text(row: dict) -> str:
    value = row["value"]
    if value is None and "device_value" in row:
        return f"{value_text(row['device_value'])} ({row['from_device']})"
    if value is None and "profile_value" in row:
        return f"{value_text(row['profile_value'])} ({row['from_profile']})"
    return value_text(value)


def format_parameters(rows: list[dict], preset: str) -> str:
    """The table ``config show`` prints: one line per parameter, then its description."""
    width = max(len(r["key"]) for r in rows)
    vwidth = max(len(_value_text(r)) for r in rows)
    uwidth = max(len(r["unit"]) for r in rows)
    device = next((r["from_device"] for r in rows if "from_device" in r), None)
    note = f"; '({device})': the ssd.device preset's value" if device else ""
    profile = next((r["from_profile"] for r in rows if "from_profile" in r), None)
    note += f"; '({profile})': the fault.batch_profile's value" if profile else ""
    lines = [f"configuration parameters (values of preset {preset}{note})",
             f"{'key':<{width}}  {'value':<{vwidth}}  {'unit':<{uwidth}}  range",
             f"{'':<{width}}  description"]
    section = None
    for r in rows:
        this = r["key"].split(".", 1)[0]
        if this != section:
            lines.append(f"[{this}]")
            section = this
        lines.append(f"{r['key']:<{width}}  {_value_text(r):<{vwidth}}  {r['unit']:<{uwidth}}  {r['range']}")
        lines.append(f"{'':<{width}}  {r['doc']}")
    return "\n".join(lines)


def _cmd_config_show(args) -> int:
    from ..config import parameters

    cfg = config_from_args(args)
    rows = parameters(cfg)
    if human(args):
        print(format_parameters(rows, cfg.preset))
    emit_json(rows, args.json_path)
    return EXIT_OK


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("config", help="list the configuration parameters",
                              description="Work with the simulation configuration (presets, TOML files, --set).")
    sub = p.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    s = sub.add_parser(
        "show", help="every parameter: section.key, value, unit, allowed range, description",
        description="List every configuration parameter with its value in the chosen preset (after --config "
                    "and --set), its unit, the range of values accepted and a one-line description. "
                    "--json gives the same as a list of objects (key, value, default, type, unit, range, min, "
                    "max, min_exclusive, choices, doc; from_device and device_value for the FTL keys that "
                    "take the ssd.device preset's value; from_profile and profile_value for the fault.batch_*_us "
                    "keys that take the fault.batch_profile's value).")
    add_config_options(s)
    add_json_option(s)
    s.set_defaults(func=_cmd_config_show)
