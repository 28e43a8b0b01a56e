"""Present: a saved report as slides (one result per screen; arrow keys move).

The view is the same self-contained deck that "Download slides" writes
(``ulr.report.build_deck``), so what is shown is what is shared.
"""

import streamlit as st

from pages import _ui as ui
from ulr import report
from ulr.report import saved as reports

ui.ensure_app_run()

ui.require_sign_in("Sign in to see this presentation.")
actor = ui.identity()
wanted = st.query_params.get("report")
if wanted and reports.get_info(wanted, actor=actor) is None:  # missing, or someone's private
    st.warning("The link names a report that does not exist here or is private (it may have "
               "been deleted); showing your latest report instead.")
elif wanted:
    ui.set_current_report(wanted)
rid = ui.current_report_id()
if rid is None:
    st.query_params.pop("report", None)
info = reports.get_info(rid, actor=actor) if rid else None
items = reports.items(rid, actor=actor) if rid else []
if rid:
    st.query_params["report"] = rid
if not items:
    st.info(("This report has no results yet." if rid else "You have no reports yet.")
            + " Use **Add to report** under any chart, then come back here.",
            icon=":material/post_add:")
    st.page_link("pages/report.py", label="Go to the report", icon=":material/description:")
    st.stop()

status = reports.stale_status(items, cur=ui.cursor())
deck = report.build_deck(items, title=info.name, status=status, embedded=True)
# 640 px fits 1280x720 with the header; a shorter window gets a shorter frame (the deck zooms
# its slides to the frame), so the slide and its arrow buttons stay in view (820x620 too)
st.html("<style>[data-testid='stMainBlockContainer']{padding-top:2.5rem;}"
        "[data-testid='stMainBlockContainer'] iframe{height:min(640px,calc(100vh - 6rem))"
        " !important;}</style>")
st.iframe(deck, height=640, alt="Slides")
c = st.columns([2, 2, 3])
c[0].page_link("pages/report.py", icon=":material/edit:", query_params={"report": rid},
               label="Edit the report" if reports.can_edit(info, actor=actor)
               else "Open the report page")
c[1].download_button("Download slides (HTML)", data=lambda: report.build_deck(
                         items, title=info.name, status=status).encode("utf-8"),
                     file_name="slides.html", mime="text/html", on_click="ignore",
                     icon=":material/download:", key="present_dl")
c[2].caption("← / → or the buttons move between slides. Share this page's address to show "
             "the same report.")
