"""Position bias by segment on the Position bias page (AppTest)."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.propensity.test_propensity_segments import device_log

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


def test_split_by_device_draws_one_curve_per_segment(tmp_path):
    from ulr.data import ingest
    from ulr.simulate import write_log
    path = tmp_path / "devices.csv"
    write_log(device_log({"mobile": 1.6, "desktop": 0.7}, 5, sessions=2000), str(path))
    ingest.load_log(path, "device log", replace=True)
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["dataset"] = "device log"
    at.run()
    at.switch_page("pages/position_bias.py").run()
    at.multiselect(key="pb_methods").set_value(["em"])
    at.number_input(key="pb_boot").set_value(10)
    at.run()
    assert not at.exception, at.exception
    labels = [e.label for e in at.expander]
    assert "What this log can identify: Reliable" in labels  # shown before any estimate
    # folded when every position is identified: its sentence and table drawn when opened
    assert not any("Every position is linked to position 1" in m.value for m in at.markdown)
    at.session_state["pb_identify"] = True
    at.run()
    assert any("Every position is linked to position 1" in m.value for m in at.markdown)
    assert at.table  # the pairs linking each two positions
    box = at.selectbox(key="pb_by")
    assert box.options == ["(none)", "device (2 values)"]
    box.set_value("device").run()
    assert not at.exception, at.exception
    assert at.query_params["by"] in ("device", ["device"])
    chart = next(c for c in at.get("plotly_chart") if c.proto.id and "segment" in str(c.key))
    import json
    fig = json.loads(chart.proto.spec)
    assert sorted(t["name"] for t in fig["data"]) == ["device = desktop", "device = mobile"]
    texts = " ".join(m.value for m in at.markdown)
    assert "Position bias differs by device" in texts
    table = next(d.value for d in at.dataframe if "p_holm" in d.value.columns)
    assert set(table["segment"]) == {"mobile", "desktop"}
    box.set_value("(none)").run()
    assert "by" not in at.query_params


def test_compare_rankers_weights_clicks_by_their_segments_theta(tmp_path):
    import pandas as pd

    from ulr.data import ingest
    from ulr.simulate import simulate_clicks, write_log
    parts = []
    for i, (dev, eta) in enumerate((("mobile", 1.5), ("desktop", 0.7))):
        d = simulate_clicks(queries=80, positions=6, sessions=2000, eta=eta, features=3,
                            seed=30 + i).df.drop(columns=["true_theta"])
        for c in ("query_id", "doc_id", "session_id"):
            d[c] = d[c].astype(str) + dev
        d["device"] = dev
        parts.append(d)
    path = tmp_path / "devices_features.csv"
    write_log(pd.concat(parts, ignore_index=True), str(path))
    ingest.load_log(path, "device features", replace=True)
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["dataset"] = "device features"
    at.run()
    at.switch_page("pages/compare_rankers.py").run()
    assert not at.exception, at.exception
    at.selectbox(key="cr_theta_from").set_value("estimated: em")
    at.selectbox(key="cr_by").set_value("device").run()
    assert not at.exception, at.exception
    assert any("device = mobile:" in c.value and "device = desktop:" in c.value
               for c in at.caption)
    assert any("IPW" in m.label for m in at.metric)
    at.selectbox(key="cr_theta_from").set_value("typed theta").run()
    assert any("estimated from the log" in e.value for e in at.error)
