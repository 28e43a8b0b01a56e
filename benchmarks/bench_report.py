"""The report renders once (issue 54): the Report page, Present and the exports, before/after.

    python benchmarks/bench_report.py [--before /work/main] [--out DIR] [--items 12]
                                      [--small 2] [--only page,present,html,deck,zip,pdf,pptx]
                                      [--repeat 1]

The report: the first ``--items`` items with a chart of the audits of three real-shaped
logs (the bundled ``data/sample_ope.csv``, and :mod:`ulr.audit.logs`' search and
recommendation logs): CTR by position, position bias, user models, off-policy estimates,
a learned policy, ... as "Build the report" saves them (made once, kept in DIR).

Each checkout (``--before DIR``, e.g. ``/work/main``, run read-only as its own process
with ``cwd=DIR``; and this one) is timed in fresh processes on a store of its own, in
the same run, one after the other, for the report of ``--items`` items and for a small
one of ``--small`` items (a speed-up must not slow a small report):

- ``page``: the Report page's script run through Streamlit's AppTest (every item, its
  chart sent to the browser; the browser's own drawing is not counted), the first view
  in a new process and a second view (a rerun, as after an edit);
- ``present``: the Present page's script run, first and second view;
- ``html``, ``deck``, ``zip``, ``pdf``, ``pptx``: each export built in a new process
  (``first``: nothing drawn yet, the drawing after a save turned off), again in that
  process (``again``), in another new process on the same store (``new process``: what
  was kept with the saved report), and in a new process on a new store once the
  drawing that saving the items started (:mod:`ulr.report.ahead`) is done (``after
  save``: the user saves the items, reads, then exports; the drawing's own background
  time and the saves' time are printed too).

Prints one line per checkout, report, step and moment with the best and the median wall
seconds of ``--repeat`` runs (the sides alternate, so a change of load falls on both), and
the targets: the Report page with 12 items under 3 s; PDF and PowerPoint under 5 s each.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r'''
import json, os, sys, time, warnings, logging
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
sys.path.insert(0, os.getcwd())
items_path, n, steps, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4]
fresh = mode in ("fresh", "after save")
from ulr import report
from ulr.report import saved
OWNER = "browser:" + "a" * 32
items = json.load(open(items_path))[:n]
out = {}
def timed(name, fn):
    t0 = time.perf_counter(); fn(); out[name] = time.perf_counter() - t0
rid = None
if fresh:
    r = saved.create("Bench report", actor=OWNER)
    its = [report.ReportItem.from_dict(d) for d in items]
    t0 = time.perf_counter()
    for it in its:
        saved.add_item(r.id, it, actor=OWNER)
    out["save " + str(len(its)) + " items" + (" (drawing on)" if mode == "after save" else "")
        ] = time.perf_counter() - t0
if mode == "after save":  # the user saves, reads, then exports: the drawing had time
    try:
        from ulr.report import ahead
    except ImportError:  # a checkout without drawing after a save
        ahead = None
    if ahead is not None:
        timed("drawing after save (background)", lambda: ahead.idle(600))
rid = saved.list_reports(actor=OWNER)[0].id
its = saved.items(rid, actor=OWNER)
title = "Bench report"
for step in steps:
    if step in ("page", "present"):
        from streamlit.testing.v1 import AppTest
        at = AppTest.from_file(os.path.join(os.getcwd(), "app.py"), default_timeout=300)
        at.session_state["_ulr_identity"] = OWNER
        at.query_params["report"] = rid
        at.run()
        path = "pages/report.py" if step == "page" else "pages/present.py"
        timed(step + " first", lambda: at.switch_page(path).run())
        assert not at.exception, at.exception
        if step == "page":
            assert len(at.get("plotly_chart")) == sum(1 for i in its if i.figure), "charts"
        timed(step + " again", lambda: at.run())
        continue
    from ulr.report.powerpoint import build_pptx
    build = {"html": lambda: report.build_html(its, title=title),
             "deck": lambda: report.build_deck(its, title=title),
             "zip": lambda: report.build_zip(its),
             "pdf": lambda: report.build_pdf(its, title=title),
             "pptx": lambda: build_pptx(its, title=title)}[step]
    timed(step + {"fresh": " first", "after save": " after save"}.get(mode, " new process"),
          build)
    if mode == "fresh":
        timed(step + " again", build)
print("BENCH" + json.dumps(out))
'''


def _items(folder: Path, n: int) -> Path:
    """The audits' report items with a chart, as saved (made once per DIR)."""
    path = folder / "items.json"
    if path.exists() and len(json.loads(path.read_text())) >= n:
        return path
    sys.path.insert(0, str(ROOT))
    from ulr import audit
    from ulr.audit import logs
    from ulr.audit.report import answer_item
    from ulr.data import catalog, ingest
    out = []
    sources = [("sample_ope", ROOT / "data" / "sample_ope.csv", None),
               ("search", *logs.search_log(folder / "search.csv", sessions=1000)),
               ("recommendations", *logs.recommendation_log(folder / "recs.csv",
                                                            sessions=2000))]
    for name, csv, mapping in sources:
        db = str(folder / f"{name}.duckdb")
        ingest.load_log(csv, name, db_path=db, mapping=mapping, replace=True)
        result = audit.run(catalog.open_dataset(name, cur=catalog.cursor(db)))
        out += [answer_item(a, dataset=name).to_dict() for a in result.answers
                if a.answerable and a.fig is not None]
    path.write_text(json.dumps(out))
    return path


def _child(cwd: str, store: str, items: Path, n: int, steps: list[str], mode: str) -> dict:
    """One new process timing ``steps``: ``mode`` "fresh" (a new store, nothing drawn:
    the drawing after a save is off), "again" (the store of a "fresh" run) or "after
    save" (a new store; the saves' drawing, ``ulr.report.ahead``, waited for)."""
    env = {**os.environ, "ULR_DB": store, "PYTHONWARNINGS": "ignore",
           "ULR_DRAW_AHEAD": "1" if mode == "after save" else "0"}
    p = subprocess.run([sys.executable, "-c", _CHILD, str(items), str(n), ",".join(steps),
                        mode], cwd=cwd, env=env, capture_output=True, text=True)
    line = next((x for x in p.stdout.splitlines() if x.startswith("BENCH")), None)
    if p.returncode != 0 or line is None:
        raise SystemExit(f"the bench's child failed in {cwd}:\n{p.stderr[-3000:]}")
    return json.loads(line[5:])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="another checkout to time beside this one")
    ap.add_argument("--out", help="folder for the logs, items and stores (default: temp)")
    ap.add_argument("--items", type=int, default=12)
    ap.add_argument("--small", type=int, default=2)
    ap.add_argument("--only", default="page,present,html,deck,zip,pdf,pptx")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each side, alternating (the best and the median printed)")
    args = ap.parse_args(argv)
    folder = Path(args.out or tempfile.mkdtemp(prefix="bench_report_"))
    folder.mkdir(parents=True, exist_ok=True)
    items = _items(folder, args.items)
    have = len(json.loads(items.read_text()))
    if have < args.items:
        raise SystemExit(f"the audits gave {have} items with a chart, fewer than {args.items}")
    steps = args.only.split(",")
    exports = [s for s in steps if s not in ("page", "present")]
    sides = ([("before", args.before)] if args.before else []) + [("after", str(ROOT))]
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print(f"{'side':<7} {'items':>5} {'step':<22} {'best s':>8} {'median s':>9}")
    for n in (args.items, args.small):
        runs: dict = {}
        for _ in range(args.repeat):  # the sides alternate: a change of load falls on both
            for side, cwd in sides:
                store = tempfile.mkdtemp(prefix=f"store_{side}_", dir=folder) + "/store.duckdb"
                res = _child(cwd, store, items, n, steps, "fresh")
                if exports:
                    res.update(_child(cwd, store, items, n, exports, "again"))
                    store = (tempfile.mkdtemp(prefix=f"store_{side}_", dir=folder)
                             + "/store.duckdb")
                    res.update(_child(cwd, store, items, n, exports, "after save"))
                for k, v in res.items():
                    runs.setdefault((side, k), []).append(v)
        for (side, k), vs in runs.items():
            print(f"{side:<7} {n:>5} {k:<22} {min(vs):8.2f} {statistics.median(vs):9.2f}",
                  flush=True)
    print("targets (12 items): page first < 3 s; pdf < 5 s; pptx < 5 s")


if __name__ == "__main__":
    main()
