"""Issue 36, "Done when": what a stakeholder reads is readable on every surface.

A real-shaped log (80 items, 3 slots, no session column, 0.4% CTR, per-slot propensities,
two loggers: ``ulr.simulate.obd_like_log`` twice, each with its ``logger``) is loaded once
through the CLI (the browser adds nothing to a load). In the browser: every page runs on it
(small settings where a page simulates), each result goes to one report, and the report is
exported as HTML, slides, PDF, PowerPoint and ZIP. Every text (the pages, the report page,
the exports, the PowerPoint's notes, the ZIP's headers) is scanned for ``None``, ``nan``,
snake_case identifiers, exponent notation and ``0.000000``; the export buttons name their
format at 1280 and 1440 px.
"""

import html
import io
import re
import subprocess
import sys
import zipfile
from urllib.parse import urlencode

import pandas as pd
from playwright.sync_api import expect

from tests.conftest import visitor_tab
from tests.e2e.helpers import download as _download
from tests.e2e.helpers import wait_idle

NAME = "two loggers"
# columns of the user's own file and the canonical field names the mapping shows are data,
# not internals: they may appear where the app shows the log's columns
_DATA_WORDS = re.compile(r"^(user_feature_\d|user_item_affinity_\d+|feature_user_item_affinity_"
                         r"\d+|propensity_score|item_id|query_id|doc_id|session_id|"
                         r"feature_\w+|per_slot_propensity)$")
BAD = {
    "None": re.compile(r"\bNone\b"),
    "nan": re.compile(r"\bnan\b", re.IGNORECASE),
    "identifier": re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"),
    "exponent": re.compile(r"\d[eE][+-]\d"),
    "0.000000": re.compile(r"0\.000000"),
}


def _problems(where: str, text: str) -> list[str]:
    out = []
    for what, rx in BAD.items():
        for m in rx.finditer(text):
            if what == "identifier" and _DATA_WORDS.match(m.group(0)):
                continue
            out.append(f"{where}: {what} {text[max(0, m.start() - 50):m.end() + 30]!r}")
    return out


def _html_text(doc: str) -> str:
    """The words of an exported HTML file (scripts and styles left out)."""
    doc = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", doc)
    return html.unescape(re.sub(r"<[^>]+>", " ", doc))


def _write_log(path):
    from ulr.simulate import obd_like_log
    a = obd_like_log().assign(logger="uniform")
    b = obd_like_log(seed=7, theta=(1.0, 1.1, 1.3)).assign(logger="thompson")
    pd.concat([a, b], ignore_index=True).to_csv(path, index=False, float_format="%.6g")


def _load(db, path):
    query = "+".join(f"user_feature_{j}" for j in range(4))
    p = subprocess.run(
        [sys.executable, "-m", "ulr", "load", str(path), "--db", db, "--name", NAME,
         "--map", f"query_id={query}", "--map", "logger=logger", "--map", "doc_id=item_id",
         "--map", "propensity=propensity_score", "--const", "randomized=1",
         "--fact", "per_slot_propensity", "--features", "user-item_affinity_*"],
        capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def _visit(pg, app_url, path, **params):
    pg.goto(f"{app_url}/{path}?" + urlencode({"dataset": NAME, **params}))
    wait_idle(pg, timeout=180_000)


def _add(pg) -> None:
    """Click the page's first "Add to report" and wait for it."""
    add = pg.get_by_role("button", name="Add to report")
    expect(add.first).to_be_visible(timeout=180_000)
    add.first.click()
    expect(pg.get_by_text("to the report", exact=False).first).to_be_visible(timeout=60_000)
    wait_idle(pg)


# icons are drawn from a font by their names ("keyboard_arrow_right"): not text anyone reads.
# Hidden and read in one script: no rerun can draw the buttons anew (icons shown) between
# the two, as one did between two calls (the export buttons' icon names were read once).
_MAIN_TEXT_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  for (const e of main.querySelectorAll('span, i'))
    if ((getComputedStyle(e).fontFamily || '').includes('Material')) e.style.display = 'none';
  return main.innerText;
}"""


def _main_text(pg) -> str:
    text = pg.evaluate(_MAIN_TEXT_JS)
    text = re.sub(r"(?:/[\w.-]+){2,}", " ", text)  # folder paths (the server's own) are data
    return re.sub(r"[\w.-]+\.(?:csv|parquet)\b", " ", text)  # and so are the user's file names


# whether the button labelled ``label`` shows its label whole; its icon (drawn from a font
# by its name) is no part of the label, whether or not _MAIN_TEXT_JS has hidden it yet (a
# rerun after that draws the buttons anew)
_TRUNCATED_JS = """(label) => {
  const icon = e => (getComputedStyle(e).fontFamily || '').includes('Material');
  const words = b => [...b.querySelectorAll('*')]
    .filter(e => e.children.length === 0 && !icon(e)).map(e => e.textContent).join('').trim();
  const b = [...document.querySelectorAll('button')].find(x => words(x) === label);
  if (!b) return 'missing';
  const cut = [b, ...b.querySelectorAll('*')].filter(e => !icon(e))
    .some(e => e.scrollWidth > e.clientWidth + 1);
  return cut ? 'cut' : 'whole';
}"""

EXPORTS = ("Download HTML report", "Download slides (HTML)", "Download slides (PDF)",
           "Download slides (PowerPoint)", "Download tables (ZIP)")

PAGES = [  # path, URL settings that keep a simulating page quick, its run button (or
    # None), whether it has a result to add on this log
    ("data", {}, None, True),
    ("position_bias", {"propensity": "randomization"}, None, True),
    ("user_models", {}, None, False),  # no session column: it says what to map
    ("compare_rankers", {}, None, True),
    ("severity_sweep", {"queries": 40, "sessions": 1000, "runs": 2, "etas": "0,1"},
     "Run sweep", True),
    ("bandit_lab", {"steps": 500, "runs": 2, "items": 8}, "Start", True),
    ("off_policy", {}, None, True),
    ("debiased_recs", {"users": 40, "items": 30, "epochs": 3, "runs": 2},
     "Train and compare", True),
]


def test_every_surface_reads_as_words_and_numbers(warm_context, app_url, tmp_path):
    path = tmp_path / "two_loggers.csv"
    _write_log(path)
    _load(app_url.db, path)
    problems = []
    with visitor_tab(warm_context, width=1280, height=900, timeout_ms=60_000) as pg:
        pg.goto(app_url + "/report")
        wait_idle(pg)
        pg.get_by_role("button", name="New report").click()
        wait_idle(pg)
        for path_, params, run, result in PAGES:
            _visit(pg, app_url, path_, **params)
            if run:
                pg.get_by_role("button", name=run).click()
                wait_idle(pg, timeout=180_000)
            if result:
                _add(pg)
            problems += _problems(path_, _main_text(pg))

        pg.goto(app_url + "/report")
        wait_idle(pg, timeout=120_000)
        problems += _problems("report page", _main_text(pg))
        for width in (1280, 1440):
            pg.set_viewport_size({"width": width, "height": 900})
            wait_idle(pg)
            for label in EXPORTS:
                # the export buttons are drawn once their files are built: on a loaded
                # machine that may end after the resize's rerun has settled
                expect(pg.get_by_role("button", name=label)).to_be_visible(timeout=180_000)
                state = pg.evaluate(_TRUNCATED_JS, label)
                if state != "whole":
                    problems.append(f"{width} px: the button {label!r} is {state}")

        expect(pg.get_by_text(f"{len(PAGES) - 1} items.", exact=False)).to_be_visible()
        doc = _download(pg, "Download HTML report", tmp_path).read_text(encoding="utf-8")
        assert doc.count('class="takeaway"') >= len(PAGES) - 1  # every result is in it
        problems += _problems("HTML report", _html_text(doc))
        deck = _download(pg, "Download slides (HTML)", tmp_path).read_text(encoding="utf-8")
        problems += _problems("HTML slides", _html_text(deck))
        pdf = _download(pg, "Download slides (PDF)", tmp_path)
        text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                              text=True, check=True).stdout
        problems += _problems("PDF", text)
        from pptx import Presentation
        prs = Presentation(str(_download(pg, "Download slides (PowerPoint)", tmp_path)))
        for i, slide in enumerate(prs.slides, start=1):
            for sh in slide.shapes:
                if sh.has_text_frame:
                    problems += _problems(f"pptx slide {i}", sh.text_frame.text)
                if sh.has_table:
                    cells = " | ".join(c.text for r in sh.table.rows for c in r.cells)
                    problems += _problems(f"pptx slide {i} table", cells)
            problems += _problems(f"pptx notes {i}", slide.notes_slide.notes_text_frame.text)
        zf = zipfile.ZipFile(io.BytesIO(_download(pg, "Download tables (ZIP)",
                                                  tmp_path).read_bytes()))
        for name in zf.namelist():
            if name.endswith(".csv"):
                header = zf.read(name).decode("utf-8").splitlines()[0]
                problems += _problems(f"zip {name} header", header)
    assert problems == [], "\n".join(problems)
