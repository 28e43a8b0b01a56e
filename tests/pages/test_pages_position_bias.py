"""Position bias page through Streamlit's AppTest."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


def open_page():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    at.query_params["bootstrap"] = "20"  # the shareable-link setting; keeps the first run short
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
    assert len(at.get("plotly_chart")) == 1  # theta per position; convergence when opened
    assert [e for e in at.expander if e.label == "Convergence"]
    at.session_state["pb_convergence_open"] = True  # the user opens "Convergence"
    at.run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 2  # and EM's convergence is drawn
    table = at.dataframe[0].value
    assert set(table["method"]) == {"randomization", "em"}
    assert len(table) == 2 * 10 and table["lower"].notna().all()
    assert "true_theta" in table  # the sample records the simulator's truth
    # Only the honest flag: the warning counts exactly the rows the table marks thin, which
    # are the ones whose 95% interval is wider than +-50% of the estimate; randomization at
    # positions 8 and 10 (11-14 clicks) is among them.
    free = table[table["position"] > 1]
    thin = free[free["thin"]]
    assert (thin["relative_half_width"] > 0.5).all()
    assert not free[~free["thin"]]["relative_half_width"].gt(0.5).any()
    assert {8, 10} <= set(thin[thin["method"] == "randomization"]["position"])
    assert [w.value.split(" estimates")[0] for w in at.warning] == [
        f"Thin evidence: {len(thin)} of {len(free)}"]
    # each method states its own verdict, under its name, in the order picked
    marks = [m.value for m in at.markdown]
    named = [m for m in marks if m in ("**randomization**", "**em**")]
    assert named == ["**randomization**", "**em**"]
    assert sum("badge[" in m for m in marks) == 2


def test_a_method_that_cannot_run_says_why_and_the_rest_is_shown(tmp_path):
    from ulr.data import ingest
    from ulr.simulate import simulate_clicks, write_log

    # A log without features and without a randomized flag, stored in the test database.
    sim = simulate_clicks(queries=30, positions=5, sessions=800, features=0, seed=3)
    path = tmp_path / "plain.csv"
    write_log(sim.df.drop(columns=["randomized"]), str(path))
    ingest.load_log(path, "plain log", replace=True)

    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["dataset"] = "plain log"
    at.run()
    at.switch_page("pages/position_bias.py").run()
    at.multiselect(key="pb_methods").set_value(["em", "regression-em", "randomization"])
    at.number_input(key="pb_boot").set_value(0)
    at.run()
    assert not at.exception, at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "regression-em** cannot run" in warnings and "no feature\\_\\* columns" in warnings  # shown as text
    assert "randomization** cannot run" in warnings and "shown in random order" in warnings
    assert "--" not in warnings  # the app names its controls, not command-line flags
    assert any(link.proto.page.endswith("data.py") or "Data page" in link.proto.label
               for link in at.get("page_link"))
    assert set(at.dataframe[0].value["method"]) == {"em"}
    assert len(at.get("plotly_chart")) >= 1


def test_thin_evidence_is_said_first_and_no_bound_is_missing(tmp_path):
    """38-click logs: with 0 bootstrap draws every estimate still has an interval, the
    thin ones are flagged first, and the evidence is shown."""
    import numpy as np

    from ulr.data import ingest
    from ulr.simulate import obd_like_log
    df = obd_like_log(impressions=1200, items=20, base_ctr=0.004, seed=5)
    path = tmp_path / "thin.csv"
    df.to_csv(path, index=False)
    ingest.load_log(path, "thin log", replace=True, mapping={
        "query_id": "user_feature_0+user_feature_1", "session_id": "timestamp",
        "constants": {"randomized": True}})
    clicks = int(df["click"].sum())
    assert clicks < 60
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["dataset"] = "thin log"
    at.run()
    at.switch_page("pages/position_bias.py").run()
    at.multiselect(key="pb_methods").set_value(["randomization"])
    at.number_input(key="pb_boot").set_value(0)
    at.run()
    assert not at.exception, at.exception
    assert not any(c.key == "pb_assume" for c in at.checkbox)  # declared: not asked again
    assert at.warning and at.warning[0].value.startswith("Thin evidence")
    table = at.dataframe[0].value
    assert table["lower"].notna().all() and table["upper"].notna().all()
    assert table.loc[table["position"] > 1, "thin"].all()
    assert any(f"{clicks:,} clicks" in c.value for c in at.caption)
    # Thin points are hollow in the chart, never a bare filled point.
    fig = at.get("plotly_chart")[0].proto.spec
    assert "rgba(0,0,0,0)" in fig


def test_precision_interval_matches_a_simulated_spread():
    """The click-count interval of CTR_k / CTR_1 covers ~95% of simulated ratios."""
    import numpy as np

    from ulr.propensity.plots import click_count_interval
    rng = np.random.default_rng(0)
    n, p = np.array([4000, 4000]), np.array([0.02, 0.01])
    hits = 0
    reps = 400
    for _ in range(reps):
        c = rng.binomial(n, p)
        lo, up = click_count_interval(c, n)
        hits += lo[1] <= 0.5 <= up[1]
    se = np.sqrt(0.95 * 0.05 / reps)
    assert abs(hits / reps - 0.95) < 4 * se


def test_a_registered_source_is_estimated_from_its_stored_statistics(parquet_lake):
    """Pick a registered Parquet lake in the sidebar: em and intervention harvesting run
    on its stored statistics and equal a scan of the files; methods that need rows say
    so in one sentence with a link to the Data page."""
    import uuid

    import numpy as np

    from ulr import engines, propensity
    from ulr.engines import sources
    from ulr.simulate import simulate_clicks

    df = simulate_clicks(queries=30, positions=5, sessions=1600, seed=11).df
    lake = parquet_lake(df, 3)
    name = f"lake_{uuid.uuid4().hex[:6]}"
    sources.add(name, path=str(lake / "*.parquet"))

    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["source"] = name
    at.query_params["bootstrap"] = "20"
    at.run()
    assert not at.exception, at.exception
    picker = at.sidebar.selectbox[0]
    assert picker.value == f"{name} (registered source)"
    at.switch_page("pages/position_bias.py").run()
    assert not at.exception, at.exception
    at.multiselect(key="pb_methods").set_value(["em", "intervention-harvesting", "randomization"])
    at.run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert set(table["method"]) == {"em", "intervention-harvesting"}
    scan = engines.get("duckdb").scan(path=str(lake))
    direct = propensity.estimate(scan, method="em", n_bootstrap=20)
    em_rows = table[table["method"] == "em"].sort_values("position")
    np.testing.assert_allclose(em_rows["theta"], direct.theta, atol=1e-9)
    np.testing.assert_allclose(em_rows["upper"], direct.upper, atol=1e-9)
    truth = df.groupby("position")["true_theta"].mean().to_numpy()
    assert np.max(np.abs(em_rows["theta"].to_numpy() - truth / truth[0])) < 0.1
    said = [w.value for w in at.warning if "randomization" in w.value]
    assert len(said) == 1 and "needs which rows were shown in random order" in said[0]
    assert "--" not in said[0]
    assert any("Data page" in link.proto.label for link in at.get("page_link"))
    assert any(f"{len(df):,} impressions, {int(df.click.sum()):,} clicks" in c.value
               for c in at.caption)


def test_the_verdict_leads_and_matches_the_table():
    """Thin positions (intervals wider than ±50%) make the verdict inconclusive, and it says
    which position and how much more data would pin it down."""
    at = open_page()
    at.multiselect(key="pb_methods").set_value(["randomization"])
    at.run()
    assert not at.exception, at.exception
    assert any("badge[" in m.value for m in at.markdown)
    table = at.dataframe[0].value
    worst = table[table["position"] > 1]["relative_half_width"].max()
    level = "Inconclusive" if worst > 0.5 else "Directional" if worst > 0.2 else "Reliable"
    assert any("badge[" in m.value and m.value.endswith(f"{level}]") for m in at.markdown)


def test_a_link_above_the_operator_caps_is_lowered_with_one_sentence(monkeypatch):
    monkeypatch.setenv("ULR_MAX_BOOTSTRAP", "20")
    monkeypatch.setenv("ULR_MAX_METHODS", "2")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.query_params.update(bootstrap="5000", propensity="em,randomization,intervention-harvesting")
    at.switch_page("pages/position_bias.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="pb_boot").value == 20
    assert at.multiselect(key="pb_methods").value == ["em", "randomization"]
    notes = [i.value for i in at.info]
    assert ("The link asks for 5000 bootstrap replicates; this server allows at most 20 "
            "(operator setting ULR_MAX_BOOTSTRAP), so 20 are used.") in notes
    assert any("asks for 3 methods" in n and "ULR_MAX_METHODS" in n for n in notes)
    assert at.query_params["bootstrap"] == "20"  # the shared link now says what ran
    assert at.query_params["propensity"] == "em,randomization"


def test_results_computed_before_are_drawn_without_a_progress_box():
    """A status box pauses every run 50 ms when it opens; it is shown only when there is
    work to follow. A second visitor with the same settings gets the same results, under
    a plain box that says they were computed before."""
    first = open_page()
    first.number_input(key="pb_seed").set_value(7).run()
    assert not first.exception, first.exception
    assert [s.label for s in first.status] and not [
        e for e in first.expander if e.label.startswith("Estimated")]
    table = first.dataframe[0].value
    second = open_page()
    second.number_input(key="pb_seed").set_value(7).run()
    assert not second.exception, second.exception
    assert len(second.status) == 0
    done = [e for e in second.expander if e.label.startswith("Estimated")]
    assert [e.label for e in done] == [first.status[0].label]
    assert all("(cached)" in m.value for m in done[0].markdown)
    assert second.dataframe[0].value.equals(table)


def test_page_and_cli_give_the_same_verdict_with_their_defaults(capsys):
    """One default, one answer: the page (default bootstrap, seed) and ``propensity --json``
    (its defaults) judge the same intervals and print the same level and sentence."""
    import json

    from ulr import cli

    from ulr.data import ingest
    from ulr.propensity.result import N_BOOTSTRAP
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/position_bias.py").run()
    at.multiselect(key="pb_methods").set_value(["randomization"])
    at.run()
    assert not at.exception, at.exception
    assert at.number_input(key="pb_boot").value == N_BOOTSTRAP
    badge = next(m.value for m in at.markdown if "badge[" in m.value)
    assert cli.main(["propensity", "--method", "randomization", "--input", str(ingest.SAMPLE_CSV),
                     "--json"]) == 0
    v = json.loads(capsys.readouterr().out)["verdict"]
    assert badge.endswith(f"{v['level'].capitalize()}]")
    assert any(m.value == f"**{v['takeaway']}**" for m in at.markdown)


def test_a_better_user_model_is_a_caveat_of_the_pbm_theta(tmp_path):
    """A log made by a cascade-type model (DCM): the user-model comparison is a dataset fact
    (ulr.facts, computed for every log with sessions), so θ's verdict carries the PBM's gap
    to the best model on first view, with no button to press, and is at most directional;
    the caveat goes to the report."""
    from ulr.data import ingest
    from ulr.simulate import simulate_click_model, write_log
    sim = simulate_click_model("dcm", sessions=3000, queries=20, positions=5, seed=1)
    path = tmp_path / "dcm.parquet"
    write_log(sim.df, str(path))
    ingest.load_log(path, "dcm log", replace=True)
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["dataset"] = "dcm log"
    at.run()
    at.query_params["bootstrap"] = "20"
    at.switch_page("pages/position_bias.py").run()
    at.multiselect(key="pb_methods").set_value(["em"]).run()
    assert not at.exception, at.exception
    assert not [b for b in at.button if b.key == "pb_pbm_check"]
    said = [w.value for w in at.warning if "fitting worse than" in w.value]
    # the best model is cascade-type: DCM made the log, and DBN nests it (with priors on
    # 3,000 sessions either may come out ahead)
    assert len(said) == 1 and "nats per session" in said[0]
    assert any(f"worse than {m} by" in said[0] for m in ("DCM", "DBN", "SDBN")), said[0]
    badge = next(m.value for m in at.markdown if "badge[" in m.value)
    assert not badge.endswith("Reliable]")
    at.run()  # the same on every run
    assert [w.value for w in at.warning if "fitting worse than" in w.value] == said


def test_a_declared_randomization_the_data_contradict_is_said_on_the_page(tmp_path):
    """A production-ranked log declared randomized at load (issue #50): the page opens with
    a method the log supports (not randomization), and randomization, when picked, is
    invalid with the one sentence the CLI gives."""
    from ulr.data import ingest
    from ulr.simulate import simulate_clicks, write_log
    sim = simulate_clicks(queries=60, positions=6, sessions=3000, seed=2,
                          randomized_fraction=0.0)
    path = tmp_path / "prod.csv"
    write_log(sim.df.drop(columns=["randomized"]), str(path))
    ingest.load_log(path, "prod declared random", replace=True,
                    mapping={"constants": {"randomized": True}})
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["dataset"] = "prod declared random"
    at.run()
    at.query_params["bootstrap"] = "20"
    at.switch_page("pages/position_bias.py").run()
    assert not at.exception, at.exception
    assert at.multiselect(key="pb_methods").value == ["em"]  # never a dead end
    at.multiselect(key="pb_methods").set_value(["randomization"]).run()
    assert not at.exception, at.exception
    badge = next(m.value for m in at.markdown if "badge[" in m.value)
    assert "Invalid" in badge
    marks = " ".join(m.value for m in at.markdown)
    assert "The rows treated as randomized are not randomly ordered" in marks
    assert "do not look randomly ordered" in marks and "--" not in marks


def test_em_interval_is_the_information_by_default_and_the_bootstrap_survives_a_link():
    """em's interval: its Fisher information by default (the notes say so, with the CLI's
    numbers), the bootstrap on request; the choice is in the link and read back from it."""
    import json

    from ulr import cli
    from ulr.data import ingest
    at = open_page()
    at.multiselect(key="pb_methods").set_value(["em"])
    at.run()
    assert not at.exception, at.exception
    assert at.radio(key="pb_interval").value == "information"
    assert any("95% interval from the Fisher information" in c.value for c in at.caption)
    table = at.dataframe[0].value
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["propensity", "--method", "em", "--input", str(ingest.SAMPLE_CSV),
                         "--positions", "10", "--json"]) == 0
    res = json.loads(buf.getvalue())
    assert res["interval"] == "information"
    assert list(table["lower"]) == res["lower"] and list(table["upper"]) == res["upper"]
    at.radio(key="pb_interval").set_value("bootstrap").run()
    assert not at.exception, at.exception
    assert at.query_params["interval"] == "bootstrap"
    assert any("95% interval from 20 bootstrap replicates" in c.value for c in at.caption)
    # the link opens the same choice
    again = AppTest.from_file(APP, default_timeout=120)
    again.run()
    again.query_params.update(bootstrap="20", propensity="em", interval="bootstrap")
    again.switch_page("pages/position_bias.py").run()
    assert not again.exception, again.exception
    assert again.radio(key="pb_interval").value == "bootstrap"
    # a method without a choice shows no control
    at.multiselect(key="pb_methods").set_value(["randomization"])
    at.run()
    assert not at.exception, at.exception
    assert not [r for r in at.radio if r.key == "pb_interval"]
