"""Off-policy evaluation page through Streamlit's AppTest."""

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from ulr.data import catalog, ingest
from ulr.ope import registry
from ulr.ope.evaluate import evaluate_log
from ulr.ope.slate import LABELS as SLATE_LABELS

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "off_policy.py")
SAMPLE = ROOT / "data" / "sample_ope.csv"


def run_page(dataset=None):
    at = AppTest.from_file(PAGE, default_timeout=120)
    if dataset:
        at.session_state["dataset"] = dataset
    at.run()
    assert not at.exception, at.exception
    return at


def press(at, label):
    [b for b in at.button if b.label == label][0].click().run()
    assert not at.exception, at.exception
    return at


def metrics(at):
    return {m.label: m.value for m in at.metric}


def test_default_falls_back_to_the_bundled_sample_with_sensible_warnings():
    at = run_page()
    assert at.title[0].value == "Off-policy evaluation"
    assert "has no `propensity` column" in at.info[0].value
    t = at.dataframe[0].value
    # the estimators in words, no code and no "se" header (the codes are the CLI's)
    assert list(t["method"])[:4] == ["IPS", "clipped IPS", "SNIPS", "DR"]
    assert t["method"].iloc[4].startswith("Logging policy") and "estimator" not in t
    assert "standard error" in t and "se" not in t
    assert (t["lower"] <= t["value"]).all() and (t["value"] <= t["upper"]).all()
    lib = evaluate_log(ingest.open_file(SAMPLE))  # same defaults as the page
    assert t.set_index("method").loc["SNIPS", "value"] == pytest.approx(lib.estimate("snips"))
    warnings = [w.value for w in at.warning]
    assert len(warnings) == 1 and warnings[0].startswith("Small sample")
    assert metrics(at)["Rows evaluated"] == f"{lib.diagnostics['n']:,}"
    assert len(at.get("plotly_chart")) == 1 and len(at.get("download_button")) == 1


def test_uniform_target_is_on_policy():
    at = run_page()
    at.selectbox(key="ope_target").select("uniform").run()
    assert not at.exception
    t = at.dataframe[0].value
    assert t["value"].iloc[0] == pytest.approx(t["value"].iloc[-1])  # IPS, logging policy
    assert metrics(at)["Rows evaluated"] == "10,000"


def test_dataset_with_propensities_and_a_target_column(tmp_path):
    df = pd.read_csv(SAMPLE)
    df["target_prob"] = 0.1
    path = tmp_path / "ope_target.csv"
    df.to_csv(path, index=False)
    ingest.load_log(path, "ope with target", cur=catalog.cursor(), replace=True)
    at = run_page("ope with target")
    assert not at.info  # the current dataset has propensities: no fallback notice
    assert at.radio(key="ope_dataset").value == "ope with target"
    at.selectbox(key="ope_target").select("column").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="ope_column").value == "target_prob"
    t = at.dataframe[0].value.set_index("method")
    assert t.loc["SNIPS", "value"] == pytest.approx(t["value"].iloc[-1])  # logging policy


def test_log_without_features_shows_a_readable_error(tmp_path):
    df = pd.read_csv(SAMPLE).drop(columns=[f"feature_{k}" for k in range(1, 6)])
    path = tmp_path / "ope_nofeat.csv"
    df.to_csv(path, index=False)
    ingest.load_log(path, "ope without features", cur=catalog.cursor(), replace=True)
    at = run_page("ope without features")
    # the page names its own control, never a command-line flag
    note = " ".join(i.value for i in at.info)
    assert "**Target policy**" in note and "--" not in note
    assert at.selectbox(key="ope_target").value == "uniform"
    assert not at.error and at.dataframe


def test_simulation_shows_bias_and_variance_against_the_truth():
    at = run_page()
    at.segmented_control(key="ope_view").set_value("Simulation: bias and variance").run()
    assert "press **Run simulation**" in at.info[0].value
    at.number_input(key="sim_runs").set_value(40)
    at.number_input(key="sim_rows").set_value(300)
    at.checkbox(key="sim_ci").check()
    at.number_input(key="sim_boot").set_value(100)
    press(at, "Run simulation")
    assert not at.error
    t = at.dataframe[0].value
    assert list(t["method"]) == ["IPS", "clipped IPS", "SNIPS", "DR"]
    assert {"truth", "bias", "sd", "rmse", "coverage"} <= set(t.columns)
    from tests import stakeholder as S  # headers in words (it showed bias_se, relative_bias)
    assert S.problems(" | ".join(t.columns)) == [] and "relative bias" in t
    assert t["truth"].nunique() == 1 and (t["draws"] == 40).all()
    from ulr.quantity import show  # the tile reads as every rate does (issue 50)
    assert metrics(at)["True value of the target"] == show("rate", t["truth"].iloc[0])
    assert len(at.get("plotly_chart")) == 3  # box plot, bias/sd plane, intervals
    # the study's verdict, set when it was built, is drawn as it is
    assert any(m.value.startswith("**Over 40 simulated logs,") and "smallest RMSE" in m.value
               for m in at.markdown)
    # the result stays after other interactions (cached, kept in the session)
    at.selectbox(key="sim_pick").select("dr").run()
    assert not at.exception and len(at.dataframe) == 1


def test_learning_on_the_sample_and_in_a_simulation():
    at = run_page()
    at.segmented_control(key="ope_view").set_value("Learn a policy").run()
    at.number_input(key="crm_steps").set_value(40)
    press(at, "Learn a policy")
    assert not at.error
    ev = at.dataframe[0].value
    assert list(ev["method"])[:2] == ["IPS", "SNIPS"]
    assert ev["method"].iloc[2].lower().startswith("logging policy")
    # rates shown within [0, 1], like the log view's table (it was drawn unclipped)
    assert ((ev[["value", "lower", "upper"]] >= 0) & (ev[["value", "lower", "upper"]] <= 1)
            ).all().all()
    assert len(at.dataframe[1].value) == 5  # one weight per feature
    assert len(at.get("plotly_chart")) == 1
    at.radio(key="crm_data").set_value("simulation").run()
    assert "Press **Learn a policy**" in at.info[0].value
    at.number_input(key="crm_rows").set_value(3000)
    press(at, "Learn a policy")
    m = metrics(at)
    assert float(m["True value of the learned policy"].rstrip("%")) > 10  # logging is 10% here
    # the verdict leads, and the headline tiles show intervals in plain sight (%)
    assert any("badge[" in md.value for md in at.markdown)
    assert "%" in m["Learned policy (held out), SNIPS"]
    deltas = {x.label: x.delta for x in at.metric}
    assert "interval" in deltas["Learned policy (held out), SNIPS"]
    assert "interval" in deltas["Difference"]


def test_links_fill_each_view_and_are_written_back():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update(view="Evaluate a log", dataset="bundled-ope-sample", target="uniform",
                           temperature="2.5", action="position", estimators="ips,snips,bogus",
                           seed="4")
    at.run()
    assert not at.exception and not at.error
    assert not at.warning and "does not exist" not in " ".join(i.value for i in at.info)
    assert at.radio(key="ope_dataset").value == "bundled-ope-sample"
    assert at.query_params["dataset"] == "bundled-ope-sample"  # not the app-wide dataset
    assert at.selectbox(key="ope_target").value == "uniform"
    assert at.number_input(key="ope_temp").value == 2.5
    assert at.selectbox(key="ope_action").value == "position"
    assert at.multiselect(key="ope_estimators").value == ["ips", "snips"]
    assert at.number_input(key="ope_seed").value == 4
    assert list(at.dataframe[0].value["method"])[:2] == ["IPS", "SNIPS"]
    assert at.query_params["estimators"] == "ips,snips" and at.query_params["seed"] == "4"

    sim = AppTest.from_file(PAGE, default_timeout=120)
    sim.query_params.update(view="Simulation: bias and variance", sim_rows="300",
                            sim_runs="40", sim_target="reversed", sim_estimators="dr",
                            sim_logging="softmax", sim_seed="9", sim_contexts="9999")
    sim.run()
    assert not sim.exception
    assert sim.segmented_control(key="ope_view").value == "Simulation: bias and variance"
    assert sim.number_input(key="sim_rows").value == 300
    assert sim.number_input(key="sim_runs").value == 40
    assert sim.query_params["sim_runs"] == "40"
    assert sim.selectbox(key="sim_target").value == "reversed"
    assert sim.selectbox(key="sim_logging").value == "softmax"
    assert sim.multiselect(key="sim_est").value == ["dr"]
    assert sim.number_input(key="sim_seed").value == 9
    assert sim.number_input(key="sim_contexts").value == 20  # out of range: the default

    crm = AppTest.from_file(PAGE, default_timeout=120)
    crm.query_params.update(view="Learn a policy", crm_data="simulation", crm_objective="ips",
                            crm_steps="50", crm_seed="2")
    crm.run()
    assert not crm.exception
    assert crm.radio(key="crm_data").value == "simulation"
    assert crm.selectbox(key="crm_obj").value == "ips"
    assert crm.number_input(key="crm_steps").value == 50
    assert crm.number_input(key="crm_seed").value == 2
    assert crm.query_params["view"] == "Learn a policy"


def alerts(at):
    return [e.value for kind in ("info", "warning", "error", "success")
            for e in getattr(at, kind)]


def test_log_from_several_loggers_explains_which_estimate_to_trust(tmp_path):
    from ulr.ope.loggers import make_multi_logger_log

    df, _ = make_multi_logger_log(sessions=3000, seed=1)  # real-log shape, CTR < 1%
    path = tmp_path / "two_loggers.csv"
    df.to_csv(path, index=False)
    ingest.load_log(path, "two loggers", cur=catalog.cursor(), replace=True)
    at = run_page("two loggers")
    at.selectbox(key="ope_target").select("uniform").run()
    assert not at.exception and not at.error
    t = at.dataframe[0].value
    assert {registry.label("wips"), registry.label("balanced-ips")} <= set(t["method"])
    assert "variance vs pooled IPS" in t.columns
    assert "Several loggers" in [h.value for h in at.subheader]
    per = at.dataframe[1].value
    assert list(per["logger"]) == ["l0", "l1"]
    assert per["WIPS weight"].sum() == pytest.approx(1.0)
    assert not any("propensities do not look" in a for a in alerts(at))  # no false alarm
    text = " ".join(m.value for m in at.markdown)
    assert "Trust balanced IPS" in text
    shown = [w.value for w in at.warning]
    press(at, "Add to report")
    from ulr.report import saved as reports

    item = reports.items(at.session_state["report_id"])[-1]  # saved in the store at once
    assert "uniform over each query's documents" in item.title
    assert item.caveats == shown  # the warnings shown, word for word
    assert item.evidence["rows"] == 9000 and item.evidence["clicks"] == df["click"].sum()
    assert item.evidence["sessions"] == 3000
    assert {"target policy", "estimators", "seed"} <= set(item.settings)
    assert "clipped IPS" in item.settings["estimators"]  # in words, as the table reads
    # the takeaway rests on the estimate the page says to trust, never on pooled IPS
    assert item.verdict["basis"] == "balanced-ips" and "(by balanced IPS:" in item.takeaway


def test_no_alert_names_a_command_line_flag(tmp_path):
    import re

    df = pd.read_csv(SAMPLE).drop(columns=[f"feature_{k}" for k in range(1, 6)])
    df["propensity"] = df["position"].map({1: 1.0, 2: 0.6, 3: 0.45})  # a broken log
    path = tmp_path / "broken.csv"
    df.to_csv(path, index=False)
    ingest.load_log(path, "ope broken", cur=catalog.cursor(), replace=True)
    at = run_page("ope broken")
    msgs = alerts(at)
    assert any("propensities do not look" in m for m in msgs)
    assert not [m for m in msgs if re.search(r"(^|\s)--[a-z]", m)], msgs


def test_rankings_section_shows_the_three_slate_estimators():
    at = run_page()
    assert not at.exception and not at.error
    assert not [d for d in at.dataframe if "assumption" in d.value.columns]  # closed: not run
    at.session_state["ope_slates_open"] = True  # the visitor opens the rankings section
    at.run()
    tables = [d.value for d in at.dataframe]
    slate = [t for t in tables if "assumption" in t.columns]
    assert len(slate) == 1 and list(slate[0]["method"]) == [
        SLATE_LABELS[e] for e in ("sips", "iips", "rips")]
    assert (slate[0]["lower"] <= slate[0]["value"]).all()
    assert any(m.value.startswith("**The target ranking") and "clicks per ranking" in m.value
               for m in at.markdown)  # the slate result's own verdict
    at.selectbox(key="ope_target").select("uniform").run()
    assert any("ranking target" in i.value for i in at.info)


def test_learned_policy_table_keeps_rates_within_0_1():
    """A small simulated log with a high click rate: IPS's interval of the learned policy
    passes 1; the table shows it clipped, and a caption names IPS."""
    at = run_page()
    at.segmented_control(key="ope_view").set_value("Learn a policy").run()
    at.radio(key="crm_data").set_value("simulation").run()
    at.number_input(key="crm_rows").set_value(300)
    at.number_input(key="crm_base").set_value(0.85)
    at.number_input(key="crm_steps").set_value(40)
    press(at, "Learn a policy")
    assert not at.exception and not at.error
    ev = at.dataframe[0].value[["value", "lower", "upper"]]
    assert ((ev >= 0) & (ev <= 1)).all().all()
    clipped = [c.value for c in at.caption if "left the range of a click rate" in c.value]
    assert len(clipped) == 1 and clipped[0].startswith("IPS")


# issue 28: new estimators, the interval choice, 'Choose for me', Cascade-DR

def test_choose_for_me_intervals_and_new_estimators():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    at.multiselect(key="ope_estimators").set_value(["ips", "dr", "sndr", "switch-dr", "dros"])
    at.selectbox(key="ope_interval").select("bernstein")
    at.toggle(key="ope_auto").set_value(True).run()
    assert not at.exception, at.exception
    t = at.dataframe[0].value
    assert list(t["method"])[:-1] == [registry.label(e) for e in
                                      ("ips", "dr", "sndr", "switch-dr", "dros", "auto")]
    chosen = [i.value for i in at.info if "Chosen for you" in i.value]
    assert len(chosen) == 1 and "SLOPE" in chosen[0]
    assert any("empirical bernstein bounds" in c.value for c in at.caption)
    assert not any("--" in m.value for m in [*at.info, *at.warning, *at.error])
    assert not [d for d in at.dataframe if "assumption" in d.value.columns]  # section closed
    at.session_state["ope_slates_open"] = True  # the visitor opens the rankings section
    at.run()
    at.checkbox(key="ope_cascade_dr").check().run()
    assert not at.exception, at.exception
    slate = [d.value for d in at.dataframe if "assumption" in d.value.columns]
    assert list(slate[0]["method"]) == [SLATE_LABELS[e]
                                        for e in ("sips", "iips", "rips", "cascade-dr")]


def test_concentration_bounds_with_the_default_estimators():
    """SNIPS (the verdict's usual basis) has no Hoeffding bound: it gets the bootstrap's
    interval instead, a warning says so, and the headline shows an interval (issue 35: a
    verdict never rests on an estimate without one)."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    at.selectbox(key="ope_interval").select("hoeffding").run()
    assert not at.exception, at.exception
    assert any("SNIPS has percentile bootstrap intervals instead" in w.value
               for w in at.warning)
    assert any("interval" in str(m.delta) and "n/a" not in str(m.delta) for m in at.metric)


def test_dataset_in_the_link_names_the_log_and_an_old_log_key_is_ignored(tmp_path):
    """``dataset=`` is Off-policy's key as every page's; the retired ``log=`` of links from
    before the rename is ignored with one sentence and dropped (docs/glossary.md)."""
    ingest.load_log(SAMPLE, "ope link", cur=catalog.cursor(), replace=True)
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update(dataset="ope link", target="uniform")
    at.run()
    assert not at.exception and not at.info
    assert at.radio(key="ope_dataset").value == "ope link"
    assert at.query_params["dataset"] == "ope link"
    at.radio(key="ope_dataset").set_value("bundled-ope-sample").run()
    assert at.query_params["dataset"] == "bundled-ope-sample"  # the choice survives a share

    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update(dataset="ope link", log="sample", target="uniform")
    at.run()
    assert not at.exception
    assert at.radio(key="ope_dataset").value == "ope link"  # dataset=, not the old log=
    assert ("This link was made before a setting was renamed: its “log” is ignored, and the "
            "page reads “dataset” instead.") in [i.value for i in at.info]
    assert at.query_params["dataset"] == "ope link" and "log" not in at.query_params


def test_the_learned_policy_weighs_the_logs_mapping_like_the_evaluated_one(tmp_path):
    """A log whose sessions are not shown lists (each slot has its own timestamp, mapped
    as session_id): the learned policy's verdict gives the same mapping reason as the
    target's, as ``ope --learn`` does."""
    from ulr.simulate import obd_like_log

    path = tmp_path / "rows.csv"
    obd_like_log(impressions=600, row_timestamps=True).to_csv(path, index=False)
    res = ingest.load_log(path, "ope rows", cur=catalog.cursor(), replace=True,
                          mapping={"query_id": "user_feature_0", "session_id": "timestamp",
                                   "doc_id": "item_id", "features": ["user-item_affinity_*"]})
    [warn] = res.warnings

    def reasons(at):
        return [m.value for e in at.expander if e.label == "Why this verdict"
                for m in e.markdown]

    at = run_page("ope rows")
    assert any(warn.message in r for r in reasons(at))  # the evaluated target's verdict
    at.segmented_control(key="ope_view").set_value("Learn a policy").run()
    at.number_input(key="crm_steps").set_value(20)
    press(at, "Learn a policy")
    assert any(warn.message in r for r in reasons(at)), reasons(at)


def test_the_slate_verdict_weighs_the_logs_mapping_like_the_cli(tmp_path, cli):
    """A log where most queries hold one document (one-row sessions of their own beside
    complete rankings): a warning that does not stop slates, so the rankings are judged,
    and the page's slate verdict gives its reason as ``ope-slate`` does."""
    import json

    df = pd.read_csv(SAMPLE)
    extra = df[df["position"] == 1].head(150).copy()
    extra["session_id"] = "one-" + extra["session_id"]
    extra["query_id"] = "q-" + extra["session_id"]
    path = tmp_path / "one_doc.csv"
    pd.concat([df, extra]).to_csv(path, index=False)
    [warn] = ingest.load_log(path, "ope one doc", cur=catalog.cursor(), replace=True).warnings
    assert warn.code == "single_document_queries" and "slate" not in warn.blocks
    code, out, err = cli("ope-slate", "--db", catalog.store_of(), "--name", "ope one doc",
                         "--json")
    assert code == 0, err
    assert warn.message in [r["message"] for r in json.loads(out)["verdict"]["reasons"]]
    at = run_page("ope one doc")
    at.session_state["ope_slates_open"] = True  # the visitor opens the rankings section
    at.run()
    reasons = [m.value for e in at.expander if e.label == "Why this verdict" for m in e.markdown]
    # once under the evaluated policy's verdict, once under the rankings'
    assert sum(warn.message in r for r in reasons) == 2, reasons
