"""Shared helpers of the click-model tests."""

import numpy as np

from ulr.clickmodels.sessions import Sessions


def sessions_of(log, *, test_every: int = 0) -> Sessions:
    """Session matrices of a simulated log; every ``test_every``-th session held out."""
    d = log.df if hasattr(log, "df") else log
    test = (d.session_id % test_every == 0) if test_every else np.zeros(len(d), dtype=bool)
    return Sessions.from_rows(d.session_id, d.doc_id, d.position, d.click, test)
