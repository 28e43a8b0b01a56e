"""Small statistical helpers shared across packages (one implementation each)."""

from __future__ import annotations

import numpy as np

from ulr import validate


#: ``norm.ppf(p)`` of scipy (its ``ndtri``) at the quantiles the defaults ask for, to the
#: last bit (a test compares them): a verdict at these levels then does not import
#: scipy.stats, which takes most of a second, as much as EM's iterations on 10M rows.
_NORMAL_QUANTILES = {0.975: 1.959963984540054, 0.95: 1.6448536269514722,
                     0.995: 2.5758293035489004, 0.9: 1.2815515655446004,
                     0.99: 2.3263478740408408, 0.999: 3.090232306167813}


def normal_quantile(p: float) -> float:
    """The standard normal quantile ``Phi^{-1}(p)`` for ``p`` in (0, 1), as
    ``scipy.stats.norm.ppf`` gives it (a table at the common levels, else scipy)."""
    p = float(p)
    z = _NORMAL_QUANTILES.get(p)
    if z is None:
        from scipy.special import ndtri  # norm.ppf's own function, lighter to import
        z = float(ndtri(p))
    return z


@validate.params(level=validate.level)
def wilson_interval(successes, trials, *, level: float = 0.95, z: float | None = None):
    """Wilson score interval of a binomial proportion ``successes / trials``.

    .. math::

        \\frac{\\hat p + z^2/(2n) \\pm z \\sqrt{\\hat p (1 - \\hat p)/n + z^2/(4n^2)}}{1 + z^2/n}

    with ``z`` the two-sided normal quantile of ``level`` (Wilson, "Probable
    inference, the law of succession, and statistical inference", JASA 1927).
    Clipped to [0, 1].

    Parameters
    ----------
    successes, trials : int or array-like
        Counts (broadcast together). Where ``trials`` is 0 the bounds are NaN.
    level : float, default 0.95
        Two-sided confidence level in (0, 1).
    z : float, optional
        The normal quantile itself (e.g. 1.96); when given, ``level`` is not used.

    Returns
    -------
    (lower, upper) : floats for scalar input, else arrays.
    """
    if z is None:
        z = normal_quantile(0.5 + float(level) / 2)
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denom = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
        # no success: the lower bound is 0 exactly (all successes: the upper is 1); the
        # formula leaves a rounding residue of about 1e-18 there
        lower = np.where(n > 0, np.where(k <= 0, 0.0, np.clip(centre - half, 0.0, 1.0)),
                         np.nan)
        upper = np.where(n > 0, np.where(k >= n, 1.0, np.clip(centre + half, 0.0, 1.0)),
                         np.nan)
    if lower.ndim == 0:
        return float(lower), float(upper)
    return lower, upper
