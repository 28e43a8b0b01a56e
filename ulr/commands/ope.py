"""``ope``: off-policy estimates of a target policy's value from a log with propensities."""

from __future__ import annotations

from ulr.commands.common import add_log_args, log_from_args, mapping_warnings, render_verdict
from ulr.errors import UlrError
from ulr.ope.crm import OBJECTIVES
from ulr.ope.evaluate import CLI_MEETS
from ulr.ope import registry
from ulr.ope.intervals import INTERVALS
from ulr.ope.reward_models import REWARD_MODELS
from ulr.quantity import Quantity
from ulr.text import plain

ORDER = 60


def register(sub):
    p = sub.add_parser(
        "ope", help="estimate a target policy's value from a logged log (IPS, SNIPS, DR)",
        description="Off-policy evaluation: estimate how a target policy would have done, from "
                    "a log of another (logging) policy with its propensities. The target is a "
                    "softmax of a linear click model fit on part of the log (default), of a "
                    "score column, or a column of target probabilities.")
    add_log_args(p)
    p.add_argument("--action", choices=["doc_id", "position"], default="doc_id",
                   help="what the policy chooses per query (default doc_id)")
    p.add_argument("--target", choices=["fitted", "column", "scores", "uniform", "table"],
                   default=None,
                   help="target policy (default: fitted; implied by --target-table, "
                        "--target-column or --score-column)")
    p.add_argument("--target-table", metavar="FILE",
                   help="CSV or Parquet with the target's probability of every action: one "
                        "row per (context, action), columns query_id, doc_id, probability "
                        "(each context's probabilities add up to 1); what DM and the DR "
                        "family need")
    p.add_argument("--target-column", metavar="COL",
                   help="column with the target probability of each row's action")
    p.add_argument("--score-column", metavar="COL",
                   help="column with a score of each row's action (softmax at --temperature)")
    p.add_argument("--temperature", type=float, default=1.0,
                   help="softmax temperature on standardized scores (0 = greedy; default 1)")
    p.add_argument("--fit-fraction", type=float, default=0.5,
                   help="share of impressions used to fit the target's scorer; the rest is "
                        "evaluated (0 = fit and evaluate on all rows; default 0.5)")
    needs = "; ".join(f"{', '.join(n for n, e in registry.REGISTRY.items() if need in e.needs)}"
                      f" need {registry.NEEDS[need]} ({CLI_MEETS[need]})"
                      for need in registry.NEEDS)
    p.add_argument("--estimators", default=None,
                   help=f"comma-separated, from {','.join(registry.choices())} (default "
                        f"{','.join(registry.defaults())}; sndr, switch-dr, dros: doubly "
                        "robust variants, switch-dr's tau and dros's lambda chosen by SLOPE; "
                        "auto: SLOPE picks the estimator and its hyperparameter among those "
                        "the input identifies, reported under 'selected'; balanced-ips also "
                        f"needs columns propensity_<logger>). {needs}; an estimator named "
                        "here whose need is unmet is refused")
    p.add_argument("--interval", choices=INTERVALS, default="bootstrap",
                   help="interval: percentile bootstrap (default), Student t, or the "
                        "finite-sample Hoeffding / empirical Bernstein bounds (linear "
                        "estimators only; they use the log's largest weight)")
    p.add_argument("--reward-model", choices=REWARD_MODELS, default="linear",
                   help="reward model of the model-based estimators (default linear)")
    p.add_argument("--reward-column", metavar="COL",
                   help="column with your own predicted reward of each row's action, used as "
                        "the reward model instead of fitting one")
    p.add_argument("--clip", type=float, default=None,
                   help="clipping threshold for clipped-ips (default: sqrt(rows) x mean weight, "
                        "Ionides 2008)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap draws (default 1000)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--folds", type=int, default=2,
                   help="cross-fitting folds of the DR reward model (1 = none; default 2)")
    p.add_argument("--seed", type=int, default=0)
    g = p.add_argument_group("policy learning (counterfactual risk minimization)")
    g.add_argument("--learn", choices=list(OBJECTIVES), default=None,
                   help="also learn a linear softmax policy maximizing this estimate (learned "
                        "on --fit-fraction of the impressions, 0.5 if that is 0; evaluated on "
                        "the rest)")
    g.add_argument("--l2", type=float, default=0.01, help="L2 penalty of the learned policy")
    g.add_argument("--variance-penalty", type=float, default=0.0,
                   help="POEM variance penalty lambda (default 0)")
    g.add_argument("--steps", type=int, default=200, help="gradient steps (default 200)")
    p.set_defaults(run=run)


def run(args) -> dict:
    from ulr.ope.crm import learn_policy
    from ulr.ope.evaluate import evaluate_log
    from ulr.ope.feedback import feedback_from_log
    from ulr.ope.settings import CRMSettings, OPESettings

    names = None if args.estimators is None else \
        [e.strip() for e in args.estimators.split(",") if e.strip()]
    if args.fit_fraction is not None and not 0 <= args.fit_fraction < 1:
        raise UlrError("--fit-fraction must lie in [0, 1).")  # the flag's own sentence
    if args.target == "column" and not args.target_column:
        raise UlrError("--target column needs --target-column COL.")
    if args.target == "scores" and not args.score_column:
        raise UlrError("--target scores needs --score-column COL.")
    if args.target == "table" and not args.target_table:
        raise UlrError("--target table needs --target-table FILE.")
    target = args.target or ("table" if args.target_table else
                             "column" if args.target_column else
                             "scores" if args.score_column else "fitted")
    # every option checked here, once, before the log is read
    options = OPESettings(action=args.action, target=target, target_column=args.target_column,
                          score_column=args.score_column, temperature=args.temperature,
                          fit_fraction=args.fit_fraction, estimators=names, clip=args.clip,
                          n_bootstrap=args.bootstrap, level=args.level, folds=args.folds,
                          seed=args.seed, interval=args.interval,
                          reward_model=args.reward_model, reward_column=args.reward_column)
    learning = None if not args.learn else CRMSettings(
        objective=args.learn, l2=args.l2, variance_penalty=args.variance_penalty,
        steps=args.steps, fit_fraction=options.fit_fraction or 0.5,
        n_bootstrap=options.n_bootstrap, level=options.level, seed=options.seed)
    log = log_from_args(args)
    if target == "fitted" and not log.info.features:
        raise UlrError("the log has no feature_* columns, so no scorer can be fit for the "
                       "target; supply target probabilities (--target-column) or scores "
                       "(--score-column).")
    mapping = mapping_warnings(log)  # weighed by every verdict below, the learned one too
    res = evaluate_log(log, options, target_table=args.target_table, mapping=mapping)
    out = res.to_dict()  # its verdict weighs the mapping warnings
    if res.settings.get("selected"):
        out["selected"] = res.settings["selected"]
    settings = out.pop("settings")
    out = {"dataset": log.info.name, "rows": settings["log_rows"],
           "evaluated_rows": settings["evaluated_rows"], **out,
           "policy": settings["policy"], "settings": settings}
    if args.learn:
        fb, _ = feedback_from_log(log, action=args.action)
        crm = learn_policy(fb, learning, mapping=mapping)
        out["learned"] = crm.to_dict()
    return out


INTERVAL_NAMES = {"bootstrap": "bootstrap intervals", "t": "Student t intervals",
                  "hoeffding": "Hoeffding bounds", "bernstein": "empirical Bernstein bounds"}


def _fmt_row(name, e, level):
    name = registry.label(name)  # in words: "clipped IPS", not the flag's "clipped-ips"
    if e is None:
        return f"  {name:<13} -"
    # click rates in %, rounded to the interval as in the verdict's sentence
    q = Quantity("rate", e["value"], e["lower"], e["upper"], level=level)
    return f"  {name:<13} {q.text()}"


def render(result: dict) -> str:
    level = result["settings"]["level"]
    lines = [f"Off-policy estimates on {result['evaluated_rows']:,} of {result['rows']:,} rows "
             f"({result['clicks']:,} clicks), {level:.0%} "
             f"{INTERVAL_NAMES[result['settings'].get('interval', 'bootstrap')]}:"]
    for name, e in result["estimates"].items():
        lines.append(_fmt_row(name, e, level))
    lines.append(_fmt_row("logging policy", result["logging"], level))
    for name, e in result.get("per_logger", {}).items():
        lines.append(_fmt_row(f"logger {name}", e, level)
                     + f"   ({e['rows']} rows, {e['clicks']} clicks, WIPS weight "
                       f"{e['wips_weight']:.3f})")
    lines.append(f"effective sample size {result['ess']:,.0f} ({result['ess_fraction']:.1%}), "
                 f"effective clicks {result['effective_clicks']:.1f}, "
                 f"clip {plain(result['clip'], sig=3)}")
    if "learned" in result:
        L = result["learned"]
        lines.append(f"Learned policy ({registry.label(L['objective'])} objective), on {L['holdout_rows']} "
                     "held-out rows:")
        for name, e in L["estimates"].items():
            lines.append(_fmt_row(name, e, level))
        lines.extend(f"warning (learned policy): {w}" for w in L["warnings"])
    if result.get("selected"):
        sel = result["selected"]
        lines.append(f"Chosen for you: {registry.label(sel['estimator'])}: {sel['reason']}")
        lines.extend(f"Left out: {registry.label(x['estimator'])}: {x['reason']}"
                     for x in sel.get("excluded", []))
    lines.extend(f"warning: {w}" for w in result["warnings"])
    lines.append(render_verdict(result))
    if "learned" in result:
        lines.append("learned policy " + render_verdict(result["learned"]))
    return "\n".join(lines)
