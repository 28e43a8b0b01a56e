"""Soak and store figures: page latency under concurrent sessions, and why the store is built
as it is (Parquet files behind a flock-guarded catalog).

Run: python benchmarks/soak.py [--sessions 1,4,8] [--rounds 4] [--load-rows 5000000]
                               [--groupby-rows 10000000] [--skip-pages] [--skip-store]

It prints:
1. p50/p95 page latency (navigation to a finished script run, in headless Chromium at
   /usr/bin/chromium) with 1, 4 and 8 sessions browsing the app at once;
2. catalog and reader latency while another process loads a big CSV, and how long the
   load holds the store (the rename + catalog insert) against how long a load into a
   native DuckDB table would hold the database file (the whole table write);
3. GROUP BY time on a Parquet view against a native DuckDB table.
Big files go to a temporary folder (or $ULR_BENCH_DIR) and are removed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from ulr import store  # noqa: E402

PAGES = ["/?dataset=sample", "/data?dataset=sample", "/position_bias?dataset=sample",
         "/compare_rankers?dataset=sample"]
IDLE_JS = """() => { const a = document.querySelector('[data-testid="stApp"]');
  return a && a.getAttribute('data-test-script-state') === 'notRunning'
         && a.getAttribute('data-test-connection-state') === 'CONNECTED'; }"""


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


# --------------------------------------------------------------------------- pages


def serve(db: str, script: Path = ROOT / "app.py"):
    """``streamlit run script`` (the app by default) on a free port with store ``db``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, ULR_DB=db)
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(script),
                             "--server.headless", "true", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false",
                             "--server.fileWatcherType", "none"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    import urllib.request
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("streamlit did not start")


async def session(browser, url, rounds, out):
    ctx = await browser.new_context(viewport={"width": 1300, "height": 900})
    pg = await ctx.new_page()
    for r in range(rounds):
        for path in PAGES:
            t = time.perf_counter()
            await pg.goto(url + path, wait_until="commit")
            await pg.wait_for_timeout(150)  # let the run start before asking if it finished
            await pg.wait_for_function(IDLE_JS, timeout=180_000)
            if r:  # round 0 warms the caches of this session's pages
                out.append(time.perf_counter() - t - 0.15)
    await ctx.close()


async def page_latency(url, sessions, rounds):
    from playwright.async_api import async_playwright
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                          args=["--no-sandbox", "--disable-gpu",
                                                "--disable-dev-shm-usage"])
        out: list[float] = []
        await asyncio.gather(*(session(browser, url, rounds, out) for _ in range(sessions)))
        await browser.close()
    return out


def bench_pages(levels, rounds, tmp):
    proc, url = serve(str(tmp / "pages.duckdb"))
    try:
        print("page latency (navigation -> script run finished), pages: "
              + ", ".join(p.split("?")[0] for p in PAGES))
        for n in levels:
            xs = asyncio.run(page_latency(url, n, rounds))
            print(f"  {n} session{'s' if n > 1 else ' '}: p50 {pct(xs, .5) * 1000:7.0f} ms   "
                  f"p95 {pct(xs, .95) * 1000:7.0f} ms   ({len(xs)} page views)")
    finally:
        proc.terminate()
        proc.wait(10)


# --------------------------------------------------------------------------- store


def write_csv(path: Path, rows: int) -> None:
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT 'q' || (i // 10) AS query_id, 'd' || (hash(i) % 200000) AS doc_id,
                   (i % 10) + 1 AS position, CAST(hash(i * 7) % 100 < 5 AS INT) AS click
                   FROM range({rows}) t(i)) TO '{path}' (HEADER)""")
    con.close()


def bench_reader_during_load(rows, tmp):
    db = tmp / "load.duckdb"
    store.ensure_sample(db)
    csv = tmp / "big.csv"
    write_csv(csv, rows)
    lat, waits, stop = [], [], threading.Event()

    def reader():
        cur = store.cursor(db)
        while not stop.is_set():
            t = time.perf_counter()
            with store.catalog(db, on_wait=waits.append):
                pass
            store.list_datasets(cur)
            log = store.open_dataset("sample", cur=cur)
            store.ctr_by_position(log)
            lat.append(time.perf_counter() - t)
            time.sleep(0.02)

    th = threading.Thread(target=reader)
    th.start()
    time.sleep(1.0)
    idle = list(lat)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "ulr", "load", str(csv), "--db", str(db),
                        "--name", "big"], cwd=ROOT, capture_output=True, text=True)
    t_load = time.perf_counter() - t
    during = lat[len(idle):]
    stop.set()
    th.join()
    assert p.returncode == 0, p.stderr
    print(f"reader (catalog list + open + CTR by position on the sample), {rows:,}-row CSV "
          f"loaded by another process in {t_load:.1f} s:")
    print(f"  idle:        p50 {pct(idle, .5) * 1000:6.1f} ms  p95 {pct(idle, .95) * 1000:6.1f} ms"
          f"  ({len(idle)} reads)")
    print(f"  during load: p50 {pct(during, .5) * 1000:6.1f} ms  p95 "
          f"{pct(during, .95) * 1000:6.1f} ms  max {max(during) * 1000:6.1f} ms  "
          f"({len(during)} reads; longest wait for the lock {max(waits, default=0) * 1000:.0f} ms)")
    # the alternative: datasets as tables in the DuckDB file; a load holds the file's write
    # lock while it writes the table (staging and checks could run outside it)
    alt = duckdb.connect(str(tmp / "native.duckdb"))
    alt.execute("CREATE TEMP TABLE stg AS SELECT * FROM read_parquet(?)",
                [str(store.files_dir(db) / (store.get_dataset(store.cursor(db), "big").table
                                             + ".parquet"))])
    t = time.perf_counter()
    alt.execute("BEGIN; CREATE TABLE ds AS SELECT * FROM stg; COMMIT; CHECKPOINT")
    hold_native = time.perf_counter() - t
    alt.close()
    print(f"  a load holds the store: Parquet + catalog ~{max(waits, default=0) * 1000:.0f} ms "
          f"(rename + insert); a native DuckDB table would hold the file {hold_native:.2f} s "
          "(table write + checkpoint), blocking every other process's catalog reads")


def bench_groupby(rows, tmp):
    con = duckdb.connect(str(tmp / "gb.duckdb"), config={"memory_limit": store.MEMORY_LIMIT})
    con.execute(f"""CREATE TABLE t AS SELECT 'q' || (i // 10) AS query_id,
        'd' || (hash(i) % 200000) AS doc_id, (i % 10 + 1)::BIGINT AS position,
        hash(i * 7) % 100 < 5 AS click FROM range({rows}) r(i)""")
    pq = tmp / "gb.parquet"
    con.execute(f"COPY t TO '{pq}' (FORMAT parquet, COMPRESSION zstd)")
    con.execute(f"CREATE VIEW v AS SELECT * FROM read_parquet('{pq}')")
    queries = {
        "CTR by position": "SELECT position, count(*), sum(click::INT) FROM {} GROUP BY 1",
        "clicks per query": "SELECT query_id, sum(click::INT) FROM {} GROUP BY 1",
        "count distinct docs": "SELECT count(DISTINCT doc_id) FROM {}",
    }
    print(f"GROUP BY at {rows:,} rows (median of 3):  native table | Parquet view")
    for label, q in queries.items():
        times = {}
        for src in ("t", "v"):
            xs = []
            for _ in range(3):
                t = time.perf_counter()
                con.execute(q.format(src)).fetchall()
                xs.append(time.perf_counter() - t)
            times[src] = statistics.median(xs)
        print(f"  {label:20s} {times['t'] * 1000:8.0f} ms | {times['v'] * 1000:8.0f} ms")
    con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="1,4,8")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--load-rows", type=int, default=5_000_000)
    ap.add_argument("--groupby-rows", type=int, default=10_000_000)
    ap.add_argument("--skip-pages", action="store_true")
    ap.add_argument("--skip-store", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ulr_soak_", dir=os.environ.get("ULR_BENCH_DIR")))
    try:
        if not args.skip_store:
            bench_reader_during_load(args.load_rows, tmp)
            bench_groupby(args.groupby_rows, tmp)
        if not args.skip_pages:
            bench_pages([int(n) for n in args.sessions.split(",")], args.rounds, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
