"""``clickmodels``: which user model fits the log, compared on held-out sessions.

    python -m ulr clickmodels --input log.csv --models pbm,cascade,dcm,dbn,sdbn,ubm \\
        --test-fraction 0.2 --bootstrap 50 --seed 0 [--prior auto|none|A,B]
        [--parameter-intervals] [--json]

One aggregate query (DuckDB, or Spark with ``--engine spark``) returns the
session matrices; every model is fitted on the training sessions and scored on
the held-out ones (docs/clickmodels.md, docs/contract.md §2).
"""

from __future__ import annotations

import time

import numpy as np

from ulr import validate
from ulr.commands import common
from ulr.errors import UlrError

ORDER = 31
DEFAULT_MODELS = "pbm,cascade,dcm,dbn,sdbn,ubm"


def register(sub):
    p = sub.add_parser("clickmodels", help="fit click models (PBM, cascade, DCM, DBN, SDBN, "
                                           "UBM, trust) and compare them on held-out sessions",
                       description="Which user model fits the log: click models fitted on "
                                   "training sessions, compared by held-out log-likelihood.")
    p.add_argument("--models", default=DEFAULT_MODELS, metavar="M1,M2,...",
                   help=f"comma-separated models (default {DEFAULT_MODELS}; also trust: the "
                        "trust-bias model, docs/clickmodels.md)")
    p.add_argument("--test-fraction", type=float, default=0.2, metavar="F",
                   help="share of sessions held out, by a hash of the session id (default 0.2)")
    p.add_argument("--bootstrap", type=int, default=None, metavar="B",
                   help="Poisson-bootstrap replicates over held-out sessions for the gaps' "
                        "intervals (default: the page's, "
                        "ulr.clickmodels.evaluate.DEFAULT_BOOTSTRAP; 0: none)")
    p.add_argument("--parameter-intervals", action="store_true",
                   help="also refit every model on B reweighted training logs for the "
                        "parameters' intervals (B times the fitting time)")
    p.add_argument("--prior", default="auto", metavar="auto|none|A,B",
                   help="Beta pseudo-counts added to every probability's expected counts: "
                        "auto (default) centres them on the pooled estimate with a strength "
                        "chosen by empirical Bayes on the training sessions; A,B adds A "
                        "successes in A+B trials (1,1: PyClick's); none: maximum likelihood")
    p.add_argument("--positions", type=int, metavar="K", help="use ranks 1..K only")
    p.add_argument("--seed", type=int, default=0)
    common.add_log_args(p)
    e = p.add_argument_group("engine (aggregate a path, folder, glob or table where it lives)")
    e.add_argument("--engine", choices=("duckdb", "spark"))
    e.add_argument("--table", metavar="NAME", help="with --engine spark: a table of Spark's "
                                                  "catalog")
    e.add_argument("--spark-master", default="local[2]", metavar="URL")
    e.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE")
    p.set_defaults(run=run)


def _scan(args):
    from ulr.data.scan import scan_of
    if args.engine or args.table:
        from ulr.commands.propensity import _engine_scan
        return _engine_scan(args)
    return scan_of(common.log_from_args(args))


def run(args) -> dict:
    from ulr.clickmodels import evaluate, parse_models, sessions
    from ulr.clickmodels import prior as priors
    t0 = time.perf_counter()
    models = parse_models(args.models)
    if args.bootstrap is None:
        args.bootstrap = evaluate.DEFAULT_BOOTSTRAP
    validate.n_bootstrap(args.bootstrap, option="--bootstrap")
    prior = priors.parse(args.prior)
    if not 0.0 < args.test_fraction < 1.0:
        raise UlrError(f"--test-fraction must lie strictly between 0 and 1, "
                       f"got {args.test_fraction}.")
    scan = _scan(args)
    sessions.require_sessions(scan, models)
    S = sessions.collect(scan, test_fraction=args.test_fraction, seed=args.seed,
                         positions=args.positions)
    t1 = time.perf_counter()
    res = evaluate.compare(S, models, n_bootstrap=args.bootstrap, seed=args.seed,
                           test_fraction=args.test_fraction, prior=prior,
                           refit_intervals=args.parameter_intervals)
    out = res.to_dict()
    out["dataset"] = scan.name
    out["sessions"] = S.total
    out["patterns"] = S.sessions
    out["ranks"] = S.ranks
    out["seconds"] = time.perf_counter() - t0
    out["aggregate_seconds"] = t1 - t0
    return out


def render(result: dict) -> str:
    v = result["verdict"]
    lines = [f"{v['takeaway']} [{v['level']}]",
             f"on {result.get('dataset', '?')}: {result['train_sessions']:,} training, "
             f"{result['test_sessions']:,} held-out sessions",
             f"{'model':>8s}  {'LL/session':>10s}  {'perplexity':>10s}  {'cond. ppl':>9s}  "
             f"{'gap':>8s}  interval"]
    for name, m in result["models"].items():
        gi = m["gap_interval"]
        iv = f"[{gi[0]:.4f}, {gi[1]:.4f}]" if gi else ("best" if name == result["best"] else "-")
        lines.append(f"{name:>8s}  {m['log_likelihood']:10.4f}  {m['perplexity']:10.4f}  "
                     f"{m['conditional_perplexity']:9.4f}  {m['gap']:8.4f}  {iv}")
    best = result["models"][result["best"]]
    exam = np.asarray(best["examination"], dtype=float)
    lines.append(f"{result['best']} examination by rank: "
                 + " ".join(f"{x:.3f}" for x in exam))
    lines.append(f"{'model':>8s}  {'pair seen':>9s}  {'impressions':>11s}  {'LL/impr.':>9s}  "
                 f"{'perplexity':>10s}   (held out, by the pair's training sessions)")
    for name, m in result["models"].items():
        for label, ll in m["log_likelihood_by_frequency"].items():
            if ll["impressions"]:
                pp = m["perplexity_by_frequency"][label]["value"]
                lines.append(f"{name:>8s}  {label:>9s}  {ll['impressions']:11,d}  "
                             f"{ll['value']:9.4f}  {pp:10.4f}")
    lines.append(f"prior: {result['settings']['prior']['text']}")
    lines.append(f"basis: {v['basis']}")
    lines.append(f"{result['seconds']:.2f} s")
    return "\n".join(lines)
