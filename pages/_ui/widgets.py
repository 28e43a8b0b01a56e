"""Widgets the pages share: error boxes, downloads, dead ends, verdict badges, the
``should_stop`` that ends ulr's long loops with the script run, and the progress box of
several methods."""

from __future__ import annotations

import contextlib
import time

import pandas as pd
import streamlit as st

from pages._ui import keys
from pages._ui.cache import cached_only
from pages._ui.nav import ensure_app_run
from ulr.errors import Cancelled, UlrError
from ulr.export import safe_csv_bytes
from ulr.quantity import show
from ulr.text import literal, shown


def dataframe(data, **kwargs):
    """``st.dataframe`` with a missing cell drawn empty, as the exports and ``theme.styled``
    show it. Streamlit's grid draws a null cell as a grey "None" whatever a Styler's display
    text for it says; ``placeholder`` is its text for a missing value."""
    return st.dataframe(data, placeholder="", **kwargs)


@contextlib.contextmanager
def user_errors(prefix: str = ""):
    """Show a :class:`UlrError` as a readable error box instead of a traceback."""
    ensure_app_run()
    try:
        yield
    except UlrError as exc:
        st.error(f"{prefix}{literal(exc)}".strip())


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
            keys.ALIVE in st.session_state  # noqa: B015 - a Streamlit check point
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
        st.markdown(f"**{literal(v.takeaway)}**")
        if v.reasons or v.to_settle:
            with st.expander("Why this verdict"):
                for r in v.reasons:
                    st.markdown(f"- {literal(r.message)}")
                if v.to_settle:
                    st.markdown(f"To settle it: {literal(v.to_settle)}.")


def run_methods(label: str, methods: list[str], estimate, *,
                running: str) -> tuple[list, dict]:
    """Run ``estimate(method, should_stop)`` for each method inside one status box
    ("{running} on {label}…"); ``estimate`` returns ``("ok", result)`` or
    ``("error", reason)``. Returns the results and the failures by method.

    When every method's result is cached already (another visit computed it), the
    results are drawn at once under a box of the same look, without a status box's
    pauses. The work stops within one loop step when this script run ends (tab
    closed, a control changed, server shutting down): :func:`cancellable`.
    """
    held = [cached_only(lambda m=m: estimate(m, None)) for m in methods]
    if all(hit for hit, _ in held):
        outcomes = [(m, value, None) for m, (_, value) in zip(methods, held)]
        results, failures = _outcomes(outcomes)
        with st.expander(_done_label(label, results, methods),
                         icon=":material/error:" if not results else ":material/check:"):
            _outcome_lines(outcomes)
        return results, failures
    outcomes = []
    with cancellable() as stop, \
            st.status(f"{running} on '{shown(label)}'…", expanded=False) as status:
        bar = st.progress(0.0)
        for i, method in enumerate(methods):
            bar.progress(i / len(methods), text=f"{method} ({i + 1} of {len(methods)})")
            t0 = time.perf_counter()
            outcomes.append((method, estimate(method, stop), time.perf_counter() - t0))
            _outcome_lines(outcomes[-1:])
        bar.progress(1.0, text="done")
        results, failures = _outcomes(outcomes)
        status.update(label=_done_label(label, results, methods),
                      state="error" if not results else "complete")
    return results, failures


def _outcomes(outcomes) -> tuple[list, dict]:
    """The results, and the failures by method, of ``(method, (kind, value), took)``."""
    results = [value for _, (kind, value), _ in outcomes if kind == "ok"]
    failures = {m: value for m, (kind, value), _ in outcomes if kind != "ok"}
    return results, failures


def _outcome_lines(outcomes) -> None:
    """One line per method: its time, and whether it was computed before (``took`` is
    None, or well under the time the result records)."""
    for method, (kind, value), took in outcomes:
        if kind == "ok":
            before = took is None or took < 0.5 * value.seconds
            st.write(f"**{method}**: done in {show('duration', value.seconds)}"
                     + (" (cached)" if before else ""))
        else:
            st.write(f"**{method}**: cannot run on this log")


def _done_label(label: str, results: list, methods: list) -> str:
    return f"Estimated {len(results)} of {len(methods)} methods on '{shown(label)}'"
