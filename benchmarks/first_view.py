"""A new visitor's first view of every page, beside a bare one-line Streamlit app.

Issue 25's target: the worst page within 1.5x the bare app. Each view is a fresh browser
context (a new Streamlit session) on a server that has already served one session, timed
from navigation until the script run has finished and no new run follows.

Run: python benchmarks/first_view.py [--visits 3] [--pages home,data,...]

Prints, per page, the best and median of ``--visits`` first views and the ratio of the
best to the bare app's best. On a shared machine, read the best: the median also counts
time other processes held the cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.soak import IDLE_JS, bare_app, serve  # noqa: E402

PAGES = ["", "data", "position_bias", "compare_rankers", "severity_sweep", "bandit_lab",
         "off_policy", "debiased_recs", "report", "present"]
SETTLE_MS = 300


def first_views(browser, url: str, path: str, visits: int) -> list[float]:
    """Seconds from navigation to an idle page, each in a new session."""
    out = []
    for _ in range(visits):
        ctx = browser.new_context(viewport={"width": 1300, "height": 900})
        pg = ctx.new_page()
        t = time.perf_counter()
        pg.goto(f"{url}/{path}", wait_until="commit")
        while True:
            pg.wait_for_function(IDLE_JS, timeout=180_000)
            pg.wait_for_timeout(SETTLE_MS)
            if pg.evaluate(IDLE_JS):
                break
        out.append(time.perf_counter() - t - SETTLE_MS / 1000)
        ctx.close()
    return out


def main(visits: int, pages: list[str]) -> None:
    from playwright.sync_api import sync_playwright
    tmp = Path(tempfile.mkdtemp(prefix="ulr_first_view_"))
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-gpu",
                                          "--disable-dev-shm-usage"])
        for label, script, paths in (("bare app", bare_app(tmp), [""]),
                                     ("ulr", ROOT / "app.py", pages)):
            proc, url = serve(str(tmp / "fv.duckdb"), script)
            try:
                first_views(browser, url, paths[0], 1)  # the server's own first run
                for path in paths:
                    xs = first_views(browser, url, path, visits)
                    rows.append((label if label == "bare app" else f"/{path}", min(xs),
                                 statistics.median(xs)))
            finally:
                proc.terminate()
                proc.wait(10)
        browser.close()
    bare = rows[0][1]
    print(f"first view of a new session, best and median of {visits} (load average "
          f"{os.getloadavg()[0]:.1f})")
    for name, best, med in rows:
        print(f"  {name:<20} best {best:6.2f} s   median {med:6.2f} s   {best / bare:5.1f}x bare")
    worst = max(rows[1:], key=lambda r: r[1])
    print(f"worst page {worst[0]}: {worst[1] / bare:.1f}x the bare app (target <= 1.5x: "
          f"{'OK' if worst[1] <= 1.5 * bare else 'OVER'})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--visits", type=int, default=3)
    ap.add_argument("--pages", default=",".join(PAGES))
    a = ap.parse_args()
    main(a.visits, [p.strip() for p in a.pages.split(",")])
