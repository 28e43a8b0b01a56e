"""``study``: does debiasing help on my data? (docs/contract.md, "The debiasing study").

    python -m ulr study --labels FILE [--test-labels FILE] [--click-model {pbm,...}]
                        [--eta E] [--sessions N] [--runs R] [--propensity {true,em,...}]
                        [--learners L1,L2,...] [--baseline NAME] [--export DIR] [--json]

The semi-synthetic study of Joachims et al. (2017) on the analyst's labelled queries
(LETOR / SVMlight, CSV or Parquet): a production ranker trained on 1% of the training
queries shows the lists, clicks are simulated on the true grades, every learner trains on
the clicks and is scored on the held-out grades with intervals over runs and queries.
"""

from __future__ import annotations

from ulr.commands.common import add_option, render_verdict
from ulr.errors import UlrError

ORDER = 56


def register(sub):
    from ulr.study import learners as L
    from ulr.study import simulate as S
    p = sub.add_parser(
        "study", help="does debiasing help on my labelled queries? (Joachims et al. 2017)",
        description="Simulate clicks on your labelled queries (a production ranker trained on "
                    "1%% of the training queries shows the lists), train every learner on the "
                    "clicks and score them on held-out true grades, with intervals over runs "
                    "and test queries and a paired comparison with a baseline.")
    p.add_argument("--labels", required=True, metavar="FILE",
                   help="labelled queries: LETOR/SVMlight text (grade qid:Q 1:v ...), or CSV/"
                        "Parquet with query_id, doc_id, relevance, feature_*")
    p.add_argument("--test-labels", metavar="FILE",
                   help="held-out labelled queries (default: a seeded 30%% of --labels)")
    p.add_argument("--test-fraction", type=float, default=0.3,
                   help="share of queries held out without --test-labels (default 0.3)")
    p.add_argument("--click-model", choices=S.CLICK_MODELS, default="pbm",
                   help="user model of the simulated clicks (default pbm)")
    p.add_argument("--eta", type=float, default=1.0,
                   help="severity of position bias, theta_k = (1/k)^eta (default 1)")
    p.add_argument("--sessions", type=int, default=10_000, help="sessions per run")
    p.add_argument("--runs", type=int, default=3,
                   help="independent simulations (default 3: intervals hold their spread)")
    p.add_argument("--propensity", default="true", metavar="METHOD",
                   help="theta for the IPW learners: true (the simulated one), or estimated "
                        "from each run's clicks by em, randomization, regression-em, dla, "
                        "intervention-harvesting")
    p.add_argument("--learners", default=",".join(L.DEFAULT_LEARNERS), metavar="L1,L2",
                   help=f"comma-separated, from: {', '.join(L.LEARNERS)} (default "
                        f"{','.join(L.DEFAULT_LEARNERS)})")
    p.add_argument("--baseline", default=L.BASELINE,
                   help=f"learner every other is compared with (default {L.BASELINE})")
    p.add_argument("--production-share", type=float, default=S.PRODUCTION_SHARE,
                   help="share of training queries the production ranker learns from "
                        "(default 0.01)")
    p.add_argument("--production-column", metavar="FEATURE",
                   help="rank the shown lists by this feature (your production score, e.g. "
                        "feature_137) instead of a ranker trained on --production-share")
    add_option(p, "--positions", retired=("--list-size",), dest="list_size", type=int,
               default=S.LIST_SIZE, help="list length: results shown per session (default 10)")
    p.add_argument("--noise", type=float, default=S.NOISE,
                   help="per-session noise of the shown order, in standard deviations of the "
                        "production scores (default 0.5)")
    p.add_argument("--randomized-fraction", type=float, default=S.RANDOMIZED,
                   help="share of sessions shown in random order (default 0.1)")
    p.add_argument("--click-noise", type=float, default=S.EPS,
                   help="probability of clicking an examined irrelevant result (default 0.05)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="B",
                   help="replicates of the intervals (default 1000)")
    p.add_argument("--level", type=float, default=0.95)
    p.add_argument("--sweep", metavar="eta=E1,E2,... | sessions=N1,N2,...",
                   help="run the study once per value of eta or of the sessions per run (the "
                        "same seeds): how much bias, or traffic, before IPW pays off? The "
                        "result's top level is the last value's study, plus `sweep`")
    p.add_argument("--export", metavar="DIR",
                   help="also write the first run's click log for LightGBM (lightgbm.svm with "
                        ".query and .position), XGBoost (xgboost.svm) and as clicks.parquet")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=run)


def run(args) -> dict:
    from ulr import validate
    from ulr.study import read_labels, run_study
    for name, flag in (("sessions", "--sessions"), ("runs", "--runs"),
                       ("list_size", "--positions")):
        if getattr(args, name) < 1:
            raise UlrError(f"{flag} must be at least 1.")
    n_bootstrap = validate.n_bootstrap(args.bootstrap, required=True, option="--bootstrap")
    level = validate.level(args.level, option="--level")
    seed = validate.seed(args.seed, option="--seed")
    sweep = _parse_sweep(args.sweep) if args.sweep else None
    data = read_labels(args.labels)
    test = read_labels(args.test_labels) if args.test_labels else None
    options = dict(test=test, learners=args.learners, baseline=args.baseline,
                   model=args.click_model, eta=args.eta, sessions=args.sessions,
                   runs=args.runs, propensity=args.propensity,
                   production_share=args.production_share,
                   production_feature=args.production_column, positions=args.list_size,
                   noise=args.noise, randomized_fraction=args.randomized_fraction,
                   eps=args.click_noise, test_fraction=args.test_fraction, level=level,
                   n_bootstrap=n_bootstrap, seed=seed, keep_log=bool(args.export))
    points = []
    if sweep is not None:
        from ulr.study.run import study_sweep
        over, values = sweep
        options.pop(over)
        for v, r in study_sweep(data, over=over, values=values, **options):
            points.append(_point(over, v, r))
        res = r
    else:
        res = run_study(data, **options)
    out = res.to_dict()
    if points:
        out["sweep"] = points
    if args.export:
        from ulr.study.export import export_click_log
        log, train = res.log
        out["export"] = export_click_log(log, train, args.export)
    return out


def _parse_sweep(text: str):
    from ulr.study.run import SWEEPS
    over, _, values = text.partition("=")
    over = over.strip()
    if over not in SWEEPS or not values.strip():
        raise UlrError("--sweep is written eta=E1,E2,... or sessions=N1,N2,...; "
                       f"got {text!r}.")
    try:
        vals = [SWEEPS[over](float(v)) for v in values.split(",") if v.strip()]
    except ValueError:
        raise UlrError(f"--sweep {over} values must be numbers separated by commas.") from None
    if over == "sessions" and min(vals) < 1:
        raise UlrError("--sweep sessions values must be at least 1.")
    if over == "eta" and min(vals) < 0:
        raise UlrError("--sweep eta values must be 0 or more.")
    return over, vals


def _point(over: str, value, res) -> dict:
    """One point of a sweep: the primary metric's values and comparisons, and the verdict."""
    m = res.settings["primary"]
    return {over: value,
            "learners": {n: r[m].to_dict() for n, r in res.learners.items() if m in r},
            "comparisons": [c.to_dict() for c in res.comparisons if c.metric == m],
            "verdict": res.verdict.to_dict()}


def render(result: dict) -> str:
    from ulr.verdict import fmt_interval
    s = result["settings"]
    lines = [f"{result['queries']:,} queries, {result['documents']:,} documents, "
             f"{result['features']} features; {s['model']} clicks, eta {s['eta']:g}, "
             f"{s['sessions']:,} sessions x {s['runs']} run(s); theta {s['propensity']}",
             "theta (true):      " + " ".join(f"{t:.3f}" for t in result["theta_true"]),
             "theta (used):      " + " ".join(f"{t:.3f}" for t in result["theta"])]
    metric = s["primary"]
    lines.append(f"{metric} ({s['level']:.0%} interval over runs and test queries):")
    for name, res in result["learners"].items():
        iv = res.get(metric)
        if iv:
            lines.append(f"  {name:<18} {fmt_interval(iv['value'], iv['lower'], iv['upper'])}")
    lines.append(f"against {s['baseline']}:")
    for c in result["comparisons"]:
        if c["metric"] == metric:
            lines.append(f"  {c['learner']:<18} {c['verdict']['takeaway']}")
    lines.append(render_verdict(result))
    for p in result.get("sweep", []):
        over = "eta" if "eta" in p else "sessions"
        lines.append(f"sweep {over} = {p[over]:g}: {p['verdict']['takeaway']}")
    if result.get("export"):
        lines.append("exported: " + ", ".join(result["export"]["files"]))
    lines.append(f"{result['seconds']:.1f} s")
    return "\n".join(lines)
