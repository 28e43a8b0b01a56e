"""Report page: saved reports (pick, rename, duplicate, delete), their items, and exports.

Every change acts as :func:`pages._ui.identity` and :mod:`ulr.report.saved` refuses a
non-owner; a report of someone else's (opened by its link) is shown read-only, with
its exports and "Duplicate" to make an own copy.
"""

import streamlit as st

from pages import _ui as ui
from ulr import report, theme
from ulr.errors import UlrError
from ulr.text import file_slug, words
from ulr.quantity import timestamp
from ulr.report import saved as reports
from ulr.report.powerpoint import build_pptx

ui.ensure_app_run()

_md = ui.literal  # user text shown literally inside markdown (no links, no formatting)


def _flash(msg: str) -> None:
    ui.flash(ui.literal(msg), at=ui.keys.REPORT_FLASH)


def _safe(fn, *args, **kw) -> None:
    """Run a store change; a refusal becomes one readable sentence at the top."""
    try:
        fn(*args, **kw)
    except UlrError as exc:
        _flash(str(exc)[:1].upper() + str(exc)[1:])


# ---------------------------------------------------------------- callbacks (run before the page)


def _pick() -> None:
    ui.set_current_report(st.session_state[ui.keys.REPORT_PICK])


def _new() -> None:
    try:
        ui.set_current_report(reports.create(actor=ui.identity()).id)
    except UlrError as exc:
        _flash(str(exc)[:1].upper() + str(exc)[1:])


def _rename(rid: str) -> None:
    _safe(reports.rename, rid, st.session_state.get(ui.keys.REPORT_NAME, ""), actor=ui.identity())


def _private(rid: str) -> None:
    _safe(reports.set_private, rid, bool(st.session_state.get(f"{ui.keys.REPORT_PRIVATE}{rid}")),
          actor=ui.identity())


def _duplicate(rid: str) -> None:
    try:
        ui.set_current_report(reports.duplicate(rid, actor=ui.identity()).id)
    except UlrError as exc:
        _flash(str(exc)[:1].upper() + str(exc)[1:])


def _delete(rid: str) -> None:
    _safe(reports.delete, rid, actor=ui.identity())
    st.session_state.pop(ui.REPORT_KEY, None)
    if "report" in st.query_params:  # else the deleted report's link would be reopened
        del st.query_params["report"]
    st.session_state[ui.keys.REPORT_DELETE_SURE] = False


def _edit(rid: str, item_id: str, field: str) -> None:
    _safe(reports.update_item, rid, item_id, actor=ui.identity(), **{
        field: st.session_state.get(f"{ui.keys.REPORT_ITEM}{field}_{item_id}", "").strip() if field == "title"
        else st.session_state.get(f"{ui.keys.REPORT_ITEM}{field}_{item_id}", "")})


def _item_op(fn, rid: str, item_id: str, *args) -> None:
    _safe(fn, rid, item_id, *args, actor=ui.identity())


# ---------------------------------------------------------------- choose the report
st.title("Report")
st.caption("Collect results with “Add to report” under any chart; they are saved at once and "
           "stay after a refresh or a restart. Put them in order, edit the one-line takeaways, "
           "then present them as slides or export them.")

ui.require_sign_in("Sign in to make, open and present reports.")
actor = ui.identity()
rid = ui.current_report_id()
if rid is None:  # nothing of theirs yet; a visit makes no report, "Add to report" does
    st.query_params.pop("report", None)
    st.info("You have no reports yet. Every result on the analysis pages (Data, Position "
            "bias, Compare rankers, …) has an **Add to report** button under its chart; the "
            "first one you press starts your report.", icon=":material/post_add:")
    st.button("New report", key="rep_new", on_click=_new, icon=":material/add:")
    st.stop()
info = reports.get_info(rid, actor=actor)
editable = reports.can_edit(info, actor=actor)
own = info.owner is not None and info.owner == actor
all_reports = reports.list_reports(actor=actor, editable=True)  # yours (and unowned old ones)
if rid not in [r.id for r in all_reports]:
    all_reports = [info] + all_reports
st.query_params["report"] = rid

ui.show_flash(ui.keys.REPORT_FLASH)
if not editable:
    st.info(f"“{ui.shown(info.name)}” belongs to someone else: you can read, present and "
            "export it, or "
            "duplicate it to work on your own copy; only its owner can change it.",
            icon=":material/visibility:")
elif info.owner is None:
    st.caption("This report was saved before reports had owners: anyone can change it. "
               "Duplicate it to have a copy of your own.")

with st.container(border=True):
    ids = [r.id for r in all_reports]
    names = {r.id: f"{r.name} ({r.items} item{'s' if r.items != 1 else ''})" for r in all_reports}
    # Equal labels (two "Untitled report (0 items)") get their id: the browser sends the
    # picked label back, and a label that now means another report would switch to it.
    dupes = {v for v in names.values() if list(names.values()).count(v) > 1}
    names = {k: f"{v} · {k[:6]}" if v in dupes else v for k, v in names.items()}
    c = st.columns([3, 3, 1, 1])
    st.session_state[ui.keys.REPORT_PICK] = rid
    c[0].selectbox("Saved reports", ids, key=ui.keys.REPORT_PICK, format_func=names.get, on_change=_pick,
                   help="Your reports; a report opened by its link is listed too.")
    if st.session_state.get(ui.keys.REPORT_NAME_FOR) != (rid, info.name):
        st.session_state[ui.keys.REPORT_NAME] = info.name
        st.session_state[ui.keys.REPORT_NAME_FOR] = (rid, info.name)
    c[1].text_input("Report name", key=ui.keys.REPORT_NAME, max_chars=report.MAX_TITLE,
                    on_change=_rename, args=(rid,), disabled=not editable)
    c[2].button("New report", key="rep_new", on_click=_new, icon=":material/add:")
    c[3].button("Duplicate", key="rep_dup", on_click=_duplicate, args=(rid,),
                icon=":material/content_copy:")
    d = st.columns([3, 2, 2])
    d[0].page_link("pages/present.py", label="Open the presentation view",
                   icon=":material/slideshow:", query_params={"report": rid})
    if own:
        st.session_state[f"{ui.keys.REPORT_PRIVATE}{rid}"] = info.private
        d[0].checkbox("Private: only I can open it", key=f"{ui.keys.REPORT_PRIVATE}{rid}",
                      on_change=_private, args=(rid,),
                      help="A private report is visible to you only, even with its link. "
                           "Otherwise anyone with the link can read and present it.")
    sure = d[1].checkbox("Yes, delete this report", key=ui.keys.REPORT_DELETE_SURE, disabled=not editable)
    d[2].button("Delete report", key="rep_del", disabled=not (sure and editable),
                on_click=_delete, args=(rid,), icon=":material/delete:")

items = reports.items(rid, actor=actor)
if not items:
    st.info("This report is empty. Every result on the analysis pages (Data, Position bias, "
            "Compare rankers, …) has an **Add to report** button under its chart; press it to "
            "save the chart with its table, caveats, evidence and settings here.",
            icon=":material/post_add:")
    st.stop()

status = reports.stale_status(items, cur=ui.cursor())

# ---------------------------------------------------------------- exports
with st.container(border=True):
    st.subheader("Export")
    title = info.name
    stem = file_slug(title, 40) or "report"  # cut between words, never inside one
    # two rows, so that every label, its format included, is whole at 1280 px (five buttons
    # in one row cut them to "Download sli…")
    c = st.columns(3) + st.columns(3)
    c[0].download_button(
        "Download HTML report", key="rep_dl_html", type="primary", icon=":material/download:",
        data=lambda: report.build_html(items, title=title, status=status).encode("utf-8"),
        file_name=f"{stem}.html", mime="text/html", on_click="ignore",
        help="One long page with every chart (interactive), table, caveat, evidence and "
             "setting; opens offline.")
    c[3].download_button(
        "Download slides (HTML)", key="rep_dl_deck", icon=":material/slideshow:",
        data=lambda: report.build_deck(items, title=title, status=status).encode("utf-8"),
        file_name=f"{stem}-slides.html", mime="text/html", on_click="ignore",
        help="One result per slide; arrow keys move between slides; opens offline.")
    problem = None if report.find_browser() else "Chromium is not installed here."
    c[4].download_button(
        "Download slides (PDF)", key="rep_dl_pdf", icon=":material/picture_as_pdf:",
        data=lambda: report.build_pdf(items, title=title, status=status),
        file_name=f"{stem}-slides.pdf", mime="application/pdf", on_click="ignore",
        disabled=problem is not None, help=problem or "One slide per A4 landscape page "
        "(takes a few seconds).")
    image_problem = report.static_export_problem()
    c[5].download_button(
        "Download slides (PowerPoint)", key="rep_dl_pptx", icon=":material/co_present:",
        data=lambda: build_pptx(items, title=title, status=status),
        file_name=f"{stem}-slides.pptx", on_click="ignore",
        mime="application/vnd.openxmlformats-officedocument.presentationml.presentation",
        disabled=image_problem is not None, help=image_problem or "One slide per result "
        "with its chart; every caveat, the evidence and the settings in the speaker notes "
        "(takes a few seconds).")
    c[1].download_button(
        "Download tables (ZIP)", key="rep_dl_zip", data=lambda: report.build_zip(items),
        file_name=f"{stem}-tables.zip", mime="application/zip", on_click="ignore",
        icon=":material/folder_zip:",
        help="Each table as CSV plus index.csv with every item's takeaway, caveats, evidence "
             "and settings.")
    if image_problem:
        st.caption(f"PNG/PDF export of single charts is off here: {_md(image_problem)}")
    st.caption(f"{len(items)} item{'s' if len(items) != 1 else ''}. Link to this report: "
               "copy the address bar (it ends in ?report=…).")

# ---------------------------------------------------------------- items
pictures = report.kept_pictures(items, status)  # {item id: SVG}; live charts for the others
for i, p in enumerate(items):
    with st.container(border=True, key=f"rep_item_{p.id}"):
        st.markdown(f"**{i + 1}.** {p.kind} · dataset **{_md(p.origin)}** · created "
                    f"{_md(timestamp(p.created) or '—')} · ulr {_md(p.version or '—')}")
        if p.id in status:
            st.error(_md(status[p.id]), icon=":material/sync_problem:")
        st.text_input("Title", value=p.title, key=f"{ui.keys.REPORT_ITEM}title_{p.id}", disabled=not editable,
                      max_chars=report.MAX_TITLE, on_change=_edit, args=(rid, p.id, "title"))
        if p.verdict:  # what the result can support, as computed when it was saved
            lv = p.verdict["level"]
            st.badge(lv.capitalize(), icon=ui.VERDICT_ICONS[lv], color=ui.VERDICT_COLORS[lv])
        st.text_input("Takeaway", value=p.takeaway, key=f"{ui.keys.REPORT_ITEM}takeaway_{p.id}",
                      max_chars=report.MAX_TITLE * 2, on_change=_edit,
                      args=(rid, p.id, "takeaway"), disabled=not editable,
                      help="One line in plain words; shown large on the slide.")
        st.text_area("Note", value=p.note, key=f"{ui.keys.REPORT_ITEM}note_{p.id}", height=68,
                     max_chars=report.MAX_NOTE, on_change=_edit, args=(rid, p.id, "note"),
                     disabled=not editable)
        if p.id in pictures:  # the deck's picture, kept after the save: quick to draw
            st.image(pictures[p.id], width="stretch")
        elif p.figure is not None:
            st.plotly_chart(report.shown_figure(p), key=f"rep_fig_{p.id}")
        df = p.frame()
        if df is not None:  # drawn when opened: no folded grid on the first view
            with (tab := st.expander(f"Table ({len(df):,} rows)", key=f"rep_table_{p.id}",
                                     on_change="rerun")):
                if tab.open:
                    ui.dataframe(theme.styled(df.rename(columns=words)), hide_index=True,
                                 width="stretch")
        for cav in p.caveats:
            st.warning(_md(cav), icon=":material/warning:")
        st.caption(f"Evidence: {_md(report.evidence_text(p.evidence))}")
        st.caption("Settings: " + (" · ".join(f"{_md(words(k))} = {_md(report.setting_text(v))}"
                                              for k, v in p.settings.items()) or "none recorded"))
        # the item's actions in one menu: 60 buttons drawn at once took a 12-item report's
        # first view about 2 s in the browser; a closed menu draws none of them
        with st.popover("Item actions", icon=":material/more_horiz:"):
            st.button("Move up", key=f"rep_up_{p.id}", icon=":material/arrow_upward:",
                      disabled=i == 0 or not editable, on_click=_item_op,
                      args=(reports.move_item, rid, p.id, -1))
            st.button("Move down", key=f"rep_down_{p.id}", icon=":material/arrow_downward:",
                      disabled=i == len(items) - 1 or not editable, on_click=_item_op,
                      args=(reports.move_item, rid, p.id, 1))
            st.button("Remove", key=f"rep_rm_{p.id}", icon=":material/delete:",
                      on_click=_item_op, args=(reports.remove_item, rid, p.id),
                      disabled=not editable)
            if p.figure is not None and image_problem is None:
                for fmt in ("png", "pdf"):
                    st.download_button(
                        f"Chart as {fmt.upper()}", key=f"rep_{fmt}_{p.id}", on_click="ignore",
                        data=lambda p=p, fmt=fmt: report.to_image(report.export_figure(p),
                                                                  format=fmt),
                        file_name=f"{i + 1:02d}-{stem}.{fmt}", mime=report.image_mime(fmt),
                        icon=":material/image:", help=f"Static {fmt.upper()} of this chart, "
                        "rendered by Chromium (takes a few seconds).")
