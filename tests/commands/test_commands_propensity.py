"""``python -m ulr propensity`` (docs/contract.md §2): JSON keys, bootstrap bounds, errors, fast path."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ulr.data import catalog, ingest
from ulr.propensity import estimate
from ulr.simulate import simulate_clicks, write_log

ROOT = Path(__file__).resolve().parents[2]


def ulr(capsys, *args):
    from ulr.cli import main
    capsys.readouterr()
    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def user_error(rc, out, err, needle):
    assert rc == 2, (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err
    assert out == ""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    sim = simulate_clicks(queries=100, positions=6, sessions=6000, seed=4)
    csv = tmp / "log.csv"
    write_log(sim.df, str(csv))
    db = tmp / "db.duckdb"
    ingest.load_log(csv, "clicks", db_path=db)
    return sim, csv, db


@pytest.mark.parametrize("method", ["randomization", "em", "intervention-harvesting"])
def test_json_keys_and_true_theta(capsys, files, method):
    sim, csv, _ = files
    # the default bootstrap once (it is the page's); none for the slower methods
    quick = () if method == "randomization" else ("--bootstrap", 0)
    rc, out, err = ulr(capsys, "propensity", "--method", method, "--input", csv, "--json", *quick)
    assert rc == 0, err
    res = json.loads(out)
    assert out.count("\n") == 1
    assert res["method"] == method and res["positions"] == 6
    assert res["theta"][0] == 1.0 and len(res["theta"]) == 6
    if not quick:  # the Position bias page's default (one default, one answer)
        assert res["bootstrap"] == 50 and "lower" in res and res["interval"] == "bootstrap"
    elif method == "em":  # em's interval is its Fisher information's: no replicate needed
        assert res["interval"] == "information" and "bootstrap" not in res and "lower" in res
    else:
        assert "lower" not in res and "interval" not in res
    np.testing.assert_allclose(res["true_theta"], sim.relative_theta, atol=1e-6)
    assert res["max_abs_error"] == pytest.approx(
        np.max(np.abs(np.array(res["theta"]) - res["true_theta"])))


def test_bootstrap_gives_lower_and_upper(capsys, files):
    _, csv, _ = files
    rc, out, err = ulr(capsys, "propensity", "--method", "em", "--input", csv, "--bootstrap",
                       20, "--positions", 4, "--seed", 2, "--interval", "bootstrap", "--json")
    assert rc == 0, err
    res = json.loads(out)
    assert res["positions"] == 4 and len(res["lower"]) == len(res["upper"]) == 4
    assert all(lo <= t <= up for lo, t, up in zip(res["lower"], res["theta"], res["upper"]))
    assert res["bootstrap"] == 20 and res["interval"] == "bootstrap"


def test_interval_is_named_in_the_text_and_refused_where_the_method_has_none(capsys, files):
    _, csv, _ = files
    rc, out, err = ulr(capsys, "propensity", "--method", "em", "--input", csv,
                       "--positions", 4)
    assert rc == 0, err
    assert "interval: 95% Wald on the log scale, from the Fisher information" in out
    rc, out, err = ulr(capsys, "propensity", "--method", "em", "--input", csv,
                       "--positions", 4, "--interval", "bootstrap", "--bootstrap", 20)
    assert rc == 0, err
    assert "interval: 95% standard bootstrap on the log scale, 20 replicates" in out
    rc, out, err = ulr(capsys, "propensity", "--method", "intervention-harvesting", "--input",
                       csv, "--interval", "information")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "interval comes from bootstrap replicates, not from the Fisher information" in err


@pytest.mark.parametrize("method", ["em", "regression-em"])
def test_file_scan_and_stored_dataset_agree(capsys, files, monkeypatch, method):
    _, csv, db = files
    from ulr.commands import common

    def no_load(args):
        raise AssertionError("the file was loaded instead of scanned in place")
    with monkeypatch.context() as m:
        m.setattr(common, "log_from_args", no_load)
        rc, out, err = ulr(capsys, "propensity", "--method", method, "--input", csv, "--json",
                           "--bootstrap", 0)
    assert rc == 0, err
    a = json.loads(out)
    b = json.loads(ulr(capsys, "propensity", "--method", method, "--db", db, "--name", "clicks",
                       "--json", "--bootstrap", 0)[1])
    np.testing.assert_allclose(a["theta"], b["theta"], rtol=1e-9)  # summation order only
    assert a["rows_used"] == b["rows_used"]
    np.testing.assert_allclose(a["true_theta"], b["true_theta"], rtol=1e-9)
    # ... and the same as the Python API on the stored table.
    res = estimate(catalog.open_dataset("clicks", db), method=method)
    np.testing.assert_allclose(res.theta, a["theta"], rtol=1e-9)


@pytest.mark.parametrize("method", ["em", "intervention-harvesting"])
def test_a_file_read_in_place_weighs_its_mapping_like_the_stored_log(capsys, files, tmp_path,
                                                                     monkeypatch, method):
    """A session column that joins several shown lists (one value per query): the page,
    on the stored log, says the estimate is invalid; the in-place scan of the same file
    said "inconclusive" (its verdict never saw the mapping). Both now give one verdict,
    with one wording; past the mapping check's sample, the scan says which rows it read."""
    import pandas as pd

    from ulr.commands import common
    from ulr.data import precheck

    _, csv, _ = files
    df = pd.read_csv(csv)
    df["visitor"] = df["query_id"]
    path = tmp_path / "joined.csv"
    df.to_csv(path, index=False)
    db = tmp_path / "joined.duckdb"
    ingest.load_log(path, "joined", db_path=db, mapping={"session_id": "visitor"})
    stored = json.loads(ulr(capsys, "propensity", "--method", method, "--db", db, "--name",
                            "joined", "--json", "--bootstrap", 0)[1])["verdict"]
    assert stored["level"] == "invalid"

    def no_load(args):
        raise AssertionError("the file was loaded instead of scanned in place")
    monkeypatch.setattr(common, "log_from_args", no_load)
    args = ("propensity", "--method", method, "--input", path, "--map", "session_id=visitor",
            "--json", "--bootstrap", 0)
    rc, out, err = ulr(capsys, *args)
    assert rc == 0, err
    assert json.loads(out)["verdict"] == stored
    monkeypatch.setattr(precheck, "SAMPLE_ROWS", 1000)
    [reason] = json.loads(ulr(capsys, *args)[1])["verdict"]["reasons"]
    assert reason["code"] == "repeated_position"
    assert re.search(r" in a sample of [0-9,]+ rows ", reason["message"]), reason["message"]


def test_a_csv_read_in_place_gives_one_verdict_in_any_row_order(capsys, files, tmp_path,
                                                                monkeypatch):
    """Past the checks' sample size, a CSV read in place is checked (mapping warnings) and
    its PBM fitted on whole sessions drawn by a hash of their id: the same rows shuffled
    give the same verdict word for word. (The first rows of a shuffled file broke its
    sessions apart: a false "single-row sessions" warning, and another PBM fit.)"""
    from ulr import facts
    from ulr.commands import common
    from ulr.data import precheck

    sim, csv, _ = files
    shuffled = tmp_path / "shuffled.csv"
    write_log(sim.df.sample(frac=1.0, random_state=5).reset_index(drop=True), str(shuffled))
    monkeypatch.setattr(precheck, "SAMPLE_ROWS", 4_000)
    monkeypatch.setattr(facts, "MAX_TESTED_ROWS", 4_000)

    def no_load(args):
        raise AssertionError("the file was loaded instead of scanned in place")
    monkeypatch.setattr(common, "log_from_args", no_load)
    out = []
    for path in (csv, shuffled):
        rc, text, err = ulr(capsys, "propensity", "--method", "em", "--input", path,
                            "--json")
        assert rc == 0, err
        out.append(json.loads(text))
    assert out[0]["verdict"] == out[1]["verdict"]
    assert "single_row_sessions" not in [r["code"] for r in out[1]["verdict"]["reasons"]]
    assert out[0]["theta"] == out[1]["theta"]


def test_assume_randomized_and_human_output(capsys, files):
    _, csv, _ = files
    rc, out, err = ulr(capsys, "propensity", "--method", "randomization", "--input", csv,
                       "--assume-randomized", "--bootstrap", 10)
    assert rc == 0, err
    assert "treated as randomized" in out and "position" in out and "true" in out


def test_user_errors_exit_2(capsys, files, tmp_path):
    _, csv, _ = files
    user_error(*ulr(capsys, "propensity", "--method", "em", "--input", csv, "--bootstrap", 1),
               "--bootstrap")
    user_error(*ulr(capsys, "propensity", "--method", "em", "--input", csv, "--positions", 1),
               "--positions must be at least 2")
    user_error(*ulr(capsys, "propensity", "--method", "em", "--input", csv, "--positions", 60),
               "more positions than the log has")
    user_error(*ulr(capsys, "propensity", "--method", "nope", "--input", csv), "invalid choice")
    user_error(*ulr(capsys, "propensity", "--method", "em"), "name a click log")
    no_feat = tmp_path / "nofeat.csv"
    no_feat.write_text("query_id,doc_id,position,click\n1,1,1,1\n1,2,2,0\n2,1,2,0\n2,2,1,1\n")
    user_error(*ulr(capsys, "propensity", "--method", "regression-em", "--input", no_feat),
               "no feature_* columns")
    user_error(*ulr(capsys, "propensity", "--method", "randomization", "--input", no_feat),
               "no 'randomized' column")
    one = tmp_path / "one.csv"
    one.write_text("query_id,doc_id,position,click\n1,1,1,1\n1,2,1,0\n")
    user_error(*ulr(capsys, "propensity", "--method", "em", "--input", one), "single position")


@pytest.mark.parametrize("method", ["em", "regression-em"])
def test_a_bad_file_is_refused_with_the_loader_message(capsys, tmp_path, method):
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,doc_id,position,click,feature_1\n1,1,1,1,0.5\n1,2,2,0,0.1\n"
                   "2,1,2.5,0,0.3\n")
    user_error(*ulr(capsys, "propensity", "--method", method, "--input", bad),
               "column 'position': 1 bad value (must be an integer >= 1), first at line 4")


def test_subprocess_contract(files):
    _, csv, _ = files
    p = subprocess.run([sys.executable, "-m", "ulr", "propensity", "--method", "em", "--input",
                        str(csv), "--json"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert set(json.loads(p.stdout)) >= {"method", "positions", "theta"}
