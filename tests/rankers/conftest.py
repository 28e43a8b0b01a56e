"""Shared by the tests of ulr.rankers."""

import pytest


def _randomization_theta(df):
    """Relative theta from the randomized sessions: CTR per position / CTR at 1.

    Under the PBM with uniformly shuffled lists, E[click | position k] = theta_k * mean(gamma).
    Add-one smoothing keeps tiny logs away from 0.
    """
    g = df[df["randomized"] == 1].groupby("position")["click"].agg(["sum", "count"]).sort_index()
    ctr = ((g["sum"] + 1) / (g["count"] + 2)).to_numpy()
    return ctr / ctr[0]


@pytest.fixture
def randomization_theta():
    """The CTR-ratio theta of :func:`_randomization_theta` (an independent, obvious estimator)."""
    return _randomization_theta
