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
