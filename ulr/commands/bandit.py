"""``bandit``: simulate cascading bandits and report regret, or replay one on a log.

Simulation (docs/contract.md §2)::

    python -m ulr bandit --algorithm cascade-klucb --env kveton --items 16 --positions 2 \\
        --steps 100000 --runs 20 --seed 0 --p 0.2 --delta 0.15

``--env data`` takes the attraction probabilities from a click log
(``--input PATH`` or ``--db PATH --name DATASET``), corrected for position bias
with ``--theta`` (default: from the log's randomized rows).

Replay evaluation (Li et al. 2011) on the randomized rows of a log::

    python -m ulr bandit --replay --algorithm cascade-lints --input log.csv --positions 1
"""

from __future__ import annotations

from ulr.bandits.bounds import cascade_lower_bound, ucb1_upper_bound
from ulr.bandits.envs import ENVIRONMENTS, make_env
from ulr.bandits.policies import ALGORITHMS
from ulr.bandits.replay import replay
from ulr.bandits.simulate import simulate
from ulr.commands import common
from ulr.errors import UlrError

ORDER = 60


def register(sub):
    p = sub.add_parser(
        "bandit", help="simulate cascading bandits and report regret (or --replay on a log)",
        description="Simulate R independent runs of a bandit algorithm in the cascade model and "
                    "report the expected regret; with --replay, estimate the algorithm's CTR "
                    "by replay on the randomized rows of a click log.")
    p.add_argument("--algorithm", choices=ALGORITHMS, required=True)
    p.add_argument("--env", choices=ENVIRONMENTS, default="kveton",
                   help="kveton: K items with attraction p, the rest p - delta; linear: "
                        "multi-hot tag features, mean attraction p; data: from a click log")
    p.add_argument("--items", type=int, default=None,
                   help="L, number of items (data: the L most shown documents; default 16, "
                        "data: 50)")
    common.add_option(p, "--positions", retired=("--k",), dest="k", type=int, default=None,
                      help="K, length of the ranked list (default 2; with --replay 1)")
    p.add_argument("--steps", type=int, default=10000, help="horizon n")
    p.add_argument("--runs", type=int, default=10, help="independent runs R")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--p", type=float, default=0.2,
                   help="kveton: attraction of the best items; linear: mean attraction")
    p.add_argument("--delta", type=float, default=0.15, help="kveton: attraction gap")
    common.add_option(p, "--n-features", dest="features", type=int, default=10,
                      help="linear: number of tags d")
    p.add_argument("--theta", help="data: position bias per position, comma-separated "
                                   "(default: CTR ratios of the randomized rows)")
    p.add_argument("--sigma", type=float, help="linear algorithms: noise scale sigma")
    p.add_argument("--c", type=float, help="cascade-linucb: exploration constant")
    p.add_argument("--replay", action="store_true",
                   help="replay evaluation on the log's randomized sessions instead of a "
                        "simulation")
    p.add_argument("--max-events", type=int, help="--replay: visit at most this many events")
    p.add_argument("--level", type=float, metavar="L",
                   help="--replay: two-sided confidence level of the Wilson interval "
                        "(default 0.95)")
    common.add_log_args(p, required=False)
    p.set_defaults(run=run)


def _options(args) -> dict:
    opts = {}
    if args.sigma is not None:
        opts["sigma"] = args.sigma
    if args.c is not None:
        if args.algorithm != "cascade-linucb":
            raise UlrError("--c only applies to --algorithm cascade-linucb.")
        opts["c"] = args.c
    if opts and not args.algorithm.startswith("cascade-lin"):
        raise UlrError("--sigma only applies to cascade-linucb and cascade-lints.")
    return opts


def run(args) -> dict:
    opts = _options(args)
    if args.level is not None and not args.replay:
        raise UlrError("--level goes with --replay (a simulation reports regret, not an "
                       "interval).")
    if args.replay:
        log = common.log_from_args(args)
        res = replay(log, args.algorithm, positions=1 if args.k is None else args.k, seed=args.seed,
                     level=0.95 if args.level is None else args.level,
                     max_events=args.max_events, mapping=common.mapping_warnings(log), **opts)
        return {"mode": "replay", "dataset": log.info.name, **res.to_dict()}
    if args.env == "data":
        log = common.log_from_args(args)
    elif common.has_log_args(args):
        raise UlrError("--input / --db / --name go with --env data or --replay.")
    else:
        log = None
    theta = common.parse_floats(args.theta, "--theta") if args.theta else None
    if theta is not None and args.env != "data":
        raise UlrError("--theta goes with --env data.")
    items = args.items if args.items is not None else (50 if args.env == "data" else 16)
    env = make_env(args.env, items=items, positions=2 if args.k is None else args.k, p=args.p,
                   delta=args.delta, n_features=args.features, seed=args.seed, log=log,
                   theta=theta)
    sim = simulate(args.algorithm, env, steps=args.steps, runs=args.runs, seed=args.seed, **opts)
    out = {"mode": "simulate", **sim.summary(), **{"environment": env.describe()}}
    n = sim.t
    if args.algorithm == "ucb1" and env.k == 1:
        out["ucb1_upper_bound"] = float(ucb1_upper_bound(env.w, n))
    if env.name == "kveton":
        out["lower_bound"] = float(cascade_lower_bound(n, items=env.n_items, positions=env.k,
                                                       p=env.params["p"],
                                                       delta=env.params["delta"]))
    return out


def render(result: dict) -> str:
    if result["mode"] == "replay":
        r = result
        ctr = "n/a" if r["ctr"] is None else f"{r['ctr']:.4f}"
        ci = ("" if r["ci_lower"] is None else
              f"  ({r['level']:.0%} CI {r['ci_lower']:.4f} – {r['ci_upper']:.4f})")
        return (f"replay of {r['algorithm']} on {r['dataset']} (top {r['k']}):\n"
                f"  estimated CTR {ctr}{ci}\n"
                f"  accepted {r['accepted']:,} of {r['events']:,} randomized events "
                f"({r['items']:,} documents); random-order CTR {r['random_ctr']:.4f}\n"
                + common.render_verdict(r))
    e = result["environment"]
    lines = [f"{result['algorithm']} on {e['env']} (L={e['items']}, K={e['k']}), "
             f"{result['steps']:,} steps x {result['runs']} runs",
             f"  final regret {result['final_regret_mean']:.2f} ± "
             f"{result['final_regret_std']:.2f} (mean ± sd over runs)",
             f"  {result['seconds']:.3f} s, {result['steps_per_second']:,.0f} steps/s"]
    if "lower_bound" in result:
        lines.append(f"  asymptotic lower bound (Kveton et al. 2015): {result['lower_bound']:.2f}")
    if "ucb1_upper_bound" in result:
        lines.append(f"  UCB1 upper bound: {result['ucb1_upper_bound']:.2f}")
    lines.append(common.render_verdict(result))
    return "\n".join(lines)
