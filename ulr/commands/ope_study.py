"""``ope-study``: off-policy estimators over repeated simulated logs with known truth, or
policy learning (CRM) on a simulated log."""

from __future__ import annotations

from ulr import validate
from ulr.commands.common import add_option
from ulr.errors import UlrError
from ulr.ope import registry
from ulr.ope.crm import OBJECTIVES

ORDER = 61


def register(sub):
    p = sub.add_parser(
        "ope-study", help="bias, variance and coverage of OPE estimators on simulated logs",
        description="Draw many logs of a simulated logged-bandit world whose true policy "
                    "values are known and report every estimator's bias, standard deviation, "
                    "RMSE and (with --intervals) interval coverage. With --learn, learn a "
                    "policy by counterfactual risk minimization on one simulated log instead.")
    p.add_argument("--contexts", type=int, default=20)
    p.add_argument("--actions", type=int, default=10, help="documents per context")
    # dest: the names of the study's settings in the JSON (unchanged by the flags' rename)
    add_option(p, "--n-features", retired=("--features",), dest="features", type=int,
               default=5, help="synthetic context features (default 5)")
    add_option(p, "--positions", retired=("--slots",), dest="slots", type=int, default=1,
               help="list length: slots per logged list (default 1)")
    p.add_argument("--rows", type=int, default=1000, help="rows per log")
    add_option(p, "--runs", retired=("--draws",), type=int, default=200,
               help="repeated logs, one simulation run each")
    p.add_argument("--logging", choices=["uniform", "softmax"], default="uniform")
    p.add_argument("--logging-temperature", type=float, default=1.0)
    p.add_argument("--base-rate", type=float, default=0.2, help="mean click probability")
    p.add_argument("--target", choices=["true", "noisy", "reversed"], default="true")
    p.add_argument("--temperature", type=float, default=0.5, help="target softmax temperature")
    p.add_argument("--estimators", default=",".join(registry.defaults()),
                   help="comma-separated, from: " + ",".join(registry.single_log()))
    p.add_argument("--clip", type=float, default=None)
    p.add_argument("--intervals", action="store_true", help="bootstrap interval per log")
    p.add_argument("--bootstrap", type=int, default=400)
    p.add_argument("--level", type=float, default=0.95,
                   help="two-sided confidence level of the intervals (default 0.95)")
    p.add_argument("--seed", type=int, default=0)
    g = p.add_argument_group("policy learning on a simulated log")
    g.add_argument("--learn", choices=list(OBJECTIVES), default=None)
    g.add_argument("--l2", type=float, default=0.01)
    g.add_argument("--variance-penalty", type=float, default=0.0)
    g.add_argument("--steps", type=int, default=200)
    g.add_argument("--learning-rate", type=float, default=0.5)
    g.add_argument("--fit-fraction", type=float, default=0.5)
    p.set_defaults(run=run)


def _check(args):
    for name, flag in (("contexts", "--contexts"), ("actions", "--actions"),
                       ("features", "--n-features"), ("rows", "--rows"), ("runs", "--runs"),
                       ("slots", "--positions"), ("steps", "--steps")):
        if getattr(args, name) < 1:
            raise UlrError(f"{flag} must be at least 1.")
    if not 0 < args.base_rate < 1:
        raise UlrError("--base-rate must lie strictly between 0 and 1.")
    validate.n_bootstrap(args.bootstrap, option="--bootstrap", required=True)
    validate.level(args.level, option="--level")


def run(args) -> dict:
    from ulr.ope.study import crm_study, simulation_study

    _check(args)
    if args.learn:
        from ulr.ope.settings import CRMSettings
        learning = CRMSettings(objective=args.learn, l2=args.l2,
                               variance_penalty=args.variance_penalty, clip=args.clip,
                               steps=args.steps, learning_rate=args.learning_rate,
                               fit_fraction=args.fit_fraction, n_bootstrap=args.bootstrap,
                               level=args.level, seed=args.seed)
        out = crm_study(None, learning, contexts=args.contexts, actions=args.actions,
                        n_features=args.features, rows=args.rows, base_rate=args.base_rate)
        return {"learned": out["result"].to_dict(),
                "verdict": out["result"].verdict.to_dict(), "true_value": out["truth"],
                "logging_value": out["logging"], "best_value": out["best"],
                "curve": out["result"].curve.assign(true_value=out["truth_path"])
                .to_dict(orient="list")}
    names = [e.strip() for e in args.estimators.split(",") if e.strip()]
    bad = [e for e in names if e not in registry.single_log()]
    if bad or not names:
        raise UlrError(f"unknown estimator {', '.join(bad) or '(none)'}; choose from "
                       f"{', '.join(registry.single_log())}.")
    out = simulation_study(contexts=args.contexts, actions=args.actions,
                           n_features=args.features, positions=args.slots, rows=args.rows, runs=args.runs,
                           logging=args.logging, logging_temperature=args.logging_temperature,
                           base_rate=args.base_rate, target=args.target,
                           temperature=args.temperature, estimators=names, clip=args.clip,
                           intervals=args.intervals, n_bootstrap=args.bootstrap,
                           level=args.level, seed=args.seed)
    return {"true_value": out.truth, "logging_value": out.logging,
            "ess_fraction": out.ess_fraction, "max_weight": out.max_weight,
            "table": out.table.to_dict(orient="records"),
            "verdict": out.verdict.to_dict(),
            "settings": {k: v for k, v in vars(args).items()
                         if k not in ("run", "json", "command") and not k.startswith("_")}}
