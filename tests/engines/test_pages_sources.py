"""Registered sources in the dashboard: the Data page registers a Parquet folder and shows
its CTR from the stored statistics; pages that need rows say so in one sentence."""

import uuid
from pathlib import Path

import numpy as np
import pytest

from ulr.quantity import rate_of
from streamlit.testing.v1 import AppTest

from ulr.engines import sources
from ulr.simulate import simulate_clicks

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(autouse=True)
def opened(monkeypatch, tmp_path_factory):
    """The operator opens the tests' temporary folders and a local Spark to the browser."""
    monkeypatch.setenv("ULR_DATA_ROOTS", str(tmp_path_factory.getbasetemp()))
    monkeypatch.setenv("ULR_SPARK_MASTERS", "local[2],spark://127.0.0.1:1")


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    df = simulate_clicks(queries=20, positions=5, sessions=1500, seed=6).df
    root = tmp_path_factory.mktemp("pages_lake")
    df.iloc[:3000].to_parquet(root / "a.parquet")
    df.iloc[3000:].to_parquet(root / "b.parquet")
    return root, df



def _app_on_source(lake, prefix: str, page: str | None = None):
    """A fresh source registered on the lake, and the app opened on it (then on ``page``)."""
    name = f"{prefix}_{uuid.uuid4().hex[:6]}"
    sources.add(name, path=str(lake[0]))
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["source"] = name
    at.run()
    if page is not None:
        at.switch_page(page).run()
    return at, name


def test_register_parquet_folder_then_summary_and_ctr(lake):
    root, df = lake
    name = f"lake_{uuid.uuid4().hex[:6]}"
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("pages/data.py").run()
    assert not at.exception, at.exception
    at.text_input(key="src_name").set_value(name)
    at.text_input(key="src_where").set_value(str(root / "*.parquet"))
    at.button(key="FormSubmitter:source_form-Register and aggregate").click().run()
    assert not at.exception, at.exception
    assert any(name in s.value and f"{len(df):,} rows" in s.value for s in at.success)
    assert sources.get(name)["partitions"] == 2
    # the new source is the current one: sidebar, URL and the page's summary
    assert at.session_state["source"] == name
    assert at.query_params["source"] == name
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows"] == f"{len(df):,}"
    assert metrics["Overall CTR"] == rate_of(df.click.mean(), len(df)).text()
    assert metrics["Query-document pairs"] == f"{len(df.groupby(['query_id', 'doc_id'])):,}"
    import base64
    import json
    y = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["y"]
    y = np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]) if isinstance(y, dict) \
        else np.asarray(y, dtype=float)
    np.testing.assert_allclose(y,
                               df.groupby("position").click.mean().to_numpy(), rtol=1e-12)
    assert any("need the rows themselves" in i.value for i in at.info)
    # a folder that does not exist: one sentence, nothing registered, selection unchanged
    at.text_input(key="src_name").set_value(name + "_x")
    at.text_input(key="src_where").set_value(str(root / "none" / "*.parquet"))
    at.button(key="FormSubmitter:source_form-Register and aggregate").click().run()
    assert [e.value for e in at.error] and \
        at.error[0].value.startswith("Not registered: no Parquet or CSV file matches")
    assert sources.get(name + "_x") is None
    assert not sources.stats_dir(name + "_x").exists()
    # a file without the required columns: one sentence, nothing registered
    df.drop(columns=["click"]).to_parquet(root.parent / f"{name}_noclick.parquet")
    at.text_input(key="src_name").set_value(name + "_y")
    at.text_input(key="src_where").set_value(str(root.parent / f"{name}_noclick.parquet"))
    at.button(key="FormSubmitter:source_form-Register and aggregate").click().run()
    assert at.error[0].value.startswith("Not registered: the source has no 'click' column")
    assert sources.get(name + "_y") is None and not sources.stats_dir(name + "_y").exists()
    # the sidebar lists it beside the datasets (picking it in a browser: tests/e2e)
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["source"] = name
    at.run()
    picker = at.sidebar.selectbox[0]
    assert picker.value == f"{name} (registered source)" and "sample" in picker.options


def test_spark_unreachable_is_one_sentence_on_the_data_page():
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("pages/data.py").run()
    at.text_input(key="src_name").set_value("far")
    at.radio(key="src_engine").set_value("spark")
    at.text_input(key="src_where").set_value("warehouse.clicks")
    at.selectbox(key="src_master").set_value("spark://127.0.0.1:1")
    at.button(key="FormSubmitter:source_form-Register and aggregate").click().run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        "Not registered: Spark is not reachable at 'spark://127.0.0.1:1' (no answer from "
        "127.0.0.1:1 within 5 s)."]
    assert sources.get("far") is None


PAGES_THAT_NEED_ROWS = ["pages/compare_rankers.py", "pages/off_policy.py"]


@pytest.mark.parametrize("page", PAGES_THAT_NEED_ROWS)
def test_pages_that_need_rows_say_so_in_one_sentence(lake, page):
    at, name = _app_on_source(lake, "rows", page)
    assert not at.exception, at.exception
    said = [i.value for i in at.info if "needs the rows themselves" in i.value]
    assert said == [f"“{name}” is a registered source whose rows stay where they live, and "
                    "this page needs the rows themselves (Position bias and the Data page work "
                    "from its stored statistics): pick a dataset in the sidebar, or upload a "
                    "sample of the log on the Data page."]
    assert any("Data page" in link.proto.label for link in at.get("page_link"))
    assert not at.error


def test_bandit_lab_simulates_but_its_replay_needs_rows(lake):
    at, name = _app_on_source(lake, "bandit", "pages/bandit_lab.py")
    assert not at.exception, at.exception
    assert any("needs the rows themselves" in i.value for i in at.info)
    assert any(b.key and "bl" in str(b.key) for b in at.get("form_submit_button")) or \
        at.get("form")  # the synthetic lab's form is still there


@pytest.mark.parametrize("page", ["pages/debiased_recs.py", "pages/severity_sweep.py"])
def test_simulation_pages_do_not_need_the_dataset(lake, page):
    at, name = _app_on_source(lake, "sim", page)
    assert not at.exception, at.exception
    assert not [i for i in at.info if "needs the rows themselves" in i.value]


def test_remove_a_source_on_the_data_page(lake):
    at, name = _app_on_source(lake, "rm", "pages/data.py")
    assert not at.exception, at.exception
    assert at.button(key="src_remove").disabled  # only once the box is ticked
    at.checkbox(key="src_remove_sure").check().run()
    at.button(key="src_remove").click().run()
    assert not at.exception, at.exception
    assert sources.get(name) is None and not sources.stats_dir(name).exists()
    assert (lake[0] / "a.parquet").exists()
    assert at.session_state["source"] is None
    assert any(f"Removed the source “{name}”" in s.value for s in at.success)
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    assert f"{name} (registered source)" not in at.sidebar.selectbox[0].options


def test_home_shows_a_sources_figures_from_its_statistics(lake):
    _, df = lake
    at, name = _app_on_source(lake, "home")
    assert not at.exception, at.exception
    assert f"“{name}” (registered source)" in at.subheader[0].value
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows"] == f"{len(df):,}" and metrics["Positions"] == "5"
    assert metrics["Overall CTR"] == rate_of(df.click.mean(), len(df)).text() and "Randomized" not in metrics
    assert not [i for i in at.info if "needs the rows themselves" in i.value]
    assert len(at.get("page_link")) >= 9  # the questions are all still offered


def test_register_a_spark_table_on_the_data_page(spark, lake):
    """A table of Spark's catalog (a global temporary view: visible to every session of
    the JVM), registered on the Data page with the spark engine: its CTR summary comes
    from the statistics Spark aggregated."""
    _, df = lake
    view = f"clicks_{uuid.uuid4().hex[:6]}"
    spark.createDataFrame(df).createOrReplaceGlobalTempView(view)
    name = f"tbl_{uuid.uuid4().hex[:6]}"
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/data.py").run()
    at.text_input(key="src_name").set_value(name)
    at.radio(key="src_engine").set_value("spark")
    at.text_input(key="src_where").set_value(f"global_temp.{view}")
    at.button(key="FormSubmitter:source_form-Register and aggregate").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    meta = sources.get(name)
    assert (meta["engine"], meta["tbl"], meta["path"], meta["partitions"]) == \
        ("spark", f"global_temp.{view}", None, 1)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows"] == f"{len(df):,}"
    assert metrics["Overall CTR"] == rate_of(df.click.mean(), len(df)).text()
    ctr = sources.ctr_by_position(name)
    np.testing.assert_array_equal(ctr["clicks"], df.groupby("position").click.sum())


def test_a_link_to_an_unknown_or_removed_source_falls_back_with_a_sentence(lake):
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["source"] = "no_such_source"
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["source"] is None
    assert [w.value for w in at.warning] == [
        "The link names a registered source “no_such_source” that does not exist here; "
        "showing a dataset instead."]
    assert "registered source" not in at.sidebar.selectbox[0].value
    at, name = _app_on_source(lake, "gone")
    assert at.session_state["source"] == name
    sources.remove(name)  # e.g. from the CLI, while the page is open
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["source"] is None
    # AppTest runs the page alone after the first run (no sidebar), so the sentence waits
    # for the picker in the session state; a real browser shows it (the picker runs first)
    said = [w.value for w in at.warning] + [at.session_state["_ulr_flash"]] \
        if "_ulr_flash" in at.session_state else [w.value for w in at.warning]
    assert said == [f"The registered source “{name}” was removed elsewhere; showing a "
                    "dataset instead."]


def test_a_source_whose_query_column_is_a_pair_key_says_so_on_both_pages(tmp_path, cli):
    """The Data page shows the source's mapping warning as it does a dataset's, and the
    position-bias verdict weighs it as `propensity --source` does (the same reason)."""
    import json

    df = simulate_clicks(queries=20, positions=5, sessions=600, seed=6).df
    df["query_id"] = df.query_id.astype(str) + ":" + df.doc_id.astype(str)
    (tmp_path / "lake").mkdir()
    df.to_parquet(tmp_path / "lake" / "a.parquet")
    at, name = _app_on_source((tmp_path / "lake", df), "pair", "pages/data.py")
    assert not at.exception, at.exception
    said = [w.value for w in at.warning if "have a single document" in w.value]
    n_q = df.query_id.nunique()  # every "query" holds one document
    assert said == [f"{n_q:,} of {n_q:,} queries have a single document, so there is "
                    "nothing to rank within them: 'query_id', mapped to query_id, looks "
                    "unique per row; map a column that groups one shown list to query_id: "
                    "the query or context that all its documents answered."]
    at.query_params["bootstrap"] = "10"
    at.switch_page("pages/position_bias.py").run()
    assert not at.exception, at.exception
    why = [m.value for e in at.expander if e.label == "Why this verdict" for m in e.markdown]
    assert f"- {said[0]}" in why, why
    r = cli("propensity", "--method", "em", "--source", name, "--bootstrap", "10", "--json")
    verdict = json.loads(r.out)["verdict"]
    assert verdict["level"] == "invalid" and \
        [r["message"] for r in verdict["reasons"]][0] == said[0]
