"""Data page: upload, map, pick, rename and delete click logs; summary and CTR by position.

Large logs are registered as sources (:mod:`ulr.engines.sources`): their statistics are
aggregated where the rows live and stored here; with a source selected in the sidebar
this page shows its summary and CTR from those statistics.
"""

import contextlib
import hashlib
import tempfile
import time
from pathlib import Path

import streamlit as st

from pages import _ui as ui
from ulr import access, schema, store
from ulr.engines import sources as _sources
from ulr.errors import UlrError
from ulr.plots import ctr_by_position_figure
from ulr.verdict import ctr_by_position_verdict

st.title("Data")
st.caption("Upload a click log (CSV or Parquet), check how it mapped, and see its key figures.")

cur = ui.cursor()

def _app_words(message: str) -> str:
    """The loader's refusal in the form's words (it names its parameters)."""
    return (message.replace("load with skip_bad_rows=True", "tick “Skip bad rows”")
            .replace("skip_bad_rows=True", "“Skip bad rows”")
            .replace("--replace", "“Replace a dataset with the same name”"))


def _mapping_form(columns: list[str], auto: dict, file_name: str):
    """The mapping widgets (inside the form); returns a callable building the Mapping."""
    st.write("**Column mapping** — which column(s) of your file hold each field "
             "(pre-filled by auto-detection). Pick several columns for the query to build "
             "one key from them, e.g. the user features of a log without a query column.")
    sel = {}
    cols = st.columns(4)
    for i, canon in enumerate(schema.CANONICAL):
        req = canon in schema.REQUIRED
        default = [auto[canon]] if auto.get(canon) in columns else []
        many = canon in schema.COMPOSITE_FIELDS
        sel[canon] = cols[i % 4].multiselect(
            f"{canon}{' *' if req else ''}", columns, default=default, key=f"map_{canon}",
            max_selections=None if many else 1,
            help="Several columns make one composite key." if many else None)
    st.write("**Facts about the log** — declared once, used by every page.")
    f1, f2, f3 = st.columns(3)
    randomized = f1.checkbox("The whole log is randomized (every list was shown in random "
                             "order)", key="fact_randomized")
    per_slot = f2.checkbox("Propensities are per slot (probability of the item at its "
                           "position)", key="fact_per_slot")
    known_p = f3.number_input("Known logging propensity for every row (0: none)",
                              min_value=0.0, max_value=1.0, value=0.0, step=0.01,
                              format="%.4f", key="const_propensity")
    st.write("**Features** — numeric columns to use as features (stored as feature_*).")
    g1, g2 = st.columns(2)
    pattern = g1.text_input("Names or patterns, comma-separated (e.g. user-item_affinity_*)",
                            key="feature_patterns")
    picked = g2.multiselect("Feature columns", columns, key="feature_columns")
    name = st.text_input("Dataset name", value=Path(file_name).stem, key="ds_name")
    skip = st.checkbox("Skip bad rows (keep them for download) instead of refusing "
                       "the file", key="skip_bad")
    replace = st.checkbox("Replace a dataset with the same name", key="replace")

    def build() -> schema.Mapping:
        consts = {}
        if randomized:
            consts["randomized"] = True
        if known_p > 0:
            consts["propensity"] = float(known_p)
        for canon in consts:
            if sel.get(canon):  # a declared constant replaces the column
                sel[canon] = []
        feats = [p for p in pattern.split(",") if p.strip()] + list(picked)
        return schema.Mapping(columns={c: tuple(v) for c, v in sel.items() if v},
                              constants=consts, features=tuple(feats),
                              facts=("per_slot_propensity",) if per_slot else ())
    return build, name, skip, replace


def _show_mapping(info) -> None:
    """How the current dataset was mapped, and the facts declared about it."""
    m = info.mapping or {}
    rows = [{"field": k, "from": v} for k, v in m.items() if k in schema.CANONICAL]
    rows += [{"field": k, "from": f"every row = {v}"} for k, v in
             (m.get("constants") or {}).items()]
    if m.get("features"):
        rows.append({"field": "features", "from": ", ".join(m["features"])
                     + f" ({len(info.features)} columns)"})
    with st.expander("Column mapping and declared facts", expanded=bool(m.get("facts"))):
        st.dataframe(rows, hide_index=True, width="stretch", key="mapping_table")
        facts = info.facts.describe()
        st.write("Declared: " + "; ".join(facts) + "." if facts else
                 "No facts declared. Declare them when you upload the log (for example that "
                 "the whole log is randomized); every page then uses them.")


# ---------------------------------------------------------------- upload
# The upload is copied to <tmp>/ulr_uploads/ for the loader, which reads files. The
# copy lives while the mapping form is pending (the script re-runs several times
# before Load is pressed) and is deleted once the file is loaded or refused, or
# when another file replaces it; copies older than a day (sessions that never
# pressed Load) are swept whenever a new copy is written.
UPLOAD_MAX_AGE_S = 24 * 3600
_COPY, _PEEK = "_upload_copy", "_upload_peek"


def _upload_id(up) -> str:
    return getattr(up, "file_id", None) or hashlib.sha1(up.getvalue()).hexdigest()


def _drop_copy() -> None:
    """Delete this session's upload copy, if it has one."""
    copy = st.session_state.pop(_COPY, None)
    if copy:
        Path(copy).unlink(missing_ok=True)


def _sweep_uploads(folder: Path) -> None:
    """Delete upload copies older than :data:`UPLOAD_MAX_AGE_S` (abandoned forms)."""
    cutoff = time.time() - UPLOAD_MAX_AGE_S
    for f in folder.iterdir():
        with contextlib.suppress(OSError):  # another session may delete it first
            if f.stat().st_mtime < cutoff:
                f.unlink()


def _upload_copy(up) -> Path:
    """The loader's copy of the uploaded file; written (with progress) when missing."""
    folder = Path(tempfile.gettempdir()) / "ulr_uploads"
    folder.mkdir(exist_ok=True)
    path = folder / f"{_upload_id(up)}{Path(up.name).suffix.lower() or '.csv'}"
    if st.session_state.get(_COPY) != str(path):
        _drop_copy()  # a different file replaced the pending one
    if not path.exists():
        _sweep_uploads(folder)
        bar = st.progress(0.0, text="Receiving file…")
        size = max(up.size, 1)
        with open(path, "wb") as fh:
            done = 0
            up.seek(0)
            while chunk := up.read(1 << 20):
                fh.write(chunk)
                done += len(chunk)
                bar.progress(min(done / size, 1.0), text=f"Received {done:,} bytes")
        bar.empty()
    st.session_state[_COPY] = str(path)
    return path


def _peek(up) -> dict:
    """The file's columns and auto-mapping (or its refusal), read once per uploaded file.

    Kept in the session so that re-runs need no copy once it was loaded or refused.
    """
    fid = _upload_id(up)
    peek = st.session_state.get(_PEEK)
    if peek is None or peek["fid"] != fid:
        path = _upload_copy(up)
        try:
            columns, auto = store.peek_columns(path, up.name)
            peek = {"fid": fid, "columns": columns, "auto": auto, "error": None}
        except UlrError as exc:
            peek = {"fid": fid, "columns": None, "auto": None, "error": str(exc)}
            _drop_copy()
        st.session_state[_PEEK] = peek
    return peek


def _hash_of(name: str) -> str | None:
    """The content hash of the stored dataset ``name`` (None when there is none)."""
    try:
        return store.get_dataset(cur, name).content_hash
    except UlrError:
        return None


def _load_upload(up, mapping, name: str, skip: bool, replace: bool):
    """Load the upload; its copy is deleted whether it was stored or refused."""
    try:
        with st.status(f"Loading {up.name}…", expanded=False) as status:
            old = _hash_of(name) if replace else None
            res = store.load_log(_upload_copy(up), name, cur=cur, mapping=mapping(),
                                 skip_bad_rows=skip, replace=replace, source_name=up.name)
            ui.forget(old)
            status.update(label=f"Stored “{res.dataset}”: {res.rows:,} rows",
                          state="complete")
    except UlrError as exc:
        st.error("Not loaded: " + _app_words(str(exc)))
        return None
    finally:
        _drop_copy()
    return res


with st.expander("Upload a click log", expanded=False):
    up = st.file_uploader("CSV or Parquet file", type=["csv", "parquet", "pq"], key="upload")
    if up is None:
        _drop_copy()  # the file was removed from the uploader
        st.session_state.pop(_PEEK, None)
    else:
        peek = _peek(up)
        if peek["error"]:
            st.error("This file cannot be read: " + _app_words(peek["error"]))
        else:
            with st.form("mapping"):
                mapping, name, skip, replace = _mapping_form(peek["columns"], peek["auto"],
                                                             up.name)
                submitted = st.form_submit_button("Load", type="primary")
            res = _load_upload(up, mapping, name, skip, replace) if submitted else None
            if res is not None:
                ui.set_current(res.dataset)
                st.session_state["_last_load"] = {"dataset": res.dataset, "rows": res.rows,
                                                  "rejected": res.rejected,
                                                  "warnings": [w.message for w in res.warnings]}
                st.rerun()

last = st.session_state.get("_last_load")
if last:
    msg = f"Stored “{last['dataset']}” with {last['rows']:,} rows."
    if last["rejected"]:
        msg += f" {last['rejected']:,} bad rows were skipped; download them below."
    st.success(msg)  # the mapping warnings follow, in the dataset's summary


def _source_summary(name: str) -> None:
    """A registered source's key figures and CTR by position, from its stored statistics."""
    meta = _sources.get(name)
    st.subheader(f"“{name}” (registered source)")
    st.caption(f"{meta['engine']} · {meta['path'] or meta['tbl']} · {meta['partitions']} "
               f"partitions · refreshed {meta['refreshed_at']} UTC · the rows stay where they "
               "live; these figures come from the statistics stored here.")
    summ, ctr = _source_figures(_sources.version(name), name)
    m = st.columns(6)
    m[0].metric("Rows", f"{summ['rows']:,}")
    m[1].metric("Queries", f"{summ['queries']:,}")
    m[2].metric("Documents", f"{summ['documents']:,}")
    m[3].metric("Query-document pairs", f"{summ['pairs']:,}")
    m[4].metric("Overall CTR", f"{summ['ctr']:.2%}")
    m[5].metric("Partitions", f"{meta['partitions']:,}")
    _ctr_chart(ctr, name, {"source": name}, {"rows": summ["rows"], "clicks": summ["clicks"],
                                             "queries": summ["queries"], "sessions": None})
    c1, c2 = st.columns(2)
    if c1.button("Refresh (read new or changed files only)", key="src_refresh"):
        with ui.user_errors("Not refreshed: "), st.spinner("Aggregating new files…"):
            access.browser_source(meta["path"] or meta["tbl"], meta["engine"], meta["spark_master"])
            r = _sources.refresh(name)
            st.session_state["_src_msg"] = (f"Refreshed “{name}”: {r['scanned']} new or changed "
                                            f"partitions read; {r['rows']:,} rows in all.")
            st.rerun()
    sure = c2.checkbox(f"Yes, remove the source “{name}” (its files stay)", key="src_remove_sure")
    if c2.button("Remove source", key="src_remove", disabled=not sure):
        with ui.user_errors("Not removed: "):
            _sources.remove(name)
            st.session_state["_src_msg"] = (f"Removed the source “{name}” and its stored "
                                            "statistics; its files are untouched.")
            ui.set_current(store.SAMPLE_NAME)
            st.rerun()
    st.page_link("pages/position_bias.py", label="Estimate position bias from these statistics",
                 icon=":material/arrow_forward:")
    st.info("Compare rankers, Bandit lab's replay and Off-policy evaluation need the rows "
            "themselves: upload a sample of this log above to use them.")


@ui.cache_data(show_spinner=False, max_entries=32)
def _source_figures(version: str, name: str):
    return _sources.summary(name), _sources.ctr_by_position(name)


def _ctr_chart(ctr, label: str, settings: dict, evidence: dict,
               randomized_share: float = 0.0) -> None:
    """CTR by position with its intervals, report item and download (dataset or source).

    The caption is the data's own verdict (docs/verdicts.md): on a randomized log a
    difference between positions is position bias alone, and "clicks fall" is said
    only when position 1 and the last position can be told apart."""
    verdict = ctr_by_position_verdict(ctr, randomized_share=randomized_share)
    ui.show_verdict(verdict, key="data_ctr")
    fig = ui.figure(ctr_by_position_figure, ctr)
    st.plotly_chart(fig, key="ctr_chart")
    st.caption("Bars are 95% Wilson score intervals for the binomial click rate.")
    ui.add_to_report("CTR by position", fig=fig, table=ctr, settings=settings, key="data_ctr",
                     caveats=[r.message for r in verdict.reasons], evidence=evidence,
                     verdict=verdict)
    ui.download_csv(ctr, f"ctr_by_position_{label}.csv", "Download CTR table (CSV)")


def _manage(info) -> None:
    with st.expander("Manage datasets"):
        all_ds = store.list_datasets(cur)
        st.dataframe([{"name": d.name, "rows": d.rows, "source": d.source,
                       "loaded": str(d.loaded_at)[:19], "skipped rows": d.rejected}
                      for d in all_ds], hide_index=True, width="stretch")
        c1, c2 = st.columns(2)
        with c1:
            new_name = st.text_input("Rename the current dataset to", key="rename_to")
            if st.button("Rename", key="rename_btn", disabled=not new_name):
                with ui.user_errors("Not renamed: "):
                    store.rename_dataset(cur, info.name, new_name)
                    ui.set_current(new_name)
                    st.rerun()
        with c2:
            sure = st.checkbox(f"Yes, delete “{info.name}”", key="delete_sure")
            if st.button("Delete", key="delete_btn", disabled=not sure):
                with ui.user_errors("Not deleted: "):
                    store.delete_dataset(cur, info.name)
                    ui.forget(info.content_hash)
                    st.session_state.pop("_last_load", None)
                    ui.set_current(store.SAMPLE_NAME)
                    st.rerun()


@ui.cache_data(show_spinner=False, max_entries=64)
def _summary(content_hash: str, name: str):
    lg = store.open_dataset(name, cur=store.cursor())
    return store.summary(lg), store.ctr_by_position(lg)


def _dataset_summary(log) -> None:
    info = log.info
    st.subheader(f"“{info.name}”")
    st.caption(f"From {info.source} · loaded {str(info.loaded_at)[:19]} · "
               f"content hash {str(info.content_hash)[:12]}")
    _show_mapping(info)
    for w in ui.mapping_warnings(log):
        st.warning(w.message, icon=":material/warning:")
    s, ctr = _summary(info.content_hash, info.name)
    m = st.columns(6)
    m[0].metric("Rows", f"{s['rows']:,}")
    m[1].metric("Queries", f"{s['queries']:,}")
    m[2].metric("Documents", f"{s['documents']:,}")
    m[3].metric("Sessions", "—" if s["sessions"] is None else f"{s['sessions']:,}")
    m[4].metric("Overall CTR", f"{s['ctr']:.2%}")
    m[5].metric("Randomized", f"{s['randomized_share']:.1%}")
    _ctr_chart(ctr, info.name, {"dataset": info.name},
               {"rows": s["rows"], "clicks": int(ctr["clicks"].sum()), "queries": s["queries"],
                "sessions": s["sessions"]}, randomized_share=s["randomized_share"])
    st.subheader("Preview")
    st.dataframe(store.preview(log, 100), hide_index=True, width="stretch")
    if info.rejected:
        st.warning(f"{info.rejected:,} rows of this file broke the schema and were skipped.")
        ui.download_csv(store.rejected_rows(cur, info.name), f"skipped_rows_{info.name}.csv",
                        "Download skipped rows (CSV)", key="dl_rejected")


def _register_form() -> None:
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
               + (", ".join(f"`{r}`" for r in roots) or "none") + ".")
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
            st.session_state["_src_msg"] = (f"Registered “{r['name']}”: {r['rows']:,} rows in "
                                            f"{r['partitions']} partitions.")
            ui.set_current_source(r["name"])
            st.rerun()


_src = ui.current_source()
_msg = st.session_state.pop("_src_msg", None)
if _msg:
    st.success(_msg)
if _src is not None:
    with ui.user_errors():
        _source_summary(_src)
else:
    _log = ui.current_log()
    _manage(_log.info)
    _dataset_summary(_log)
_register_form()
