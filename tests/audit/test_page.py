"""The audit page through Streamlit's AppTest: answers with verdicts and links, the reasons
of the others, and the report built from them."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


def _badges(at) -> list:
    """The verdict badges drawn (``st.badge`` is markdown ``:color-badge[...]``)."""
    return [m.value for m in at.markdown if "badge[" in m.value]


def test_the_audit_answers_links_and_builds_the_report(rec_log):
    from ulr.data import ingest
    from ulr.report import saved

    path, mapping = rec_log
    ingest.load_log(path, "recs for the audit page", mapping=mapping, replace=True)
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["dataset"] = "recs for the audit page"
    at.run()
    assert not at.exception, at.exception
    at.switch_page("pages/audit.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "What can this log tell me?"
    assert not _badges(at)  # nothing runs before the visitor asks
    at.button(key="audit_run").click().run()
    assert not at.exception, at.exception
    badges = _badges(at)
    answered = [k for k in ("ctr_by_position", "position_bias", "off_policy",
                            "policy_learning", "several_loggers")]
    assert len(badges) == len(answered)  # each answer once, with its verdict
    text = " ".join(c.value for c in at.caption)
    assert "session column" in text and "session_id" in text  # user models, replay, slates
    assert "--" not in text  # no command-line flag in the browser
    at.button(key="audit_build").click().run()
    assert not at.exception, at.exception
    rid = at.session_state["report_id"]
    items = saved.items(rid, actor=saved.OPERATOR)
    assert len(items) == 1 + len(answered)
    assert items[0].title.startswith("What can") and "Not answerable" in items[0].note
    assert [it.verdict is not None for it in items[1:]] == [True] * len(answered)
    assert items[1].title == "CTR by position" and items[2].title == "Position bias"
    # a second view draws the answers at once from the cache (no progress box)
    at.run()
    assert not at.exception and not at.get("status")
    said = {m.value for m in at.markdown if m.value.startswith("**")}  # the takeaways

    # each link's settings reopen its page on the same verdict, word for word
    from urllib.parse import parse_qsl
    links = {ln.proto.page: ln.proto.query_string for ln in at.get("page_link")
             if ln.proto.label.endswith("with these settings")}
    for page in ("position_bias", "off_policy"):
        at.query_params.clear()
        for k, v in parse_qsl(links[page]):
            at.query_params[k] = v
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, at.exception
        marks = [m.value for m in at.markdown]
        first = next(i for i, m in enumerate(marks) if "badge[" in m)
        assert marks[first + 1] in said, (page, marks[first + 1])  # the takeaway
