"""``python -m ulr rankers``: JSON per docs/contract.md §2, theta sources, test input, user errors."""

import json

import pandas as pd
from pathlib import Path

import numpy as np
import pytest

from ulr import metrics, rankers

from ulr.data import ingest
from ulr.simulate import simulate_clicks, write_log

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample_clicks.csv"
KEYS = {"arp", "dcg", "ndcg@10", "auc", "pauc", "local_auc"}
THETA = ",".join(f"{(1 / k):.6f}" for k in range(1, 11))


@pytest.fixture
def run_cli(cli):
    """The shared in-process harness (tests/conftest.py), called as ``run_cli(*argv)``."""
    return cli


def test_json_matches_the_library_with_a_propensity_method(run_cli):
    code, out, err = run_cli("rankers", "--input", str(SAMPLE), "--propensity",
                             "randomization", "--json")
    assert code == 0 and err == ""
    res = json.loads(out)
    assert set(res["naive"]) == KEYS and set(res["ipw"]) == KEYS
    assert res["propensity"] == "randomization" and not res["estimated"]
    log = ingest.open_file(SAMPLE)
    theta = rankers.propensity_theta(log, "randomization")
    comp = rankers.train_and_evaluate(rankers.log_frame(log), None, theta)
    lib = comp.metrics()
    # the verdict printed is the one the comparison was built with (1000 paired replicates)
    assert res["verdict"] == comp.verdict.to_dict() and res["evidence"] == comp.evidence
    for r in ("naive", "ipw"):
        for k in KEYS:
            assert res[r][k] == pytest.approx(lib[r][k])
    assert res["theta"] == pytest.approx(theta.tolist())
    assert res["test_queries"] == 150 and res["train_queries"] == 350  # 30% of 500 queries
    # the pAUC range and local AUC fraction reported are the metrics module's defaults
    assert res["pauc_max_fpr"] == metrics.DEFAULT_MAX_FPR
    assert res["local_auc_u"] == metrics.DEFAULT_U
    # the sample has eta = 1: IPW ranks relevant documents higher
    assert res["ipw"]["arp"] < res["naive"]["arp"]


def test_explicit_theta_bootstrap_and_human_output(run_cli):
    code, out, _ = run_cli("rankers", "--input", str(SAMPLE), "--theta", THETA,
                           "--bootstrap", "100", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["propensity"] == "given"
    assert res["theta"] == pytest.approx([1 / k for k in range(1, 11)], abs=1e-6)
    for r in ("naive", "ipw"):
        for k in KEYS:
            lo, hi = res["intervals"][r][k]
            assert lo <= res[r][k] <= hi
    arp = next(p for p in res["paired"] if p["metric"] == "arp")
    assert arp["delta"] == pytest.approx(res["ipw"]["arp"] - res["naive"]["arp"])
    code, out, _ = run_cli("rankers", "--input", str(SAMPLE), "--theta", THETA,
                           "--learner", "linear", "--clip", "0.2", "--snips", "--bootstrap", "50")
    assert code == 0
    assert "ipw-naive" in out and "arp" in out and "McClish" in out


def test_test_input_and_stored_dataset(run_cli, tmp_path):
    train = simulate_clicks(queries=120, sessions=4000, eta=1.5, seed=1).df
    test = simulate_clicks(queries=40, sessions=800, eta=1.5, seed=2).df
    write_log(train, str(tmp_path / "train.csv"))
    write_log(test, str(tmp_path / "test.parquet"))
    db = str(tmp_path / "ulr.duckdb")
    ingest.load_log(tmp_path / "train.csv", "my train", db_path=db)
    code, out, err = run_cli("rankers", "--db", db, "--name", "my train", "--theta",
                             THETA, "--test-input", str(tmp_path / "test.parquet"), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["test"].endswith("test.parquet")
    assert res["test_queries"] == test["query_id"].nunique()
    assert res["train_queries"] == train["query_id"].nunique()  # nothing held out


def test_no_relevance_labels_gives_marked_estimates(run_cli, tmp_path):
    df = simulate_clicks(queries=120, sessions=3000, eta=1.0, seed=3).df.drop(columns="relevance")
    path = tmp_path / "nolabels.csv"
    write_log(df, str(path))
    code, out, _ = run_cli("rankers", "--input", str(path), "--theta", THETA, "--json")
    assert code == 0
    res = json.loads(out)
    assert res["estimated"] is True and "estimates" in res["evaluation"]
    assert set(res["naive"]) == KEYS  # every key present; the AUC family is null
    assert res["naive"]["auc"] is None and res["ipw"]["local_auc"] is None
    assert isinstance(res["ipw"]["arp"], float)
    code, out, _ = run_cli("rankers", "--input", str(path), "--theta", THETA)
    assert "click-based IPW estimates" in out and "—" in out


@pytest.mark.parametrize("argv, msg", [
    ([], "one of the arguments --propensity --theta is required"),
    (["--theta", "1,0.5"], "position 10"),
    (["--theta", "1,x"], "--theta must be numbers separated by commas"),
    (["--theta", THETA, "--propensity", "em"], "not allowed with"),
    (["--propensity", "nope"], "invalid choice"),
    (["--theta", THETA, "--learner", "svm"], "invalid choice"),
    (["--theta", THETA, "--clip", "0"], "clip must be > 0"),
    (["--theta", THETA, "--bootstrap", "1"], "--bootstrap"),
    (["--theta", THETA, "--test-fraction", "1.5"], "test fraction"),
    (["--theta", THETA, "--test-input", "/nonexistent/test.csv"], "test.csv"),
    (["--theta", THETA, "--learners", "linear,svm"], "--learners must be among"),
    (["--theta", THETA, "--learners", "gbdt,gbdt"], "--learners must name each learner once"),
    (["--theta", THETA, "--learners", "linear", "--learner", "gbdt"], "not allowed with"),
    (["--theta", THETA, "--correction", "bonferroni"], "invalid choice"),
    (["--theta", THETA, "--test", "wilcoxon"], "invalid choice"),
    (["--theta", THETA, "--resamples", "0"], "--resamples must be at least 1"),
])
def test_user_errors_exit_2_with_one_line(run_cli, user_error, argv, msg):
    user_error(run_cli("rankers", "--input", str(SAMPLE), *argv), msg)


def test_subprocess_prints_exactly_one_json_object(cli_process):
    rc, out, err = cli_process("rankers", "--input", SAMPLE, "--theta", THETA, "--json")
    assert rc == 0, err
    res = json.loads(out)
    assert {"naive", "ipw"} <= set(res)
    assert np.isfinite(res["naive"]["arp"])


def test_too_few_held_out_queries_is_an_inconclusive_answer(run_cli, tmp_path):
    """20 queries hold out 6: below what the paired test needs (32). Thin evidence is an
    answer (issue #50): exit 0, an inconclusive verdict, and what would settle it for this
    log (more distinct queries: every held-out query here has a relevant document)."""
    assert rankers.MIN_TEST_QUERIES == rankers.min_test_queries() == 32
    df = simulate_clicks(queries=20, sessions=600, eta=1.0, seed=3).df
    path = tmp_path / "few.csv"
    write_log(df, str(path))
    code, out, err = run_cli("rankers", "--input", str(path), "--theta", THETA, "--json")
    assert code == 0, err
    v = json.loads(out)["verdict"]
    assert v["level"] == "inconclusive"
    assert "Too few test queries" in v["takeaway"] and "at least 32" in v["takeaway"]
    assert "more distinct queries" in v["to_settle"]
    code, out, err = run_cli("rankers", "--input", str(path), "--theta", THETA,
                             "--min-test-queries", "0", "--json")
    assert code == 0, err
    assert "Too few" not in json.loads(out)["verdict"]["takeaway"]


def test_a_log_with_too_few_clicks_asks_for_clicks_not_another_key(run_cli, tmp_path):
    """A recommendation-shaped log (3 slots, CTR under 1%, no session column, no labels):
    many held-out queries, few with a click. The answer is inconclusive, and what would
    settle it is more clicks; it names the log's clicks in all, not a query key."""
    rng = np.random.default_rng(7)
    n = 9000
    df = pd.DataFrame({"query_id": rng.integers(0, 240, n), "doc_id": rng.integers(0, 80, n),
                       "position": np.tile([1, 2, 3], n // 3),
                       "click": (rng.random(n) < 0.004).astype(int),
                       "feature_1": rng.normal(size=n), "feature_2": rng.normal(size=n)})
    path = tmp_path / "rec.csv"
    df.to_csv(path, index=False)
    code, out, err = run_cli("rankers", "--input", str(path), "--theta", "1, 0.6, 0.4",
                             "--json")
    assert code == 0, err
    res = json.loads(out)
    v = res["verdict"]
    assert v["level"] == "inconclusive" and res["scored_test_queries"] < 32
    assert "more clicks" in v["to_settle"] and f"{int(df.click.sum()):,} clicks" in v["to_settle"]
    assert "query key" not in v["to_settle"]


def test_sessions_of_one_item_pair_within_the_query():
    """Sessions taken from a per-row timestamp hold one row each; pairs come from the query."""
    import pandas as pd
    df = pd.DataFrame({"query_id": ["q"] * 4 + ["r"] * 2, "doc_id": list("abcdab"),
                       "position": [1, 2, 3, 4, 1, 2], "click": [1, 0, 0, 1, 0, 0],
                       "session_id": [f"t{i}" for i in range(6)]})
    pairs = rankers.click_pairs(df)
    got = sorted(zip(df["doc_id"].to_numpy()[pairs.clicked], df["doc_id"].to_numpy()[pairs.other]))
    assert got == [("a", "b"), ("a", "c"), ("d", "b"), ("d", "c")]


def test_several_learners_give_pairs_corrected_p_values_and_a_significance_table(
        run_cli, tmp_path):
    """Four systems on the sample: every pair on every metric, Holm per metric, Tukey, table."""
    from statsmodels.stats.multitest import multipletests

    from ulr.rankers.systems import compare_learners
    csv = tmp_path / "sig.csv"
    code, out, err = run_cli("rankers", "--input", str(SAMPLE), "--theta", THETA,
                             "--learners", "linear,gbdt", "--correction", "holm",
                             "--resamples", "2000", "--table-csv", str(csv), "--json")
    assert code == 0, err
    res = json.loads(out)
    systems = ["naive linear", "ipw linear", "naive gbdt", "ipw gbdt"]
    assert res["systems"] == systems and res["learners"] == ["linear", "gbdt"]
    assert res["significance_test"] == "randomization" and res["correction"] == "holm"
    assert "naive" not in res  # the one-pair keys belong to a single learner
    pairs = res["pairs"]
    assert len(pairs) == 6 * len(KEYS)
    log = ingest.open_file(SAMPLE)
    lib = compare_learners(rankers.log_frame(log), None, [1 / k for k in range(1, 11)],
                           learners=("linear", "gbdt"))
    for m in KEYS:
        block = [p for p in pairs if p["metric"] == m]
        assert [(p["a"], p["b"]) for p in block] == [
            (a, b) for i, a in enumerate(systems) for b in systems[i + 1:]]
        np.testing.assert_allclose([p["p_adjusted"] for p in block],
                                   multipletests([p["p_value"] for p in block], method="holm")[1])
        for p in block:
            assert p["lower"] <= p["delta"] <= p["upper"]
            assert p["delta"] == pytest.approx(lib.systems[p["b"]][m].value
                                               - lib.systems[p["a"]][m].value)
            assert res["metrics"][p["b"]][m] - res["metrics"][p["a"]][m] == pytest.approx(
                p["delta"])
    assert len(res["tukey"]) == 6 * len(KEYS)
    table = res["significance_table"]
    assert [r["letter"] for r in table] == list("abcd")
    assert [r["system"] for r in table] == systems and set(table[0]) == {"letter", "system"} | KEYS
    written = csv.read_text(encoding="utf-8").splitlines()
    assert written[0] == "letter,system," + ",".join(k for k in table[0] if k in KEYS)
    assert written[2].startswith("b,ipw linear,") and len(written) == 5
    assert res["verdict"]["basis"].endswith("Holm-corrected")
    assert set(res["rank_identically"]) == {"linear", "gbdt"}
    # the human output draws the same table and the pairs with raw and corrected p
    code, out, _ = run_cli("rankers", "--input", str(SAMPLE), "--theta", THETA,
                           "--learners", "linear,gbdt", "--correction", "bh", "--test", "t")
    assert code == 0
    assert "significance (t test, bh correction" in out and "p corr" in out
    assert "d ipw gbdt" in out and "verdict:" in out


def test_randomization_p_values_are_the_same_every_run(run_cli):
    argv = ("rankers", "--input", str(SAMPLE), "--theta", THETA, "--resamples", "500", "--json")
    first = json.loads(run_cli(*argv)[1])
    second = json.loads(run_cli(*argv)[1])
    assert [p["p_value"] for p in first["pairs"]] == [p["p_value"] for p in second["pairs"]]
    # one learner: the old keys stay, and the one pair per metric is not corrected
    assert {"naive", "ipw", "paired", "verdict"} <= set(first)
    assert first["systems"] == ["naive linear", "ipw linear"]
    assert all(p["p_adjusted"] == p["p_value"] for p in first["pairs"])
