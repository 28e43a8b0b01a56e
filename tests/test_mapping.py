"""Bring your own log: composite keys, constants, feature patterns and declared facts,
on the CLI (`load` and `--input`) and in the schema model; bad specs are refused in one
sentence and leave the store unchanged."""

import hashlib
import json

import pytest

from ulr import schema, store
from ulr.cli import main
from ulr.errors import UlrError
from ulr.simulate import obd_like_log

QUERY = "user_feature_0+user_feature_1+user_feature_2+user_feature_3"


@pytest.fixture(scope="module")
def foreign(tmp_path_factory):
    path = tmp_path_factory.mktemp("byol") / "foreign.csv"
    df = obd_like_log(impressions=200, items=12)
    df.to_csv(path, index=False)
    return path, df


def run(capsys, *args):
    capsys.readouterr()
    rc = main([str(a) for a in args] + ["--json"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def store_digest(db) -> str:
    """A hash of every stored dataset (catalog rows and table contents)."""
    cur = store.cursor(db)
    h = hashlib.sha256()
    for info in store.list_datasets(cur):
        h.update(json.dumps([info.name, info.table, info.rows, info.mapping, info.columns],
                            sort_keys=True, default=str).encode())
        h.update(cur.execute(f"SELECT * FROM {info.table}").df().to_csv().encode())
    return h.hexdigest()


def test_composite_key_constants_features_and_facts_are_stored(foreign, tmp_path, capsys):
    path, df = foreign
    db = tmp_path / "s.duckdb"
    rc, out, err = run(capsys, "load", path, "--db", db, "--name", "obd",
                       "--map", f"query_id={QUERY}", "--map", "session_id=timestamp",
                       "--const", "randomized=1", "--features", "user-item_affinity_*",
                       "--fact", "per_slot_propensity")
    assert rc == 0, err
    res = json.loads(out)
    assert res["mapping"]["query_id"] == QUERY
    assert res["mapping"]["facts"] == {"randomized": True, "per_slot_propensity": True,
                                       "query_key": QUERY.split("+")}
    log = store.open_dataset("obd", db)
    facts = log.info.facts
    assert facts.randomized and facts.per_slot_propensity and facts.composite_query
    assert len(log.info.features) == 12
    assert log.info.features[0] == "feature_user_item_affinity_0"
    got = log.df(["query_id", "randomized", "feature_user_item_affinity_3"])
    want_q = df[QUERY.split("+")].astype(str).agg("+".join, axis=1)
    assert (got["query_id"].to_numpy() == want_q.to_numpy()).all()
    assert got["randomized"].all()
    assert got["feature_user_item_affinity_3"].to_numpy() == pytest.approx(
        df["user-item_affinity_3"].to_numpy())
    assert store.summary(log)["queries"] == want_q.nunique()


def test_input_of_every_command_takes_the_same_mapping(capsys):
    from pathlib import Path
    path = Path(__file__).parent / "data" / "obd_like.csv"
    rc, out, err = run(capsys, "propensity", "--input", path, "--method", "randomization",
                       "--map", f"query_id={QUERY}", "--map", "session_id=timestamp",
                       "--const", "randomized=1")
    assert rc == 0, err
    res = json.loads(out)
    assert res["method"] == "randomization" and res["rows_used"] == 10_002


def test_known_propensity_constant(foreign, tmp_path, capsys):
    path, _ = foreign
    db = tmp_path / "p.duckdb"
    rc, out, err = run(capsys, "load", path, "--db", db, "--name", "p",
                       "--map", "query_id=user_feature_0", "--map", "propensity=timestamp",
                       "--const", "propensity=0.25")
    assert rc == 2 and "propensity" in err  # mapped to a column and given a constant
    rc, out, err = run(capsys, "load", path, "--db", db, "--name", "p",
                       "--map", "query_id=user_feature_0", "--const", "propensity=0.25")
    assert rc == 0, err
    assert (store.open_dataset("p", db).df(["propensity"])["propensity"] == 0.25).all()


BAD = [
    (["--map", "query_id=nope+user_feature_1"], "'nope'"),
    (["--map", "query_id=user_feature_0", "--features", "zzz_*"], "'zzz_*'"),
    (["--map", "query_id=user_feature_0", "--features", "user_feature_1"],
     "'user_feature_1' is not numeric"),
    (["--map", "query_id=user_feature_0", "--const", "bogus=1"], "'bogus'"),
    (["--map", "query_id=user_feature_0", "--const", "randomized=maybe"], "'randomized'"),
    (["--map", "query_id=user_feature_0", "--const", "propensity=2"], "'propensity'"),
    (["--map", "position=user_feature_0+user_feature_1"], "'position'"),
    ([], "'query_id'"),  # no query column and none mapped
]


@pytest.mark.parametrize("extra,needle", BAD)
def test_bad_spec_is_refused_in_one_line_and_nothing_changes(foreign, tmp_path, capsys,
                                                             extra, needle):
    path, _ = foreign
    db = tmp_path / "bad.duckdb"
    assert run(capsys, "load", path, "--db", db, "--name", "keep",
               "--map", "query_id=user_feature_0")[0] == 0
    before = store_digest(db)
    rc, out, err = run(capsys, "load", path, "--db", db, "--name", "keep", "--replace", *extra)
    assert rc == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err
    assert store_digest(db) == before


def test_mapping_model_validates_itself():
    with pytest.raises(UlrError, match="doc_id"):
        schema.Mapping(columns={"doc_id": ("a", "b"), "position": ("a", "b")})
    with pytest.raises(UlrError, match="unknown fact"):
        schema.Mapping(facts=("no_such_fact",))
    m = schema.Mapping.coerce({"query_id": "a+b"})
    assert m.columns["query_id"] == ("a", "b") and not m.is_plain()
    # A file column whose name holds the separator is taken as one column.
    assert schema.Mapping.coerce({"query_id": "a+b"}, ["a+b"]).columns["query_id"] == ("a+b",)
    assert schema.LogFacts.from_mapping({}).describe() == []


def test_bundled_fixture_matches_its_generator(tmp_path):
    """tests/data/obd_like.csv is write_obd_like_log() with the default seed."""
    from pathlib import Path

    from ulr.simulate import write_obd_like_log
    fixture = Path(__file__).parent / "data" / "obd_like.csv"
    out = tmp_path / "again.csv"
    df = write_obd_like_log(str(out))
    assert out.read_bytes() == fixture.read_bytes()
    assert len(df) == 10_002 and df["position"].max() == 3 and df["click"].mean() < 0.01
    assert df["propensity_score"].eq(1 / 80).all()
    assert sum(c.startswith("user-item_affinity_") for c in df) == 80


# --------------------------------------------------------------------------- input defects

NONFINITE = ("query_id,doc_id,position,click,session_id,feature_a\n"
             "q,a,1,1,s1,0.5\nq,b,2,0,s1,inf\nq,c,1,0,s2,-inf\nq,d,2,1,s2,NaN\nq,e,1,1,s3,0.2\n")


def _one_error_line(rc, out, err, *needles):
    assert rc == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_cli_loads_a_bom_csv_with_the_right_columns(tmp_path, capsys):
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffqid,doc_id,position,click\nq1,d1,1,1\nq1,d2,2,0\nq1,d1,2,0\n"
                     "q1,d2,1,1\n".encode())
    db = tmp_path / "s.duckdb"
    rc, out, err = run(capsys, "load", path, "--db", db, "--name", "excel")
    assert rc == 0, err
    assert json.loads(out)["mapping"]["query_id"] == "qid"
    rc, out, err = run(capsys, "propensity", "--input", path, "--method", "em")
    assert rc == 0, err  # --input reads the header the same way
    assert json.loads(out)["theta"][0] == 1.0


def test_cli_refuses_nan_and_inf_features_unless_skipped(tmp_path, capsys):
    path = tmp_path / "nan.csv"
    path.write_text(NONFINITE)
    db = tmp_path / "s.duckdb"
    assert run(capsys, "load", path, "--db", db, "--name", "keep", "--skip-bad-rows")[0] == 0
    before = store_digest(db)
    _one_error_line(*run(capsys, "load", path, "--db", db, "--name", "keep", "--replace"),
                    "column 'feature_a'", "3 bad values", "lines 3, 4, 5",
                    "(values 'inf', '-inf', 'nan')", "(--skip-bad-rows)")
    assert store_digest(db) == before
    _one_error_line(*run(capsys, "propensity", "--input", path, "--method", "dla"),
                    "column 'feature_a'", "lines 3, 4, 5")
    out_csv = tmp_path / "skipped.csv"
    rc, out, err = run(capsys, "load", path, "--db", db, "--name", "nan", "--skip-bad-rows",
                       "--rejected-out", out_csv)
    assert rc == 0, err
    assert (json.loads(out)["rows"], json.loads(out)["rejected"]) == (2, 3)
    assert out_csv.read_text().count("must be a finite number") == 3


def test_cli_refuses_duplicate_column_names(tmp_path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text("query_id,doc_id,position,click,f,f\nq,d,1,1,0.1,0.2\n")
    db = tmp_path / "s.duckdb"
    good = tmp_path / "good.csv"
    good.write_text("query_id,doc_id,position,click\nq,d,1,1\n")
    assert run(capsys, "load", good, "--db", db, "--name", "keep")[0] == 0
    before = store_digest(db)
    _one_error_line(*run(capsys, "load", path, "--db", db, "--name", "keep", "--replace"),
                    "dup.csv has more than one column named 'f'")
    _one_error_line(*run(capsys, "propensity", "--input", path, "--method", "em"),
                    "more than one column named 'f'")
    assert store_digest(db) == before
