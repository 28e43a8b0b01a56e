"""Data page: upload, map, pick, rename and delete click logs; summary and CTR by position.

Large logs are registered as sources (:mod:`ulr.engines.sources`): their statistics are
aggregated where the rows live and stored here; with a source selected in the sidebar
this page shows its summary and CTR from those statistics.
"""

import streamlit as st

from pages import _ui as ui
from pages._data.register import register_form
from pages._data.upload import upload_section
from ulr import access
from ulr.data import catalog, ingest, schema
from ulr.data.summary import preview, summary_and_ctr
from ulr.engines import sources as _sources
from ulr.plots import ctr_by_position_figure
from ulr.quantity import rate_of, show, timestamp
st.title("Data")
st.caption("Upload a click log (CSV or Parquet), check how it mapped, and see its key figures.")

cur = ui.cursor()

upload_section()


def _show_mapping(info) -> None:
    """How the current dataset was mapped, and the facts declared about it."""
    m = info.mapping or {}
    rows = [{"field": k, "from": v} for k, v in m.items() if k in schema.CANONICAL]
    rows += [{"field": k, "from": f"every row = {v}"} for k, v in
             (m.get("constants") or {}).items()]
    if m.get("features"):
        rows.append({"field": "features", "from": ", ".join(m["features"])
                     + f" ({len(info.features)} columns)"})
    section = st.expander("Column mapping and declared facts", expanded=bool(m.get("facts")),
                          key="mapping_open", on_change="rerun")
    with section:
        if not section.open:  # drawn when opened (issue 54: a first view draws no hidden table)
            return
        ui.dataframe(rows, hide_index=True, width="stretch", key="mapping_table")
        facts = info.facts.describe()
        st.write("Declared: " + ui.literal("; ".join(facts)) + "." if facts else
                 "No facts declared. Declare them when you upload the log (for example that "
                 "the whole log is randomized); every page then uses them.")


def _source_summary(name: str) -> None:
    """A registered source's key figures and CTR by position, from its stored statistics."""
    meta = _sources.get(name)
    shown = ui.shown(name)
    st.subheader(f"“{shown}” (registered source)")
    st.caption(f"{meta['engine']} · {ui.literal(meta['path'] or meta['tbl'])} · "
               f"{meta['partitions']} partitions · refreshed {meta['refreshed_at']} UTC · the rows stay where they "
               "live; these figures come from the statistics stored here.")
    summ, res, warnings = _source_figures(_sources.version(name), name)
    for w in warnings:
        st.warning(ui.literal(w.message), icon=":material/warning:")
    m = st.columns(6)
    m[0].metric("Rows", f"{summ['rows']:,}")
    m[1].metric("Queries", f"{summ['queries']:,}")
    m[2].metric("Documents", f"{summ['documents']:,}")
    m[3].metric("Query-document pairs", f"{summ['pairs']:,}")
    m[4].metric("Overall CTR", rate_of(summ['ctr'], summ['rows']).text())
    m[5].metric("Partitions", f"{meta['partitions']:,}")
    _ctr_chart(res, name, {"source": name})
    c1, c2 = st.columns(2)
    if c1.button("Refresh (read new or changed files only)", key="src_refresh"):
        with ui.user_errors("Not refreshed: "), st.spinner("Aggregating new files…"):
            access.browser_source(meta["path"] or meta["tbl"], meta["engine"], meta["spark_master"])
            r = _sources.refresh(name)
            ui.flash(f"Refreshed “{shown}”: {r['scanned']} new or changed partitions read; "
                     f"{r['rows']:,} rows in all.", at=ui.keys.SOURCE_FLASH)
            st.rerun()
    sure = c2.checkbox(f"Yes, remove the source “{shown}” (its files stay)",
                       key="src_remove_sure")
    if c2.button("Remove source", key="src_remove", disabled=not sure):
        with ui.user_errors("Not removed: "):
            _sources.remove(name)
            ui.flash(f"Removed the source “{shown}” and its stored statistics; its files are "
                     "untouched.", at=ui.keys.SOURCE_FLASH)
            ui.set_current(ingest.SAMPLE_NAME)
            st.rerun()
    st.page_link("pages/position_bias.py", label="Estimate position bias from these statistics",
                 icon=":material/arrow_forward:")
    st.info("Compare rankers, Bandit lab's replay and Off-policy evaluation need the rows "
            "themselves: upload a sample of this log above to use them.")


@ui.cache_data(show_spinner=False, max_entries=32)
def _source_figures(version: str, name: str):
    return (_sources.summary(name), _sources.ctr_by_position_result(name),
            _sources.mapping_warnings(name))


def _ctr_chart(res, label: str, settings: dict) -> None:
    """CTR by position with its intervals, report item and download (dataset or source).

    The caption is the data's own verdict (``res``, a :class:`CtrByPosition`;
    docs/verdicts.md): on a randomized log a difference between positions is position
    bias alone, and "clicks fall" is said only when position 1 and the last position can
    be told apart."""
    ui.show_verdict(res.verdict, key="data_ctr")
    fig = ui.figure(ctr_by_position_figure, res.table)
    st.plotly_chart(fig, key="ctr_chart")
    st.caption("Bars are 95% Wilson score intervals for the binomial click rate.")
    ui.add_to_report("CTR by position", fig=fig, table=res.table, settings=settings,
                     key="data_ctr", caveats=list(res.caveats), evidence=res.evidence,
                     verdict=res.verdict)
    ui.download_csv(res.table, f"ctr_by_position_{label}.csv", "Download CTR table (CSV)")


def _manage(info) -> None:
    """The stored datasets, and renaming or deleting the current one: only whoever loaded
    it may (docs/contract.md §1, owners); anyone else is told why, in one sentence."""
    actor = ui.identity()
    with (section := st.expander("Manage datasets", key="data_manage_open", on_change="rerun")):
        if not section.open:  # drawn when opened: the first view draws no table it hides
            return
        all_ds = catalog.list_datasets(cur)
        ui.dataframe([{"name": d.name, "rows": d.rows, "file": d.source,
                       "loaded": timestamp(d.loaded_at), "loaded by": d.loaded_by(actor),
                       "skipped rows": d.rejected}
                      for d in all_ds], hide_index=True, width="stretch")
        refusal = info.refusal(actor, "rename or delete")
        if refusal:
            st.caption(ui.literal(refusal))
            return
        c1, c2 = st.columns(2)
        with c1:
            new_name = st.text_input("Rename the current dataset to", key="rename_to")
            if st.button("Rename", key="rename_btn", disabled=not new_name):
                with ui.user_errors("Not renamed: "):
                    ui.set_current(catalog.rename_dataset(cur, info.name, new_name, actor=actor))
                    st.rerun()
        with c2:
            sure = st.checkbox(f"Yes, delete “{ui.shown(info.name)}”", key="delete_sure")
            if st.button("Delete", key="delete_btn", disabled=not sure):
                with ui.user_errors("Not deleted: "):
                    catalog.delete_dataset(cur, info.name, actor=actor)
                    ui.forget(info.content_hash)
                    st.session_state.pop(ui.keys.LAST_LOAD, None)
                    ui.set_current(ingest.SAMPLE_NAME)
                    st.rerun()


@ui.cache_data(show_spinner=False, max_entries=64)
def _summary(content_hash: str, name: str):
    lg = catalog.open_dataset(name, cur=catalog.cursor())
    return (*summary_and_ctr(lg, mapping=ui.mapping_warnings(lg)), preview(lg, 100))


def _dataset_summary(log) -> None:
    info = log.info
    st.subheader(f"“{ui.shown(info.name)}”")
    st.caption(f"From {ui.shown(info.source)} · loaded {timestamp(info.loaded_at)} · "
               f"content hash {str(info.content_hash)[:12]}")
    _show_mapping(info)
    for w in ui.mapping_warnings(log):
        st.warning(ui.literal(w.message), icon=":material/warning:")
    s, ctr, preview = _summary(info.content_hash, info.name)  # ctr: a CtrByPosition
    m = st.columns(6)
    m[0].metric("Rows", f"{s['rows']:,}")
    m[1].metric("Queries", f"{s['queries']:,}")
    m[2].metric("Documents", f"{s['documents']:,}")
    m[3].metric("Sessions", "—" if s["sessions"] is None else f"{s['sessions']:,}",
                help="No session column is mapped." if s["sessions"] is None else None)
    m[4].metric("Overall CTR", rate_of(s['ctr'], s['rows']).text())
    m[5].metric("Randomized", show('rate', s['randomized_share']))
    _ctr_chart(ctr, info.name, {"dataset": info.name})
    st.subheader("Preview")
    ui.dataframe(preview, hide_index=True, width="stretch")
    if info.rejected:
        st.warning(f"{info.rejected:,} rows of this file broke the schema and were skipped.")
        ui.download_csv(catalog.rejected_rows(cur, info.name), f"skipped_rows_{info.name}.csv",
                        "Download skipped rows (CSV)", key="dl_rejected")


_src = ui.current_source()
ui.show_flash(ui.keys.SOURCE_FLASH, kind="success")
if _src is not None:
    with ui.user_errors():
        _source_summary(_src)
else:
    _log = ui.current_log()
    try:  # the first thing a new dataset offers (issue 39)
        st.page_link("pages/audit.py", label="What can this log tell me?",
                     icon=":material/fact_check:", query_params={"dataset": _log.info.name})
    except Exception:  # noqa: BLE001 - the page run on its own (no navigation)
        pass
    _manage(_log.info)
    _dataset_summary(_log)
register_form()
