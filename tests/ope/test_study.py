"""ulr.ope.study: the page's study and learning views, without Streamlit, with no fixed sizes."""

import numpy as np
import pytest

from ulr.errors import UlrError
from ulr.ope.study import crm_study, simulation_study, study_chunk, study_world


def test_simulation_study_sizes_are_options_and_chunks_add_up():
    out = simulation_study(contexts=5, actions=4, n_features=3, rows=200, runs=30, chunk_size=7,
                           estimators=["ips", "snips"], seed=2)
    sim, pi = study_world(contexts=5, actions=4, n_features=3, seed=2)
    assert sim.candidates.features.shape[1] == 3
    assert out.truth == pytest.approx(float(sim.true_value(pi)), abs=1e-15)
    t = out.table.set_index("estimator")
    assert (t["draws"] == 30).all() and len(out.estimates) == 60
    assert sorted(out.estimates["draw"].unique()) == list(range(30))
    # IPS is unbiased: its mean over the logs is within 4 standard errors of the truth
    assert abs(t.loc["ips", "bias"]) < 4 * t.loc["ips", "bias_se"]
    # one chunk by hand equals the same piece of the study
    df, ess, mw = study_chunk(1, contexts=5, actions=4, n_features=3, rows=200, runs=30,
                              chunk_size=7, estimators=("ips", "snips"), seed=2)
    got = out.estimates.query("7 <= draw < 14").reset_index(drop=True)
    assert np.allclose(df["value"].to_numpy(), got["value"].to_numpy(), atol=1e-15)


def test_the_retired_keyword_draws_is_refused_naming_runs():
    opts = dict(contexts=3, actions=3, n_features=2, rows=50, estimators=["ips"], seed=1)
    for fn in (simulation_study, lambda **kw: study_chunk(0, **kw)):
        with pytest.raises(TypeError, match=r"takes runs=, not draws="):
            fn(draws=3, **opts)
    sim, _ = study_world(contexts=3, actions=3, n_features=2, seed=1)
    with pytest.raises(TypeError, match=r"sample\(\) takes runs=, not draws="):
        sim.sample(10, draws=2)
    new = simulation_study(runs=3, **opts)
    assert (new.table["draws"] == 3).all()


def test_study_refuses_bad_options():
    with pytest.raises(UlrError):
        simulation_study(estimators=[])
    with pytest.raises(UlrError):
        simulation_study(target="sideways", runs=2, rows=50)


def test_crm_study_on_a_simulated_log_reports_true_values():
    out = crm_study(contexts=5, actions=4, n_features=2, rows=1500, steps=20, n_bootstrap=100,
                    seed=1)
    assert len(out["features"]) == 2
    assert out["logging"] <= out["best"] and 0 <= out["truth"] <= out["best"] + 1e-12
    assert len(out["truth_path"]) == len(out["result"].curve)
    assert out["result"].evaluation.settings["n_bootstrap"] == 100
