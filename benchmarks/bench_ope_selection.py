"""SLOPE's choice against every single off-policy estimator on simulated logs (issue 28).

    python benchmarks/bench_ope_selection.py [--rows 800] [--draws 100] [--kappa 2]
                                             [--seeds 4,7,8]

Worlds (:func:`ulr.ope.selection.selection_world`): IPS heavy-tailed (softmax
logging at temperature 1, 0.5 or 0.35, target at 0.5 favouring rarely logged
actions) and a reward model with the truth's ordering but a flattened scale
and a level 1.5x, 0.5x or 1x the truth's mean (the last: DM can be nearly
exact by luck, which the log alone cannot confirm).
For each world and seed prints every estimator's RMSE against the exact true
value, the ratio of each to the best single estimator (target for SLOPE:
<= 1.2), and which families SLOPE picked.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere

from ulr.ope.selection import KAPPA, selection_benchmark  # noqa: E402

WORLDS = {"moderate weights, model too high": dict(logging_temperature=1.0, model_scale=1.5),
          "heavy tail, model too high": dict(logging_temperature=0.5, model_scale=1.5),
          "heavy tail, model too low": dict(logging_temperature=0.5, model_scale=0.5),
          "moderate weights, model too low": dict(logging_temperature=1.0, model_scale=0.5),
          "very heavy tail, model too high": dict(logging_temperature=0.35, model_scale=1.5),
          "heavy tail, model level right": dict(logging_temperature=0.5, model_scale=1.0)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=800)
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--kappa", type=float, default=KAPPA)
    ap.add_argument("--seeds", default="4,7,8")
    a = ap.parse_args(argv)
    worst = 0.0
    for seed in map(int, a.seeds.split(",")):
        for name, world in WORLDS.items():
            t, picks = selection_benchmark(rows=a.rows, draws=a.draws, kappa=a.kappa, seed=seed,
                                           **world)
            ratio = float(t.loc[t.estimator == "slope", "ratio_to_best_single"].iloc[0])
            worst = max(worst, ratio)
            print(f"\n== seed {seed}: {name}  (SLOPE / best single = {ratio:.2f})")
            print(t.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
            print("SLOPE picked:", ", ".join(f"{k} {v}" for k, v in picks.items()))
    print(f"\nworst SLOPE / best single over all worlds: {worst:.2f} (target 1.2)")


if __name__ == "__main__":
    main()
