"""``python -m ulr sweep`` (docs/contract.md §2): the Severity sweep page's computation."""

import json

import pandas as pd
import pytest

from ulr import rankers

SMALL = ("--etas", "0,1.5", "--queries", 40, "--sessions", 3000, "--seed", 2, "--runs", 1)


def test_json_equals_the_library_sweep(cli):
    rc, out, err = cli("sweep", *SMALL, "--json")
    assert rc == 0 and err == "", err
    res = json.loads(out)
    sweep = rankers.severity_sweep([0.0, 1.5], queries=40, sessions=3000, seed=2)
    want = sweep.rows
    # the verdict printed is the one the sweep was built with, on the asked metric
    assert res["verdict"] == sweep.verdict.to_dict() == sweep.verdicts["arp"].to_dict()
    got = pd.DataFrame(res["rows"])[list(want.columns)]
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    arp = [r for r in res["summary"] if r["metric"] == "arp"]
    assert [r["eta"] for r in arp] == [0.0, 1.5]
    for r in arp:
        sel = want[(want["metric"] == "arp") & (want["eta"] == r["eta"])]
        assert r["naive"] == pytest.approx(sel[sel["ranker"] == "naive"]["value"].mean())
    # at eta = 0 there is no bias: the IPW weights are all 1, the rankers are the same
    assert arp[0]["naive"] == pytest.approx(arp[0]["ipw (true theta)"])


def test_human_output_is_a_table_per_eta(cli):
    rc, out, err = cli("sweep", *SMALL, "--metric", "ndcg@10")
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("ndcg@10 by severity eta")
    assert lines[1].split("\t") == ["eta", "naive", "ipw (true theta)"]
    assert [ln.split("\t")[0] for ln in lines[2:4]] == ["0", "1.5"]


@pytest.mark.parametrize("args, needle", [
    (("--etas", "0,x"), "--etas must be numbers separated by commas"),
    (("--etas", "-1"), "eta values must be finite numbers >= 0"),
    (("--queries", 0), "--queries must be at least 1"),
    (("--metric", "nope", "--queries", 20, "--sessions", 500, "--etas", "1"), "--metric must be one of"),
    (("--learner", "svm"), "invalid choice"),
])
def test_user_errors_exit_2(cli, user_error, args, needle):
    user_error(cli("sweep", *args), needle)
