"""Journey: which user model fits the sample, in a real browser (issue 27). A log without
sessions gets one sentence instead (checked on the uploaded log of test_journey_byol.py)."""

from playwright.sync_api import expect

from tests.e2e.helpers import no_errors, shot, wait_idle


def test_user_models_on_the_sample_shows_verdict_table_and_curves(page, app_url):
    page.goto(app_url + "/user_models?bootstrap=20")
    wait_idle(page)
    expect(page.get_by_role("heading", name="User models")).to_be_visible()
    verdict = page.locator('[class*="st-key-verdict_user_models"]')
    expect(verdict).to_contain_text("fits best", timeout=120_000)  # fits six models
    text = verdict.inner_text()
    # the sample is a PBM log: the PBM is best, or within noise of the best
    head = text.split("within noise")[0]
    assert "PBM fits best" in text or ("within noise" in text and "PBM" in head), text
    chart = page.locator('[data-testid="stPlotlyChart"]').first  # curves; then by frequency
    expect(chart).to_contain_text("DBN", timeout=30_000)  # one curve per model in the legend
    expect(chart).to_contain_text("PBM estimate")
    expect(page.get_by_role("button", name="Add to report")).to_be_visible()
    # the section by frequency is drawn when opened (issue 54: the first view draws less)
    expect(page.locator('[data-testid="stPlotlyChart"]')).to_have_count(1)
    page.get_by_text("By how often a result was seen in training").click()
    expect(page.locator('[data-testid="stPlotlyChart"]')).to_have_count(2, timeout=30_000)
    expect(page.locator('[data-testid="stPlotlyChart"]').nth(1)).to_contain_text("DBN")
    shot(page, "journey_user_models")
    assert no_errors(page) == []
