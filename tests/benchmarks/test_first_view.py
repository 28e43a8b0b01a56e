"""How benchmarks/first_view.py reads its rounds: a page's ratio to the reference in the
same round, the median of those ratios with a distribution-free 95% interval, and a
verdict that is "met" only when the whole interval is within the target."""

import itertools
import math

import numpy as np
import pytest

from benchmarks.first_view import median_interval, paired_ratios, reading, verdict


def _coverage(n: int, k: int) -> float:
    """P(x_(k) <= median <= x_(n-k+1)), counted over every sign pattern of n draws
    around the true median (each draw falls above it with probability 1/2)."""
    inside = 0
    for above in itertools.product((0, 1), repeat=n):
        ups = sum(above)   # x_(k) <= m needs >= k below; x_(n-k+1) >= m needs >= k above
        inside += (n - ups) >= k and ups >= k
    return inside / 2 ** n


@pytest.mark.parametrize("n", [6, 7, 8, 10, 12, 16])
def test_the_interval_is_the_narrowest_pair_of_order_statistics_that_covers(n):
    xs = list(np.arange(1.0, n + 1))
    mid, (lo, hi) = median_interval(xs)
    k = int(lo)
    assert hi == n - k + 1 and mid == pytest.approx((n + 1) / 2)
    assert _coverage(n, k) >= 0.95 > _coverage(n, k + 1)


def test_too_few_rounds_give_no_interval():
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0])[1] is None   # extremes cover 93.75%


def test_the_interval_covers_the_median_of_simulated_ratios():
    rng = np.random.default_rng(7)
    n, trials, truth = 10, 2000, math.exp(0.3)
    hits = sum(lo <= truth <= hi for lo, hi in
               (median_interval(list(rng.lognormal(0.3, 0.4, n)))[1] for _ in range(trials)))
    nominal = 1 - 2 * (1 + n) / 2 ** n           # k = 2 for 10 rounds: 97.9%
    assert abs(hits / trials - nominal) < 4 * math.sqrt(nominal * (1 - nominal) / trials)


def test_ratios_pair_each_round_and_the_verdict_reads_the_whole_interval():
    page = [(1.0, 3.0), (2.0, 4.0)]
    ref = [(0.5, 2.0), (1.0, 1.0)]
    assert paired_ratios(page, ref, 1) == [1.5, 4.0]
    assert verdict(1.2, 1.5) == "met"
    assert verdict(1.51, 2.0) == "NOT met"
    assert verdict(1.3, 1.7) == "cannot be told from 1.5x"


def test_one_page_wholly_beyond_the_target_decides_and_the_others_are_named():
    met, unclear, beyond = (1.2, (1.1, 1.4)), (1.5, (1.3, 1.7)), (1.8, (1.6, 1.9))
    assert reading({"/a": met}) == "met"
    assert reading({"/a": met, "/b": unclear}) == "cannot be told from 1.5x (/b)"
    assert reading({"/a": met, "/b": beyond, "/c": unclear}) == "NOT met (/b)"
    assert reading({"/a": (1.2, None)}).startswith("too few rounds")
