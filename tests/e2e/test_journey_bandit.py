"""Journey: a bandit run whose regret chart grows on screen, then pauses and resumes."""

import re

from playwright.sync_api import expect

from tests.e2e.helpers import POLL_MS, no_errors, shot, wait_idle

# [last step, last mean cumulative regret] of an algorithm's line in the live chart, once
# that step is past `after` (null while the chart is being redrawn, so the wait polls on).
CHART_END = """([name, after]) => {
  const d = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
  const t = d && d._fullData && d._fullData.find(t => t.name === name);
  if (!t || !t.x || !t.x.length) return null;
  const end = [t.x[t.x.length - 1], t.y[t.y.length - 1]];
  return end[0] > after ? end : null;
}"""
ALGO = "cascade-ucb1"
SCROLL_TO_CHART = """() => document.querySelector('[data-testid="stPlotlyChart"]')
  ?.scrollIntoView({block: "center"})"""


def _step(progress) -> int:
    return int(re.search(r"step ([\d,]+) of", progress.inner_text()).group(1).replace(",", ""))


def _chart_end(page, after=0, timeout=30_000):
    return page.wait_for_function(CHART_END, arg=[ALGO, after], polling=POLL_MS,
                                  timeout=timeout).json_value()


def test_bandit_regret_chart_grows_while_running_then_pauses(page, app_url):
    page.goto(app_url + "/bandit_lab")
    wait_idle(page)
    steps = page.get_by_role("spinbutton", name="Steps", exact=True)
    expect(steps).to_be_visible(timeout=60_000)
    # a horizon no machine reaches during the journey, so the run is still going at each
    # Pause (a run that ends turns Pause off, rightly): 100,000 steps (the default cap) ran
    # out on a quiet machine, with 2, 6 and 8 runs alike - the runs are simulated together,
    # so 24 runs took 22 s against 19 s for 2 (load 7). The journey's server allows 1,000,000
    # (ULR_MAX_STEPS in tests/e2e/conftest.py).
    steps.fill("1000000")
    page.get_by_role("spinbutton", name="Runs", exact=True).fill("24")
    page.get_by_role("button", name="Start").click()

    progress = page.locator('[data-testid="stProgress"]')
    expect(progress).to_contain_text("running: step", timeout=30_000)
    expect(progress).to_contain_text("of 1,000,000")
    t1, regret1 = _chart_end(page, after=1)
    step1 = _step(progress)
    # the fragment redraws every 0.25 s: the chart reaches past t1 (a loaded machine may
    # take longer; the wait ends as soon as it does)
    t2, regret2 = _chart_end(page, after=t1, timeout=20_000)
    expect(progress).not_to_contain_text(f"step {step1:,} of", timeout=20_000)
    step2 = _step(progress)
    assert step2 > step1 and t2 > t1
    assert regret2 > regret1 > 0                      # the curve grows while it runs
    expect(progress).to_contain_text("running: step")
    page.evaluate(SCROLL_TO_CHART)
    shot(page, "journey_bandit_running")

    page.get_by_role("button", name="Pause").click()
    expect(progress).to_contain_text("paused: step", timeout=30_000)
    paused = _step(progress)
    # the table, the progress and the chart all stop on the same step
    expect(page.get_by_role("heading", name=f"Results so far (paused at step {paused:,})")
           ).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1500)                       # several ticks' worth of time
    assert _step(progress) == paused
    assert _chart_end(page)[0] == paused               # the chart stopped where the run did
    expect(page.get_by_role("button", name="Pause")).to_be_disabled()
    assert 0 < paused < 1_000_000
    page.evaluate(SCROLL_TO_CHART)
    shot(page, "journey_bandit_paused")
    assert no_errors(page) == []

    # resume: it runs on from there, and can be paused again
    page.get_by_role("button", name="Resume").click()
    expect(progress).to_contain_text("running: step", timeout=30_000)
    _chart_end(page, after=paused, timeout=20_000)
    # the Pause is on again, without a refresh: the run can be paused again (it stayed off
    # when only the page's full runs drew the controls)
    pause = page.get_by_role("button", name="Pause")
    try:
        expect(pause).to_be_enabled(timeout=15_000)
    except AssertionError as exc:  # say whether the run was still going (or had ended)
        raise AssertionError(f"Pause is off after Resume; the run shows "
                             f"“{progress.inner_text()}”") from exc
    pause.click()
    expect(progress).to_contain_text("paused: step", timeout=30_000)
    again = _step(progress)
    assert again > paused
    assert no_errors(page) == []

    # a refresh finds the run again, where it stood (issue #50), and it can go on
    assert "run=" in page.url
    page.reload()
    wait_idle(page)
    expect(page.get_by_role("heading", name=f"Results so far (paused at step {again:,})")
           ).to_be_visible(timeout=60_000)
    expect(progress).to_contain_text(f"paused: step {again:,}")
    page.get_by_role("button", name="Resume").click()
    expect(progress).to_contain_text("running: step", timeout=30_000)
    assert no_errors(page) == []
