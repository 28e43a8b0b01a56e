"""Cancellation: ``should_stop`` is asked in every long loop, and True stops the work at once.

Each test counts the checks; a stop requested after ``n`` checks must raise
:class:`ulr.errors.Cancelled` on check ``n + 1`` (never later, never swallowed).
"""

from pathlib import Path

import numpy as np
import pytest

from ulr import propensity

from ulr.data import ingest
from ulr.errors import Cancelled, UlrError
from ulr.propensity import bootstrap as bs, dla, em, regression_em
from ulr.data.scan import cell_stats, scan_of

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_clicks.csv"


class StopAfter:
    """``should_stop`` that says yes from its (n + 1)-th call on; counts its calls."""

    def __init__(self, n: int | None):
        self.n, self.calls = n, 0

    def __call__(self) -> bool:
        self.calls += 1
        return self.n is not None and self.calls > self.n


@pytest.fixture(scope="module")
def scan():
    return scan_of(ingest.open_file(SAMPLE))


def _stops_on_first_check(run, n=2):
    stop = StopAfter(n)
    with pytest.raises(Cancelled):
        run(stop)
    assert stop.calls == n + 1  # raised on the first check that said stop


def test_cancelled_is_not_a_user_error():
    assert not issubclass(Cancelled, UlrError)  # a result cache must not keep it


def test_bootstrap_replicates(scan):
    fits = []

    def fit(w):
        fits.append(1)
        return np.ones(3)
    _stops_on_first_check(lambda s: bs.replicate(fit, n_groups=8, n_bootstrap=10, seed=0,
                                                 should_stop=s))
    assert len(fits) == 2
    _stops_on_first_check(lambda s: bs.replicate(lambda w: np.ones((len(w), 3)), n_groups=8,
                                                 n_bootstrap=10, seed=0, batch=3, should_stop=s))


def test_em_iterations(scan):
    stats = cell_stats(scan, groups=True)
    _stops_on_first_check(lambda s: em.pbm_em(stats, should_stop=s))
    w = np.ones((2, stats.groups.n_groups))
    _stops_on_first_check(lambda s: em.pbm_em_replicates(stats, w, should_stop=s))


def test_regression_em_fits(scan):
    fs = regression_em.collect(scan)
    _stops_on_first_check(lambda s: regression_em.poisson_start(fs, should_stop=s), n=1)
    _stops_on_first_check(lambda s: regression_em.regression_em(fs, should_stop=s), n=1)


def test_dla_steps(scan):
    ls = dla.collect(scan, max_lists=2000)
    _stops_on_first_check(lambda s: dla.dla(ls, steps=10, should_stop=s), n=5)


@pytest.mark.parametrize("method", propensity.METHODS)
def test_estimate_stops_inside_its_bootstrap(method):
    # A stop requested once the first replicates are done raises on the very next check.
    log = ingest.open_file(SAMPLE)
    asked = {"stop": False, "after": 0}

    def progress(fraction, text):
        asked["stop"] = asked["stop"] or text.startswith("bootstrap replicate")

    def should_stop():
        asked["after"] += asked["stop"]
        return asked["stop"]

    b = {"randomization": 600, "em": 60}.get(method, 3)  # more than one batch
    with pytest.raises(Cancelled):
        propensity.estimate(log, method=method, n_bootstrap=b, assume_randomized=True,
                            progress=progress, should_stop=should_stop,
                            interval="bootstrap")  # em's default draws no replicate
    assert asked["after"] == 1


def test_a_running_statement_is_interrupted(scan):
    import dataclasses
    import time

    t0 = time.monotonic()
    slow = dataclasses.replace(scan, should_stop=lambda: time.monotonic() - t0 > 0.3)
    with pytest.raises(Cancelled):  # minutes of work when not interrupted
        slow.execute("SELECT sum(a.range * b.range) FROM range(100000) a, range(1000000) b")
    assert time.monotonic() - t0 < 5
    assert scan.execute("SELECT count(*) FROM {src}").fetchone()[0] == 50_000  # still usable
