"""Position bias page through Streamlit's AppTest."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def open_page():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    at.query_params["boot"] = "20"  # the shareable-link setting; keeps the first run short
    at.switch_page("pages/position_bias.py").run()
    assert not at.exception, at.exception
    return at


def test_two_methods_on_the_sample_give_a_chart_and_a_table():
    at = open_page()
    assert at.title[0].value == "Position bias"
    assert at.number_input(key="pb_boot").value == 20
    at.multiselect(key="pb_methods").set_value(["randomization", "em"])
    at.run()
    assert not at.exception, at.exception
    charts = at.get("plotly_chart")
    assert len(charts) >= 2  # theta per position, EM convergence
    table = at.dataframe[0].value
    assert set(table["method"]) == {"randomization", "em"}
    assert len(table) == 2 * 10 and table["lower"].notna().all()
    assert "true_theta" in table  # the sample records the simulator's truth
    assert not at.warning


def test_a_method_that_cannot_run_says_why_and_the_rest_is_shown(tmp_path):
    from ulr import store
    from ulr.simulate import simulate_clicks, write_log

    # A log without features and without a randomized flag, stored in the test database.
    sim = simulate_clicks(queries=30, docs_per_query=5, sessions=800, features=0, seed=3)
    path = tmp_path / "plain.csv"
    write_log(sim.df.drop(columns=["randomized"]), str(path))
    store.load_log(path, "plain log", replace=True)

    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["dataset"] = "plain log"
    at.run()
    at.switch_page("pages/position_bias.py").run()
    at.multiselect(key="pb_methods").set_value(["em", "regression-em", "randomization"])
    at.number_input(key="pb_boot").set_value(0)
    at.run()
    assert not at.exception, at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "regression-em** cannot run" in warnings and "no feature_* columns" in warnings
    assert "randomization** cannot run" in warnings and "no 'randomized' column" in warnings
    assert set(at.dataframe[0].value["method"]) == {"em"}
    assert len(at.get("plotly_chart")) >= 1
