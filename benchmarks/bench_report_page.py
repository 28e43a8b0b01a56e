"""The Report page with 12 items in a browser: first view and fully drawn (issue 54).

    python benchmarks/bench_report_page.py [--items 12] [--small 2] [--visits 3]
                                           [--before DIR] [--out DIR]

``bench_report.py --only page`` times the page's script run (AppTest); the browser's own
drawing, most of what a visitor waits for, is measured here. The report holds the first
``--items`` chart items of the audits (``bench_report.py``'s ``items.json``, made once in
``--out``), saved by their owner the way "Add to report" saves them, with the drawing
after a save on (:mod:`ulr.report.ahead`, waited for), so the pictures it keeps are
there, as for a visitor who saved items earlier. A headless Chromium that holds the
owner's browser cookie opens ``/report?report=ID`` in a new tab (a returning browser:
Streamlit's scripts in its HTTP cache, a new session) ``--visits`` times after one
unmeasured view; the end points are ``first_view.py``'s: idle (the run has ended) and
drawn (no placeholder left, every Plotly chart drawn, every picture loaded).

``--before DIR`` serves another checkout (e.g. ``/work/main`` at an older commit) on the
same store, its views alternating with this checkout's. Prints best and median seconds
per checkout and report size, and the target: fully drawn with 12 items under 3 s.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.first_view import WATCH_JS  # noqa: E402
from benchmarks.soak import serve  # noqa: E402

TOKEN = "5e" * 16  # the visitor's browser cookie (ulr_browser): 32 hex characters
OWNER = "browser:" + hashlib.sha256(TOKEN.encode()).hexdigest()[:32]
PICTURES_LOADED = """() => [...document.querySelectorAll('[data-testid="stImage"] img')]
  .every(i => i.complete && i.naturalWidth > 0)"""

_SAVE = r'''
import json, sys
from ulr import report
from ulr.report import ahead, saved
items = json.load(open(sys.argv[1]))[:int(sys.argv[2])]
r = saved.create(sys.argv[3], actor=sys.argv[4])
for d in items:
    saved.add_item(r.id, report.ReportItem.from_dict(d), actor=sys.argv[4])
ahead.idle(600)  # the pictures drawn after the saves, kept with the report
print("REPORT" + r.id)
'''


def save_report(db: str, items: Path, n: int, title: str) -> str:
    env = {**os.environ, "ULR_DB": db, "ULR_DRAW_AHEAD": "1", "PYTHONWARNINGS": "ignore"}
    p = subprocess.run([sys.executable, "-c", _SAVE, str(items), str(n), title, OWNER],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    line = next((x for x in p.stdout.splitlines() if x.startswith("REPORT")), None)
    if p.returncode or line is None:
        raise SystemExit("saving the report failed:\n" + p.stderr[-3000:])
    return line[6:]


def view(ctx, url: str, rid: str) -> tuple[float, float, int, int]:
    """``(idle, drawn, charts, pictures)`` of one view in a new tab."""
    pg = ctx.new_page()
    pg.add_init_script(WATCH_JS)
    t = time.perf_counter()
    pg.goto(f"{url}/report?report={rid}", wait_until="commit")
    while True:   # drawn, pictures loaded, and still so 300 ms later
        pg.wait_for_function("() => window.__since && window.__since.drawn !== null",
                             timeout=180_000)
        pg.wait_for_function(PICTURES_LOADED, timeout=180_000)
        pg.wait_for_timeout(300)
        s = pg.evaluate("() => ({...window.__since, now: performance.now()})")
        if s["drawn"] is not None and s["now"] - s["drawn"] >= 300 and pg.evaluate(
                PICTURES_LOADED):
            break
    now = time.perf_counter() - t
    charts = pg.locator(".js-plotly-plot").count()
    pictures = pg.locator('[data-testid="stImage"] img').count()
    pg.close()
    idle, drawn = (now - (s["now"] - s[end]) / 1000 for end in ("idle", "drawn"))
    return idle, drawn, charts, pictures


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=12)
    ap.add_argument("--small", type=int, default=2)
    ap.add_argument("--visits", type=int, default=3)
    ap.add_argument("--before", help="another checkout to serve beside this one")
    ap.add_argument("--out", help="folder for the items and the store (default: temp)")
    args = ap.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="ulr_report_page_"))
    out.mkdir(parents=True, exist_ok=True)
    from benchmarks.bench_report import _items
    items = _items(out, max(args.items, args.small))
    db = str(out / f"page_{os.getpid()}.duckdb")
    reports = {n: save_report(db, items, n, f"Bench report ({n} items)")
               for n in (args.items, args.small)}
    sides = [("after", ROOT)] + ([("before", Path(args.before))] if args.before else [])
    from playwright.sync_api import sync_playwright
    servers, results = [], {}
    try:
        urls = {}
        for name, checkout in sides:
            proc, url = serve(db, checkout / "app.py", cwd=checkout)
            servers.append(proc)
            urls[name] = url
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-gpu",
                                              "--disable-dev-shm-usage"])
            ctx = browser.new_context(viewport={"width": 1300, "height": 900})
            for url in urls.values():
                ctx.add_cookies([{"name": "ulr_browser", "value": TOKEN, "url": url}])
            for name, _ in sides:  # each server's first session, not counted
                for rid in reports.values():
                    view(ctx, urls[name], rid)
            for v in range(args.visits):
                order = sides if v % 2 == 0 else sides[::-1]
                for n, rid in reports.items():
                    for name, _ in order:
                        results.setdefault((name, n), []).append(view(ctx, urls[name], rid))
            browser.close()
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(10)
    print(f"The Report page in a browser, best / median of {args.visits} views "
          f"(load average {os.getloadavg()[0]:.1f}); idle: the run has ended; drawn: every "
          "chart drawn and picture loaded")
    for (name, n), rs in sorted(results.items(), key=lambda kv: (-kv[0][1], kv[0][0])):
        idle, drawn = [r[0] for r in rs], [r[1] for r in rs]
        print(f"  {name:<7}{n:>3} items: idle {min(idle):5.2f} / {statistics.median(idle):5.2f} s, "
              f"drawn {min(drawn):5.2f} / {statistics.median(drawn):5.2f} s "
              f"({rs[-1][2]} live charts, {rs[-1][3]} pictures)")
    best = min(r[1] for r in results[("after", args.items)])
    print(f"target: the Report page with {args.items} items fully drawn under 3 s: "
          f"{best:.2f} s, {'met' if best < 3 else 'NOT met'}")


if __name__ == "__main__":
    main()
