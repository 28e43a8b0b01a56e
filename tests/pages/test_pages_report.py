"""Report and Present pages through Streamlit's AppTest, on reports saved in the store."""

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from streamlit.testing.v1 import AppTest

from ulr import report
from ulr.report import saved as reports

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
OWNER, OTHER = "browser:" + "a" * 32, "browser:" + "b" * 32  # two browsers' identities


def seeded_report(name="Page test", owner=OWNER):
    r = reports.create(name, actor=owner)
    reports.add_item(r.id, report.ReportItem.from_result(
        "CTR by position", fig=go.Figure(go.Scatter(x=[1, 2, 3], y=[0.003, 0.002, 0.001])),
        table=pd.DataFrame({"position": [1, 2, 3], "ctr": [0.003, 0.002, 0.001],
                            "note": ["=cmd", "ok", "-x"]}),
        settings={"method": "em", "seed": 7}, dataset="sample",
        caveats=["Only 38 clicks: read the interval, not the point."],
        evidence={"rows": 9000, "clicks": 38}), actor=owner)
    reports.add_item(r.id, report.ReportItem.from_result(
        "Theta estimate", fig=go.Figure(go.Bar(x=[1, 2], y=[1.0, 0.5])), dataset="sample",
        takeaway="Position 2 is seen half as often."), actor=owner)
    return r


def open_page(path, rid=None, identity=OWNER):
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["_ulr_identity"] = identity  # as the browser cookie would give
    if rid:
        at.query_params["report"] = rid
    at.run()
    assert not at.exception, at.exception
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def item_titles(rid):
    return [i.title for i in reports.items(rid)]


def test_report_page_edits_are_saved_at_once():
    r = seeded_report()
    at = open_page("pages/report.py", r.id)
    assert at.title[0].value == "Report"
    titles = [t.value for t in at.text_input if t.label == "Title"]
    assert titles == ["CTR by position", "Theta estimate"]
    assert len(at.get("plotly_chart")) == 2
    # caveats word for word, evidence and settings on screen
    assert any(w.value == "Only 38 clicks: read the interval, not the point."
               for w in at.warning)
    caps = " ".join(c.value for c in at.caption)
    assert "9,000 rows" in caps and "method = em" in caps and "seed = 7" in caps
    labels = [d.label for d in at.get("download_button")]
    for want in ("Download HTML report", "Download slides (HTML)", "Download slides (PDF)",
                 "Download slides (PowerPoint)", "Download tables (ZIP)"):
        assert want in labels

    first, second = [i.id for i in reports.items(r.id)]
    at.text_input(key=f"rep_title_{first}").input("Clicks fall with position").run()
    at.text_input(key=f"rep_takeaway_{first}").input("Position 1 gets 3x the clicks.").run()
    assert not at.exception
    saved = reports.items(r.id)
    assert saved[0].title == "Clicks fall with position"
    assert saved[0].takeaway == "Position 1 gets 3x the clicks."
    at.text_input(key=f"rep_title_{second}").input("  ").run()  # refused, nothing changes
    assert item_titles(r.id)[1] == "Theta estimate"
    assert at.warning

    at.button(key=f"rep_down_{first}").click().run()
    assert item_titles(r.id) == ["Theta estimate", "Clicks fall with position"]
    at.button(key=f"rep_rm_{second}").click().run()
    assert item_titles(r.id) == ["Clicks fall with position"]


def test_rename_duplicate_delete_from_the_page():
    r = seeded_report("Before")
    at = open_page("pages/report.py", r.id)
    at.text_input(key="rep_name").input("After").run()
    assert reports.get_info(r.id).name == "After"
    at.button(key="rep_dup").click().run()
    assert not at.exception
    copies = [x for x in reports.list_reports() if x.name == "Copy of After"]
    assert len(copies) == 1 and copies[0].items == 2 and copies[0].owner == OWNER
    assert at.query_params["report"] == [copies[0].id] or \
        at.query_params["report"] == copies[0].id
    assert at.button(key="rep_del").disabled
    at.checkbox(key="rep_del_sure").check().run()
    at.button(key="rep_del").click().run()
    assert not at.exception
    assert reports.get_info(copies[0].id) is None
    assert reports.get_info(r.id) is not None


def test_present_page_renders_the_deck_without_settings():
    r = seeded_report("Slides")
    at = open_page("pages/present.py", r.id)
    assert not at.exception
    html = at.get("iframe")[0].proto.srcdoc
    assert "Only 38 clicks: read the interval, not the point." in html
    assert "Position 2 is seen half as often." in html
    assert 'class="slide cover"' in html and html.count('<section class="slide"') == 2
    body = html.split("</head>", 1)[1]
    assert "Settings" not in body and "settings" not in body and "seed" not in body


def test_someone_elses_report_is_read_only_and_refused_if_forced():
    r = seeded_report("Alice's")
    first = reports.items(r.id)[0].id
    at = open_page("pages/report.py", r.id, identity=OTHER)
    assert any("belongs to someone else" in i.value for i in at.info)
    assert at.text_input(key="rep_name").disabled and at.button(key="rep_del").disabled
    assert at.text_input(key=f"rep_title_{first}").disabled
    assert at.button(key=f"rep_rm_{first}").disabled
    assert not [c for c in at.checkbox if c.key == f"rep_private_{r.id}"]  # owner's only
    assert len(at.get("plotly_chart")) == 2  # but everything is readable
    # a change that reaches the page anyway (widgets drawn for the owner, sent by another
    # identity: a forged message) is refused by ulr.report.saved, in one sentence
    forged = open_page("pages/report.py", r.id)
    forged.session_state["_ulr_identity"] = OTHER
    forged.text_input(key="rep_name").input("Bob was here").run()
    assert any("only its owner can change it" in w.value for w in forged.warning)
    forged = open_page("pages/report.py", r.id)
    forged.session_state["_ulr_identity"] = OTHER
    forged.button(key=f"rep_rm_{first}").click().run()
    assert not forged.exception
    assert reports.get_info(r.id).name == "Alice's"
    assert item_titles(r.id) == ["CTR by position", "Theta estimate"]
    # "Duplicate" gives the visitor a copy of their own, which they can change
    at.button(key="rep_dup").click().run()
    mine = reports.latest(actor=OTHER)
    assert mine.name == "Copy of Alice's" and mine.items == 2
    assert not at.text_input(key="rep_name").disabled


def test_private_report_is_hidden_from_others_and_from_the_presentation_link():
    r = seeded_report("Secret")
    at = open_page("pages/report.py", r.id)
    at.checkbox(key=f"rep_private_{r.id}").check().run()
    assert reports.get_info(r.id, actor=OWNER).private
    other = open_page("pages/present.py", r.id, identity=OTHER)
    assert any("does not exist here or is private" in w.value for w in other.warning)
    assert all("Secret" not in f.proto.srcdoc for f in other.get("iframe"))
    assert other.query_params.get("report") not in ([r.id], r.id)


def test_a_simulated_result_is_added_without_a_dataset():
    """The off-policy page's simulated study is saved with provenance "simulated" and no
    dataset (never flagged stale); its result on the log stays bound to the dataset."""
    at = AppTest.from_file(str(ROOT / "pages" / "off_policy.py"), default_timeout=120)
    at.run()
    [b for b in at.button if b.label == "Add to report"][0].click().run()
    at.segmented_control(key="ope_view").set_value("Simulation: bias and variance").run()
    at.number_input(key="sim_runs").set_value(20)
    at.number_input(key="sim_rows").set_value(200)
    [b for b in at.button if b.label == "Run simulation"][0].click().run()
    [b for b in at.button if b.label == "Add to report"][0].click().run()
    assert not at.exception, at.exception
    logged, sim = reports.items(at.session_state["report_id"])[-2:]
    assert (logged.provenance, bool(logged.dataset), bool(logged.content_hash)) == (
        "dataset", True, True)
    assert (sim.provenance, sim.dataset, sim.content_hash) == ("simulated", "", "")
    assert "simulated" in sim.title and reports.stale_status([logged, sim]) == {}


def test_a_bandit_lab_result_in_a_simulated_environment_has_no_dataset():
    at = AppTest.from_file(str(ROOT / "pages" / "bandit_lab.py"), default_timeout=60)
    at.run()
    at.number_input(key="bl_steps").set_value(200)
    at.number_input(key="bl_runs").set_value(1)
    at.button(key="FormSubmitter:bl_form-Start").click()
    at.run()
    for _ in range(50):
        if at.session_state["bl_status"] == "done":
            break
        at.run()
    assert at.session_state["bl_status"] == "done" and not at.exception
    [b for b in at.button if b.label == "Add to report"][0].click().run()
    assert not at.exception, at.exception
    it = reports.items(at.session_state["report_id"])[-1]
    assert it.title.startswith("Bandit lab: kveton environment")
    assert (it.provenance, it.dataset, it.content_hash) == ("simulated", "", "")


def test_a_first_visit_makes_no_report_until_the_visitor_starts_one():
    """A new browser on the Report and Present pages writes nothing to the store (each
    visit used to save an empty "Untitled report"); "New report" starts one."""
    newcomer = "browser:" + "c" * 32
    before = len(reports.list_reports())
    at = open_page("pages/report.py", identity=newcomer)
    assert any("You have no reports yet" in i.value for i in at.info)
    shown = open_page("pages/present.py", identity=newcomer)
    assert any("You have no reports yet" in i.value for i in shown.info)
    assert len(reports.list_reports()) == before and reports.latest(actor=newcomer) is None
    at.button(key="rep_new").click().run()
    assert not at.exception
    mine = reports.latest(actor=newcomer)
    assert mine is not None and mine.name == reports.UNTITLED
    assert at.text_input(key="rep_name").value == reports.UNTITLED


def test_report_page_shows_a_kept_picture_instead_of_a_live_chart():
    """Issue 54: a chart whose printed picture was kept after its save is shown as that
    picture (quick for the browser to draw); an item without one keeps its live chart."""
    from ulr.report import deck, drawn
    r = seeded_report("Pictures")
    items = reports.items(r.id, actor=OWNER)
    positions, (kind, keys, _) = deck.print_pictures(items, reports.stale_status(items))
    assert positions == [0, 1]
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20">'
           '<rect width="40" height="20" fill="#123456"/></svg>')
    try:  # the first item's picture kept in this process only (the store is shared)
        drawn.kept(kind, keys[:1], lambda missing: [svg.encode()] * len(missing), keep=False)
        assert deck.kept_pictures(items) == {items[0].id: svg}
        at = open_page("pages/report.py", r.id)
        charts = at.get("plotly_chart")
        assert len(charts) == 1 and '"bar"' in charts[0].proto.spec  # the second item's
        images = at.get("image")
        assert len(images) == 1
        assert "data:image/svg+xml;base64," in str(images[0].proto)
    finally:
        drawn.clear()
    at = open_page("pages/report.py", r.id)  # nothing kept: both live
    assert len(at.get("plotly_chart")) == 2 and not at.get("image")


def test_an_items_table_is_drawn_when_its_section_is_opened():
    r = seeded_report()
    at = open_page("pages/report.py", r.id)
    first = reports.items(r.id)[0].id
    assert [e.label for e in at.expander] == ["Table (3 rows)"]
    assert len(at.dataframe) == 0  # folded: no grid on the first view
    at.session_state[f"rep_table_{first}"] = True  # as a click on the section would
    at.run()
    assert not at.exception, at.exception
    assert len(at.dataframe) == 1
    shown = at.dataframe[0].value
    assert list(shown["note"]) == ["=cmd", "ok", "-x"]  # the saved table, as saved
