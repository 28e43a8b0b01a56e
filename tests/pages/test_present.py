"""Exports that tell the whole truth, the slide deck, PDF, the CLI, and the visual language."""

import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from ulr import report, theme
from ulr.report import saved as reports
from ulr.plots import ctr_by_position_figure

ROOT = Path(__file__).resolve().parents[2]
CAVEATS = ["Effective sample size is 3.4% of the log.", "Only 6.8 effective clicks <b>!</b>"]


def ope_item():
    t = pd.DataFrame({"estimator": ["ips", "snips", "dr"], "estimate": [0.0512, 0.0498, 0.05],
                      "lower": [0.01, 0.02, 0.015], "upper": [0.09, 0.08, 0.085]})
    fig = go.Figure(go.Scatter(x=t["estimator"], y=t["estimate"], mode="markers"))
    theme.apply(fig, title="Off-policy estimates", x="estimator",
                y="expected clicks per logged row (a long title)")
    return report.ReportItem.from_result(
        "Off-policy estimates of policy “greedy”", fig=fig, table=t, dataset="sample",
        settings={"policy": "greedy", "estimator": "ips,snips,dr", "seed": 11},
        caveats=CAVEATS, evidence={"rows": 12000, "clicks": 410, "queries": 300})


def body(doc):
    from plotly.offline import get_plotlyjs
    assert doc.count(get_plotlyjs()) == 1
    return doc.replace(get_plotlyjs(), "")


# ----------------------------------------------------------------------------- visual language


def tick_labels(fig, axis="y"):
    ax = fig.layout[f"{axis}axis"]
    lo, hi = ax.range
    d = int(re.match(r"\.(\d+)%", ax.tickformat).group(1))
    ticks = np.arange(0, hi + 1e-12, ax.dtick)
    return [f"{t * 100:.{d}f}%" for t in ticks if t >= lo - 1e-12]


@pytest.mark.parametrize("ctr", [0.001, 0.004, 0.012, 0.05, 0.18, 0.5])
def test_percent_axis_ticks_are_distinct_from_01_to_50_percent(ctr):
    pos = np.arange(1, 11)
    c = ctr / pos ** 0.7
    df = pd.DataFrame({"position": pos, "ctr": c, "lower": c * 0.8, "upper": c * 1.2,
                       "impressions": 1000, "clicks": 5})
    fig = ctr_by_position_figure(df)
    labels = tick_labels(fig)
    assert len(labels) >= 4 and len(set(labels)) == len(labels), labels
    assert fig.layout.yaxis.range[1] >= c.max() * 1.2  # the highest interval is on the chart


def test_fix_percent_axes_repairs_a_page_figure_with_zero_decimals():
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[0.004, 0.0025, 0.001]))
    fig.update_yaxes(tickformat=".0%")
    theme.fix_percent_axes(fig)
    assert fig.layout.yaxis.tickformat == ".1%" and fig.layout.yaxis.dtick == pytest.approx(
        0.001)


def test_one_number_of_decimals_per_column():
    df = pd.DataFrame({"a": [0.093, 4.4555, 0.00391331], "n": [1, 20, 300],
                       "s": ["x", "y", "z"]})
    out = theme.format_table(df)
    assert out["a"].tolist() == ["0.09", "4.46", "0.0039"]  # never a non-zero 0.00
    assert out["n"].tolist() == ["1", "20", "300"] and out["s"].tolist() == ["x", "y", "z"]
    assert theme.sig_decimals([0.0123, 0.05]) == 4


def test_metric_labels_and_tooltips():
    assert theme.metric_label("ARP") == "Average rank of relevant results (lower is better)"
    assert "short name “pauc”" in theme.metric_help("pauc")
    assert theme.metric_label("theta_k / theta_1").startswith("Examination probability")
    assert theme.metric_label("unknown_metric") == "unknown_metric"


def test_dots_for_bars_do_not_start_at_zero():
    fig = go.Figure([go.Bar(x=["naive"], y=[0.93], error_y=dict(type="data", array=[0.005])),
                     go.Bar(x=["ipw"], y=[0.95], error_y=dict(type="data", array=[0.005]))])
    theme.dots_for_bars(fig)
    assert {t.type for t in fig.data} == {"scatter"}
    lo, hi = fig.layout.yaxis.range
    assert 0.9 < lo < 0.925 and 0.955 < hi < 0.98


def test_palette_is_distinct_for_the_severity_sweep_lines():
    a, b = theme.color_for("ipw (true theta)"), theme.color_for("ipw (estimated theta)")
    rgb = [np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)]) for c in (a, b)]
    assert np.abs(rgb[0] - rgb[1]).sum() > 200
    assert len(set(theme.PALETTE)) == len(theme.PALETTE)


def test_default_takeaway_in_plain_words():
    it = ope_item()
    assert it.takeaway.startswith("Estimate is highest for estimator ips (0.0512) and lowest "
                                  "for estimator snips (0.0498)")
    assert "12,000 rows" in it.takeaway
    assert report.ReportItem.from_result("Key figures").takeaway == "Key figures."


def test_settings_read_as_people_read_them():
    theta = [1.0, 1.0484665070689734, 0.61234, 0.5, 0.4, 0.3]
    assert report.setting_text(theta) == "[1, 1.05, 0.612, 0.5, … (6 values)]"
    assert report.setting_text(None) == "none" and report.setting_text(True) == "yes"
    assert report.setting_text(20000) == "20000" and report.setting_text("greedy") == "greedy"
    assert report.setting_text("x" * 500).endswith("…") and len(report.setting_text("x" * 500)) \
        <= report.SETTING_CHARS
    assert report.settings_lines({"clip": None, "seed": 0}) == ["clip = none", "seed = 0"]


def test_slide_figure_moves_subplot_titles_under_the_panels_and_the_legend_aside():
    from ulr.rankers.plots import comparison_figure
    t = pd.DataFrame({"ranker": ["naive", "ipw"] * 4,
                      "metric": ["arp", "arp", "dcg", "dcg", "auc", "auc", "mrr", "mrr"],
                      "value": [2.5, 2.3, 3.3, 3.4, 0.9, 0.93, 0.5, 0.6]})
    t["lower"], t["upper"] = t["value"] - 0.1, t["value"] + 0.1
    fig = report.slide_figure(comparison_figure(t, title="Naive vs IPW " + "ranker " * 20))
    assert not fig.layout.annotations  # no subplot title above a panel
    assert "lower is better" in fig.layout.xaxis.title.text.replace("<br>", " ")
    assert fig.layout.height is None and fig.layout.legend.x > 1  # fills its box; legend aside
    assert fig.layout.title.text.count("<br>") == 1  # a long chart title wraps to two lines
    assert fig.layout.font.size == theme.SLIDE_FONT
    rows = sorted({tuple(fig.layout[f"yaxis{k}"].domain) for k in ("", "2", "3", "4")})
    assert len(rows) == 2 and rows[1][0] - rows[0][1] > 0.2  # rows apart for the titles


def test_slide_shows_the_caveats_that_fit_and_counts_the_rest():
    long = ["The importance weights are heavy-tailed: " + "x " * 120] * 4
    it = report.ReportItem.from_result("OPE", caveats=long)
    shown, hidden = report.slide_caveats(it)
    assert shown == long[:1] and hidden == long[1:]
    short = report.ReportItem.from_result("OPE", caveats=CAVEATS)
    assert report.slide_caveats(short) == (CAVEATS, [])
    doc = body(report.build_deck([it, short]))
    assert "+3 more caveats (appendix, slide 4)" in doc and "Appendix: every caveat" in doc


# ----------------------------------------------------------------------------- exports


def test_long_html_carries_caveats_evidence_settings_takeaway_and_status():
    it = ope_item()
    doc = body(report.build_html([it], title="R", status={it.id: "The dataset changed."}))
    assert "Effective sample size is 3.4% of the log." in doc
    assert "Only 6.8 effective clicks &lt;b&gt;!&lt;/b&gt;" in doc  # word for word, escaped
    assert "12,000 rows · 410 clicks · 300 queries" in doc
    assert "<th>policy</th><td>greedy</td>" in doc and "<th>seed</th><td>11</td>" in doc
    assert it.takeaway in doc and "The dataset changed." in doc
    assert '"automargin":true' in doc.replace(" ", "")  # y title never over the ticks


def test_deck_has_one_slide_per_item_with_caveats_and_no_settings():
    a, b = ope_item(), report.ReportItem.from_result("Note only", note="Just text.")
    doc = body(report.build_deck([a, b], title="Deck"))
    head, rest = doc.split("</head>", 1)
    assert 'http-equiv="Content-Security-Policy"' in head and "connect-src 'none'" in head
    assert rest.count('<section class="slide"') == 2 and 'class="slide cover"' in rest
    for c in ("Effective sample size is 3.4% of the log.",
              "Only 6.8 effective clicks &lt;b&gt;!&lt;/b&gt;"):
        assert c in rest
    assert "greedy" in rest and "<th>seed</th>" not in rest and "Settings" not in rest
    assert "ArrowRight" in rest and "ArrowLeft" in rest
    assert not re.search(r"(src|href)=[\"']?https?:", rest)
    fig = json.loads(re.search(r'Plotly\.newPlot\(\s*"ulr-slide-1",\s*(\[.*?\]),\s*(\{.*?\}),'
                               r'\s*\{"responsive"', rest, re.S).group(2))
    assert fig["font"]["size"] >= 18  # slide-sized chart text (design pixels, zoomed)


def test_zip_index_carries_the_whole_truth():
    it = ope_item()
    zf = zipfile.ZipFile(io.BytesIO(report.build_zip([it])))
    idx = pd.read_csv(io.BytesIO(zf.read("index.csv")))
    row = idx.iloc[0]
    assert row["caveats"].splitlines() == CAVEATS
    assert json.loads(row["evidence"])["clicks"] == 410
    assert json.loads(row["settings"])["policy"] == "greedy" and row["takeaway"] == it.takeaway


@pytest.mark.skipif(report.find_browser() is None, reason="needs Chromium")
def test_pdf_has_one_page_per_slide():
    pdf = report.build_pdf([ope_item(), ope_item()], title="PDF")
    assert pdf.startswith(b"%PDF")
    assert len(re.findall(rb"/Type\s*/Page[^s]", pdf)) == 3  # cover + 2 slides


# ----------------------------------------------------------------------------- CLI


def test_cli_lists_and_exports_saved_reports(tmp_path, cli):
    """The report command in this process (``cli``; test_commands_report.py runs it as a
    real process), on a store another process wrote."""
    ulr = cli
    db = str(tmp_path / "cli.duckdb")
    # seeded by another process, as the app would (a DuckDB file has one writer process)
    seed = ("import sys; sys.path.insert(0, 'tests/pages'); from test_present import ope_item; "
            "from ulr.report import saved as reports; "
            "r = reports.create('Board deck', actor='browser:x', "
            "db=sys.argv[1]); reports.add_item(r.id, ope_item(), actor='browser:x', "
            "db=sys.argv[1]); reports.set_private(r.id, True, actor='browser:x', "
            "db=sys.argv[1]); print(r.id)")
    p = subprocess.run([sys.executable, "-c", seed, db], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = reports.ReportInfo(p.stdout.strip(), "Board deck", 1, "", "")
    rc, out, err = ulr("report", "--db", db, "--list")
    assert rc == 0, err
    # the CLI is the operator: it sees a browser's private report too
    assert r.id in out and "Board deck" in out and "1 items" in out
    deck = tmp_path / "deck.html"
    rc, out, err = ulr("report", "--db", db, "--report", "Board deck", "--out", deck,
                       "--format", "slides", "--zip", tmp_path / "t.zip")
    assert rc == 0, err
    assert CAVEATS[0] in deck.read_text() and (tmp_path / "t.zip").exists()
    rc, out, err = ulr("report", "--db", db, "--report", "Board deck", "--out",
                       tmp_path / "long.html")
    assert rc == 0 and "greedy" in (tmp_path / "long.html").read_text()
    rc, out, err = ulr("report", "--db", db, "--report", "nope", "--out", deck)
    assert rc == 2 and err.strip().startswith("error:") and "no report 'nope'" in err
    rc, out, err = ulr("report", "--db", db, "--report", "Board deck", "--out", deck,
                       "--format", "pdf")
    assert rc == 2 and ".pdf" in err
    rc, out, err = ulr("report", "--db", db, "--report", "Board deck", "--out", deck,
                       "--format", "pptx")
    assert rc == 2 and ".pptx" in err
    if report.static_export_problem() is None:
        from pptx import Presentation
        rc, out, err = ulr("report", "--db", db, "--report", "Board deck", "--out",
                           tmp_path / "deck.pptx", "--format", "pptx")
        assert rc == 0, err
        slides = list(Presentation(str(tmp_path / "deck.pptx")).slides)
        assert len(slides) >= 2 and "Board deck" in slides[0].shapes[0].text_frame.text  # cover
        assert CAVEATS[0] in slides[1].notes_slide.notes_text_frame.text
