"""The audit against the same computations run from the CLI one by one (issue 39).

    python benchmarks/bench_audit.py [--out DIR] [--only recommendation,search,sample]

For each real-shaped log (:mod:`ulr.audit.logs`: a recommendation log with per-slot
propensities, features and two loggers and no sessions; a web-search log with sessions
and no propensities; and the bundled sample ``data/sample_clicks.csv``), the log is
loaded once into a fresh store under DIR (not timed), then timed as separate processes,
each reading the stored dataset:

- audit: ``python -m ulr audit --db DB --name NAME --json`` (every answerable question);
- one by one: the command of each question the audit answered, with its page's defaults:
  ``propensity`` (position_bias), ``clickmodels`` (user_models), ``rankers`` (rankers),
  ``ope --learn snips`` (off_policy, several_loggers and policy_learning: one process),
  ``bandit --replay`` (replay) and ``ope-slate`` (slates). CTR by position has no command
  of its own; it is left out of the sum (it favours the one-by-one side). ``clickmodels``
  runs without bootstrap: its CLI refits every replicate, the page (and the audit) scores
  50 replicates without refits, so 0 is the cheaper like-for-like.

Prints, per log, each command's wall seconds, their sum, the audit's, and the ratio
(issue 39's target: the audit is not slower than the sum), and children's CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cli(db: str, *args) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``python -m ulr ARGS`` in its own process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "ulr", *map(str, args)], cwd=ROOT,
                       capture_output=True, text=True, env={**os.environ, "ULR_DB": db})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, args[:1]))} failed: {p.stderr.strip()}")
    return wall, cpu, p.stdout


def _commands(result: dict) -> list[tuple[str, list]]:
    """The CLI command of each answered question, with its page's defaults."""
    from ulr.audit import answers as A
    shape, qs = result["shape"], {q["id"]: q for q in result["questions"]}
    yes = {k for k, q in qs.items() if q["answerable"]}
    out = []
    if "position_bias" in yes:
        m = qs["position_bias"]["method"]
        out.append(("propensity", ["propensity", "--method", m, "--positions",
                                   min(shape["positions"], A.POSITIONS_SHOWN), "--bootstrap",
                                   A.PB_BOOTSTRAP, "--seed", A.SEED]
                    + (["--assume-randomized"] if shape["randomized"]
                       and m == "randomization" else [])))
    if "user_models" in yes:
        out.append(("clickmodels", ["clickmodels", "--test-fraction", A.UM_TEST_FRACTION,
                                    "--bootstrap", 0, "--seed", A.SEED]))
    if "rankers" in yes:
        out.append(("rankers", ["rankers", "--propensity", qs["rankers"]["method"],
                                "--learner", "linear", "--bootstrap", A.CR_BOOTSTRAP,
                                "--seed", A.SEED]))
    ope = {"off_policy", "several_loggers", "policy_learning"} & yes
    if ope:
        est = "ips,clipped-ips,snips,dr" + (",wips,balanced-ips" if shape["loggers"] else "")
        out.append(("ope" + (" --learn" if "policy_learning" in ope else ""),
                    ["ope", "--estimators", est, "--bootstrap", A.OPE_BOOTSTRAP, "--seed",
                     A.SEED] + (["--learn", "snips"] if "policy_learning" in ope else [])
                    + ([] if shape["features"] else ["--target", "uniform"])))
    if "replay" in yes:
        out.append(("bandit --replay", ["bandit", "--replay", "--algorithm",
                                        A.REPLAY_ALGORITHM, "--k", 1, "--seed", A.SEED]))
    if "slates" in yes:
        out.append(("ope-slate", ["ope-slate", "--seed", A.SEED]))
    return out


def _logs(folder: Path, only: set) -> list[tuple[str, Path, object]]:
    from ulr.data import ingest
    from ulr.audit import logs
    out = []
    if "recommendation" in only:
        out.append(("recommendation", *logs.recommendation_log(folder / "recs.csv")))
    if "search" in only:
        out.append(("search", *logs.search_log(folder / "search.csv")))
    if "sample" in only:
        out.append(("sample", Path(ingest.SAMPLE_CSV), None))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder for the logs and the store (default: a temp folder)")
    ap.add_argument("--only", default="recommendation,search,sample")
    args = ap.parse_args(argv)
    folder = Path(args.out or tempfile.mkdtemp(prefix="bench_audit_"))
    folder.mkdir(parents=True, exist_ok=True)
    from ulr.data import ingest
    print(f"{'log':<15} {'step':<18} {'wall s':>8} {'cpu s':>8}")
    for name, path, mapping in _logs(folder, set(args.only.split(","))):
        db = str(folder / f"{name}.duckdb")
        ingest.load_log(path, name, db_path=db, mapping=mapping, replace=True)
        wall_a, cpu_a, out = _cli(db, "audit", "--db", db, "--name", name, "--json")
        result = json.loads(out)
        total_w = total_c = 0.0
        for label, cmd in _commands(result):
            w, c, _ = _cli(db, *cmd, "--db", db, "--name", name, "--json")
            total_w, total_c = total_w + w, total_c + c
            print(f"{name:<15} {label:<18} {w:8.2f} {c:8.2f}")
        answered = sum(q["answerable"] for q in result["questions"])
        print(f"{name:<15} {'sum one by one':<18} {total_w:8.2f} {total_c:8.2f}")
        print(f"{name:<15} {'audit':<18} {wall_a:8.2f} {cpu_a:8.2f}   "
              f"({answered} questions answered; audit / sum = {wall_a / total_w:.2f} wall, "
              f"{cpu_a / total_c:.2f} cpu)")


if __name__ == "__main__":
    main()
