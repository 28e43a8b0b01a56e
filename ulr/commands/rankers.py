"""``rankers``: train the naive and the IPW ranker on clicks and evaluate both (docs/contract.md §2).

    python -m ulr rankers (--propensity METHOD | --theta t1,t2,...) [--test-input PATH]
                          [--learners linear,gbdt] [--test {randomization,bootstrap,t}]
                          [--correction {holm,bh,none}] [--table-csv PATH]
                          (--input PATH [--map c=t ...] | --db DB --name DATASET)

With ``--learners`` every learner trains a naive and an IPW ranker (up to four
systems); every pair of systems is compared on every metric with a paired test,
p-values are corrected per metric (Holm by default), Tukey's HSD is added for
more than two systems, and a significance table (one row per system, letters of
the systems each beats) is printed and, with ``--table-csv``, written as CSV.

Evaluation uses the relevance labels of ``--test-input`` (read with the same
``--map``), else of a seeded held-out 30% of the log's queries (those are not
trained on). Without labels the metrics are click-based IPW estimates and the
output says so (``estimated``).
"""

from __future__ import annotations

import time

import numpy as np

from ulr import propensity, rankers, validate

from ulr.data import ingest
from ulr.commands.common import add_log_args, log_from_args
from ulr.commands.common import mapping_from_args, parse_floats
from ulr.commands.common import readable, render_verdict
from ulr.errors import UlrError
from ulr.rankers import significance
from ulr.rankers.systems import compare_learners, parse_learners, significance_wide
from ulr.verdict import fmt_interval

ORDER = 40
PAIR_RESAMPLES = rankers.PAIR_RESAMPLES


def register(sub):
    p = sub.add_parser(
        "rankers", help="naive vs IPW ranker trained on clicks, evaluated on relevance",
        description="Train a ranker on the clicks twice, naively and with inverse propensity "
                    "weights, and evaluate both (ARP, DCG, nDCG@10, AUC, partial and local AUC).")
    add_log_args(p)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--propensity", metavar="METHOD", choices=propensity.METHODS,
                     help=f"estimate theta from the log: {', '.join(propensity.METHODS)}")
    src.add_argument("--theta", metavar="T1,T2,...",
                     help="theta per position, comma-separated (e.g. from an eye-tracking study)")
    p.add_argument("--test-input", metavar="PATH",
                   help="evaluation log (CSV/Parquet; same --map); default: held-out queries")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--learner", choices=rankers.LEARNERS, default="linear",
                       help="linear pairwise (SVM-Rank style) or gradient boosting "
                            "(default: linear)")
    which.add_argument("--learners", metavar="L1,L2",
                       help="several learners, comma-separated (e.g. linear,gbdt): the naive "
                            "and IPW ranker of each are compared pairwise")
    p.add_argument("--test", dest="sig_test", choices=significance.TESTS,
                   default="randomization",
                   help="paired test of each pair of systems (default: randomization, Fisher's "
                        "sign-flip test: no normality assumption, seeded)")
    p.add_argument("--correction", choices=significance.CORRECTIONS, default="holm",
                   help="multiple-comparison correction over the pairs of each metric: Holm "
                        "(family-wise, default), bh (Benjamini-Hochberg, false discovery "
                        "rate) or none")
    p.add_argument("--resamples", type=int, default=PAIR_RESAMPLES, metavar="N",
                   help=f"resamples of the pairwise tests (default {PAIR_RESAMPLES})")
    p.add_argument("--table-csv", metavar="PATH",
                   help="also write the significance table (systems by metrics) as CSV")
    p.add_argument("--clip", type=float, metavar="C",
                   help="clip theta from below at C (IPW weights at most 1/C)")
    p.add_argument("--snips", action="store_true", help="self-normalize the IPW weights")
    p.add_argument("--by", metavar="COLUMN",
                   help="IPW with theta by segment: --propensity's theta estimated on each "
                        "value of COLUMN (a column kept at load, 2 to 12 values), each click "
                        "weighted by its own segment's theta")
    p.add_argument("--debias", choices=("ipw", "affine"), default="ipw",
                   help="how the corrected ranker removes the bias: ipw (divide clicks by "
                        "theta, default) or affine ((click - beta_k) / alpha_k with trust-em's "
                        "alpha and beta: removes trust bias too; gbdt learner, needs "
                        "--propensity trust-em). --correction names the multiple-comparison "
                        "correction")
    p.add_argument("--test-fraction", type=float, default=rankers.TEST_FRACTION,
                   help="share of queries held out when there is no --test-input (default 0.3)")
    p.add_argument("--bootstrap", type=int, default=0, metavar="B",
                   help="add per-query bootstrap intervals and paired tests with B replicates")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-test-queries", type=int, default=rankers.MIN_TEST_QUERIES, metavar="N",
                   help="refuse to compare on fewer test queries (default "
                        f"{rankers.MIN_TEST_QUERIES}: what a paired test needs to detect a "
                        "medium per-query difference with 80%% power; 0: no check)")
    p.set_defaults(run=run)


def _theta(args, log):
    if args.debias == "affine":
        from ulr.propensity.registry import flagged, spec
        if not spec(args.propensity).trust:  # the records that give alpha and beta
            raise UlrError("--debias affine takes alpha and beta from --propensity "
                           f"{' or '.join(flagged('trust'))}.")
        res = propensity.estimate(log, method=args.propensity, seed=args.seed,
                                  weigh_facts=False)
        alpha, beta = np.asarray(res.extras["alpha"]), np.asarray(res.extras["beta"])
        args._affine = (alpha, beta)
        return rankers.check_theta(res.theta), args.propensity
    if args.theta:
        return rankers.check_theta(parse_floats(args.theta, "--theta")), "given"
    return rankers.propensity_theta(log, args.propensity, seed=args.seed), args.propensity


PAIRED_BOOTSTRAP = rankers.N_BOOTSTRAP


def _check_args(args) -> tuple[str, ...]:
    validate.n_bootstrap(args.bootstrap, option="--bootstrap")
    if args.resamples < 1:
        raise UlrError(f"--resamples must be at least 1, got {args.resamples}.")
    try:
        return parse_learners(args.learners) if args.learners else (args.learner,)
    except UlrError as exc:
        raise UlrError(f"--{exc}") from None


def run(args) -> dict:
    learners = _check_args(args)
    # the paired differences always carry intervals; every option checked here, once
    settings = rankers.RankerSettings(
        clip=args.clip, normalize=args.snips, seed=args.seed, test_fraction=args.test_fraction,
        min_queries=args.min_test_queries, n_bootstrap=args.bootstrap or PAIRED_BOOTSTRAP)
    t0 = time.perf_counter()
    log = log_from_args(args)
    theta_by = None
    if args.by:
        if not args.propensity or args.debias == "affine":
            raise UlrError("--by estimates theta per segment with --propensity METHOD (IPW); "
                           "it does not go with --theta or --debias affine.")
        from ulr.propensity.segments import by_segment
        seg = by_segment(log, method=args.propensity, column=args.by, seed=args.seed)
        theta_by = {v: seg.theta[v] for v in seg.values}
        bad = [v for v, t in theta_by.items() if not np.all(np.isfinite(t) & (t > 0))]
        if bad:
            raise UlrError(f"{args.propensity} has no usable theta at every position of the "
                           f"{args.by} segment {bad[0]!r}; choose another method.")
        source = f"{args.propensity} by {args.by}"
        train = rankers.log_frame(log, extra=[seg.column])
        train, theta = rankers.segment_positions(train, seg.column, theta_by)
    else:
        theta, source = _theta(args, log)
        train = rankers.log_frame(log)
    test = None
    if args.test_input:
        test_log = ingest.open_file(args.test_input, mapping_from_args(args),
                                   skip_bad_rows=args.skip_bad_rows)
        test = rankers.log_frame(test_log, extra=[args.by] if args.by else [])
        if args.by:
            test, _ = rankers.segment_positions(test, args.by, theta_by)
    systems = compare_learners(
        train, test, theta, settings, learners=learners, test=args.sig_test,
        correction=args.correction, n_resamples=args.resamples,
        **rankers.weighed_facts(log, propensity=source),
        **({"affine": args._affine} if args.debias == "affine" else {}))
    comp = systems.first
    out = comp.metrics() if len(learners) == 1 else {"learners": list(learners)}
    out.update({
        "estimated": comp.estimated,
        "evaluation": ("click-based IPW estimates (no relevance labels)" if comp.estimated
                       else "relevance labels"),
        "test": args.test_input or f"held-out {args.test_fraction:g} of the queries",
        "learner": ",".join(learners),
        "propensity": source,
        "theta": [float(t) for t in theta],
        "clip": args.clip,
        "snips": bool(args.snips),
        **({"by": args.by, "theta_by": {v: [float(x) for x in t] for v, t in theta_by.items()}}
           if theta_by else {}),
        **({"debias": "affine", "alpha": [float(a) for a in args._affine[0]],
            "beta": [float(b) for b in args._affine[1]]} if args.debias == "affine" else {}),
        "pauc_max_fpr": comp.settings["max_fpr"],
        "pauc": "McClish-standardized",
        "local_auc_u": comp.settings["u"],
        "train_queries": comp.n_train_queries,
        "test_queries": comp.n_test_queries,
        "scored_test_queries": comp.n_compared,
        "evidence": comp.evidence,
        "test_documents": comp.n_test_documents,
        "seed": args.seed,
    })
    if len(learners) == 1:
        _single(out, comp, args, settings.n_bootstrap)
    out.update(_systems(systems, args, multi=len(learners) > 1))
    out["seconds"] = time.perf_counter() - t0
    return out


def _single(out: dict, comp, args, n_paired: int) -> None:
    """The keys of the one-learner comparison (naive vs IPW), unchanged."""
    if args.bootstrap:
        table = comp.table(n_bootstrap=args.bootstrap, seed=args.seed)
        out["intervals"] = {
            r: {m["metric"]: [m["lower"], m["upper"]] for m in
                table[table["ranker"] == r].to_dict("records")}
            for r in ("naive", "ipw")}
    out["paired"] = comp.paired(n_bootstrap=n_paired, seed=args.seed).to_dict("records")
    out["rank_identically"] = bool(comp.identical_order)
    out["verdict"] = comp.verdict.to_dict()  # built with n_paired replicates


def _systems(systems, args, *, multi: bool) -> dict:
    """Every pair of systems, corrected p-values, Tukey's HSD and the significance table."""
    pairs = systems.pair_table  # several learners: the pairs their verdict rests on
    if pairs is None:
        pairs = systems.pairs(test=args.sig_test, correction=args.correction,
                              n_resamples=args.resamples, seed=args.seed)
    long = systems.significance(pairs)
    wide = significance_wide(long)
    if args.table_csv:
        from ulr.export import safe_csv_bytes
        with open(args.table_csv, "wb") as f:
            f.write(safe_csv_bytes(wide))
    out = {"systems": list(systems.systems), "significance_test": args.sig_test,
           "correction": args.correction, "resamples": args.resamples,
           "pairs": pairs.to_dict("records"), "significance": long.to_dict("records"),
           "significance_table": wide.to_dict("records")}
    if len(systems.systems) > 2:
        out["tukey"] = systems.tukey().to_dict("records")
    if multi:
        out["metrics"] = {s: {m: float(r[m].value) for m in systems.metric_names()}
                          for s, r in systems.systems.items()}
        out["rank_identically"] = {lr: bool(c.identical_order)
                                   for lr, c in systems.comparisons.items()}
        out["verdict"] = systems.verdict.to_dict()
    return out


def _fmt(v):
    return "—" if v is None else f"{v:.4f}"


def render(result: dict) -> str:
    lines = []
    if result["estimated"]:
        lines.append("note: no relevance labels; the metrics are click-based IPW estimates.")
    lines.append(f"learner {result['learner']}, theta from {result['propensity']} "
                 f"({readable(result['theta'])}), "
                 f"evaluated on {result['test']} ({result['test_queries']} queries, "
                 f"{result.get('scored_test_queries', result['test_queries'])} of them scored)")
    if "naive" in result:
        lines += _render_pair(result)
    lines += _render_systems(result)
    lines.append("arp: lower is better; pauc: McClish-standardized at max FPR "
                 f"{result['pauc_max_fpr']:g}; local_auc: top {result['local_auc_u']:g}.")
    lines.append(render_verdict(result))
    return "\n".join(lines)


def _render_pair(result: dict) -> list[str]:
    lines = []
    paired = {p["metric"]: p for p in result.get("paired", [])}
    head = f"{'metric':<10s} {'naive':>9s} {'ipw':>9s}"
    if paired:
        head += f" {'ipw-naive [95% interval]':>30s} {'p':>7s}"
    lines.append(head)
    for m, v in result["naive"].items():
        row = f"{m:<10s} {_fmt(v):>9s} {_fmt(result['ipw'][m]):>9s}"
        if m in paired:
            d = paired[m]
            iv = fmt_interval(d["delta"], d["lower"], d["upper"], sign=True)
            row += f" {iv:>30s} {d['p_value']:>7.3f}"
        lines.append(row)
    return lines


def _p(p) -> str:
    return "n/a" if p is None else "<0.001" if p < 0.001 else f"{p:.3f}"


def _render_systems(result: dict) -> list[str]:
    """The significance table, then (several systems) each pair on each metric."""
    table = result["significance_table"]
    metrics = [k for k in table[0] if k not in ("letter", "system")]
    lines = ["", f"significance ({result['significance_test']} test, "
                 f"{result['correction']} correction per metric; superscripts name the "
                 "systems a value is significantly better than):",
             f"{'':<16s}" + "".join(f"{m:>12s}" for m in metrics)]
    for r in table:
        lines.append(f"{r['letter'] + ' ' + r['system']:<16s}"
                     + "".join(f"{r[m]:>12s}" for m in metrics))
    if len(result["systems"]) > 2:
        lines.append("")
        lines.append(f"{'metric':<10s} {'b - a':<26s} {'delta [95% interval]':>30s} "
                     f"{'p':>7s} {'p corr':>7s}")
        for d in result["pairs"]:
            iv = fmt_interval(d["delta"], d["lower"], d["upper"], sign=True)
            lines.append(f"{d['metric']:<10s} {d['b'] + ' - ' + d['a']:<26s} {iv:>30s} "
                         f"{_p(d['p_value']):>7s} {_p(d['p_adjusted']):>7s}"
                         + (" *" if d["separated"] else ""))
    return lines
