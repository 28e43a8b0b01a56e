"""Report page through Streamlit's AppTest: edit, reorder, remove, export buttons."""

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from streamlit.testing.v1 import AppTest

from ulr import __version__, report

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def ui_item(title, fig, table=None, dataset="sample"):
    """An item exactly as pages/_ui.add_to_report stores it (no id)."""
    return {"title": title, "note": "", "figure": fig.to_json(),
            "table": None if table is None else table.to_json(orient="split"),
            "settings": {"dataset": dataset, "eta": 1.0}, "dataset": dataset,
            "created": "2031-05-06T07:08:09", "version": __version__}


def seeded_items():
    return [
        ui_item("CTR by position", go.Figure(go.Scatter(x=[1, 2, 3], y=[0.3, 0.2, 0.1])),
                pd.DataFrame({"position": [1, 2, 3], "ctr": [0.3, 0.2, 0.1],
                              "note": ["=cmd", "ok", "-x"]})),
        ui_item("Theta estimate", go.Figure(go.Bar(x=[1, 2], y=[1.0, 0.5]))),
    ]


def open_report(items):
    at = AppTest.from_file(APP, default_timeout=60)
    if items is not None:
        at.session_state["report_items"] = items
    at.run()
    assert not at.exception, at.exception
    at.switch_page("pages/report.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Report"
    return at


def titles(at):
    return [it["title"] for it in at.session_state["report_items"]]


def ids(at):
    return [it["id"] for it in at.session_state["report_items"]]


def downloads(at):
    return {d.label: d for d in at.get("download_button")}


def test_empty_report_explains_how_to_add_items():
    at = open_report(None)
    info = " ".join(i.value for i in at.info)
    assert "Add to report" in info and "empty" in info
    assert not at.get("download_button")


def test_edit_move_remove_and_export_buttons():
    at = open_report(seeded_items())
    # Both items listed in order, each with its title, chart and metadata.
    assert [t.value for t in at.text_input][1:] == ["CTR by position", "Theta estimate"]
    assert len(at.get("plotly_chart")) == 2
    assert any("created 2031" in m.value and "sample" in m.value for m in at.markdown)
    dl = downloads(at)
    assert "Download HTML report" in dl and "Download tables (ZIP, 1 CSV)" in dl
    assert dl["Download HTML report"].proto.deferred_file_id  # built on click
    images = [d.label for d in at.get("download_button") if d.label in ("PNG", "PDF")]
    if report.static_export_problem() is None:
        assert images == ["PNG", "PDF", "PNG", "PDF"]  # one pair per chart
    else:
        assert images == [] and any("PNG/PDF export" in c.value for c in at.caption)

    first, second = ids(at)
    at.text_input(key=f"rep_title_{first}").input("Clicks fall with position").run()
    at.text_area(key=f"rep_note_{first}").input("Position 1 gets 3x the clicks.").run()
    assert not at.exception
    assert titles(at) == ["Clicks fall with position", "Theta estimate"]
    assert at.session_state["report_items"][0]["note"] == "Position 1 gets 3x the clicks."

    # An empty title is refused and the old one kept.
    at.text_input(key=f"rep_title_{second}").input("  ").run()
    assert titles(at)[1] == "Theta estimate"
    assert any("kept" in w.value for w in at.warning)
    assert at.text_input(key=f"rep_title_{second}").value == "Theta estimate"

    # Move the first item down: the order changes and the widgets follow their item.
    assert at.button(key=f"rep_up_{first}").disabled
    at.button(key=f"rep_down_{first}").click().run()
    assert not at.exception
    assert titles(at) == ["Theta estimate", "Clicks fall with position"]
    assert [t.value for t in at.text_input][1:] == ["Theta estimate",
                                                    "Clicks fall with position"]
    assert at.button(key=f"rep_down_{first}").disabled
    at.button(key=f"rep_up_{first}").click().run()
    assert titles(at) == ["Clicks fall with position", "Theta estimate"]

    # The items stay valid report items (what the HTML export is built from).
    items = report.as_items(at.session_state["report_items"])
    assert [i.title for i in items] == titles(at)

    # Remove one: one left, its table counted in the ZIP button.
    at.button(key=f"rep_rm_{second}").click().run()
    assert not at.exception
    assert titles(at) == ["Clicks fall with position"]
    assert len(at.get("plotly_chart")) == 1
    assert "Download tables (ZIP, 1 CSV)" in downloads(at)

    # Clearing needs the confirmation box.
    assert at.button(key="rep_clear").disabled
    at.checkbox(key="rep_clear_sure").check().run()
    at.button(key="rep_clear").click().run()
    assert not at.exception
    assert at.session_state["report_items"] == []
    assert any("Add to report" in i.value for i in at.info)


def test_broken_item_is_shown_and_can_be_removed():
    items = seeded_items()
    items.insert(0, {"title": "", "figure": "not json"})
    at = open_report(items)
    assert any("Item 1 is broken" in e.value for e in at.error)
    assert len(at.get("plotly_chart")) == 2  # the good items still render
    broken = ids(at)[0]
    at.button(key=f"rep_rm_{broken}").click().run()
    assert not at.exception and not at.error
    assert titles(at) == ["CTR by position", "Theta estimate"]


def test_image_buttons_hidden_without_kaleido_or_chromium(monkeypatch):
    monkeypatch.setattr(report, "static_export_problem",
                        lambda: "static image export needs Chromium, which is not installed.")
    at = open_report(seeded_items())
    labels = [d.label for d in at.get("download_button")]
    assert "PNG" not in labels and "PDF" not in labels
    assert "Download HTML report" in labels
    assert any("PNG/PDF export of single charts is off here" in c.value and "Chromium" in c.value
               for c in at.caption)
