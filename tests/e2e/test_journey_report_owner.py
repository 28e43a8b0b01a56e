"""Journey: two browsers without sign-in each keep their own "current report".

Browser A finds no report of its own on its first visit (a visit makes none), starts
"Alice report" and adds a chart; browser B makes and renames its own
report (the newest change in the store), opens A's report by its link (read-only)
and adds charts; a fresh browser A2 with A's cookies (the same identity, as after a
restart of the browser) adds a chart: it lands in A's report, and none of B's do.
"""

import re

from playwright.sync_api import expect

from tests.e2e.helpers import no_errors, shot, wait_idle
from ulr.report import saved as reports

OP = reports.OPERATOR


def _report_id(page):
    return re.search(r"report=([0-9a-f]+)", page.url).group(1)


def _rename(page, name):
    box = page.get_by_role("textbox", name="Report name")
    box.fill(name)
    box.press("Enter")
    wait_idle(page)
    expect(page.get_by_role("combobox", name="Saved reports")).to_have_value(
        re.compile(re.escape(name)))


def _new_report(page):
    """A first visit makes no report: the visitor starts one."""
    expect(page.get_by_text("You have no reports yet")).to_be_visible()
    page.get_by_role("button", name="New report").click()
    wait_idle(page)


def _add_on_data_page(page, want):
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Data").click()
    wait_idle(page)
    page.get_by_role("button", name="Add to report").click()
    expect(page.get_by_text(want)).to_be_visible()
    wait_idle(page)


def test_each_browser_continues_its_own_report(browser, app_url):
    size = {"width": 1400, "height": 1000}
    ctx_a, ctx_b = browser.new_context(viewport=size), browser.new_context(viewport=size)
    try:
        a = ctx_a.new_page()
        a.goto(app_url + "/report")
        wait_idle(a)
        _new_report(a)
        _rename(a, "Alice report")
        rid_a = _report_id(a)
        _add_on_data_page(a, "to the report (1 item)")
        cookie = [c for c in ctx_a.cookies() if c["name"] == "ulr_browser"]
        assert len(cookie) == 1 and re.fullmatch(r"[0-9a-f]{32}", cookie[0]["value"])
        assert cookie[0]["value"] not in a.url  # the identity is never in a link

        b = ctx_b.new_page()
        b.goto(app_url + "/report")
        wait_idle(b)
        _new_report(b)
        rid_b = _report_id(b)
        assert rid_b != rid_a
        _rename(b, "Bob report")  # now the most recently changed report in the store
        b.goto(app_url + f"/report?report={rid_a}")  # A's link: readable, not editable
        wait_idle(b)
        expect(b.get_by_text("belongs to someone else")).to_be_visible()
        expect(b.get_by_role("textbox", name="Report name")).to_be_disabled()
        expect(b.get_by_role("textbox", name="Report name")).to_have_value("Alice report")
        expect(b.get_by_role("button", name="Delete report")).to_be_disabled()
        expect(b.get_by_role("textbox", name="Title", exact=True)).to_be_disabled()
        shot(b, "owner_someone_elses_report")
        _add_on_data_page(b, "to your report “Bob report” (1 item)")
        _add_on_data_page(b, "to the report (2 items)")

        ctx_a2 = browser.new_context(viewport=size, storage_state=ctx_a.storage_state())
        try:  # a fresh browser of A's: a new session, A's cookie
            a2 = ctx_a2.new_page()
            a2.goto(app_url + "/data")
            wait_idle(a2)
            a2.get_by_role("button", name="Add to report").click()
            expect(a2.get_by_text("to the report (2 items)")).to_be_visible()
            assert no_errors(a2) == []
        finally:
            ctx_a2.close()
        assert no_errors(a) == [] and no_errors(b) == []
    finally:
        ctx_a.close()
        ctx_b.close()

    db = app_url.db
    info_a, info_b = (reports.get_info(r, actor=OP, db=db) for r in (rid_a, rid_b))
    assert (info_a.name, info_a.items) == ("Alice report", 2)
    assert (info_b.name, info_b.items) == ("Bob report", 2)
    assert info_a.owner != info_b.owner and info_a.owner.startswith("browser:")
    assert cookie[0]["value"] not in info_a.owner  # the store keeps a hash only
