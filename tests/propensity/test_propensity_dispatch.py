"""The estimate() dispatcher: validation and notes common to every method."""

from pathlib import Path

import pytest

from ulr import propensity, store
from ulr.errors import UlrError

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_clicks.csv"


@pytest.fixture(scope="module")
def log():
    return store.open_file(SAMPLE)


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
