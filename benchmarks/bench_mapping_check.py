"""The upload form's response time on a 1M-row CSV, with the mapping checked before Load.

Prints the check alone (``ulr.data.precheck.check_mapping``, on the file's first 100,000
rows) for a right mapping and for session_id mapped to a per-row timestamp, and the Data
page's server time through AppTest at each step of the form: the upload, a mapping change,
a re-run that changes nothing, and Load. ``--before DIR`` times the same steps on another
checkout (e.g. ``git archive <commit> | tar -x -C DIR``), where the mapping sat in a form
and was checked only after Load. Each figure is the median of ``--repeat`` runs.

``--browser`` also times, in headless Chromium against ``streamlit run``, how long after
choosing a wrong session column (a per-row timestamp) the page names it: before, only the
load's warning named it, after Load; after, the check does at once.

Run: python benchmarks/bench_mapping_check.py [--rows 1000000] [--before DIR] [--repeat 3]
     [--browser]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# One form session, timed step by step; run with the checkout's root first on sys.path.
_FORM = r"""
import json, sys, time
from streamlit.testing.v1 import AppTest
root, csv = sys.argv[1], sys.argv[2]
data = open(csv, "rb").read()
at = AppTest.from_file(root + "/app.py", default_timeout=600)
at.run()
at.switch_page("pages/data.py").run()
out = {}
def step(name, act):
    act()
    t = time.perf_counter()
    at.run()
    out[name] = time.perf_counter() - t
    assert not at.exception, at.exception
step("upload (copy, columns" + (", check)" if "load_btn" in open(
    root + "/pages/_data/upload.py").read() else ")"),
     lambda: at.get("file_uploader")[0].set_value(("big.csv", data, "text/csv")))
step("map session_id to a per-row stamp", lambda: at.multiselect(key="map_session_id")
     .set_value(["stamp"]))
step("a re-run, nothing changed", lambda: None)
step("map session_id to the list id", lambda: at.multiselect(key="map_session_id")
     .set_value(["session_id"]))
keys = [b.key for b in at.button]
key = "load_btn" if "load_btn" in keys else "FormSubmitter:mapping-Load"
step("Load (store every row)", lambda: at.button(key=key).click())
print(json.dumps(out))
"""


def make_csv(path: Path, rows: int) -> None:
    import numpy as np

    from ulr.simulate import simulate_clicks, write_log
    docs = 10
    sim = simulate_clicks(queries=rows // 100, positions=docs, sessions=rows // docs,
                          randomized_fraction=0.1, seed=0)
    df = sim.df.drop(columns=["true_theta"])
    df["stamp"] = np.arange(len(df)) * 3 + 1_700_000_000  # a timestamp of its own per row
    df["shown_list"] = df["session_id"]  # the list id, under a name auto-detection misses
    write_log(df, str(path))


def form_times(root: Path, csv: Path, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        env = dict(os.environ, ULR_DB=str(Path(tempfile.mkdtemp()) / "b.duckdb"),
                   PYTHONDONTWRITEBYTECODE="1")
        p = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(root)!r})"
                            + "\n" + _FORM, str(root), str(csv)], cwd=root, env=env,
                           capture_output=True, text=True, timeout=1800)
        if p.returncode:
            raise SystemExit(p.stderr[-2000:])
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


IDLE_JS = """() => { const a = document.querySelector('[data-testid="stApp"]');
  return a && a.getAttribute('data-test-script-state') === 'notRunning'; }"""


def _choose(page, field: str, option: str) -> float:
    """Replace the choice of the mapping's multiselect for ``field`` with ``option``; the
    ``perf_counter`` time at which the option was clicked."""
    box = page.locator('[data-testid="stMultiSelect"]').filter(
        has=page.get_by_text(re.compile(rf"^{re.escape(field)}( \*)?$"))).first
    box.click()
    page.keyboard.press("Backspace")  # drops the current choice, if any (a re-run, after)
    page.wait_for_timeout(300)
    page.wait_for_function(IDLE_JS)
    box.click()
    page.keyboard.type(option)
    pick = page.get_by_role("option", name=option, exact=True)
    pick.wait_for()
    t = time.perf_counter()  # the choice itself: what the timings start from
    pick.click()
    page.keyboard.press("Escape")
    return t


def browser_times(root: Path, csv: Path) -> dict:
    """Seconds from choosing a column in the form until the page says what it found."""
    from playwright.sync_api import sync_playwright

    from benchmarks.soak import serve
    after = "load_btn" in (root / "pages" / "_data" / "upload.py").read_text()
    proc, url = serve(str(Path(tempfile.mkdtemp()) / "b.duckdb"), root / "app.py")
    out = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(600_000)
            page.goto(url + "/data")
            page.wait_for_function(IDLE_JS)
            page.get_by_text("Upload a click log", exact=True).click()
            page.locator('input[type="file"]').set_input_files(str(csv))
            page.get_by_role("button", name="Load", exact=True).wait_for()
            page.wait_for_function(IDLE_JS)
            t = _choose(page, "session_id", "stamp")  # wrong: a timestamp of its own per row
            if not after:  # the form said nothing until Load
                page.get_by_role("button", name="Load", exact=True).click()
            page.get_by_text(re.compile(r"sessions( in the first [\d,]+ rows)? hold a single "
                                        "row")).first.wait_for()
            out["choose a per-row stamp: until it is named" + ("" if after else
                                                               " (after Load)")] = \
                time.perf_counter() - t
            if after:  # the right column: the warning goes, "fits" comes
                page.wait_for_function(IDLE_JS)
                t = _choose(page, "session_id", "shown_list")
                page.get_by_text("The mapping fits the file's first rows").wait_for()
                out["choose the list id: until it is said to fit"] = time.perf_counter() - t
            browser.close()
    finally:
        proc.terminate()
        proc.wait(30)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--before", type=Path, help="another checkout to time the same steps on")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check-only", action="store_true", help="time check_mapping only")
    ap.add_argument("--no-apptest", action="store_true", help="skip the AppTest figures")
    ap.add_argument("--browser", action="store_true",
                    help="also time the form in headless Chromium (one run per checkout)")
    args = ap.parse_args()
    from ulr.data.precheck import check_mapping
    csv = Path(tempfile.mkdtemp()) / "big.csv"
    make_csv(csv, args.rows)
    print(f"CSV: {args.rows:,} rows, {csv.stat().st_size / 1e6:.0f} MB")
    for label, mapping in (("right mapping (auto)", {}),
                           ("session_id = per-row stamp", {"session_id": "stamp"})):
        times, cpu, found = [], [], ()
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            found = check_mapping(csv, mapping)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        print(f"check_mapping, {label:<28} {statistics.median(times) * 1000:7.0f} ms "
              f"({statistics.median(cpu) * 1000:.0f} ms CPU, all threads)  "
              f"found: {', '.join(i.code for i in found) or 'nothing'}")
    print(f"machine load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.check_only:
        return
    cols = [] if args.no_apptest else [("after (this checkout)",
                                        form_times(ROOT, csv, args.repeat))]
    if args.before and not args.no_apptest:
        cols.insert(0, ("before (" + str(args.before) + ")",
                        form_times(args.before.resolve(), csv, args.repeat)))
    if cols:
        print_table(cols, args.repeat)
    if args.browser:
        print("\nIn Chromium (streamlit run; one run each):")
        roots = ([("before", args.before.resolve())] if args.before else []) + \
            [("after", ROOT)]
        for name, root in roots:
            for step, secs in browser_times(root, csv).items():
                print(f"  {name:<7} {step:<58} {secs * 1000:8.0f} ms")


def print_table(cols, repeat: int) -> None:
    print(f"\nData page server time per form step (AppTest, median of {repeat}; a mapping "
          "change re-runs the whole script here, the browser re-runs only the mapping "
          "fragment):")
    steps = list(dict.fromkeys(k for _, c in cols for k in c))
    print(f"{'step':<42}" + "".join(f"{name:>30}" for name, _ in cols))
    for s in steps:
        print(f"{s:<42}" + "".join(f"{c[s] * 1000:>27.0f} ms" if s in c else f"{'':>30}"
                                   for _, c in cols))


if __name__ == "__main__":
    main()
