"""End-to-end journeys in a real headless browser (one test per journey).

An upload through the file input and every page visited through the menu are
test_journey_byol.py's; each page is opened on the sample by its own journey or by the
cold-server deep links (test_soak.py)."""

import re

from playwright.sync_api import expect

from tests.e2e.helpers import no_errors, wait_idle


def test_off_policy_rankings_section_runs_when_opened(page, app_url):
    """The rankings (slate) section is computed only while open: opening it in the browser
    reruns the page and draws the three slate estimators."""
    page.goto(app_url + "/off_policy?dataset=sample")
    wait_idle(page, timeout=180_000)
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_text("logging policy", exact=False).first).to_be_visible(
        timeout=180_000)
    assert "complete rankings of" not in main.inner_text()
    page.get_by_text("Rankings: clicks per ranking (slate estimators)").click()
    wait_idle(page, timeout=180_000)
    expect(main.get_by_text(re.compile(r"complete rankings of \d+ slots"))).to_be_visible(
        timeout=180_000)
    expect(page.get_by_text("Also Cascade-DR", exact=False)).to_be_visible()
    assert no_errors(page) == []


def test_choose_for_me_survives_its_link_a_refresh_and_the_report(page, app_url):
    """A link with "Choose for me" reopens with SLOPE's choice (the page no longer rewrites
    it away), keeps it on a refresh, and the report saves that answer (issue #50)."""
    link = app_url + "/off_policy?dataset=sample&estimators=ips,clipped-ips,snips,dr,auto"
    page.goto(link)
    wait_idle(page, timeout=180_000)
    main = page.locator('[data-testid="stMain"]')
    chosen = main.get_by_text("Chosen for you:", exact=False)
    expect(chosen).to_be_visible(timeout=180_000)
    assert "auto" in page.url.split("estimators=")[1].split("&")[0]
    takeaway = page.locator(".st-key-verdict_ope strong").first.inner_text()
    page.reload()
    wait_idle(page, timeout=180_000)
    expect(chosen).to_be_visible(timeout=180_000)
    assert page.locator(".st-key-verdict_ope strong").first.inner_text() == takeaway
    page.get_by_role("button", name="Add to report").click()
    expect(page.get_by_text("to the report (")).to_be_visible(timeout=60_000)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Report").click()
    wait_idle(page, timeout=120_000)
    # the saved item's takeaway (editable on the Report page) is the page's, SLOPE's choice
    expect(page.get_by_role("textbox", name="Takeaway").first).to_have_value(
        takeaway, timeout=60_000)
    assert "chosen by SLOPE" in takeaway
    assert no_errors(page) == []
