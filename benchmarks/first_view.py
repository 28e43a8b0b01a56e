"""A new visitor's first view of every page, beside a bare one-line Streamlit app.

Issue 25's target: the worst page within 1.5x the bare app. Each view is a new Streamlit
session on a server that has already served one session, timed from navigation until the
script run has finished and no new run follows, in two browsers. All the apps' servers run
at once and every page is visited in turn, ``--visits`` times, so a change in the
machine's load falls on the bare app and the pages alike:

- cold: a fresh browser context, as a browser that has never opened the app: it fetches
  every script Streamlit's page needs (the bare app needs the fewest: ulr's pages also
  fetch the widget, metric and table scripts, ~40 more files and ~1.5 MB);
- warm: a new tab of a browser that has opened the app's pages before (its HTTP cache
  holds Streamlit's hashed scripts, as for a returning visitor); still a new session.

"Idle" is Streamlit's own signal (the script run has ended), which the page's main thread
records only after the drawing before it: in a warm browser Plotly's script (4.7 MB) is at
hand and charts are drawn first, so warm can read slower than cold, where the chart script
arrives, and the chart is drawn, after the signal. The row "bare + 1 chart" is the
bare app with one small Plotly chart: what Plotly alone costs a view; "bare, deep link"
is a bare app with a menu of two one-line pages, opened at its second page's address.

Every page but Home is opened by its own address (``/data``), as a shared link is; the
bare app by ``/``. For such an address Streamlit's browser code first looks for the
server under the page's path (``/data/_stcore/health``, 404) and tries ``/`` after a
~110 ms pause, so each deep link pays that pause, in any Streamlit app with pages.

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

PAGES = ["", "data", "position_bias", "user_models", "compare_rankers", "severity_sweep", "bandit_lab",
         "off_policy", "debiased_recs", "report", "present"]
SETTLE_MS = 300
DEEP = [("", "Home", "Home"), ("page", "Page", "Page")]  # a bare menu app opened at /page


def first_views(browser, url: str, path: str, visits: int, warm=None) -> list[float]:
    """Seconds from navigation to an idle page, each in a new session: a new context, or a
    new tab of the ``warm`` context."""
    out = []
    for _ in range(visits):
        ctx = warm or browser.new_context(viewport={"width": 1300, "height": 900})
        pg = ctx.new_page()
        t = time.perf_counter()
        pg.goto(f"{url}/{path}", wait_until="commit")
        while True:
            pg.wait_for_function(IDLE_JS, timeout=180_000)
            pg.wait_for_timeout(SETTLE_MS)
            if pg.evaluate(IDLE_JS):
                break
        out.append(time.perf_counter() - t - SETTLE_MS / 1000)
        pg.close()
        if warm is None:
            ctx.close()
    return out


def bare_chart_app(folder: Path) -> Path:
    """The one-line app with one small Plotly chart: what Plotly alone costs a view (its
    4.7 MB script, then one chart), for reading the pages that draw charts."""
    app = folder / "bare_chart.py"
    app.write_text("import plotly.graph_objects as go\nimport streamlit as st\n"
                   "st.write('hello')\n"
                   "st.plotly_chart(go.Figure(go.Bar(x=[1, 2, 3], y=[3, 1, 2])))\n")
    return app


def main(visits: int, pages: list[str]) -> None:
    from playwright.sync_api import sync_playwright
    tmp = Path(tempfile.mkdtemp(prefix="ulr_first_view_"))
    rows = []  # (name, cold best, cold median, warm best, warm median)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-gpu",
                                          "--disable-dev-shm-usage"])
        deep = tmp / "deep"
        deep.mkdir()
        apps = [("bare app", bare_app(tmp), [""]),
                ("bare, deep link", bare_app(deep, DEEP), ["page"]),
                ("bare + 1 chart", bare_chart_app(tmp), [""]),
                ("ulr", ROOT / "app.py", pages)]
        servers, warm, views = [], {}, []   # views: (row name, url, path)
        try:
            for label, script, paths in apps:
                proc, url = serve(str(tmp / f"fv{len(servers)}.duckdb"), script)
                servers.append(proc)
                warm[url] = browser.new_context(viewport={"width": 1300, "height": 900})
                first_views(browser, url, paths[0], 1)  # the server's own first run
                for path in paths:  # the returning browser has opened every page once
                    first_views(browser, url, path, 1, warm=warm[url])
                    views.append((label if label != "ulr" else f"/{path}", url, path))
            cold = {name: [] for name, _, _ in views}
            hot = {name: [] for name, _, _ in views}
            for _ in range(visits):  # in turns, so a change in the machine's load falls on all
                for name, url, path in views:
                    cold[name] += first_views(browser, url, path, 1)
                    hot[name] += first_views(browser, url, path, 1, warm=warm[url])
            rows = [(name, min(cold[name]), statistics.median(cold[name]), min(hot[name]),
                     statistics.median(hot[name])) for name, _, _ in views]
        finally:
            for ctx in warm.values():
                ctx.close()
            for proc in servers:
                proc.terminate()
                proc.wait(10)
        browser.close()
    report(rows, visits)


def report(rows, visits: int) -> None:
    bare_cold, bare_warm = rows[0][1], rows[0][3]
    print(f"first view of a new session, best and median of {visits} (load average "
          f"{os.getloadavg()[0]:.1f}); cold: a browser new to the app; warm: a returning one")
    for name, cb, cm, wb, wm in rows:
        print(f"  {name:<18} cold best {cb:5.2f} s  median {cm:5.2f} s  {cb / bare_cold:4.1f}x"
              f" bare   warm best {wb:5.2f} s  median {wm:5.2f} s  {wb / bare_warm:4.1f}x bare")
    for col, label, bare in ((1, "cold", bare_cold), (3, "warm", bare_warm)):
        worst = max((r for r in rows if r[0].startswith("/")), key=lambda r: r[col])
        print(f"{label}: worst page {worst[0]}: {worst[col] / bare:.1f}x the bare app "
              f"(target <= 1.5x: {'OK' if worst[col] <= 1.5 * bare else 'OVER'})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--visits", type=int, default=3)
    ap.add_argument("--pages", default=",".join(PAGES))
    a = ap.parse_args()
    main(a.visits, [p.strip() for p in a.pages.split(",")])
