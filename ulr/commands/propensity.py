"""``propensity``: position-bias estimate of a click log (docs/contract.md §2).

    python -m ulr propensity --method em --input log.csv [--positions K] [--bootstrap B]

Prints theta relative to position 1 (and, with ``--bootstrap``, the standard bootstrap
interval on the log scale). When the log records the simulator's ``true_theta``, it is shown
next to the estimate, relative to position 1 as well.

With ``--input big.csv`` and a method that only needs (query, doc, position)
statistics (``em``, ``intervention-harvesting``) the CSV is aggregated in
place instead of being copied into DuckDB first; the schema rules are checked
in the same pass, and a file that breaks them goes through the regular loader,
which refuses it with the usual message.
"""

from __future__ import annotations

import numpy as np

from ulr import propensity, validate

from ulr.commands import common
from ulr.errors import UlrError
from ulr.data.scan import NeedsFullLoad, csv_scan, scan_of
from ulr.data.summary import true_theta
from ulr.propensity.registry import INTERVALS
from ulr.propensity.result import N_BOOTSTRAP

ORDER = 30
# What each method needs is declared once, in propensity.REGISTRY (read at each call:
# propensity.register may add a method).


def _head_warnings(scan) -> tuple:
    """The mapping warnings (:func:`ulr.lists.mapping_warnings`) of rows read in place (a
    CSV, or a path or table on an engine): on every row up to the check's 50,000, past it
    on a sample of whole sessions (queries without sessions) drawn by a hash of their id
    (:func:`ulr.data.scan.list_sample`, which the PBM's fit reads too): the same rows in
    any order give the same warnings, where the first rows of a shuffled file would break
    its sessions apart (a false "single-row sessions"), and a pass over all the rows would
    cost as much as the estimate."""
    from ulr.data.precheck import SAMPLE_ROWS
    from ulr.data.scan import list_sample
    from ulr.lists import mapping_warnings
    rows, sampled = list_sample(scan, max_rows=SAMPLE_ROWS)
    if not sampled:
        return mapping_warnings(scan)  # the whole file
    return mapping_warnings(rows, scope=f" in a sample of {rows.rows:,} rows")


def register(sub):
    p = sub.add_parser("propensity", help="estimate position bias (theta per position)",
                       description="Estimate how examination falls with position, relative to "
                                   "position 1.")
    p.add_argument("--method", required=True, choices=propensity.METHODS)
    p.add_argument("--positions", type=int, metavar="K",
                   help="estimate positions 1..K (default: all positions in the log)")
    p.add_argument("--interval", choices=tuple(INTERVALS),
                   help="how the 95%% interval is formed: information (em's default: the "
                        "fit's Fisher information, no replicates) or bootstrap (every other "
                        "method's: --bootstrap replicates resampling sessions)")
    p.add_argument("--bootstrap", type=int, default=N_BOOTSTRAP, metavar="B",
                   help="replicates of a bootstrap interval (resamples sessions; "
                        f"default {N_BOOTSTRAP}, as on the Position bias page; 0: none)")
    p.add_argument("--assume-randomized", action="store_true",
                   help="randomization: treat every row as shown in random order")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--by", metavar="COLUMN",
                   help="estimate theta per value of COLUMN (a column kept at load, such as "
                        "device or query_type; 2 to 12 values) and say whether the segments "
                        "differ, Holm-corrected over positions")
    p.add_argument("--identify", action="store_true",
                   help="instead of estimating: which positions the log links (documents seen "
                        "at both), the pairs linking them, and which theta can be identified")
    common.add_log_args(p)
    e = p.add_argument_group("engine (aggregate a path, folder, glob or table where it lives)")
    e.add_argument("--engine", choices=("duckdb", "spark"),
                   help="run the aggregate query on this engine; with --input PATH_OR_GLOB "
                        "(Parquet or CSV files, folders, globs) or --table NAME (spark)")
    e.add_argument("--source", metavar="NAME",
                   help="a source registered with `source add` (em, intervention-harvesting: "
                        "from its stored statistics)")
    e.add_argument("--table", metavar="NAME", help="with --engine spark: a table of Spark's "
                                                  "catalog")
    e.add_argument("--spark-master", default="local[2]", metavar="URL",
                   help="Spark master (default local[2]; e.g. spark://host:7077, yarn)")
    e.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="Spark configuration (repeatable), e.g. spark.executor.memory=8g")
    p.set_defaults(run=run)


def _engine_scan(args):
    """The scan of ``--input``/``--table`` on ``--engine`` (docs/contract.md §2)."""
    from ulr import engines
    if bool(args.input) == bool(args.table):
        raise UlrError("--engine needs exactly one of --input PATH_OR_GLOB or --table NAME.")
    if args.table and args.engine != "spark":
        raise UlrError("--table needs --engine spark.")
    conf = {}
    for kv in args.spark_conf:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise UlrError(f"--spark-conf takes KEY=VALUE, got {kv!r}.")
        conf[key] = value
    opts = {"master": args.spark_master, "conf": conf} if args.engine == "spark" else {}
    return engines.get(args.engine, **opts).scan(path=args.input, table=args.table)


def run(args) -> dict:
    kwargs = dict(method=args.method, positions=args.positions, n_bootstrap=args.bootstrap,
                  seed=args.seed, assume_randomized=args.assume_randomized,
                  interval=args.interval)
    if args.bootstrap is not None:
        validate.n_bootstrap(args.bootstrap, option="--bootstrap")
    if args.positions is not None and args.positions < 2:
        raise UlrError(f"--positions must be at least 2, got {args.positions}.")
    if args.identify:
        return _identify(args)
    if args.by:
        return _by_segment(args, kwargs)
    res = scan = log = None
    if args.source:
        from ulr.engines import sources
        if args.method not in propensity.CELL_METHODS:
            raise UlrError("--source holds cell statistics, enough for "
                           f"{' and '.join(propensity.CELL_METHODS)}"
                           f"; {args.method} needs rows (use --engine with --input or --table).")
        scan = sources.scan(args.source, db_path=args.db)
        res = propensity.estimate(scan, **kwargs, mapping=sources.mapping_warnings(
            args.source, db_path=args.db))
    elif args.engine or args.table:
        scan = _engine_scan(args)
        res = propensity.estimate(scan, **kwargs, mapping=_head_warnings(scan))
    if res is None and (args.input and not (args.name or args.db) and not args.skip_bad_rows
            and args.method in propensity.IN_PLACE_METHODS):
        scan = csv_scan(args.input, common.mapping_from_args(args))
        if scan is not None:
            from ulr.data.precheck import SAMPLE_ROWS
            from ulr.data.scan import RIDE
            scan.memo[RIDE] = SAMPLE_ROWS  # the checks' sample, read in the estimate's pass
            try:
                res = propensity.estimate(scan, **kwargs,
                                          mapping=lambda: _head_warnings(scan))
            except NeedsFullLoad:
                res = scan = None
    if res is None:
        log = common.log_from_args(args)
        scan = scan_of(log)
        res = propensity.estimate(log, **kwargs, mapping=common.mapping_warnings(log))
    out = res.to_dict()
    out["dataset"] = scan.name  # the verdict is the page's: on the intervals its chart draws
    truth = true_theta(scan, res.positions)
    if truth is not None and truth[0] > 0:
        rel = truth / truth[0]
        out["true_theta"] = rel.tolist()
        out["true_theta_absolute"] = truth.tolist()
        err = np.abs(res.theta - rel)
        out["max_abs_error"] = float(np.nanmax(err)) if np.isfinite(err).any() else None
    return out


def _by_segment(args, kwargs) -> dict:
    """``--by COLUMN``: theta per segment of a loaded log (:mod:`ulr.propensity.segments`)."""
    from ulr.propensity.segments import by_segment
    if args.source or args.engine or args.table:
        raise UlrError("--by splits a loaded log by one of its columns; use --input or "
                       "--name, not --source, --engine or --table.")
    log = common.log_from_args(args)
    kwargs = {k: v for k, v in kwargs.items() if k != "assume_randomized"}
    if args.assume_randomized:
        raise UlrError("--assume-randomized does not go with --by.")
    res = by_segment(log, column=args.by, mapping=common.mapping_warnings(log), **kwargs)
    out = res.to_dict()
    out["dataset"] = scan_of(log).name
    return out


def _identify(args) -> dict:
    """``--identify``: the position graph of the log (:mod:`ulr.propensity.identify`)."""
    from ulr.propensity.identify import identify
    if args.source or args.engine or args.table or args.by:
        raise UlrError("--identify reads a loaded log; use --input or --name, without "
                       "--source, --engine, --table or --by.")
    log = common.log_from_args(args)
    out = identify(log, positions=args.positions, method=args.method).to_dict()
    out["dataset"] = scan_of(log).name
    out["identify"] = True
    return out


def _render_identify(result: dict) -> str:
    k = result["positions"]
    lines = [f"what {result.get('dataset', '?')} identifies: pairs seen at both positions "
             f"({result['pairs']:,} pairs, {result['pairs_at_several_positions']:,} seen at "
             "several positions)",
             "         " + "".join(f"{j + 1:>8d}" for j in range(k)) + "  identified"]
    for i in range(k):
        lines.append(f"{i + 1:9d}" + "".join(f"{x:8,d}" for x in result["links"][i])
                     + f"  {'yes' if result['identified'][i] else 'no'}")
    lines.append(common.render_verdict(result))
    return "\n".join(lines)


def _render_segments(result: dict) -> str:
    k = result["positions"]
    vals = list(result["segments"])
    lines = [f"{result['method']} on {result.get('dataset', '?')} by {result['by']}: theta "
             "relative to position 1 per segment, and its difference from the others "
             f"(simultaneous {result['level']:.0%} interval)"]
    for v in vals:
        s = result["segments"][v]
        lines.append(f"{result['by']} = {v}: {s['rows']:,} rows, {s['clicks'] or 0:,} clicks")
        lines.append(f"{'position':>9s}  {'theta':>7s}  {'lower':>7s}  {'upper':>7s}  "
                     f"{'diff':>7s}  {'d.lower':>7s}  {'d.upper':>7s}  {'p (Holm)':>8s}")

        def f(x, w=7):
            return f"{'-':>{w}s}" if x is None else f"{x:{w}.4f}"
        d = s["difference"]
        for i in range(k):
            lines.append(f"{i + 1:9d}  {f(s['theta'][i])}  {f(s['lower'][i])}  "
                         f"{f(s['upper'][i])}  {f(d['delta'][i])}  {f(d['lower'][i])}  "
                         f"{f(d['upper'][i])}  {f(d['p_holm'][i], 8)}")
    for note in result.get("notes", []):
        lines.append(f"note: {note}")
    lines.append(common.render_verdict(result))
    lines.append(f"{result['seconds']:.2f} s")
    return "\n".join(lines)


def render(result: dict) -> str:
    if result.get("identify"):
        return _render_identify(result)
    if "segments" in result:
        return _render_segments(result)
    k = result["positions"]
    head = ["position", "theta"]
    has_ci = "lower" in result
    has_truth = "true_theta" in result
    if has_ci:
        head += ["lower", "upper"]
    if has_truth:
        head.append("true")
    lines = [f"{result['method']} on {result.get('dataset', '?')}: theta relative to "
             f"position 1 ({result['rows_used']:,} rows)"]
    lines.append("  ".join(f"{h:>9s}" for h in head))

    def fmt(v):
        return "        -" if v is None or (isinstance(v, float) and not np.isfinite(v)) \
            else f"{v:9.4f}"
    for i in range(k):
        row = [f"{i + 1:9d}", fmt(result["theta"][i])]
        if has_ci:
            row += [fmt(result["lower"][i]), fmt(result["upper"][i])]
        if has_truth:
            row.append(fmt(result["true_theta"][i]))
        lines.append("  ".join(row))
    if has_ci and result.get("interval") == "information":
        lines.append(f"interval: {result['level']:.0%} Wald on the log scale, from the Fisher "
                     "information")
    elif has_ci:
        lines.append(f"interval: {result['level']:.0%} standard bootstrap on the log scale, "
                     f"{result['bootstrap']} replicates")
    if has_truth and result.get("max_abs_error") is not None:
        lines.append(f"max |theta - true| = {result['max_abs_error']:.4f}")
    for note in result.get("notes", []):
        lines.append(f"note: {note}")
    lines.append(common.render_verdict(result))
    lines.append(f"{result['seconds']:.2f} s")
    return "\n".join(lines)
