"""Spark against DuckDB on the same 10M-impression log, and the time to add one partition.

    python benchmarks/bench_engines.py [--out DIR | --csv FILE] [--parts 10] [--master local[2]]

Takes the 10M-impression CSV of ``bench_propensity.py`` (``DIR/big_10000000_20000q.csv``,
generated there if missing; ``DIR`` defaults to ``benchmarks/out``) or ``--csv FILE``,
converts it to a Parquet lake of ``--parts`` files once (beside the CSV, reused
afterwards), then times, each from the same files:
- the em estimate (aggregate query + local EM) on the DuckDB and on the Spark engine,
  and checks that their theta agree to 1e-9;
- ``source add`` (every partition aggregated) and adding ONE new partition
  (``source refresh`` after one more file lands), on DuckDB;
- em from the stored statistics against em scanning the rows (the stored
  running total is read, not the partitions: it must not be slower).
Spark's figures include its query planning but not the JVM start (timed separately).
``--no-spark`` skips the Spark part (CPU is shared).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ulr import engines, propensity  # noqa: E402

from ulr.data.files import memory_connection  # noqa: E402
from ulr.engines import sources  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_propensity import OUT, ensure_csv  # noqa: E402  (the same 10M log)


def lake_of(csv: Path, parts: int) -> Path:
    lake = csv.with_name(csv.stem + f"_lake{parts}")
    if not lake.exists():
        t0 = time.perf_counter()
        tmp = lake.with_name(lake.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        cur = memory_connection()
        cur.execute("CREATE TABLE t AS SELECT * FROM read_csv($p, header = true)", {"p": str(csv)})
        for i in range(parts):
            cur.execute(f"COPY (SELECT * FROM t WHERE session_id % {parts} = {i}) TO "
                        f"'{tmp}/part-{i:03d}.parquet' (FORMAT parquet)")
        tmp.rename(lake)
        print(f"converted {csv.name} to {parts} Parquet files in {time.perf_counter() - t0:.1f} s")
    return lake


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=OUT, help="folder of the generated CSV")
    ap.add_argument("--csv", type=Path, help="another CSV in the click-log schema")
    ap.add_argument("--parts", type=int, default=10)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark engine")
    a = ap.parse_args()
    csv = a.csv
    if csv is None:
        csv = a.out / "big_10000000_20000q.csv"
        ensure_csv(csv, 10_000_000, 20_000, regen=False)
    lake = lake_of(csv, a.parts)
    files = sorted(lake.glob("*.parquet"))
    glob = str(lake / "*.parquet")

    duck = engines.get("duckdb")
    rd, td = timed(lambda: propensity.estimate(duck.scan(path=glob), method="em"))
    print(f"duckdb engine, em on {rd.rows_used:,} rows: {td:.2f} s")
    if not a.no_spark:
        spark_vs_duckdb(lake, a.master, rd, td)
    sources_timings(files, td)


def spark_vs_duckdb(lake, master, rd, td):
    spk = engines.get("spark", master=master, conf={"spark.driver.memory": "4g",
                                                    "spark.sql.shuffle.partitions": "8"})
    _, tj = timed(lambda: spk.spark)
    print(f"spark {master}: session start {tj:.1f} s")
    rs, ts = timed(lambda: propensity.estimate(spk.scan(path=str(lake)), method="em"))
    diff = float(np.max(np.abs(rs.theta - rd.theta)))
    print(f"spark engine, em on {rs.rows_used:,} rows: {ts:.2f} s "
          f"({ts / td:.1f}x duckdb); max |theta_spark - theta_duckdb| = {diff:.1e}")


def sources_timings(files, td):
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "ulr.duckdb"
        stage = Path(d) / "lake"
        stage.mkdir()
        for f in files[:-1]:
            (stage / f.name).symlink_to(f)
        _, t_all = timed(lambda: sources.add("big", path=str(stage / "*.parquet"), db_path=db))
        print(f"source add ({len(files) - 1} partitions, duckdb): {t_all:.2f} s")
        (stage / files[-1].name).symlink_to(files[-1])
        r, t_one = timed(lambda: sources.refresh("big", db_path=db))
        print(f"add one partition (source refresh, {r['scanned']} scanned, "
              f"{r['rows']:,} rows in all): {t_one:.2f} s")
        _, t_est = timed(lambda: propensity.estimate(sources.scan("big", db_path=db),
                                                     method="em"))
        print(f"em from the stored statistics: {t_est:.2f} s ({t_est / td:.2f}x em scanning "
              f"the rows, {td:.2f} s)")


if __name__ == "__main__":
    main()
