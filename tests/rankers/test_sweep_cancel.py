"""Rankers ask ``should_stop``: the severity sweep before each simulation and after each
step, train_and_evaluate before each fit and the evaluation."""

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
    assert len(calls) == 5  # raised on the first check that said stop


def test_train_and_evaluate_stops_between_its_fits():
    from ulr.simulate import simulate_clicks

    sim = simulate_clicks(queries=40, sessions=800, seed=2)
    calls = []

    def stop_after_1():
        calls.append(1)
        return len(calls) > 1

    with pytest.raises(Cancelled):  # after the naive fit, before the IPW fit
        rankers.train_and_evaluate(sim.df, None, sim.theta, should_stop=stop_after_1)
    assert len(calls) == 2
