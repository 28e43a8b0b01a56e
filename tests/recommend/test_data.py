"""The simulated MNAR world: splits, shares and the selection effect."""

import numpy as np
import pytest

from ulr.errors import UlrError
from ulr.recommend.data import STAR_SHARES, simulate_mnar


@pytest.fixture(scope="module")
def data():
    return simulate_mnar(seed=3)


def pairs(r, items):
    return set((r.user * items + r.item).tolist())


def test_splits_are_disjoint_and_sized(data):
    items = data.items
    parts = [pairs(getattr(data, k), items)
             for k in ("biased", "biased_val", "random", "random_val")]
    assert not parts[0] & parts[1] and not parts[2] & parts[3]
    # the randomized slice is a uniform sample of all pairs: ~5% of it was also logged
    both = len((parts[0] | parts[1]) & (parts[2] | parts[3])) / len(parts[2] | parts[3])
    assert abs(both - 0.05) < 4 * np.sqrt(0.05 * 0.95 / len(parts[2] | parts[3]))
    test = pairs(data.test, items)
    assert len(test) == len(data.test) and not test & (parts[2] | parts[3])
    # the test set is a uniform sample of the matrix: ~5% of it was also logged (4 se)
    logged = len(test & (parts[0] | parts[1])) / len(test)
    assert abs(logged - 0.05) < 4 * np.sqrt(0.05 * 0.95 / len(test))
    s = data.summary()
    assert s["random_share"] == pytest.approx(0.03, abs=0.002)
    assert s["mnar_ratings"] == pytest.approx(0.05 * 400 * 300, rel=0.05)
    assert len(data.test) == round(0.05 * 400 * 300)
    assert len(data.biased_val) == round(0.1 * s["mnar_ratings"])


def test_ratings_match_the_truth_and_star_shares(data):
    for r in (data.biased, data.random, data.test):
        assert np.array_equal(r.rating, data.truth[r.user, r.item])
    shares = np.bincount(data.truth.ravel().astype(int), minlength=6)[1:] / data.truth.size
    assert np.allclose(shares, STAR_SHARES, atol=1e-3)


def test_exposure_is_missing_not_at_random(data):
    # liked items are exposed far more often: observed ratings are inflated, while the
    # uniform slice and the test set look like the full matrix (4-se bounds)
    s = data.summary()
    sd = data.truth.std()
    assert s["mean_rating_mnar"] > s["mean_rating_uniform"] + 1.0
    assert abs(s["mean_rating_test"] - s["mean_rating_uniform"]) < 4 * sd / np.sqrt(len(data.test))
    rnd = np.r_[data.random.rating, data.random_val.rating]
    assert abs(rnd.mean() - s["mean_rating_uniform"]) < 4 * sd / np.sqrt(len(rnd))
    by_star = [data.biased.exposure[data.biased.rating == r].mean() for r in range(1, 6)]
    assert np.all(np.diff(by_star) > 0)


def test_seeded_and_validated():
    a, b = simulate_mnar(users=50, items=40, seed=1), simulate_mnar(users=50, items=40, seed=1)
    assert np.array_equal(a.test.rating, b.test.rating)
    assert set(a.frame()["split"]) == {"mnar-train", "mnar-val", "random-train", "random-val",
                                       "test"}
    with pytest.raises(UlrError):
        simulate_mnar(random_share=0)
    with pytest.raises(UlrError):
        simulate_mnar(users=5)
