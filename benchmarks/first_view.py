"""A new visitor's first view of every page, beside a bare one-line Streamlit app.

Targets: the worst page's first view within 1.5x the bare app (issue 25, cold; issue
54, cold and warm), and fully drawn within 1.5x the bare app with one Plotly chart
(issue 54). Each view is a new Streamlit
session on a server that has already served one session, timed from navigation, in two
browsers. All the apps' servers run at once and every page is visited in turn,
``--visits`` times, so a change in the machine's load falls on the bare app and the pages
alike:

- cold: a fresh browser context, as a browser that has never opened the app: it fetches
  every script Streamlit's page needs (the bare app needs the fewest: ulr's pages also
  fetch the widget, metric and table scripts, ~40 more files and ~1.5 MB);
- warm: a new tab of a browser that has opened the app's pages before (its HTTP cache
  holds Streamlit's hashed scripts, as for a returning visitor); still a new session.

Two end points, each held for 300 ms:

- idle (the target's): Streamlit's own signal that the script run has ended, which the
  page's main thread records only after the drawing before it. Streamlit loads each
  kind of element's script when it first draws one, and shows a grey placeholder
  until then, so a chart can still be coming at "idle";
- drawn: idle, no placeholder left, and every Plotly chart drawn: what the visitor
  waits for before the whole page is there. Plotly's script is 4.7 MB; the row
  "bare + 1 chart" (the bare app with one small Plotly chart) shows what it costs alone.

References, printed beside the bare app and never used for the verdict: "bare, deep
link" is a bare app with a menu of two one-line pages, opened at its second page's
address; "bare, no Nagle" is the bare app with the one call ulr's app.py makes
(``ulr/server.send_at_once``), so it is not held by the wait for the browser's
acknowledgements that Streamlit's server leaves on: the like-for-like floor.

Every page but Home is opened by its own address (``/data``), as a shared link is; the
bare app by ``/``. For such an address Streamlit's browser code first looks for the
server under the page's path (``/data/_stcore/health``, 404) and tries ``/`` after a
~110 ms pause, so each deep link pays that pause, in any Streamlit app with pages.

Run: python benchmarks/first_view.py [--visits 8] [--pages home,data,...]

Prints, per page and end point, the best and median of ``--visits`` first views and the
ratio of the best to the bare app's best. The targets are read from rounds, not from the
best: in each round every app is visited in turn, each page's view is divided by the
reference's view of the same round, and the median of those ratios comes with a
distribution-free 95% interval (order statistics; 6 rounds or more). A target is met
when every page's interval is within 1.5x, not met when one page's interval is wholly
beyond it, and otherwise the runs cannot tell the pages from the target: a best of 3
moved a page's ratio by 0.2-0.6x between runs of the same code. Beside each ratio,
the same against the reference opened by a deep link ("chart, deep link": the bare app
with one chart as the second page of a menu, opened at its address).

Figures behind choices a first view depends on, as measured when they were made: a full
garbage collection over the ~200,000 objects a page's first run imports paused 40-130 ms
(hence ``ulr.server.frozen_imports``); a private in-memory DuckDB per session cost each
new visitor ~15 ms to open (hence one shared database per store,
``ulr.data.catalog.cursor``).
"""

from __future__ import annotations

import argparse
import math
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
DRAWN_JS = IDLE_JS.replace("=== 'CONNECTED';", """=== 'CONNECTED'
    && !document.querySelector('[data-testid="stSkeleton"]')
    && [...document.querySelectorAll('.js-plotly-plot')].every(c => c.querySelector('.main-svg'));""")
assert DRAWN_JS != IDLE_JS, "soak.IDLE_JS changed: extend DRAWN_JS with it"
# In the page, on every frame: since when (performance.now()) each end point has held.
WATCH_JS = f"""(() => {{
  const idle = {IDLE_JS}, drawn = {DRAWN_JS};
  window.__since = {{idle: null, drawn: null}};
  const tick = () => {{
    const s = window.__since, i = !!idle(), d = i && !!drawn();
    s.idle = i ? (s.idle ?? performance.now()) : null;
    s.drawn = d ? (s.drawn ?? performance.now()) : null;
    requestAnimationFrame(tick);
  }};
  requestAnimationFrame(tick);
}})();"""
HELD_JS = "() => window.__since && window.__since.drawn !== null"
#: the one small chart of both reference apps with a chart
CHART = "st.plotly_chart(go.Figure(go.Bar(x=[1, 2, 3], y=[3, 1, 2])))"


def first_views(browser, url: str, path: str, visits: int, warm=None) -> list[tuple]:
    """``(idle, drawn)`` seconds from navigation to the moment each end point began to
    hold for good, each view in a new session: a new context, or a new tab of the
    ``warm`` context."""
    out = []
    for _ in range(visits):
        ctx = warm or browser.new_context(viewport={"width": 1300, "height": 900})
        pg = ctx.new_page()
        pg.add_init_script(WATCH_JS)
        t = time.perf_counter()
        pg.goto(f"{url}/{path}", wait_until="commit")
        while True:   # drawn, and still drawn SETTLE_MS later (a run may follow the first)
            pg.wait_for_function(HELD_JS, timeout=180_000)
            pg.wait_for_timeout(SETTLE_MS)
            since = pg.evaluate("() => ({...window.__since, now: performance.now()})")
            now = time.perf_counter() - t
            if since["drawn"] is not None and since["now"] - since["drawn"] >= SETTLE_MS:
                break
        out.append(tuple(now - (since["now"] - since[end]) / 1000 for end in ("idle", "drawn")))
        pg.close()
        if warm is None:
            ctx.close()
    return out


def bare_chart_app(folder: Path) -> Path:
    """The one-line app with one small Plotly chart: what Plotly alone costs a view (its
    4.7 MB script, then one chart), for reading the pages that draw charts."""
    app = folder / "bare_chart.py"
    app.write_text("import plotly.graph_objects as go\nimport streamlit as st\n"
                   "st.write('hello')\n" + CHART + "\n")
    return app


def bare_chart_deep_app(folder: Path) -> Path:
    """The bare app with one chart as the second page of a two-page menu, opened at that
    page's address as ulr's pages are (``/page``): the like-for-like reference for a
    page opened by a shared link."""
    app = folder / "bare_chart_deep.py"
    app.write_text("import plotly.graph_objects as go\nimport streamlit as st\n\n\n"
                   "def chart():\n    st.write('hello')\n    " + CHART + "\n\n\n"
                   "st.navigation([st.Page(lambda: st.title('Home'), title='Home', "
                   "url_path='', default=True),\n"
                   "               st.Page(chart, title='Page', url_path='page')]).run()\n")
    return app


def main(visits: int, pages: list[str]) -> None:
    from playwright.sync_api import sync_playwright
    tmp = Path(tempfile.mkdtemp(prefix="ulr_first_view_"))
    rows = []  # (name, {(kind, end point): (best, median)})
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-gpu",
                                          "--disable-dev-shm-usage"])
        deep = tmp / "deep"
        deep.mkdir()
        apps = [("bare app", bare_app(tmp), [""]),
                ("bare, deep link", bare_app(deep, DEEP), ["page"]),
                ("bare, no Nagle", bare_app(tmp, no_nagle=True), [""]),
                ("bare + 1 chart", bare_chart_app(tmp), [""]),
                ("chart, deep link", bare_chart_deep_app(deep), ["page"]),
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
            rows = [(name, summary(cold[name], hot[name])) for name, _, _ in views]
            paired = {name: {"cold": cold[name], "warm": hot[name]} for name, _, _ in views}
        finally:
            for ctx in warm.values():
                ctx.close()
            for proc in servers:
                proc.terminate()
                proc.wait(10)
        browser.close()
    report(rows, visits, paired)


def summary(cold: list[tuple], warm: list[tuple]) -> dict:
    """``{(kind, end point): (best, median)}`` of one row's views."""
    out = {}
    for kind, views in (("cold", cold), ("warm", warm)):
        for k, end in enumerate(("idle", "drawn")):
            xs = [v[k] for v in views]
            out[kind, end] = (min(xs), statistics.median(xs))
    return out


def median_interval(xs: list[float], level: float = 0.95):
    """The median of ``xs`` and a distribution-free interval for it: the order statistics
    ``x_(k)``, ``x_(n-k+1)`` with the largest ``k`` whose binomial coverage
    ``1 - 2 P(Binomial(n, 1/2) < k)`` is at least ``level``; ``None`` for the interval
    when even the extremes cover less (fewer than 6 values)."""
    xs = sorted(xs)
    n = len(xs)
    k, below = 0, 0.0   # below: P(Binomial(n, 1/2) < k + 1), growing with k
    while True:
        nxt = below + math.comb(n, k) / 2 ** n
        if 1 - 2 * nxt < level:
            break
        k, below = k + 1, nxt
    return statistics.median(xs), ((xs[k - 1], xs[n - k]) if k >= 1 else None)


def paired_ratios(page: list[tuple], ref: list[tuple], end: int) -> list[float]:
    """Each round's view of a page over the reference's view in the same round (the
    rounds visit every app in turn, so a change in the machine's load falls on both)."""
    return [p[end] / r[end] for p, r in zip(page, ref)]


def verdict(lo: float, hi: float, target: float = 1.5) -> str:
    """Met only when the whole interval is within the target; not met only when all of
    it is beyond; otherwise the runs cannot tell the page from the target."""
    return "met" if hi <= target else "NOT met" if lo > target else \
        f"cannot be told from {target}x"


def report(rows, visits: int, paired: dict) -> None:
    bare = dict(rows)["bare app"]
    print(f"first view of a new session, best and median of {visits} (load average "
          f"{os.getloadavg()[0]:.1f}); cold: a browser new to the app; warm: a returning "
          "one; idle: the run has ended; drawn: no placeholder left, every chart drawn")
    for kind in ("cold", "warm"):
        print(f"  {kind:<18}" + "".join(f"{end + ' best':>12}{'median':>8}{'x bare':>8}"
                                        for end in ("idle", "drawn")))
        for name, stats in rows:
            print(f"  {name:<18}" + "".join(
                f"{stats[kind, end][0]:>10.2f} s{stats[kind, end][1]:>6.2f} s"
                f"{stats[kind, end][0] / bare[kind, end][0]:>7.1f}x" for end in ("idle", "drawn")))
    # Issue 25 (cold idle) and 54 (all four): every page within 1.5x the bare app (idle)
    # or the bare app with one chart (drawn). Read as each round's page over the same
    # round's reference: the median of those ratios and its 95% interval, per page.
    refs = {"idle": ("bare app", "bare, deep link"), "drawn": ("bare + 1 chart", "chart, deep link")}
    pages = [name for name, _ in rows if name.startswith("/")]
    print(f"per page: the median over {visits} rounds of (page / reference in the same "
          "round) [its 95% interval]; the issue's reference first, then the same opened "
          "by a deep link, as the pages are")
    for kind in ("cold", "warm"):
        for k, end in enumerate(("idle", "drawn")):
            for ref_name in refs[end]:
                ref = paired[ref_name][kind]
                stats = {n: median_interval(paired_ratios(paired[n][kind], ref, k))
                         for n in pages}
                print(f"  {kind} {end}, against {ref_name}: " + "; ".join(
                    f"{n} {mid:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
                    for n, (mid, ci) in stats.items()))
                worst = max(pages, key=lambda n: stats[n][0])
                print(f"{kind} {end}: worst page {worst} {stats[worst][0]:.2f}x {ref_name} "
                      f"(target <= 1.5x: {reading(stats)})")


def reading(stats: dict) -> str:
    """The target's verdict over every page: not met if one page's interval is wholly
    beyond 1.5x, met if every page's is within it, else the runs cannot tell."""
    if any(ci is None for _, ci in stats.values()):
        return "too few rounds for an interval (--visits 6 or more)"
    words = {n: verdict(*ci) for n, (_, ci) in stats.items()}
    beyond = [n for n, w in words.items() if w == "NOT met"]
    unclear = [n for n, w in words.items() if w not in ("met", "NOT met")]
    if beyond:
        return "NOT met (" + ", ".join(beyond) + ")"
    if unclear:
        return "cannot be told from 1.5x (" + ", ".join(unclear) + ")"
    return "met"


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--visits", type=int, default=8)
    ap.add_argument("--pages", default=",".join(PAGES))
    a = ap.parse_args()
    main(a.visits, [p.strip() for p in a.pages.split(",")])
