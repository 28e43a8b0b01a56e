"""The audit against the same computations run from the CLI one by one (issue 39).

    python benchmarks/bench_audit.py [--out DIR] [--only recommendation,search,sample]
                                     [--rows N] [--search-queries Q] [--before DIR]
                                     [--repeat N] [--no-one-by-one] [--threads]

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

Issue 54's targets (the audit under 3 s on a 10,000-row log, under 30 s on a 1M-row log):
``--rows N`` makes the two real-shaped logs about N rows each (the recommendation log has
3 slots per impression, the search log 10 results per session); ``--before DIR`` also
times the audit of another checkout (e.g. ``/work/main``, run read-only as its own process
with ``cwd=DIR``), in the same run, alternating, and says whether its JSON answers equal
this checkout's (the ``seconds`` aside); ``--repeat N`` times each side N times, the sides
alternating which runs first, and prints the best and the spread; ``--no-one-by-one``
leaves out the commands one by one. ``--threads`` also times, in one warm process, the
answers one after the other against two threads (each question on its own cursor; the
audit shares a context): the measurement behind answering the questions one after the
other.
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


def _cli(db: str, *args, cwd=ROOT) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``python -m ulr ARGS`` in its own process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "ulr", *map(str, args)], cwd=cwd,
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
                                        A.REPLAY_ALGORITHM, "--positions", 1, "--seed", A.SEED]))
    if "slates" in yes:
        out.append(("ope-slate", ["ope-slate", "--seed", A.SEED]))
    return out


def _logs(folder: Path, only: set, rows: int | None = None,
          queries: int | None = None) -> list[tuple[str, Path, object]]:
    from ulr.data import ingest
    from ulr.audit import logs
    out = []
    rec = {} if rows is None else {"sessions": max(1, round(rows / 3))}
    # the search log thins queries to Zipf-like frequencies: it draws about 1.2 / mean(keep)
    # sessions per one kept, so many queries make a large log draw (and hold) far more rows
    search = {} if rows is None else {"sessions": max(1, round(rows / 10)),
                                      "queries": queries or max(50, min(300, rows // 100))}
    if "recommendation" in only:
        out.append(("recommendation", *logs.recommendation_log(folder / "recs.csv", **rec)))
    if "search" in only:
        out.append(("search", *logs.search_log(folder / "search.csv", **search)))
    if "sample" in only:
        out.append(("sample", Path(ingest.SAMPLE_CSV), None))
    return out


def _without_seconds(d):
    if isinstance(d, dict):
        return {k: _without_seconds(v) for k, v in d.items() if k != "seconds"}
    if isinstance(d, list):
        return [_without_seconds(x) for x in d]
    return d


def _threads(db: str, name: str) -> None:
    """In one process, warm: every answer one after the other, then on two threads."""
    from concurrent.futures import ThreadPoolExecutor

    from ulr import audit
    from ulr.data import catalog
    from ulr.data.log import Log
    log = catalog.open_dataset(name, cur=catalog.cursor(db))
    shape = audit.read_shape(log)
    todo = [a for a in audit.assess(shape) if a.answerable]
    audit.run(log, shape=shape)  # imports and compiled kernels loaded: both sides warm

    def on_two_threads():
        ctx = audit.Context(log, shape)

        def one(a):
            own = audit.Context(Log(log.cur.cursor(), log.table, log.info), shape)
            own.memo, own._lock = ctx.memo, ctx._lock  # the run's shared values
            return audit.answer(own, a)
        slow_first = sorted(todo, key=lambda a: a.id not in ("off_policy", "position_bias"))
        with ThreadPoolExecutor(2) as ex:
            return list(ex.map(one, slow_first))

    for label, fn in (("warm, in turn", lambda: audit.run(log, shape=shape)),
                      ("warm, 2 threads", on_two_threads)) * 2:
        t0 = time.perf_counter()
        fn()
        print(f"{name:<15} {label:<18} {time.perf_counter() - t0:8.2f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder for the logs and the store (default: a temp folder)")
    ap.add_argument("--only", default="recommendation,search,sample")
    ap.add_argument("--rows", type=int, help="rows of each real-shaped log (about)")
    ap.add_argument("--search-queries", type=int,
                    help="queries of the search log with --rows (default rows/100, 50 to 300; "
                         "50 keeps a 1M-row log's draw to a few GB)")
    ap.add_argument("--before", help="another checkout whose audit to time beside this one")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --before: time each side this many times, alternating which "
                         "goes first, and print the best (and the spread)")
    ap.add_argument("--no-one-by-one", action="store_true")
    ap.add_argument("--threads", action="store_true")
    args = ap.parse_args(argv)
    folder = Path(args.out or tempfile.mkdtemp(prefix="bench_audit_"))
    folder.mkdir(parents=True, exist_ok=True)
    from ulr.data import ingest
    print(f"{'log':<15} {'step':<18} {'wall s':>8} {'cpu s':>8}")
    for name, path, mapping in _logs(folder, set(args.only.split(",")), args.rows,
                                     args.search_queries):
        db = str(folder / f"{name}.duckdb")
        ingest.load_log(path, name, db_path=db, mapping=mapping, replace=True)
        audit = ("audit", "--db", db, "--name", name, "--json")
        if args.before:
            runs = {"before": [], "after": []}
            for r in range(args.repeat):  # the sides alternate, "before" first every other round
                for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
                    runs[side].append(_cli(db, *audit, cwd=args.before if side == "before"
                                           else ROOT))
            wall_a, cpu_a, out = runs["after"][0]
        else:
            wall_a, cpu_a, out = _cli(db, *audit)
        result = json.loads(out)
        rows = result["shape"]["rows"]
        if args.before:
            same = all(_without_seconds(json.loads(o)) == _without_seconds(result)
                       for side in runs.values() for _, _, o in side)
            for side in ("before", "after"):
                walls = sorted(w for w, _, _ in runs[side])
                cpus = sorted(c for _, c, _ in runs[side])
                spread = ("" if len(walls) == 1 else
                          f"; wall min {walls[0]:.2f} median {walls[len(walls) // 2]:.2f} "
                          f"max {walls[-1]:.2f}")
                print(f"{name:<15} {'audit ' + side:<18} {walls[0]:8.2f} {cpus[0]:8.2f}   "
                      f"({rows:,} rows, best of {len(walls)}{spread})")
            w_b, wall_a = min(w for w, _, _ in runs["before"]), min(w for w, _, _ in runs["after"])
            print(f"{name:<15} {'':<18} {'':>8} {'':>8}   (answers "
                  f"{'identical' if same else 'DIFFER'}; after / before = {wall_a / w_b:.2f} "
                  "wall, best of each)")
        if args.threads:
            _threads(db, name)
        if args.no_one_by_one:
            if not args.before:
                print(f"{name:<15} {'audit':<18} {wall_a:8.2f} {cpu_a:8.2f}   ({rows:,} rows)")
            continue
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
