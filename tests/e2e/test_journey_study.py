"""Journey: bring judged queries as a LETOR file, run the debiasing study, read the learners'
intervals and add the result to the report, in a real browser."""

import re

from playwright.sync_api import expect

from tests.e2e.helpers import FLAG, no_errors, shot, wait_idle
from tests.study.letor import letor_text, linear_set


def test_letor_upload_study_intervals_and_report(page, app_url, tmp_path):
    path = tmp_path / "judged.txt"
    path.write_text(letor_text(linear_set(queries=40, docs=8, seed=0)))
    page.goto(app_url + "/debiasing_study")
    wait_idle(page)
    expect(page.get_by_role("heading", name="Debiasing study")).to_be_visible()
    page.locator('input[type="file"]').first.set_input_files(str(path))
    wait_idle(page)
    page.get_by_label("Sessions per run").fill("1000")
    # two cheap learners: the baseline is added by default; keep the run to seconds
    learners = page.locator('[data-testid="stMultiSelect"]').first
    for name in ("lightgbm", "lightgbm-position", "xgboost-unbiased", "oracle"):
        learners.get_by_role("button", name=re.compile(f"Remove {name}$")).click()
    page.keyboard.press("Escape")  # close the multiselect's menu
    page.get_by_role("heading", name="Debiasing study").click()
    run = page.get_by_role("button", name="Run study")
    run.click()
    wait_idle(page, timeout=180_000)
    caption = page.get_by_text("Each dot is the mean over runs and test queries", exact=False)
    expect(caption).to_be_visible(timeout=120_000)
    expect(page.get_by_text("judged.txt", exact=False).first).to_be_visible()
    chart = page.locator('[data-testid="stPlotlyChart"]')
    expect(chart).to_contain_text("ipw-linear")
    # every learner's dot carries its interval: plotly's error bars, lower <= value <= upper
    bars = page.evaluate("""() => {
      const d = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
      return d._fullData.filter(t => t.error_y && t.error_y.visible).map(
        t => [t.name, t.y[0], t.error_y.array[0], t.error_y.arrayminus[0]]);
    }""")
    assert {b[0] for b in bars} == {"naive-linear", "ipw-linear"}
    assert all(up >= 0 and down >= 0 for _, _, up, down in bars)
    assert any(up > 0 for _, _, up, _ in bars)
    verdict = page.locator('[class*="st-key-verdict_study"]')
    expect(verdict).to_contain_text("naive-linear")
    page.get_by_role("button", name="Add to report").click()
    expect(page.get_by_text("Added “Debiasing study on judged.txt” to the report")
           ).to_be_visible()
    nav = page.locator('[data-testid="stSidebarNav"]')
    more = page.get_by_text(re.compile(r"^View \d+ more$"))
    if more.count():  # a short window folds the last pages of the menu
        more.first.click()
    nav.get_by_role("link", name="Report", exact=True).click()
    titles = page.get_by_role("textbox", name="Title", exact=True)
    expect(titles.first).to_have_value("Debiasing study on judged.txt", timeout=30_000)
    wait_idle(page)
    shot(page, "journey_study")
    assert no_errors(page) == []
    body = page.locator('[data-testid="stMain"]').inner_text()
    assert not FLAG.search(body)
