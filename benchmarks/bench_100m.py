"""100M impressions on one machine: em and randomization against DuckDB's bare scan.

    python benchmarks/bench_100m.py [--rows 100000000] [--queries 100000] [--out DIR]
                                    [--formats csv,parquet] [--methods em,randomization]
                                    [--repeat 1] [--regen]

Generates once, with DuckDB, a simulated position-based log of ``--rows``
impressions (``--queries`` queries x 10 documents, so 1M query-document pairs
by default; one session shows a query's 10 documents; 10% of the sessions show
them in a random cyclic order, the rest in production order; click probability
``theta_k * gamma_qd`` with ``theta_k = 1/k``). It is written as one CSV
(about 1.9 GB: ``query_id,doc_id,position,click,randomized``) and one Parquet
file. Big files belong outside the repository: pass ``--out``.

Then, each in a fresh child process, for each format:

- bare: ``SELECT query_id, doc_id, position, count(*), sum(click)
  FROM read_csv(FILE) GROUP BY ALL`` (read_parquet for Parquet; auto-detected
  types, DuckDB's defaults, all cores);
- ``python -m ulr propensity --method M --engine duckdb --input FILE --json``
  for each method (the CSV em run uses the checked in-place scan,
  ``--input FILE`` without an engine, as a user would).

Prints wall seconds, the ratio to the bare scan (target <= 2x, issue 13; em <= 1.2x,
issue 37),
each child's peak resident memory (target < 8 GB, read with ``os.wait4``) and
max |theta - 1/k| against the simulated truth.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_propensity import ROOT, run_child  # noqa: E402

DOCS = 10
BARE = """
import duckdb, sys
reader = "read_parquet" if sys.argv[1].endswith(".parquet") else "read_csv"
con = duckdb.connect()
rows = con.execute(f"SELECT query_id, doc_id, position, count(*), sum(click) "
                   f"FROM {reader}(?) GROUP BY ALL", [sys.argv[1]]).fetchall()
print(len(rows))
"""

# One session = one query's 10 documents. A session hash h picks the query
# (h // 100), whether the order is randomized (h % 10 == 0) and the cyclic
# shift of a randomized order ((h // 10) % 10). Clicks and attractiveness use
# hashes of disjoint integer ranges, so they are independent of the layout.
LOG_SQL = """
WITH s AS (
  SELECT sid, (h // 100) % {queries} AS q, (h % 10 = 0) AS rnd, (h // 10) % 10 AS shift
  FROM (SELECT range AS sid, hash(range) AS h FROM range({sessions}))),
l AS (
  SELECT sid, q, rnd, j,
         CASE WHEN rnd THEN (j + shift) % {docs} ELSE j END + 1 AS position
  FROM s, range({docs}) r(j))
SELECT q::BIGINT AS query_id, (q * {docs} + j)::BIGINT AS doc_id, position::INTEGER AS position,
       ((hash(sid * {docs} + j + 1000000000000) % 1000000) / 1e6
        < (1.0 / position)
          * (0.05 + 0.5 * (hash(q * {docs} + j + 2000000000000) % 1000) / 1000 / (1 + j))
       )::INTEGER AS click,
       rnd::INTEGER AS randomized
FROM l
"""


def ensure_files(out: Path, rows: int, queries: int, regen: bool) -> dict[str, Path]:
    """The CSV and Parquet copies of the simulated log (generated once)."""
    import duckdb
    stem = out / f"pbm_{rows}_{queries}q"
    files = {"csv": stem.with_suffix(".csv"), "parquet": stem.with_suffix(".parquet")}
    if all(f.exists() for f in files.values()) and not regen:
        return files
    out.mkdir(parents=True, exist_ok=True)
    spill = out / "spill"
    con = duckdb.connect(config={"memory_limit": "6GB", "temp_directory": str(spill)})
    sql = LOG_SQL.format(queries=queries, sessions=rows // DOCS, docs=DOCS)
    t0 = time.perf_counter()
    print(f"generating {rows:,} impressions -> {files['csv']} ...", flush=True)
    con.execute(f"COPY ({sql}) TO '{files['csv']}' (HEADER)")
    con.execute(f"COPY (SELECT * FROM read_csv('{files['csv']}')) "
                f"TO '{files['parquet']}' (FORMAT parquet)")
    print(f"  {time.perf_counter() - t0:.0f} s", flush=True)
    return files


def ulr_cmd(path: Path, kind: str, method: str) -> list[str]:
    cmd = [sys.executable, "-m", "ulr", "propensity", "--method", method, "--input", str(path),
           "--json", "--bootstrap", "0"]  # the point estimate, as before the default of 50
    if not (kind == "csv" and method == "em"):  # the checked in-place CSV scan serves em
        cmd += ["--engine", "duckdb"]
    return cmd


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--queries", type=int, default=100_000,
                    help="queries x 10 documents = query-document pairs (default 1M pairs)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    ap.add_argument("--formats", default="csv,parquet")
    ap.add_argument("--methods", default="em,randomization")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--regen", action="store_true")
    args = ap.parse_args(argv)

    files = ensure_files(args.out, args.rows, args.queries, args.regen)
    methods = args.methods.split(",")
    print(f"\n{args.rows:,} impressions, {args.queries * DOCS:,} query-document pairs, "
          f"{os.cpu_count()} CPUs, best of {args.repeat}; targets: <= 2x the bare scan "
          f"(em <= 1.2x, issue 37), < 8 GB peak (issue 13)")
    for kind in args.formats.split(","):
        path = files[kind]
        bare = min((run_child([sys.executable, "-c", BARE, str(path)]) for _ in
                    range(args.repeat)), key=lambda r: r[0])
        print(f"\n  {kind}: {path.stat().st_size / 1e9:.2f} GB")
        print(f"    bare GROUP BY            {bare[0]:7.2f} s   peak {bare[1]:5.2f} GB")
        for method in methods:
            runs = [run_child(ulr_cmd(path, kind, method)) for _ in range(args.repeat)]
            wall, mem, stdout = min(runs, key=lambda r: r[0])
            res = json.loads(stdout)
            truth = 1.0 / np.arange(1, len(res["theta"]) + 1)
            err = np.nanmax(np.abs(np.array(res["theta"], dtype=float) - truth))
            print(f"    ulr {method:<20s} {wall:7.2f} s   peak {mem:5.2f} GB   "
                  f"ratio {wall / bare[0]:4.2f}x   max |theta - 1/k| {err:.4f}"
                  + (f"   ({res['iterations']} iterations)" if "iterations" in res else ""),
                  flush=True)


if __name__ == "__main__":
    main()
