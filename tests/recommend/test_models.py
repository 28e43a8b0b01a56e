"""MF training pieces against slow references, and the debiasing claim on simulated MNAR data."""

import numpy as np
import pytest

from ulr.errors import UlrError
from ulr.recommend.data import simulate_mnar
from ulr.recommend.models import (MFConfig, _data_grads, _Params, _tie, naive_bayes_propensity,
                                  train)


def batch_loss(params, u, i, y, w, scale, control):
    pred = params.predict(u, i, control=control)
    return scale * np.sum(w * (pred - y) ** 2) / 2


@pytest.mark.parametrize("control", [False, True])
def test_batch_gradient_matches_finite_differences(control):
    # repeated users and items in the batch exercise the np.add.at scatter
    rng = np.random.default_rng(0)
    params = _Params(6, 5, 3, 3.0, rng, control=True)
    for v in params.p.values():
        v += 0.3 * rng.standard_normal(v.shape)
    u = np.array([0, 1, 1, 4, 0, 5, 2])
    i = np.array([2, 2, 0, 4, 2, 1, 3])
    y = np.array([5.0, 1.0, 3.0, 4.0, 2.0, 1.0, 5.0])
    w = rng.uniform(0.5, 3.0, len(u))
    grads = {k: np.zeros_like(v) for k, v in params.p.items()}
    _data_grads(params, u, i, y, w, 1 / len(u), control=control, out=grads)
    eps = 1e-6
    for name, arr in params.p.items():
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            up = batch_loss(params, u, i, y, w, 1 / len(u), control)
            arr[idx] = old - eps
            down = batch_loss(params, u, i, y, w, 1 / len(u), control)
            arr[idx] = old
            assert grads[name][idx] == pytest.approx((up - down) / (2 * eps), abs=1e-7), name


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_tie_is_the_exact_proximal_step(norm):
    # the tie moves (a, b) to the minimizer of step * D(a - b) + ((a - a0)^2 + (b - b0)^2) / 2,
    # checked per coordinate by brute force over a fine grid of differences
    rng = np.random.default_rng(1)
    params = _Params(3, 4, 2, 0.0, rng, control=True)
    params.p["Q_c"][:] = rng.standard_normal((4, 2))
    params.p["bi_c"][:] = rng.standard_normal(4)
    a0, b0 = params.p["Q"].copy(), params.p["Q_c"].copy()
    step = 0.3
    _tie(params, step, norm)
    a1, b1 = params.p["Q"], params.p["Q_c"]
    D = (lambda d: np.abs(d)) if norm == "l1" else (lambda d: d * d)
    for idx in np.ndindex(a0.shape):
        m = (a0[idx] + b0[idx]) / 2  # the midpoint is optimal and unchanged
        d = np.linspace(-6, 6, 240001)
        obj = step * D(d) + ((m + d / 2 - a0[idx]) ** 2 + (m - d / 2 - b0[idx]) ** 2) / 2
        best = d[np.argmin(obj)]
        assert a1[idx] - b1[idx] == pytest.approx(best, abs=1e-4)
        assert (a1[idx] + b1[idx]) / 2 == pytest.approx(m)


def test_naive_bayes_propensities_recover_the_exposure():
    # a large randomized slice (30%) so P(Y = r) is estimated to a few percent; the truth is
    # realized share of the pairs with rating r that were observed. Only P(Y = r) is
    # estimated (from the slice), so the tolerance is 4 of its relative standard errors,
    # sqrt((1 - p) / (n p)), plus 2% for the add-one smoothing.
    data = simulate_mnar(seed=5, random_share=0.3)
    obs = np.r_[data.biased.rating, data.biased_val.rating, data.random.rating,
                data.random_val.rating]
    mcar = np.r_[data.random.rating, data.random_val.rating]
    nb = naive_bayes_propensity(obs, mcar, observed_share=len(obs) / data.truth.size)
    for r in range(1, 6):
        mask = data.truth == r
        share = mask.mean()
        truth = np.sum(obs == r) / mask.sum()  # realized P(O = 1 | Y = r)
        rel = np.sqrt((1 - share) / (len(mcar) * share))
        assert nb[r - 1] == pytest.approx(truth, rel=4 * rel + 0.02), r
    assert np.all(np.diff(nb) > 0)
    with pytest.raises(UlrError):
        naive_bayes_propensity(obs, [], observed_share=0.1)


def test_training_fits_and_is_seeded():
    data = simulate_mnar(users=80, items=60, seed=2)
    cfg = MFConfig(epochs=60, l2=0.01, batch_size=32)
    a = train(data, "naive-mf", cfg)
    b = train(data, "naive-mf", cfg)
    assert a.history.equals(b.history)
    # nearly unregularized MF memorizes its few hundred ratings
    y = np.r_[data.biased.rating, data.random.rating]
    assert a.history["train_loss"].iloc[-1] < 0.25 * y.var()
    with pytest.raises(UlrError, match="unknown model"):
        train(data, "svd", MFConfig())
    with pytest.raises(UlrError):
        MFConfig(discrepancy_norm="l3")


@pytest.mark.parametrize("seed", [0, 1])
def test_propensity_mf_and_cause_beat_naive_mf(seed):
    # The claim of the issue, on the default MNAR world (exposure log-odds +1 per star,
    # 3% randomized slice). Both selections must agree: whether each model is picked by
    # its own validation criterion or by the (oracle) test score, both debiased models
    # improve on naive MF. Seen over seeds 0-3 (1 - MSE / Var(test), best on validation):
    # naive -0.78..-0.87, propensity MF +0.07..+0.13, CausE -0.21..0.00; a 0.3 gap is safe
    # yet far above what noise in a 6000-rating test set could produce (se of the MSE ~2%).
    from ulr.recommend.experiment import run_experiment

    exp = run_experiment(simulate_mnar(seed=seed))
    t = exp.table.set_index("model")
    for col in ("improvement (best on validation)", "improvement (best on test)"):
        naive = t.loc["naive-mf", col]
        assert t.loc["propensity-mf", col] > naive + 0.3, col
        assert t.loc["cause", col] > naive + 0.3, col
    assert t.loc["propensity-mf", "improvement (best on test)"] > 0
