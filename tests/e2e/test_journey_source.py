"""Journey: register a Parquet folder on the Data page, then see Position bias drawn from
its stored statistics (the rows are never loaded into the store)."""

import uuid

import numpy as np
from playwright.sync_api import expect

from tests.e2e.helpers import POLL_MS, no_errors, shot, wait_idle

# (name, y) of every trace on the first chart, from plotly's state.
TRACES = """() => {
  const d = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
  if (!d || !d._fullData) return null;
  return d._fullData.map(t => [t.name, Array.from(t.y || [])]);
}"""


def test_register_a_parquet_folder_then_position_bias_from_it(page, app_url, parquet_lake):
    from ulr import engines, propensity
    from ulr.simulate import simulate_clicks

    df = simulate_clicks(queries=30, positions=5, sessions=1200, seed=21).df
    lake = parquet_lake(df, 2)
    name = f"lake_{uuid.uuid4().hex[:6]}"

    page.goto(app_url + "/data")
    wait_idle(page)
    page.get_by_label("Source name").fill(name)
    page.get_by_label("Parquet or CSV folder or glob").fill(str(lake))
    page.get_by_role("button", name="Register and aggregate").click()
    page.get_by_text(f"Registered “{name}”: {len(df):,} rows in 2 partitions.").wait_for(
        timeout=120_000)
    wait_idle(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar.get_by_role("combobox", name="Dataset")).to_have_value(
        f"{name} (registered source)")  # the new source is the current one
    assert no_errors(page) == []

    page.get_by_role("link", name="Estimate position bias from these statistics").click()
    wait_idle(page, timeout=120_000)
    expect(page.get_by_role("heading", name="Position bias")).to_be_visible()
    expect(page.get_by_text("Estimated 1 of 1 methods")).to_be_visible(timeout=120_000)
    page.wait_for_function(f"() => {{ const t = ({TRACES})(); return t && t.length >= 1; }}",
                           polling=POLL_MS)
    traces = dict(page.evaluate(TRACES))
    direct = propensity.estimate(engines.get("duckdb").scan(path=str(lake)), method="em",
                                 n_bootstrap=0)
    np.testing.assert_allclose(traces["em"], direct.theta, atol=1e-9)
    expect(page.get_by_text(f"{len(df):,} impressions, {int(df.click.sum()):,} clicks",
                            exact=False)).to_be_visible()
    shot(page, "journey_source_position_bias")
    assert no_errors(page) == []


def test_the_register_form_reads_nothing_outside_the_opened_folders(page, app_url, tmp_path):
    """A visitor names a secret file outside the roots, a system glob, ``../../``, a device
    and the store's own folder: one sentence each, no byte of a file, no listing, no
    traceback, nothing registered."""
    from pathlib import Path

    from ulr.engines import sources

    secret = Path(app_url.db).parent / ".env"  # beside the store: not an opened folder
    secret.write_text("DB_PASSWORD=hunter2\n")
    page.goto(app_url + "/data")
    wait_idle(page)
    expect(page.get_by_text("Folders opened to the browser:", exact=False)).to_be_visible()
    for typed in (str(secret), "/etc/*", "../../", "/dev/zero",
                  str(Path(app_url.db).parent / "*")):
        page.get_by_label("Source name").fill("leak")
        page.get_by_label("Parquet or CSV folder or glob").fill(typed)
        page.get_by_role("button", name="Register and aggregate").click()
        wait_idle(page)
        alert = page.locator('[data-testid="stAlertContentError"]')
        expect(alert).to_have_text(
            f"Not registered: “{typed}” is not in a folder this server opens to the browser; "
            "upload the file instead, or ask the operator to open its folder.")
        body = page.locator("body").inner_text()
        assert "hunter2" not in body and "passwd" not in body and "Traceback" not in body
        assert page.locator('[data-testid="stException"]').count() == 0
    assert sources.get("leak", db_path=app_url.db) is None
