"""``python -m ulr ope``: JSON output, human output, user errors (docs/contract.md §2)."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ulr import store
from ulr.cli import main
from ulr.ope.evaluate import evaluate_log

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample_ope.csv"


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_is_one_object_matching_the_library(capsys):
    code, out, err = run_cli(capsys, "ope", "--input", str(SAMPLE), "--bootstrap", "200",
                             "--json")
    assert code == 0 and err == ""
    res = json.loads(out)  # exactly one JSON document on stdout
    assert set(res["estimates"]) == {"ips", "clipped-ips", "snips", "dr"}
    for e in res["estimates"].values():
        assert e["lower"] <= e["value"] <= e["upper"]
    assert res["rows"] == 10_000 and res["evaluated_rows"] < 10_000
    assert {"ess", "ess_fraction", "effective_clicks", "clicks", "warnings"} <= set(res)
    assert "few_clicks" in res["warning_codes"]
    lib = evaluate_log(store.open_file(SAMPLE), n_bootstrap=200)
    assert res["estimates"]["snips"]["value"] == pytest.approx(lib.estimate("snips"))
    assert res["logging"]["value"] == pytest.approx(lib.estimate("logging"))


def test_learn_and_options(capsys):
    code, out, _ = run_cli(capsys, "ope", "--input", str(SAMPLE), "--bootstrap", "100",
                           "--estimators", "ips,snips", "--temperature", "0.5", "--clip", "3",
                           "--learn", "ips", "--steps", "30", "--json")
    assert code == 0
    res = json.loads(out)
    assert set(res["estimates"]) == {"ips", "snips"}
    assert res["policy"]["temperature"] == 0.5
    assert res["learned"]["objective"] == "ips"
    assert set(res["learned"]["coef"]) == {f"feature_{k}" for k in range(1, 6)}


def test_human_output(capsys):
    code, out, _ = run_cli(capsys, "ope", "--input", str(SAMPLE), "--bootstrap", "100")
    assert code == 0
    assert "snips" in out and "effective sample size" in out and "warning: Small sample" in out


def test_target_column_and_stored_dataset(capsys, tmp_path):
    df = pd.read_csv(SAMPLE)
    df["Target Prob"] = 0.1  # the uniform policy, given as a column (stored as target_prob)
    path = tmp_path / "with_target.csv"
    df.to_csv(path, index=False)
    db = tmp_path / "t.duckdb"
    assert run_cli(capsys, "load", str(path), "--db", str(db), "--name", "ope log")[0] == 0
    code, out, err = run_cli(capsys, "ope", "--db", str(db), "--name", "ope log",
                             "--target-column", "Target Prob", "--bootstrap", "100", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["policy"] == {"source": "column"} and res["evaluated_rows"] == 10_000
    # all weights are 1: every estimator equals the on-policy mean
    assert res["estimates"]["ips"]["value"] == pytest.approx(res["logging"]["value"])
    assert res["ess_fraction"] == pytest.approx(1.0)


@pytest.mark.parametrize("argv,needle", [
    (["--estimators", "ips,foo"], "unknown estimator foo"),
    (["--fit-fraction", "1.5"], "--fit-fraction"),
    (["--bootstrap", "3"], "bootstrap"),
    (["--target-column", "nope"], "no column 'nope'"),
    (["--temperature", "-1"], "temperature"),
    (["--target", "column"], "--target-column"),
])
def test_user_errors_exit_2_with_one_line(capsys, argv, needle):
    code, out, err = run_cli(capsys, "ope", "--input", str(SAMPLE), *argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and needle in err


def test_log_without_propensity_gets_a_clear_sentence(tmp_path):
    # the real entry point, as a user runs it
    path = tmp_path / "clicks.csv"
    pd.read_csv(SAMPLE).drop(columns="propensity").to_csv(path, index=False)
    p = subprocess.run([sys.executable, "-m", "ulr", "ope", "--input", str(path), "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: this log has no propensity column")
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


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


def one_error_line(err):
    lines = err.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("error: ")


def test_several_loggers_json_has_every_estimator_and_a_per_logger_breakdown(capsys, multi_csv):
    code, out, err = run_cli(capsys, "ope", "--input", str(multi_csv), "--target", "uniform",
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


def test_wips_without_a_logger_is_one_error_line(capsys):
    code, out, err = run_cli(capsys, "ope", "--input", str(SAMPLE), "--estimators", "wips")
    assert code == 2 and out == "" and one_error_line(err) and "logger" in err


def test_balanced_ips_without_logger_propensities_says_so_in_one_sentence(capsys, multi_csv,
                                                                          tmp_path):
    df = pd.read_csv(multi_csv).drop(columns=["propensity_l1"])
    path = tmp_path / "no_l1.csv"
    df.to_csv(path, index=False)
    code, out, err = run_cli(capsys, "ope", "--input", str(path), "--target", "uniform",
                             "--estimators", "ips,balanced-ips", "--bootstrap", "100", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["estimates"]["balanced-ips"]["value"] is None
    msg = [w for w, c in zip(res["warnings"], res["warning_codes"]) if c == "balanced_missing"]
    assert len(msg) == 1 and "l1" in msg[0] and msg[0].count(". ") == 0


def test_ope_study_json_and_bad_input(capsys):
    code, out, err = run_cli(capsys, "ope-study", "--draws", "20", "--rows", "200",
                             "--features", "3", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert {"true_value", "logging_value", "ess_fraction", "max_weight", "table"} <= set(res)
    assert {r["estimator"] for r in res["table"]} == {"ips", "clipped-ips", "snips", "dr"}
    assert all(r["draws"] == 20 for r in res["table"])
    code, out, err = run_cli(capsys, "ope-study", "--learn", "snips", "--steps", "10",
                             "--rows", "500", "--bootstrap", "100", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert {"learned", "true_value", "best_value", "curve"} <= set(res)
    for argv in (["--rows", "0"], ["--estimators", "nope"], ["--bootstrap", "10"]):
        code, out, err = run_cli(capsys, "ope-study", *argv)
        assert code == 2 and out == "" and one_error_line(err), argv


def test_ope_slate_json_and_bad_input(capsys, multi_csv):
    code, out, err = run_cli(capsys, "ope-slate", "--input", str(SAMPLE), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert set(res["estimates"]) == {"sips", "iips", "rips"}
    for e in res["estimates"].values():
        assert e["lower"] <= e["value"] <= e["upper"] and e["assumption"]
    assert res["slots"] == 3 and res["sessions"] > 0
    for argv in (["--estimators", "nope"], ["--temperature", "0"]):
        code, out, err = run_cli(capsys, "ope-slate", "--input", str(SAMPLE), *argv)
        assert code == 2 and out == "" and one_error_line(err), argv
