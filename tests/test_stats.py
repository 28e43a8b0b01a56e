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


def test_normal_quantile_is_scipys_to_the_last_bit():
    """The table behind the common levels holds scipy's own values, and any other
    quantile is scipy's too, so no interval moves by a bit for skipping scipy.stats."""
    from scipy.stats import norm
    from ulr.stats import _NORMAL_QUANTILES, normal_quantile
    for level in (0.8, 0.9, 0.95, 0.98, 0.99):
        assert normal_quantile(0.5 + level / 2) == float(norm.ppf(0.5 + level / 2))
    for p, z in _NORMAL_QUANTILES.items():
        assert z == float(norm.ppf(p)), p
    for p in np.linspace(0.001, 0.999, 37):
        assert normal_quantile(p) == float(norm.ppf(p))


def test_the_position_bias_verdict_does_not_import_scipy_stats():
    """EM on a CSV (the 1.2x-the-scan target of issue 37) never imports scipy.stats or
    pandas: each took most of a second of a run whose EM iterations take about as long."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    code = ("import sys, io, contextlib; from ulr.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    rc = main(['propensity', '--input', 'data/sample_clicks.csv', '--method', 'em',"
            " '--json'])\n"
            "print(rc, 'scipy.stats' in sys.modules, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["0", "False", "False"]
