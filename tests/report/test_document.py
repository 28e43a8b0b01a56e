"""The offline HTML report (ulr.report.document) and what every export shares: escaping,
assets, one parse per figure, plain words."""

import io
import re
import zipfile

import pandas as pd
import plotly.graph_objects as go
import pytest

from ulr import __version__, report, theme
from ulr.errors import UlrError
from tests.report.items import XSS, make_items, plotlyjs_free


def test_html_two_charts_plotlyjs_once_no_external_urls():
    a, b = make_items()
    doc = report.build_html([a.to_dict(), b], title="Quarterly review")
    rest = plotlyjs_free(doc)
    # Two interactive charts: one div and one Plotly.newPlot call each.
    assert rest.count("Plotly.newPlot(") == 2
    for i in (1, 2):
        assert rest.count(f'id="ulr-fig-{i}"') == 1
        assert re.search(rf'Plotly\.newPlot\(\s*"ulr-fig-{i}"', rest)
    # plotly.js inline exactly once, no script or stylesheet fetched from anywhere.
    assert "<script src" not in doc and "<link" not in doc
    assert 'src="http' not in doc and "src='http" not in doc
    assert 'href="http' not in rest and "cdn." not in rest
    assert not re.search(r"https?://", rest)
    assert "@import" not in rest and "url(" not in rest
    # The policy forbids any network request, should anything try.
    assert "default-src 'none'" in doc and "connect-src 'none'" in doc
    # Script tags: the bundle's and one per figure, nothing else.
    assert rest.count("<script") == 1 + 2
    # Chart data made it into the figures.
    assert '"name":"em"' in rest and '"naive","ipw"' in rest


def test_html_escapes_every_user_text():
    a, b = make_items()
    doc = report.build_html([a, b], title=XSS)
    rest = plotlyjs_free(doc)
    assert XSS not in rest
    assert "<img src=x" not in rest and "<b>ds</b>" not in rest
    assert "<i>k</i>" not in rest and "<u>v</u>" not in rest
    esc = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert f"<title>{esc}</title>" in rest
    assert f"<h2>1. {esc}</h2>" in rest          # item heading
    assert f'<a href="#item-1">{esc}</a>' in rest  # table of contents
    assert f"<td>{esc}</td>" in rest               # table cell
    assert "&lt;img src=x onerror=alert(2)&gt;" in rest          # note
    assert "&lt;b&gt;ds&lt;/b&gt;" in rest                         # dataset
    assert "&lt;i&gt;k&lt;/i&gt;" in rest and "&lt;u&gt;v&lt;/u&gt;" in rest  # settings
    # Inside the figure JSON the same text cannot close the script element.
    assert "</script><script>" not in rest.replace("</script>\n", "")


def test_html_metadata_tables_and_truncation():
    a, b = make_items()
    doc = report.build_html([a, b], title="T", generated="2031-01-02T03:04:05+00:00",
                            max_table_rows=4)
    rest = plotlyjs_free(doc)
    from ulr.quantity import timestamp
    for it in (a, b):  # date-times in words, never ISO 8601 (issue 50)
        assert f"created {timestamp(it.created)}" in rest and it.created not in rest
    assert rest.count(f"ulr {__version__}") >= 3  # generator line + each item
    assert "Dataset <b>sample</b>" in rest
    assert "Generated 2 January 2031, 03:04 UTC" in rest
    assert "<td>=cmd</td>" in rest  # HTML is escaped, not neutralized
    # one number of decimals per column (3 significant figures of its largest value)
    assert '<td class="num">-1</td>' in rest and '<td class="num">-1.50</td>' in rest
    assert '<td class="num">0.0000000010</td>' in rest and '<th class="num">n</th>' in rest
    assert "First 4 of 6 rows" in rest and "<td>ok</td>" not in rest
    assert "&quot;eta&quot;" not in rest and "[0.5, 1]" in rest  # settings, readable
    assert rest.index("Second chart</h2>") > rest.index("&lt;/script&gt;</h2>")


def test_html_empty_note_only_and_bad_title():
    doc = report.build_html([], title="Nothing yet")
    assert "This report has no items." in doc and "Plotly.newPlot(" not in plotlyjs_free(doc)
    note = report.ReportItem(title="Skipped section", note="module missing")
    rest = plotlyjs_free(report.build_html([note]))
    assert "module missing" in rest and "(note)" in rest and "Plotly.newPlot(" not in rest
    with pytest.raises(UlrError, match="non-empty title"):
        report.build_html([], title=" ")


def test_write_html_is_atomic_and_checks_paths(tmp_path):
    a, b = make_items()
    out = report.write_html(tmp_path / "r.html", [a, b], title="x")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temp file left
    with pytest.raises(UlrError, match="does not exist"):
        report.write_html(tmp_path / "nope" / "r.html", [a])
    with pytest.raises(UlrError, match="is a directory"):
        report.write_html(tmp_path, [a])


@pytest.mark.e2e
def test_html_opens_offline_in_chromium_with_interactive_charts(tmp_path, browser):
    """Open the file in headless Chromium with the network cut: both charts draw."""
    a, b = make_items()
    path = tmp_path / "report.html"
    path.write_text(report.build_html([a, b], title=XSS), encoding="utf-8")
    requests, errors, dialogs, console = [], [], [], []
    ctx = browser.new_context(offline=True)
    try:
        page = ctx.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri())
        page.wait_for_selector("#ulr-fig-2 .main-svg", timeout=20_000)
        drawn = page.evaluate(
            "[1, 2].map(i => document.getElementById('ulr-fig-' + i)._fullData.length)")
        title = page.evaluate("document.getElementById('ulr-fig-1')._fullLayout"
                              ".xaxis.title.text")
    finally:
        ctx.close()
    assert drawn == [1, 1] and title == "position"
    assert requests == [path.as_uri()]  # the file itself, nothing else
    assert errors == [] and console == [] and dialogs == []  # no script injected


def test_css_and_script_are_package_files_found_from_the_repo():
    from importlib import resources

    assets = resources.files("ulr.report") / "assets"
    doc, deck = report.build_html(list(make_items())), report.build_deck(list(make_items()))
    for name, where in (("report.css", doc), ("deck.css", deck)):
        text = (assets / name).read_text(encoding="utf-8")
        assert "__FONT__" in text and len(text) > 500
        assert f"<style>{text.replace('__FONT__', theme.FONT)}</style>" in where
    js = (assets / "deck.js").read_text(encoding="utf-8")
    assert f"<script>{js}</script>" in deck and "window.ulrShow" in js
    assert "__FONT__" not in doc + deck


def test_exports_parse_each_figure_once(monkeypatch):
    calls = []
    real = report.item._loads
    dicts = [it.to_dict() for it in make_items()]
    monkeypatch.setattr(report.item, "_loads",
                        lambda text, what: calls.append(what) or real(text, what))
    items = [report.ReportItem.from_dict(d) for d in dicts]
    assert calls.count("figure") == 2  # validating the two items parsed their figures
    report.build_html(items)
    report.build_deck(items)
    report.export_figure(items[0], slide=True)
    assert calls.count("figure") == 2  # the exports used the parsed dicts
    items[0].figure = go.Figure(go.Bar(y=[1])).to_json()  # a new figure text is parsed anew
    assert items[0].figure_dict()["data"][0]["type"] == "bar"


def test_a_simulated_item_shows_simulated_where_a_dataset_would_be():
    sim = report.ReportItem.from_result("Severity sweep", fig=go.Figure(),
                                        provenance="simulated")
    assert (sim.dataset, sim.content_hash, sim.origin) == ("", "", "simulated")
    assert "Dataset <b>simulated</b>" in report.build_html([sim])
    assert " · dataset simulated</div>" in report.build_deck([sim])
    assert report.ReportItem.from_dict(sim.to_dict()).provenance == "simulated"


def test_every_export_reads_words_and_numbers_not_internals():
    """Evidence with a count that was not recorded, settings keyed by field names, a table
    with ulr's metric names, a missing cell and a large and a tiny number: the HTML report,
    the deck and the ZIP's headers show words and plain numbers (no None, nan, identifier
    or exponent), and the ZIP keeps every digit."""
    import re
    tab = pd.DataFrame({"metric": ["local_auc", "ndcg@10"], "p_value": [0.5, None],
                        "largest_weight": [1150.3, 0.0000123]})
    it = report.ReportItem.from_result(
        "Naive vs IPW", table=tab, evidence={"rows": 10, "held_out_sessions": None,
                                             "test_queries": 40},
        settings={"assume_randomized": True, "clip": None, "theta": [1.0, 0.5]},
        takeaway="t")
    words = re.compile(r"\bNone\b|\bnan\b|\b[a-z]+_[a-z_]+\b|\de[+-]\d")
    for i, doc in enumerate((report.build_html([it]), report.build_deck([it]))):
        body = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", doc)
        body = re.sub(r"<[^>]+>", " ", body)
        assert words.findall(body) == []
        assert "1,150" in body and "0.000012" in body and "40 test queries" in body
        assert "local auc" in body
        assert "assume randomized" in body or i == 1  # (the deck leaves settings out)
    zf = zipfile.ZipFile(io.BytesIO(report.build_zip([it])))
    name = next(n for n in zf.namelist() if n.startswith("01-"))
    lines = zf.read(name).decode().splitlines()
    assert lines[0] == "metric,p value,largest weight" and "1150.3" in lines[1]
