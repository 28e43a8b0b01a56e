import numpy as np
import pytest

from ulr.clickmodels.sessions import Sessions
from ulr.simulate import simulate_click_model


def sessions_of(log, *, test_every: int = 0) -> Sessions:
    d = log.df if hasattr(log, "df") else log
    test = (d.session_id % test_every == 0) if test_every else np.zeros(len(d), dtype=bool)
    return Sessions.from_rows(d.session_id, d.doc_id, d.position, d.click, test)


@pytest.fixture(scope="session")
def simulated():
    """``simulated(model, sessions, queries, seed)``, cached for the test session."""
    cache = {}

    def get(model, sessions=10000, queries=10, seed=1, docs=10):
        key = (model, sessions, queries, seed, docs)
        if key not in cache:
            cache[key] = simulate_click_model(model, sessions=sessions, queries=queries,
                                              docs_per_query=docs, seed=seed)
        return cache[key]
    return get
