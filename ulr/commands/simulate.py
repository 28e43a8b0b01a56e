"""``simulate``: a synthetic click log with ground truth.

Two generators: the position-bias simulator (``--model pbm|cascade``: documents with
features and grades, a logging ranker, an optional randomized share), and, with
``--click-model M``, a log from any click model of :mod:`ulr.clickmodels`
(:func:`ulr.simulate.simulate_click_model`) with its true parameters.
"""

from __future__ import annotations

import json
import time

import numpy as np

from ulr.commands.common import add_option, parse_floats
from ulr.errors import UlrError
from ulr.simulate import (CLICK_MODELS, GRADED_MODELS, simulate_click_model, simulate_clicks,
                          write_log)

ORDER = 10


def register(sub):
    p = sub.add_parser("simulate", help="write a synthetic click log with known theta")
    p.add_argument("--model", choices=list(GRADED_MODELS), default="pbm")
    p.add_argument("--click-model", choices=CLICK_MODELS, metavar="M",
                   help=f"instead: a log from the click model M ({', '.join(CLICK_MODELS)}), "
                        "sessions in session_id, truth in the output (docs/clickmodels.md)")
    p.add_argument("--orders", type=int, default=0, metavar="N",
                   help="with --click-model: each query's list in one of N fixed orders "
                        "(default 0: a random order per session)")
    p.add_argument("--truth", metavar="PATH", help="with --click-model: also write every true "
                                                   "parameter (alpha, sigma per doc_id) as JSON")
    p.add_argument("--queries", type=int, default=1000)
    add_option(p, "--positions", retired=("--docs-per-query",), dest="positions",
               type=int, default=10, help="list length: documents shown per query (default 10)")
    p.add_argument("--sessions", type=int, default=10000)
    p.add_argument("--eta", type=float, default=1.0, help="theta_k = (1/k)^eta")
    p.add_argument("--theta", help="explicit examination per position, comma-separated")
    p.add_argument("--eps-plus", metavar="E1,E2,...",
                   help="with --click-model trust: click probability of an examined relevant "
                        "result per position (default 0.98 - 0.02 (k - 1))")
    p.add_argument("--eps-minus", metavar="E1,E2,...",
                   help="with --click-model trust: click probability of an examined irrelevant "
                        "result per position (default 0.35 / k)")
    p.add_argument("--randomized-fraction", type=float, default=None,
                   help="share of randomized rows (default 0.1); with --click-model and "
                        "--orders, the share of sessions shown in a random order (default 0)")
    add_option(p, "--n-features", retired=("--features",), dest="features", type=int,
               default=5, help="synthetic features per document (default 5)")
    p.add_argument("--eps", type=float, default=0.05, help="click noise")
    p.add_argument("--ranker-noise", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output path (.csv or .parquet)")
    p.set_defaults(run=run)


def run(args) -> dict:
    if args.click_model:
        return _click_model(args)
    if args.truth or args.orders:
        raise UlrError("--truth and --orders go with --click-model.")
    if args.eps_plus or args.eps_minus:
        raise UlrError("--eps-plus and --eps-minus go with --click-model trust.")
    if args.randomized_fraction is None:
        args.randomized_fraction = 0.1
    theta = parse_floats(args.theta, "--theta") if args.theta else None
    t0 = time.perf_counter()
    sim = simulate_clicks(model=args.model, queries=args.queries,
                          positions=args.positions, sessions=args.sessions,
                          eta=args.eta, theta=theta, randomized_fraction=args.randomized_fraction,
                          features=args.features, eps=args.eps, ranker_noise=args.ranker_noise,
                          seed=args.seed)
    write_log(sim.df, args.out)
    return {"path": args.out, "rows": len(sim.df), "theta": sim.theta.tolist(),
            "relative_theta": sim.relative_theta.tolist(), "model": args.model,
            "ctr": float(sim.df["click"].mean()), "seconds": time.perf_counter() - t0}


def _click_model(args) -> dict:
    """A click model's log; the result carries its rank-level truth (and ``--truth`` all)."""
    from ulr.clickmodels.records import get
    trust = get(args.click_model).per_rank_truth  # its simulation takes theta, eps per rank
    if (args.theta or args.eps_plus or args.eps_minus) and not trust:
        raise UlrError("--theta, --eps-plus and --eps-minus go with --model or --click-model "
                       "trust; a click model's examination is its own.")
    per_rank = {k: parse_floats(getattr(args, k), "--" + k.replace("_", "-"))
                if getattr(args, k) else None for k in ("theta", "eps_plus", "eps_minus")}
    t0 = time.perf_counter()
    sim = simulate_click_model(args.click_model, sessions=args.sessions, queries=args.queries,
                               positions=args.positions, seed=args.seed,
                               orders=args.orders, randomized=args.randomized_fraction or 0.0,
                               **(per_rank if trust else {}))
    write_log(sim.df, args.out)
    truth = sim.extra["truth"]
    per_doc = ("alpha", "sigma", "relevant")
    rank_level = {k: np.asarray(v).tolist() for k, v in truth.items() if k not in per_doc}
    if args.truth:
        full = {**rank_level, "doc_id": list(range(len(truth["alpha"]))),
                **{k: np.asarray(truth[k]).tolist() for k in per_doc if k in truth}}
        with open(args.truth, "w") as f:
            json.dump({"model": args.click_model, **full}, f)
    return {"path": args.out, "rows": len(sim.df), "sessions": args.sessions,
            "click_model": args.click_model, "truth": rank_level,
            "examination": sim.theta.tolist(), "truth_path": args.truth,
            "ctr": float(sim.df["click"].mean()), "seconds": time.perf_counter() - t0}
