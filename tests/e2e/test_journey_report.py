"""Journey: collect two charts, download the HTML report, and open it with no network."""

import re

from playwright.sync_api import expect

from tests.e2e.helpers import no_errors, shot, wait_idle


def test_two_items_to_the_report_and_a_self_contained_html(page, app_url, browser, tmp_path):
    page.goto(app_url + "/data")
    wait_idle(page)
    add = page.get_by_role("button", name="Add to report")
    expect(add).to_be_visible(timeout=60_000)
    add.click()
    expect(page.get_by_text("Added “CTR by position” to the report")).to_be_visible()

    # sidebar links keep the browser session (page.goto would start a new one)
    nav = page.locator('[data-testid="stSidebarNav"]')
    nav.get_by_role("link", name="Compare rankers").click()
    expect(page.get_by_role("heading", name="Compare rankers")).to_be_visible()
    expect(page.locator('[data-testid="stMetric"]').filter(has_text="IPW ARP")
           ).to_contain_text("vs naive", timeout=90_000)  # both rankers trained
    page.get_by_role("button", name="Add to report").click()
    expect(page.get_by_text("Added “Naive vs IPW ranker” to the report")).to_be_visible()

    nav.get_by_role("link", name="Report").click()
    expect(page.get_by_role("heading", name="Report", exact=True)).to_be_visible()
    titles = page.get_by_role("textbox", name="Title", exact=True)
    expect(titles).to_have_count(2, timeout=30_000)
    expect(titles.nth(0)).to_have_value("CTR by position")
    expect(titles.nth(1)).to_have_value("Naive vs IPW ranker")
    expect(page.locator('[data-testid="stPlotlyChart"]')).to_have_count(2)
    wait_idle(page)
    shot(page, "journey_report_page")
    assert no_errors(page) == []

    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name="Download HTML report").click()
    dl = info.value
    assert dl.suggested_filename.endswith(".html")
    path = tmp_path / dl.suggested_filename
    dl.save_as(path)
    html = path.read_text(encoding="utf-8")
    assert html.count("Plotly.newPlot(") == 2                       # both charts
    assert len(re.findall(r"\* plotly\.js v\d", html)) == 1        # plotly.js inline, once
    assert "<script src=\"http" not in html and "<script src='http" not in html
    assert not re.search(r"<link[^>]+href=[\"']?https?:", html)     # no remote stylesheet
    assert "CTR by position" in html and "Naive vs IPW ranker" in html

    # the file works with the network switched off: both charts draw, nothing is fetched
    ctx = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
    try:
        off = ctx.new_page()
        remote = []
        off.on("request", lambda r: remote.append(r.url)
               if not r.url.startswith(("file:", "data:", "blob:")) else None)
        off.goto(path.as_uri())
        expect(off.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=30_000)
        expect(off.locator("div.js-plotly-plot")).to_have_count(2)
        shot(off, "journey_report_html_offline")
        assert remote == []
    finally:
        ctx.close()
