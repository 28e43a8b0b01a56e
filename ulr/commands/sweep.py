"""``sweep``: the severity sweep, IPW vs naive as position bias grows (docs/contract.md §2).

The command-line twin of the Severity sweep page: the same
:func:`ulr.rankers.severity_sweep` on simulated logs, the same per-eta summary.
"""

from __future__ import annotations

import time

from ulr import rankers
from ulr.commands.common import add_option, parse_floats, render_verdict
from ulr.errors import UlrError
from ulr.rankers.sweep import SWEEP_METRIC, SWEEP_RUNS
from ulr.text import MISSING

ORDER = 55


def register(sub):
    p = sub.add_parser(
        "sweep", help="severity sweep: IPW vs naive ranker as position bias grows",
        description="For every eta, simulate a click log with theta_k = (1/k)^eta, train the "
                    "naive and the IPW ranker on 70%% of its queries and evaluate both on the "
                    "held-out 30%% (Joachims et al. 2017, Figure 2).")
    p.add_argument("--etas", default="0,0.5,1,1.5,2", metavar="E1,E2,...",
                   help="severities eta, comma-separated (default 0,0.5,1,1.5,2)")
    p.add_argument("--queries", type=int, default=300)
    add_option(p, "--positions", retired=("--docs-per-query",), type=int, default=10,
               help="list length: documents shown per query (default 10)")
    p.add_argument("--sessions", type=int, default=20_000, help="sessions per simulated log")
    p.add_argument("--runs", type=int, default=SWEEP_RUNS,
                   help=f"independent simulations per eta (default {SWEEP_RUNS}, as on the "
                        "Severity sweep page: the verdict needs a spread over runs)")
    p.add_argument("--learner", choices=list(rankers.LEARNERS), default="linear")
    p.add_argument("--clip", type=float, default=None,
                   help="clip theta from below at C (IPW weights at most 1/C)")
    p.add_argument("--snips", action="store_true", help="self-normalize the IPW weights")
    add_option(p, "--propensity", retired=("--method",), metavar="METHOD",
               default=None,
               help="also train IPW with theta estimated from each log by this propensity "
                    "method (randomization, em, regression-em, dla, intervention-harvesting)")
    p.add_argument("--metric", default=SWEEP_METRIC,
                   help=f"metric of the printed summary (default {SWEEP_METRIC}; --json has all)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=run)


def run(args) -> dict:
    etas = parse_floats(args.etas, "--etas")
    for name in ("queries", "positions", "sessions", "runs"):
        if getattr(args, name) < 1:
            raise UlrError(f"--{name.replace('_', '-')} must be at least 1.")
    settings = rankers.SweepSettings(  # every option checked here, once
        queries=args.queries, positions=args.positions, sessions=args.sessions,
        runs=args.runs, learner=args.learner, clip=args.clip, normalize=args.snips,
        propensity=args.propensity or "estimated", seed=args.seed)
    estimator = (None if args.propensity is None
                 else rankers.propensity_estimator(args.propensity, seed=args.seed))
    t0 = time.perf_counter()
    res = rankers.severity_sweep(etas, settings, estimate_theta=estimator)
    df, metrics = res.rows, res.metrics
    if args.metric not in metrics:
        raise UlrError(f"--metric must be one of {', '.join(metrics)}, not {args.metric!r}.")
    summary = (df.groupby(["metric", "eta", "ranker"], sort=False)["value"].mean()
               .unstack("ranker").reset_index())
    intervals = rankers.sweep_summary(df)
    verdict = res.verdicts[args.metric]
    return {"etas": etas, "learner": args.learner, "method": args.propensity,
            "queries": args.queries, "sessions": args.sessions, "runs": args.runs,
            "seed": args.seed, "metric": args.metric,
            "summary": summary.to_dict("records"), "rows": df.to_dict("records"),
            "intervals": intervals.to_dict("records"), "verdict": verdict.to_dict(),
            "seconds": time.perf_counter() - t0}


def render(result: dict) -> str:
    rows = [r for r in result["summary"] if r["metric"] == result["metric"]]
    rankers_ = [k for k in rows[0] if k not in ("metric", "eta")]
    lines = [f"{result['metric']} by severity eta ({result['learner']} learner, "
             f"{result['queries']} queries, {result['sessions']:,} sessions, "
             f"{result['runs']} run(s), seed {result['seed']}; 30% held-out queries)",
             "eta\t" + "\t".join(rankers_)]
    for r in rows:
        lines.append(f"{r['eta']:g}\t" + "\t".join(
            MISSING if r[k] is None else f"{r[k]:.4f}" for k in rankers_))
    lines.append(render_verdict(result))
    lines.append(f"{result['seconds']:.1f} s")
    return "\n".join(lines)
