"""Report page: the collected results in order, editable; HTML, ZIP and image exports."""

import uuid

import streamlit as st

from pages import _ui as ui
from ulr import report

ITEMS = "report_items"
_MD_SPECIAL = set("\\`*_{}[]()<>#+-.!|~$:")


def _md(text) -> str:
    """User text shown literally inside markdown (no links, no formatting)."""
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in str(text))


st.title("Report")
st.caption("Collect results with “Add to report” under any chart, put them in order, write "
           "notes, then export one HTML file that opens anywhere, without a network.")

items: list = st.session_state.setdefault(ITEMS, [])
for _it in items:  # a stable id per item, so its widgets follow it when it moves
    if isinstance(_it, dict) and not _it.get("id"):
        _it["id"] = uuid.uuid4().hex[:12]


# ---------------------------------------------------------------- callbacks (run before the page)


def _index(item_id: str) -> int | None:
    for i, it in enumerate(st.session_state.get(ITEMS, [])):
        if isinstance(it, dict) and it.get("id") == item_id:
            return i
    return None


def _edit(item_id: str, field: str) -> None:
    i = _index(item_id)
    if i is None:
        return
    item = st.session_state[ITEMS][i]
    key = f"rep_{field}_{item_id}"
    value = st.session_state.get(key, "")
    if field == "title":
        value = value.strip()
        if not value or len(value) > report.MAX_TITLE:
            st.session_state["_rep_flash"] = (
                f"A title needs 1 to {report.MAX_TITLE} characters; kept “{_md(item['title'])}”.")
            st.session_state[key] = item["title"]
            return
    item[field] = value


def _move(item_id: str, step: int) -> None:
    i = _index(item_id)
    lst = st.session_state[ITEMS]
    if i is not None and 0 <= i + step < len(lst):
        lst[i], lst[i + step] = lst[i + step], lst[i]


def _remove(item_id: str) -> None:
    i = _index(item_id)
    if i is not None:
        del st.session_state[ITEMS][i]
    for field in ("title", "note"):
        st.session_state.pop(f"rep_{field}_{item_id}", None)


def _clear() -> None:
    for it in list(st.session_state.get(ITEMS, [])):
        if isinstance(it, dict):
            _remove(it.get("id", ""))
    st.session_state[ITEMS] = []
    st.session_state["rep_clear_sure"] = False


# ---------------------------------------------------------------- empty state
if not items:
    st.info("The report is empty. Every result on the analysis pages (Data, Position bias, "
            "Compare rankers, …) has an **Add to report** button under its chart; press it to "
            "collect the chart with its table, the dataset and the settings here. Items stay "
            "for this browser session.", icon=":material/post_add:")
    st.stop()

flash = st.session_state.pop("_rep_flash", None)
if flash:
    st.warning(flash)

# Validate every item once; a broken one is shown with a remove button only.
parsed: dict[str, report.ReportItem | str] = {}
for it in items:
    try:
        parsed[it["id"]] = report.ReportItem.from_dict(it)
    except (ValueError, TypeError, KeyError) as exc:
        parsed[it.get("id", "?") if isinstance(it, dict) else "?"] = str(exc)
good = [p for p in parsed.values() if isinstance(p, report.ReportItem)]

# ---------------------------------------------------------------- exports
with st.container(border=True):
    st.subheader("Export")
    doc_title = st.text_input("Report title", value="ulr report", key="rep_doc_title",
                              max_chars=report.MAX_TITLE)
    doc_title = doc_title.strip() or "ulr report"
    n_tables = sum(p.table is not None for p in good)
    snapshot = [p.to_dict() for p in good]
    c1, c2, c3 = st.columns([1, 1, 1])
    c1.download_button(
        "Download HTML report", key="rep_dl_html", type="primary", icon=":material/download:",
        data=lambda: report.build_html(snapshot, title=doc_title).encode("utf-8"),
        file_name="ulr-report.html", mime="text/html", on_click="ignore",
        help="One file with every chart (interactive) and table; plotly.js is inside, so it "
             "opens offline.")
    zip_bytes = None
    with ui.user_errors("The ZIP cannot be built: "):
        zip_bytes = report.build_zip(snapshot)
    if zip_bytes is not None:
        c2.download_button(
            f"Download tables (ZIP, {n_tables} CSV)", key="rep_dl_zip", data=zip_bytes,
            file_name="ulr-report-tables.zip", mime="application/zip", on_click="ignore",
            icon=":material/folder_zip:",
            help="Each table as CSV plus index.csv. Cells starting with =, +, - or @ are "
                 "neutralized so spreadsheets do not run them as formulas.")
    with c3:
        sure = st.checkbox("Yes, remove all items", key="rep_clear_sure")
        st.button("Clear the report", key="rep_clear", disabled=not sure, on_click=_clear)
    problem = report.static_export_problem()
    if problem:
        st.caption(f"PNG/PDF export of single charts is off here: {problem}")
    st.caption(f"{len(items)} item{'s' if len(items) != 1 else ''}, {n_tables} with a table.")


def _image_data(figure_json: str, fmt: str):
    return lambda: report.to_image(figure_json, format=fmt)


# ---------------------------------------------------------------- items
for i, it in enumerate(items):
    item_id = it.get("id", "?") if isinstance(it, dict) else "?"
    p = parsed.get(item_id)
    with st.container(border=True, key=f"rep_item_{item_id}"):
        if not isinstance(p, report.ReportItem):
            st.error(f"Item {i + 1} is broken and cannot be exported: {p}")
            st.button("Remove", key=f"rep_rm_{item_id}", on_click=_remove, args=(item_id,))
            continue
        st.markdown(f"**{i + 1}.** {p.kind} · dataset **{_md(p.dataset or '—')}** · created "
                    f"{_md(p.created or '—')} · ulr {_md(p.version or '—')}")
        st.text_input("Title", value=p.title, key=f"rep_title_{item_id}",
                      max_chars=report.MAX_TITLE, on_change=_edit, args=(item_id, "title"))
        st.text_area("Note", value=p.note, key=f"rep_note_{item_id}", height=80,
                     max_chars=report.MAX_NOTE, on_change=_edit, args=(item_id, "note"),
                     placeholder="What should the reader take from this?")
        if p.figure is not None:
            st.plotly_chart(p.fig(), key=f"rep_fig_{item_id}")
        df = p.frame()
        if df is not None:
            with st.expander(f"Table ({len(df):,} rows)"):
                st.dataframe(df, hide_index=True, width="stretch")
        if p.settings:
            with st.expander("Settings"):
                st.json(p.settings)
        b = st.columns(5)
        b[0].button("Move up", key=f"rep_up_{item_id}", icon=":material/arrow_upward:",
                    disabled=i == 0, on_click=_move, args=(item_id, -1))
        b[1].button("Move down", key=f"rep_down_{item_id}", icon=":material/arrow_downward:",
                    disabled=i == len(items) - 1, on_click=_move, args=(item_id, 1))
        b[2].button("Remove", key=f"rep_rm_{item_id}", icon=":material/delete:",
                    on_click=_remove, args=(item_id,))
        if p.figure is not None and not problem:
            stem = "".join(ch if ch.isalnum() else "-" for ch in p.title.lower())[:40].strip("-")
            for col, fmt in ((b[3], "png"), (b[4], "pdf")):
                col.download_button(
                    fmt.upper(), key=f"rep_{fmt}_{item_id}", data=_image_data(p.figure, fmt),
                    file_name=f"{i + 1:02d}-{stem or 'chart'}.{fmt}",
                    mime=report.image_mime(fmt), on_click="ignore", icon=":material/image:",
                    help=f"Static {fmt.upper()} of this chart, rendered by Chromium "
                         "(takes a few seconds).")
