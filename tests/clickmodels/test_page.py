"""The User models page through Streamlit's AppTest."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


def open_page(dataset=None):
    at = AppTest.from_file(APP, default_timeout=180)
    if dataset:
        at.session_state["dataset"] = dataset
    at.run()
    assert not at.exception, at.exception
    at.switch_page("pages/user_models.py").run()
    assert not at.exception, at.exception
    return at


def test_comparison_on_the_sample_shows_the_verdict_first_then_table_and_chart():
    at = open_page()
    assert at.title[0].value == "User models"
    at.multiselect(key="um_models").set_value(["pbm", "ubm", "cascade", "dcm"])
    at.number_input(key="um_boot").set_value(20)
    at.run()
    assert not at.exception, at.exception
    # the sample is simulated from the PBM: the verdict names PBM or UBM (which nests it) best
    texts = [m.value for m in at.markdown]
    first = next(i for i, v in enumerate(texts) if "fits best" in v)
    assert "PBM fits best" in texts[first] or "UBM fits best" in texts[first], texts
    table = at.dataframe[0].value
    assert list(table["model"])[0] in ("PBM", "UBM")
    assert set(table["model"]) == {"PBM", "UBM", "cascade", "DCM"}
    assert len(at.get("plotly_chart")) == 1  # examination by rank; the rest when opened
    at.session_state["um_freq_open"] = True  # "By how often a result was seen in training"
    at.run()
    assert not at.exception, at.exception
    chart = at.get("plotly_chart")
    assert len(chart) == 2  # examination by rank; perplexity by how often a pair was seen
    freq = next(d.value for d in at.dataframe if "held-out impressions" in d.value.columns)
    assert set(freq["model"]) == {"PBM", "UBM", "cascade", "DCM"}
    assert set(freq["training sessions of the pair"]) <= {"unseen", "1", "2-9", "10+"}
    assert (freq["held-out impressions"] > 0).all() and (freq["perplexity"] >= 1).all()
    assert any(b.label == "Add to report" for b in at.button)


def test_a_log_without_sessions_is_a_dead_end_sentence(tmp_path):
    from ulr.data import ingest
    from ulr.simulate import write_obd_like_log
    path = tmp_path / "obd.csv"
    write_obd_like_log(str(path), impressions=400)
    ingest.load_log(path, "obd no sessions", replace=True,
                   mapping={"doc_id": "item_id", "query_id": "timestamp"})
    at = open_page("obd no sessions")
    assert [w.value for w in at.warning] and "no session column" in at.warning[0].value
    assert not at.dataframe and not at.get("plotly_chart")


def test_the_shareable_link_sets_the_controls():
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.query_params["models"] = "pbm,ubm"
    at.query_params["bootstrap"] = "10"
    at.query_params["seed"] = "4"
    at.query_params["prior"] = "1,1"
    at.switch_page("pages/user_models.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="um_prior").value == "fixed"
    assert at.number_input(key="um_prior_a").value == at.number_input(key="um_prior_b").value == 1
    assert any("1 pseudo-click in 2 pseudo-results" in c.value for c in at.caption)
    assert at.multiselect(key="um_models").value == ["pbm", "ubm"]
    assert at.number_input(key="um_boot").value == 10
    assert at.number_input(key="um_seed").value == 4
    assert set(at.dataframe[0].value["model"]) == {"PBM", "UBM"}


def test_a_comparison_fitted_before_opens_no_progress_box():
    """st.status pauses each run 50 ms; a second visitor with the same settings gets the
    fitted comparison at once, with the same table."""
    tables = []
    for visit in range(2):
        at = open_page()
        at.multiselect(key="um_models").set_value(["pbm", "cascade"])
        at.number_input(key="um_boot").set_value(0)
        at.number_input(key="um_seed").set_value(11)
        at.run()
        assert not at.exception, at.exception
        assert len(at.status) == (1 if visit == 0 else 0)
        tables.append(at.dataframe[0].value)
    assert tables[0].equals(tables[1])
