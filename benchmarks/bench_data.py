"""Data-path figures: simulate 1M rows, write them as CSV, load (validate + store) them.

Run: python benchmarks/bench_data.py [rows]

For reference: :func:`ulr.simulate.simulate_clicks` (vectorized over sessions) took about
a second for 1M rows when it was written.
"""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ulr.data import files, ingest  # noqa: E402
from ulr.simulate import simulate_clicks, write_log  # noqa: E402


def main(rows: int = 1_000_000) -> None:
    docs = 10
    t = time.perf_counter()
    sim = simulate_clicks(queries=rows // 100, positions=docs, sessions=rows // docs,
                          randomized_fraction=0.1, seed=0)
    t_sim = time.perf_counter() - t
    tmp = Path(tempfile.mkdtemp())
    csv = tmp / "big.csv"
    t = time.perf_counter()
    write_log(sim.df, str(csv))
    t_write = time.perf_counter() - t
    t = time.perf_counter()
    res = ingest.load_log(csv, "bench", db_path=tmp / "b.duckdb")
    t_load = time.perf_counter() - t
    t = time.perf_counter()
    log = ingest.open_file(csv)
    t_open = time.perf_counter() - t
    t = time.perf_counter()  # the line-length pass every CSV load makes first (issue 55)
    assert files.long_line(csv, files.MAX_LINE_BYTES) is None
    t_lines = time.perf_counter() - t
    assert res.rows == len(sim.df) == log.info.rows
    mb = csv.stat().st_size / 1e6
    print(f"rows                      {len(sim.df):>12,}")
    print(f"simulate                  {t_sim:>10.2f} s")
    print(f"write CSV ({mb:.0f} MB)         {t_write:>10.2f} s")
    print(f"load into DuckDB file     {t_load:>10.2f} s  ({len(sim.df) / t_load / 1e6:.2f} M rows/s)")
    print(f"open_file (in memory)     {t_open:>10.2f} s")
    print(f"of which line lengths     {t_lines:>10.2f} s  ({mb / t_lines:,.0f} MB/s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
