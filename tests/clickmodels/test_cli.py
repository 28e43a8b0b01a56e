"""``python -m ulr clickmodels`` (docs/contract.md §2)."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.clickmodels.helpers import compress, per_session
from ulr.clickmodels import sessions
from ulr.errors import NeedsSessions
from ulr.simulate import simulate_click_model, write_log, write_obd_like_log


@pytest.fixture(scope="module")
def dbn_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("cm") / "dbn.csv"
    write_log(simulate_click_model("dbn", sessions=2000, queries=10, seed=2).df, str(path))
    return path


def test_json_has_every_model_best_and_verdict(cli, dbn_csv):
    r = cli("clickmodels", "--input", dbn_csv, "--models", "pbm,cascade,dcm,dbn,sdbn,ubm",
            "--test-fraction", "0.2", "--bootstrap", "5", "--seed", "3",
            "--parameter-intervals", "--json")
    assert r.rc == 0, r.err
    out = json.loads(r.out)
    assert set(out["models"]) == {"pbm", "cascade", "dcm", "dbn", "sdbn", "ubm"}
    assert out["settings"]["prior"]["kind"] == "auto"
    assert out["settings"]["prior"]["strength"]["attractiveness"] >= 1
    assert out["best"] in out["models"]
    assert out["verdict"]["level"] in ("reliable", "directional", "inconclusive", "invalid")
    for key in ("takeaway", "basis"):
        assert out["verdict"][key]
    assert isinstance(out["verdict"]["reasons"], list)
    assert set(out["verdict"]["estimate"]["gaps"]) == set(out["models"]) - {out["best"]}
    for name, m in out["models"].items():
        for key in ("log_likelihood", "perplexity", "perplexity_by_rank",
                    "conditional_perplexity", "parameters", "gap_interval"):
            assert key in m
        assert len(m["perplexity_by_rank"]) == out["ranks"] == 10
        assert m["perplexity"] >= 1.0 and m["conditional_perplexity"] >= 1.0
    lam = out["models"]["dcm"]["parameters"]["continuation_after_click"]
    assert len(lam["estimate"]) == 10 and len(lam["interval"]) == 2
    theta = out["models"]["pbm"]["parameters"]["examination"]
    assert all(lo <= hi for lo, hi in zip(*theta["interval"]))
    assert out["train_sessions"] + out["test_sessions"] == 2000


def test_split_is_the_hash_of_the_session_id(cli, dbn_csv, tmp_path):
    """The held-out sessions are those whose md5(seed:session_id) slot is below the cut."""
    from ulr.data import ingest
    from ulr.data.scan import scan_of
    log = ingest.open_file(str(dbn_csv))
    S = sessions.collect(scan_of(log), test_fraction=0.3, seed=5)
    df = pd.read_csv(dbn_csv)
    expected = compress(per_session(df, test_fraction=0.3, seed=5))
    for k in ("pair", "click", "test", "count"):
        np.testing.assert_array_equal(getattr(S, k), getattr(expected, k))
    assert S.total == 2000
    assert abs(S.test_total / 2000 - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 2000)


def test_log_without_sessions_is_one_sentence(cli, tmp_path):
    path = tmp_path / "obd.csv"
    write_obd_like_log(str(path), impressions=300)
    r = cli("clickmodels", "--input", path, "--map", "doc_id=item_id",
            "--map", "query_id=timestamp")
    assert r.rc == 2
    assert r.err.startswith("error: ") and "no session column" in r.err
    assert len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("args,words", [
    (("--models", "pbm,foo"), "unknown click model"),
    (("--bootstrap", "1"), "--bootstrap"),
    (("--test-fraction", "1.5"), "--test-fraction"),
])
def test_bad_options_are_user_errors(cli, dbn_csv, args, words):
    r = cli("clickmodels", "--input", dbn_csv, *args)
    assert r.rc == 2 and words in r.err


def test_engine_duckdb_reads_the_file_in_place_and_agrees(cli, dbn_csv):
    base = ("clickmodels", "--models", "pbm,dbn", "--seed", "2", "--json")
    a = json.loads(cli(*base, "--input", dbn_csv).out)
    b = cli(*base, "--engine", "duckdb", "--input", dbn_csv)
    assert b.rc == 0, b.err
    b = json.loads(b.out)
    assert a["best"] == b["best"] and a["test_sessions"] == b["test_sessions"]
    for m in ("pbm", "dbn"):
        assert abs(a["models"][m]["log_likelihood"] - b["models"][m]["log_likelihood"]) < 1e-9


def test_no_sessions_is_a_typed_error(open_df):
    from ulr.data.scan import scan_of
    from ulr.simulate import obd_like_log
    df = obd_like_log(impressions=200).rename(columns={"item_id": "doc_id",
                                                       "timestamp": "query_id"})
    scan = scan_of(open_df(df[["query_id", "doc_id", "position", "click"]]))
    with pytest.raises(NeedsSessions, match="no session column"):
        sessions.require_sessions(scan, ["ubm"])


@pytest.mark.parametrize("model,keys", [
    ("pbm", {"theta"}), ("ubm", {"gamma"}), ("cascade", set()), ("dcm", {"lam"}),
    ("dbn", {"gamma"}), ("sdbn", {"gamma"})])
def test_simulate_writes_each_click_models_log_with_its_truth(cli, tmp_path, model, keys):
    out, truth = tmp_path / f"{model}.parquet", tmp_path / f"{model}.json"
    r = cli("simulate", "--click-model", model, "--sessions", 300, "--queries", 7,
            "--positions", 4, "--orders", 2, "--seed", 5, "--out", out, "--truth", truth,
            "--json")
    assert r.rc == 0, r.err
    res = json.loads(r.out)
    sim = simulate_click_model(model, sessions=300, queries=7, positions=4, seed=5,
                               orders=2)
    got = pd.read_parquet(out)
    for col in ("session_id", "query_id", "doc_id", "position", "click"):
        np.testing.assert_array_equal(got[col].to_numpy(), sim.df[col].to_numpy())
    assert res["rows"] == 1200 and res["click_model"] == model
    assert set(res["truth"]) == keys
    for k in keys:
        np.testing.assert_allclose(res["truth"][k], sim.extra["truth"][k])
    np.testing.assert_allclose(res["examination"], sim.theta)
    full = json.loads(truth.read_text())
    np.testing.assert_allclose(full["alpha"], sim.extra["truth"]["alpha"])
    np.testing.assert_allclose(full["sigma"], sim.extra["truth"]["sigma"])
    # two orders per query: at most 14 distinct lists
    assert got.groupby("session_id").doc_id.apply(tuple).nunique() <= 14


@pytest.mark.parametrize("args,words", [
    (("--orders", "2"), "--click-model"),
    (("--click-model", "dbn", "--theta", "1,0.5"), "--theta"),
    (("--click-model", "dbn", "--orders", "-1"), "orders"),
    (("--click-model", "nope"), "invalid choice"),
])
def test_simulate_click_model_bad_options(cli, tmp_path, args, words):
    r = cli("simulate", *args, "--out", tmp_path / "x.csv")
    assert r.rc == 2 and words in r.err
    assert len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("bad", ["1", "a,b", "-1,2", "0,0.0,1"])
def test_a_bad_prior_is_one_error_line(cli, dbn_csv, bad):
    r = cli("clickmodels", "--input", dbn_csv, "--prior", bad)
    assert r.rc == 2 and r.err.startswith("error: ") and "prior" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_the_prior_setting_is_in_the_json(cli, dbn_csv):
    r = cli("clickmodels", "--input", dbn_csv, "--models", "cascade", "--prior", "1,1",
            "--bootstrap", "0", "--json")
    out = json.loads(r.out)
    assert out["settings"]["prior"]["kind"] == "fixed"
    assert (out["settings"]["prior"]["a"], out["settings"]["prior"]["b"]) == (1, 1)
    assert out["settings"]["bootstrap"] == 0
