"""CLI contract (SPEC §2): one JSON object, exit 2 with one error line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def ulr(*args, cwd=None):
    p = subprocess.run([sys.executable, "-m", "ulr", *map(str, args)], capture_output=True,
                       text=True, cwd=cwd or ROOT, timeout=120)
    return p.returncode, p.stdout, p.stderr


def ulr_inproc(capsys, *args):
    """Same contract, in this process (a subprocess per case costs seconds)."""
    from ulr.cli import main
    capsys.readouterr()
    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def assert_user_error(rc, out, err, needle):
    assert rc == 2, (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert needle in lines[0], lines[0]
    assert "Traceback" not in err


def test_simulate_load_datasets_json(tmp_path):
    out_csv = tmp_path / "s.csv"
    rc, out, err = ulr("simulate", "--model", "pbm", "--queries", 30, "--docs-per-query", 5,
                       "--sessions", 200, "--eta", 1, "--randomized-fraction", 0.1,
                       "--features", 2, "--seed", 1, "--out", out_csv, "--json")
    assert rc == 0, err
    obj = json.loads(out)
    assert obj["rows"] == 1000 and obj["theta"] == [1, 0.5, 1 / 3, 0.25, 0.2]
    db = tmp_path / "u.duckdb"
    rc, out, err = ulr("load", out_csv, "--db", db, "--name", "sim one", "--json")
    assert rc == 0, err
    assert json.loads(out) | {} == json.loads(out)
    assert {k: json.loads(out)[k] for k in ("dataset", "rows", "rejected")} == \
        {"dataset": "sim one", "rows": 1000, "rejected": 0}
    rc, out, err = ulr("datasets", "--db", db, "--json")
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
def test_bad_files_exit_2_and_store_unchanged(tmp_path, capsys, content, needle):
    db = tmp_path / "u.duckdb"
    good = tmp_path / "good.csv"
    good.write_text("query_id,doc_id,position,click\nq,d,1,1\n")
    assert ulr_inproc(capsys, "load", good, "--db", db, "--name", "keep")[0] == 0
    before = ulr_inproc(capsys, "datasets", "--db", db, "--json")[1]
    bad = tmp_path / "bad.csv"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert_user_error(*ulr_inproc(capsys, "load", bad, "--db", db, "--name", "bad"), needle)
    assert_user_error(*ulr_inproc(capsys, "load", bad, "--db", db, "--name", "keep",
                                  "--replace"), needle)
    assert ulr_inproc(capsys, "datasets", "--db", db, "--json")[1] == before


def test_bad_file_in_a_real_process(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,doc_id,position,click\nq,d,0,1\n")
    assert_user_error(*ulr("load", bad, "--db", tmp_path / "u.duckdb", "--name", "b"),
                      "position")


def test_usage_errors(tmp_path, capsys):
    assert_user_error(*ulr_inproc(capsys, "nosuchcommand"), "invalid choice")
    assert_user_error(*ulr_inproc(capsys, "load", "x.csv"), "required")
    assert_user_error(*ulr_inproc(capsys, "datasets", "--db", tmp_path / "missing.duckdb"),
                      "does not exist")
    assert_user_error(*ulr_inproc(capsys, "simulate", "--queries", 0, "--out",
                                  tmp_path / "a.csv"), "queries must be at least 1")
    assert_user_error(*ulr_inproc(capsys, "simulate", "--queries", "many", "--out",
                                  tmp_path / "a.csv"), "invalid int value")


def test_hostile_name_and_map(tmp_path):
    csv = tmp_path / "their.csv"
    csv.write_text(",sid,doc,pos,clk,when\n0,s1,a,1,1,2024-01-01T00:00:00\n"
                   "1,s1,b,2,0,2024-01-01T00:00:01\n")
    db = tmp_path / "u.duckdb"
    name = "x'; DROP TABLE ulr_catalog; --"
    rc, out, err = ulr("load", csv, "--db", db, "--name", name, "--map", "query_id=sid",
                       "--map", "doc_id=doc", "--map", "position=pos", "--map", "click=clk",
                       "--json")
    assert rc == 0, err
    assert json.loads(out)["dataset"] == name
    assert json.loads(ulr("datasets", "--db", db, "--json")[1])["datasets"][0]["name"] == name
    assert_user_error(*ulr("load", csv, "--db", db, "--name", "y", "--map", "position=nope"),
                      "'nope'")
    assert_user_error(*ulr("load", csv, "--db", db, "--name", "y", "--map", "positionpos"),
                      "canonical=theirs")
