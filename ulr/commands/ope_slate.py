"""``ope-slate``: off-policy estimates of a target ranking from a log of rankings."""

from __future__ import annotations

from ulr.commands.common import add_log_args, log_from_args, mapping_warnings, render_verdict
from ulr.errors import UlrError

ORDER = 62


def register(sub):
    p = sub.add_parser(
        "ope-slate",
        help="estimate a target ranking's clicks per slate (standard, PBM, cascade IPS)",
        description="Slate off-policy evaluation: the expected clicks per ranking of a target "
                    "ranking policy (a Plackett-Luce softmax of a score column, or of a linear "
                    "click model fit on part of the sessions), from a log with per-slot "
                    "propensities and sessions. sips = standard IPS over whole slates (no "
                    "click-model assumption); iips = independent IPS (position-based model); "
                    "rips = reward-interaction IPS (cascade); cascade-dr = Cascade-DR (cascade, "
                    "with a per-position click model: unbiased like rips, usually narrower).")
    add_log_args(p)
    p.add_argument("--score-column", metavar="COL", help="column with a score per row's document")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--fit-fraction", type=float, default=0.5,
                   help="share of sessions used to fit the target's click model (default 0.5)")
    p.add_argument("--estimators", default="sips,iips,rips",
                   help="comma-separated, from sips,iips,rips,cascade-dr (default sips,iips,rips)")
    p.add_argument("--level", type=float, default=0.95)
    p.add_argument("--logging-prefix", choices=["sequential", "product"], default="sequential",
                   help="how the logger's probability of a top-k prefix follows from the "
                        "per-slot propensities: drawn slot by slot without replacement "
                        "(default; exact for uniformly random rankings) or their product")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=run)


def run(args) -> dict:
    from ulr.ope.slate import slate_from_log

    if args.temperature <= 0:
        raise UlrError("--temperature must be positive.")
    if args.score_column is None and not 0 < args.fit_fraction < 1:
        raise UlrError("--fit-fraction must lie strictly between 0 and 1.")
    names = [e.strip() for e in args.estimators.split(",") if e.strip()]
    log = log_from_args(args)
    if args.score_column is None and not log.info.features:
        raise UlrError("the log has no feature_* columns, so no click model can be fit for the "
                       "target; give --score-column COL.")
    out = slate_from_log(log, score_column=args.score_column, temperature=args.temperature,
                         fit_fraction=args.fit_fraction, estimators=names, level=args.level,
                         logging_prefix=args.logging_prefix, seed=args.seed,
                         mapping=mapping_warnings(log))
    est = {r.estimator: {"value": r.value, "lower": r.lower, "upper": r.upper, "se": r.se,
                         "assumption": r.assumption} for r in out.table.itertuples()}
    return {"dataset": log.info.name, "estimates": est, "sessions": out.sessions,
            "dropped_sessions": out.dropped_sessions, "slots": out.slots,
            "clicks": out.clicks, "target": out.target, "level": args.level,
            "notes": list(out.notes), "verdict": out.verdict.to_dict()}


def render(result: dict) -> str:
    lines = [f"Slate estimates (clicks per ranking) on {result['sessions']} sessions of "
             f"{result['slots']} slots ({result['clicks']} clicks), {result['level']:.0%} "
             "intervals:"]
    for name, e in result["estimates"].items():
        lines.append(f"  {name:<10} {e['value']:.5f}   [{e['lower']:.5f}, {e['upper']:.5f}]   "
                     f"{e['assumption']}")
    lines.extend(f"note: {n}" for n in result["notes"])
    lines.append(render_verdict(result))
    return "\n".join(lines)
