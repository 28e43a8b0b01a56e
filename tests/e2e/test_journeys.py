"""End-to-end journeys in a real headless browser (one test per journey).

Every page is visited through the menu by test_journey_byol.py (on an uploaded log), and on
the sample by the page journeys and the cold-server deep links (test_soak.py)."""

import re

from playwright.sync_api import expect

from tests.e2e.helpers import no_errors, shot, wait_idle


def test_upload_csv_through_file_input_and_see_summary(page, app_url, tmp_path):
    csv = tmp_path / "browser_upload.csv"
    csv.write_text("qid,doc,rank,clicked\n" + "".join(
        f"q{i % 9},d{i},{1 + i % 6},{int(i % 4 == 0)}\n" for i in range(240)))
    page.goto(app_url + "/data")
    wait_idle(page)
    page.get_by_text("Upload a click log", exact=True).click()
    page.locator('input[type="file"]').set_input_files(str(csv))
    page.get_by_role("button", name="Load", exact=True).wait_for()
    page.get_by_label("Dataset name").fill("browser upload")
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text("Stored “browser upload” with 240 rows").wait_for(timeout=60_000)
    wait_idle(page)
    rows = page.locator('[data-testid="stMetric"]').filter(has_text="Rows")
    expect(rows).to_contain_text("240", timeout=30_000)  # re-rendered on the new dataset
    expect(page.get_by_role("heading", name="“browser upload”")).to_be_visible()
    shot(page, "data_after_upload")
    assert no_errors(page) == []


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
