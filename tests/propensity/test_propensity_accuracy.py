"""The issue's "Done when" accuracy on one simulated log of 1M rows.

10 positions, eta = 1, per-session ranking noise, 10% randomized sessions
(``simulate_clicks`` defaults with 100k sessions). DLA, the slowest method, is
checked on a smaller log in test_propensity_dla.py.
"""

import numpy as np
import pytest

from ulr.data import ingest
from ulr.data.summary import true_theta
from ulr.propensity import estimate
from ulr.simulate import simulate_clicks, write_log


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory):
    sim = simulate_clicks(sessions=100_000, eta=1.0, randomized_fraction=0.1, seed=1)
    assert len(sim.df) == 1_000_000
    path = tmp_path_factory.mktemp("acc") / "sim.parquet"
    write_log(sim.df, str(path))
    return sim, ingest.open_file(path)


def test_randomization_is_exactly_the_ctr_ratio_of_randomized_rows(sim_log):
    sim, log = sim_log
    res = estimate(log, method="randomization")
    rows = sim.df[sim.df.randomized == 1]
    ctr = rows.groupby("position")["click"].mean()
    np.testing.assert_array_equal(res.theta, (ctr / ctr.loc[1]).to_numpy())


@pytest.mark.parametrize("method, tol", [
    ("em", 0.03),
    ("regression-em", 0.05),
    ("intervention-harvesting", 0.05),
])
def test_method_is_within_tolerance_of_true_theta(sim_log, method, tol):
    sim, log = sim_log
    truth = true_theta(log)
    np.testing.assert_allclose(truth, sim.theta, atol=1e-6)  # the log records it
    res = estimate(log, method=method)
    err = np.abs(res.theta - truth / truth[0])
    assert err.max() < tol, (method, err)
    assert res.rows_used == 1_000_000
