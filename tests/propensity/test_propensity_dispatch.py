"""The estimate() dispatcher: validation and notes common to every method."""

from pathlib import Path

import pytest

from ulr import propensity

from ulr.data import ingest
from ulr.errors import UlrError

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_clicks.csv"


@pytest.fixture(scope="module")
def log():
    return ingest.open_file(SAMPLE)


@pytest.mark.parametrize("method", ["em", "intervention-harvesting"])
def test_assume_randomized_is_noted_once_for_other_methods(log, method):
    notes = propensity.estimate(log, method=method, assume_randomized=True).notes
    assert sum("only affects the randomization method" in n for n in notes) == 1
    plain = propensity.estimate(log, method=method).notes
    assert not any("assume_randomized" in n for n in plain)


def test_randomization_uses_the_flag_without_that_note(log):
    notes = propensity.estimate(log, method="randomization", assume_randomized=True).notes
    assert not any("only affects" in n for n in notes)


def test_bad_arguments(log):
    with pytest.raises(UlrError, match="unknown propensity method"):
        propensity.estimate(log, method="nope")
    with pytest.raises(UlrError, match="bootstrap must be"):
        propensity.estimate(log, method="em", n_bootstrap=1)


def _lacking(df, what):
    """The simulated log without what a method may need."""
    if what == "randomized":
        return df.assign(randomized=0)
    if what == "features":
        return df.drop(columns=[c for c in df if c.startswith("feature_")])
    return df.drop(columns=["session_id"])


@pytest.mark.parametrize("method", propensity.METHODS)
def test_the_registry_declares_what_each_method_needs(method, open_df):
    """REGISTRY is what the page and the CLI read: every declared need is a typed refusal
    on a log that lacks it, every need not declared is not (the method still runs)."""
    from ulr.errors import NeedsFeatures, NeedsRandomizedRows, NeedsSessions
    from ulr.simulate import simulate_clicks
    spec = propensity.REGISTRY[method]
    df = simulate_clicks(queries=40, positions=4, sessions=2000, randomized_fraction=0.5,
                         features=2, seed=3).df
    for what, error in (("randomized", NeedsRandomizedRows), ("features", NeedsFeatures),
                        ("sessions", NeedsSessions)):
        log = open_df(_lacking(df, what), f"{what}.parquet")
        if getattr(spec, what):
            with pytest.raises(error) as err:
                propensity.estimate(log, method=method, positions=4)
            assert err.value.field in ("randomized", "feature_*", "session_id")
        else:
            assert propensity.estimate(log, method=method, positions=4).theta[0] == 1.0
    assert spec.cells_only == (method in propensity.CELL_METHODS)
    if spec.randomized or spec.features or spec.sessions:
        assert spec.rows is not None              # what it needs is said on the source path
