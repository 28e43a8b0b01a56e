"""Off-policy with the target over every action, in a real browser (issue 35): a contextual
log (each row its own context) with the target's probability of the logged action as a
column. With that column only, the DR family is explained as not computable and the
verdict rests on SNIPS; with a target table uploaded, DR is computed and the verdict names
its basis. No alert names a command-line flag."""

import re

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.e2e.helpers import FLAG, alerts, no_errors, open_upload, wait_idle
from ulr.ope.simulate import contextual_world


def _choose(page, label: str, option: str) -> None:
    """Open the select box ``label`` and pick ``option``. On a loaded machine a rerun can
    redraw the box between the click and its list (the list then never opens: the page
    showed the box's help tooltip instead), so the box is opened again if its list has not
    shown the option within 10 s."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    opt = page.get_by_role("option", name=option)
    for attempt in range(3):
        box.click()
        try:
            opt.wait_for(state="visible", timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
            wait_idle(page)
    opt.click()
    wait_idle(page, timeout=180_000)


def test_target_table_upload_on_the_off_policy_page(page, app_url, tmp_path):
    w = contextual_world(seed=0)
    s = w.sample(1500, seed=100)
    log, table = tmp_path / "contextual.csv", tmp_path / "target.csv"
    w.frame(s).to_csv(log, index=False)
    w.target_table(s).to_csv(table, index=False)
    open_upload(page, app_url, log)
    page.get_by_label("Dataset name").fill("contextual log")
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text("Stored “contextual log” with 1,500 rows").wait_for(timeout=120_000)
    page.goto(app_url + "/off_policy?dataset=contextual%20log")
    wait_idle(page, timeout=180_000)

    _choose(page, "Target policy", "a column of target probabilities")
    _choose(page, "Column", "target_p")
    left_out = page.locator('[data-testid="stAlert"]').filter(has_text="Not computed: DR.")
    expect(left_out.first).to_be_visible(timeout=180_000)
    assert "probabilities of every action" in left_out.first.inner_text()
    expect(page.get_by_text("(by SNIPS:", exact=False).first).to_be_visible()
    assert no_errors(page) == [] and not [t for t in alerts(page) if FLAG.search(t)]

    _choose(page, "Target policy", "a table of its probabilities of every action (upload)")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(table))
    wait_idle(page, timeout=180_000)
    expect(page.get_by_text("(by SNIPS:", exact=False).first).to_be_visible(timeout=180_000)
    expect(page.locator('[data-testid="stAlert"]').filter(has_text="Not computed: DR.")
           ).to_have_count(0)
    chart = page.locator('[data-testid="stPlotlyChart"]').first  # one bar per estimator
    expect(chart.locator("svg text", has_text=re.compile(r"^DR$")).first).to_be_attached(
        timeout=60_000)
    assert no_errors(page) == [] and not [t for t in alerts(page) if FLAG.search(t)]
