"""The default ``propensity --method em`` (with its interval) before and after a change,
against DuckDB's bare GROUP BY over the same file (issue 54).

    python benchmarks/bench_em_interval.py [--rows 10000000] [--queries 20000] [--repeat 1]
                                           [--small-repeat 3] [--before /work/main]
                                           [--out /tmp] [--skip-big]

Each run is a fresh child process, interleaved so that before and after share the
machine's load:

- bare:    ``SELECT query_id, doc_id, position, count(*), sum(click) FROM read_csv(FILE)
           GROUP BY ALL`` (as in ``bench_propensity.py``);
- before:  ``python -m ulr propensity --input FILE --method em --json`` run from the
           ``--before`` checkout (e.g. 5996117: the score bootstrap over 4,096 session
           buckets, 50 replicates);
- after:   the same command from this checkout (since 2b024a5 the interval of the Fisher
           information);
- each of them also as the point estimate alone ("point": ``--bootstrap 0``, and
  ``--interval bootstrap`` where the checkout has ``--interval``, since the information's
  interval needs no replicate).

Targets (issue 54): the default within 2x the bare scan at 10M impressions, the point
estimate within 1.2x; small logs (``data/sample_clicks.csv`` and a 10,000-row log) no
slower. Also prints the old and new interval of ``data/sample_clicks.csv``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_propensity import BARE, ensure_csv, run_child  # noqa: E402


def child(cmd, cwd):
    """Wall seconds and stdout of ``cmd`` run in ``cwd`` (``run_child`` runs in ROOT)."""
    import time
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd[:5]))} in {cwd} failed: {out.stderr[-400:]}")
    return wall, out.stdout


# In one process: the estimate (with and without its interval) repeated, best of N; the
# process's imports and numba's load are paid once, so small logs show the estimate's cost.
INPROC = """
import sys, time
from ulr import propensity
from ulr.data.scan import csv_scan
path, n = sys.argv[1], int(sys.argv[2])
import inspect
has = "interval" in inspect.signature(propensity.estimate).parameters
for label, b in (("default", 50), ("point", 0)):
    kw = {"interval": "bootstrap"} if has and b == 0 else {}
    best = float("inf")
    for _ in range(n + 1):  # the first warms numba's kernels
        t0 = time.perf_counter()
        propensity.estimate(csv_scan(path), method="em", n_bootstrap=b, weigh_facts=False, **kw)
        best = min(best, time.perf_counter() - t0)
    print("RESULT", label, best)
"""


def inproc(path, repeat, before):
    """{label: best in-process seconds} of the estimate, before and after."""
    out = {}
    for who, cwd in (("before", before), ("after", ROOT)):
        _, text = child([sys.executable, "-c", INPROC, str(path), str(repeat)], cwd)
        for line in text.strip().splitlines():
            if line.startswith("RESULT "):
                _, b, sec = line.split()
                out[f"{who} {b}"] = float(sec)
    return out


def em_cmd(path, point: bool, cwd):
    """The default command, or the point estimate alone (``point``) in checkout ``cwd``."""
    cmd = [sys.executable, "-m", "ulr", "propensity", "--input", str(path), "--method", "em",
           "--json"]
    if not point:
        return cmd
    has = "--interval" in (Path(cwd) / "ulr" / "commands" / "propensity.py").read_text()
    return cmd + ["--bootstrap", "0"] + (["--interval", "bootstrap"] if has else [])


def measure(path, repeat, before, bare=True):
    """{label: [seconds]} and the last JSON result of each ulr command."""
    labels = (["bare"] if bare else []) + ["before default", "after default", "before point",
                                           "after point"]
    times = {k: [] for k in labels}
    res = {}
    for _ in range(repeat):
        if bare:
            times["bare"].append(child([sys.executable, "-c", BARE, str(path)], ROOT)[0])
        for label in labels[1 if bare else 0:]:
            who, b = label.split(" ")
            cwd = before if who == "before" else ROOT
            wall, out = child(em_cmd(path, b == "point", cwd), cwd)
            times[label].append(wall)
            res[label] = json.loads(out)
    return times, res


def show(title, times, res, targets=None):
    print(f"\n{title}")
    base = statistics.median(times["bare"]) if "bare" in times else None
    for label, ts in times.items():
        med = statistics.median(ts)
        ratio = f"  {med / base:5.2f}x bare" if base else ""
        print(f"  {label:<14} median {med:7.2f} s  (runs: {', '.join(f'{t:.2f}' for t in ts)})"
              f"{ratio}")
    if base and targets:
        for label, target in targets.items():
            r = statistics.median(times[label]) / base
            print(f"  target {label}: <= {target}x bare -> {r:.2f}x "
                  f"{'met' if r <= target else 'NOT met'}")
    for who in ("before", "after"):
        if f"{who} point" in res and f"{who} default" in res:
            same = res[f"{who} point"]["theta"] == res[f"{who} default"]["theta"]
            print(f"  {who}: theta with and without the interval identical: {same}")
    if "before default" in res and "after default" in res:
        print("  point estimates before == after (bit for bit): "
              f"{res['before default']['theta'] == res['after default']['theta']}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--small-repeat", type=int, default=3)
    ap.add_argument("--before", type=Path, default=Path("/work/main"),
                    help="a checkout of the code before the change (run, never written)")
    ap.add_argument("--out", type=Path, default=Path("/tmp"), help="folder for generated CSVs")
    ap.add_argument("--skip-big", action="store_true")
    args = ap.parse_args(argv)
    print(f"load: {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} CPUs")

    sample = ROOT / "data" / "sample_clicks.csv"
    small = args.out / "em_interval_10000.csv"
    if not small.exists():
        from ulr.simulate import simulate_clicks, write_log
        write_log(simulate_clicks(queries=100, positions=10, sessions=1000, seed=7).df,
                  str(small))
    for path in (sample, small):
        times, res = measure(path, args.small_repeat, args.before, bare=False)
        show(f"{path.name} ({res['after default']['rows_used']:,} rows)", times, res)
        best = inproc(path, max(args.small_repeat, 3), args.before)
        print("  in one process, best of "
              f"{max(args.small_repeat, 3)}: " + ", ".join(f"{k} {v:.3f} s"
                                                         for k, v in best.items()))
        if path == sample:
            print("  interval of theta (before -> after), position: [lower, upper]")
            b, a = res["before default"], res["after default"]
            for k in range(1, a["positions"]):
                print(f"    {k + 1:2d}: theta {a['theta'][k]:.4f}  "
                      f"[{b['lower'][k]:.4f}, {b['upper'][k]:.4f}] -> "
                      f"[{a['lower'][k]:.4f}, {a['upper'][k]:.4f}]  "
                      f"true {a.get('true_theta', [None] * 99)[k]}")
    if args.skip_big:
        return
    big = args.out / f"big_{args.rows}_{args.queries}q.csv"
    ensure_csv(big, args.rows, args.queries, False)
    times, res = measure(big, args.repeat, args.before)
    show(f"{big.name} ({res['after default']['rows_used']:,} impressions)", times, res,
         targets={"after default": 2.0, "after point": 1.2})
    b, a = res["before default"], res["after default"]
    print("  interval width (upper - lower) per position, before -> after:")
    print("    " + "  ".join(f"{k + 1}: {b['upper'][k] - b['lower'][k]:.4f}->"
                             f"{a['upper'][k] - a['lower'][k]:.4f}"
                             for k in range(1, a["positions"])))


if __name__ == "__main__":
    main()
