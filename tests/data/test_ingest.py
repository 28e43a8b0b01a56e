"""Loading a click log (ulr.data.ingest): round trips, mappings, refusals that leave the
store unchanged, skipped rows, Parquet, BOMs, non-finite features, duplicate columns,
messages that name the user's file, and opening a file without storing it."""

import numpy as np
import pandas as pd
import pytest

from tests.data.helpers import GOOD, fingerprint, write
from ulr.data import catalog, ingest
from ulr.data.summary import ctr_by_position, summary, true_theta
from ulr.errors import UlrError
from ulr.simulate import simulate_clicks, write_log


def test_good_file_roundtrip(tmp_path, cur):
    res = ingest.load_log(write(tmp_path, GOOD), "good", cur=cur)
    assert (res.rows, res.rejected) == (4, 0)
    df = catalog.open_dataset("good", cur=cur).df()
    assert df["position"].tolist() == [1, 2, 1, 2]
    assert df["click"].astype(int).tolist() == [1, 0, 1, 0]
    assert df["query_id"].tolist() == ["q1", "q1", "q2", "q2"]
    info = catalog.get_dataset(cur, "good")
    assert info.rows == 4 and info.source == "f.csv" and len(info.content_hash) == 64


def test_mapped_file_and_auto_detection(tmp_path, cur):
    text = "qid,item,rank,clicked,extra col\na,x,1,0,foo\na,y,2,1,bar\n"
    res = ingest.load_log(write(tmp_path, text), "m", cur=cur)  # synonyms auto-detected
    assert res.info.mapping == {"query_id": "qid", "doc_id": "item", "position": "rank",
                                "click": "clicked"}
    text2 = "Q,D,P,C\na,x,1,0\na,y,2,1\n"
    res2 = ingest.load_log(write(tmp_path, text2, "g.csv"), "m2", cur=cur,
                          mapping={"query_id": "Q", "doc_id": "D", "position": "P", "click": "C"})
    assert res2.rows == 2
    df = catalog.open_dataset("m", cur=cur).df()
    assert "extra_col" in df.columns  # other columns are kept


@pytest.mark.parametrize("text, needle", [
    ("query_id,doc_id,click\nq,d,1\n", "missing required column 'position'"),
    ("query_id,doc_id,position,click\nq,d,0,1\n", "column 'position'"),
    ("query_id,doc_id,position,click\nq,d,-3,1\n", "must be an integer >= 1"),
    ("query_id,doc_id,position,click\nq,d,first,1\n", "column 'position'"),
    ("query_id,doc_id,position,click\nq,d,1.5,1\n", "must be an integer >= 1"),
    ("query_id,doc_id,position,click\nq,d,1,2\n", "column 'click'"),
    ("query_id,doc_id,position,click\nq,d,1,clicked\n", "must be 0/1 or true/false"),
    ("query_id,doc_id,position,click\nq,d,1,1\nq,d,2\n", "wrong number of fields"),
    ("query_id,doc_id,position,click\nq,d,1,1\nq,d,2,0,7\n", "wrong number of fields"),
    ("", "is empty"),
    ("query_id,doc_id,position,click\n", "no data rows"),
    ("query_id,doc_id,position,click\n,d,1,1\n", "column 'query_id'"),
])
def test_bad_files_refused_and_store_unchanged(tmp_path, cur, text, needle):
    ingest.load_log(write(tmp_path, GOOD, "good.csv"), "keep", cur=cur)
    before = fingerprint(cur)
    with pytest.raises(UlrError, match=needle.replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.").replace("+", r"\+")):
        ingest.load_log(write(tmp_path, text), "bad", cur=cur)
    assert fingerprint(cur) == before
    # Also refused when it would *replace* an existing dataset.
    with pytest.raises(UlrError):
        ingest.load_log(write(tmp_path, text), "keep", cur=cur, replace=True)
    assert fingerprint(cur) == before


def test_error_names_lines_and_count(tmp_path, cur):
    rows = ["q,d,1,1"] * 10
    rows[3] = "q,d,0,1"
    rows[7] = "q,d,zero,1"
    text = "query_id,doc_id,position,click\n" + "\n".join(rows) + "\n"
    with pytest.raises(UlrError) as e:
        ingest.load_log(write(tmp_path, text), "x", cur=cur)
    msg = str(e.value)
    assert "2 bad values" in msg and "lines 5, 9" in msg and "2 of 10 rows" in msg


def test_binary_file(tmp_path, cur):
    p = write(tmp_path, bytes(range(256)) * 20, "x.csv", mode="wb")
    with pytest.raises(UlrError, match="binary"):
        ingest.load_log(p, "bin", cur=cur)


def test_skip_bad_rows_keeps_them_for_download(tmp_path, cur):
    text = "query_id,doc_id,position,click\nq,a,1,1\nq,b,0,1\nq,c,2,2\nq,d,3\nq,e,4,0\n"
    res = ingest.load_log(write(tmp_path, text), "s", cur=cur, skip_bad_rows=True)
    assert res.rows == 2 and res.rejected == 3
    rej = catalog.rejected_rows(cur, "s")
    assert rej["line"].tolist() == [3, 4, 5]
    assert set(rej["column"]) == {"position", "click", "(whole row)"}
    assert catalog.open_dataset("s", cur=cur).df()["doc_id"].tolist() == ["a", "e"]


def test_parquet_and_simulated_log(tmp_path, cur):
    sim = simulate_clicks(queries=20, sessions=100, seed=3)
    p = tmp_path / "s.parquet"
    write_log(sim.df, str(p))
    res = ingest.load_log(p, "pq", cur=cur)
    log = catalog.open_dataset("pq", cur=cur)
    df = log.df()
    assert res.rows == len(sim.df)
    assert sorted(log.info.features) == [f"feature_{i}" for i in range(1, 6)]
    np.testing.assert_array_equal(df["click"].astype(int), sim.df["click"])
    np.testing.assert_allclose(true_theta(log), sim.theta, rtol=1e-6)
    bad = sim.df.copy()
    bad.loc[5, "position"] = 0
    write_log(bad, str(tmp_path / "b.parquet"))
    with pytest.raises(UlrError, match="row 6"):
        ingest.load_log(tmp_path / "b.parquet", "pq2", cur=cur)


def test_real_world_csv_with_index_timestamps_and_extras(tmp_path, cur):
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame({
        "SearchId": rng.integers(0, 20, n), "ItemId": rng.integers(0, 50, n),
        "Rank": rng.integers(1, 11, n), "Clicked": rng.integers(0, 2, n),
        "ts": pd.date_range("2024-01-01", periods=n, freq="min").astype(str),
        **{f"meta {i}": rng.random(n) for i in range(30)},
        "comment": ["hello, world", "=cmd|' /C calc'!A0", 'quote "x"', ""] * (n // 4),
    })
    p = tmp_path / "real.csv"
    df.to_csv(p)  # unnamed index column
    res = ingest.load_log(p, "real", cur=cur, mapping={
        "query_id": "SearchId", "doc_id": "ItemId", "position": "Rank", "click": "Clicked"})
    assert res.rows == n
    out = catalog.open_dataset("real", cur=cur).df()
    assert out["position"].tolist() == df["Rank"].tolist()
    assert out["ts"].tolist() == df["ts"].tolist()
    # the unnamed index column, "column 1" as a sheet names it (stored as every name with a
    # space is: column_1), never "unnamed_0" (issue 50)
    assert "column_1" in out.columns
    assert not any(c.startswith("unnamed") for c in out.columns)


def test_ctr_by_position_wilson_interval(tmp_path, cur):
    text = "query_id,doc_id,position,click\n" + "".join(
        f"q,d{i},{1 + i % 2},{int(i % 4 == 0)}\n" for i in range(400))
    ingest.load_log(write(tmp_path, text), "c", cur=cur)
    t = ctr_by_position(catalog.open_dataset("c", cur=cur))
    assert t["impressions"].tolist() == [200, 200]
    assert t["ctr"].tolist() == [0.5, 0.0]
    # Wilson interval for 100/200 at z=1.96: 0.5 +- 0.0685 (textbook value)
    assert t["lower"][0] == pytest.approx(0.4315, abs=1e-3)
    assert t["upper"][0] == pytest.approx(0.5685, abs=1e-3)
    assert t["lower"][1] == 0.0 and t["upper"][1] == pytest.approx(0.01884, abs=1e-4)


def test_open_file_is_typed_and_validated(tmp_path):
    p = write(tmp_path, "query_id,doc_id,position,click\nq,a,1,1\nq,b,0,1\nq,c,2,0\n")
    with pytest.raises(UlrError, match="line 3"):
        ingest.open_file(p)
    log = ingest.open_file(p, skip_bad_rows=True)
    df = log.df()
    assert df["doc_id"].tolist() == ["a", "c"] and str(df["position"].dtype) == "int64"
    assert log.info.rows == 2 and log.info.rejected == 1
    assert summary(log)["rows"] == 2


BOM = "\ufeff"


NONFINITE = ("query_id,doc_id,position,click,feature_a\nq,a,1,1,0.5\nq,b,2,0,nan\n"
             "q,c,3,0,inf\nq,d,4,0,-inf\nq,e,5,1,NaN\nq,f,6,0,\n")


def test_bom_csv_loads_with_the_right_columns(tmp_path, cur):
    p = write(tmp_path, (BOM + "qid,doc_id,position,click\n" + GOOD.split("\n", 1)[1])
              .encode("utf-8"), "excel.csv", mode="wb")
    assert ingest.peek_columns(p)[0] == ["qid", "doc_id", "position", "click"]
    res = ingest.load_log(p, "excel", cur=cur)  # qid is auto-mapped: the BOM is not in its name
    assert res.rows == 4 and res.info.mapping["query_id"] == "qid"
    assert catalog.open_dataset("excel", cur=cur).df()["query_id"].tolist() == ["q1", "q1", "q2",
                                                                               "q2"]
    assert ingest.open_file(p).info.columns["query_id"] == "qid"


def test_nan_and_infinite_features_refused_naming_column_line_and_value(tmp_path, cur):
    ingest.load_log(write(tmp_path, GOOD, "good.csv"), "keep", cur=cur)
    before = fingerprint(cur)
    p = write(tmp_path, NONFINITE)
    with pytest.raises(UlrError) as e:
        ingest.load_log(p, "nan", cur=cur)
    msg = str(e.value)
    assert "column 'feature_a': 4 bad values (must be a finite number" in msg
    assert "first at lines 3, 4, 5, 6 (values 'nan', 'inf', '-inf')" in msg
    assert fingerprint(cur) == before
    with pytest.raises(UlrError, match="feature_a"):
        ingest.open_file(p)


def test_nan_and_infinite_features_skipped_on_request_and_kept_for_download(tmp_path, cur):
    res = ingest.load_log(write(tmp_path, NONFINITE), "nan", cur=cur, skip_bad_rows=True)
    assert (res.rows, res.rejected) == (2, 4)
    rej = catalog.rejected_rows(cur, "nan")
    assert rej["line"].tolist() == [3, 4, 5, 6] and set(rej["column"]) == {"feature_a"}
    assert rej["raw"].tolist() == ["q,b,2,0,nan", "q,c,3,0,inf", "q,d,4,0,-inf", "q,e,5,1,NaN"]
    df = catalog.open_dataset("nan", cur=cur).df()
    assert df["doc_id"].tolist() == ["a", "f"]  # an empty feature cell is a missing value
    assert df["feature_a"].iloc[0] == 0.5 and pd.isna(df["feature_a"].iloc[1])


def test_nan_and_infinite_parquet_features_refused_naming_the_row(tmp_path, cur):
    import pyarrow as pa
    import pyarrow.parquet as pq
    t = pa.table({"query_id": ["q"] * 5, "doc_id": list("abcde"), "position": [1, 2, 3, 4, 5],
                  "click": [1, 0, 0, 0, 1],  # a float NaN, not a null (pandas writes nulls)
                  "feature_x": pa.array([0.1, np.inf, 0.3, np.nan, None], pa.float64())})
    pq.write_table(t, tmp_path / "f.parquet")
    with pytest.raises(UlrError, match=r"'feature_x': 2 bad values .*, "
                                       r"first at rows 2, 4 \(values 'inf', 'nan'\)"):
        ingest.load_log(tmp_path / "f.parquet", "pq", cur=cur)
    assert catalog.list_datasets(cur) == []
    res = ingest.load_log(tmp_path / "f.parquet", "pq", cur=cur, skip_bad_rows=True)
    assert (res.rows, res.rejected) == (3, 2)  # the null is a missing value, kept


@pytest.mark.parametrize("header, needle", [
    ("query_id,doc_id,position,click,f,f", "more than one column named 'f'"),
    ("query_id,doc_id,position,click,f, f,g,g", "more than one column named 'f', 'g'"),
    ("query_id,query_id,doc_id,position,click", "more than one column named 'query_id'"),
])
def test_duplicate_column_names_refused_naming_them(tmp_path, cur, header, needle):
    ingest.load_log(write(tmp_path, GOOD, "good.csv"), "keep", cur=cur)
    before = fingerprint(cur)
    width = header.count(",") + 1
    p = write(tmp_path, header + "\n" + ",".join(["1"] * width) + "\n", "dup.csv")
    for call in (lambda: ingest.load_log(p, "keep", cur=cur, replace=True),
                 lambda: ingest.peek_columns(p), lambda: ingest.open_file(p)):
        with pytest.raises(UlrError, match=needle):
            call()
    assert fingerprint(cur) == before


def test_duplicate_parquet_column_names_refused(tmp_path, cur):
    import pyarrow as pa
    import pyarrow.parquet as pq
    t = pa.table([pa.array(["q"]), pa.array(["d"]), pa.array([1]), pa.array([1]),
                  pa.array([0.5]), pa.array([0.7])],
                 names=["query_id", "doc_id", "position", "click", "f", "f"])
    pq.write_table(t, tmp_path / "dup.parquet")
    with pytest.raises(UlrError, match="dup.parquet has more than one column named 'f'"):
        ingest.load_log(tmp_path / "dup.parquet", "d", cur=cur)
    assert catalog.list_datasets(cur) == []


@pytest.mark.parametrize("text, needle, at_peek", [
    ("", "their log.csv is empty", True),
    ("query_id,doc_id,position,click,f,f\n1,2,3,4,5,6\n", "their log.csv has more than one",
     True),
    ("query_id,doc_id,position,click\nq,d,0,1\n", "refused their log.csv:", False),
])
def test_messages_name_the_file_name_not_the_copy(tmp_path, cur, text, needle, at_peek):
    p = write(tmp_path, text, "41447401-abcd.csv")
    calls = [lambda: ingest.load_log(p, "x", cur=cur, file_name="their log.csv")]
    if at_peek:
        calls.append(lambda: ingest.peek_columns(p, "their log.csv"))
    for call in calls:
        with pytest.raises(UlrError) as e:
            call()
        assert needle in str(e.value) and "41447401" not in str(e.value)


def test_the_retired_keyword_source_name_is_refused_naming_file_name(tmp_path, cur):
    """``file_name=`` was ``source_name=`` ("source" is a registered lake table only)."""
    from ulr.data.precheck import check_mapping
    p = write(tmp_path, "query_id,doc_id,position,click\nq,d,0,1\n", "41447401-abcd.csv")
    for call in (lambda: ingest.load_log(p, "x", cur=cur, source_name="their log.csv"),
                 lambda: check_mapping(p, source_name="their log.csv"),
                 lambda: ingest.peek_columns(p, source_name="their log.csv")):
        with pytest.raises(TypeError, match="takes file_name=, not source_name="):
            call()
    with pytest.raises(TypeError, match="bogus"):
        ingest.peek_columns(p, bogus=1)


def test_skipped_rows_keep_their_raw_text_exactly_as_read(tmp_path, cur):
    """The download's ``raw`` is the line as written: ``0,1`` stays ``0,1`` (issue 55), with
    its quotes and spaces, for a rule break and for a value that does not parse alike."""
    text = ("query_id,doc_id,position,click\n"
            "q1,a,1,1\n"
            '"q1",b,0,1\n'           # position 0 breaks a rule (a typed value)
            "q1,c,two,0\n"            # does not parse (the reader's own line)
            "q2,d,1,0\n")
    p = tmp_path / "raw.csv"
    p.write_bytes(text.encode())
    ingest.load_log(p, "raw", cur=cur, skip_bad_rows=True)
    rej = catalog.rejected_rows(cur, "raw")
    assert rej["line"].tolist() == [3, 4]
    assert rej["raw"].tolist() == ['"q1",b,0,1', "q1,c,two,0"]
