"""Journey: upload a web-search log, ask what it can tell, build the report, export it."""

import re

from playwright.sync_api import expect

from tests.e2e.helpers import FLAG, alerts, no_errors, open_upload, shot, wait_idle
from tests.e2e.test_journey_present import _download  # a download saved under tmp_path


def test_upload_audit_report_and_export(page, app_url, tmp_path):
    import pandas as pd
    from pptx import Presentation

    from ulr.audit import logs
    src, mapping = logs.search_log(tmp_path / "raw.csv", sessions=1500, queries=300)
    path = tmp_path / "web_search.csv"
    cols = {theirs[0]: canon for canon, theirs in mapping.columns.items()}
    pd.read_csv(src).rename(columns=cols).to_csv(path, index=False)  # auto-detected names

    open_upload(page, app_url, path)
    page.get_by_label("Dataset name").fill("web search")
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text("Stored “web search”").first.wait_for(timeout=120_000)
    wait_idle(page)
    page.get_by_role("link", name="What can this log tell me?").click()
    expect(page.get_by_role("heading", name="What can this log tell me?")).to_be_visible()
    page.get_by_role("button", name="Answer every question").click()
    expect(page.get_by_text(re.compile(r"Answered \d of \d questions"))).to_be_visible(
        timeout=180_000)
    wait_idle(page, timeout=120_000)

    answered = ("ctr_by_position", "position_bias", "user_models", "replay")
    for qid in answered:  # each answered question once, with its verdict and its page link
        box = page.locator(f".st-key-audit_answer_{qid}")
        expect(box).to_have_count(1)
        expect(box.locator(f".st-key-verdict_audit_{qid}")).to_have_count(1)
        expect(box.get_by_role("link", name=re.compile("with these settings"))).to_have_count(1)
    expect(page.locator('[class*="st-key-verdict_audit_"]')).to_have_count(len(answered))
    link = page.locator(".st-key-audit_answer_position_bias").get_by_role(
        "link", name=re.compile("with these settings"))
    assert re.search(r"position_bias\?.*propensity=em", link.get_attribute("href") or "")
    missing = page.locator(".st-key-audit_missing_off_policy")
    expect(missing).to_contain_text("propensity column")
    assert not any(FLAG.search(a) for a in alerts(page))
    shot(page, "journey_audit_answers")

    page.get_by_role("button", name="Build the report").click()
    expect(page.get_by_text(re.compile(r"Saved the report .* with 5 items"))).to_be_visible(
        timeout=60_000)
    page.get_by_role("link", name="Open the report").click()
    expect(page.get_by_role("heading", name="Report", exact=True)).to_be_visible()
    titles = page.get_by_role("textbox", name="Title", exact=True)
    expect(titles).to_have_count(5, timeout=30_000)
    expect(titles.nth(0)).to_have_value("What can “web search” tell us?")
    wait_idle(page)
    assert no_errors(page) == []

    deck = _download(page, "Download slides (HTML)", tmp_path).read_text(encoding="utf-8")
    for title in ("CTR by position", "Position bias", "User models", "Replay of"):
        assert len(re.findall(rf'id="slide-\d+"><h1>{re.escape(title)}', deck)) == 1, title
    assert "Not answerable from this log" in deck and "propensity column" in deck
    prs = Presentation(str(_download(page, "Download slides (PowerPoint)", tmp_path)))
    texts = [" ".join(sh.text_frame.text for sh in s.shapes if sh.has_text_frame)
             for s in prs.slides]
    # the deck's cover, then the title item and the four answers (an appendix may follow)
    assert texts[0].startswith("What “web search” can tell us"), texts[0]
    items = texts[1:6]
    assert len(items) == 5 and items[0].startswith("What can"), texts
    levels = re.compile(r"\b(Reliable|Directional|Inconclusive|Invalid)\b", re.I)
    assert all(levels.search(t) for t in items[1:]), texts  # each answer with its verdict
