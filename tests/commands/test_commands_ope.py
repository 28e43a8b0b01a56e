"""``python -m ulr ope``: JSON output, human output, user errors (docs/contract.md §2)."""

import json
from pathlib import Path

import pandas as pd
import pytest

from ulr.data import ingest
from ulr.ope.evaluate import evaluate_log

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample_ope.csv"


def test_json_is_one_object_matching_the_library(cli):
    code, out, err = cli("ope", "--input", str(SAMPLE), "--bootstrap", "200", "--json")
    assert code == 0 and err == ""
    res = json.loads(out)  # exactly one JSON document on stdout
    assert set(res["estimates"]) == {"ips", "clipped-ips", "snips", "dr"}
    for e in res["estimates"].values():
        assert e["lower"] <= e["value"] <= e["upper"]
    assert res["rows"] == 10_000 and res["evaluated_rows"] < 10_000
    assert {"ess", "ess_fraction", "effective_clicks", "clicks", "warnings"} <= set(res)
    assert "few_clicks" in res["warning_codes"]
    lib = evaluate_log(ingest.open_file(SAMPLE), n_bootstrap=200)
    assert res["estimates"]["snips"]["value"] == pytest.approx(lib.estimate("snips"))
    assert res["logging"]["value"] == pytest.approx(lib.estimate("logging"))


def test_learn_and_options(cli):
    code, out, _ = cli("ope", "--input", str(SAMPLE), "--bootstrap", "100",
                       "--estimators", "ips,snips", "--temperature", "0.5", "--clip", "3",
                       "--learn", "ips", "--steps", "30", "--json")
    assert code == 0
    res = json.loads(out)
    assert set(res["estimates"]) == {"ips", "snips"}
    assert res["policy"]["temperature"] == 0.5
    assert res["learned"]["objective"] == "ips"
    assert set(res["learned"]["coef"]) == {f"feature_{k}" for k in range(1, 6)}


def test_human_output(cli):
    code, out, _ = cli("ope", "--input", str(SAMPLE), "--bootstrap", "100")
    assert code == 0
    assert "  SNIPS  " in out and "effective sample size" in out and "warning: Small sample" in out
    assert "snips" not in out and "clipped-ips" not in out  # the estimators in words


def test_target_column_and_stored_dataset(cli, tmp_path):
    df = pd.read_csv(SAMPLE)
    df["Target Prob"] = 0.1  # the uniform policy, given as a column (stored as target_prob)
    path = tmp_path / "with_target.csv"
    df.to_csv(path, index=False)
    db = tmp_path / "t.duckdb"
    assert cli("load", str(path), "--db", str(db), "--name", "ope log")[0] == 0
    code, out, err = cli("ope", "--db", str(db), "--name", "ope log",
                         "--target-column", "Target Prob", "--bootstrap", "100", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["policy"] == {"target_from": "column"} and res["evaluated_rows"] == 10_000
    # all weights are 1: every estimator equals the on-policy mean
    assert res["estimates"]["ips"]["value"] == pytest.approx(res["logging"]["value"])
    assert res["ess_fraction"] == pytest.approx(1.0)


@pytest.mark.parametrize("argv,needle", [
    (["--estimators", "ips,foo"], "unknown estimator foo"),
    (["--fit-fraction", "1.5"], "--fit-fraction"),
    (["--bootstrap", "1"], "bootstrap"),   # ulr.validate: 2 to 10,000 (an interval is drawn)
    (["--target-column", "nope"], "no column 'nope'"),
    (["--temperature", "-1"], "temperature"),
    (["--target", "column"], "--target-column"),
])
def test_user_errors_exit_2_with_one_line(cli, user_error, argv, needle):
    user_error(cli("ope", "--input", SAMPLE, *argv), needle)


def test_log_without_propensity_gets_a_clear_sentence(tmp_path, cli_process, user_error):
    # the real entry point, as a user runs it
    path = tmp_path / "clicks.csv"
    pd.read_csv(SAMPLE).drop(columns="propensity").to_csv(path, index=False)
    res = cli_process("ope", "--input", path, "--json", timeout=120)
    user_error(res, "error: this log has no propensity column")


# ------------------------------------------------------- several loggers, studies, slates

from ulr.ope.loggers import make_multi_logger_log  # noqa: E402


@pytest.fixture(scope="module")
def multi_csv(tmp_path_factory):
    """Shaped like a real log: 3 slots, 80 items, no query column of its own, a timestamp,
    8 affinity features, per-slot propensities of two (one time-varying) loggers, CTR < 1%."""
    df, _ = make_multi_logger_log(sessions=3000, seed=1)
    assert df["click"].mean() < 0.01
    path = tmp_path_factory.mktemp("multi") / "two_loggers.csv"
    df.to_csv(path, index=False)
    return path


def test_several_loggers_json_has_every_estimator_and_a_per_logger_breakdown(cli, multi_csv):
    code, out, err = cli("ope", "--input", str(multi_csv), "--target", "uniform",
                         "--estimators", "ips,snips,wips,balanced-ips", "--bootstrap", "200",
                         "--map", "logger=logger", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert set(res["estimates"]) == {"ips", "snips", "wips", "balanced-ips"}
    for e in res["estimates"].values():
        assert e["lower"] <= e["value"] <= e["upper"]
        assert e["variance_ratio"] > 0
    assert res["estimates"]["ips"]["variance_ratio"] == pytest.approx(1.0)
    assert set(res["per_logger"]) == {"l0", "l1"}
    per = res["per_logger"]
    assert sum(p["rows"] for p in per.values()) == res["n"]
    assert sum(p["wips_weight"] for p in per.values()) == pytest.approx(1.0)
    assert "propensity_sum" not in res["warning_codes"]


def test_wips_without_a_logger_is_one_error_line(cli, user_error):
    user_error(cli("ope", "--input", SAMPLE, "--estimators", "wips"), "logger")


def test_balanced_ips_without_logger_propensities_says_so_in_one_sentence(cli, multi_csv,
                                                                          tmp_path):
    df = pd.read_csv(multi_csv).drop(columns=["propensity_l1"])
    path = tmp_path / "no_l1.csv"
    df.to_csv(path, index=False)
    code, out, err = cli("ope", "--input", str(path), "--target", "uniform",
                         "--estimators", "ips,balanced-ips", "--bootstrap", "100", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["estimates"]["balanced-ips"]["value"] is None
    msg = [w for w, c in zip(res["warnings"], res["warning_codes"]) if c == "balanced_missing"]
    assert len(msg) == 1 and "l1" in msg[0] and msg[0].count(". ") == 0


def test_ope_study_json_and_bad_input(cli, user_error):
    code, out, err = cli("ope-study", "--runs", "20", "--rows", "200",
                         "--n-features", "3", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["settings"]["runs"] == 20 and "draws" not in res["settings"]
    assert {"true_value", "logging_value", "ess_fraction", "max_weight", "table"} <= set(res)
    assert {r["estimator"] for r in res["table"]} == {"ips", "clipped-ips", "snips", "dr"}
    assert all(r["draws"] == 20 for r in res["table"])
    code, out, err = cli("ope-study", "--learn", "snips", "--steps", "10",
                         "--rows", "500", "--bootstrap", "100", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert {"learned", "true_value", "best_value", "curve"} <= set(res)
    for argv in (["--rows", "0"], ["--estimators", "nope"], ["--bootstrap", "1"]):
        user_error(cli("ope-study", *argv))


def test_ope_slate_json_and_bad_input(cli, user_error):
    code, out, err = cli("ope-slate", "--input", str(SAMPLE), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert set(res["estimates"]) == {"sips", "iips", "rips"}
    for e in res["estimates"].values():
        assert e["lower"] <= e["value"] <= e["upper"] and e["assumption"]
    assert res["slots"] == 3 and res["sessions"] > 0
    for argv in (["--estimators", "nope"], ["--temperature", "0"]):
        user_error(cli("ope-slate", "--input", SAMPLE, *argv))


def test_ope_slate_on_sessions_that_mix_queries_is_one_error_line(cli, user_error, tmp_path):
    """query_id mapped to a per-slot key: no session is one query's ranked list (this
    was an internal IndexError)."""
    df = pd.read_csv(SAMPLE)
    df["slot_key"] = df["session_id"] + "-" + df["position"].astype(str)
    path = tmp_path / "slot_key.csv"
    df.to_csv(path, index=False)
    user_error(cli("ope-slate", "--input", path, "--map", "query_id=slot_key"),
               "answer different queries")


def test_ope_study_level_sets_the_intervals_whose_coverage_it_reports(cli, user_error):
    from ulr.ope.study import simulation_study

    small = ("--runs", "20", "--rows", "200", "--n-features", "3", "--intervals",
             "--bootstrap", "100", "--estimators", "ips,snips")
    cov = {}
    for level in (0.5, 0.99):
        code, out, err = cli("ope-study", *small, "--level", level, "--json")
        assert code == 0, err
        res = json.loads(out)
        assert res["settings"]["level"] == level
        cov[level] = {r["estimator"]: r["coverage"] for r in res["table"]}
    lib = simulation_study(runs=20, rows=200, n_features=3, intervals=True, n_bootstrap=100,
                           estimators=("ips", "snips"), level=0.5)
    assert cov[0.5] == lib.table.set_index("estimator")["coverage"].to_dict()
    # the same replicates: the 50% interval lies inside the 99% one on every log
    assert all(cov[0.5][e] <= cov[0.99][e] for e in cov[0.5])
    assert sum(cov[0.5].values()) < sum(cov[0.99].values())
    user_error(cli("ope-study", "--level", "1"), "--level")


# issue 28: --estimators ...,auto, --interval, --reward-column; ope-slate cascade-dr

def test_auto_and_new_estimators_json(cli):
    code, out, err = cli("ope", "--input", str(SAMPLE), "--bootstrap", "100", "--estimators",
                         "ips,snips,dr,sndr,switch-dr,dros,auto", "--interval", "t", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert set(res["estimates"]) == {"ips", "snips", "dr", "sndr", "switch-dr", "dros", "auto"}
    assert set(res["selected"]) == {"estimator", "hyperparameter", "reason", "excluded",
                               "bias_allowance"}
    assert res["settings"]["interval"] == "t"
    assert "verdict" in res
    for e in res["estimates"].values():
        assert e["lower"] <= e["value"] <= e["upper"]


@pytest.mark.parametrize("interval", ["hoeffding", "bernstein"])
def test_concentration_bounds_in_human_output(cli, interval):
    code, out, _ = cli("ope", "--input", str(SAMPLE), "--bootstrap", "100", "--estimators",
                       "ips,dr", "--interval", interval)
    assert code == 0
    assert ("Hoeffding" if interval == "hoeffding" else "Bernstein") in out


def test_reward_column(cli, tmp_path):
    df = pd.read_csv(SAMPLE)
    df["pred"] = 0.005
    path = tmp_path / "with_pred.csv"
    df.to_csv(path, index=False)
    code, out, err = cli("ope", "--input", str(path), "--bootstrap", "100", "--estimators",
                         "dm,dr", "--reward-column", "pred", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["estimates"]["dm"]["value"] == pytest.approx(0.005)
    assert res["settings"]["reward_model"] == "column"


@pytest.mark.parametrize("argv,needle", [
    (["--reward-column", "nope"], "no column 'nope'"),
    (["--estimators", "ips,switchdr"], "unknown estimator switchdr"),
])
def test_user_errors(cli, user_error, argv, needle):
    user_error(cli("ope", "--input", SAMPLE, "--bootstrap", "100", *argv), needle)


def test_ope_slate_cascade_dr(cli):
    code, out, err = cli("ope-slate", "--input", str(SAMPLE), "--estimators",
                         "rips,cascade-dr", "--json")
    assert code == 0, err
    res = json.loads(out)
    e = res["estimates"]["cascade-dr"]
    assert e["lower"] <= e["value"] <= e["upper"] and "Kiyohara" in e["assumption"]


def test_verdict_rests_on_the_choice_when_auto_is_alone(cli):
    code, out, _ = cli("ope", "--input", str(SAMPLE), "--bootstrap", "100", "--estimators",
                       "auto", "--json")
    assert code == 0
    v = json.loads(out)["verdict"]
    assert v["estimate"]["estimator"] == "auto" and v["level"] != "inconclusive"
