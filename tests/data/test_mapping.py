"""Bring your own log: composite keys, constants, feature patterns and declared facts,
on the CLI (`load` and `--input`) and in the schema model; bad specs are refused in one
sentence and leave the store unchanged."""

import hashlib
import json

import pytest

from ulr.data import catalog, ingest

from ulr.data.log import OPERATOR

from ulr.data.mapping import LogFacts, Mapping

from ulr.data.summary import summary
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
    cur = catalog.cursor(db)
    h = hashlib.sha256()
    for info in catalog.list_datasets(cur):
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
    log = catalog.open_dataset("obd", db)
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
    assert summary(log)["queries"] == want_q.nunique()


def test_input_of_every_command_takes_the_same_mapping(capsys):
    from pathlib import Path
    path = Path(__file__).parent / "obd_like.csv"
    rc, out, err = run(capsys, "propensity", "--input", path, "--method", "randomization",
                       "--map", f"query_id={QUERY}", "--const", "randomized=1")
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
    assert (catalog.open_dataset("p", db).df(["propensity"])["propensity"] == 0.25).all()


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
        Mapping(columns={"doc_id": ("a", "b"), "position": ("a", "b")})
    with pytest.raises(UlrError, match="unknown fact"):
        Mapping(facts=("no_such_fact",))
    m = Mapping.coerce({"query_id": "a+b"})
    assert m.columns["query_id"] == ("a", "b") and not m.is_plain()
    # A file column whose name holds the separator is taken as one column.
    assert Mapping.coerce({"query_id": "a+b"}, ["a+b"]).columns["query_id"] == ("a+b",)
    assert LogFacts.from_mapping({}).describe() == []


def test_bundled_fixture_matches_its_generator(tmp_path):
    """tests/data/obd_like.csv is write_obd_like_log() with the default seed, its slots
    stamped a second apart as in a real log (where they do not share a timestamp)."""
    from pathlib import Path

    from ulr.simulate import write_obd_like_log
    fixture = Path(__file__).parent / "obd_like.csv"
    out = tmp_path / "again.csv"
    df = write_obd_like_log(str(out), row_timestamps=True)
    assert out.read_bytes() == fixture.read_bytes()
    assert df.groupby("timestamp").size().eq(1).mean() > 0.9  # no timestamp groups a list
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


# ------------------------------------------------------------------ checked before Load (#36)

def test_mapping_is_checked_on_the_file_before_anything_is_stored(tmp_path):
    """Each wrong mapping of a real-shaped log is named on the file, in one sentence that
    names the user's column and what would be right; a right mapping finds nothing."""
    from ulr.data.precheck import check_mapping
    path = tmp_path / "rows.csv"
    obd_like_log(impressions=300, items=12, row_timestamps=True).to_csv(path, index=False)
    got = check_mapping(path, {"query_id": QUERY, "session_id": "timestamp"})
    assert [(i.code, i.field) for i in got] == [("single_row_sessions", "session_id")]
    msg = got[0].message
    assert "'timestamp', mapped to session_id, differs between the documents shown together" \
        in msg and "an impression or request id" in msg and "unmapped" not in msg
    assert msg.count(".") == 1 and msg.endswith(".")  # one sentence
    assert check_mapping(path, {"query_id": QUERY}) == ()  # no session column: nothing wrong
    one = check_mapping(path, {"query_id": "timestamp"})  # a query column unique per row
    assert [i.code for i in one] == ["single_document_queries"]
    assert "'timestamp', mapped to query_id, looks unique per row" in one[0].message
    shared = tmp_path / "shared.csv"  # the slots of one impression share the timestamp
    obd_like_log(impressions=300, items=12).to_csv(shared, index=False)
    assert check_mapping(shared, {"query_id": QUERY, "session_id": "timestamp"}) == ()
    with pytest.raises(UlrError, match="'no_such' mapped to 'session_id' is not in the file"):
        check_mapping(path, {"query_id": QUERY, "session_id": "no_such"})


def test_propensities_outside_0_1_are_named_and_percentages_recognised(tmp_path):
    from ulr.data.precheck import check_mapping
    path = tmp_path / "p.csv"
    rows = "".join(f"q{i // 3},d{i},{1 + i % 3},0,{(i % 5) * 20 + 5},{(i % 4) / 4}\n"
                   for i in range(30))
    path.write_text("query_id,doc_id,position,click,pct,p0\n" + rows)
    pct, = check_mapping(path, {"propensity": "pct"})
    assert (pct.code, pct.field) == ("propensity_range", "propensity")
    assert pct.message.startswith("'pct', mapped to propensity, lies outside (0, 1] in 30 of "
                                  "its 30 rows (such as 5, 25, 45)")
    assert "look like percentages, so divide them by 100" in pct.message
    zero, = check_mapping(path, {"propensity": "p0"})  # 0 is no probability of a shown item
    assert "in 8 of its 30 rows (such as 0)" in zero.message
    assert "map a column of such probabilities" in zero.message


def test_the_check_reads_only_the_first_rows_and_says_so(tmp_path):
    """A sample of the first rows: what lies beyond it is the load's to find, and every
    count names the rows it comes from."""
    from ulr.data.precheck import check_mapping
    path = tmp_path / "long.csv"
    good = "".join(f"q{i // 3},d{i % 7},{1 + i % 3},0,s{i}\n" for i in range(60))
    path.write_text("query_id,doc_id,position,click,stamp\n" + good + "q,d,0,1,x\n")
    got = check_mapping(path, {"session_id": "stamp"}, sample_rows=30)
    assert [i.code for i in got] == ["single_row_sessions"]  # the bad line 62 is not read
    assert got[0].message.startswith("30 of 30 sessions in the first 30 rows hold a single row")
    bad = check_mapping(path, {"session_id": "stamp"})
    assert [i.code for i in bad] == ["bad_values", "single_row_sessions"]
    assert bad[0].message.startswith("In the file, column 'position': 1 bad value (must be an "
                                     "integer >= 1), first at line 62")
    assert " in the first" not in bad[1].message


def test_cli_load_warns_in_one_line_and_the_operator_deletes_any_dataset(tmp_path, capsys):
    """`load` names a session column that does not group shown lists in one `warning:`
    line on stderr (stdout stays one JSON object); `datasets --delete` acts as the operator,
    who may remove a browser's dataset and one from before owners."""
    path = tmp_path / "rows.csv"
    obd_like_log(impressions=300, items=12, row_timestamps=True).to_csv(path, index=False)
    db = tmp_path / "s.duckdb"
    rc, out, err = run(capsys, "load", path, "--db", db, "--name", "r",
                       "--map", f"query_id={QUERY}", "--map", "session_id=timestamp")
    assert rc == 0 and json.loads(out)["warnings"][0]["code"] == "single_row_sessions"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: ") and "'timestamp'" in lines[0]
    ingest.load_log(path, "a browser's", db_path=db, mapping={"query_id": QUERY},
                   actor="browser:" + "b" * 32)
    rc, out, err = run(capsys, "datasets", "--db", db)
    owners = {d["name"]: d["owner"] for d in json.loads(out)["datasets"]}
    assert owners == {"r": OPERATOR, "a browser's": "browser:" + "b" * 32}
    rc, out, err = run(capsys, "datasets", "--db", db, "--rename", "a browser's", "mine")
    assert rc == 0 and json.loads(out)["renamed"] == ["a browser's", "mine"]
    rc, out, err = run(capsys, "datasets", "--db", db, "--delete", "mine")
    assert rc == 0 and json.loads(out)["deleted"] == "mine"
    assert [d["name"] for d in json.loads(out)["datasets"]] == ["r"]
    rc, out, err = run(capsys, "datasets", "--db", db, "--delete", "gone")
    assert rc == 2 and err.strip() == "error: there is no dataset named 'gone'."
