"""SLOPE's choice against every single off-policy estimator on simulated logs (issue 28).

    python benchmarks/bench_ope_selection.py [--rows 800] [--draws 100] [--kappa 2]
                                             [--seeds 4,7,8] [--detail]

Worlds (:func:`ulr.ope.selection.selection_world`): IPS heavy-tailed (softmax
logging at temperature 1, 0.5 or 0.35, target at 0.5 favouring rarely logged
actions) and a reward model with the truth's ordering but a flattened scale
and a level 1.5x, 0.5x or 1x the truth's mean (the last: DM can be nearly
exact by luck, which the log alone cannot confirm).
For each world and seed prints every estimator's RMSE against the exact true
value, the ratio of each to the best single estimator with its bootstrap
standard error over the logs (target for SLOPE: <= 1.2), and which
estimators SLOPE picked; ``--detail`` adds, per estimator SLOPE picked, its
bias and RMSE when picked beside the standard error and bound SLOPE saw.
The seeds are worlds as well as logs: check more than the default ones
(e.g. ``--seeds 1,2,3`` and ``--seeds 5,6,9,10,11,12``).
The summary gives the worst ratio over the issue's first three worlds and
over all six, and how many settings exceed 1.2 by more than two standard
errors (the others cannot be told apart from 1.2 at this many draws).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere

from ulr.ope.selection import KAPPA, selection_benchmark  # noqa: E402

WORLDS = {"moderate weights, model too high": dict(logging_temperature=1.0, model_scale=1.5),
          "heavy tail, model too high": dict(logging_temperature=0.5, model_scale=1.5),
          "heavy tail, model too low": dict(logging_temperature=0.5, model_scale=0.5),
          "moderate weights, model too low": dict(logging_temperature=1.0, model_scale=0.5),
          "very heavy tail, model too high": dict(logging_temperature=0.35, model_scale=1.5),
          "heavy tail, model level right": dict(logging_temperature=0.5, model_scale=1.0)}
FIRST = 3  # the worlds: heavy-tailed IPS and a misspecified model


def _fmt(x):
    return f"{x:.4f}"


def summarize(results) -> str:
    """Worst ratio and counts over 1.2, on the first three worlds and on all six."""
    lines = []
    for label, rows in (("first three worlds", [r for r in results if r[1] < FIRST]),
                        ("all six worlds", results)):
        worst = max(rows, key=lambda r: r[2])
        over = sum(r[2] > 1.2 for r in rows)
        clear = sum(r[2] - 2 * r[3] > 1.2 for r in rows)
        lines.append(f"{label}: worst SLOPE / best single {worst[2]:.2f} +- {worst[3]:.2f} "
                     f"(seed {worst[0]}, {list(WORLDS)[worst[1]]}); {over} of {len(rows)} "
                     f"settings over 1.2, {clear} by more than 2 standard errors")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=800)
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--kappa", type=float, default=KAPPA)
    ap.add_argument("--seeds", default="4,7,8")
    ap.add_argument("--detail", action="store_true")
    a = ap.parse_args(argv)
    results, cpu, wall = [], time.process_time(), time.perf_counter()
    for seed in map(int, a.seeds.split(",")):
        for k, (name, world) in enumerate(WORLDS.items()):
            t, picks = selection_benchmark(rows=a.rows, draws=a.draws, kappa=a.kappa, seed=seed,
                                           **world)
            row = t.loc[t.estimator == "slope"].iloc[0]
            results.append((seed, k, float(row.ratio_to_best_single), float(row.ratio_se)))
            print(f"\n== seed {seed}: {name}  (SLOPE / best single = "
                  f"{row.ratio_to_best_single:.2f} +- {row.ratio_se:.2f})")
            print(t.to_string(index=False, float_format=_fmt))
            print("SLOPE picked:", ", ".join(f"{e} {n}" for e, n in picks["n"].items()))
            if a.detail:
                print(picks.to_string(float_format=_fmt))
    print(f"\n{summarize(results)}\n(target 1.2; {a.draws} logs of {a.rows} rows per setting; "
          f"CPU {time.process_time() - cpu:.0f} s, wall {time.perf_counter() - wall:.0f} s)")


if __name__ == "__main__":
    main()
