import numpy as np
import pytest

from ulr.stats import wilson_interval


def _slow_wilson(k, n, z):
    """The textbook formula, one proportion at a time."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return max(0.0, centre - half), min(1.0, centre + half)


def test_wilson_interval_textbook_values():
    assert wilson_interval(30, 100) == pytest.approx((0.2189, 0.3958), abs=1e-4)
    assert wilson_interval(100, 200, z=1.96) == pytest.approx((0.43136, 0.56864), abs=1e-5)
    lo, hi = wilson_interval(0, 0)
    assert np.isnan(lo) and np.isnan(hi)


def test_wilson_interval_vectorized_matches_the_scalar_formula():
    k = np.array([0, 1, 5, 50, 200])
    n = np.array([10, 3, 5, 400, 200])
    lo, hi = wilson_interval(k, n, level=0.9)
    z = 1.6448536269514722
    for i in range(k.size):
        assert (lo[i], hi[i]) == pytest.approx(_slow_wilson(k[i], n[i], z), abs=1e-12)
    assert lo[0] == 0.0 and hi[-1] == 1.0


def test_wilson_interval_level_is_checked():
    from ulr.validate import BadOption
    with pytest.raises(BadOption, match="level"):
        wilson_interval(1, 2, level=1.0)
