"""The trust-bias model on the Position bias and User models pages (AppTest)."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture(scope="module")
def trust_log(tmp_path_factory):
    from ulr.data import ingest
    from ulr.simulate import simulate_click_model, write_log
    sim = simulate_click_model("trust", sessions=4000, queries=60, seed=5, orders=3,
                               randomized=0.2, positions=6)
    path = tmp_path_factory.mktemp("trust") / "trust.csv"
    write_log(sim.df, str(path))
    ingest.load_log(path, "trust log", replace=True)
    return "trust log"


def open_page(page, dataset):
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["dataset"] = dataset
    at.run()
    assert not at.exception, at.exception
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_position_bias_shows_alpha_and_beta(trust_log):
    at = open_page("pages/position_bias.py", trust_log)
    at.multiselect(key="pb_methods").set_value(["em", "trust-em"])
    at.number_input(key="pb_boot").set_value(10)
    at.run()
    assert not at.exception, at.exception
    assert set(at.dataframe[0].value["method"]) == {"em", "trust-em"}
    trust = next(d.value for d in at.dataframe if "beta" in d.value.columns)
    assert len(trust) == 6 and trust["alpha_lower"].notna().all()
    assert any("Trust bias (trust-em)" in m.value for m in at.markdown)


def test_user_models_compares_trust_and_keeps_the_default(trust_log):
    at = open_page("pages/user_models.py", trust_log)
    assert "trust" not in at.multiselect(key="um_models").value  # not in the default six
    assert any(e.label.startswith("What this log can identify") for e in at.expander)
    at.multiselect(key="um_models").set_value(["pbm", "trust"])
    at.number_input(key="um_boot").set_value(10)
    at.run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert list(table["model"]) == ["trust bias", "PBM"]
    assert any("trust bias fits best" in m.value for m in at.markdown)


def test_compare_rankers_offers_the_affine_correction(tmp_path):
    from ulr.data import ingest
    from ulr.simulate import simulate_clicks, write_log
    df = simulate_clicks(model="trust", queries=150, sessions=5000, features=5, seed=3).df
    path = tmp_path / "trust_features.csv"
    write_log(df.drop(columns=["true_theta"]), str(path))
    ingest.load_log(path, "trust features", replace=True)
    at = open_page("pages/compare_rankers.py", "trust features")
    at.selectbox(key="cr_debias").set_value("affine").run()
    assert not at.exception, at.exception
    assert any("gradient boosting" in e.value for e in at.error)  # linear: one sentence
    at.selectbox(key="cr_learner").set_value("gbdt").run()
    assert not at.exception, at.exception
    texts = " ".join(m.value for m in at.markdown)
    assert "affine-corrected" in texts and "IPW" not in texts.split("affine-corrected")[0][-40:]
    assert [m.label for m in at.metric][:2] == ["affine-corrected ARP (lower is better)",
                                                 "affine-corrected nDCG@10"]
    table = next(d.value for d in at.dataframe if "delta" in d.value.columns)
    assert "affine-corrected" in table.columns
    assert any("trust-em's α" in c.value for c in at.caption)
