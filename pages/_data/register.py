"""The Data page's registration of a large log (a lake folder or a Spark table) whose
click statistics are aggregated where the rows live."""

import streamlit as st

from pages import _ui as ui
from ulr import access
from ulr.engines import sources as _sources
from ulr.errors import UlrError


def register_form() -> None:
    """Register a folder/glob under the operator's data roots, or a Spark table on an allowed
    master; the new source becomes the current one. Nothing else on the server is read."""
    st.subheader("Large logs: aggregate where they live")
    roots, masters = access.data_roots(), access.spark_masters()
    if not roots and not masters:
        st.caption("This server opens no folder to the browser, so large logs are registered "
                   "by its operator. Upload a file above, or ask the operator to open a "
                   "folder to the dashboard.")
        return
    st.caption("Register a Parquet or CSV folder or glob" + (" (or a Spark table)" if masters
               else "") + ". Its click statistics are computed per file and stored here; the "
               "rows stay where they are. Refresh after new files land: only those are read. "
               "Position bias and this page then work from the statistics (pick the source in "
               "the sidebar). Folders opened to the browser: "
               + (", ".join(ui.literal(r) for r in roots) or "none") + ".")
    with st.form("source_form"):
        c1, c2 = st.columns(2)
        src_name = c1.text_input("Source name", key="src_name")
        engines = ["duckdb", "spark"] if masters else ["duckdb"]
        src_engine = c2.radio("Engine", engines, horizontal=True, key="src_engine",
                              help="DuckDB reads files on this machine; Spark runs the query "
                                   "on the cluster the operator allows.")
        src_where = st.text_input("Parquet or CSV folder or glob, or Spark table" if masters else
                                  "Parquet or CSV folder or glob", key="src_where",
                                  placeholder=f"{roots[0] if roots else '/lake'}/*.parquet")
        src_master = st.selectbox("Spark master", masters, key="src_master") if masters \
            else None
        registered = st.form_submit_button("Register and aggregate")
    if registered:
        with ui.user_errors("Not registered: "), st.spinner("Aggregating…"):
            if not src_name.strip():
                raise UlrError("give the source a name.")
            path, table, master = access.browser_source(src_where, src_engine, src_master)
            r = _sources.add(src_name.strip(), path=path, table=table, engine=src_engine,
                             master=master)
            ui.flash(f"Registered “{ui.shown(r['name'])}”: {r['rows']:,} rows in "
                     f"{r['partitions']} partitions.", at=ui.keys.SOURCE_FLASH)
            ui.set_current_source(r["name"])
            st.rerun()
