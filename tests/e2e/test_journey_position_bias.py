"""Journey: estimate position bias with two methods and see them on one chart."""

from playwright.sync_api import expect

from tests.e2e.helpers import POLL_MS, no_errors, shot, wait_idle

# Names of the traces on the first chart and the length of each, from plotly's state.
TRACES = """() => {
  const d = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
  if (!d || !d._fullData) return null;
  return d._fullData.map(t => [t.name, (t.y || []).length]);
}"""


def test_two_methods_on_one_chart_with_truth(page, app_url):
    page.goto(app_url + "/position_bias?propensity=randomization,em&bootstrap=20&positions=10")
    wait_idle(page, timeout=120_000)
    expect(page.get_by_role("heading", name="Position bias")).to_be_visible()
    expect(page.get_by_text("Estimated 2 of 2 methods")).to_be_visible(timeout=120_000)
    page.wait_for_function(f"() => {{ const t = ({TRACES})(); return t && t.length >= 3; }}",
                           polling=POLL_MS)
    traces = dict(page.evaluate(TRACES))
    # Both methods and the simulator's truth, one value per position each.
    assert traces["randomization"] == traces["em"] == 10
    assert traces["true theta"] == 10
    # the convergence chart is drawn when its section is opened (issue 54: a first view
    # draws what it shows)
    expect(page.get_by_text("Convergence: log-likelihood per iteration")).to_have_count(0)
    page.get_by_text("Convergence", exact=True).click()
    expect(page.get_by_text("Convergence: log-likelihood per iteration")).to_be_visible(
        timeout=30_000)
    shot(page, "journey_position_bias")
    assert no_errors(page) == []
