"""Small Streamlit helpers shared by the pages (UI only; no computation).

The app-wide state is the selected dataset name, ``st.session_state["dataset"]``.
It defaults to the bundled sample and follows the ``?dataset=`` URL parameter.
"""

from __future__ import annotations

import contextlib
import inspect
import datetime as _dt
import json
from pathlib import Path

import pandas as pd
import streamlit as st

from ulr import __version__, store
from ulr.errors import UlrError
from ulr.export import safe_csv_bytes

DATASET_KEY = "dataset"


def _leave_pages_folder_mode() -> None:
    """Make a deep link on a fresh server go through app.py's st.navigation.

    Streamlit treats an app with a ``pages/`` folder as a folder-navigation app
    until the entry script calls ``st.navigation``. So the very first session
    after start-up that opens ``/data?...`` runs the page without app.py (no
    dataset picker, wrong menu). Importing this module from such a page ends
    that mode and reruns, now through app.py.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - other Streamlit versions
        return
    if not PagesManager.uses_pages_directory:
        return
    PagesManager.uses_pages_directory = False
    entry = str(Path(__file__).resolve().parent.parent / "app.py")
    if not any(Path(f.filename).resolve().as_posix() == Path(entry).as_posix()
               for f in inspect.stack(0)):
        st.rerun()


_leave_pages_folder_mode()
ROOT = Path(__file__).resolve().parent.parent


def cursor():
    """This session's own DuckDB cursor (a shared connection refuses concurrent calls)."""
    cur = st.session_state.get("_ulr_cursor")
    if cur is None:
        cur = store.cursor()
        st.session_state["_ulr_cursor"] = cur
    return cur


def dataset_names() -> list[str]:
    store.ensure_sample(cur=cursor())
    return [d.name for d in store.list_datasets(cursor())]


def current_name() -> str:
    """Selected dataset; from the URL on first visit; the sample if unknown."""
    names = dataset_names()
    if DATASET_KEY not in st.session_state:
        wanted = st.query_params.get("dataset")
        if wanted is not None and wanted not in names:
            st.session_state["_ulr_flash"] = (
                f"The link names a dataset “{wanted}” that does not exist here; "
                f"showing the sample instead.")
            wanted = None
        st.session_state[DATASET_KEY] = wanted or store.SAMPLE_NAME
    if st.session_state[DATASET_KEY] not in names:
        st.session_state[DATASET_KEY] = store.SAMPLE_NAME
    return st.session_state[DATASET_KEY]


def set_current(name: str) -> None:
    st.session_state[DATASET_KEY] = name
    st.query_params["dataset"] = name


def current_log() -> store.Log:
    """The selected dataset, opened on this session's cursor."""
    return store.open_dataset(current_name(), cur=cursor())


def dataset_picker(*, where=None) -> store.Log:
    """Select box for the app-wide dataset; returns the opened log."""
    where = where or st.sidebar
    names = dataset_names()
    cur_name = current_name()
    chosen = where.selectbox("Dataset", names, index=names.index(cur_name),
                             help="Every page works on this dataset. Upload more on the Data "
                                  "page.")
    if chosen != cur_name:
        set_current(chosen)
        st.rerun()
    flash = st.session_state.pop("_ulr_flash", None)
    if flash:
        st.warning(flash)
    return current_log()


@contextlib.contextmanager
def user_errors(prefix: str = ""):
    """Show a :class:`UlrError` as a readable error box instead of a traceback."""
    try:
        yield
    except UlrError as exc:
        st.error(f"{prefix}{exc}".strip())


def download_csv(df: pd.DataFrame, file_name: str, label: str = "Download CSV",
                 *, key: str | None = None) -> None:
    """CSV download with spreadsheet-formula cells neutralized."""
    st.download_button(label, data=safe_csv_bytes(df), file_name=file_name, mime="text/csv",
                       key=key or f"dl_{file_name}")


REPORT_KEY = "report_id"


def current_report_id() -> str:
    """This session's report: the one in ``?report=`` when it exists, else the most
    recently changed saved report, else a new "Untitled report" (saved at once)."""
    from ulr import reports

    rid = st.session_state.get(REPORT_KEY)
    if rid and reports.get_info(rid) is not None:
        return rid
    wanted = st.query_params.get("report")
    info = reports.get_info(wanted) if wanted else None
    info = info or reports.latest_or_new()
    st.session_state[REPORT_KEY] = info.id
    return info.id


def set_current_report(report_id: str) -> None:
    st.session_state[REPORT_KEY] = report_id


def add_to_report(title: str, *, fig=None, table: pd.DataFrame | None = None,
                  settings: dict | None = None, caveats: list[str] | None = None,
                  evidence: dict | None = None, takeaway: str | None = None,
                  key: str) -> None:
    """An "Add to report" button that saves this result in the session's report.

    ``caveats`` are the warnings the page shows next to the result (word for
    word), ``evidence`` what it rests on (rows, clicks, queries, sessions) and
    ``takeaway`` a one-line plain-words summary (pre-filled from the result when
    empty); reports and exports carry all three. The item is written to the
    store at once with the dataset's content hash, so it survives a refresh and
    a restart, and a later change of the dataset is flagged on it.
    """
    if st.button("Add to report", key=f"report_{key}", icon=":material/post_add:"):
        from ulr import reports
        from ulr.report import ReportItem

        name = st.session_state.get(DATASET_KEY, store.SAMPLE_NAME)
        try:
            content_hash = store.get_dataset(cursor(), name).content_hash or ""
        except UlrError:
            content_hash = ""
        with user_errors("Could not add to the report: "):
            item = ReportItem.from_result(
                title, fig=fig, table=table, settings=settings, caveats=caveats,
                evidence=evidence, takeaway=takeaway or "", dataset=name,
                content_hash=content_hash)
            rid = current_report_id()
            reports.add_item(rid, item)
            n = reports.get_info(rid).items
            st.toast(f"Added “{title}” to the report ({n} item{'s' if n != 1 else ''}).")


def presentation_toggle() -> bool:
    """A sidebar link to the presentation view of this session's report.

    The old in-page "presentation mode" (CSS over the working pages) is gone:
    the Present page shows the report as slides, with its own link.
    """
    try:
        rid = st.session_state.get(REPORT_KEY)
        st.sidebar.page_link("pages/present.py", label="Present the report",
                             icon=":material/slideshow:",
                             query_params={"report": rid} if rid else None)
    except Exception:  # noqa: BLE001 - the page is not registered (e.g. AppTest of one page)
        pass
    return False


def url_param(name: str, default, *, kind=str):
    """A page setting from the shareable URL (``?name=value``), else ``default``.

    ``kind`` is ``str``, ``int``, ``float``, ``bool`` or ``list`` (comma-separated
    strings) or ``"floats"`` (comma-separated numbers). A value that does not
    parse falls back to the default.
    """
    raw = st.query_params.get(name)
    if raw is None:
        return default
    try:
        if kind == "floats":
            return [float(v) for v in raw.split(",") if v.strip()] or default
        if kind is list:
            return [v for v in raw.split(",") if v] or default
        if kind is bool:
            return raw.lower() in ("1", "true", "yes", "on")
        return kind(raw)
    except ValueError:
        return default


def url_number(name: str, default, lo, hi, *, kind=int):
    """A number from the shareable URL, or ``default`` when missing, NaN or out of [lo, hi]."""
    v = url_param(name, default, kind=kind)
    return v if lo <= v <= hi else default


def set_url_params(**values) -> None:
    """Write the page's key settings to the URL so the link reproduces the view."""
    for k, v in values.items():
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            v = ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v)
        elif isinstance(v, bool):
            v = "1" if v else "0"
        elif isinstance(v, float):
            v = f"{v:g}"
        if st.query_params.get(k) != str(v):
            st.query_params[k] = str(v)
    name = st.session_state.get(DATASET_KEY)
    if name and st.query_params.get("dataset") != name:
        st.query_params["dataset"] = name
