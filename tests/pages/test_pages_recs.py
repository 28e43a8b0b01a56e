"""Debiased recommendation page through Streamlit's AppTest."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ulr.recommend.data import simulate_mnar
from ulr.recommend.experiment import N_SEEDS as SEEDS, run_experiment
from ulr.recommend.models import MFConfig

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "debiased_recs.py")


def run_page():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def press(at):
    [b for b in at.button if b.label == "Train and compare"][0].click().run()
    assert not at.exception, at.exception


def small(at):
    at.number_input(key="rec_users").set_value(120)
    at.number_input(key="rec_items").set_value(100)
    at.number_input(key="rec_epochs").set_value(10)


def test_first_view_asks_to_run():
    at = run_page()
    assert at.title[0].value == "Debiased recommendation"
    assert "press **Train and compare**" in at.info[0].value
    assert not at.dataframe


def shown_table(at):
    """The results table as the page shows it (one column per method), back in long form
    with the improvement percentages as numbers."""
    wide = at.dataframe[0].value
    t = wide.T.reset_index().rename(columns={"index": "method"})
    for c in t.columns:
        if c.startswith("improvement"):
            t[c] = t[c].str.rstrip("%").astype(float) / 100
    return t


def test_run_shows_table_curves_and_downloads_matching_the_library():
    at = run_page()
    small(at)
    press(at)
    assert not at.error
    t = shown_table(at)
    assert list(t["method"]) == ["naive MF", "propensity MF (IPS)", "CausE"]
    assert (t["improvement (best on test)"] >= t["improvement (best on validation)"]).all()
    # the page's numbers are the library's (shown as percent with one decimal)
    lib = run_experiment(simulate_mnar(users=120, items=100, seed=0),
                         base=MFConfig(epochs=10)).table
    assert list(t["improvement (best on validation)"]) == pytest.approx(
        list(lib["improvement (best on validation)"]), abs=5e-4)
    assert len(at.get("plotly_chart")) == 2
    assert len(at.get("download_button")) == 2
    labels = [m.label for m in at.metric]
    assert "Randomized ratings" in labels and "Mean logged rating" in labels


def test_settings_change_keeps_last_result_and_models_subset():
    at = run_page()
    small(at)
    at.multiselect(key="rec_models").set_value(["naive-mf", "cause"])
    at.selectbox(key="rec_norm").select("l1")
    press(at)
    t = shown_table(at)
    assert list(t["method"]) == ["naive MF", "CausE"]
    assert "(L1 distance" in t["setting (best on validation)"].iloc[1]
    at.number_input(key="rec_seed").set_value(3).run()  # not submitted: the result stays
    assert not at.exception
    assert shown_table(at).equals(t)


def test_no_model_is_a_readable_error():
    at = run_page()
    small(at)
    at.multiselect(key="rec_models").set_value([])
    press(at)
    assert any("at least one model" in e.value for e in at.error)


def test_link_fills_the_form_and_is_written_back():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update(users="120", items="100", alpha="0.5", seed="3", epochs="10",
                           models="cause,naive-mf,svd", exposure="true")
    at.run()
    assert not at.exception
    assert [at.number_input(key=k).value for k in
            ("rec_users", "rec_items", "rec_seed", "rec_epochs")] == [120, 100, 3, 10]
    assert at.number_input(key="rec_alpha").value == 0.5
    assert at.multiselect(key="rec_models").value == ["cause", "naive-mf"]
    assert at.selectbox(key="rec_prop").value == "true"
    assert at.query_params["models"] == "cause,naive-mf"
    bad = AppTest.from_file(PAGE, default_timeout=120)
    bad.query_params.update(users="5", alpha="-1", models="", exposure="oracle")
    bad.run()
    assert not bad.exception
    assert bad.number_input(key="rec_users").value == 400
    assert bad.number_input(key="rec_alpha").value == 1.0
    assert bad.multiselect(key="rec_models").value == ["naive-mf", "propensity-mf", "cause"]
    assert bad.selectbox(key="rec_prop").value == "naive-bayes"


def test_the_verdict_compares_models_over_several_worlds():
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.run()
    small(at)
    assert at.number_input(key="rec_seeds").value == 3  # several seeds by default
    at.number_input(key="rec_seeds").set_value(2)
    press(at)
    assert not at.exception and not at.error
    assert any("badge[" in m.value for m in at.markdown)
    assert any("2 seeds (simulated worlds)" in m.value for m in at.markdown)
    assert len(at.dataframe) == 2  # the results of the first world, and one row per world
    worlds = at.dataframe[1].value
    # issue 50: the rows read as worlds, not row numbers 0/1/2, and no empty row
    assert list(worlds.index) == ["world 1 (seed 0)", "world 2 (seed 1)"], worlds
    assert not worlds.isna().all(axis=1).any()
    setting = at.dataframe[0].value.loc["setting (best on validation)"]
    assert all(str(v).startswith(("L2 penalty", "tie strength")) for v in setting), setting


def test_an_old_link_key_is_ignored_with_one_sentence_and_dropped():
    """Retired keys (docs/glossary.md): seeds= is now runs=, propensity= here is exposure=."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update(seeds="2", propensity="true")
    at.run()
    assert not at.exception
    assert at.number_input(key="rec_seeds").value == SEEDS  # the default, not the old key
    assert at.selectbox(key="rec_prop").value == "naive-bayes"
    notes = [i.value for i in at.info]
    for old, new in (("seeds", "runs"), ("propensity", "exposure")):
        assert (f"This link was made before a setting was renamed: its “{old}” is ignored, "
                f"and the page reads “{new}” instead.") in notes
    assert not any("--" in n for n in notes)  # a browser message names no CLI flag
    assert "seeds" not in at.query_params and "propensity" not in at.query_params
    assert at.query_params["runs"] == str(SEEDS) and at.query_params["exposure"] == "naive-bayes"


def test_page_and_cli_give_the_same_verdict_with_their_defaults(cli):
    """One default, one answer: the number of simulated worlds (3) is shared, so the
    page's verdict and ``recommend --json``'s agree on the same small world."""
    import json

    from ulr.recommend.experiment import N_SEEDS
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.run()
    at.number_input(key="rec_users").set_value(60)
    at.number_input(key="rec_items").set_value(50)
    at.number_input(key="rec_epochs").set_value(4)
    assert at.number_input(key="rec_seeds").value == N_SEEDS
    press(at)
    rc, out, err = cli("recommend", "--users", 60, "--items", 50, "--epochs", 4, "--json")
    assert rc == 0, err
    v = json.loads(out)["verdict"]
    badge = next(m.value for m in at.markdown if "badge[" in m.value)
    assert badge.endswith(f"{v['level'].capitalize()}]")
    assert any(m.value == f"**{v['takeaway']}**" for m in at.markdown)
