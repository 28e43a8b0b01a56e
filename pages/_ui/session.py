"""This session's dataset or registered source, and its reader connection.

The app-wide state is the selected dataset name, ``st.session_state["dataset"]``.
It defaults to the bundled sample and follows the ``?dataset=`` URL parameter (on
Off-policy, ``?dataset=`` may also name that page's bundled OPE sample: :data:`OPE_SAMPLE`).
A registered source (a lake or Spark table whose statistics only are stored,
:mod:`ulr.engines.sources`) can be selected instead: ``st.session_state["source"]``
and ``?source=``. Pages that need rows get one sentence from :func:`current_log`.
"""

from __future__ import annotations

import streamlit as st

from pages._ui import keys
from pages._ui.cache import cache_data
from pages._ui.nav import ensure_app_run
from pages._ui.state import flash, show_flash
from pages._ui.widgets import dead_end
from ulr.data import catalog, ingest
from ulr.data.log import Log
from ulr.errors import UlrError
from ulr.text import literal, shown

DATASET_KEY = keys.DATASET
SOURCE_KEY = keys.SOURCE
# Off-policy's name in ``?dataset=`` for its bundled OPE sample (data/sample_ope.csv): a log
# that page can evaluate but no stored dataset, so a link naming it selects no dataset here.
OPE_SAMPLE = "bundled-ope-sample"


def cursor():
    """This session's own reader connection on the store (see :func:`ulr.data.catalog.cursor`)."""
    ensure_app_run()
    cur = st.session_state.get(keys.CURSOR)
    if cur is None:
        cur = catalog.cursor()
        st.session_state[keys.CURSOR] = cur
    return cur


def dataset_names() -> list[str]:
    """The stored datasets, read fresh (the CLI or another session may have changed them)."""
    names = [d.name for d in catalog.list_datasets(cursor())]
    if ingest.SAMPLE_NAME not in names:
        ingest.ensure_sample(cur=cursor())
        names = [d.name for d in catalog.list_datasets(cursor())]
    return names


def _deleted_elsewhere(name: str) -> None:
    st.session_state[DATASET_KEY] = ingest.SAMPLE_NAME
    flash(f"The dataset “{shown(name)}” was deleted in another session; showing the sample.")


def current_name() -> str:
    """Selected dataset; from the URL on first visit; the sample if unknown."""
    ensure_app_run()
    names = dataset_names()
    if DATASET_KEY not in st.session_state:
        wanted = st.query_params.get("dataset")
        if wanted == OPE_SAMPLE and wanted not in names:
            wanted = None
        if wanted is not None and wanted not in names:
            flash(f"The link names a dataset “{shown(wanted)}” that does not exist here; "
                  f"showing the sample instead.")
            wanted = None
        st.session_state[DATASET_KEY] = wanted or ingest.SAMPLE_NAME
    if st.session_state[DATASET_KEY] not in names:
        _deleted_elsewhere(st.session_state[DATASET_KEY])
    return st.session_state[DATASET_KEY]


def set_current(name: str) -> None:
    st.session_state[DATASET_KEY] = name
    st.session_state[SOURCE_KEY] = None
    st.query_params["dataset"] = name
    if "source" in st.query_params:
        del st.query_params["source"]


def source_names() -> list[str]:
    """The registered sources, read fresh (the CLI may have added one)."""
    from ulr.engines import sources
    return [s["name"] for s in sources.list_sources()]


def current_source() -> str | None:
    """The registered source selected instead of a dataset (from ``?source=`` on first
    visit), or None. A source removed elsewhere falls back to the dataset, with a sentence."""
    ensure_app_run()
    if SOURCE_KEY not in st.session_state:
        wanted = st.query_params.get("source")
        st.session_state[SOURCE_KEY] = None
        if wanted is not None:
            if wanted in source_names():
                st.session_state[SOURCE_KEY] = wanted
            else:
                flash(f"The link names a registered source “{shown(wanted)}” that does not "
                      "exist here; showing a dataset instead.")
        return st.session_state[SOURCE_KEY]
    name = st.session_state[SOURCE_KEY]
    if name is not None and name not in source_names():
        st.session_state[SOURCE_KEY] = None
        flash(f"The registered source “{shown(name)}” was removed elsewhere; showing a dataset "
              "instead.")
    return st.session_state[SOURCE_KEY]


def set_current_source(name: str) -> None:
    st.session_state[SOURCE_KEY] = name
    st.query_params["source"] = name


NEEDS_ROWS = ("“{name}” is a registered source whose rows stay where they live, and this page "
              "needs the rows themselves (Position bias and the Data page work from its stored "
              "statistics): pick a dataset in the sidebar, or upload a sample of the log on the "
              "Data page.")


def needs_rows(name: str) -> None:
    """The one sentence a page that needs rows shows for a registered source; stops the page."""
    dead_end(NEEDS_ROWS.format(name=shown(name)), label="Upload a sample on the Data page",
             level="info")
    st.stop()


def current_log() -> Log:
    """The selected dataset, opened on this session's cursor.

    A dataset deleted by another session falls back to the sample, with a sentence.
    With a registered source selected, the page says that it needs rows and stops.
    """
    src = current_source()
    if src is not None:
        needs_rows(src)
    name = current_name()
    try:
        return catalog.open_dataset(name, cur=cursor())
    except UlrError:
        if name == ingest.SAMPLE_NAME:
            raise
        _deleted_elsewhere(name)
        show_flash()
        return catalog.open_dataset(ingest.SAMPLE_NAME, cur=cursor())


def wait_notice():
    """An ``on_wait`` callback for :func:`ulr.data.catalog.waiting`: one notice per script run."""
    shown = []

    def on_wait(seconds: float) -> None:
        if not shown and seconds > 0.3:
            shown.append(True)
            st.toast("Waiting for another load to finish…", icon=":material/hourglass_top:")
    return on_wait


def dataset_picker(*, where=None) -> Log | None:
    """Select box for the app-wide dataset or registered source; returns the opened log
    (None when a registered source is selected)."""
    where = where or st.sidebar
    choices = {n: ("dataset", n) for n in dataset_names()}  # label -> what it selects
    for n in source_names():
        label = f"{n} (registered source)"
        while label in choices:  # a dataset named like a source's label
            label += " "
        choices[label] = ("source", n)
    src = current_source()
    current = ("source", src) if src is not None else ("dataset", current_name())
    labels = list(choices)
    chosen = choices[where.selectbox(
        "Dataset", labels, index=list(choices.values()).index(current),
        help="Every page works on this dataset. Upload more, or register a Parquet lake or "
             "Spark table, on the Data page.")]
    if chosen != current:
        if chosen[0] == "source":
            set_current_source(chosen[1])
        else:
            set_current(chosen[1])
        st.rerun()
    show_flash()
    return None if src is not None else current_log()


@cache_data(show_spinner=False, max_entries=64)
def _mapping_warnings(content_hash: str, name: str) -> tuple:
    from ulr.lists import mapping_warnings
    return mapping_warnings(catalog.open_dataset(name, cur=cursor()))


def mapping_warnings(log) -> tuple:
    """The mapping checks of a stored dataset (docs/verdicts.md §3), cached per content."""
    try:
        return _mapping_warnings(log.info.content_hash or "", log.info.name)
    except UlrError:
        return ()


@cache_data(show_spinner=False, max_entries=64)
def _page_methods(content_hash: str, name: str) -> tuple:
    from ulr import audit
    return tuple(audit.page_methods(audit.read_shape(catalog.open_dataset(name, cur=cursor()))))


def page_methods(log) -> list[str]:
    """The position-bias methods a page opens with on this dataset: those the audit finds
    it supports (:func:`ulr.audit.page_methods`), cached per content; never a dead end."""
    try:
        return list(_page_methods(log.info.content_hash or "", log.info.name))
    except UlrError:
        return ["em"]


def mapping_stops(log, analysis: str, what: str) -> bool:
    """Say which mapping warning stops ``analysis`` and link to the mapping; True if stopped."""
    from ulr.lists import blocking
    stops = blocking(mapping_warnings(log), analysis)
    for w in stops:
        if w.code == "randomization_contradicted":
            dead_end(f"{what} needs lists shown in random order, and this log's data say "
                     f"otherwise: {literal(w.message)}",
                     label="Review the randomized rows on the Data page")
        else:
            dead_end(f"{what} needs shown lists, and this log's mapping does not group them: "
                     f"{literal(w.message)}", label="Fix the mapping on the Data page")
    return bool(stops)
