"""CLI of issue 28: ope --estimators ...,auto --interval --reward-column; ope-slate cascade-dr."""

import json
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample_ope.csv"


def test_auto_and_new_estimators_json(cli):
    code, out, err = cli("ope", "--input", str(SAMPLE), "--bootstrap", "100", "--estimators",
                         "ips,snips,dr,sndr,switch-dr,dros,auto", "--interval", "t", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert set(res["estimates"]) == {"ips", "snips", "dr", "sndr", "switch-dr", "dros", "auto"}
    assert set(res["selected"]) == {"estimator", "hyperparameter", "reason"}
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
