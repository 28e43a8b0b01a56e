"""Journey: open a shared link and see the same settings; a link to a missing dataset."""

import re
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import expect

from tests.conftest import visitor_tab
from tests.e2e.helpers import no_errors, shot, wait_idle


def selectbox(page, label):
    """A select box's input; its value is the option shown."""
    return page.get_by_role("combobox", name=label, exact=True)


def test_shared_link_reopens_the_settings(warm_context, fresh_app_url):
    with visitor_tab(warm_context, width=1400, height=1000, timeout_ms=30_000) as page:
        # the first visit of a fresh server, as when a colleague opens the link
        page.goto(fresh_app_url + "/severity_sweep?dataset=sample&etas=0,1,2.5&learner=gbdt"
                  "&method=none&queries=120&sessions=4000&runs=2&seed=7")
        wait_idle(page)
        expect(page.get_by_role("heading", name="Severity sweep")).to_be_visible(timeout=30_000)
        expect(page.get_by_role("textbox", name="η values (severity of position bias)")
               ).to_have_value("0, 1, 2.5")
        expect(selectbox(page, "Learner")).to_have_value("gradient boosting")
        expect(selectbox(page, "Estimated θ by")).to_have_value("none")
        for name, value in (("Queries", "120"), ("Sessions per log", "4000"),
                            ("Runs per η", "2"), ("Seed", "7")):
            expect(page.get_by_role("spinbutton", name=name, exact=True)).to_have_value(value)
        expect(page.locator('[data-testid="stSidebar"]').get_by_role("link", name="Home")
               ).to_be_visible()                    # went through app.py's navigation
        query = parse_qs(urlparse(page.url).query)
        assert query["etas"] == ["0,1,2.5"] and query["seed"] == ["7"]  # the link stays valid
        shot(page, "journey_shared_link_sweep")
        assert no_errors(page) == []

        page.goto(fresh_app_url + "/bandit_lab?env=linear&algorithms=cascade-lints,ucb1"
                  "&items=40&positions=3&d=6&steps=700&runs=2&seed=11")
        wait_idle(page)
        expect(page.get_by_role("heading", name="Bandit lab")).to_be_visible(timeout=30_000)
        expect(selectbox(page, "Environment")).to_have_value("linear")
        algos = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Algorithms")
        expect(algos).to_contain_text("cascade-lints")
        expect(algos).to_contain_text("ucb1")
        expect(algos).not_to_contain_text("cascade-klucb")  # not the defaults
        for name, value in (("Items L", "40"), ("List length K", "3"), ("Tags d (linear)", "6"),
                            ("Steps", "700"), ("Runs", "2"), ("Seed", "11")):
            expect(page.get_by_role("spinbutton", name=name, exact=True)).to_have_value(value)
        shot(page, "journey_shared_link_bandit")
        assert no_errors(page) == []


def test_link_to_a_missing_dataset_says_so_and_uses_the_sample(page, app_url):
    page.goto(app_url + "/compare_rankers?dataset=no-such-log&learner=gbdt")
    wait_idle(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar.get_by_text("does not exist here; showing the sample instead")
           ).to_be_visible(timeout=30_000)
    expect(sidebar.get_by_text("no-such-log")).to_be_visible()
    expect(selectbox(sidebar, "Dataset")).to_have_value("sample")
    expect(selectbox(page, "Learner")).to_have_value("gradient boosting")  # rest of the link
    expect(page.locator('[data-testid="stMetric"]').filter(has_text="IPW ARP")
           ).to_contain_text("vs naive", timeout=90_000)
    expect(page).to_have_url(re.compile(r"[?&]dataset=sample(&|$)"))  # the link now works
    shot(page, "journey_shared_link_missing_dataset")
    assert no_errors(page) == []
