"""The severity sweep asks ``should_stop`` before each simulation and after each step."""

import pytest

from ulr import rankers
from ulr.errors import Cancelled


def test_sweep_stops_on_the_first_check_after_the_request():
    calls = []

    def stop_after_4():
        calls.append(1)
        return len(calls) > 4

    with pytest.raises(Cancelled):
        rankers.severity_sweep([0.0, 1.0], queries=30, sessions=600, runs=2,
                               should_stop=stop_after_4)
    assert len(calls) == 5  # the simulation of eta=1 was never started
