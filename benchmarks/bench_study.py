"""The debiasing study (issue 51): time and peak memory of a study and of reading MSLR.

    python benchmarks/bench_study.py [--part study|load|both] [--rows 100000]
                                     [--queries 1000] [--sessions 100000] [--runs 3]
                                     [--mslr-rows 2300000] [--out DIR] [--keep]
                                     [--before REV]

``--before REV`` first runs the same part on the code of the git revision ``REV``
(exported with ``git archive`` to a temporary folder), then on this tree: the before and
after figures are taken in one run, under the same load (the machine is shared).

Each part runs in a fresh child process, whose peak resident memory is read with
``os.wait4`` (the parent's own memory is not counted):

- ``study``: a labelled set of ``--rows`` rows (``--queries`` queries, 136 features,
  grades 0-4 linear in 20 of them plus noise, built in memory), ``--sessions`` simulated
  PBM sessions (eta 1) per run, ``--runs`` runs, the learners ``naive-linear, ipw-linear,
  lightgbm, lightgbm-position, xgboost-unbiased, oracle``. Target: under 5 minutes and
  4 GB on 2 cores.
- ``load``: an MSLR-WEB30K-sized LETOR file (``--mslr-rows`` rows x 136 features, about
  2.8 GB of text listing every feature, zeros included, as MSLR does; written once to
  ``--out``, default ``benchmarks/out``; 20,000 distinct feature lines are repeated, which
  costs the parser the same as distinct ones) read by :func:`ulr.study.read_labels`. Target: under 2 minutes and 8 GB.

Prints one line per part: seconds, peak memory and the target. The machine is shared:
figures taken while other work runs are slower than on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from anywhere

OUT = ROOT / "benchmarks" / "out"
LEARNERS = "naive-linear,ipw-linear,lightgbm,lightgbm-position,xgboost-unbiased,oracle"
TARGETS = {"study": (300.0, 4.0), "load": (120.0, 8.0)}  # seconds, GB


def labelled(rows: int, queries: int, features: int = 136, seed: int = 0):
    """A LETOR-like labelled set in memory: grades 0..4 linear in 20 features plus noise."""
    import numpy as np

    from ulr.study import LabelledSet
    rng = np.random.default_rng(seed)
    docs = rows // queries
    X = rng.standard_normal((queries * docs, features), dtype=np.float32)
    w = np.zeros(features)
    w[:20] = rng.standard_normal(20)
    latent = X @ w.astype(np.float32) + 0.5 * rng.standard_normal(X.shape[0])
    y = np.searchsorted(np.quantile(latent, [0.55, 0.78, 0.9, 0.97]), latent)
    return LabelledSet(X=X, relevance=y.astype(np.float32),
                       qid=np.repeat(np.arange(queries), docs),
                       query_ids=np.arange(1, queries + 1),
                       features=[f"feature_{j + 1}" for j in range(features)], source="bench")


def child_study(args) -> dict:
    from ulr.study import run_study
    data = labelled(args.rows, args.queries)
    t0 = time.perf_counter()
    res = run_study(data, learners=LEARNERS.split(","), sessions=args.sessions,
                    runs=args.runs, eta=1.0, seed=0)
    seconds = time.perf_counter() - t0
    nd = {n: round(r["ndcg@10"].value, 4) for n, r in res.learners.items()}
    return {"seconds": seconds, "ndcg@10": nd, "verdict": res.verdict.takeaway,
            "documents": data.n_documents}


def mslr_file(rows: int, folder: Path) -> Path:
    """Write (once) a LETOR file of ``rows`` lines x 136 features, 100-150 docs per query."""
    import numpy as np
    path = folder / f"mslr_like_{rows}_dense.txt"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    pool = []
    for _ in range(20_000):
        v = rng.standard_normal(136).round(4)
        v[rng.random(136) < 0.1] = 0.0  # MSLR has zero features, and lists them all
        pool.append(" ".join(f"{j + 1}:{x:g}" for j, x in enumerate(v)))
    grades = rng.integers(0, 5, size=rows)
    tmp = path.with_suffix(".part")
    q, left = 1, int(rng.integers(100, 151))
    with open(tmp, "w") as fh:
        buf = []
        for i in range(rows):
            buf.append(f"{grades[i]} qid:{q} {pool[i % 20_000]}\n")
            left -= 1
            if left == 0:
                q, left = q + 1, int(rng.integers(100, 151))
            if len(buf) == 50_000:
                fh.write("".join(buf))
                buf = []
        fh.write("".join(buf))
    tmp.rename(path)
    return path


def child_load(args) -> dict:
    from ulr.study import read_labels
    path = mslr_file(args.mslr_rows, Path(args.out))
    t0 = time.perf_counter()
    d = read_labels(path)
    return {"seconds": time.perf_counter() - t0, "rows": d.n_documents,
            "queries": d.n_queries, "features": d.n_features,
            "file_gb": path.stat().st_size / 1e9}


def run_child(part: str, argv: list[str], root: Path = ROOT) -> tuple[dict, float]:
    """Run one part in a child process on the code under ``root``; its result (with its
    CPU seconds, user + system, a figure the machine's load moves far less than the wall
    clock) and peak resident memory (GB)."""
    cmd = [sys.executable, str(root / "benchmarks" / "bench_study.py"), "--child", part, *argv]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=str(root))
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{part} failed (status {status})")
    res = json.loads(out.strip().splitlines()[-1])
    res["cpu"] = usage.ru_utime + usage.ru_stime
    return res, usage.ru_maxrss / 1024 ** 2  # GB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("study", "load", "both"), default="both")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mslr-rows", type=int, default=2_300_000)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--keep", action="store_true", help="keep the generated LETOR file")
    ap.add_argument("--before", metavar="REV",
                    help="first run the same part on the code of this git revision")
    ap.add_argument("--child", choices=("study", "load"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        res = child_study(args) if args.child == "study" else child_load(args)
        print(json.dumps(res))
        return
    argv = [f"--rows={args.rows}", f"--queries={args.queries}", f"--sessions={args.sessions}",
            f"--runs={args.runs}", f"--mslr-rows={args.mslr_rows}", f"--out={args.out}"]
    parts = ("study", "load") if args.part == "both" else (args.part,)
    print("command: python " + " ".join([os.path.relpath(__file__, ROOT), *sys.argv[1:]]))
    print(f"load average at start: {load()}")
    trees = [("after", ROOT)]
    tmp = None
    if args.before:
        import tempfile
        tmp = tempfile.TemporaryDirectory(prefix="bench_study_before_")
        old = Path(tmp.name)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "ulr",
                                  "benchmarks"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        trees.insert(0, (f"before ({args.before})", old))
    try:
        for part in parts:
            if part == "load":  # write the file outside the timed child
                t0 = time.perf_counter()
                mslr_file(args.mslr_rows, Path(args.out))
                print(f"load: wrote the LETOR file in {time.perf_counter() - t0:.0f} s")
            for label, root in trees:
                res, gb = run_child(part, argv, root)
                report(part, label, res, gb, args)
            if part == "load" and not args.keep:
                (Path(args.out) / f"mslr_like_{args.mslr_rows}_dense.txt").unlink(
                    missing_ok=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(f"load average at end: {load()}")


def load() -> str:
    """The 1, 5 and 15 minute load averages (2 cores: above 2, others compete)."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def report(part: str, label: str, res: dict, gb: float, args) -> None:
    sec, cap = TARGETS[part]
    ok = "within" if res["seconds"] < sec and gb < cap else "OVER"
    what = (f"{args.rows:,} rows x 136 features, {args.queries:,} queries, "
            f"{args.sessions:,} sessions x {args.runs} runs, learners {LEARNERS}"
            if part == "study" else
            f"{res['rows']:,} rows x {res['features']} features, {res['queries']:,} "
            f"queries, {res['file_gb']:.1f} GB of LETOR text")
    print(f"{part} {label}: {res['seconds']:.1f} s ({res['cpu']:.0f} CPU s), peak {gb:.2f} GB "
          f"({what}); target "
          f"< {sec:.0f} s and < {cap:.0f} GB: {ok}", flush=True)
    if part == "study":
        print(f"  nDCG@10: {res['ndcg@10']}")
        print(f"  verdict: {res['verdict']}", flush=True)


if __name__ == "__main__":
    main()
