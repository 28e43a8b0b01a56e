"""The app's navigation: the page list app.py builds ``st.navigation`` from, and the
hand-over of a page that Streamlit ran straight from the ``pages/`` folder."""

from __future__ import annotations

import inspect
from pathlib import Path

import streamlit as st

from pages._ui import keys

# The app's pages, in menu order: (file, title, icon, default). app.py builds st.navigation from them.
PAGES = [
    ("pages/home.py", "Home", ":material/home:", True),
    ("pages/data.py", "Data", ":material/table:", False),
    ("pages/audit.py", "Log audit", ":material/fact_check:", False),
    ("pages/position_bias.py", "Position bias", ":material/trending_down:", False),
    ("pages/user_models.py", "User models", ":material/psychology:", False),
    ("pages/compare_rankers.py", "Compare rankers", ":material/leaderboard:", False),
    ("pages/severity_sweep.py", "Severity sweep", ":material/ssid_chart:", False),
    ("pages/bandit_lab.py", "Bandit lab", ":material/casino:", False),
    ("pages/off_policy.py", "Off-policy evaluation", ":material/rule:", False),
    ("pages/debiased_recs.py", "Debiased recommendation", ":material/recommend:", False),
    ("pages/report.py", "Report", ":material/description:", False),
    ("pages/present.py", "Present", ":material/slideshow:", False),
]
# Pages reached by a link (the Severity sweep page's) but not listed in the menu: Streamlit
# folds a menu of more than 12 pages behind "View more", which would hide Report and Present.
LINKED_PAGES = [("pages/debiasing_study.py", "Debiasing study", ":material/science:")]
APP = Path(__file__).resolve().parents[2] / "app.py"
_APP_SEEN = keys.APP_SEEN


def navigation():
    """The app's ``st.navigation`` (called by app.py once per run)."""
    st.session_state[_APP_SEEN] = True
    return st.navigation([st.Page(str(APP.parent / f), title=t, icon=i, default=d)
                          for f, t, i, d in PAGES]
                         + [st.Page(str(APP.parent / f), title=t, icon=i, visibility="hidden")
                            for f, t, i in LINKED_PAGES])


def _in_folder_mode_run() -> bool:
    """True when Streamlit ran this page from the ``pages/`` folder instead of through app.py.

    Streamlit serves an app that has a ``pages/`` folder by the folder until the
    entry script has called ``st.navigation`` once; so the first visitors of a
    fresh server who open a deep link (``/position_bias?...``) get the page run
    on its own (no dataset picker, wrong menu). Such a run has Streamlit's
    folder runner on the stack and not app.py.
    """
    frame = inspect.currentframe()
    folder_runner = False
    while frame is not None:
        code = frame.f_code
        if code.co_filename == str(APP):
            return False
        # Streamlit (1.67) offers no public way to tell a page run straight from the
        # ``pages/`` folder: st.context has no page or navigation field, and a page's
        # ``__name__`` is "__page__" either way. So this reads the name of Streamlit's
        # private folder runner, ``_mpa_v1`` (streamlit/runtime/scriptrunner).
        folder_runner = folder_runner or code.co_name == "_mpa_v1"
        frame = frame.f_back
    return folder_runner


def ensure_app_run() -> None:
    """Hand a page run from the ``pages/`` folder over to app.py (public API only).

    ``st.navigation`` ends the folder mode for the whole server, and ``st.rerun``
    runs this session again, now through app.py's navigation, on the same page
    and URL. Only a session's first run is handed over (a later folder-mode run
    happens only under AppTest, which starts every run in folder mode; a rerun
    there would drop the widget event). Called at the start of the helpers every
    page uses, never at import time (an exception while a module is imported
    breaks concurrent imports).
    """
    if not st.session_state.get(_APP_SEEN) and _in_folder_mode_run():
        navigation()
        st.rerun()


ROOT = APP.parent
