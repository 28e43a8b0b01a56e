"""run_experiment: the selections in the results table, curves and figures."""

import numpy as np
import pytest

from ulr.errors import UlrError
from ulr.recommend.data import simulate_mnar
from ulr.recommend.experiment import (learning_curves_figure, results_figure, results_table,
                                      run_experiment)
from ulr.recommend.models import MFConfig


@pytest.fixture(scope="module")
def exp():
    data = simulate_mnar(users=120, items=90, seed=4)
    base = MFConfig(epochs=8)
    grids = {"naive-mf": [MFConfig(epochs=8, l2=1.0), MFConfig(epochs=8, l2=4.0)]}
    calls = []
    e = run_experiment(data, base=base, grids=grids,
                       progress=lambda d, t, label: calls.append((d, t)))
    assert calls[-1] == (calls[-1][1], calls[-1][1]) and len(calls) == 2 + 3 + 4
    return e


def test_table_selects_by_validation_and_by_test(exp):
    h = exp.history
    for row in exp.table.to_dict("records"):
        g = h[h["model"] == row["model"]]
        v = g.loc[g["validation"].idxmin()]
        assert row["run (best on validation)"] == v["run"]
        assert row["epoch (best on validation)"] == v["epoch"]
        assert row["improvement (best on validation)"] == pytest.approx(v["test_improvement"])
        assert row["improvement (best on test)"] == pytest.approx(g["test_improvement"].max())
        assert row["improvement (best on test)"] >= row["improvement (best on validation)"]
    assert list(exp.table["model"]) == ["naive-mf", "propensity-mf", "cause"]
    assert exp.history.groupby("model")["run"].nunique().to_dict() == {
        "naive-mf": 2, "propensity-mf": 3, "cause": 4}


def test_improvement_is_relative_to_the_test_mean(exp):
    h = exp.history
    var = exp.summary["test_variance"]
    assert np.allclose(h["test_improvement"], 1 - h["test_mse"] / var)


def test_curves_and_figures(exp):
    cur = exp.curves()
    assert set(cur["model"]) == {"naive-mf", "propensity-mf", "cause"}
    assert cur.groupby("model").size().eq(9).all()  # epochs 0..8 of the selected run
    fig = learning_curves_figure(exp)
    assert len(fig.data) == 9 and fig.layout.template.layout.font.family
    assert len(results_figure(exp).data) == 2
    t = results_table(exp)
    assert list(t["method"]) == ["naive MF", "propensity MF (IPS)", "CausE"]


def test_unknown_model_is_a_user_error():
    with pytest.raises(UlrError, match="unknown model"):
        run_experiment(simulate_mnar(users=20, items=20, seed=0), models=["mf"])
