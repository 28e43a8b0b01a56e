"""Data page, 'Large logs' section: register a Parquet folder, see CTR and EM from its statistics."""

import uuid
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from ulr.engines import sources
from ulr.simulate import simulate_clicks

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_register_parquet_folder_then_ctr_and_em(tmp_path):
    df = simulate_clicks(queries=20, docs_per_query=5, sessions=1500, seed=6).df
    df.iloc[:3000].to_parquet(tmp_path / "a.parquet")
    df.iloc[3000:].to_parquet(tmp_path / "b.parquet")
    name = f"lake_{uuid.uuid4().hex[:6]}"
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("pages/data.py").run()
    assert not at.exception, at.exception
    at.text_input(key="src_name").set_value(name)
    at.text_input(key="src_where").set_value(str(tmp_path / "*.parquet"))
    at.button(key="FormSubmitter:source_form-Register and aggregate").click().run()
    assert not at.exception, at.exception
    assert any(name in s.value and f"{len(df):,} rows" in s.value for s in at.success)
    at.selectbox(key="src_pick").set_value(name).run()
    at.button(key="src_em").click().run()
    assert not at.exception, at.exception
    theta = at.dataframe[-1].value["theta"].to_numpy()
    truth = df.groupby("position")["true_theta"].mean().to_numpy()
    assert np.max(np.abs(theta - truth / truth[0])) < 0.1  # 7,500 rows: loose but real
    assert any("need the rows" in i.value for i in at.info)
    assert sources.get(name)["partitions"] == 2
    # a folder that does not exist: one sentence, nothing registered
    at.text_input(key="src_name").set_value(name + "_x")
    at.text_input(key="src_where").set_value(str(tmp_path / "none" / "*.parquet"))
    at.button(key="FormSubmitter:source_form-Register and aggregate").click().run()
    assert any(e.value.startswith("Not registered: no file matches") for e in at.error)
    assert sources.get(name + "_x") is None
