"""Journey: compare a naive and an IPW ranker in a real browser."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.helpers import POLL_MS, no_errors, shot, wait_idle

# Bar heights of the first subplot (ARP) per ranker, read from plotly's own figure state.
ARP_BARS = """() => {
  const d = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
  if (!d || !d._fullData) return null;
  const out = {};
  for (const t of d._fullData)
    if (t.xaxis === 'x' && t.yaxis === 'y' && t.y && t.y.length) out[t.name] = t.y[0];
  return out;
}"""


def test_compare_rankers_shows_naive_and_ipw(page, app_url):
    page.goto(app_url + "/compare_rankers")
    wait_idle(page)
    expect(page.get_by_role("heading", name="Compare rankers")).to_be_visible()
    arp = page.locator('[data-testid="stMetric"]').filter(has_text="IPW ARP")
    expect(arp).to_contain_text("vs naive", timeout=90_000)   # trains both rankers
    chart = page.locator('[data-testid="stPlotlyChart"]')
    expect(chart).to_contain_text("naive", timeout=30_000)     # legend
    expect(chart).to_contain_text("ipw")
    expect(page.get_by_text("Paired comparison per metric")).to_be_visible()
    page.wait_for_function(f"() => {{ const b = ({ARP_BARS})(); "
                           "return b && 'naive' in b && 'ipw' in b; }", polling=POLL_MS)
    bars = page.evaluate(ARP_BARS)

    # the metric card and the chart agree: IPW ARP and its difference to naive
    # (the card shows "value [interval]" and "delta [interval] vs naive", each rounded to
    # its standard error, so they agree to half a unit of the last shown digit)
    text = arp.inner_text()
    nums = re.findall(r"[-+]?\d+(?:\.\d+)?", text.split("\n", 1)[1])
    value, delta = float(nums[0]), float(nums[3])

    def half_unit(shown):
        return 0.5 * 10 ** -(len(shown.split(".")[1]) if "." in shown else 0) + 1e-9
    assert bars["ipw"] == pytest.approx(value, abs=half_unit(nums[0]))
    assert bars["ipw"] - bars["naive"] == pytest.approx(delta, abs=half_unit(nums[3]))
    assert delta < 0  # the sample has position bias (eta = 1): IPW ranks relevant docs higher
    assert "dataset=sample" in page.url and "learner=linear" in page.url  # shareable
    shot(page, "journey_compare_rankers")
    assert no_errors(page) == []
