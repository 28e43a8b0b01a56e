"""Journey (issue 55): text a visitor sends is shown as text, on every page.

A link carries Markdown and HTML in ``?dataset=``, ``?source=`` and ``?report=`` (a phishing
link, a tracking image, an HTML image with a script): no page shows a live link to the
attacker's site or loads anything from it. A dataset named with Markdown (stored by the
operator beforehand, so that this visitor is a second one) shows its name as literal text.
One journey, one tab: each ``goto`` is a new session, so the link's sentence shows on each page.
"""

from urllib.parse import quote, urlparse

from playwright.sync_api import expect

from pages import _ui as ui
from tests.e2e.helpers import shot, wait_idle
from ulr.data import catalog, ingest
from ulr.data.log import OPERATOR

HOSTILE = ("Session expired. **[Sign in again here](http://evil.example/login)** "
           "![t](http://evil.example/track.png) <img src=http://evil.example/x.png "
           "onerror=alert(1)>")
NAME = "**[ds](http://evil.example/ds)** ![p](http://evil.example/p.png) <b>bold</b>"


def _store_hostile_dataset(db: str, tmp_path) -> None:
    import numpy as np
    rng = np.random.default_rng(3)
    clicks = rng.random(400) < 0.5 / np.tile(np.arange(1, 5), 100)
    path = tmp_path / "hostile.csv"
    path.write_text("query_id,doc_id,position,click,session_id\n" + "".join(
        f"q{i // 4 % 9},d{(i * 7) % 23},{1 + i % 4},{int(clicks[i])},s{i // 4}\n"
        for i in range(400)))
    ingest.load_log(path, NAME, cur=catalog.cursor(db), actor=OPERATOR)


def _text(locator) -> str:
    """What the element reads (the zero-width spaces that stop autolinks show as nothing)."""
    return locator.first.inner_text().replace("\u200b", "").strip()


_OUTSIDE_JS = """() => [...document.querySelectorAll('a[href], img[src], [src]')]
  .map(e => new URL(e.href || e.src, location.href))
  .filter(u => u.hostname.endsWith('evil.example') || u.pathname === '/x').length"""


def _no_live_markup(page, where: str) -> None:
    """No link or image that points out to the attacker's host (a link to this app's own
    page with the dataset in its query is fine), no HTML from the text, no bold from it."""
    assert page.evaluate(_OUTSIDE_JS) == 0, where
    for sel in ('[data-testid="stMarkdownContainer"] b',
                '[data-testid="stMarkdownContainer"] img'):
        assert page.locator(sel).count() == 0, (where, sel)


def test_links_and_names_with_markup_show_as_text_on_every_page(page, app_url, tmp_path):
    _store_hostile_dataset(app_url.db, tmp_path)
    outside = []
    page.on("request", lambda r: outside.append(r.url)
            if (urlparse(r.url).hostname or "").endswith("evil.example") else None)
    bad = quote(HOSTILE)
    for path, title, _icon, is_home in ui.PAGES:
        stem = "" if is_home else path.split("/")[-1][:-3]
        page.goto(f"{app_url}/{stem}?dataset={quote(NAME)}&source={bad}&report={bad}")
        wait_idle(page, timeout=120_000)
        expect(page.get_by_text("does not exist here").first).to_be_visible()  # the source's
        _no_live_markup(page, stem or "home")
        if is_home:  # the name, as written, to a second visitor; its identity cookie
            cookie = [c for c in page.context.cookies() if c["name"] == "ulr_browser"]
            assert len(cookie) == 1 and cookie[0]["sameSite"] == "Lax", cookie
            heading = page.get_by_role("heading").filter(has_text="Current dataset")
            assert _text(heading) == f"Current dataset: “{ui.clip(NAME)}”"
            shot(page, "journey_visitor_text_home")
    for stem in ("", "data", "off_policy", "present"):  # a missing dataset, named in the link
        page.goto(f"{app_url}/{stem}?dataset={bad}&report={bad}")
        wait_idle(page, timeout=120_000)
        sidebar = page.locator('[data-testid="stSidebar"]')
        expect(sidebar.get_by_text("does not exist here; showing the sample instead")
               ).to_be_visible()
        flash = sidebar.locator('[data-testid="stAlert"]').filter(has_text="does not exist")
        assert f"“{ui.clip(HOSTILE)}”" in _text(flash)
        _no_live_markup(page, stem or "home")
    assert outside == []


def test_an_abandoned_uploads_copy_is_private_and_gone_within_a_minute(warm_context, app_url,
                                                                       tmp_path):
    """The open form keeps its copy (0600, in a 0700 folder); once the tab is closed the
    copy goes within a minute, with no Load and no other visitor (issue 55)."""
    import stat
    import time
    from pathlib import Path

    from tests.e2e.helpers import open_upload

    db = Path(app_url.db)
    folder = db.with_name(db.stem + "_uploads")
    before = set(folder.iterdir()) if folder.exists() else set()
    path = tmp_path / "abandoned.csv"
    path.write_text("query_id,doc_id,position,click\nq,a,1,1\nq,b,2,0\n")
    warm_context.clear_cookies()
    tab = warm_context.new_page()
    tab.set_default_timeout(60_000)
    open_upload(tab, app_url, path)
    copies = set(folder.iterdir()) - before
    assert len(copies) == 1, copies
    copy = copies.pop()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    closed = time.time()
    tab.close()
    while copy.exists() and time.time() - closed < 60:
        time.sleep(1)
    assert not copy.exists(), f"still there {time.time() - closed:.0f} s after the tab closed"
    warm_context.clear_cookies()
