"""What a session remembers across reruns: flash messages and the last submitted settings.

Every key is a name of :mod:`pages._ui.keys`.
"""

from __future__ import annotations

import streamlit as st

from pages._ui import keys


def flash(message: str, *, at: str = keys.FLASH) -> None:
    """Show ``message`` on a later run, where :func:`show_flash` with the same ``at`` draws
    it: it survives the rerun a callback or ``st.rerun()`` starts. A newer one replaces it."""
    st.session_state[at] = message


def show_flash(at: str = keys.FLASH, *, kind: str = "warning", where=None) -> bool:
    """Draw the message waiting at ``at`` once (``st.warning``, or ``kind`` ``success`` /
    ``info`` / ``error``) in ``where`` (default: the page); False when there is none."""
    message = st.session_state.pop(at, None)
    if message:
        getattr(where or st, kind)(message)
    return bool(message)


def submitted(form: str, settings=None):
    """The last settings ``form`` completed with in this session (None before the first).

    Call it with ``settings`` once the work they asked for is done (not when it failed or
    was stopped), and without them to read; either way it returns the last ones.
    """
    if settings is not None:
        st.session_state[keys.SUBMITTED + form] = settings
    return st.session_state.get(keys.SUBMITTED + form)
