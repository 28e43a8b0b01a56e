"""``report``: a self-contained HTML report of one click log (docs/contract.md §2, JSON key ``path``).

Sections (``--sections``, in this order):

- ``summary``: key figures and click-through rate by position (always available).
- ``propensity``: position-bias estimate (``ulr.propensity.estimate``), drawn by
  ``ulr.propensity.plots.theta_figure`` with the Position bias page's intervals
  and thin-evidence marks.
- ``rankers``: naive vs IPW ranker (``ulr.rankers``) with theta from ``--theta``
  or from the propensity section; skipped with a note when neither is there.

A section that cannot run on the log (the library raises :class:`UlrError`, e.g.
randomization without randomized rows, too few queries to compare rankers)
becomes a note in the report instead of failing the command.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ulr import propensity, rankers, report, validate

from ulr.data import catalog, files

from ulr.data.summary import summary, summary_and_ctr, true_theta
from ulr.propensity import plots as propensity_plots
from ulr.commands.common import add_log_args, add_option, log_from_args
from ulr.errors import UlrError
from ulr.plots import ctr_by_position_figure
from ulr.text import parse_numbers

ORDER = 90
SECTIONS = ("summary", "propensity", "rankers")
DEFAULT_SECTIONS = "summary,propensity,rankers"
FORMATS = ("html", "slides", "pdf", "pptx")


def register(sub):
    p = sub.add_parser("report", help="write a self-contained HTML report of a click log, "
                                      "or export / list the reports saved in the app")
    add_log_args(p)
    p.add_argument("--out", metavar="PATH", help="file to write (.html, .pdf with --format "
                                                 "pdf, .pptx with --format pptx)")
    p.add_argument("--format", choices=FORMATS, default="html",
                   help="html: one long page; slides: an HTML slide deck; pdf: the slides "
                        "as PDF (needs Chromium); pptx: a PowerPoint deck, one slide per "
                        "result, caveats and settings in the speaker notes (needs Chromium). "
                        "Default html")
    p.add_argument("--list", action="store_true",
                   help="list the reports saved in --db (id, name, items, last change)")
    p.add_argument("--report", metavar="NAME_OR_ID",
                   help="export this saved report from --db instead of building one from a log")
    p.add_argument("--title", help="report title (default: 'ulr report: DATASET')")
    p.add_argument("--sections", default=DEFAULT_SECTIONS,
                   help=f"comma-separated, from {', '.join(SECTIONS)} (default: all)")
    p.add_argument("--zip", metavar="PATH.zip", help="also write the tables as CSVs in a ZIP")
    add_option(p, "--propensity", retired=("--propensity-method",), metavar="METHOD",
               help="propensity section: estimator (default: randomization when the log "
                    "has randomized rows, else em)")
    p.add_argument("--positions", type=int, metavar="K", help="propensity section: positions")
    p.add_argument("--bootstrap", type=int, default=0, metavar="B",
                   help="propensity section: bootstrap replicates for intervals (default 0)")
    p.add_argument("--theta", metavar="T1,T2,...",
                   help="rankers section: propensity per position (instead of the estimate)")
    p.add_argument("--learner", default="linear",
                   help="rankers section: linear, gbdt, or both (linear,gbdt: the significance "
                        "table of the four rankers)")
    p.add_argument("--seed", type=int, default=0, help="seed for splits and bootstraps")
    p.set_defaults(run=run)


# --------------------------------------------------------------------------- options


def parse_sections(text: str) -> list[str]:
    names = [s.strip().lower() for s in str(text).split(",") if s.strip()]
    if not names:
        raise UlrError(f"--sections is empty; choose from {', '.join(SECTIONS)}.")
    bad = [s for s in names if s not in SECTIONS]
    if bad:
        raise UlrError(f"unknown report section {bad[0]!r}; choose from {', '.join(SECTIONS)}.")
    return [s for s in SECTIONS if s in names]  # canonical order, no duplicates


def parse_theta(text: str | None) -> np.ndarray | None:
    if text is None:
        return None
    vals = np.array(parse_numbers(text, what="--theta"), dtype=float)
    if not np.all(np.isfinite(vals)) or np.any(vals <= 0):
        raise UlrError("--theta needs one finite value > 0 per position.")
    return vals


def _check_out(path: str, suffixes: tuple, flag: str) -> Path:
    p = Path(path)
    if p.suffix.lower() not in suffixes:
        raise UlrError(f"{flag} must name a {' or '.join(suffixes)} file, got {path!r}.")
    if p.exists() and p.is_dir():
        raise UlrError(f"{flag} {path} is a directory.")
    if not p.parent.exists():
        raise UlrError(f"the folder {p.parent} for {flag} does not exist.")
    return p


# --------------------------------------------------------------------------- sections


class _Skip(Exception):
    """A section that cannot run here; its message goes into the report."""


def _settings(log, **extra) -> dict:
    info = log.info
    out = {"dataset": info.name, "file_name": info.source, "rows": info.rows,
           "content_hash": info.content_hash}
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


def section_summary(log, ctx) -> list[report.ReportItem]:
    from ulr.lists import mapping_warnings
    s, ctr = summary_and_ctr(log, mapping=mapping_warnings(log))  # the Data page's verdict
    labels = {"rows": "rows", "queries": "queries", "documents": "documents",
              "sessions": "sessions", "ctr": "overall click-through rate",
              "randomized_share": "share of randomized rows", "positions": "deepest position"}
    key = pd.DataFrame({"figure": [labels[k] for k in labels],
                        "value": [s[k] for k in labels]})
    name = log.info.name
    return [
        report.ReportItem.from_result(
            "Key figures", table=key, dataset=name, settings=_settings(log),
            note="Size of the click log and how often results were clicked."),
        report.ReportItem.from_result(
            "Click-through rate by position", fig=ctr_by_position_figure(ctr.table),
            table=ctr.table, dataset=name, settings=_settings(log, interval="95% Wilson score"),
            verdict=ctr.verdict, caveats=list(ctr.caveats), evidence=ctr.evidence,
            note="Bars are 95% Wilson score intervals."),
    ]


def _default_method(log) -> str:
    """randomization when the log has randomized rows, else em."""
    has_rand = log.info.has("randomized") and summary(log)["randomized_share"] > 0
    return "randomization" if has_rand else "em"


def section_propensity(log, ctx) -> list[report.ReportItem]:
    from ulr.lists import mapping_warnings
    method = ctx["propensity_method"] or _default_method(log)
    warnings = mapping_warnings(log)
    res = propensity.estimate(log, method=method, positions=ctx["positions"],
                              n_bootstrap=ctx["n_bootstrap"] or 0, seed=ctx["seed"],
                              mapping=warnings)
    ctx["theta"] = np.asarray(res.theta, dtype=float)
    ctx["theta_from"] = f"estimated ({method})"
    ctx["theta_method"] = method
    truth = true_theta(log)
    by_pos = summary_and_ctr(log, mapping=warnings)[1]  # the chart's counts, the evidence
    table = propensity_plots.results_table([res], truth,
                                           clicks=by_pos.table["clicks"].to_numpy(),
                                           impressions=by_pos.table["impressions"].to_numpy())
    note = (f"Position bias estimated with {method}; "
            + (f"intervals from {ctx['n_bootstrap']} bootstrap replicates where drawn, "
               "else from the click counts." if ctx["n_bootstrap"] else
               "intervals from the click counts (run with --bootstrap B for bootstrap "
               "intervals).")
            + (" The dashed line is the true theta recorded in the log." if truth is not None
               else "")
            + ("\n" + "\n".join(res.notes) if res.notes else ""))
    return [report.ReportItem.from_result(
        f"Position bias ({method})", fig=propensity_plots.theta_figure([res], truth, table=table),
        verdict=res.verdict,  # as the page judges it
        table=table, dataset=log.info.name, note=note, evidence=by_pos.evidence,
        caveats=[n for n in [propensity_plots.thin_note(
            table, clicks=by_pos.evidence["clicks"]),
            res.misfit and res.misfit.message] if n],  # the page's words
        settings=_settings(log, method=method, positions=ctx["positions"],
                           bootstrap=ctx["n_bootstrap"], seed=ctx["seed"]))]


def section_rankers(log, ctx) -> list[report.ReportItem]:
    theta = ctx.get("theta")
    if theta is None:
        raise _Skip("the naive-vs-IPW comparison needs a position-bias estimate: include the "
                    "propensity section or pass --theta.")
    if len(rankers.parse_learners(ctx["learner"])) > 1:
        return [_several_learners(log, ctx, theta)]
    cmp = rankers.train_and_evaluate(rankers.log_frame(log), None, theta,
                                     learner=ctx["learner"], seed=ctx["seed"],
                                     min_queries=rankers.MIN_TEST_QUERIES,
                                     **rankers.weighed_facts(log, propensity=ctx.get(
                                         "theta_method")))
    table = cmp.table(seed=ctx["seed"])
    note = (f"A {ctx['learner']} ranker trained on the clicks twice: naively and with inverse "
            f"propensity weights 1/theta_k (theta {ctx['theta_from']}). Both are evaluated on "
            f"{cmp.n_compared:,} test queries"
            + (" with click-based IPW relevance estimates (the log has no relevance labels)"
               if cmp.estimated else " on their relevance labels")
            + "; whiskers show 95% bootstrap intervals over queries.")
    return [report.ReportItem.from_result(
        "Naive vs IPW ranker", fig=rankers.comparison_figure(table, estimated=cmp.estimated),
        verdict=cmp.verdict, table=table, dataset=log.info.name, note=note,
        evidence=cmp.evidence,
        caveats=([cmp.misfit.message] if cmp.misfit is not None else [])  # the page's words
        + [text for _, text in cmp.caveats(cmp.paired(seed=ctx["seed"]))],
        settings=_settings(log, learner=ctx["learner"], seed=ctx["seed"],
                           theta=[round(float(t), 6) for t in theta],
                           theta_from=ctx["theta_from"]))]


def _several_learners(log, ctx, theta) -> report.ReportItem:
    """The Compare rankers page's item for several learners: the significance table
    (Holm-corrected randomization tests), the chart of every ranker and its verdict."""
    sc = rankers.compare_learners(rankers.log_frame(log), None, theta, learners=ctx["learner"],
                                  seed=ctx["seed"], min_queries=rankers.MIN_TEST_QUERIES,
                                  **rankers.weighed_facts(log, propensity=ctx.get(
                                      "theta_method")))
    pairs = sc.pair_table
    comp = sc.first
    note = (f"Naive and IPW rankers of each learner ({ctx['learner'].replace(',', ', ')}), "
            f"trained on the same clicks with theta {ctx['theta_from']} and evaluated on the "
            f"same {comp.n_compared:,} test queries. Superscript letters name the rankers "
            "a value is significantly better than (paired randomization test, Holm correction "
            "over the pairs of each metric, 5% level).")
    return report.ReportItem.from_result(
        "Rankers compared", fig=rankers.comparison_figure(sc.table(seed=ctx["seed"]),
                                                          estimated=comp.estimated),
        verdict=sc.verdict,
        table=rankers.significance_wide(sc.significance(pairs)), dataset=log.info.name,
        note=note, evidence=comp.evidence,
        settings=_settings(log, learners=ctx["learner"], seed=ctx["seed"],
                           theta=[round(float(t), 6) for t in theta],
                           theta_from=ctx["theta_from"], test="randomization",
                           correction="holm"))


_BUILDERS = {"summary": section_summary, "propensity": section_propensity,
             "rankers": section_rankers}


@validate.retired(propensity_method="propensity")
@validate.params(n_bootstrap=validate.n_bootstrap, seed=validate.seed)
def build_items(log, sections, *, propensity=None, positions=None, n_bootstrap=0,
                theta=None, learner="linear", seed=0) -> tuple[list[report.ReportItem], dict]:
    """Report items of ``log`` for ``sections``; returns (items, status per section)."""
    ctx = {"propensity_method": propensity, "positions": positions,
           "n_bootstrap": n_bootstrap, "learner": learner, "seed": seed,
           "theta": theta, "theta_from": "given with --theta" if theta is not None else None}
    items, status = [], {}
    for name in sections:
        try:
            items += _BUILDERS[name](log, ctx)
            status[name] = "ok"
        except (_Skip, UlrError) as exc:
            why = " ".join(str(exc).split())
            status[name] = f"skipped: {why}"
            items.append(report.ReportItem(
                title=f"{name.capitalize()} section skipped", note=why,
                dataset=log.info.name, settings={"section": name}))
    return items, status


# --------------------------------------------------------------------------- command


def _write(out: Path, items, title: str, fmt: str, status=None) -> None:
    if fmt == "html":
        report.write_html(out, items, title=title, status=status)
    elif fmt == "slides":
        report.write_bytes(out, report.build_deck(items, title=title, status=status)
                           .encode("utf-8"))
    elif fmt == "pptx":
        from ulr.report.powerpoint import build_pptx

        report.write_bytes(out, build_pptx(items, title=title, status=status))
    else:
        report.write_bytes(out, report.build_pdf(items, title=title, status=status))


def _out_for(args) -> Path:
    if not args.out:
        raise UlrError("--out PATH is required (the file to write).")
    suffixes = {"pdf": (".pdf",), "pptx": (".pptx",)}.get(args.format, (".html", ".htm"))
    return _check_out(args.out, suffixes, "--out")


def _saved_db(args) -> str:
    if args.input or args.name:
        raise UlrError("--list and --report read the reports saved in --db; drop "
                       "--input/--name.")
    db = args.db or files.default_db_path()
    if not Path(db).exists():
        raise UlrError(f"database {db} does not exist; reports are saved there by the app.")
    return db


def run_saved(args) -> dict:
    """``--list`` or ``--report``: the reports saved by the app in the store.

    The CLI acts as the operator (:data:`ulr.report.saved.OPERATOR`): whoever runs it holds the
    database file, so it lists and exports every report, private ones included.
    """
    from ulr.report import saved as reports

    db = _saved_db(args)
    me = reports.OPERATOR
    if args.list:
        return {"reports": [{"id": r.id, "name": r.name, "items": r.items,
                             "updated": r.updated} for r in reports.list_reports(actor=me, db=db)]}
    out = _out_for(args)
    info = reports.find(args.report, actor=me, db=db)
    items = reports.items(info.id, actor=me, db=db)
    cur = catalog.cursor(db)
    status = reports.stale_status(items, cur=cur)
    _write(out, items, args.title or info.name, args.format, status)
    result = {"path": str(out), "report": info.name, "id": info.id, "items": len(items),
              "format": args.format, "stale": len(status), "bytes": out.stat().st_size}
    if args.zip:
        zip_out = _check_out(args.zip, (".zip",), "--zip")
        report.write_bytes(zip_out, report.build_zip(items))
        result["zip"] = str(zip_out)
    return result


def run(args) -> dict:
    if args.list or args.report:
        return run_saved(args)
    out = _out_for(args)
    zip_out = _check_out(args.zip, (".zip",), "--zip") if args.zip else None
    sections = parse_sections(args.sections)
    theta = parse_theta(args.theta)
    if args.positions is not None and args.positions < 1:
        raise UlrError("--positions must be at least 1.")
    validate.n_bootstrap(args.bootstrap, option="--bootstrap")
    try:
        rankers.parse_learners(args.learner)
    except UlrError:
        raise UlrError(f"--learner must be linear, gbdt or both (linear,gbdt), not "
                       f"{args.learner!r}.") from None
    if args.title is not None and not args.title.strip():
        raise UlrError("--title must not be empty.")
    log = log_from_args(args)
    items, status = build_items(log, sections, propensity=args.propensity,
                                positions=args.positions, n_bootstrap=args.bootstrap,
                                theta=theta, learner=args.learner, seed=args.seed)
    title = args.title or f"ulr report: {log.info.name}"
    _write(out, items, title, args.format)
    result = {"path": str(out), "dataset": log.info.name, "items": len(items),
              "sections": status, "bytes": out.stat().st_size}
    if zip_out is not None:
        report.write_bytes(zip_out, report.build_zip(items))
        result["zip"] = str(zip_out)
    return result


def render(result: dict) -> str:
    if "reports" in result:
        if not result["reports"]:
            return "no saved reports"
        from ulr.quantity import timestamp
        return "\n".join(f"{r['id']}  {r['items']:>3} items  {timestamp(r['updated'])}  "
                         f"{r['name']}"
                         for r in result["reports"])
    if "report" in result:
        return (f"wrote {result['path']} ({result['format']}, report {result['report']!r}, "
                f"{result['items']} items, {result['stale']} with a changed dataset)"
                + (f"\nwrote {result['zip']}" if result.get("zip") else ""))
    lines = [f"wrote {result['path']} ({result['items']} items, "
             f"{result['bytes'] / 1e6:.1f} MB)"]
    if result.get("zip"):
        lines.append(f"wrote {result['zip']}")
    for name, st in result["sections"].items():
        lines.append(f"  {name}: {st}")
    return "\n".join(lines)
