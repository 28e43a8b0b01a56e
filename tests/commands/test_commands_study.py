"""``python -m ulr study`` (docs/contract.md, "The debiasing study")."""

import json

import numpy as np
import pytest

from tests.study.letor import letor_text, linear_set


@pytest.fixture(scope="module")
def labels(tmp_path_factory):
    p = tmp_path_factory.mktemp("study") / "train.txt"
    p.write_text(letor_text(linear_set(queries=40, docs=8, seed=0)))
    return p


SMALL = ("--sessions", 800, "--runs", 2, "--bootstrap", 100)


def test_json_has_the_issue_keys(cli, labels):
    rc, out, err = cli("study", "--labels", labels, *SMALL, "--learners",
                       "naive-linear,ipw-linear,production", "--eta", 1.5, "--json")
    assert rc == 0 and err == "", err
    res = json.loads(out)
    for key in ("queries", "documents", "features", "theta_true", "theta", "learners",
                "comparisons", "verdict"):
        assert key in res
    assert (res["queries"], res["documents"], res["features"]) == (40, 320, 5)
    assert res["theta_true"] == pytest.approx((1 / np.arange(1, 9)) ** 1.5)
    assert res["theta"] == pytest.approx(res["theta_true"])  # --propensity true
    assert set(res["learners"]) == {"naive-linear", "ipw-linear", "production"}
    iv = res["learners"]["ipw-linear"]["ndcg@10"]
    assert set(iv) == {"value", "lower", "upper"} and iv["lower"] <= iv["value"] <= iv["upper"]
    c = res["comparisons"][0]
    assert {"learner", "baseline", "metric", "delta", "lower", "upper", "verdict"} <= set(c)
    assert c["baseline"] == "naive-linear"
    assert {c["learner"] for c in res["comparisons"]} == {"ipw-linear", "production"}
    assert set(res["verdict"]) >= {"level", "takeaway", "basis"}


def test_estimated_theta_and_the_human_output(cli, labels, tmp_path):
    rc, out, err = cli("study", "--labels", labels, *SMALL, "--learners", "ipw-linear",
                       "--propensity", "em", "--export", tmp_path / "out")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("40 queries, 320 documents, 5 features; pbm clicks")
    assert any(ln.startswith("verdict: ") for ln in lines)
    assert ("exported: lightgbm.svm, lightgbm.svm.query, lightgbm.svm.position, xgboost.svm, "
            "clicks.parquet") in out
    # the LightGBM side files match the data files, and LightGBM itself reads them
    out_dir = tmp_path / "out"
    sizes = np.loadtxt(out_dir / "lightgbm.svm.query", dtype=int)
    pos = np.loadtxt(out_dir / "lightgbm.svm.position", dtype=int)
    from sklearn.datasets import load_svmlight_file
    X, y, q = load_svmlight_file(str(out_dir / "xgboost.svm"), query_id=True)
    assert sizes.sum() == len(y) == len(pos) == X.shape[0]
    assert np.array_equal(np.diff(np.r_[0, np.flatnonzero(np.diff(q)) + 1, len(q)]), sizes)
    assert pos.min() == 0 and all(pos[i] < pos[i + 1] for i in range(sizes[0] - 1))
    import lightgbm as lgb
    ds = lgb.Dataset(str(out_dir / "lightgbm.svm"), params={"verbose": -1}).construct()
    assert np.array_equal(ds.get_group(), sizes) and np.array_equal(ds.get_position(), pos)
    np.testing.assert_array_equal(ds.get_label(), y)


@pytest.mark.parametrize("args, needle", [
    (("--learners", "svm"), "unknown learner 'svm'"),
    (("--baseline", "svm"), "unknown baseline 'svm'"),
    (("--click-model", "dcm"), "invalid choice"),
    (("--propensity", "magic"), "propensity must be 'true' or one of"),
    (("--sessions", 0), "--sessions must be at least 1"),
    (("--bootstrap", 1), "--bootstrap must be between 2"),
])
def test_user_errors_exit_2(cli, user_error, labels, args, needle):
    user_error(cli("study", "--labels", labels, *args), needle)


def test_a_sweep_over_eta_runs_the_study_per_value(cli, labels):
    rc, out, err = cli("study", "--labels", labels, *SMALL, "--learners", "ipw-linear",
                       "--sweep", "eta=0,2", "--json")
    assert rc == 0, err
    res = json.loads(out)
    assert [p["eta"] for p in res["sweep"]] == [0.0, 2.0]
    first = res["sweep"][0]["comparisons"][0]
    assert first["learner"] == "ipw-linear" and first["same_ranking"]  # no bias: same order
    assert res["settings"]["eta"] == 2.0  # the top level is the last point's study
    assert res["sweep"][1]["verdict"] == res["verdict"]


@pytest.mark.parametrize("spec, needle", [
    ("clicks=1,2", "--sweep is written eta=E1,E2,... or sessions=N1,N2,..."),
    ("eta=a", "--sweep eta values must be numbers"),
    ("sessions=0,10", "--sweep sessions values must be at least 1"),
])
def test_bad_sweeps_exit_2(cli, user_error, labels, spec, needle):
    user_error(cli("study", "--labels", labels, "--sweep", spec), needle)


def test_the_json_holds_held_out_click_loglik_for_the_click_models_only(cli, labels):
    rc, out, err = cli("study", "--labels", labels, *SMALL, "--learners",
                       "naive-gbdt,ipw-gbdt", "--baseline", "naive-gbdt", "--json")
    assert rc == 0 and err == "", err
    res = json.loads(out)
    for name in ("naive-gbdt", "ipw-gbdt"):
        iv = res["learners"][name]["click_loglik"]
        assert iv["lower"] <= iv["value"] <= iv["upper"] < 0
    assert any(c["metric"] == "click_loglik" for c in res["comparisons"])
    assert res["settings"]["heldout_sessions"] == round(800 * 12 / 28)
    rc, out, _ = cli("study", "--labels", labels, *SMALL, "--learners", "ipw-linear",
                     "--json")
    assert "click_loglik" not in json.loads(out)["learners"]["ipw-linear"]
