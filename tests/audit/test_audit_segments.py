"""The audit asks whether position bias differs by segment when the log has a column of 2 to 12
values (issue 52), and leaves other logs' answers as they were."""

import pandas as pd

from ulr import audit
from ulr.data import ingest
from ulr.simulate import simulate_clicks, write_log


def _answer(result, qid):
    return next(a for a in result.answers if a.id == qid)


def test_a_device_column_raises_the_segment_question(tmp_path):
    df = simulate_clicks(queries=60, positions=5, sessions=1500, features=0, seed=3).df
    path = tmp_path / "plain.csv"
    write_log(df, str(path))
    plain = _answer(audit.run(ingest.open_file(path)), "position_bias")
    assert not any("differ between them" in c for c in plain.caveats)
    assert "by" not in plain.params
    df["device"] = pd.Series(df["session_id"] % 2).map({0: "mobile", 1: "desktop"})
    path = tmp_path / "devices.csv"
    write_log(df, str(path))
    a = _answer(audit.run(ingest.open_file(path)), "position_bias")
    assert any("“device” with 2 values" in c for c in a.caveats)
    assert a.params["by"] == "device" and "by=device" in audit.answers.link(a)
