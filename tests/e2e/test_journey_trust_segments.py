"""Journey (issue 52): a log with a device column and trust bias, uploaded in a real browser;
Position bias shows what the log identifies, a curve per device, and trust-em's table; User
models compares the trust-bias model with the PBM."""

import pandas as pd
from playwright.sync_api import expect

from tests.e2e.helpers import no_errors, open_upload, shot, wait_idle


def _log(path):
    from ulr.simulate import simulate_click_model
    df = simulate_click_model("trust", sessions=3000, queries=40, seed=4, orders=3,
                              randomized=0.2, positions=6).df.drop(columns=["true_theta"])
    df["device"] = pd.Series(df["session_id"] % 2).map({0: "mobile", 1: "desktop"})
    df.to_csv(path, index=False)


def test_segments_identification_and_trust_in_the_browser(page, app_url, tmp_path):
    path = tmp_path / "trust_devices.csv"
    _log(path)
    open_upload(page, app_url, path)
    page.get_by_label("Dataset name").fill("trust devices")
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text("Stored “trust devices” with").wait_for(timeout=120_000)
    wait_idle(page)

    page.goto(app_url + "/position_bias?dataset=trust%20devices&propensity=em,trust-em&bootstrap=10"
              "&by=device")
    wait_idle(page, timeout=180_000)
    expect(page.get_by_text("What this log can identify", exact=False).first).to_be_visible(
        timeout=120_000)
    segments = page.locator('[class*="st-key-pb_segment_chart"]')
    expect(segments).to_contain_text("device = mobile", timeout=180_000)
    expect(segments).to_contain_text("device = desktop")
    verdict = page.locator('[class*="st-key-verdict_position_bias_segments"]')
    expect(verdict).to_contain_text("device", timeout=60_000)
    expect(page.get_by_text("Trust bias (trust-em)", exact=False)).to_be_visible()
    shot(page, "journey_segments")
    assert no_errors(page) == []

    page.goto(app_url + "/user_models?dataset=trust%20devices&models=pbm,trust&bootstrap=10")
    wait_idle(page, timeout=180_000)
    verdict = page.locator('[class*="st-key-verdict_user_models"]')
    expect(verdict).to_contain_text("trust bias fits best", timeout=120_000)
    expect(page.get_by_text("What this log can identify", exact=False).first).to_be_visible()
    shot(page, "journey_trust_user_models")
    assert no_errors(page) == []
