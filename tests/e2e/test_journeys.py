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
