"""A dummy position-bias estimator that exists only through ``propensity.register``
(tests/propensity/test_propensity_registry.py): theta_k = CTR_k / CTR_1, the raw ratio."""

import numpy as np

from ulr.propensity.result import PropensityResult


def run(scan, *, positions=None, n_bootstrap=0, seed=0, assume_randomized=False,
        progress=None, level=0.95, should_stop=None):
    rows = scan.execute("SELECT position, avg(CAST(click AS DOUBLE)), count(*) FROM {src} "
                        "GROUP BY position ORDER BY position").fetchall()
    k = positions or len(rows)
    ctr = np.array([r[1] for r in rows[:k]], dtype=float)
    return PropensityResult.build(method="ctr-ratio", positions=k, theta=ctr / ctr[0],
                            rows_used=int(sum(r[2] for r in rows[:k])))
