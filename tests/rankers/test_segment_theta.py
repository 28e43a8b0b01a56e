"""IPW with theta by segment (``rankers --by``): each click weighted by its own segment's theta."""

import json

import numpy as np
import pandas as pd
import pytest

from ulr.errors import UlrError
from ulr.rankers import ipw_weights, segment_positions


def test_each_row_gets_its_segments_theta():
    df = pd.DataFrame({"query_id": [1, 1, 2, 2, 3], "position": [1, 2, 1, 3, 2],
                       "click": [1, 0, 1, 1, 0],
                       "device": ["mobile", "mobile", "desktop", "desktop", "mobile"]})
    thetas = {"mobile": [1.0, 0.4, 0.2], "desktop": [1.0, 0.7, 0.5]}
    out, full = segment_positions(df, "device", thetas)
    assert "device" not in out
    got = ipw_weights(out["position"].to_numpy(), full)
    want = [1 / thetas[d][p - 1] for d, p in zip(df["device"], df["position"])]
    np.testing.assert_allclose(got, want)
    with pytest.raises(UlrError, match="no theta of their own segment"):
        segment_positions(df.assign(device="tablet"), "device", thetas)


def test_rankers_cli_by_device(cli, tmp_path):
    from ulr.simulate import simulate_clicks, write_log
    parts = []
    for i, (dev, eta) in enumerate((("mobile", 1.5), ("desktop", 0.7))):
        d = simulate_clicks(queries=80, positions=6, sessions=2000, eta=eta, features=3,
                            seed=20 + i).df.drop(columns=["true_theta"])
        d["query_id"] = d["query_id"].astype(str) + dev
        d["doc_id"] = d["doc_id"].astype(str) + dev
        d["session_id"] = d["session_id"].astype(str) + dev
        d["device"] = dev
        parts.append(d)
    path = tmp_path / "devices.csv"
    write_log(pd.concat(parts, ignore_index=True), str(path))
    r = cli("rankers", "--input", path, "--propensity", "em", "--by", "device", "--learner",
            "gbdt", "--min-test-queries", "0", "--json")
    assert r.rc == 0, r.err
    out = json.loads(r.out)
    assert out["by"] == "device" and set(out["theta_by"]) == {"mobile", "desktop"}
    assert out["theta_by"]["mobile"][5] < out["theta_by"]["desktop"][5]
    assert out["propensity"] == "em by device" and len(out["theta"]) == 12
    r = cli("rankers", "--input", path, "--theta", "1,0.5,0.3,0.2,0.2,0.1", "--by", "device")
    assert r.rc == 2 and r.err.startswith("error:")
