"""Journey: reports that persist, the presentation view, offline slides, readable CTR axes.

The server runs on its own store file so that it can be stopped and started again on
the same data (a restart); the store is seeded before the first start by another
process: a click log with a 0.4% CTR, and a report holding an off-policy item built
through add_to_report's data path (ReportItem.from_result + reports.add_item) with the
warnings the page shows.
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import visitor_tab
from tests.e2e.helpers import download, no_errors, shot, wait_idle

ROOT = Path(__file__).resolve().parents[2]
OPE_CAVEATS = ["Effective sample size is 3.4% of the log: the estimate rests on few rows.",
               "Only 6.8 effective clicks: intervals are very wide."]

SEED = r"""
import sys
import numpy as np, pandas as pd, plotly.graph_objects as go
from ulr import report, theme
from ulr.data import ingest
from ulr.report import saved as reports
db, csv = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(4)
n_q, k = 3000, 8
pos = np.tile(np.arange(1, k + 1), n_q)
theta = 1 / pos
click = rng.random(pos.size) < 0.0095 * theta   # about 0.4% overall
df = pd.DataFrame({"query_id": np.repeat(np.arange(n_q), k), "doc_id": np.arange(pos.size),
                   "position": pos, "click": click.astype(int),
                   "session_id": np.repeat(np.arange(n_q), k)})
df.to_csv(csv, index=False)
ingest.load_log(csv, "shop04", db_path=db)
t = pd.DataFrame({"estimator": ["ips", "snips", "dr"], "estimate": [0.0041, 0.0038, 0.0040],
                  "lower": [0.0005, 0.001, 0.0008], "upper": [0.009, 0.008, 0.0085]})
fig = go.Figure(go.Scatter(x=t["estimator"], y=t["estimate"], mode="markers",
    error_y=dict(type="data", array=t["upper"] - t["estimate"],
                 arrayminus=t["estimate"] - t["lower"])))
theme.apply(fig, title="Estimated value of the target policy", x="estimator",
            y="expected clicks per logged row")
r = reports.create("OPE review", actor=reports.OPERATOR, db=db)  # seeded by the operator
item = report.ReportItem.from_result(
    "Off-policy estimates of policy “greedy by feature_1”", fig=fig, table=t,
    settings={"policy": "greedy by feature_1", "estimator": "ips,snips,dr", "seed": 0},
    caveats=CAVEATS_HERE, evidence={"rows": 24000, "clicks": 96, "queries": 3000}, dataset="shop04")
reports.add_item(r.id, item, actor=reports.OPERATOR, db=db)
print(r.id)
""".replace("CAVEATS_HERE", repr(OPE_CAVEATS))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, db):
        self.db, self.proc, self.url = db, None, None

    def start(self):
        port = _free_port()
        env = dict(os.environ, ULR_DB=self.db)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
             "--server.headless", "true", "--server.port", str(port), "--server.address",
             "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2):
                    return self.url
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("streamlit did not start")

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None


@pytest.fixture(scope="module")
def server():
    tmp = tempfile.mkdtemp(prefix="ulr_present_")
    db = os.path.join(tmp, "present.duckdb")
    p = subprocess.run([sys.executable, "-c", SEED, db, os.path.join(tmp, "shop04.csv")],
                       cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    srv = Server(db)
    srv.ope_report = p.stdout.strip().splitlines()[-1]
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def pg(warm_context):
    with visitor_tab(warm_context, width=1280, height=720, timeout_ms=60_000) as page:
        yield page


def report_titles(page, n=3):
    boxes = page.get_by_role("textbox", name="Title", exact=True)
    expect(boxes).to_have_count(n, timeout=60_000)
    wait_idle(page)
    return [t.input_value() for t in boxes.all()]


def ytick_labels(locator):
    return [t for t in locator.locator(".ytick text").all_text_contents() if t and t.strip()]


def test_three_items_survive_reload_and_restart(server, pg):
    pg.goto(server.url + "/report")
    wait_idle(pg)
    pg.get_by_role("button", name="New report").click()
    wait_idle(pg)
    name = pg.get_by_role("textbox", name="Report name")
    name.fill("Three results")
    name.press("Enter")
    wait_idle(pg)
    rid = re.search(r"report=([0-9a-f]+)", pg.url).group(1)
    nav = pg.locator('[data-testid="stSidebarNav"]')
    nav.get_by_role("link", name="Data").click()
    wait_idle(pg)
    add = pg.get_by_role("button", name="Add to report")
    for n in (1, 2, 3):
        add.click()
        expect(pg.get_by_text(f"to the report ({n} item")).to_be_visible()
        wait_idle(pg)
    pg.goto(server.url + f"/report?report={rid}")
    assert report_titles(pg) == ["CTR by position"] * 3
    pg.reload()
    assert report_titles(pg) == ["CTR by position"] * 3
    server.stop()
    server.start()
    pg.goto(server.url + f"/report?report={rid}")
    assert report_titles(pg) == ["CTR by position"] * 3
    expect(pg.get_by_role("textbox", name="Report name")).to_have_value("Three results")
    # a new session with no link continues the most recently changed report
    pg.goto(server.url + "/report")
    assert report_titles(pg) == ["CTR by position"] * 3
    shot(pg, "present_report_after_restart")
    assert no_errors(pg) == []


def test_presentation_view_moves_with_arrow_keys_large_and_without_settings(server, pg):
    pg.goto(server.url + f"/present?report={server.ope_report}")
    wait_idle(pg)
    frame = pg.frame_locator("iframe").first
    body = frame.locator("body")
    expect(body).to_have_attribute("data-slide", "1", timeout=60_000)
    pg.keyboard.press("ArrowRight")
    expect(body).to_have_attribute("data-slide", "2")
    slide = frame.locator(".slide.active")
    h1 = slide.locator("h1")
    expect(h1).to_contain_text("greedy by feature_1")
    # the slide is zoomed to the frame: the title's type, as seen, is 5% of the frame's height
    seen = "e => parseFloat(getComputedStyle(e).fontSize) * e.getBoundingClientRect().height" \
           " / e.offsetHeight"
    assert float(h1.evaluate(seen)) >= 0.045 * 640
    ticks = slide.locator(".xtick text").first
    expect(ticks).to_be_visible()
    assert float(ticks.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 18
    for c in OPE_CAVEATS:
        expect(slide).to_contain_text(c)
    text = slide.inner_text()
    assert "Settings" not in text and "seed" not in text and "estimator: ips" not in text
    shot(pg, "present_slide_2")
    pg.keyboard.press("ArrowLeft")
    expect(body).to_have_attribute("data-slide", "1")
    frame.get_by_role("button", name="Next slide").click()  # the buttons move too
    expect(body).to_have_attribute("data-slide", "2")
    assert no_errors(pg) == []


def test_presentation_is_usable_in_a_small_window(server, warm_context):
    """At 820x620 the slide and both arrow buttons are inside the window, and they work
    (issue #50: the buttons fell below it)."""
    with visitor_tab(warm_context, width=820, height=620, timeout_ms=60_000) as page:
        page.goto(server.url + f"/present?report={server.ope_report}")
        wait_idle(page)
        frame = page.frame_locator("iframe").first
        body = frame.locator("body")
        expect(body).to_have_attribute("data-slide", "1", timeout=60_000)
        for name in ("Previous slide", "Next slide"):
            box = frame.get_by_role("button", name=name).bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 620, box
            assert box["x"] >= 0 and box["x"] + box["width"] <= 820, box
        frame.get_by_role("button", name="Next slide").click()
        expect(body).to_have_attribute("data-slide", "2")
        shot(page, "present_small_window")
        assert no_errors(page) == []


_download = download


def _offline(browser, path):
    ctx = browser.new_context(offline=True, viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    remote = []
    page.on("request", lambda r: remote.append(r.url)
            if not r.url.startswith(("file:", "data:", "blob:")) else None)
    page.goto(path.as_uri())
    return ctx, page, remote


def test_exported_deck_opens_offline_with_every_caveat(server, pg, browser, tmp_path):
    pg.goto(server.url + f"/report?report={server.ope_report}")
    wait_idle(pg)
    deck = _download(pg, "Download slides (HTML)", tmp_path)
    long_html = _download(pg, "Download HTML report", tmp_path)
    ctx, page, remote = _offline(browser, deck)
    try:
        expect(page.locator("body")).to_have_attribute("data-slide", "1")
        page.keyboard.press("ArrowRight")
        slide = page.locator(".slide.active")
        expect(slide.locator(".js-plotly-plot .main-svg").first).to_be_visible()
        for c in OPE_CAVEATS:
            expect(slide.locator(".caveats")).to_contain_text(c)
        shot(page, "present_deck_offline")
        assert remote == []
    finally:
        ctx.close()
    ctx, page, remote = _offline(browser, long_html)
    try:  # the OPE item's warnings, policy and evidence are in the long export too
        expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()
        for c in OPE_CAVEATS + ["greedy by feature_1", "24,000 rows · 96 clicks"]:
            expect(page.locator("section.item")).to_contain_text(c)
        assert remote == []
    finally:
        ctx.close()


def test_ctr_axis_ticks_are_distinct_at_04_percent(server, pg, browser, tmp_path):
    pg.goto(server.url + "/data?dataset=shop04")
    wait_idle(pg)
    chart = pg.locator('[data-testid="stPlotlyChart"]').first
    expect(chart.locator(".ytick text").first).to_be_visible(timeout=60_000)
    expect(chart).to_contain_text("Click-through rate by position")
    labels = ytick_labels(chart)
    assert len(labels) >= 4 and len(set(labels)) == len(labels), labels
    assert any(re.fullmatch(r"0\.\d+%", t) for t in labels), labels
    shot(pg, "present_ctr_axis_page")
    pg.get_by_role("button", name="Add to report").click()
    expect(pg.get_by_text("to the report (")).to_be_visible()
    pg.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Report").click()
    wait_idle(pg)
    path = _download(pg, "Download HTML report", tmp_path)
    ctx, page, remote = _offline(browser, path)
    try:
        charts = page.locator("section.item").filter(has_text="shop04").locator(
            ".js-plotly-plot")
        expect(charts.last.locator(".ytick text").first).to_be_visible()
        out = ytick_labels(charts.last)
        assert len(out) >= 4 and len(set(out)) == len(out), out
        assert remote == []
    finally:
        ctx.close()
