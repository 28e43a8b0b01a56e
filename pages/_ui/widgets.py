"""Widgets the pages share: error boxes, downloads, dead ends, verdict badges, and the
``should_stop`` that ends ulr's long loops with the script run."""

from __future__ import annotations

import contextlib

import pandas as pd
import streamlit as st

from pages._ui.nav import ensure_app_run
from ulr.errors import Cancelled, UlrError
from ulr.export import safe_csv_bytes


@contextlib.contextmanager
def user_errors(prefix: str = ""):
    """Show a :class:`UlrError` as a readable error box instead of a traceback."""
    ensure_app_run()
    try:
        yield
    except UlrError as exc:
        st.error(f"{prefix}{exc}".strip())


def download_csv(df: pd.DataFrame, file_name: str, label: str = "Download CSV",
                 *, key: str | None = None) -> None:
    """CSV download with spreadsheet-formula cells neutralized, written when it is clicked
    (a page draws many tables; encoding each on every run cost more than drawing it)."""
    st.download_button(label, data=lambda: safe_csv_bytes(df), file_name=file_name,
                       mime="text/csv", key=key or f"dl_{file_name}", on_click="ignore")


@contextlib.contextmanager
def cancellable():
    """A ``should_stop`` for ulr's long loops that ends with this script run.

    Streamlit ends a session's script run when its tab closes, when the visitor
    changes a control (a new run of the session) and when the server shuts down:
    it raises from the next ``st.*`` call. ulr's loops make no such call, so
    ``should_stop`` makes one that shows nothing (a ``st.session_state`` lookup).
    When Streamlit raises there, ``should_stop`` keeps its exception and says
    yes; ulr then raises :class:`ulr.errors.Cancelled`, and leaving this block
    raises Streamlit's exception again, so the run ends (or reruns) the way
    Streamlit meant::

        with ui.cancellable() as stop:
            result = propensity.estimate(log, ..., should_stop=stop)

    A cached function takes it as an unhashed argument (``_should_stop``).
    """
    pending: list[BaseException] = []

    def should_stop() -> bool:
        if pending:
            return True
        try:
            "_ulr_alive" in st.session_state  # noqa: B015 - a Streamlit check point
        except BaseException as exc:  # noqa: BLE001 - Streamlit's stop or rerun request
            pending.append(exc)
            return True
        return False

    try:
        yield should_stop
    except Cancelled:
        if pending:
            raise pending[0] from None
        raise


def dead_end(sentence: str, *, link: str = "pages/data.py",
             label: str = "Fix it in the Data page's column mapping", level: str = "warning"):
    """One sentence on what is missing, and a link to where it is fixed (byol, #11)."""
    getattr(st, level)(sentence)
    try:
        st.page_link(link, label=label, icon=":material/arrow_forward:")
    except Exception:  # a page run on its own (no navigation): name the place instead
        st.caption(f"→ {label}")


# ---------------------------------------------------------------- verdicts (docs/verdicts.md)

VERDICT_COLORS = {"reliable": "green", "directional": "orange", "inconclusive": "gray",
                  "invalid": "red"}
VERDICT_ICONS = {"reliable": ":material/check_circle:", "directional": ":material/trending_up:",
                 "inconclusive": ":material/help:", "invalid": ":material/block:"}


def show_verdict(v, *, key: str | None = None) -> None:
    """The result's verdict first: a badge with its level, the one-sentence takeaway,
    and (folded) the reasons and what would settle it."""
    with st.container(key=f"verdict_{key}" if key else None):
        st.badge(v.label, icon=VERDICT_ICONS[v.level], color=VERDICT_COLORS[v.level])
        st.markdown(f"**{v.takeaway}**")
        if v.reasons or v.to_settle:
            with st.expander("Why this verdict"):
                for r in v.reasons:
                    st.markdown(f"- {r.message}")
                if v.to_settle:
                    st.markdown(f"To settle it: {v.to_settle}.")
