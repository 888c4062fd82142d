"""``g10sim report``: re-print or re-plot saved results."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .common import EXIT_OK, add_json_option, human


def fig11_outputs(args, rows, meta) -> None:
    from ..experiments.report import fig11_document, format_fig11_table, plot_fig11, write_fig11_json

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


def figure_outputs(args, figure: str, rows, meta) -> None:
    """Table (stdout), ``--json`` and ``--plot`` of a reproduced figure (Figs. 12-19)."""
    from ..experiments.report import figure_document, format_figure_table, plot_figure, write_figure_json

    if human(args):
        print(format_figure_table(figure, rows))
    if args.json_path == "-":
        sys.stdout.write(json.dumps(figure_document(figure, rows, meta=meta), indent=1, allow_nan=False) + "\n")
    elif args.json_path is not None:
        write_figure_json(figure, rows, args.json_path, meta=meta)
    if args.plot:
        plot_figure(figure, rows, args.plot)
        if human(args):
            print(f"wrote {args.plot}")


def _cmd_report_figure(args) -> int:
    from ..experiments.report import load_figure_json
    from ..experiments.reproduce import rows_from_store

    path = Path(args.path)
    if path.is_dir():
        rows, missing = rows_from_store(args.figure, path)
        meta = {"source": str(path), "missing_runs": missing}
        if missing and human(args):
            print(f"note: {missing} run(s) of {args.figure} are not in {path} yet", file=sys.stderr)
    else:
        figure, rows = load_figure_json(path)
        if figure != args.figure:
            raise ValueError(f"{path}: holds {figure}, not {args.figure}")
        meta = {"source": str(path)}
    figure_outputs(args, args.figure, rows, meta)
    return EXIT_OK


def _cmd_report_fig11(args) -> int:
    from ..experiments.report import load_fig11_json

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


def _cmd_report_timeline(args) -> int:
    from ..experiments.report import plot_timeline, timeline_summary
    from ..timeline import read_timeline

    from .common import check_output_path

    check_output_path(args.plot, "--plot")
    doc = read_timeline(args.path)
    print(timeline_summary(doc))
    if args.plot:
        plot_timeline(doc, args.plot)
        print(f"wrote {args.plot}")
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
    t = sub.add_parser("timeline", help="summarise and draw a `g10sim run --timeline` file",
                       description="Print the tracks of a timeline (g10sim run --timeline FILE.json: spans per "
                                   "track and the time they cover, counter peaks) and, with --plot, draw them as a "
                                   "picture (for papers, and machines without a browser for ui.perfetto.dev).")
    t.add_argument("path", metavar="FILE.json", help="written by g10sim run --timeline (any trace-event JSON)")
    t.add_argument("--plot", metavar="PATH.png", help="draw the tracks and the memory counters on one time axis")
    t.set_defaults(func=_cmd_report_timeline)
    from ..experiments.reproduce import FIGURES, SWEEP_FIGURES

    for name in SWEEP_FIGURES:
        g = sub.add_parser(name, help=f"{FIGURES[name].title}: table and plot of saved results",
                           description=f"Print the {name} table (published cells beside ours) from PATH: a "
                                       f"`g10sim reproduce {name} --json` file, or a results store "
                                       f"(`--out DIR` of reproduce {name} or reproduce all).")
        g.add_argument("path", metavar="PATH", help=f"{name}.json or a store folder")
        g.add_argument("--plot", metavar="PATH.png", help="draw the figure with the paper's axes")
        add_json_option(g)
        g.set_defaults(func=_cmd_report_figure)
