"""Compare rankers and Severity sweep pages through Streamlit's AppTest."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from ulr import metrics, propensity, rankers

ROOT = Path(__file__).resolve().parents[2]
COMPARE = str(ROOT / "pages" / "compare_rankers.py")
SWEEP = str(ROOT / "pages" / "severity_sweep.py")
METRICS = ["arp", "dcg", "ndcg@10", "auc", "pauc", "local_auc"]


def run_page(path):
    at = AppTest.from_file(path, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def metric_values(at):
    return {m.label: (m.value, m.delta) for m in at.metric}


# ---------------------------------------------------------------- compare rankers


def test_compare_defaults_to_true_theta_on_the_sample():
    at = run_page(COMPARE)
    assert at.title[0].value == "Compare rankers"
    src = at.selectbox(key="cr_theta_from")
    assert src.value == "true theta (recorded in the log)"
    assert "estimated: randomization" in src.options and "typed theta" in src.options
    # every position-bias method is offered (no "may not be installed" filter)
    assert [o for o in src.options if o.startswith("estimated: ")] == [
        f"estimated: {m}" for m in propensity.METHODS]
    assert not at.error and not at.warning
    m = metric_values(at)
    arp, delta = m["IPW ARP (lower is better)"]
    assert delta.startswith("-")  # the sample has eta = 1: IPW lowers ARP
    table = at.dataframe[0].value
    assert list(table["metric"]) == METRICS
    assert {"naive", "naive lower", "ipw", "ipw upper", "delta", "p_value", "better"} <= set(
        table.columns)
    assert (table["naive lower"] <= table["naive"]).all()
    assert (table["ipw"] <= table["ipw upper"]).all()
    shown = arp.split(" [")[0]  # value [interval], rounded to its standard error
    places = len(shown.split(".")[1]) if "." in shown else 0
    assert "[" in arp and places <= 2  # ARP from ~100 test queries: no fake decimals
    assert table.set_index("metric").loc["arp", "ipw"] == pytest.approx(
        float(shown), abs=0.5 * 10 ** -places)
    assert len(at.get("plotly_chart")) == 1
    assert len(at.get("download_button")) == 1
    # the caption names the pAUC range and local AUC fraction the metrics used
    assert any(f"max FPR {metrics.DEFAULT_MAX_FPR:g}; local AUC counts the top "
               f"{metrics.DEFAULT_U:.0%}" in c.value for c in at.caption)


def test_compare_with_estimated_and_typed_theta():
    at = run_page(COMPARE)
    at.selectbox(key="cr_theta_from").select("estimated: randomization").run()
    assert not at.exception and not at.error
    assert "θ used: 1," in at.caption[1].value
    at.selectbox(key="cr_theta_from").select("typed theta").run()
    at.text_input(key="cr_theta").input("1, 0.5").run()
    assert not at.exception
    assert any("position 10" in e.value for e in at.error)
    assert not at.dataframe
    at.text_input(key="cr_theta").input("1, abc").run()
    assert any("numbers separated by commas" in e.value for e in at.error)
    at.text_input(key="cr_theta").input(", ".join(f"{1 / k:.3f}" for k in range(1, 11))).run()
    assert not at.error and len(at.dataframe) == 1


def test_compare_boosted_learner_with_clipping():
    at = run_page(COMPARE)
    at.selectbox(key="cr_learner").select("gbdt")
    at.checkbox(key="cr_clip_on").check()
    at.number_input(key="cr_boot").set_value(200)
    at.run()
    assert not at.exception and not at.error
    assert list(at.dataframe[0].value["metric"]) == METRICS


# ---------------------------------------------------------------- severity sweep


def test_small_sweep_runs_shows_plot_and_is_cached(monkeypatch):
    calls = []
    real = rankers.severity_sweep

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(rankers, "severity_sweep", counting)
    at = run_page(SWEEP)
    assert at.title[0].value == "Severity sweep"
    assert at.selectbox(key="sw_method").options == ["none", *propensity.METHODS]
    assert "Run sweep" in at.info[0].value and not at.get("plotly_chart")

    def submit(a):
        a.text_input(key="sw_etas").input("1.5, 0")
        a.number_input(key="sw_queries").set_value(60)
        a.number_input(key="sw_sessions").set_value(8000)
        a.number_input(key="sw_runs").set_value(1)  # one run of a tiny log: fast
        a.selectbox(key="sw_method").select("randomization")
        a.button(key="FormSubmitter:sweep_form-Run sweep").click()
        a.run()
        assert not a.exception and not a.error

    submit(at)
    assert len(calls) == 1 and calls[0][0] == (0.0, 1.5)  # sorted
    assert len(at.get("plotly_chart")) == 1
    # one run has no interval: the verdict says so before the chart
    assert any(m.value.endswith("Inconclusive]") for m in at.markdown)
    assert any("one run has no interval" in m.value for m in at.markdown)
    summary = at.dataframe[0].value
    assert list(summary["eta"]) == [0.0, 1.5]
    assert {"naive", "ipw (true theta)", "ipw (estimated theta)"} <= set(summary.columns)
    # eta = 0: the true theta is flat, IPW equals naive; eta = 1.5: IPW lowers ARP
    change = summary.set_index("eta")["ipw (true theta) vs naive"]
    assert change[0.0] == pytest.approx(0.0) and change[1.5] < 0
    at.selectbox(key="sw_metric").select("ndcg@10").run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    assert len(at.get("download_button")) == 1

    # the same settings again, from another session: served from the cache
    other = run_page(SWEEP)
    submit(other)
    assert len(calls) == 1
    assert other.dataframe[0].value.equals(summary)


def test_sweep_rejects_bad_etas():
    at = run_page(SWEEP)
    at.text_input(key="sw_etas").input("0, x")
    at.button(key="FormSubmitter:sweep_form-Run sweep").click()
    at.run()
    assert not at.exception
    assert any("numbers separated by commas" in e.value for e in at.error)


def test_compare_settings_come_from_and_go_to_the_url():
    at = AppTest.from_file(COMPARE, default_timeout=120)
    at.query_params.update(propensity="estimated: randomization", learner="gbdt", seed="3",
                           bootstrap="200", clip="0.1", snips="1")
    at.run()
    assert not at.exception and not at.error
    assert at.selectbox(key="cr_theta_from").value == "estimated: randomization"
    assert at.selectbox(key="cr_learner").value == "gbdt"
    assert at.number_input(key="cr_seed").value == 3
    assert at.number_input(key="cr_boot").value == 200
    assert at.checkbox(key="cr_clip_on").value and at.number_input(key="cr_clip").value == 0.1
    assert at.checkbox(key="cr_snips").value
    # written back every run (with the app-wide dataset), so the link reproduces the view
    assert at.query_params["seed"] == "3" and at.query_params["dataset"] == "sample"
    # where θ comes from has its own key: ?source= names a registered source app-wide
    assert at.query_params["propensity"] == "estimated: randomization"
    assert "source" not in at.query_params
    assert not [w for w in at.warning if "registered source" in w.value]
    at.selectbox(key="cr_learner").select("linear").run()
    assert at.query_params["learner"] == "linear"
    # values that do not parse or are out of range fall back to the defaults
    # a link from before the renames (theta_source=, theta_from=) is ignored, in one sentence
    old = AppTest.from_file(COMPARE, default_timeout=120)
    old.query_params.update(theta_from="estimated: randomization", seed="3")
    old.run()
    assert not old.exception
    assert old.selectbox(key="cr_theta_from").value == "true theta (recorded in the log)"
    assert ("This link was made before a setting was renamed: its “theta_from” is ignored, "
            "and the page reads “propensity” instead.") in [i.value for i in old.info]
    assert "theta_from" not in old.query_params
    bad = AppTest.from_file(COMPARE, default_timeout=120)
    bad.query_params.update(propensity="nope", seed="-4", bootstrap="x", clip="7", snips="no")
    bad.run()
    assert not bad.exception
    assert bad.selectbox(key="cr_theta_from").value == "true theta (recorded in the log)"
    assert bad.number_input(key="cr_seed").value == 0
    assert bad.number_input(key="cr_boot").value == 1000
    assert not bad.checkbox(key="cr_clip_on").value and not bad.checkbox(key="cr_snips").value
    assert bad.query_params["seed"] == "0" and bad.query_params["clip"] == "0"


def test_sweep_link_fills_the_form_and_reopens_a_finished_sweep():
    at = AppTest.from_file(SWEEP, default_timeout=120)
    at.query_params.update(etas="2,0.5", learner="linear", method="none", queries="40",
                           sessions="3000", runs="1", seed="5", metric="ndcg@10")
    at.run()
    assert not at.exception
    assert at.text_input(key="sw_etas").value == "2, 0.5"
    assert at.selectbox(key="sw_method").value == "none"
    assert at.number_input(key="sw_queries").value == 40
    assert at.number_input(key="sw_sessions").value == 3000
    assert at.number_input(key="sw_seed").value == 5
    assert not at.get("plotly_chart")            # never run on this server: asks to run
    assert at.query_params["etas"] == "0.5,2"     # written back, parsed and sorted
    at.button(key="FormSubmitter:sweep_form-Run sweep").click().run()
    assert not at.exception and not at.error
    assert at.selectbox(key="sw_metric").value == "ndcg@10"
    link = dict(at.query_params)

    # the same link in a new session shows the finished sweep without pressing Run
    other = AppTest.from_file(SWEEP, default_timeout=120)
    other.query_params.update(link)
    other.run()
    assert not other.exception and len(other.get("plotly_chart")) == 1
    assert other.selectbox(key="sw_metric").value == "ndcg@10"
    assert other.dataframe[0].value.equals(at.dataframe[0].value)
    # bad values fall back to the defaults
    bad = AppTest.from_file(SWEEP, default_timeout=120)
    bad.query_params.update(etas="x", queries="1", runs="99", learner="forest")
    bad.run()
    assert not bad.exception
    assert bad.text_input(key="sw_etas").value == "0, 0.5, 1, 1.5, 2"
    assert bad.number_input(key="sw_queries").value == 300
    assert bad.number_input(key="sw_runs").value == 3  # several seeds by default (verdict)
    assert bad.selectbox(key="sw_learner").value == "linear"


def test_compare_on_too_few_held_out_queries_is_an_inconclusive_answer(tmp_path):
    """20 queries hold out 6 < 32: thin evidence is an answer (issue #50): an inconclusive
    verdict saying what would settle it (more distinct queries), no error element, no CLI
    flag, no arrow on a tile, and the result can go to the report."""
    from ulr.data import ingest
    from ulr.simulate import simulate_clicks, write_log
    sim = simulate_clicks(queries=20, positions=5, sessions=600, features=3, seed=1)
    path = tmp_path / "few.csv"
    write_log(sim.df, str(path))
    ingest.load_log(path, "few queries", replace=True)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["dataset"] = "few queries"
    at.run()
    at.switch_page("pages/compare_rankers.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    marks = " ".join(m.value for m in at.markdown)
    assert "Too few test queries" in marks and "at least 32" in marks and "--" not in marks
    assert "more distinct queries" in marks
    badge = next(m.value for m in at.markdown if "badge[" in m.value)
    assert "Inconclusive" in badge
    assert any(b.label == "Add to report" for b in at.button)


def test_compare_several_learners_shows_the_significance_table():
    """Both learners: four rankers, a lettered significance table whose superscripts follow
    the corrected pairs, the pairs with raw and corrected p, Tukey's HSD, a CSV download."""
    from statsmodels.stats.multitest import multipletests
    at = run_page(COMPARE)
    assert at.selectbox(key="cr_correction").disabled  # one learner: one pair per metric
    at.selectbox(key="cr_learner").select("linear,gbdt").run()
    assert not at.exception and not at.error
    assert not at.selectbox(key="cr_correction").disabled
    assert at.selectbox(key="cr_correction").value == "holm"
    assert at.selectbox(key="cr_test").value == "randomization"
    sig, pairs, tukey = (d.value for d in at.dataframe)
    systems = ["naive linear", "ipw linear", "naive gbdt", "ipw gbdt"]
    assert list(sig["letter"]) == list("abcd") and list(sig["system"]) == systems
    assert list(sig.columns[2:]) == METRICS
    letter = dict(zip(systems, "abcd"))
    sup = dict(zip("abcd", "ᵃᵇᶜᵈ"))
    for m, block in pairs.groupby("metric"):
        np.testing.assert_allclose(block["p_adjusted"],
                                   multipletests(block["p_value"], method="holm")[1])
        for s in systems:  # the superscripts name exactly the pairs s wins after correction
            won = block[block["separated"] & (block["better"] == s)]
            beaten = sorted(letter[b if a == s else a] for a, b in zip(won["a"], won["b"]))
            cell = sig.set_index("system").loc[s, m]
            assert cell.endswith("".join(sup[c] for c in beaten))
            assert not any(sup[c] in cell for c in "abcd" if c not in beaten)
    assert len(pairs) == 6 * len(METRICS) and len(tukey) == 6 * len(METRICS)
    assert "after Holm correction" in at.markdown[1].value  # the verdict names its correction
    assert any(b.proto.label == "Download significance table (CSV)"
               for b in at.get("download_button"))
    assert len(at.get("plotly_chart")) == 1
    assert at.query_params["learner"] == "linear,gbdt"
    # Benjamini-Hochberg and the t-test, from the page's controls
    at.selectbox(key="cr_correction").select("bh")
    at.selectbox(key="cr_test").select("t").run()
    assert not at.exception and not at.error
    pairs = at.dataframe[1].value
    for _, block in pairs.groupby("metric"):
        np.testing.assert_allclose(block["p_adjusted"],
                                   multipletests(block["p_value"], method="fdr_bh")[1])
    assert any("paired t-test, Benjamini-Hochberg" in c.value for c in at.caption)
    assert "Benjamini-Hochberg-corrected p = " in at.markdown[1].value
    assert at.query_params["correction"] == "bh" and at.query_params["test"] == "t"


def _badge_and_takeaway(at):
    badge = next(m.value for m in at.markdown if "badge[" in m.value)
    return badge, [m.value for m in at.markdown]


def test_sweep_page_and_cli_give_the_same_verdict_with_their_defaults(cli):
    """One default, one answer: runs per η (3) is shared, so the page's verdict and
    ``sweep --json``'s agree on the same small world."""
    import json
    at = run_page(SWEEP)
    at.text_input(key="sw_etas").input("0, 1.5")
    at.number_input(key="sw_queries").set_value(40)
    at.number_input(key="sw_sessions").set_value(2000)
    assert at.number_input(key="sw_runs").value == rankers.SWEEP_RUNS
    at.button(key="FormSubmitter:sweep_form-Run sweep").click().run()
    assert not at.exception and not at.error
    rc, out, err = cli("sweep", "--etas", "0,1.5", "--queries", 40, "--sessions", 2000, "--json")
    assert rc == 0, err
    v = json.loads(out)["verdict"]
    badge, texts = _badge_and_takeaway(at)
    assert badge.endswith(f"{v['level'].capitalize()}]")
    assert f"**{v['takeaway']}**" in texts


def test_compare_page_and_cli_give_the_same_verdict_with_their_defaults(cli):
    """The page (θ estimated by randomization, default bootstrap) and ``rankers --json``
    (the same θ source, its defaults) print the same level and sentence."""
    import json

    from ulr.data import ingest
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/compare_rankers.py").run()
    at.selectbox(key="cr_theta_from").select("estimated: randomization").run()
    assert not at.exception and not at.error, at.exception
    assert at.number_input(key="cr_boot").value == rankers.N_BOOTSTRAP
    rc, out, err = cli("rankers", "--propensity", "randomization", "--input",
                       str(ingest.SAMPLE_CSV), "--json")
    assert rc == 0, err
    v = json.loads(out)["verdict"]
    badge, texts = _badge_and_takeaway(at)
    assert badge.endswith(f"{v['level'].capitalize()}]")
    assert f"**{v['takeaway']}**" in texts


def test_tiles_draw_an_arrow_only_for_a_difference_told_apart():
    """A tile whose difference cannot be told apart (or is none) draws no arrow; with θ = 1
    everywhere the two rankers are the same and every tile says so, arrowless."""
    from streamlit.proto.Metric_pb2 import Metric
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/compare_rankers.py").run()
    assert not at.exception, at.exception
    for m in at.metric:
        flat = any(w in (m.proto.delta or "") for w in ("cannot be told apart", "no difference",
                                                         "the same on every"))
        assert (m.proto.direction == Metric.NONE) == flat, (m.label, m.proto.delta)
    at.selectbox(key="cr_theta_from").select("typed theta").run()
    at.text_input(key="cr_theta").input(", ".join(["1"] * 10)).run()
    assert not at.exception, at.exception
    tiles = [m for m in at.metric if m.proto.delta]
    assert tiles and all(m.proto.direction == Metric.NONE for m in tiles)
    assert all("0.000000" not in m.proto.delta for m in tiles)


def test_theta_from_a_contradicted_randomization_is_invalid_on_the_page(tmp_path):
    """Compare rankers with θ from randomization on a production-ranked log declared
    randomized: invalid, with the same sentence as the CLI (issue #50)."""
    from ulr.data import ingest
    from ulr.simulate import simulate_clicks, write_log
    sim = simulate_clicks(queries=120, positions=6, sessions=4000, seed=2,
                          randomized_fraction=0.0)
    path = tmp_path / "prod.csv"
    write_log(sim.df.drop(columns=["randomized", "true_theta"]), str(path))
    ingest.load_log(path, "prod random theta", replace=True,
                    mapping={"constants": {"randomized": True}})
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.session_state["dataset"] = "prod random theta"
    at.run()
    at.switch_page("pages/compare_rankers.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="cr_theta_from").value == "estimated: em"  # what the log supports
    at.selectbox(key="cr_theta_from").select("estimated: randomization").run()
    assert not at.exception, at.exception
    badge = next(m.value for m in at.markdown if "badge[" in m.value)
    assert "Invalid" in badge
    assert any("The rows treated as randomized are not randomly ordered" in m.value
               for m in at.markdown)
