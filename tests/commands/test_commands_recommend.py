"""``python -m ulr recommend`` (docs/contract.md §2): the Debiased recommendations page's computation."""

import json

import pytest

from ulr.recommend.data import simulate_mnar
from ulr.recommend.experiment import compare_seeds, results_table, run_experiment
from ulr.recommend.models import MFConfig

WORLD = dict(users=60, items=50, seed=3)


def test_json_equals_the_library_experiment(cli):
    rc, out, err = cli("recommend", "--users", 60, "--items", 50, "--epochs", 4,
                       "--models", "naive-mf,cause", "--seed", 3, "--runs", 1, "--json")
    assert rc == 0 and err == "", err
    res = json.loads(out)
    exp = run_experiment(simulate_mnar(**WORLD), models=["naive-mf", "cause"],
                         base=MFConfig(epochs=4, seed=3))
    assert res["summary"]["mnar_ratings"] == exp.summary["mnar_ratings"]
    # the verdict printed is the one the worlds' comparison was built with
    assert res["verdict"] == compare_seeds([exp]).verdict.to_dict()
    assert res["summary"]["mean_rating_mnar"] == pytest.approx(exp.summary["mean_rating_mnar"])
    want = results_table(exp).to_dict("records")
    assert [r["method"] for r in res["results"]] == [r["method"] for r in want]
    for got, exp_row in zip(res["results"], want):
        assert got["test MSE (best on validation)"] == pytest.approx(
            exp_row["test MSE (best on validation)"])


def test_human_output(cli):
    rc, out, err = cli("recommend", "--users", 40, "--items", 30, "--epochs", 2,
                       "--models", "naive-mf", "--runs", 1)
    assert rc == 0, err
    assert out.startswith("mean logged rating") and "naive MF" in out


@pytest.mark.parametrize("args, needle", [
    (("--models", "foo"), "unknown: foo"),
    (("--models", ","), "--models must be"),
    (("--exposure", "guess"), "invalid choice"),
    (("--epochs", 0, "--users", 20, "--items", 20), "epochs must be at least 1"),
])
def test_user_errors_exit_2(cli, user_error, args, needle):
    user_error(cli("recommend", *args), needle)


def test_runs_counts_the_worlds(cli):
    """--runs is the one name for repeated simulations (bandit, sweep, recommend); the
    retired --seeds is refused (tests/commands/test_cli.py)."""
    args = ("recommend", "--users", 40, "--items", 30, "--epochs", 2, "--models", "naive-mf",
            "--exposure", "true", "--json")
    rc, out, err = cli(*args, "--runs", 2)
    assert rc == 0 and err == "", err
    new = json.loads(out)
    assert new["seeds"] == 2 and new["propensity"] == "true"
