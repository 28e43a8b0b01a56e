import pytest

from ulr.simulate import simulate_click_model


@pytest.fixture(scope="session")
def simulated():
    """``simulated(model, sessions, queries, seed)``, cached for the test session."""
    cache = {}

    def get(model, sessions=10000, queries=10, seed=1, docs=10):
        key = (model, sessions, queries, seed, docs)
        if key not in cache:
            cache[key] = simulate_click_model(model, sessions=sessions, queries=queries,
                                              positions=docs, seed=seed)
        return cache[key]
    return get
