"""Debiasing study page through Streamlit's AppTest (upload, run, result, refusal)."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.study.letor import letor_text, linear_set

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


def run_app():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    at.switch_page("pages/debiasing_study.py").run()
    assert not at.exception, at.exception
    return at


def test_upload_run_and_see_the_learners_with_intervals():
    at = run_app()
    assert at.title[0].value == "Debiasing study"
    text = letor_text(linear_set(queries=40, docs=8, seed=0))
    at.get("file_uploader")[0].set_value(("judged.txt", text.encode(), "text/plain")).run()
    at.multiselect(key="dst_learners").set_value(["naive-linear", "ipw-linear", "production"])
    at.number_input(key="dst_sessions").set_value(1000)
    at.number_input(key="dst_runs").set_value(2)
    at.button[0].click()   # the form's submit button
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 1
    cap = " ".join(c.value for c in at.caption)
    assert "40 queries (12 held out), 320 documents, 5 features from judged.txt" in cap
    frames = at.dataframe
    learners = frames[0].value
    assert set(learners["learner"]) == {"naive-linear", "ipw-linear", "production"}
    assert (learners["lower"] <= learners["value"]).all()
    assert (learners["value"] <= learners["upper"]).all()
    # the simulated clicks become a dataset every page can open
    at.text_input(key="dst_store_name").input("study clicks")
    at.button(key="dst_store").click()
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("Stored “study clicks” with 8,000 rows" in m.value for m in at.success), \
        [m.value for m in at.success]
    assert at.session_state["dataset"] == "study clicks"


def test_a_malformed_file_is_refused_in_one_sentence():
    at = run_app()
    at.get("file_uploader")[0].set_value(
        ("bad.svm", b"2 qid:1 1:0.5\n0 1:3\n", "text/plain")).run()
    at.button[0].click()
    at.run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        "Cannot run the study: Line 2 of bad.svm is not a LETOR line (grade qid:Q 1:v 2:v ...): "
        "“0 1:3”"]


def test_a_sweep_over_eta_on_the_page_and_the_export_for_lightgbm_and_xgboost():
    """The sweep runs the study once per η (same seeds) and draws the primary metric
    against η with its intervals; the simulated log downloads for LightGBM and XGBoost."""
    at = run_app()
    text = letor_text(linear_set(queries=40, docs=8, seed=0))
    at.get("file_uploader")[0].set_value(("judged.txt", text.encode(), "text/plain")).run()
    at.multiselect(key="dst_learners").set_value(["naive-linear", "ipw-linear"])
    at.number_input(key="dst_sessions").set_value(1000)
    at.number_input(key="dst_runs").set_value(2)
    at.selectbox(key="dst_sweep").set_value("eta")
    at.text_input(key="dst_sweep_values").input("0, 1.5")
    at.button[0].click()
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 2  # the sweep's and the last study's
    sweep = at.dataframe[0].value
    assert list(sweep["eta"].unique()) == [0.0, 1.5]
    assert set(sweep["learner"]) == {"naive-linear", "ipw-linear"}
    assert (sweep["lower"] <= sweep["value"]).all() and (sweep["value"] <= sweep["upper"]).all()
    # at η = 0 the IPW weights are all 1: the two learners rank identically
    at0 = sweep[(sweep["eta"] == 0.0) & (sweep["learner"] == "ipw-linear")].iloc[0]
    assert "rank identically" in at0["verdict"]
    assert [h.value for h in at.subheader][:2] == ["Sweep over η", "The study at η = 1.5"]
    assert at.get("download_button")  # the export (and the CSVs)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download the simulated clicks for LightGBM and XGBoost (zip)" in labels


def test_a_sweep_with_bad_values_is_refused_in_one_sentence():
    at = run_app()
    text = letor_text(linear_set(queries=20, docs=6, seed=0))
    at.get("file_uploader")[0].set_value(("judged.txt", text.encode(), "text/plain")).run()
    at.selectbox(key="dst_sweep").set_value("sessions")
    at.text_input(key="dst_sweep_values").input("100, many")
    at.button[0].click()
    at.run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        "Cannot run the study: The sessions values of a sweep must be numbers separated by "
        "commas."]
