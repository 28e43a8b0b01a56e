"""The audit's real-shaped logs, made once per test module (small: seconds, not minutes)."""

import pytest


@pytest.fixture(scope="module")
def rec_log(tmp_path_factory):
    """Recommendation log: per-slot propensities, features, two loggers, no sessions."""
    from ulr.audit import logs
    return logs.recommendation_log(tmp_path_factory.mktemp("rec") / "recs.csv", sessions=1500)


@pytest.fixture(scope="module")
def search_log(tmp_path_factory):
    """Web-search log: sessions, a fifth randomized, no propensities, no features."""
    from ulr.audit import logs
    return logs.search_log(tmp_path_factory.mktemp("search") / "search.csv", sessions=1500,
                           queries=300)
