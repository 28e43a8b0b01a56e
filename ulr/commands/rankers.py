"""``rankers``: train the naive and the IPW ranker on clicks and evaluate both (docs/contract.md §2).

    python -m ulr rankers (--propensity METHOD | --theta t1,t2,...) [--test-input PATH]
                          (--input PATH [--map c=t ...] | --db DB --name DATASET)

Evaluation uses the relevance labels of ``--test-input`` (read with the same
``--map``), else of a seeded held-out 30% of the log's queries (those are not
trained on). Without labels the metrics are click-based IPW estimates and the
output says so (``estimated``).
"""

from __future__ import annotations

import time

from ulr import propensity, rankers, schema, store
from ulr.commands.common import add_log_args, log_from_args
from ulr.commands.common import mapping_from_args, mapping_warnings, parse_floats
from ulr.commands.common import readable, render_verdict
from ulr.errors import UlrError
from ulr.verdict import fmt_interval

ORDER = 40


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
    p.add_argument("--learner", choices=rankers.LEARNERS, default="linear",
                   help="linear pairwise (SVM-Rank style) or gradient boosting (default: linear)")
    p.add_argument("--clip", type=float, metavar="C",
                   help="clip theta from below at C (IPW weights at most 1/C)")
    p.add_argument("--snips", action="store_true", help="self-normalize the IPW weights")
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
    if args.theta:
        return rankers.check_theta(parse_floats(args.theta, "--theta")), "given"
    return rankers.propensity_theta(log, args.propensity, seed=args.seed), args.propensity


PAIRED_BOOTSTRAP = 1000


def run(args) -> dict:
    if args.bootstrap < 0 or args.bootstrap == 1:
        raise UlrError(f"--bootstrap must be 0 (none) or at least 2, got {args.bootstrap}.")
    t0 = time.perf_counter()
    log = log_from_args(args)
    theta, source = _theta(args, log)
    train = rankers.log_frame(log)
    test = None
    if args.test_input:
        test_log = store.open_file(args.test_input, mapping_from_args(args),
                                   skip_bad_rows=args.skip_bad_rows)
        test = rankers.log_frame(test_log)
    comp = rankers.train_and_evaluate(
        train, test, theta, learner=args.learner, clip=args.clip, normalize=args.snips,
        seed=args.seed, test_fraction=args.test_fraction, min_queries=args.min_test_queries)
    out = comp.metrics()
    out.update({
        "estimated": comp.estimated,
        "evaluation": ("click-based IPW estimates (no relevance labels)" if comp.estimated
                       else "relevance labels"),
        "test": args.test_input or f"held-out {args.test_fraction:g} of the queries",
        "learner": args.learner,
        "propensity": source,
        "theta": [float(t) for t in theta],
        "clip": args.clip,
        "snips": bool(args.snips),
        "pauc_max_fpr": comp.settings["max_fpr"],
        "pauc": "McClish-standardized",
        "local_auc_u": comp.settings["u"],
        "train_queries": comp.n_train_queries,
        "test_queries": comp.n_test_queries,
        "test_documents": comp.n_test_documents,
        "seed": args.seed,
    })
    if args.bootstrap:
        table = comp.table(n_bootstrap=args.bootstrap, seed=args.seed)
        out["intervals"] = {
            r: {m["metric"]: [m["lower"], m["upper"]] for m in
                table[table["ranker"] == r].to_dict("records")}
            for r in ("naive", "ipw")}
    n_paired = args.bootstrap or PAIRED_BOOTSTRAP  # paired differences always carry intervals
    out["paired"] = comp.paired(n_bootstrap=n_paired, seed=args.seed).to_dict("records")
    out["rank_identically"] = bool(comp.identical_order)
    out["verdict"] = comp.verdict(n_bootstrap=n_paired, seed=args.seed,
                                  mapping=mapping_warnings(log)).to_dict()
    out["seconds"] = time.perf_counter() - t0
    return out


def _fmt(v):
    return "—" if v is None else f"{v:.4f}"


def render(result: dict) -> str:
    lines = []
    if result["estimated"]:
        lines.append("note: no relevance labels; the metrics are click-based IPW estimates.")
    lines.append(f"learner {result['learner']}, theta from {result['propensity']} "
                 f"({readable(result['theta'])}), "
                 f"evaluated on {result['test']} ({result['test_queries']} queries)")
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
    lines.append("arp: lower is better; pauc: McClish-standardized at max FPR "
                 f"{result['pauc_max_fpr']:g}; local_auc: top {result['local_auc_u']:g}.")
    lines.append(render_verdict(result))
    return "\n".join(lines)
