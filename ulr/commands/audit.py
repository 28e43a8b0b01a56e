"""``audit``: what can this log tell me? Every question it supports, answered (docs/contract.md §2).

    python -m ulr audit (--input FILE [mapping flags] | --db PATH --name DATASET)
                        [--report TITLE] [--json]

Reads the log's shape once, decides for each question whether the log supports
it (and, if not, which mapped field would), answers every answerable one with
its page's defaults, and with ``--report`` saves the answers as a new report
(a title slide, then one item per answer in question order).
"""

from __future__ import annotations

from ulr.commands import common
from ulr.errors import UlrError

ORDER = 25


def register(sub):
    p = sub.add_parser("audit", help="what can this log tell me? answer every question it "
                                     "supports, with each page's defaults",
                       description="Read the log's shape, decide which questions it can "
                                   "answer (and why not), and answer them.")
    common.add_log_args(p)
    p.add_argument("--report", metavar="TITLE",
                   help="save the answers as a new report with this title, in --db (with "
                        "--input too), else the default store")
    p.set_defaults(run=run, read_only=read_only)


def read_only(args) -> bool:
    """Whether the run wrote nothing: without ``--report`` the audit only reads the log
    (:func:`ulr.cli.end_now` may then end the process as soon as the answers are printed)."""
    return args.report is None


def run(args) -> dict:
    from ulr import audit
    if args.report is not None and not args.report.strip():
        raise UlrError("--report needs a title.")
    report_db = args.db
    if args.input and args.db and not args.name and args.report is not None:
        args.db = None  # with --input, --db only says where --report saves
    log = common.log_from_args(args)
    result = audit.run(log)
    out = result.to_dict()
    if args.report is not None:
        from ulr.report import saved
        stored = bool(args.name)
        out["report"] = audit.build_report(
            result, name=args.report.strip(), actor=saved.OPERATOR,
            dataset=log.info.name, content_hash=(log.info.content_hash or "") if stored else "",
            db=report_db)
    return out


def render(result: dict) -> str:
    lines = [f"What can {result['dataset']!r} tell? "
             f"({result['shape']['rows']:,} rows, {result['shape']['clicks']:,} clicks)"]
    for q in result["questions"]:
        if q["answerable"]:
            v = q["verdict"]
            method = f" ({q['method']})" if q.get("method") else ""
            lines.append(f"  yes  {q['id']}{method}: {v['level'].upper()}: {v['takeaway']} "
                         f"[{q['seconds']:.1f} s]")
        else:
            lines.append(f"  no   {q['id']}: {q['reason']}")
    lines.append("explore (simulations, not answers about this log): "
                 + ", ".join(e["page"] for e in result["explore"]))
    if "report" in result:
        lines.append(f"report saved: {result['report']}")
    lines.append(f"{result['seconds']:.1f} s")
    return "\n".join(lines)
