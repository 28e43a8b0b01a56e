"""CLI contract (docs/contract.md §2): one JSON object, exit 2 with one error line."""

import json

import pytest


def test_simulate_load_datasets_json(tmp_path, cli):
    out_csv = tmp_path / "s.csv"
    rc, out, err = cli("simulate", "--model", "pbm", "--queries", 30, "--positions", 5,
                       "--sessions", 200, "--eta", 1, "--randomized-fraction", 0.1,
                       "--n-features", 2, "--seed", 1, "--out", out_csv, "--json")
    assert rc == 0, err
    obj = json.loads(out)
    assert obj["rows"] == 1000 and obj["theta"] == [1, 0.5, 1 / 3, 0.25, 0.2]
    db = tmp_path / "u.duckdb"
    rc, out, err = cli("load", out_csv, "--db", db, "--name", "sim one", "--json")
    assert rc == 0, err
    assert json.loads(out) | {} == json.loads(out)
    assert {k: json.loads(out)[k] for k in ("dataset", "rows", "rejected")} == \
        {"dataset": "sim one", "rows": 1000, "rejected": 0}
    rc, out, err = cli("datasets", "--db", db, "--json")
    assert rc == 0 and out.count("\n") == 1
    assert [(d["name"], d["rows"]) for d in json.loads(out)["datasets"]] == [("sim one", 1000)]


@pytest.mark.parametrize("content, needle", [
    ("query_id,doc_id,click\nq,d,1\n", "missing required column"),
    ("query_id,doc_id,position,click\nq,d,0,1\n", "position"),
    ("query_id,doc_id,position,click\nq,d,-1,1\n", "position"),
    ("query_id,doc_id,position,click\nq,d,top,1\n", "position"),
    ("query_id,doc_id,position,click\nq,d,1,2\n", "click"),
    ("query_id,doc_id,position,click\nq,d,1,yesplease\n", "click"),
    ("", "empty"),
    ("query_id,doc_id,position,click\nq,d,1,1\nq,d\n", "wrong number of fields"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50, "binary"),
])
def test_bad_files_exit_2_and_store_unchanged(tmp_path, cli, user_error, content, needle):
    db = tmp_path / "u.duckdb"
    good = tmp_path / "good.csv"
    good.write_text("query_id,doc_id,position,click\nq,d,1,1\n")
    assert cli("load", good, "--db", db, "--name", "keep")[0] == 0
    before = cli("datasets", "--db", db, "--json")[1]
    bad = tmp_path / "bad.csv"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    user_error(cli("load", bad, "--db", db, "--name", "bad"), needle)
    user_error(cli("load", bad, "--db", db, "--name", "keep",
                                  "--replace"), needle)
    assert cli("datasets", "--db", db, "--json")[1] == before


def test_bad_file_in_a_real_process(tmp_path, cli_process, user_error):
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,doc_id,position,click\nq,d,0,1\n")
    user_error(cli_process("load", bad, "--db", tmp_path / "u.duckdb", "--name", "b"),
                      "position")


def test_usage_errors(tmp_path, cli, user_error):
    user_error(cli("nosuchcommand"), "invalid choice")
    user_error(cli("load", "x.csv"), "required")
    user_error(cli("datasets", "--db", tmp_path / "missing.duckdb"),
                      "does not exist")
    user_error(cli("simulate", "--queries", 0, "--out",
                                  tmp_path / "a.csv"), "queries must be at least 1")
    user_error(cli("simulate", "--queries", "many", "--out",
                                  tmp_path / "a.csv"), "invalid int value")


def test_hostile_name_and_map(tmp_path, cli, user_error):
    csv = tmp_path / "their.csv"
    csv.write_text(",sid,doc,pos,clk,when\n0,s1,a,1,1,2024-01-01T00:00:00\n"
                   "1,s1,b,2,0,2024-01-01T00:00:01\n")
    db = tmp_path / "u.duckdb"
    name = "x'; DROP TABLE ulr_catalog; --"
    rc, out, err = cli("load", csv, "--db", db, "--name", name, "--map", "query_id=sid",
                       "--map", "doc_id=doc", "--map", "position=pos", "--map", "click=clk",
                       "--json")
    assert rc == 0, err
    assert json.loads(out)["dataset"] == name
    assert json.loads(cli("datasets", "--db", db, "--json")[1])["datasets"][0]["name"] == name
    user_error(cli("load", csv, "--db", db, "--name", "y", "--map", "position=nope"),
                      "'nope'")
    user_error(cli("load", csv, "--db", db, "--name", "y", "--map", "positionpos"),
                      "canonical=theirs")


# ---------------------------------------------------------------------------
# Retired spellings (docs/glossary.md): refused with one line naming the new one
# ---------------------------------------------------------------------------

SAMPLE = __import__("pathlib").Path(__file__).resolve().parents[2] / "data" / "sample_clicks.csv"

RETIRED_FLAGS = [  # (command, old, new, value)
    ("report", "--propensity-method", "--propensity", "em"),
    ("sweep", "--method", "--propensity", "em"),
    ("sweep", "--docs-per-query", "--positions", "5"),
    ("simulate", "--docs-per-query", "--positions", "5"),
    ("simulate", "--features", "--n-features", "2"),
    ("recommend", "--seeds", "--runs", "2"),
    ("recommend", "--propensity", "--exposure", "true"),
    ("ope-study", "--draws", "--runs", "20"),
    ("ope-study", "--features", "--n-features", "3"),
    ("ope-study", "--slots", "--positions", "2"),
    ("bandit", "--k", "--positions", "2"),
    ("study", "--list-size", "--positions", "5"),
    ("propensity", "--feature-columns", "--features", "x_*"),
    ("bandit", "--feature-columns", "--features", "x_*"),
]


@pytest.mark.parametrize("command, old, new, value", RETIRED_FLAGS)
def test_a_retired_flag_is_refused_with_one_line_naming_the_new_one(cli, command, old, new,
                                                                    value):
    from ulr.cli import build_parser
    for args in ((old, value), (old,), (f"{old}={value}",)):
        rc, out, err = cli(command, *args)
        assert (rc, out, err) == (2, "", f"error: {old} is now {new}.\n"), (args, err)
    helptext = build_parser([command])._subparsers._group_actions[0].choices[command] \
        .format_help()
    assert new in helptext and f"{old} " not in helptext and f"{old}\n" not in helptext


def test_bandit_features_names_columns_and_a_count_is_refused_naming_n_features(cli):
    rc, out, err = cli("bandit", "--algorithm", "ucb1", "--features", "6")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("error: --features names columns") and "--n-features" in err


def test_sweep_propensity_runs_the_estimated_theta(cli):
    small = ("sweep", "--etas", "1", "--queries", 20, "--sessions", 2000, "--seed", 3, "--json")
    rc, out, err = cli(*small, "--propensity", "em", "--positions", 6)
    assert rc == 0 and err == "", err
    new = json.loads(out)
    assert new["method"] == "em"
    assert any(r["ranker"] != "naive" and r["estimator"] == "em" for r in new["rows"])


def test_a_refusal_carries_its_option_and_the_cli_names_the_flag(tmp_path, cli, user_error):
    """The library's message names no parameter; the error carries the option that lifts
    it (ulr.errors.Refused), the CLI adds the flag and the Data page its control."""
    from ulr.data import ingest
    from ulr.errors import Refused
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,doc_id,position,click\nq,d,0,1\nq,e,1,0\n")
    with pytest.raises(Refused, match="skip the bad rows to keep the valid ones") as exc:
        ingest.open_file(bad)
    assert exc.value.option == "skip_bad_rows"
    assert "--" not in str(exc.value) and "skip_bad_rows" not in str(exc.value)
    user_error(cli("load", bad, "--db", tmp_path / "u.duckdb", "--name", "b"),
               "skip the bad rows to keep the valid ones (--skip-bad-rows).")
    good = tmp_path / "good.csv"
    good.write_text("query_id,doc_id,position,click\nq,d,1,1\nq,e,2,0\n")
    assert cli("load", good, "--db", tmp_path / "u.duckdb", "--name", "g").rc == 0
    user_error(cli("load", good, "--db", tmp_path / "u.duckdb", "--name", "g"),
               "exists already; choose another name or replace it (--replace).")
