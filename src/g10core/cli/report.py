"""``g10sim report``: re-print or re-plot saved results."""
from __future__ import annotations

import json
import sys

from .common import EXIT_OK, add_json_option, human


def fig11_outputs(args, rows, meta) -> None:
    from ..report import fig11_document, format_fig11_table, plot_fig11, write_fig11_json

    preset = (meta or {}).get("preset")
    if human(args):
        print(format_fig11_table(rows, preset=preset))
    if args.json_path == "-":
        sys.stdout.write(json.dumps(fig11_document(rows, meta=meta), indent=2, allow_nan=False) + "\n")
    elif args.json_path is not None:
        write_fig11_json(rows, args.json_path, meta=meta)
    if args.plot:
        plot_fig11(rows, args.plot, preset=preset)
        if human(args):
            print(f"wrote {args.plot}")


def _cmd_report_fig11(args) -> int:
    from ..report import load_fig11_json

    from .common import check_output_path

    check_output_path(args.json_path, "--json")
    check_output_path(args.plot, "--plot")
    rows = load_fig11_json(args.path)
    try:
        saved = json.loads(open(args.path).read()).get("metadata", {}) or {}
    except (OSError, ValueError, AttributeError):
        saved = {}
    fig11_outputs(args, rows, {"source": str(args.path), "preset": saved.get("preset")})
    return EXIT_OK


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="re-print or re-plot saved results",
                              description="Print the table (and draw the chart) of a saved reproduction.")
    sub = p.add_subparsers(dest="figure", metavar="FIGURE", required=True)
    f = sub.add_parser("fig11", help="the Fig. 11 table of a `g10sim reproduce fig11 --json` file")
    f.add_argument("path", metavar="FIG11.json", help="written by g10sim reproduce fig11 --json")
    f.add_argument("--plot", metavar="PATH.png", help="also draw the bar chart")
    add_json_option(f)
    f.set_defaults(func=_cmd_report_fig11)
