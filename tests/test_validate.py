"""ulr.validate: one rule for level, n_bootstrap and seed, applied by every package."""

import numpy as np
import pytest

from ulr import metrics, propensity, stats, validate
from ulr.errors import UlrError
from ulr.validate import BadOption


@pytest.mark.parametrize("value", [0.5, 0.9, 0.95, 1e-9, 1 - 1e-9, np.float64(0.9)])
def test_level_accepts_numbers_strictly_inside_0_1(value):
    assert validate.level(value) == float(value)


@pytest.mark.parametrize("value", [0, 1, -0.1, 1.5, float("nan"), float("inf"), True, "x", None])
def test_level_refuses_the_rest(value):
    with pytest.raises(BadOption, match="level must lie strictly between 0 and 1") as err:
        validate.level(value)
    assert err.value.option == "level" and isinstance(err.value, UlrError)


@pytest.mark.parametrize("value, required, ok", [
    (0, False, True), (0, True, False), (1, False, False), (2, False, True),
    (2, True, True), (10_000, False, True), (10_001, False, False), (-1, False, False),
    (2.0, False, True), (2.5, False, False), (True, False, False), ("3", False, False),
    (np.int64(50), True, True)])
def test_n_bootstrap_is_0_or_2_to_10000(value, required, ok):
    if ok:
        assert validate.n_bootstrap(value, required=required) == int(value)
    else:
        with pytest.raises(BadOption) as err:
            validate.n_bootstrap(value, required=required, option="--bootstrap")
        assert err.value.option == "--bootstrap" and str(err.value).startswith("--bootstrap ")


@pytest.mark.parametrize("value, ok", [(0, True), (7, True), (2**40, True), (-1, False),
                                       (1.5, False), (False, False)])
def test_seed_is_a_whole_number_from_0(value, ok):
    if ok:
        assert validate.seed(value) == value
    else:
        with pytest.raises(BadOption):
            validate.seed(value)


def _metric():
    return metrics.ndcg([1, 0, 2, 0, 1, 0], [0.9, 0.1, 0.8, 0.3, 0.2, 0.4],
                        query_ids=[1, 1, 2, 2, 3, 3])


@pytest.mark.parametrize("call", [
    lambda lv, b: metrics.bootstrap_ci(_metric(), n_bootstrap=b, level=lv),
    lambda lv, b: metrics.paired_test(_metric(), _metric(), n_bootstrap=b, level=lv),
    lambda lv, b: stats.wilson_interval(3, 10, level=lv),
], ids=["bootstrap_ci", "paired_test", "wilson"])
def test_every_package_refuses_the_same_values(call):
    """The same bad level is refused the same way everywhere (one rule, one type)."""
    with pytest.raises(BadOption, match="level must lie strictly between 0 and 1"):
        call(1.0, 100)


def test_the_estimators_and_metrics_share_the_bootstrap_rule(open_df):
    from ulr.simulate import simulate_clicks
    log = open_df(simulate_clicks(queries=20, positions=3, sessions=300, seed=1).df)
    for bad in (1, -2, 10_001):
        with pytest.raises(BadOption, match="n_bootstrap must be 0 \\(no interval\\) or "):
            propensity.estimate(log, method="em", n_bootstrap=bad)
        with pytest.raises(BadOption, match="n_bootstrap must be between 2 and"):
            metrics.bootstrap_ci(_metric(), n_bootstrap=bad)
    with pytest.raises(BadOption, match="seed must be 0 or more"):
        propensity.estimate(log, method="em", seed=-1)
