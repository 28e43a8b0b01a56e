"""Journey: datasets belong to whoever loaded them, and the mapping is checked before Load.

Without sign-in, browser A uploads a log whose slots do not share a timestamp, maps
session_id to that timestamp and is warned before Load (nothing is stored yet); A loads it.
Browser B sees and uses A's dataset but is offered no rename or delete (one sentence says
why) and cannot take its name with "Replace"; A deletes it. With sign-in through a local
OpenID Connect provider the same holds for two signed-in users, and a visitor who is not
signed in is asked to sign in before uploading (test_journey_report_oidc.py, one journey
with the reports, so each user signs in once).
"""

import re
from urllib.parse import quote

from playwright.sync_api import expect

from tests.e2e.helpers import no_errors, open_upload, pick, shot, wait_idle
from ulr.data import catalog
from ulr.simulate import obd_like_log

QUERY = [f"user_feature_{j}" for j in range(4)]
NOT_YOURS = re.compile(r"was loaded by someone else; you can use it, but only they or the "
                       r"operator can rename or delete it\.")


def _names(db) -> list[str]:
    return [d.name for d in catalog.list_datasets(catalog.cursor(db))]


def upload(page, url, path, name, *, session=False):
    """Upload ``path`` on the Data page, mapped as the README maps such a log."""
    open_upload(page, url, path)
    pick(page, "query_id", QUERY)
    if session:
        pick(page, "session_id", ["timestamp"])
    page.get_by_label("Dataset name").fill(name)
    page.get_by_label("Dataset name").press("Enter")
    wait_idle(page)


def load(page, name):
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text(f"Stored “{name}” with").wait_for(timeout=120_000)  # the flash, not
    # the status box above it (st.status, "Stored “name”: N rows"), which may show as well
    wait_idle(page)


def cannot_change(page, url, path, name):
    """Another identity: uses ``name``, is told why it cannot rename or delete it, and
    cannot replace it with an upload of the same name."""
    page.goto(url + "/data?dataset=" + quote(name))
    wait_idle(page)
    expect(page.get_by_role("heading", name=f"“{name}”")).to_be_visible()
    page.get_by_text("Manage datasets", exact=True).click()
    expect(page.get_by_text(NOT_YOURS)).to_be_visible()
    expect(page.get_by_role("button", name="Delete", exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name="Rename", exact=True)).to_have_count(0)
    upload(page, url, path, name)
    page.get_by_text("Replace a dataset with the same name").click()
    wait_idle(page)
    expect(page.get_by_text(f"A dataset named “{name}” exists already.", exact=False)
           ).to_be_visible()
    expect(page.get_by_role("button", name="Load", exact=True)).to_be_disabled()
    assert no_errors(page) == []


def delete(page, url, name):
    page.goto(url + "/data?dataset=" + quote(name))
    wait_idle(page)
    page.get_by_text("Manage datasets", exact=True).click()
    label = f"Yes, delete “{name}”"
    box = page.get_by_role("checkbox", name=label)
    for _ in range(5):  # a click that lands during a rerun can be dropped (a loaded run):
        wait_idle(page)  # look again once the page is idle, and click only if still clear
        if box.is_checked():
            break
        page.get_by_text(label).click()
        try:
            expect(box).to_be_checked(timeout=15_000)
            break
        except AssertionError:
            continue
    expect(box).to_be_checked()
    # Delete is enabled by the box's rerun: on a loaded machine that took over 30 s once
    button = page.get_by_role("button", name="Delete", exact=True)
    expect(button).to_be_enabled(timeout=120_000)
    button.click()
    wait_idle(page)


def test_the_mapping_is_checked_before_load_and_only_the_loader_removes(browser, app_url,
                                                                        tmp_path):
    path = tmp_path / "slots.csv"
    obd_like_log(impressions=300, items=12, row_timestamps=True).to_csv(path, index=False)
    size = {"width": 1400, "height": 1000}
    ctx_a, ctx_b = browser.new_context(viewport=size), browser.new_context(viewport=size)
    try:
        a = ctx_a.new_page()
        upload(a, app_url, path, "alice log", session=True)
        warning = a.get_by_text("'timestamp', mapped to session_id, differs between the "
                                "documents shown together", exact=False)
        expect(warning).to_be_visible()  # before Load: nothing is stored yet
        assert "alice log" not in _names(app_url.db)
        shot(a, "mapping_checked_before_load")
        load(a, "alice log")
        assert catalog.get_dataset(catalog.cursor(app_url.db), "alice log").owner.startswith(
            "browser:")

        cannot_change(ctx_b.new_page(), app_url, path, "alice log")
        assert "alice log" in _names(app_url.db)

        delete(a, app_url, "alice log")
        assert "alice log" not in _names(app_url.db)
        assert no_errors(a) == []
    finally:
        ctx_a.close()
        ctx_b.close()
