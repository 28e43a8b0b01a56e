"""What the dataset facts cost (ulr.facts, issue #50): the PBM's fit and the randomization
test, once per dataset version, on a search-shaped log.

    python benchmarks/bench_facts.py [--sessions 56000] [--out DIR]

Simulates sessions of 10 results over 20 queries clicked by the UBM (the shape of the web-search
log the issue was tried on), loads it into a throw-away store with every row declared
randomized (a production order, so the test rejects it), then times, in this process:

- the PBM's fit the first time (numba kernels compiled) and on a second, unseen version of the
  log (warm), then reading the kept fact;
- the randomization test, first and read back.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=56_000)
    ap.add_argument("--out", default=None, help="folder for the log and the store")
    args = ap.parse_args()
    from ulr import facts
    from ulr.cli import main as cli
    from ulr.data import catalog, ingest

    out = Path(args.out or tempfile.mkdtemp(prefix="bench_facts_"))
    out.mkdir(parents=True, exist_ok=True)
    db = out / "store.duckdb"
    logs = []
    for seed in (1, 2):
        path = out / f"search{seed}.csv"
        assert cli(["simulate", "--click-model", "ubm", "--orders", "3", "--queries", "20",
                    "--positions", "10", "--sessions", str(args.sessions), "--seed",
                    str(seed), "--out", str(path)]) == 0
        name = f"search {seed}"
        ingest.load_log(path, name, db_path=db, replace=True,
                        mapping={"constants": {"randomized": True}})
        logs.append(name)
    print(f"\n{args.sessions:,} sessions x 10 results ({args.sessions * 10:,} rows), "
          "20 queries, UBM clicks, declared randomized")

    def timed(what, fn):
        t0 = time.perf_counter()
        value = fn()
        print(f"  {what:<44s} {time.perf_counter() - t0:7.2f} s")
        return value

    first = catalog.open_dataset(logs[0], db_path=db)
    fit = timed("PBM fit, first (numba compiles)", lambda: facts.pbm_fit(first))
    second = catalog.open_dataset(logs[1], db_path=db)
    timed("PBM fit, another version (warm)", lambda: facts.pbm_fit(second))
    timed("PBM fit, read back", lambda: facts.pbm_fit(catalog.open_dataset(logs[0], db_path=db)))
    chk = timed("randomization test, first", lambda: facts.randomization_check(first))
    timed("randomization test, read back",
          lambda: facts.randomization_check(catalog.open_dataset(logs[0], db_path=db)))
    print(f"  PBM gap to {fit.best}: {fit.gap:.3f} nats per session "
          f"[{fit.lower:.3f}, {fit.upper:.3f}] -> misfit: {'yes' if fit.misfit else 'no'}")
    print(f"  randomization test on {chk.tested_rows:,} rows: p = {chk.p_value:.3f} -> "
          f"contradicted: {'yes' if chk.contradicted else 'no'}")


if __name__ == "__main__":
    main()
