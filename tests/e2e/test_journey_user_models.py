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
    # the sample is a PBM log: the PBM is best, or within noise of the best
    head = text.split("within noise")[0]
    assert "PBM fits best" in text or ("within noise" in text and "PBM" in head), text
    chart = page.locator('[data-testid="stPlotlyChart"]').first  # curves; then by frequency
    expect(chart).to_contain_text("DBN", timeout=30_000)  # one curve per model in the legend
    expect(chart).to_contain_text("PBM estimate")
    expect(page.get_by_role("button", name="Add to report")).to_be_visible()
    shot(page, "journey_user_models")
    assert no_errors(page) == []


def test_a_real_shaped_log_without_sessions_gets_the_one_sentence_dead_end(page, app_url,
                                                                          tmp_path):
    """An e-commerce-shaped log (3 slots, no query or session column, rows stamped one by
    one, CTR under 1%, several loggers) loaded without a session: User models says in one
    sentence why no click model can be fitted and links to the mapping; no CLI flag."""
    import re

    from tests.e2e.helpers import FLAG, alerts, open_upload, pick
    from ulr.simulate import obd_like_log
    path = tmp_path / "no_sessions.csv"
    obd_like_log(row_timestamps=True).to_csv(path, index=False)
    open_upload(page, app_url, path)
    pick(page, "query_id", [f"user_feature_{j}" for j in range(4)])
    page.get_by_label("Dataset name").fill("no sessions")
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text("Stored “no sessions” with 10,002 rows").wait_for(timeout=120_000)

    page.goto(app_url + "/user_models?dataset=no+sessions")
    wait_idle(page, timeout=120_000)
    dead_end = page.get_by_text("has no session column", exact=False).first
    expect(dead_end).to_be_visible(timeout=60_000)
    said = [a for a in alerts(page) if "has no session column" in a]
    assert len(said) == 1
    sentence = said[0].split("\n")[0].strip()
    assert len(re.findall(r"[.;]\s+[A-Z]", sentence)) == 0        # one sentence
    assert "Data page's column mapping" in sentence and not FLAG.search(sentence)
    link = page.get_by_role("link", name=re.compile("Map a session id"))
    expect(link).to_be_visible()
    assert "data" in (link.get_attribute("href") or "")
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 0   # nothing was fitted
    shot(page, "journey_user_models_no_sessions")
    assert no_errors(page) == []
