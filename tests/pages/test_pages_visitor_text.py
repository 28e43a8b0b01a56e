"""Text a visitor controls is shown as text on every page (issue 55).

Every page is walked through app.py's navigation with a hostile link (``?dataset=``,
``?source=``, ``?report=`` holding Markdown, HTML and autolinks) and with a dataset whose
name, file name, column name and cell values are such text. Every string that Streamlit
renders as Markdown (message bodies, captions, headings, toasts, widget labels and help,
radio options) must then carry that text escaped: no link, image, HTML tag, emphasis,
autolink or Streamlit directive survives (``ulr.text.literal``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from streamlit.testing.v1 import AppTest

from pages import _ui as ui

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")

HOSTILE = ("Session expired. **[Sign in](http://evil.example/login)** "
           "![t](http://evil.example/t.png) <img src=x onerror=alert(1)> www.evil.example "
           ":red[red] $x^2$ _it_")
MISSING = "gone " + HOSTILE  # a link naming something that is not stored

# What the hostile text would leave in Markdown if it were not escaped: each one is a live
# construct (a link, an image, an HTML tag, emphasis, an autolink, a directive, LaTeX).
LIVE = [re.compile(p) for p in (
    r"\]\(", r"(?<!\\)<img", r"(?<!\\)\*\*\[", r"(?<!\\)\*\*Sign",
    r"https?://", r"(?<![\\])www\.", r"(?<!\\):red\[red", r"(?<!\\)\$x", r"(?<!\\)_it")]

# Proto fields that Streamlit renders as Markdown (selectbox and multiselect options, text
# inputs' values and table cells are plain text, and are left out).
_MARKDOWN_FIELDS = ("body", "label", "help", "text")


def _markdown_strings(at) -> list[str]:
    out = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None:
            d = MessageToDict(proto)
            kind = type(proto).__name__
            for f in _MARKDOWN_FIELDS:
                if isinstance(d.get(f), str):
                    out.append(d[f])
            if kind in ("Radio", "ButtonGroup"):
                out.extend(o if isinstance(o, str) else str(o) for o in d.get("options", []))
        for child in getattr(node, "children", {}).values():
            walk(child)
    walk(at._tree)
    return out


def assert_no_live_markup(at, where: str) -> None:
    assert not at.exception, (where, at.exception)
    for s in _markdown_strings(at):
        for pat in LIVE:
            assert not pat.search(s), (where, pat.pattern, s)


@pytest.fixture(scope="module")
def hostile_dataset(tmp_path_factory):
    """A small stored dataset whose name, file name, an unmapped column and its query ids are
    hostile text (loaded as the operator: anyone may view it)."""
    from ulr.data import catalog, ingest
    from ulr.data.log import OPERATOR
    folder = tmp_path_factory.mktemp("hostile")
    path = folder / "[f](http:evil.example).csv"
    import numpy as np
    rng = np.random.default_rng(5)  # 100 lists of 4 results; clicks fall with the position
    clicks = rng.random(400) < 0.5 / np.tile(np.arange(1, 5), 100)
    rows = "".join(f"**q{i // 4 % 7}**[x](http://evil.example),d{(i * 7) % 23},{1 + i % 4},"
                   f"{int(clicks[i])},s{i // 4},{i}\n" for i in range(400))
    path.write_text("query_id,doc_id,position,click,session_id,![c](http://evil.example/c)\n"
                    + rows)
    cur = catalog.cursor()
    name = "Data " + HOSTILE
    with pytest.raises(Exception):  # noqa: PT011 - only to be sure the store has no such name
        catalog.get_dataset(cur, name)
    ingest.load_log(path, name, cur=cur, actor=OPERATOR)
    yield name
    catalog.delete_dataset(cur, name)


PAGE_FILES = [p for p, *_ in ui.PAGES]


def _run(page: str, params: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    if page != "pages/home.py":
        at.switch_page(page)  # the first run is the page's own: it shows the link's flash
    at.run()
    return at


@pytest.mark.parametrize("page", PAGE_FILES)
def test_a_hostile_dataset_and_link_show_as_text_on_every_page(page, hostile_dataset):
    """The hostile dataset is the current one (from the link) and the link names a missing
    source and report: every message that echoes them shows them escaped."""
    at = _run(page, {"dataset": hostile_dataset, "source": MISSING, "report": MISSING})
    assert_no_live_markup(at, page)
    shown = " ".join(_markdown_strings(at))
    if page in ("pages/home.py", "pages/data.py"):  # the name is there, as text
        assert ui.literal(ui.clip(hostile_dataset)) in shown
    if page == "pages/home.py":  # the missing source's flash, said once, in the sidebar
        assert any("does not exist here" in w.value and "gone" in w.value for w in at.warning)


@pytest.mark.parametrize("page", ["pages/home.py", "pages/off_policy.py", "pages/present.py"])
def test_a_link_to_a_missing_dataset_echoes_it_as_text(page):
    at = _run(page, {"dataset": MISSING, "report": MISSING})
    assert_no_live_markup(at, page)
    assert any("does not exist here" in w.value and ui.literal(ui.clip(MISSING)) in w.value
               for w in at.warning), [w.value for w in at.warning]


def test_the_identity_cookie_is_same_site_and_secure_over_https():
    from pages._ui.reporting import cookie_text
    plain = cookie_text("ab" * 16, False)
    assert plain == f"ulr_browser={'ab' * 16}; Path=/; Max-Age=31536000; SameSite=Lax"
    assert cookie_text("ab" * 16, True) == plain + "; Secure"


def test_the_source_forms_refusals_echo_the_name_and_path_as_text(monkeypatch, tmp_path):
    """A hostile source name or path is refused in one sentence that shows it as typed."""
    monkeypatch.setenv("ULR_DATA_ROOTS", str(tmp_path))
    at = _run("pages/data.py", {})
    for name, where in ((HOSTILE, str(tmp_path / "*.parquet")),
                        ("ok_name", "/etc/" + HOSTILE)):
        at.text_input(key="src_name").set_value(name)
        at.text_input(key="src_where").set_value(where)
        at.button(key="FormSubmitter:source_form-Register and aggregate").click().run()
        errs = [e.value for e in at.error]
        assert len(errs) == 1 and errs[0].startswith("Not registered: "), errs
        assert_no_live_markup(at, "source form")
