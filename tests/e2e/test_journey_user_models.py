"""Journey: which user model fits the sample, in a real browser (issue 27)."""

from playwright.sync_api import expect

from tests.e2e.helpers import no_errors, shot, wait_idle


def test_user_models_on_the_sample_shows_verdict_table_and_curves(page, app_url):
    page.goto(app_url + "/user_models?boot=20")
    wait_idle(page)
    expect(page.get_by_role("heading", name="User models")).to_be_visible()
    verdict = page.locator('[class*="st-key-verdict_user_models"]')
    expect(verdict).to_contain_text("fits best", timeout=120_000)  # fits six models
    text = verdict.inner_text()
    assert "PBM fits best" in text or "UBM fits best" in text  # the sample is a PBM log
    chart = page.locator('[data-testid="stPlotlyChart"]')
    expect(chart).to_contain_text("DBN", timeout=30_000)  # one curve per model in the legend
    expect(chart).to_contain_text("PBM estimate")
    expect(page.get_by_role("button", name="Add to report")).to_be_visible()
    shot(page, "journey_user_models")
    assert no_errors(page) == []
