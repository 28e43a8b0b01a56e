"""Where Compare rankers' θ comes from (pages/compare_rankers.py): the recorded truth, an
estimate, θ per segment, trust-em's affine inputs; each cached per dataset version."""

import numpy as np

from pages import _ui as ui
from ulr import propensity, rankers
from ulr.data import catalog
from ulr.data.summary import true_theta as recorded_theta
from ulr.errors import UlrError


@ui.cache_data(show_spinner=False, max_entries=64)
def true_theta(content_hash: str, name: str):
    return recorded_theta(catalog.open_dataset(name, cur=catalog.cursor()))


@ui.cache_data(show_spinner=False, max_entries=64)
def estimated_theta(content_hash: str, name: str, method: str, seed: int, _should_stop=None):
    lg = catalog.open_dataset(name, cur=catalog.cursor())
    return rankers.propensity_theta(lg, method, seed=seed, should_stop=_should_stop)


@ui.cache_data(show_spinner=False, max_entries=64)
def segment_columns(content_hash: str, name: str) -> dict:
    from ulr.propensity.segments import segment_columns
    return segment_columns(catalog.open_dataset(name, cur=catalog.cursor()))


@ui.cache_data(show_spinner=False, max_entries=64)
def segment_theta(content_hash: str, name: str, method: str, column: str, seed: int,
                   _should_stop=None):
    """``((value, theta tuple), ...)`` of ``method`` on each value of ``column``."""
    from ulr.propensity.segments import by_segment
    lg = catalog.open_dataset(name, cur=catalog.cursor())
    seg = by_segment(lg, method=method, column=column, seed=seed, should_stop=_should_stop)
    for v in seg.values:
        t = seg.theta[v]
        if not np.all(np.isfinite(t) & (t > 0)):
            raise UlrError(f"{method} has no usable θ at every position of the {column} "
                           f"segment “{v}”; choose another method.")
    return tuple((v, tuple(float(x) for x in seg.theta[v])) for v in seg.values)


@ui.cache_data(show_spinner=False, max_entries=64)
def trust_em(content_hash: str, name: str, seed: int, _should_stop=None):
    """theta, alpha and beta of trust-em (the affine correction's inputs), as tuples."""
    lg = catalog.open_dataset(name, cur=catalog.cursor())
    res = propensity.estimate(lg, method="trust-em", seed=seed, should_stop=_should_stop,
                              weigh_facts=False)  # alpha and beta only
    return (tuple(float(t) for t in res.theta), tuple(res.extras["alpha"]),
            tuple(res.extras["beta"]))
