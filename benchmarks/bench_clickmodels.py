"""Click models at scale: all six in one ``clickmodels`` run (or one model at a time) on a
Parquet or CSV log vs DuckDB's bare scan of the same file.

    python benchmarks/bench_clickmodels.py [--sessions 1000000] [--docs 10] [--queries 10000]
                                           [--orders 0] [--models clickmodels] [--max-iter 200]
                                           [--out DIR] [--against CHECKOUT] [--repeat N]
                                           [--format parquet|csv]

Generates ``benchmarks/out/cm1_{sessions}x{docs}[_o{orders}].parquet`` once (a DBN log
from :func:`ulr.simulate.simulate_click_model`, written 200k sessions at a time: every
chunk draws its sessions from its own seed but shares one truth, so a (query, doc) id has
one set of true parameters and the log is one DBN world, not a mixture; git-ignored; put
a 10M-session log under /tmp with ``--out``; ``--orders 0`` shuffles
every session's list, so nearly every session is a pattern of its own, the aggregate's
worst case; ``--orders m`` shows each query's list in one of m fixed orders, as a
production ranker does; ``--format csv`` writes the same rows once more as CSV, the form
analysts most often upload, and reads that), then runs, each in a
fresh child process so peak memory is the child's own (``os.wait4``):

- scan:  ``SELECT count(*), sum(click), max(position) FROM read_parquet(FILE)`` (every row read once);
- read and group, the floor under any session aggregate: every column the aggregate
  reads, through the scan's typed projection (ids as text); and one GROUP BY session_id;
- aggregate: :func:`ulr.clickmodels.sessions.collect` (the SQL statements and the
  pattern matrices);
- clickmodels (the default ``--models``): ``python -m ulr clickmodels --input FILE --json``
  with every default (six models, the shared bootstrap default, the auto prior), its
  time split into the aggregate and the fits with scoring and bootstrap;
- MODEL: aggregate + fit on the training sessions (80%), for each other name in
  ``--models``, EM until it converges (``base.converged``) or ``--max-iter``.

Prints wall and CPU seconds and peak resident memory of each, each one's ratio to the
scan (issue 27's target: time <= 3x the scan's), the distinct session patterns the
aggregate returned, and the EM's iterations. ``--against CHECKOUT`` runs every child with
that checkout's ``ulr`` too (e.g. ``git worktree add /tmp/base main``), alternating with
this one's, so a before/after comparison shares the machine's load; ``--repeat N`` takes
medians of N runs each.

Figures behind :func:`ulr.clickmodels.sessions.collect`'s statement, as measured when it
was written (10M rows): the join on ``hash(query_id, doc_id)`` took about half the CPU of
the join on the two strings; INTEGER pattern codes instead of BIGINT saved about a third
of the pivot's CPU; a WHERE on the session id (anywhere in the statement) made DuckDB hold
the joined rows, +0.9 GB of peak memory, so rows without a session id are flagged and
dropped in numpy instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "out"

# what any session aggregate of the log must at least do, beside the bare scan: read every
# column it uses through the scan's typed projection (ids as text), and one GROUP BY session
REFERENCE = {
    "scan": "SELECT count(*), sum(click), max(position) FROM {src}",
    "read": "SELECT count(*), max(session_id), max(query_id), max(doc_id), sum(click), "
            "max(position) FROM {src}",
    "group": "SELECT count(*), sum(n) FROM (SELECT session_id, count(*) AS n FROM {src} "
             "GROUP BY session_id) AS s",
}

CHILD = "REFERENCE = " + repr(REFERENCE) + r'''
import json, sys, time
t0 = time.perf_counter()
path, what, max_iter = sys.argv[1], sys.argv[2], int(sys.argv[3])
from ulr import engines
scan = engines.get("duckdb").scan(path=path)
if what in REFERENCE:
    r = scan.execute(REFERENCE[what]).fetchone()
    info = {"rows": int(r[0])}
elif what == "clickmodels":
    import contextlib, io
    from ulr.cli import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["clickmodels", "--input", path, "--json"])
    if rc != 0:
        raise SystemExit(f"clickmodels exited with status {rc}")
    out = json.loads(buf.getvalue())
    info = {"sessions": out["sessions"], "patterns": out["patterns"], "best": out["best"],
            "aggregate_seconds": out["aggregate_seconds"],
            "fit_seconds": out["seconds"] - out["aggregate_seconds"],
            "iterations": ",".join(str(m["iterations"]) for m in out["models"].values())}
else:
    from ulr.clickmodels import MODELS, sessions
    S = sessions.collect(scan, test_fraction=0.2, seed=0)
    info = {"sessions": S.total, "patterns": S.sessions,
            "aggregate_seconds": time.perf_counter() - t0}
    if what != "aggregate":
        t1 = time.perf_counter()
        m = MODELS[what].fit(S, max_iter=max_iter)
        info.update(fit_seconds=time.perf_counter() - t1, iterations=m.iterations)
print(json.dumps({**info, "seconds": time.perf_counter() - t0, "cpu": time.process_time()}))
'''


def generate(sessions: int, docs: int, queries: int, out: Path, orders: int = 0) -> Path:
    path = out / f"cm1_{sessions}x{docs}{f'_o{orders}' if orders else ''}.parquet"
    if not path.exists():
        from ulr.simulate import simulate_click_model
        out.mkdir(parents=True, exist_ok=True)
        done, i = 0, 0
        import pyarrow as pa
        import pyarrow.parquet as pq
        writer = None
        while done < sessions:  # 200k sessions per chunk keeps the generator's memory flat
            n = min(200_000, sessions - done)
            df = simulate_click_model("dbn", sessions=n, queries=queries, positions=docs,
                                      seed=0, session_seed=i, orders=orders
                                      ).df.drop(columns=["true_theta"])
            df["session_id"] += done
            t = pa.Table.from_pandas(df, preserve_index=False)
            writer = writer or pq.ParquetWriter(path, t.schema)
            writer.write_table(t)
            done, i = done + n, i + 1
        writer.close()
    return path


def as_csv(path: Path) -> Path:
    """The Parquet log's rows as a CSV file beside it (written once, batch by batch)."""
    out = path.with_suffix(".csv")
    if not out.exists():
        import pyarrow.csv as pc
        import pyarrow.parquet as pq
        source = pq.ParquetFile(path)
        part = out.with_suffix(".csv.part")
        with pc.CSVWriter(part, source.schema_arrow) as writer:
            for batch in source.iter_batches(batch_size=500_000):
                writer.write_batch(batch)
        part.rename(out)
    return out


def child(path: Path, what: str, max_iter: int, root: Path = ROOT) -> dict:
    """One fresh process running ``what`` with the ``ulr`` package of ``root``."""
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(path), what, str(max_iter)],
                         stdout=subprocess.PIPE, cwd=root)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit(f"{what} failed (status {status})")
    text = out.decode().strip()
    res = json.loads(text[text.rindex("{"):])  # a progress bar may print before it
    res.update(wall=time.perf_counter() - t0, peak_mb=usage.ru_maxrss / 1024)
    return res


def runs(path: Path, what: str, max_iter: int, roots: dict, repeat: int) -> dict:
    """Per tree: the median wall and CPU seconds and mean peak of ``repeat`` runs, the trees'
    runs alternating (so a change in the machine's load falls on both alike)."""
    got = {name: [] for name in roots}
    for _ in range(repeat):
        for name, root in roots.items():
            got[name].append(child(path, what, max_iter, root))
    out = {}
    for name, rs in got.items():
        out[name] = {**rs[-1], "wall": statistics.median(r["wall"] for r in rs),
                     "cpu": statistics.median(r["cpu"] for r in rs),
                     "peak_mb": statistics.fmean(r["peak_mb"] for r in rs)}
    return out


def detail(r: dict, what: str) -> str:
    if what in REFERENCE:
        return "reference" if what != "scan" else ""
    return (f"aggregate {r['aggregate_seconds']:.1f} s, {r['patterns']:,} patterns" +
            (f", fit {r['fit_seconds']:.1f} s / {r['iterations']} iterations"
             if "fit_seconds" in r else "") + (f", best {r['best']}" if "best" in r else ""))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1_000_000)
    ap.add_argument("--docs", type=int, default=10)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--orders", type=int, default=0,
                    help="orders per query's list (0: a random order per session)")
    ap.add_argument("--models", default="clickmodels",
                    help="clickmodels (all six in one CLI run) and/or model names")
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--against", type=Path, default=None,
                    help="another checkout (e.g. a git worktree of main): its ulr runs each "
                         "child too, alternating with this one's")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each child (medians)")
    ap.add_argument("--format", choices=("parquet", "csv"), default="parquet",
                    help="the file every run reads (csv: the same rows, written once)")
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    if a.against is not None and not (a.against / "ulr" / "__init__.py").is_file():
        ap.error(f"--against {a.against} has no ulr package")
    roots = {"": ROOT} if a.against is None else {"": ROOT, "against": a.against.resolve()}
    path = generate(a.sessions, a.docs, a.queries, a.out, a.orders)
    if a.format == "csv":
        path = as_csv(path)
    print(f"{path.name}: {a.sessions:,} sessions x {a.docs} = {a.sessions * a.docs:,} impressions"
          + (f"; 'against' rows: the ulr of {a.against}" if a.against else "")
          + (f"; medians of {a.repeat} runs" if a.repeat > 1 else ""))
    print(f"{'run':>18s} {'seconds':>8s} {'x scan':>7s} {'cpu s':>7s} {'x scan':>7s} "
          f"{'peak MB':>8s} {'x scan':>7s}  detail")
    scan = None
    for what in ["scan", "read", "group", "aggregate"] + a.models.split(","):
        got = runs(path, what, a.max_iter, roots, a.repeat)
        scan = scan or got  # each tree's ratios are to its own scan
        for name, r in got.items():
            s = scan[name]
            label = f"{what} {name}".strip()
            print(f"{label:>18s} {r['wall']:8.2f} {r['wall'] / s['wall']:7.2f} "
                  f"{r['cpu']:7.2f} {r['cpu'] / s['cpu']:7.2f} "
                  f"{r['peak_mb']:8.0f} {r['peak_mb'] / s['peak_mb']:7.2f}  {detail(r, what)}")


if __name__ == "__main__":
    main()
