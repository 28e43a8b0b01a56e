"""The Data page's upload: copy the file for the loader, map its columns, check the mapping
on the file, load it.

The mapping widgets live in a fragment, not a form: a change re-runs only this part of the
page, and the mapping is checked on the file's first rows at once
(:func:`ulr.data.precheck.check_mapping`, cached per file and mapping), so a wrong mapping
is named before Load stores anything. Loading records the visitor as the dataset's owner.
"""

import hashlib
from pathlib import Path

import streamlit as st

from pages import _ui as ui
from ulr.data import catalog, ingest, schema, uploads
from ulr.data.mapping import COMPOSITE_FIELDS, Mapping
from ulr.data.precheck import check_mapping
from ulr.errors import Refused, UlrError


# The form's control that lifts a refusal (ulr.errors.Refused names the loader's option).
CONTROL_OF = {"skip_bad_rows": "tick “Skip bad rows”",
              "replace": "tick “Replace a dataset with the same name”"}


# What kind of column each field needs, where a name misleads (the check below tests it).
_FIELD_HELP = {
    "query_id": "The query or context that all the documents of one shown list answered.",
    "session_id": "One value shared by all the rows of one shown list, and by no other "
                  "list: an impression or request id (not a per-row timestamp).",
    "propensity": "The logging policy's probability of showing the row's item: above 0, "
                  "at most 1.",
}


def _mapping_form(columns: list[str], auto: dict, file_name: str):
    """The mapping widgets; returns a callable building the Mapping, the dataset's name and
    the skip and replace choices."""
    st.write("**Column mapping** — which column(s) of your file hold each field "
             "(pre-filled by auto-detection). Pick several columns for the query to build "
             "one key from them, e.g. the user features of a log without a query column.")
    sel = {}
    cols = st.columns(4)
    for i, canon in enumerate(schema.CANONICAL):
        req = canon in schema.REQUIRED
        default = [auto[canon]] if auto.get(canon) in columns else []
        many = canon in COMPOSITE_FIELDS
        sel[canon] = cols[i % 4].multiselect(
            f"{canon}{' *' if req else ''}", columns, default=default, key=f"map_{canon}",
            max_selections=None if many else 1,
            help=" ".join(h for h in (_FIELD_HELP.get(canon), "Several columns make one "
                                      "composite key." if many else None) if h) or None)
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

    def build() -> Mapping:
        consts = {}
        if randomized:
            consts["randomized"] = True
        if known_p > 0:
            consts["propensity"] = float(known_p)
        for canon in consts:
            if sel.get(canon):  # a declared constant replaces the column
                sel[canon] = []
        feats = [p for p in pattern.split(",") if p.strip()] + list(picked)
        return Mapping(columns={c: tuple(v) for c, v in sel.items() if v},
                              constants=consts, features=tuple(feats),
                              facts=("per_slot_propensity",) if per_slot else ())
    return build, name, skip, replace


# ---------------------------------------------------------------- upload
# The upload is copied for the loader, which reads files, into the store's private folder
# (ulr.data.uploads: 0700, files 0600). The copy lives while the mapping form is pending
# (the script re-runs several times before Load is pressed) and is deleted once the file
# is loaded or refused, when another file replaces it or it is removed from the form, and
# when the tab is gone: the form touches it every few seconds (_heartbeat), and copies
# without a heartbeat are swept by every dashboard process, from its start.
_COPY, _PEEK = ui.keys.UPLOAD_COPY, ui.keys.UPLOAD_PEEK
uploads.start_sweeper()


def _upload_id(up) -> str:
    return getattr(up, "file_id", None) or hashlib.sha1(up.getvalue()).hexdigest()


def _drop_copy() -> None:
    """Delete this session's upload copy, if it has one."""
    uploads.remove(st.session_state.pop(_COPY, None))


def _upload_copy(up) -> Path:
    """The loader's copy of the uploaded file; written (with progress) when missing (a
    copy swept while its tab was throttled is written again from the upload)."""
    path = uploads.path_of(_upload_id(up), _suffix(up))
    if st.session_state.get(_COPY) != str(path):
        _drop_copy()  # a different file replaced the pending one
    if not path.exists():
        bar = st.progress(0.0, text="Receiving file…")
        size = max(up.size, 1)

        def chunks():
            up.seek(0)
            while chunk := up.read(1 << 20):
                yield chunk
        try:
            path = uploads.write(chunks(), up.size, key=_upload_id(up), suffix=_suffix(up),
                                 progress=lambda done: bar.progress(
                                     min(done / size, 1.0), text=f"Received {done:,} bytes"))
        finally:
            bar.empty()
    st.session_state[_COPY] = str(path)
    return path


def _suffix(up) -> str:
    return Path(up.name).suffix.lower() or ".csv"


@st.fragment(run_every=uploads.HEARTBEAT_S)
def _heartbeat() -> None:
    """While the form is open, its copy is still wanted (ulr.data.uploads.sweep)."""
    uploads.touch(st.session_state.get(_COPY))


def _peek(up) -> dict:
    """The file's columns and auto-mapping (or its refusal), read once per uploaded file.

    Kept in the session so that re-runs need no copy once it was loaded or refused.
    """
    fid = _upload_id(up)
    peek = st.session_state.get(_PEEK)
    if peek is None or peek["fid"] != fid:
        try:
            with uploads.in_use(_upload_copy(up)) as path:
                columns, auto = ingest.peek_columns(path, up.name)
            peek = {"fid": fid, "columns": columns, "auto": auto, "error": None}
        except UlrError as exc:
            peek = {"fid": fid, "columns": None, "auto": None, "error": str(exc)}
            _drop_copy()
        st.session_state[_PEEK] = peek
    return peek


def _hash_of(name: str) -> str | None:
    """The content hash of the stored dataset ``name`` (None when there is none)."""
    try:
        return catalog.get_dataset(ui.cursor(), name).content_hash
    except UlrError:
        return None


_CHECK = ui.keys.MAPPING_CHECK


def _checked(up, mapping) -> tuple:
    """``(issues, refusal)`` of the mapping on the upload's first rows, kept in the session
    per file and mapping (a re-run that changed nothing else asks DuckDB nothing)."""
    key = (_upload_id(up), repr(mapping))
    hit = st.session_state.get(_CHECK)
    if hit is None or hit[0] != key:
        try:
            with uploads.in_use(_upload_copy(up)) as copy:
                hit = (key, check_mapping(copy, mapping, file_name=up.name), None)
        except UlrError as exc:
            hit = (key, (), str(exc))
        st.session_state[_CHECK] = hit
    return hit[1], hit[2]


def _show_check(up, build, name: str, replace: bool) -> bool:
    """What Load would meet, said before it is pressed: the mapping's problems on the file
    (one sentence each), and a name that is taken. False when the mapping cannot be loaded
    at all (Load is then disabled)."""
    try:
        issues, refusal = _checked(up, build())
    except UlrError as exc:  # the form's own values do not make a mapping
        issues, refusal = (), str(exc)
    if refusal:
        st.error(f"This mapping cannot be loaded: {ui.literal(refusal)}", icon=":material/block:")
    for issue in issues:
        st.warning(f"Check the mapping: {ui.literal(issue.message)}", icon=":material/warning:")
    if not issues and not refusal:
        st.caption("The mapping fits the file's first rows.")
    name = catalog.normal_name(name)  # as it would be stored
    try:
        taken = catalog.get_dataset(ui.cursor(), name) if name else None
    except UlrError:
        taken = None
    twin = catalog.look_alike(ui.cursor(), name) if taken is None else None
    if twin is not None:
        st.warning(f"The name “{ui.shown(name)}” reads like the stored dataset "
                   f"“{ui.shown(twin)}” (they differ only by case, spaces or "
                   "look-alike characters): choose a clearly different name.",
                   icon=":material/warning:")
        return False
    if taken is not None:
        theirs = taken.refusal(ui.identity(), "replace")
        if theirs:
            st.warning(f"A dataset named “{ui.shown(name)}” exists already. "
                       f"{ui.literal(theirs)} Choose another "
                       "name.", icon=":material/warning:")
            return False
        just_stored = (st.session_state.get(ui.keys.LAST_LOAD) or {}).get("dataset") == name
        if not replace and not just_stored:  # after a Load, "Stored …" says it once
            st.info(f"You have a dataset named “{ui.shown(name)}” already: choose another "
                    "name, or tick “Replace a dataset with the same name”.")
    return not refusal


def _load_upload(up, mapping, name: str, skip: bool, replace: bool):
    """Load the upload; its copy is deleted whether it was stored or refused."""
    try:
        with st.status(f"Loading {ui.shown(up.name)}…", expanded=False) as status:
            old = _hash_of(name) if replace else None
            with uploads.in_use(_upload_copy(up)) as copy:
                res = ingest.load_log(copy, name, cur=ui.cursor(), mapping=mapping(),
                                     skip_bad_rows=skip, replace=replace, file_name=up.name,
                                     actor=ui.identity())
            ui.forget(old)
            status.update(label=f"Stored “{ui.shown(res.dataset)}”: {res.rows:,} rows",
                          state="complete")
    except Refused as exc:
        st.error(f"Not loaded: {ui.literal(exc)}"
                 + (f" To do so, {CONTROL_OF[exc.option]}." if exc.option in CONTROL_OF else ""))
        return None
    except UlrError as exc:
        st.error(f"Not loaded: {ui.literal(exc)}")
        return None
    finally:
        _drop_copy()
    return res


@st.fragment
def _mapping_step(up, peek: dict) -> None:
    """The mapping, its check and Load; a change re-runs only this fragment."""
    mapping, name, skip, replace = _mapping_form(peek["columns"], peek["auto"], up.name)
    loadable = _show_check(up, mapping, name, replace)
    if st.button("Load", type="primary", key="load_btn", disabled=not loadable):
        res = _load_upload(up, mapping, name, skip, replace)
        if res is not None:
            ui.set_current(res.dataset)
            st.session_state[ui.keys.LAST_LOAD] = {"dataset": res.dataset, "rows": res.rows,
                                              "rejected": res.rejected,
                                              "warnings": [w.message for w in res.warnings]}
            st.rerun()  # the whole page: the new dataset is the current one


def upload_section() -> None:
    """The upload expander (file, mapping, its check, Load) and the last load's message.

    With sign-in configured, a visitor who is not signed in is asked to sign in first:
    every dataset belongs to whoever loaded it."""
    with st.expander("Upload a click log", expanded=False):
        if ui.identity() is None:
            st.info("Sign in to upload a click log: every dataset belongs to whoever loaded "
                    "it. You can use the stored datasets without signing in.")
            ui.sign_in_button(key="ulr_login_upload")
            return
        up = st.file_uploader("CSV or Parquet file", type=["csv", "parquet", "pq"], key="upload")
        if up is None:
            _drop_copy()  # the file was removed from the uploader
            st.session_state.pop(_PEEK, None)
            st.session_state.pop(_CHECK, None)
        else:
            _heartbeat()
            peek = _peek(up)
            if peek["error"]:
                st.error("This file cannot be read: " + ui.literal(peek["error"]))
            else:
                _mapping_step(up, peek)

    last = st.session_state.get(ui.keys.LAST_LOAD)
    if last:
        msg = f"Stored “{ui.shown(last['dataset'])}” with {last['rows']:,} rows."
        if last["rejected"]:
            msg += f" {last['rejected']:,} bad rows were skipped; download them below."
        st.success(msg)  # the mapping warnings follow, in the dataset's summary
