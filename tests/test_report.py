"""HTML report, CSV ZIP and static images (ulr.report)."""

import csv
import io
import importlib.util
import json
import re
import struct
import zipfile

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.offline import get_plotlyjs

from ulr import __version__, report, theme
from ulr.errors import UlrError

XSS = "<script>alert(1)</script>"


def make_items():
    fig1 = theme.apply(go.Figure(go.Scatter(x=[1, 2, 3], y=[0.5, 0.25, 0.125], name="em")),
                       title="theta", x="position", y="theta")
    fig2 = go.Figure(go.Bar(x=["naive", "ipw"], y=[3.1, 2.7], name="arp"))
    table = pd.DataFrame({"text": ["=cmd", "+x", "-x", "@x", XSS, "ok"],
                          "n": [-1, 2, -3, 4, 5, 6],
                          "f": [-1.5, 0.25, np.nan, 1e-9, 2.0, -0.0]})
    a = report.ReportItem.from_result(XSS, fig=fig1, table=table, dataset="<b>ds</b>",
                                      settings={"eta": [0.5, 1.0], "<i>k</i>": "<u>v</u>"},
                                      note="line one\n<img src=x onerror=alert(2)>")
    b = report.ReportItem.from_result("Second chart", fig=fig2, dataset="sample")
    return a, b


def plotlyjs_free(doc: str) -> str:
    """The document without the one inline plotly.js bundle (which names URLs in its code)."""
    js = get_plotlyjs()
    assert doc.count(js) == 1
    return doc.replace(js, "")


# ----------------------------------------------------------------------------- items


def test_item_round_trip_and_ui_dict_format():
    a, _ = make_items()
    d = a.to_dict()
    assert report.ReportItem.from_dict(d) == a
    # The dict pages/_ui.add_to_report stores has no id; unknown keys are ignored.
    ui = {k: v for k, v in d.items() if k != "id"} | {"extra": 1}
    b = report.ReportItem.from_dict(ui)
    assert b.title == a.title and b.figure == a.figure and b.id and b.id != a.id
    df = a.frame()
    assert df["text"].tolist() == ["=cmd", "+x", "-x", "@x", XSS, "ok"]
    assert df["n"].dtype.kind == "i" and df["n"].tolist() == [-1, 2, -3, 4, 5, 6]
    assert df["f"].dtype.kind == "f"
    assert a.fig().data[0].name == "em"
    # A meaningful index becomes a column; strings that look like numbers stay text.
    t = pd.DataFrame({"v": [1.0, 2.0]}, index=pd.Index(["naive", "ipw"], name="ranker"))
    c = report.ReportItem.from_result("t", table=t)
    assert c.frame()["index"].tolist() == ["naive", "ipw"]
    s = report.ReportItem.from_result("s", table=pd.DataFrame({"id": ["007", "-5"]}))
    assert s.frame()["id"].tolist() == ["007", "-5"]


@pytest.mark.parametrize("change, needle", [
    ({"title": ""}, "non-empty title"),
    ({"title": "   "}, "non-empty title"),
    ({"title": "x" * 301}, "at most 300"),
    ({"title": 5}, "non-empty title"),
    ({"note": 3}, "note must be text"),
    ({"figure": "{not json"}, "figure is not valid JSON"),
    ({"figure": "[1, 2]"}, "plotly figure JSON"),
    ({"table": '{"data": []}'}, "split"),
    ({"settings": [1]}, "settings must be a dict"),
    ({"settings": {"f": object()}}, "JSON-able"),
    ({"dataset": 3}, "'dataset' must be text"),
])
def test_item_validation(change, needle):
    a, _ = make_items()
    with pytest.raises(ValueError, match=re.escape(needle)):
        report.ReportItem(**(a.to_dict() | change))


def test_broken_item_in_a_list_is_a_user_error():
    a, _ = make_items()
    with pytest.raises(UlrError, match="report item 2 is broken"):
        report.build_html([a, {"title": "x", "figure": "nope"}])
    with pytest.raises(UlrError, match="report item 1 is broken"):
        report.build_zip(["not a dict"])


# ----------------------------------------------------------------------------- HTML


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
    doc = report.build_html([a, b], title="T", generated="2031-01-02T03:04:05",
                            max_table_rows=4)
    rest = plotlyjs_free(doc)
    for it in (a, b):
        assert f"created {it.created}" in rest
    assert rest.count(f"ulr {__version__}") >= 3  # generator line + each item
    assert "Dataset <b>sample</b>" in rest
    assert "Generated 2031-01-02T03:04:05" in rest
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


# ----------------------------------------------------------------------------- ZIP


def neutralized_reference(v):
    """Slow obvious reference: what a text cell must look like in a safe CSV."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v


def test_zip_csvs_neutralize_formulas_but_keep_negative_numbers():
    a, b = make_items()
    hostile = report.ReportItem.from_result("=HYPERLINK(\"x\")", dataset="@evil",
                                            note="-note", table=pd.DataFrame({"v": [1]}))
    data = report.build_zip([a, b, hostile])
    zf = zipfile.ZipFile(io.BytesIO(data))
    names = zf.namelist()
    assert names == ["01-script-alert-1-script.csv", "03-hyperlink-x.csv", "index.csv",
                     "README.txt"]
    rows = list(csv.reader(io.StringIO(zf.read(names[0]).decode("utf-8"))))
    assert rows[0] == ["text", "n", "f"]
    df = a.frame()
    want_text = [neutralized_reference(v) for v in df["text"]]
    assert [r[0] for r in rows[1:]] == want_text == ["'=cmd", "'+x", "'-x", "'@x", XSS, "ok"]
    # Numbers are numbers: negative values keep their sign and no apostrophe.
    assert [r[1] for r in rows[1:]] == ["-1", "2", "-3", "4", "5", "6"]
    back = pd.read_csv(io.BytesIO(zf.read(names[0])))
    assert back["n"].tolist() == [-1, 2, -3, 4, 5, 6] and back["n"].dtype.kind == "i"
    assert back["f"].iloc[0] == -1.5 and np.isnan(back["f"].iloc[2])
    # The index lists every item, itself neutralized.
    idx = list(csv.DictReader(io.StringIO(zf.read("index.csv").decode("utf-8"))))
    assert [r["item"] for r in idx] == ["1", "2", "3"]
    assert [r["file"] for r in idx] == [names[0], "", names[1]]
    assert idx[2]["title"] == "'=HYPERLINK(\"x\")" and idx[2]["dataset"] == "'@evil"
    assert idx[2]["note"] == "'-note" and idx[0]["title"] == XSS
    assert json.loads(idx[0]["settings"])["eta"] == [0.5, 1.0]
    for name in names:
        if name.endswith(".csv"):
            for row in csv.reader(io.StringIO(zf.read(name).decode("utf-8"))):
                for cell in row:
                    assert not (cell[:1] in "=+@" and cell), (name, cell)
                    if cell.startswith("-"):
                        float(cell)  # only numbers may start with a minus


def test_zip_of_nothing_has_only_the_index():
    zf = zipfile.ZipFile(io.BytesIO(report.build_zip([])))
    assert zf.namelist() == ["index.csv", "README.txt"]
    assert zf.read("index.csv").decode().splitlines() == [
        "item,title,file,kind,dataset,created,version,note,takeaway,verdict,caveats,evidence,"
        "settings,content hash"]  # headers in words, as on every other surface


# ----------------------------------------------------------------------------- images


def test_find_browser_honours_browser_path(tmp_path, monkeypatch):
    exe = tmp_path / "my-chrome"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("BROWSER_PATH", str(exe))
    assert report.find_browser() == str(exe)
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "missing"))
    assert report.find_browser() != str(tmp_path / "missing")


def test_static_export_problems_are_sentences(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: None if n == "kaleido" else real_find_spec(n, *a))
    assert "kaleido" in report.static_export_problem()
    with pytest.raises(UlrError, match="kaleido"):
        report.to_image(go.Figure())
    monkeypatch.undo()
    monkeypatch.setattr(report.browser, "find_browser", lambda: None)
    if importlib.util.find_spec("kaleido") is not None:
        assert "Chromium" in report.static_export_problem()
        with pytest.raises(UlrError, match="Chromium"):
            report.to_image(go.Figure())


def test_image_option_errors():
    with pytest.raises(UlrError, match="format"):
        report.to_image(go.Figure(), format="gif")
    with pytest.raises(UlrError, match="scale"):
        report.to_image(go.Figure(), scale=0)
    with pytest.raises(UlrError, match="width"):
        report.to_image(go.Figure(), width=5)
    with pytest.raises(UlrError, match="no chart"):
        report.to_images([report.ReportItem(title="only a note")],
                         browser=report.find_browser() or "/bin/sh")


@pytest.mark.skipif(report.static_export_problem() is not None,
                    reason="kaleido or system Chromium missing")
def test_png_and_pdf_through_system_chromium():
    from choreographer.cli._cli_utils import get_chrome_download_path

    downloaded = get_chrome_download_path(mkdir=False)
    existed = downloaded.exists()
    a, b = make_items()
    pngs = report.to_images([a, b.fig()], format="png", width=640, height=400, scale=1.5)
    for png in pngs:
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        w, h = struct.unpack(">II", png[16:24])  # IHDR: layout size times scale
        assert (w, h) == (960, 600)
    pdf = report.to_image(b.figure, format="pdf")
    assert pdf[:5] == b"%PDF-"
    assert downloaded.exists() == existed  # kaleido used the system browser, fetched none
    with pytest.raises(UlrError, match="no executable browser"):
        report.to_image(a, browser="/nonexistent/chromium")


# ----------------------------------------------------------------------------- package


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
    assert (sim.dataset, sim.content_hash, sim.source) == ("", "", "simulated")
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
