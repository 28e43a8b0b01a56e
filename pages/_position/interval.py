"""The Position bias page's interval control: how em forms its interval (its Fisher
information, the default, or bootstrap replicates), for the methods that offer a choice."""

import streamlit as st

from pages import _ui as ui
from ulr import propensity
from ulr.propensity.registry import INTERVALS


def chosen(method: str, interval: str | None) -> str | None:
    """The interval chosen for the methods that offer it; None (their own) for the others."""
    return interval if interval in propensity.REGISTRY[method].intervals else None


def control(methods) -> str | None:
    """A radio for the first picked method that offers several intervals (None: none does);
    its value is read from the link's ``interval`` and written back by the caller."""
    choosers = [m for m in methods if len(propensity.REGISTRY[m].intervals) > 1]
    if not choosers:
        return None
    kinds = propensity.REGISTRY[choosers[0]].intervals
    return st.radio(
        f"{', '.join(choosers)}'s interval", kinds,
        index=ui.url_index("interval", kinds, kinds[0]), key="pb_interval",
        horizontal=True, format_func=lambda k: INTERVALS[k][0].upper() + INTERVALS[k][1:],
        help="The Fisher information of the fit: no replicates, nominal coverage when the "
             "position-based model holds. Bootstrap replicates: resample sessions (the "
             "number above), which stays right when clicks in a session depend on each "
             "other.")
