"""``recommend``: debiased recommendation on simulated MNAR ratings (docs/contract.md §2).

The command-line twin of the Debiased recommendations page: the same simulated
world (:func:`ulr.recommend.data.simulate_mnar`), the same models and grids
(:func:`ulr.recommend.experiment.run_experiment`), the same results table.
"""

from __future__ import annotations

import time

from ulr.commands.common import add_option
from ulr.text import plain

ORDER = 65

PROPENSITIES = ("naive-bayes", "true")


def register(sub):
    from ulr.recommend.experiment import N_SEEDS
    from ulr.recommend.models import MODELS

    p = sub.add_parser(
        "recommend", help="debiased recommendation: naive MF, propensity MF and CausE on "
                          "simulated missing-not-at-random ratings",
        description="Simulate a world whose every rating is known, expose ratings missing not "
                    "at random (plus a small uniformly random slice), train matrix "
                    "factorizations on them and score each on uniformly sampled ratings.")
    w = p.add_argument_group("world")
    w.add_argument("--users", type=int, default=400)
    w.add_argument("--items", type=int, default=300)
    w.add_argument("--rank", type=int, default=5, help="latent rank of the true ratings")
    w.add_argument("--observed-fraction", type=float, default=0.05,
                   help="exposed share of the (user, item) pairs")
    w.add_argument("--alpha", type=float, default=1.0,
                   help="exposure log-odds per star (0 = missing at random)")
    w.add_argument("--gamma", type=float, default=0.5,
                   help="exposure log-odds per sd of item popularity")
    w.add_argument("--random-share", type=float, default=0.03,
                   help="share of the training ratings from uniformly random exposure")
    t = p.add_argument_group("training")
    t.add_argument("--models", default=",".join(MODELS),
                   help=f"comma-separated, from {','.join(MODELS)} (default: all)")
    add_option(t, "--exposure", retired=("--propensity",), choices=PROPENSITIES,
               default="naive-bayes",
               help="exposure model: naive Bayes on the random slice, or the simulator's "
                    "true exposure")
    t.add_argument("--factors", type=int, default=8)
    t.add_argument("--epochs", type=int, default=40)
    t.add_argument("--learning-rate", type=float, default=0.05)
    t.add_argument("--batch-size", type=int, default=256)
    t.add_argument("--discrepancy-norm", choices=("l2", "l1"), default="l2",
                   help="CausE tie between the two embeddings")
    p.add_argument("--seed", type=int, default=0)
    add_option(p, "--runs", retired=("--seeds",), type=int, default=N_SEEDS,
               help="simulated worlds, one run each (seeds seed, seed+1, ...); with 2 or "
                    "more the verdict has an interval over them")
    p.set_defaults(run=run)


def run(args) -> dict:
    from ulr.errors import UlrError
    from ulr.recommend.data import simulate_mnar
    from ulr.recommend.experiment import compare_seeds, results_table, run_experiment
    from ulr.recommend.models import MODELS, MFConfig

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in MODELS]
    if not models or unknown:
        raise UlrError(f"--models must be comma-separated names from {', '.join(MODELS)}"
                       + (f"; unknown: {', '.join(unknown)}" if unknown else "") + ".")
    if args.runs < 1:
        raise UlrError("--runs must be at least 1.")
    t0 = time.perf_counter()
    exps = []
    for seed in range(args.seed, args.seed + args.runs):
        data = simulate_mnar(users=args.users, items=args.items, rank=args.rank,
                             observed_fraction=args.observed_fraction, alpha=args.alpha,
                             gamma=args.gamma, random_share=args.random_share, seed=seed)
        base = MFConfig(factors=args.factors, epochs=args.epochs,
                        learning_rate=args.learning_rate, batch_size=args.batch_size,
                        discrepancy_norm=args.discrepancy_norm, seed=seed)
        exps.append(run_experiment(data, models=models, base=base,
                                   exposure=args.exposure))
    seeds = compare_seeds(exps)
    exp = seeds.first
    out = {} if seeds.verdict is None else {"verdict": seeds.verdict.to_dict()}
    return {"summary": exp.summary, "results": results_table(exp).to_dict("records"),
            "models": models, "propensity": args.exposure, "seed": args.seed,
            "seeds": args.runs, **out,
            "seconds": time.perf_counter() - t0}


def render(result: dict) -> str:
    s = result["summary"]
    lines = [f"mean logged rating {s['mean_rating_mnar']:.2f} vs {s['mean_rating_uniform']:.2f} "
             f"over all pairs; {s['mnar_ratings']:,} logged and {s['random_ratings']:,} "
             f"randomized training ratings; {s['test_ratings']:,} uniform test ratings"]
    for row in result["results"]:
        lines.append("  " + ", ".join(
            f"{k}: {plain(v, sig=4)}" if isinstance(v, float) else f"{k}: {v}"
            for k, v in row.items()))
    if result.get("verdict"):
        from ulr.commands.common import render_verdict
        lines.append(render_verdict(result))
    lines.append(f"{result['seconds']:.1f} s")
    return "\n".join(lines)
